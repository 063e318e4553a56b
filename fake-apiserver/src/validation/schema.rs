//! Custom resources against their CRD's structural schema (`openAPIV3Schema`), as
//! kube-apiserver's apiextensions handler treats every write of one:
//!
//! 1. **Pruning.** A field the schema does not declare is dropped, unless the object around it
//!    says `x-kubernetes-preserve-unknown-fields: true` or gives `additionalProperties`; a `null`
//!    where the schema is not `nullable` is dropped too. `apiVersion`, `kind` and `metadata` at
//!    the root are never pruned here (metadata keeps what `ObjectMeta` declares, elsewhere).
//! 2. **Validation.** `type` (object, array, string, integer, number, boolean), `format: byte`
//!    (base64, as kube-openapi's strfmt checks it: at least one full group, so not empty),
//!    `required` and `enum`, each failure one cause of one 422, worded as kube-openapi words it
//!    (`spec.replicas in body must be of type integer: "string"`).
//!
//! Not modelled: other formats (`date-time`, `int32`, …), `minimum`/`maximum`, `minLength`/
//! `maxLength`, `pattern`, `minItems`/`maxItems`, `x-kubernetes-validations` (CEL), list-type
//! and map-type rules, defaulting.

use crate::error::Cause;
use serde_json::{Map, Value};

/// Drop what the schema does not declare (see the module docs); `object` is the whole custom
/// resource.
pub(crate) fn prune(schema: &Value, object: &mut Value) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    let keep = ["apiVersion", "kind", "metadata"];
    prune_object(schema, map, &keep);
}

fn preserves(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true)
}

fn nullable(schema: &Value) -> bool {
    schema["nullable"] == Value::Bool(true)
}

fn prune_object(schema: &Value, map: &mut Map<String, Value>, keep: &[&str]) {
    let properties = schema["properties"].as_object();
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        if keep.contains(&key.as_str()) {
            continue;
        }
        let child = properties.and_then(|p| p.get(&key)).or(additional);
        match child {
            Some(child) => {
                if map[&key].is_null() && !nullable(child) {
                    map.remove(&key);
                } else if let Some(value) = map.get_mut(&key) {
                    prune_value(child, value);
                }
            }
            None if preserves(schema) || schema["additionalProperties"] == Value::Bool(true) => {}
            None => {
                map.remove(&key);
            }
        }
    }
}

fn prune_value(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => prune_object(schema, map, &[]),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                for item in items.iter_mut() {
                    prune_value(item_schema, item);
                }
                if !nullable(item_schema) {
                    items.retain(|i| !i.is_null());
                }
            }
        }
        _ => {}
    }
}

/// The JSON type of a value as kube-openapi names it.
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(wanted: &str, value: &Value) -> bool {
    match wanted {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        _ => true,
    }
}

/// kube-openapi's base64 check for `format: byte`: whole groups of four, the last one possibly
/// padded, and at least one group.
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let alphabet = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let body = &b[..b.len() - 4];
    let last = &b[b.len() - 4..];
    body.iter().all(|&c| alphabet(c))
        && match last {
            [a, b2, b'=', b'='] => alphabet(*a) && alphabet(*b2),
            [a, b2, c, b'='] => alphabet(*a) && alphabet(*b2) && alphabet(*c),
            [a, b2, c, d] => alphabet(*a) && alphabet(*b2) && alphabet(*c) && alphabet(*d),
            _ => false,
        }
}

/// Go's `%q` of a string, as kube-openapi and the field errors print values.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// Every schema violation of the (pruned) custom resource, as causes of a 422.
pub(crate) fn causes(schema: &Value, object: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if let (Some(map), Some(properties)) = (object.as_object(), schema["properties"].as_object()) {
        check_required(schema, map, "", &mut out);
        for (key, value) in map {
            if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            if let Some(child) = properties.get(key) {
                check(child, value, key, &mut out);
            }
        }
    }
    out
}

fn check_required(schema: &Value, map: &Map<String, Value>, path: &str, out: &mut Vec<Cause>) {
    for name in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !map.contains_key(name) {
            out.push(Cause {
                reason: "FieldValueRequired",
                message: "Required value".into(),
                field: join(path, name),
            });
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The causes of one value at `path` against its schema: its type, then its format and enum,
/// then its fields or items, each against its own schema.
fn check(schema: &Value, value: &Value, path: &str, out: &mut Vec<Cause>) {
    if value.is_null() {
        // Left only where the schema is nullable (pruning dropped the others).
        return;
    }
    if !type_checks(schema, value, path, out) {
        return;
    }
    check_byte_format(schema, value, path, out);
    check_enum(schema, value, path, out);
    check_children(schema, value, path, out);
}

/// Whether the value is of the schema's `type`; when it is not, the causes kube-openapi gives
/// (and nothing below the value is checked).
fn type_checks(schema: &Value, value: &Value, path: &str, out: &mut Vec<Cause>) -> bool {
    let Some(wanted) = schema["type"].as_str() else {
        return true;
    };
    if type_matches(wanted, value) {
        return true;
    }
    let got = type_of(value);
    out.push(Cause {
        reason: "FieldValueTypeInvalid",
        message: format!(
            "Invalid value: {}: {path} in body must be of type {wanted}: {}",
            quote(got),
            quote(got)
        ),
        field: path.to_string(),
    });
    // kube-openapi checks an integer's (default) format too, and a fractional number fails
    // it again, with no field path.
    if wanted == "integer" && value.is_f64() {
        out.push(Cause {
            reason: "FieldValueInvalid",
            message: format!(
                "Invalid value: \"\": Checked value must be of type integer (default format) in {path}"
            ),
            field: "<nil>".to_string(),
        });
    }
    false
}

/// `format: byte`: a string must be base64.
fn check_byte_format(schema: &Value, value: &Value, path: &str, out: &mut Vec<Cause>) {
    if schema["format"] == "byte"
        && let Some(s) = value.as_str()
        && !is_base64(s)
    {
        out.push(Cause {
            reason: "FieldValueTypeInvalid",
            message: format!(
                "Invalid value: {}: {path} in body must be of type byte: {}",
                quote(s),
                quote(s)
            ),
            field: path.to_string(),
        });
    }
}

/// `enum`: the value must be one of those listed.
fn check_enum(schema: &Value, value: &Value, path: &str, out: &mut Vec<Cause>) {
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        let shown = |v: &Value| match v {
            Value::String(s) => quote(s),
            other => other.to_string(),
        };
        out.push(Cause {
            reason: "FieldValueNotSupported",
            message: format!(
                "Unsupported value: {}: supported values: {}",
                shown(value),
                allowed.iter().map(shown).collect::<Vec<_>>().join(", ")
            ),
            field: path.to_string(),
        });
    }
}

/// An object's required fields and each field against its property (or
/// `additionalProperties`) schema; an array's items against `items`.
fn check_children(schema: &Value, value: &Value, path: &str, out: &mut Vec<Cause>) {
    match value {
        Value::Object(map) => {
            check_required(schema, map, path, out);
            let properties = schema["properties"].as_object();
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, child_value) in map {
                if let Some(child) = properties.and_then(|p| p.get(key)).or(additional) {
                    check(child, child_value, &join(path, key), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|i| i.is_object()) {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer"},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "ca": {"type": "string", "format": "byte"},
                "maybe": {"type": "string", "nullable": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "items": {"type": "array", "items": {"type": "object", "properties": {"file": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}})
    }

    #[test]
    fn pruning_drops_what_the_schema_does_not_declare() {
        let mut w = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"}, "extra": 1,
            "spec": {"size": 1, "typo": true, "maybe": null, "mode": null, "labels": {"k": "v"},
                "items": [{"file": "f", "other": 2}, null], "free": {"anything": {"deep": 1}}}});
        prune(&schema(), &mut w);
        assert_eq!(
            w,
            json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"},
                "spec": {"size": 1, "maybe": null, "labels": {"k": "v"},
                    "items": [{"file": "f"}], "free": {"anything": {"deep": 1}}}})
        );
    }

    #[test]
    fn violations_are_worded_as_kube_openapi_words_them() {
        let w = json!({"spec": {"size": "3", "mode": "c", "ca": "", "labels": {"k": 5},
            "items": [{"file": 7}]}});
        let got: Vec<(String, String, &str)> = causes(&schema(), &w)
            .into_iter()
            .map(|c| (c.field, c.message, c.reason))
            .collect();
        let expect = [
            (
                "spec.size",
                "Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
                "FieldValueTypeInvalid",
            ),
            (
                "spec.mode",
                "Unsupported value: \"c\": supported values: \"a\", \"b\"",
                "FieldValueNotSupported",
            ),
            (
                "spec.ca",
                "Invalid value: \"\": spec.ca in body must be of type byte: \"\"",
                "FieldValueTypeInvalid",
            ),
            (
                "spec.labels.k",
                "Invalid value: \"integer\": spec.labels.k in body must be of type string: \"integer\"",
                "FieldValueTypeInvalid",
            ),
            (
                "spec.items[0].file",
                "Invalid value: \"integer\": spec.items[0].file in body must be of type string: \"integer\"",
                "FieldValueTypeInvalid",
            ),
        ];
        for (field, message, reason) in expect {
            assert!(
                got.iter()
                    .any(|(f, m, r)| f == field && m == message && *r == reason),
                "{field}: {got:?}"
            );
        }
        assert_eq!(got.len(), expect.len(), "{got:?}");
        let missing = causes(&schema(), &json!({"spec": {}}));
        assert_eq!(
            (missing[0].field.as_str(), missing[0].message.as_str()),
            ("spec.size", "Required value")
        );
    }

    #[test]
    fn base64_as_strfmt_checks_it() {
        for ok in ["YQ==", "YWI=", "YWJj", "YWJjZA=="] {
            assert!(is_base64(ok), "{ok}");
        }
        for bad in ["", "YQ", "Y===", "YW=j", "YWJj\n", "!!!!"] {
            assert!(!is_base64(bad), "{bad}");
        }
    }
}
