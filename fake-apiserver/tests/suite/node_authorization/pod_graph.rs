//! The Node authorizer's graph: a node reads the Secrets and ConfigMaps of pods bound to it,
//! and only while they are bound (`plugin/pkg/auth/authorizer/node/graph.go`).

use super::*;

#[tokio::test]
async fn a_node_reads_only_the_secrets_and_configmaps_of_pods_bound_to_it() {
    let c = cluster().await;
    let ns = c.ns.clone();
    let names = nodes(&c, &["n1", "n2"]).await;
    let (n1, n2) = (&names[0], &names[1]);
    let admin = &c.client;
    for s in [
        "s-vol",
        "s-proj",
        "s-env",
        "s-envfrom",
        "s-pull",
        "s-init",
        "s-other",
    ] {
        let r = send(
            admin,
            "POST",
            &format!("/api/v1/namespaces/{ns}/secrets"),
            Some("application/json"),
            body(json!({"metadata": {"name": s}, "data": {"k": "dg=="}})),
        )
        .await;
        assert_ok(&r, s);
    }
    for cm in [
        "cm-vol",
        "cm-proj",
        "cm-env",
        "cm-envfrom",
        "cm-unbound",
        "cm-mirror",
    ] {
        let r = send(
            admin,
            "POST",
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            Some("application/json"),
            body(json!({"metadata": {"name": cm}, "data": {"k": "v"}})),
        )
        .await;
        assert_ok(&r, cm);
    }
    // A real server's ServiceAccount admission refuses pods until the namespace's `default`
    // ServiceAccount exists (kube-controller-manager makes it; a bare kube-apiserver has none).
    let r = send(
        admin,
        "POST",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        Some("application/json"),
        body(json!({"metadata": {"name": "default"}})),
    )
    .await;
    assert!(matches!(r.code, 201 | 409), "default serviceaccount: {}", r.body);
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let pod = |name: &str, node: Option<&str>, spec: Value| {
        let mut spec = spec;
        if let Some(node) = node {
            spec["nodeName"] = json!(node);
        }
        body(json!({"metadata": {"name": name}, "spec": spec}))
    };
    let on_n1 = json!({
        "imagePullSecrets": [{"name": "s-pull"}],
        "initContainers": [{"name": "i", "image": "img", "envFrom": [{"secretRef": {"name": "s-init"}}]}],
        "containers": [{"name": "c", "image": "img",
            "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s-env", "key": "k"}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm-env", "key": "k"}}}],
            "envFrom": [{"secretRef": {"name": "s-envfrom"}}, {"configMapRef": {"name": "cm-envfrom"}}]}],
        "volumes": [
            {"name": "a", "secret": {"secretName": "s-vol"}},
            {"name": "b", "configMap": {"name": "cm-vol"}},
            {"name": "c", "projected": {"sources": [{"secret": {"name": "s-proj"}}, {"configMap": {"name": "cm-proj"}}]}}
        ]
    });
    for (name, node, spec) in [
        ("p1", Some(n1.as_str()), on_n1),
        (
            "p2",
            Some(n2.as_str()),
            json!({"containers": [{"name": "c", "image": "img"}], "volumes": [{"name": "a", "secret": {"secretName": "s-other"}}]}),
        ),
        // Not yet scheduled: grants nothing.
        (
            "p3",
            None,
            json!({"containers": [{"name": "c", "image": "img"}], "volumes": [{"name": "a", "configMap": {"name": "cm-unbound"}}]}),
        ),
    ] {
        let r = send(
            admin,
            "POST",
            &pods,
            Some("application/json"),
            pod(name, node, spec),
        )
        .await;
        assert_ok(&r, name);
    }
    // A mirror pod (the kubelet's own) gets an edge to its node and to nothing it names. (It
    // names a ConfigMap: a real server's ServiceAccount admission refuses a mirror pod that
    // names a Secret, "a mirror pod may not reference secrets"; this server has no such
    // admission plugin.)
    let mirror = json!({"metadata": {"name": "p-mirror", "annotations": {"kubernetes.io/config.mirror": "x"}},
        "spec": {"nodeName": n1, "containers": [{"name": "c", "image": "img"}],
                 "volumes": [{"name": "a", "configMap": {"name": "cm-mirror"}}]}});
    assert_ok(
        &send(admin, "POST", &pods, Some("application/json"), body(mirror)).await,
        "mirror pod",
    );

    let node = kubelet(&c, n1).await;
    let user = format!("system:node:{n1}");
    for s in ["s-vol", "s-proj", "s-env", "s-envfrom", "s-pull", "s-init"] {
        let r = send(
            &node,
            "GET",
            &format!("/api/v1/namespaces/{ns}/secrets/{s}"),
            None,
            vec![],
        )
        .await;
        assert_ok(&r, s);
    }
    for cm in ["cm-vol", "cm-proj", "cm-env", "cm-envfrom"] {
        let r = send(
            &node,
            "GET",
            &format!("/api/v1/namespaces/{ns}/configmaps/{cm}"),
            None,
            vec![],
        )
        .await;
        assert_ok(&r, cm);
    }
    let no_relationship = |resource: &str, name: &str| {
        format!(
            "{resource} {name:?} is forbidden: User {user:?} cannot get resource {resource:?} in API group \"\" in the namespace {ns:?}: no relationship found between node '{n1}' and this object"
        )
    };
    for (resource, name) in [
        ("secrets", "s-other"),
        ("secrets", "missing"),
        ("configmaps", "cm-unbound"),
        ("configmaps", "cm-mirror"),
    ] {
        let r = send(
            &node,
            "GET",
            &format!("/api/v1/namespaces/{ns}/{resource}/{name}"),
            None,
            vec![],
        )
        .await;
        assert_forbidden(&r, &no_relationship(resource, name));
        assert_eq!(r.body["details"], json!({"name": name, "kind": resource}));
    }

    // Lists and watches only of one named object (the name comes from the field selector).
    let r = send(
        &node,
        "GET",
        &format!("/api/v1/namespaces/{ns}/secrets"),
        None,
        vec![],
    )
    .await;
    assert_forbidden(
        &r,
        &format!(
            "secrets is forbidden: User {user:?} cannot list resource \"secrets\" in API group \"\" in the namespace {ns:?}: No Object name found"
        ),
    );
    let r = send(
        &node,
        "GET",
        &format!("/api/v1/namespaces/{ns}/secrets?fieldSelector=metadata.name%3Ds-vol"),
        None,
        vec![],
    )
    .await;
    assert_ok(&r, "list of one referenced secret");
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(1));
    let r = send(
        &node,
        "GET",
        &format!("/api/v1/namespaces/{ns}/secrets?fieldSelector=metadata.name%3Ds-other&watch=true&timeoutSeconds=1"),
        None,
        vec![],
    )
    .await;
    assert_forbidden(
        &r,
        &format!(
            "secrets \"s-other\" is forbidden: User {user:?} cannot watch resource \"secrets\" in API group \"\" in the namespace {ns:?}: no relationship found between node '{n1}' and this object"
        ),
    );
    // Reading is all: no writes, even of a referenced secret.
    let r = send(
        &node,
        "PUT",
        &format!("/api/v1/namespaces/{ns}/secrets/s-vol"),
        Some("application/json"),
        body(json!({"metadata": {"name": "s-vol"}})),
    )
    .await;
    assert_forbidden(
        &r,
        &format!(
            "secrets \"s-vol\" is forbidden: User {user:?} cannot update resource \"secrets\" in API group \"\" in the namespace {ns:?}: can only read resources of this type"
        ),
    );
    // Unbinding the pod takes the access away. At once only without a grace period: a real
    // server keeps a bound pod, and the node's access with it, until its kubelet confirms.
    assert_ok(
        &send(
            admin,
            "DELETE",
            &format!("{pods}/p1?gracePeriodSeconds=0"),
            None,
            vec![],
        )
        .await,
        "deleting p1",
    );
    // A real server's Node authorizer learns of the deletion from its informer, a moment
    // later; the fake's graph is the store itself. Asked again until the deadline.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let r = loop {
        let r = send(
            &node,
            "GET",
            &format!("/api/v1/namespaces/{ns}/secrets/s-vol"),
            None,
            vec![],
        )
        .await;
        if r.code == 403 || std::time::Instant::now() >= deadline {
            break r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_forbidden(&r, &no_relationship("secrets", "s-vol"));

    delete_nodes(&c, &names).await;
    c.cleanup().await;
}
