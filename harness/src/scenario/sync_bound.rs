//! The bounds a scenario holds the nodes to, in paced time (`pace`): `SYNC_BOUND` for catching up
//! with a change, `rollout_start_bound` for beginning to apply a new config, each grown by
//! `SYNC_BOUND_PER_NODE`; and the lateness messages when a wait took longer. Only measures and
//! words the verdict; the waiting itself is `converge`'s.

use super::pace::{Elapsed, Mark};
use super::*;

/// How long the nodes may take, in paced time (`pace`: wall time weighted by the share of the
/// CPU the host gave the harness, so it does not move with load), to reflect a change once the
/// cluster side made it, whatever `--agent-timeout` says. Upstream acts on the informer event: the 4.16 daemon queues
/// every ControllerConfig event with client-go's default rate limiter (5 ms, doubling only on
/// failure; release-4.16 certificate_writer.go:52) and the 4.12 path is the controller's render
/// and node sync on their events, then the daemon's on its Node event (release-4.12
/// daemon.go). The 60 s `ccRequeueDelay` applies only before the daemon has read its Node,
/// which the start of a scenario waits out (`await_first_sync`). Ten seconds of an idle host's
/// time is generous to event-driven agents; an agent that polls on a timer instead is late,
/// and late is a failure. A timer only gains what the host's pace takes off it, and paced time
/// counts at least `pace::MIN_SHARE` of wall time: a timer longer than this bound divided by
/// that (500 s) is late however loaded the host is.
pub const SYNC_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// What the bounds grow by per node of the scenario: every node's agent, kubelet and files run
/// in this process (or its containers) on the same cores, so a change that reaches ten
/// thousand nodes takes the harness itself seconds of wall time that no agent is late for
/// (the scale benchmark measures about 0.1–0.5 ms per node and change on two cores; this
/// allows ten times that). Below a hundred nodes it adds under 0.5 s.
pub const SYNC_BOUND_PER_NODE: std::time::Duration = std::time::Duration::from_millis(5);

/// How long a node's agent may take to begin applying a new rendered config on `profile`.
/// release-4.16's daemon, once after every start, holds its Node worker for a minute after its
/// first sync past boot before it starts its health listener (release-4.16 daemon.go:857-870,
/// `initializeHealthServer`); a config given to the node in that minute waits for it. Neither
/// release-4.12 nor main holds it.
pub fn rollout_start_bound(profile: Profile) -> std::time::Duration {
    SYNC_BOUND + profile.traits().start_hold
}

/// Whether a wait that took `took` is past `bound`: in paced time, never in wall time (see
/// `pace`), so the verdict is the same on an idle host and on one running at a fraction of its
/// pace.
pub fn late(took: Elapsed, bound: std::time::Duration) -> bool {
    took.paced > bound
}

/// How long a wait took, as a lateness message says it.
fn how_long(took: Elapsed) -> String {
    format!(
        "{:.1} s of host time ({:.1} s of wall time, the host at {:.0} % of its pace)",
        took.paced.as_secs_f64(),
        took.wall.as_secs_f64(),
        took.pace() * 100.0
    )
}

impl Scenario {
    /// How long a node may take to begin applying a config it was given (paced time).
    pub(super) fn rollout_bound(&self) -> std::time::Duration {
        rollout_start_bound(self.options.profile) + self.per_node_allowance()
    }

    /// How long the nodes may take to catch up with a change that rolls out no config (paced
    /// time).
    fn sync_bound(&self) -> std::time::Duration {
        SYNC_BOUND + self.per_node_allowance()
    }

    /// The lateness of a node that `began` (or `has not begun`) applying its new config after
    /// `waited`.
    pub(super) fn late_start(&self, node: &str, waited: Elapsed, began: &str) -> String {
        format!(
            "late: node {node} {began} applying its new config {} after it was given it (its desiredConfig set; no state, desiredDrain or currentConfig written), past the {} s an agent acting on the API server's events may take on {} (upstream acts on the Node event at once); --agent-timeout does not extend this",
            how_long(waited),
            self.rollout_bound().as_secs(),
            self.options.profile
        )
    }

    pub(super) fn note_sync(&self, took: Elapsed) {
        self.slowest_sync_ms.fetch_max(
            u64::try_from(took.paced.as_millis()).unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// The longest the nodes took to reflect a change so far in this scenario, in paced time.
    pub fn slowest_sync(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.slowest_sync_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// [`SYNC_BOUND_PER_NODE`] for each node of the scenario.
    fn per_node_allowance(&self) -> std::time::Duration {
        SYNC_BOUND_PER_NODE.saturating_mul(u32::try_from(self.nodes.len()).unwrap_or(u32::MAX))
    }

    /// `Err` naming how late the nodes were when they took longer than `SYNC_BOUND` (and the
    /// allowance for the scenario's nodes) since `started`, in paced time.
    pub(super) fn in_time(&self, started: Mark, what: &str) -> Result<(), ScenarioError> {
        let took = started.elapsed();
        self.note_sync(took);
        match self.late_yet(took, what, None) {
            None => Ok(()),
            Some(late) => Err(ScenarioError::NotConverged(late)),
        }
    }

    /// The lateness message when `took` is past the sync bound, saying what the nodes `did`
    /// (or, with what was `seen`, have not done yet); `None` while on time.
    pub(super) fn late_yet(&self, took: Elapsed, did: &str, seen: Option<&str>) -> Option<String> {
        // With an upstream machine-config controller the time includes its own schedule (its
        // render controller waits 5 s, its node controller acts on its queue): not the agent's
        // to answer for. Each node's start on a config it was given is still bound (`converge`).
        if !late(took, self.sync_bound()) || self.upstream_controller().is_some() {
            return None;
        }
        let when = match seen {
            None => format!("the nodes {did} {} after the change", how_long(took)),
            Some(_) => format!("the nodes have not {did} {} after the change", how_long(took)),
        };
        Some(format!(
            "late: {when}, past the {:.1} s an agent acting on the API server's events needs with {} node(s) (upstream reacts to the watch event at once); --agent-timeout does not extend this{}",
            self.sync_bound().as_secs_f64(),
            self.nodes.len(),
            seen.map(|s| format!("; last seen: {s}")).unwrap_or_default()
        ))
    }
}
