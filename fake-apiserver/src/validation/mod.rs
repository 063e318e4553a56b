//! Object validation this server enforces, worded as kube-apiserver words it: names (DNS-1123)
//! here, the rules a CRD must meet before it can register a resource in `crd`.
//!
//! Custom resources are not checked against their CRD's schema; that is left to clients and
//! said in the README.

mod crd;

pub use crd::validate_crd;

use crate::error::{ApiError, Cause};

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

/// Check `metadata.name` for `kind` of `group`; namespaces must be DNS-1123 labels, everything
/// else a DNS-1123 subdomain.
pub fn validate_name(group: &str, kind: &str, name: &str) -> Result<(), ApiError> {
    if name.is_empty() {
        return Err(ApiError::Invalid {
            group: group.into(),
            kind: kind.into(),
            name: String::new(),
            causes: vec![Cause {
                reason: "FieldValueRequired",
                message: "Required value: name or generateName is required".into(),
                field: "metadata.name".into(),
            }],
        });
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
            group: group.into(),
            kind: kind.into(),
            name: name.into(),
            causes: vec![name_cause(name, message)],
        }),
    }
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
