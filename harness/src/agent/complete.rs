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

use super::node_writer::{Failure, annotate};
use super::update::drain;
use super::{AgentEnv, events::EventType};
use crate::mco::{CURRENT_CONFIG, REASON, STATE, STATE_DEGRADED, STATE_DONE};
use serde_json::json;

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
