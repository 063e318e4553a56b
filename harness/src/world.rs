//! The cucumber World: one per scenario, nothing global. It holds the scenario's fake cluster
//! once a `Given` step starts it, the profile the run is for (set by the runner before any
//! step), and what steps record to compare against later (journal marks, boot ids, signers).

use crate::node::JournalMark;
use crate::pki::IssuedCert;
use crate::profile::Profile;
use crate::scenario::Scenario;
use std::collections::BTreeMap;

/// How long any one step may run when the run asks for no other limit (`--step-limit`): far
/// beyond any step's own waits on an idle host (the longest, a certificate writer's next try
/// after upstream's work-queue backoff, is 1000 s; a 10,000-node start takes about a minute in a
/// debug build), short of CI's patience.
pub const DEFAULT_STEP_LIMIT: std::time::Duration = std::time::Duration::from_secs(1200);

#[derive(cucumber::World)]
#[world(init = Self::new)]
pub struct ConformanceWorld {
    pub profile: Profile,
    pub scenario: Option<Scenario>,
    /// Per node: the journal position when the scenario's cluster was up.
    pub marks: BTreeMap<String, JournalMark>,
    /// Per node: the journal position just before a step last restarted its agent.
    pub restart_marks: BTreeMap<String, JournalMark>,
    /// Per node: the boot id when the scenario's cluster was up.
    pub boot_ids: BTreeMap<String, String>,
    /// Per signer name: the certificate it held when the cluster was up.
    pub signers_at_start: BTreeMap<String, IssuedCert>,
    /// The agent the run puts on every node.
    pub agent: crate::scenario::AgentKind,
    /// Where the run's nodes run.
    pub backend: crate::scenario::NodeBackend,
    /// How long steps wait for the cluster and the agents.
    pub deadline: std::time::Duration,
    /// How long any one step may run (`runner::watchdog`).
    pub step_limit: std::time::Duration,
    /// The API server the scenario runs against.
    pub endpoint: crate::scenario::ClusterEndpoint,
    /// `--nudge-first-sync`.
    pub nudge_first_sync: bool,
    /// `--controller-binary`: an upstream machine-config-controller in the reference's place.
    pub controller: Option<crate::cluster::upstream::UpstreamController>,
    /// `--server-binary`: an upstream machine-config-server in the reference's place.
    pub server: Option<crate::cluster::upstream_server::UpstreamServer>,
    /// Per node: the rendered config it ran when the cluster was up.
    pub configs_at_start: BTreeMap<String, String>,
    /// Rendered configs the controller made and replaced before the cluster was up: no node ran
    /// one and no pool targeted it then (`steps::pool` leaves them out of its counts).
    pub replaced_before_start: std::collections::BTreeSet<String>,
    /// The Node history's length when the last change step began (what a Then step judges).
    pub history_mark: usize,
    /// The CA the last serving-CA step added to the kube-apiserver's serving CA bundle (PEM).
    pub added_serving_ca: Option<String>,
    /// Per (node, path): the contents and mode a step found before it edited the file.
    pub originals: BTreeMap<(String, String), (Vec<u8>, u32)>,
    /// Per (node, path): the inode and contents a "noted" step found.
    pub noted: BTreeMap<(String, String), (u64, Vec<u8>)>,
    /// Where the scenario is (`file:line`), for progress lines; empty outside a run.
    pub place: String,
    /// Whether long steps print progress (off for quiet runs such as the self-test's).
    pub progress: bool,
    /// Whether the scenario records its timeline (a report that shows it was asked for).
    pub timeline: bool,
    /// What the crash runs of a node's sync saw (`steps::crash`).
    pub crashes: Vec<crate::scenario::CrashReport>,
    /// What a power loss can leave of a node's recorded sync (`steps::power_loss`).
    pub power_losses: Vec<crate::scenario::PowerLossReport>,
}

impl std::fmt::Debug for ConformanceWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConformanceWorld")
            .field("profile", &self.profile)
            .field("nodes", &self.marks.keys().collect::<Vec<_>>())
            .field(
                "cluster_log_tail",
                &self.scenario.as_ref().map(|s| s.log_tail(10)),
            )
            .finish()
    }
}

impl ConformanceWorld {
    fn new() -> Self {
        ConformanceWorld {
            profile: Profile::Ocp416,
            scenario: None,
            marks: BTreeMap::new(),
            restart_marks: BTreeMap::new(),
            boot_ids: BTreeMap::new(),
            signers_at_start: BTreeMap::new(),
            originals: BTreeMap::new(),
            noted: BTreeMap::new(),
            added_serving_ca: None,
            history_mark: 0,
            configs_at_start: BTreeMap::new(),
            replaced_before_start: std::collections::BTreeSet::new(),
            agent: crate::scenario::AgentKind::Reference,
            backend: crate::scenario::NodeBackend::Embedded,
            deadline: std::time::Duration::from_secs(30),
            step_limit: DEFAULT_STEP_LIMIT,
            endpoint: crate::scenario::ClusterEndpoint::InProcess,
            nudge_first_sync: false,
            controller: None,
            server: None,
            place: String::new(),
            progress: false,
            timeline: false,
            crashes: Vec::new(),
            power_losses: Vec::new(),
        }
    }

    /// Where `node`'s journal stood when the cluster was up (or when it joined).
    pub fn mark(&self, node: &str) -> anyhow::Result<JournalMark> {
        self.marks.get(node).copied().ok_or_else(|| not_recorded(node))
    }

    /// `node`'s boot id when the cluster was up (or when it joined).
    pub fn boot_id_at_start(&self, node: &str) -> anyhow::Result<&str> {
        self.boot_ids
            .get(node)
            .map(String::as_str)
            .ok_or_else(|| not_recorded(node))
    }

    /// The rendered config `node` ran when the cluster was up (or when it joined).
    pub fn config_at_start(&self, node: &str) -> anyhow::Result<&str> {
        self.configs_at_start
            .get(node)
            .map(String::as_str)
            .ok_or_else(|| not_recorded(node))
    }

    /// The running scenario; a step that needs one before `Given` started it fails with this.
    pub fn cluster(&self) -> anyhow::Result<&Scenario> {
        self.scenario
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("no cluster yet: start one with a `Given a … cluster` step"))
    }
}

/// A node the steps recorded nothing of: it was not up when the cluster started, nor joined
/// through a step.
fn not_recorded(node: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "node {node} was not up when the cluster started and joined through no step: nothing was recorded of it to judge it against"
    )
}
