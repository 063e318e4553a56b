//! What a kubelet's identity (`system:node:<name>` in `system:nodes`) may do, as kube-apiserver
//! 1.36 decides it with `--authorization-mode=Node,RBAC` and the NodeRestriction admission
//! plugin: the Node authorizer (`plugin/pkg/auth/authorizer/node/node_authorizer.go`, with
//! AuthorizeNodeWithSelectors, GA since 1.34) and `plugin/pkg/admission/noderestriction`.
//!
//! Every test honours `APISERVER_KUBECONFIG`: there the node is the admin impersonating it.

mod pod_graph;

use crate::common::{Reply, TestCluster, cluster, send};
use serde_json::{Value, json};

/// A kubelet's client for node `name`.
async fn kubelet(c: &TestCluster, name: &str) -> kube::Client {
    c.client_as(&format!("system:node:{name}"), &["system:nodes"])
        .await
}

fn body(v: Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

#[track_caller]
fn assert_ok(r: &Reply, what: &str) {
    assert!(r.code < 300, "{what}: {} {}", r.code, r.body);
}

#[track_caller]
fn assert_forbidden(r: &Reply, message: &str) {
    assert_eq!(
        (r.code, r.body["reason"].as_str(), r.body["message"].as_str()),
        (403, Some("Forbidden"), Some(message)),
        "{}",
        r.body
    );
}

/// Nodes `names` (by the admin), each with a unique name derived from the test's namespace.
async fn nodes(c: &TestCluster, names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for n in names {
        let name = format!("{}-{n}", c.ns);
        let r = send(
            &c.client,
            "POST",
            "/api/v1/nodes",
            Some("application/json"),
            body(json!({"metadata": {"name": name}})),
        )
        .await;
        assert_ok(&r, "creating a node");
        out.push(name);
    }
    out
}

async fn delete_nodes(c: &TestCluster, names: &[String]) {
    for n in names {
        send(&c.client, "DELETE", &format!("/api/v1/nodes/{n}"), None, vec![]).await;
    }
}

#[tokio::test]
async fn a_node_reads_only_its_own_node_object() {
    let c = cluster().await;
    let names = nodes(&c, &["n1", "n2"]).await;
    let (n1, n2) = (&names[0], &names[1]);
    let node = kubelet(&c, n1).await;
    let user = format!("system:node:{n1}");
    assert_ok(
        &send(&node, "GET", &format!("/api/v1/nodes/{n1}"), None, vec![]).await,
        "own node",
    );
    let r = send(&node, "GET", &format!("/api/v1/nodes/{n2}"), None, vec![]).await;
    assert_forbidden(
        &r,
        &format!(
            "nodes {n2:?} is forbidden: User {user:?} cannot get resource \"nodes\" in API group \"\" at the cluster scope: node '{n1}' cannot read '{n2}', only its own Node object"
        ),
    );
    assert_eq!(r.body["details"], json!({"name": n2, "kind": "nodes"}));
    let r = send(&node, "GET", "/api/v1/nodes", None, vec![]).await;
    assert_forbidden(
        &r,
        &format!(
            "nodes is forbidden: User {user:?} cannot list resource \"nodes\" in API group \"\" at the cluster scope: node '{n1}' cannot read all nodes, only its own Node object"
        ),
    );
    assert_eq!(r.body["details"], json!({"kind": "nodes"}));
    let r = send(
        &node,
        "GET",
        &format!("/api/v1/nodes?fieldSelector=metadata.name%3D{n1}"),
        None,
        vec![],
    )
    .await;
    assert_ok(&r, "list of its own node");
    assert_eq!(r.body["items"][0]["metadata"]["name"], json!(n1));
    let r = send(
        &node,
        "GET",
        &format!("/api/v1/nodes?fieldSelector=metadata.name%3D{n2}&watch=true"),
        None,
        vec![],
    )
    .await;
    assert_forbidden(
        &r,
        &format!(
            "nodes {n2:?} is forbidden: User {user:?} cannot watch resource \"nodes\" in API group \"\" at the cluster scope: node '{n1}' cannot read '{n2}', only its own Node object"
        ),
    );
    delete_nodes(&c, &names).await;
    c.cleanup().await;
}

#[tokio::test]
async fn a_node_writes_only_its_own_node_and_not_its_restricted_labels() {
    let c = cluster().await;
    let names = nodes(&c, &["n1", "n2"]).await;
    let (n1, n2) = (&names[0], &names[1]);
    let node = kubelet(&c, n1).await;
    let user = format!("system:node:{n1}");
    let merge = Some("application/merge-patch+json");
    // What the harness's kubelet does: its own status.
    let r = send(
        &node,
        "PATCH",
        &format!("/api/v1/nodes/{n1}/status"),
        merge,
        body(json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})),
    )
    .await;
    assert_ok(&r, "own status");
    let labels = |l: Value| body(json!({"metadata": {"labels": l}}));
    let r = send(
        &node,
        "PATCH",
        &format!("/api/v1/nodes/{n1}"),
        merge,
        labels(json!({"kubernetes.io/hostname": "h", "node.kubernetes.io/pool": "p", "example.com/x": "y"})),
    )
    .await;
    assert_ok(&r, "labels a kubelet may set");
    for label in [
        "node-role.kubernetes.io/worker",
        "node-restriction.kubernetes.io/secure",
        "a.node-restriction.kubernetes.io/x",
        "other.kubernetes.io/x",
        "k8s.io/x",
    ] {
        let r = send(
            &node,
            "PATCH",
            &format!("/api/v1/nodes/{n1}"),
            merge,
            labels(json!({ label: "" })),
        )
        .await;
        assert_forbidden(
            &r,
            &format!("nodes {n1:?} is forbidden: is not allowed to modify labels: {label}"),
        );
    }
    let r = send(
        &node,
        "PATCH",
        &format!("/api/v1/nodes/{n1}"),
        merge,
        body(json!({"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})),
    )
    .await;
    assert_forbidden(
        &r,
        &format!("nodes {n1:?} is forbidden: node {n1:?} is not allowed to modify taints"),
    );
    for (method, path, content_type, b) in [
        (
            "PATCH",
            format!("/api/v1/nodes/{n2}"),
            merge,
            labels(json!({"a": "b"})),
        ),
        (
            "PATCH",
            format!("/api/v1/nodes/{n2}/status"),
            merge,
            body(json!({"status": {}})),
        ),
    ] {
        let r = send(&node, method, &path, content_type, b).await;
        assert_forbidden(
            &r,
            &format!("nodes {n2:?} is forbidden: node {n1:?} is not allowed to modify node {n2:?}"),
        );
    }
    // Deleting any Node, its own included, is for nobody in system:nodes.
    let r = send(&node, "DELETE", &format!("/api/v1/nodes/{n1}"), None, vec![]).await;
    assert_forbidden(
        &r,
        &format!(
            "nodes {n1:?} is forbidden: User {user:?} cannot delete resource \"nodes\" in API group \"\" at the cluster scope"
        ),
    );
    // Creating: only itself, and not with restricted labels.
    let n3 = format!("{}-n3", c.ns);
    let r = send(
        &node,
        "POST",
        "/api/v1/nodes",
        Some("application/json"),
        body(json!({"metadata": {"name": n3}})),
    )
    .await;
    assert_forbidden(
        &r,
        &format!("nodes {n3:?} is forbidden: node {n1:?} is not allowed to modify node {n3:?}"),
    );
    let newcomer = kubelet(&c, &n3).await;
    let r = send(
        &newcomer,
        "POST",
        "/api/v1/nodes",
        Some("application/json"),
        body(json!({"metadata": {"name": n3, "labels": {"node-restriction.kubernetes.io/a": "", "kubernetes.io/os": "linux"}}})),
    )
    .await;
    assert_forbidden(
        &r,
        &format!(
            "nodes {n3:?} is forbidden: node {n3:?} is not allowed to set the following labels: node-restriction.kubernetes.io/a"
        ),
    );
    let r = send(
        &newcomer,
        "POST",
        "/api/v1/nodes",
        Some("application/json"),
        body(json!({"metadata": {"name": n3, "labels": {"kubernetes.io/os": "linux"}}})),
    )
    .await;
    assert_ok(&r, "a kubelet registers its own node");
    let mut all = names.clone();
    all.push(n3);
    delete_nodes(&c, &all).await;
    c.cleanup().await;
}

#[tokio::test]
async fn a_node_manages_only_its_own_lease() {
    let c = cluster().await;
    let names = nodes(&c, &["n1", "n2"]).await;
    let (n1, n2) = (&names[0], &names[1]);
    let leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
    let lease = |name: &str| body(json!({"metadata": {"name": name}, "spec": {"holderIdentity": name}}));
    assert_ok(
        &send(&c.client, "POST", leases, Some("application/json"), lease(n2)).await,
        "n2's lease",
    );
    let node = kubelet(&c, n1).await;
    let user = format!("system:node:{n1}");
    assert_ok(
        &send(&node, "POST", leases, Some("application/json"), lease(n1)).await,
        "own lease",
    );
    let merge = Some("application/merge-patch+json");
    let renew = body(json!({"spec": {"renewTime": "2026-01-01T00:00:00.000000Z"}}));
    assert_ok(
        &send(&node, "PATCH", &format!("{leases}/{n1}"), merge, renew.clone()).await,
        "renewing its own lease",
    );
    let r = send(&node, "POST", leases, Some("application/json"), lease(n2)).await;
    assert_forbidden(
        &r,
        &format!(
            "leases.coordination.k8s.io {n2:?} is forbidden: can only access node lease with the same name as the requesting node"
        ),
    );
    assert_eq!(
        r.body["details"],
        json!({"name": n2, "group": "coordination.k8s.io", "kind": "leases"})
    );
    for (method, verb, b) in [
        ("PATCH", "patch", renew.clone()),
        ("DELETE", "delete", vec![]),
        ("GET", "get", vec![]),
    ] {
        let ct = (method == "PATCH").then_some("application/merge-patch+json");
        let r = send(&node, method, &format!("{leases}/{n2}"), ct, b).await;
        assert_forbidden(
            &r,
            &format!(
                "leases.coordination.k8s.io {n2:?} is forbidden: User {user:?} cannot {verb} resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-node-lease\": can only access node lease with the same name as the requesting node"
            ),
        );
    }
    let r = send(
        &node,
        "POST",
        &format!("/apis/coordination.k8s.io/v1/namespaces/{}/leases", c.ns),
        Some("application/json"),
        lease(n1),
    )
    .await;
    assert_forbidden(
        &r,
        &format!(
            "leases.coordination.k8s.io is forbidden: User {user:?} cannot create resource \"leases\" in API group \"coordination.k8s.io\" in the namespace {:?}: can only access leases in the \"kube-node-lease\" system namespace",
            c.ns
        ),
    );
    let r = send(&node, "GET", leases, None, vec![]).await;
    assert_forbidden(
        &r,
        &format!(
            "leases.coordination.k8s.io is forbidden: User {user:?} cannot list resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-node-lease\": can only get, create, update, patch, or delete a node lease"
        ),
    );
    for n in [n1, n2] {
        send(&c.client, "DELETE", &format!("{leases}/{n}"), None, vec![]).await;
    }
    delete_nodes(&c, &names).await;
    c.cleanup().await;
}

#[tokio::test]
async fn a_node_writes_events_but_never_deletes_them() {
    let c = cluster().await;
    let ns = c.ns.clone();
    let names = nodes(&c, &["n1"]).await;
    let n1 = &names[0];
    let node = kubelet(&c, n1).await;
    let user = format!("system:node:{n1}");
    let event = json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "namespace": ns, "name": "p"},
        "reason": "Starting", "message": "m", "type": "Normal"});
    assert_ok(
        &send(
            &node,
            "POST",
            &format!("/api/v1/namespaces/{ns}/events"),
            Some("application/json"),
            body(event),
        )
        .await,
        "an event",
    );
    for (path, group) in [
        (format!("/api/v1/namespaces/{ns}/events"), ""),
        (
            format!("/apis/events.k8s.io/v1/namespaces/{ns}/events"),
            "events.k8s.io",
        ),
    ] {
        let r = send(&node, "DELETE", &path, None, vec![]).await;
        let resource = if group.is_empty() {
            "events".to_string()
        } else {
            format!("events.{group}")
        };
        assert_forbidden(
            &r,
            &format!(
                "{resource} is forbidden: User {user:?} cannot deletecollection resource \"events\" in API group {group:?} in the namespace {ns:?}"
            ),
        );
    }
    let r = send(
        &node,
        "DELETE",
        &format!("/api/v1/namespaces/{ns}/events/e1"),
        None,
        vec![],
    )
    .await;
    assert_forbidden(
        &r,
        &format!(
            "events \"e1\" is forbidden: User {user:?} cannot delete resource \"events\" in API group \"\" in the namespace {ns:?}"
        ),
    );
    // Nothing outside the node rules: not namespaces, not custom resources.
    let r = send(&node, "GET", "/api/v1/namespaces", None, vec![]).await;
    assert_forbidden(
        &r,
        &format!(
            "namespaces is forbidden: User {user:?} cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
        ),
    );
    delete_nodes(&c, &names).await;
    c.cleanup().await;
}

/// Before AuthorizeNodeWithSelectors (Kubernetes 1.31 and older: OpenShift 4.12's 1.25, 4.16's
/// 1.29) the node rules let a kubelet read every Node and Pod; the builder's
/// `node_authorizer_selectors(false)` serves that, and NodeRestriction still limits writes.
#[tokio::test]
async fn without_selectors_a_kubelet_reads_every_node_and_pod() {
    if crate::common::skip_external("older Node authorizer", "a builder option of the fake") {
        return;
    }
    crate::common::init_crypto();
    let server = fake_apiserver::FakeApiServer::builder()
        .node_authorizer_selectors(false)
        .start()
        .await
        .expect("fake API server starts");
    let admin = server.admin_client().await.expect("admin client");
    for name in ["n1", "n2"] {
        let r = send(
            &admin,
            "POST",
            "/api/v1/nodes",
            Some("application/json"),
            body(json!({"metadata": {"name": name}})),
        )
        .await;
        assert_ok(&r, "creating a node");
    }
    let kubelet = server
        .client(
            &server
                .identity("system:node:n1", &["system:nodes"])
                .expect("identity"),
        )
        .await
        .expect("client");
    assert_ok(
        &send(&kubelet, "GET", "/api/v1/nodes", None, vec![]).await,
        "list every node",
    );
    assert_ok(
        &send(&kubelet, "GET", "/api/v1/nodes/n2", None, vec![]).await,
        "another node",
    );
    assert_ok(
        &send(&kubelet, "GET", "/api/v1/pods", None, vec![]).await,
        "list every pod",
    );
    let r = send(
        &kubelet,
        "PATCH",
        "/api/v1/nodes/n2",
        Some("application/merge-patch+json"),
        body(json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await;
    assert_eq!(r.code, 403, "writes stay NodeRestriction's: {}", r.body);
}
