//! How each write's body decodes, and how it fails, in kube-apiserver's words: object bodies
//! (create, update), the four patch types, and the object a patch produces. Every body shape a
//! client can send (an object, `null`, an array, a scalar, a document nested too deep, fields of
//! the wrong type) gets the answer the real server gives it: a 4xx Status, never a panic.
//!
//! Sources: apiserver `endpoints/handlers/{create,update,patch,rest}.go`, apimachinery
//! `runtime/serializer/json/{json,meta}.go`, evanphx/json-patch v4 `merge.go`. A protobuf body
//! is read by `crate::protobuf` into JSON first; only its errors are worded here. Called on the
//! deep stack (`depth::on_deep_stack`).

use super::RequestBody;
use crate::depth;
use crate::error::{ApiError, Cause, summarize_data};
use crate::resource::ResourceInfo;
use crate::typecheck::{self, TypeError, json_kind};
use serde_json::Value;

/// Go's name for the struct `SimpleMetaFactory.Interpret` decodes a body into to find its type.
const FIND_KIND: &str =
    r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;

/// The media type of a request body, without parameters.
pub(super) fn media_type(content_type: Option<&str>) -> String {
    content_type
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// An object body (create, update) in JSON, YAML or protobuf, typed as the URL's resource.
/// `null` is an empty object (Go leaves the zero value); a body that is not an object fails the
/// version/kind sniff; a field of the wrong type fails the typed decode. A built-in object's
/// fields its type does not declare are dropped as the typed decode drops them, and handled as
/// `fieldValidation` asks (apiserver `handlers/create.go`, `update.go`): `Strict` fails the
/// request (after any type error) in the strict decoder's words, `Ignore` says nothing, and
/// `Warn` (the default) returns them for the reply's `Warning` headers.
pub(super) fn object(
    info: &ResourceInfo,
    body: &RequestBody,
    validation: Option<&str>,
) -> Result<(Value, Vec<String>), ApiError> {
    let unrecognized = |why: String| {
        ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; {why} ({})",
            info.kind,
            summarize_data(&body.bytes)
        ))
    };
    let value = match media_type(body.content_type.as_deref()).as_str() {
        "application/json" | "" | "*/*" => {
            if let Some(opening) = depth::too_deep(&body.bytes) {
                return Err(unrecognized(format!(
                    "json parse error: {}",
                    depth::too_deep_message(opening)
                )));
            }
            depth::parse(&body.bytes).map_err(|e| unrecognized(format!("json parse error: {e}")))?
        }
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            serde_yaml::from_slice(&body.bytes).map_err(|e| unrecognized(format!("yaml parse error: {e}")))?
        }
        crate::protobuf::MEDIA_TYPE => protobuf_object(info, &body.bytes)?,
        _ => return Err(unsupported_body(BODY_MEDIA_TYPES)),
    };
    let mut value = match value {
        Value::Null => Value::Object(Default::default()),
        Value::Object(_) => value,
        other => {
            return Err(unrecognized(format!(
                "json parse error: json: cannot unmarshal {} into Go value of type {FIND_KIND}",
                json_kind(&other)
            )));
        }
    };
    let named = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let unknown = if info.builtin && (named.is_empty() || named == info.kind) {
        typecheck::take_unknown_fields(&info.group, &info.kind, &mut value)
    } else {
        Vec::new()
    };
    let cannot = |why: &str| {
        ApiError::BadRequest(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {why}",
            kind = info.kind,
            version = info.version
        ))
    };
    typed(info, &mut value).map_err(|why| cannot(&why))?;
    let unknown: Vec<String> = unknown.iter().map(|f| format!("unknown field {f:?}")).collect();
    match validation {
        Some("Strict") if !unknown.is_empty() => {
            Err(cannot(&format!("strict decoding error: {}", unknown.join(", "))))
        }
        Some("Ignore") => Ok((value, Vec::new())),
        _ => Ok((value, unknown)),
    }
}

/// What a create or update body may be in: kube-apiserver 1.36 offers the three for built-in
/// types and custom resources alike (apiextensions' serializer lists protobuf too).
const BODY_MEDIA_TYPES: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// A body in a media type the resource does not read, as `NegotiateInputSerializer` answers it.
fn unsupported_body(accepted: &str) -> ApiError {
    ApiError::UnsupportedMediaType(format!(
        "the body of the request was in an unknown format - accepted media types include: {accepted}"
    ))
}

/// A protobuf object body, read into the JSON document its Go type marshals to (then checked
/// as any JSON body is). Failures are worded as apiserver's `transformDecodeError` words the
/// protobuf serializer's: before the envelope names a type, "unrecognized" with the body's
/// first bytes; after, "cannot be handled as" naming the envelope's type.
///
/// A custom resource's body opens, then fails as kube-apiserver 1.36 fails it with
/// `fieldValidation=Ignore` (its typer finds no kind on the empty object it decodes into). With
/// `Warn` (the default) or `Strict` 1.36 itself panics, as its CRD serializer offers protobuf
/// without a strict decoder (a 500); this server answers the same 400 for all three.
///
/// A built-in kind this server does not read in protobuf (`protobuf::schema::KINDS`) is 415
/// naming what it does read; 1.36 reads them all.
fn protobuf_object(info: &ResourceInfo, bytes: &[u8]) -> Result<Value, ApiError> {
    let envelope = crate::protobuf::open(bytes, &info.group, &info.version, &info.kind).map_err(|why| {
        ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {}): {why} ({})",
            info.kind,
            summarize_data(bytes)
        ))
    })?;
    let cannot = |why: &str| {
        ApiError::BadRequest(format!(
            "{} in version {:?} cannot be handled as a {}: {why}",
            envelope.kind, envelope.version, info.kind
        ))
    };
    if !info.builtin {
        return Err(cannot("Object 'Kind' is missing in 'object has no kind field '"));
    }
    match crate::protobuf::object(&envelope) {
        Ok(value) => Ok(value),
        Err(crate::protobuf::ObjectError::Malformed(why)) => Err(cannot(&why)),
        Err(crate::protobuf::ObjectError::NotModelled) if envelope.kind == info.kind => {
            Err(unsupported_body("application/json, application/yaml"))
        }
        // Another kind than the URL's: refused for its type below, as a JSON body naming it is.
        Err(crate::protobuf::ObjectError::NotModelled) => {
            Ok(serde_json::json!({"apiVersion": envelope.api_version(), "kind": envelope.kind}))
        }
    }
}

/// Decode `value` as the URL's type: a built-in kind's Go types (when the body does not name
/// another kind, which the store refuses on its own), or a custom resource's coerced metadata.
/// Unknown `metadata` fields are dropped either way, as the typed `ObjectMeta` drops them.
fn typed(info: &ResourceInfo, value: &mut Value) -> Result<(), String> {
    if !info.builtin {
        typecheck::coerce_custom_metadata(value)?;
    } else {
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        if !kind.is_empty() && kind != info.kind {
            return Ok(());
        }
        typecheck::check_builtin(&info.kind, value).map_err(|TypeError { message, .. }| message)?;
    }
    typecheck::prune_metadata(value);
    Ok(())
}

/// A body bounded as Go's decoder bounds it; `prefix` is how the patch type's handler words
/// a decode error.
fn parse(bytes: &[u8], prefix: &str) -> Result<Value, ApiError> {
    if let Some(opening) = depth::too_deep(bytes) {
        return Err(ApiError::BadRequest(format!(
            "{prefix}{}",
            depth::too_deep_message(opening)
        )));
    }
    depth::parse(bytes).map_err(|e| ApiError::BadRequest(format!("{prefix}{e}")))
}

/// A merge patch: `null` is "Invalid JSON Patch"; anything else but an object fails to decode
/// into `map[string]interface{}` (400, as a real 1.36 answers).
pub(super) fn merge_patch(bytes: &[u8]) -> Result<Value, ApiError> {
    match parse(bytes, "error decoding patch: ")? {
        doc @ Value::Object(_) => Ok(doc),
        Value::Null => Err(ApiError::BadRequest("Invalid JSON Patch".into())),
        other => Err(ApiError::BadRequest(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(&other)
        ))),
    }
}

/// A JSON patch: decoded strictly into `[]handlers.jsonPatchOp` first; `null` is no operations.
pub(super) fn json_patch(bytes: &[u8]) -> Result<Option<Value>, ApiError> {
    let wrong = |found: &Value, go: &str| {
        ApiError::BadRequest(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type {go}",
            json_kind(found)
        ))
    };
    match parse(bytes, "error decoding patch: ")? {
        Value::Null => Ok(None),
        Value::Array(ops) => match ops.iter().find(|op| !op.is_object() && !op.is_null()) {
            Some(op) => Err(wrong(op, "handlers.jsonPatchOp")),
            None => Ok(Some(Value::Array(ops))),
        },
        other => Err(wrong(&other, "[]handlers.jsonPatchOp")),
    }
}

/// A strategic merge patch: decoded into `map[string]interface{}`; `null` is no change.
pub(super) fn strategic_patch(bytes: &[u8]) -> Result<Option<Value>, ApiError> {
    match parse(bytes, "")? {
        Value::Null => Ok(None),
        doc @ Value::Object(_) => Ok(Some(doc)),
        other => Err(ApiError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(&other)
        ))),
    }
}

/// An apply configuration: YAML, or JSON (which is YAML, and is what kube-rs and client-go
/// send; parsed without serde_yaml's 128-level limit, up to the common bound). Decoded into
/// `map[string]interface{}`: `null` is an empty configuration, anything else not a map fails.
pub(super) fn apply_patch(bytes: &[u8]) -> Result<Value, ApiError> {
    let looks_json = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let mut doc = None;
    if looks_json {
        if depth::too_deep(bytes).is_some() {
            return Err(ApiError::BadRequest(format!(
                "error decoding YAML: error converting YAML to JSON: yaml: exceeded max depth of {}",
                depth::MAX_DEPTH
            )));
        }
        doc = depth::parse(bytes).ok();
    }
    let doc = match doc {
        Some(doc) => doc,
        None => serde_yaml::from_slice(bytes)
            .map_err(|e| ApiError::BadRequest(format!("error decoding YAML: {e}")))?,
    };
    match doc {
        Value::Null => Ok(Value::Object(Default::default())),
        doc @ Value::Object(_) => Ok(doc),
        other => Err(ApiError::BadRequest(format!(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(&other)
        ))),
    }
}

/// An apply configuration, typed before it is merged. kube-apiserver 1.36 answers a
/// configuration that does not fit its type with a 500 (`structuredmerge.go`: "failed to create
/// typed patch object", kubernetes/kubernetes#139253); this server answers 400 with the same
/// words, as the fix proposed upstream (#139255) does.
pub(super) fn applied(
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    mut doc: Value,
) -> Result<Value, ApiError> {
    typed(info, &mut doc).map_err(|why| {
        ApiError::BadRequest(format!(
            "failed to create typed patch object ({}/{name}; {}/{}, Kind={}): {why}",
            ns.unwrap_or(""),
            info.group,
            info.version,
            info.kind
        ))
    })?;
    Ok(doc)
}

/// `patched`, and then a built-in object's fields its type does not declare dropped and
/// handled as `validation` (`fieldValidation`) asks, as for `object`: `Strict` is the 422 on
/// field `patch` in the strict decoder's words, `Warn` (or unset) returns them for the reply's
/// `Warning` headers (apiserver `handlers/patch.go`, `applyPatchToCurrentObject`).
pub(super) fn patched_checked(
    info: &ResourceInfo,
    next: Value,
    validation: Option<&str>,
) -> Result<(Value, Vec<String>), ApiError> {
    let mut next = patched(info, next)?;
    let named = next.get("kind").and_then(Value::as_str).unwrap_or("");
    if !info.builtin || !(named.is_empty() || named == info.kind) {
        return Ok((next, Vec::new()));
    }
    let text = String::from_utf8_lossy(&depth::to_vec(&next)).into_owned();
    let unknown: Vec<String> = typecheck::take_unknown_fields(&info.group, &info.kind, &mut next)
        .iter()
        .map(|f| format!("unknown field {f:?}"))
        .collect();
    match validation {
        Some("Strict") if !unknown.is_empty() => Err(patch_invalid(
            &text,
            &format!("strict decoding error: {}", unknown.join(", ")),
        )),
        Some("Ignore") => Ok((next, Vec::new())),
        _ => Ok((next, unknown)),
    }
}

/// A patched object must still decode as its type, and within the nesting bound; if not,
/// kube-apiserver answers as `jsonPatcher.applyPatchToCurrentObject` does: 422 on field `patch`
/// quoting the patched object.
pub(super) fn patched(info: &ResourceInfo, mut next: Value) -> Result<Value, ApiError> {
    let text = |v: &Value| String::from_utf8_lossy(&depth::to_vec(v)).into_owned();
    if depth::value_depth(&next) > depth::MAX_DEPTH {
        return Err(too_deep_patch(&text(&next)));
    }
    if !next.is_object() {
        return Err(patch_invalid(
            &text(&next),
            &format!(
                "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type {FIND_KIND}",
                json_kind(&next)
            ),
        ));
    }
    if let Err(why) = typed(info, &mut next) {
        return Err(patch_invalid(&text(&next), &why));
    }
    Ok(next)
}

/// A patched object nested past the bound, as `patched` answers for one.
pub(super) fn too_deep_patch(text: &str) -> ApiError {
    patch_invalid(
        text,
        &format!(
            "couldn't get version/kind; json parse error: {}",
            depth::too_deep_message(b'{')
        ),
    )
}

/// `"" is invalid: patch: Invalid value: "<patched object>": <why>`, as `errors.NewInvalid`
/// words it for a kind-less `schema.GroupKind{}`.
fn patch_invalid(patched: &str, why: &str) -> ApiError {
    ApiError::Invalid {
        group: String::new(),
        kind: String::new(),
        name: String::new(),
        causes: vec![Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {patched:?}: {why}"),
            field: "patch".into(),
        }],
    }
}
