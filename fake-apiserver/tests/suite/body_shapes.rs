//! Every write verb with every body shape: a scalar, `null`, an array, and objects whose
//! `metadata`, `spec`, `status`, labels, annotations, finalizers, owner references or data have
//! the wrong JSON type. Each gets the code kube-apiserver 1.36 gives it (a 4xx Status; `null`
//! as a JSON or strategic patch is no change, 200), nothing panics, nothing is stored, and the
//! server answers afterwards. Server-side apply that created an object whose `metadata` was not
//! a map used to panic the request.

use crate::common::{Reply, WIDGET_GROUP, cluster, ensure_widget_crd, send};
use serde_json::{Value, json};

const NODES: &str = "/api/v1/nodes";

/// The verbs, as (label, method, content type, path suffix).
const VERBS: &[(&str, &str, &str, &str)] = &[
    ("create", "POST", "application/json", ""),
    ("update", "PUT", "application/json", "/{name}"),
    ("merge", "PATCH", "application/merge-patch+json", "/{name}"),
    ("json-patch", "PATCH", "application/json-patch+json", "/{name}"),
    (
        "strategic",
        "PATCH",
        "application/strategic-merge-patch+json",
        "/{name}",
    ),
    (
        "apply",
        "PATCH",
        "application/apply-patch+yaml",
        "/{name}?fieldManager=shapes",
    ),
    (
        "apply-create",
        "PATCH",
        "application/apply-patch+yaml",
        "/fresh?fieldManager=shapes",
    ),
];

/// One body shape: what each verb sends, and the code the real server answers per verb
/// (in `VERBS` order).
struct Shape {
    what: &'static str,
    /// Sent as is by every verb (a non-object body).
    raw: Option<&'static str>,
    /// Fields the object bodies (create, update, apply) and merge patches carry.
    fields: Value,
    /// The JSON patch operation that writes the same thing.
    op: Value,
    codes: [u16; 7],
}

fn shapes() -> Vec<Shape> {
    let raw = |what, text, codes| Shape {
        what,
        raw: Some(text),
        fields: Value::Null,
        op: Value::Null,
        codes,
    };
    let field = |what, fields: Value, path: &str, value: Value| Shape {
        what,
        raw: None,
        fields,
        op: json!([{"op": "add", "path": path, "value": value}]),
        // create, update and apply fail to decode (400); merge, JSON and strategic patches
        // produce an object that does not decode (422).
        codes: [400, 400, 422, 422, 422, 400, 400],
    };
    vec![
        // create/update: the version/kind sniff fails; merge, strategic and apply: not a map;
        // JSON patch: not `[]jsonPatchOp`.
        raw("number", "5", [400, 400, 400, 400, 400, 400, 400]),
        raw("string", "\"x\"", [400, 400, 400, 400, 400, 400, 400]),
        raw("bool", "true", [400, 400, 400, 400, 400, 400, 400]),
        // merge: not a map either.
        raw("array", "[1]", [400, 400, 400, 400, 400, 400, 400]),
        // create: an empty object, no name (422); update: no name, not the URL's (400);
        // merge: "Invalid JSON Patch"; JSON and strategic patches: no change; apply: no type.
        raw("null", "null", [422, 400, 400, 200, 200, 400, 400]),
        field(
            "metadata string",
            json!({"metadata": "x"}),
            "/metadata",
            json!("x"),
        ),
        field("metadata number", json!({"metadata": 5}), "/metadata", json!(5)),
        field(
            "metadata array",
            json!({"metadata": [1]}),
            "/metadata",
            json!([1]),
        ),
        field(
            "labels string",
            json!({"metadata": {"labels": "x"}}),
            "/metadata/labels",
            json!("x"),
        ),
        field(
            "label value number",
            json!({"metadata": {"labels": {"a": 1}}}),
            "/metadata/labels",
            json!({"a": 1}),
        ),
        field(
            "annotations array",
            json!({"metadata": {"annotations": []}}),
            "/metadata/annotations",
            json!([]),
        ),
        field(
            "annotation value map",
            json!({"metadata": {"annotations": {"a": {}}}}),
            "/metadata/annotations",
            json!({"a": {}}),
        ),
        field(
            "finalizers string",
            json!({"metadata": {"finalizers": "f"}}),
            "/metadata/finalizers",
            json!("f"),
        ),
        field(
            "finalizer number",
            json!({"metadata": {"finalizers": [1]}}),
            "/metadata/finalizers",
            json!([1]),
        ),
        field(
            "ownerReferences map",
            json!({"metadata": {"ownerReferences": {}}}),
            "/metadata/ownerReferences",
            json!({}),
        ),
        field(
            "ownerReference uid number",
            json!({"metadata": {"ownerReferences": [{"uid": 1}]}}),
            "/metadata/ownerReferences",
            json!([{"uid": 1}]),
        ),
        field("data number", json!({"data": {"k": 1}}), "/data", json!({"k": 1})),
        field("data list", json!({"data": ["k"]}), "/data", json!(["k"])),
    ]
}

/// Shapes for `spec` and `status`, on a kind that has them.
fn node_shapes() -> Vec<Shape> {
    let field = |what, fields: Value, path: &str, value: Value| Shape {
        what,
        raw: None,
        fields,
        op: json!([{"op": "add", "path": path, "value": value}]),
        codes: [400, 400, 422, 422, 422, 400, 400],
    };
    vec![
        field("spec string", json!({"spec": "x"}), "/spec", json!("x")),
        field("spec list", json!({"spec": []}), "/spec", json!([])),
        field("status number", json!({"status": 5}), "/status", json!(5)),
    ]
}

/// An object body: the type and name, then the shape's fields (a shape's `metadata` replaces
/// the name-only one, keeping the name when it is a map).
fn object_body(kind: &str, name: &str, fields: &Value) -> Value {
    let mut body = json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}});
    for (k, v) in fields.as_object().into_iter().flatten() {
        let mut v = v.clone();
        if k == "metadata"
            && let Some(m) = v.as_object_mut()
        {
            m.insert("name".into(), json!(name));
        }
        body[k] = v;
    }
    body
}

/// A real kube-apiserver answers a server-side apply whose `metadata` (or a map in it) is not
/// a map with a 500 (`failed to create typed patch object (…): .metadata: expected map, got
/// …`); this server
/// answers 400, never a 5xx for a client's mistake. Only the real server's reply matches this.
fn real_apply_500(r: &Reply) -> bool {
    r.code == 500
        && std::env::var_os("APISERVER_KUBECONFIG").is_some()
        && r.body["message"].as_str().is_some_and(|m| {
            m.starts_with("failed to create typed patch object") && m.contains(": expected ")
        })
}

async fn run(client: &kube::Client, collection: &str, kind: &str, name: &str, shapes: Vec<Shape>) {
    for shape in shapes {
        for (i, (verb, method, ct, suffix)) in VERBS.iter().enumerate() {
            let path = format!("{collection}{}", suffix.replace("{name}", name));
            let target = if *verb == "apply-create" { "fresh" } else { name };
            let body = match (shape.raw, *verb) {
                (Some(raw), _) => raw.to_string(),
                (None, "merge" | "strategic") => shape.fields.to_string(),
                (None, "json-patch") => shape.op.to_string(),
                (None, _) => object_body(kind, target, &shape.fields).to_string(),
            };
            let r = send(client, method, &path, Some(ct), body.into_bytes()).await;
            let what = format!("{kind} {} by {verb}", shape.what);
            let expected = match real_apply_500(&r) {
                // The one known difference: see `real_apply_500`.
                true => 500,
                false => shape.codes[i],
            };
            assert_eq!(r.code, expected, "{what}: {}", r.body);
            if r.code >= 400 {
                assert_eq!(r.body["kind"], "Status", "{what}");
                assert_eq!(r.body["code"], r.code, "{what}");
                assert!(
                    r.body["message"].as_str().is_some_and(|m| !m.is_empty()),
                    "{what}"
                );
            }
        }
    }
}

#[tokio::test]
async fn every_verb_answers_every_body_shape_with_a_status() {
    let c = cluster().await;
    let client = &c.client;
    let cms = c.path("v1", "configmaps");
    // A Node is cluster-wide: one named for this test's namespace.
    let node = format!("{}-n1", c.ns);
    c.create(
        &cms,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "exists"}, "data": {"k": "v"}}),
    )
    .await;
    c.create(
        NODES,
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}),
    )
    .await;
    let version = |r: crate::common::Reply| r.body["metadata"]["resourceVersion"].clone();
    let before = (
        version(send(client, "GET", &format!("{cms}/exists"), None, vec![]).await),
        version(send(client, "GET", &format!("{NODES}/{node}"), None, vec![]).await),
    );
    run(client, &cms, "ConfigMap", "exists", shapes()).await;
    run(client, NODES, "Node", &node, node_shapes()).await;
    let after = (
        version(send(client, "GET", &format!("{cms}/exists"), None, vec![]).await),
        version(send(client, "GET", &format!("{NODES}/{node}"), None, vec![]).await),
    );
    assert_eq!(before, after, "nothing was written");
    for fresh in [format!("{cms}/fresh"), format!("{NODES}/fresh")] {
        assert_eq!(
            send(client, "GET", &fresh, None, vec![]).await.code,
            404,
            "{fresh} was not stored"
        );
    }
    assert_eq!(send(client, "GET", "/readyz", None, vec![]).await.code, 200);
    let typed: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client.clone(), &c.ns);
    assert_eq!(
        typed.get("exists").await.unwrap().data.unwrap()["k"],
        "v",
        "still decodes"
    );
    let deleted = send(client, "DELETE", &format!("{NODES}/{node}"), None, vec![]).await;
    assert_eq!(deleted.code, 200, "{}", deleted.body);
    c.cleanup().await;
}

#[tokio::test]
async fn type_errors_are_worded_as_go_s_decoder_words_them() {
    let c = cluster().await;
    let client = &c.client;
    let cms = c.path("v1", "configmaps");
    c.create(
        &cms,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "exists"}}),
    )
    .await;
    let json_ct = Some("application/json");
    let cases = [
        (
            "POST",
            cms.clone(),
            json_ct,
            "[1]".to_string(),
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b315d)",
        ),
        (
            "POST",
            cms.clone(),
            json_ct,
            r#"{"metadata":{"name":"a","labels":{"k":1}}}"#.to_string(),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            "PUT",
            format!("{cms}/exists"),
            json_ct,
            r#"{"metadata":"x"}"#.to_string(),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta",
        ),
        (
            "PUT",
            format!("{cms}/exists"),
            json_ct,
            r#"{"data":{"k":"v"}}"#.to_string(),
            "the name of the object (exists based on URL) was undeterminable: name must be provided",
        ),
        (
            "PATCH",
            format!("{cms}/exists"),
            Some("application/json-patch+json"),
            "{}".to_string(),
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
        ),
        (
            "PATCH",
            format!("{cms}/exists"),
            Some("application/merge-patch+json"),
            "5".to_string(),
            "error decoding patch: json: cannot unmarshal number into Go value of type map[string]interface {}",
        ),
        (
            "PATCH",
            format!("{cms}/exists?fieldManager=m"),
            Some("application/apply-patch+yaml"),
            "null".to_string(),
            "invalid object type: /, Kind=",
        ),
    ];
    for (method, path, ct, body, message) in cases {
        let r = send(client, method, &path, ct, body.into_bytes()).await;
        assert_eq!(r.code, 400, "{method} {path}: {}", r.body);
        assert_eq!(r.body["message"], message, "{method} {path}");
    }
    let r = send(
        client,
        "PATCH",
        &format!("{cms}/exists"),
        Some("application/merge-patch+json"),
        br#"{"metadata":{"annotations":{"a":{}}}}"#.to_vec(),
    )
    .await;
    assert_eq!((r.code, r.body["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        r.body["details"],
        json!({"causes": [{"reason": "FieldValueInvalid", "field": "patch",
        "message": r.body["details"]["causes"][0]["message"].clone()}]})
    );
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
        "{message}"
    );
    assert!(
        message.ends_with("\": json: cannot unmarshal object into Go struct field ObjectMeta.metadata.annotations of type string"),
        "{message}"
    );
    c.cleanup().await;
}

#[tokio::test]
async fn a_custom_resource_s_metadata_must_decode_as_object_meta() {
    // kube-apiserver 1.36 decodes a custom resource's metadata as ObjectMeta: a field of the
    // wrong type fails the request (older servers dropped it), and a PUT must carry the
    // resourceVersion it replaces (custom resources allow no unconditional update).
    let c = cluster().await;
    let client = &c.client;
    ensure_widget_crd(client).await;
    let widgets = c.path(&format!("{WIDGET_GROUP}/v1"), "widgets");
    let widget = |metadata: Value| {
        json!({"apiVersion": "conformance.mco.test/v1", "kind": "Widget", "metadata": metadata})
            .to_string()
            .into_bytes()
    };
    let r = send(
        client,
        "POST",
        &widgets,
        Some("application/json"),
        widget(json!("x")),
    )
    .await;
    assert_eq!(r.code, 400);
    assert_eq!(
        r.body["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: json: cannot unmarshal string into Go value of type v1.ObjectMeta"
    );
    let body = widget(json!({"name": "w", "labels": 5, "annotations": {"a": "b"}}));
    let r = send(client, "POST", &widgets, Some("application/json"), body).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field ObjectMeta.labels of type map[string]string"
    );
    let r = send(
        client,
        "PATCH",
        &format!("{widgets}/fresh?fieldManager=m"),
        Some("application/apply-patch+yaml"),
        widget(json!(7)),
    )
    .await;
    assert_eq!(r.code, if real_apply_500(&r) { 500 } else { 400 }, "{}", r.body);
    let r = send(
        client,
        "POST",
        &widgets,
        Some("application/json"),
        widget(json!({"name": "w"})),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = send(
        client,
        "PUT",
        &format!("{widgets}/w"),
        Some("application/json"),
        widget(json!({"name": "w"})),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "widgets.conformance.mco.test \"w\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );
    assert_eq!(r.body["details"]["kind"], "widgets", "{}", r.body);
    c.cleanup().await;
}
