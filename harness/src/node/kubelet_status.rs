//! The fake kubelet's node status, as a real kubelet posts it: it reaches the API server with
//! `/var/lib/kubelet/kubeconfig` (whose CA data decides whether it trusts the API server's
//! serving certificate, read once at start like the real kubelet), and posts the Node's `Ready`
//! condition, its addresses (InternalIP 127.0.0.1: it serves on loopback) and
//! `status.daemonEndpoints.kubeletEndpoint.Port`. It posts at start, whenever the
//! simulated clock moves, and every `nodeStatusUpdateFrequency` of wall time. Heartbeat times
//! are simulated time, so the node lifecycle controller judges them on the scenario's clock.
//!
//! Each attempt is recorded in `HEARTBEAT_FILE`; a failed one is also logged with the upstream
//! wording, and the node goes NotReady only by the lifecycle controller, as on a real cluster,
//! once its grace period passes with no heartbeat.

use super::embedded::ServiceContext;
use super::seed::KUBELET_KUBECONFIG;
use super::{HEARTBEAT_FILE, Node};
use crate::pki::{Clock, rfc3339};
use k8s_openapi::api::core::v1::Node as NodeObject;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::time::Duration;
use time::OffsetDateTime;

/// The kubelet's `nodeStatusUpdateFrequency` (upstream default 10 s).
pub const STATUS_UPDATE_FREQUENCY: Duration = Duration::from_secs(10);

/// The reason and message the kubelet posts with `Ready=True` (upstream `setNodeReadyCondition`).
pub const READY_REASON: &str = "KubeletReady";
pub const READY_MESSAGE: &str = "kubelet is posting ready status";

/// Post the node status until the service stops.
pub async fn report(ctx: &ServiceContext, port: u16) {
    let node = ctx.node.clone();
    let client = match node.read(KUBELET_KUBECONFIG).await {
        Ok(yaml) => {
            // A bootstrapped kubeconfig names its certificate file; read it from the node.
            match super::kubelet_bootstrap::inline_client_files(&node, &String::from_utf8_lossy(&yaml)).await
            {
                Ok(yaml) => fake_apiserver::client_from_kubeconfig(&yaml)
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e.to_string()),
    };
    let client = match client {
        Ok(c) => c,
        Err(e) => {
            return ctx.log(&format!(
                "E0000 server.go:302] \"Failed to run kubelet\" err=\"invalid kubeconfig {KUBELET_KUBECONFIG}: {e}\""
            ));
        }
    };
    report_with(ctx, port, client).await
}

/// Post the node status with `client` until the service stops.
pub async fn report_with(ctx: &ServiceContext, port: u16, client: kube::Client) {
    let node = ctx.node.clone();
    let nodes: Api<NodeObject> = Api::all(client);
    let mut clock_moves = node.clock_moves();
    let mut ready_since: Option<OffsetDateTime> = None;
    loop {
        let now = node.clock().now();
        // The kubelet's heartbeat client gives a status update the status frequency at most
        // (cmd/kubelet/app/server.go: heartbeatClientConfig.Timeout, nodeStatusUpdateFrequency):
        // an answer that never comes is a failed attempt, tried again, not a kubelet that stops.
        let attempt = match tokio::time::timeout(
            STATUS_UPDATE_FREQUENCY,
            post(&nodes, node.name(), port, now, &mut ready_since),
        )
        .await
        {
            Ok(attempt) => attempt,
            Err(_) => Err(format!(
                "Timeout: request did not complete within requested timeout - context deadline exceeded ({STATUS_UPDATE_FREQUENCY:?})"
            )),
        };
        let record = match &attempt {
            Ok(()) => format!("{} ok\n", rfc3339(now)),
            Err(e) => {
                ctx.log(&format!(
                    "E0000 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"{e}\""
                ));
                format!("{} failed: {e}\n", rfc3339(now))
            }
        };
        let _ = node.write(HEARTBEAT_FILE, record.as_bytes(), 0o644).await;
        tokio::select! {
            _ = ctx.stop.cancelled() => return,
            moved = clock_moves.changed() => if moved.is_err() { return },
            _ = tokio::time::sleep(STATUS_UPDATE_FREQUENCY) => {}
        }
    }
}

/// One status update: a fresh `Ready=True` and the kubelet's port. `ready_since` is when this
/// kubelet last became Ready: kept while its posts succeed, reset by a failed one (the node
/// lifecycle controller may have marked it Unknown meanwhile) and by a restart.
async fn post(
    nodes: &Api<NodeObject>,
    name: &str,
    port: u16,
    now: OffsetDateTime,
    ready_since: &mut Option<OffsetDateTime>,
) -> Result<(), String> {
    let since = ready_since.unwrap_or(now);
    let status = json!({"status": {
        "addresses": [
            {"type": "InternalIP", "address": "127.0.0.1"},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        "conditions": [{
            "type": "Ready", "status": "True", "reason": READY_REASON, "message": READY_MESSAGE,
            "lastHeartbeatTime": rfc3339(now), "lastTransitionTime": rfc3339(since),
        }],
    }});
    let posted = nodes
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(|e| format!("error updating node {name:?} status: {e}"));
    *ready_since = posted.is_ok().then_some(since);
    posted.map(|_| ())
}
