//! Bad input never panics the server and never changes the store: a table of malformed
//! requests, each answered with the Status code and reason kube-apiserver gives, and a
//! property test throwing random methods, paths, queries, content types and bodies at the
//! router (a fixed number of cases from a fixed seed).

mod random;

use crate::common::{
    TestCluster, WIDGET_GROUP, cluster, ensure_widget_crd, init_crypto, send, skip_external,
};
use fake_apiserver::{ApiError, Authorizer, FakeApiServer, Identity, RequestAttributes};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use std::sync::Arc;

/// The resourceVersion of the store (a list answers with the newest).
async fn store_version(client: &kube::Client) -> String {
    let r = send(client, "GET", "/api/v1/namespaces", None, vec![]).await;
    r.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("list has a resourceVersion")
        .to_string()
}

/// A test namespace holding the ConfigMap `exists` and the widget `w`; with their collections'
/// paths.
async fn seeded() -> (TestCluster, String, String) {
    let c = cluster().await;
    ensure_widget_crd(&c.client).await;
    let (cms, widgets) = (
        c.path("v1", "configmaps"),
        c.path(&format!("{WIDGET_GROUP}/v1"), "widgets"),
    );
    c.create(
        &cms,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "exists"}, "data": {"k": "v"}}),
    )
    .await;
    c.create(
        &widgets,
        json!({"apiVersion": format!("{WIDGET_GROUP}/v1"), "kind": "Widget", "metadata": {"name": "w"}}),
    )
    .await;
    (c, cms, widgets)
}

/// What a rejected request must not change: the seeded objects' versions, and which
/// ConfigMaps and widgets the namespace holds.
async fn namespace_state(client: &kube::Client, collections: &[&str]) -> Vec<Value> {
    let mut state = Vec::new();
    for path in collections {
        let list = send(client, "GET", path, None, vec![]).await;
        for item in list.body["items"].as_array().expect("a list") {
            state.push(json!([
                item["metadata"]["name"],
                item["metadata"]["resourceVersion"]
            ]));
        }
    }
    state
}

fn cm(extra: Value) -> Vec<u8> {
    let mut base = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fresh"}});
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    serde_json::to_vec(&base).unwrap()
}

/// method, path, content type, body, expected code, expected reason
type Case<'a> = (&'a str, String, Option<&'a str>, Vec<u8>, u16, &'a str);

#[tokio::test]
async fn malformed_requests_get_the_right_status() {
    let (c, cms, widgets) = seeded().await;
    let (client, cms) = (&c.client, cms.as_str());
    let exists = format!("{cms}/exists");
    let json_ct = Some("application/json");
    let stale = serde_json::to_vec(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "exists", "resourceVersion": "1"}}),
    )
    .unwrap();
    let cases: Vec<Case> = vec![
        (
            "POST",
            cms.into(),
            json_ct,
            b"{not json".to_vec(),
            400,
            "BadRequest",
        ),
        (
            "POST",
            cms.into(),
            json_ct,
            cm(json!({"kind": "Secret"})),
            400,
            "BadRequest",
        ),
        (
            "POST",
            widgets.clone(),
            json_ct,
            br#"{"apiVersion":"conformance.mco.test/v1","metadata":{"name":"x"}}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            "POST",
            cms.into(),
            json_ct,
            cm(json!({"apiVersion": "v2"})),
            400,
            "BadRequest",
        ),
        (
            "POST",
            cms.into(),
            json_ct,
            b"[1,2,3]".to_vec(),
            400,
            "BadRequest",
        ),
        (
            "POST",
            cms.into(),
            json_ct,
            cm(json!({"metadata": {"name": "Bad_Name"}})),
            422,
            "Invalid",
        ),
        (
            "POST",
            cms.into(),
            json_ct,
            cm(json!({"metadata": {}})),
            422,
            "Invalid",
        ),
        (
            "POST",
            cms.into(),
            json_ct,
            cm(json!({"metadata": {"name": "a", "namespace": "other"}})),
            400,
            "BadRequest",
        ),
        (
            "POST",
            cms.into(),
            json_ct,
            cm(json!({"metadata": {"name": "exists"}})),
            409,
            "AlreadyExists",
        ),
        (
            "POST",
            format!("{cms}?dryRun=Sometimes"),
            json_ct,
            cm(json!({})),
            422,
            "Invalid",
        ),
        (
            "POST",
            "/api/v1/namespaces/nowhere/configmaps".into(),
            json_ct,
            cm(json!({})),
            404,
            "NotFound",
        ),
        (
            "POST",
            cms.into(),
            json_ct,
            // Past kube-apiserver's 3 MiB (its --max-request-body-bytes).
            vec![b' '; 4 * 1024 * 1024],
            413,
            "RequestEntityTooLarge",
        ),
        ("GET", format!("{cms}/nope"), None, vec![], 404, "NotFound"),
        ("GET", c.path("v1", "widgets"), None, vec![], 404, "NotFound"),
        (
            "GET",
            "/api/v1/nodes/n1/log".into(),
            None,
            vec![],
            404,
            "NotFound",
        ),
        (
            "GET",
            "/apis/apiextensions.k8s.io/v9/things".into(),
            None,
            vec![],
            404,
            "NotFound",
        ),
        ("GET", format!("{cms}?limit=ten"), None, vec![], 400, "BadRequest"),
        (
            "GET",
            format!("{cms}?labelSelector=a%20in%20b"),
            None,
            vec![],
            400,
            "BadRequest",
        ),
        (
            "GET",
            format!("{cms}?fieldSelector=spec.nodeName%3Dx"),
            None,
            vec![],
            400,
            "BadRequest",
        ),
        (
            "GET",
            format!("{cms}?continue=garbage"),
            None,
            vec![],
            400,
            "BadRequest",
        ),
        // A real kube-apiserver 1.36 answers this watch 500 with no reason (the list gets the
        // 400): kubernetes/kubernetes#139485, open, fix not merged. This server answers the
        // list's 400 for both (no 5xx for a client's mistake); `expected` allows the real one.
        (
            "GET",
            format!("{cms}?watch=true&resourceVersion=abc"),
            None,
            vec![],
            400,
            "BadRequest",
        ),
        (
            "GET",
            format!("{cms}?resourceVersionMatch=Exact"),
            None,
            vec![],
            422,
            "Invalid",
        ),
        ("PUT", cms.into(), json_ct, cm(json!({})), 405, "MethodNotAllowed"),
        (
            "POST",
            exists.clone(),
            json_ct,
            cm(json!({})),
            405,
            "MethodNotAllowed",
        ),
        ("PUT", exists.clone(), json_ct, stale, 409, "Conflict"),
        (
            "PUT",
            exists.clone(),
            json_ct,
            cm(json!({"metadata": {"name": "other"}})),
            400,
            "BadRequest",
        ),
        (
            "PATCH",
            exists.clone(),
            Some("text/plain"),
            b"{}".to_vec(),
            415,
            "UnsupportedMediaType",
        ),
        (
            "PATCH",
            exists.clone(),
            Some("application/merge-patch+json"),
            b"{oops".to_vec(),
            400,
            "BadRequest",
        ),
        (
            "PATCH",
            exists.clone(),
            Some("application/json-patch+json"),
            br#"[{"op":"bogus","path":"/x"}]"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            "PATCH",
            exists.clone(),
            Some("application/json-patch+json"),
            br#"[{"op":"test","path":"/data/k","value":"no"}]"#.to_vec(),
            422,
            "Invalid",
        ),
        (
            "PATCH",
            exists.clone(),
            Some("application/apply-patch+yaml"),
            b"data: {k: v}".to_vec(),
            422,
            "Invalid",
        ),
        (
            "PATCH",
            format!("{widgets}/w"),
            Some("application/strategic-merge-patch+json"),
            b"{}".to_vec(),
            415,
            "UnsupportedMediaType",
        ),
        (
            "DELETE",
            exists.clone(),
            json_ct,
            b"{bad".to_vec(),
            400,
            "BadRequest",
        ),
    ];
    let mut cases = cases;
    // A protobuf body that is its magic and nothing: "empty body".
    cases.push((
        "POST",
        cms.into(),
        Some("application/vnd.kubernetes.protobuf"),
        b"k8s\0".to_vec(),
        400,
        "BadRequest",
    ));
    if c.fake_because("the fault endpoint's bad request", "only the fake serves /_fake")
        .is_some()
    {
        cases.push((
            "POST",
            "/_fake/v1/faults".into(),
            json_ct,
            br#"{"action":"explode"}"#.to_vec(),
            400,
            "BadRequest",
        ));
    }
    assert!(cases.len() >= 20);
    let before = namespace_state(client, &[cms, &widgets]).await;
    let real = std::env::var_os("APISERVER_KUBECONFIG").is_some();
    for (method, path, ct, body, code, reason) in cases {
        let reply = send(client, method, &path, ct, body).await;
        let what = format!("{method} {path}");
        // kubernetes/kubernetes#139485 (see the case above): a real 1.36's 500, no reason.
        let (code, reason) = if real && path.ends_with("watch=true&resourceVersion=abc") {
            (500, serde_json::Value::Null)
        } else {
            (code, serde_json::Value::from(reason))
        };
        assert_eq!(reply.code, code, "{what}: {}", reply.body);
        assert_eq!(reply.body["kind"], "Status", "{what}");
        assert_eq!(
            reply.body["code"], code,
            "{what}: the body's code matches the HTTP code"
        );
        assert_eq!(reply.body["reason"], reason, "{what}: {}", reply.body);
        assert!(
            reply.body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{what}: a message"
        );
    }
    assert_eq!(
        namespace_state(client, &[cms, &widgets]).await,
        before,
        "no rejected request changed the store"
    );
    c.cleanup().await;
}

/// Lets the fuzzing identity do anything but delete, so random requests can reach every
/// handler without legitimately emptying the store.
struct NoDeletes;

impl Authorizer for NoDeletes {
    fn authorize(&self, who: &Identity, request: &RequestAttributes) -> Result<(), ApiError> {
        match request.verb.as_str() {
            "delete" | "deletecollection" => Err(request.rbac_denial(who)),
            _ => Ok(()),
        }
    }
}

/// kube-apiserver answers a path under `/apis/` whose group it does not serve, and a path
/// outside `/api` and `/apis`, with Go's plain-text `404 page not found`; a served group's
/// unknown version or resource gets a `NotFound` Status (checked against 1.36).
#[tokio::test]
async fn unserved_groups_and_paths_get_go_s_plain_404() {
    let c = cluster().await;
    for path in [
        "/apis/no.such.group",
        "/apis/no.such.group/v1",
        "/apis/no.such.group/v1/things",
        "/apis/no.such.group/v1/namespaces/default/things/x",
        "/foo",
    ] {
        let r = send(&c.client, "GET", path, None, vec![]).await;
        assert_eq!(
            (r.code, &r.bytes[..]),
            (404, &b"404 page not found\n"[..]),
            "{path}"
        );
    }
    for path in [
        "/apis/apiextensions.k8s.io/v9",
        "/apis/apiextensions.k8s.io/v9/things",
        "/apis/apiextensions.k8s.io/v1/things",
        "/api/v2",
        "/api/v1/things",
    ] {
        let r = send(&c.client, "GET", path, None, vec![]).await;
        assert_eq!(r.code, 404, "{path}");
        assert_eq!(
            (
                r.body["kind"].as_str(),
                r.body["reason"].as_str(),
                r.body["message"].as_str()
            ),
            (
                Some("Status"),
                Some("NotFound"),
                Some("the server could not find the requested resource")
            ),
            "{path}"
        );
    }
    c.cleanup().await;
}
