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
use super::common::FORCE_FILE;
use crate::mco::machine_config::MachineConfigSpec;
use crate::profile::Profile;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tokio::sync::mpsc;

pub use crate::mco::UNIT_DIR;

/// Files the drift check skips (`getFilesToIgnore`; the profile's `Traits::drift_ignores`).
pub fn files_to_ignore(profile: Profile) -> &'static [&'static str] {
    profile.traits().drift_ignores
}

/// What the config says a path on disk holds.
struct Expected {
    path: String,
    contents: Vec<u8>,
    mode: u32,
}

fn expected(profile: Profile, spec: &MachineConfigSpec) -> Vec<Expected> {
    let ignore = files_to_ignore(profile);
    let files = spec
        .files()
        .iter()
        .filter(|f| !ignore.contains(&f.path.as_str()))
        .map(|f| Expected {
            path: f.path.clone(),
            contents: f.data(),
            mode: f.mode_or_default(),
        });
    let units = spec
        .units()
        .iter()
        .filter(|u| !u.name.is_empty())
        .filter_map(|u| {
            Some(Expected {
                path: format!("{UNIT_DIR}/{}", u.name),
                contents: u.contents.as_ref()?.as_bytes().to_vec(),
                mode: 0o644,
            })
        });
    // Drop-ins with contents, as release-4.16 on_disk_validation.go checkV3Units checks them.
    let dropins = spec.units().iter().filter(|u| !u.name.is_empty()).flat_map(|u| {
        u.dropins().into_iter().filter_map(move |d| {
            Some(Expected {
                path: u.dropin_path(UNIT_DIR, &d),
                contents: d.contents.clone().filter(|c| !c.is_empty())?.into_bytes(),
                mode: 0o644,
            })
        })
    });
    files.chain(units).chain(dropins).collect()
}

/// The on-disk validation (`checkV3Files`, `checkV3Units`, `checkFileContentsAndMode`): the
/// first file whose mode or contents differ from the config, in upstream's words.
pub fn validate_on_disk(env: &AgentEnv, spec: &MachineConfigSpec) -> Result<(), String> {
    for want in expected(env.profile, spec)
        .into_iter()
        .filter(|w| env.faults().validates(&w.path))
    {
        let path = env.path(&want.path);
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| format!("could not stat file {:?}: {e}", want.path))?;
        // Upstream compares `fi.Mode()` with `os.FileMode(<the config's mode>)`: the one in Go's
        // bits, the other as the config wrote it.
        let mode = go_mode_of(meta.permissions().mode(), meta.file_type());
        if mode != want.mode {
            return Err(format!(
                "mode mismatch for file: {:?}; expected: {}; received: {}",
                want.path,
                go_file_mode(want.mode),
                go_file_mode(mode),
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

// Go's `os.FileMode` bits (`io/fs`), from the top: the letters `String()` prints for each.
const GO_MODE_LETTERS: &str = "dalTLDpSugct?";
const GO_MODE_DIR: u32 = 1 << 31;
const GO_MODE_SYMLINK: u32 = 1 << 27;
const GO_MODE_DEVICE: u32 = 1 << 26;
const GO_MODE_NAMED_PIPE: u32 = 1 << 25;
const GO_MODE_SOCKET: u32 = 1 << 24;
const GO_MODE_SETUID: u32 = 1 << 23;
const GO_MODE_SETGID: u32 = 1 << 22;
const GO_MODE_CHAR_DEVICE: u32 = 1 << 21;
const GO_MODE_STICKY: u32 = 1 << 20;

/// The `os.FileMode` Go's `Lstat` gives (`os/stat_linux.go`): the permission bits, and Go's
/// own bits, not Unix's, for setuid, setgid, sticky and the file's type.
fn go_mode_of(unix_mode: u32, kind: std::fs::FileType) -> u32 {
    use std::os::unix::fs::FileTypeExt;
    let mut mode = unix_mode & 0o777;
    for (unix, go) in [
        (0o4000, GO_MODE_SETUID),
        (0o2000, GO_MODE_SETGID),
        (0o1000, GO_MODE_STICKY),
    ] {
        if unix_mode & unix != 0 {
            mode |= go;
        }
    }
    mode | if kind.is_dir() {
        GO_MODE_DIR
    } else if kind.is_symlink() {
        GO_MODE_SYMLINK
    } else if kind.is_fifo() {
        GO_MODE_NAMED_PIPE
    } else if kind.is_socket() {
        GO_MODE_SOCKET
    } else if kind.is_char_device() {
        GO_MODE_DEVICE | GO_MODE_CHAR_DEVICE
    } else if kind.is_block_device() {
        GO_MODE_DEVICE
    } else {
        0
    }
}

/// Go's `%[1]v/%[1]d/%#[1]o` of an `os.FileMode`: `-rw-r--r--/420/0644`,
/// `drwxr-xr-x/2147484141/020000000755`.
fn go_file_mode(mode: u32) -> String {
    let mut text: String = GO_MODE_LETTERS
        .chars()
        .enumerate()
        .filter(|(i, _)| mode & (1 << (31 - i)) != 0)
        .map(|(_, letter)| letter)
        .collect();
    if text.is_empty() {
        text.push('-');
    }
    for (i, letter) in "rwxrwxrwx".chars().enumerate() {
        text.push(if mode & (1 << (8 - i)) != 0 { letter } else { '-' });
    }
    // `%#o` prints zero as `0`, anything else with one leading zero.
    let octal = if mode == 0 {
        "0".to_string()
    } else {
        format!("0{mode:o}")
    };
    format!("{text}/{mode}/{octal}")
}

/// A running watch over one config's files and the force file.
pub struct DriftMonitor {
    _watch: crate::node::dir_watch::DirWatch,
    events: mpsc::UnboundedReceiver<()>,
    /// Whether the daemon has said on the Node that it watches (`ConfigDriftMonitorStarted`):
    /// upstream's monitor runs only from then on, so only then does its stop say so too.
    pub(super) announced: bool,
}

impl DriftMonitor {
    /// Watch the directories of `spec`'s tracked files that exist on disk (as upstream, which
    /// cannot watch a directory that is not there), and the force file's directory.
    pub fn start(env: &AgentEnv, spec: &MachineConfigSpec) -> Result<DriftMonitor, String> {
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
        let dirs: Vec<PathBuf> = dirs.into_iter().collect();
        let watch = crate::node::dir_watch::watch_dirs(&dirs, move |event| {
            if event.paths.iter().any(|p| tracked.contains(p)) {
                let _ = tx.send(());
            }
        })
        .map_err(|e| format!("config drift monitor: {e}"))?;
        Ok(DriftMonitor {
            _watch: watch,
            events,
            announced: false,
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
        assert_eq!(go_file_mode(0o644), "-rw-r--r--/420/0644");
        assert_eq!(go_file_mode(0o600), "-rw-------/384/0600");
        assert_eq!(go_file_mode(0o755), "-rwxr-xr-x/493/0755");
        // A config's setuid mode as the config wrote it, and as Go's Lstat reads it back.
        assert_eq!(go_file_mode(0o4755), "-rwxr-xr-x/2541/04755");
        assert_eq!(
            go_file_mode(GO_MODE_SETUID | 0o755),
            "urwxr-xr-x/8389101/040000755"
        );
        assert_eq!(
            go_file_mode(GO_MODE_DIR | 0o755),
            "drwxr-xr-x/2147484141/020000000755"
        );
    }

    #[test]
    fn lstat_modes_map_to_go_bits() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o4755)).unwrap();
        let meta = std::fs::symlink_metadata(&file).unwrap();
        assert_eq!(
            go_mode_of(meta.permissions().mode(), meta.file_type()),
            GO_MODE_SETUID | 0o755
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o1644)).unwrap();
        let meta = std::fs::symlink_metadata(&file).unwrap();
        assert_eq!(
            go_mode_of(meta.permissions().mode(), meta.file_type()),
            GO_MODE_STICKY | 0o644
        );
        let meta = std::fs::symlink_metadata(dir.path()).unwrap();
        assert_eq!(
            go_mode_of(meta.permissions().mode(), meta.file_type()) & !0o777,
            GO_MODE_DIR
        );
        std::os::unix::fs::symlink(&file, dir.path().join("l")).unwrap();
        let meta = std::fs::symlink_metadata(dir.path().join("l")).unwrap();
        assert_eq!(
            go_mode_of(meta.permissions().mode(), meta.file_type()),
            GO_MODE_SYMLINK | 0o777
        );
    }

    #[test]
    fn only_4_16_leaves_the_certificate_files_alone() {
        use crate::mco::KUBELET_CA_PATH;
        assert!(files_to_ignore(Profile::Ocp412).is_empty());
        assert!(files_to_ignore(Profile::Ocp416).contains(&KUBELET_CA_PATH));
    }
}
