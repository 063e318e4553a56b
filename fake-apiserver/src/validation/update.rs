//! The rules only an update has, for a Secret and a ConfigMap: kubernetes
//! `pkg/apis/core/validation/validation.go`, `ValidateSecretUpdate` (the type never changes;
//! an `immutable` Secret stays immutable and keeps its `data`) and `ValidateConfigMapUpdate`
//! (the same for `data` and `binaryData`). `validate_object` puts these causes after the
//! metadata's and before the create rules it then checks on the new object, as upstream does.
//!
//! `reflect.DeepEqual` of the old and new maps is modelled on the decoded values, with no map,
//! an empty map and `null` alike, and a `null` value alike to an empty one: upstream's stored
//! object has lost that difference (protobuf keeps no empty map and no nil value), and this
//! server keeps bodies as written, so telling them apart would refuse a client that writes
//! back what it read. Upstream does tell them apart in a body that adds `data: {}` or a `null`
//! value to an immutable object; this server does not.

use super::Causes;
use base64::Engine;
use serde_json::Value;
use std::collections::BTreeMap;

/// `ValidateImmutableField`'s detail.
const IMMUTABLE: &str = "field is immutable";
/// What `immutable: true` forbids changing.
const FROZEN: &str = "field is immutable when `immutable` is set";

/// A `map[string]string` (`bytes` false) or `map[string][]byte` (base64 in JSON) as compared.
fn entries(object: &Value, field: &str, bytes: bool) -> BTreeMap<String, Vec<u8>> {
    let Some(map) = object.get(field).and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    map.iter()
        .map(|(key, value)| {
            let text = value.as_str().unwrap_or("");
            let decoded = if bytes {
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .unwrap_or_else(|_| text.as_bytes().to_vec())
            } else {
                text.as_bytes().to_vec()
            };
            (key.clone(), decoded)
        })
        .collect()
}

fn is_immutable(object: &Value) -> bool {
    object.get("immutable") == Some(&Value::Bool(true))
}

/// Once `old` is immutable: `immutable` must stay true and each of `fields` (name, holds bytes)
/// keep its entries.
fn frozen(old: &Value, new: &Value, fields: &[(&str, bool)], causes: &mut Causes) {
    if !is_immutable(old) {
        return;
    }
    if !is_immutable(new) {
        causes.forbidden("immutable", FROZEN);
    }
    for (field, bytes) in fields {
        if entries(old, field, *bytes) != entries(new, field, *bytes) {
            causes.forbidden(field, FROZEN);
        }
    }
}

/// `ValidateSecretUpdate`'s own rules; both types are the defaulted ones.
pub(super) fn secret(old: &Value, new: &Value, causes: &mut Causes) {
    let type_of = |o: &Value| o.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    let new_type = type_of(new);
    if new_type != type_of(old) {
        causes.invalid("type", &new_type, IMMUTABLE);
    }
    frozen(old, new, &[("data", true)], causes);
}

/// `ValidateConfigMapUpdate`'s own rules.
pub(super) fn configmap(old: &Value, new: &Value, causes: &mut Causes) {
    frozen(old, new, &[("data", false), ("binaryData", true)], causes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(check: fn(&Value, &Value, &mut Causes), old: Value, new: Value) -> Vec<(String, String)> {
        let mut c = Causes::default();
        check(&old, &new, &mut c);
        c.0.into_iter()
            .map(|c| {
                let reason = match c.reason {
                    "FieldValueForbidden" => "Forbidden",
                    other => other,
                };
                (format!("{}/{reason}", c.field), c.message)
            })
            .collect()
    }

    fn forbidden(field: &str) -> (String, String) {
        (
            format!("{field}/Forbidden"),
            "Forbidden: field is immutable when `immutable` is set".into(),
        )
    }

    #[test]
    fn a_secret_keeps_its_type_and_an_immutable_one_its_data() {
        let old = json!({"type": "kubernetes.io/tls", "immutable": true, "data": {"tls.crt": "YQ==", "tls.key": ""}});
        assert_eq!(run(secret, old.clone(), old.clone()), vec![]);
        let changed = json!({"type": "Opaque", "data": {"tls.crt": "Yg=="}});
        assert_eq!(
            run(secret, old.clone(), changed),
            vec![
                (
                    "type/FieldValueInvalid".into(),
                    "Invalid value: \"Opaque\": field is immutable".into()
                ),
                forbidden("immutable"),
                forbidden("data"),
            ]
        );
        // `null` and an empty value, no map and an empty map, are alike.
        let same = json!({"type": "kubernetes.io/tls", "immutable": true, "data": {"tls.crt": "YQ==", "tls.key": null}});
        assert_eq!(run(secret, old, same), vec![]);
        let bare = json!({"type": "Opaque", "immutable": true});
        assert_eq!(
            run(
                secret,
                bare.clone(),
                json!({"type": "Opaque", "immutable": true, "data": {}})
            ),
            vec![]
        );
        // A mutable Secret may change its data and become immutable, never its type.
        let mutable = json!({"type": "Opaque", "data": {"a": "YQ=="}});
        assert_eq!(run(secret, mutable, bare), vec![]);
    }

    #[test]
    fn an_immutable_configmap_keeps_data_and_binary_data() {
        let old = json!({"immutable": true, "data": {"a": "x"}, "binaryData": {"b": "AA=="}});
        assert_eq!(run(configmap, old.clone(), old.clone()), vec![]);
        assert_eq!(
            run(
                configmap,
                old.clone(),
                json!({"immutable": false, "data": {"a": "y"}})
            ),
            vec![forbidden("immutable"), forbidden("data"), forbidden("binaryData")]
        );
        assert_eq!(
            run(
                configmap,
                old,
                json!({"immutable": true, "data": {"a": "x"}, "binaryData": {"b": "AQ=="}})
            ),
            vec![forbidden("binaryData")]
        );
        let mutable = json!({"data": {"a": "x"}});
        assert_eq!(run(configmap, mutable, json!({"data": {"a": "y"}})), vec![]);
    }
}
