//! What each release does differently, as data: one [`Traits`] row per profile, each value read
//! from that release's upstream source (cited beside it). Code that behaves per release reads a
//! field here; nothing else matches on [`Profile`](super::Profile), so a new profile is a new
//! row and the compiler asks for every field of it.
//!
//! The rows: `OCP_4_12` (MCO release-4.12, library-go d932feccfc56 in KAS-O/KCM-O),
//! `OCP_4_14` (MCO release-4.14 at 00b2e0b1c, library-go 840298df1eee; every value with its
//! upstream lines in `docs/ocp-4.14.md`) and `OCP_4_16` (MCO release-4.16, library-go
//! f5bf38712dca).

use crate::mco::{
    CLOUD_CA_PATH, INTERNAL_REGISTRY_PULL_SECRET, KUBELET_CA_PATH, REGISTRY_CA_DIR, USER_CA_BUNDLE_PATH,
};
use std::path::Path;
use std::time::Duration;

/// Where the node's `/etc/kubernetes/kubelet-ca.crt` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeletCaSource {
    /// A file of the rendered MachineConfig (`templates/common/_base/files/kubelet-ca.yaml`): it
    /// reaches a node with a config update, which a paused pool holds back. The daemon has no
    /// certificate writer.
    RenderedConfig,
    /// The daemon's certificate writer writes it from ControllerConfig
    /// `kubeAPIServerServingCAData` whatever the pool's `paused` (`pkg/daemon/certificate_writer.go`)
    /// and annotates the Node with the resourceVersion it synced
    /// (`lastSyncedControllerConfigResourceVersion`); no template renders it.
    CertificateWriter(CertificateWriter),
}

/// Where the certificate writers of the releases that have one differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CertificateWriter {
    pub annotates: WriterAnnotates,
    pub missing_registry_ca_dir: MissingRegistryCaDir,
    /// The writer also writes `/etc/mco/internal-registry-pull-secret.json` from ControllerConfig
    /// `internalRegistryPullSecret`, merged with the node's mounted pull secrets (4.16); on 4.14
    /// the file is a template of the rendered config instead (not modelled: no scenario sets it).
    pub internal_registry_pull_secret: bool,
}

/// When the writer annotates the Node with the resourceVersion it synced and logs
/// `Certificate was synced from controllerconfig resourceVersion N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterAnnotates {
    /// Only after writing, when the node's annotation differed from the ControllerConfig's
    /// resourceVersion (release-4.14 certificate_writer.go:181-187, inside the `if`).
    WhenResourceVersionChanged,
    /// On every ControllerConfig event, written or not (release-4.16 certificate_writer.go:291-303).
    EveryEvent,
}

/// What the writer does with the image registry CAs when `/etc/docker/certs.d` does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingRegistryCaDir {
    /// The `ReadDir` error is ignored and `MkdirAll` creates the directories: the CAs are written
    /// (release-4.14 certificate_writer.go:139-142,163,173, from 7b4adcdb7).
    Created,
    /// Logged (`/etc/docker/certs.d does not exist yet`) and no registry CA is written
    /// (release-4.16 certificate_writer.go:247-249).
    WritesNoCa,
}

/// How the operator fills ControllerConfig `kubeAPIServerServingCAData` (`pkg/operator/sync.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeletCaBundleRule {
    /// Always `initial-kube-apiserver-server-ca` with the kube-apiserver-to-kubelet signer's
    /// client CA merged in (release-4.12 sync.go `syncRenderConfig`).
    InitialMerged,
    /// `kube-apiserver-client-ca` once the cluster's bootstrap is complete; before that as
    /// `InitialMerged` (release-4.16 sync.go:268-295).
    ClientCaOnceBootstrapped,
}

/// What the template controller's certificate controller (`updateControllerConfigCerts`) puts in
/// ControllerConfig `status.controllerCertificates`; the pools' `certExpirys` copy its dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControllerCertificates {
    /// No such controller (release-4.12).
    Absent,
    /// `{subject, signer, bundleFile}`: the dates were taken out by 1b2393504 "temporarily remove
    /// certificate date strings" (release-4.14 types.go:164-173), so `certExpirys` has no `expiry`.
    WithoutDates,
    /// With `notBefore`/`notAfter` (release-4.16), and `certExpirys` with `expiry`.
    WithDates,
}

/// Whether and how the operator assembles ControllerConfig `internalRegistryPullSecret`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryPullSecretAssembly {
    /// No such field (release-4.12).
    None,
    /// A `machine-os-puller` pull secret that does not read is skipped: release-4.14 sync.go:1605
    /// drops `MergeDockerConfigstoJSONMap`'s error.
    SkippingUnreadableSecrets,
    /// One that does not read fails the sync ("could not merge auths from secret …",
    /// release-4.16 sync.go:1955-1957).
    Strict,
}

/// What the machine-config controller publishes about the kubelet CA a pool's nodes hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PausedPoolSignal {
    /// The gauge `machine_config_controller_paused_pool_kubelet_ca`: the kubelet CA's expiry
    /// while the pool is paused with the CA pending (release-4.12 node_controller.go).
    PendingFileGauge,
    /// MachineConfigPool `status.certExpirys` from ControllerConfig `controllerCertificates`
    /// (release-4.16 node_controller.go); no gauge.
    CertExpirys,
}

/// The order library-go's `manageCABundleConfigMap` leaves a CA bundle in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleOrder {
    /// The current signer first (library-go d932feccfc56, vendored by 4.12's operators).
    NewestFirst,
    /// Sorted by raw certificate bytes (library-go f5bf38712dca, vendored by 4.16's).
    ByRawBytes,
}

/// How upstream's `logSystem` hands a message to `logger`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemLogQuoting {
    /// As it is (release-4.12 update.go:2158-2173).
    AsIs,
    /// Quoted with Go's `%q` (release-4.16 update.go:2620-2640).
    GoQuoted,
}

/// When an update writes the `core` user's SSH keys (`updateSSHKeys`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SshKeysWrite {
    /// On every update whose new config has users, changed or not (release-4.12
    /// update.go:581, :1852-1855; "Writing SSHKeys at %q", :1831).
    EveryUpdateWithUsers,
    /// Only when `passwd` changed, the keys of the new config's users even when there are none
    /// (release-4.14 update.go:532, release-4.16 :1206; "Writing SSH keys to %q").
    WhenPasswdChanged,
}

/// The post-config action table beyond the files every release shares
/// (`calculatePostConfigChangeActionFromFileDiffs` on 4.12 and 4.14, `...FromMCDiffs` on 4.16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostConfigTable {
    /// Files beyond the shared ones that need no action.
    pub none_files: &'static [&'static str],
    /// Files after which CRI-O restarts (the user CA bundle, after `update-ca-trust`).
    pub restart_crio_files: &'static [&'static str],
    /// Directories whose files need no action.
    pub none_dirs: &'static [&'static str],
    /// Directories whose files reload CRI-O.
    pub reload_crio_dirs: &'static [&'static str],
    pub precedence: ActionPrecedence,
}

/// Which of "reload crio" and "restart crio" a config that changes files of both gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionPrecedence {
    /// The file seen last decides (release-4.12 update.go:446-469, release-4.14 :343-371): upstream
    /// walks the changed files in Go map order, so a mixed change gets either action at random.
    LastWins,
    /// A restart is never overridden by a reload (release-4.16 update.go:593-597, 84ec414dd).
    RestartBeatsReload,
}

/// Which files the MachineConfig update flow leaves to the certificate writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateFiles {
    /// Files of a rendered config the update flow does not write (`writeFiles`'
    /// `skipCertificateWrite`).
    pub not_written_on_update: &'static [&'static str],
    /// Files the old config had and the new one lacks that stay on disk (`deleteStaleData`'s
    /// `certsToSkip`), and directories whose files stay (a path whose parent contains one).
    pub kept_when_stale: &'static [&'static str],
    pub kept_when_stale_under: &'static [&'static str],
}

impl UpdateFiles {
    /// Whether a file the new config drops stays on disk: a listed certificate, or a file whose
    /// directory contains a listed one (upstream: `strings.Contains(filepath.Dir(path), dir)`).
    pub fn keeps_when_stale(&self, path: &str) -> bool {
        self.kept_when_stale.contains(&path)
            || self.kept_when_stale_under.iter().any(|dir| {
                Path::new(path)
                    .parent()
                    .is_some_and(|parent| parent.to_string_lossy().contains(dir))
            })
    }
}

/// One release's behaviour where releases differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traits {
    /// The release the fake cluster reports: ClusterVersion `version`'s desired version and the
    /// version FeatureGate `cluster` lists its gates for. The upstream daemon reads the one to
    /// find the other when it runs without `--payload-version`.
    pub payload_version: &'static str,
    /// The Kubernetes minor version the release's kube-apiserver runs: the API server's own
    /// rules follow it where they changed since.
    pub kubernetes_minor: u32,
    pub kubelet_ca: KubeletCaSource,
    pub kubelet_ca_bundle: KubeletCaBundleRule,
    /// The operator keeps ControllerConfig `kubeconfig-data` and the `service-ca-rotate`
    /// annotation in step with the kube-apiserver serving CA, and the certificate writer
    /// rewrites the node's kubeconfigs from them.
    pub serving_ca_rotation: bool,
    /// After the hand-over the operator assembles ControllerConfig `internalRegistryPullSecret`
    /// from the `machine-os-puller` service account's image pull secrets and the cluster pull
    /// secret (`getImageRegistryPullSecrets`, release-4.14 sync.go:1560, release-4.16
    /// sync.go:1910); release-4.12 has no such field.
    pub registry_pull_secret_assembly: RegistryPullSecretAssembly,
    /// The operator copies the image registry CAs into ControllerConfig
    /// `imageRegistryBundleData` and `imageRegistryBundleUserData` (`cluster::registry_bundles`;
    /// release-4.14 sync.go:277-333, release-4.16 sync.go:289-345); release-4.12 has neither field.
    pub registry_ca_copy: bool,
    pub controller_certificates: ControllerCertificates,
    pub paused_pool_signal: PausedPoolSignal,
    pub bundle_order: BundleOrder,
    pub system_log: SystemLogQuoting,
    /// Files the daemon's drift check skips (`getFilesToIgnore`).
    pub drift_ignores: &'static [&'static str],
    pub post_config: PostConfigTable,
    /// How long the daemon, once after every start, holds its Node worker after its first sync
    /// past boot: a config given to the node in that time waits for it.
    pub start_hold: Duration,
    pub update_files: UpdateFiles,
    /// The render controller refuses a rendered config a node could not reconcile with the
    /// pool's current one (a FIPS change): RenderDegraded, nothing rendered, so no node is given
    /// it (release-4.16 render_controller.go:667-694, IsRenderedConfigReconcilable; release-4.12
    /// and 4.14 leave that to the daemon).
    pub render_checks_reconcilable: bool,
    /// What the node controller's pool conditions put before the rendered config's name ("All
    /// nodes are updating to …", "All nodes are updated with …", "Pool is paused; will not
    /// update to …"): nothing on 4.12 (release-4.12 node/status.go:84-99), `MachineConfig ` from
    /// 4.14 (`getPoolUpdateLine`, release-4.14 status.go:153-158, release-4.16 :326-331).
    pub pool_update_line_prefix: &'static str,
    /// Before its post-config action the daemon records the config it moves to as pending
    /// (`storePendingState`, in the journal) and raises the Node event `PendingConfig` "Written
    /// pending config <name>" (release-4.12 update.go:171-193 `finalizeBeforeReboot`); release-4.14
    /// dropped the pending state.
    pub pending_state: bool,
    pub ssh_keys: SshKeysWrite,
    pub server: ServerRule,
}

/// What the machine-config server serves a machine booting into a pool beyond the pool's config
/// (`pkg/server/cluster_server.go` `GetConfig`). Every release serves the pool's newest rendered
/// config once one of its nodes has it (`status.updatedMachineCount > 0`), and its status config
/// before that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerRule {
    /// The server writes kubelet-ca.crt and the cloud provider CA from ControllerConfig into what
    /// it serves, "in case the pool was paused" (release-4.14 cluster_server.go:137-138,
    /// release-4.16 :164-165, `addDataAndMaybeAppendToIgnition`).
    pub controller_config_cas: bool,
    /// The served `/etc/kubernetes/kubeconfig` trusts `kubeconfig-data`'s `ca-bundle.crt` when
    /// that ConfigMap exists, the bootstrap token's `ca.crt` otherwise (release-4.16
    /// cluster_server.go:144-155); before, always the token's.
    pub kubeconfig_ca_from_kubeconfig_data: bool,
}

impl Traits {
    /// The daemon's ControllerConfig certificate writer, where it runs one.
    pub fn certificate_writer(&self) -> Option<CertificateWriter> {
        match self.kubelet_ca {
            KubeletCaSource::RenderedConfig => None,
            KubeletCaSource::CertificateWriter(writer) => Some(writer),
        }
    }
}

/// MCO release-4.12: the kubelet CA bundle is an ordinary file of the rendered MachineConfig
/// (`00-<role>`), so it reaches the node only through a config update — which a paused pool
/// holds back. The update flow writes every file of the new config, including
/// `/etc/kubernetes/kubelet-ca.crt`; its post-config action is "none" and the kubelet reloads
/// the file itself. There is no certificate writer.
pub const OCP_4_12: Traits = Traits {
    payload_version: "4.12.0",
    kubernetes_minor: 25,
    // release-4.12 templates/common/_base/files/kubelet-ca.yaml; no certificate_writer.go.
    kubelet_ca: KubeletCaSource::RenderedConfig,
    kubelet_ca_bundle: KubeletCaBundleRule::InitialMerged,
    serving_ca_rotation: false,
    registry_pull_secret_assembly: RegistryPullSecretAssembly::None,
    registry_ca_copy: false,
    controller_certificates: ControllerCertificates::Absent,
    paused_pool_signal: PausedPoolSignal::PendingFileGauge,
    bundle_order: BundleOrder::NewestFirst,
    system_log: SystemLogQuoting::AsIs,
    // release-4.12: the drift check skips no file.
    drift_ignores: &[],
    post_config: PostConfigTable {
        none_files: &[],
        restart_crio_files: &[],
        none_dirs: &[],
        reload_crio_dirs: &[],
        precedence: ActionPrecedence::LastWins,
    },
    // release-4.12 daemon.go: no hold before the health listener.
    start_hold: Duration::ZERO,
    update_files: UpdateFiles {
        not_written_on_update: &[],
        // release-4.12 update.go:1299 deleteStaleData has no certificate skip list: a file the
        // new config drops is removed (or its original restored), certificates included.
        kept_when_stale: &[],
        kept_when_stale_under: &[],
    },
    render_checks_reconcilable: false,
    pool_update_line_prefix: "",
    pending_state: true,
    ssh_keys: SshKeysWrite::EveryUpdateWithUsers,
    // release-4.12 cluster_server.go GetConfig: the rendered config and the appenders only.
    server: ServerRule {
        controller_config_cas: false,
        kubeconfig_ca_from_kubeconfig_data: false,
    },
};

/// MCO release-4.14 (00b2e0b1c): between the two. The kubelet CA comes from a certificate
/// writer as on 4.16, but an early one (no serving-CA or kubeconfig logic, no pull secret, the
/// annotation only on a change, a missing certs.d created), the dates are out of
/// `controllerCertificates`, and the bundle order, `logSystem` and start are still 4.12's.
/// Every value: `docs/ocp-4.14.md` (section numbers below).
pub const OCP_4_14: Traits = Traits {
    payload_version: "4.14.0",
    // KAS-O release-4.14 go.mod:26 k8s.io/api v0.27.4 (§11).
    kubernetes_minor: 27,
    // §1: templates/common/_base/files has no kubelet-ca.yaml (deleted by PR #3787);
    // certificate_writer.go:77-192.
    kubelet_ca: KubeletCaSource::CertificateWriter(CertificateWriter {
        annotates: WriterAnnotates::WhenResourceVersionChanged,
        missing_registry_ca_dir: MissingRegistryCaDir::Created,
        internal_registry_pull_secret: false,
    }),
    // §2: sync.go:452-491, the bootstrap gate as 4.16.
    kubelet_ca_bundle: KubeletCaBundleRule::ClientCaOnceBootstrapped,
    // §1, §2: no service-ca-rotate, kubeconfig-data or lastObservedServerCA in release-4.14.
    serving_ca_rotation: false,
    registry_pull_secret_assembly: RegistryPullSecretAssembly::SkippingUnreadableSecrets,
    registry_ca_copy: true,
    // §3: template_controller.go:430-511, types.go:164-173.
    controller_certificates: ControllerCertificates::WithoutDates,
    // §3: no paused-pool gauge (removed by 28343237e in 4.13); status.go:46-58 certExpirys.
    paused_pool_signal: PausedPoolSignal::CertExpirys,
    // §7: library-go 840298df1eee cabundle.go:84-124, no sort.
    bundle_order: BundleOrder::NewestFirst,
    // §6: update.go:2007-2023.
    system_log: SystemLogQuoting::AsIs,
    // §4: on_disk_validation.go:167-173.
    drift_ignores: &[KUBELET_CA_PATH, CLOUD_CA_PATH],
    // §5: update.go:343-371 (the pull secret, a template on 4.14, needs no action).
    post_config: PostConfigTable {
        none_files: &[INTERNAL_REGISTRY_PULL_SECRET],
        restart_crio_files: &[USER_CA_BUNDLE_PATH],
        none_dirs: &[],
        reload_crio_dirs: &[],
        precedence: ActionPrecedence::LastWins,
    },
    // §10: no initializeHealthServer in release-4.14.
    start_hold: Duration::ZERO,
    // §13: file_writers.go:157-163; update.go:1278-1283, 1295-1297.
    update_files: UpdateFiles {
        not_written_on_update: &[KUBELET_CA_PATH],
        kept_when_stale: &[USER_CA_BUNDLE_PATH, KUBELET_CA_PATH, CLOUD_CA_PATH],
        kept_when_stale_under: &[REGISTRY_CA_DIR],
    },
    render_checks_reconcilable: false,
    pool_update_line_prefix: "MachineConfig ",
    pending_state: false,
    ssh_keys: SshKeysWrite::WhenPasswdChanged,
    // release-4.14 cluster_server.go:137-138; no kubeconfig-data.
    server: ServerRule {
        controller_config_cas: true,
        kubeconfig_ca_from_kubeconfig_data: false,
    },
};

/// MCO release-4.16: the daemon's certificate writer writes the CA files from ControllerConfig
/// whatever the pool's `paused`, with no new rendered config and no reboot; MachineConfig
/// updates leave those files alone.
pub const OCP_4_16: Traits = Traits {
    payload_version: "4.16.0",
    kubernetes_minor: 29,
    kubelet_ca: KubeletCaSource::CertificateWriter(CertificateWriter {
        annotates: WriterAnnotates::EveryEvent,
        missing_registry_ca_dir: MissingRegistryCaDir::WritesNoCa,
        internal_registry_pull_secret: true,
    }),
    kubelet_ca_bundle: KubeletCaBundleRule::ClientCaOnceBootstrapped,
    serving_ca_rotation: true,
    registry_pull_secret_assembly: RegistryPullSecretAssembly::Strict,
    registry_ca_copy: true,
    controller_certificates: ControllerCertificates::WithDates,
    paused_pool_signal: PausedPoolSignal::CertExpirys,
    bundle_order: BundleOrder::ByRawBytes,
    system_log: SystemLogQuoting::GoQuoted,
    // release-4.16 daemon.go getFilesToIgnore.
    drift_ignores: &[KUBELET_CA_PATH, CLOUD_CA_PATH, INTERNAL_REGISTRY_PULL_SECRET],
    // release-4.16 update.go:569-608 (mco-source.md §2): the pull secret is the writer's, in no
    // list.
    post_config: PostConfigTable {
        none_files: &[],
        restart_crio_files: &[USER_CA_BUNDLE_PATH],
        none_dirs: &["/etc/nmstate/openshift"],
        reload_crio_dirs: &["/etc/containers/registries.d"],
        precedence: ActionPrecedence::RestartBeatsReload,
    },
    // release-4.16 daemon.go:857-870 (`initializeHealthServer` after a minute).
    start_hold: Duration::from_secs(60),
    update_files: UpdateFiles {
        // release-4.16 file_writers.go:226-232: only kubelet-ca.crt is skipped.
        not_written_on_update: &[KUBELET_CA_PATH],
        // release-4.16 update.go:1869-1893: "need to skip these on upgrade if they are in a MC,
        // or else we will remove all certs!" — and any file under /etc/docker/certs.d.
        kept_when_stale: &[USER_CA_BUNDLE_PATH, KUBELET_CA_PATH, CLOUD_CA_PATH],
        kept_when_stale_under: &[REGISTRY_CA_DIR],
    },
    render_checks_reconcilable: true,
    pool_update_line_prefix: "MachineConfig ",
    pending_state: false,
    ssh_keys: SshKeysWrite::WhenPasswdChanged,
    // release-4.16 cluster_server.go:137-165.
    server: ServerRule {
        controller_config_cas: true,
        kubeconfig_ca_from_kubeconfig_data: true,
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_writers_releases_keep_certificates_a_new_config_drops() {
        let (v412, v414, v416) = (
            OCP_4_12.update_files,
            OCP_4_14.update_files,
            OCP_4_16.update_files,
        );
        for path in [
            USER_CA_BUNDLE_PATH,
            KUBELET_CA_PATH,
            "/etc/docker/certs.d/r.example/ca.crt",
        ] {
            assert!(!v412.keeps_when_stale(path), "{path}");
            assert!(v414.keeps_when_stale(path), "{path}");
            assert!(v416.keeps_when_stale(path), "{path}");
        }
        // "Contains", as upstream: a directory below one that holds the listed name.
        assert!(v416.keeps_when_stale("/var/etc/docker/certs.d/x/ca.crt"));
        assert!(!v416.keeps_when_stale("/etc/docker/ca.crt"));
        assert!(!v416.keeps_when_stale("/etc/mco-conformance/example.conf"));
    }

    #[test]
    fn the_writer_runs_where_it_is_the_kubelet_cas_source() {
        assert!(OCP_4_12.certificate_writer().is_none());
        assert!(OCP_4_14.certificate_writer().is_some());
        assert!(OCP_4_16.certificate_writer().is_some());
    }

    /// The row and the templates fixture say the same about kubelet-ca.crt for every profile: a
    /// template renders it exactly where the row says the rendered config carries it, and the
    /// update flow leaves it to the writer (and the drift check skips it) exactly where the row
    /// says the writer owns it.
    #[test]
    fn every_row_agrees_with_the_templates_on_where_kubelet_ca_comes_from() {
        use crate::cluster::render::Templates;
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/templates.yaml");
        let templates = Templates::load(&file).unwrap();
        for profile in super::super::Profile::ALL {
            let traits = profile.traits();
            let templated = templates
                .files
                .iter()
                .any(|f| f.path == KUBELET_CA_PATH && f.profiles.iter().any(|p| p == profile.as_str()));
            let writer = traits.certificate_writer().is_some();
            assert_eq!(
                templated, !writer,
                "{profile}: templated {templated}, writer {writer}"
            );
            let left_to_writer = traits
                .update_files
                .not_written_on_update
                .contains(&KUBELET_CA_PATH);
            assert_eq!(left_to_writer, writer, "{profile}");
            assert_eq!(
                traits.drift_ignores.contains(&KUBELET_CA_PATH),
                writer,
                "{profile}"
            );
        }
    }
}
