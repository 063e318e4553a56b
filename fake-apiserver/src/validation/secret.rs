//! `ValidateSecret`'s rules by Secret `type`, after the key and size rules `meta::secret` checks
//! (kubernetes `pkg/apis/core/validation/validation.go`; the type names and keys from
//! `pkg/apis/core/types.go`). The type is the defaulted one (`store::prepare` makes an empty
//! type `Opaque`), and `data` already holds `stringData`. A type not named here, `Opaque`
//! included, has no rule.
//!
//! Not modelled: the warning 1.36 adds when a `kubernetes.io/tls` Secret's certificate and key
//! do not make a pair (`warningsForSecret`, a `Warning` header, not a cause).

use super::{Causes, gojson};
use base64::Engine;
use serde_json::Value;

/// `core.ServiceAccountNameKey`: the annotation a service account token Secret must carry.
const SERVICE_ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";
/// `core.SecretTypeDockercfg` and the key its config sits under (`DockerConfigKey`), then the
/// same for `SecretTypeDockerConfigJSON` (`DockerConfigJSONKey`).
const DOCKER_CONFIGS: &[(&str, &str)] = &[
    ("kubernetes.io/dockercfg", ".dockercfg"),
    ("kubernetes.io/dockerconfigjson", ".dockerconfigjson"),
];
/// What `ValidateSecret` shows instead of a docker config it cannot parse.
const REDACTED: &str = "<secret contents redacted>";

/// The bytes of `data[key]` as the Go object holds them: nothing for a missing key or `null`.
fn bytes(data: Option<&serde_json::Map<String, Value>>, key: &str) -> Vec<u8> {
    data.and_then(|d| d.get(key))
        .and_then(Value::as_str)
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .unwrap_or_default()
}

/// The `switch secret.Type` of `ValidateSecret`, in its order.
pub(super) fn type_causes(object: &Value, causes: &mut Causes) {
    let data = object.get("data").and_then(Value::as_object);
    // Go's `_, exists := secret.Data[key]`: a key with a `null` value exists.
    let has = |key: &str| data.is_some_and(|d| d.contains_key(key));
    let secret_type = object.get("type").and_then(Value::as_str).unwrap_or("");
    match secret_type {
        "kubernetes.io/service-account-token" => {
            let name = object
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(SERVICE_ACCOUNT_NAME))
                .and_then(Value::as_str)
                .unwrap_or("");
            if name.is_empty() {
                causes.required(&format!("metadata.annotations[{SERVICE_ACCOUNT_NAME}]"));
            }
        }
        "kubernetes.io/basic-auth" => {
            // Either may be empty, but one must be there.
            if !has("username") && !has("password") {
                causes.required("data[username]");
                causes.required("data[password]");
            }
        }
        "kubernetes.io/ssh-auth" => {
            if bytes(data, "ssh-privatekey").is_empty() {
                causes.required("data[ssh-privatekey]");
            }
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    causes.required(&format!("data[{key}]"));
                }
            }
        }
        docker => {
            let Some((_, key)) = DOCKER_CONFIGS.iter().find(|(t, _)| *t == docker) else {
                return;
            };
            let field = format!("data[{key}]");
            if !has(key) {
                causes.required(&field);
            } else if let Some(error) = gojson::unmarshal_map_error(&bytes(data, key)) {
                causes.invalid(&field, REDACTED, &error);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn causes(object: Value) -> Vec<(String, &'static str, String)> {
        let mut c = Causes::default();
        type_causes(&object, &mut c);
        c.0.into_iter().map(|c| (c.field, c.reason, c.message)).collect()
    }

    fn required(field: &str) -> (String, &'static str, String) {
        (
            field.to_string(),
            "FieldValueRequired",
            "Required value".to_string(),
        )
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    /// Each type's rule, as (secret, causes), one table: the rule broken, then met.
    #[test]
    fn each_type_s_rule() {
        let config = b64(r#"{"auths":{}}"#);
        let invalid = |field: &str, go: &str| {
            (
                field.to_string(),
                "FieldValueInvalid",
                format!("Invalid value: \"<secret contents redacted>\": {go}"),
            )
        };
        let cases = [
            (json!({"type": "Opaque"}), vec![]),
            (json!({}), vec![]),
            (json!({"type": "example.com/own"}), vec![]),
            (
                json!({"type": "kubernetes.io/service-account-token", "metadata": {"annotations": {SERVICE_ACCOUNT_NAME: ""}}}),
                vec![required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                )],
            ),
            (
                json!({"type": "kubernetes.io/service-account-token", "metadata": {"annotations": {SERVICE_ACCOUNT_NAME: "sa"}}}),
                vec![],
            ),
            (
                json!({"type": "kubernetes.io/dockercfg"}),
                vec![required("data[.dockercfg]")],
            ),
            (
                json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": b64("[1,2")}}),
                vec![invalid("data[.dockercfg]", "unexpected end of JSON input")],
            ),
            (
                json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": config}}),
                vec![],
            ),
            (
                json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockercfg": config}}),
                vec![required("data[.dockerconfigjson]")],
            ),
            (
                json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64("[]")}}),
                vec![invalid(
                    "data[.dockerconfigjson]",
                    "json: cannot unmarshal array into Go value of type map[string]interface {}",
                )],
            ),
            (
                json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": null}}),
                vec![invalid("data[.dockerconfigjson]", "unexpected end of JSON input")],
            ),
            (
                json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": config}}),
                vec![],
            ),
            (
                json!({"type": "kubernetes.io/basic-auth", "data": {"user": ""}}),
                vec![required("data[username]"), required("data[password]")],
            ),
            (
                json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}}),
                vec![],
            ),
            (
                json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}}),
                vec![required("data[ssh-privatekey]")],
            ),
            (
                json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": b64("k")}}),
                vec![],
            ),
            (
                json!({"type": "kubernetes.io/tls"}),
                vec![required("data[tls.crt]"), required("data[tls.key]")],
            ),
            (
                json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": null}}),
                vec![],
            ),
        ];
        for (secret, want) in cases {
            assert_eq!(causes(secret.clone()), want, "{secret}");
        }
    }
}
