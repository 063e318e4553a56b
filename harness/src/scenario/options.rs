//! How a scenario starts: the release, the starting state, the nodes and where they run, the
//! agent they run, and the API server and upstream components to run against
//! (`ScenarioOptions`). Plain data with its defaults; starting from it is `start`'s.

use super::endpoint::ClusterEndpoint;
use crate::profile::Profile;
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// `fixtures/` of this repository.
pub fn default_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("harness/ has a parent")
        .join("fixtures")
}
