//! `Checking Reconcilable`: whether a new config can be applied to a running node at all
//! (release-4.12 update.go `reconcilable`, release-4.16 update.go), and the node's FIPS mode
//! it is compared with.

use super::AgentEnv;
use super::common::FORCE_FILE;
use super::node_writer::Failure;
use crate::mco::FIPS_PATH;
use crate::mco::machine_config::MachineConfigSpec;
use serde_json::Value;

/// The node's FIPS mode (`checkFIPS`: release-4.12 update.go:942, release-4.16 update.go:1530
/// `processFips`): `Ok(None)` on a kernel without the switch, where the check is skipped.
pub(super) fn node_fips(env: &AgentEnv) -> Result<Option<bool>, Failure> {
    let text = match std::fs::read_to_string(env.path(FIPS_PATH)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            env.log(&format!("no {FIPS_PATH} on this system, skipping FIPS check"));
            return Ok(None);
        }
        Err(e) => {
            return Err(Failure::Unreconcilable(format!(
                "error reading FIPS file at {FIPS_PATH}: {e}"
            )));
        }
    };
    match text.trim_end_matches('\n') {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(Some(true)),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(Some(false)),
        other => Err(Failure::Unreconcilable(format!(
            "error parsing FIPS file at {FIPS_PATH}: {other:?} is not a boolean"
        ))),
    }
}

/// The parts of a config a running node cannot change (`reconcilable()`). FIPS is compared
/// with the node's kernel, not with the old config: a config may not ask for a mode the node
/// does not run.
pub(super) fn reconcilable(
    old: &MachineConfigSpec,
    new: &MachineConfigSpec,
    node_fips: Option<bool>,
) -> Result<(), Failure> {
    if let Some(node_fips) = node_fips
        && new.fips != node_fips
    {
        return Err(Failure::Unreconcilable(
            "detected change to FIPS flag; refusing to modify FIPS on a running cluster".into(),
        ));
    }

    for field in ["disks", "filesystems", "raid", "directories"] {
        if old.config.storage.other.get(field) != new.config.storage.other.get(field) {
            return Err(Failure::Unreconcilable(format!(
                "ignition {field} section contains changes"
            )));
        }
    }
    let files = new.files();
    if files.iter().any(|f| {
        f.other
            .get("append")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    }) {
        return Err(Failure::Unreconcilable(
            "ignition file append is not supported".into(),
        ));
    }
    if files.iter().any(|f| f.path == FORCE_FILE) {
        return Err(Failure::Unreconcilable(format!(
            "cannot write {FORCE_FILE} through a MachineConfig"
        )));
    }
    Ok(())
}
