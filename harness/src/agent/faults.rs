//! Where the file-level and pool mutants break the reference daemon: the one function every
//! node file write goes through, the `apply-paused-pool-config` follower and the files lost
//! across a reboot. Each asks the daemon's mutant (`AgentEnv::mutant_is`); the catalogue of
//! mutants is `mutant`'s, and nothing here decides which exist.

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

/// The file whose writes the file-level mutants break.
const KUBELET_CA: &str = crate::mco::KUBELET_CA_PATH;

/// Write a node file as the daemon does (`write_file_atomically`), unless a file-level mutant
/// breaks the write of kubelet-ca.crt. The single place those faults live.
pub fn write_node_file(env: &AgentEnv, node_path: &str, data: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    let path = env.path(node_path);
    if node_path != KUBELET_CA {
        return super::common::write_file_atomically(&path, data, mode);
    }
    if env.mutant_is(Mutant::PartialWrite) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)?;
        let half = data.len() / 2;
        file.write_all(&data[..half])?;
        file.sync_all()?;
        // The rest comes a moment later, as from a writer that streams the file in place: a
        // reader of the file sees half a bundle in between.
        let rest = data[half..].to_vec();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            let _ = file.write_all(&rest).and_then(|()| file.sync_all());
        });
        return Ok(());
    }
    if env.mutant_is(Mutant::InPlaceWrite) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)?;
        file.write_all(data)?;
        return file
            .set_permissions(<std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(mode));
    }
    if env.mutant_is(Mutant::TempFileOutsideDirectory) {
        // The agent's own temp directory: on a real node the daemon's pod's, another
        // filesystem than the host's /etc (an embedded node's root is under /dev/shm).
        let tmp = std::env::temp_dir().join(format!(".kubelet-ca.crt.{}", uuid::Uuid::new_v4().simple()));
        super::common::write_file_atomically(&tmp, data, mode)?;
        let moved = match std::fs::rename(&tmp, &path) {
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => std::fs::copy(&tmp, &path).map(drop),
            other => other,
        };
        let _ = std::fs::remove_file(&tmp);
        return moved;
    }
    if env.mutant_is(Mutant::NoFsync) {
        // Upstream's steps (a temporary file in the same directory, chmod, write, close,
        // rename) less the fsync: a process kill cannot tell, a power loss can.
        let dir = path
            .parent()
            .ok_or_else(|| std::io::Error::other("no parent directory"))?;
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".kubelet-ca.crt.{}", uuid::Uuid::new_v4().simple()));
        let mut file = std::fs::File::create(&tmp)?;
        file.set_permissions(<std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(mode))?;
        file.write_all(data)?;
        drop(file);
        return std::fs::rename(&tmp, &path);
    }
    let first_only;
    let data = if env.mutant_is(Mutant::FirstCertificateOnly) {
        let text = String::from_utf8_lossy(data);
        let end = "-----END CERTIFICATE-----";
        first_only = match text.find(end) {
            Some(i) => format!("{}\n", &text[..i + end.len()]),
            None => text.into_owned(),
        };
        first_only.as_bytes()
    } else {
        data
    };
    let mode = if env.mutant_is(Mutant::WrongMode) {
        0o600
    } else {
        mode
    };
    super::common::write_file_atomically(&path, data, mode)?;
    if env.mutant_is(Mutant::WrongOwner) {
        std::os::unix::fs::chown(&path, Some(65534), Some(65534))?;
    }
    Ok(())
}

/// The `apply-paused-pool-config` mutant: the node's own pool's newest rendered config becomes
/// its desiredConfig, paused pool or not (upstream leaves desiredConfig to the controller,
/// which holds a paused pool's nodes back).
pub(super) async fn follow_pool_config(env: &AgentEnv) {
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
pub(super) async fn lose_files(env: &AgentEnv, config: &str) {
    let Ok(mc) = machine_configs(&env.client).get(config).await else {
        return;
    };
    if let Ok(spec) = MachineConfigSpec::of(&mc.data) {
        for file in spec.files() {
            let _ = std::fs::remove_file(env.path(&file.path));
        }
    }
}
