//! The daemon's handshake with the drain controller: a request in `desiredDrain`
//! (`drain-<config>` before an update, `uncordon-<config>` once it is complete), answered when
//! `lastAppliedDrain` repeats it. Both the update and its completion ask it; it knows neither.

use super::AgentEnv;
use super::node_writer::{Failure, annotate, degraded};
use crate::mco::{DESIRED_DRAIN, LAST_APPLIED_DRAIN};
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use serde_json::json;
use std::time::Duration;

/// How long the daemon waits for the drain controller (upstream: 10 minutes).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(600);

/// Ask the drain controller for `request` and wait until it answers.
pub(super) async fn drain(env: &AgentEnv, request: &str) -> Result<(), Failure> {
    annotate(env, json!({DESIRED_DRAIN: request})).await?;
    let nodes: Api<Node> = Api::all(env.client.clone());
    let answered = kube::runtime::wait::await_condition(nodes, &env.node_name, |node: Option<&Node>| {
        node.and_then(|n| n.metadata.annotations.as_ref())
            .and_then(|a| a.get(LAST_APPLIED_DRAIN))
            .is_some_and(|v| v == request)
    });
    match tokio::time::timeout(DRAIN_TIMEOUT, answered).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(degraded(format!("waiting for {request}: {e}"))),
        Err(_) => Err(degraded(format!(
            "timed out waiting for the drain controller to answer {request}"
        ))),
    }
}
