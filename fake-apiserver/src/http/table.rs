//! Server-side printing (`meta.k8s.io/v1 Table`), which `kubectl get` asks for in its Accept
//! header: NAME, a CRD's `additionalPrinterColumns` (simple JSONPath: fields, indexes, escaped
//! dots, and `[?(@.k=="v")]` filters), and AGE. Rows carry the object's metadata as
//! `PartialObjectMetadata`, as kubectl's default `includeObject=Metadata` expects.

use crate::resource::ResourceInfo;
use crate::store::StoredObject;
use bytes::Bytes;
use http::HeaderMap;
use serde_json::{Value, json};
use std::sync::Arc;

/// Whether the Accept header asks for a Table.
pub(super) fn wanted(headers: &HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|t| t.contains("as=Table")))
}

fn column_definitions(info: &ResourceInfo) -> Vec<Value> {
    let mut cols = vec![json!({"name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace.", "priority": 0})];
    for c in &info.printer_columns {
        if c.json_path == ".metadata.creationTimestamp" {
            continue;
        }
        cols.push(json!({"name": c.name, "type": c.type_, "format": "",
            "description": c.description, "priority": c.priority}));
    }
    cols.push(json!({"name": "Age", "type": "string", "format": "",
        "description": "CreationTimestamp is a timestamp representing the server time when this object was created.",
        "priority": 0}));
    cols
}

fn row(info: &ResourceInfo, object: &StoredObject) -> Value {
    let v = &object.value;
    let mut cells = vec![json!(object.name())];
    for c in &info.printer_columns {
        if c.json_path == ".metadata.creationTimestamp" {
            continue;
        }
        cells.push(match json_path(v, &c.json_path) {
            None => Value::Null,
            // A column on a map or a list prints its JSON; never cloned, as it may nest deep.
            Some(inner @ (Value::Object(_) | Value::Array(_))) => {
                json!(String::from_utf8_lossy(&crate::depth::to_vec(inner)))
            }
            Some(scalar) => scalar.clone(),
        });
    }
    cells.push(json!(age(v
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str))));
    json!({
        "cells": cells,
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": v["metadata"]},
    })
}

/// A Table of `items`.
pub(super) fn render(info: &ResourceInfo, items: &[Arc<StoredObject>], rv: Option<u64>) -> Bytes {
    let mut metadata = json!({});
    if let Some(rv) = rv {
        metadata["resourceVersion"] = json!(rv.to_string());
    }
    let table = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": column_definitions(info),
        "rows": items.iter().map(|o| row(info, o)).collect::<Vec<_>>(),
    });
    Bytes::from(serde_json::to_vec(&table).expect("serialises"))
}

/// One watch event's Table; only the first event of a stream carries the column definitions.
pub(super) fn render_event(info: &ResourceInfo, object: &StoredObject, first: bool) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": object.rv.to_string()},
        "columnDefinitions": if first { json!(column_definitions(info)) } else { Value::Null },
        "rows": [row(info, object)],
    })
}

/// kubectl's short age: `42s`, `7m`, `5h`, `3d`, `2y`.
fn age(created: Option<&str>) -> String {
    let Some(created) = created
        .and_then(|c| time::OffsetDateTime::parse(c, &time::format_description::well_known::Rfc3339).ok())
    else {
        return "<unknown>".into();
    };
    let secs = (time::OffsetDateTime::now_utc() - created).whole_seconds().max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s if s < 365 * 86_400 * 2 => format!("{}d", s / 86_400),
        s => format!("{}y", s / (365 * 86_400)),
    }
}

/// The JSONPath subset printer columns use.
pub(super) fn json_path<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = root;
    let mut rest = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let (field, tail) = split_field(after);
            current = current.get(field.replace("\\.", ".").as_str())?;
            rest = tail;
        } else if let Some(after) = rest.strip_prefix("[?(@.") {
            let end = after.find(")]")?;
            let (cond, tail) = (&after[..end], &after[end + 2..]);
            let (key, want) = cond.split_once("==")?;
            let want = want.trim().trim_matches('"').trim_matches('\'');
            current = current
                .as_array()?
                .iter()
                .find(|item| item.get(key.trim()).and_then(Value::as_str) == Some(want))?;
            rest = tail;
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let index: usize = after[..end].parse().ok()?;
            current = current.as_array()?.get(index)?;
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(current)
}

/// The next field name (up to an unescaped `.` or a `[`) and the rest.
fn split_field(s: &str) -> (&str, &str) {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'.' | b'[' => return (&s[..i], &s[i..]),
            _ => i += 1,
        }
    }
    (s, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printer_column_paths() {
        let pool = json!({
            "metadata": {"annotations": {"machineconfiguration.openshift.io/generated-by-controller-version": "v1"}},
            "status": {"configuration": {"name": "rendered-worker-1"}, "machineCount": 3,
                "conditions": [{"type": "Updated", "status": "True"}, {"type": "Degraded", "status": "False"}]}});
        assert_eq!(
            json_path(&pool, ".status.configuration.name"),
            Some(&json!("rendered-worker-1"))
        );
        assert_eq!(json_path(&pool, ".status.machineCount"), Some(&json!(3)));
        assert_eq!(
            json_path(&pool, ".status.conditions[?(@.type==\"Degraded\")].status"),
            Some(&json!("False"))
        );
        assert_eq!(
            json_path(&pool, ".status.conditions[1].type"),
            Some(&json!("Degraded"))
        );
        assert_eq!(
            json_path(
                &pool,
                ".metadata.annotations.machineconfiguration\\.openshift\\.io/generated-by-controller-version"
            ),
            Some(&json!("v1"))
        );
        assert_eq!(json_path(&pool, ".status.missing"), None);
    }

    #[test]
    fn ages() {
        assert_eq!(age(None), "<unknown>");
        let then = (time::OffsetDateTime::now_utc() - time::Duration::hours(3))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        assert_eq!(age(Some(&then)), "3h");
    }
}
