//! Moving a scenario through simulated time: deadline by deadline, each kubelet reporting at
//! every stop, the cluster side settling there, and the nodes converging before time moves on;
//! the controller's metrics are scraped at each stop. How the nodes are waited for is
//! `converge`'s, and the bounds they are held to `sync_bound`'s.

use super::*;

impl Scenario {
    /// Move the clock by `by`, stopping at every rule deadline on the way.
    pub async fn advance(&self, by: time::Duration) -> Result<(), ScenarioError> {
        self.advance_reporting(by, |_, _| {}).await
    }

    /// [`Scenario::advance`], calling `report` with the simulated instant and the number of
    /// stops so far after each stop (a long advance's progress).
    pub async fn advance_reporting(
        &self,
        by: time::Duration,
        mut report: impl FnMut(time::OffsetDateTime, usize),
    ) -> Result<(), ScenarioError> {
        let until = self.clock.now() + by;
        let mut stops = 0;
        loop {
            let stop = self.side.next_stop(until).await?;
            self.side.move_clock(stop, self.await_heartbeats()).await?;
            self.side.settle().await?;
            self.converge().await?;
            self.scrape_metrics().await?;
            // Again after the scrape, for the alerts it moved (a no-op without a timeline).
            self.record_timeline().await;
            stops += 1;
            report(stop, stops);
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
        self.paused_pool_alert_since(severity, pool).0
    }

    /// The alert's state and since when its expression has held (pending from then, firing
    /// 60 minutes later).
    pub fn paused_pool_alert_since(
        &self,
        severity: crate::prometheus::Severity,
        pool: &str,
    ) -> (crate::prometheus::AlertState, Option<time::OffsetDateTime>) {
        self.prometheus
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .alert_since(severity, pool, self.clock.now())
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
        // Each node follows the clock in a task of its own; one that cannot (a container
        // node's control socket gone) fails the step with its reason, not after the deadline.
        let at = self.clock.now();
        let followed = futures::future::try_join_all(self.nodes.iter().map(|node| node.follow_clock(at)));
        tokio::time::timeout(self.options.deadline, followed)
            .await
            .map_err(|_| {
                ScenarioError::NotConverged(format!(
                    "the nodes' clocks did not follow the scenario's to {} within {:?}",
                    rfc3339(at),
                    self.options.deadline
                ))
            })?
            .map_err(|e| ScenarioError::NotConverged(e.to_string()))?;
        let now = rfc3339(at);
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
}
