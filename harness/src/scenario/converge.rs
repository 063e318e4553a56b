//! Waiting until the nodes have caught up with the cluster side (`converge`): each look at the
//! ControllerConfig, the pools and the Nodes says what is still pending, which node was given a
//! new config and has not begun it, and whether an agent is gone; a failed update or a late
//! agent ends the wait at once. It only observes: reacting is the cluster side's job, and the
//! bounds it judges by are `sync_bound`'s.

use super::pace::{Elapsed, Mark};
use super::sync_bound::late;
use super::*;
use crate::mco::pool::MachineConfigPool;

/// Why the nodes have not caught up: still working, or stuck.
enum Pending {
    Waiting(String),
    /// A node's agent has not synced the current ControllerConfig: the agent's to do alone.
    Unsynced(String),
    /// An update failed (the node is Degraded or Unreconcilable): waiting longer will not help.
    Failed(String),
}

/// What one look at the cluster found: what is pending, and the nodes given a new config that
/// are still `Done` on their old one, each with what its agent writes as it begins (state,
/// `desiredDrain`, `currentConfig`).
struct Look {
    pending: Option<Pending>,
    unstarted: Vec<Unstarted>,
}

struct Unstarted {
    /// The node and the config it was given.
    key: (String, String),
    /// `state|desiredDrain|currentConfig` when looked at.
    marks: String,
}

/// How a converge went: whether a rendered config rolled out during it, and the longest a node
/// took to begin applying its new config (from when it was first seen not begun).
#[derive(Default)]
struct Rollout {
    seen: bool,
    slowest_start: Elapsed,
    slowest_node: String,
}

/// Per (node, config): when it was first seen given the config and not begun, and what its Node
/// said then; it has begun once that changes (upstream's first write is the drain request, or
/// the uncordon request when the change needs no drain).
#[derive(Default)]
struct Starts {
    first_seen: BTreeMap<(String, String), (Mark, String)>,
    begun: std::collections::BTreeSet<(String, String)>,
    rollout: Rollout,
}

impl Starts {
    /// What one look saw not begun, at `now`: those new to it are waited for from now, those
    /// whose Node changed since have begun (the slowest start so far noted).
    fn observe(&mut self, unstarted: &[Unstarted], now: Mark) {
        for u in unstarted {
            self.rollout.seen = true;
            if !self.begun.contains(&u.key) {
                self.first_seen
                    .entry(u.key.clone())
                    .or_insert((now, u.marks.clone()));
            }
        }
        // By key, so thousands of nodes given a config at once cost no square.
        let unstarted: std::collections::HashMap<&(String, String), &String> =
            unstarted.iter().map(|u| (&u.key, &u.marks)).collect();
        let (rollout, begun) = (&mut self.rollout, &mut self.begun);
        self.first_seen.retain(|key, (since, marks)| {
            let still = unstarted.get(key).is_some_and(|m| *m == marks);
            if still {
                return true;
            }
            let took = since.until(&now);
            if took.paced >= rollout.slowest_start.paced {
                rollout.slowest_start = took;
                rollout.slowest_node = key.0.clone();
            }
            begun.insert(key.clone());
            false
        });
    }

    /// A node that has waited to begin past `bound`, and how long it has.
    fn waiting_past(&self, now: Mark, bound: Duration) -> Option<(&String, Elapsed)> {
        self.first_seen
            .iter()
            .map(|((node, _), (since, _))| (node, since.until(&now)))
            .find(|(_, waited)| late(*waited, bound))
    }
}

/// How often a convergence wait asks every node whether its agent still runs.
const AGENT_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How much of a node's journal a failure for a gone agent shows.
const AGENT_GONE_LINES: usize = 15;
/// How much of each of those lines it shows.
const AGENT_GONE_LINE_CHARS: usize = 400;

impl Scenario {
    /// Wait until the cluster side is quiet and every node has caught up with it: on 4.16 each
    /// agent has synced the current ControllerConfig; on both, every node of an unpaused pool
    /// runs its pool's config and is `Done`. A node whose update failed ends the wait at once
    /// with its reason: waiting longer does not mend it.
    ///
    /// Timeliness: when a rendered config rolled out, each node's agent must begin applying it
    /// (write its state, `desiredDrain` or `currentConfig`: upstream's first write is the drain
    /// request, or the uncordon request when no drain is needed) within `rollout_start_bound` of
    /// the node being given it; the rollout as a whole
    /// is not bound, since upstream's own takes at least ten seconds: after every update the
    /// daemon polls the drain controller's answer every 10 s, the first poll after 10 s
    /// (release-4.12 daemon.go:1772, release-4.16 daemon.go:2421 `completeUpdate`; the drain
    /// itself likewise, release-4.16 drain.go:90), and a daemon whose Node cache lags its own
    /// write runs the same config once more (release-4.16 took 33 s for an SSH key change).
    /// Otherwise (a ControllerConfig sync, a rotation on 4.16) the nodes must have caught up
    /// within `SYNC_BOUND`. Both in paced time ([`late`]); a wait that is already late ends
    /// then, without waiting out `--agent-timeout`.
    pub async fn converge(&self) -> Result<(), ScenarioError> {
        let started = Mark::now();
        let rollout = self.converge_within(self.options.deadline, Some(started)).await?;
        self.record_timeline().await;
        if !rollout.seen {
            return self.in_time(started, "caught up with the cluster");
        }
        self.note_sync(rollout.slowest_start);
        if !late(rollout.slowest_start, self.rollout_bound()) {
            return Ok(());
        }
        Err(ScenarioError::NotConverged(self.late_start(
            &rollout.slowest_node,
            rollout.slowest_start,
            "began",
        )))
    }

    /// The agents' first sync after the nodes booted, waited for up to the agent timeout and
    /// not bound by `SYNC_BOUND`: an upstream daemon syncs certificates only once it has read
    /// its Node, a minute after it starts at worst (release-4.16 `ccRequeueDelay`).
    pub(super) async fn await_first_sync(&self) -> Result<(), ScenarioError> {
        if self.options.nudge_first_sync {
            let writer = self.options.profile.traits().certificate_writer().is_some();
            self.nudge_first_sync(writer).await?;
        }
        self.converge_within(self.options.deadline, None).await.map(drop)
    }

    /// Wait until nothing is pending, up to `deadline`. With `change` (when the change being
    /// waited for was made), a wait that is late already ends then, failed: an agent has not
    /// synced the ControllerConfig past the sync bound, or a node has not begun applying a
    /// config past the rollout bound.
    async fn converge_within(
        &self,
        deadline: Duration,
        change: Option<Mark>,
    ) -> Result<Rollout, ScenarioError> {
        let starts = std::sync::Mutex::new(Starts::default());
        // Whether every agent still runs is asked of every node, so not at every look.
        let agents_asked = std::sync::Mutex::new(None::<std::time::Instant>);
        let failed = eventually(deadline, || async {
            let agents = {
                let mut asked = agents_asked.lock().unwrap_or_else(|p| p.into_inner());
                let due = asked.is_none_or(|at| at.elapsed() >= AGENT_CHECK_EVERY);
                if due {
                    *asked = Some(std::time::Instant::now());
                }
                due
            };
            let look = self.pending(agents).await;
            let mut late_start = None;
            {
                let now = Mark::now();
                let mut starts = starts.lock().unwrap_or_else(|p| p.into_inner());
                starts.observe(&look.unstarted, now);
                if change.is_some() {
                    late_start = starts
                        .waiting_past(now, self.rollout_bound())
                        .map(|(node, waited)| self.late_start(node, waited, "has not begun"));
                }
                if let (Some(change), false) = (change, starts.rollout.seen)
                    && let Some(Pending::Unsynced(what)) = &look.pending
                    && late_start.is_none()
                {
                    late_start = self.late_yet(change.until(&now), "caught up with the cluster", Some(what));
                }
            }
            if let Some(late) = late_start {
                return Ok(Some(late));
            }
            match look.pending {
                None => Ok(None),
                Some(Pending::Failed(why)) => Ok(Some(why)),
                Some(Pending::Waiting(what) | Pending::Unsynced(what)) => Err(what),
            }
        })
        .await;
        let why = match failed {
            Ok(None) => return Ok(starts.into_inner().unwrap_or_else(|p| p.into_inner()).rollout),
            Ok(Some(why)) => why,
            Err(e) => e,
        };
        Err(ScenarioError::NotConverged(format!(
            "{why}\ncluster log (last 20):\n{}",
            self.log_tail(20)
        )))
    }

    /// What is still out of step, if anything, and whether an agent is gone when `agents` is
    /// set. It only observes: reacting is the running cluster side's job.
    async fn pending(&self, agents: bool) -> Look {
        if agents && let Some(why) = self.agent_gone().await {
            return Look {
                pending: Some(Pending::Failed(why)),
                unstarted: Vec::new(),
            };
        }
        let mut unstarted = Vec::new();
        let pending = self.pending_noting(&mut unstarted).await;
        Look { pending, unstarted }
    }

    /// A node whose agent is no longer running (its process exited, or never started: the
    /// service manager says the unit failed), with the end of its journal: waiting for such an
    /// agent to act is waiting for nothing.
    async fn agent_gone(&self) -> Option<String> {
        for node in &self.nodes {
            let Ok(out) = node.systemctl(&["is-active", AGENT_UNIT]).await else {
                continue;
            };
            if out.stdout.trim() != "failed" {
                continue;
            }
            let journal = node
                .journal_since(crate::node::JournalMark(0))
                .await
                .unwrap_or_default();
            let tail = &journal[journal.len().saturating_sub(AGENT_GONE_LINES)..];
            let shown: Vec<String> = tail
                .iter()
                .map(|line| match line.char_indices().nth(AGENT_GONE_LINE_CHARS) {
                    Some((cut, _)) => format!("{}… ({} bytes)", &line[..cut], line.len()),
                    None => line.clone(),
                })
                .collect();
            return Some(format!(
                "node {}: the agent is not running: {AGENT_UNIT} failed (its process exited or never started); the node's journal ends:\n{}",
                node.name(),
                shown.join("\n")
            ));
        }
        None
    }

    /// What is still out of step, noting in `unstarted` every node given a new config that is
    /// still `Done` on its old one. The Nodes are read from the cluster side's cache, which a
    /// watch keeps; when that shows nothing pending, a list confirms it (the cache may not yet
    /// show a write the API server already has), so "caught up" is never a stale reading.
    async fn pending_noting(&self, unstarted: &mut Vec<Unstarted>) -> Option<Pending> {
        // An upstream machine-config controller acts on its own schedule: nothing has converged
        // until it has acted on what the API holds now.
        if let Some(running) = self.upstream_controller()
            && let Err(behind) = crate::cluster::upstream::caught_up(&self.admin).await
        {
            return Some(Pending::Waiting(format!(
                "the upstream machine-config-controller: {behind} (its log: {})",
                running.log.display()
            )));
        }
        // An API error is not "nothing pending": it is waited out like any other.
        let unreadable = |what: &str, e: kube::Error| Some(Pending::Waiting(format!("reading {what}: {e}")));
        let cc = match controller_configs(&self.admin)
            .get("machine-config-controller")
            .await
        {
            Ok(cc) => cc,
            Err(e) => return unreadable("controllerconfig", e),
        };
        let cc_rv = cc.metadata.resource_version.unwrap_or_default();
        let pools = match machine_config_pools(&self.admin)
            .list(&ListParams::default())
            .await
        {
            Ok(pools) => pools,
            Err(e) => return unreadable("machineconfigpools", e),
        };
        let targets: BTreeMap<String, (String, bool)> = pools
            .iter()
            .map(|p| {
                let pool = MachineConfigPool::of(p).unwrap_or_default();
                (
                    p.metadata.name.clone().unwrap_or_default(),
                    (pool.spec.configuration.name, pool.spec.paused),
                )
            })
            .collect();
        let cache = &self.side.nodes;
        if !cache.filled() {
            return Some(Pending::Waiting(
                "the Node watch has not listed the Nodes yet".into(),
            ));
        }
        let cached = cache.nodes();
        let found = self.judge(&cc_rv, &targets, cached.iter().map(|n| n.as_ref()), unstarted);
        if found.is_some() {
            return found;
        }
        let nodes = match Api::<NodeObject>::all(self.admin.clone())
            .list(&ListParams::default())
            .await
        {
            Ok(nodes) => nodes,
            Err(e) => return unreadable("nodes", e),
        };
        self.judge(&cc_rv, &targets, nodes.iter(), unstarted)
    }

    /// [`Scenario::pending_noting`]'s verdict over `nodes`, given the ControllerConfig's
    /// resourceVersion and each pool's target config and whether it is paused.
    fn judge<'n>(
        &self,
        cc_rv: &str,
        targets: &BTreeMap<String, (String, bool)>,
        nodes: impl Iterator<Item = &'n NodeObject>,
        unstarted: &mut Vec<Unstarted>,
    ) -> Option<Pending> {
        let mut found = None;
        for node in nodes {
            let name = node.metadata.name.as_deref().unwrap_or("");
            let a = node.metadata.annotations.as_ref();
            let get = |k: &str| a.and_then(|a| a.get(k)).map_or("", String::as_str);
            if !get(DESIRED_CONFIG).is_empty()
                && get(DESIRED_CONFIG) != get(CURRENT_CONFIG)
                && get(STATE) == STATE_DONE
            {
                unstarted.push(Unstarted {
                    key: (name.to_string(), get(DESIRED_CONFIG).to_string()),
                    marks: format!("{}|{}|{}", get(STATE), get(DESIRED_DRAIN), get(CURRENT_CONFIG)),
                });
            }
            if found.is_some() {
                continue;
            }
            let role = node
                .metadata
                .labels
                .iter()
                .flatten()
                .map(|(k, _)| k)
                .find_map(|l| l.strip_prefix("node-role.kubernetes.io/"));
            // A failed update (Degraded or Unreconcilable while moving to a new config) ends the
            // wait at once; a Degraded node on its config may still recover, so it is waited for.
            if (get(STATE) == STATE_DEGRADED || get(STATE) == STATE_UNRECONCILABLE)
                && get(CURRENT_CONFIG) != get(DESIRED_CONFIG)
            {
                found = Some(Pending::Failed(format!(
                    "node {name} is {} (currentConfig {}, desiredConfig {}): {}",
                    get(STATE),
                    get(CURRENT_CONFIG),
                    get(DESIRED_CONFIG),
                    get(REASON)
                )));
                continue;
            }
            // A node whose certificate writer failed is Degraded and does not sync (a 4.16 node
            // with no role label, release-4.16 certificate_writer.go:435-440); as when a
            // ControllerConfig is published, the Then-steps judge it. A Degraded node in a pool
            // is still waited for below, until it is Done on the pool's target.
            if self.options.profile.traits().certificate_writer().is_some()
                && get(LAST_SYNCED_CONTROLLER_CONFIG) != cc_rv
                && get(STATE) != STATE_DEGRADED
            {
                found = Some(Pending::Unsynced(format!(
                    "node {name} synced controllerconfig {:?}, current is {cc_rv}",
                    get(LAST_SYNCED_CONTROLLER_CONFIG)
                )));
                continue;
            }
            if let Some((target, paused)) = role.and_then(|r| targets.get(r))
                && !paused
                && (get(CURRENT_CONFIG) != target
                    || get(DESIRED_CONFIG) != target
                    || get(STATE) != STATE_DONE)
            {
                let reason = match get(REASON) {
                    "" => String::new(),
                    reason => format!(", reason {reason:?}"),
                };
                found = Some(Pending::Waiting(format!(
                    "node {name}: currentConfig {} desiredConfig {} state {}{reason} (pool target {target})",
                    get(CURRENT_CONFIG),
                    get(DESIRED_CONFIG),
                    get(STATE)
                )));
            }
        }
        found
    }
}
