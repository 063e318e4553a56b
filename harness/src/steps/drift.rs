//! Files on a node that drift from its config, and the node's state and reason.

use super::params::{FileMode, NodePath};
use anyhow::{Context, bail, ensure};
use cucumber::{then, when};
use harness::mco::{CURRENT_CONFIG, REASON, STATE};
use harness::node::Node;
use harness::wait::eventually;
use harness::world::ConformanceWorld;

/// What an edit appends to a file.
const EDIT: &[u8] = b"# edited by hand on the node (mco-conformance)\n";

/// The file's contents and mode on a node, before a step changes them.
async fn snapshot(node: &dyn Node, path: &str) -> anyhow::Result<(Vec<u8>, u32)> {
    let contents = node.read(path).await?;
    let mode = node
        .stat(path)
        .await?
        .with_context(|| format!("{}: {path} is gone", node.name()))?
        .mode;
    Ok((contents, mode))
}

/// Change the file on every node, `change` giving its new contents and mode from the old, and
/// keep the old ones for `the file <path> is restored on every node`; once every node's agent
/// watches its files against the config it runs (`config::await_drift_watch`), as a person
/// changes a file on a node that is up and settled.
async fn change_on_every_node(
    world: &mut ConformanceWorld,
    path: &str,
    change: impl Fn(&[u8], u32) -> (Vec<u8>, u32),
) -> anyhow::Result<()> {
    super::config::await_drift_watch(world, &format!("a change to {path}")).await?;
    let c = world.cluster()?;
    let mut originals = Vec::new();
    for node in &c.nodes {
        let (before, mode) = snapshot(node.as_ref(), path).await?;
        let (after, new_mode) = change(&before, mode);
        node.write(path, &after, new_mode).await?;
        originals.push(((node.name().to_string(), path.to_string()), (before, mode)));
    }
    world.originals.extend(originals);
    Ok(())
}

/// Someone edits the file on every node (appends a line, keeping its mode), as a person with
/// `oc debug node/…` would; the step keeps the contents to restore them later.
#[when(regex = r"^the file (/\S+) is edited on every node$")]
async fn edit_file(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    change_on_every_node(world, &path, |before, mode| ([before, EDIT].concat(), mode)).await
}

/// Someone empties the file on every node (`truncate -s 0`, keeping its mode and inode, as a
/// write cut short would leave it); the step keeps the contents to restore them later.
#[when(regex = r"^the file (/\S+) is emptied on every node$")]
async fn empty_file(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    change_on_every_node(world, &path, |_, mode| (Vec::new(), mode)).await
}

/// Someone changes the file's mode on every node (an octal mode such as 0600).
#[when(expr = "the mode of {path} is changed to {mode} on every node")]
async fn change_mode(world: &mut ConformanceWorld, path: NodePath, mode: FileMode) -> anyhow::Result<()> {
    let (NodePath(path), FileMode(mode)) = (path, mode);
    change_on_every_node(world, &path, |before, _| (before.to_vec(), mode)).await
}

/// The file's contents and mode from before the scenario edited it, back on every node.
#[when(regex = r"^the file (/\S+) is restored on every node$")]
async fn restore_file(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let Some((contents, mode)) = world.originals.get(&(node.name().to_string(), path.clone())) else {
            bail!("{path} was not edited on {} in this scenario", node.name());
        };
        node.write(&path, contents, *mode).await?;
    }
    Ok(())
}

/// `touch /run/machine-config-daemon-force` on every node, as MCO's docs say to recover a
/// node whose files drifted.
#[when("the force file is created on every node")]
async fn create_force_file(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    super::config::write_force_file(world).await
}

/// Wait until every node's state and reason satisfy `wanted`; the error says what `what` is
/// and what each node showed last.
async fn every_node_state(
    world: &ConformanceWorld,
    what: &str,
    wanted: impl Fn(&str, &str) -> bool,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        eventually(c.options.deadline, || async {
            let a = c.node_annotations(node.name()).await.map_err(|e| e.to_string())?;
            let (state, reason) = (
                a.get(STATE).cloned().unwrap_or_default(),
                a.get(REASON).cloned().unwrap_or_default(),
            );
            if wanted(&state, &reason) {
                Ok(())
            } else {
                Err(format!("state {state:?}, reason {reason:?}"))
            }
        })
        .await
        .map_err(|e| anyhow::anyhow!("{} is not {what}: {e}", node.name()))?;
    }
    Ok(())
}

/// Every node's `machineconfiguration.openshift.io/state` becomes Degraded (an update that
/// failed and is retried) or Unreconcilable (a config a running node may not apply), with a
/// reason that contains the text (the text runs to the last quote, so it may itself contain
/// quotes).
#[then(regex = r#"^every node is (Degraded|Unreconcilable) with the reason "(.+)"$"#)]
async fn degraded_with(world: &mut ConformanceWorld, wanted: String, text: String) -> anyhow::Result<()> {
    let what = format!("{wanted} with the reason {text:?}");
    every_node_state(world, &what, |state, reason| {
        state == wanted && reason.contains(&text)
    })
    .await
}

/// Every node's state becomes Done, with no reason, on the config it had.
#[then("every node is Done")]
async fn done(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    every_node_state(world, "Done", |state, reason| {
        state == "Done" && reason.is_empty()
    })
    .await
}

/// Every node's file holds what the config it runs (`currentConfig`) says, mode included.
#[then(regex = r"^every node's (/\S+) matches its config$")]
async fn matches_config(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let config = c
            .node_annotations(node.name())
            .await?
            .get(CURRENT_CONFIG)
            .cloned()
            .with_context(|| format!("{} runs no config yet", node.name()))?;
        let spec = c.machine_config_spec(&config).await?;
        let Some((_, contents, mode)) = spec
            .config
            .storage
            .files
            .iter()
            .map(super::oracle::ignition_file)
            .collect::<anyhow::Result<Vec<_>>>()?
            .into_iter()
            .find(|(p, _, _)| *p == path)
        else {
            bail!("{config} has no file {path}");
        };
        let on_disk = node.read(&path).await?;
        let stat = node
            .stat(&path)
            .await?
            .with_context(|| format!("{}: {path} is gone", node.name()))?;
        ensure!(
            on_disk == contents && stat.mode == mode,
            "{}: {path} ({:o}) differs from {config} ({mode:o}): {:?}",
            node.name(),
            stat.mode,
            String::from_utf8_lossy(&on_disk)
        );
    }
    Ok(())
}

/// Every node booted again since the cluster started.
#[then("every node has rebooted")]
async fn rebooted(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        ensure!(
            node.boot_id().await? != world.boot_id_at_start(node.name())?,
            "{} has not rebooted",
            node.name()
        );
    }
    Ok(())
}
