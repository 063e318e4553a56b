//! Impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`) as kube-apiserver 1.36
//! handles it: with ConstrainedImpersonation (beta, on by default in 1.36) the filter tries the
//! constrained modes (associated-node, arbitrary-node, serviceaccount, user-info) and then
//! legacy impersonation, and answers the first mode's refusal when none allows the request
//! (apiserver `endpoints/filters/impersonation/{constrained_impersonation,mode}.go`).

use crate::common::{Reply, cluster, init_crypto, send, send_with, skip_external};
use fake_apiserver::{ApiError, Authorizer, FakeApiServer, Identity, RequestAttributes, ServerHandle};
use serde_json::json;
use std::sync::{Arc, Mutex};

#[track_caller]
fn assert_forbidden(r: &Reply, message: &str) {
    assert_eq!(
        (r.code, r.body["reason"].as_str(), r.body["message"].as_str()),
        (403, Some("Forbidden"), Some(message)),
        "{}",
        r.body
    );
}

/// An RBAC stand-in: ordinary requests of authenticated users are allowed and recorded;
/// impersonation verbs only as granted, by `(user, verb, group, resource)`.
#[derive(Default)]
struct Grants {
    grants: Vec<(&'static str, &'static str, &'static str, &'static str)>,
    seen: Mutex<Vec<Identity>>,
}

impl Authorizer for Grants {
    fn authorize(&self, who: &Identity, request: &RequestAttributes) -> Result<(), ApiError> {
        if request.verb.contains("impersonate") {
            let granted = self.grants.iter().any(|(user, verb, group, resource)| {
                (*user, *verb, *group, *resource)
                    == (
                        who.user.as_str(),
                        request.verb.as_str(),
                        request.group.as_str(),
                        request.resource.as_str(),
                    )
            });
            return if granted {
                Ok(())
            } else {
                Err(request.rbac_denial(who))
            };
        }
        if who.is_anonymous() {
            return Err(request.rbac_denial(who));
        }
        self.seen.lock().unwrap().push(who.clone());
        Ok(())
    }
}

const LEGACY: &[(&str, &str, &str)] = &[
    ("impersonate", "", "users"),
    ("impersonate", "", "groups"),
    ("impersonate", "", "serviceaccounts"),
    ("impersonate", "authentication.k8s.io", "uids"),
    ("impersonate", "authentication.k8s.io", "userextras"),
];

async fn server_with(grants: Arc<Grants>) -> ServerHandle {
    init_crypto();
    FakeApiServer::builder()
        .authorizer(grants)
        .anonymous(true)
        .start()
        .await
        .unwrap()
}

async fn as_user(server: &ServerHandle, user: &str) -> kube::Client {
    server
        .client(&server.identity(user, &["staff"]).unwrap())
        .await
        .unwrap()
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn the_admin_impersonates_a_node_and_is_held_to_its_rules() {
    let c = cluster().await;
    let (n1, n2) = (format!("{}-n1", c.ns), format!("{}-n2", c.ns));
    for n in [&n1, &n2] {
        let r = send(
            &c.client,
            "POST",
            "/api/v1/nodes",
            Some("application/json"),
            serde_json::to_vec(&json!({"metadata": {"name": n}})).unwrap(),
        )
        .await;
        assert_eq!(r.code, 201, "{}", r.body);
    }
    let user = format!("system:node:{n1}");
    let denied = format!(
        "nodes {n2:?} is forbidden: User {user:?} cannot get resource \"nodes\" in API group \"\" at the cluster scope: node '{n1}' cannot read '{n2}', only its own Node object"
    );
    // A node's name alone (the arbitrary-node mode gives it system:nodes), or with its group.
    // A real kube-apiserver remembers per requester the impersonation mode that last worked and
    // tries it first for the process's life (apiserver `filters/impersonation` `modeIndexCache`):
    // once the admin impersonated a group (the legacy mode), a name alone goes the legacy way
    // too and gets no `system:nodes`. So against a server that has lived through other tests,
    // only the name with its group is asked.
    let mut cases = vec![vec![
        ("Impersonate-User", user.as_str()),
        ("Impersonate-Group", "system:nodes"),
    ]];
    if !skip_external(
        "impersonating a node by its name alone",
        "the answer depends on the impersonation modes the admin used before",
    ) {
        cases.insert(0, vec![("Impersonate-User", user.as_str())]);
    }
    for headers in cases {
        let path = format!("/api/v1/nodes/{n2}");
        let r = send_with(&c.client, "GET", &path, &headers, None, vec![]).await;
        assert_forbidden(&r, &denied);
        let path = format!("/api/v1/nodes/{n1}");
        let r = send_with(&c.client, "GET", &path, &headers, None, vec![]).await;
        assert_eq!(r.code, 200, "{headers:?}: {}", r.body);
    }
    for n in [&n1, &n2] {
        send(&c.client, "DELETE", &format!("/api/v1/nodes/{n}"), None, vec![]).await;
    }
    c.cleanup().await;
}

#[tokio::test]
async fn impersonation_without_the_impersonate_verb_is_refused() {
    let server = server_with(Arc::new(Grants::default())).await;
    let alice = as_user(&server, "alice").await;
    let kubelet = server
        .client(&server.identity("system:node:n1", &["system:nodes"]).unwrap())
        .await
        .unwrap();
    let on = |who: &str, mode: &str| {
        format!(
            "configmaps is forbidden: User {who:?} cannot impersonate-on:{mode}:list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        )
    };
    for (headers, message) in [
        (vec![("Impersonate-User", "bob")], on("alice", "user-info")),
        (
            vec![("Impersonate-User", "bob"), ("Impersonate-Group", "g1")],
            on("alice", "user-info"),
        ),
        (
            vec![("Impersonate-User", "system:serviceaccount:ns1:sa")],
            on("alice", "serviceaccount"),
        ),
        (
            vec![("Impersonate-User", "system:node:n2")],
            on("alice", "arbitrary-node"),
        ),
        // No constrained mode takes a service account with groups: legacy's refusal.
        (
            vec![
                ("Impersonate-User", "system:serviceaccount:ns1:sa"),
                ("Impersonate-Group", "g1"),
            ],
            "serviceaccounts \"sa\" is forbidden: User \"alice\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"ns1\"".to_string(),
        ),
        (
            vec![("Impersonate-User", "system:node:n2"), ("Impersonate-Group", "g1")],
            "users \"system:node:n2\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope".to_string(),
        ),
    ] {
        let r = send_with(&alice, "GET", CONFIGMAPS, &headers, None, vec![]).await;
        assert_forbidden(&r, &message);
    }
    // A kubelet's refusal carries the Node authorizer's reason for configmaps.
    let r = send_with(
        &kubelet,
        "GET",
        CONFIGMAPS,
        &[("Impersonate-User", "bob")],
        None,
        vec![],
    )
    .await;
    assert_forbidden(
        &r,
        &format!(
            "{}: can only read resources of this type",
            on("system:node:n1", "user-info")
        ),
    );
    let r = send_with(
        &alice,
        "GET",
        "/api",
        &[("Impersonate-User", "bob")],
        None,
        vec![],
    )
    .await;
    assert_forbidden(
        &r,
        "forbidden: User \"alice\" cannot impersonate-on:user-info:get path \"/api\"",
    );
    assert_eq!(r.body["details"], json!({}));
    let r = send_with(
        &alice,
        "POST",
        CONFIGMAPS,
        &[("Impersonate-User", "bob")],
        Some("application/json"),
        br#"{"metadata":{"name":"x"}}"#.to_vec(),
    )
    .await;
    assert_forbidden(&r, &on("alice", "user-info").replace(":list", ":create"));
    let r = send_with(
        &alice,
        "GET",
        &format!("{CONFIGMAPS}/x"),
        &[("Impersonate-User", "bob")],
        None,
        vec![],
    )
    .await;
    assert_forbidden(
        &r,
        "configmaps \"x\" is forbidden: User \"alice\" cannot impersonate-on:user-info:get resource \"configmaps\" in API group \"\" in the namespace \"default\"",
    );
    assert_eq!(r.body["details"], json!({"name": "x", "kind": "configmaps"}));
}

#[tokio::test]
async fn impersonating_groups_without_a_user_is_a_bad_request() {
    let server = server_with(Arc::new(Grants::default())).await;
    let admin = server.admin_client().await.unwrap();
    let r = send_with(
        &admin,
        "GET",
        CONFIGMAPS,
        &[("Impersonate-Group", "g1"), ("Impersonate-Group", "g2")],
        None,
        vec![],
    )
    .await;
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "requested &user.DefaultInfo{Name:\"\", UID:\"\", Groups:[]string{\"g1\", \"g2\"}, Extra:map[string][]string(nil)} without impersonating a user name",
               "reason": "BadRequest", "code": 400})
    );
    let r = send_with(
        &admin,
        "GET",
        CONFIGMAPS,
        &[("Impersonate-Uid", "u1")],
        None,
        vec![],
    )
    .await;
    assert_eq!(r.code, 400, "{}", r.body);
}

fn grants(user: &'static str, list: &[(&'static str, &'static str, &'static str)]) -> Arc<Grants> {
    Arc::new(Grants {
        grants: list.iter().map(|(v, g, r)| (user, *v, *g, *r)).collect(),
        seen: Mutex::default(),
    })
}

/// Who the last ordinary request ran as.
fn last_seen(g: &Grants) -> (String, Vec<String>) {
    let seen = g.seen.lock().unwrap();
    let who = seen.last().expect("a request was authorized");
    (who.user.clone(), who.groups.clone())
}

#[tokio::test]
async fn an_allowed_impersonator_acts_as_the_user_with_system_authenticated() {
    let g = grants("alice", LEGACY);
    let server = server_with(g.clone()).await;
    let alice = as_user(&server, "alice").await;
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for (headers, user, groups) in [
        (
            vec![("Impersonate-User", "bob")],
            "bob",
            strings(&["system:authenticated"]),
        ),
        (
            vec![
                ("Impersonate-User", "bob"),
                ("Impersonate-Group", "g1"),
                ("Impersonate-Group", "g2"),
                ("Impersonate-Uid", "1234"),
                ("Impersonate-Extra-Scopes", "view"),
            ],
            "bob",
            strings(&["g1", "g2", "system:authenticated"]),
        ),
        (
            vec![
                ("Impersonate-User", "bob"),
                ("Impersonate-Group", "system:authenticated"),
            ],
            "bob",
            strings(&["system:authenticated"]),
        ),
        (
            vec![
                ("Impersonate-User", "bob"),
                ("Impersonate-Group", "system:unauthenticated"),
            ],
            "bob",
            strings(&["system:unauthenticated"]),
        ),
        (
            vec![("Impersonate-User", "system:serviceaccount:ns1:sa")],
            "system:serviceaccount:ns1:sa",
            strings(&[
                "system:serviceaccounts",
                "system:serviceaccounts:ns1",
                "system:authenticated",
            ]),
        ),
        // Legacy impersonation of a node's name: no system:nodes unless asked for.
        (
            vec![("Impersonate-User", "system:node:n9")],
            "system:node:n9",
            strings(&["system:authenticated"]),
        ),
    ] {
        let r = send_with(&alice, "GET", CONFIGMAPS, &headers, None, vec![]).await;
        assert_eq!(r.code, 200, "{headers:?}: {}", r.body);
        assert_eq!(last_seen(&g), (user.to_string(), groups), "{headers:?}");
    }
    // Anonymous is impersonated as unauthenticated; it may then read nothing.
    let r = send_with(
        &alice,
        "GET",
        CONFIGMAPS,
        &[("Impersonate-User", "system:anonymous")],
        None,
        vec![],
    )
    .await;
    assert_forbidden(
        &r,
        "configmaps is forbidden: User \"system:anonymous\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"",
    );
    // Anyone else without the grant is still refused.
    let mallory = as_user(&server, "mallory").await;
    let r = send_with(
        &mallory,
        "GET",
        CONFIGMAPS,
        &[("Impersonate-User", "bob")],
        None,
        vec![],
    )
    .await;
    assert_eq!(r.code, 403, "{}", r.body);
    let before = g.seen.lock().unwrap().len();
    let r = send_with(
        &mallory,
        "GET",
        CONFIGMAPS,
        &[("Impersonate-User", "bob")],
        None,
        vec![],
    )
    .await;
    assert_eq!(r.code, 403);
    assert_eq!(
        g.seen.lock().unwrap().len(),
        before,
        "a refused request goes no further"
    );
}

#[tokio::test]
async fn a_refusal_names_the_mode_that_last_worked_for_the_requestor() {
    let g = grants(
        "alice",
        &[
            ("impersonate", "", "users"),
            ("impersonate", "", "serviceaccounts"),
        ],
    );
    let server = server_with(g.clone()).await;
    let alice = as_user(&server, "alice").await;
    let with_group = [("Impersonate-User", "bob"), ("Impersonate-Group", "g1")];
    // Nothing has worked for alice yet: the first constrained mode that applies refuses.
    let r = send_with(&alice, "GET", CONFIGMAPS, &with_group, None, vec![]).await;
    assert_forbidden(
        &r,
        "configmaps is forbidden: User \"alice\" cannot impersonate-on:user-info:list resource \"configmaps\" in API group \"\" in the namespace \"default\"",
    );
    let r = send_with(
        &alice,
        "GET",
        CONFIGMAPS,
        &[("Impersonate-User", "bob")],
        None,
        vec![],
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    // Legacy worked last, so it is tried first, and its refusal is the answer.
    let r = send_with(&alice, "GET", CONFIGMAPS, &with_group, None, vec![]).await;
    assert_forbidden(
        &r,
        "groups \"g1\" is forbidden: User \"alice\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope",
    );
}

#[tokio::test]
async fn constrained_impersonation_needs_both_of_its_verbs() {
    let g = grants(
        "carol",
        &[
            ("impersonate-on:user-info:list", "", "configmaps"),
            ("impersonate:user-info", "authentication.k8s.io", "users"),
            ("impersonate:user-info", "authentication.k8s.io", "groups"),
            ("impersonate-on:arbitrary-node:list", "", "configmaps"),
            ("impersonate:arbitrary-node", "authentication.k8s.io", "nodes"),
        ],
    );
    let server = server_with(g.clone()).await;
    let carol = as_user(&server, "carol").await;
    let r = send_with(
        &carol,
        "GET",
        CONFIGMAPS,
        &[("Impersonate-User", "bob")],
        None,
        vec![],
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(last_seen(&g), ("bob".into(), vec!["system:authenticated".into()]));
    // The arbitrary-node mode gives a node its group.
    let r = send_with(
        &carol,
        "GET",
        CONFIGMAPS,
        &[("Impersonate-User", "system:node:n1")],
        None,
        vec![],
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        last_seen(&g),
        (
            "system:node:n1".into(),
            vec!["system:nodes".into(), "system:authenticated".into()]
        )
    );
    // Only list was granted.
    let r = send_with(
        &carol,
        "GET",
        &format!("{CONFIGMAPS}/x"),
        &[("Impersonate-User", "bob")],
        None,
        vec![],
    )
    .await;
    assert_forbidden(
        &r,
        "configmaps \"x\" is forbidden: User \"carol\" cannot impersonate-on:user-info:get resource \"configmaps\" in API group \"\" in the namespace \"default\"",
    );
    // Constrained impersonation never hands out system:masters.
    let r = send_with(
        &carol,
        "GET",
        CONFIGMAPS,
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "system:masters"),
        ],
        None,
        vec![],
    )
    .await;
    assert_forbidden(
        &r,
        "groups.authentication.k8s.io \"system:masters\" is forbidden: User \"carol\" cannot impersonate:user-info resource \"groups\" in API group \"authentication.k8s.io\" at the cluster scope: impersonating the system:masters group is not allowed",
    );
    assert_eq!(
        r.body["details"],
        json!({"name": "system:masters", "group": "authentication.k8s.io", "kind": "groups"})
    );
}
