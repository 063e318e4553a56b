//! The two generations of OpenShift whose behaviour the suite encodes.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Profile {
    /// The CA bundle travels inside rendered MachineConfigs.
    Ocp412,
    /// The daemon writes the CA bundle straight from ControllerConfig.
    Ocp416,
}

impl Profile {
    pub const ALL: [Profile; 2] = [Profile::Ocp412, Profile::Ocp416];

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Ocp412 => "ocp-4.12",
            Profile::Ocp416 => "ocp-4.16",
        }
    }

    /// The release the fake cluster reports: ClusterVersion `version`'s desired version and the
    /// version FeatureGate `cluster` lists its gates for. The upstream daemon reads the one to
    /// find the other when it runs without `--payload-version`.
    pub fn payload_version(self) -> &'static str {
        match self {
            Profile::Ocp412 => "4.12.0",
            Profile::Ocp416 => "4.16.0",
        }
    }

    /// The Kubernetes minor version the release's kube-apiserver runs (4.12: 1.25, 4.16: 1.29):
    /// the API server's own rules follow it where they changed since.
    pub fn kubernetes_minor(self) -> u32 {
        match self {
            Profile::Ocp412 => 25,
            Profile::Ocp416 => 29,
        }
    }

    /// Whether the release's Node authorizer limits a kubelet's reads of Nodes and Pods to its
    /// own (`AuthorizeNodeWithSelectors`: from Kubernetes 1.32). Neither release has it, and
    /// release-4.12's daemon relies on that: its node writer lists every Node with the
    /// kubelet's kubeconfig (pkg/daemon/writer.go `newNodeWriter`).
    pub fn node_authorizer_selectors(self) -> bool {
        self.kubernetes_minor() >= 32
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile {0:?}: expected ocp-4.12 or ocp-4.16")]
pub struct UnknownProfile(pub String);

impl FromStr for Profile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ocp-4.12" => Ok(Profile::Ocp412),
            "ocp-4.16" => Ok(Profile::Ocp416),
            other => Err(UnknownProfile(other.to_string())),
        }
    }
}
