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
//! waits for that event.
//!
//! An agent that posts no such event (as many vendors' agents) is given
//! [`FIRST_RUN_GRACE`] from the moment its state annotation is written, twice the time upstream
//! takes to post it; then its first run counts as over and the nudge goes on without it. Off by
//! default: it would hide an agent that never syncs at start without a change to sync.
//!
//! Everything here is driven by watches of the Nodes, the Events and the ControllerConfig; the
//! only timers are the nudge's period, the grace and the deadline.

use super::{Scenario, ScenarioError};
use crate::cluster::ClusterError;
use crate::cluster::operator::{CONTROLLER_CONFIG, controller_config_resource, controller_configs};
use crate::mco::{LAST_SYNCED_CONTROLLER_CONFIG, STATE};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Node};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::time::Duration;

/// The annotation the nudge writes (its value counts the nudges).
pub const NUDGE_ANNOTATION: &str = "mco-conformance.test/first-sync-nudge";
/// The event upstream's daemon posts once its first run is over and its config drift monitor
/// watches (release-4.12 daemon.go:1105, release-4.16 daemon.go:1492, `startConfigDriftMonitor`).
const FIRST_RUN_DONE: &str = "ConfigDriftMonitorStarted";
/// How long one nudge is given before the next.
const NUDGE_EVERY: Duration = Duration::from_secs(3);
/// How long after its state annotation an agent that posts no [`FIRST_RUN_DONE`] event is
/// waited for before its first run counts as over: upstream posts it about ten seconds after
/// it writes the annotation (its first run waits one 10 s drain poll).
pub const FIRST_RUN_GRACE: Duration = Duration::from_secs(20);

/// What the watches show of the scenario's nodes at one moment.
struct Progress {
    /// Every node has its state annotation (the agent's first run set it).
    written: bool,
    /// Every node has a `FIRST_RUN_DONE` event.
    done: bool,
    /// Every node's last synced ControllerConfig is the current one.
    synced: bool,
}

impl Scenario {
    fn progress(
        &self,
        nodes: &Store<Node>,
        events: &Store<Event>,
        config: &Store<kube::api::DynamicObject>,
    ) -> Progress {
        let annotation =
            |n: &Node, key: &str| n.metadata.annotations.as_ref().and_then(|a| a.get(key)).cloned();
        let current = config
            .state()
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(CONTROLLER_CONFIG))
            .and_then(|c| c.metadata.resource_version.clone());
        let listed = nodes.state();
        let mine: Vec<Option<&Node>> = self
            .nodes
            .iter()
            .map(|x| {
                listed
                    .iter()
                    .map(|n| n.as_ref())
                    .find(|n| n.metadata.name.as_deref() == Some(x.name()))
            })
            .collect();
        let events = events.state();
        Progress {
            written: mine
                .iter()
                .all(|n| n.is_some_and(|n| annotation(n, STATE).is_some())),
            done: self.nodes.iter().all(|node| {
                events.iter().any(|e| {
                    e.reason.as_deref() == Some(FIRST_RUN_DONE)
                        && e.involved_object.kind.as_deref() == Some("Node")
                        && e.involved_object.name.as_deref() == Some(node.name())
                })
            }),
            synced: current.is_some()
                && mine
                    .iter()
                    .all(|n| n.is_some_and(|n| annotation(n, LAST_SYNCED_CONTROLLER_CONFIG) == current)),
        }
    }

    /// Wait until every node's agent has finished its first run (`FIRST_RUN_DONE`, or
    /// [`FIRST_RUN_GRACE`] after its state annotation) and, with `nudge`, touch the
    /// ControllerConfig until every node's agent has synced it; or until the deadline passes
    /// (the convergence after it then says what is missing).
    pub(super) async fn nudge_first_sync(&self, nudge: bool) -> Result<(), ScenarioError> {
        let deadline = tokio::time::Instant::now() + self.options.deadline;
        let writer = reflector::store::Writer::new(controller_config_resource());
        let config = writer.as_reader();
        let config_changes = watcher(
            controller_configs(&self.admin),
            watcher::Config::default().fields(&format!("metadata.name={CONTROLLER_CONFIG}")),
        )
        .default_backoff()
        .reflect(writer)
        .map(drop)
        .boxed();
        let (nodes, writer) = reflector::store();
        let node_changes = watcher(Api::<Node>::all(self.admin.clone()), watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .map(drop)
            .boxed();
        let (events, writer) = reflector::store();
        let event_changes = watcher(Api::<Event>::all(self.admin.clone()), watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .map(drop)
            .boxed();
        let mut changes = futures::stream::select_all([config_changes, node_changes, event_changes]);
        let mut nudges = 0u32;
        let mut next_nudge: Option<tokio::time::Instant> = None;
        let mut written_at: Option<tokio::time::Instant> = None;
        loop {
            let now = tokio::time::Instant::now();
            let progress = self.progress(&nodes, &events, &config);
            // When every node's state annotation was first seen (again, should one go).
            written_at = progress.written.then(|| written_at.unwrap_or(now));
            let written_since = written_at;
            let grace_over = written_since.is_some_and(|at| now >= at + FIRST_RUN_GRACE);
            let first_run_over = progress.written && (progress.done || grace_over);
            if first_run_over && (progress.synced || !nudge) {
                return Ok(());
            }
            if nudge && first_run_over && next_nudge.is_none_or(|t| now >= t) {
                nudges += 1;
                let patch =
                    serde_json::json!({"metadata": {"annotations": {NUDGE_ANNOTATION: nudges.to_string()}}});
                controller_configs(&self.admin)
                    .patch(CONTROLLER_CONFIG, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|e| ClusterError::kube(format!("controllerconfig {CONTROLLER_CONFIG}"), e))?;
                next_nudge = Some(now + NUDGE_EVERY);
            }
            // Wake on a change, or when the next nudge or the end of the grace is due.
            let wake = match (first_run_over, written_since) {
                (true, _) => next_nudge.unwrap_or(deadline),
                (false, Some(at)) => at + FIRST_RUN_GRACE,
                (false, None) => deadline,
            }
            .min(deadline);
            tokio::select! {
                change = changes.next() => {
                    if change.is_none() {
                        return Ok(());
                    }
                }
                () = tokio::time::sleep_until(wake) => {}
                () = crate::interrupt::cancelled() => {
                    return Err(ScenarioError::NotConverged(crate::interrupt::reason()));
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(());
            }
        }
    }
}
