//! The daemon's main loop: it follows its own Node and runs an update (`update`) whenever
//! `desiredConfig` differs from `currentConfig`; it checks the node's files against the config
//! it is on at a start (`checkStateOnFirstRun`) and whenever the drift monitor sees a tracked file
//! change (`onConfigDrift`), and says on the Node when that monitor starts and stops. The update
//! itself is `update`'s; this file decides when to run one.

use super::AgentEnv;
use super::common::{FORCE_FILE, PENDING_CONFIG_FILE};
use super::drift::{DriftMonitor, validate_on_disk};
use super::events::EventType;
use super::node_writer::{Failure, report};
use super::update::{force_file, spec_of, update};
use crate::mco::{CURRENT_CONFIG, DESIRED_CONFIG, REASON, STATE, STATE_DEGRADED, STATE_UNRECONCILABLE};
use crate::profile::UpdateFiles;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
/// Follow the own Node (`own_node`); run an update whenever `desiredConfig` differs from
/// `currentConfig`.
pub async fn node_loop(env: &AgentEnv, behaviour: UpdateFiles, stop: CancellationToken) {
    let mut changes = env.node.changes();
    let Some(completed) = boot(env, &stop).await else {
        return;
    };
    let start = Check::Start { completed };
    env.faults().spawn_alongside(&stop);
    // The boot-time check (upstream: `Validated on-disk state`) runs once the watch is in
    // place, so a change made before the watch existed is caught too.
    let mut monitor = monitor_settled_node(env).await;
    // Until a start check passes every check is one (upstream's sync runs
    // `checkStateOnFirstRun` again on each retry while `dn.booting`).
    let mut booting = monitor.is_some();
    if booting {
        match on_drift(env, behaviour, &mut monitor, start).await {
            Checked::Rebooting => return,
            Checked::Started => booting = false,
            Checked::Done => {}
        }
    }
    // The config this loop's last update failed on, while the node stays failed on it.
    let mut failed: Option<String> = None;
    loop {
        let node = tokio::select! {
            _ = stop.cancelled() => return,
            _ = drift(&mut monitor) => {
                let check = if booting { Check::Start { completed: false } } else { Check::Changed };
                match on_drift(env, behaviour, &mut monitor, check).await {
                    Checked::Rebooting => return,
                    Checked::Started => booting = false,
                    Checked::Done => {}
                }
                continue;
            }
            changed = changes.changed() => match changed {
                Ok(()) => changes.borrow_and_update().clone(),
                Err(_) => return,
            },
        };
        if node
            .as_deref()
            .and_then(|n| wanted_update(n, failed.as_deref()))
            .is_none()
        {
            continue;
        }
        let Some((current, desired)) = update_wanted_now(env, failed.as_deref()).await else {
            continue;
        };
        if !env.faults().before_sync(&stop, true).await {
            return;
        }
        stop_monitor(env, &mut monitor).await; // upstream stops it while it updates
        let result = tokio::select! {
            _ = stop.cancelled() => return,
            result = update(env, behaviour, &current, &desired) => result,
        };
        failed = result.is_err().then(|| desired.clone());
        match result {
            Ok(true) => return, // rebooting: this daemon is about to be stopped
            Ok(false) => {
                // Checked once the watch is in place: an edit right after the update counts.
                monitor = start_monitor(env, &desired).await;
                announce_monitor(env, &mut monitor, &desired).await;
                booting = false;
                if monitor.is_some()
                    && matches!(
                        on_drift(env, behaviour, &mut monitor, Check::Changed).await,
                        Checked::Rebooting
                    )
                {
                    return;
                }
            }
            Err(failure) => report(env, failure).await,
        }
    }
}

/// The daemon's start: the Node's annotations loaded from the node's disk (retried until they
/// can be), then the pending config completed if the node booted into one. `Some(completed)`
/// says whether it did; `None` when `stop` came first.
async fn boot(env: &AgentEnv, stop: &CancellationToken) -> Option<bool> {
    loop {
        match super::first_run::load_node_annotations(env).await {
            Ok(()) => break,
            Err(e) => {
                env.log(&format!("Error loading initial node annotations: {e}"));
                tokio::select! {
                    _ = stop.cancelled() => return None,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        }
    }
    let pending = std::fs::read_to_string(env.path(PENDING_CONFIG_FILE))
        .ok()
        .map(|s| s.trim().to_string());
    if let Some(pending) = &pending {
        env.faults().on_boot_into(pending).await;
        match spec_of(env, pending).await {
            Ok(spec) => {
                let monitor = start_monitor(env, pending).await;
                match super::complete::complete_pending(env, pending, &spec, monitor, stop).await {
                    super::complete::Pending::Completed => {}
                    super::complete::Pending::Stopped => return None,
                }
            }
            Err(failure) => report(env, failure).await,
        }
    }
    Some(pending.is_some())
}

/// The update the Node as it is now asks for, as `(currentConfig, desiredConfig)`. Events
/// queue up while an update runs, among them this daemon's own earlier writes (state=Working
/// with the old currentConfig): the Node is read again rather than taken from the event.
async fn update_wanted_now(env: &AgentEnv, failed: Option<&str>) -> Option<(String, String)> {
    let node = match Api::<Node>::all(env.client.clone()).get(&env.node_name).await {
        Ok(node) => {
            env.node.saw(node.clone());
            node
        }
        Err(e) => {
            env.log(&format!("node {}: {e}", env.node_name));
            return None;
        }
    };
    let (current, desired) = wanted_update(&node, failed)?;
    if current == desired {
        let state = node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(STATE))
            .cloned()
            .unwrap_or_default();
        env.log(&format!(
            "current+desiredConfig is {current} but state is {state}"
        ));
    }
    Some((current, desired))
}

/// The next drift event, or never when no monitor runs.
async fn drift(monitor: &mut Option<DriftMonitor>) {
    match monitor {
        Some(m) => m.changed().await,
        None => std::future::pending().await,
    }
}

/// A monitor over the config the node is on, when it is on one (`currentConfig` equals
/// `desiredConfig`), as the daemon starts.
async fn monitor_settled_node(env: &AgentEnv) -> Option<DriftMonitor> {
    let node = Api::<Node>::all(env.client.clone())
        .get(&env.node_name)
        .await
        .ok()?;
    let annotations = node.metadata.annotations.unwrap_or_default();
    let current = annotations.get(CURRENT_CONFIG)?;
    if annotations.get(DESIRED_CONFIG) != Some(current) {
        return None;
    }
    start_monitor(env, current).await
}

/// Say on the Node that the drift monitor watches `config`, as upstream's
/// `startConfigDriftMonitor` does once the start check passed or a rebootless update is done
/// (release-4.12 daemon.go:533, :1105-1106, update.go:163; release-4.16 daemon.go:802,
/// :1492-1493, update.go:115). A monitor that could not start says nothing.
async fn announce_monitor(env: &AgentEnv, monitor: &mut Option<DriftMonitor>, config: &str) {
    if let Some(m) = monitor.as_mut().filter(|m| !m.announced) {
        m.announced = true;
        let message = format!("Config Drift Monitor started, watching against {config}");
        env.event(EventType::Normal, "ConfigDriftMonitorStarted", &message)
            .await;
    }
}

/// Stop the drift monitor before an update; one that had said it watches says it stopped
/// (upstream's monitor goroutine on `Done()`: release-4.12 daemon.go:1110-1115, release-4.16
/// :1497-1502; `stopConfigDriftMonitor` before every update, release-4.16 daemon.go:2502).
async fn stop_monitor(env: &AgentEnv, monitor: &mut Option<DriftMonitor>) {
    if monitor.take().is_some_and(|m| m.announced) {
        env.event(
            EventType::Normal,
            "ConfigDriftMonitorStopped",
            "Config Drift Monitor stopped",
        )
        .await;
    }
}

async fn start_monitor(env: &AgentEnv, config: &str) -> Option<DriftMonitor> {
    if !env.faults().drift_monitor_starts() {
        return None;
    }
    let spec = spec_of(env, config).await.ok()?;
    match DriftMonitor::start(env, &spec) {
        Ok(monitor) => Some(monitor),
        Err(e) => {
            env.log(&e);
            None
        }
    }
}

/// Why the node's files are checked against its config.
#[derive(Clone, Copy)]
enum Check {
    /// A tracked file changed, or an update ended.
    Changed,
    /// The daemon started (`checkStateOnFirstRun`); `completed` when it completed a pending
    /// config first.
    Start { completed: bool },
}

/// How a check of the node's files ended.
enum Checked {
    /// An update it ran reboots the node.
    Rebooting,
    /// A start check passed: the daemon runs as usual from now on.
    Started,
    /// Anything else (a drift found, nothing to do, a change checked).
    Done,
}

/// A tracked file changed: validate the node's files against its config (`onConfigDrift`).
/// A mismatch degrades the node; a Degraded node whose files match again, or that has the
/// force file, runs the update to the config it is on. At a start, files that match end in
/// `updateConfigAndState` (`complete::at_start`), and a mismatch is the start check's error,
/// in its words, with a Warning event (release-4.16 daemon.go:2135-2138, :2586; release-4.12
/// daemon.go:1571-1577).
async fn on_drift(
    env: &AgentEnv,
    behaviour: UpdateFiles,
    monitor: &mut Option<DriftMonitor>,
    check: Check,
) -> Checked {
    let Ok(node) = Api::<Node>::all(env.client.clone()).get(&env.node_name).await else {
        return Checked::Done;
    };
    let annotations = node.metadata.annotations.unwrap_or_default();
    let get = |k: &str| annotations.get(k).cloned().unwrap_or_default();
    let (current, state, reason) = (get(CURRENT_CONFIG), get(STATE), get(REASON));
    if current.is_empty() || get(DESIRED_CONFIG) != current {
        return Checked::Done;
    }
    let Ok(spec) = spec_of(env, &current).await else {
        return Checked::Done;
    };
    let force = force_file(env);
    // At a start the force file skips the check and runs the update to the config the node is
    // on, which removes the file and reboots (checkStateOnFirstRun: release-4.12
    // daemon.go:1567-1570, release-4.16 :2122-2125); nothing is completed at that start.
    if force && matches!(check, Check::Start { .. }) {
        env.log_system(&format!("Skipping on-disk validation; {FORCE_FILE} present"));
        stop_monitor(env, monitor).await;
        return match update(env, behaviour, &current, &current).await {
            Ok(true) => Checked::Rebooting,
            Ok(false) => Checked::Done,
            Err(failure) => {
                report(env, failure).await;
                Checked::Done
            }
        };
    }
    let drifted = state == STATE_DEGRADED && is_drift_reason(&reason);
    let starting = matches!(check, Check::Start { .. });
    match (force, validate_on_disk(env, &spec)) {
        // Drift degrades a node that is not yet Degraded for it, force file or not (the force
        // file only lets the next update skip the check); a drifted node's reason follows the
        // files until the force file asks for the update.
        (force, Err(mismatch)) if !drifted || (!force && reason != found(check, &current, &mismatch)) => {
            if state == STATE_DEGRADED && !drifted {
                return Checked::Done; // Degraded for another reason: that one stands
            }
            let found = found(check, &current, &mismatch);
            if starting {
                env.event(EventType::Warning, "OnDiskStateValidationFailed", &found)
                    .await;
            } else {
                env.log(&format!("Config drift detected: {mismatch}"));
            }
            report(env, Failure::Degraded(found)).await;
            Checked::Done
        }
        (force, verdict) if drifted && (force || (verdict.is_ok() && !starting)) => {
            if verdict.is_ok() {
                env.log_system("Validated on-disk state");
            }
            update_to_own_config(env, behaviour, monitor, &current).await
        }
        (_, Ok(())) => match check {
            Check::Start { completed } => start_validated(env, monitor, &current, &state, completed).await,
            _ => Checked::Done,
        },
        _ => Checked::Done,
    }
}

/// A drifted node whose files are the config's again (or whose force file asks for it): the
/// update to the config it is on, the drift monitor restarted after it.
async fn update_to_own_config(
    env: &AgentEnv,
    behaviour: UpdateFiles,
    monitor: &mut Option<DriftMonitor>,
    current: &str,
) -> Checked {
    stop_monitor(env, monitor).await;
    let done = match update(env, behaviour, current, current).await {
        Ok(true) => return Checked::Rebooting,
        Ok(false) => true,
        Err(failure) => {
            report(env, failure).await;
            false
        }
    };
    *monitor = start_monitor(env, current).await;
    if done {
        announce_monitor(env, monitor, current).await;
    }
    Checked::Done
}

/// A start whose files matched the config `current`: the start's completion, then the drift
/// monitor announced. A start that completed a pending config validated the files before it did
/// (and a completion that failed left the node Degraded).
async fn start_validated(
    env: &AgentEnv,
    monitor: &mut Option<DriftMonitor>,
    current: &str,
    state: &str,
    completed: bool,
) -> Checked {
    let passed = if completed {
        state != STATE_DEGRADED
    } else {
        env.log_system("Validated on-disk state");
        match super::complete::at_start(env, current, state).await {
            Ok(()) => true,
            Err(failure) => {
                report(env, failure).await;
                false
            }
        }
    };
    if !passed {
        return Checked::Done;
    }
    announce_monitor(env, monitor, current).await;
    Checked::Started
}

/// What a check found wrong with the node's files, as the node's reason says it: a start
/// check's error names the config it validated against (release-4.16 daemon.go:2586,
/// release-4.12 daemon.go:1575 "unexpected on-disk state validating against …"); the drift
/// monitor's is the mismatch alone.
fn found(check: Check, config: &str, mismatch: &str) -> String {
    match check {
        Check::Start { .. } => format!("{START_CHECK_ERROR} {config}: {mismatch}"),
        Check::Changed => mismatch.to_string(),
    }
}

/// How upstream's start check begins its error.
const START_CHECK_ERROR: &str = "unexpected on-disk state validating against";

/// Whether a Degraded reason is the drift check's (`validate_on_disk`), which this monitor may
/// clear; a failed update's or the certificate writer's is not.
fn is_drift_reason(reason: &str) -> bool {
    // A start check's reason names the config first ("… validating against <config>: ").
    let reason = reason
        .strip_prefix(START_CHECK_ERROR)
        .and_then(|rest| rest.split_once(": ").map(|(_, mismatch)| mismatch))
        .unwrap_or(reason);
    [
        "content mismatch for file ",
        "mode mismatch for file: ",
        "could not stat file ",
        "could not read file ",
    ]
    .iter()
    .any(|p| reason.starts_with(p))
}

/// The update the Node asks for, if any: from `currentConfig` to `desiredConfig` when they
/// differ. A node whose update failed is Degraded or Unreconcilable; upstream's daemon runs
/// the update again on every sync of its Node (release-4.12/4.16 daemon.go syncNode,
/// prepUpdateFromCluster), so a node the controller gives another config (as it may a failing
/// node, node_controller.go getAllCandidateMachines) moves to it, and a node given back the
/// config it runs ("current+desiredConfig is … but state is …") validates it and ends Done.
/// This daemon does not retry the config it failed on (`failed`) until the Node changes that;
/// a node Degraded by something other than an update of this loop (drift, the certificate
/// writer) is left to what degraded it.
fn wanted_update(node: &Node, failed: Option<&str>) -> Option<(String, String)> {
    let annotations = node.metadata.annotations.as_ref()?;
    let get = |k: &str| annotations.get(k).cloned().unwrap_or_default();
    let (current, desired, state) = (get(CURRENT_CONFIG), get(DESIRED_CONFIG), get(STATE));
    if desired.is_empty() {
        return None;
    }
    let failing = state == STATE_DEGRADED || state == STATE_UNRECONCILABLE;
    let wanted = if !failing {
        desired != current
    } else if let Some(failed) = failed {
        // This loop's own failure: any other config, the one it runs included, is tried.
        failed != desired
    } else {
        // Unreconcilable comes only from an update (a restarted daemon no longer knows which):
        // given back the config it runs, the node validates it.
        state == STATE_UNRECONCILABLE && desired == current
    };
    wanted.then_some((current, desired))
}
