//! The fault overlay: the hooks a mutant (`mutant`) is laid over the reference daemon through.
//! The daemon calls each hook at one point of its logic, unconditionally, and with no mutant each
//! answers what the reference does there (the value it was given, `true`, or nothing at all), so
//! the daemon's own modules read as upstream's and never name a mutant. Which mutant changes
//! which hook, and how, is this file's alone; which mutants exist is `mutant`'s.
//! `architecture::overlay` (a suite test) fails if another module of the daemon names one.

use super::common::PostConfigAction;
use super::{AgentEnv, Mutant};
use crate::mco::DESIRED_CONFIG;
use crate::mco::McoObject;
use crate::mco::api::{machine_config_pools, machine_configs};
use crate::mco::machine_config::MachineConfigSpec;
use crate::mco::pool::MachineConfigPool;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The hooks of one daemon (`AgentEnv::faults`).
pub struct Faults<'a> {
    env: &'a AgentEnv,
}

impl AgentEnv {
    /// The fault hooks this daemon calls: the reference's behaviour unless it runs as a mutant.
    pub fn faults(&self) -> Faults<'_> {
        Faults { env: self }
    }
}

/// What decides a post-config action, for the hook that may change it.
pub struct ActionInputs<'a> {
    pub profile: crate::profile::Profile,
    pub diff: &'a super::common::MachineConfigDiff,
    pub changed_files: &'a [&'a str],
    pub force: bool,
}

impl Faults<'_> {
    fn is(&self, mutant: Mutant) -> bool {
        self.env.mutant == Some(mutant)
    }

    /// Write a node file (every write of the daemon's goes through here).
    pub fn write_node_file(&self, node_path: &str, data: &[u8], mode: u32) -> std::io::Result<()> {
        write_node_file(self.env, node_path, data, mode)
    }

    /// Started beside the daemon's main loop, until `stop`: nothing for the reference.
    pub fn spawn_alongside(&self, stop: &CancellationToken) {
        if self.is(Mutant::ApplyPausedPoolConfig) {
            let env = self.env.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = stop.cancelled() => {}
                    _ = follow_pool_config(&env) => {}
                }
            });
        }
    }

    /// On a boot that completes `config`, before the daemon looks at its files: nothing for the
    /// reference.
    pub async fn on_boot_into(&self, config: &str) {
        if self.is(Mutant::LoseFilesAcrossReboot) {
            lose_files(self.env, config).await;
        }
    }

    /// Before the daemon starts a sync (an update, or a certificate sync after its first, with
    /// `after_first`): at once for the reference. `false` when `stop` came first.
    pub async fn before_sync(&self, stop: &CancellationToken, after_first: bool) -> bool {
        if !(self.is(Mutant::SlowSync) && after_first) {
            return true;
        }
        tokio::select! {
            _ = stop.cancelled() => false,
            _ = tokio::time::sleep(super::mutant::SLOW_SYNC_DELAY) => true,
        }
    }

    /// Whether the config drift monitor starts (always, for the reference).
    pub fn drift_monitor_starts(&self) -> bool {
        !self.is(Mutant::DriftNeverReported)
    }

    /// Whether the on-disk validation checks the file or unit at `path` (every one the config
    /// names, for the reference).
    pub fn validates(&self, path: &str) -> bool {
        !(self.is(Mutant::DriftIgnoresUnits) && path.starts_with(crate::mco::UNIT_DIR))
    }

    /// Whether an x509 error with a deferred kubelet restart re-bootstraps the kubelet (it does,
    /// for the reference).
    pub fn rebootstraps_kubelet(&self) -> bool {
        !self.is(Mutant::NoKubeletRebootstrap)
    }

    /// Whether an update writes a file of the config whose contents on disk are already the
    /// config's (the reference writes every file).
    pub fn writes_unchanged(&self, node_path: &str, data: &[u8]) -> bool {
        !(self.is(Mutant::WriteChangedFilesOnly)
            && std::fs::read(self.env.path(node_path)).ok().as_deref() == Some(data))
    }

    /// Whether a file the old config had and the new one lacks stays on disk: `keeps`, the
    /// reference's answer, unless a mutant deletes it anyway.
    pub fn keeps_stale(&self, keeps: bool) -> bool {
        keeps && !self.is(Mutant::DeleteStaleCertificates)
    }

    /// Whether `/run/machine-config-daemon-force`, `present`, is heeded (it is, for the
    /// reference).
    pub fn force_file(&self, present: bool) -> bool {
        present && !self.is(Mutant::ForceFileIgnored)
    }

    /// Whether an update checks the node's FIPS mode against the config (it does, for the
    /// reference).
    pub fn checks_fips(&self) -> bool {
        !self.is(Mutant::FipsChangeApplied)
    }

    /// The post-config action an update takes: `action`, the reference's, unless a mutant
    /// picks another from what decided it.
    pub fn post_config_action(&self, action: PostConfigAction, inputs: &ActionInputs) -> PostConfigAction {
        use super::common::{post_config_action, post_config_action_for_files};
        let mut action = action;
        if self.is(Mutant::LeastActionWins)
            && post_config_action(inputs.profile, inputs.diff, &[], inputs.force) != PostConfigAction::Reboot
            && let Some(least) = inputs
                .changed_files
                .iter()
                .map(|p| post_config_action_for_files(inputs.profile, &[p]))
                .min()
        {
            action = least;
        }
        if self.is(Mutant::RebootOnCertificateChange)
            && inputs.changed_files.contains(&crate::mco::KUBELET_CA_PATH)
        {
            action = PostConfigAction::Reboot;
        }
        action
    }

    /// Whether a reboot is preceded by a cordon and drain (it is, for the reference).
    pub fn drains_before_reboot(&self) -> bool {
        !self.is(Mutant::RebootWithoutDrain)
    }

    /// Whether the certificate writer writes the file it fills from the ControllerConfig's
    /// `field` (every one, for the reference).
    pub fn syncs_field(&self, field: &str) -> bool {
        !(self.is(Mutant::CloudCaIgnored) && field == "cloudProviderCAData")
    }

    /// Whether a requested serving-CA rotation is acted on (it is, for the reference).
    pub fn rotates_serving_ca(&self) -> bool {
        !self.is(Mutant::IgnoreServingCa)
    }

    /// Whether the kubelet's restart for a new serving CA is deferred: `deferred`, the
    /// reference's answer, unless a mutant restarts it anyway.
    pub fn defers_kubelet_restart(&self, deferred: bool) -> bool {
        deferred && !self.is(Mutant::RestartForDeferredSigner)
    }

    /// Whether the sync annotations are set before the certificates are written (the reference
    /// sets them after).
    pub fn annotates_before_writing(&self) -> bool {
        self.is(Mutant::AnnotateBeforeWrite)
    }

    /// The resourceVersion the node is annotated as synced with: `rv`, or none at all.
    pub fn synced_resource_version(&self, rv: &str) -> Option<String> {
        if self.is(Mutant::NeverAnnotate) {
            return None;
        }
        match rv.parse::<u64>() {
            Ok(n) if self.is(Mutant::WrongResourceVersion) => Some(n.saturating_sub(1).to_string()),
            _ => Some(rv.to_string()),
        }
    }

    /// Whether a later pull secret's entry for a registry replaces an earlier one's (it does,
    /// for the reference).
    pub fn later_auth_wins(&self) -> bool {
        !self.is(Mutant::PullSecretWrongSideWins)
    }

    /// Whether a registry CA directory that no CA names any more is removed: `remove`, the
    /// reference's answer, unless a mutant keeps it.
    pub fn removes_stale_registry_ca(&self, remove: bool) -> bool {
        remove && !self.is(Mutant::KeepStaleRegistryCas)
    }

    /// The node path a registry CA is written to: `path`, for the reference.
    pub fn registry_ca_path(&self, path: String) -> String {
        match path.strip_prefix("/etc/docker/certs.d/") {
            Some(rest) if self.is(Mutant::RegistryCaOutsideCertsD) => format!("/etc/docker/{rest}"),
            _ => path,
        }
    }

    /// What kubelet-ca.crt holds before the daemon writes files, where a hook after the writes
    /// needs it: nothing, for the reference.
    pub fn kubelet_ca_before_writing(&self) -> Option<Option<Vec<u8>>> {
        (self.is(Mutant::RestartKubeletOnCaChange) || self.is(Mutant::RebootOnCertificateChange))
            .then(|| std::fs::read(self.env.path(crate::mco::KUBELET_CA_PATH)).ok())
    }

    /// After the certificate writer wrote its files, given what kubelet-ca.crt held before
    /// (`kubelet_ca_before_writing`): nothing, for the reference. The error is systemctl's.
    pub async fn after_certificates_written(&self, before: Option<Option<Vec<u8>>>) -> Result<(), String> {
        let Some(before) = before else { return Ok(()) };
        if before == std::fs::read(self.env.path(crate::mco::KUBELET_CA_PATH)).ok() {
            return Ok(());
        }
        if self.is(Mutant::RestartKubeletOnCaChange) {
            super::writer::systemctl(self.env, &["restart", "kubelet"]).await?;
        }
        if self.is(Mutant::RebootOnCertificateChange) {
            super::writer::systemctl(self.env, &["reboot"]).await?;
        }
        Ok(())
    }

    /// After an update wrote the config's files, `changed_files` among them: nothing, for the
    /// reference. The error is systemctl's.
    pub async fn after_update_files_written(&self, changed_files: &[&str]) -> Result<(), String> {
        if self.is(Mutant::RestartKubeletOnCaChange) && changed_files.contains(&crate::mco::KUBELET_CA_PATH) {
            super::writer::systemctl(self.env, &["restart", "kubelet"]).await?;
        }
        Ok(())
    }
}

/// The file whose writes the file-level mutants break.
const KUBELET_CA: &str = crate::mco::KUBELET_CA_PATH;

/// Write a node file as the daemon does (`write_file_atomically`), unless a file-level mutant
/// breaks the write of kubelet-ca.crt. The single place those faults live.
fn write_node_file(env: &AgentEnv, node_path: &str, data: &[u8], mode: u32) -> std::io::Result<()> {
    let path = env.path(node_path);
    let atomically = super::common::write_file_atomically;
    match env.mutant {
        _ if node_path != KUBELET_CA => atomically(&path, data, mode),
        Some(Mutant::PartialWrite) => write_in_two_halves(&path, data),
        Some(Mutant::InPlaceWrite) => write_in_place(&path, data, mode),
        Some(Mutant::TempFileOutsideDirectory) => write_through_temp_dir(&path, data, mode),
        Some(Mutant::NoFsync) => write_without_fsync(&path, data, mode),
        Some(Mutant::FirstCertificateOnly) => atomically(&path, first_certificate(data).as_bytes(), mode),
        Some(Mutant::WrongMode) => atomically(&path, data, 0o600),
        Some(Mutant::WrongOwner) => {
            atomically(&path, data, mode)?;
            std::os::unix::fs::chown(&path, Some(65534), Some(65534))
        }
        _ => atomically(&path, data, mode),
    }
}

/// `path` opened for writing from its start, created (with its directory) if missing.
fn open_truncated(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(path)
}

/// `partial-write`: the first half now, the rest a moment later, as from a writer that streams
/// the file in place: a reader of the file sees half a bundle in between.
fn write_in_two_halves(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = open_truncated(path)?;
    let half = data.len() / 2;
    file.write_all(&data[..half])?;
    file.sync_all()?;
    let rest = data[half..].to_vec();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let _ = file.write_all(&rest).and_then(|()| file.sync_all());
    });
    Ok(())
}

/// `in-place-write`: one truncating write of the file itself.
fn write_in_place(path: &std::path::Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = open_truncated(path)?;
    file.write_all(data)?;
    file.set_permissions(<std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(mode))
}

/// `temp-file-outside-directory`: a complete file in the agent's own temp directory (on a real
/// node the daemon's pod's, another filesystem than the host's /etc; an embedded node's root is
/// under /dev/shm), renamed, or copied where a rename cannot cross, over the file.
fn write_through_temp_dir(path: &std::path::Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    let tmp = std::env::temp_dir().join(format!(".kubelet-ca.crt.{}", uuid::Uuid::new_v4().simple()));
    super::common::write_file_atomically(&tmp, data, mode)?;
    let moved = match std::fs::rename(&tmp, path) {
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => std::fs::copy(&tmp, path).map(drop),
        other => other,
    };
    let _ = std::fs::remove_file(&tmp);
    moved
}

/// `no-fsync`: upstream's steps (a temporary file in the same directory, chmod, write, close,
/// rename) less the fsync: a process kill cannot tell, a power loss can.
fn write_without_fsync(path: &std::path::Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent directory"))?;
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".kubelet-ca.crt.{}", uuid::Uuid::new_v4().simple()));
    let mut file = std::fs::File::create(&tmp)?;
    file.set_permissions(<std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(mode))?;
    file.write_all(data)?;
    drop(file);
    std::fs::rename(&tmp, path)
}

/// `first-certificate-only`: the bundle's first certificate, and nothing after it.
fn first_certificate(data: &[u8]) -> String {
    let text = String::from_utf8_lossy(data);
    let end = "-----END CERTIFICATE-----";
    match text.find(end) {
        Some(i) => format!("{}\n", &text[..i + end.len()]),
        None => text.into_owned(),
    }
}

/// The `apply-paused-pool-config` mutant: the node's own pool's newest rendered config becomes
/// its desiredConfig, paused pool or not (upstream leaves desiredConfig to the controller,
/// which holds a paused pool's nodes back).
async fn follow_pool_config(env: &AgentEnv) {
    let mut events = watcher(machine_config_pools(&env.client), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    while let Some(event) = events.next().await {
        let Ok(pool) = event else { continue };
        let Ok(node) = Api::<Node>::all(env.client.clone()).get(&env.node_name).await else {
            continue;
        };
        let role = format!(
            "node-role.kubernetes.io/{}",
            pool.metadata.name.as_deref().unwrap_or("")
        );
        if !node.metadata.labels.unwrap_or_default().contains_key(&role) {
            continue;
        }
        let target = MachineConfigPool::of(&pool)
            .map(|p| p.spec.configuration.name)
            .unwrap_or_default();
        let desired = node
            .metadata
            .annotations
            .unwrap_or_default()
            .get(DESIRED_CONFIG)
            .cloned()
            .unwrap_or_default();
        if !target.is_empty() && target != desired {
            let _ = env.annotate_node(json!({DESIRED_CONFIG: target})).await;
        }
    }
}

/// The `lose-files-across-reboot` mutant: the files of the config it rebooted into are gone.
async fn lose_files(env: &AgentEnv, config: &str) {
    let Ok(mc) = machine_configs(&env.client).get(config).await else {
        return;
    };
    if let Ok(spec) = MachineConfigSpec::of(&mc.data) {
        for file in spec.files() {
            let _ = std::fs::remove_file(env.path(&file.path));
        }
    }
}
