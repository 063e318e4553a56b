//! One scenario's fake cluster, ready to act on: the API server, the reference cluster side
//! running on watches, and nodes (embedded, or containers: `NodeBackend`) with their kubelets
//! and agents, all on one simulated clock. Steps and Rust tests drive it; nothing in it is global.
//!
//! Time moves deadline by deadline (`advance`): the clock stops at every instant a certificate
//! rule fires, the cluster side reconciles there, and the nodes converge before it moves on, so
//! each rotation is seen by every node as it would be in a cluster that lived through it.

//!
//! # Layout
//! - `stepping`: `advance`, heartbeats, `converge`.
//! - `act`: forced rotation, added MachineConfigs, serving-certificate rotation.
//! - `observe`: what steps read back.
//! - `node_history`: each Node's cordon and drain annotations over the scenario, from a watch.
//! - `crash`: a node's sync crashed at each of its file-changing system calls in turn.
//! - `power_loss`: a node's sync recorded, and every state a power loss can leave of it.
//! - `pool_history`: each pool's target and `Updated`/`Updating` conditions, from a watch.
//! - `pace`: the host's paced time, which lateness is judged in.

mod act;
mod crash;
pub mod endpoint;
mod join;
pub mod node_history;
mod nudge;
mod observe;
pub use crate::pace;
pub mod pool_history;
mod power_loss;
mod stepping;
pub mod timeline;
pub use act::ServingCaChange;
pub use crash::{CrashPlan, CrashReport, CrashRun, Expectation, FileState, Files};
pub use endpoint::{ClusterEndpoint, KubeconfigEndpoint};
pub use power_loss::PowerLossReport;
pub use stepping::SYNC_BOUND;

use crate::agent::ReferenceDaemon;
use crate::cluster::install::install;
use crate::cluster::mcc::{machine_config_pools, machine_configs};
use crate::cluster::operator::controller_configs;
use crate::cluster::render::Templates;
use crate::cluster::{
    ClusterError, ClusterLog, ClusterSide, MachineConfigController, NodeLifecycle, Operator, SignerRotation,
};
use crate::mco::McoObject;
use crate::mco::controller_config::ControllerConfigSpec;
use crate::mco::machine_config::{MachineConfig, MachineConfigSpec};
use crate::mco::pool::{MachineConfigPool, MachineConfigPoolSpec, MachineConfigPoolStatus};
use crate::mco::{
    CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_SYNCED_CONTROLLER_CONFIG, REASON, STATE,
    STATE_DEGRADED, STATE_DONE, STATE_UNRECONCILABLE,
};
use crate::node::agent_service::AgentProcess;
use crate::node::container::{ContainerNode, ContainerSpec};
use crate::node::kubelet::FakeKubelet;
use crate::node::light::{LightClients, LightKubelet};
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
    /// Where the nodes run.
    pub backend: NodeBackend,
    /// Whether the bootstrap node has handed over (`kube-system/bootstrap` exists) when the
    /// scenario starts. When not, the nodes run the configs the bootstrap MCO rendered.
    pub bootstrap_complete: bool,
    /// Installed on an earlier release and upgraded into this one: the serving CA bundle holds
    /// a signer made in the cluster since (named so), which the nodes' kubeconfigs lack, and
    /// `kubeconfig-data` was never written (`crate::cluster::install::History`).
    pub upgraded_with_serving_signer: Option<String>,
    /// Record what changed when, for the reports (`timeline`): API reads at every clock stop.
    pub timeline: bool,
    /// `--nudge-first-sync` (see `nudge`).
    pub nudge_first_sync: bool,
    /// The API server: the scenario's own fake, or a kube-apiserver given by kubeconfig.
    pub endpoint: ClusterEndpoint,
    /// An upstream machine-config-controller in place of the reference's
    /// (`crate::cluster::upstream`); `None` runs the reference.
    pub controller: Option<crate::cluster::upstream::UpstreamController>,
    /// An upstream machine-config-server in place of the reference's (`--server-binary`).
    pub server: Option<crate::cluster::upstream_server::UpstreamServer>,
}

/// Where a scenario's nodes run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NodeBackend {
    /// Temp dirs, services as tasks in this process.
    #[default]
    Embedded,
    /// Containers of `image` (the node image, or a vendor's image built FROM it).
    Container { image: String },
    /// Embedded nodes that share their daemons' and kubelets' connections, for thousands of
    /// nodes in one process (`crate::node::light`: what they cannot show).
    Light,
}

/// Which agent runs on the nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentKind {
    /// The reference daemon, in this process.
    Reference,
    /// The reference daemon with one behaviour broken on purpose (the self-test): in this
    /// process on embedded nodes, `mco-reference-daemon --mutant NAME` on container nodes.
    Mutant(crate::agent::Mutant),
    /// A binary honouring the agent contract, as a process per node, with `mco-node-tools`
    /// as its `systemctl`, `journalctl` and `logger`. Container nodes run the copy in their
    /// image, `/usr/bin/<file name>`.
    Binary {
        path: PathBuf,
        args: Vec<String>,
        node_tools: PathBuf,
    },
    /// A vendor's image built FROM the node image; `command` is its entrypoint and command,
    /// which the init runs as the agent service (container nodes only).
    Image { image: String, command: Vec<String> },
}

impl AgentKind {
    /// The agent's command line inside a container node.
    pub fn container_command(&self) -> Vec<String> {
        match self {
            AgentKind::Reference => vec![crate::node::init::REFERENCE_AGENT.to_string()],
            AgentKind::Mutant(m) => vec![
                crate::node::init::REFERENCE_AGENT.to_string(),
                "--mutant".to_string(),
                m.name().to_string(),
            ],
            AgentKind::Binary { path, args, .. } => {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                std::iter::once(format!("/usr/bin/{name}"))
                    .chain(args.iter().cloned())
                    .collect()
            }
            AgentKind::Image { command, .. } => command.clone(),
        }
    }
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
            backend: NodeBackend::Embedded,
            bootstrap_complete: true,
            upgraded_with_serving_signer: None,
            timeline: false,
            nudge_first_sync: false,
            endpoint: ClusterEndpoint::InProcess,
            controller: None,
            server: None,
        }
    }
}

/// What the bootstrap MCO renders for each pool (`pkg/operator/bootstrap.go`): the templates
/// over the installed ControllerConfig with the kubelet CA bundle of a cluster whose bootstrap
/// has not completed, merged and named as the render controller does. The in-cluster
/// controller must arrive at the same names (PR #3513), or nodes look for a config that does
/// not exist.
async fn bootstrap_renders(
    admin: &kube::Client,
    templates: &Templates,
    profile: Profile,
    operator: &crate::cluster::Operator,
) -> Result<BTreeMap<String, (String, MachineConfigSpec)>, ScenarioError> {
    let bundle = crate::cluster::kubelet_ca_bundle(profile, &operator.sources().await?)?;
    let cc = controller_configs(admin)
        .get("machine-config-controller")
        .await
        .map_err(|e| ClusterError::kube("controllerconfig".into(), e))?;
    let mut cc_spec = ControllerConfigSpec::of(&cc.data)
        .map_err(|e| fixture_err(format!("controllerconfig machine-config-controller: {e}")))?;
    cc_spec.other.insert(
        "kubeAPIServerServingCAData".into(),
        base64::engine::general_purpose::STANDARD.encode(bundle).into(),
    );
    let mut out = BTreeMap::new();
    for role in &templates.roles {
        let templated = crate::cluster::render::template_machine_config(templates, profile, role, &cc_spec);
        let templated = MachineConfig::from_json(&templated).map_err(fixture_err)?;
        let spec = crate::cluster::render::merge_machine_configs(&[templated]);
        out.insert(
            role.clone(),
            (crate::cluster::render::rendered_name(role, &spec), spec),
        );
    }
    Ok(out)
}

/// A node of the scenario's backend with the kubelet and the agent as services, seeded by the
/// caller and then booted.
async fn start_node(
    name: &str,
    options: &ScenarioOptions,
    clock: SimClock,
    light: Option<&LightClients>,
) -> Result<Arc<dyn Node>, crate::node::NodeError> {
    let profile = options.profile;
    match &options.backend {
        NodeBackend::Light => {
            let (Some(light), AgentKind::Reference) = (light, &options.agent) else {
                return Err(crate::node::NodeError::Io {
                    node: name.into(),
                    path: "<agent>".into(),
                    source: std::io::Error::other(
                        "light nodes run the reference daemon in this process, with the scenario's shared clients (tag the scenario @light: a run with another agent then skips it)",
                    ),
                });
            };
            let node = EmbeddedNode::new(name, &[KUBELET_UNIT, CRIO_UNIT, AGENT_UNIT], clock)?;
            node.without_private_bus();
            node.set_service(
                KUBELET_UNIT,
                Arc::new(LightKubelet {
                    client: light.kubelet.clone(),
                }),
            );
            node.set_service(
                AGENT_UNIT,
                Arc::new(ReferenceDaemon {
                    profile,
                    mutant: None,
                    client: Some(light.agent.clone()),
                }),
            );
            Ok(Arc::new(node))
        }
        NodeBackend::Embedded => {
            let node = EmbeddedNode::new(name, &[KUBELET_UNIT, CRIO_UNIT, AGENT_UNIT], clock)?;
            node.set_service(
                KUBELET_UNIT,
                Arc::new(crate::node::restart::RestartAlways(Arc::new(FakeKubelet))),
            );
            let agent: Arc<dyn Service> = match &options.agent {
                AgentKind::Reference => Arc::new(ReferenceDaemon {
                    profile,
                    mutant: None,
                    client: None,
                }),
                AgentKind::Mutant(m) => Arc::new(ReferenceDaemon {
                    profile,
                    mutant: Some(*m),
                    client: None,
                }),
                AgentKind::Binary {
                    path,
                    args,
                    node_tools,
                } => Arc::new(AgentProcess {
                    binary: path.clone(),
                    args: args.clone(),
                    profile,
                    node_tools: node_tools.clone(),
                }),
                AgentKind::Image { image, .. } => {
                    return Err(crate::node::NodeError::Io {
                        node: name.into(),
                        path: "<agent>".into(),
                        source: std::io::Error::other(format!(
                            "the agent image {image} needs container nodes"
                        )),
                    });
                }
            };
            node.set_service(AGENT_UNIT, agent);
            Ok(Arc::new(node))
        }
        NodeBackend::Container { image } => {
            let spec = ContainerSpec {
                image: image.clone(),
                agent: options.agent.container_command(),
            };
            Ok(Arc::new(
                ContainerNode::start(name, &spec, profile, &clock).await?,
            ))
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
    /// An API object that does not read as its kind's type (the MCO model in `mco`).
    #[error("{what} does not read as the API defines it: {source}")]
    Unreadable {
        what: String,
        #[source]
        source: serde_json::Error,
    },
}

fn unreadable(what: String, source: serde_json::Error) -> ScenarioError {
    ScenarioError::Unreadable { what, source }
}

pub struct Scenario {
    pub options: ScenarioOptions,
    server: endpoint::ApiServer,
    pub admin: kube::Client,
    pub clock: SimClock,
    pub side: Arc<ClusterSide>,
    pub nodes: Vec<Arc<dyn Node>>,
    pub log: ClusterLog,
    stop: CancellationToken,
    next_serving: std::sync::Mutex<Option<fake_apiserver::ServingCert>>,
    /// The root only the cluster's own clients trust (see `Scenario::start`).
    cluster_root: fake_apiserver::CertificateAuthority,
    /// The serving CAs steps added by name, with their keys, to serve from later.
    added_serving: std::sync::Mutex<Vec<fake_apiserver::CertificateAuthority>>,
    /// Where the machine-config controller serves `/metrics`.
    pub metrics_addr: std::net::SocketAddr,
    /// Per pool, the rendered config the bootstrap MCO made, when the scenario started before
    /// the bootstrap node handed over.
    pub bootstrap_rendered: BTreeMap<String, String>,
    /// What a Prometheus scraping that endpoint at every clock stop has recorded.
    prometheus: std::sync::Mutex<crate::prometheus::Prometheus>,
    /// Every Node's cordon and drain annotations over the scenario, as a watch saw them.
    pub node_history: node_history::NodeHistory,
    /// Every pool's target and update conditions over the scenario, as a watch saw them.
    pub pool_history: pool_history::PoolHistory,
    /// The longest the nodes took to reflect a change (paced milliseconds, `pace`), for the report.
    slowest_sync_ms: std::sync::atomic::AtomicU64,
    /// The signers and targets the cluster rotates (`fixtures/signers.yaml`).
    catalogue: Arc<Catalogue>,
    /// The serving CAs the agents' kubeconfigs trust (a joining node's agent trusts them too).
    agent_trust: String,
    /// What changed when, for the reports; `None` unless `options.timeline`.
    timeline: Option<std::sync::Mutex<timeline::Timeline>>,
    /// The clients light nodes share; `None` for other backends.
    light: Option<LightClients>,
    /// The upstream machine-config-controller, when one runs in the reference's place, and the
    /// directory of its kubeconfig and log.
    controller: Option<(crate::cluster::upstream::RunningController, tempfile::TempDir)>,
    /// The upstream machine-config-server, when one runs in the reference's place, and the
    /// directory of its files and log.
    mcs: Option<(crate::cluster::upstream_server::RunningServer, tempfile::TempDir)>,
}

fn fixture_err(e: impl std::fmt::Display) -> ScenarioError {
    ScenarioError::Fixture(e.to_string())
}

impl Scenario {
    pub async fn start(mut options: ScenarioOptions) -> Result<Self, ScenarioError> {
        crate::interrupt::check().map_err(ScenarioError::NotConverged)?;
        // Every wait grows with the nodes there are to wait for (see `SYNC_BOUND_PER_NODE`).
        let planned: usize = options.nodes.iter().map(|(_, n)| n).sum();
        options.deadline +=
            stepping::SYNC_BOUND_PER_NODE.saturating_mul(u32::try_from(planned).unwrap_or(u32::MAX));
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server =
            endpoint::ApiServer::start(&options.endpoint, options.profile.node_authorizer_selectors())
                .await
                .map_err(ScenarioError::ApiServer)?;
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
        // An upgraded cluster's signer made in the cluster since install (named by the options).
        let upgraded_ca = options
            .upgraded_with_serving_signer
            .as_deref()
            .map(fake_apiserver::CertificateAuthority::generate)
            .transpose()
            .map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
        // The cluster's own clients (operators, controllers, the harness as `oc`) also trust
        // every serving CA a step adds and then serves from, as OpenShift's operators read the
        // serving CA bundle again: the API server presents such a CA cross-signed by this root,
        // which only they trust, so nodes and agents still judge the CA on its own.
        let cluster_root = fake_apiserver::CertificateAuthority::generate("mco-conformance cluster trust")
            .map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
        let admin_trusted = format!("{trusted}{}", cluster_root.cert_pem);
        let admin_kubeconfig =
            fake_apiserver::kubeconfig(server.url(), &admin_trusted, server.admin_identity());
        // The cluster side and the observers read every node at once; with thousands of light
        // nodes, HTTP/1.1 would open a connection per read in flight (and keep it).
        let admin = match options.backend {
            NodeBackend::Light => crate::h2_client::client_from_kubeconfig(&admin_kubeconfig)
                .await
                .map(|(client, _)| client)
                .map_err(ScenarioError::ApiServer)?,
            _ => fake_apiserver::client_from_kubeconfig(&admin_kubeconfig)
                .await
                .map_err(|e| ScenarioError::ApiServer(e.to_string()))?,
        };
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
        // Everything the scenario runs in the background stops with it; until the scenario is
        // made, a start that fails stops it on its way out.
        let stop = CancellationToken::new();
        let stop_on_failure = stop.clone().drop_guard();
        let node_cache = crate::cluster::NodeCache::spawn(admin.clone(), stop.clone());
        let mcc = options.controller.is_none().then(|| {
            MachineConfigController::new(
                admin.clone(),
                templates.clone(),
                profile,
                clock.clone(),
                log.clone(),
                node_cache.clone(),
            )
        });
        let side = Arc::new(ClusterSide::new(
            crate::cluster::runner::Controllers {
                signers: SignerRotation::new(
                    admin.clone(),
                    catalogue.clone(),
                    profile,
                    clock.clone(),
                    log.clone(),
                ),
                operator: Operator::new(admin.clone(), profile, clock.clone(), log.clone()),
                mcc,
                lifecycle: NodeLifecycle::new(admin.clone(), clock.clone(), log.clone()),
            },
            log.clone(),
            clock.clone(),
            admin.clone(),
            node_cache,
        ));
        if server.is_real() {
            // What the scenario before made goes first (it had the server to itself).
            crate::cluster::install::clean(&admin, &options.fixtures).await?;
            crate::cluster::install::grant_daemon_rights(&admin).await?;
        }
        install(
            &admin,
            profile,
            &options.fixtures,
            &side.signers,
            &state,
            &server.ca_pem(),
            &crate::cluster::install::History {
                bootstrap_complete: options.bootstrap_complete,
                upgraded_with_serving_ca: upgraded_ca.as_ref().map(|ca| ca.cert_pem.clone()),
            },
        )
        .await?;
        let bootstrap = match (&options.controller, options.bootstrap_complete) {
            (_, true) => BTreeMap::new(),
            (Some(upstream), false) => {
                let bundle = crate::cluster::kubelet_ca_bundle(profile, &side.operator.sources().await?)?;
                let dir = tempfile::tempdir().map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
                upstream
                    .bootstrap_render(&admin, &bundle, profile.payload_version(), dir.path())
                    .await?
            }
            (None, false) => bootstrap_renders(&admin, &templates, profile, &side.operator).await?,
        };
        side.settle().await?;
        let controller = match &options.controller {
            Some(upstream) => {
                let dir = tempfile::tempdir().map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
                let running = upstream
                    .start(&admin, &admin_kubeconfig, profile.payload_version(), dir.path())
                    .await?;
                eventually(options.deadline, || crate::cluster::upstream::caught_up(&admin))
                    .await
                    .map_err(|e| {
                        ScenarioError::NotConverged(format!(
                            "the upstream machine-config-controller: {e}\nits log:\n{}",
                            running.tail(20)
                        ))
                    })?;
                Some((running, dir))
            }
            None => None,
        };
        let mcs = match &options.server {
            Some(upstream) => {
                let dir = tempfile::tempdir().map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
                let running = upstream
                    .start(
                        &admin_kubeconfig,
                        server.url(),
                        &server.ca_pem(),
                        dir.path(),
                        // Its informers sync before it listens; on a loaded host that takes
                        // longer than a step's convergence, and no verdict rests on it.
                        options
                            .deadline
                            .max(crate::cluster::upstream_server::START_DEADLINE),
                    )
                    .await?;
                Some((running, dir))
            }
            None => None,
        };
        let agent = join::agent_identity(&server)?;
        let light = match options.backend {
            NodeBackend::Light => Some(join::light_clients(&server, &trusted, &agent).await?),
            _ => None,
        };
        let mut planned = Vec::new();
        for (role, count) in &options.nodes {
            let served = match (bootstrap.get(role), &mcs) {
                // Nodes boot with what the bootstrap MCO served, whatever the cluster renders.
                (Some((name, spec)), _) => {
                    crate::cluster::server::serve_config(&admin, profile, name.clone(), spec.clone()).await?
                }
                (None, Some((running, _))) => running.serve(role).await?,
                (None, None) => crate::cluster::server::serve(&admin, profile, role).await?,
            };
            // An upgraded cluster's nodes were served at install, before kubeconfig-data
            // existed: their kubeconfigs trust the bootstrap token's CA, not what the server
            // would build from kubeconfig-data now.
            let served = if options.upgraded_with_serving_signer.is_some() {
                crate::cluster::server::Served {
                    kubeconfig_ca: None,
                    ..served
                }
            } else {
                served
            };
            for i in 0..*count {
                planned.push((format!("{role}-{i}"), role.as_str(), served.clone()));
            }
        }
        // Every node starts, is seeded and boots at once (container nodes take their turn at
        // the start limit); the scenario's nodes keep the order they were asked for in.
        let start = join::NodeStart {
            options: &options,
            server: &server,
            admin: &admin,
            agent: &agent,
            clock: clock.clone(),
            agent_trust: &trusted,
            light: light.as_ref(),
        };
        let starts: Vec<_> = planned
            .iter()
            .map(|(name, role, served)| start.start(name, role, served))
            .collect();
        // A node that fails to start fails the scenario; those that started are shut down, or
        // their services would run on (and keep their roots) for as long as the process does.
        let mut nodes = Vec::new();
        let mut failed = None;
        for started in futures::future::join_all(starts).await {
            match started {
                Ok(node) => nodes.push(node),
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        if let Some(e) = failed {
            for node in &nodes {
                node.shutdown().await;
            }
            return Err(e);
        }
        let node_history = node_history::NodeHistory::spawn(admin.clone(), stop.clone());
        let pool_history = pool_history::PoolHistory::spawn(admin.clone(), stop.clone());
        tokio::spawn(crate::cluster::csr::run(
            admin.clone(),
            server.client_ca().clone(),
            clock.clone(),
            log.clone(),
            stop.clone(),
        ));
        side.clone().spawn(stop.clone());
        let metrics_addr =
            match (&side.mcc, &controller) {
                (Some(mcc), _) => mcc.metrics().serve(stop.clone()).await.map_err(|e| {
                    ScenarioError::ApiServer(format!("serving the controller's metrics: {e}"))
                })?,
                (None, Some((running, _))) => running.metrics,
                (None, None) => {
                    return Err(ScenarioError::ApiServer(
                        "no machine-config controller runs".into(),
                    ));
                }
            };
        let options_timeline = options.timeline;
        stop_on_failure.disarm();
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
            cluster_root,
            added_serving: std::sync::Mutex::new(upgraded_ca.into_iter().collect()),
            metrics_addr,
            bootstrap_rendered: bootstrap
                .into_iter()
                .map(|(pool, (name, _))| (pool, name))
                .collect(),
            prometheus: std::sync::Mutex::new(Default::default()),
            node_history,
            pool_history,
            slowest_sync_ms: std::sync::atomic::AtomicU64::new(0),
            catalogue,
            agent_trust: trusted,
            timeline: options_timeline.then(Default::default),
            light,
            controller,
            mcs,
        };
        let ready = async {
            scenario.await_kubelets().await?;
            scenario.await_first_sync().await?;
            scenario.scrape_metrics().await?;
            scenario.record_timeline().await;
            scenario.pools_updated_at_start().await;
            scenario.pools_shown_now().await?;
            scenario.pool_history.mark_started();
            Ok(())
        };
        if let Err(e) = ready.await {
            // The nodes' own words on why (an agent that never synced says so in its journal),
            // read before nothing of a scenario that never became ready may outlive it.
            let journals = scenario.journal_tails(20).await;
            scenario.shutdown().await;
            return Err(match journals {
                j if j.is_empty() => e,
                j => ScenarioError::NotConverged(format!("{e}\n{j}")),
            });
        }
        Ok(scenario)
    }

    /// Settle the cluster side, and wait for an upstream machine-config controller to act on
    /// what it now holds (`crate::cluster::upstream::caught_up`), up to the deadline.
    pub async fn settle(&self) -> Result<(), ScenarioError> {
        self.side.settle().await?;
        let Some(running) = self.upstream_controller() else {
            return Ok(());
        };
        eventually(self.options.deadline, || {
            crate::cluster::upstream::caught_up(&self.admin)
        })
        .await
        .map_err(|e| {
            ScenarioError::NotConverged(format!(
                "the upstream machine-config-controller: {e}\nits log:\n{}",
                running.tail(20)
            ))
        })
    }

    /// The upstream machine-config-controller running in the reference's place, if one does.
    pub fn upstream_controller(&self) -> Option<&crate::cluster::upstream::RunningController> {
        self.controller.as_ref().map(|(running, _)| running)
    }

    /// The upstream machine-config-server, when one runs in the reference's place.
    pub fn upstream_server(&self) -> Option<&crate::cluster::upstream_server::RunningServer> {
        self.mcs.as_ref().map(|(running, _)| running)
    }

    /// The last `lines` lines of each node's journal, each block headed by the node's name.
    async fn journal_tails(&self, lines: usize) -> String {
        let mut out = String::new();
        for node in &self.nodes {
            let Ok(journal) = node.journal_since(crate::node::JournalMark(0)).await else {
                continue;
            };
            let tail = &journal[journal.len().saturating_sub(lines)..];
            out.push_str(&format!("{} journal (last {} lines):\n", node.name(), tail.len()));
            for line in tail {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }

    /// The scenario's own fake API server; `None` against a kube-apiserver given by kubeconfig.
    pub fn server(&self) -> Option<&fake_apiserver::ServerHandle> {
        self.server.in_process()
    }

    pub async fn shutdown(&self) {
        self.stop.cancel();
        for node in &self.nodes {
            node.shutdown().await;
        }
    }
}
