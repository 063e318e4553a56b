//! The rules a CustomResourceDefinition must meet, as apiextensions-apiserver words them
//! (`pkg/apis/apiextensions/validation/validation.go`, `ValidateCustomResourceDefinition`):
//! its name, group, scope, version names and resource names, and the approval annotation a
//! protected group (`*.k8s.io`, `*.kubernetes.io`) needs, which is what keeps a CRD from
//! claiming a built-in group. The order of the causes is upstream's.
//!
//! Not modelled: schemas (`openAPIV3Schema` is not required here), storage-version counts,
//! conversion. Instead of upstream's storage rule, at least one version must be served.

use crate::error::Cause;
use serde_json::Value;

const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// `IsDNS1035Label`'s messages, joined with "," as the CRD rules join them.
fn dns1035_problems(s: &str) -> Option<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = s.as_bytes();
    let valid = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-';
    if !valid {
        errs.push(DNS1035_MSG.to_string());
    }
    (!errs.is_empty()).then(|| errs.join(","))
}

/// `apihelpers.IsProtectedCommunityGroup`.
fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

struct Causes(Vec<Cause>);

impl Causes {
    fn required(&mut self, field: &str, detail: &str) {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        self.0.push(Cause {
            reason: "FieldValueRequired",
            message,
            field: field.into(),
        });
    }

    fn invalid(&mut self, field: &str, value: &str, detail: &str) {
        self.0.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {value:?}: {detail}"),
            field: field.into(),
        });
    }
}

/// `ValidateObjectMeta`'s name rule, with the CRD's own added to the usual one.
pub(super) fn name_causes(crd: &Value) -> Vec<Cause> {
    let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or("");
    let name = text("/metadata/name");
    let (plural, group) = (text("/spec/names/plural"), text("/spec/group"));
    let mut causes = Causes(Vec::new());
    // ValidateObjectMeta, with the CRD's name rule added to the usual one.
    if name.is_empty() {
        causes.required("metadata.name", "name or generateName is required");
    } else {
        if name.len() > 253 {
            causes.invalid("metadata.name", name, "must be no more than 253 characters");
        }
        if !super::is_dns1123_subdomain(name) {
            causes.invalid("metadata.name", name, SUBDOMAIN_MSG);
        }
        if name != format!("{plural}.{group}") {
            causes.invalid(
                "metadata.name",
                name,
                "must be spec.names.plural+\".\"+spec.group",
            );
        }
    }
    causes.0
}

/// The spec's rules and the approval a protected group needs, after the metadata's.
pub(super) fn spec_causes(crd: &Value) -> Vec<Cause> {
    let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (plural, group) = (text("/spec/names/plural"), text("/spec/group"));
    let mut causes = Causes(Vec::new());
    // validateCustomResourceDefinitionSpec.
    causes.group(group);
    causes.scope(text("/spec/scope"));
    causes.versions(crd.pointer("/spec/versions").and_then(Value::as_array));
    if plural.is_empty() {
        causes.required("spec.names.plural", "");
    }
    let kind = text("/spec/names/kind");
    if kind.is_empty() {
        causes.required("spec.names.kind", "");
    }
    // ValidateCustomResourceDefinitionNames.
    causes.names([
        ("spec.names.plural", plural, false),
        ("spec.names.singular", text("/spec/names/singular"), false),
        ("spec.names.kind", kind, true),
        ("spec.names.listKind", text("/spec/names/listKind"), true),
    ]);
    // validateAPIApproval.
    if is_protected_group(group) {
        causes.api_approval(crd);
    }
    causes.0
}

impl Causes {
    /// `spec.group`: required, a DNS subdomain, and a domain with at least one dot.
    fn group(&mut self, group: &str) {
        if group.is_empty() {
            self.required("spec.group", "");
        } else if group.len() > 253 || !super::is_dns1123_subdomain(group) {
            self.invalid("spec.group", group, SUBDOMAIN_MSG);
        } else if !group.contains('.') {
            self.invalid("spec.group", group, "should be a domain with at least one dot");
        }
    }

    /// `spec.scope`: required, `Cluster` or `Namespaced`.
    fn scope(&mut self, scope: &str) {
        match scope {
            "" => self.required("spec.scope", ""),
            "Cluster" | "Namespaced" => {}
            other => self.0.push(Cause {
                reason: "FieldValueNotSupported",
                message: format!(
                    "Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
                ),
                field: "spec.scope".into(),
            }),
        }
    }

    /// `spec.versions`: each name a DNS-1035 label, at least one version served (this server's
    /// rule, instead of upstream's storage rule), and the internal `spec.version` (the first
    /// version's name) held to the same rule as the names.
    fn versions(&mut self, versions: Option<&Vec<Value>>) {
        for (i, version) in versions.into_iter().flatten().enumerate() {
            let version_name = version.get("name").and_then(Value::as_str).unwrap_or("");
            if let Some(problem) = dns1035_problems(version_name) {
                self.invalid(&format!("spec.versions[{i}].name"), version_name, &problem);
            }
        }
        if !versions.is_some_and(|v| v.iter().any(|v| v["served"] == Value::Bool(true))) {
            self.required("spec.versions", "must have at least one served version");
        }
        if let Some(first) = versions.and_then(|v| v.first()) {
            let first = first.get("name").and_then(Value::as_str).unwrap_or("");
            if let Some(problem) = dns1035_problems(first).filter(|_| !first.is_empty()) {
                self.invalid("spec.version", first, &problem);
            }
        }
    }

    /// `ValidateCustomResourceDefinitionNames`: each name given, as `(field, value, mixed
    /// case)`, is a DNS-1035 label, once lowercased for the kinds (which may have mixed case).
    fn names(&mut self, names: [(&str, &str, bool); 4]) {
        for (field, value, mixed_case) in names {
            let checked = if mixed_case {
                value.to_lowercase()
            } else {
                value.to_string()
            };
            if let Some(problem) = dns1035_problems(&checked).filter(|_| !value.is_empty()) {
                let detail = if mixed_case {
                    format!("may have mixed case, but should otherwise match: {problem}")
                } else {
                    problem
                };
                self.invalid(field, value, &detail);
            }
        }
    }

    /// `validateAPIApproval` for a protected group: the approval annotation must be there, and
    /// hold a URL or a reason starting with "unapproved".
    fn api_approval(&mut self, crd: &Value) {
        let approval = crd
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(APPROVAL_ANNOTATION))
            .and_then(Value::as_str)
            .unwrap_or("");
        let field = format!("metadata.annotations[{APPROVAL_ANNOTATION}]");
        let approved = approval.starts_with("unapproved")
            || approval
                .split_once("://")
                .is_some_and(|(scheme, rest)| !scheme.is_empty() && !rest.is_empty());
        if approval.is_empty() {
            self.required(
                &field,
                &format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?}, see https://github.com/kubernetes/enhancements/pull/1111"),
            );
        } else if !approved {
            self.invalid(
                &field,
                approval,
                &format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;
    use crate::validation::validate_crd;
    use serde_json::json;

    fn crd(group: &str, plural: &str, version: &str) -> Value {
        json!({"metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "scope": "Cluster",
                     "names": {"plural": plural, "kind": "Widget"},
                     "versions": [{"name": version, "served": true}]}})
    }

    fn fields(e: ApiError) -> Vec<(String, String)> {
        let ApiError::Invalid { causes, .. } = e else {
            panic!("not Invalid: {e}")
        };
        causes.into_iter().map(|c| (c.field, c.message)).collect()
    }

    #[test]
    fn a_good_crd_passes() {
        validate_crd(&crd("example.com", "widgets", "v1")).unwrap();
        validate_crd(&crd("example.com", "status", "v1alpha1")).unwrap();
    }

    #[test]
    fn causes_are_upstream_s() {
        let cases = [
            (
                crd("apps", "widgets", "v1"),
                "spec.group",
                "Invalid value: \"apps\": should be a domain with at least one dot",
            ),
            (
                crd("example.com", "1widgets", "v1"),
                "spec.names.plural",
                &format!("Invalid value: \"1widgets\": {DNS1035_MSG}"),
            ),
            (
                crd("coordination.k8s.io", "leases", "v1"),
                "metadata.annotations[api-approved.kubernetes.io]",
                "Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111",
            ),
        ];
        for (object, field, message) in cases {
            let got = fields(validate_crd(&object).unwrap_err());
            assert_eq!(got, vec![(field.to_string(), message.to_string())], "{object}");
        }
        // The first version's name is the internal `spec.version` too, and refused there again.
        let version = format!("Invalid value: \"V1\": {DNS1035_MSG}");
        assert_eq!(
            fields(validate_crd(&crd("example.com", "widgets", "V1")).unwrap_err()),
            vec![
                ("spec.versions[0].name".to_string(), version.clone()),
                ("spec.version".to_string(), version)
            ]
        );
        let mut scope = crd("example.com", "widgets", "v1");
        scope["spec"]["scope"] = json!("Galaxy");
        assert_eq!(
            fields(validate_crd(&scope).unwrap_err()),
            vec![(
                "spec.scope".into(),
                "Unsupported value: \"Galaxy\": supported values: \"Cluster\", \"Namespaced\"".into()
            )]
        );
        let mut approved = crd("coordination.k8s.io", "leases", "v1");
        approved["metadata"]["annotations"] =
            json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"});
        validate_crd(&approved).unwrap();
    }
}
