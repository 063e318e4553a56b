//! Object validation this server enforces, worded as kube-apiserver words it: names (DNS-1123)
//! here, metadata and data rules in `meta`, a Secret's type rules in `secret` (with Go's
//! `encoding/json` errors from `gojson`), the rules only an update has in `update`, the rules a
//! CRD must meet before it can register a resource in `crd`; `validate_object` gathers them
//! into one 422.
//!
//! Custom resources are pruned and checked against their CRD's structural schema in `schema`
//! (types, `format: byte`, `required`, `enum`; the module says what is not modelled).

mod crd;
mod gojson;
mod meta;
pub mod schema;
mod secret;
mod update;

pub use crd::validate_crd;
pub use gojson::syntax_error as go_json_syntax_error;
pub use meta::MAX_DATA_SIZE;

use crate::error::{ApiError, Cause};
use crate::resource::ResourceInfo;
use serde_json::Value;

pub(crate) const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// A DNS-1123 label (`validation.IsDNS1123Label`).
pub fn is_dns1123_label(s: &str) -> bool {
    is_label(s)
}

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

/// `metadata.name`'s causes for `kind`: namespaces must be DNS-1123 labels, everything else a
/// DNS-1123 subdomain.
fn name_causes(kind: &str, name: &str) -> Vec<Cause> {
    if name.is_empty() {
        return vec![Cause {
            reason: "FieldValueRequired",
            message: "Required value: name or generateName is required".into(),
            field: "metadata.name".into(),
        }];
    }
    let problem = if kind == "Namespace" {
        (!is_label(name)).then(|| LABEL_MSG.to_string())
    } else if name.len() > 253 {
        Some("must be no more than 253 characters".to_string())
    } else {
        (!is_dns1123_subdomain(name)).then(|| SUBDOMAIN_MSG.to_string())
    };
    problem
        .map(|message| Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {name:?}: {message}"),
            field: "metadata.name".into(),
        })
        .into_iter()
        .collect()
}

/// Check `metadata.name` for `kind` of `group`.
pub fn validate_name(group: &str, kind: &str, name: &str) -> Result<(), ApiError> {
    invalid_if_any(group, kind, name, name_causes(kind, name))
}

fn invalid_if_any(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Result<(), ApiError> {
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::Invalid {
        group: group.into(),
        kind: kind.into(),
        name: name.into(),
        causes,
    })
}

/// Collects causes in order.
#[derive(Default)]
pub(super) struct Causes(pub Vec<Cause>);

impl Causes {
    pub fn invalid(&mut self, field: &str, value: &str, detail: &str) {
        self.0.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {value:?}: {detail}"),
            field: field.into(),
        });
    }

    /// An invalid value that is not a string, shown as its JSON (`field.ErrorBody`).
    pub fn invalid_json(&mut self, field: &str, value: &Value, detail: &str) {
        self.0.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {value}: {detail}"),
            field: field.into(),
        });
    }

    pub fn too_long(&mut self, field: &str, limit: usize) {
        self.0.push(Cause {
            reason: "FieldValueTooLong",
            message: format!("Too long: may not be more than {limit} bytes"),
            field: field.into(),
        });
    }

    /// `field.Required(path, "")`.
    pub fn required(&mut self, field: &str) {
        self.0.push(Cause {
            reason: "FieldValueRequired",
            message: "Required value".into(),
            field: field.into(),
        });
    }

    /// `field.Forbidden(path, detail)`.
    pub fn forbidden(&mut self, field: &str, detail: &str) {
        self.0.push(Cause {
            reason: "FieldValueForbidden",
            message: format!("Forbidden: {detail}"),
            field: field.into(),
        });
    }
}

/// Every rule a written object of `info`'s resource must meet once its type checks: its name
/// (on create; an update's name is the URL's), its metadata, the rules an update of its kind
/// must meet against `old`, the stored object it replaces (`None` on create), and its kind's
/// own rules (a CRD's, a ConfigMap's, a Secret's), as one 422 listing every broken rule in
/// upstream's order (`ValidateSecretUpdate` and `ValidateConfigMapUpdate`: the update's rules,
/// then the create rules on the new object).
pub fn validate_object(info: &ResourceInfo, object: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let is_crd = info.builtin && info.kind == "CustomResourceDefinition";
    let mut causes = Causes::default();
    if is_crd {
        causes.0.extend(crd::name_causes(object));
    } else if old.is_none() {
        causes.0.extend(name_causes(&info.kind, name));
    }
    // Built-in kinds but CRDs are validated by kubernetes' core ValidateObjectMeta, which adds a
    // finalizer rule to apimachinery's.
    meta::metadata(object, info.builtin && !is_crd, &mut causes);
    match (info.builtin, info.kind.as_str()) {
        (true, "CustomResourceDefinition") => causes.0.extend(crd::spec_causes(object)),
        (true, "ConfigMap") => {
            if let Some(old) = old {
                update::configmap(old, object, &mut causes);
            }
            meta::configmap(object, &mut causes);
        }
        (true, "Secret") => {
            if let Some(old) = old {
                update::secret(old, object, &mut causes);
            }
            meta::secret(object, &mut causes);
            secret::type_causes(object, &mut causes);
        }
        (false, _) => {
            if let Some(schema) = &info.schema {
                causes.0.extend(schema::causes(schema, object));
            }
        }
        _ => {}
    }
    invalid_if_any(&info.group, &info.kind, name, causes.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "node-1", "rendered-worker-0f1e", "api.example.com", "1abc"] {
            validate_name("", "ConfigMap", ok).unwrap();
        }
        for bad in ["Bad_Name", "-a", "a-", "a..b", "UPPER", &"x".repeat(254)] {
            let e = validate_name("", "ConfigMap", bad).unwrap_err();
            assert_eq!(e.code(), 422, "{bad}");
        }
        assert!(validate_name("", "Namespace", "a.b").is_err());
        let e = validate_name("", "ConfigMap", "Bad_Name").unwrap_err().status();
        assert!(e["message"].as_str().unwrap().starts_with(
            "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        ));
    }
}
