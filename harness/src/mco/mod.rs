//! MCO's names that both sides of the contract use: node annotations, states, and the node
//! paths scenarios observe (MCO `pkg/daemon/constants/constants.go`,
//! `pkg/controller/common/constants.go`; mco-source.md §2), and the MCO model's other common
//! parts: the API handles (`api`), the cluster objects' names (`names`), a MachineConfig's
//! spec, a MachineConfigPool (spec and status), a ControllerConfig's spec and a
//! MachineConfigNode as typed structs (`machine_config`, `pool`, `controller_config`,
//! `machine_config_node`) and a file entry's Ignition contents (`ignition`). The reference
//! cluster, the reference daemon and the steps all read them from here.

pub mod api;
pub mod controller_config;
pub mod ignition;
pub mod machine_config;
pub mod machine_config_node;
pub mod names;
pub mod pool;
pub mod served;

/// The `spec` of an MCO object as its typed struct, zero values where the object has none or
/// it is `null` (as Go's decoder leaves a missing struct).
pub fn spec_of<T: serde::de::DeserializeOwned + Default>(
    object: &serde_json::Value,
) -> Result<T, serde_json::Error> {
    part_of(object, "spec")
}

/// The `status` of an MCO object as its typed struct, zero values as for [`spec_of`].
pub fn status_of<T: serde::de::DeserializeOwned + Default>(
    object: &serde_json::Value,
) -> Result<T, serde_json::Error> {
    part_of(object, "status")
}

fn part_of<T: serde::de::DeserializeOwned + Default>(
    object: &serde_json::Value,
    key: &str,
) -> Result<T, serde_json::Error> {
    match object.get(key) {
        Some(part) if !part.is_null() => T::deserialize(part),
        _ => Ok(T::default()),
    }
}

/// The rendered config a node runs; written by the agent.
pub const CURRENT_CONFIG: &str = "machineconfiguration.openshift.io/currentConfig";
/// The rendered config the node controller wants a node on.
pub const DESIRED_CONFIG: &str = "machineconfiguration.openshift.io/desiredConfig";
/// `Working`, `Done`, `Degraded`, `Rebooting` or `Unreconcilable`; written by the agent.
/// 4.16: the ControllerConfig annotation that asks the daemons to update the kubeconfig CA.
pub const SERVICE_CA_ROTATE: &str = "machineconfiguration.openshift.io/service-ca-rotate";
/// 4.16: the `service-ca-rotate` value the daemon last acted on (`ControllerConfigSyncServerCA`).
pub const LAST_OBSERVED_SERVER_CA: &str = "machineconfiguration.openshift.io/lastObservedServerCAAnnotation";
pub const STATE: &str = "machineconfiguration.openshift.io/state";
/// Why a node is Degraded (truncated to 2,000 characters upstream).
pub const REASON: &str = "machineconfiguration.openshift.io/reason";
/// `drain-<config>` or `uncordon-<config>`, asked by the agent.
pub const DESIRED_DRAIN: &str = "machineconfiguration.openshift.io/desiredDrain";
/// The drain request the drain controller last carried out.
pub const LAST_APPLIED_DRAIN: &str = "machineconfiguration.openshift.io/lastAppliedDrain";
/// The ControllerConfig resourceVersion whose certificates the 4.16 agent last wrote.
pub const LAST_SYNCED_CONTROLLER_CONFIG: &str =
    "machineconfiguration.openshift.io/lastSyncedControllerConfigResourceVersion";

pub const STATE_DONE: &str = "Done";
pub const STATE_WORKING: &str = "Working";
pub const STATE_DEGRADED: &str = "Degraded";
pub const STATE_UNRECONCILABLE: &str = "Unreconcilable";

/// The Node's first annotations (currentConfig, desiredConfig, state Done) as the
/// machine-config server writes them on a new node's disk; the daemon's first run applies them
/// (upstream `constants.InitialNodeAnnotationsFilePath`).
pub const INITIAL_NODE_ANNOTATIONS: &str = "/etc/machine-config-daemon/node-annotations.json";

/// Where the kernel says whether it runs in FIPS mode ("0" or "1"); the daemon refuses a
/// config whose `fips` differs (upstream `checkFIPS`).
pub const FIPS_PATH: &str = "/proc/sys/crypto/fips_enabled";

/// Where the daemon keeps the config it runs (`storeCurrentConfigOnDisk`).
pub const CURRENT_CONFIG_FILE: &str = "/etc/machine-config-daemon/currentconfig";

/// The kubelet's clientCAFile (not the API server CA, despite the seeds).
pub const KUBELET_CA_PATH: &str = "/etc/kubernetes/kubelet-ca.crt";
/// The cloud provider's CA bundle, written from ControllerConfig `cloudProviderCAData`.
pub const CLOUD_CA_PATH: &str = "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem";
/// Where systemd units and their drop-in directories live on a node.
pub const UNIT_DIR: &str = "/etc/systemd/system";
/// The user CA bundle (`openshift-config/user-ca-bundle`) as a trust anchor.
pub const USER_CA_BUNDLE_PATH: &str = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt";
/// Where the certificate writer puts the internal registry's pull secret (4.16).
pub const INTERNAL_REGISTRY_PULL_SECRET: &str = "/etc/mco/internal-registry-pull-secret.json";
/// The image registry CA directory (`imageCAFilePath`).
pub const REGISTRY_CA_DIR: &str = "/etc/docker/certs.d";

/// What the typed MCO objects (`machine_config::MachineConfig`, `pool::MachineConfigPool`,
/// `machine_config_node::MachineConfigNode`) have
/// in common: each is read from an API object's JSON or from a dynamic API object, and is named
/// by its metadata.
pub trait McoObject: serde::de::DeserializeOwned {
    fn metadata(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    /// The object an API object's JSON holds.
    fn from_json(object: &serde_json::Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(object.clone())
    }

    /// The object a dynamic API object holds.
    fn of(object: &kube::api::DynamicObject) -> Result<Self, serde_json::Error> {
        Self::from_json(&serde_json::to_value(object)?)
    }

    fn name(&self) -> &str {
        self.metadata().name.as_deref().unwrap_or("")
    }
}

/// A ConfigMap's value under `key` as upstream's `cmToData` reads it (release-4.16 operator
/// sync.go:2005-2018, daemon certificate_writer.go:388-400): `binaryData` first; otherwise
/// `data`, base64-decoded if it decodes (Go's `StdEncoding` skips CR and LF) and as it is if
/// not. `None` when neither holds the key.
pub fn config_map_bytes(cm: &k8s_openapi::api::core::v1::ConfigMap, key: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    if let Some(bytes) = cm.binary_data.as_ref().and_then(|b| b.get(key)) {
        return Some(bytes.0.clone());
    }
    let text = cm.data.as_ref()?.get(key)?;
    let unwrapped: String = text.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(unwrapped)
            .unwrap_or_else(|_| text.clone().into_bytes()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(data: Option<&str>, binary: Option<&[u8]>) -> ConfigMap {
        ConfigMap {
            data: data.map(|d| [("k".to_string(), d.to_string())].into()),
            binary_data: binary.map(|b| [("k".to_string(), ByteString(b.to_vec()))].into()),
            ..Default::default()
        }
    }

    #[test]
    fn config_map_bytes_reads_as_cm_to_data() {
        let pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        // base64 of `pem`, wrapped at 20 columns with CRLF and LF: Go's decoder skips both.
        let encoded =
            "LS0tLS1CRUdJTiBDRVJU\r\nSUZJQ0FURS0tLS0tCkFB\nQUEKLS0tLS1FTkQgQ0VS\nVElGSUNBVEUtLS0tLQo=\n";
        assert_eq!(
            config_map_bytes(&cm(Some(encoded), None), "k").unwrap(),
            pem.as_bytes()
        );
        // Not base64 (a PEM's dashes): as it is.
        assert_eq!(
            config_map_bytes(&cm(Some(pem), None), "k").unwrap(),
            pem.as_bytes()
        );
        // binaryData wins over data.
        assert_eq!(
            config_map_bytes(&cm(Some(pem), Some(b"bin")), "k").unwrap(),
            b"bin"
        );
        assert_eq!(config_map_bytes(&cm(None, None), "k"), None);
        assert_eq!(config_map_bytes(&cm(Some(pem), None), "other"), None);
    }
}
