//! Fault injection over the admin endpoint (`POST /_fake/v1/faults`, `system:masters` only)
//! and from Rust: failing the next N matching requests, latency, and a restart that loses the
//! store.

use crate::common::{configmap, init_crypto, skip_external, status_of};
use fake_apiserver::{FakeApiServer, Fault};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use std::time::{Duration, Instant};

/// Why these tests run against the fake only.
const FAKE_ONLY: &str = "they inject faults through the fake's admin endpoint";

async fn post_fault(client: &kube::Client, body: &str) -> u16 {
    let req = http::Request::post("/_fake/v1/faults")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(kube::client::Body::from(body.as_bytes().to_vec()))
        .unwrap();
    let response = client.send(req).await.unwrap();
    let code = response.status().as_u16();
    let _ = response.into_body().collect().await;
    code
}

#[tokio::test]
async fn fail_next_and_latency_over_the_admin_endpoint() {
    if skip_external("fail_next_and_latency_over_the_admin_endpoint", FAKE_ONLY) {
        return;
    }
    init_crypto();
    let server = FakeApiServer::builder().start().await.unwrap();
    let admin = server.admin_client().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    cms.create(&PostParams::default(), &configmap("target", &[]))
        .await
        .unwrap();

    let fail = r#"{"action":"failNext","verb":"get","resource":"configmaps","code":500,"count":2}"#;
    assert_eq!(post_fault(&admin, fail).await, 200);
    assert!(
        cms.list(&Default::default()).await.is_ok(),
        "other verbs are not affected"
    );
    for _ in 0..2 {
        assert_eq!(status_of(cms.get("target").await), (500, "InternalError".into()));
    }
    assert!(
        cms.get("target").await.is_ok(),
        "the fault is spent after two requests"
    );

    assert_eq!(
        post_fault(&admin, r#"{"action":"latency","verb":"list","millis":150}"#).await,
        200
    );
    let started = Instant::now();
    cms.list(&Default::default()).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "the list waited for the injected latency"
    );
    assert_eq!(post_fault(&admin, r#"{"action":"clear"}"#).await, 200);

    let user = server
        .client(&server.identity("developer", &["devs"]).unwrap())
        .await
        .unwrap();
    assert_eq!(
        post_fault(&user, r#"{"action":"compact"}"#).await,
        403,
        "only system:masters injects faults"
    );
    assert_eq!(
        post_fault(&admin, r#"{"action":"failNext","code":200}"#).await,
        400,
        "not an error code"
    );
}

#[tokio::test]
async fn a_restart_that_loses_the_store() {
    if skip_external("a_restart_that_loses_the_store", FAKE_ONLY) {
        return;
    }
    init_crypto();
    let server = FakeApiServer::builder().start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.admin_client().await.unwrap(), "default");
    cms.create(&PostParams::default(), &configmap("ephemeral", &[]))
        .await
        .unwrap();
    server.inject(Fault::Restart { keep_store: true }).unwrap();
    // Connections were cut: use a fresh client, as a real client would reconnect.
    let cms: Api<ConfigMap> = Api::namespaced(server.admin_client().await.unwrap(), "default");
    assert!(
        cms.get("ephemeral").await.is_ok(),
        "kept across a restart that keeps the store"
    );
    server.inject(Fault::Restart { keep_store: false }).unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.admin_client().await.unwrap(), "default");
    assert_eq!(status_of(cms.get("ephemeral").await).0, 404);
    assert!(
        cms.create(&PostParams::default(), &configmap("after", &[]))
            .await
            .is_ok(),
        "built-in namespaces exist again"
    );
}
