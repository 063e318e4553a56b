//! Moving a scenario through simulated time: deadline by deadline, each kubelet reporting at
//! every stop, the cluster side settling there, and the nodes converging before time moves on.

use super::*;

/// How long the nodes may take, in wall time, to reflect a change once the cluster side made it,
/// whatever `--agent-timeout` says. Upstream acts on the informer event: the 4.16 daemon queues
/// every ControllerConfig event with client-go's default rate limiter (5 ms, doubling only on
/// failure; release-4.16 certificate_writer.go:52) and the 4.12 path is the controller's render
/// and node sync on their events, then the daemon's on its Node event (release-4.12
/// daemon.go). The 60 s `ccRequeueDelay` applies only before the daemon has read its Node,
/// which the start of a scenario waits out (`await_first_sync`). Ten seconds is generous to
/// event-driven agents on a loaded 2-core machine; an agent that polls on a timer instead
/// is late, and late is a failure.
pub const SYNC_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// Why the nodes have not caught up: still working, or stuck.
enum Pending {
    Waiting(String),
    /// An update failed (the node is Degraded or Unreconcilable): waiting longer will not help.
    Failed(String),
}

impl Scenario {
    /// Move the clock by `by`, stopping at every rule deadline on the way.
    pub async fn advance(&self, by: time::Duration) -> Result<(), ScenarioError> {
        let until = self.clock.now() + by;
        loop {
            let stop = self.side.next_stop(until).await?;
            self.clock.advance(stop - self.clock.now());
            self.await_heartbeats().await?;
            self.side.settle().await?;
            self.converge().await?;
            self.scrape_metrics().await?;
            if stop >= until {
                return Ok(());
            }
        }
    }

    /// Scrape the controller's `/metrics` at the clock's now, as Prometheus would.
    pub(super) async fn scrape_metrics(&self) -> Result<(), ScenarioError> {
        let page = crate::prometheus::scrape(self.metrics_addr)
            .await
            .map_err(ScenarioError::NotConverged)?;
        self.prometheus
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(self.clock.now(), &page);
        Ok(())
    }

    /// The state of a `MachineConfigControllerPausedPoolKubeletCA` rule for `pool` now.
    pub fn paused_pool_alert(
        &self,
        severity: crate::prometheus::Severity,
        pool: &str,
    ) -> crate::prometheus::AlertState {
        self.prometheus
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .alert(severity, pool, self.clock.now())
    }

    /// Every kubelet serving and its first node status posted.
    pub(super) async fn await_kubelets(&self) -> Result<(), ScenarioError> {
        eventually(self.options.deadline, || async {
            for node in &self.nodes {
                if node
                    .kubelet_endpoint()
                    .await
                    .map_err(|e| e.to_string())?
                    .is_none()
                {
                    return Err(format!("{}: the kubelet is not serving yet", node.name()));
                }
            }
            Ok(())
        })
        .await
        .map_err(ScenarioError::NotConverged)?;
        self.await_heartbeats().await
    }

    /// Every running kubelet has tried to post its status at the clock's now, so the node
    /// lifecycle controller never judges a heartbeat that is about to come.
    async fn await_heartbeats(&self) -> Result<(), ScenarioError> {
        let now = rfc3339(self.clock.now());
        eventually(self.options.deadline, || async {
            for node in &self.nodes {
                if node
                    .kubelet_endpoint()
                    .await
                    .map_err(|e| e.to_string())?
                    .is_none()
                {
                    continue; // stopped: it posts nothing, as a stopped kubelet would
                }
                let seen = match node.read(HEARTBEAT_FILE).await {
                    Ok(seen) => seen,
                    // Not written yet: the kubelet has not tried to post.
                    Err(crate::node::NodeError::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        Vec::new()
                    }
                    Err(e) => return Err(e.to_string()),
                };
                let seen = String::from_utf8_lossy(&seen);
                if !seen.starts_with(&now) {
                    return Err(format!(
                        "{}: the kubelet last tried to post its status at {:?}; the clock is at {now}",
                        node.name(),
                        seen.trim()
                    ));
                }
            }
            Ok(())
        })
        .await
        .map_err(ScenarioError::NotConverged)
    }

    /// Wait until the cluster side is quiet and every node has caught up with it: on 4.16 each
    /// agent has synced the current ControllerConfig; on both, every node of an unpaused pool
    /// runs its pool's config and is `Done`. A node whose update failed ends the wait at once
    /// with its reason: waiting longer does not mend it.
    pub async fn converge(&self) -> Result<(), ScenarioError> {
        let started = std::time::Instant::now();
        self.converge_within(self.options.deadline).await?;
        self.in_time(started, "caught up with the cluster")
    }

    /// The agents' first sync after the nodes booted, waited for up to the agent timeout and
    /// not bound by `SYNC_BOUND`: an upstream daemon syncs certificates only once it has read
    /// its Node, a minute after it starts at worst (release-4.16 `ccRequeueDelay`).
    pub(super) async fn await_first_sync(&self) -> Result<(), ScenarioError> {
        self.converge_within(self.options.deadline).await
    }

    /// The longest the nodes took to reflect a change so far in this scenario.
    pub fn slowest_sync(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.slowest_sync_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// `Err` naming how late the nodes were when they took longer than `SYNC_BOUND`.
    pub(super) fn in_time(&self, started: std::time::Instant, what: &str) -> Result<(), ScenarioError> {
        let took = started.elapsed();
        self.slowest_sync_ms.fetch_max(
            u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
        if took <= SYNC_BOUND {
            return Ok(());
        }
        Err(ScenarioError::NotConverged(format!(
            "late: the nodes {what} {:.1} s after the change, past the {} s an agent acting on the API server's events needs (upstream reacts to the watch event at once); --agent-timeout does not extend this",
            took.as_secs_f64(),
            SYNC_BOUND.as_secs()
        )))
    }

    async fn converge_within(&self, deadline: Duration) -> Result<(), ScenarioError> {
        let failed = eventually(deadline, || async {
            match self.pending().await {
                None => Ok(None),
                Some(Pending::Failed(why)) => Ok(Some(why)),
                Some(Pending::Waiting(what)) => Err(what),
            }
        })
        .await;
        let why = match failed {
            Ok(None) => return Ok(()),
            Ok(Some(why)) => why,
            Err(e) => e,
        };
        Err(ScenarioError::NotConverged(format!(
            "{why}\ncluster log (last 20):\n{}",
            self.log_tail(20)
        )))
    }

    /// What is still out of step, if anything. It only observes: reacting is the running
    /// cluster side's job.
    async fn pending(&self) -> Option<Pending> {
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
                let v = serde_json::to_value(p).unwrap_or_default();
                (
                    p.metadata.name.clone().unwrap_or_default(),
                    (
                        v["spec"]["configuration"]["name"]
                            .as_str()
                            .unwrap_or("")
                            .to_string(),
                        v["spec"]["paused"].as_bool().unwrap_or(false),
                    ),
                )
            })
            .collect();
        let nodes = match Api::<NodeObject>::all(self.admin.clone())
            .list(&ListParams::default())
            .await
        {
            Ok(nodes) => nodes,
            Err(e) => return unreadable("nodes", e),
        };
        for node in nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let a = node.metadata.annotations.clone().unwrap_or_default();
            let get = |k: &str| a.get(k).cloned().unwrap_or_default();
            let role = node
                .metadata
                .labels
                .unwrap_or_default()
                .keys()
                .find_map(|l| l.strip_prefix("node-role.kubernetes.io/").map(str::to_string));
            // A failed update (Degraded or Unreconcilable while moving to a new config) ends the
            // wait at once; a Degraded node on its config may still recover, so it is waited for.
            if (get(STATE) == STATE_DEGRADED || get(STATE) == STATE_UNRECONCILABLE)
                && get(CURRENT_CONFIG) != get(DESIRED_CONFIG)
            {
                return Some(Pending::Failed(format!(
                    "node {name} is {} (currentConfig {}, desiredConfig {}): {}",
                    get(STATE),
                    get(CURRENT_CONFIG),
                    get(DESIRED_CONFIG),
                    get(REASON)
                )));
            }
            if self.options.profile == Profile::Ocp416 && get(LAST_SYNCED_CONTROLLER_CONFIG) != cc_rv {
                return Some(Pending::Waiting(format!(
                    "node {name} synced controllerconfig {:?}, current is {cc_rv}",
                    get(LAST_SYNCED_CONTROLLER_CONFIG)
                )));
            }
            if let Some((target, paused)) = role.and_then(|r| targets.get(&r))
                && !paused
                && (get(CURRENT_CONFIG) != *target
                    || get(DESIRED_CONFIG) != *target
                    || get(STATE) != STATE_DONE)
            {
                return Some(Pending::Waiting(format!(
                    "node {name}: currentConfig {} desiredConfig {} state {} (pool target {target})",
                    get(CURRENT_CONFIG),
                    get(DESIRED_CONFIG),
                    get(STATE)
                )));
            }
        }
        None
    }
}
