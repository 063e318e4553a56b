//! The config drift monitor (MCO `pkg/daemon/config_drift_monitor.go`, `on_disk_validation.go`,
//! `daemon.go onConfigDrift`, `getFilesToIgnore`; mco-source.md §6).
//!
//! While a node is Done, the daemon watches the directories of its current config's files and
//! units. A change to one of them runs the on-disk validation; a mismatch marks the node
//! Degraded with upstream's reason (`content mismatch for file "…"`, `mode mismatch for file:
//! …`). Files another writer owns are not checked: on 4.16 the certificate writer's CA files
//! and the internal registry pull secret; on 4.12 nothing, as kubelet-ca.crt is an ordinary
//! MachineConfig file there.
//!
//! Recovery is the daemon's: it keeps watching while Degraded, and when the files match again,
//! or `/run/machine-config-daemon-force` appears, it runs the update to the config it is on.

use super::AgentEnv;
use super::common::{FORCE_FILE, file_entry};
use crate::mco::KUBELET_CA_PATH;
use crate::profile::Profile;
use serde_json::Value;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tokio::sync::mpsc;

/// Where unit files live on the node.
pub const UNIT_DIR: &str = "/etc/systemd/system";

/// Files the drift check skips (`getFilesToIgnore`).
pub fn files_to_ignore(profile: Profile) -> &'static [&'static str] {
    match profile {
        Profile::Ocp412 => &[],
        Profile::Ocp416 => &[
            KUBELET_CA_PATH,
            "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem",
            "/etc/mco/internal-registry-pull-secret.json",
        ],
    }
}

/// What the config says a path on disk holds.
struct Expected {
    path: String,
    contents: Vec<u8>,
    mode: u32,
}

fn expected(profile: Profile, spec: &Value) -> Vec<Expected> {
    let ignore = files_to_ignore(profile);
    let files = spec["config"]["storage"]["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(file_entry)
        .filter(|(path, _, _)| !ignore.contains(&path.as_str()))
        .map(|(path, contents, mode)| Expected { path, contents, mode });
    let units = spec["config"]["systemd"]["units"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| {
            Some(Expected {
                path: format!("{UNIT_DIR}/{}", u["name"].as_str()?),
                contents: u["contents"].as_str()?.as_bytes().to_vec(),
                mode: 0o644,
            })
        });
    files.chain(units).collect()
}

/// The on-disk validation (`checkV3Files`, `checkV3Units`, `checkFileContentsAndMode`): the
/// first file whose mode or contents differ from the config, in upstream's words.
pub fn validate_on_disk(env: &AgentEnv, spec: &Value) -> Result<(), String> {
    for want in expected(env.profile, spec) {
        let path = env.path(&want.path);
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| format!("could not stat file {:?}: {e}", want.path))?;
        let mode = meta.permissions().mode() & 0o7777;
        if mode != want.mode || !meta.file_type().is_file() {
            return Err(format!(
                "mode mismatch for file: {:?}; expected: {}; received: {}",
                want.path,
                go_file_mode(want.mode, true),
                go_file_mode(mode, meta.file_type().is_file()),
            ));
        }
        let contents =
            std::fs::read(&path).map_err(|e| format!("could not read file {:?}: {e}", want.path))?;
        if contents != want.contents {
            return Err(format!("content mismatch for file {:?}", want.path));
        }
    }
    Ok(())
}

/// Go's `%[1]v/%[1]d/%#[1]o` of an `os.FileMode`: `-rw-r--r--/420/0644`.
fn go_file_mode(mode: u32, regular: bool) -> String {
    let mut text = String::from(if regular { "-" } else { "?" });
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 7;
        text.push(if bits & 4 != 0 { 'r' } else { '-' });
        text.push(if bits & 2 != 0 { 'w' } else { '-' });
        text.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    format!("{text}/{mode}/{mode:#o}").replace("0o", "0")
}

/// A running watch over one config's files and the force file.
pub struct DriftMonitor {
    _watcher: notify::RecommendedWatcher,
    events: mpsc::UnboundedReceiver<()>,
}

impl DriftMonitor {
    /// Watch the directories of `spec`'s tracked files that exist on disk (as upstream, which
    /// cannot watch a directory that is not there), and the force file's directory.
    pub fn start(env: &AgentEnv, spec: &Value) -> Result<DriftMonitor, String> {
        let mut tracked: BTreeSet<PathBuf> = expected(env.profile, spec)
            .iter()
            .map(|e| env.path(&e.path))
            .collect();
        tracked.insert(env.path(FORCE_FILE));
        let dirs: BTreeSet<PathBuf> = tracked
            .iter()
            .filter_map(|p| p.parent().map(Path::to_path_buf))
            .filter(|d| d.is_dir())
            .collect();
        let (tx, events) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            if event.paths.iter().any(|p| tracked.contains(p)) {
                let _ = tx.send(());
            }
        })
        .map_err(|e| format!("config drift monitor: {e}"))?;
        for dir in &dirs {
            notify::Watcher::watch(&mut watcher, dir, notify::RecursiveMode::NonRecursive)
                .map_err(|e| format!("config drift monitor: watching {}: {e}", dir.display()))?;
        }
        Ok(DriftMonitor {
            _watcher: watcher,
            events,
        })
    }

    /// The next change to a tracked path (a burst of events counts once).
    pub async fn changed(&mut self) {
        if self.events.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
        while self.events.try_recv().is_ok() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_modes_read_as_go_prints_them() {
        assert_eq!(go_file_mode(0o644, true), "-rw-r--r--/420/0644");
        assert_eq!(go_file_mode(0o600, true), "-rw-------/384/0600");
        assert_eq!(go_file_mode(0o755, true), "-rwxr-xr-x/493/0755");
    }

    #[test]
    fn only_4_16_leaves_the_certificate_files_alone() {
        assert!(files_to_ignore(Profile::Ocp412).is_empty());
        assert!(files_to_ignore(Profile::Ocp416).contains(&KUBELET_CA_PATH));
    }
}
