//! Namespaces as kube-apiserver guards them: the collection cannot be deleted at once (the
//! resource serves no `deletecollection`), and the NamespaceLifecycle admission plugin keeps
//! `default`, `kube-system` and `kube-public` from ever being deleted (apiserver
//! `admission/plugin/namespace/lifecycle/admission.go`).

use crate::common::{cluster, send};
use serde_json::json;

const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

#[tokio::test]
async fn the_namespace_collection_cannot_be_deleted() {
    let c = cluster().await;
    let client = &c.client;
    for path in ["/api/v1/namespaces", "/api/v1/namespaces?dryRun=All"] {
        let r = send(client, "DELETE", path, None, vec![]).await;
        assert_eq!(
            r.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "the server does not allow this method on the requested resource",
                   "reason": "MethodNotAllowed", "details": {}, "code": 405}),
            "{path}"
        );
        assert_eq!(r.code, 405);
    }
    let discovery = send(client, "GET", "/api/v1", None, vec![]).await;
    let namespaces = discovery.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "namespaces")
        .unwrap()
        .clone();
    assert_eq!(
        namespaces["verbs"],
        json!(["create", "delete", "get", "list", "patch", "update", "watch"])
    );
    let list = send(client, "GET", "/api/v1/namespaces", None, vec![]).await;
    let names: Vec<&str> = list.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|ns| ns["metadata"].get("deletionTimestamp").is_none())
        .filter_map(|ns| ns["metadata"]["name"].as_str())
        .collect();
    for ns in IMMORTAL.iter().chain([&"kube-node-lease", &c.ns.as_str()]) {
        assert!(names.contains(ns), "nothing was deleted: {ns} in {names:?}");
    }
    c.cleanup().await;
}

#[tokio::test]
async fn the_immortal_namespaces_cannot_be_deleted() {
    let c = cluster().await;
    let client = &c.client;
    for ns in IMMORTAL {
        for query in ["", "?dryRun=All"] {
            let r = send(
                client,
                "DELETE",
                &format!("/api/v1/namespaces/{ns}{query}"),
                None,
                vec![],
            )
            .await;
            assert_eq!(r.code, 403, "{ns}{query}");
            assert_eq!(
                r.body,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": format!("namespaces \"{ns}\" is forbidden: this namespace may not be deleted"),
                       "reason": "Forbidden", "details": {"name": ns, "kind": "namespaces"}, "code": 403})
            );
        }
        let still = send(client, "GET", &format!("/api/v1/namespaces/{ns}"), None, vec![]).await;
        assert_eq!(still.body["status"]["phase"], "Active", "{ns}");
        assert!(still.body["metadata"].get("deletionTimestamp").is_none());
    }
    // kube-node-lease is built in but not immortal (a dry run: a real server with no namespace
    // controller would keep it Terminating).
    let lease = send(
        client,
        "DELETE",
        "/api/v1/namespaces/kube-node-lease?dryRun=All",
        None,
        vec![],
    )
    .await;
    assert_eq!(lease.code, 200, "{}", lease.body);
    c.cleanup().await;
}
