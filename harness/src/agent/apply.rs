//! Putting a config on the node, the steps of the update flow (`update.rs`) that touch files
//! and units: every file of the new config written (release-4.16 file_writers.go `writeFiles`,
//! but for the files the profile leaves to the certificate writer), units written and enabled
//! through `systemctl`, and the files the new config drops deleted (`deleteStaleData`, but for
//! the certificates the profile keeps).

use super::common::{file_entry, write_file_atomically};
use super::update::{Failure, degraded};
use super::{AgentEnv, Mutant};
use crate::profile::UpdateFiles;
use serde_json::Value;

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

pub(super) fn write_files(env: &AgentEnv, behaviour: UpdateFiles, new: &Value) -> Result<(), Failure> {
    for file in new["config"]["storage"]["files"].as_array().into_iter().flatten() {
        let (path, data, mode) = file_entry(file);
        if behaviour.not_written_on_update.contains(&path.as_str()) {
            continue;
        }
        if env.mutant_is(Mutant::WriteChangedFilesOnly)
            && std::fs::read(env.path(&path)).ok() == Some(data.clone())
        {
            continue;
        }
        env.log(&format!("Writing file {path:?}"));
        super::mutant::write_node_file(env, &path, &data, mode)
            .map_err(|e| degraded(format!("writing {path}: {e}")))?;
    }
    Ok(())
}

pub(super) async fn write_units(env: &AgentEnv, new: &Value) -> Result<(), Failure> {
    let units = new["config"]["systemd"]["units"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut enabled = Vec::new();
    for unit in &units {
        let name = unit["name"].as_str().unwrap_or("");
        if let Some(contents) = unit["contents"].as_str() {
            env.log(&format!("Writing systemd unit {name:?}"));
            write_file_atomically(
                &env.path(&format!("/etc/systemd/system/{name}")),
                contents.as_bytes(),
                0o644,
            )
            .map_err(degraded)?;
        }
        if unit["enabled"].as_bool() == Some(true) {
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
pub(super) fn delete_stale_files(env: &AgentEnv, behaviour: UpdateFiles, old: &Value, new: &Value) {
    let paths = |v: &Value| -> Vec<String> {
        v["config"]["storage"]["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["path"].as_str().map(str::to_string))
            .collect()
    };
    let keep = paths(new);
    for path in paths(old).into_iter().filter(|p| !keep.contains(p)) {
        if behaviour.keeps_when_stale(&path) && !env.mutant_is(Mutant::DeleteStaleCertificates) {
            continue;
        }
        env.log(&format!("Deleting stale data: {path}"));
        let _ = std::fs::remove_file(env.path(&path));
    }
}
