//! What a write would store, before it is stored: checks of kind, namespace and name,
//! server-owned fields, `metadata.generation`, the status subresource rules, and the status a
//! CRD or a Namespace gets. Pure functions over JSON; `write.rs` commits their results.

use super::StoredObject;
use crate::error::ApiError;
use crate::resource::{GroupResource, ResourceInfo};
use crate::store::Subresource;
use serde_json::{Map, Value, json};

pub(super) const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

pub(super) fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("0 is valid");
    now.format(&time::format_description::well_known::Rfc3339)
        .expect("RFC 3339 formats any UTC time")
}

pub(super) fn meta(value: &mut Value) -> &mut Map<String, Value> {
    if !value["metadata"].is_object() {
        value["metadata"] = json!({});
    }
    value["metadata"].as_object_mut().expect("made an object above")
}

pub(super) fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The body must be an object of the kind (and version) the URL names.
pub(super) fn check_kind(info: &ResourceInfo, value: &Value) -> Result<(), ApiError> {
    if !value.is_object() {
        return Err(ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; expected a JSON object",
            info.kind
        )));
    }
    let (kind, api_version) = (text(value, "/kind"), text(value, "/apiVersion"));
    if kind.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "Object 'Kind' is missing in '{}'",
            truncate(&value.to_string(), 200)
        )));
    }
    if kind != info.kind {
        return Err(ApiError::BadRequest(format!(
            "{kind} in version {api_version:?} cannot be handled as a {}: converting ({api_version}.{kind}) to ({}): unknown conversion",
            info.kind, info.kind
        )));
    }
    if api_version != info.api_version() {
        return Err(ApiError::BadRequest(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            info.api_version()
        )));
    }
    Ok(())
}

pub(super) fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

pub(super) fn check_namespace(
    info: &ResourceInfo,
    ns: Option<&str>,
    value: &mut Value,
) -> Result<(), ApiError> {
    let body_ns = text(value, "/metadata/namespace").to_string();
    match (info.namespaced, ns) {
        (true, Some(ns)) => {
            if !body_ns.is_empty() && body_ns != ns {
                return Err(ApiError::BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                        .into(),
                ));
            }
            meta(value).insert("namespace".into(), json!(ns));
        }
        (true, None) => {
            return Err(ApiError::BadRequest(format!(
                "{} is namespaced: the request must name a namespace",
                info.resource
            )));
        }
        (false, _) => {
            meta(value).remove("namespace");
        }
    }
    Ok(())
}

pub(super) fn generated_name(prefix: &str) -> String {
    let random = uuid::Uuid::new_v4();
    let suffix: String = random.as_bytes()[..5]
        .iter()
        .map(|b| GENERATE_NAME_ALPHABET[*b as usize % GENERATE_NAME_ALPHABET.len()] as char)
        .collect();
    format!("{prefix}{suffix}")
}

/// Everything but metadata and status: what `metadata.generation` counts.
pub(super) fn spec_part(value: &Value) -> Map<String, Value> {
    value
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "kind" | "apiVersion"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn has_finalizers(value: &Value) -> bool {
    value
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

pub(super) fn crd_status(crd: &Value, now: &str) -> Value {
    let storage: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == Value::Bool(true))
        .map(|v| v["name"].clone())
        .collect();
    json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
        "acceptedNames": crd["spec"]["names"].clone(),
        "storedVersions": storage,
    })
}

pub(super) fn is_crd(info: &ResourceInfo) -> bool {
    info.builtin && info.resource == "customresourcedefinitions"
}

pub(super) fn is_namespace(info: &ResourceInfo) -> bool {
    info.builtin && info.group.is_empty() && info.resource == "namespaces"
}

pub(super) fn ns_resource() -> GroupResource {
    GroupResource {
        group: String::new(),
        resource: "namespaces".into(),
    }
}

pub(super) fn crd_group_resource(crd: &Value) -> Option<GroupResource> {
    let (group, plural) = (text(crd, "/spec/group"), text(crd, "/spec/names/plural"));
    (!group.is_empty() && !plural.is_empty()).then(|| GroupResource {
        group: group.into(),
        resource: plural.into(),
    })
}

/// `metadata.labels` and `metadata.annotations` are `map[string]string` on every kind: a
/// `null` value (a JSON patch that "removes" an annotation by nulling it, as MCO's e2e forces
/// a certificate rotation) decodes to `""` in kube-apiserver, and so it does here.
pub(super) fn normalise_string_maps(value: &mut Value) {
    for field in ["labels", "annotations"] {
        if let Some(Value::Object(map)) = value.pointer_mut(&format!("/metadata/{field}")) {
            for v in map.values_mut() {
                if v.is_null() {
                    *v = json!("");
                }
            }
        }
    }
}

pub(super) fn text_of(m: &Map<String, Value>, key: &str) -> String {
    m.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

pub(super) fn set_rv(value: &mut Value, rv: u64) {
    meta(value).insert("resourceVersion".into(), json!(rv.to_string()));
}

/// The object a PUT (or a patch, after it is applied) stores, checked against the stored one.
pub(super) fn prepare_update(
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    old: &StoredObject,
    mut new: Value,
    sub: Subresource,
) -> Result<Value, ApiError> {
    check_kind(info, &new)?;
    check_namespace(info, ns, &mut new)?;
    normalise_string_maps(&mut new);
    let body_name = text(&new, "/metadata/name").to_string();
    if body_name.is_empty() {
        meta(&mut new).insert("name".into(), json!(name));
    } else if body_name != name {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let conflict = |detail: String| ApiError::Conflict {
        resource: info.qualified_name(),
        name: name.to_string(),
        detail,
    };
    let body_rv = text(&new, "/metadata/resourceVersion");
    if !body_rv.is_empty() && body_rv != old.rv.to_string() {
        return Err(conflict(
            "the object has been modified; please apply your changes to the latest version and try again"
                .into(),
        ));
    }
    let (old_uid, body_uid) = (text(&old.value, "/metadata/uid"), text(&new, "/metadata/uid"));
    if !body_uid.is_empty() && body_uid != old_uid {
        return Err(conflict(format!(
            "Precondition failed: UID in precondition: {body_uid}, UID in object meta: {old_uid}"
        )));
    }

    let mut result = match sub {
        Subresource::Status => {
            let mut r = old.value.clone();
            match new.get("status") {
                Some(s) => r["status"] = s.clone(),
                None => {
                    r.as_object_mut()
                        .expect("stored objects are objects")
                        .remove("status");
                }
            }
            r
        }
        Subresource::Main => {
            if info.status_subresource {
                match old.value.get("status") {
                    Some(s) => new["status"] = s.clone(),
                    None => {
                        new.as_object_mut().expect("checked").remove("status");
                    }
                }
            }
            new
        }
    };
    // Fields only the server writes.
    let old_meta = old.value["metadata"].as_object().cloned().unwrap_or_default();
    let m = meta(&mut result);
    for owned in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old_meta.get(owned) {
            Some(v) => m.insert(owned.into(), v.clone()),
            None => m.remove(owned),
        };
    }
    m.remove("managedFields");
    m.remove("selfLink");
    m.insert("resourceVersion".into(), json!(old.rv.to_string()));
    if info.tracks_generation && spec_part(&result) != spec_part(&old.value) {
        let generation = old_meta.get("generation").and_then(Value::as_i64).unwrap_or(0) + 1;
        meta(&mut result).insert("generation".into(), json!(generation));
    }
    if is_namespace(info) || is_crd(info) {
        // Server-managed status for these two.
        if let Some(s) = old.value.get("status") {
            result["status"] = s.clone();
        }
    }
    Ok(result)
}
