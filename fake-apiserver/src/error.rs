//! Every way a request can fail, as the Kubernetes `Status` body kube-apiserver sends for it.
//!
//! The shapes (code, reason, `details`, message wording) follow the samples captured from a real
//! kube-apiserver 1.36 in `shared/notes/apiserver-wire.md`. Clients branch on `reason` (kube-rs's
//! `is_already_exists()` looks only at it), so every variant carries one. This module builds
//! bodies only; it never decides whether a request fails.

use serde_json::{Value, json};

/// One cause inside an `Invalid` Status (`details.causes[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, ...
    pub reason: &'static str,
    pub message: String,
    pub field: String,
}

/// A failed request. `Display` is the Status message.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    /// 400, e.g. a body that is not JSON, or a kind that does not match the URL.
    #[error("{0}")]
    BadRequest(String),
    /// 401: no usable credentials.
    #[error("Unauthorized")]
    Unauthorized,
    /// 403 from the authorizer or an admission rule.
    #[error("{message}")]
    Forbidden {
        message: String,
        /// The API group of `resource` (empty for the core group).
        group: String,
        resource: String,
        name: Option<String>,
    },
    /// 404 for a named object.
    #[error("{resource} \"{name}\" not found")]
    NotFound { resource: String, name: String },
    /// 404 for a path that names no resource this server knows.
    #[error("the server could not find the requested resource")]
    NoSuchResource,
    /// 404 as Go's `http.NotFound` writes it, in plain text: kube-apiserver's answer for a path
    /// under `/apis/` whose group it does not serve, and for paths outside `/api` and `/apis`.
    #[error("404 page not found")]
    PageNotFound,
    /// 405 (PUT on a collection, POST on an object, ...).
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    /// 406: the Accept header names no media type the server writes (apiserver
    /// `handlers/negotiation`, `errNotAcceptable`), listing what it would.
    #[error("406: Not Acceptable\n\nAvailable representations: {0}")]
    NotAcceptable(String),
    /// 409 on create of an existing name.
    #[error("{resource} \"{name}\" already exists")]
    AlreadyExists { resource: String, name: String },
    /// 409 on a stale resourceVersion or a failed precondition.
    #[error("Operation cannot be fulfilled on {resource} \"{name}\": {detail}")]
    Conflict {
        resource: String,
        name: String,
        detail: String,
    },
    /// 410 on a list whose resourceVersion or continue token is gone.
    #[error("{0}")]
    Gone(String),
    /// 413 (`errors.NewRequestEntityTooLargeError`): a body over the limit ("limit is
    /// 3145728"), a JSON patch of too many operations.
    #[error("Request entity too large: {0}")]
    TooLarge(String),
    /// 415: a patch or body type this resource does not take.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 422 with field causes (`Kind.group "name" is invalid: ...`; an empty group is the core
    /// group's, an empty kind a patch that does not decode).
    #[error("{} \"{name}\" is invalid: {}", qualified_kind(.group, .kind), causes_text(.causes))]
    Invalid {
        group: String,
        kind: String,
        name: String,
        causes: Vec<Cause>,
    },
    /// 422 without field detail (bad JSON-patch operation, failed `test`).
    #[error("the server rejected our request due to an error in our request")]
    InvalidRequest,
    /// 500: a bug in this server; never expected.
    #[error("Internal error occurred: {0}")]
    Internal(String),
    /// Any code, from fault injection.
    #[error("{message}")]
    Injected { code: u16, message: String },
}

/// `schema.GroupKind.String()`: `Kind`, or `Kind.group`.
fn qualified_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

/// The causes as apimachinery's `utilerrors.Aggregate` prints them: one alone, several
/// (without repeats) in brackets.
fn causes_text(causes: &[Cause]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for c in causes {
        let text = format!("{}: {}", c.field, c.message);
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    match seen.len() {
        1 => seen.remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

impl ApiError {
    pub fn code(&self) -> u16 {
        match self {
            ApiError::BadRequest(_) => 400,
            ApiError::Unauthorized => 401,
            ApiError::Forbidden { .. } => 403,
            ApiError::NotFound { .. } | ApiError::NoSuchResource | ApiError::PageNotFound => 404,
            ApiError::MethodNotAllowed => 405,
            ApiError::NotAcceptable(_) => 406,
            ApiError::AlreadyExists { .. } | ApiError::Conflict { .. } => 409,
            ApiError::Gone(_) => 410,
            ApiError::TooLarge(_) => 413,
            ApiError::UnsupportedMediaType(_) => 415,
            ApiError::Invalid { .. } | ApiError::InvalidRequest => 422,
            ApiError::Internal(_) => 500,
            ApiError::Injected { code, .. } => *code,
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::Injected { code, .. } => reason_for_code(*code),
            ApiError::Gone(_) => "Expired",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict { .. } => "Conflict",
            ApiError::TooLarge(_) => "RequestEntityTooLarge",
            other => reason_for_code(other.code()),
        }
    }

    /// The `Status` object, as kube-apiserver serialises it.
    pub fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code(),
        });
        let details = match self {
            ApiError::NotFound { resource, name }
            | ApiError::AlreadyExists { resource, name }
            | ApiError::Conflict { resource, name, .. } => Some(json!({ "name": name, "kind": resource })),
            // `metav1.StatusDetails` omits empty fields.
            ApiError::Forbidden {
                group,
                resource,
                name,
                ..
            } => {
                let mut d = json!({});
                for (key, value) in [
                    ("name", name.as_deref().unwrap_or("")),
                    ("group", group),
                    ("kind", resource),
                ] {
                    if !value.is_empty() {
                        d[key] = json!(value);
                    }
                }
                Some(d)
            }
            ApiError::Invalid {
                group,
                kind,
                name,
                causes,
            } => {
                let causes: Vec<Value> = causes
                    .iter()
                    .map(|c| json!({ "reason": c.reason, "message": c.message, "field": c.field }))
                    .collect();
                // `metav1.StatusDetails` omits empty fields: a patch that does not decode is
                // Invalid for no kind and no name.
                let mut d = json!({ "causes": causes });
                if !name.is_empty() {
                    d["name"] = json!(name);
                }
                if !kind.is_empty() {
                    d["kind"] = json!(kind);
                }
                if !group.is_empty() {
                    d["group"] = json!(group);
                }
                Some(d)
            }
            ApiError::NoSuchResource
            | ApiError::MethodNotAllowed
            | ApiError::NotAcceptable(_)
            | ApiError::UnsupportedMediaType(_)
            | ApiError::InvalidRequest => Some(json!({})),
            _ => None,
        };
        if let Some(d) = details {
            status["details"] = d;
        }
        status
    }

    /// A 422 for one field of a request's options (`ListOptions`, `PatchOptions`), which
    /// kube-apiserver reports in group `meta.k8s.io` with no name.
    pub fn invalid_options(kind: &str, reason: &'static str, field: &str, message: String) -> Self {
        ApiError::Invalid {
            group: "meta.k8s.io".into(),
            kind: kind.to_string(),
            name: String::new(),
            causes: vec![Cause {
                reason,
                message,
                field: field.to_string(),
            }],
        }
    }

    /// A 422 for one field.
    pub fn invalid(kind: &str, name: &str, reason: &'static str, field: &str, message: String) -> Self {
        ApiError::Invalid {
            group: String::new(),
            kind: kind.to_string(),
            name: name.to_string(),
            causes: vec![Cause {
                reason,
                message,
                field: field.to_string(),
            }],
        }
    }
}

/// The `reason` kube-apiserver pairs with an HTTP code (`metav1.StatusReason`).
pub(crate) fn reason_for_code(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

/// The start of a body as kube-apiserver quotes it in decode errors (apiserver
/// `endpoints/handlers/rest.go`, `summarizeData`): 30 bytes then " ...", as text when it opens
/// with `{`, else in hex.
pub(crate) fn summarize_data(body: &[u8]) -> String {
    const SHOWN: usize = 30;
    if body.is_empty() {
        return "<empty>".into();
    }
    let head = &body[..body.len().min(SHOWN)];
    let shown = if body[0] == b'{' {
        String::from_utf8_lossy(head).into_owned()
    } else {
        head.iter().map(|b| format!("{b:02x}")).collect()
    };
    if body.len() > SHOWN {
        format!("{shown} ...")
    } else {
        shown
    }
}

/// The `Success` Status a DELETE of a built-in object answers with.
pub(crate) fn success_status(resource: &str, name: &str, uid: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": { "name": name, "kind": resource, "uid": uid },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_the_captured_body() {
        let s = ApiError::NotFound {
            resource: "configmaps".into(),
            name: "nope".into(),
        }
        .status();
        assert_eq!(
            s,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                   "message":"configmaps \"nope\" not found","reason":"NotFound",
                   "details":{"name":"nope","kind":"configmaps"},"code":404})
        );
    }

    #[test]
    fn missing_name_is_a_required_value_cause() {
        let s = ApiError::invalid(
            "ConfigMap",
            "",
            "FieldValueRequired",
            "metadata.name",
            "Required value: name or generateName is required".into(),
        )
        .status();
        assert_eq!(
            s["message"],
            "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueRequired");
        assert!(s["details"].get("name").is_none());
        assert_eq!(s["code"], 422);
    }

    #[test]
    fn summaries_are_kube_apiservers() {
        assert_eq!(summarize_data(b""), "<empty>");
        assert_eq!(summarize_data(b"{not json"), "{not json");
        assert_eq!(summarize_data(b"[1]"), "5b315d");
        assert_eq!(
            summarize_data(br#"{"apiVersion":"a/b/c","metadata":{}}"#),
            r#"{"apiVersion":"a/b/c","metadat ..."#
        );
    }

    #[test]
    fn injected_codes_get_their_reason() {
        let e = ApiError::Injected {
            code: 503,
            message: "injected".into(),
        };
        assert_eq!(e.reason(), "ServiceUnavailable");
        assert_eq!(e.status()["code"], 503);
    }
}
