//! The node controller's and the drain controller's decisions, as pure functions over views of
//! pools and nodes (MCO `pkg/controller/node/node_controller.go`, `status.go`,
//! `pkg/controller/drain`; mco-source.md §1, §3).
//!
//! A paused pool still gets new rendered configs (the render controller ignores `paused`) but
//! its nodes keep their `desiredConfig`; an unpaused pool moves at most `maxUnavailable` nodes
//! at a time.

use crate::mco::pool::{MachineConfigPoolStatus, PoolCondition, PoolConfiguration};
use crate::mco::{STATE_DEGRADED, STATE_DONE, STATE_UNRECONCILABLE};
use serde_json::Value;

/// What the decisions need of a pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolView {
    pub name: String,
    pub paused: bool,
    /// `max_unavailable` of the pool's spec; 0 moves no node.
    pub max_unavailable: usize,
    /// `spec.configuration.name`: the rendered config the pool should run.
    pub target: String,
    /// `status.configuration.name`: the config all its nodes last reached.
    pub current: String,
    /// Why the render controller could not render the pool's config, as its `RenderDegraded`
    /// condition says it (`None`: it rendered).
    pub render_failure: Option<String>,
    /// What the conditions' messages put before the target's name (`Traits::pool_update_line_prefix`).
    pub update_line_prefix: &'static str,
}

/// What the decisions need of a node, borrowed from it (a pass views every node of a pool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView<'a> {
    pub name: &'a str,
    pub current: &'a str,
    pub desired: &'a str,
    pub state: &'a str,
    /// `machineconfiguration.openshift.io/reason`, set with Degraded.
    pub reason: &'a str,
    /// Whether the node takes work (upstream `checkNodeReady`): its `Ready` condition True,
    /// `DiskPressure` and `NetworkUnavailable` False where the Node has them, and not cordoned.
    pub ready: bool,
}

impl NodeView<'_> {
    /// The daemon finished the config it was given (upstream `isNodeDone`).
    fn done(&self) -> bool {
        !self.current.is_empty() && self.current == self.desired && self.state == STATE_DONE
    }

    /// Done, on `target` (upstream `isNodeDoneAt`).
    fn done_at(&self, target: &str) -> bool {
        self.done() && self.current == target
    }

    /// Its daemon gave up on the config it was given (upstream `isNodeMCDFailing`): such a
    /// node may be given another config, and is not counted unavailable for it.
    fn failing(&self) -> bool {
        self.current != self.desired && (self.state == STATE_DEGRADED || self.state == STATE_UNRECONCILABLE)
    }

    /// Unready, or working towards a config (upstream `isNodeUnavailable`).
    fn unavailable(&self) -> bool {
        !self.ready || (!self.done() && !self.failing())
    }

    /// Reported Degraded or Unreconcilable on a config it was given (upstream
    /// `getDegradedMachines`).
    fn degraded(&self) -> bool {
        !self.desired.is_empty() && (self.state == STATE_DEGRADED || self.state == STATE_UNRECONCILABLE)
    }
}

/// How many of a pool's `pool_size` nodes may be unavailable at once: `spec.maxUnavailable`, a
/// number or a percentage of the pool's nodes rounded down, 1 when absent or when it comes to
/// 0 (MCO `node_controller.go` `maxUnavailable`: apimachinery's
/// `GetScaledValueFromIntOrPercent(…, len(nodes), false)`). A string that is not a percentage
/// is the error apimachinery gives, and the controller moves no node of that pool.
pub fn max_unavailable(spec: &Value, pool_size: usize) -> Result<usize, String> {
    let scaled = match spec {
        Value::Null => 1,
        Value::Number(n) => n
            .as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| format!("\"maxUnavailable\" invalid value for IntOrString: {n}"))?,
        Value::String(s) => {
            let percent = s
                .strip_suffix('%')
                .and_then(|p| p.parse::<usize>().ok())
                .ok_or_else(|| {
                    "\"maxUnavailable\" invalid value for IntOrString: invalid type: string is not a percentage"
                        .to_string()
                })?;
            percent.saturating_mul(pool_size) / 100
        }
        other => {
            return Err(format!(
                "\"maxUnavailable\" invalid value for IntOrString: {other}"
            ));
        }
    };
    Ok(scaled.max(1))
}

/// Nodes whose `desiredConfig` should now be set to the pool's target, in name order
/// (upstream `getAllCandidateMachines`): every node not yet given the target is a candidate,
/// a failing node included (its daemon gave up; a new config may mend it), up to the room
/// `maxUnavailable` leaves once unavailable nodes and nodes failing on the target are counted.
pub fn nodes_to_update(pool: &PoolView, nodes: &[NodeView]) -> Vec<String> {
    if pool.paused || pool.target.is_empty() {
        return Vec::new();
    }
    let unavailable = nodes.iter().filter(|n| n.unavailable()).count();
    let failing_target = nodes
        .iter()
        .filter(|n| n.desired == pool.target && n.failing())
        .count();
    let room = pool
        .max_unavailable
        .saturating_sub(unavailable)
        .saturating_sub(failing_target);
    let mut waiting: Vec<&NodeView> = nodes.iter().filter(|n| n.desired != pool.target).collect();
    waiting.sort_by(|a, b| a.name.cmp(b.name));
    waiting
        .into_iter()
        .take(room)
        .map(|n| n.name.to_string())
        .collect()
}

fn condition(type_: &str, on: bool, message: &str) -> PoolCondition {
    PoolCondition {
        type_: type_.to_string(),
        status: if on { "True" } else { "False" }.to_string(),
        message: message.to_string(),
        ..PoolCondition::default()
    }
}

/// The pool's status: counts, the configuration all nodes reached, and conditions. A pool the
/// render controller never configured is not the node controller's: it "pauses for the renderer"
/// and computes no status (release-4.12/4.16 node_controller.go syncMachineConfigPool,
/// `Spec.Configuration.Name == ""`), so only the render controller's own RenderDegraded is there,
/// if its render failed.
pub fn pool_status(pool: &PoolView, nodes: &[NodeView], observed_generation: i64) -> MachineConfigPoolStatus {
    if pool.target.is_empty() {
        let conditions = pool
            .render_failure
            .as_deref()
            .map(|failure| vec![condition("RenderDegraded", true, failure)])
            .unwrap_or_default();
        return MachineConfigPoolStatus {
            conditions,
            ..MachineConfigPoolStatus::default()
        };
    }
    // release-4.12/4.16 node/status.go calculateStatus.
    let updated = nodes.iter().filter(|n| n.done_at(&pool.target)).count();
    let ready = nodes
        .iter()
        .filter(|n| n.done_at(&pool.target) && n.ready)
        .count();
    let degraded: Vec<&NodeView> = nodes.iter().filter(|n| n.degraded()).collect();
    let unavailable = nodes.iter().filter(|n| n.unavailable()).count();
    let all_updated = updated == nodes.len() && ready == nodes.len() && unavailable == 0;
    let current = if all_updated {
        pool.target.clone()
    } else {
        pool.current.clone()
    };
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let line = format!("{}{}", pool.update_line_prefix, pool.target);
    let (updated_message, updating, updating_message) = if all_updated {
        (format!("All nodes are updated with {line}"), false, String::new())
    } else if pool.paused {
        (
            String::new(),
            false,
            format!("Pool is paused; will not update to {line}"),
        )
    } else {
        (String::new(), true, format!("All nodes are updating to {line}"))
    };
    let node_degraded = node_degraded(&degraded);
    let degraded = degraded.len();
    MachineConfigPoolStatus {
        observed_generation,
        configuration: PoolConfiguration {
            name: current,
            ..PoolConfiguration::default()
        },
        machine_count: count(nodes.len()),
        updated_machine_count: count(updated),
        ready_machine_count: count(ready),
        unavailable_machine_count: count(unavailable),
        degraded_machine_count: count(degraded),
        conditions: vec![
            condition("Updated", all_updated, &updated_message),
            condition("Updating", updating, &updating_message),
            node_degraded,
            // render_controller.go syncFailingStatus / syncAvailableStatus.
            condition(
                "RenderDegraded",
                pool.render_failure.is_some(),
                pool.render_failure.as_deref().unwrap_or(""),
            ),
            // status.go: the pool is Degraded when NodeDegraded or RenderDegraded is.
            condition("Degraded", degraded > 0 || pool.render_failure.is_some(), ""),
        ],
        cert_expirys: None,
        other: Default::default(),
    }
}

/// The NodeDegraded condition: each degraded node with its reason, which names the path for
/// config drift; a node with no reason is counted but not named.
fn node_degraded(degraded: &[&NodeView]) -> PoolCondition {
    let mut node_degraded = condition("NodeDegraded", !degraded.is_empty(), "");
    if !degraded.is_empty() {
        node_degraded.reason = format!("{} nodes are reporting degraded status on sync", degraded.len());
        node_degraded.message = degraded
            .iter()
            .filter(|n| !n.reason.is_empty())
            .map(|n| format!("Node {} is reporting: {:?}", n.name, n.reason))
            .collect::<Vec<_>>()
            .join(", ");
    }
    node_degraded
}

/// The drain controller's answer to a node's `desiredDrain`: the `lastAppliedDrain` to write
/// and whether the node is then unschedulable; `None` when there is nothing to do.
pub fn drain_answer(desired_drain: Option<&str>, last_applied: Option<&str>) -> Option<(String, bool)> {
    let desired = desired_drain.filter(|d| !d.is_empty())?;
    if Some(desired) == last_applied {
        return None;
    }
    Some((desired.to_string(), desired.starts_with("drain-")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The status as the node controller writes it to the API server.
    fn written(pool: &PoolView, nodes: &[NodeView], generation: i64) -> Value {
        serde_json::to_value(pool_status(pool, nodes, generation)).unwrap()
    }

    fn node<'a>(name: &'a str, current: &'a str, desired: &'a str, state: &'a str) -> NodeView<'a> {
        NodeView {
            name,
            current,
            desired,
            state,
            reason: "",
            ready: true,
        }
    }

    fn pool(paused: bool, max: usize) -> PoolView {
        PoolView {
            name: "worker".into(),
            paused,
            max_unavailable: max,
            target: "r2".into(),
            current: "r1".into(),
            render_failure: None,
            update_line_prefix: "",
        }
    }

    #[test]
    fn a_paused_pool_moves_no_node() {
        let nodes = [node("a", "r1", "r1", "Done"), node("b", "r1", "r1", "Done")];
        assert!(nodes_to_update(&pool(true, 1), &nodes).is_empty());
        let status = written(&pool(true, 1), &nodes, 1);
        assert_eq!(status["configuration"]["name"], "r1");
        assert_eq!(
            (
                &status["conditions"][0]["status"],
                &status["conditions"][0]["message"]
            ),
            (&json!("False"), &json!(""))
        );
        assert_eq!(
            (
                &status["conditions"][1]["status"],
                &status["conditions"][1]["message"]
            ),
            (&json!("False"), &json!("Pool is paused; will not update to r2")),
            "paused: not Updating, and says why (release-4.12 status.go:97)"
        );
    }

    #[test]
    fn an_unpaused_pool_on_its_way_says_so_and_then_that_it_arrived() {
        let on_the_way = [node("a", "r1", "r2", "Working"), node("b", "r1", "r1", "Done")];
        let status = written(&pool(false, 1), &on_the_way, 1);
        assert_eq!(
            (
                &status["conditions"][1]["status"],
                &status["conditions"][1]["message"]
            ),
            (&json!("True"), &json!("All nodes are updating to r2"))
        );
        assert_eq!(status["conditions"][0]["status"], "False");
        let arrived = [node("a", "r2", "r2", "Done"), node("b", "r2", "r2", "Done")];
        let status = written(&pool(false, 1), &arrived, 1);
        assert_eq!(
            (
                &status["conditions"][0]["status"],
                &status["conditions"][0]["message"]
            ),
            (&json!("True"), &json!("All nodes are updated with r2"))
        );
        assert_eq!(status["conditions"][1]["status"], "False");
    }

    #[test]
    fn an_unready_node_is_unavailable_and_keeps_the_pool_from_updated() {
        let mut cordoned = node("a", "r2", "r2", "Done");
        cordoned.ready = false;
        let nodes = [cordoned, node("b", "r2", "r2", "Done")];
        let status = written(&pool(false, 1), &nodes, 1);
        assert_eq!(
            (
                status["updatedMachineCount"].as_u64(),
                status["readyMachineCount"].as_u64(),
                status["unavailableMachineCount"].as_u64()
            ),
            (Some(2), Some(1), Some(1))
        );
        assert_eq!(status["conditions"][0]["status"], "False");
        assert_eq!(
            status["configuration"]["name"], "r1",
            "not all nodes are ready on r2"
        );
        let waiting = [
            NodeView {
                ready: false,
                ..node("a", "r1", "r1", "Done")
            },
            node("b", "r1", "r1", "Done"),
        ];
        assert!(
            nodes_to_update(&pool(false, 1), &waiting).is_empty(),
            "the unready node takes the only room"
        );
    }

    #[test]
    fn a_node_that_gave_up_is_given_the_new_target_and_is_not_unavailable() {
        // Unreconcilable on r3: not unavailable, a candidate for r2 (release-4.12
        // node_controller.go getAllCandidateMachines, status.go isNodeUnavailable).
        let nodes = [
            NodeView {
                reason: "can't reconcile",
                ..node("a", "r1", "r3", "Unreconcilable")
            },
            node("b", "r1", "r1", "Done"),
        ];
        assert_eq!(nodes_to_update(&pool(false, 1), &nodes), ["a"]);
        assert_eq!(nodes_to_update(&pool(false, 2), &nodes), ["a", "b"]);
        let status = written(&pool(false, 1), &nodes, 1);
        assert_eq!(status["unavailableMachineCount"], 0);
        assert_eq!(status["degradedMachineCount"], 1);
        assert_eq!(
            (
                &status["conditions"][2]["reason"],
                &status["conditions"][2]["message"]
            ),
            (
                &json!("1 nodes are reporting degraded status on sync"),
                &json!("Node a is reporting: \"can't reconcile\"")
            )
        );
        // Failing on the target itself: it holds the room, as it may mend.
        let failing_target = [node("a", "r1", "r2", "Degraded"), node("b", "r1", "r1", "Done")];
        assert!(nodes_to_update(&pool(false, 1), &failing_target).is_empty());
    }

    #[test]
    fn max_unavailable_is_a_number_or_a_percentage_rounded_down_and_at_least_one() {
        assert_eq!(max_unavailable(&Value::Null, 10), Ok(1));
        assert_eq!(max_unavailable(&json!(3), 10), Ok(3));
        assert_eq!(max_unavailable(&json!(0), 10), Ok(1));
        assert_eq!(max_unavailable(&json!("10%"), 1000), Ok(100));
        assert_eq!(max_unavailable(&json!("15%"), 10), Ok(1), "1.5 rounds down");
        assert_eq!(max_unavailable(&json!("5%"), 10), Ok(1), "0 becomes 1");
        assert_eq!(max_unavailable(&json!("100%"), 7), Ok(7));
        assert!(
            max_unavailable(&json!("3"), 10)
                .unwrap_err()
                .contains("not a percentage")
        );
        assert!(max_unavailable(&json!(-1), 10).is_err());
    }

    #[test]
    fn max_unavailable_bounds_the_rollout() {
        let nodes = [
            node("c", "r1", "r1", "Done"),
            node("a", "r1", "r1", "Done"),
            node("b", "r1", "r1", "Done"),
        ];
        assert_eq!(nodes_to_update(&pool(false, 1), &nodes), ["a"]);
        assert_eq!(nodes_to_update(&pool(false, 2), &nodes), ["a", "b"]);
        let moving = [
            node("a", "r1", "r2", "Working"),
            node("b", "r1", "r1", "Done"),
            node("c", "r1", "r1", "Done"),
        ];
        assert!(
            nodes_to_update(&pool(false, 1), &moving).is_empty(),
            "one is already updating"
        );
        let done = [node("a", "r2", "r2", "Done"), node("b", "r2", "r2", "Done")];
        let status = written(&pool(false, 1), &done, 3);
        assert_eq!(
            (
                status["configuration"]["name"].as_str(),
                status["updatedMachineCount"].as_u64()
            ),
            (Some("r2"), Some(2))
        );
        assert_eq!(status["conditions"][0]["status"], "True");
    }

    #[test]
    fn a_failed_render_degrades_the_pool_whatever_its_nodes_do() {
        let done = [node("a", "r1", "r1", "Done")];
        let condition = |status: &Value, type_: &str| {
            status["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == type_)
                .map(|c| (c["status"].clone(), c["message"].clone()))
        };
        let healthy = written(&pool(false, 1), &done, 1);
        assert_eq!(
            condition(&healthy, "RenderDegraded"),
            Some((json!("False"), json!("")))
        );
        assert_eq!(condition(&healthy, "Degraded").map(|c| c.0), Some(json!("False")));
        let failing = PoolView {
            render_failure: Some("Failed to render configuration for pool worker: boom".into()),
            ..pool(false, 1)
        };
        let status = written(&failing, &done, 1);
        assert_eq!(
            condition(&status, "RenderDegraded"),
            Some((
                json!("True"),
                json!("Failed to render configuration for pool worker: boom")
            ))
        );
        assert_eq!(condition(&status, "Degraded").map(|c| c.0), Some(json!("True")));
        assert_eq!(
            condition(&status, "NodeDegraded").map(|c| c.0),
            Some(json!("False"))
        );
    }

    #[test]
    fn drains_are_answered_once() {
        assert_eq!(
            drain_answer(Some("drain-r2"), None),
            Some(("drain-r2".into(), true))
        );
        assert_eq!(
            drain_answer(Some("uncordon-r2"), Some("drain-r2")),
            Some(("uncordon-r2".into(), false))
        );
        assert_eq!(drain_answer(Some("uncordon-r2"), Some("uncordon-r2")), None);
        assert_eq!(drain_answer(None, None), None);
    }
}
