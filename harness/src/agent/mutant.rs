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
        self.spec().0
    }

    /// What the mutant does wrong, in a sentence.
    pub fn broken(self) -> &'static str {
        self.spec().1
    }

    /// The profiles whose behaviour it breaks.
    pub fn profiles(self) -> &'static [Profile] {
        self.spec().2
    }

    fn spec(self) -> (&'static str, &'static str, &'static [Profile]) {
        match self {
            Mutant::PartialWrite => (
                "partial-write",
                "writes kubelet-ca.crt in place, in two halves a moment apart, instead of renaming a complete file over it",
                EVERY,
            ),
            Mutant::WrongMode => ("wrong-mode", "writes kubelet-ca.crt with mode 0600", EVERY),
            Mutant::WrongOwner => (
                "wrong-owner",
                "leaves kubelet-ca.crt owned by nobody (65534:65534)",
                EVERY,
            ),
            Mutant::FirstCertificateOnly => (
                "first-certificate-only",
                "writes only the first certificate of the kubelet CA bundle",
                EVERY,
            ),
            Mutant::CloudCaIgnored => (
                "cloud-ca-ignored",
                "never writes the cloud provider CA from ControllerConfig",
                WRITER,
            ),
            Mutant::AnnotateBeforeWrite => (
                "annotate-before-write",
                "sets lastSyncedControllerConfigResourceVersion before it writes the certificates",
                // On 4.14 no scenario sees the order: the one that rejects it on 4.16 is the
                // x509 re-bootstrap, which 4.14 lacks (its own self-test run let it survive).
                OCP_4_16,
            ),
            Mutant::NeverAnnotate => (
                "never-annotate",
                "writes the certificates but never sets lastSyncedControllerConfigResourceVersion",
                WRITER,
            ),
            Mutant::WrongResourceVersion => (
                "wrong-resource-version",
                "annotates the node with the ControllerConfig's resourceVersion minus one",
                WRITER,
            ),
            Mutant::RestartKubeletOnCaChange => (
                "restart-kubelet-on-ca-change",
                "restarts the kubelet whenever kubelet-ca.crt changes",
                EVERY,
            ),
            Mutant::RebootOnCertificateChange => (
                "reboot-on-certificate-change",
                "reboots the node when kubelet-ca.crt changes",
                EVERY,
            ),
            Mutant::IgnoreServingCa => (
                "ignore-serving-ca",
                "ignores service-ca-rotate: never updates the kubeconfigs or restarts the kubelet for a new kube-apiserver serving CA",
                OCP_4_16,
            ),
            Mutant::RestartForDeferredSigner => (
                "restart-for-deferred-signer",
                "restarts the kubelet even when every added serving CA is one upstream defers",
                OCP_4_16,
            ),
            Mutant::NoKubeletRebootstrap => (
                "no-kubelet-rebootstrap",
                "never re-bootstraps the kubelet when an x509 error follows a deferred serving-CA change",
                OCP_4_16,
            ),
            Mutant::KeepStaleRegistryCas => (
                "keep-stale-registry-cas",
                "keeps registry CA directories the ControllerConfig no longer lists",
                WRITER,
            ),
            Mutant::RegistryCaOutsideCertsD => (
                "registry-ca-outside-certs-d",
                "writes registry CAs under /etc/docker/<name> instead of /etc/docker/certs.d/<name>",
                WRITER,
            ),
            Mutant::PullSecretWrongSideWins => (
                "pull-secret-wrong-side-wins",
                "merges the internal registry pull secret with the ControllerConfig's entries winning over the mounted secret's",
                OCP_4_16,
            ),
            Mutant::DriftNeverReported => (
                "drift-never-reported",
                "never checks the node's files against its config (no config drift monitor)",
                EVERY,
            ),
            Mutant::DriftIgnoresUnits => (
                "drift-ignores-units",
                "checks the node's files against its config but not its units' files or drop-ins",
                EVERY,
            ),
            Mutant::ForceFileIgnored => (
                "force-file-ignored",
                "ignores /run/machine-config-daemon-force",
                EVERY,
            ),
            Mutant::ApplyPausedPoolConfig => (
                "apply-paused-pool-config",
                "applies its pool's newest rendered config even while the pool is paused",
                OCP_4_12,
            ),
            Mutant::LoseFilesAcrossReboot => (
                "lose-files-across-reboot",
                "after a reboot, the files written before it are gone (written where a reboot empties them)",
                EVERY,
            ),
            Mutant::RebootWithoutDrain => (
                "reboot-without-drain",
                "reboots for a config change without asking for a drain first",
                EVERY,
            ),
            Mutant::SlowSync => (
                "slow-sync",
                "acts on a ControllerConfig or Node change only after a 10-minute timer instead of on the watch event (its first sync at start aside), as an agent that polls would",
                EVERY,
            ),
            Mutant::DeleteStaleCertificates => (
                "delete-stale-certificates",
                "deletes the certificate files a new config drops, as 4.12 did, instead of keeping them",
                WRITER,
            ),
            Mutant::WriteChangedFilesOnly => (
                "write-changed-files-only",
                "writes only the files whose contents a new config changes, not every file of the config",
                EVERY,
            ),
            Mutant::LeastActionWins => (
                "least-action-wins",
                "applies a config that changes several files with the least disruptive of their actions instead of the most",
                EVERY,
            ),
            Mutant::InPlaceWrite => (
                "in-place-write",
                "writes kubelet-ca.crt in place, truncating it and writing the new bundle in one write, instead of renaming a complete file over it",
                EVERY,
            ),
            Mutant::TempFileOutsideDirectory => (
                "temp-file-outside-directory",
                "writes kubelet-ca.crt to a temporary file in its own temp directory and renames it over the file, copying it in place when the rename fails across filesystems (EXDEV)",
                EVERY,
            ),
            Mutant::NoFsync => (
                "no-fsync",
                "writes kubelet-ca.crt to a temporary file in its directory and renames it over the file without an fsync of the temporary file first",
                EVERY,
            ),
            Mutant::FipsChangeApplied => (
                "fips-change-applied",
                "applies a config whose FIPS mode differs from the node's kernel (with a reboot) instead of refusing it as unreconcilable",
                DAEMON_REFUSES,
            ),
        }
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
