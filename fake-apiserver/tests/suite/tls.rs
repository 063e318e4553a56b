//! TLS and identity: no certificate, another CA's certificate, an expired certificate → 401
//! `Unauthorized`; anonymous access; bearer tokens; NodeRestriction over the wire; and a
//! serving-certificate swap that new clients of the new CA accept and clients of the old CA
//! refuse.

use crate::common::{init_crypto, send_with, skip_external, status_of};
use fake_apiserver::{
    CertificateAuthority, ClientIdentity, FakeApiServer, Identity, ServingCert, client_from_kubeconfig,
};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use time::{Duration, OffsetDateTime};

/// Why these tests run against the fake only.
const FAKE_ONLY: &str = "they issue certificates from the fake's CAs and set its authentication (tokens, anonymous access, serving and client CAs)";

async fn list_namespaces(client: kube::Client) -> kube::Result<usize> {
    Ok(Api::<Namespace>::all(client)
        .list(&Default::default())
        .await?
        .items
        .len())
}

/// A kubeconfig with no user credentials (and optionally a bearer token).
fn bare_kubeconfig(url: &str, ca_pem: &str, token: Option<&str>) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let user = match token {
        Some(t) => json!({"token": t}),
        None => json!({}),
    };
    serde_yaml::to_string(&json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": url, "certificate-authority-data": ca}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))
    .unwrap()
}

#[tokio::test]
async fn untrusted_expired_and_missing_certificates_are_401() {
    if skip_external("untrusted_expired_and_missing_certificates_are_401", FAKE_ONLY) {
        return;
    }
    init_crypto();
    let server = FakeApiServer::builder().start().await.unwrap();
    assert!(
        list_namespaces(server.admin_client().await.unwrap())
            .await
            .unwrap()
            >= 4
    );

    let stranger = CertificateAuthority::generate("someone-else")
        .unwrap()
        .issue_client("mallory", &["system:masters"])
        .unwrap();
    let now = OffsetDateTime::now_utc();
    let expired = server
        .client_ca()
        .issue_client_valid(
            "late",
            &["system:masters"],
            now - Duration::days(10),
            now - Duration::days(1),
        )
        .unwrap();
    let not_yet = server
        .client_ca()
        .issue_client_valid(
            "early",
            &["system:masters"],
            now + Duration::days(1),
            now + Duration::days(10),
        )
        .unwrap();
    for (what, identity) in [
        ("another CA", &stranger),
        ("expired", &expired),
        ("not yet valid", &not_yet),
    ] {
        let client = server.client(identity).await.unwrap();
        assert_eq!(
            status_of(list_namespaces(client).await),
            (401, "Unauthorized".into()),
            "{what}"
        );
    }
    let anonymous = client_from_kubeconfig(&bare_kubeconfig(server.url(), &server.ca_pem(), None))
        .await
        .unwrap();
    assert_eq!(
        status_of(list_namespaces(anonymous).await),
        (401, "Unauthorized".into()),
        "no certificate"
    );
}

#[tokio::test]
async fn anonymous_access_and_bearer_tokens() {
    if skip_external("anonymous_access_and_bearer_tokens", FAKE_ONLY) {
        return;
    }
    init_crypto();
    let server = FakeApiServer::builder()
        .anonymous(true)
        .token("s3cret", Identity::new("token-user", &["system:masters"]))
        .start()
        .await
        .unwrap();
    let anonymous = client_from_kubeconfig(&bare_kubeconfig(server.url(), &server.ca_pem(), None))
        .await
        .unwrap();
    assert!(anonymous.apiserver_version().await.is_ok(), "/version is public");
    assert_eq!(
        status_of(list_namespaces(anonymous).await),
        (403, "Forbidden".into())
    );
    let token = client_from_kubeconfig(&bare_kubeconfig(server.url(), &server.ca_pem(), Some("s3cret")))
        .await
        .unwrap();
    assert!(list_namespaces(token).await.is_ok());
    let wrong = client_from_kubeconfig(&bare_kubeconfig(server.url(), &server.ca_pem(), Some("guess")))
        .await
        .unwrap();
    assert_eq!(
        status_of(list_namespaces(wrong).await),
        (401, "Unauthorized".into())
    );
}

#[tokio::test]
async fn kubelets_may_modify_only_their_own_node() {
    if skip_external("kubelets_may_modify_only_their_own_node", FAKE_ONLY) {
        return;
    }
    init_crypto();
    let server = FakeApiServer::builder().start().await.unwrap();
    let nodes: Api<Node> = Api::all(server.admin_client().await.unwrap());
    for name in ["node-1", "node-2"] {
        nodes
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
            )
            .await
            .unwrap();
    }
    let kubelet: ClientIdentity = server.identity("system:node:node-1", &["system:nodes"]).unwrap();
    let as_kubelet: Api<Node> = Api::all(server.client(&kubelet).await.unwrap());
    let patch = Patch::Strategic(json!({"metadata": {"annotations": {"seen": "yes"}}}));
    as_kubelet
        .patch("node-1", &PatchParams::default(), &patch)
        .await
        .unwrap();
    as_kubelet
        .patch_status(
            "node-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Running"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        status_of(as_kubelet.patch("node-2", &PatchParams::default(), &patch).await),
        (403, "Forbidden".into())
    );
    // The Node authorizer: a kubelet reads its own Node only (node_authorization.rs has more).
    assert!(as_kubelet.get("node-1").await.is_ok());
    assert_eq!(
        status_of(as_kubelet.get("node-2").await),
        (403, "Forbidden".into())
    );
}

#[tokio::test]
async fn a_swapped_serving_certificate_is_trusted_only_through_its_ca() {
    if skip_external(
        "a_swapped_serving_certificate_is_trusted_only_through_its_ca",
        FAKE_ONLY,
    ) {
        return;
    }
    init_crypto();
    let server = FakeApiServer::builder().start().await.unwrap();
    let old_ca = server.ca_pem();
    let kept_alive = server.admin_client().await.unwrap();
    list_namespaces(kept_alive.clone()).await.unwrap();

    let new = ServingCert::generate("rotated-serving-ca", &["127.0.0.1", "localhost"]).unwrap();
    let new_ca = new.ca_pem.clone();
    server.rotate_serving_cert(new, true).unwrap();
    assert_eq!(server.ca_pem(), new_ca);

    let admin = server.admin_identity().clone();
    let trusting_new = client_from_kubeconfig(&fake_apiserver::kubeconfig(server.url(), &new_ca, &admin))
        .await
        .unwrap();
    assert!(
        list_namespaces(trusting_new).await.is_ok(),
        "the new CA verifies the new certificate"
    );
    let trusting_old = client_from_kubeconfig(&fake_apiserver::kubeconfig(server.url(), &old_ca, &admin))
        .await
        .unwrap();
    let refused = list_namespaces(trusting_old).await;
    assert!(
        matches!(
            refused,
            Err(kube::Error::Service(_)) | Err(kube::Error::HyperError(_))
        ),
        "{refused:?}"
    );
    // The old connection was dropped: the client that trusted the old CA must handshake again and fails.
    assert!(
        list_namespaces(kept_alive).await.is_err(),
        "a kept-alive client of the old CA is cut off"
    );
}

#[tokio::test]
async fn client_cas_can_be_replaced_at_runtime() {
    if skip_external("client_cas_can_be_replaced_at_runtime", FAKE_ONLY) {
        return;
    }
    init_crypto();
    let server = FakeApiServer::builder().start().await.unwrap();
    let other = CertificateAuthority::generate("second-client-ca").unwrap();
    let identity = other.issue_client("rotated", &["system:masters"]).unwrap();
    assert_eq!(
        status_of(list_namespaces(server.client(&identity).await.unwrap()).await).0,
        401
    );
    server
        .set_client_cas(&[server.client_ca().cert_pem.clone(), other.cert_pem.clone()])
        .unwrap();
    assert!(
        list_namespaces(server.client(&identity).await.unwrap())
            .await
            .is_ok()
    );
}

/// kube-apiserver's union authenticator asks the client certificate first and the bearer
/// token next, and takes the first that authenticates: an `Authorization` header that is not a
/// bearer token is nobody's business, and a bad one loses to a good certificate. A rejected
/// certificate is no answer either: a good token still authenticates. With nothing
/// authenticated and something refused, anonymous access does not apply.
#[tokio::test]
async fn a_certificate_and_a_token_are_tried_in_turn() {
    if skip_external("a_certificate_and_a_token_are_tried_in_turn", FAKE_ONLY) {
        return;
    }
    init_crypto();
    let server = FakeApiServer::builder()
        .anonymous(true)
        .token("s3cret", Identity::new("token-user", &["system:masters"]))
        .start()
        .await
        .unwrap();
    let code = |client: kube::Client, authorization: &'static str| async move {
        let headers: Vec<(&str, &str)> = if authorization.is_empty() {
            Vec::new()
        } else {
            vec![("Authorization", authorization)]
        };
        send_with(&client, "GET", "/api/v1/namespaces", &headers, None, Vec::new())
            .await
            .code
    };
    let admin = server.admin_client().await.unwrap();
    for authorization in [
        "Bearer bogus",
        "Basic Zm9vOmJhcg==",
        "bearer bogus",
        "Bearer",
        "Negotiate abc",
        "Bearer s3cret",
    ] {
        assert_eq!(
            code(admin.clone(), authorization).await,
            200,
            "the admin certificate with {authorization:?}"
        );
    }
    let stranger = CertificateAuthority::generate("someone-else")
        .unwrap()
        .issue_client("mallory", &["system:masters"])
        .unwrap();
    let stranger = server.client(&stranger).await.unwrap();
    assert_eq!(code(stranger.clone(), "").await, 401, "an untrusted certificate");
    assert_eq!(
        code(stranger.clone(), "Bearer s3cret").await,
        200,
        "an untrusted certificate and a good token"
    );
    assert_eq!(
        code(stranger, "Bearer bogus").await,
        401,
        "an untrusted certificate and a bad token"
    );
    let bare = client_from_kubeconfig(&bare_kubeconfig(server.url(), &server.ca_pem(), None))
        .await
        .unwrap();
    // Not a bearer token and no certificate: nothing refused, so anonymous (whom only the
    // authorizer turns away).
    assert_eq!(code(bare.clone(), "Basic Zm9vOmJhcg==").await, 403, "anonymous");
    assert_eq!(
        code(bare.clone(), "bearer s3cret").await,
        200,
        "the scheme's case"
    );
    assert_eq!(
        code(bare, "Bearer bogus").await,
        401,
        "a bad token is not anonymous"
    );
}
