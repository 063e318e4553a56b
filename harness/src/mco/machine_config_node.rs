//! A MachineConfigNode (`machineconfiguration.openshift.io/v1`, 4.16+ with the
//! MachineConfigNodes feature; v1alpha1 before): the node's view of its config, one per Node and
//! owned by it. The operator creates it (release-4.16 `pkg/operator/sync.go`); the daemon writes
//! its status. Here the spec is typed as the operator writes it and the status is kept as it
//! came.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigNode {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: MachineConfigNodeSpec,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub status: Value,
}

/// `spec` of a MachineConfigNode: its Node, its pool, and the rendered config it should run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigNodeSpec {
    #[serde(default)]
    pub node: NameRef,
    #[serde(default)]
    pub pool: NameRef,
    #[serde(default)]
    pub config_version: ConfigVersion,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `{"name": …}`: how a MachineConfigNode names its Node and its pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NameRef {
    #[serde(default)]
    pub name: String,
}

/// `spec.configVersion`: the rendered config the node should run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigVersion {
    #[serde(default)]
    pub desired: String,
}

impl MachineConfigNode {
    /// The MachineConfigNode the operator makes for a Node of `pool` that should run
    /// `desired`, owned by the Node (name and uid).
    pub fn for_node(node: &str, node_uid: Option<String>, pool: &str, desired: &str) -> Self {
        MachineConfigNode {
            api_version: "machineconfiguration.openshift.io/v1".into(),
            kind: "MachineConfigNode".into(),
            metadata: ObjectMeta {
                name: Some(node.into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Node".into(),
                    name: node.into(),
                    uid: node_uid.unwrap_or_default(),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            spec: MachineConfigNodeSpec {
                node: NameRef { name: node.into() },
                pool: NameRef { name: pool.into() },
                config_version: ConfigVersion {
                    desired: desired.into(),
                },
                other: Map::new(),
            },
            status: Value::Null,
        }
    }
}

impl super::McoObject for MachineConfigNode {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mco::McoObject;
    use serde_json::json;

    #[test]
    fn a_node_s_machine_config_node_is_owned_by_it_and_names_its_pool_and_config() {
        let made = MachineConfigNode::for_node("worker-0", Some("u1".into()), "worker", "rendered-worker-1");
        assert_eq!(
            serde_json::to_value(&made).unwrap(),
            json!({
                "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
                "metadata": {"name": "worker-0", "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": "worker-0", "uid": "u1"}]},
                "spec": {"node": {"name": "worker-0"}, "pool": {"name": "worker"},
                    "configVersion": {"desired": "rendered-worker-1"}},
            })
        );
        // As the daemon leaves it: a status, and spec fields this model does not type.
        let read = MachineConfigNode::from_json(&json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
            "metadata": {"name": "worker-0"},
            "spec": {"node": {"name": "worker-0"}, "pool": {"name": "worker"},
                "configVersion": {"desired": "rendered-worker-2"}, "future": true},
            "status": {"conditions": [{"type": "Updated", "status": "True"}]},
        }))
        .unwrap();
        assert_eq!(
            (read.name(), read.spec.config_version.desired.as_str()),
            ("worker-0", "rendered-worker-2")
        );
        assert_eq!(read.spec.other["future"], true);
        assert_eq!(read.status["conditions"][0]["type"], "Updated");
    }
}
