//! The writes that carry an object or a patch (create, update, patch, server-side apply): from
//! request body to store call to reply, run whole on a deep stack (`depth::on_deep_stack`) so a
//! document nested up to kube-apiserver's bound is parsed, patched, compared and dropped
//! without overflowing.
//!
//! Decoding, the patch types' parsing and their error wording live here; semantics are the
//! store's. Every message names the upstream code it follows.

use super::query::Query;
use super::{Body, RequestBody, json_response};
use crate::depth;
use crate::error::{ApiError, Cause, summarize_data};
use crate::patch::{self, PatchError};
use crate::resource::{ResourceInfo, parse_group_version};
use crate::server::Shared;
use crate::store::Subresource;
use http::{Response, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;

/// One write request, owned, so it can move to the deep-stack thread.
pub(super) struct Write {
    pub shared: Arc<Shared>,
    pub info: ResourceInfo,
    pub ns: Option<String>,
    pub name: String,
    pub sub: Subresource,
    pub query: Query,
    pub body: RequestBody,
}

/// Applies one patch document to an object.
type ApplyPatch = fn(&mut Value, &Value) -> Result<(), PatchError>;

impl Write {
    fn ns(&self) -> Option<&str> {
        self.ns.as_deref()
    }

    pub fn create(self) -> Result<Response<Body>, ApiError> {
        let value = decode_object(&self.info, &self.body)?;
        let object = self
            .shared
            .store
            .create(&self.info, self.ns(), value, self.query.dry_run)?;
        Ok(json_response(StatusCode::CREATED, object.json.clone()))
    }

    pub fn update(self) -> Result<Response<Body>, ApiError> {
        let value = decode_object(&self.info, &self.body)?;
        let object = self.shared.store.update(
            &self.info,
            self.ns(),
            &self.name,
            value,
            self.sub,
            self.query.dry_run,
        )?;
        Ok(json_response(StatusCode::OK, object.json.clone()))
    }

    pub fn patch(self) -> Result<Response<Body>, ApiError> {
        let info = &self.info;
        let kind = media_type(self.body.content_type.as_deref());
        let accepted = if info.builtin {
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json"
        } else {
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        };
        let bytes = &self.body.bytes;
        let (patch_doc, apply): (Value, ApplyPatch) = match kind.as_str() {
            // apiserver `endpoints/handlers/patch.go`, `applyJSPatch`: the body is decoded
            // (strictly, under the default fieldValidation=Warn) before it is applied.
            "application/merge-patch+json" => (parse_patch(bytes, "error decoding patch: ")?, |t, p| {
                patch::merge_patch(t, p);
                Ok(())
            }),
            "application/json-patch+json" => {
                (parse_patch(bytes, "error decoding patch: ")?, patch::json_patch)
            }
            // `smpPatcher`: the body's decode error is the message.
            "application/strategic-merge-patch+json" if info.builtin => {
                (parse_patch(bytes, "")?, patch::strategic_merge_patch)
            }
            "application/apply-patch+yaml" => {
                if self.query.field_manager.is_none() {
                    return Err(ApiError::invalid(
                        &info.kind,
                        &self.name,
                        "FieldValueRequired",
                        "fieldManager",
                        "Required value: is required for apply patch".into(),
                    ));
                }
                let doc = parse_apply(bytes)?;
                return self.server_side_apply(doc);
            }
            _ => {
                return Err(ApiError::UnsupportedMediaType(format!(
                    "the body of the request was in an unknown format - accepted media types include: {accepted}"
                )));
            }
        };
        let object = self.shared.store.modify(
            info,
            self.ns(),
            &self.name,
            self.sub,
            self.query.dry_run,
            |current| {
                let mut next = current.clone();
                apply(&mut next, &patch_doc).map_err(patch_error)?;
                bounded(next)
            },
        )?;
        Ok(json_response(StatusCode::OK, object.json.clone()))
    }

    /// Server-side apply without field ownership: create the object if it is missing, else
    /// merge the applied configuration into it (strategically for built-in types).
    fn server_side_apply(&self, doc: Value) -> Result<Response<Body>, ApiError> {
        let info = &self.info;
        if !doc.is_object() {
            return Err(ApiError::BadRequest("an apply patch must be an object".into()));
        }
        check_apply_type(info, &doc)?;
        let merge = |current: &Value| -> Result<Value, ApiError> {
            let mut next = current.clone();
            if info.builtin {
                patch::strategic_merge_patch(&mut next, &doc).map_err(patch_error)?;
            } else {
                patch::merge_patch(&mut next, &doc);
            }
            bounded(next)
        };
        let store = &self.shared.store;
        let dry_run = self.query.dry_run;
        match store.modify(info, self.ns(), &self.name, self.sub, dry_run, merge) {
            Ok(object) => Ok(json_response(StatusCode::OK, object.json.clone())),
            Err(ApiError::NotFound { .. }) if self.sub == Subresource::Main => {
                let mut fresh = doc.clone();
                if let Some(meta) = fresh.get_mut("metadata").and_then(Value::as_object_mut)
                    && !meta.contains_key("name")
                {
                    meta.insert("name".into(), json!(self.name));
                }
                let object = store.create(info, self.ns(), fresh, dry_run)?;
                Ok(json_response(StatusCode::CREATED, object.json.clone()))
            }
            Err(e) => Err(e),
        }
    }
}

/// The media type of a request body, without parameters.
fn media_type(content_type: Option<&str>) -> String {
    content_type
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// An object body (create, update) in JSON or YAML. Errors are worded as apiserver
/// `endpoints/handlers/rest.go` `transformDecodeError` words a failed version/kind sniff.
fn decode_object(info: &ResourceInfo, body: &RequestBody) -> Result<Value, ApiError> {
    let unrecognized = |why: String| {
        ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; {why} ({})",
            info.kind,
            summarize_data(&body.bytes)
        ))
    };
    match media_type(body.content_type.as_deref()).as_str() {
        "application/json" | "" | "*/*" => {
            if let Some(opening) = depth::too_deep(&body.bytes) {
                return Err(unrecognized(format!(
                    "json parse error: {}",
                    depth::too_deep_message(opening)
                )));
            }
            depth::parse(&body.bytes).map_err(|e| unrecognized(format!("json parse error: {e}")))
        }
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            serde_yaml::from_slice(&body.bytes).map_err(|e| unrecognized(format!("yaml parse error: {e}")))
        }
        other => Err(ApiError::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {other})"
        ))),
    }
}

/// A JSON patch body, bounded as Go's decoder bounds it; `prefix` is how the patch type's
/// handler words a decode error.
fn parse_patch(bytes: &[u8], prefix: &str) -> Result<Value, ApiError> {
    if let Some(opening) = depth::too_deep(bytes) {
        return Err(ApiError::BadRequest(format!(
            "{prefix}{}",
            depth::too_deep_message(opening)
        )));
    }
    depth::parse(bytes).map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))
}

/// An apply configuration: YAML, or JSON (which is YAML, and is what kube-rs and client-go
/// send); JSON is parsed without serde_yaml's 128-level limit, up to the common bound.
fn parse_apply(bytes: &[u8]) -> Result<Value, ApiError> {
    let looks_json = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if looks_json {
        if depth::too_deep(bytes).is_some() {
            return Err(ApiError::BadRequest(format!(
                "error decoding YAML: error converting YAML to JSON: yaml: exceeded max depth of {}",
                depth::MAX_DEPTH
            )));
        }
        if let Ok(doc) = depth::parse(bytes) {
            return Ok(doc);
        }
    }
    serde_yaml::from_slice(bytes).map_err(|e| ApiError::BadRequest(format!("error decoding YAML: {e}")))
}

/// A patched object must still decode: nested deeper than the decoder's bound, kube-apiserver
/// answers as for any patched object that does not decode (apiserver
/// `endpoints/handlers/patch.go`, `jsonPatcher.applyPatchToCurrentObject`): 422, field `patch`.
fn bounded(patched: Value) -> Result<Value, ApiError> {
    if depth::value_depth(&patched) <= depth::MAX_DEPTH {
        return Ok(patched);
    }
    let text = String::from_utf8(depth::to_vec(&patched)).expect("serde_json writes UTF-8");
    Err(patch_invalid(
        &text,
        &format!(
            "couldn't get version/kind; json parse error: {}",
            depth::too_deep_message(b'{')
        ),
    ))
}

/// `"" is invalid: patch: Invalid value: "<patched object>": <why>`, as `errors.NewInvalid`
/// words it for a kind-less `schema.GroupKind{}`.
fn patch_invalid(patched: &str, why: &str) -> ApiError {
    ApiError::Invalid {
        kind: String::new(),
        name: String::new(),
        causes: vec![Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {patched:?}: {why}"),
            field: "patch".into(),
        }],
    }
}

fn patch_error(e: PatchError) -> ApiError {
    match e {
        PatchError::Malformed(m) => ApiError::BadRequest(m),
        PatchError::NotApplicable(_) => ApiError::InvalidRequest,
    }
}

/// An apply configuration must name the URL's type exactly; nothing is defaulted
/// (apimachinery `util/managedfields/internal/versioncheck.go`).
fn check_apply_type(info: &ResourceInfo, doc: &Value) -> Result<(), ApiError> {
    let text = |key: &str| doc.get(key).and_then(Value::as_str).unwrap_or("");
    let kind = text("kind");
    let (group, version) = parse_group_version(text("apiVersion")).unwrap_or_default();
    if (group.as_str(), version.as_str(), kind)
        == (info.group.as_str(), info.version.as_str(), info.kind.as_str())
    {
        return Ok(());
    }
    Err(ApiError::BadRequest(format!(
        "invalid object type: {group}/{version}, Kind={kind}"
    )))
}
