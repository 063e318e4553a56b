//! Every Node as one watch last showed it, shared by the cluster side's controllers and the
//! scenario's convergence checks. With thousands of nodes, listing them all at every pass and
//! at every look cost more than the rotation itself; upstream's controllers read informer
//! caches too (the machine-config controller's node lister).
//!
//! A read is as fresh as the watch. Two rules keep that honest:
//! - a writer that must read its own write next notes it ([`NodeCache::wrote`]) and waits
//!   for the watch to bring it back ([`NodeCache::caught_up`]) before its next read;
//! - whoever skips work because "nothing changed since" keys that on [`NodeCache::seen`] as
//!   well, so an event the cache had not applied yet is never taken as seen.
//!
//! The cluster side is triggered by [`NodeCache::changes`], bumped only after the store has
//! applied the event, so a pass the trigger starts sees it.

use super::mcc::NODE_ANNOTATIONS_READ;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long a reader waits for the watch to bring back its own write before giving up (the
/// caller's next trigger retries).
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone)]
pub struct NodeCache {
    store: Store<Node>,
    /// The highest resourceVersion the store has applied.
    seen: watch::Receiver<u64>,
    /// Bumped after the store applied a change of what the controllers read of a Node
    /// ([`what_controllers_read`]; kubelet heartbeats change status only).
    changes: watch::Receiver<u64>,
    /// The highest resourceVersion this process wrote to a Node through [`NodeCache::wrote`].
    own: Arc<AtomicU64>,
    /// The store holds a whole list (the watch's first, or a relist's).
    filled: Arc<AtomicBool>,
}

impl NodeCache {
    /// Watch every Node until `stop`.
    pub fn spawn(client: kube::Client, stop: CancellationToken) -> Self {
        let (store, writer) = reflector::store();
        let (seen_tx, seen) = watch::channel(0);
        let (changes_tx, changes) = watch::channel(0);
        let filled = Arc::new(AtomicBool::new(false));
        let filling = filled.clone();
        let events = watcher(Api::<Node>::all(client), watcher::Config::default())
            .default_backoff()
            .reflect(writer);
        tokio::spawn(async move {
            let mut events = std::pin::pin!(events);
            let mut hashes = std::collections::HashMap::<String, u64>::new();
            loop {
                let event = tokio::select! {
                    _ = stop.cancelled() => return,
                    event = events.next() => match event {
                        Some(event) => event,
                        None => return,
                    },
                };
                let Ok(event) = event else { continue };
                let mut changed = false;
                let mut highest = *seen_tx.borrow();
                let mut note = |node: &Node, gone: bool| {
                    highest = highest.max(resource_version(node));
                    let name = node.metadata.name.clone().unwrap_or_default();
                    let hash = (!gone).then(|| what_controllers_read(node));
                    let before = match hash {
                        Some(h) => hashes.insert(name, h),
                        None => hashes.remove(&name),
                    };
                    changed |= before != hash;
                };
                match &event {
                    watcher::Event::Apply(node) | watcher::Event::InitApply(node) => note(node, false),
                    watcher::Event::Delete(node) => note(node, true),
                    watcher::Event::Init | watcher::Event::InitDone => {}
                }
                seen_tx.send_if_modified(|seen| std::mem::replace(seen, highest) != highest);
                if matches!(event, watcher::Event::InitDone) {
                    filling.store(true, Ordering::SeqCst);
                }
                if changed || matches!(event, watcher::Event::InitDone) {
                    changes_tx.send_modify(|n| *n += 1);
                }
            }
        });
        NodeCache {
            store,
            seen,
            changes,
            own: Arc::new(AtomicU64::new(0)),
            filled,
        }
    }

    /// Whether the store holds a whole list yet.
    pub fn filled(&self) -> bool {
        self.filled.load(Ordering::SeqCst)
    }

    /// Every Node, by name (the order a list has).
    pub fn nodes(&self) -> Vec<Arc<Node>> {
        let mut nodes = self.store.state();
        // Names are unique: an unstable sort gives the one order, without a buffer.
        nodes.sort_unstable_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        nodes
    }

    /// The highest resourceVersion the cache has applied.
    pub fn seen(&self) -> u64 {
        *self.seen.borrow()
    }

    /// A receiver that changes whenever what the controllers read of a Node changed.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.clone()
    }

    /// Note a Node this process wrote, to be seen by its next [`NodeCache::caught_up`].
    pub fn wrote(&self, node: &Node) {
        self.own.fetch_max(resource_version(node), Ordering::SeqCst);
    }

    /// Wait until the store holds the first full list and every Node this process wrote.
    pub async fn caught_up(&self) -> Result<(), String> {
        let own = self.own.load(Ordering::SeqCst);
        let wait = async {
            self.store
                .wait_until_ready()
                .await
                .map_err(|e| format!("the Node watch ended: {e}"))?;
            self.seen
                .clone()
                .wait_for(|seen| *seen >= own)
                .await
                .map(drop)
                .map_err(|_| "the Node watch ended".to_string())
        };
        tokio::time::timeout(CATCH_UP, wait).await.unwrap_or_else(|_| {
            Err(format!(
                "the Node watch did not show resourceVersion {own} (this process's last Node write) within {CATCH_UP:?}; it has shown up to {}",
                self.seen()
            ))
        })
    }
}

/// A Node's resourceVersion as a number (0 when absent or not a number): the fake's, like an
/// etcd revision, grows with every write.
fn resource_version(node: &Node) -> u64 {
    node.metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// A Node's hash over what the cluster side's controllers read of it: its labels, the
/// annotations the machine-config controller reads ([`NODE_ANNOTATIONS_READ`]), whether it is
/// being deleted, and its spec. Status (every kubelet heartbeat), resourceVersion and managed
/// fields, and the daemons' other annotations (`lastSyncedControllerConfigResourceVersion`,
/// written by every 4.16 node at every ControllerConfig change) change none of its passes'
/// outcomes, so they trigger none. A pass that runs for another reason still reads them all.
pub fn what_controllers_read(node: &Node) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let annotations = node.metadata.annotations.as_ref();
    for key in NODE_ANNOTATIONS_READ {
        annotations.and_then(|a| a.get(*key)).hash(&mut hasher);
    }
    node.metadata.labels.hash(&mut hasher);
    node.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    serde_json::to_string(&node.spec)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mco::{CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_SYNCED_CONTROLLER_CONFIG};

    fn node(annotations: &[(&str, &str)], labels: &[(&str, &str)]) -> Node {
        let map = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        let mut node = Node::default();
        node.metadata.name = Some("worker-0".into());
        node.metadata.annotations = map(annotations);
        node.metadata.labels = map(labels);
        node
    }

    #[test]
    fn only_what_a_pass_reads_triggers_one() {
        let role = [("node-role.kubernetes.io/worker", "")];
        let base = node(
            &[(CURRENT_CONFIG, "rendered-a"), (DESIRED_CONFIG, "rendered-a")],
            &role,
        );
        let hash = what_controllers_read(&base);
        // What no pass reads: the daemons' sync annotation, status, resourceVersion.
        let mut synced = node(
            &[
                (CURRENT_CONFIG, "rendered-a"),
                (DESIRED_CONFIG, "rendered-a"),
                (LAST_SYNCED_CONTROLLER_CONFIG, "42"),
            ],
            &role,
        );
        synced.metadata.resource_version = Some("43".into());
        synced.status = Some(Default::default());
        assert_eq!(what_controllers_read(&synced), hash);
        // What a pass reads: each annotation of the set, labels, spec.
        for key in NODE_ANNOTATIONS_READ {
            let mut changed = base.clone();
            changed
                .metadata
                .annotations
                .as_mut()
                .unwrap()
                .insert(key.to_string(), "changed".into());
            assert_ne!(what_controllers_read(&changed), hash, "{key}");
        }
        let relabelled = node(
            &[(CURRENT_CONFIG, "rendered-a"), (DESIRED_CONFIG, "rendered-a")],
            &[("node-role.kubernetes.io/infra", "")],
        );
        assert_ne!(what_controllers_read(&relabelled), hash);
        let mut cordoned = base.clone();
        cordoned.spec = Some(k8s_openapi::api::core::v1::NodeSpec {
            unschedulable: Some(true),
            ..Default::default()
        });
        assert_ne!(what_controllers_read(&cordoned), hash);
        assert!(NODE_ANNOTATIONS_READ.contains(&DESIRED_DRAIN));
    }
}
