//! The daemon's own Node as its node informer has it (upstream `dn.node`, set by the informer's
//! handlers in release-4.16 daemon.go and read by the certificate writer's
//! `syncControllerConfigHandler` without a request of its own). One name-pinned watch per
//! daemon feeds it; the update loop wakes on its changes and the certificate writer reads it,
//! so a rotation costs each node one PATCH and no GET.
//!
//! A cache can lag the server: a write of the daemon's own is folded in from the write's
//! response at once (a newer resourceVersion replaces an older one, never the other way), so
//! the daemon never reads back the state it has just replaced. Someone else's write shows when
//! its watch event arrives, as upstream's informer shows it.

use super::AgentEnv;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The newest own Node seen, shared by the daemon's loops.
#[derive(Clone)]
pub struct OwnNode {
    tx: watch::Sender<Option<Arc<Node>>>,
}

impl Default for OwnNode {
    fn default() -> Self {
        OwnNode {
            tx: watch::Sender::new(None),
        }
    }
}

impl OwnNode {
    /// Watch `env`'s Node into this cache until `stop`; errors go to the main loop as
    /// upstream's reflector's do (`auxiliary`).
    pub fn follow(&self, env: &AgentEnv, stop: CancellationToken) {
        let nodes: Api<Node> = Api::all(env.client.clone());
        let config = watcher::Config::default().fields(&format!("metadata.name={}", env.node_name));
        let (feed, env) = (self.clone(), env.clone());
        tokio::spawn(async move {
            use futures::StreamExt;
            let mut events = watcher(nodes, config).default_backoff().applied_objects().boxed();
            loop {
                let event = tokio::select! {
                    _ = stop.cancelled() => return,
                    event = events.next() => event,
                };
                match event {
                    Some(Ok(node)) => feed.saw(node),
                    Some(Err(e)) => {
                        env.log(&format!("node watch: {e}"));
                        env.aux.report(&format!(
                            "Failed to watch *v1.Node: {}",
                            super::auxiliary::error_chain(&e)
                        ));
                    }
                    None => return,
                }
            }
        });
    }

    /// Fold in a Node read or written: kept when it is newer than what is held.
    pub fn saw(&self, node: Node) {
        self.tx.send_if_modified(|held| {
            let newer = match held {
                None => true,
                Some(old) => is_newer(
                    node.metadata.resource_version.as_deref(),
                    old.metadata.resource_version.as_deref(),
                ),
            };
            if newer {
                *held = Some(Arc::new(node));
            }
            newer
        });
    }

    /// The Node as last seen, once the first list has delivered it.
    pub async fn get(&self) -> Option<Arc<Node>> {
        let mut rx = self.tx.subscribe();
        let node = rx.wait_for(Option::is_some).await.ok()?;
        node.clone()
    }

    /// The Node's uid as last seen; empty before the first list.
    pub fn uid(&self) -> String {
        self.tx
            .borrow()
            .as_ref()
            .and_then(|n| n.metadata.uid.clone())
            .unwrap_or_default()
    }

    /// A receiver that wakes on every Node this cache takes in, the one it holds included.
    pub fn changes(&self) -> watch::Receiver<Option<Arc<Node>>> {
        let mut rx = self.tx.subscribe();
        rx.mark_changed();
        rx
    }
}

/// Whether resourceVersion `new` comes after `old`. A real kube-apiserver's are etcd revisions
/// and the fake's a counter, both decimal; anything else is taken as newer (the watch's order).
fn is_newer(new: Option<&str>, old: Option<&str>) -> bool {
    match (new.map(str::parse::<u64>), old.map(str::parse::<u64>)) {
        (Some(Ok(new)), Some(Ok(old))) => new > old,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(rv: &str, state: &str) -> Node {
        let mut n = Node::default();
        n.metadata.resource_version = Some(rv.into());
        n.metadata.annotations = Some([("state".to_string(), state.to_string())].into());
        n
    }

    fn state(own: &OwnNode) -> String {
        let held = own.tx.borrow();
        held.as_ref().unwrap().metadata.annotations.as_ref().unwrap()["state"].clone()
    }

    #[test]
    fn an_older_node_never_replaces_a_newer_one() {
        let own = OwnNode::default();
        let mut changes = own.changes();
        own.saw(node("10", "Working"));
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        // The own PATCH's answer (rv 12) arrives before the watch event of rv 11.
        own.saw(node("12", "Done"));
        own.saw(node("11", "Working"));
        assert_eq!(state(&own), "Done");
        // Re-delivered on a relist: no change to wake anyone for.
        changes.mark_unchanged();
        own.saw(node("12", "Done"));
        assert!(!changes.has_changed().unwrap());
        own.saw(node("13", "Degraded"));
        assert_eq!(state(&own), "Degraded");
        assert!(changes.has_changed().unwrap());
    }

    #[test]
    fn resource_versions_compare_as_numbers_and_opaque_ones_follow_the_watch() {
        assert!(is_newer(Some("10"), Some("9")));
        assert!(!is_newer(Some("9"), Some("10")));
        assert!(!is_newer(Some("10"), Some("10")));
        assert!(is_newer(Some("abc"), Some("10")));
        assert!(is_newer(None, Some("10")));
    }
}
