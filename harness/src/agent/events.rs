//! The daemon's Node events, as `oc get events` and `oc describe node` show them: upstream's
//! node writer records them through client-go's event recorder (release-4.12/4.16
//! `pkg/daemon/writer.go` `newNodeWriter`: source component `machineconfigdaemon`, host the
//! node, the Node as the involved object), which posts core/v1 Events to the involved object's
//! namespace (`default` for a cluster-scoped Node) and, for an event it has posted before (same
//! source, object, type, reason and message), raises that Event's `count` instead of posting a
//! new one. Recording never fails the daemon: upstream's recorder drops what it cannot post.

use super::AgentEnv;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;

/// Upstream's event source component for the daemon.
const COMPONENT: &str = "machineconfigdaemon";
/// Where events about cluster-scoped objects go.
const NAMESPACE: &str = "default";

/// `Normal` or `Warning`, the two event types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// What makes two events the same event: type, reason and message (the source and the object
/// are this daemon's and its Node).
type EventKey = (EventType, String, String);

/// The events this daemon has posted: per key, the Event's name and count.
#[derive(Default)]
pub struct Recorder {
    posted: Mutex<HashMap<EventKey, (String, i32)>>,
}

impl AgentEnv {
    /// Record a Node event about this node.
    pub async fn event(&self, kind: EventType, reason: &str, message: &str) {
        if let Err(e) = self.post_event(kind, reason, message).await {
            self.log(&format!(
                "Could not record event {reason} for node {}: {e}",
                self.node_name
            ));
        }
    }

    async fn post_event(&self, kind: EventType, reason: &str, message: &str) -> Result<(), kube::Error> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), NAMESPACE);
        let now = k8s_openapi::jiff::Timestamp::now();
        let key = (kind, reason.to_string(), message.to_string());
        let before = self
            .events
            .posted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        if let Some((name, count)) = before {
            let name: String = name;
            let patch = json!({"count": count + 1, "lastTimestamp": now.to_string()});
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => {
                    self.remember(key, name, count + 1);
                    return Ok(());
                }
                // Gone (events expire): post it anew, as the recorder does.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        // Before the node informer's first list the uid is unknown: left out, as a reference
        // without one is.
        let uid = Some(self.node.uid()).filter(|u| !u.is_empty());
        let name = format!("{}.{:x}", self.node_name, now.as_nanosecond().unsigned_abs());
        let event: Event = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": NAMESPACE},
            "involvedObject": {"kind": "Node", "name": self.node_name, "uid": uid},
            "reason": reason,
            "message": message,
            "type": kind.as_str(),
            "source": {"component": COMPONENT, "host": self.node_name},
            "firstTimestamp": now.to_string(),
            "lastTimestamp": now.to_string(),
            "count": 1,
            "reportingComponent": COMPONENT,
            "reportingInstance": self.node_name,
        }))
        .map_err(kube::Error::SerdeError)?;
        api.create(&PostParams::default(), &event).await?;
        self.remember(key, name, 1);
        Ok(())
    }

    fn remember(&self, key: EventKey, name: String, count: i32) {
        self.events
            .posted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, (name, count));
    }
}
