//! The annotations on every node's Node object, as the API server holds them: whether each
//! carries one, and its value. Read only; the agents write them.

use cucumber::then;
use harness::wait::eventually;
use harness::world::ConformanceWorld;

/// No node carries the annotation, with any value. Checked once, as it is: put it after a step
/// that waits for the agents to have acted.
#[then(regex = r"^no node has the annotation (\S+)$")]
async fn no_node_has_annotation(world: &mut ConformanceWorld, key: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let annotations = c.node_annotations(node.name()).await?;
        if let Some(value) = annotations.get(&key) {
            anyhow::bail!("{}: has {key}={value:?}", node.name());
        }
    }
    Ok(())
}

/// Every node carries the annotation, with any value. Waits until each does, since agents
/// annotate after they act.
#[then(regex = r"^every node has the annotation (\S+)$")]
async fn every_node_has_annotation(world: &mut ConformanceWorld, key: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        eventually(world.deadline, || async {
            let annotations = c.node_annotations(node.name()).await.map_err(|e| e.to_string())?;
            if annotations.contains_key(&key) {
                Ok(())
            } else {
                Err(format!(
                    "{}: no {key}; its annotations: {:?}",
                    node.name(),
                    annotations.keys().collect::<Vec<_>>()
                ))
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// Every node's annotation has the value: a quoted string, or "the ControllerConfig's
/// resourceVersion" (the one the cluster holds now). Waits until it does, since agents
/// annotate after they act.
#[then(regex = r#"^every node's annotation (\S+) is (?:"(.*)"|(the ControllerConfig's resourceVersion))$"#)]
async fn node_annotation_is(
    world: &mut ConformanceWorld,
    key: String,
    value: String,
    controller_config: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        eventually(world.deadline, || async {
            let expected = if controller_config.is_empty() {
                value.clone()
            } else {
                c.controller_config_resource_version()
                    .await
                    .map_err(|e| format!("reading the ControllerConfig: {e}"))?
            };
            let seen = c
                .node_annotations(node.name())
                .await
                .map_err(|e| e.to_string())?
                .get(&key)
                .cloned();
            if seen.as_deref() == Some(expected.as_str()) {
                Ok(())
            } else {
                Err(format!(
                    "{}: {key} is {seen:?}, expected {expected:?}",
                    node.name()
                ))
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}
