//! The four patch types kube-apiserver takes, applied to a JSON document.
//!
//! - JSON merge patch (RFC 7386): maps merge, `null` deletes, everything else replaces.
//! - JSON patch (RFC 6902, `test` included), through the `json-patch` crate.
//! - Strategic merge patch, for built-in types only: as merge patch, plus lists merged by their
//!   key (`containers` by `name`, `conditions` by `type`, ...), the set-merged `finalizers`, the
//!   `$patch: delete|replace` directives and `$deleteFromPrimitiveList/<field>`;
//!   `$setElementOrder/` and `$retainKeys` (sent by kubectl) are accepted and dropped.
//! - Server-side apply, which this server applies as a merge (strategic for built-in types)
//!   without tracking field ownership; the caller decides that, this module only patches.

use serde_json::{Map, Value};

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PatchError {
    /// The body is not a patch of the declared type (400).
    #[error("{0}")]
    Malformed(String),
    /// The patch is well formed but cannot be applied (422): a failed `test`, a bad path.
    #[error("{0}")]
    NotApplicable(String),
    /// A JSON patch that nests the document too deep to finish applying it; the document as
    /// far as it got (422, as a patched object that does not decode).
    #[error("exceeded max depth")]
    TooDeep(String),
    /// A JSON patch of more operations than kube-apiserver applies (413).
    #[error("The allowed maximum operations in a JSON patch is {max}, got {0}", max = MAX_JSON_PATCH_OPERATIONS)]
    TooManyOperations(usize),
}

/// RFC 7386.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let map = target.as_object_mut().expect("made an object above");
    for (k, v) in patch {
        if v.is_null() {
            map.remove(k);
        } else {
            merge_patch(map.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// kube-apiserver's bounds on a JSON patch (apiserver `endpoints/handlers/patch.go`
/// `maxJSONPatchOperations`, `server/config.go` `JSONPatchMaxCopyBytes`): they keep a patch of
/// `copy` operations from doubling a document into exhaustion.
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;
pub(crate) const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// RFC 6902. A body that is not an array of operations, or an operation that fails (including
/// `test`), is `NotApplicable`, and the document is left as it was. Over
/// `MAX_JSON_PATCH_OPERATIONS` operations is `TooManyOperations`; `copy` operations that copy
/// more than `MAX_JSON_PATCH_COPY_BYTES` in all are `NotApplicable`.
pub(crate) fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| PatchError::NotApplicable(format!("invalid JSON patch: {e}")))?;
    if ops.0.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations(ops.0.len()));
    }
    use crate::depth::{MAX_DEPTH, value_depth};
    use json_patch::PatchOperation as Op;
    let mut work = target.clone();
    let mut copied = 0usize;
    // An upper bound on the document's depth, kept as operations apply: a value put at a path of
    // k segments nests k levels below the root's. Only the final document must meet
    // `MAX_DEPTH` (the caller checks); a document midway past twice that is refused at once,
    // before a chain of copies can nest it deeper than any stack holds.
    let mut depth_bound = value_depth(&work);
    for op in &ops.0 {
        let at = |path: &str| path.matches('/').count();
        let added = match op {
            Op::Add(o) => at(o.path.as_str()) + value_depth(&o.value),
            Op::Replace(o) => at(o.path.as_str()) + value_depth(&o.value),
            Op::Move(o) => at(o.path.as_str()) + work.pointer(o.from.as_str()).map_or(0, value_depth),
            Op::Copy(o) => {
                let source = work.pointer(o.from.as_str());
                copied += source.map_or(0, |v| crate::depth::to_vec(v).len());
                if copied > MAX_JSON_PATCH_COPY_BYTES {
                    return Err(PatchError::NotApplicable(format!(
                        "Unable to copy, accumulated size of {copied} exceeds the limit of {MAX_JSON_PATCH_COPY_BYTES}"
                    )));
                }
                at(o.path.as_str()) + source.map_or(0, value_depth)
            }
            _ => 0,
        };
        json_patch::patch(&mut work, std::slice::from_ref(op))
            .map_err(|e| PatchError::NotApplicable(e.to_string()))?;
        depth_bound = depth_bound.max(added);
        if depth_bound > 2 * MAX_DEPTH {
            depth_bound = value_depth(&work);
            if depth_bound > 2 * MAX_DEPTH {
                let text = String::from_utf8_lossy(&crate::depth::to_vec(&work)).into_owned();
                crate::depth::dismantle(work);
                return Err(PatchError::TooDeep(text));
            }
        }
    }
    *target = work;
    Ok(())
}

/// Lists that strategic merge patch merges by a key instead of replacing
/// (the `patchMergeKey` tags of the core/v1 types this server serves).
const MERGE_KEYS: &[(&str, &str)] = &[
    ("containers", "name"),
    ("initContainers", "name"),
    ("ephemeralContainers", "name"),
    ("env", "name"),
    ("volumes", "name"),
    ("volumeMounts", "mountPath"),
    ("volumeDevices", "devicePath"),
    ("ports", "containerPort"),
    ("conditions", "type"),
    ("addresses", "type"),
    ("ownerReferences", "uid"),
    ("imagePullSecrets", "name"),
    ("hostAliases", "ip"),
];

/// Lists of scalars that strategic merge patch merges as a set (`patchStrategy:"merge"`).
const SET_LISTS: &[&str] = &["finalizers"];

const DIRECTIVE: &str = "$patch";
const DELETE_FROM_PRIMITIVE: &str = "$deleteFromPrimitiveList/";

/// Strategic merge patch over a document of a built-in type.
pub(crate) fn strategic_merge_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Object(patch) = patch else {
        return Err(PatchError::Malformed(
            "a strategic merge patch must be a JSON object".into(),
        ));
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    merge_map(target.as_object_mut().expect("object"), patch)
}

fn merge_map(target: &mut Map<String, Value>, patch: &Map<String, Value>) -> Result<(), PatchError> {
    match patch.get(DIRECTIVE).and_then(Value::as_str) {
        Some("replace") => {
            *target = without_directives(patch);
            return Ok(());
        }
        Some("delete") => {
            target.clear();
            return Ok(());
        }
        Some(other) => {
            return Err(PatchError::Malformed(format!(
                "unknown patch type {other:?} in strategic merge patch"
            )));
        }
        None => {}
    }
    for (key, value) in patch {
        if key == "$retainKeys" || key.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE) {
            let remove = value.as_array().cloned().unwrap_or_default();
            if let Some(Value::Array(items)) = target.get_mut(field) {
                items.retain(|i| !remove.contains(i));
            }
            continue;
        }
        if value.is_null() {
            target.remove(key);
            continue;
        }
        if let Value::Object(inner) = value {
            if inner.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") {
                target.remove(key);
                continue;
            }
            let slot = target
                .entry(key.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            merge_map(slot.as_object_mut().expect("object"), inner)?;
            continue;
        }
        if let Value::Array(items) = value {
            let merged = merge_list(key, target.get(key), items)?;
            target.insert(key.clone(), merged);
            continue;
        }
        target.insert(key.clone(), value.clone());
    }
    Ok(())
}

fn merge_list(field: &str, current: Option<&Value>, patch: &[Value]) -> Result<Value, PatchError> {
    let current: Vec<Value> = current.and_then(Value::as_array).cloned().unwrap_or_default();
    if patch
        .iter()
        .any(|i| i.get(DIRECTIVE).and_then(Value::as_str) == Some("replace"))
    {
        return Ok(Value::Array(
            patch
                .iter()
                .filter(|i| i.get(DIRECTIVE).is_none())
                .cloned()
                .collect(),
        ));
    }
    if SET_LISTS.contains(&field) {
        let mut out = current;
        for item in patch {
            if !out.contains(item) {
                out.push(item.clone());
            }
        }
        return Ok(Value::Array(out));
    }
    let Some(&(_, merge_key)) = MERGE_KEYS.iter().find(|(f, _)| *f == field) else {
        return Ok(Value::Array(patch.to_vec()));
    };
    let mut out = current;
    for item in patch {
        let Some(key_value) = item.get(merge_key) else {
            return Err(PatchError::Malformed(format!(
                "map: {item} does not contain declared merge key: {merge_key}"
            )));
        };
        let position = out.iter().position(|c| c.get(merge_key) == Some(key_value));
        let deleting = item.get(DIRECTIVE).and_then(Value::as_str) == Some("delete");
        match (position, deleting) {
            (Some(i), true) => {
                out.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => {
                let Value::Object(patch_item) = item else { continue };
                if !out[i].is_object() {
                    out[i] = Value::Object(Map::new());
                }
                merge_map(out[i].as_object_mut().expect("object"), patch_item)?;
            }
            (None, false) => out.push(Value::Object(without_directives(
                item.as_object().expect("has a merge key, so it is an object"),
            ))),
        }
    }
    Ok(Value::Array(out))
}

fn without_directives(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut doc = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        merge_patch(&mut doc, &json!({"a": "z", "c": {"f": null}, "l": [3]}));
        assert_eq!(doc, json!({"a": "z", "c": {"d": "e"}, "l": [3]}));
    }

    #[test]
    fn json_patch_test_failure_leaves_the_document() {
        let mut doc = json!({"a": 1});
        let err = json_patch(
            &mut doc,
            &json!([{"op": "replace", "path": "/a", "value": 2}, {"op": "test", "path": "/a", "value": 3}]),
        )
        .unwrap_err();
        assert!(matches!(err, PatchError::NotApplicable(_)));
        assert_eq!(doc, json!({"a": 1}));
        json_patch(&mut doc, &json!([{"op": "replace", "path": "/a", "value": null}])).unwrap();
        assert_eq!(doc, json!({"a": null}));
    }

    #[test]
    fn json_patches_are_bounded_as_kube_apiserver_bounds_them() {
        let mut doc = json!({"a": "x".repeat(1024 * 1024)});
        let copies: Vec<Value> = (0..4)
            .map(|i| json!({"op": "copy", "from": "/a", "path": format!("/c{i}")}))
            .collect();
        let err = json_patch(&mut doc, &Value::Array(copies)).unwrap_err();
        assert!(
            matches!(err, PatchError::NotApplicable(ref m) if m.starts_with("Unable to copy")),
            "{err}"
        );
        assert_eq!(doc.as_object().unwrap().len(), 1, "left as it was");
        let many = Value::Array(vec![json!({"op": "test", "path": "/a", "value": 1}); 10_001]);
        assert_eq!(
            json_patch(&mut doc, &many).unwrap_err().to_string(),
            "The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
    }

    #[test]
    fn chains_of_copies_stop_at_twice_the_depth_bound() {
        use crate::depth::MAX_DEPTH;
        // Each copy into the deepest leaf doubles the depth; the patch stops past 2 x MAX_DEPTH.
        let outcome = std::thread::Builder::new()
            .stack_size(64 * 1024 * 1024)
            .spawn(|| {
                let quarter = MAX_DEPTH / 4;
                let nested = format!("{}1{}", "{\"a\":".repeat(quarter), "}".repeat(quarter));
                let mut doc = json!({"s": crate::depth::parse(nested.as_bytes()).unwrap()});
                let ops: Vec<Value> = (0..8)
                    .map(|i| json!({"op": "copy", "from": "/s", "path": format!("/s{}", "/a".repeat(quarter << i))}))
                    .collect();
                let outcome = json_patch(&mut doc, &Value::Array(ops));
                crate::depth::dismantle(doc);
                outcome.map_err(|e| matches!(e, PatchError::TooDeep(_)))
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(outcome, Err(true));
    }

    #[test]
    fn strategic_merge_deletes_annotations_by_null_and_keeps_the_rest() {
        // The upstream machine-config-daemon writes Node annotations this way
        // (apiserver-wire.md, "Patch types by resource kind").
        let mut node = json!({"metadata": {"annotations": {"x": "1", "y": "2"}}});
        strategic_merge_patch(
            &mut node,
            &json!({"metadata": {"annotations": {"x": null, "z": "3"}}}),
        )
        .unwrap();
        assert_eq!(node, json!({"metadata": {"annotations": {"y": "2", "z": "3"}}}));
    }

    #[test]
    fn strategic_merge_merges_lists_by_key() {
        let mut node = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}]}});
        let patch = json!({"status": {"conditions": [
            {"type": "Ready", "status": "False", "reason": "KubeletNotReady"},
            {"type": "DiskPressure", "$patch": "delete"},
            {"type": "PIDPressure", "status": "False"}],
            "$setElementOrder/conditions": [{"type": "Ready"}]}});
        strategic_merge_patch(&mut node, &patch).unwrap();
        assert_eq!(
            node,
            json!({"status": {"conditions": [
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady"},
                {"type": "PIDPressure", "status": "False"}]}})
        );
    }

    #[test]
    fn strategic_merge_directives() {
        let mut doc = json!({"metadata": {"finalizers": ["a"], "labels": {"k": "v"}},
                             "data": {"x": "1", "y": "2"}, "spec": {"taints": [{"key": "a"}]}});
        let patch = json!({
            "metadata": {"finalizers": ["b", "a"], "labels": {"$patch": "delete"}},
            "data": {"$patch": "replace", "z": "3"},
            "spec": {"taints": [{"key": "b"}]},
        });
        strategic_merge_patch(&mut doc, &patch).unwrap();
        assert_eq!(
            doc,
            json!({"metadata": {"finalizers": ["a", "b"]}, "data": {"z": "3"},
                   "spec": {"taints": [{"key": "b"}]}})
        );
        strategic_merge_patch(&mut doc, &json!({"$deleteFromPrimitiveList/x": [], "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})).unwrap();
        assert_eq!(doc["metadata"]["finalizers"], json!(["b"]));
        let err = strategic_merge_patch(&mut doc, &json!({"spec": {"containers": [{"image": "x"}]}}));
        assert!(matches!(err, Err(PatchError::Malformed(_))));
    }
}
