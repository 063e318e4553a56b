//! What the store keeps and sends: a stored object with the bytes every read serves, a change
//! as history keeps it and watches receive it, and the filter a list or watch applies. Plain
//! data and what it says of itself; it must not reach for the store's state, its writes or its
//! history.

use crate::resource::GroupResource;
use crate::selector::{FieldSelector, LabelSelector};
use bytes::Bytes;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One stored object: its JSON value and, serialised once, the bytes every read serves.
#[derive(Debug)]
pub struct StoredObject {
    pub value: Value,
    pub json: Bytes,
    pub rv: u64,
    /// `metadata.name` and `metadata.namespace`, read once: every watch and list judges them.
    name: Box<str>,
    namespace: Box<str>,
}

impl StoredObject {
    pub(super) fn new(value: Value, rv: u64) -> Arc<Self> {
        let json = Bytes::from(crate::depth::to_vec(&value));
        let meta = |key: &str| -> Box<str> {
            value
                .get("metadata")
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .unwrap_or("")
                .into()
        };
        let (name, namespace) = (meta("name"), meta("namespace"));
        Arc::new(StoredObject {
            value,
            json,
            rv,
            name,
            namespace,
        })
    }

    /// `{"type":"…","object":…}` and a newline: this object as one watch event line.
    pub fn event_line(&self, type_: EventType) -> Bytes {
        let mut line = Vec::with_capacity(self.json.len() + 32);
        line.extend_from_slice(b"{\"type\":\"");
        line.extend_from_slice(type_.as_str().as_bytes());
        line.extend_from_slice(b"\",\"object\":");
        line.extend_from_slice(&self.json);
        line.extend_from_slice(b"}\n");
        Bytes::from(line)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }
}

/// The last reference to an object may go on an async worker (a watch that sent it): its value
/// may nest up to `depth::MAX_DEPTH`, so it is taken apart by a loop.
impl Drop for StoredObject {
    fn drop(&mut self) {
        crate::depth::dismantle(std::mem::take(&mut self.value));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as history keeps it and watches receive it. `previous` lets a watch with a
/// selector turn a MODIFIED into ADDED or DELETED when the object enters or leaves its view.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub resource: GroupResource,
    pub type_: EventType,
    pub object: Arc<StoredObject>,
    pub previous: Option<Arc<StoredObject>>,
    /// The event's lines as watches send it (ADDED, MODIFIED or DELETED: a selector can turn
    /// one into another), each made on first use and shared by every watch: one change fanned
    /// out to 10,000 watches is one line, not 10,000 copies. They live as long as the event.
    pub lines: [std::sync::OnceLock<Bytes>; 3],
}

impl Event {
    /// This event's object as a watch event line of `type_`.
    pub fn line(&self, type_: EventType) -> Bytes {
        self.lines[type_ as usize]
            .get_or_init(|| self.object.event_line(type_))
            .clone()
    }
}

/// What a list or watch is restricted to.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Filter {
    pub fn matches(&self, object: &StoredObject) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| object.namespace() == ns)
            && self.labels.matches(&object.value)
            && self
                .fields
                .matches_meta(object.name(), object.namespace(), &object.value)
    }
}

/// One resource's objects, by namespace and name.
pub(super) type Objects = BTreeMap<(String, String), Arc<StoredObject>>;
