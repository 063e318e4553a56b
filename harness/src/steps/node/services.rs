//! A node's service manager, as `systemctl` drives it: reboots, the agent's restarts (marking
//! where the journal steps count "since the agent restarted"), whether a unit is enabled, and
//! whether a node rebooted at all. Files and journal lines are judged elsewhere.

use anyhow::ensure;
use cucumber::{then, when};
use harness::wait::eventually;
use harness::world::ConformanceWorld;

/// Every node has the boot id it had when the cluster started.
#[then("no node has rebooted")]
async fn no_reboot(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        ensure!(
            node.boot_id().await? == world.boot_id_at_start(node.name())?,
            "{} rebooted",
            node.name()
        );
    }
    Ok(())
}

/// Every node's service manager says the unit is enabled (or disabled), as `systemctl
/// is-enabled` answers on the node.
#[then(regex = r"^every node's unit (\S+) is (enabled|disabled)$")]
async fn unit_enabled(world: &mut ConformanceWorld, unit: String, state: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let out = node.systemctl(&["is-enabled", &unit]).await?;
        anyhow::ensure!(
            out.stdout.trim() == state,
            "{}: systemctl is-enabled {unit} says {:?} (exit {}), not {state}",
            node.name(),
            out.stdout.trim(),
            out.exit_code
        );
    }
    Ok(())
}

/// `systemctl reboot` on every node, then wait until each has booted again and its kubelet
/// and agent have started.
#[when("every node reboots")]
async fn reboot(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let before = node.boot_id().await?;
        let mark = node.journal_mark().await?;
        let out = node.systemctl(&["reboot"]).await?;
        ensure!(
            out.exit_code == 0,
            "{}: systemctl reboot: {}",
            node.name(),
            out.stderr
        );
        let node = node.as_ref();
        eventually(world.deadline, || async {
            let lines = node.journal_since(mark).await.map_err(|e| e.to_string())?;
            let booted = lines.iter().position(|l| l.starts_with("-- Boot "));
            let started = |unit: &str| {
                booted.is_some_and(|b| {
                    lines[b..]
                        .iter()
                        .any(|l| l.ends_with(&format!("Started {unit}.")))
                })
            };
            if node.boot_id().await.map_err(|e| e.to_string())? != before
                && started("kubelet.service")
                && started(harness::node::AGENT_UNIT)
            {
                Ok(())
            } else {
                Err(format!(
                    "{}: not booted again yet; journal since the reboot: {lines:?}",
                    node.name()
                ))
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// `systemctl restart machine-config-daemon.service` on every node, as deleting the daemon's
/// pod restarts it on a real cluster; the step ends when each node's service manager has
/// started it again.
#[when("the agent restarts on every node")]
async fn restart_agent(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let unit = harness::node::AGENT_UNIT;
    let c = world.cluster()?;
    let mut marks = std::collections::BTreeMap::new();
    for node in &c.nodes {
        let mark = node.journal_mark().await?;
        marks.insert(node.name().to_string(), mark);
        let out = node.systemctl(&["restart", unit]).await?;
        ensure!(
            out.exit_code == 0,
            "{}: systemctl restart {unit}: {}",
            node.name(),
            out.stderr.trim()
        );
        let node = node.as_ref();
        eventually(world.deadline, || async {
            let lines = node.journal_since(mark).await.map_err(|e| e.to_string())?;
            if lines.iter().any(|l| l.ends_with(&format!("Started {unit}."))) {
                Ok(())
            } else {
                Err(format!(
                    "{}: {unit} has not started again; journal since the restart: {lines:?}",
                    node.name()
                ))
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    world.restart_marks = marks;
    Ok(())
}
