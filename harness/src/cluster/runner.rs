//! The cluster side running: every controller reconciles, level-triggered, whenever an object
//! it reads changes (one merged set of watches), until a pass changes nothing. Whoever moves the
//! simulated clock settles the cluster there (`Scenario::advance`), so a clock move is not a
//! trigger of its own. Errors go to the cluster log and the next trigger retries.

use super::{
    ClusterError, ClusterLog, MachineConfigController, NodeLifecycle, Operator, SignerRotation,
    retry_transient,
};
use crate::pki::{Clock, SimClock};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Secret};
use kube::api::{Api, ListParams};
use kube::runtime::{PredicateConfig, WatchStreamExt, watcher};
use std::sync::Arc;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// The reference cluster side of one scenario.
pub struct ClusterSide {
    pub signers: SignerRotation,
    pub operator: Operator,
    pub mcc: MachineConfigController,
    pub lifecycle: NodeLifecycle,
    pub log: ClusterLog,
    pub clock: SimClock,
    /// One pass at a time: two concurrent passes would both rotate a due signer.
    pass: tokio::sync::Mutex<()>,
    /// The API state and instant of the last pass that changed nothing.
    quiet: std::sync::Mutex<Option<(String, OffsetDateTime)>>,
    client: kube::Client,
}

/// Passes after which a cluster that still changes is reported (a controller fighting another).
const MAX_PASSES: usize = 50;

/// How often the certificate controllers resync (library-go `certrotation`
/// `client_cert_rotation_controller.go`: `ResyncEvery(time.Minute)`).
pub const RESYNC: time::Duration = time::Duration::minutes(1);

impl ClusterSide {
    pub fn new(
        signers: SignerRotation,
        operator: Operator,
        mcc: MachineConfigController,
        lifecycle: NodeLifecycle,
        log: ClusterLog,
        clock: SimClock,
        client: kube::Client,
    ) -> Self {
        ClusterSide {
            signers,
            operator,
            mcc,
            lifecycle,
            log,
            clock,
            pass: tokio::sync::Mutex::new(()),
            quiet: std::sync::Mutex::new(None),
            client,
        }
    }

    /// One pass of every controller; true if any wrote.
    pub async fn reconcile_once(&self) -> Result<bool, ClusterError> {
        let _one_at_a_time = self.pass.lock().await;
        let mut changed = !self.signers.reconcile().await?.is_empty();
        changed |= self.operator.reconcile().await?;
        changed |= self.mcc.reconcile().await?;
        changed |= self.lifecycle.reconcile().await?;
        Ok(changed)
    }

    /// Passes until one changes nothing. A pass at the same simulated instant over the same
    /// API state as the last quiet one would change nothing again (every controller is a
    /// function of the two), so it is skipped: watch events of the cluster side's own writes
    /// then cost one small request instead of a pass.
    pub async fn settle(&self) -> Result<(), ClusterError> {
        retry_transient(|| self.settle_once()).await
    }

    async fn settle_once(&self) -> Result<(), ClusterError> {
        for _ in 0..MAX_PASSES {
            let seen = (self.latest_resource_version().await?, self.clock.now());
            if self.quiet.lock().unwrap_or_else(|p| p.into_inner()).as_ref() == Some(&seen) {
                return Ok(());
            }
            if !self.reconcile_once().await? {
                *self.quiet.lock().unwrap_or_else(|p| p.into_inner()) = Some(seen);
                return Ok(());
            }
        }
        self.log
            .record(self.clock.now(), "cluster side still changing after 50 passes");
        Ok(())
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
        let Some(first) = deadlines.first().copied() else {
            return Ok(until);
        };
        let last = deadlines
            .into_iter()
            .take_while(|d| *d <= first + RESYNC)
            .last()
            .unwrap_or(first);
        Ok(last.min(until))
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
                // Kubelet heartbeats change only Node status, which no pass reacts to (the
                // lifecycle controller judges them where the clock stops).
                watcher(Api::<Node>::all(client.clone()), cfg())
                    .default_backoff()
                    .touched_objects()
                    .predicate_filter(node_without_status, PredicateConfig::default())
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
            let mut triggers = triggers.ready_chunks(64);
            loop {
                if let Err(e) = self.settle().await {
                    self.log
                        .record(self.clock.now(), &format!("reconcile failed: {e}"));
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    more = triggers.next() => if more.is_none() { return },
                }
            }
        })
    }
}

/// A Node's hash without its status: what the controllers react to.
fn node_without_status(node: &Node) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    node.metadata.annotations.hash(&mut hasher);
    node.metadata.labels.hash(&mut hasher);
    serde_json::to_string(&node.spec)
        .unwrap_or_default()
        .hash(&mut hasher);
    Some(hasher.finish())
}
