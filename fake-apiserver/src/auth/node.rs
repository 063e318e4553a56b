//! The Node authorizer of kube-apiserver 1.36 (`plugin/pkg/auth/authorizer/node/
//! node_authorizer.go`, AuthorizeNodeWithSelectors on: GA and locked since 1.34): what a kubelet
//! identity may do, decided from the request and from the pods bound to the node.
//!
//! Upstream keeps a graph fed by informers (`graph_populator.go`); here the same edges are read
//! off the store's pods when asked: a pod with `spec.nodeName` links its node to itself, and,
//! unless it is a mirror pod, to its service account and to every Secret and ConfigMap it names
//! (`podutil.VisitPodSecretNames`, `VisitPodConfigmapNames`). Owns no state and writes nothing.

use super::{Decision, Identity, RequestAttributes};
use crate::store::{Filter, Store};
use serde_json::Value;

/// The kubelet's mirror-pod annotation (`corev1.MirrorPodAnnotationKey`).
pub(super) const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// `api.NamespaceNodeLease`.
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The node rules (`bootstrappolicy.NodeRules()`) for what the subdivided checks below leave:
/// (verbs, API groups, resources or `resource/subresource`).
const NODE_RULES: &[(&[&str], &[&str], &[&str])] = &[
    (&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
    (
        &["create"],
        &["authorization.k8s.io"],
        &["subjectaccessreviews", "localsubjectaccessreviews"],
    ),
    (&["get", "list", "watch"], &[""], &["services"]),
    (
        &["create", "update", "patch"],
        &["", "events.k8s.io"],
        &["events"],
    ),
    (&["get"], &[""], &["endpoints"]),
    (
        &["create", "get", "list", "watch"],
        &["certificates.k8s.io"],
        &["certificatesigningrequests"],
    ),
    (
        &["get", "update", "patch"],
        &[""],
        &["persistentvolumeclaims/status"],
    ),
    (&["get", "watch", "list"], &["storage.k8s.io"], &["csidrivers"]),
    (&["get", "list", "watch"], &["node.k8s.io"], &["runtimeclasses"]),
    (&["create"], &[""], &["serviceaccounts/token"]),
];

/// What a reference from a pod points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Vertex {
    Secret,
    ConfigMap,
    ServiceAccount,
    Pod,
}

fn no_opinion(reason: impl Into<String>) -> Decision {
    Decision::NoOpinion(reason.into())
}

/// The Node authorizer's verdict on a request of the kubelet of `node`.
pub(super) fn authorize(
    who: &Identity,
    node: &str,
    r: &RequestAttributes,
    store: &Store,
    selectors: bool,
) -> Decision {
    if node.is_empty() {
        return no_opinion(format!("unknown node for user {:?}", who.user));
    }
    // Without AuthorizeNodeWithSelectors, the node rules let a kubelet read every Node and Pod
    // (`bootstrappolicy.NodeRules` before 1.32).
    if !selectors
        && r.path.is_none()
        && r.group.is_empty()
        && matches!(r.resource.as_str(), "nodes" | "pods")
        && r.subresource.is_none()
        && matches!(r.verb.as_str(), "get" | "list" | "watch")
    {
        return Decision::Allow;
    }
    if r.path.is_none() {
        match (r.group.as_str(), r.resource.as_str()) {
            ("", "secrets") => return read_namespaced(node, Vertex::Secret, r, store),
            ("", "configmaps") => return read_namespaced(node, Vertex::ConfigMap, r, store),
            ("", "serviceaccounts") => return service_account(node, r, store),
            ("coordination.k8s.io", "leases") => return lease(node, r),
            ("", "nodes") => return node_object(node, r),
            ("", "pods") => return pod(node, r, store),
            _ => {}
        }
    }
    if rules_allow(r) {
        Decision::Allow
    } else {
        no_opinion("")
    }
}

/// `rbac.RulesAllow` over `NODE_RULES`.
fn rules_allow(r: &RequestAttributes) -> bool {
    if r.path.is_some() {
        return false;
    }
    let resource = match &r.subresource {
        Some(sub) => format!("{}/{sub}", r.resource),
        None => r.resource.clone(),
    };
    NODE_RULES.iter().any(|(verbs, groups, resources)| {
        verbs.contains(&r.verb.as_str())
            && groups.contains(&r.group.as_str())
            && resources.contains(&resource.as_str())
    })
}

/// `authorizeReadNamespacedObject`: get, list and watch of single related objects.
fn read_namespaced(node: &str, vertex: Vertex, r: &RequestAttributes, store: &Store) -> Decision {
    if !matches!(r.verb.as_str(), "get" | "list" | "watch") {
        return no_opinion("can only read resources of this type");
    }
    if r.subresource.is_some() {
        return no_opinion("cannot read subresource");
    }
    if r.namespace.is_none() {
        return no_opinion("can only read namespaced object of this type");
    }
    related(node, vertex, r, store)
}

/// `authorizeGet`: get only.
fn get_only(node: &str, vertex: Vertex, r: &RequestAttributes, store: &Store) -> Decision {
    if r.verb != "get" {
        return no_opinion("can only get individual resources of this type");
    }
    if r.subresource.is_some() {
        return no_opinion("cannot get subresource");
    }
    related(node, vertex, r, store)
}

/// `authorize`: a named object with a path to the node.
fn related(node: &str, vertex: Vertex, r: &RequestAttributes, store: &Store) -> Decision {
    let Some(name) = r.name.as_deref().filter(|n| !n.is_empty()) else {
        return no_opinion("No Object name found");
    };
    let ns = r.namespace.as_deref().unwrap_or("");
    if has_path(node, vertex, ns, name, &bound_pods(store, node, ns)) {
        Decision::Allow
    } else {
        no_opinion(format!(
            "no relationship found between node '{node}' and this object"
        ))
    }
}

/// The pods in `ns` bound to `node`.
fn bound_pods(store: &Store, node: &str, ns: &str) -> Vec<Value> {
    let Some(info) = store.resolve("", "v1", "pods") else {
        return Vec::new();
    };
    let filter = Filter {
        namespace: Some(ns.to_string()),
        ..Filter::default()
    };
    store
        .list(&info, &filter, None, None)
        .map(|page| {
            page.items
                .iter()
                .filter(|p| p.value.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node))
                .map(|p| p.value.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether one of `pods` (all bound to the node, all in the object's namespace) links the
/// object `name` of kind `vertex` to the node.
fn has_path(node: &str, vertex: Vertex, ns: &str, name: &str, pods: &[Value]) -> bool {
    pods.iter().any(|pod| {
        let text = |p: &str| pod.pointer(p).and_then(Value::as_str).unwrap_or("");
        if text("/spec/nodeName") != node || text("/metadata/namespace") != ns {
            return false;
        }
        if vertex == Vertex::Pod {
            return text("/metadata/name") == name;
        }
        // A mirror pod grants nothing beyond itself (graph.go `AddPod`).
        if pod
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(MIRROR_POD_ANNOTATION))
            .is_some()
        {
            return false;
        }
        match vertex {
            Vertex::ServiceAccount => text("/spec/serviceAccountName") == name,
            Vertex::Secret => secret_names(pod).contains(&name),
            Vertex::ConfigMap => configmap_names(pod).contains(&name),
            Vertex::Pod => false,
        }
    })
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn items<'a>(v: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(pointer).and_then(Value::as_array).into_iter().flatten()
}

/// Init, regular and ephemeral containers (`podutil.ContainerIter`).
fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    [
        "/spec/initContainers",
        "/spec/containers",
        "/spec/ephemeralContainers",
    ]
    .into_iter()
    .flat_map(move |p| items(pod, p))
}

/// Secrets in `envFrom[].<from>` and `env[].valueFrom.<key_ref>` of every container.
fn container_refs<'a>(pod: &'a Value, from: &'a str, key_ref: &'a str) -> impl Iterator<Item = &'a str> {
    containers(pod).flat_map(move |c| {
        let env_from = items(c, "/envFrom").filter_map(move |e| str_at(e, &format!("/{from}/name")));
        let env = items(c, "/env").filter_map(move |e| str_at(e, &format!("/valueFrom/{key_ref}/name")));
        env_from.chain(env)
    })
}

/// `podutil.VisitPodSecretNames`: pull secrets, containers' env, and the volume sources that
/// name a secret.
pub(super) fn secret_names(pod: &Value) -> Vec<&str> {
    let mut out: Vec<&str> = items(pod, "/spec/imagePullSecrets")
        .filter_map(|s| str_at(s, "/name"))
        .collect();
    out.extend(container_refs(pod, "secretRef", "secretKeyRef"));
    for v in items(pod, "/spec/volumes") {
        if let Some(sources) = v.pointer("/projected/sources").and_then(Value::as_array) {
            out.extend(sources.iter().filter_map(|s| str_at(s, "/secret/name")));
        }
        for pointer in [
            "/azureFile/secretName",
            "/cephfs/secretRef/name",
            "/cinder/secretRef/name",
            "/flexVolume/secretRef/name",
            "/rbd/secretRef/name",
            "/secret/secretName",
            "/scaleIO/secretRef/name",
            "/iscsi/secretRef/name",
            "/storageos/secretRef/name",
            "/csi/nodePublishSecretRef/name",
        ] {
            out.extend(str_at(v, pointer));
        }
    }
    out
}

/// `podutil.VisitPodConfigmapNames`: containers' env, configMap and projected volumes.
pub(super) fn configmap_names(pod: &Value) -> Vec<&str> {
    let mut out: Vec<&str> = container_refs(pod, "configMapRef", "configMapKeyRef").collect();
    for v in items(pod, "/spec/volumes") {
        if let Some(sources) = v.pointer("/projected/sources").and_then(Value::as_array) {
            out.extend(sources.iter().filter_map(|s| str_at(s, "/configMap/name")));
        }
        out.extend(str_at(v, "/configMap/name"));
    }
    out
}

/// `authorizeServiceAccount`: get of a related one (KubeletServiceAccountTokenForCredentialProviders,
/// beta and on since 1.34), or a token for one.
fn service_account(node: &str, r: &RequestAttributes, store: &Store) -> Decision {
    if r.verb == "get" && r.subresource.is_none() {
        return read_namespaced(node, Vertex::ServiceAccount, r, store);
    }
    if r.verb != "create" || r.name.is_none() {
        return no_opinion("can only create tokens for individual service accounts");
    }
    if r.subresource.as_deref() != Some("token") {
        return no_opinion("can only create token subresource of serviceaccount");
    }
    related(node, Vertex::ServiceAccount, r, store)
}

/// `authorizeLease`: its own lease in `kube-node-lease` (a create's name is NodeRestriction's).
fn lease(node: &str, r: &RequestAttributes) -> Decision {
    if !matches!(r.verb.as_str(), "get" | "create" | "update" | "patch" | "delete") {
        return no_opinion("can only get, create, update, patch, or delete a node lease");
    }
    if r.namespace.as_deref() != Some(NODE_LEASE_NAMESPACE) {
        return no_opinion(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    if r.verb != "create" && r.name.as_deref() != Some(node) {
        return no_opinion("can only access node lease with the same name as the requesting node");
    }
    Decision::Allow
}

/// `authorizeNode`: reads of its own Node only; writes are NodeRestriction's to limit.
fn node_object(node: &str, r: &RequestAttributes) -> Decision {
    match (r.subresource.as_deref(), r.verb.as_str()) {
        (None, "create" | "update" | "patch") | (Some("status"), "update" | "patch") => Decision::Allow,
        (None, "get" | "list" | "watch") => match r.name.as_deref().unwrap_or("") {
            name if name == node => Decision::Allow,
            "" => no_opinion(format!(
                "node '{node}' cannot read all nodes, only its own Node object"
            )),
            other => no_opinion(format!(
                "node '{node}' cannot read '{other}', only its own Node object"
            )),
        },
        _ => no_opinion(""),
    }
}

/// `authorizePod`: its pods, lists scoped to it by `spec.nodeName`, mirror pods and status.
fn pod(node: &str, r: &RequestAttributes, store: &Store) -> Decision {
    match (r.subresource.as_deref(), r.verb.as_str()) {
        (None, "get") => get_only(node, Vertex::Pod, r, store),
        (None, "list" | "watch") => {
            if r.field_value("spec.nodeName") == Some(node) {
                Decision::Allow
            } else if r.name.is_some() {
                related(node, Vertex::Pod, r, store)
            } else {
                no_opinion("can only list/watch pods with spec.nodeName field selector")
            }
        }
        (None, "create" | "delete") | (Some("status"), "update" | "patch") | (Some("eviction"), "create") => {
            Decision::Allow
        }
        _ => no_opinion(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs(
        verb: &str,
        group: &str,
        resource: &str,
        ns: Option<&str>,
        name: Option<&str>,
    ) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespace: ns.map(str::to_string),
            name: name.map(str::to_string),
            ..RequestAttributes::default()
        }
    }

    #[test]
    fn references_are_read_as_the_upstream_visitors_read_them() {
        let pod = json!({"spec": {
            "imagePullSecrets": [{"name": "pull"}, {"name": ""}],
            "initContainers": [{"envFrom": [{"secretRef": {"name": "init"}}]}],
            "containers": [{"env": [{"valueFrom": {"secretKeyRef": {"name": "env"}}},
                                    {"valueFrom": {"configMapKeyRef": {"name": "cm-env"}}}],
                            "envFrom": [{"configMapRef": {"name": "cm-from"}}]}],
            "ephemeralContainers": [{"envFrom": [{"secretRef": {"name": "eph"}}]}],
            "volumes": [{"secret": {"secretName": "vol"}}, {"csi": {"nodePublishSecretRef": {"name": "csi"}}},
                        {"projected": {"sources": [{"secret": {"name": "proj"}}, {"configMap": {"name": "cm-proj"}}]}},
                        {"configMap": {"name": "cm-vol"}}]}});
        assert_eq!(
            secret_names(&pod),
            ["pull", "init", "env", "eph", "vol", "csi", "proj"]
        );
        assert_eq!(configmap_names(&pod), ["cm-from", "cm-env", "cm-proj", "cm-vol"]);
    }

    #[test]
    fn node_and_lease_rules() {
        let cases = [
            (attrs("get", "", "nodes", None, Some("n1")), Decision::Allow),
            (
                attrs("get", "", "nodes", None, Some("n2")),
                no_opinion("node 'n1' cannot read 'n2', only its own Node object"),
            ),
            (attrs("delete", "", "nodes", None, Some("n1")), no_opinion("")),
            (attrs("patch", "", "nodes", None, Some("n2")), Decision::Allow),
            (
                attrs(
                    "create",
                    "coordination.k8s.io",
                    "leases",
                    Some("kube-node-lease"),
                    None,
                ),
                Decision::Allow,
            ),
            (
                attrs(
                    "update",
                    "coordination.k8s.io",
                    "leases",
                    Some("kube-node-lease"),
                    Some("n2"),
                ),
                no_opinion("can only access node lease with the same name as the requesting node"),
            ),
            (
                attrs("create", "events.k8s.io", "events", Some("x"), None),
                Decision::Allow,
            ),
            (
                attrs("deletecollection", "", "events", Some("x"), None),
                no_opinion(""),
            ),
            (attrs("list", "", "namespaces", None, None), no_opinion("")),
        ];
        let store = Store::new(Default::default());
        let who = Identity::new("system:node:n1", &["system:nodes"]);
        for (a, want) in cases {
            assert_eq!(authorize(&who, "n1", &a, &store, true), want, "{a:?}");
        }
        let nameless = Identity::new("system:node:", &["system:nodes"]);
        assert_eq!(
            authorize(
                &nameless,
                "",
                &attrs("get", "", "nodes", None, None),
                &store,
                true
            ),
            no_opinion("unknown node for user \"system:node:\"")
        );
    }
}
