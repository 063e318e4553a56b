//! Object validation this server enforces: names (DNS-1123, as kube-apiserver words the
//! error) and the few rules a CRD must meet before it can register a resource.
//!
//! Custom resources are not checked against their CRD's schema; that is left to clients and
//! said in the README.

use crate::error::{ApiError, Cause};
use serde_json::Value;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

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

fn name_cause(name: &str, message: String) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {name:?}: {message}"),
        field: "metadata.name".into(),
    }
}

/// Check `metadata.name` for `kind`; namespaces must be DNS-1123 labels, everything else a
/// DNS-1123 subdomain.
pub fn validate_name(kind: &str, name: &str) -> Result<(), ApiError> {
    if name.is_empty() {
        return Err(ApiError::invalid(
            kind,
            "",
            "FieldValueRequired",
            "metadata.name",
            "Required value: name or generateName is required".into(),
        ));
    }
    let problem = if kind == "Namespace" {
        (!is_label(name)).then(|| LABEL_MSG.to_string())
    } else if name.len() > 253 {
        Some("must be no more than 253 characters".to_string())
    } else {
        (!is_dns1123_subdomain(name)).then(|| SUBDOMAIN_MSG.to_string())
    };
    match problem {
        None => Ok(()),
        Some(message) => Err(ApiError::Invalid {
            kind: kind.into(),
            name: name.into(),
            causes: vec![name_cause(name, message)],
        }),
    }
}

/// A CRD must be named `<plural>.<group>` and declare a kind, a scope and a served version.
pub fn validate_crd(crd: &Value) -> Result<(), ApiError> {
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or("");
    let mut causes = Vec::new();
    let mut need = |ok: bool, field: &str, message: &str| {
        if !ok {
            causes.push(Cause {
                reason: "FieldValueRequired",
                message: message.to_string(),
                field: field.to_string(),
            });
        }
    };
    let (plural, group) = (text("/spec/names/plural"), text("/spec/group"));
    need(!plural.is_empty(), "spec.names.plural", "Required value");
    need(!group.is_empty(), "spec.group", "Required value");
    need(
        !text("/spec/names/kind").is_empty(),
        "spec.names.kind",
        "Required value",
    );
    need(
        matches!(text("/spec/scope"), "Namespaced" | "Cluster"),
        "spec.scope",
        "Unsupported value: must be one of \"Cluster\", \"Namespaced\"",
    );
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    need(
        versions.is_some_and(|v| v.iter().any(|v| v["served"] == Value::Bool(true))),
        "spec.versions",
        "Required value: must have at least one served version",
    );
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
            field: "metadata.name".into(),
        });
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Invalid {
            kind: "CustomResourceDefinition".into(),
            name: name.into(),
            causes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names() {
        for ok in ["a", "node-1", "rendered-worker-0f1e", "api.example.com", "1abc"] {
            validate_name("ConfigMap", ok).unwrap();
        }
        for bad in ["Bad_Name", "-a", "a-", "a..b", "UPPER", &"x".repeat(254)] {
            let e = validate_name("ConfigMap", bad).unwrap_err();
            assert_eq!(e.code(), 422, "{bad}");
        }
        assert!(validate_name("Namespace", "a.b").is_err());
        let e = validate_name("ConfigMap", "Bad_Name").unwrap_err().status();
        assert!(e["message"].as_str().unwrap().starts_with(
            "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        ));
    }

    #[test]
    fn crd_rules() {
        let mut crd = json!({"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Cluster",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true}]}});
        validate_crd(&crd).unwrap();
        crd["metadata"]["name"] = json!("gadgets.example.com");
        crd["spec"]["scope"] = json!("Galaxy");
        let e = validate_crd(&crd).unwrap_err().status();
        assert_eq!(e["details"]["causes"].as_array().unwrap().len(), 2);
    }
}
