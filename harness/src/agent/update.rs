//! The MachineConfig update flow both profiles run (MCD `update()`, release-4.12/4.16
//! `pkg/daemon/update.go`, `daemon.go`; mco-source.md §1), in upstream's order and words:
//! `state=Working`; `Checking Reconcilable for config A to B`; `Starting update from A to B:
//! &{…}`; the file diff; drain when the action needs it; `Updating files` and every file
//! written atomically (`Writing file "…"`); units enabled through `systemctl`; the config stored
//! on disk; then the post-config action (`Node has Desired Config B, skipping reboot`, a CRI-O
//! reload or restart, or `Rebooting node`); and finally the uncordon handshake,
//! `state=Done`, `currentConfig=B`.
//!
//! A reboot leaves `/etc/machine-config-daemon/pending-config`; the daemon that starts after it
//! validates the node's files against that config and only then completes the update.

use super::AgentEnv;
use super::apply::{delete_stale_files, systemctl, write_files, write_ssh_keys, write_units};
use super::common::{
    CURRENT_CONFIG_FILE, FORCE_FILE, PENDING_CONFIG_FILE, PostConfigAction, changed_files, diff,
    post_config_action, write_file_atomically,
};
use super::complete::complete_update;
use super::drain::drain;
use super::events::EventType;
use super::faults::ActionInputs;
use super::node_writer::{Failure, annotate, degraded};
use super::reconcile::{node_fips, reconcilable};
use crate::mco::api::machine_configs;
use crate::mco::machine_config::MachineConfigSpec;
use crate::mco::{STATE, STATE_WORKING};
use crate::profile::UpdateFiles;
use serde_json::json;

pub(super) async fn spec_of(env: &AgentEnv, config: &str) -> Result<MachineConfigSpec, Failure> {
    let mc = machine_configs(&env.client)
        .get(config)
        .await
        .map_err(|e| degraded(format!("machineconfig {config}: {e}")))?;
    MachineConfigSpec::of(&mc.data).map_err(|e| degraded(format!("machineconfig {config}: {e}")))
}

/// Whether `/run/machine-config-daemon-force` is there (and heeded).
pub(super) fn force_file(env: &AgentEnv) -> bool {
    env.faults().force_file(env.path(FORCE_FILE).exists())
}

/// Apply `desired`; `Ok(true)` when the node is rebooting to finish it.
pub(super) async fn update(
    env: &AgentEnv,
    behaviour: UpdateFiles,
    current: &str,
    desired: &str,
) -> Result<bool, Failure> {
    annotate(env, json!({STATE: STATE_WORKING})).await?;
    let (old, new) = check_reconcilable(env, current, desired).await?;
    let d = diff(&old, &new);
    env.log_system(&format!("Starting update from {current} to {desired}: {d}"));
    let changed = changed_files(&old, &new);
    for path in &changed {
        env.log(&format!("File diff: detected change to {path}"));
    }
    let changed_refs: Vec<&str> = changed.iter().map(String::as_str).collect();
    let force = force_file(env);
    if force {
        let _ = std::fs::remove_file(env.path(FORCE_FILE));
    }
    let inputs = ActionInputs {
        profile: env.profile,
        diff: &d,
        changed_files: &changed_refs,
        force,
    };
    let action = env
        .faults()
        .post_config_action(post_config_action(env.profile, &d, &changed_refs, force), &inputs);
    if action == PostConfigAction::Reboot && env.faults().drains_before_reboot() {
        // release-4.12/4.16 drain.go performDrain: a cluster of more than one node drains.
        env.event(EventType::Normal, "Cordon", "Cordoned node to apply update")
            .await;
        env.event(EventType::Normal, "Drain", "Draining node to update config.")
            .await;
        drain(env, &format!("drain-{desired}")).await?;
    } else {
        env.log("Changes do not require drain, skipping.");
    }
    update_files(env, behaviour, &old, &new, &changed_refs, d.passwd).await?;
    let stored =
        serde_json::to_vec(&json!({"metadata": {"name": desired}, "spec": new})).map_err(degraded)?;
    write_file_atomically(&env.path(CURRENT_CONFIG_FILE), &stored, 0o644)
        .map_err(|e| degraded(format!("{CURRENT_CONFIG_FILE}: {e}")))?;
    if env.profile.traits().pending_state {
        env.store_pending_state(desired, true);
        let message = format!("Written pending config {desired}");
        env.event(EventType::Normal, "PendingConfig", &message).await;
    }
    if perform_post_config_change_action(env, action, desired).await? {
        return Ok(true);
    }
    complete_update(env, desired).await?;
    Ok(false)
}

/// The old and new configs' specs once the change between them is one the daemon can make
/// (upstream's `reconcilable`), the old one's FIPS set to the node's.
async fn check_reconcilable(
    env: &AgentEnv,
    current: &str,
    desired: &str,
) -> Result<(MachineConfigSpec, MachineConfigSpec), Failure> {
    env.log(&format!(
        "Checking Reconcilable for config {current} to {desired}"
    ));
    let mut old = if current.is_empty() {
        MachineConfigSpec::default()
    } else {
        spec_of(env, current).await?
    };
    let new = spec_of(env, desired).await?;
    let node_fips = if env.faults().checks_fips() {
        node_fips(env)?
    } else {
        None
    };
    reconcilable(&old, &new, node_fips).map_err(|f| match f {
        Failure::Unreconcilable(why) => {
            Failure::Unreconcilable(format!("can't reconcile config {current} with {desired}: {why}"))
        }
        other => other,
    })?;
    // The old config's FIPS is the node's, once checked (upstream sets it so): the diff shows
    // a FIPS change only where the check was skipped.
    if let Some(fips) = node_fips {
        old.fips = fips;
    }
    Ok((old, new))
}

/// The new config's files, units and SSH keys on disk, and the old one's stale files gone
/// (upstream's `updateFiles`, `updateSSHKeys`, `deleteStaleData`).
async fn update_files(
    env: &AgentEnv,
    behaviour: UpdateFiles,
    old: &MachineConfigSpec,
    new: &MachineConfigSpec,
    changed: &[&str],
    passwd: bool,
) -> Result<(), Failure> {
    env.log("Updating files");
    write_files(env, behaviour, new)?;
    env.faults()
        .after_update_files_written(changed)
        .await
        .map_err(degraded)?;
    write_units(env, new).await?;
    write_ssh_keys(env, new, passwd)?;
    delete_stale_files(env, behaviour, old, new);
    Ok(())
}

/// The action that finishes an update (upstream's `performPostConfigChangeAction`): `Ok(true)`
/// when the node is rebooting.
async fn perform_post_config_change_action(
    env: &AgentEnv,
    action: PostConfigAction,
    desired: &str,
) -> Result<bool, Failure> {
    match action {
        PostConfigAction::Reboot => {
            write_file_atomically(&env.path(PENDING_CONFIG_FILE), desired.as_bytes(), 0o644)
                .map_err(degraded)?;
            env.log_system("Rebooting node");
            let rationale = format!("Node will reboot into config {desired}");
            env.event(EventType::Normal, "Reboot", &rationale).await;
            systemctl(env, &["reboot"]).await?;
            return Ok(true);
        }
        PostConfigAction::None => {
            let message = "Config changes do not require reboot.";
            env.event(EventType::Normal, "SkipReboot", message).await;
            env.log_system(&format!("Node has Desired Config {desired}, skipping reboot"))
        }
        PostConfigAction::ReloadCrio => {
            systemctl(env, &["reload", "crio"]).await?;
            let message = "Config changes do not require reboot. Service crio was reloaded.";
            env.event(EventType::Normal, "SkipReboot", message).await;
            env.log_system(&format!("crio config reloaded successfully! Desired config {desired} has been applied, skipping reboot"));
        }
        PostConfigAction::RestartCrio => {
            // update-ca-trust first, its failure failing the update (release-4.14
            // update.go:116-121, release-4.16 update.go:307-313).
            let out = env.host.update_ca_trust().await.map_err(degraded)?;
            if out.exit_code != 0 {
                return Err(degraded(format!(
                    "error running update-ca-trust: {}: exit status {}",
                    out.stderr.trim(),
                    out.exit_code
                )));
            }
            systemctl(env, &["restart", "crio"]).await?;
            env.log_system(&format!("crio config restarted successfully! Desired config {desired} has been applied, skipping reboot"));
        }
    }
    Ok(false)
}
