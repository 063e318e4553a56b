//! A cluster for API-semantics tests: the fake API server by default, or any API server when
//! `APISERVER_KUBECONFIG` names a kubeconfig (so the same tests show the fake and a real
//! kube-apiserver agree). Each test works in its own namespace and deletes it at the end; no
//! test assumes an empty cluster.

use fake_apiserver::{FakeApiServer, ServerHandle};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

pub(crate) struct TestCluster {
    pub client: kube::Client,
    /// The fake, when the tests started one; `None` against an external API server.
    pub server: Option<ServerHandle>,
    pub ns: String,
    /// The kubeconfig of `APISERVER_KUBECONFIG`, when the tests run against an external server.
    external: Option<String>,
}

pub(crate) fn init_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// True, with the printed reason, when a test that needs the fake itself must skip because
/// `APISERVER_KUBECONFIG` names another server.
pub(crate) fn skip_external(what: &str, why: &str) -> bool {
    let external = std::env::var_os("APISERVER_KUBECONFIG").is_some();
    if external {
        println!("SKIP {what}: {why} (APISERVER_KUBECONFIG is set)");
    }
    external
}

pub(crate) async fn cluster() -> TestCluster {
    init_crypto();
    let (client, server, external) = match std::env::var("APISERVER_KUBECONFIG") {
        Ok(path) => {
            let yaml = std::fs::read_to_string(&path).expect("APISERVER_KUBECONFIG is readable");
            (
                fake_apiserver::client_from_kubeconfig(&yaml)
                    .await
                    .expect("kubeconfig works"),
                None,
                Some(yaml),
            )
        }
        Err(_) => {
            let server = FakeApiServer::builder()
                .start()
                .await
                .expect("fake API server starts");
            (
                server.admin_client().await.expect("admin client"),
                Some(server),
                None,
            )
        }
    };
    let ns = format!("t-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await
        .expect("test namespace");
    TestCluster {
        client,
        server,
        ns,
        external,
    }
}

impl TestCluster {
    /// The URL path of `resource` in this test's namespace, in `group_version` ("v1" for the
    /// core group).
    pub(crate) fn path(&self, group_version: &str, resource: &str) -> String {
        let root = if group_version.contains('/') {
            "apis"
        } else {
            "api"
        };
        format!("/{root}/{group_version}/namespaces/{}/{resource}", self.ns)
    }

    /// POST `object` to `path`, which must create it; what the server stored.
    pub(crate) async fn create(&self, path: &str, object: Value) -> Value {
        let r = self.write("POST", path, "application/json", &object).await;
        assert_eq!(r.code, 201, "creating a fixture at {path}: {}", r.body);
        r.body
    }

    /// Send `body` as `content_type` (a write or a patch).
    pub(crate) async fn write(&self, method: &str, path: &str, content_type: &str, body: &Value) -> Reply {
        send(
            &self.client,
            method,
            path,
            Some(content_type),
            body.to_string().into_bytes(),
        )
        .await
    }

    pub(crate) fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// The fake, or a printed reason why this part of a test does not apply.
    pub(crate) fn fake(&self, what: &str) -> Option<&ServerHandle> {
        self.fake_because(what, "needs the fake API server's fault injection")
    }

    /// The fake, or a printed `why` this part of a test does not apply to an external server.
    pub(crate) fn fake_because(&self, what: &str, why: &str) -> Option<&ServerHandle> {
        if self.server.is_none() {
            println!("SKIP {what}: {why} (APISERVER_KUBECONFIG is set)");
        }
        self.server.as_ref()
    }

    /// A client acting as `user` in `groups`: on the fake, a client certificate with that CN and
    /// O; on an external server, the admin's kubeconfig impersonating them (`--as`, `--as-group`).
    pub(crate) async fn client_as(&self, user: &str, groups: &[&str]) -> kube::Client {
        match (&self.server, &self.external) {
            (Some(server), _) => server
                .client(&server.identity(user, groups).expect("identity"))
                .await
                .expect("client"),
            (None, Some(yaml)) => {
                let kubeconfig = kube::config::Kubeconfig::from_yaml(yaml).expect("kubeconfig parses");
                let mut config = kube::Config::from_custom_kubeconfig(
                    kubeconfig,
                    &kube::config::KubeConfigOptions::default(),
                )
                .await
                .expect("kubeconfig works");
                config.auth_info.impersonate = Some(user.to_string());
                config.auth_info.impersonate_groups = Some(groups.iter().map(|g| g.to_string()).collect());
                kube::Client::try_from(config).expect("client")
            }
            (None, None) => unreachable!("a cluster is the fake or external"),
        }
    }

    pub(crate) async fn cleanup(self) {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let _ = namespaces.delete(&self.ns, &DeleteParams::default()).await;
    }
}

pub(crate) fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Default::default()
    }
}

pub(crate) const WIDGET_GROUP: &str = "conformance.mco.test";

/// A namespaced test CRD with a status subresource, created if missing and awaited until
/// Established.
pub(crate) async fn ensure_widget_crd(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = format!("widgets.{WIDGET_GROUP}");
    let crd = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": WIDGET_GROUP, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap();
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.reason == "AlreadyExists" => {}
        Err(e) => panic!("creating the widget CRD: {e}"),
    }
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(crds, &name, conditions::is_crd_established()),
    )
    .await
    .expect("CRD established within 30 s")
    .expect("watching the CRD");
}

/// Delete the CRD `name` and wait until it is gone (a real server first removes its objects).
pub(crate) async fn remove_crd(client: &kube::Client, name: &str) {
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    let Ok(crd) = crds.get(name).await else {
        return;
    };
    let _ = crds.delete(name, &Default::default()).await;
    let uid = crd.metadata.uid.unwrap_or_default();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        kube::runtime::wait::await_condition(crds, name, kube::runtime::conditions::is_deleted(&uid)),
    )
    .await
    .expect("CRD deleted within 30 s")
    .expect("watching the CRD");
}

/// Wait until the CRD `name` is Established (a real server takes a moment; the fake none).
pub(crate) async fn await_established(client: &kube::Client, name: &str) {
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        kube::runtime::wait::await_condition(crds, name, kube::runtime::conditions::is_crd_established()),
    )
    .await
    .expect("CRD established within 30 s")
    .expect("watching the CRD");
}

/// A dynamic API for widgets in `ns`.
pub(crate) fn widgets(client: &kube::Client, ns: &str) -> Api<kube::api::DynamicObject> {
    let gvk = kube::api::GroupVersionKind::gvk(WIDGET_GROUP, "v1", "Widget");
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, "widgets");
    Api::namespaced_with(client.clone(), ns, &resource)
}

/// One cause of a 422: field, reason, message.
pub(crate) type Cause<'a> = (&'a str, &'a str, &'a str);

/// The whole 422 Status for `kind` `name` with `causes`, as apimachinery's `errors.NewInvalid`
/// builds it (the message lists the causes, once each, in brackets when there are several).
pub(crate) fn invalid(kind: &str, name: &str, causes: &[Cause]) -> Value {
    let mut each: Vec<String> = Vec::new();
    for (f, _, m) in causes {
        let text = format!("{f}: {m}");
        if !each.contains(&text) {
            each.push(text);
        }
    }
    let all = match each.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{kind} {name:?} is invalid: {all}"), "reason": "Invalid",
        "details": {"name": name, "kind": kind,
            "causes": causes.iter().map(|(f, r, m)| json!({"reason": r, "message": m, "field": f})).collect::<Vec<_>>()},
        "code": 422})
}

/// The Status of a failed kube call.
pub(crate) fn status_of<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(s)) => (s.code, s.reason.clone()),
        other => panic!("expected an API error Status, got {other:?}"),
    }
}

/// A raw reply: the status code, the body as JSON (`Null` when it is not JSON, or nests past
/// serde_json's limit) and as bytes.
pub(crate) struct Reply {
    pub code: u16,
    pub body: Value,
    pub bytes: bytes::Bytes,
}

/// Send one raw request through `client` (its TLS and credentials, none of its typing).
pub(crate) async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Reply {
    send_with(client, method, path, &[], content_type, body).await
}

/// `send` with extra request headers (each pair one header line, so a name may repeat).
pub(crate) async fn send_with(
    client: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Reply {
    let mut req = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if let Some(ct) = content_type {
        req = req.header(http::header::CONTENT_TYPE, ct);
    }
    let response = client
        .send(req.body(kube::client::Body::from(body)).expect("request builds"))
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: no HTTP response: {e}"));
    let code = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body arrives")
        .to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply { code, body, bytes }
}
