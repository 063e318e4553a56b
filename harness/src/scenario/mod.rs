//! One scenario's fake cluster, ready to act on: the API server, the reference cluster side
//! running on watches, and nodes (embedded, or containers: `NodeBackend`) with their kubelets
//! and agents, all on one simulated clock. Steps and Rust tests drive it; nothing in it is global.
//!
//! Time moves deadline by deadline (`advance`): the clock stops at every instant a certificate
//! rule fires, the cluster side reconciles there, and the nodes converge before it moves on, so
//! each rotation is seen by every node as it would be in a cluster that lived through it.

//!
//! # Layout
//! - `options`: how a scenario starts (`ScenarioOptions`, `NodeBackend`, `AgentKind`).
//! - `start`: `Scenario::start`, from options to a scenario whose nodes have synced once.
//! - `stepping`: `advance`, heartbeats, metrics scrapes.
//! - `converge`: waiting until every node has caught up, and what is still pending.
//! - `sync_bound`: the bounds the nodes are held to, and the lateness messages.
//! - `act`: forced rotation, added MachineConfigs, node labels, pools, the bootstrap hand-over.
//! - `serving_ca`: the serving CA bundle and the API server's serving certificate.
//! - `controller_config`: the ControllerConfig published, synced by the agents, and read.
//! - `observe`: what steps read back.
//! - `node_history`: each Node's cordon and drain annotations over the scenario, from a watch.
//! - `crash`: a node's sync crashed at each of its file-changing system calls in turn.
//! - `power_loss`: a node's sync recorded, and every state a power loss can leave of it.
//! - `pool_history`: each pool's target and `Updated`/`Updating` conditions, from a watch.
//! - `pace`: the host's paced time, which lateness is judged in.

mod act;
mod controller_config;
mod converge;
mod crash;
pub mod endpoint;
mod install;
mod join;
pub mod node_history;
mod nudge;
mod observe;
mod options;
pub use crate::pace;
pub mod pool_history;
mod power_loss;
mod serving_ca;
mod start;
mod stepping;
mod sync_bound;
pub mod timeline;
mod timeline_log;
pub use crash::{CrashPlan, CrashReport, CrashRun, Expectation, FileState, Files};
pub use endpoint::{ClusterEndpoint, KubeconfigEndpoint};
pub use options::{AgentKind, NodeBackend, ScenarioOptions, default_fixtures};
pub use power_loss::PowerLossReport;
pub use serving_ca::ServingCaChange;
pub use sync_bound::SYNC_BOUND;

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
use crate::node::light::LightClients;
use crate::node::{AGENT_UNIT, EmbeddedNode, HEARTBEAT_FILE, Node};
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
    timeline: Option<std::sync::Mutex<timeline_log::Timeline>>,
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
