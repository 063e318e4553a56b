//! `--nudge-first-sync`: an opt-in help for agents whose first ControllerConfig sync waits.
//!
//! Upstream's 4.16 daemon handles a ControllerConfig event that comes before it has its Node by
//! requeueing it a minute later (release-4.16 certificate_writer.go:30, 113-116,
//! `ccRequeueDelay`); at start that is the usual order, so every scenario's first sync takes a
//! minute. With the nudge, once every node's agent has finished its first run — its state
//! annotation is written and it posted the `ConfigDriftMonitorStarted` event upstream posts when
//! its config drift monitor starts watching (release-4.12 daemon.go:1105-1106, release-4.16
//! daemon.go:1492), about ten seconds after start (its first run waits one drain poll), so a
//! scenario that edits a file at once is not missed — the harness touches the ControllerConfig
//! (an annotation of its own, as any writer may add), and again every few seconds until every
//! node has synced: the event then finds the Node. On 4.12, where nothing is requeued, it only
//! waits for that event. An agent that posts none is waited for until the deadline and never
//! nudged. Off by default:
//! it would hide an agent that never syncs at start without a change to sync.

use super::{Scenario, ScenarioError};
use crate::cluster::ClusterError;
use crate::cluster::operator::{CONTROLLER_CONFIG, controller_configs};
use crate::mco::{LAST_SYNCED_CONTROLLER_CONFIG, STATE};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams};

/// The annotation the nudge writes (its value counts the nudges).
pub const NUDGE_ANNOTATION: &str = "mco-conformance.test/first-sync-nudge";
/// The event upstream's daemon posts once its first run is over and its config drift monitor
/// watches (release-4.12 daemon.go:1105, release-4.16 daemon.go:1492, `startConfigDriftMonitor`).
const FIRST_RUN_DONE: &str = "ConfigDriftMonitorStarted";
/// How long one nudge is given before the next.
const NUDGE_EVERY: std::time::Duration = std::time::Duration::from_secs(3);

impl Scenario {
    /// Whether every node of the scenario has a `ConfigDriftMonitorStarted` event (core/v1, any
    /// namespace).
    async fn nodes_done(&self) -> Result<bool, ScenarioError> {
        let events: Api<k8s_openapi::api::core::v1::Event> = Api::all(self.admin.clone());
        let listed = events
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("events".to_string(), e))?;
        Ok(self.nodes.iter().all(|node| {
            listed.items.iter().any(|e| {
                e.reason.as_deref() == Some(FIRST_RUN_DONE)
                    && e.involved_object.kind.as_deref() == Some("Node")
                    && e.involved_object.name.as_deref() == Some(node.name())
            })
        }))
    }

    /// Wait until every node's agent has finished its first run (`FIRST_RUN_DONE`) and, with `nudge`,
    /// touch the ControllerConfig until every node's agent has synced it; or until the deadline
    /// passes (the convergence after it then says what is missing).
    pub(super) async fn nudge_first_sync(&self, nudge: bool) -> Result<(), ScenarioError> {
        let started = std::time::Instant::now();
        let nodes: Api<Node> = Api::all(self.admin.clone());
        let mut nudges = 0u32;
        let mut last_nudge: Option<std::time::Instant> = None;
        while started.elapsed() < self.options.deadline {
            crate::interrupt::check().map_err(ScenarioError::NotConverged)?;
            let cc = controller_configs(&self.admin)
                .get(CONTROLLER_CONFIG)
                .await
                .map_err(|e| ClusterError::kube(format!("controllerconfig {CONTROLLER_CONFIG}"), e))?;
            let rv = cc.metadata.resource_version.unwrap_or_default();
            let listed = nodes
                .list(&ListParams::default())
                .await
                .map_err(|e| ClusterError::kube("nodes".to_string(), e))?;
            let annotation =
                |n: &Node, key: &str| n.metadata.annotations.as_ref().and_then(|a| a.get(key)).cloned();
            let ours = |n: &&Node| {
                self.nodes
                    .iter()
                    .any(|x| Some(x.name()) == n.metadata.name.as_deref())
            };
            let mine: Vec<&Node> = listed.items.iter().filter(ours).collect();
            let synced = mine
                .iter()
                .all(|n| annotation(n, LAST_SYNCED_CONTROLLER_CONFIG).as_deref() == Some(rv.as_str()));
            let written = mine.iter().all(|n| annotation(n, STATE).is_some()) && self.nodes_done().await?;
            if written && (synced || !nudge) {
                return Ok(());
            }
            if nudge && written && last_nudge.is_none_or(|t| t.elapsed() >= NUDGE_EVERY) {
                nudges += 1;
                let patch =
                    serde_json::json!({"metadata": {"annotations": {NUDGE_ANNOTATION: nudges.to_string()}}});
                controller_configs(&self.admin)
                    .patch(CONTROLLER_CONFIG, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|e| ClusterError::kube(format!("controllerconfig {CONTROLLER_CONFIG}"), e))?;
                last_nudge = Some(std::time::Instant::now());
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        Ok(())
    }
}
