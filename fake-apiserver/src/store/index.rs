//! What kube-apiserver's watch cache reaches by key instead of by scanning: the watches a
//! change is sent to, and the object a list or watch that pins a name reads. Which watch gets
//! which event, and which objects a list returns, are unchanged: callers still apply the whole
//! filter.

use super::{Event, Filter, Objects, StoredObject};
use crate::resource::{GroupResource, ResourceInfo};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::broadcast;

/// The watches a change is sent to: those of its resource, and those of its resource that pin
/// its name (`fieldSelector=metadata.name=…`). kube-apiserver's watch cache does the same: a
/// cacher per resource, and watchers indexed by name where the resource's storage has that
/// trigger (Nodes: `TriggerFunc: {"metadata.name": node.NameTriggerFunc}`), so one Node's
/// change wakes the watches that can want it, not every daemon's.
type Topic = (GroupResource, Option<String>);

/// Events a watch may fall behind by before it ends (`Lagged`) and its client watches again:
/// a resource's whole stream, and one object's.
const RESOURCE_BACKLOG: usize = 4096;
const OBJECT_BACKLOG: usize = 64;

/// Where changes go to open watches, by topic; a topic with no watch left is dropped at its
/// next change.
#[derive(Default)]
pub(super) struct Topics(HashMap<Topic, broadcast::Sender<Arc<Event>>>);

impl Topics {
    /// The feed of a watch of `resource`, pinned to a name or not.
    pub(super) fn subscribe(
        &mut self,
        resource: &GroupResource,
        pinned: Option<&str>,
    ) -> broadcast::Receiver<Arc<Event>> {
        let backlog = if pinned.is_some() {
            OBJECT_BACKLOG
        } else {
            RESOURCE_BACKLOG
        };
        self.0
            .entry((resource.clone(), pinned.map(str::to_string)))
            .or_insert_with(|| broadcast::channel(backlog).0)
            .subscribe()
    }

    /// Send `event` to the watches of its resource and of its object's name. A lagging
    /// receiver sees `Lagged`, and its client watches again.
    pub(super) fn send(&mut self, event: &Arc<Event>) {
        let name = event.object.name().to_string();
        for topic in [
            (event.resource.clone(), None),
            (event.resource.clone(), Some(name)),
        ] {
            let Some(sender) = self.0.get(&topic) else {
                continue;
            };
            if sender.receiver_count() == 0 {
                self.0.remove(&topic);
            } else {
                let _ = sender.send(event.clone());
            }
        }
    }

    #[cfg(test)]
    pub(super) fn has(&self, resource: &GroupResource, pinned: Option<&str>) -> bool {
        self.0
            .contains_key(&(resource.clone(), pinned.map(str::to_string)))
    }
}

/// The stored objects `filter` can match: when it pins a name (`metadata.name=…`) and the
/// namespace is known (given, or the resource is cluster-scoped), that one object by key, as
/// kube-apiserver's watch cache serves a single-object list or watch from its index instead of
/// scanning; otherwise every object of the resource. Callers still apply the whole filter.
pub(super) fn candidates<'a>(
    objects: &'a Objects,
    info: &ResourceInfo,
    filter: &Filter,
) -> Box<dyn Iterator<Item = &'a Arc<StoredObject>> + 'a> {
    let namespace = match (&filter.namespace, info.namespaced) {
        (Some(ns), true) => Some(ns.clone()),
        (_, false) => Some(String::new()),
        (None, true) => None,
    };
    match (filter.fields.pinned_name(), namespace) {
        (Some(name), Some(ns)) => Box::new(objects.get(&(ns, name.to_string())).into_iter()),
        _ => Box::new(objects.values()),
    }
}
