//! API semantics through kube-rs: every verb and patch type, the 404/409/410/422 paths,
//! pagination, selectors and the status subresource. Runs against the fake, or against any
//! API server named by `APISERVER_KUBECONFIG`.

use crate::common::{cluster, configmap, ensure_widget_crd, status_of, widgets};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::BTreeSet;

#[tokio::test]
async fn create_get_replace_delete_with_conflicts() {
    let c = cluster().await;
    let cms = c.configmaps();
    let created = cms
        .create(&PostParams::default(), &configmap("a", &[("k", "1")]))
        .await
        .unwrap();
    let rv1 = created.metadata.resource_version.clone().unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    assert_eq!(
        status_of(cms.create(&PostParams::default(), &configmap("a", &[])).await),
        (409, "AlreadyExists".into())
    );

    let mut next = created.clone();
    next.data = Some([("k".to_string(), "2".to_string())].into());
    let replaced = cms.replace("a", &PostParams::default(), &next).await.unwrap();
    let rv2 = replaced.metadata.resource_version.clone().unwrap();
    assert!(
        rv2.parse::<u64>().unwrap() > rv1.parse::<u64>().unwrap(),
        "resourceVersion climbs"
    );
    // `next` still carries rv1: a stale write.
    assert_eq!(
        status_of(cms.replace("a", &PostParams::default(), &next).await),
        (409, "Conflict".into())
    );
    assert_eq!(cms.get("a").await.unwrap().data.unwrap()["k"], "2");

    assert_eq!(status_of(cms.get("nope").await), (404, "NotFound".into()));
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(status_of(cms.get("a").await), (404, "NotFound".into()));
    assert_eq!(
        status_of(cms.delete("a", &DeleteParams::default()).await),
        (404, "NotFound".into())
    );
    c.cleanup().await;
}

#[tokio::test]
async fn every_patch_type() {
    let c = cluster().await;
    let cms = c.configmaps();
    cms.create(&PostParams::default(), &configmap("p", &[("a", "1"), ("b", "2")]))
        .await
        .unwrap();
    let pp = PatchParams::default();

    let merged = cms
        .patch("p", &pp, &Patch::Merge(json!({"data": {"a": null, "c": "3"}})))
        .await
        .unwrap();
    assert_eq!(
        merged.data.unwrap(),
        [("b".into(), "2".into()), ("c".into(), "3".into())].into()
    );

    let strategic = cms
        .patch(
            "p",
            &pp,
            &Patch::Strategic(json!({"metadata": {"labels": {"x": "y"}}, "data": {"b": null}})),
        )
        .await
        .unwrap();
    assert_eq!(strategic.data.unwrap(), [("c".into(), "3".into())].into());
    assert_eq!(strategic.metadata.labels.unwrap()["x"], "y");

    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/c", "value": "3"},
        {"op": "add", "path": "/data/d", "value": "4"}
    ]))
    .unwrap();
    let patched = cms.patch("p", &pp, &Patch::Json::<()>(ops)).await.unwrap();
    assert_eq!(patched.data.as_ref().unwrap()["d"], "4");
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/data/c", "value": "wrong"}])).unwrap();
    assert_eq!(
        status_of(cms.patch("p", &pp, &Patch::Json::<()>(failing)).await),
        (422, "Invalid".into())
    );

    let apply = PatchParams::apply("conformance-test");
    let applied = cms
        .patch(
            "applied",
            &apply,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"k": "v"}})),
        )
        .await
        .unwrap();
    assert_eq!(applied.data.unwrap()["k"], "v", "apply creates a missing object");
    let reapplied = cms
        .patch(
            "applied",
            &apply,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"k": "w"}})),
        )
        .await
        .unwrap();
    assert_eq!(reapplied.data.unwrap()["k"], "w");
    c.cleanup().await;
}

#[tokio::test]
async fn invalid_objects_are_422_and_missing_namespaces_404() {
    let c = cluster().await;
    let cms = c.configmaps();
    assert_eq!(
        status_of(
            cms.create(&PostParams::default(), &configmap("Bad_Name", &[]))
                .await
        ),
        (422, "Invalid".into())
    );
    let mut unnamed = configmap("x", &[]);
    unnamed.metadata.name = None;
    assert_eq!(
        status_of(cms.create(&PostParams::default(), &unnamed).await),
        (422, "Invalid".into())
    );
    unnamed.metadata.generate_name = Some("gen-".into());
    let generated = cms.create(&PostParams::default(), &unnamed).await.unwrap();
    let name = generated.metadata.name.unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    let elsewhere: kube::Api<ConfigMap> =
        kube::Api::namespaced(c.client.clone(), "no-such-namespace-mco-test");
    assert_eq!(
        status_of(
            elsewhere
                .create(&PostParams::default(), &configmap("a", &[]))
                .await
        ),
        (404, "NotFound".into())
    );
    c.cleanup().await;
}

#[tokio::test]
async fn pagination_and_selectors() {
    let c = cluster().await;
    let cms = c.configmaps();
    for i in 0..7 {
        let mut cm = configmap(&format!("page-{i}"), &[]);
        cm.metadata.labels = Some(
            [(
                "tier".to_string(),
                if i % 2 == 0 { "even" } else { "odd" }.to_string(),
            )]
            .into(),
        );
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(3);
    let mut pages = 0;
    loop {
        let page = cms.list(&params).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 3);
        names.extend(page.items.into_iter().map(|i| i.metadata.name.unwrap()));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => {
                params = ListParams::default().limit(3).continue_token(&token)
            }
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    let expected: BTreeSet<String> = (0..7).map(|i| format!("page-{i}")).collect();
    assert_eq!(names.iter().cloned().collect::<BTreeSet<_>>(), expected);
    assert_eq!(names.len(), 7, "no duplicates across pages");

    let count = |sel: &'static str| {
        let cms = cms.clone();
        async move {
            cms.list(&ListParams::default().labels(sel))
                .await
                .unwrap()
                .items
                .len()
        }
    };
    assert_eq!(count("tier=even").await, 4);
    assert_eq!(count("tier in (odd)").await, 3);
    assert_eq!(count("tier,tier!=even").await, 3);
    assert_eq!(count("!tier").await, 0);
    let by_name = cms
        .list(&ListParams::default().fields("metadata.name=page-3"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);
    c.cleanup().await;
}

#[tokio::test]
async fn status_subresource_and_generation() {
    let c = cluster().await;
    ensure_widget_crd(&c.client).await;
    let ws = widgets(&c.client, &c.ns);
    let w: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{}/v1", crate::common::WIDGET_GROUP), "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 1}, "status": {"ready": true}}))
    .unwrap();
    let created = ws.create(&PostParams::default(), &w).await.unwrap();
    assert!(
        created.data.get("status").is_none(),
        "status is dropped on create"
    );
    assert_eq!(created.metadata.generation, Some(1));

    let pp = PatchParams::default();
    let with_status = ws
        .patch_status(
            "w",
            &pp,
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"size": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(with_status.data["status"]["ready"], true);
    assert_eq!(with_status.data["spec"]["size"], 1, "/status ignores spec");
    assert_eq!(
        with_status.metadata.generation,
        Some(1),
        "status writes keep generation"
    );

    let spec = ws
        .patch(
            "w",
            &pp,
            &Patch::Merge(json!({"spec": {"size": 2}, "status": {"ready": false}})),
        )
        .await
        .unwrap();
    assert_eq!(spec.metadata.generation, Some(2), "spec changes bump generation");
    assert_eq!(spec.data["status"]["ready"], true, "object writes keep status");
    let labels = ws
        .patch(
            "w",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labels.metadata.generation, Some(2), "metadata changes do not");
    c.cleanup().await;
}

#[tokio::test]
async fn delete_collection_dry_run_and_preconditions() {
    let c = cluster().await;
    let cms = c.configmaps();
    for name in ["d1", "d2", "keep"] {
        let mut cm = configmap(name, &[]);
        if name != "keep" {
            cm.metadata.labels = Some([("doomed".to_string(), "yes".to_string())].into());
        }
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    cms.create(&dry, &configmap("dry", &[])).await.unwrap();
    assert_eq!(status_of(cms.get("dry").await).0, 404, "dry runs store nothing");

    let stale = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            resource_version: Some("1".into()),
            uid: None,
        }),
        ..Default::default()
    };
    assert_eq!(
        status_of(cms.delete("keep", &stale).await),
        (409, "Conflict".into())
    );

    cms.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("doomed=yes"),
    )
    .await
    .unwrap();
    let left: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|i| i.metadata.name.unwrap())
        .collect();
    assert!(
        left.contains(&"keep".to_string())
            && !left.contains(&"d1".to_string())
            && !left.contains(&"d2".to_string())
    );
    c.cleanup().await;
}

#[tokio::test]
async fn finalizers_hold_an_object_until_released() {
    let c = cluster().await;
    let cms = c.configmaps();
    let mut cm = configmap("held", &[]);
    cm.metadata.finalizers = Some(vec!["conformance.mco.test/hold".into()]);
    cms.create(&PostParams::default(), &cm).await.unwrap();
    cms.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = cms.get("held").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(status_of(cms.get("held").await).0, 404);
    c.cleanup().await;
}
