//! One scenario's fake cluster, ready to act on: the API server, the reference cluster side
//! running on watches, and embedded nodes with their kubelets and agents, all on one simulated
//! clock. Steps and Rust tests drive it; nothing in it is global.
//!
//! Time moves deadline by deadline (`advance`): the clock stops at every instant a certificate
//! rule fires, the cluster side reconciles there, and the nodes converge before it moves on, so
//! each rotation is seen by every node as it would be in a cluster that lived through it.

use crate::agent::ReferenceDaemon;
use crate::agent::process::AgentProcess;
use crate::cluster::install::install;
use crate::cluster::mcc::{machine_config_pools, machine_configs};
use crate::cluster::operator::controller_configs;
use crate::cluster::render::Templates;
use crate::cluster::{
    ClusterError, ClusterLog, ClusterSide, MachineConfigController, NodeLifecycle, Operator, SignerRotation,
};
use crate::mco::{
    CURRENT_CONFIG, DESIRED_CONFIG, LAST_SYNCED_CONTROLLER_CONFIG, REASON, STATE, STATE_DEGRADED, STATE_DONE,
    STATE_UNRECONCILABLE,
};
use crate::node::kubelet::FakeKubelet;
use crate::node::seed::{NodeSeed, seed_node};
use crate::node::{AGENT_UNIT, CRIO_UNIT, EmbeddedNode, HEARTBEAT_FILE, KUBELET_UNIT, Node, Service};
use crate::pki::{Catalogue, Clock, IssuedCert, SimClock, StartingState, parse_certs, rfc3339};
use crate::profile::Profile;
use crate::wait::eventually;
use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Node as NodeObject, Secret};
use kube::api::{Api, ListParams};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Why the nodes have not caught up: still working, or stuck.
enum Pending {
    Waiting(String),
    /// An update failed (the node is Degraded or Unreconcilable): waiting longer will not help.
    Failed(String),
}

/// How a scenario starts.
#[derive(Debug, Clone)]
pub struct ScenarioOptions {
    pub profile: Profile,
    /// Name of a state in `fixtures/starting-states.yaml`.
    pub starting_state: String,
    /// `(role, count)` pairs.
    pub nodes: Vec<(String, usize)>,
    pub fixtures: PathBuf,
    /// How long convergence may take before a step fails.
    pub deadline: Duration,
    /// The agent each node runs.
    pub agent: AgentKind,
}

/// Which agent runs on the nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentKind {
    /// The reference daemon, in this process.
    Reference,
    /// A binary honouring the agent contract, as a process per node, with the
    /// `mco-node-systemctl` shim as its `systemctl`.
    Binary {
        path: PathBuf,
        args: Vec<String>,
        systemctl_shim: PathBuf,
    },
}

impl ScenarioOptions {
    pub fn new(profile: Profile) -> Self {
        ScenarioOptions {
            profile,
            starting_state: "fresh-install".into(),
            nodes: vec![("worker".into(), 2)],
            fixtures: default_fixtures(),
            deadline: Duration::from_secs(30),
            agent: AgentKind::Reference,
        }
    }
}

/// `fixtures/` of this repository.
pub fn default_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("harness/ has a parent")
        .join("fixtures")
}

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("starting the API server: {0}")]
    ApiServer(String),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("fixture: {0}")]
    Fixture(String),
    #[error("{0}")]
    NotConverged(String),
    #[error("node {node}: {message}")]
    Node { node: String, message: String },
}

pub struct Scenario {
    pub options: ScenarioOptions,
    server: fake_apiserver::ServerHandle,
    pub admin: kube::Client,
    pub clock: SimClock,
    pub side: Arc<ClusterSide>,
    pub nodes: Vec<EmbeddedNode>,
    pub log: ClusterLog,
    stop: CancellationToken,
    next_serving: std::sync::Mutex<Option<fake_apiserver::ServingCert>>,
}

fn fixture_err(e: impl std::fmt::Display) -> ScenarioError {
    ScenarioError::Fixture(e.to_string())
}

impl Scenario {
    pub async fn start(options: ScenarioOptions) -> Result<Self, ScenarioError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server = fake_apiserver::FakeApiServer::builder()
            .start()
            .await
            .map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
        // The serving CA a rotation of the API server's serving certificate moves to, made now so
        // that the cluster side and the agents trust it from the start, as OpenShift's clients
        // trust the whole serving CA bundle; only the kubelets' kubeconfigs hold just the
        // current CA, as a node's do until something rewrites them.
        let next_serving = fake_apiserver::ServingCert::generate(
            "fake-apiserver-serving-ca-2",
            fake_apiserver::DEFAULT_SERVING_HOSTS,
        )
        .map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
        let trusted = format!("{}{}", server.ca_pem(), next_serving.ca_pem);
        let admin = fake_apiserver::client_from_kubeconfig(&fake_apiserver::kubeconfig(
            server.url(),
            &trusted,
            server.admin_identity(),
        ))
        .await
        .map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
        let catalogue =
            Arc::new(Catalogue::load(&options.fixtures.join("signers.yaml")).map_err(fixture_err)?);
        let states = StartingState::load_all(&options.fixtures.join("starting-states.yaml"), &catalogue)
            .map_err(fixture_err)?;
        let state = states
            .into_iter()
            .find(|s| s.name == options.starting_state)
            .ok_or_else(|| {
                fixture_err(format!(
                    "no starting state {:?} in fixtures/starting-states.yaml",
                    options.starting_state
                ))
            })?;
        let templates =
            Arc::new(Templates::load(&options.fixtures.join("templates.yaml")).map_err(fixture_err)?);
        let (clock, log, profile) = (SimClock::default(), ClusterLog::default(), options.profile);
        let side = Arc::new(ClusterSide::new(
            SignerRotation::new(admin.clone(), catalogue, profile, clock.clone(), log.clone()),
            Operator::new(admin.clone(), profile, clock.clone(), log.clone()),
            MachineConfigController::new(admin.clone(), templates, profile, clock.clone(), log.clone()),
            NodeLifecycle::new(admin.clone(), clock.clone(), log.clone()),
            log.clone(),
            clock.clone(),
            admin.clone(),
        ));
        install(&admin, &options.fixtures, &side.signers, &state, true).await?;
        side.settle().await?;
        let cc = controller_configs(&admin)
            .get("machine-config-controller")
            .await
            .map_err(|e| ClusterError::kube("controllerconfig".into(), e))?;
        let bundle = base64::engine::general_purpose::STANDARD
            .decode(
                cc.data["spec"]["kubeAPIServerServingCAData"]
                    .as_str()
                    .unwrap_or(""),
            )
            .map_err(fixture_err)?;
        let agent = server
            .identity(
                "system:serviceaccount:openshift-machine-config-operator:machine-config-daemon",
                &["system:serviceaccounts"],
            )
            .map_err(fixture_err)?;
        let mut nodes = Vec::new();
        for (role, count) in &options.nodes {
            let pool = machine_config_pools(&admin)
                .get(role)
                .await
                .map_err(|e| ClusterError::kube(format!("machineconfigpool {role}"), e))?;
            let rendered = pool.data["spec"]["configuration"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let spec = machine_configs(&admin)
                .get(&rendered)
                .await
                .map_err(|e| ClusterError::kube(format!("machineconfig {rendered}"), e))?
                .data["spec"]
                .clone();
            for i in 0..*count {
                let name = format!("{role}-{i}");
                let node = EmbeddedNode::new(&name, &[KUBELET_UNIT, CRIO_UNIT, AGENT_UNIT], clock.clone())
                    .map_err(|e| ScenarioError::Node {
                        node: name.clone(),
                        message: e.to_string(),
                    })?;
                let kubelet = server
                    .identity(&format!("system:node:{name}"), &["system:nodes"])
                    .map_err(fixture_err)?;
                let seed = NodeSeed {
                    role,
                    api_url: server.url(),
                    agent_ca_pem: &trusted,
                    kubelet_ca_pem: &server.ca_pem(),
                    agent: &agent,
                    kubelet: &kubelet,
                    rendered: &rendered,
                    rendered_spec: &spec,
                    kubelet_ca: &bundle,
                };
                seed_node(&admin, &node, &seed)
                    .await
                    .map_err(|e| ScenarioError::Node {
                        node: name.clone(),
                        message: e.to_string(),
                    })?;
                node.set_service(KUBELET_UNIT, Arc::new(FakeKubelet));
                let agent: Arc<dyn Service> = match &options.agent {
                    AgentKind::Reference => Arc::new(ReferenceDaemon { profile }),
                    AgentKind::Binary {
                        path,
                        args,
                        systemctl_shim,
                    } => Arc::new(AgentProcess {
                        binary: path.clone(),
                        args: args.clone(),
                        profile,
                        systemctl_shim: systemctl_shim.clone(),
                    }),
                };
                node.set_service(AGENT_UNIT, agent);
                node.boot().await;
                nodes.push(node);
            }
        }
        let stop = CancellationToken::new();
        side.clone().spawn(stop.clone());
        let scenario = Scenario {
            options,
            server,
            admin,
            clock,
            side,
            nodes,
            log,
            stop,
            next_serving: std::sync::Mutex::new(Some(next_serving)),
        };
        scenario.await_kubelets().await?;
        Ok(scenario)
    }

    /// Every kubelet serving and its first node status posted.
    async fn await_kubelets(&self) -> Result<(), ScenarioError> {
        eventually(self.options.deadline, || async {
            for node in &self.nodes {
                if node.kubelet_endpoint().await.is_none() {
                    return Err(format!("{}: the kubelet is not serving yet", node.name()));
                }
            }
            Ok(())
        })
        .await
        .map_err(ScenarioError::NotConverged)?;
        self.await_heartbeats().await
    }

    /// Every running kubelet has tried to post its status at the clock's now, so the node
    /// lifecycle controller never judges a heartbeat that is about to come.
    async fn await_heartbeats(&self) -> Result<(), ScenarioError> {
        let now = rfc3339(self.clock.now());
        eventually(self.options.deadline, || async {
            for node in &self.nodes {
                if node.kubelet_endpoint().await.is_none() {
                    continue; // stopped: it posts nothing, as a stopped kubelet would
                }
                let seen = node.read(HEARTBEAT_FILE).await.unwrap_or_default();
                let seen = String::from_utf8_lossy(&seen);
                if !seen.starts_with(&now) {
                    return Err(format!(
                        "{}: the kubelet last tried to post its status at {:?}; the clock is at {now}",
                        node.name(),
                        seen.trim()
                    ));
                }
            }
            Ok(())
        })
        .await
        .map_err(ScenarioError::NotConverged)
    }

    pub fn server(&self) -> &fake_apiserver::ServerHandle {
        &self.server
    }

    /// MCO's e2e way to force a rotation: null `certificate-not-after` with a JSON patch, a
    /// minute after the last step (a rotation in the same second as the signer's issue would
    /// give the new signer the same name), then wait for the cluster and nodes to follow.
    pub async fn force_rotation(&self, namespace: &str, signer: &str) -> Result<(), ScenarioError> {
        self.advance(time::Duration::minutes(1)).await?;
        crate::cluster::force_rotation(&self.admin, namespace, signer).await?;
        self.advance(time::Duration::ZERO).await
    }

    /// Move the clock by `by`, stopping at every rule deadline on the way.
    pub async fn advance(&self, by: time::Duration) -> Result<(), ScenarioError> {
        let until = self.clock.now() + by;
        loop {
            let stop = self.side.next_stop(until).await?;
            self.clock.advance(stop - self.clock.now());
            self.await_heartbeats().await?;
            self.side.settle().await?;
            self.converge().await?;
            if stop >= until {
                return Ok(());
            }
        }
    }

    /// Wait until the cluster side is quiet and every node has caught up with it: on 4.16 each
    /// agent has synced the current ControllerConfig; on both, every node of an unpaused pool
    /// runs its pool's config and is `Done`.
    pub async fn converge(&self) -> Result<(), ScenarioError> {
        let deadline = self.options.deadline;
        let failed = eventually(deadline, || async {
            match self.pending().await {
                None => Ok(None),
                Some(Pending::Failed(why)) => Ok(Some(why)),
                Some(Pending::Waiting(what)) => Err(what),
            }
        })
        .await;
        let why = match failed {
            Ok(None) => return Ok(()),
            Ok(Some(why)) => why,
            Err(e) => e,
        };
        Err(ScenarioError::NotConverged(format!(
            "{why}\ncluster log (last 20):\n{}",
            self.log_tail(20)
        )))
    }

    /// What is still out of step, if anything. It only observes: reacting is the running
    /// cluster side's job.
    async fn pending(&self) -> Option<Pending> {
        let cc_rv = controller_configs(&self.admin)
            .get("machine-config-controller")
            .await
            .ok()?
            .metadata
            .resource_version
            .unwrap_or_default();
        let pools = machine_config_pools(&self.admin)
            .list(&ListParams::default())
            .await
            .ok()?;
        let targets: BTreeMap<String, (String, bool)> = pools
            .iter()
            .map(|p| {
                let v = serde_json::to_value(p).unwrap_or_default();
                (
                    p.metadata.name.clone().unwrap_or_default(),
                    (
                        v["spec"]["configuration"]["name"]
                            .as_str()
                            .unwrap_or("")
                            .to_string(),
                        v["spec"]["paused"].as_bool().unwrap_or(false),
                    ),
                )
            })
            .collect();
        let nodes = Api::<NodeObject>::all(self.admin.clone())
            .list(&ListParams::default())
            .await
            .ok()?;
        for node in nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let a = node.metadata.annotations.clone().unwrap_or_default();
            let get = |k: &str| a.get(k).cloned().unwrap_or_default();
            let role = node
                .metadata
                .labels
                .unwrap_or_default()
                .keys()
                .find_map(|l| l.strip_prefix("node-role.kubernetes.io/").map(str::to_string));
            if (get(STATE) == STATE_DEGRADED || get(STATE) == STATE_UNRECONCILABLE)
                && get(CURRENT_CONFIG) != get(DESIRED_CONFIG)
            {
                return Some(Pending::Failed(format!(
                    "node {name} is {} updating from {} to {}: {}",
                    get(STATE),
                    get(CURRENT_CONFIG),
                    get(DESIRED_CONFIG),
                    get(REASON)
                )));
            }
            if self.options.profile == Profile::Ocp416 && get(LAST_SYNCED_CONTROLLER_CONFIG) != cc_rv {
                return Some(Pending::Waiting(format!(
                    "node {name} synced controllerconfig {:?}, current is {cc_rv}",
                    get(LAST_SYNCED_CONTROLLER_CONFIG)
                )));
            }
            if let Some((target, paused)) = role.and_then(|r| targets.get(&r))
                && !paused
                && (get(CURRENT_CONFIG) != *target
                    || get(DESIRED_CONFIG) != *target
                    || get(STATE) != STATE_DONE)
            {
                return Some(Pending::Waiting(format!(
                    "node {name}: currentConfig {} desiredConfig {} state {} (pool target {target})",
                    get(CURRENT_CONFIG),
                    get(DESIRED_CONFIG),
                    get(STATE)
                )));
            }
        }
        None
    }

    /// Create a MachineConfig for `pool` with `spec` (named `99-<pool>-<n>`, the next free
    /// `n`), then wait until the cluster has rendered it and every node of the pool runs it.
    pub async fn add_machine_config(
        &self,
        pool: &str,
        spec: serde_json::Value,
    ) -> Result<String, ScenarioError> {
        let api = machine_configs(&self.admin);
        let existing = api
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("machineconfigs".into(), e))?;
        let prefix = format!("99-{pool}-");
        let n = existing
            .iter()
            .filter(|m| m.metadata.name.as_deref().is_some_and(|n| n.starts_with(&prefix)))
            .count();
        let name = format!("{prefix}{n}");
        let object: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": pool}},
            "spec": spec,
        }))
        .map_err(fixture_err)?;
        api.create(&kube::api::PostParams::default(), &object)
            .await
            .map_err(|e| ClusterError::kube(format!("machineconfig {name}"), e))?;
        self.advance(time::Duration::ZERO).await?;
        Ok(name)
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
        self.server
            .rotate_serving_cert(next, true)
            .map_err(|e| ScenarioError::ApiServer(e.to_string()))
    }

    /// Where the kube-apiserver reaches a node's kubelet: the Node's InternalIP and
    /// `status.daemonEndpoints.kubeletEndpoint.Port`, as the kubelet published them.
    pub async fn kubelet_address(&self, node: &str) -> Result<std::net::SocketAddr, ScenarioError> {
        let object = Api::<NodeObject>::all(self.admin.clone())
            .get(node)
            .await
            .map_err(|e| ClusterError::kube(format!("node {node}"), e))?;
        let status = object.status.unwrap_or_default();
        let ip = status
            .addresses
            .unwrap_or_default()
            .into_iter()
            .find(|a| a.type_ == "InternalIP")
            .and_then(|a| a.address.parse::<std::net::IpAddr>().ok());
        let port = status
            .daemon_endpoints
            .and_then(|d| d.kubelet_endpoint)
            .map(|e| e.port)
            .filter(|p| *p > 0);
        match (ip, port) {
            (Some(ip), Some(port)) => Ok(std::net::SocketAddr::new(ip, port as u16)),
            _ => Err(ScenarioError::Node {
                node: node.to_string(),
                message: "the kubelet has not published an InternalIP and port in the Node's status".into(),
            }),
        }
    }

    /// The Node's Ready condition as `(status, reason)`, if it has one.
    pub async fn node_ready(&self, node: &str) -> Result<Option<(String, String)>, ScenarioError> {
        let object = Api::<NodeObject>::all(self.admin.clone())
            .get(node)
            .await
            .map_err(|e| ClusterError::kube(format!("node {node}"), e))?;
        Ok(object
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status, c.reason.unwrap_or_default())))
    }

    pub fn log_tail(&self, n: usize) -> String {
        let lines = self.log.lines();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    pub fn node(&self, name: &str) -> Option<&EmbeddedNode> {
        self.nodes.iter().find(|n| n.name() == name)
    }

    pub async fn bundle(&self, namespace: &str, name: &str) -> Result<String, ScenarioError> {
        let cm = Api::<ConfigMap>::namespaced(self.admin.clone(), namespace)
            .get(name)
            .await
            .map_err(|e| ClusterError::kube(format!("configmap {namespace}/{name}"), e))?;
        Ok(cm
            .data
            .unwrap_or_default()
            .get("ca-bundle.crt")
            .cloned()
            .unwrap_or_default())
    }

    /// A certificate Secret (`tls.crt`, `tls.key`) as an issued certificate.
    pub async fn certificate(&self, namespace: &str, name: &str) -> Result<IssuedCert, ScenarioError> {
        let secret = Api::<Secret>::namespaced(self.admin.clone(), namespace)
            .get(name)
            .await
            .map_err(|e| ClusterError::kube(format!("secret {namespace}/{name}"), e))?;
        let data = secret.data.unwrap_or_default();
        let text = |k: &str| {
            data.get(k)
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                .unwrap_or_default()
        };
        let parsed = parse_certs(&text("tls.crt"))
            .map_err(fixture_err)?
            .into_iter()
            .next()
            .ok_or_else(|| fixture_err(format!("secret {namespace}/{name} holds no certificate")))?;
        Ok(IssuedCert {
            pem: text("tls.crt"),
            key_pem: text("tls.key"),
            common_name: parsed.common_name,
            issuer_common_name: parsed.issuer,
            not_before: parsed.not_before,
            not_after: parsed.not_after,
            serial: parsed.serial,
        })
    }

    /// Names of a pool's rendered configs.
    pub async fn rendered_configs(&self, pool: &str) -> Result<Vec<String>, ScenarioError> {
        let prefix = format!("rendered-{pool}-");
        let all = machine_configs(&self.admin)
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("machineconfigs".into(), e))?;
        Ok(all
            .into_iter()
            .filter_map(|m| m.metadata.name)
            .filter(|n| n.starts_with(&prefix))
            .collect())
    }

    pub async fn shutdown(&self) {
        self.stop.cancel();
        for node in &self.nodes {
            node.shutdown().await;
        }
    }
}
