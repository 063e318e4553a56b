//! What never changes on a Secret or a ConfigMap, as kube-apiserver 1.36 holds it (kubernetes
//! `pkg/apis/core/validation/validation.go`, `ValidateSecretUpdate`, `ValidateConfigMapUpdate`):
//! a Secret's type; and once `immutable` is true, that flag and the data (`data`, and a
//! ConfigMap's `binaryData`). Every refusal is a 422 checked whole, through PUT and merge patch
//! alike, and leaves the object as it was; metadata still changes.

use crate::common::{Cause, cluster, invalid};
use serde_json::{Value, json};

const FROZEN: &str = "Forbidden: field is immutable when `immutable` is set";
const REQUIRED: &str = "Required value";
const MERGE: &str = "application/merge-patch+json";

/// A certificate and a key for a `kubernetes.io/tls` Secret ("c" and "k", base64): the type
/// asks only that both keys be there.
const CERT: &str = "Yw==";
const KEY: &str = "aw==";

#[tokio::test]
async fn a_secret_keeps_its_type_and_an_immutable_one_its_data() {
    let c = cluster().await;
    let secrets = c.path("v1", "secrets");
    let frozen = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "frozen"},
        "type": "kubernetes.io/tls", "immutable": true, "data": {"tls.crt": CERT, "tls.key": KEY}});
    c.create(&secrets, frozen.clone()).await;
    let path = format!("{secrets}/frozen");
    let mut put = frozen.clone();
    put["type"] = json!("Opaque");
    put["immutable"] = json!(false);
    put["data"] = json!({"a": "eA=="});
    let answer = c.write("PUT", &path, "application/json", &put).await;
    assert_eq!(
        answer.body,
        invalid(
            "Secret",
            "frozen",
            &[
                (
                    "type",
                    "FieldValueInvalid",
                    "Invalid value: \"Opaque\": field is immutable"
                ),
                ("immutable", "FieldValueForbidden", FROZEN),
                ("data", "FieldValueForbidden", FROZEN),
            ]
        )
    );
    // Each rule alone, through a patch; the new object's own rules come after.
    let patches: [(Value, Vec<Cause>); 3] = [
        (
            json!({"immutable": null}),
            vec![("immutable", "FieldValueForbidden", FROZEN)],
        ),
        (
            json!({"stringData": {"tls.key": "other"}}),
            vec![("data", "FieldValueForbidden", FROZEN)],
        ),
        (
            json!({"data": {"tls.crt": null}}),
            vec![
                ("data", "FieldValueForbidden", FROZEN),
                ("data[tls.crt]", "FieldValueRequired", REQUIRED),
            ],
        ),
    ];
    for (patch, causes) in patches {
        let answer = c.write("PATCH", &path, MERGE, &patch).await;
        assert_eq!(answer.body, invalid("Secret", "frozen", &causes), "{patch}");
    }
    // Its metadata may still change.
    let labels = json!({"metadata": {"labels": {"a": "b"}}});
    let answer = c.write("PATCH", &path, MERGE, &labels).await;
    assert_eq!(answer.code, 200, "{}", answer.body);
    assert_eq!(
        (&answer.body["type"], &answer.body["data"]),
        (&frozen["type"], &frozen["data"])
    );

    // A mutable Secret's data may change, and it may become immutable; its type never changes.
    let thawed = format!("{secrets}/thawed");
    c.create(
        &secrets,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "thawed"}, "data": {"a": "eA=="}}),
    )
    .await;
    let freeze = json!({"immutable": true, "data": {"a": "eQ=="}});
    let answer = c.write("PATCH", &thawed, MERGE, &freeze).await;
    assert_eq!(answer.code, 200, "{}", answer.body);
    let retype = json!({"type": "kubernetes.io/tls"});
    let answer = c.write("PATCH", &thawed, MERGE, &retype).await;
    assert_eq!(
        answer.body,
        invalid(
            "Secret",
            "thawed",
            &[
                (
                    "type",
                    "FieldValueInvalid",
                    "Invalid value: \"kubernetes.io/tls\": field is immutable"
                ),
                ("data[tls.crt]", "FieldValueRequired", REQUIRED),
                ("data[tls.key]", "FieldValueRequired", REQUIRED),
            ]
        )
    );
    c.cleanup().await;
}

#[tokio::test]
async fn an_immutable_configmap_keeps_its_data_and_binary_data() {
    let c = cluster().await;
    let cms = c.path("v1", "configmaps");
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen"},
        "immutable": true, "data": {"a": "x"}, "binaryData": {"b": "AA=="}});
    c.create(&cms, body.clone()).await;
    let path = format!("{cms}/frozen");
    let mut put = body.clone();
    put["immutable"] = json!(false);
    put["data"] = json!({"a": "y"});
    put["binaryData"] = json!({"b": "AQ=="});
    let answer = c.write("PUT", &path, "application/json", &put).await;
    assert_eq!(
        answer.body,
        invalid(
            "ConfigMap",
            "frozen",
            &[
                ("immutable", "FieldValueForbidden", FROZEN),
                ("data", "FieldValueForbidden", FROZEN),
                ("binaryData", "FieldValueForbidden", FROZEN),
            ]
        )
    );
    let patches = [
        (json!({"immutable": false}), "immutable"),
        (json!({"data": {"c": "z"}}), "data"),
        (json!({"binaryData": null}), "binaryData"),
    ];
    for (patch, field) in patches {
        let answer = c.write("PATCH", &path, MERGE, &patch).await;
        assert_eq!(
            answer.body,
            invalid("ConfigMap", "frozen", &[(field, "FieldValueForbidden", FROZEN)]),
            "{patch}"
        );
    }
    let labels = json!({"metadata": {"labels": {"a": "b"}}});
    let answer = c.write("PATCH", &path, MERGE, &labels).await;
    assert_eq!(answer.code, 200, "{}", answer.body);
    assert_eq!(
        (&answer.body["data"], &answer.body["binaryData"]),
        (&body["data"], &body["binaryData"])
    );
    c.cleanup().await;
}
