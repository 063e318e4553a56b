//! Putting a config on the node, the steps of the update flow (`update.rs`) that touch files
//! and units: every file of the new config written (release-4.16 file_writers.go `writeFiles`,
//! but for the files the profile leaves to the certificate writer), units written and enabled
//! through `systemctl`, and the files the new config drops deleted (`deleteStaleData`, but for
//! the certificates the profile keeps).

use super::AgentEnv;
use super::common::write_file_atomically;
use super::node_writer::{Failure, degraded};
use crate::mco::UNIT_DIR;
use crate::mco::machine_config::MachineConfigSpec;
use crate::profile::{SshKeysWrite, UpdateFiles};
use std::os::unix::fs::PermissionsExt;

pub(super) async fn systemctl(env: &AgentEnv, args: &[&str]) -> Result<(), Failure> {
    let out = env.host.systemctl(args).await.map_err(degraded)?;
    if out.exit_code != 0 {
        return Err(degraded(format!(
            "systemctl {}: exit {}: {}",
            args.join(" "),
            out.exit_code,
            out.stderr.trim()
        )));
    }
    Ok(())
}

pub(super) fn write_files(
    env: &AgentEnv,
    behaviour: UpdateFiles,
    new: &MachineConfigSpec,
) -> Result<(), Failure> {
    for file in new.files() {
        let (path, data, mode) = (&file.path, file.data(), file.mode_or_default());
        if behaviour.not_written_on_update.contains(&path.as_str()) {
            continue;
        }
        if !env.faults().writes_unchanged(path, &data) {
            continue;
        }
        env.log(&format!("Writing file {path:?}"));
        env.faults()
            .write_node_file(path, &data, mode)
            .map_err(|e| degraded(format!("writing {path}: {e}")))?;
    }
    Ok(())
}

pub(super) async fn write_units(env: &AgentEnv, new: &MachineConfigSpec) -> Result<(), Failure> {
    let mut enabled = Vec::new();
    for unit in new.units() {
        let name = unit.name.as_str();
        // Drop-ins first: written when they have contents, removed when not (release-4.16
        // file_writers.go:189-219 writeDropins).
        for dropin in unit.dropins() {
            let path = env.path(&unit.dropin_path(UNIT_DIR, &dropin));
            match dropin.contents.as_deref().filter(|c| !c.is_empty()) {
                Some(contents) => {
                    env.log(&format!("Writing systemd unit dropin {:?}", dropin.name));
                    write_file_atomically(&path, contents.as_bytes(), 0o644).map_err(degraded)?;
                }
                None => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        if let Some(contents) = unit.contents.as_deref().filter(|c| !c.is_empty()) {
            env.log(&format!("Writing systemd unit {name:?}"));
            // An enabled unit is disabled before it is rewritten, as its WantedBy= may change;
            // the enable below puts it back as the config says (OCPBUGS-33694: release-4.12
            // update.go:1600-1612, release-4.14 file_writers.go:233-241, release-4.16 :302-310).
            let state = env
                .host
                .systemctl(&["is-enabled", name])
                .await
                .map_err(degraded)?;
            if state.exit_code == 0 && state.stdout.trim() == "enabled" {
                env.log(&format!("Disabling systemd unit {name} before re-writing it"));
                systemctl(env, &["disable", name]).await?;
            }
            write_file_atomically(
                &env.path(&format!("/etc/systemd/system/{name}")),
                contents.as_bytes(),
                0o644,
            )
            .map_err(degraded)?;
        }
        if unit.enabled == Some(true) {
            enabled.push(name.to_string());
        }
    }
    if !enabled.is_empty() {
        let mut args = vec!["enable"];
        args.extend(enabled.iter().map(String::as_str));
        systemctl(env, &args).await?;
        // Go's `%v` of a []string: `[a.service b.service]`.
        env.log(&format!("Enabled systemd units: [{}]", enabled.join(" ")));
    }
    Ok(())
}

/// Files the old config had and the new one drops, but for the profile's certificates.
pub(super) fn delete_stale_files(
    env: &AgentEnv,
    behaviour: UpdateFiles,
    old: &MachineConfigSpec,
    new: &MachineConfigSpec,
) {
    for path in old
        .files()
        .iter()
        .map(|f| &f.path)
        .filter(|p| new.file(p).is_none())
    {
        if env.faults().keeps_stale(behaviour.keeps_when_stale(path)) {
            continue;
        }
        env.log(&format!("Deleting stale data: {path}"));
        let _ = std::fs::remove_file(env.path(path));
    }
}

/// Where the daemon keeps the `core` user's SSH keys (upstream's `coreUserSSHPath`; keys are
/// written for `core` only, whatever users the config names).
const CORE_SSH_DIR: &str = "/home/core/.ssh";

/// The `core` user's SSH keys (`updateSSHKeys` and `atomicallyWriteSSHKey`: release-4.12
/// update.go:1800-1915, release-4.16 :2180-2360): every key of every user of the new config,
/// each followed by a newline, written atomically to `authorized_keys` under
/// `/home/core/.ssh` (`authorized_keys.d/ignition` on RHEL 9, Fedora and CentOS Stream CoreOS),
/// mode 0600, owned by `core`, its directories made 0700 by `core` when missing. A node with
/// no `core` user is left alone. When, is the profile's (`SshKeysWrite`).
pub(super) fn write_ssh_keys(
    env: &AgentEnv,
    new: &MachineConfigSpec,
    passwd_changed: bool,
) -> Result<(), Failure> {
    let users: Vec<serde_json::Value> = new
        .config
        .passwd
        .as_ref()
        .and_then(|p| p.get("users"))
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    let rule = env.profile.traits().ssh_keys;
    match rule {
        SshKeysWrite::EveryUpdateWithUsers if users.is_empty() => return Ok(()),
        SshKeysWrite::WhenPasswdChanged if !passwd_changed => return Ok(()),
        _ => {}
    }
    let Some((uid, gid)) = core_user(env) else {
        env.log("core user does not exist, and creating users is not supported, so ignoring configuration specified for core user");
        return Ok(());
    };
    let keys: String = users
        .iter()
        .filter_map(|u| u.get("sshAuthorizedKeys").and_then(serde_json::Value::as_array))
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .map(|k| format!("{k}\n"))
        .collect();
    let path = if new_ssh_key_path(env) {
        format!("{CORE_SSH_DIR}/authorized_keys.d/ignition")
    } else {
        format!("{CORE_SSH_DIR}/authorized_keys")
    };
    env.log(&match rule {
        SshKeysWrite::EveryUpdateWithUsers => format!("Writing SSHKeys at {path:?}"),
        SshKeysWrite::WhenPasswdChanged => format!("Writing SSH keys to {path:?}"),
    });
    // The directories as `runuser -u core -- mkdir -m 0700 -p` makes them.
    let mut dir = std::path::PathBuf::from(CORE_SSH_DIR);
    let parent = std::path::Path::new(&path)
        .parent()
        .map(std::path::Path::to_path_buf);
    for level in [Some(dir.clone()), parent].into_iter().flatten() {
        dir = env.path(&level.to_string_lossy());
        if !dir.exists() {
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)))
                .and_then(|()| std::os::unix::fs::chown(&dir, Some(uid), Some(gid)))
                .map_err(|e| degraded(format!("creating {}: {e}", level.display())))?;
        }
    }
    super::common::write_file_atomically_as(&env.path(&path), keys.as_bytes(), 0o600, Some((uid, gid)))
        .map_err(|e| degraded(format!("writing {path}: {e}")))
}

/// The `core` user's uid and gid from the node's `/etc/passwd`.
fn core_user(env: &AgentEnv) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string(env.path("/etc/passwd")).ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 7 && fields[0] == "core")
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))?
    })
}

/// Whether the node's OS keeps SSH keys in `authorized_keys.d` (upstream's `useNewSSHKeyPath`:
/// RHEL 9 CoreOS, Fedora CoreOS, CentOS Stream CoreOS), read from `/etc/os-release` as
/// upstream's `osrelease` reads it.
fn new_ssh_key_path(env: &AgentEnv) -> bool {
    let text = std::fs::read_to_string(env.path("/etc/os-release")).unwrap_or_default();
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_string())
            .unwrap_or_default()
    };
    let id = field("ID");
    let version = Some(field("RHEL_VERSION"))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| field("VERSION_ID"));
    let el9 = (id == "rhcos" || id == "scos") && (version.starts_with("9.") || version == "9");
    let fcos = id == "fedora" && field("VARIANT_ID") == "coreos";
    el9 || fcos || id == "scos"
}
