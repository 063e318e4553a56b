//! The generations of OpenShift whose behaviour the suite encodes. What each one does
//! differently is data, one row per profile in `traits`; this module is the one place a
//! profile is matched (its name, its row, its column of a per-profile data file).

mod traits;

pub use traits::{
    ActionPrecedence, BundleOrder, CertificateWriter, ControllerCertificates, KubeletCaBundleRule,
    KubeletCaSource, MissingRegistryCaDir, PausedPoolSignal, PostConfigTable, RegistryPullSecretAssembly,
    ServerRule, SshKeysWrite, SystemLogQuoting, Traits, UpdateFiles, WriterAnnotates,
};

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Profile {
    /// The CA bundle travels inside rendered MachineConfigs.
    Ocp412,
    /// An early certificate writer: the CA bundle from ControllerConfig, without 4.16's
    /// serving-CA and kubeconfig logic.
    Ocp414,
    /// The daemon writes the CA bundle straight from ControllerConfig.
    Ocp416,
}

impl Profile {
    pub const ALL: [Profile; 3] = [Profile::Ocp412, Profile::Ocp414, Profile::Ocp416];

    pub const fn as_str(self) -> &'static str {
        match self {
            Profile::Ocp412 => "ocp-4.12",
            Profile::Ocp414 => "ocp-4.14",
            Profile::Ocp416 => "ocp-4.16",
        }
    }

    /// This profile's column of a table a data file writes with one column per profile (the
    /// signer catalogue's `ocp-4.12:` / `ocp-4.14:` / `ocp-4.16:`): a new profile adds a
    /// parameter, and the compiler then asks every such table for its column.
    pub fn column<'a, T>(self, ocp_4_12: &'a T, ocp_4_14: &'a T, ocp_4_16: &'a T) -> &'a T {
        match self {
            Profile::Ocp412 => ocp_4_12,
            Profile::Ocp414 => ocp_4_14,
            Profile::Ocp416 => ocp_4_16,
        }
    }

    /// What this release does where releases differ.
    pub fn traits(self) -> &'static Traits {
        match self {
            Profile::Ocp412 => &traits::OCP_4_12,
            Profile::Ocp414 => &traits::OCP_4_14,
            Profile::Ocp416 => &traits::OCP_4_16,
        }
    }

    /// The release the fake cluster reports (`Traits::payload_version`).
    pub fn payload_version(self) -> &'static str {
        self.traits().payload_version
    }

    /// The Kubernetes minor version the release's kube-apiserver runs (4.12: 1.25, 4.14: 1.27,
    /// 4.16: 1.29).
    pub fn kubernetes_minor(self) -> u32 {
        self.traits().kubernetes_minor
    }

    /// Whether the release's Node authorizer limits a kubelet's reads of Nodes and Pods to its
    /// own (`AuthorizeNodeWithSelectors`: from Kubernetes 1.32). No profile's release has it, and
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
#[error("unknown profile {0:?}: expected one of {known}", known = Profile::ALL.map(Profile::as_str).join(", "))]
pub struct UnknownProfile(pub String);

impl FromStr for Profile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Profile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProfile(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_parses_from_its_name_and_nothing_else_does() {
        for p in Profile::ALL {
            assert_eq!(p.as_str().parse::<Profile>(), Ok(p));
        }
        let err = "ocp-4.13".parse::<Profile>().unwrap_err().to_string();
        assert_eq!(
            err,
            r#"unknown profile "ocp-4.13": expected one of ocp-4.12, ocp-4.14, ocp-4.16"#
        );
    }
}
