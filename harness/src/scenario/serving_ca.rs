//! The kube-apiserver's serving CA in a running scenario: publishing a CA in the serving CA
//! bundle (and waiting out the 4.16 operator's settle time), taking one out, the agents'
//! kubeconfigs following the bundle on restart, and the API server serving from a new CA. Only
//! the scenario's own in-process API server can swap its serving certificate.

use super::*;
use crate::node::seed::AGENT_KUBECONFIG;

/// Which CA `Scenario::publish_serving_ca` adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServingCaChange {
    /// The CA the API server moves to on `rotate_api_serving_cert`.
    Next,
    /// A new serving signer with this common name (KAS-O names a rotated one
    /// `openshift-kube-apiserver-operator_<secret>@<unix>`; the installer's keep their own).
    Signer { common_name: String },
}

/// Polls of the operator's serving-CA wait a step goes through before it gives up.
const OPERATOR_WAIT_STOPS: usize = 100;

impl Scenario {
    /// Publish a new CA in `openshift-config-managed/kube-apiserver-server-ca` beside the
    /// current one, as the kube-apiserver operator does before it serves from it, then wait
    /// for the cluster and nodes to follow. Returns the CA added (PEM).
    pub async fn publish_serving_ca(&self, change: ServingCaChange) -> Result<String, ScenarioError> {
        let added = self.publish_serving_ca_now(change).await?;
        self.through_operator_wait().await?;
        Ok(added)
    }

    /// [`Scenario::publish_serving_ca`], ending once the cluster side reacted to the change
    /// without moving the clock: a 4.16 operator is then still waiting for the bundle to settle.
    pub async fn publish_serving_ca_now(&self, change: ServingCaChange) -> Result<String, ScenarioError> {
        let added = match change {
            ServingCaChange::Next => self
                .next_serving
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|n| n.ca_pem.clone())
                .ok_or_else(|| {
                    ScenarioError::ApiServer("the serving certificate was already rotated".into())
                })?,
            ServingCaChange::Signer { common_name } => {
                let ca = fake_apiserver::CertificateAuthority::generate(&common_name)
                    .map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
                let pem = ca.cert_pem.clone();
                self.added_serving
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(ca);
                self.agents_trust_on_restart(&pem).await?;
                pem
            }
        };
        let (ns, name) = crate::cluster::names::KUBE_APISERVER_SERVER_CA;
        let bundle = format!("{}{added}", self.bundle(ns, name).await?);
        self.write_serving_ca_bundle(&bundle).await?;
        Ok(added)
    }

    /// Add `ca_pem` to every node's agent kubeconfig, as the daemon pod's service-account
    /// `ca.crt` follows the serving CA bundle (a projected volume): a running agent keeps what
    /// it loaded at start, a restarted one trusts the new CA too.
    async fn agents_trust_on_restart(&self, ca_pem: &str) -> Result<(), ScenarioError> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        for node in &self.nodes {
            let Ok(text) = node.read(AGENT_KUBECONFIG).await else {
                continue; // light nodes' agents share a client and have no kubeconfig file
            };
            let mut doc: serde_yaml::Value = serde_yaml::from_slice(&text)
                .map_err(|e| ScenarioError::ApiServer(format!("{}: {AGENT_KUBECONFIG}: {e}", node.name())))?;
            let cluster = &mut doc["clusters"][0]["cluster"];
            let current = cluster["certificate-authority-data"]
                .as_str()
                .and_then(|d| b64.decode(d).ok())
                .unwrap_or_default();
            let mut bundle = String::from_utf8_lossy(&current).into_owned();
            if !bundle.ends_with('\n') && !bundle.is_empty() {
                bundle.push('\n');
            }
            bundle.push_str(ca_pem);
            cluster["certificate-authority-data"] = b64.encode(bundle).into();
            let yaml = serde_yaml::to_string(&doc).map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
            node.write(AGENT_KUBECONFIG, yaml.as_bytes(), 0o600)
                .await
                .map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
        }
        Ok(())
    }

    /// Take a CA (PEM, as `publish_serving_ca` returned it) out of
    /// `openshift-config-managed/kube-apiserver-server-ca`, as KAS-O drops an expired one, and wait
    /// for the cluster and nodes to follow.
    pub async fn remove_serving_ca(&self, pem: &str) -> Result<(), ScenarioError> {
        let (ns, name) = crate::cluster::names::KUBE_APISERVER_SERVER_CA;
        let bundle = self.bundle(ns, name).await?;
        if !bundle.contains(pem.trim()) {
            return Err(ScenarioError::ApiServer(format!(
                "{ns}/{name} does not hold the CA to remove"
            )));
        }
        self.write_serving_ca_bundle(&bundle.replacen(pem.trim(), "", 1).replace("\n\n", "\n"))
            .await?;
        self.through_operator_wait().await
    }

    async fn write_serving_ca_bundle(&self, bundle: &str) -> Result<(), ScenarioError> {
        let (ns, name) = crate::cluster::names::KUBE_APISERVER_SERVER_CA;
        let patch = serde_json::json!({"data": {"ca-bundle.crt": bundle}});
        Api::<ConfigMap>::namespaced(self.admin.clone(), ns)
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(patch),
            )
            .await
            .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))?;
        self.advance(time::Duration::ZERO).await
    }

    /// Move the clock through the 4.16 operator's wait for the serving CA bundle to settle (a
    /// minute after the last change, polling every 15 s), so the step ends once it has copied
    /// the bundle into kubeconfig-data and the nodes have caught up.
    async fn through_operator_wait(&self) -> Result<(), ScenarioError> {
        // Each stop is a poll or the wait's end; a bundle that changes at every poll (which no
        // step does) would wait forever, so the stops are bounded.
        for _ in 0..OPERATOR_WAIT_STOPS {
            let Some(at) = self.side.operator_deadline() else {
                return Ok(());
            };
            self.advance((at - self.clock.now()).max(time::Duration::ZERO))
                .await?;
        }
        Err(ScenarioError::NotConverged(format!(
            "the operator still waits for kube-apiserver-server-ca to settle after {OPERATOR_WAIT_STOPS} polls"
        )))
    }

    /// The CA the API server moves to on `rotate_api_serving_cert`, while it has not yet.
    pub fn next_serving_ca(&self) -> Option<String> {
        self.next_serving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|n| n.ca_pem.clone())
    }

    /// The CA an upgraded cluster's serving CA bundle held from the start beside the nodes' (see
    /// `ScenarioOptions::upgraded_with_serving_signer`), as PEM.
    pub fn upgraded_serving_ca(&self) -> Option<String> {
        self.options.upgraded_with_serving_signer.as_ref()?;
        let added = self.added_serving.lock().unwrap_or_else(|p| p.into_inner());
        added.first().map(|ca| ca.cert_pem.clone())
    }

    /// Replace the API server's serving certificate with one issued by a CA a step added by name
    /// (`pem`, as `publish_serving_ca` returned it) and drop every connection. Only clients whose
    /// kubeconfig lists that CA trust it, besides the cluster's own (see `Scenario::start`): the
    /// chain carries the CA cross-signed by a root only they trust.
    pub fn serve_from_added_ca(&self, pem: &str) -> Result<(), ScenarioError> {
        let added = self.added_serving.lock().unwrap_or_else(|p| p.into_inner());
        let ca = added
            .iter()
            .find(|ca| ca.cert_pem.trim() == pem.trim())
            .ok_or_else(|| {
                ScenarioError::ApiServer(
                    "the API server can serve only from a CA a step added by name (a signer), not from \"a new CA\""
                        .into(),
                )
            })?;
        let api_error = |e: fake_apiserver::pki::PkiError| ScenarioError::ApiServer(e.to_string());
        let mut serving = ca
            .issue_serving(fake_apiserver::DEFAULT_SERVING_HOSTS)
            .map_err(api_error)?;
        serving
            .chain_pem
            .push_str(&ca.cross_signed_by(&self.cluster_root).map_err(api_error)?);
        self.in_process_server()?
            .rotate_serving_cert(serving, true)
            .map_err(|e| ScenarioError::ApiServer(e.to_string()))
    }

    /// Replace the API server's serving certificate with one from a new CA and drop every
    /// connection, so each client handshakes again: the cluster side and the agents trust the
    /// new CA, the kubelets (whose kubeconfigs hold the old one) do not. Once per scenario.
    pub fn rotate_api_serving_cert(&self) -> Result<(), ScenarioError> {
        let next = self
            .next_serving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| ScenarioError::ApiServer("the serving certificate was already rotated".into()))?;
        self.in_process_server()?
            .rotate_serving_cert(next, true)
            .map_err(|e| ScenarioError::ApiServer(e.to_string()))
    }
}

impl Scenario {
    /// The scenario's own fake API server, which alone can swap its serving certificate.
    fn in_process_server(&self) -> Result<&fake_apiserver::ServerHandle, ScenarioError> {
        self.server.in_process().ok_or_else(|| {
            ScenarioError::ApiServer(format!(
                "this step needs the in-process API server: {} (tag the scenario @{})",
                super::endpoint::IN_PROCESS_REASON,
                super::endpoint::IN_PROCESS_TAG
            ))
        })
    }
}
