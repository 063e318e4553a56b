//! The events kept for watches to resume from, per resource, sized as kube-apiserver's watch
//! cache sizes them (k8s.io/apiserver `pkg/storage/cacher/watch_cache.go`, 1.36): a cache per
//! resource that starts at 100 events and, whenever it is full, doubles while its oldest event
//! is younger than the fresh window (`DefaultEventFreshDuration`: the 60 s bookmark frequency
//! plus 15 s) up to 100 × 1024 events, and halves (not below 100) when even the newest quarter
//! is older than that. An event is dropped only when its resource's cache is full; a watch from
//! a resourceVersion older than what its resource keeps gets 410 Expired.
//!
//! Per resource matters: ten thousand kubelets and daemons writing Nodes must not push a
//! ControllerConfig's one change out of the history its watches resume from.

use super::Event;
use crate::resource::GroupResource;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `defaultLowerBoundCapacity`.
pub(super) const LOWER_BOUND: usize = 100;
/// `defaultUpperBoundCapacity`.
pub(super) const UPPER_BOUND: usize = 100 * 1024;
/// `DefaultEventFreshDuration`.
pub(super) const EVENT_FRESH: Duration = Duration::from_secs(75);

pub(super) struct History {
    per_resource: HashMap<GroupResource, Window>,
    /// Every event after this resourceVersion is kept, for every resource that has dropped
    /// none since (the start, or the last `clear`).
    cleared: u64,
    /// The most events one resource keeps.
    upper: usize,
}

struct Window {
    /// Each event with when it was recorded, oldest first.
    events: VecDeque<(Instant, Arc<Event>)>,
    /// The same events by object name, oldest first: a watch that pins a name (every daemon's
    /// watch of its own Node) resumes from these, not from a scan of every Node's events.
    by_name: HashMap<Box<str>, VecDeque<Arc<Event>>>,
    capacity: usize,
    /// The resourceVersion of the last event dropped, if any.
    dropped: u64,
}

impl History {
    pub(super) fn new(cleared: u64, upper: usize) -> Self {
        History {
            per_resource: HashMap::new(),
            cleared,
            upper: upper.max(1),
        }
    }

    /// Keep `event`, recorded at `now`, dropping its resource's oldest when its cache is full.
    pub(super) fn record(&mut self, event: &Arc<Event>, now: Instant) {
        let (upper, cleared) = (self.upper, self.cleared);
        let window = self
            .per_resource
            .entry(event.resource.clone())
            .or_insert_with(|| Window {
                events: VecDeque::new(),
                by_name: HashMap::new(),
                capacity: LOWER_BOUND.min(upper),
                dropped: cleared,
            });
        window.resize(now, upper);
        while window.events.len() >= window.capacity {
            match window.events.pop_front() {
                Some((_, dropped)) => window.forget(&dropped),
                None => break,
            }
        }
        window.events.push_back((now, event.clone()));
        window
            .by_name
            .entry(event.object.name().into())
            .or_default()
            .push_back(event.clone());
    }

    /// The events of `resource` after `rv`, oldest first; or, when some of them are no longer
    /// kept, `Err` with the resourceVersion of the oldest one that may be missing.
    /// Only the events of objects called `name`, when it is given.
    pub(super) fn since(
        &self,
        resource: &GroupResource,
        name: Option<&str>,
        rv: u64,
    ) -> Result<Vec<Arc<Event>>, u64> {
        let window = self.per_resource.get(resource);
        let oldest_kept = window.map_or(self.cleared, |w| w.dropped.max(self.cleared));
        if rv < oldest_kept {
            return Err(oldest_kept);
        }
        let Some(window) = window else {
            return Ok(Vec::new());
        };
        Ok(match name {
            Some(name) => {
                let Some(events) = window.by_name.get(name) else {
                    return Ok(Vec::new());
                };
                let from = events.partition_point(|event| event.rv <= rv);
                events.range(from..).cloned().collect()
            }
            None => {
                let from = window.events.partition_point(|(_, event)| event.rv <= rv);
                window.events.range(from..).map(|(_, e)| e.clone()).collect()
            }
        })
    }

    /// Forget every event: a watch from any resourceVersion up to `rv` gets 410 Expired.
    pub(super) fn clear(&mut self, rv: u64) {
        self.per_resource.clear();
        self.cleared = rv;
    }
}

impl Window {
    /// Drop `event`, the oldest kept, from the name index too.
    fn forget(&mut self, event: &Arc<Event>) {
        self.dropped = event.rv;
        let name = event.object.name();
        if let Some(named) = self.by_name.get_mut(name) {
            named.pop_front();
            if named.is_empty() {
                self.by_name.remove(name);
            }
        }
    }

    /// `resizeCacheLocked`: a full cache grows while its oldest event is fresh, and shrinks when
    /// even its newest quarter is stale (keeping the newest events).
    fn resize(&mut self, now: Instant, upper: usize) {
        if self.events.len() < self.capacity {
            return;
        }
        let age = |i: usize| now.saturating_duration_since(self.events[i].0);
        if age(0) < EVENT_FRESH {
            self.capacity = (self.capacity * 2).min(upper);
            return;
        }
        let quarter = self.events.len() - self.capacity / 4;
        if quarter < self.events.len() && age(quarter) > EVENT_FRESH {
            self.capacity = (self.capacity / 2).max(LOWER_BOUND.min(upper));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{EventType, StoredObject};

    fn event(rv: u64, resource: &str) -> Arc<Event> {
        let object = StoredObject::new(
            serde_json::json!({"metadata": {"name": format!("o{rv}"), "resourceVersion": rv.to_string()}}),
            rv,
        );
        Arc::new(Event {
            rv,
            resource: GroupResource {
                group: String::new(),
                resource: resource.into(),
            },
            type_: EventType::Modified,
            object,
            previous: None,
            lines: Default::default(),
        })
    }

    fn nodes() -> GroupResource {
        GroupResource {
            group: String::new(),
            resource: "nodes".into(),
        }
    }

    #[test]
    fn a_fresh_cache_grows_to_its_bound_and_only_then_drops() {
        let mut h = History::new(100, 1000);
        let now = Instant::now();
        for rv in 101..=1100 {
            h.record(&event(rv, "nodes"), now);
        }
        let rvs = |name, rv| {
            h.since(&nodes(), name, rv)
                .map(|e| e.iter().map(|e| e.rv).collect::<Vec<_>>())
        };
        assert_eq!(rvs(None, 100).map(|e| e.len()), Ok(1000), "nothing dropped yet");
        h.record(&event(1101, "nodes"), now);
        let rvs = |name, rv| {
            h.since(&nodes(), name, rv)
                .map(|e| e.iter().map(|e| e.rv).collect::<Vec<_>>())
        };
        assert_eq!(rvs(None, 100), Err(101), "the bound reached, the oldest goes");
        assert_eq!(rvs(None, 1099), Ok(vec![1100, 1101]));
        assert_eq!(rvs(Some("o1100"), 101), Ok(vec![1100]), "by name");
        assert_eq!(rvs(Some("o1100"), 1100), Ok(vec![]));
        assert_eq!(
            rvs(Some("o101"), 101),
            Ok(vec![]),
            "dropped from the name index too"
        );
    }

    #[test]
    fn a_stale_cache_stays_small_and_one_resource_never_evicts_another() {
        let mut h = History::new(100, UPPER_BOUND);
        let start = Instant::now();
        h.record(&event(101, "controllerconfigs"), start);
        let later = start + EVENT_FRESH * 2;
        for rv in 102..=401 {
            // Each event older than the window by the time the next comes.
            h.record(&event(rv, "nodes"), later + EVENT_FRESH * 2 * (rv as u32 - 101));
        }
        let kept = |rv| h.since(&nodes(), None, rv).map(|e| e.len());
        assert_eq!(kept(100), Err(301), "stale: the cache did not grow past 100");
        assert_eq!(kept(301), Ok(100));
        let cc = GroupResource {
            group: String::new(),
            resource: "controllerconfigs".into(),
        };
        assert_eq!(
            h.since(&cc, None, 100).map(|e| e.len()),
            Ok(1),
            "other resources keep theirs"
        );
        h.clear(500);
        assert_eq!(h.since(&cc, None, 499).err(), Some(500));
        assert_eq!(h.since(&cc, None, 500).map(|e| e.len()), Ok(0));
    }
}
