//! The handle a test or a harness holds on a running server: its URL and CA, client
//! identities as kubeconfigs or `kube::Client`s, serving-certificate and client-CA rotation,
//! fault injection, and shutdown. The server itself (builder, accept loop) is `server.rs`.

use crate::auth::Authenticator;
use crate::error::ApiError;
use crate::faults::Fault;
use crate::pki::{CertificateAuthority, ClientIdentity, PkiError, ServingCert};
use crate::shared::{Shared, read, replace};
use crate::tls::TlsError;
use base64::Engine;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A running server. Dropping it stops the server.
pub struct ServerHandle {
    pub(crate) url: String,
    pub(crate) shared: Arc<Shared>,
    pub(crate) client_ca: CertificateAuthority,
    pub(crate) admin: ClientIdentity,
    pub(crate) shutdown: CancellationToken,
    pub(crate) task: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// `https://127.0.0.1:<port>`
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// The CA that clients must trust for the current serving certificate.
    pub fn ca_pem(&self) -> String {
        read(&self.shared.serving).ca_pem
    }

    /// The CA client identities are issued from.
    pub fn client_ca(&self) -> &CertificateAuthority {
        &self.client_ca
    }

    /// A new client identity: CN `user`, O `groups`.
    pub fn identity(&self, user: &str, groups: &[&str]) -> Result<ClientIdentity, PkiError> {
        self.client_ca.issue_client(user, groups)
    }

    /// `system:admin` in `system:masters`.
    pub fn admin_identity(&self) -> &ClientIdentity {
        &self.admin
    }

    /// A kubeconfig for `identity`, with CA data, an explicit port and a current context.
    pub fn kubeconfig(&self, identity: &ClientIdentity) -> String {
        kubeconfig(&self.url, &self.ca_pem(), identity)
    }

    /// A kube client authenticated as `identity`.
    pub async fn client(&self, identity: &ClientIdentity) -> Result<kube::Client, kube::Error> {
        client_from_kubeconfig(&self.kubeconfig(identity)).await
    }

    pub async fn admin_client(&self) -> Result<kube::Client, kube::Error> {
        self.client(&self.admin).await
    }

    /// Inject a fault (see `Fault`).
    pub fn inject(&self, fault: Fault) -> Result<(), ApiError> {
        self.shared.inject(fault)
    }

    /// A cloneable handle that injects faults, for tasks that outlive a borrow of the server.
    pub fn fault_injector(&self) -> FaultInjector {
        FaultInjector {
            shared: self.shared.clone(),
        }
    }

    /// Serve a new certificate on new handshakes; with `drop_connections`, close every open
    /// connection so clients must handshake again.
    pub fn rotate_serving_cert(&self, cert: ServingCert, drop_connections: bool) -> Result<(), TlsError> {
        self.shared.rebuild_tls(&cert, &self.shared.authenticator())?;
        replace(&self.shared.serving, cert);
        if drop_connections {
            self.shared.close_watches();
            self.shared.drop_connections();
        }
        Ok(())
    }

    /// Replace the trusted client CAs (PEM); applies to new connections.
    pub fn set_client_cas(&self, pems: &[String]) -> Result<(), String> {
        let authenticator = Authenticator::new(pems, self.shared.tokens.clone(), self.shared.anonymous)?;
        self.shared
            .rebuild_tls(&read(&self.shared.serving), &authenticator)
            .map_err(|e| e.to_string())?;
        replace(&self.shared.authenticator, Arc::new(authenticator));
        Ok(())
    }

    /// Stop accepting, close every connection, and wait for the accept loop to end.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Injects faults into a running server (see `ServerHandle::fault_injector`).
#[derive(Clone)]
pub struct FaultInjector {
    shared: Arc<Shared>,
}

impl FaultInjector {
    pub fn inject(&self, fault: Fault) -> Result<(), ApiError> {
        self.shared.inject(fault)
    }
}

/// A kubeconfig document for one identity on one server.
pub fn kubeconfig(url: &str, ca_pem: &str, identity: &ClientIdentity) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let context = format!("{}@fake-apiserver", identity.user);
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake-apiserver", "cluster": {"server": url, "certificate-authority-data": b64(ca_pem)}}],
        "users": [{"name": identity.user, "user": {
            "client-certificate-data": b64(&identity.cert_pem),
            "client-key-data": b64(&identity.key_pem)}}],
        "contexts": [{"name": context, "context": {"cluster": "fake-apiserver", "user": identity.user}}],
        "current-context": context,
        "preferences": {},
    });
    serde_yaml::to_string(&doc).expect("a JSON value serialises as YAML")
}

/// A kube client from a kubeconfig document, the way any kube-rs user makes one.
pub async fn client_from_kubeconfig(yaml: &str) -> Result<kube::Client, kube::Error> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(yaml).map_err(kube::Error::InferKubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(kube::Error::InferKubeconfig)?;
    kube::Client::try_from(config)
}
