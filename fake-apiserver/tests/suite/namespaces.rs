//! Namespaces as kube-apiserver guards them: the collection cannot be deleted at once (the
//! resource serves no `deletecollection`), and the NamespaceLifecycle admission plugin keeps
//! `default`, `kube-system` and `kube-public` from ever being deleted (apiserver
//! `admission/plugin/namespace/lifecycle/admission.go`).

use crate::common::{init_crypto, send};
use fake_apiserver::FakeApiServer;
use serde_json::json;

async fn client() -> (fake_apiserver::ServerHandle, kube::Client) {
    init_crypto();
    let server = FakeApiServer::builder().start().await.unwrap();
    let client = server.admin_client().await.unwrap();
    (server, client)
}

#[tokio::test]
async fn the_namespace_collection_cannot_be_deleted() {
    let (_server, client) = client().await;
    for path in ["/api/v1/namespaces", "/api/v1/namespaces?dryRun=All"] {
        let r = send(&client, "DELETE", path, None, vec![]).await;
        assert_eq!(
            r.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "the server does not allow this method on the requested resource",
                   "reason": "MethodNotAllowed", "details": {}, "code": 405}),
            "{path}"
        );
        assert_eq!(r.code, 405);
    }
    let discovery = send(&client, "GET", "/api/v1", None, vec![]).await;
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
    let list = send(&client, "GET", "/api/v1/namespaces", None, vec![]).await;
    assert_eq!(
        list.body["items"].as_array().unwrap().len(),
        4,
        "nothing was deleted"
    );
}

#[tokio::test]
async fn the_immortal_namespaces_cannot_be_deleted() {
    let (_server, client) = client().await;
    for ns in ["default", "kube-system", "kube-public"] {
        for query in ["", "?dryRun=All"] {
            let r = send(
                &client,
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
        let still = send(&client, "GET", &format!("/api/v1/namespaces/{ns}"), None, vec![]).await;
        assert_eq!(still.body["status"]["phase"], "Active", "{ns}");
        assert!(still.body["metadata"].get("deletionTimestamp").is_none());
    }
    // kube-node-lease is built in but not immortal.
    let lease = send(
        &client,
        "DELETE",
        "/api/v1/namespaces/kube-node-lease",
        None,
        vec![],
    )
    .await;
    assert_eq!(lease.code, 200, "{}", lease.body);
}
