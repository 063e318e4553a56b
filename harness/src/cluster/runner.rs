//! The cluster side running: every controller reconciles, level-triggered, whenever an object
//! it reads changes (one merged set of watches), until a pass changes nothing. Whoever moves the
//! simulated clock settles the cluster there (`Scenario::advance`), so a clock move is not a
//! trigger of its own. Errors go to the cluster log and the next trigger retries.

use super::{
    ClusterError, ClusterLog, MachineConfigController, NodeCache, NodeLifecycle, Operator, SignerRotation,
    retry_transient,
};
use crate::pki::{Clock, SimClock};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// The reference cluster side of one scenario.
pub struct ClusterSide {
    pub signers: SignerRotation,
    pub operator: Operator,
    /// The reference's machine-config controller; `None` where an upstream one runs in its place
    /// (`super::upstream`), on its own schedule.
    pub mcc: Option<MachineConfigController>,
    pub lifecycle: NodeLifecycle,
    pub log: ClusterLog,
    pub clock: SimClock,
    /// One pass at a time, the clock moving only between them.
    passes: Passes,
    /// The API state (the server's resourceVersion and the Node cache's) and instant of the
    /// last pass that changed nothing.
    quiet: std::sync::Mutex<Option<Quiet>>,
    /// The same, for the last pass of the Node-driven controllers alone.
    quiet_nodes: std::sync::Mutex<Option<Quiet>>,
    client: kube::Client,
    /// Every Node as the watch shows it: the controllers read it, and its changes trigger them.
    pub nodes: NodeCache,
}

/// The controllers of a cluster side.
pub struct Controllers {
    pub signers: SignerRotation,
    pub operator: Operator,
    /// `None`: an upstream machine-config controller runs in the reference's place.
    pub mcc: Option<MachineConfigController>,
    pub lifecycle: NodeLifecycle,
}

/// Which controllers a settle runs: all of them, or those a Node change concerns.
#[derive(Clone, Copy)]
enum Scope {
    All,
    Nodes,
}

/// The API server's resourceVersion, the Node cache's, and the simulated instant.
type Quiet = (String, u64, OffsetDateTime);

/// Passes after which a cluster that still changes is reported (a controller fighting another).
const MAX_PASSES: usize = 50;

/// How often the certificate controllers resync (library-go `certrotation`
/// `client_cert_rotation_controller.go`: `ResyncEvery(time.Minute)`).
pub const RESYNC: time::Duration = time::Duration::minutes(1);

impl ClusterSide {
    pub fn new(
        controllers: Controllers,
        log: ClusterLog,
        clock: SimClock,
        client: kube::Client,
        nodes: NodeCache,
    ) -> Self {
        let Controllers {
            signers,
            operator,
            mcc,
            lifecycle,
        } = controllers;
        ClusterSide {
            signers,
            operator,
            mcc,
            lifecycle,
            log,
            passes: Passes::new(clock.clone()),
            clock,
            quiet: std::sync::Mutex::new(None),
            quiet_nodes: std::sync::Mutex::new(None),
            client,
            nodes,
        }
    }

    /// `oc scale deployment/machine-config-operator --replicas=0`: the operator writes nothing
    /// for the rest of the scenario, so a hand edit of the ControllerConfig stays.
    pub fn scale_operator_down(&self) {
        self.operator.scale_down();
    }

    /// Whether the operator was scaled down.
    pub fn operator_scaled_down(&self) -> bool {
        self.operator.is_scaled_down()
    }

    /// One pass of every controller; true if any wrote.
    pub async fn reconcile_once(&self) -> Result<bool, ClusterError> {
        let _one_at_a_time = self.passes.begin().await;
        let mut changed = !self.signers.reconcile().await?.is_empty();
        changed |= self.operator.reconcile().await?;
        if let Some(mcc) = &self.mcc {
            changed |= mcc.reconcile().await?;
        }
        changed |= self.lifecycle.reconcile().await?;
        Ok(changed)
    }

    /// Move the simulated clock to `to` between passes, and hold passes off until `then` (the
    /// kubelets' heartbeats at the new instant) is done: see `Passes::move_clock`.
    pub async fn move_clock<T>(&self, to: OffsetDateTime, then: impl std::future::Future<Output = T>) -> T {
        self.passes.move_clock(to, then).await
    }

    /// Passes until one changes nothing. A pass at the same simulated instant over the same
    /// API state as the last quiet one would change nothing again (every controller is a
    /// function of the two), so it is skipped: watch events of the cluster side's own writes
    /// then cost one small request instead of a pass. The Node cache's resourceVersion is part
    /// of that state: a Node change the cache had not applied when a pass read it is not taken
    /// as seen by that pass.
    pub async fn settle(&self) -> Result<(), ClusterError> {
        retry_transient(|| self.settle_in(Scope::All)).await
    }

    /// [`ClusterSide::settle`] for a change of Nodes alone: only the machine-config controller
    /// reads Nodes (its node and drain controllers; upstream's signer and operator controllers
    /// watch none, and the lifecycle controller judges heartbeats where the clock stops), so
    /// only it runs. Ten thousand daemons reporting their sync so cost one controller's passes.
    pub async fn settle_nodes(&self) -> Result<(), ClusterError> {
        retry_transient(|| self.settle_in(Scope::Nodes)).await
    }

    async fn settle_in(&self, scope: Scope) -> Result<(), ClusterError> {
        // A quiet pass of every controller is quiet for the Node-driven one too.
        let (record, quiet_if) = match scope {
            Scope::All => (&self.quiet, [&self.quiet, &self.quiet]),
            Scope::Nodes => (&self.quiet_nodes, [&self.quiet, &self.quiet_nodes]),
        };
        for _ in 0..MAX_PASSES {
            let seen = self.state_now().await?;
            if quiet_if.iter().any(|q| lock(q).as_ref() == Some(&seen)) {
                return Ok(());
            }
            let changed = match scope {
                Scope::All => self.reconcile_once().await?,
                Scope::Nodes => {
                    let _one_at_a_time = self.passes.begin().await;
                    match &self.mcc {
                        Some(mcc) => mcc.reconcile().await?,
                        None => false,
                    }
                }
            };
            if !changed {
                *lock(record) = Some(seen);
                return Ok(());
            }
        }
        let who = match scope {
            Scope::All => "cluster side",
            Scope::Nodes => "machine-config controller",
        };
        self.log.record(
            self.clock.now(),
            &format!("{who} still changing after {MAX_PASSES} passes"),
        );
        Ok(())
    }

    /// What a pass that changed nothing is keyed on.
    async fn state_now(&self) -> Result<Quiet, ClusterError> {
        Ok((
            self.latest_resource_version().await?,
            self.nodes.seen(),
            self.clock.now(),
        ))
    }

    /// The API server's current resourceVersion: a list's, which is global (the etcd revision
    /// on a real API server), read with the smallest list there is.
    async fn latest_resource_version(&self) -> Result<String, ClusterError> {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let list = namespaces
            .list_metadata(&ListParams::default().limit(1))
            .await
            .map_err(|e| ClusterError::kube("namespaces".into(), e))?;
        Ok(list.metadata.resource_version.unwrap_or_default())
    }

    /// Where the clock should next stop on its way to `until`: the first rule deadline, or,
    /// when more fall within one resync interval of it, the last of those. A real certificate
    /// controller acts on a deadline at its next resync, up to a minute later, so deadlines that
    /// close together are met in one pass there too (a signer rotating one second after its
    /// predecessor leaves the bundle, say).
    pub async fn next_stop(&self, until: OffsetDateTime) -> Result<OffsetDateTime, ClusterError> {
        let deadlines = retry_transient(|| self.signers.deadlines()).await?;
        let signers = match deadlines.first().copied() {
            None => until,
            Some(first) => deadlines
                .into_iter()
                .take_while(|d| *d <= first + RESYNC)
                .last()
                .unwrap_or(first),
        };
        // The operator's own instants (its polls while it waits for a serving CA bundle to
        // settle) are met exactly: each reads the bundle as it is then.
        let operator = self
            .operator
            .deadline()
            .filter(|d| *d > self.clock.now())
            .unwrap_or(until);
        Ok(signers.min(operator).min(until))
    }

    /// The operator's next instant of its own, if it waits on something.
    pub fn operator_deadline(&self) -> Option<OffsetDateTime> {
        self.operator.deadline()
    }

    /// Run until `stop`, reconciling on every watched change.
    pub fn spawn(self: Arc<Self>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let client = self.client.clone();
        tokio::spawn(async move {
            let mco = |kind| crate::cluster::mcc::mco_api(&client, kind);
            let cfg = watcher::Config::default;
            let triggers = futures::stream::select_all(vec![
                watcher(Api::<Secret>::all(client.clone()), cfg())
                    .default_backoff()
                    .touched_objects()
                    .map(|_| ())
                    .boxed(),
                watcher(Api::<ConfigMap>::all(client.clone()), cfg())
                    .default_backoff()
                    .touched_objects()
                    .map(|_| ())
                    .boxed(),
                watcher(mco("MachineConfig"), cfg())
                    .default_backoff()
                    .touched_objects()
                    .map(|_| ())
                    .boxed(),
                watcher(mco("MachineConfigPool"), cfg())
                    .default_backoff()
                    .touched_objects()
                    .map(|_| ())
                    .boxed(),
                watcher(mco("ControllerConfig"), cfg())
                    .default_backoff()
                    .touched_objects()
                    .map(|_| ())
                    .boxed(),
            ]);
            // Every trigger that came in while the last settle ran, at once: one settle reads
            // the whole cluster, so thousands of nodes' changes need not cost a settle each.
            // Nodes trigger through their cache (after it applied the change), and only for
            // changes beyond status: kubelet heartbeats change only Node status, which no pass
            // reacts to (the lifecycle controller judges them where the clock stops).
            let mut triggers = triggers.ready_chunks(1 << 16);
            let mut node_changes = self.nodes.changes();
            let mut nodes_only = false;
            loop {
                let settled = if nodes_only {
                    self.settle_nodes().await
                } else {
                    self.settle().await
                };
                if let Err(e) = settled {
                    self.log
                        .record(self.clock.now(), &format!("reconcile failed: {e}"));
                }
                nodes_only = tokio::select! {
                    _ = stop.cancelled() => return,
                    more = triggers.next() => if more.is_none() { return } else { false },
                    changed = node_changes.changed() => if changed.is_err() { return } else { true },
                };
            }
        })
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The cluster side's passes, one at a time (two concurrent passes would both rotate a due
/// signer), and the simulated clock, which moves only between them.
struct Passes {
    lock: tokio::sync::Mutex<()>,
    clock: SimClock,
}

impl Passes {
    fn new(clock: SimClock) -> Self {
        Passes {
            lock: tokio::sync::Mutex::new(()),
            clock,
        }
    }

    /// Wait for the pass in flight, if any; this pass lasts as long as the guard.
    async fn begin(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.lock.lock().await
    }

    /// Move the clock to `to` once the pass in flight is done, and begin no pass until `then`
    /// is done. A pass the watches started (an agent's write, say) so finishes at the instant
    /// it began: one that read the clock twice would publish the next instant's expiries as
    /// this one's, and a kubelet would load two bundles where the cluster changed once. And no
    /// pass judges the heartbeats at the new instant before the kubelets have posted them (the
    /// node lifecycle controller would mark a healthy node `Unknown`).
    async fn move_clock<T>(&self, to: OffsetDateTime, then: impl std::future::Future<Output = T>) -> T {
        let _between_passes = self.lock.lock().await;
        self.clock.advance(to - self.clock.now());
        then.await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass in flight sees one instant: the clock waits for it, then moves.
    #[tokio::test(flavor = "current_thread")]
    async fn the_clock_moves_only_between_passes() {
        let clock = SimClock::default();
        let passes = Arc::new(Passes::new(clock.clone()));
        let start = clock.now();
        let to = start + time::Duration::days(5);
        let pass = passes.begin().await;
        let mover = tokio::spawn({
            let passes = passes.clone();
            async move { passes.move_clock(to, async {}).await }
        });
        // Let the mover run up to the point where it waits for the pass.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(clock.now(), start, "the clock moved under a pass in flight");
        assert!(!mover.is_finished());
        drop(pass);
        mover.await.unwrap();
        assert_eq!(clock.now(), to);
    }

    /// No pass begins at the new instant until what the mover waits for (the heartbeats) is
    /// done, and one begins right after.
    #[tokio::test(flavor = "current_thread")]
    async fn no_pass_begins_before_the_heartbeats_at_the_new_instant() {
        let clock = SimClock::default();
        let passes = Passes::new(clock.clone());
        let to = clock.now() + time::Duration::minutes(1);
        let held_off = passes
            .move_clock(to, async { passes.lock.try_lock().is_err() })
            .await;
        assert!(held_off, "a pass could begin while the heartbeats were awaited");
        assert!(
            passes.lock.try_lock().is_ok(),
            "passes resume once the clock has moved"
        );
    }
}
