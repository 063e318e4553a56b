//! Mutants: the reference daemon one behaviour away from upstream, so the suite can prove its
//! own power (`mco-conformance self-test`). Each mutant breaks exactly one thing a vendor's
//! agent could get wrong; a mutant that no scenario rejects is a hole in the catalogue, and the
//! fix is a scenario, never a weaker mutant.
//!
//! A mutant runs as the in-process reference daemon with the fault switched on
//! (`AgentKind::Mutant`), or as `mco-reference-daemon --mutant NAME` on any node. It is laid
//! over the daemon through the fault hooks (`faults`), which the daemon's logic calls and which
//! answer as the reference does unless a mutant runs; the logic itself never names one. Nothing
//! here may be read by steps: they judge the agent from what a user observes, and must reject
//! each mutant on their own.

use crate::profile::Profile;

/// One broken behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mutant {
    PartialWrite,
    WrongMode,
    WrongOwner,
    FirstCertificateOnly,
    CloudCaIgnored,
    AnnotateBeforeWrite,
    NeverAnnotate,
    WrongResourceVersion,
    RestartKubeletOnCaChange,
    RebootOnCertificateChange,
    IgnoreServingCa,
    RestartForDeferredSigner,
    NoKubeletRebootstrap,
    KeepStaleRegistryCas,
    RegistryCaOutsideCertsD,
    PullSecretWrongSideWins,
    DriftNeverReported,
    DriftIgnoresUnits,
    ForceFileIgnored,
    ApplyPausedPoolConfig,
    LoseFilesAcrossReboot,
    RebootWithoutDrain,
    SlowSync,
    WriteChangedFilesOnly,
    LeastActionWins,
    FipsChangeApplied,
    DeleteStaleCertificates,
    InPlaceWrite,
    TempFileOutsideDirectory,
    NoFsync,
}

/// Every profile: the behaviour the mutant breaks is the same on each.
const EVERY: &[Profile] = &Profile::ALL;
const OCP_4_12: &[Profile] = &[Profile::Ocp412];
/// The releases whose render controller lets a config through that the daemon must refuse
/// (from 4.16 the render controller refuses it first: `Traits::render_checks_reconcilable`).
const DAEMON_REFUSES: &[Profile] = &[Profile::Ocp412, Profile::Ocp414];
/// The releases with a certificate writer: what the mutant breaks is in both writers.
const WRITER: &[Profile] = &[Profile::Ocp414, Profile::Ocp416];
/// 4.16 alone: the serving-CA/kubeconfig logic and the pull secret merge.
const OCP_4_16: &[Profile] = &[Profile::Ocp416];

/// A mutant's entry in the catalogue.
struct Spec {
    mutant: Mutant,
    /// The name on the command line and in the self-test table.
    name: &'static str,
    /// What the mutant does wrong, in a sentence.
    broken: &'static str,
    /// The profiles whose behaviour it breaks.
    profiles: &'static [Profile],
}

/// The catalogue, one entry per mutant in the enum's order (`CATALOGUE[m as usize]` is `m`'s:
/// checked when the crate compiles, as is its length).
const CATALOGUE: [Spec; Mutant::ALL.len()] = [
    Spec {
        mutant: Mutant::PartialWrite,
        name: "partial-write",
        broken: "writes kubelet-ca.crt in place, in two halves a moment apart, instead of renaming a complete file over it",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::WrongMode,
        name: "wrong-mode",
        broken: "writes kubelet-ca.crt with mode 0600",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::WrongOwner,
        name: "wrong-owner",
        broken: "leaves kubelet-ca.crt owned by nobody (65534:65534)",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::FirstCertificateOnly,
        name: "first-certificate-only",
        broken: "writes only the first certificate of the kubelet CA bundle",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::CloudCaIgnored,
        name: "cloud-ca-ignored",
        broken: "never writes the cloud provider CA from ControllerConfig",
        profiles: WRITER,
    },
    Spec {
        mutant: Mutant::AnnotateBeforeWrite,
        name: "annotate-before-write",
        broken: "sets lastSyncedControllerConfigResourceVersion before it writes the certificates",
        // On 4.14 no scenario sees the order: the one that rejects it on 4.16 is the
        // x509 re-bootstrap, which 4.14 lacks (its own self-test run let it survive).
        profiles: OCP_4_16,
    },
    Spec {
        mutant: Mutant::NeverAnnotate,
        name: "never-annotate",
        broken: "writes the certificates but never sets lastSyncedControllerConfigResourceVersion",
        profiles: WRITER,
    },
    Spec {
        mutant: Mutant::WrongResourceVersion,
        name: "wrong-resource-version",
        broken: "annotates the node with the ControllerConfig's resourceVersion minus one",
        profiles: WRITER,
    },
    Spec {
        mutant: Mutant::RestartKubeletOnCaChange,
        name: "restart-kubelet-on-ca-change",
        broken: "restarts the kubelet whenever kubelet-ca.crt changes",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::RebootOnCertificateChange,
        name: "reboot-on-certificate-change",
        broken: "reboots the node when kubelet-ca.crt changes",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::IgnoreServingCa,
        name: "ignore-serving-ca",
        broken: "ignores service-ca-rotate: never updates the kubeconfigs or restarts the kubelet for a new kube-apiserver serving CA",
        profiles: OCP_4_16,
    },
    Spec {
        mutant: Mutant::RestartForDeferredSigner,
        name: "restart-for-deferred-signer",
        broken: "restarts the kubelet even when every added serving CA is one upstream defers",
        profiles: OCP_4_16,
    },
    Spec {
        mutant: Mutant::NoKubeletRebootstrap,
        name: "no-kubelet-rebootstrap",
        broken: "never re-bootstraps the kubelet when an x509 error follows a deferred serving-CA change",
        profiles: OCP_4_16,
    },
    Spec {
        mutant: Mutant::KeepStaleRegistryCas,
        name: "keep-stale-registry-cas",
        broken: "keeps registry CA directories the ControllerConfig no longer lists",
        profiles: WRITER,
    },
    Spec {
        mutant: Mutant::RegistryCaOutsideCertsD,
        name: "registry-ca-outside-certs-d",
        broken: "writes registry CAs under /etc/docker/<name> instead of /etc/docker/certs.d/<name>",
        profiles: WRITER,
    },
    Spec {
        mutant: Mutant::PullSecretWrongSideWins,
        name: "pull-secret-wrong-side-wins",
        broken: "merges the internal registry pull secret with the ControllerConfig's entries winning over the mounted secret's",
        profiles: OCP_4_16,
    },
    Spec {
        mutant: Mutant::DriftNeverReported,
        name: "drift-never-reported",
        broken: "never checks the node's files against its config (no config drift monitor)",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::DriftIgnoresUnits,
        name: "drift-ignores-units",
        broken: "checks the node's files against its config but not its units' files or drop-ins",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::ForceFileIgnored,
        name: "force-file-ignored",
        broken: "ignores /run/machine-config-daemon-force",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::ApplyPausedPoolConfig,
        name: "apply-paused-pool-config",
        broken: "applies its pool's newest rendered config even while the pool is paused",
        profiles: OCP_4_12,
    },
    Spec {
        mutant: Mutant::LoseFilesAcrossReboot,
        name: "lose-files-across-reboot",
        broken: "after a reboot, the files written before it are gone (written where a reboot empties them)",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::RebootWithoutDrain,
        name: "reboot-without-drain",
        broken: "reboots for a config change without asking for a drain first",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::SlowSync,
        name: "slow-sync",
        broken: "acts on a ControllerConfig or Node change only after a 10-minute timer instead of on the watch event (its first sync at start aside), as an agent that polls would",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::WriteChangedFilesOnly,
        name: "write-changed-files-only",
        broken: "writes only the files whose contents a new config changes, not every file of the config",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::LeastActionWins,
        name: "least-action-wins",
        broken: "applies a config that changes several files with the least disruptive of their actions instead of the most",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::FipsChangeApplied,
        name: "fips-change-applied",
        broken: "applies a config whose FIPS mode differs from the node's kernel (with a reboot) instead of refusing it as unreconcilable",
        profiles: DAEMON_REFUSES,
    },
    Spec {
        mutant: Mutant::DeleteStaleCertificates,
        name: "delete-stale-certificates",
        broken: "deletes the certificate files a new config drops, as 4.12 did, instead of keeping them",
        profiles: WRITER,
    },
    Spec {
        mutant: Mutant::InPlaceWrite,
        name: "in-place-write",
        broken: "writes kubelet-ca.crt in place, truncating it and writing the new bundle in one write, instead of renaming a complete file over it",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::TempFileOutsideDirectory,
        name: "temp-file-outside-directory",
        broken: "writes kubelet-ca.crt to a temporary file in its own temp directory and renames it over the file, copying it in place when the rename fails across filesystems (EXDEV)",
        profiles: EVERY,
    },
    Spec {
        mutant: Mutant::NoFsync,
        name: "no-fsync",
        broken: "writes kubelet-ca.crt to a temporary file in its directory and renames it over the file without an fsync of the temporary file first",
        profiles: EVERY,
    },
];

const _: () = {
    let mut i = 0;
    while i < CATALOGUE.len() {
        assert!(CATALOGUE[i].mutant as usize == i && Mutant::ALL[i] as usize == i);
        i += 1;
    }
};

impl Mutant {
    pub const ALL: &'static [Mutant] = &[
        Mutant::PartialWrite,
        Mutant::WrongMode,
        Mutant::WrongOwner,
        Mutant::FirstCertificateOnly,
        Mutant::CloudCaIgnored,
        Mutant::AnnotateBeforeWrite,
        Mutant::NeverAnnotate,
        Mutant::WrongResourceVersion,
        Mutant::RestartKubeletOnCaChange,
        Mutant::RebootOnCertificateChange,
        Mutant::IgnoreServingCa,
        Mutant::RestartForDeferredSigner,
        Mutant::NoKubeletRebootstrap,
        Mutant::KeepStaleRegistryCas,
        Mutant::RegistryCaOutsideCertsD,
        Mutant::PullSecretWrongSideWins,
        Mutant::DriftNeverReported,
        Mutant::DriftIgnoresUnits,
        Mutant::ForceFileIgnored,
        Mutant::ApplyPausedPoolConfig,
        Mutant::LoseFilesAcrossReboot,
        Mutant::RebootWithoutDrain,
        Mutant::SlowSync,
        Mutant::WriteChangedFilesOnly,
        Mutant::LeastActionWins,
        Mutant::FipsChangeApplied,
        Mutant::DeleteStaleCertificates,
        Mutant::InPlaceWrite,
        Mutant::TempFileOutsideDirectory,
        Mutant::NoFsync,
    ];

    /// The name on the command line and in the self-test table.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// What the mutant does wrong, in a sentence.
    pub fn broken(self) -> &'static str {
        self.spec().broken
    }

    /// The profiles whose behaviour it breaks.
    pub fn profiles(self) -> &'static [Profile] {
        self.spec().profiles
    }

    fn spec(self) -> &'static Spec {
        &CATALOGUE[self as usize]
    }
}

impl std::fmt::Display for Mutant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mutant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mutant::ALL
            .iter()
            .copied()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown mutant {s:?}; the catalogue: {}",
                    Mutant::ALL
                        .iter()
                        .map(|m| m.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
}

/// How long the `slow-sync` mutant sits on every change after its first sync before acting on
/// it: a poller's period. Lateness is judged in the host's paced time (`crate::pace`), which
/// counts at least a fiftieth of wall time (`pace::MIN_SHARE`), so a timer longer than the 10 s
/// sync bound's fifty times is late however loaded the host is (two minutes would not be, at
/// the 5 % of its pace a 2-core host ran the suite at beside 16 CPU hogs).
pub const SLOW_SYNC_DELAY: std::time::Duration = std::time::Duration::from_secs(600);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse_back() {
        let mut names: Vec<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
        for m in Mutant::ALL {
            assert_eq!(m.name().parse::<Mutant>(), Ok(*m));
            assert!(!m.broken().is_empty() && !m.profiles().is_empty());
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Mutant::ALL.len());
        let err = "no-such".parse::<Mutant>().unwrap_err();
        assert!(err.contains("partial-write"), "{err}");
    }

    #[test]
    fn the_catalogue_covers_every_profile_with_at_least_sixteen() {
        assert!(Mutant::ALL.len() >= 16);
        for p in Profile::ALL {
            assert!(
                Mutant::ALL.iter().filter(|m| m.profiles().contains(&p)).count() >= 8,
                "{p}"
            );
        }
    }
}
