//! The writes that carry an object or a patch (create, update, patch, server-side apply): from
//! request body to store call to reply, run whole on a deep stack (`depth::on_deep_stack`) so a
//! document nested up to kube-apiserver's bound is parsed, patched, compared and dropped
//! without overflowing.
//!
//! How bodies decode and how that fails is `decode`'s; semantics are the store's. What is left
//! here is the flow: which patch type applies how, and apply's create-or-merge.

use super::decode;
use super::query::Query;
use super::{Body, RequestBody, json_response};
use crate::auth::{Identity, Operation, RequestAttributes, admit};
use crate::error::ApiError;
use crate::patch::{self, PatchError};
use crate::resource::{ResourceInfo, parse_group_version};
use crate::shared::Shared;
use crate::store::Subresource;
use http::{Response, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;

/// One write request, owned, so it can move to the deep-stack thread.
pub(super) struct Write {
    pub shared: Arc<Shared>,
    /// Who writes, and what the authorizer saw: for the NodeRestriction admission plugin.
    pub who: Identity,
    pub attrs: RequestAttributes,
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

    /// Admission, before validation (NodeRestriction is a mutating plugin).
    fn admit(&self, op: Operation, old: Option<&Value>, new: &Value) -> Result<(), ApiError> {
        admit(&self.who, &self.attrs, op, old, Some(new))
    }

    pub(super) fn create(self) -> Result<Response<Body>, ApiError> {
        let (mut value, warnings) =
            decode::object(&self.info, &self.body, self.query.field_validation.as_deref())?;
        self.admit(Operation::Create, None, &value)?;
        if crate::csr::is_csr(&self.info) {
            crate::csr::prepare_create(&self.who, &mut value)?;
        }
        let object = self
            .shared
            .store
            .create(&self.info, self.ns(), value, self.query.dry_run)?;
        Ok(warned(
            json_response(StatusCode::CREATED, object.json.clone()),
            &warnings,
        ))
    }

    pub(super) fn update(self) -> Result<Response<Body>, ApiError> {
        let (value, warnings) =
            decode::object(&self.info, &self.body, self.query.field_validation.as_deref())?;
        // apiserver `endpoints/handlers/rest.go`, `checkName`: a PUT names its object twice.
        let body_name = value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if body_name.is_empty() {
            return Err(ApiError::BadRequest(format!(
                "the name of the object ({} based on URL) was undeterminable: name must be provided",
                self.name
            )));
        }
        if body_name != self.name {
            return Err(ApiError::BadRequest(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({})",
                self.name
            )));
        }
        let object = self.shared.store.modify(
            &self.info,
            self.ns(),
            &self.name,
            self.sub,
            self.query.dry_run,
            |old| {
                crate::store::require_resource_version(&self.info, &self.name, &value)?;
                self.admit(Operation::Update, Some(old), &value)?;
                Ok(value)
            },
        )?;
        Ok(warned(
            json_response(StatusCode::OK, object.json.clone()),
            &warnings,
        ))
    }

    pub(super) fn patch(self) -> Result<Response<Body>, ApiError> {
        let info = &self.info;
        let kind = decode::media_type(self.body.content_type.as_deref());
        let accepted = if info.builtin {
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json"
        } else {
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        };
        let bytes = &self.body.bytes;
        let (patch_doc, apply): (Option<Value>, ApplyPatch) = match kind.as_str() {
            "application/merge-patch+json" => (Some(decode::merge_patch(bytes)?), |t, p| {
                patch::merge_patch(t, p);
                Ok(())
            }),
            "application/json-patch+json" => (decode::json_patch(bytes)?, patch::json_patch),
            "application/strategic-merge-patch+json" if info.builtin => {
                (decode::strategic_patch(bytes)?, patch::strategic_merge_patch)
            }
            "application/apply-patch+yaml" => {
                if self.query.field_manager.is_none() {
                    return Err(ApiError::invalid_options(
                        "PatchOptions",
                        "FieldValueRequired",
                        "fieldManager",
                        "Required value: is required for apply patch".into(),
                    ));
                }
                let doc = decode::apply_patch(bytes)?;
                return self.server_side_apply(doc);
            }
            _ => {
                return Err(ApiError::UnsupportedMediaType(format!(
                    "the body of the request was in an unknown format - accepted media types include: {accepted}"
                )));
            }
        };
        let json_patch = kind == "application/json-patch+json";
        let validation = self.query.field_validation.as_deref();
        let mut warnings = Vec::new();
        let object = self.shared.store.modify(
            info,
            self.ns(),
            &self.name,
            self.sub,
            self.query.dry_run,
            |current| {
                let mut next = current.clone();
                // A `null` JSON or strategic patch decodes to no operations.
                if let Some(doc) = &patch_doc {
                    apply(&mut next, doc).map_err(patch_error)?;
                }
                // kube-apiserver 1.36 answers a JSON patch whose result nests past the bound
                // (an add that deepens it, a copy into its own subtree) as any operation that
                // cannot apply: a plain 422 with empty details (checked against a real server).
                if json_patch && crate::depth::value_depth(&next) > crate::depth::MAX_DEPTH {
                    return Err(ApiError::InvalidRequest);
                }
                let (next, unknown) = decode::patched_checked(info, next, validation)?;
                warnings = unknown;
                self.admit(Operation::Update, Some(current), &next)?;
                Ok(next)
            },
        )?;
        Ok(warned(
            json_response(StatusCode::OK, object.json.clone()),
            &warnings,
        ))
    }

    /// Server-side apply without field ownership: create the object if it is missing, else
    /// merge the applied configuration into it (strategically for built-in types).
    fn server_side_apply(&self, doc: Value) -> Result<Response<Body>, ApiError> {
        let info = &self.info;
        check_apply_type(info, &doc)?;
        let doc = decode::applied(info, self.ns(), &self.name, doc)?;
        let merge = |current: &Value| -> Result<Value, ApiError> {
            let mut next = current.clone();
            if info.builtin {
                patch::strategic_merge_patch(&mut next, &doc).map_err(patch_error)?;
            } else {
                patch::merge_patch(&mut next, &doc);
            }
            let next = decode::patched(info, next)?;
            self.admit(Operation::Update, Some(current), &next)?;
            Ok(next)
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
                self.admit(Operation::Create, None, &fresh)?;
                if crate::csr::is_csr(info) {
                    crate::csr::prepare_create(&self.who, &mut fresh)?;
                }
                let object = store.create(info, self.ns(), fresh, dry_run)?;
                Ok(json_response(StatusCode::CREATED, object.json.clone()))
            }
            Err(e) => Err(e),
        }
    }
}

/// `response` with a `Warning` header per warning, as apiserver's `warning.AddWarning` writes
/// them: `299 - "<text>"`, the text quoted as Go quotes it.
fn warned(mut response: Response<Body>, warnings: &[String]) -> Response<Body> {
    for text in warnings {
        let value = format!("299 - {}", super::query::go_quote(text));
        if let Ok(value) = http::HeaderValue::from_str(&value) {
            response.headers_mut().append(http::header::WARNING, value);
        }
    }
    response
}

fn patch_error(e: PatchError) -> ApiError {
    match &e {
        PatchError::Malformed(m) => ApiError::BadRequest(m.clone()),
        PatchError::NotApplicable(_) => ApiError::InvalidRequest,
        PatchError::TooManyOperations(_) => ApiError::TooLarge(e.to_string()),
        // As a result past the bound (see `patch`).
        PatchError::TooDeep(_) => ApiError::InvalidRequest,
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
