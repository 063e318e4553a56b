//! A MachineConfigPool as the render and node controllers and the daemon read it
//! (`machineconfiguration.openshift.io/v1`): the spec typed where the suite reads a field, every
//! other field kept; label selectors and `maxUnavailable` stay JSON for the functions that read
//! them as Kubernetes does (`cluster::mcc::view::selects`, `cluster::pools::max_unavailable`),
//! and the status stays JSON, compared whole before the node controller writes it.

use super::machine_config::zero_if_null;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineConfigPool {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub spec: MachineConfigPoolSpec,
    /// `null` when the pool has none yet.
    #[serde(default)]
    pub status: Value,
}

/// `spec` of a MachineConfigPool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigPoolSpec {
    /// Which MachineConfigs the pool renders (`null`: none).
    #[serde(default)]
    pub machine_config_selector: Value,
    /// Which Nodes are the pool's (`null`: none).
    #[serde(default)]
    pub node_selector: Value,
    /// A number or a percentage; `null` is 1.
    #[serde(default)]
    pub max_unavailable: Value,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub paused: bool,
    /// The rendered config the pool targets.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub configuration: PoolConfiguration,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `spec.configuration` (and `status.configuration`): a rendered config's name and its sources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolConfiguration {
    #[serde(default)]
    pub name: String,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl super::McoObject for MachineConfigPool {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
}

impl MachineConfigPool {
    /// The rendered config the pool's nodes all run (`status.configuration.name`; empty before
    /// the node controller first wrote it).
    pub fn current(&self) -> &str {
        self.status["configuration"]["name"].as_str().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mco::McoObject;
    use serde_json::json;

    #[test]
    fn a_pool_reads_its_target_and_keeps_what_it_does_not_type() {
        let object = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
            "metadata": {"name": "worker", "uid": "u1", "generation": 3},
            "spec": {"configuration": {"name": "rendered-worker-1", "source": [{"name": "00-worker"}]},
                "machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}},
                "paused": null, "maxUnavailable": "10%"},
            "status": {"configuration": {"name": "rendered-worker-0"}},
        });
        let pool = MachineConfigPool::from_json(&object).unwrap();
        assert_eq!((pool.name(), pool.current()), ("worker", "rendered-worker-0"));
        assert_eq!(pool.spec.configuration.name, "rendered-worker-1");
        assert!(!pool.spec.paused);
        assert_eq!(pool.spec.max_unavailable, json!("10%"));
        assert!(
            pool.spec.node_selector.is_null(),
            "a missing selector selects nothing"
        );
        assert_eq!(
            pool.spec.configuration.other["source"],
            json!([{"name": "00-worker"}])
        );
        assert_eq!(pool.metadata.generation, Some(3));
        let fresh = MachineConfigPool::from_json(&json!({"metadata": {"name": "infra"}})).unwrap();
        assert_eq!(
            (fresh.current(), fresh.spec.configuration.name.as_str()),
            ("", "")
        );
    }
}
