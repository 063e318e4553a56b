//! The end of an update, and of a start (`updateConfigAndState`, `completeUpdate`): the
//! uncordon handshake with the drain controller, the Uncordon and NodeDone events, `state=Done`
//! on the config the node is in.
//!
//! Where the releases differ:
//! - release-4.12 completes only a pending config (the update that wrote one, or the boot after
//!   it): "Completing pending config <config>" … "In desired config <config>" (daemon.go:1598-1651).
//!   A start on the config the node already runs completes nothing and logs "In desired config".
//! - release-4.14 and 4.16 complete whenever the node is in its desired config, so at every start
//!   as well as after every update: "Completing update to target <config>" … "In desired state
//!   <config>" (release-4.14 daemon.go:1923-1948, release-4.16 daemon.go:2172-2246).

use super::common::PENDING_CONFIG_FILE;
use super::drain::drain;
use super::drift::{DriftMonitor, validate_on_disk};
use super::node_writer::{Failure, annotate, report};
use super::{AgentEnv, events::EventType};
use crate::mco::machine_config::MachineConfigSpec;
use crate::mco::{CURRENT_CONFIG, REASON, STATE, STATE_DEGRADED, STATE_DONE};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Complete the update to `config`: uncordon, the events, then `state=Done` and `currentConfig`.
pub(super) async fn complete_update(env: &AgentEnv, config: &str) -> Result<(), Failure> {
    let pending_state = env.profile.traits().pending_state;
    if pending_state {
        env.log(&format!("Completing pending config {config}"));
    } else {
        env.log(&format!("Completing update to target {config}"));
    }
    drain(env, &format!("uncordon-{config}")).await?;
    env.log_system(&format!(
        "Update completed for config {config} and node has been successfully uncordoned"
    ));
    let message = format!("Update completed for config {config} and node has been uncordoned");
    env.event(EventType::Normal, "Uncordon", &message).await;
    let message = format!("Setting node {}, currentConfig {config} to Done", env.node_name);
    env.event(EventType::Normal, "NodeDone", &message).await;
    annotate(
        env,
        json!({STATE: STATE_DONE, CURRENT_CONFIG: config, REASON: ""}),
    )
    .await?;
    if pending_state {
        env.store_pending_state(config, false);
        env.log(&format!("In desired config {config}"));
    } else {
        env.log(&format!("In desired state {config}"));
    }
    Ok(())
}

/// A start whose on-disk check passed, on a node in its desired config `config` that had no
/// pending config to complete: 4.14 and 4.16 complete it again; 4.12 clears a Degraded state
/// with no events (release-4.12 daemon.go:1637-1643, `SetDone`) and says so.
pub(super) async fn at_start(env: &AgentEnv, config: &str, state: &str) -> Result<(), Failure> {
    if env.profile.traits().pending_state {
        if state == STATE_DEGRADED {
            annotate(
                env,
                json!({STATE: STATE_DONE, CURRENT_CONFIG: config, REASON: ""}),
            )
            .await?;
        }
        env.log(&format!("In desired config {config}"));
        return Ok(());
    }
    complete_update(env, config).await
}

/// How a start after a reboot ended with the config the reboot was for.
pub(super) enum Pending {
    /// The node's files matched it, and the update to it was completed (or failed, reported).
    Completed,
    /// The daemon was stopped while the files did not match.
    Stopped,
}

/// The start after a reboot into `pending` (`spec` its MachineConfig's spec): the node's files
/// are validated against the config the reboot was for before anything is completed, and only
/// files that match complete it (release-4.12 daemon.go:1555-1589: "Validating against pending
/// config", then `updateConfigAndState`; release-4.16 daemon.go:2094-2145, the on-disk config
/// overriding the annotation, then `updateConfigAndState`). A mismatch is a Warning event
/// `OnDiskStateValidationFailed` and a Degraded node whose reason is upstream's error,
/// `unexpected on-disk state validating against <config>: <mismatch>`, and nothing is completed:
/// upstream's sync returns the error and tries the whole start again on its work queue's
/// backoff; here the check runs again when a file of the config changes (`monitor`).
pub(super) async fn complete_pending(
    env: &AgentEnv,
    pending: &str,
    spec: &MachineConfigSpec,
    mut monitor: Option<DriftMonitor>,
    stop: &CancellationToken,
) -> Pending {
    let mut reported: Option<String> = None;
    while let Err(mismatch) = validate_on_disk(env, spec) {
        let reason = format!("unexpected on-disk state validating against {pending}: {mismatch}");
        if reported.as_deref() != Some(reason.as_str()) {
            env.event(EventType::Warning, "OnDiskStateValidationFailed", &reason)
                .await;
            report(env, Failure::Degraded(reason.clone())).await;
            reported = Some(reason);
        }
        let changed = async {
            match monitor.as_mut() {
                Some(m) => m.changed().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = stop.cancelled() => return Pending::Stopped,
            () = changed => {}
        }
    }
    env.log_system("Validated on-disk state");
    let _ = std::fs::remove_file(env.path(PENDING_CONFIG_FILE));
    if let Err(failure) = complete_update(env, pending).await {
        report(env, failure).await;
    }
    Pending::Completed
}
