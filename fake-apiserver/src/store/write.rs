//! Writes: create, update, patch, delete and deletecollection, with the semantics clients can
//! observe on a real kube-apiserver.
//!
//! - Every committed change takes the next resourceVersion and publishes one event; a write
//!   that changes nothing (after the server's own fields are put back) commits nothing.
//! - A stale `metadata.resourceVersion` or a failed precondition is a 409 Conflict.
//! - With a status subresource, writes to the object keep the stored status and writes to
//!   `/status` change only the status; `metadata.generation` counts the other changes.
//! - An object with finalizers is marked for deletion and removed when the last one goes.
//! - Deleting a namespace deletes what is in it (`default`, `kube-system` and `kube-public` are
//!   never deleted); deleting a CRD deletes its objects and stops
//!   serving its resource; creating one starts serving it, Established at once.
//!
//! Each function builds the new object before touching the maps, so a rejected request leaves
//! the store exactly as it was.

use super::prepare::{
    Subresource, check_kind, check_namespace, crd_group_resource, crd_status, default_secret_type,
    generated_name, has_finalizers, is_crd, is_namespace, merge_string_data, meta, normalise_string_maps,
    now_rfc3339, ns_resource, prepare_update, set_rv, text, text_of,
};
use super::{Event, EventType, Objects, State, Store, StoredObject, not_found};
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::validation::validate_object;
use serde_json::{Value, json};
use std::sync::Arc;

/// Namespaces the NamespaceLifecycle admission plugin never lets go (apiserver
/// `admission/plugin/namespace/lifecycle/admission.go`); `kube-node-lease` is not one of them.
const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// DeleteOptions `preconditions`.
#[derive(Debug, Clone, Default)]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// What a DELETE did.
#[derive(Debug)]
pub enum DeleteOutcome {
    /// Gone; the object as it was, with the deletion's resourceVersion.
    Deleted(Arc<StoredObject>),
    /// Finalizers remain: marked with a deletionTimestamp and kept.
    Finalizing(Arc<StoredObject>),
}

/// A PUT of a custom resource must name the resourceVersion it replaces (see `Store::update`).
pub(crate) fn require_resource_version(
    info: &ResourceInfo,
    name: &str,
    value: &Value,
) -> Result<(), ApiError> {
    let rv = value
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if info.builtin || !rv.is_empty() {
        return Ok(());
    }
    Err(ApiError::Invalid {
        group: info.group.clone(),
        kind: info.resource.clone(),
        name: name.to_string(),
        causes: vec![crate::error::Cause {
            reason: "FieldValueInvalid",
            message: "Invalid value: 0: must be specified for an update".into(),
            field: "metadata.resourceVersion".into(),
        }],
    })
}

/// A custom resource loses what its CRD's schema does not declare, before it is validated and
/// stored (`validation::schema`).
fn prune_custom(info: &ResourceInfo, value: &mut Value) {
    if !info.builtin
        && let Some(schema) = &info.schema
    {
        crate::validation::schema::prune(schema, value);
    }
}

/// The name a created object takes: its own, or when it has none but a `generateName`, that
/// prefix and five random characters (set in the object).
fn name_or_generated(value: &mut Value) -> String {
    let m = meta(value);
    if text_of(m, "name").is_empty() && !text_of(m, "generateName").is_empty() {
        let name = generated_name(&text_of(m, "generateName"));
        m.insert("name".into(), json!(name));
    }
    text_of(m, "name")
}

/// What the server sets on a new object once it is valid: a uid and creation time, the other
/// fields only it writes cleared (resourceVersion, deletion, managedFields, selfLink),
/// generation 1 where generations are tracked, a CRD's Established status, a Namespace's
/// `kubernetes` finalizer and Active phase; a custom resource with a status subresource loses
/// the status it was sent.
fn set_created_fields(info: &ResourceInfo, value: &mut Value) {
    let now = now_rfc3339();
    let m = meta(value);
    m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    m.insert("creationTimestamp".into(), json!(now));
    for server_owned in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    ] {
        m.remove(server_owned);
    }
    if info.tracks_generation {
        m.insert("generation".into(), json!(1));
    } else {
        m.remove("generation");
    }
    if is_crd(info) {
        value["status"] = crd_status(value, &now);
    } else if is_namespace(info) {
        value["spec"] = json!({"finalizers": ["kubernetes"]});
        value["status"] = json!({"phase": "Active"});
    } else if info.status_subresource && !info.builtin {
        // A custom resource's status is written through /status only.
        value.as_object_mut().expect("checked").remove("status");
    }
}

impl Store {
    /// Create `value` (namespace `ns` for namespaced resources). `dry_run` checks and returns the
    /// object without storing it.
    pub fn create(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        mut value: Value,
        dry_run: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        check_kind(info, &mut value)?;
        check_namespace(info, ns, &mut value)?;
        normalise_string_maps(&mut value);
        merge_string_data(info, &mut value);
        default_secret_type(info, &mut value);
        let name = name_or_generated(&mut value);
        prune_custom(info, &mut value);
        validate_object(info, &value, None)?;
        set_created_fields(info, &mut value);
        let mut state = self.lock();
        let key = (ns.unwrap_or("").to_string(), name);
        state.check_create_target(info, &key)?;
        if dry_run {
            return Ok(StoredObject::new(value, state.rv));
        }
        let rv = state.next_rv();
        set_rv(&mut value, rv);
        let object = StoredObject::new(value, rv);
        if is_crd(info) {
            state.registry.register_crd(&object.value);
            if let Some(gr) = crd_group_resource(&object.value) {
                state.objects.entry(gr).or_default();
            }
        }
        state.objects_mut(info)?.insert(key, object.clone());
        self.publish(&mut state, info, EventType::Added, object.clone(), None);
        Ok(object)
    }

    /// Replace an object (PUT). A `metadata.resourceVersion` in the body must be the stored one.
    /// A custom resource's PUT must carry one: apiextensions-apiserver's strategy does not allow
    /// unconditional updates (`AllowUnconditionalUpdate` is false), so a body without it is 422
    /// `must be specified for an update`, named by resource and group as that strategy names
    /// it. A built-in object's PUT without one replaces whatever is stored.
    pub fn update(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
        value: Value,
        sub: Subresource,
        dry_run: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        self.modify(info, ns, name, sub, dry_run, |_| {
            require_resource_version(info, name, &value)?;
            Ok(value)
        })
    }

    /// Read-modify-write under the lock: `change` gets the stored object and returns the new
    /// one (patches, and PUT through `update`). The result goes through the same checks as PUT.
    pub fn modify(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
        sub: Subresource,
        dry_run: bool,
        change: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let mut state = self.lock();
        let key = (ns.unwrap_or("").to_string(), name.to_string());
        let old = state
            .objects_of(info)?
            .get(&key)
            .cloned()
            .ok_or_else(|| not_found(info, name))?;
        let proposed = change(&old.value)?;
        let mut new = prepare_update(info, ns, name, &old, proposed, sub)?;
        prune_custom(info, &mut new);
        validate_object(info, &new, Some(&old.value))?;
        if new == old.value {
            return Ok(old);
        }
        if dry_run {
            return Ok(StoredObject::new(new, old.rv));
        }
        let rv = state.next_rv();
        set_rv(&mut new, rv);
        let object = StoredObject::new(new, rv);
        let finished =
            object.value.pointer("/metadata/deletionTimestamp").is_some() && !has_finalizers(&object.value);
        if finished {
            state.objects_mut(info)?.remove(&key);
            self.publish(&mut state, info, EventType::Deleted, object.clone(), Some(old));
            self.cascade(&mut state, info, &object.value);
        } else {
            if is_crd(info) {
                state.registry.register_crd(&object.value);
            }
            state.objects_mut(info)?.insert(key, object.clone());
            self.publish(&mut state, info, EventType::Modified, object.clone(), Some(old));
        }
        Ok(object)
    }

    /// Delete one object, honouring preconditions and finalizers.
    pub fn delete(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
        preconditions: &Preconditions,
        dry_run: bool,
    ) -> Result<DeleteOutcome, ApiError> {
        let mut state = self.lock();
        if is_namespace(info)
            && IMMORTAL_NAMESPACES.contains(&name)
            && state
                .objects_of(info)?
                .contains_key(&(String::new(), name.to_string()))
        {
            return Err(ApiError::Forbidden {
                message: format!("namespaces {name:?} is forbidden: this namespace may not be deleted"),
                group: String::new(),
                resource: "namespaces".into(),
                name: Some(name.to_string()),
            });
        }
        self.delete_locked(&mut state, info, ns, name, preconditions, dry_run)
    }

    /// Delete every object that `filter` selects; returns what was deleted or marked.
    pub fn delete_collection(
        &self,
        info: &ResourceInfo,
        filter: &super::Filter,
        dry_run: bool,
    ) -> Result<Vec<Arc<StoredObject>>, ApiError> {
        let mut state = self.lock();
        let targets: Vec<(String, String)> = state
            .objects_of(info)?
            .values()
            .filter(|o| filter.matches(o))
            .map(|o| (o.namespace().to_string(), o.name().to_string()))
            .collect();
        let mut out = Vec::with_capacity(targets.len());
        for (ns, name) in targets {
            let ns = info.namespaced.then_some(ns.as_str());
            match self.delete_locked(&mut state, info, ns, &name, &Preconditions::default(), dry_run)? {
                DeleteOutcome::Deleted(o) | DeleteOutcome::Finalizing(o) => out.push(o),
            }
        }
        Ok(out)
    }

    fn delete_locked(
        &self,
        state: &mut State,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
        pre: &Preconditions,
        dry_run: bool,
    ) -> Result<DeleteOutcome, ApiError> {
        let key = (ns.unwrap_or("").to_string(), name.to_string());
        let old = state
            .objects_of(info)?
            .get(&key)
            .cloned()
            .ok_or_else(|| not_found(info, name))?;
        let conflict = |detail: String| ApiError::Conflict {
            resource: info.qualified_name(),
            name: name.to_string(),
            detail,
        };
        let uid = text(&old.value, "/metadata/uid");
        if let Some(want) = pre.uid.as_deref().filter(|u| *u != uid) {
            return Err(conflict(format!(
                "Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
            )));
        }
        if let Some(want) = pre
            .resource_version
            .as_deref()
            .filter(|v| *v != old.rv.to_string())
        {
            return Err(conflict(format!(
                "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {}",
                old.rv
            )));
        }
        if has_finalizers(&old.value) {
            if old.value.pointer("/metadata/deletionTimestamp").is_some() || dry_run {
                return Ok(DeleteOutcome::Finalizing(old));
            }
            let mut marked = old.value.clone();
            meta(&mut marked).insert("deletionTimestamp".into(), json!(now_rfc3339()));
            meta(&mut marked).insert("deletionGracePeriodSeconds".into(), json!(0));
            let rv = state.next_rv();
            set_rv(&mut marked, rv);
            let object = StoredObject::new(marked, rv);
            state.objects_mut(info)?.insert(key, object.clone());
            self.publish(state, info, EventType::Modified, object.clone(), Some(old));
            return Ok(DeleteOutcome::Finalizing(object));
        }
        if dry_run {
            return Ok(DeleteOutcome::Deleted(old));
        }
        state.objects_mut(info)?.remove(&key);
        let rv = state.next_rv();
        let mut gone = old.value.clone();
        set_rv(&mut gone, rv);
        let object = StoredObject::new(gone, rv);
        self.publish(state, info, EventType::Deleted, object.clone(), Some(old));
        self.cascade(state, info, &object.value);
        Ok(DeleteOutcome::Deleted(object))
    }

    /// What goes with a deleted namespace or CRD.
    fn cascade(&self, state: &mut State, info: &ResourceInfo, deleted: &Value) {
        if is_namespace(info) {
            let ns = text(deleted, "/metadata/name").to_string();
            let namespaced: Vec<ResourceInfo> =
                state.registry.all().filter(|r| r.namespaced).cloned().collect();
            for r in namespaced {
                self.drop_all(state, &r, |o| o.namespace() == ns);
            }
        } else if is_crd(info) {
            let crd_name = text(deleted, "/metadata/name").to_string();
            let served: Vec<ResourceInfo> = state
                .registry
                .all()
                .filter(|r| !r.builtin && format!("{}.{}", r.resource, r.group) == crd_name)
                .cloned()
                .collect();
            if let Some(r) = served.first() {
                self.drop_all(state, r, |_| true);
            }
            if let Some(gr) = state.registry.unregister_crd(&crd_name) {
                state.objects.remove(&gr);
            }
        }
    }

    fn drop_all(&self, state: &mut State, info: &ResourceInfo, select: impl Fn(&StoredObject) -> bool) {
        let Some(objects) = state.objects.get(&info.group_resource()) else {
            return;
        };
        let doomed: Vec<(String, String)> = objects
            .iter()
            .filter(|(_, o)| select(o))
            .map(|(k, _)| k.clone())
            .collect();
        for key in doomed {
            let old = state
                .objects
                .get_mut(&info.group_resource())
                .and_then(|m| m.remove(&key))
                .expect("listed above");
            let rv = state.next_rv();
            let mut gone = old.value.clone();
            set_rv(&mut gone, rv);
            self.publish(
                state,
                info,
                EventType::Deleted,
                StoredObject::new(gone, rv),
                Some(old),
            );
        }
    }

    fn publish(
        &self,
        state: &mut State,
        info: &ResourceInfo,
        type_: EventType,
        object: Arc<StoredObject>,
        previous: Option<Arc<StoredObject>>,
    ) {
        let event = Arc::new(Event {
            rv: object.rv,
            resource: info.group_resource(),
            type_,
            object,
            previous,
            lines: Default::default(),
        });
        state.history.record(&event, std::time::Instant::now());
        state.topics.send(&event);
    }
}

impl State {
    /// Where a new object `key` (namespace, name) goes: its namespace must exist (404 naming
    /// the namespace) and the name must be free (409 AlreadyExists).
    fn check_create_target(&self, info: &ResourceInfo, key: &(String, String)) -> Result<(), ApiError> {
        if info.namespaced {
            let namespaces = self.objects.get(&ns_resource()).expect("namespaces are built in");
            if !namespaces.contains_key(&(String::new(), key.0.clone())) {
                return Err(ApiError::NotFound {
                    resource: "namespaces".into(),
                    name: key.0.clone(),
                });
            }
        }
        if self.objects_of(info)?.contains_key(key) {
            return Err(ApiError::AlreadyExists {
                resource: info.qualified_name(),
                name: key.1.clone(),
            });
        }
        Ok(())
    }

    pub(super) fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn objects_mut(&mut self, info: &ResourceInfo) -> Result<&mut Objects, ApiError> {
        self.objects
            .get_mut(&info.group_resource())
            .ok_or(ApiError::NoSuchResource)
    }
}
