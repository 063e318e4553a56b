//! A MachineConfigPool as the render and node controllers and the daemon read it
//! (`machineconfiguration.openshift.io/v1`): the spec typed where the suite reads a field, every
//! other field kept; label selectors and `maxUnavailable` stay JSON for the functions that read
//! them as Kubernetes does (`cluster::mcc::view::selects`, `cluster::pools::max_unavailable`).
//! The status is typed as upstream's `MachineConfigPoolStatus` (counts, conditions,
//! `certExpirys`): the node controller writes it, the steps read it.

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
    /// `None` when the pool has none yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MachineConfigPoolStatus>,
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

/// `status` of a MachineConfigPool (release-4.16 `MachineConfigPoolStatus`; the counts are
/// `int32` upstream).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigPoolStatus {
    #[serde(default, deserialize_with = "zero_if_null")]
    pub observed_generation: i64,
    /// The rendered config every node of the pool has reached.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub configuration: PoolConfiguration,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub machine_count: i32,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub updated_machine_count: i32,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub ready_machine_count: i32,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub unavailable_machine_count: i32,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub degraded_machine_count: i32,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub conditions: Vec<PoolCondition>,
    /// 4.14+: the kube-apiserver serving CA's certificates and when each expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_expirys: Option<Vec<CertExpiry>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One of a pool's `status.conditions` (`Updated`, `Updating`, `NodeDegraded`,
/// `RenderDegraded`, `Degraded`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolCondition {
    #[serde(rename = "type", default)]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: String,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub reason: String,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub message: String,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One entry of `status.certExpirys`: the bundle it came from, the certificate's subject, and
/// its notAfter (4.16; release-4.14's `CertExpiry` has no `expiry`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CertExpiry {
    #[serde(default)]
    pub bundle: String,
    #[serde(default)]
    pub subject: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl MachineConfigPoolStatus {
    /// The condition of that type, if the pool has one.
    pub fn condition(&self, type_: &str) -> Option<&PoolCondition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
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
        self.status.as_ref().map_or("", |s| s.configuration.name.as_str())
    }

    /// The spec of a MachineConfigPool object (its `spec`), zero values where it has none.
    pub fn spec_of(object: &Value) -> Result<MachineConfigPoolSpec, serde_json::Error> {
        super::spec_of(object)
    }

    /// The status of a MachineConfigPool object, zero values where it has none.
    pub fn status_of(object: &Value) -> Result<MachineConfigPoolStatus, serde_json::Error> {
        super::status_of(object)
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

    #[test]
    fn a_status_reads_as_upstream_writes_it_and_writes_back_the_same() {
        let status = json!({
            "observedGeneration": 4,
            "configuration": {"name": "rendered-worker-2", "source": [{"name": "00-worker"}]},
            "machineCount": 3, "updatedMachineCount": 1, "readyMachineCount": 2,
            "unavailableMachineCount": 1, "degradedMachineCount": 0,
            "conditions": [
                {"type": "Updated", "status": "False", "reason": "", "message": "",
                    "lastTransitionTime": "2026-11-28T00:00:00Z"},
                {"type": "Updating", "status": "True", "message": "All nodes are updating to rendered-worker-2"},
            ],
            "certExpirys": [
                {"bundle": "KubeAPIServerServingCAData", "subject": "CN=kube-apiserver-lb-signer", "expiry": "2036-11-28T00:00:00Z"},
                {"bundle": "KubeAPIServerServingCAData", "subject": "CN=admin-kubeconfig-signer"},
            ],
        });
        let pool = json!({"metadata": {"name": "worker"}, "status": status});
        let typed = MachineConfigPool::status_of(&pool).unwrap();
        assert_eq!(typed.configuration.name, "rendered-worker-2");
        assert_eq!(
            (
                typed.machine_count,
                typed.updated_machine_count,
                typed.ready_machine_count
            ),
            (3, 1, 2)
        );
        let updating = typed.condition("Updating").unwrap();
        assert_eq!(updating.status, "True");
        assert_eq!(updating.reason, "", "a missing reason is empty");
        assert_eq!(
            typed.condition("Updated").unwrap().other["lastTransitionTime"],
            "2026-11-28T00:00:00Z",
            "kept"
        );
        assert!(typed.condition("Degraded").is_none());
        let expirys = typed.cert_expirys.as_ref().unwrap();
        assert_eq!(expirys[0].expiry.as_deref(), Some("2036-11-28T00:00:00Z"));
        assert_eq!(expirys[1].expiry, None, "4.14 writes none");
        // Written back, it is the object it was read from, field for field.
        let mut expected = status.clone();
        expected["conditions"][1]["reason"] = json!("");
        assert_eq!(serde_json::to_value(&typed).unwrap(), expected);
        // No status, or null: zero values; a status of the wrong shape is an error.
        let none = MachineConfigPool::status_of(&json!({"status": null})).unwrap();
        assert_eq!((none.machine_count, none.cert_expirys), (0, None));
        assert!(MachineConfigPool::status_of(&json!({"status": {"conditions": "Updated"}})).is_err());
        assert_eq!(
            MachineConfigPool::from_json(&pool).unwrap().current(),
            "rendered-worker-2"
        );
    }
}
