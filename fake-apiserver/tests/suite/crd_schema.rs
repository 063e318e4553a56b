//! A custom resource against its CRD's structural schema: what the schema does not declare is
//! pruned, and a value of the wrong type, a `format: byte` string that is not base64, a missing
//! `required` field or a value outside an `enum` is a 422 worded as kube-apiserver words it.
//! Runs against a real kube-apiserver too (`APISERVER_KUBECONFIG`).

use crate::common::*;
use serde_json::{Value, json};

const GIZMOS: &str = "gizmos.conformance.mco.test";

async fn ensure_gizmo_crd(client: &kube::Client) {
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": GIZMOS},
        "spec": {"group": WIDGET_GROUP, "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer"},
                        "mode": {"type": "string", "enum": ["a", "b"]},
                        "ca": {"type": "string", "format": "byte"},
                        "note": {"type": "string", "nullable": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "files": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}}}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}]}
    });
    let r = send(
        client,
        "POST",
        crds,
        Some("application/json"),
        crd.to_string().into_bytes(),
    )
    .await;
    assert!(
        r.code == 201 || r.code == 409,
        "creating the CRD: {} {}",
        r.code,
        r.body
    );
    await_established(client, GIZMOS).await;
}

fn gizmo(name: &str, spec: Value) -> Vec<u8> {
    json!({"apiVersion": "conformance.mco.test/v1", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec})
        .to_string()
        .into_bytes()
}

#[tokio::test]
async fn what_the_schema_does_not_declare_is_pruned() {
    let c = cluster().await;
    ensure_gizmo_crd(&c.client).await;
    let gizmos = c.path("conformance.mco.test/v1", "gizmos");
    let body = json!({"apiVersion": "conformance.mco.test/v1", "kind": "Gizmo", "metadata": {"name": "g"},
        "top": 1,
        "spec": {"size": 1, "typo": true, "mode": null, "note": null, "labels": {"k": "v"},
            "files": [{"path": "/etc/x", "mode": 420}], "free": {"any": {"deep": [1]}}}});
    let r = send(
        &c.client,
        "POST",
        &gizmos,
        Some("application/json"),
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.body.get("top").is_none(), "{}", r.body);
    assert_eq!(
        r.body["spec"],
        json!({"size": 1, "note": null, "labels": {"k": "v"}, "files": [{"path": "/etc/x"}], "free": {"any": {"deep": [1]}}}),
        "unknown fields and a non-nullable null are dropped; a nullable null stays"
    );
    c.cleanup().await;
}

#[tokio::test]
async fn schema_violations_are_422_as_kube_apiserver_words_them() {
    let c = cluster().await;
    ensure_gizmo_crd(&c.client).await;
    let gizmos = c.path("conformance.mco.test/v1", "gizmos");
    let cases = [
        (
            json!({"size": "3"}),
            "spec.size",
            "FieldValueTypeInvalid",
            "Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
        ),
        (
            json!({"size": 1, "ca": ""}),
            "spec.ca",
            "FieldValueTypeInvalid",
            "Invalid value: \"\": spec.ca in body must be of type byte: \"\"",
        ),
        (
            json!({"size": 1, "ca": "not base64!"}),
            "spec.ca",
            "FieldValueTypeInvalid",
            "Invalid value: \"not base64!\": spec.ca in body must be of type byte: \"not base64!\"",
        ),
        (json!({}), "spec.size", "FieldValueRequired", "Required value"),
        (
            json!({"size": 1, "mode": "c"}),
            "spec.mode",
            "FieldValueNotSupported",
            "Unsupported value: \"c\": supported values: \"a\", \"b\"",
        ),
        (
            json!({"size": 1, "files": [{"path": 7}]}),
            "spec.files[0].path",
            "FieldValueTypeInvalid",
            "Invalid value: \"integer\": spec.files[0].path in body must be of type string: \"integer\"",
        ),
    ];
    for (i, (spec, field, reason, message)) in cases.into_iter().enumerate() {
        let name = format!("bad-{i}");
        let r = send(
            &c.client,
            "POST",
            &gizmos,
            Some("application/json"),
            gizmo(&name, spec.clone()),
        )
        .await;
        assert_eq!(r.code, 422, "{spec}: {}", r.body);
        assert_eq!(r.body["reason"], "Invalid", "{spec}: {}", r.body);
        assert_eq!(
            r.body["message"],
            format!("Gizmo.conformance.mco.test \"{name}\" is invalid: {field}: {message}"),
            "{spec}"
        );
        let cause = &r.body["details"]["causes"][0];
        assert_eq!(
            (
                cause["reason"].as_str(),
                cause["field"].as_str(),
                cause["message"].as_str()
            ),
            (Some(reason), Some(field), Some(message)),
            "{spec}: {}",
            r.body
        );
    }
    // A fractional number for an integer fails twice on kube-apiserver: its type, then the
    // integer's default format, with no field path.
    let r = send(
        &c.client,
        "POST",
        &gizmos,
        Some("application/json"),
        gizmo("frac", json!({"size": 1.5})),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Gizmo.conformance.mco.test \"frac\" is invalid: [spec.size: Invalid value: \"number\": spec.size in body must be of type integer: \"number\", <nil>: Invalid value: \"\": Checked value must be of type integer (default format) in spec.size]"
    );
    assert_eq!(r.body["details"]["causes"][1]["field"], "<nil>", "{}", r.body);
    assert_eq!(
        r.body["details"]["causes"][1]["reason"], "FieldValueInvalid",
        "{}",
        r.body
    );
    // An update is held to the schema too.
    let ok = send(
        &c.client,
        "POST",
        &gizmos,
        Some("application/json"),
        gizmo("good", json!({"size": 1})),
    )
    .await;
    assert_eq!(ok.code, 201, "{}", ok.body);
    let r = send(
        &c.client,
        "PATCH",
        &format!("{gizmos}/good"),
        Some("application/merge-patch+json"),
        br#"{"spec":{"size":"big"}}"#.to_vec(),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    c.cleanup().await;
}
