//! The NodeRestriction admission plugin of kube-apiserver 1.36
//! (`plugin/pkg/admission/noderestriction/admission.go`): after the Node authorizer let a
//! kubelet's write through, what the written object may say. A kubelet writes only its own
//! Node (no taints, owner references or restricted labels of its own making), only its own
//! Lease in `kube-node-lease`, only mirror pods bound to itself, and the status of its pods.
//!
//! Pure: the caller hands in the operation and the objects (the stored one, the proposed one),
//! before validation, as the plugin runs among the mutating admission plugins. Not modelled:
//! a mirror pod's owner reference and its API-object references, evictions, PVC status,
//! service-account tokens, CSINodes, ResourceSlices, CSRs and PodCertificateRequests (none of
//! them is served).

use super::node::MIRROR_POD_ANNOTATION;
use super::{Identity, RequestAttributes};
use crate::error::ApiError;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// `admission.Operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// Labels a kubelet may set on its own Node (`kubeletapis.KubeletLabels()`).
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

/// Label namespaces (and their subdomains) a kubelet may set (`KubeletLabelNamespaces()`).
const KUBELET_LABEL_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];

/// `v1.LabelNamespaceNodeRestriction`: never a kubelet's to set.
const NODE_RESTRICTION_NAMESPACE: &str = "node-restriction.kubernetes.io";

const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// One write of a kubelet, before it is validated and stored. `old` is the stored object
/// (update, delete), `new` the proposed one (create, update).
pub(crate) fn admit(
    who: &Identity,
    r: &RequestAttributes,
    op: Operation,
    old: Option<&Value>,
    new: Option<&Value>,
) -> Result<(), ApiError> {
    let Some(node) = who.node_name() else {
        return Ok(());
    };
    // `extractResourceName`: the URL's name, else the object's (or its generateName).
    let object_name = || {
        let meta = new.and_then(|o| o.get("metadata"));
        let field = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or("");
        match (field("name"), field("generateName")) {
            ("", "") => "Unknown".to_string(),
            ("", generate) => generate.to_string(),
            (name, _) => name.to_string(),
        }
    };
    let name = r
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(object_name);
    let refuse = |why: String| Err(r.forbidden_because(Some(&name), why));
    if node.is_empty() {
        return refuse(format!("could not determine node from user {:?}", who.user));
    }
    // The name the request addresses (`a.GetName()`: on create, the object's).
    let requested = match op {
        Operation::Create => text(new, "/metadata/name"),
        _ => r.name.as_deref().unwrap_or(""),
    };
    match (r.group.as_str(), r.resource.as_str(), r.subresource.as_deref()) {
        ("", "nodes", _) => admit_node(node, requested, op, old, new).or_else(refuse),
        ("coordination.k8s.io", "leases", _) => {
            if r.namespace.as_deref() != Some(NODE_LEASE_NAMESPACE) {
                return refuse(format!(
                    "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
                ));
            }
            if requested != node {
                return refuse("can only access node lease with the same name as the requesting node".into());
            }
            Ok(())
        }
        ("", "pods", None) => admit_pod(node, op, old, new).or_else(refuse),
        ("", "pods", Some("status")) => admit_pod_status(node, op, old, new).or_else(refuse),
        _ => Ok(()),
    }
}

fn text<'a>(object: Option<&'a Value>, pointer: &str) -> &'a str {
    object
        .and_then(|o| o.pointer(pointer))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `admitNode`.
fn admit_node(
    node: &str,
    requested: &str,
    op: Operation,
    old: Option<&Value>,
    new: Option<&Value>,
) -> Result<(), String> {
    if requested != node {
        return Err(format!(
            "node {node:?} is not allowed to modify node {requested:?}"
        ));
    }
    let field = |o: Option<&Value>, pointer: &str| o.and_then(|o| o.pointer(pointer)).cloned();
    match op {
        Operation::Create => {
            if field(new, "/spec/configSource").is_some_and(|c| !c.is_null()) {
                return Err(format!(
                    "node {node:?} is not allowed to create pods with a non-nil configSource"
                ));
            }
            let modified = modified_labels(new, None);
            let forbidden = forbidden_labels(&modified);
            if !forbidden.is_empty() {
                return Err(format!(
                    "node {node:?} is not allowed to set the following labels: {}",
                    forbidden.join(", ")
                ));
            }
        }
        Operation::Update => {
            let config = field(new, "/spec/configSource").filter(|c| !c.is_null());
            if config.is_some() && config != field(old, "/spec/configSource") {
                return Err(format!(
                    "node {node:?} is not allowed to update configSource to a new non-nil configSource"
                ));
            }
            if empty_as_none(field(new, "/spec/taints")) != empty_as_none(field(old, "/spec/taints")) {
                return Err(format!("node {node:?} is not allowed to modify taints"));
            }
            if empty_as_none(field(new, "/metadata/ownerReferences"))
                != empty_as_none(field(old, "/metadata/ownerReferences"))
            {
                return Err(format!("node {node:?} is not allowed to modify ownerReferences"));
            }
            let modified = modified_labels(new, old);
            let forbidden = forbidden_labels(&modified);
            if !forbidden.is_empty() {
                // Upstream's wording names no node here.
                return Err(format!(
                    "is not allowed to modify labels: {}",
                    forbidden.join(", ")
                ));
            }
        }
        Operation::Delete => {}
    }
    Ok(())
}

/// `apiequality.Semantic.DeepEqual` treats a missing list and an empty one alike.
fn empty_as_none(v: Option<Value>) -> Option<Value> {
    v.filter(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
}

fn labels(object: Option<&Value>) -> Map<String, Value> {
    object
        .and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `getModifiedLabels`: keys added, removed or changed, sorted.
fn modified_labels(new: Option<&Value>, old: Option<&Value>) -> BTreeSet<String> {
    let (a, b) = (labels(new), labels(old));
    a.iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .chain(b.iter().filter(|(k, v)| a.get(*k) != Some(v)))
        .map(|(k, _)| k.clone())
        .collect()
}

fn label_namespace(key: &str) -> &str {
    key.split_once('/').map_or("", |(ns, _)| ns)
}

fn in_namespace(namespace: &str, domain: &str) -> bool {
    namespace == domain || namespace.strip_suffix(domain).is_some_and(|s| s.ends_with('.'))
}

/// `getForbiddenLabels`: node-restriction labels, and kubernetes.io or k8s.io labels that are
/// not the kubelet's own.
fn forbidden_labels(modified: &BTreeSet<String>) -> Vec<&str> {
    modified
        .iter()
        .map(String::as_str)
        .filter(|key| {
            let ns = label_namespace(key);
            let restricted = in_namespace(ns, NODE_RESTRICTION_NAMESPACE);
            let kubernetes = in_namespace(ns, "kubernetes.io") || in_namespace(ns, "k8s.io");
            let kubelets =
                KUBELET_LABELS.contains(key) || KUBELET_LABEL_NAMESPACES.iter().any(|d| in_namespace(ns, d));
            restricted || (kubernetes && !kubelets)
        })
        .collect()
}

/// `admitPod` (without the owner-reference and API-reference checks of a mirror pod).
fn admit_pod(node: &str, op: Operation, old: Option<&Value>, new: Option<&Value>) -> Result<(), String> {
    match op {
        Operation::Create => {
            let mirror = new
                .and_then(|p| p.pointer("/metadata/annotations"))
                .and_then(|a| a.get(MIRROR_POD_ANNOTATION))
                .is_some();
            if !mirror {
                return Err(format!(
                    "pod does not have {MIRROR_POD_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"
                ));
            }
            if text(new, "/spec/nodeName") != node {
                return Err(format!(
                    "node {node:?} can only create pods with spec.nodeName set to itself"
                ));
            }
            Ok(())
        }
        Operation::Delete if text(old, "/spec/nodeName") != node => Err(format!(
            "node {node:?} can only delete pods with spec.nodeName set to itself"
        )),
        Operation::Delete => Ok(()),
        Operation::Update => Err(format!(
            "unexpected operation {:?}, node {node:?} can only create and delete mirror pods",
            op.as_str()
        )),
    }
}

/// `admitPodStatus` (resource claim statuses are not served).
fn admit_pod_status(
    node: &str,
    op: Operation,
    old: Option<&Value>,
    new: Option<&Value>,
) -> Result<(), String> {
    if op != Operation::Update {
        return Err(format!("unexpected operation {:?}", op.as_str()));
    }
    if text(old, "/spec/nodeName") != node {
        return Err(format!(
            "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
        ));
    }
    if labels(old) != labels(new) {
        return Err(format!("node {node:?} cannot update labels through pod status"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_labels_a_kubelet_may_not_touch() {
        let keys: BTreeSet<String> = [
            "kubernetes.io/hostname",
            "node.kubernetes.io/pool",
            "a.kubelet.kubernetes.io/x",
            "example.com/x",
            "plain",
            "node-role.kubernetes.io/worker",
            "node-restriction.kubernetes.io/x",
            "a.node-restriction.kubernetes.io/x",
            "k8s.io/x",
            "sub.k8s.io/x",
            "notkubernetes.io/x",
        ]
        .into_iter()
        .map(str::to_string)
        .collect();
        assert_eq!(
            forbidden_labels(&keys),
            [
                "a.node-restriction.kubernetes.io/x",
                "k8s.io/x",
                "node-restriction.kubernetes.io/x",
                "node-role.kubernetes.io/worker",
                "sub.k8s.io/x",
            ]
        );
    }

    #[test]
    fn only_a_kubelet_is_restricted() {
        let r = RequestAttributes {
            verb: "delete".into(),
            resource: "pods".into(),
            namespace: Some("ns".into()),
            name: Some("p".into()),
            ..RequestAttributes::default()
        };
        let pod = serde_json::json!({"spec": {"nodeName": "n2"}});
        let admin = Identity::new("someone", &["system:nodes"]);
        admit(&admin, &r, Operation::Delete, Some(&pod), None).unwrap();
        let kubelet = Identity::new("system:node:n1", &["system:nodes"]);
        let e = admit(&kubelet, &r, Operation::Delete, Some(&pod), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pods \"p\" is forbidden: node \"n1\" can only delete pods with spec.nodeName set to itself"
        );
    }
}
