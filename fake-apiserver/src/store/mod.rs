//! The in-memory object store: every object, one global resourceVersion, the event history
//! watches replay from, and the broadcasts that feed open watches.
//!
//! Everything sits behind one `std::sync::Mutex`: no await happens while it is held, each
//! operation is short, and one lock gives the two guarantees watch clients depend on: events are
//! published in resourceVersion order, and a watch that starts from resourceVersion N sees every
//! change after N exactly once (it subscribes and reads the history under the same lock the
//! writers publish under). This module owns semantics (versions, conflicts, history); it knows
//! nothing of HTTP. Writes are in `write.rs`, the checks they make in `prepare.rs`; what is
//! reached by key rather than by scanning (which watches a change goes to, the object a pinned
//! list reads) in `index.rs`; the objects and changes themselves in `object.rs`.

mod history;
mod index;
mod object;
mod prepare;
mod write;

use object::Objects;
pub(crate) use object::{Event, EventType, Filter, StoredObject};
pub(crate) use prepare::Subresource;
pub(crate) use write::require_resource_version;
pub(crate) use write::{DeleteOutcome, Preconditions};

use crate::error::ApiError;
use crate::resource::{GroupResource, Registry, ResourceInfo};
use base64::Engine;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// A page of a list, and the token for the next one.
#[derive(Debug)]
pub struct ListPage {
    pub rv: u64,
    pub items: Vec<Arc<StoredObject>>,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// resourceVersion unset or "0": synthetic ADDED events for what exists now, then changes.
    Current,
    /// A streaming list (`sendInitialEvents=true`): as `Current`, and the caller ends the initial
    /// events with a BOOKMARK annotated `k8s.io/initial-events-end`.
    InitialEvents,
    /// Every change after this resourceVersion.
    After(u64),
}

/// A started watch: events to send first, then the live feed (skip anything at or below
/// `start_rv` in it).
pub struct WatchStart {
    pub initial: Vec<(EventType, Arc<StoredObject>)>,
    pub replay: Vec<Arc<Event>>,
    pub live: broadcast::Receiver<Arc<Event>>,
    pub start_rv: u64,
}

/// Tunables, set by the server builder.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// The most events kept per resource for watches to resume from (kube-apiserver's watch
    /// cache upper bound, `store::history`); an older resourceVersion gets 410 Expired.
    pub history_limit: usize,
    /// Paginated lists kept so their continue tokens serve a consistent snapshot.
    pub snapshot_limit: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history_limit: history::UPPER_BOUND,
            snapshot_limit: 64,
        }
    }
}

pub(crate) struct State {
    rv: u64,
    registry: Registry,
    objects: HashMap<GroupResource, Objects>,
    /// The events watches resume from, per resource.
    history: history::History,
    config: StoreConfig,
    snapshots: VecDeque<(u64, Vec<Arc<StoredObject>>)>,
    next_snapshot: u64,
    /// Where changes go to open watches.
    topics: index::Topics,
}

/// The store. Cheap to share behind an `Arc`.
pub struct Store {
    state: Mutex<State>,
}

const BUILTIN_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// The first resourceVersion handed out. Starting above 1 keeps "0" and "1" (which clients
/// use as sentinels) from ever naming a real version.
const FIRST_RV: u64 = 100;

impl Store {
    pub fn new(config: StoreConfig) -> Self {
        let registry = Registry::default();
        let objects = registry
            .all()
            .map(|r| (r.group_resource(), Objects::new()))
            .collect();
        let store = Store {
            state: Mutex::new(State {
                rv: FIRST_RV,
                registry,
                objects,
                history: history::History::new(FIRST_RV, config.history_limit),
                config,
                snapshots: VecDeque::new(),
                next_snapshot: 1,
                topics: index::Topics::default(),
            }),
        };
        store.seed_namespaces();
        store
    }

    fn seed_namespaces(&self) {
        let info = self
            .resolve("", "v1", "namespaces")
            .expect("namespaces are built in");
        for ns in BUILTIN_NAMESPACES {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            self.create(&info, None, obj, false)
                .expect("built-in namespaces are valid");
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock is a bug elsewhere; the state is still consistent
        // (every write builds its new object before touching the maps), so keep serving.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The resource a URL names, as registered now.
    pub fn resolve(&self, group: &str, version: &str, resource: &str) -> Option<ResourceInfo> {
        self.lock().registry.get(group, version, resource).cloned()
    }

    pub fn registry(&self) -> Registry {
        self.lock().registry.clone()
    }

    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    pub fn get(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let state = self.lock();
        state
            .objects_of(info)?
            .get(&(ns.unwrap_or("").to_string(), name.to_string()))
            .cloned()
            .ok_or_else(|| not_found(info, name))
    }

    /// A list, paginated when `limit` is set. A continue token serves the rest of the snapshot
    /// its first page was cut from, at that page's resourceVersion.
    pub fn list(
        &self,
        info: &ResourceInfo,
        filter: &Filter,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<ListPage, ApiError> {
        let mut state = self.lock();
        let (rv, items) = match continue_token {
            Some(token) => state.take_snapshot(token)?,
            None => {
                let items: Vec<_> = index::candidates(state.objects_of(info)?, info, filter)
                    .filter(|o| filter.matches(o))
                    .cloned()
                    .collect();
                (state.rv, items)
            }
        };
        match limit {
            Some(limit) if limit > 0 && items.len() > limit => {
                let mut items = items;
                let rest = items.split_off(limit);
                let remaining = rest.len();
                let token = state.keep_snapshot(rv, rest);
                Ok(ListPage {
                    rv,
                    items,
                    continue_token: Some(token),
                    remaining: Some(remaining),
                })
            }
            _ => Ok(ListPage {
                rv,
                items,
                continue_token: None,
                remaining: None,
            }),
        }
    }

    /// Start a watch. Fails with 410 Expired when `from` is older than the kept history.
    pub fn watch(
        &self,
        info: &ResourceInfo,
        filter: &Filter,
        from: WatchFrom,
    ) -> Result<WatchStart, ApiError> {
        let mut state = self.lock();
        let gr = info.group_resource();
        let live = state.topics.subscribe(&gr, filter.fields.pinned_name());
        let objects = state.objects_of(info)?;
        let mut start = WatchStart {
            initial: Vec::new(),
            replay: Vec::new(),
            live,
            start_rv: state.rv,
        };
        match from {
            WatchFrom::Current | WatchFrom::InitialEvents => {
                start.initial = index::candidates(objects, info, filter)
                    .filter(|o| filter.matches(o))
                    .map(|o| (EventType::Added, o.clone()))
                    .collect();
            }
            WatchFrom::After(rv) => {
                start.replay = state
                    .history
                    .since(&gr, filter.fields.pinned_name(), rv)
                    .map_err(|oldest| ApiError::Gone(format!("too old resource version: {rv} ({oldest})")))?;
            }
        }
        Ok(start)
    }

    /// Forget all history: a watch from any resourceVersion handed out so far gets 410
    /// Expired. The resourceVersion moves on by one (with no event, as writes to other keys
    /// move etcd's revision), so a fresh list gives a version a watch can start from.
    pub fn compact(&self) {
        let mut state = self.lock();
        state.rv += 1;
        let rv = state.rv;
        state.history.clear(rv);
        state.snapshots.clear();
    }

    /// Lose every object (an API server restarted on an empty etcd): back to the built-in
    /// namespaces. The resourceVersion keeps climbing and history is dropped, so clients that
    /// watched before get 410 and relist.
    pub fn wipe(&self) {
        {
            let mut state = self.lock();
            let registry = Registry::default();
            state.objects = registry
                .all()
                .map(|r| (r.group_resource(), Objects::new()))
                .collect();
            state.registry = registry;
            state.snapshots.clear();
            state.rv += 1;
            let rv = state.rv;
            state.history.clear(rv);
        }
        self.seed_namespaces();
    }

    /// How many objects are stored (all resources).
    pub fn len(&self) -> usize {
        self.lock().objects.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl State {
    fn objects_of(&self, info: &ResourceInfo) -> Result<&Objects, ApiError> {
        self.objects
            .get(&info.group_resource())
            .ok_or(ApiError::NoSuchResource)
    }

    fn keep_snapshot(&mut self, rv: u64, rest: Vec<Arc<StoredObject>>) -> String {
        let id = self.next_snapshot;
        self.next_snapshot += 1;
        self.snapshots.push_back((id, rest));
        while self.snapshots.len() > self.config.snapshot_limit {
            self.snapshots.pop_front();
        }
        let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "snapshot": id});
        base64::engine::general_purpose::STANDARD.encode(token.to_string())
    }

    fn take_snapshot(&mut self, token: &str) -> Result<(u64, Vec<Arc<StoredObject>>), ApiError> {
        let parsed: Option<Value> = base64::engine::general_purpose::STANDARD
            .decode(token)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let (Some(rv), Some(id)) = (
            parsed.as_ref().and_then(|t| t["rv"].as_u64()),
            parsed.as_ref().and_then(|t| t["snapshot"].as_u64()),
        ) else {
            return Err(ApiError::BadRequest(format!("invalid continue token {token:?}")));
        };
        let pos = self.snapshots.iter().position(|(i, _)| *i == id).ok_or_else(|| {
            ApiError::Gone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.".into())
        })?;
        let (_, items) = self.snapshots.remove(pos).expect("position found above");
        Ok((rv, items))
    }
}

pub(crate) fn not_found(info: &ResourceInfo, name: &str) -> ApiError {
    ApiError::NotFound {
        resource: info.qualified_name(),
        name: name.to_string(),
    }
}

#[cfg(test)]
mod tests;
