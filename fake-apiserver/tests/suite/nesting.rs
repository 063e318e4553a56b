//! Deeply nested documents: kube-apiserver's JSON decoder refuses more than 10,000 nested
//! containers (Go `encoding/json`'s `maxNestingDepth`, used through `sigs.k8s.io/json`), and
//! this server refuses the same documents with the same answers on every write path, and stays
//! up holding objects at the bound. Before the bound, repeated JSON patches that each added
//! ~120 levels overflowed the server's stack near 7,700 levels and aborted the process.

use crate::common::{
    TestCluster, WIDGET_GROUP, await_established, cluster, ensure_widget_crd, remove_crd, send,
};
use fake_apiserver::MAX_DEPTH;
use serde_json::json;

const JSON: Option<&str> = Some("application/json");
const MERGE: Option<&str> = Some("application/merge-patch+json");
const JSON_PATCH: Option<&str> = Some("application/json-patch+json");
const STRATEGIC: Option<&str> = Some("application/strategic-merge-patch+json");
const APPLY: Option<&str> = Some("application/apply-patch+yaml");

/// A test namespace holding the ConfigMap `cm`, and the widget CRD; with the widgets' and
/// ConfigMaps' paths.
async fn seeded() -> (TestCluster, String, String) {
    let c = cluster().await;
    ensure_widget_crd(&c.client).await;
    let (w, cms) = (
        c.path(&format!("{WIDGET_GROUP}/v1"), "widgets"),
        c.path("v1", "configmaps"),
    );
    c.create(
        &cms,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
    )
    .await;
    (c, w, cms)
}

/// `levels` nested objects around `leaf`: `{"a":{"a":…leaf…}}`.
fn nested(levels: usize, leaf: &str) -> String {
    format!("{}{leaf}{}", "{\"a\":".repeat(levels), "}".repeat(levels))
}

/// A widget whose `spec` nests `levels` deep: the object nests one more.
fn widget(name: &str, levels: usize) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"conformance.mco.test/v1","kind":"Widget","metadata":{{"name":"{name}"}},"spec":{}}}"#,
        nested(levels, "1")
    )
    .into_bytes()
}

/// How deeply a JSON text nests (containers outside strings).
fn depth_of(text: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &c in text {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth -= 1,
            _ => {}
        }
    }
    deepest
}

async fn still_serving(client: &kube::Client, widgets: &str) {
    assert_eq!(send(client, "GET", "/readyz", None, vec![]).await.code, 200);
    assert_eq!(send(client, "GET", widgets, None, vec![]).await.code, 200);
}

#[tokio::test]
async fn repeated_json_patches_stop_at_the_decoders_depth() {
    let (c, w, _) = seeded().await;
    let client = &c.client;
    let created = send(
        client,
        "POST",
        &w,
        JSON,
        br#"{"apiVersion":"conformance.mco.test/v1","kind":"Widget","metadata":{"name":"w"},"spec":{}}"#
            .to_vec(),
    )
    .await;
    assert_eq!(created.code, 201, "{}", created.body);
    // Each patch adds 120 levels at the deepest point: root and spec, then 120 per patch.
    let mut path = "/spec".to_string();
    let mut accepted = 0;
    // What the last accepted patch returned, as deep as it is served (a real server's
    // managedFields nest a few levels past the spec).
    let mut served_depth = 0;
    let refusal = loop {
        let op = format!(
            r#"[{{"op":"add","path":"{path}/a","value":{}}}]"#,
            nested(119, "{}")
        );
        let r = send(client, "PATCH", &format!("{w}/w"), JSON_PATCH, op.into_bytes()).await;
        if r.code != 200 {
            break r;
        }
        served_depth = depth_of(&r.bytes);
        accepted += 1;
        path.push_str(&"/a".repeat(120));
        assert!(accepted < 100, "no bound reached");
    };
    assert_eq!(
        2 + 120 * accepted,
        9962,
        "the last accepted patch is the last within 10,000 levels"
    );
    assert_eq!(
        (refusal.code, refusal.body["reason"].as_str()),
        (422, Some("Invalid")),
        "{}",
        refusal.body
    );
    // A plain 422 with empty details, as for any operation that cannot apply.
    assert_eq!(refusal.body["details"], json!({}), "{}", refusal.body);
    assert_eq!(
        refusal.body["message"],
        "the server rejected our request due to an error in our request"
    );
    let stored = send(client, "GET", &format!("{w}/w"), None, vec![]).await;
    assert_eq!(stored.code, 200);
    assert_eq!(
        depth_of(&stored.bytes),
        served_depth,
        "the refused patch changed nothing"
    );
    still_serving(client, &w).await;
    let deleted = send(client, "DELETE", &format!("{w}/w"), None, vec![]).await;
    assert_eq!(deleted.code, 200);
    still_serving(client, &w).await;
    c.cleanup().await;
}

#[tokio::test]
async fn every_write_path_refuses_past_the_bound_and_keeps_objects_at_it() {
    let (c, w, cms) = seeded().await;
    let client = &c.client;
    let too_deep = "invalid character '{' exceeded max depth";
    let unrecognized = format!(
        "the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: {too_deep} ("
    );
    // (method, path, content type, body, code, message prefix)
    let refused = [
        (
            "POST",
            w.clone(),
            JSON,
            widget("d", MAX_DEPTH),
            400,
            unrecognized.clone(),
        ),
        (
            "PUT",
            format!("{w}/d"),
            JSON,
            widget("d", MAX_DEPTH),
            400,
            unrecognized.clone(),
        ),
        (
            "PATCH",
            format!("{w}/d"),
            MERGE,
            format!(r#"{{"spec":{}}}"#, nested(MAX_DEPTH, "1")).into_bytes(),
            400,
            format!("error decoding patch: {too_deep}"),
        ),
        (
            "PATCH",
            format!("{w}/d"),
            JSON_PATCH,
            format!(
                r#"[{{"op":"replace","path":"/spec","value":{}}}]"#,
                nested(MAX_DEPTH - 1, "1")
            )
            .into_bytes(),
            400,
            format!("error decoding patch: {too_deep}"),
        ),
        (
            "PATCH",
            format!("{cms}/cm"),
            STRATEGIC,
            format!(r#"{{"x":{}}}"#, nested(MAX_DEPTH, "1")).into_bytes(),
            400,
            too_deep.to_string(),
        ),
        (
            "PATCH",
            format!("{w}/d?fieldManager=t"),
            APPLY,
            widget("d", MAX_DEPTH),
            400,
            "error decoding YAML: error converting YAML to JSON: yaml: exceeded max depth of 10000"
                .to_string(),
        ),
    ];
    let created = send(client, "POST", &w, JSON, widget("d", 1)).await;
    assert_eq!(created.code, 201);
    // A custom resource's PUT carries the resourceVersion it replaces (no unconditional
    // updates for custom resources).
    let rv = created.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let put_d = String::from_utf8(widget("d", MAX_DEPTH - 1))
        .unwrap()
        .replacen(
            r#""name":"d""#,
            &format!(r#""name":"d","resourceVersion":"{rv}""#),
            1,
        )
        .into_bytes();
    for (method, path, ct, body, code, message) in refused {
        let r = send(client, method, &path, ct, body).await;
        assert_eq!(
            (r.code, r.body["reason"].as_str()),
            (code, Some("BadRequest")),
            "{method} {path} {ct:?}: {}",
            r.body
        );
        let got = r.body["message"].as_str().unwrap();
        assert!(got.starts_with(&message), "{method} {path} {ct:?}: {got}");
        still_serving(client, &w).await;
    }

    // At the bound, every path stores and serves the object.
    let accepted = [
        ("POST", w.clone(), JSON, widget("e", MAX_DEPTH - 1), 201),
        ("PUT", format!("{w}/d"), JSON, put_d, 200),
        (
            "PATCH",
            format!("{w}/d"),
            MERGE,
            format!(r#"{{"spec":{}}}"#, nested(MAX_DEPTH - 1, "2")).into_bytes(),
            200,
        ),
        (
            "PATCH",
            format!("{w}/d"),
            JSON_PATCH,
            format!(
                r#"[{{"op":"replace","path":"/spec","value":{}}}]"#,
                nested(MAX_DEPTH - 2, "3")
            )
            .into_bytes(),
            200,
        ),
        (
            "PATCH",
            format!("{w}/f?fieldManager=t&force=true"),
            APPLY,
            widget("f", MAX_DEPTH - 1),
            201,
        ),
        (
            "PATCH",
            format!("{w}/f?fieldManager=t&force=true"),
            APPLY,
            widget("f", MAX_DEPTH - 2),
            200,
        ),
    ];
    // On a real kube-apiserver 1.36 a server-side apply that creates an object this deep is
    // 201, but the object's managedFields then nest past the decoder's bound: every later read
    // of the resource is a 500 (`invalid character '{' exceeded max depth`) and the object
    // cannot even be deleted, for the server's lifetime. So the apply rows run on this server
    // only.
    let real = std::env::var_os("APISERVER_KUBECONFIG").is_some();
    if real {
        println!(
            "SKIP the server-side apply rows: on a real kube-apiserver they leave the widgets resource unreadable (APISERVER_KUBECONFIG is set)"
        );
    }
    for (method, path, ct, body, code) in accepted {
        if real && ct == APPLY {
            continue;
        }
        let r = send(client, method, &path, ct, body).await;
        assert_eq!(r.code, code, "{method} {path} {ct:?}: {}", r.body);
        still_serving(client, &w).await;
    }
    let e = send(client, "GET", &format!("{w}/e"), None, vec![]).await;
    assert_eq!(depth_of(&e.bytes), MAX_DEPTH);
    let list = send(client, "GET", &w, None, vec![]).await;
    assert_eq!(
        depth_of(&list.bytes),
        MAX_DEPTH + 2,
        "the list and its items array hold it"
    );
    for name in ["d", "e", "f"].into_iter().filter(|n| !real || *n != "f") {
        let r = send(client, "DELETE", &format!("{w}/{name}"), None, vec![]).await;
        assert_eq!(r.code, 200, "{name}");
    }
    still_serving(client, &w).await;
    c.cleanup().await;
}

#[tokio::test]
async fn a_crd_schema_at_the_bound_is_served_and_removed() {
    let (c, w, _) = seeded().await;
    let client = &c.client;
    // The schema sits five levels down in the CRD: spec, versions, [0], schema, openAPIV3Schema.
    // A structural root (a real server requires `type` there); the rest nests to the bound.
    let schema = format!(
        r#"{{"type":"object","x-kubernetes-preserve-unknown-fields":true,"a":{}}}"#,
        nested(MAX_DEPTH - 7, "1")
    );
    let crd = format!(
        r#"{{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{{"name":"gadgets.conformance.mco.test"}},"spec":{{"group":"conformance.mco.test","scope":"Cluster","names":{{"plural":"gadgets","singular":"gadget","kind":"Gadget"}},"versions":[{{"name":"v1","served":true,"storage":true,"schema":{{"openAPIV3Schema":{schema}}}}}]}}}}"#
    );
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    remove_crd(client, "gadgets.conformance.mco.test").await;
    let created = send(client, "POST", crds, JSON, crd.into_bytes()).await;
    assert_eq!(created.code, 201, "{}", created.body);
    await_established(client, "gadgets.conformance.mco.test").await;
    for path in [
        "/openapi/v3",
        "/openapi/v3/apis/conformance.mco.test/v1",
        "/apis",
        "/apis/conformance.mco.test/v1/gadgets",
    ] {
        let r = send(client, "GET", path, None, vec![]).await;
        assert_eq!(r.code, 200, "{path}");
    }
    let deleted = send(
        client,
        "DELETE",
        &format!("{crds}/gadgets.conformance.mco.test"),
        None,
        vec![],
    )
    .await;
    assert_eq!(deleted.code, 200);
    still_serving(client, &w).await;
    let gone = send(
        client,
        "GET",
        "/openapi/v3/apis/conformance.mco.test/v1",
        None,
        vec![],
    )
    .await;
    assert_eq!(gone.code, 200, "widgets still serve the group");
    c.cleanup().await;
}

#[tokio::test]
async fn json_patch_copies_cannot_grow_a_document_without_bound() {
    // kube-apiserver applies at most 10,000 operations and copies at most 3 MiB in one JSON
    // patch; within those, a copy into its own subtree still meets the depth bound.
    let (c, w, _) = seeded().await;
    let client = &c.client;
    assert_eq!(post_widget(client, &w, "c", 5_000).await, 201);
    let path = format!("{w}/c");
    let leaf = format!("/spec{}", "/a".repeat(4_999));
    let copy = json!([{"op": "copy", "from": "/spec", "path": format!("{leaf}/a")},
                      {"op": "copy", "from": "/spec", "path": "/spec/b"}]);
    let r = send(client, "PATCH", &path, JSON_PATCH, copy.to_string().into_bytes()).await;
    assert_eq!(
        (r.code, r.body["reason"].as_str(), &r.body["details"]),
        (422, Some("Invalid"), &json!({})),
        "a copy into its own subtree past the bound: {}",
        r.body
    );
    let doubling: Vec<_> = (0..12)
        .map(|i| json!({"op": "copy", "from": "/spec", "path": format!("/spec/c{i}")}))
        .collect();
    let r = send(
        client,
        "PATCH",
        &path,
        JSON_PATCH,
        json!(doubling).to_string().into_bytes(),
    )
    .await;
    assert_eq!(
        (r.code, r.body["reason"].as_str()),
        (422, Some("Invalid")),
        "3 MiB of copies"
    );
    let many = vec![json!({"op": "test", "path": "/kind", "value": "Widget"}); 10_001];
    let r = send(
        client,
        "PATCH",
        &path,
        JSON_PATCH,
        json!(many).to_string().into_bytes(),
    )
    .await;
    assert_eq!(
        (r.code, r.body["reason"].as_str(), r.body["message"].as_str()),
        (
            413,
            Some("RequestEntityTooLarge"),
            Some(
                "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
            )
        )
    );
    still_serving(client, &w).await;
    c.cleanup().await;
}

async fn post_widget(client: &kube::Client, widgets: &str, name: &str, levels: usize) -> u16 {
    send(client, "POST", widgets, JSON, widget(name, levels))
        .await
        .code
}
