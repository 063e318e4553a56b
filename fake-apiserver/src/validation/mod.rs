//! Object validation this server enforces, worded as kube-apiserver words it: names (DNS-1123)
//! in `names`, the causes a 422 lists in `causes`, metadata and data rules in `meta`, a
//! Secret's type rules in `secret` (with Go's `encoding/json` errors from `gojson`), the rules
//! only an update has in `update`, the rules a CRD must meet before it can register a resource
//! in `crd`; `validate_object` gathers them into one 422.
//!
//! Custom resources are pruned and checked against their CRD's structural schema in `schema`
//! (types, `format: byte`, `required`, `enum`; the module says what is not modelled).

mod causes;
mod crd;
mod gojson;
mod meta;
mod names;
pub(crate) mod schema;
mod secret;
mod update;

pub use gojson::syntax_error as go_json_syntax_error;
pub(crate) use names::SUBDOMAIN_MSG;
pub(crate) use names::{is_dns1123_label, is_dns1123_subdomain};

use causes::Causes;
use names::{LABEL_MSG, is_label};

use crate::error::{ApiError, Cause};
use crate::resource::ResourceInfo;
use serde_json::Value;

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

/// Check `metadata.name` for `kind` of `group` (the tests' way in).
#[cfg(test)]
pub(crate) fn validate_name(group: &str, kind: &str, name: &str) -> Result<(), ApiError> {
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

/// Every rule a written object of `info`'s resource must meet once its type checks: its name
/// (on create; an update's name is the URL's), its metadata, the rules an update of its kind
/// must meet against `old`, the stored object it replaces (`None` on create), and its kind's
/// own rules (a CRD's, a ConfigMap's, a Secret's), as one 422 listing every broken rule in
/// upstream's order (`ValidateSecretUpdate` and `ValidateConfigMapUpdate`: the update's rules,
/// then the create rules on the new object).
pub(crate) fn validate_object(
    info: &ResourceInfo,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
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

/// A CRD's rules, metadata's included; every broken one is a cause of one 422 (the tests' way
/// in: the store validates a CRD as any object).
#[cfg(test)]
pub(crate) fn validate_crd(crd: &Value) -> Result<(), ApiError> {
    let registry = crate::resource::Registry::default();
    let info = registry
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .expect("CRDs are built in");
    validate_object(info, crd, None)
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
