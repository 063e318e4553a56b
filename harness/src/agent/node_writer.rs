//! What the daemon writes about its node when something fails (upstream's node writer:
//! `SetDegraded`, `SetUnreconcilable`; release-4.16 pkg/daemon/writer.go), and the annotation
//! write every step of an update goes through.

use super::AgentEnv;
use crate::mco::{REASON, STATE, STATE_DEGRADED, STATE_UNRECONCILABLE};
use serde_json::{Value, json};

/// Reasons are cut to this length upstream.
const MAX_REASON: usize = 2000;

#[derive(Debug)]
pub(super) enum Failure {
    /// The change cannot be applied on a running node.
    Unreconcilable(String),
    /// Something went wrong applying it.
    Degraded(String),
}

pub(super) fn degraded(e: impl std::fmt::Display) -> Failure {
    Failure::Degraded(e.to_string())
}

pub(super) async fn annotate(env: &AgentEnv, values: Value) -> Result<(), Failure> {
    env.annotate_node(values)
        .await
        .map_err(|e| degraded(format!("node {}: {e}", env.node_name)))
}

/// Mark the node Unreconcilable or Degraded with the failure's reason.
pub(super) async fn report(env: &AgentEnv, failure: Failure) {
    let (state, reason) = match failure {
        Failure::Unreconcilable(r) => (STATE_UNRECONCILABLE, r),
        Failure::Degraded(r) => (STATE_DEGRADED, r),
    };
    let reason: String = reason.chars().take(MAX_REASON).collect();
    env.log(&format!("Marking {state} due to: {reason}"));
    let _ = annotate(env, json!({STATE: state, REASON: reason})).await;
}
