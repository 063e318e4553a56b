//! What happened to each MachineConfigPool during a scenario, as a client watching pools sees
//! it (`oc get mcp -w`): its target, the config its nodes reached, and its `Updated` and
//! `Updating` conditions. Whether a pool went through an update, or stayed updated throughout,
//! is judged from these, not from any component's log.

use crate::cluster::mcc::machine_config_pools;
use crate::mco::pool::MachineConfigPool;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// A condition as the pool showed it: `status` (`True`, `False`, or empty when absent) and
/// its message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shown {
    pub status: String,
    pub message: String,
}

/// One pool as a watch event showed it, recorded when any of these differ from its last one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolChange {
    pub pool: String,
    /// `spec.configuration.name`.
    pub target: String,
    /// `status.configuration.name`.
    pub reached: String,
    pub updated: Shown,
    pub updating: Shown,
    pub updated_machines: i32,
    pub machines: i32,
}

#[derive(Default)]
struct Inner {
    changes: Vec<PoolChange>,
    last: BTreeMap<String, PoolChange>,
    /// The newest resourceVersion a watch event carried, per pool.
    seen_rv: BTreeMap<String, u64>,
    /// Where the scenario's steps begin (the cluster was up).
    started: usize,
}

/// The recorded changes, shared with the watching task.
#[derive(Clone, Default)]
pub struct PoolHistory(Arc<Mutex<Inner>>);

impl PoolHistory {
    /// Watch every MachineConfigPool until `stop`.
    pub fn spawn(client: kube::Client, stop: CancellationToken) -> Self {
        let history = PoolHistory::default();
        let recorder = history.clone();
        super::node_history::follow(machine_config_pools(&client), stop, move |pool| {
            recorder.record(&pool)
        });
        history
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record(&self, object: &kube::api::DynamicObject) {
        let name = object.metadata.name.clone().unwrap_or_default();
        let rv = object
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse::<u64>().ok());
        // A pool that does not read as one is recorded as showing nothing: the judging step
        // then says what it saw.
        let pool: Option<MachineConfigPool> = serde_json::to_value(object)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok());
        let status = pool.as_ref().and_then(|p| p.status.clone()).unwrap_or_default();
        let shown = |type_: &str| {
            status
                .condition(type_)
                .map(|c| Shown {
                    status: c.status.clone(),
                    message: c.message.clone(),
                })
                .unwrap_or_default()
        };
        let change = PoolChange {
            pool: name.clone(),
            target: pool
                .as_ref()
                .map(|p| p.spec.configuration.name.clone())
                .unwrap_or_default(),
            reached: status.configuration.name.clone(),
            updated: shown("Updated"),
            updating: shown("Updating"),
            updated_machines: status.updated_machine_count,
            machines: status.machine_count,
        };
        let mut inner = self.inner();
        if let Some(rv) = rv {
            inner.seen_rv.insert(name.clone(), rv);
        }
        if inner.last.get(&name) != Some(&change) {
            inner.last.insert(name, change.clone());
            inner.changes.push(change);
        }
    }

    /// Steps begin here: what a pool showed before (the cluster coming up) is not theirs.
    pub fn mark_started(&self) {
        let mut inner = self.inner();
        // The pool as it stood when the steps began counts as their first showing.
        let last: Vec<PoolChange> = inner.last.values().cloned().collect();
        inner.started = inner.changes.len();
        inner.changes.extend(last);
    }

    /// The pool's showings since the steps began, oldest first.
    pub fn since_start(&self, pool: &str) -> Vec<PoolChange> {
        let inner = self.inner();
        inner.changes[inner.started.min(inner.changes.len())..]
            .iter()
            .filter(|c| c.pool == pool)
            .cloned()
            .collect()
    }

    /// Whether the watch has shown the pool at `resource_version` or later.
    pub fn caught_up(&self, pool: &str, resource_version: u64) -> bool {
        self.inner()
            .seen_rv
            .get(pool)
            .is_some_and(|rv| *rv >= resource_version)
    }
}
