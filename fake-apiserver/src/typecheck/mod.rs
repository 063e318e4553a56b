//! The Go types behind the built-in objects this server serves, as far as a JSON body can
//! contradict them: kube-apiserver decodes a body into its typed struct, and a field of the
//! wrong JSON type fails the decode with Go's `encoding/json` wording
//! (`json: cannot unmarshal number into Go struct field ConfigMap.data of type string`).
//!
//! Only what the tables below name is checked; anything else passes untouched (an unknown field
//! is the real server's to drop and this server's to keep). `null` is always accepted, as Go
//! leaves the zero value. Custom resources are unstructured: only their `metadata` is decoded as
//! `ObjectMeta` ([`coerce_custom_metadata`]). Every kind's metadata keeps only what `ObjectMeta` declares
//! ([`prune_metadata`]). Pure functions; callers word the failure for their verb.

mod types;

use base64::Engine;
use serde_json::{Map, Value};
use types::{KINDS, OBJECT_META, OWNER_REFERENCE, TOP_LEVEL, Ty};

/// A field whose JSON type contradicts its Go type; `Display` is Go's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeError {
    /// Go's `encoding/json` message, e.g. `json: cannot unmarshal string into Go struct field
    /// ObjectMeta.metadata.labels of type map[string]string`.
    pub message: String,
    /// The JSON path of the field (`metadata.labels`), for messages that name it.
    pub path: String,
}

impl std::fmt::Display for TypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Check `object`, a body of built-in `kind`, against the kind's Go types. Kinds not in the
/// table pass.
pub(crate) fn check_builtin(kind: &str, object: &Value) -> Result<(), TypeError> {
    let Some((_, fields)) = KINDS.iter().find(|(k, _)| *k == kind) else {
        return Ok(());
    };
    let Value::Object(map) = object else {
        return Ok(());
    };
    check_fields(kind, fields, map, "")
}

fn check_fields(
    struct_name: &str,
    fields: &[(&str, Ty)],
    map: &Map<String, Value>,
    prefix: &str,
) -> Result<(), TypeError> {
    for (name, ty) in fields {
        if let Some(value) = map.get(*name) {
            let path = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}.{name}")
            };
            check(struct_name, *ty, value, &path)?;
        }
    }
    Ok(())
}

/// Go's name for the JSON type of `value` in an `UnmarshalTypeError`.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

fn check(struct_name: &str, ty: Ty, value: &Value, path: &str) -> Result<(), TypeError> {
    if value.is_null() {
        return Ok(());
    }
    let mismatch = |found: &str, go: &str| TypeError {
        message: format!(
            "json: cannot unmarshal {found} into Go struct field {struct_name}.{path} of type {go}"
        ),
        path: path.to_string(),
    };
    match (ty, value) {
        (Ty::Str(_), Value::String(_)) | (Ty::Bool, Value::Bool(_)) => Ok(()),
        (Ty::Str(go), other) => Err(mismatch(json_kind(other), go)),
        (Ty::Bool, other) => Err(mismatch(json_kind(other), "bool")),
        (Ty::Int(go), Value::Number(n)) => {
            let fits = match go {
                "int32" => n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
                _ => n.as_i64().is_some(),
            };
            if fits {
                Ok(())
            } else {
                Err(mismatch(&format!("number {n}"), go))
            }
        }
        (Ty::Int(go), other) => Err(mismatch(json_kind(other), go)),
        (Ty::Bytes, Value::String(s)) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map(|_| ())
            .map_err(|e| TypeError {
                message: base64_message(&e),
                path: path.to_string(),
            }),
        (Ty::Bytes, other) => Err(mismatch(json_kind(other), "[]uint8")),
        (Ty::Time, Value::String(_)) => Ok(()),
        // metav1.Time unmarshals through a plain string, outside the struct's context.
        (Ty::Time, other) => Err(TypeError {
            message: format!(
                "json: cannot unmarshal {} into Go value of type string",
                json_kind(other)
            ),
            path: path.to_string(),
        }),
        (Ty::Map(inner, _), Value::Object(map)) => {
            map.values().try_for_each(|v| check(struct_name, *inner, v, path))
        }
        (Ty::Map(_, go), other) => Err(mismatch(json_kind(other), go)),
        (Ty::List(inner, _), Value::Array(items)) => {
            items.iter().try_for_each(|v| check(struct_name, *inner, v, path))
        }
        (Ty::List(_, go), other) => Err(mismatch(json_kind(other), go)),
        (Ty::Struct(s), Value::Object(map)) => check_fields(s.name, s.fields, map, path),
        (Ty::Struct(s), other) => Err(mismatch(json_kind(other), s.go)),
        (Ty::Object(_), Value::Object(_)) => Ok(()),
        (Ty::Object(go), other) => Err(mismatch(json_kind(other), go)),
    }
}

/// Go's `base64.CorruptInputError` wording.
fn base64_message(e: &base64::DecodeError) -> String {
    let at = match e {
        base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => *at,
        base64::DecodeError::InvalidLength(len) => *len,
        base64::DecodeError::InvalidPadding => 0,
    };
    format!("illegal base64 data at input byte {at}")
}

/// A custom resource's `metadata`, as kube-apiserver 1.36 decodes it from a client's body: it
/// must decode as an object, and every `ObjectMeta` field as its Go type. A field that does not
/// fails the request (`<Kind> in version "v1" cannot be handled as a <Kind>: json: cannot
/// unmarshal number into Go struct field ObjectMeta.labels of type map[string]string`); with
/// several, the last in `ObjectMeta`'s field order is the one named (checked against a real
/// 1.36: `labels: {"a": 5}` beside `annotations: "x"` names the annotations). Older servers
/// dropped such fields (`schema/objectmeta/coerce.go`); 1.36 does not.
pub(crate) fn coerce_custom_metadata(object: &mut Value) -> Result<(), String> {
    let Some(metadata) = object.get_mut("metadata") else {
        return Ok(());
    };
    let map = match metadata {
        Value::Null => return Ok(()),
        Value::Object(map) => map,
        // As a real 1.36 answers: the metadata fails to decode into `ObjectMeta`.
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
                json_kind(other)
            ));
        }
    };
    let last_error = OBJECT_META.fields.iter().rev().find_map(|(name, ty)| {
        map.get(*name)
            .and_then(|v| check(OBJECT_META.name, *ty, v, name).err())
    });
    match last_error {
        Some(e) => Err(e.message),
        None => Ok(()),
    }
}

/// The fields of a built-in object (of `group` and `kind`) its Go type does not declare, at the
/// top level and in `metadata`, as a strict decode names them (`foo`, `metadata.foo`), in the
/// order of their names; removed from `object`, as the typed decode drops them. Kinds not in
/// the table keep everything.
pub(crate) fn take_unknown_fields(group: &str, kind: &str, object: &mut Value) -> Vec<String> {
    let Some((_, _, fields)) = TOP_LEVEL.iter().find(|(g, k, _)| *g == group && *k == kind) else {
        return Vec::new();
    };
    let Value::Object(map) = object else {
        return Vec::new();
    };
    let mut unknown = Vec::new();
    map.retain(|key, _| {
        let known = matches!(key.as_str(), "apiVersion" | "kind") || fields.contains(&key.as_str());
        if !known {
            unknown.push(key.clone());
        }
        known
    });
    if let Some(Value::Object(meta)) = map.get("metadata") {
        unknown.extend(
            meta.keys()
                .filter(|key| !OBJECT_META.fields.iter().any(|(name, _)| name == key))
                .map(|key| format!("metadata.{key}")),
        );
    }
    unknown.sort();
    unknown
}

/// Keep only what `metav1.ObjectMeta` (and each `OwnerReference` in it) declares: the typed
/// decode a built-in object goes through, and the coercion a custom resource's metadata goes
/// through, drop every other field. Call after the types check.
pub(crate) fn prune_metadata(object: &mut Value) {
    let Some(Value::Object(meta)) = object.get_mut("metadata") else {
        return;
    };
    let known = |fields: &[(&str, Ty)], key: &str| fields.iter().any(|(name, _)| *name == key);
    meta.retain(|key, _| known(OBJECT_META.fields, key));
    if let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") {
        for r in refs.iter_mut().filter_map(Value::as_object_mut) {
            r.retain(|key, _| known(OWNER_REFERENCE.fields, key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_are_go_s() {
        let cases = [
            (
                json!({"metadata": "x"}),
                "json: cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta",
            ),
            (
                json!({"metadata": {"labels": []}}),
                "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
            ),
            (
                json!({"metadata": {"annotations": {"a": 1}}}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string",
            ),
            (
                json!({"metadata": {"finalizers": "f"}}),
                "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.finalizers of type []string",
            ),
            (
                json!({"metadata": {"ownerReferences": [{"uid": 5}]}}),
                "json: cannot unmarshal number into Go struct field OwnerReference.metadata.ownerReferences.uid of type types.UID",
            ),
            (
                json!({"data": {"k": true}}),
                "json: cannot unmarshal bool into Go struct field ConfigMap.data of type string",
            ),
            (
                json!({"metadata": {"generation": 1.5}}),
                "json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.metadata.generation of type int64",
            ),
        ];
        for (object, message) in cases {
            assert_eq!(check_builtin("ConfigMap", &object).unwrap_err().message, message);
        }
        let node = json!({"spec": 1});
        assert_eq!(
            check_builtin("Node", &node).unwrap_err().message,
            "json: cannot unmarshal number into Go struct field Node.spec of type v1.NodeSpec"
        );
        let secret = json!({"data": {"k": "not base64!"}});
        assert_eq!(
            check_builtin("Secret", &secret).unwrap_err().message,
            "illegal base64 data at input byte 3"
        );
    }

    #[test]
    fn well_typed_and_null_pass() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": null,
            "annotations": {"x": null}, "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u", "controller": true}],
            "finalizers": ["a/b"], "generation": 3}, "data": {"k": "v"}, "binaryData": {"b": "aGk="}, "extra": {"anything": [1]}});
        check_builtin("ConfigMap", &cm).unwrap();
        check_builtin("Widget", &json!({"metadata": 1})).unwrap();
    }

    #[test]
    fn metadata_keeps_only_what_object_meta_declares() {
        let mut o = json!({"metadata": {"name": "a", "clusterName": "x", "deep": {"a": {"b": 1}},
            "ownerReferences": [{"uid": "u", "junk": 1}]}, "data": {"k": "v"}});
        prune_metadata(&mut o);
        assert_eq!(
            o,
            json!({"metadata": {"name": "a", "ownerReferences": [{"uid": "u"}]}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn custom_metadata_must_decode_as_object_meta() {
        let mut ok = json!({"metadata": {"name": "w", "labels": {"a": "b"}, "finalizers": ["f"]}});
        coerce_custom_metadata(&mut ok).unwrap();
        for (metadata, message) in [
            (
                json!({"name": "w", "labels": 5}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type map[string]string",
            ),
            (
                json!({"name": "w", "labels": {"a": 5}}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string",
            ),
            (
                json!({"name": "w", "labels": {"a": 5}, "annotations": "x"}),
                "json: cannot unmarshal string into Go struct field ObjectMeta.annotations of type map[string]string",
            ),
            (
                json!({"name": "w", "generateName": 5}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.generateName of type string",
            ),
            (
                json!("x"),
                "json: cannot unmarshal string into Go value of type v1.ObjectMeta",
            ),
        ] {
            let mut w = json!({"metadata": metadata});
            assert_eq!(coerce_custom_metadata(&mut w).unwrap_err(), message, "{metadata}");
        }
    }
}
