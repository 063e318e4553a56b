//! The rules on `metadata` every kind shares, and a ConfigMap's and a Secret's data rules, as
//! causes of one 422, in kube-apiserver's order and words:
//! apimachinery `pkg/api/validation/objectmeta.go` (labels, annotations, owner references,
//! finalizers), `pkg/api/validate/content/kube.go` (qualified names, label values),
//! `pkg/util/validation/validation.go` (config keys), and kubernetes
//! `pkg/apis/core/validation/validation.go` (`ValidateConfigMap`, `ValidateSecret`, the core
//! finalizer rule). Values are read as they are after type checking (`typecheck`): fields of
//! the wrong type never get here.

use super::Causes;
use base64::Engine;
use serde_json::{Map, Value};

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
/// `TotalAnnotationSizeLimitB`.
const ANNOTATIONS_LIMIT: usize = 256 * 1024;
/// `core.MaxSecretSize`: what a ConfigMap's or a Secret's data may total.
pub(crate) const MAX_DATA_SIZE: usize = 1024 * 1024;
/// `helper.IsStandardFinalizerName`: the finalizers a built-in object may carry unqualified.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// apimachinery's `RegexError`: the message, the examples, the expression.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        examples.join(" or ")
    )
}

fn is_label_token(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `content.IsDNS1123Subdomain` (its lengths in bytes).
fn subdomain_problems(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 bytes".to_string());
    }
    if !super::is_dns1123_subdomain(s) {
        errs.push(regex_error(SUBDOMAIN_MSG, SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// `content.IsLabelKey` (= `IsQualifiedName`).
pub(super) fn qualified_name_problems(value: &str) -> Vec<String> {
    let token = || regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"]);
    let parts: Vec<&str> = value.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    subdomain_problems(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                token()
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !is_label_token(name) {
        errs.push(format!("name part {}", token()));
    }
    errs
}

/// `content.IsLabelValue`.
fn label_value_problems(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !value.is_empty() && !is_label_token(value) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            &format!("({LABEL_KEY_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

fn string_map<'a>(object: &'a Value, pointer: &str) -> Vec<(&'a str, &'a str)> {
    object
        .pointer(pointer)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default()
}

/// `validateObjectMetaAccessorWithOptsCommon`'s label, annotation, owner reference and
/// finalizer rules; `core` adds the rule kubernetes keeps for built-in kinds' finalizers.
pub(super) fn metadata(object: &Value, core: bool, causes: &mut Causes) {
    for (key, value) in string_map(object, "/metadata/labels") {
        for msg in qualified_name_problems(key) {
            causes.invalid("metadata.labels", key, &msg);
        }
        for msg in label_value_problems(value) {
            causes.invalid("metadata.labels", value, &msg);
        }
    }
    let annotations = string_map(object, "/metadata/annotations");
    for (key, _) in &annotations {
        for msg in qualified_name_problems(&key.to_lowercase()) {
            causes.invalid("metadata.annotations", key, &msg);
        }
    }
    if annotations.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() > ANNOTATIONS_LIMIT {
        causes.too_long("metadata.annotations", ANNOTATIONS_LIMIT);
    }
    owner_references(object, causes);
    finalizers(object, core, causes);
}

fn owner_references(object: &Value, causes: &mut Causes) {
    let Some(refs) = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
    else {
        return;
    };
    let mut controller: Option<String> = None;
    for r in refs {
        let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let version = text("apiVersion").rsplit('/').next().unwrap_or("");
        if version.is_empty() {
            causes.invalid(
                "metadata.ownerReferences.apiVersion",
                text("apiVersion"),
                "version must not be empty",
            );
        }
        for field in ["kind", "name", "uid"] {
            if text(field).is_empty() {
                causes.invalid(
                    &format!("metadata.ownerReferences.{field}"),
                    "",
                    "must not be empty",
                );
            }
        }
        if r.get("controller") == Some(&Value::Bool(true)) {
            let this = format!("{}/{}", text("kind"), text("name"));
            match &controller {
                Some(first) => causes.invalid_json(
                    "metadata.ownerReferences",
                    &Value::Array(refs.clone()),
                    &format!("Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"),
                ),
                None => controller = Some(this),
            }
        }
    }
}

fn finalizers(object: &Value, core: bool, causes: &mut Causes) {
    let Some(list) = object.pointer("/metadata/finalizers").and_then(Value::as_array) else {
        return;
    };
    let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
    for name in &names {
        for msg in qualified_name_problems(name) {
            causes.invalid("metadata.finalizers", name, &msg);
        }
    }
    if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
        causes.invalid_json(
            "metadata.finalizers",
            &Value::Array(list.clone()),
            "finalizer orphan and foregroundDeletion cannot be both set",
        );
    }
    if !core {
        return;
    }
    for (i, name) in names.iter().enumerate() {
        let field = format!("metadata.finalizers[{i}]");
        for msg in qualified_name_problems(name) {
            causes.invalid(&field, name, &msg);
        }
        if !name.contains('/') && !STANDARD_FINALIZERS.contains(name) {
            causes.invalid(
                &field,
                name,
                "name is neither a standard finalizer name nor is it fully qualified",
            );
        }
    }
}

/// `IsConfigMapKey`.
fn config_key_problems(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let valid = !key.is_empty()
        && key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !valid {
        errs.push(regex_error(
            CONFIG_KEY_MSG,
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    match key {
        "." => errs.push("must not be '.'".into()),
        ".." => errs.push("must not be '..'".into()),
        k if k.starts_with("..") => errs.push("must not start with '..'".into()),
        _ => {}
    }
    errs
}

fn decoded_len(value: &Value) -> usize {
    value
        .as_str()
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .map_or(0, |b| b.len())
}

/// `ValidateConfigMap`: keys of `data` and `binaryData`, no key in both (found from `data`), at most
/// `MAX_DATA_SIZE` bytes in all (reported on the empty path, `[]`, as upstream does).
pub(super) fn configmap(object: &Value, causes: &mut Causes) {
    let empty = Map::new();
    let data = object.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let binary = object
        .get("binaryData")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut total = 0;
    for (key, value) in data {
        for msg in config_key_problems(key) {
            causes.invalid(&format!("data[{key}]"), key, &msg);
        }
        // Upstream finds a key in both bags from `data`'s side (ValidateConfigMap's data loop).
        if binary.contains_key(key) {
            causes.invalid(
                &format!("data[{key}]"),
                key,
                "duplicate of key present in binaryData",
            );
        }
        total += value.as_str().map_or(0, str::len);
    }
    for (key, value) in binary {
        for msg in config_key_problems(key) {
            causes.invalid(&format!("binaryData[{key}]"), key, &msg);
        }
        total += decoded_len(value);
    }
    if total > MAX_DATA_SIZE {
        causes.too_long("[]", MAX_DATA_SIZE);
    }
}

/// `ValidateSecret`'s key and size rules (the size on `data`).
pub(super) fn secret(object: &Value, causes: &mut Causes) {
    let Some(data) = object.get("data").and_then(Value::as_object) else {
        return;
    };
    let mut total = 0;
    for (key, value) in data {
        for msg in config_key_problems(key) {
            causes.invalid(&format!("data[{key}]"), key, &msg);
        }
        total += decoded_len(value);
    }
    if total > MAX_DATA_SIZE {
        causes.too_long("data", MAX_DATA_SIZE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn causes(object: &Value, core: bool) -> Vec<(String, String)> {
        let mut c = Causes::default();
        metadata(object, core, &mut c);
        configmap(object, &mut c);
        c.0.into_iter().map(|c| (c.field, c.message)).collect()
    }

    #[test]
    fn good_metadata_has_no_causes() {
        let ok = json!({"metadata": {"labels": {"node-role.kubernetes.io/worker": "", "app": "x.y_z-1"},
            "annotations": {"machineconfiguration.openshift.io/currentConfig": "rendered-worker-1", "A/B": "anything"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u", "controller": true}],
            "finalizers": ["kubernetes", "example.com/hold"]},
            "data": {"a.conf": "x", "KEY_NAME": "y"}});
        assert_eq!(causes(&ok, true), vec![]);
    }

    #[test]
    fn messages_are_upstream_s() {
        let object =
            json!({"metadata": {"labels": {"bad key": "v!"}, "finalizers": ["hold"]}, "data": {"..x": "1"}});
        let got = causes(&object, true);
        let want = [
            (
                "metadata.labels",
                "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
            (
                "metadata.labels",
                "Invalid value: \"v!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
            (
                "metadata.finalizers[0]",
                "Invalid value: \"hold\": name is neither a standard finalizer name nor is it fully qualified",
            ),
            ("data[..x]", "Invalid value: \"..x\": must not start with '..'"),
        ];
        let want: Vec<(String, String)> = want.iter().map(|(f, m)| (f.to_string(), m.to_string())).collect();
        assert_eq!(got, want);
        let big = json!({"data": {"a": "x".repeat(MAX_DATA_SIZE), "b": "y"}});
        assert_eq!(
            causes(&big, true),
            vec![(
                "[]".to_string(),
                "Too long: may not be more than 1048576 bytes".to_string()
            )]
        );
        let refs = json!({"metadata": {"ownerReferences": [{"apiVersion": "", "kind": "K", "name": "n", "uid": ""}]}});
        assert_eq!(
            causes(&refs, true),
            vec![
                (
                    "metadata.ownerReferences.apiVersion".into(),
                    "Invalid value: \"\": version must not be empty".into()
                ),
                (
                    "metadata.ownerReferences.uid".into(),
                    "Invalid value: \"\": must not be empty".into()
                ),
            ]
        );
        // A key in both bags is found from data's side.
        let both = json!({"data": {"k": "v"}, "binaryData": {"k": "dg=="}});
        assert_eq!(
            causes(&both, true),
            vec![(
                "data[k]".to_string(),
                "Invalid value: \"k\": duplicate of key present in binaryData".to_string()
            )]
        );
    }
}
