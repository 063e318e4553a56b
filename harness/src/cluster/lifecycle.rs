//! The node lifecycle controller's part that scenarios can see (kube-controller-manager
//! `pkg/controller/nodelifecycle`): a Node whose kubelet has posted no status for longer than
//! the grace period goes `Ready=Unknown` with the upstream reason and message. Heartbeats are
//! simulated time (the fake kubelet posts one whenever the clock moves), so this judges them on
//! the scenario's clock. It writes only the Ready condition of Node status; never node files.

use super::{ClusterError, ClusterLog};
use crate::pki::{Clock, SimClock, rfc3339};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;
use time::{Duration, OffsetDateTime};

/// `--node-monitor-grace-period` (upstream default 40 s).
pub const NODE_MONITOR_GRACE: Duration = Duration::seconds(40);

/// What the controller posts (upstream `nodelifecycle` `tryUpdateNodeHealth`).
pub const UNKNOWN_REASON: &str = "NodeStatusUnknown";
pub const UNKNOWN_MESSAGE: &str = "Kubelet stopped posting node status.";

pub struct NodeLifecycle {
    client: kube::Client,
    clock: SimClock,
    log: ClusterLog,
    /// The last instant a pass judged every Node at: at the same instant a heartbeat can only
    /// get fresher, so another pass there would change nothing (and list every Node again).
    judged: std::sync::Mutex<Option<OffsetDateTime>>,
}

impl NodeLifecycle {
    pub fn new(client: kube::Client, clock: SimClock, log: ClusterLog) -> Self {
        NodeLifecycle {
            client,
            clock,
            log,
            judged: std::sync::Mutex::new(None),
        }
    }

    /// One pass; true if a Node changed.
    pub async fn reconcile(&self) -> Result<bool, ClusterError> {
        let now = self.clock.now();
        if *self.judged.lock().unwrap_or_else(|p| p.into_inner()) == Some(now) {
            return Ok(false);
        }
        let api: Api<Node> = Api::all(self.client.clone());
        let nodes = api
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("nodes".into(), e))?;
        let mut changed = false;
        for node in nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let Some(heartbeat) = stale_heartbeat(&node, now) else {
                continue;
            };
            let status = json!({"status": {"conditions": [{
                "type": "Ready", "status": "Unknown", "reason": UNKNOWN_REASON,
                "message": UNKNOWN_MESSAGE, "lastHeartbeatTime": rfc3339(heartbeat),
                "lastTransitionTime": rfc3339(now),
            }]}});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .map_err(|e| ClusterError::kube(format!("node {name} status"), e))?;
            self.log.record(
                now,
                &format!(
                    "node-lifecycle: node {name} Ready=Unknown: no status since {}",
                    rfc3339(heartbeat)
                ),
            );
            changed = true;
        }
        *self.judged.lock().unwrap_or_else(|p| p.into_inner()) = Some(now);
        Ok(changed)
    }
}

/// The last heartbeat of a Node whose Ready condition is not yet Unknown and whose heartbeat is
/// older than the grace period at `now`.
fn stale_heartbeat(node: &Node, now: OffsetDateTime) -> Option<OffsetDateTime> {
    let conditions = node.status.as_ref()?.conditions.as_ref()?;
    let ready = conditions.iter().find(|c| c.type_ == "Ready")?;
    let heartbeat =
        OffsetDateTime::from_unix_timestamp(ready.last_heartbeat_time.as_ref()?.0.as_second()).ok()?;
    (ready.status != "Unknown" && now - heartbeat > NODE_MONITOR_GRACE).then_some(heartbeat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::SIMULATION_EPOCH;

    fn node(status: &str, heartbeat: OffsetDateTime) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "worker-0"},
            "status": {"conditions": [{"type": "Ready", "status": status,
                "lastHeartbeatTime": rfc3339(heartbeat), "lastTransitionTime": rfc3339(heartbeat)}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_heartbeat_is_stale_only_past_the_grace_period_and_only_once() {
        let beat = SIMULATION_EPOCH;
        assert_eq!(
            stale_heartbeat(&node("True", beat), beat + NODE_MONITOR_GRACE),
            None
        );
        assert_eq!(
            stale_heartbeat(&node("True", beat), beat + NODE_MONITOR_GRACE + Duration::SECOND),
            Some(beat)
        );
        assert_eq!(
            stale_heartbeat(&node("Unknown", beat), beat + Duration::days(1)),
            None,
            "already Unknown"
        );
        let no_status: Node = serde_json::from_value(json!({"metadata": {"name": "n"}})).unwrap();
        assert_eq!(stale_heartbeat(&no_status, beat + Duration::days(1)), None);
    }
}
