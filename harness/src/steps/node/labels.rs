//! The labels of every node's Node object, as `oc label node` changes them: a label added, the
//! role labels taken off. Which pool a node then belongs to is the cluster side's to work out.

use anyhow::ensure;
use cucumber::when;
use harness::world::ConformanceWorld;

/// Every Node object gets the label, `key=value`, or `key` alone for an empty value (as role
/// labels have: `node-role.kubernetes.io/worker`), as `oc label node … key=value` would.
#[when(regex = r"^every node is labelled (\S+)$")]
async fn label_every_node(world: &mut ConformanceWorld, label: String) -> anyhow::Result<()> {
    let (key, value) = label.split_once('=').unwrap_or((&label, ""));
    ensure!(!key.is_empty(), "{label:?} is not a label as key or key=value");
    let c = world.cluster()?;
    for node in &c.nodes {
        c.label_node(node.name(), key, value).await?;
    }
    Ok(())
}

/// Every Node object loses its `node-role.kubernetes.io/<role>` labels.
#[when("every node loses its node-role label")]
async fn lose_role(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        c.remove_role_labels(node.name()).await?;
    }
    Ok(())
}
