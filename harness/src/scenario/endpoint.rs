//! The API server a scenario runs against.
//!
//! By default every scenario starts a fake API server of its own, in this process
//! (`ClusterEndpoint::InProcess`). Given a kubeconfig (`mco-conformance run --apiserver
//! KUBECONFIG`), scenarios run against that kube-apiserver instead, one at a time: before each,
//! what the previous one made is deleted (`clean`), cluster-scoped objects too, and the CRDs and
//! fixtures are installed again. The harness still issues every client certificate itself (the
//! nodes' kubelets as `system:node:<name>`, the daemons as their service account), from the CA
//! the server trusts for client certificates, whose certificate and key it is given beside the
//! kubeconfig: the nodes authenticate as OpenShift's do, through x509, and the Node authorizer
//! and NodeRestriction of the real server judge them.
//!
//! What only the in-process server can do is said per scenario by a tag
//! (`IN_PROCESS_TAG`): serving a certificate from another CA mid-scenario. The simulated clock
//! stays the harness's; the real server keeps wall time for what it stamps itself
//! (`creationTimestamp`, `managedFields`), which no step reads (DESIGN.md, two time domains).

use fake_apiserver::{CertificateAuthority, ClientIdentity, ServerHandle};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Scenarios that need the API server in this process, skipped against any other with
/// `IN_PROCESS_REASON`.
pub const IN_PROCESS_TAG: &str = "in-process-apiserver";

/// Why a scenario tagged `@in-process-apiserver` does not run against a kube-apiserver given by
/// kubeconfig.
pub const IN_PROCESS_REASON: &str =
    "it swaps the API server's serving certificate mid-scenario, which only the in-process API server can do";

/// Where a run's scenarios find their API server.
#[derive(Debug, Clone, Default)]
pub enum ClusterEndpoint {
    /// A fake API server per scenario, in this process.
    #[default]
    InProcess,
    /// The kube-apiserver a kubeconfig names, shared by the run's scenarios in turn.
    Kubeconfig(Arc<KubeconfigEndpoint>),
}

impl ClusterEndpoint {
    /// How the reports name it: `in-process` or the server's URL.
    pub fn describe(&self) -> String {
        match self {
            ClusterEndpoint::InProcess => "in-process".into(),
            ClusterEndpoint::Kubeconfig(real) => real.url.clone(),
        }
    }
}

/// A kube-apiserver given by kubeconfig, and the client CA it trusts.
pub struct KubeconfigEndpoint {
    pub kubeconfig: PathBuf,
    url: String,
    ca_pem: String,
    client_ca: CertificateAuthority,
    /// The harness's own identity there (`system:masters`), issued from the client CA.
    admin: ClientIdentity,
    /// One scenario at a time: each cleans the cluster before it starts.
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for KubeconfigEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeconfigEndpoint")
            .field("kubeconfig", &self.kubeconfig)
            .field("url", &self.url)
            .finish()
    }
}

impl KubeconfigEndpoint {
    /// Read the server's URL and serving CA from the kubeconfig's current context, and the CA
    /// it trusts for client certificates from its PEM certificate and PKCS#8 key. Errors name
    /// the file and what is missing.
    pub fn load(kubeconfig: &Path, client_ca_cert: &Path, client_ca_key: &Path) -> Result<Self, String> {
        let at = |what: &str| format!("{}: {what}", kubeconfig.display());
        let config = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| at(&e.to_string()))?;
        let context_name = config
            .current_context
            .clone()
            .ok_or_else(|| at("no current-context"))?;
        let context = config
            .contexts
            .iter()
            .find(|c| c.name == context_name)
            .and_then(|c| c.context.clone())
            .ok_or_else(|| at(&format!("no context {context_name:?}")))?;
        let cluster = config
            .clusters
            .iter()
            .find(|c| c.name == context.cluster)
            .and_then(|c| c.cluster.clone())
            .ok_or_else(|| at(&format!("no cluster {:?}", context.cluster)))?;
        let url = cluster
            .server
            .clone()
            .ok_or_else(|| at(&format!("cluster {:?} has no server", context.cluster)))?;
        let ca_pem = match (
            &cluster.certificate_authority_data,
            &cluster.certificate_authority,
        ) {
            (Some(data), _) => {
                use base64::Engine as _;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data.trim())
                    .map_err(|e| at(&format!("certificate-authority-data: {e}")))?;
                String::from_utf8(bytes).map_err(|e| at(&format!("certificate-authority-data: {e}")))?
            }
            (None, Some(file)) => std::fs::read_to_string(file)
                .map_err(|e| at(&format!("certificate-authority {file}: {e}")))?,
            (None, None) => {
                return Err(at(
                    "the cluster names no certificate authority (the nodes' kubeconfigs need the serving CA)",
                ));
            }
        };
        let read =
            |path: &Path| std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
        let client_ca = CertificateAuthority::from_pem(&read(client_ca_cert)?, &read(client_ca_key)?)
            .map_err(|e| {
                format!(
                    "{} with {}: {e}",
                    client_ca_cert.display(),
                    client_ca_key.display()
                )
            })?;
        let admin = client_ca
            .issue_client("mco-conformance", &["system:masters"])
            .map_err(|e| e.to_string())?;
        Ok(KubeconfigEndpoint {
            kubeconfig: kubeconfig.to_path_buf(),
            url,
            ca_pem,
            client_ca,
            admin,
            turn: Default::default(),
        })
    }
}

/// A scenario's API server: its own fake, or its turn on a real one.
pub(crate) enum ApiServer {
    InProcess(ServerHandle),
    Real {
        endpoint: Arc<KubeconfigEndpoint>,
        _turn: tokio::sync::OwnedMutexGuard<()>,
    },
}

impl ApiServer {
    /// Start the scenario's fake, or wait for the real server's turn.
    pub(crate) async fn start(
        endpoint: &ClusterEndpoint,
        node_authorizer_selectors: bool,
    ) -> Result<Self, String> {
        match endpoint {
            ClusterEndpoint::InProcess => fake_apiserver::FakeApiServer::builder()
                .node_authorizer_selectors(node_authorizer_selectors)
                .start()
                .await
                .map(ApiServer::InProcess)
                .map_err(|e| e.to_string()),
            ClusterEndpoint::Kubeconfig(real) => Ok(ApiServer::Real {
                endpoint: real.clone(),
                _turn: real.turn.clone().lock_owned().await,
            }),
        }
    }

    pub(crate) fn url(&self) -> &str {
        match self {
            ApiServer::InProcess(server) => server.url(),
            ApiServer::Real { endpoint, .. } => &endpoint.url,
        }
    }

    /// The CA of the certificate the server serves now.
    pub(crate) fn ca_pem(&self) -> String {
        match self {
            ApiServer::InProcess(server) => server.ca_pem(),
            ApiServer::Real { endpoint, .. } => endpoint.ca_pem.clone(),
        }
    }

    pub(crate) fn client_ca(&self) -> &CertificateAuthority {
        match self {
            ApiServer::InProcess(server) => server.client_ca(),
            ApiServer::Real { endpoint, .. } => &endpoint.client_ca,
        }
    }

    pub(crate) fn identity(&self, user: &str, groups: &[&str]) -> Result<ClientIdentity, String> {
        self.client_ca()
            .issue_client(user, groups)
            .map_err(|e| e.to_string())
    }

    pub(crate) fn admin_identity(&self) -> &ClientIdentity {
        match self {
            ApiServer::InProcess(server) => server.admin_identity(),
            ApiServer::Real { endpoint, .. } => &endpoint.admin,
        }
    }

    /// The fake, where the scenario has one.
    pub(crate) fn in_process(&self) -> Option<&ServerHandle> {
        match self {
            ApiServer::InProcess(server) => Some(server),
            ApiServer::Real { .. } => None,
        }
    }

    pub(crate) fn is_real(&self) -> bool {
        matches!(self, ApiServer::Real { .. })
    }
}
