//! A Secret's type, as kube-apiserver 1.36 holds it (kubernetes `pkg/apis/core/v1/defaults.go`,
//! `SetDefaults_Secret`; `pkg/apis/core/validation/validation.go`, `ValidateSecret`): an empty
//! type is `Opaque`, on create and in a PUT body alike; each type's required keys, and a docker
//! config that Go's `encoding/json` cannot read as an object, each a 422 checked whole. That
//! the type never changes is in `immutability.rs`.

use crate::common::{Cause, cluster, invalid};
use base64::Engine;
use serde_json::{Value, json};

const REQUIRED: &str = "Required value";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn secret(name: &str, secret_type: Option<&str>, extra: Value) -> Value {
    let mut body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}});
    if let Some(t) = secret_type {
        body["type"] = json!(t);
    }
    for (k, v) in extra.as_object().expect("an object") {
        if k == "metadata" {
            for (mk, mv) in v.as_object().expect("metadata") {
                body["metadata"][mk] = mv.clone();
            }
        } else {
            body[k] = v.clone();
        }
    }
    body
}

#[tokio::test]
async fn a_secret_without_a_type_is_opaque_on_create_and_in_a_put_body() {
    let c = cluster().await;
    let secrets = c.path("v1", "secrets");
    let plain = c.create(&secrets, secret("plain", None, json!({}))).await;
    assert_eq!(plain["type"], "Opaque");
    let empty = c.create(&secrets, secret("empty", Some(""), json!({}))).await;
    assert_eq!(empty["type"], "Opaque");
    let tls = json!({"data": {"tls.crt": b64("c"), "tls.key": b64("k")}});
    c.create(&secrets, secret("tls", Some("kubernetes.io/tls"), tls.clone()))
        .await;

    // A merge patch that does not name the type keeps the stored one.
    let path = format!("{secrets}/tls");
    let patched = c
        .write(
            "PATCH",
            &path,
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"a": "b"}}}),
        )
        .await;
    assert_eq!(
        (patched.code, &patched.body["type"]),
        (200, &json!("kubernetes.io/tls")),
        "{}",
        patched.body
    );
    // A PUT body without one asks for Opaque, which the stored type refuses.
    let refused = c
        .write("PUT", &path, "application/json", &secret("tls", None, tls))
        .await;
    assert_eq!(
        refused.body,
        invalid(
            "Secret",
            "tls",
            &[(
                "type",
                "FieldValueInvalid",
                "Invalid value: \"Opaque\": field is immutable"
            )]
        )
    );
    let kept = c
        .write(
            "PUT",
            &format!("{secrets}/plain"),
            "application/json",
            &secret("plain", Some(""), json!({"data": {"a": b64("x")}})),
        )
        .await;
    assert_eq!(
        (kept.code, &kept.body["type"]),
        (200, &json!("Opaque")),
        "{}",
        kept.body
    );
    c.cleanup().await;
}

#[tokio::test]
async fn each_secret_type_needs_its_keys_and_a_docker_config_that_go_can_read() {
    let c = cluster().await;
    let secrets = c.path("v1", "secrets");
    let config_key_msg = "Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
    let redacted = |go: &str| format!("Invalid value: \"<secret contents redacted>\": {go}");
    let (trailing, cut, array, literal) = (
        redacted("invalid character '}' looking for beginning of object key string"),
        redacted("unexpected end of JSON input"),
        redacted("json: cannot unmarshal array into Go value of type map[string]interface {}"),
        redacted("invalid character ' ' in literal true (expecting 'e')"),
    );
    let cases: Vec<(Value, Vec<Cause>)> = vec![
        (
            secret("sa", Some("kubernetes.io/service-account-token"), json!({})),
            vec![(
                "metadata.annotations[kubernetes.io/service-account.name]",
                "FieldValueRequired",
                REQUIRED,
            )],
        ),
        (
            secret(
                "cfg",
                Some("kubernetes.io/dockercfg"),
                json!({"data": {".dockerconfigjson": b64("{}")}}),
            ),
            vec![("data[.dockercfg]", "FieldValueRequired", REQUIRED)],
        ),
        (
            secret(
                "cfg",
                Some("kubernetes.io/dockercfg"),
                json!({"data": {".dockercfg": b64(r#"{"a":1,}"#)}}),
            ),
            vec![("data[.dockercfg]", "FieldValueInvalid", &trailing)],
        ),
        (
            secret("json", Some("kubernetes.io/dockerconfigjson"), json!({})),
            vec![("data[.dockerconfigjson]", "FieldValueRequired", REQUIRED)],
        ),
        (
            secret(
                "json",
                Some("kubernetes.io/dockerconfigjson"),
                json!({"stringData": {".dockerconfigjson": "{\"auths\":"}}),
            ),
            vec![("data[.dockerconfigjson]", "FieldValueInvalid", &cut)],
        ),
        (
            secret(
                "json",
                Some("kubernetes.io/dockerconfigjson"),
                json!({"data": {".dockerconfigjson": b64("[{}]")}}),
            ),
            vec![("data[.dockerconfigjson]", "FieldValueInvalid", &array)],
        ),
        (
            secret(
                "json",
                Some("kubernetes.io/dockerconfigjson"),
                json!({"data": {".dockerconfigjson": b64("tru")}}),
            ),
            vec![("data[.dockerconfigjson]", "FieldValueInvalid", &literal)],
        ),
        (
            secret(
                "basic",
                Some("kubernetes.io/basic-auth"),
                json!({"data": {"user": b64("u")}}),
            ),
            vec![
                ("data[username]", "FieldValueRequired", REQUIRED),
                ("data[password]", "FieldValueRequired", REQUIRED),
            ],
        ),
        (
            secret(
                "ssh",
                Some("kubernetes.io/ssh-auth"),
                json!({"data": {"ssh-privatekey": ""}}),
            ),
            vec![("data[ssh-privatekey]", "FieldValueRequired", REQUIRED)],
        ),
        // The key rule comes first, then the type's.
        (
            secret(
                "tls",
                Some("kubernetes.io/tls"),
                json!({"data": {"a b": b64("x")}}),
            ),
            vec![
                ("data[a b]", "FieldValueInvalid", config_key_msg),
                ("data[tls.crt]", "FieldValueRequired", REQUIRED),
                ("data[tls.key]", "FieldValueRequired", REQUIRED),
            ],
        ),
    ];
    for (body, causes) in &cases {
        let name = body["metadata"]["name"].as_str().unwrap();
        let answer = c.write("POST", &secrets, "application/json", body).await;
        assert_eq!(answer.body, invalid("Secret", name, causes), "{body}");
    }
    // Met, each rule lets the Secret in; empty values count as present where upstream looks
    // only for the key.
    let good = [
        secret(
            "sa",
            Some("kubernetes.io/service-account-token"),
            json!({"metadata": {"annotations": {"kubernetes.io/service-account.name": "builder"}}}),
        ),
        secret(
            "cfg",
            Some("kubernetes.io/dockercfg"),
            json!({"data": {".dockercfg": b64("null")}}),
        ),
        secret(
            "json",
            Some("kubernetes.io/dockerconfigjson"),
            json!({"data": {".dockerconfigjson": b64(r#"{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}"#)}}),
        ),
        secret(
            "basic",
            Some("kubernetes.io/basic-auth"),
            json!({"data": {"password": ""}}),
        ),
        secret(
            "ssh",
            Some("kubernetes.io/ssh-auth"),
            json!({"data": {"ssh-privatekey": b64("k")}}),
        ),
        secret(
            "tls",
            Some("kubernetes.io/tls"),
            json!({"data": {"tls.crt": "", "tls.key": ""}}),
        ),
        secret("own", Some("example.com/own"), json!({})),
    ];
    for body in good {
        c.create(&secrets, body).await;
    }
    // The type's rule holds on update too.
    let answer = c
        .write(
            "PATCH",
            &format!("{secrets}/basic"),
            "application/merge-patch+json",
            &json!({"data": {"password": null}}),
        )
        .await;
    assert_eq!(
        answer.body,
        invalid(
            "Secret",
            "basic",
            &[
                ("data[username]", "FieldValueRequired", REQUIRED),
                ("data[password]", "FieldValueRequired", REQUIRED)
            ]
        )
    );
    c.cleanup().await;
}
