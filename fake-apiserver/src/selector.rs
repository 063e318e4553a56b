//! Label and field selectors, parsed from query strings and matched against stored objects.
//!
//! Label selectors take the set-based grammar of `k8s.io/apimachinery/pkg/labels`
//! (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`); field selectors take
//! `metadata.name` and `metadata.namespace` with `=`, `==` and `!=`, the fields every resource
//! supports. Anything else is a 400, as kube-apiserver answers it.

use crate::error::ApiError;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed `labelSelector` (all requirements must hold).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// A parsed `fieldSelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(Field, bool, String)>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
    /// A field of the kind's own (`spec.nodeName` of a Pod), as a dotted path.
    Own(&'static str),
}

/// The fields besides `metadata.name` and `metadata.namespace` that kube-apiserver selects on,
/// per kind (each type's `AddFieldLabelConversionFunc` in k8s.io/kubernetes
/// pkg/apis/core/v1/conversion.go: Pod, Node, Secret, Namespace, Event). A client-go drain,
/// for one, lists the Pods of a node by `spec.nodeName`.
fn own_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Pod" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "Node" => &["spec.unschedulable"],
        "Secret" => &["type"],
        "Namespace" => &["status.phase"],
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        _ => &[],
    }
}

/// A field's value as the selector compares it: a string as it is, a boolean as `true`/`false`
/// (an unset boolean is false), anything else unset as "". An Event's `source` is its
/// `source.component`.
fn own_value(object: &Value, path: &str) -> String {
    let path = if path == "source" {
        "source.component"
    } else {
        path
    };
    let mut at = object;
    for key in path.split('.') {
        at = at.get(key).unwrap_or(&Value::Null);
    }
    match at {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Null if matches!(path, "spec.hostNetwork" | "spec.unschedulable") => "false".into(),
        _ => String::new(),
    }
}

/// Split on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn bad_label(selector: &str, why: &str) -> ApiError {
    ApiError::BadRequest(format!(
        "unable to parse requirement: {why} in label selector {selector:?}"
    ))
}

impl LabelSelector {
    pub fn parse(selector: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if selector.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for part in split_top_level(selector) {
            let p = part.trim();
            let req = if let Some(key) = p.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_string())
            } else if let Some((k, v)) = p.split_once("!=") {
                Requirement::NotEquals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = p.split_once("==") {
                Requirement::Equals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = p.split_once('=') {
                Requirement::Equals(k.trim().into(), v.trim().into())
            } else if let Some((k, rest)) = split_set_op(p, " notin ") {
                Requirement::NotIn(k, parse_set(selector, rest)?)
            } else if let Some((k, rest)) = split_set_op(p, " in ") {
                Requirement::In(k, parse_set(selector, rest)?)
            } else {
                Requirement::Exists(p.to_string())
            };
            let (key, values): (&str, Vec<&str>) = match &req {
                Requirement::Equals(k, v) | Requirement::NotEquals(k, v) => (k, vec![v.as_str()]),
                Requirement::In(k, vs) | Requirement::NotIn(k, vs) => {
                    (k, vs.iter().map(String::as_str).collect())
                }
                Requirement::Exists(k) | Requirement::NotExists(k) => (k, vec![]),
            };
            if !valid_key(key) {
                return Err(bad_label(selector, &format!("invalid label key {key:?}")));
            }
            if let Some(v) = values.iter().find(|v| !valid_value(v)) {
                return Err(bad_label(selector, &format!("invalid label value {v:?}")));
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, object: &Value) -> bool {
        if self.0.is_empty() {
            return true;
        }
        // `get` by key, not `pointer`: a pointer splits and unescapes its path on every call, and
        // a watch evaluates this for every event it is fed.
        let labels = object.get("metadata").and_then(|m| m.get("labels"));
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }
}

fn split_set_op(p: &str, op: &str) -> Option<(String, String)> {
    let (k, rest) = p.split_once(op)?;
    Some((k.trim().to_string(), rest.trim().to_string()))
}

fn parse_set(selector: &str, rest: String) -> Result<Vec<String>, ApiError> {
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad_label(selector, "expected a parenthesised set of values"))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

impl FieldSelector {
    /// `resource` names the resource in the error, as kube-apiserver does.
    pub fn parse(selector: &str, kind: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if selector.trim().is_empty() {
            return Ok(FieldSelector(reqs));
        }
        for part in selector.split(',') {
            let p = part.trim();
            let (field, equal, value) = if let Some((f, v)) = p.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = p.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = p.split_once('=') {
                (f, true, v)
            } else {
                return Err(ApiError::BadRequest(format!(
                    "invalid selector: '{selector}'; can't understand '{p}'"
                )));
            };
            let field = match field.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other if own_fields(kind).contains(&other) => {
                    Field::Own(own_fields(kind).iter().find(|f| **f == other).expect("contained"))
                }
                other => {
                    return Err(ApiError::BadRequest(format!(
                        "field label not supported: {other} (for {kind})"
                    )));
                }
            };
            reqs.push((field, equal, value.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, object: &Value) -> bool {
        let meta = |key: &str| {
            object
                .get("metadata")
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        self.matches_meta(meta("name"), meta("namespace"), object)
    }

    /// As [`matches`](Self::matches), given the object's name and namespace read already.
    pub fn matches_meta(&self, name: &str, namespace: &str, object: &Value) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let actual = match field {
                Field::Name => std::borrow::Cow::Borrowed(name),
                Field::Namespace => std::borrow::Cow::Borrowed(namespace),
                Field::Own(path) => std::borrow::Cow::Owned(own_value(object, path)),
            };
            (actual == value.as_str()) == *equal
        })
    }

    /// Both selectors at once.
    pub fn and(mut self, other: FieldSelector) -> FieldSelector {
        self.0.extend(other.0);
        self
    }

    /// `metadata.name=X`, when the selector pins one name (a single-object watch).
    pub fn pinned_name(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|(f, eq, _)| *f == Field::Name && *eq)
            .map(|(_, _, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_selector_grammar() {
        let o = obj(json!({"role": "worker", "zone": "b"}));
        let cases = [
            ("role=worker", true),
            ("role==worker", true),
            ("role!=worker", false),
            ("role in (master,worker)", true),
            ("role notin (master, worker)", false),
            ("zone", true),
            ("!zone", false),
            ("!missing", true),
            ("role=worker,zone=b", true),
            ("role=worker,zone in (a,c)", false),
            ("missing!=x", true),
            ("", true),
        ];
        for (sel, want) in cases {
            let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(s.matches(&o), want, "{sel}");
        }
    }

    #[test]
    fn bad_label_selectors_are_bad_requests() {
        for sel in ["role in worker", "ro le=x", "a=b c", "=x"] {
            let e = LabelSelector::parse(sel).unwrap_err();
            assert_eq!(e.code(), 400, "{sel}");
        }
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        let s = FieldSelector::parse("metadata.name=a,metadata.namespace!=other", "ConfigMap").unwrap();
        assert!(s.matches(&o));
        assert_eq!(s.pinned_name(), Some("a"));
        assert!(!FieldSelector::parse("metadata.name==b", "x").unwrap().matches(&o));
        let e = FieldSelector::parse("spec.nodeName=x", "ConfigMap").unwrap_err();
        assert_eq!(e.code(), 400);
        assert!(e.to_string().contains("field label not supported: spec.nodeName"));
        // A Pod's own fields, as a drain lists a node's Pods.
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "worker-0"}, "status": {"phase": "Running"}});
        let on = FieldSelector::parse("spec.nodeName=worker-0,status.phase!=Succeeded", "Pod").unwrap();
        assert!(on.matches(&pod));
        assert!(
            !FieldSelector::parse("spec.nodeName=worker-1", "Pod")
                .unwrap()
                .matches(&pod)
        );
        assert!(
            FieldSelector::parse("spec.hostNetwork=false", "Pod")
                .unwrap()
                .matches(&pod)
        );
        let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Node", "name": "worker-0"}, "source": {"component": "machineconfigdaemon"}});
        assert!(
            FieldSelector::parse("involvedObject.kind=Node,source=machineconfigdaemon", "Event")
                .unwrap()
                .matches(&event)
        );
    }
}
