//! MCO's names that both sides of the contract use: node annotations, states, and the node
//! paths scenarios observe (MCO `pkg/daemon/constants/constants.go`,
//! `pkg/controller/common/constants.go`; mco-source.md §2).

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
pub const STATE_REBOOTING: &str = "Rebooting";

/// The Node's first annotations (currentConfig, desiredConfig, state Done) as the
/// machine-config server writes them on a new node's disk; the daemon's first run applies them
/// (upstream `constants.InitialNodeAnnotationsFilePath`).
pub const INITIAL_NODE_ANNOTATIONS: &str = "/etc/machine-config-daemon/node-annotations.json";

/// Where the kernel says whether it runs in FIPS mode ("0" or "1"); the daemon refuses a
/// config whose `fips` differs (upstream `checkFIPS`).
pub const FIPS_PATH: &str = "/proc/sys/crypto/fips_enabled";

/// The kubelet's clientCAFile (not the API server CA, despite the seeds).
pub const KUBELET_CA_PATH: &str = "/etc/kubernetes/kubelet-ca.crt";
