//! What a write would store, before it is stored: checks of kind, namespace and name,
//! server-owned fields, `metadata.generation`, the status subresource rules, and the status a
//! CRD or a Namespace gets. Pure functions over JSON; `write.rs` commits their results.

use super::StoredObject;
use crate::error::{ApiError, summarize_data};
use crate::resource::{GroupResource, ResourceInfo, parse_group_version};
use serde_json::{Map, Value, json};

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    Main,
    Status,
    /// A CertificateSigningRequest's `/approval`.
    Approval,
}

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

/// How kube-apiserver names its legacy scheme in decode errors (the file that declares it).
const LEGACY_SCHEME: &str = "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30";

/// A written object's type: a missing `kind` or `apiVersion` is taken from the URL, as
/// kube-apiserver's decoder defaults it for built-in types (apimachinery
/// `runtime/serializer/json/json.go`, `gvkWithDefaults`), and the body must then name the URL's
/// type. A custom resource is decoded as unstructured and must carry its kind
/// (apiextensions-apiserver `crdserverscheme/unstructured.go`). On success the object carries
/// the URL's `apiVersion` and `kind`.
pub(super) fn check_kind(info: &ResourceInfo, value: &mut Value) -> Result<(), ApiError> {
    if !value.is_object() {
        return Err(ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; expected a JSON object",
            info.kind
        )));
    }
    let (mut kind, api_version) = (text(value, "/kind").to_string(), text(value, "/apiVersion"));
    let Some((mut group, mut version)) = parse_group_version(api_version) else {
        return Err(ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {}): unexpected GroupVersion string: {api_version} ({})",
            info.kind,
            summarize_data(&crate::depth::to_vec(value))
        )));
    };
    if kind.is_empty() {
        if !info.builtin {
            // As a real 1.36 words it: the body, then its summary.
            let body = crate::depth::to_vec(value);
            return Err(ApiError::BadRequest(format!(
                "the object provided is unrecognized (must be of type {}): Object 'Kind' is missing in '{}' ({})",
                info.kind,
                String::from_utf8_lossy(&body),
                summarize_data(&body)
            )));
        }
        kind = info.kind.clone();
    }
    if version.is_empty() && (group.is_empty() || group == info.group) {
        (group, version) = (info.group.clone(), info.version.clone());
    }
    if kind != info.kind {
        // Go names the internal type by its package: `core` for the core group, else the
        // group's first label (`coordination.Lease`).
        let internal = match info.group.split('.').next() {
            Some("") | None => "core",
            Some(package) => package,
        };
        return Err(ApiError::BadRequest(format!(
            "{kind} in version {version:?} cannot be handled as a {}: converting ({version}.{kind}) to ({internal}.{}): unknown conversion",
            info.kind, info.kind
        )));
    }
    if (group.as_str(), version.as_str()) != (info.group.as_str(), info.version.as_str()) {
        let data = if group.is_empty() {
            version.clone()
        } else {
            format!("{group}/{version}")
        };
        // A built-in type is decoded through the legacy scheme, which has no such kind at
        // that version (as an official 1.36 build words it; its scheme is named by file).
        if info.builtin {
            return Err(ApiError::BadRequest(format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: no kind {kind:?} is registered for version {data:?} in scheme \"{LEGACY_SCHEME}\""
            )));
        }
        return Err(ApiError::BadRequest(format!(
            "the API version in the data ({data}) does not match the expected API version ({})",
            info.api_version()
        )));
    }
    let object = value.as_object_mut().expect("checked above");
    object.insert("apiVersion".into(), json!(info.api_version()));
    object.insert("kind".into(), json!(info.kind));
    Ok(())
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

/// A Secret's `stringData` is write-only: kube-apiserver merges each entry into `data`
/// (base64 there; a key in both takes `stringData`'s value) as it converts the v1 object, and
/// never stores or returns the field (k8s.io/kubernetes pkg/apis/core/v1 conversion.go,
/// `Convert_v1_Secret_To_core_Secret`). Validation then sees the merged `data`.
pub(super) fn merge_string_data(info: &ResourceInfo, value: &mut Value) {
    if !is_secret(info) {
        return;
    }
    let Some(Value::Object(map)) = value.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    use base64::Engine;
    if !value["data"].is_object() {
        value["data"] = json!({});
    }
    let data = value["data"].as_object_mut().expect("made an object above");
    for (key, text) in map {
        let text = text.as_str().unwrap_or("");
        data.insert(key, json!(base64::engine::general_purpose::STANDARD.encode(text)));
    }
}

fn is_secret(info: &ResourceInfo) -> bool {
    info.builtin && info.group.is_empty() && info.kind == "Secret"
}

/// A Secret whose `type` is empty, `null` or absent is `Opaque`: kube-apiserver's decoder
/// defaults every v1 Secret it reads (k8s.io/kubernetes pkg/apis/core/v1 defaults.go,
/// `SetDefaults_Secret`), a create's, a PUT's and a patched object's alike, before validation.
/// So a PUT that leaves `type` out asks for `Opaque` (422 on any other stored type), while a
/// merge patch that does not name it keeps the stored type it was applied to.
pub(super) fn default_secret_type(info: &ResourceInfo, value: &mut Value) {
    if is_secret(info) && text(value, "/type").is_empty() {
        value["type"] = json!("Opaque");
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
    check_kind(info, &mut new)?;
    check_namespace(info, ns, &mut new)?;
    normalise_string_maps(&mut new);
    merge_string_data(info, &mut new);
    default_secret_type(info, &mut new);
    check_update_name_and_preconditions(info, name, old, &mut new)?;
    let mut result = updated_part(info, old, new, sub);
    keep_server_owned_fields(info, old, &mut result);
    Ok(result)
}

/// The body of an update names the URL's object (its name is taken from the URL when it has
/// none), and the resourceVersion and UID it carries, if any, are the stored object's:
/// otherwise 400 for the name, 409 Conflict for the preconditions.
fn check_update_name_and_preconditions(
    info: &ResourceInfo,
    name: &str,
    old: &StoredObject,
    new: &mut Value,
) -> Result<(), ApiError> {
    let body_name = text(new, "/metadata/name").to_string();
    if body_name.is_empty() {
        meta(new).insert("name".into(), json!(name));
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
    let body_rv = text(new, "/metadata/resourceVersion");
    if !body_rv.is_empty() && body_rv != old.rv.to_string() {
        return Err(conflict(
            "the object has been modified; please apply your changes to the latest version and try again"
                .into(),
        ));
    }
    let (old_uid, body_uid) = (text(&old.value, "/metadata/uid"), text(new, "/metadata/uid"));
    if !body_uid.is_empty() && body_uid != old_uid {
        return Err(conflict(format!(
            "Precondition failed: UID in precondition: {body_uid}, UID in object meta: {old_uid}"
        )));
    }
    Ok(())
}

/// What the write changes, by the part it addresses: a CertificateSigningRequest's rules for
/// its parts; through `/status` (or `/approval`) the stored object with the body's status;
/// through the main resource the body, keeping the stored status when the resource has a
/// status subresource.
fn updated_part(info: &ResourceInfo, old: &StoredObject, mut new: Value, sub: Subresource) -> Value {
    match sub {
        _ if crate::csr::is_csr(info) => {
            let part = match sub {
                Subresource::Main => crate::csr::Part::Main,
                Subresource::Status => crate::csr::Part::Status,
                Subresource::Approval => crate::csr::Part::Approval,
            };
            crate::csr::prepare_update(part, &old.value, new)
        }
        Subresource::Status | Subresource::Approval => {
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
    }
}

/// The fields only the server writes, kept from the stored object: uid, creation and deletion
/// times, the resourceVersion, `metadata.generation` (one up when the spec changed, for
/// resources that track it), and the status of a Namespace or a CRD.
fn keep_server_owned_fields(info: &ResourceInfo, old: &StoredObject, result: &mut Value) {
    let old_meta = old.value["metadata"].as_object().cloned().unwrap_or_default();
    let m = meta(result);
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
    if info.tracks_generation && spec_part(result) != spec_part(&old.value) {
        let generation = old_meta.get("generation").and_then(Value::as_i64).unwrap_or(0) + 1;
        meta(result).insert("generation".into(), json!(generation));
    }
    if is_namespace(info) || is_crd(info) {
        // Server-managed status for these two.
        if let Some(s) = old.value.get("status") {
            result["status"] = s.clone();
        }
    }
}
