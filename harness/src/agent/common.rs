//! What both profiles' daemons share: the MachineConfig diff and its upstream log form, the set
//! of changed files, the post-config action as a pure function over MCO's file tables, and
//! writing a file atomically the way MCO's `writeFileAtomically` does
//! (mco-source.md §1, §2; MCO `pkg/daemon/update.go`, `file_writers.go`).

use crate::mco::machine_config::MachineConfigSpec;
pub use crate::mco::machine_config::changed_files;
use crate::profile::{ActionPrecedence, Profile};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// `/run/machine-config-daemon-force`: forces a reboot-style update and skips drift checks.
pub const FORCE_FILE: &str = "/run/machine-config-daemon-force";
pub use crate::mco::CURRENT_CONFIG_FILE;
/// Where a rebooting update leaves the config it is moving to.
pub const PENDING_CONFIG_FILE: &str = "/etc/machine-config-daemon/pending-config";

/// Which parts of two MachineConfigs differ (`newMachineConfigDiff`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MachineConfigDiff {
    pub os_update: bool,
    pub kargs: bool,
    pub fips: bool,
    pub passwd: bool,
    pub files: bool,
    pub units: bool,
    pub kernel_type: bool,
    pub extensions: bool,
}

impl std::fmt::Display for MachineConfigDiff {
    /// Go's `%+v` of a pointer to the upstream struct, the form `Starting update` logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "&{{osUpdate:{} kargs:{} fips:{} passwd:{} files:{} units:{} kernelType:{} extensions:{}}}",
            self.os_update,
            self.kargs,
            self.fips,
            self.passwd,
            self.files,
            self.units,
            self.kernel_type,
            self.extensions
        )
    }
}

/// Compare two MachineConfig specs.
pub fn diff(old: &MachineConfigSpec, new: &MachineConfigSpec) -> MachineConfigDiff {
    let differs_nonempty = |a: &[String], b: &[String]| !(a.is_empty() && b.is_empty()) && a != b;
    let kernel = |k: &str| if k == "realtime" { "realtime" } else { "default" };
    MachineConfigDiff {
        os_update: old.os_image_url != new.os_image_url,
        kargs: differs_nonempty(&old.kernel_arguments, &new.kernel_arguments),
        fips: old.fips != new.fips,
        passwd: old.config.passwd != new.config.passwd,
        files: old.files() != new.files(),
        units: old.units() != new.units(),
        kernel_type: kernel(&old.kernel_type) != kernel(&new.kernel_type),
        extensions: differs_nonempty(&old.extensions, &new.extensions),
    }
}

/// What the daemon does after writing a config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PostConfigAction {
    None,
    ReloadCrio,
    RestartCrio,
    Reboot,
}

/// Files that need no action (both profiles): the kubelet CA and the global pull secret.
const NONE_FILES: &[&str] = &["/etc/kubernetes/kubelet-ca.crt", "/var/lib/kubelet/config.json"];
/// Files after which CRI-O reloads its config.
const RELOAD_CRIO_FILES: &[&str] = &[
    "/etc/containers/registries.conf",
    "/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
    "/etc/containers/policy.json",
];

fn in_dir(path: &str, dirs: &[&str]) -> bool {
    dirs.iter().any(|d| Path::new(path).starts_with(d))
}

/// The action for a set of changed files, in the order given (`calculatePostConfigChangeAction
/// FromFileDiffs` on 4.12 and 4.14, `...FromMCDiffs` on 4.16): any file outside the tables
/// reboots; a file that needs no action changes nothing; between a reload and a restart the
/// release's precedence decides (on 4.12 and 4.14 the last file, on 4.16 the restart).
pub fn post_config_action_for_files(profile: Profile, changed: &[&str]) -> PostConfigAction {
    let table = profile.traits().post_config;
    let mut action = PostConfigAction::None;
    for path in changed {
        let this = if NONE_FILES.contains(path) || table.none_files.contains(path) {
            PostConfigAction::None
        } else if RELOAD_CRIO_FILES.contains(path) {
            PostConfigAction::ReloadCrio
        } else if table.restart_crio_files.contains(path) {
            PostConfigAction::RestartCrio
        } else if in_dir(path, table.none_dirs) {
            PostConfigAction::None
        } else if in_dir(path, table.reload_crio_dirs) {
            PostConfigAction::ReloadCrio
        } else {
            return PostConfigAction::Reboot;
        };
        action = match (this, table.precedence) {
            (PostConfigAction::None, _) => action,
            (_, ActionPrecedence::LastWins) => this,
            (_, ActionPrecedence::RestartBeatsReload) => action.max(this),
        };
    }
    action
}

/// The whole decision (`calculatePostConfigChangeAction`): the force file, then OS, kernel
/// arguments, FIPS, units, kernel type or extensions, then the files. Passwd (ssh keys) never
/// reboots.
pub fn post_config_action(
    profile: Profile,
    diff: &MachineConfigDiff,
    changed: &[&str],
    force_file: bool,
) -> PostConfigAction {
    if force_file
        || diff.os_update
        || diff.kargs
        || diff.fips
        || diff.units
        || diff.kernel_type
        || diff.extensions
    {
        return PostConfigAction::Reboot;
    }
    post_config_action_for_files(profile, changed)
}

/// Write `data` to `path` as MCO does: a temp file in the same directory, its mode set before
/// the data, fsync, then a rename over the target (so readers and inotify see one replace).
pub fn write_file_atomically(path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    write_file_atomically_as(path, data, mode, None)
}

/// [`write_file_atomically`], the temp file given to `owner` (uid, gid) before the rename, as
/// upstream's `writeFileAtomically` does with the uid and gid it is given.
pub fn write_file_atomically_as(
    path: &Path,
    data: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent directory"))?;
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}", uuid::Uuid::new_v4().simple()));
    let mut file = std::fs::File::create(&tmp)?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(&file, Some(uid), Some(gid))?;
    }
    file.write_all(data)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use PostConfigAction::*;
    use serde_json::json;

    /// As MCO's TestCalculatePostConfigChangeAction, one row per case: 4.12, 4.14, 4.16.
    #[test]
    fn post_config_actions_by_file() {
        let user_ca = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt";
        let pull_secret = "/etc/mco/internal-registry-pull-secret.json";
        let policy = "/etc/containers/policy.json";
        type Row<'a> = (&'a [&'a str], [PostConfigAction; 3]);
        let cases: &[Row] = &[
            (&["/etc/kubernetes/kubelet-ca.crt"], [None, None, None]),
            (&["/var/lib/kubelet/config.json"], [None, None, None]),
            (&[pull_secret], [Reboot, None, Reboot]),
            (
                &["/etc/containers/registries.conf"],
                [ReloadCrio, ReloadCrio, ReloadCrio],
            ),
            (
                &[policy, "/var/lib/kubelet/config.json"],
                [ReloadCrio, ReloadCrio, ReloadCrio],
            ),
            (
                &["/etc/machine-config-daemon/no-reboot/containers-gpg.pub"],
                [ReloadCrio, ReloadCrio, ReloadCrio],
            ),
            (&[user_ca], [Reboot, RestartCrio, RestartCrio]),
            // 4.14: the file seen last decides (upstream's order is Go map order); 4.16: restart.
            (&[user_ca, policy], [Reboot, ReloadCrio, RestartCrio]),
            (&[policy, user_ca], [Reboot, RestartCrio, RestartCrio]),
            (
                &["/etc/containers/registries.d/x.yaml"],
                [Reboot, Reboot, ReloadCrio],
            ),
            (&["/etc/nmstate/openshift/cluster.yml"], [Reboot, Reboot, None]),
            (
                &["/etc/kubernetes/kubelet-ca.crt", "/etc/some/other"],
                [Reboot, Reboot, Reboot],
            ),
            (&[], [None, None, None]),
        ];
        for (files, expected) in cases {
            for (profile, want) in Profile::ALL.into_iter().zip(expected) {
                assert_eq!(
                    post_config_action_for_files(profile, files),
                    *want,
                    "{profile} {files:?}"
                );
            }
        }
    }

    #[test]
    fn reboot_triggers_beyond_files() {
        let files_only = MachineConfigDiff {
            files: true,
            ..Default::default()
        };
        assert_eq!(
            post_config_action(
                Profile::Ocp412,
                &files_only,
                &["/etc/kubernetes/kubelet-ca.crt"],
                false
            ),
            None
        );
        assert_eq!(
            post_config_action(
                Profile::Ocp412,
                &files_only,
                &["/etc/kubernetes/kubelet-ca.crt"],
                true
            ),
            Reboot
        );
        for d in [
            MachineConfigDiff {
                os_update: true,
                ..Default::default()
            },
            MachineConfigDiff {
                kargs: true,
                ..Default::default()
            },
            MachineConfigDiff {
                units: true,
                ..Default::default()
            },
        ] {
            assert_eq!(post_config_action(Profile::Ocp416, &d, &[], false), Reboot, "{d}");
        }
        let ssh = MachineConfigDiff {
            passwd: true,
            ..Default::default()
        };
        assert_eq!(post_config_action(Profile::Ocp416, &ssh, &[], false), None);
    }

    #[test]
    fn diffs_and_their_upstream_log_form() {
        let file = |data: &str| json!({"path": "/etc/kubernetes/kubelet-ca.crt", "mode": 420, "contents": {"source": data}});
        let spec = |v: serde_json::Value| -> MachineConfigSpec { serde_json::from_value(v).unwrap() };
        let old = spec(
            json!({"config": {"storage": {"files": [file("data:,a")]}}, "osImageURL": "x", "kernelArguments": []}),
        );
        let new = spec(
            json!({"config": {"storage": {"files": [file("data:,b"), {"path": "/etc/new", "contents": {"source": "data:,"}}]}}, "osImageURL": "x"}),
        );
        let d = diff(&old, &new);
        assert_eq!(
            d.to_string(),
            "&{osUpdate:false kargs:false fips:false passwd:false files:true units:false kernelType:false extensions:false}"
        );
        assert_eq!(
            changed_files(&old, &new),
            ["/etc/kubernetes/kubelet-ca.crt", "/etc/new"]
        );
        assert!(changed_files(&old, &old).is_empty());
    }

    #[test]
    fn atomic_writes_replace_the_inode_with_the_mode_set() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etc/kubernetes/kubelet-ca.crt");
        write_file_atomically(&path, b"one", 0o644).unwrap();
        let first = std::fs::metadata(&path).unwrap().ino();
        write_file_atomically(&path, b"two", 0o600).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_ne!(meta.ino(), first, "a new inode, as a rename gives");
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}
