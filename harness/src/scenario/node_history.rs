//! What happened to each Node object during a scenario, as a client watching Nodes sees it: the
//! cordon (`spec.unschedulable`), the drain handshake annotations
//! (`machineconfiguration.openshift.io/desiredDrain`, `lastAppliedDrain`) and the config
//! annotations (`desiredConfig`, `currentConfig`). A drain, and how many nodes a rollout moved at
//! once, are judged from these, the way `oc get nodes -w` would show them, not from any
//! component's log.

use crate::mco::{CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// One Node as a watch event showed it, recorded when any of these differ from its last one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeChange {
    pub node: String,
    pub unschedulable: bool,
    pub desired_drain: String,
    pub last_applied_drain: String,
    pub desired_config: String,
    pub current_config: String,
    /// The roles of the node's `node-role.kubernetes.io/<role>` labels.
    pub roles: Vec<String>,
}

impl NodeChange {
    /// Given a config it has not reached yet.
    fn updating(&self) -> bool {
        self.desired_config != self.current_config
    }
}

#[derive(Default)]
struct Inner {
    changes: Vec<NodeChange>,
    /// The last change recorded per node.
    last: std::collections::HashMap<String, NodeChange>,
    /// The newest resourceVersion a watch event carried, per node.
    seen_rv: BTreeMap<String, u64>,
}

/// The recorded changes, shared with the watching task.
#[derive(Clone, Default)]
pub struct NodeHistory(Arc<Mutex<Inner>>);

impl NodeHistory {
    /// Watch every Node until `stop`.
    pub fn spawn(client: kube::Client, stop: CancellationToken) -> Self {
        let history = NodeHistory::default();
        let recorder = history.clone();
        follow(Api::<Node>::all(client), stop, move |node| recorder.record(&node));
        history
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record(&self, node: &Node) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let annotations = node.metadata.annotations.clone().unwrap_or_default();
        let get = |k: &str| annotations.get(k).cloned().unwrap_or_default();
        let change = NodeChange {
            node: name.clone(),
            unschedulable: node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false),
            desired_drain: get(DESIRED_DRAIN),
            last_applied_drain: get(LAST_APPLIED_DRAIN),
            desired_config: get(DESIRED_CONFIG),
            current_config: get(CURRENT_CONFIG),
            roles: node
                .metadata
                .labels
                .iter()
                .flatten()
                .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
                .map(str::to_string)
                .collect(),
        };
        let mut inner = self.inner();
        if let Some(rv) = node
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok())
        {
            inner.seen_rv.insert(name.clone(), rv);
        }
        if inner.last.get(&name) != Some(&change) {
            inner.last.insert(name, change.clone());
            inner.changes.push(change);
        }
    }

    /// A position to read changes from later.
    pub fn mark(&self) -> usize {
        self.inner().changes.len()
    }

    /// The node's changes since `mark`.
    pub fn since(&self, mark: usize, node: &str) -> Vec<NodeChange> {
        let inner = self.inner();
        inner.changes[mark.min(inner.changes.len())..]
            .iter()
            .filter(|c| c.node == node)
            .cloned()
            .collect()
    }

    /// The most nodes of `role` that were updating (`desiredConfig` ≠ `currentConfig`) at one
    /// time, replaying every change the watch showed in the order it showed them.
    pub fn most_updating_at_once(&self, role: &str) -> usize {
        let inner = self.inner();
        let mut updating = std::collections::HashSet::new();
        let mut most = 0;
        for change in &inner.changes {
            if change.updating() && change.roles.iter().any(|r| r == role) {
                updating.insert(change.node.as_str());
            } else {
                updating.remove(change.node.as_str());
            }
            most = most.max(updating.len());
        }
        most
    }

    /// Whether the watch has shown the node at `resource_version` or later.
    pub fn caught_up(&self, node: &str, resource_version: u64) -> bool {
        self.inner()
            .seen_rv
            .get(node)
            .is_some_and(|rv| *rv >= resource_version)
    }
}

/// Hand every object a watch shows to `record` until `stop` (a history's recorder task).
pub(super) fn follow<K>(api: Api<K>, stop: CancellationToken, record: impl Fn(K) + Send + 'static)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                event = events.next() => match event {
                    Some(Ok(object)) => record(object),
                    Some(Err(_)) => continue,
                    None => return,
                },
            }
        }
    });
}
