//! Putting a config on the node, the steps of the update flow (`update.rs`) that touch files
//! and units: every file of the new config written (release-4.16 file_writers.go `writeFiles`,
//! but for the files the profile leaves to the certificate writer), units written and enabled
//! through `systemctl`, and the files the new config drops deleted (`deleteStaleData`, but for
//! the certificates the profile keeps).

use super::common::write_file_atomically;
use super::update::{Failure, degraded};
use super::{AgentEnv, Mutant};
use crate::mco::UNIT_DIR;
use crate::mco::machine_config::MachineConfigSpec;
use crate::profile::UpdateFiles;

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
        if env.mutant_is(Mutant::WriteChangedFilesOnly)
            && std::fs::read(env.path(path)).ok().as_ref() == Some(&data)
        {
            continue;
        }
        env.log(&format!("Writing file {path:?}"));
        super::mutant::write_node_file(env, path, &data, mode)
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
        if let Some(contents) = &unit.contents {
            env.log(&format!("Writing systemd unit {name:?}"));
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
        env.log(&format!("Enabled systemd units: {enabled:?}"));
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
        if behaviour.keeps_when_stale(path) && !env.mutant_is(Mutant::DeleteStaleCertificates) {
            continue;
        }
        env.log(&format!("Deleting stale data: {path}"));
        let _ = std::fs::remove_file(env.path(path));
    }
}
