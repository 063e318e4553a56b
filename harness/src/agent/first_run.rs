//! The daemon's first run on a node: the Node carries no MCO annotations until the daemon sets
//! them from what the machine-config server put on the node's disk,
//! `/etc/machine-config-daemon/node-annotations.json` (release-4.12 and release-4.16
//! `pkg/daemon/node.go` `loadNodeAnnotations`), then unlinks that file once it knows no OS
//! pivot is needed (`checkStateOnFirstRun`: "No bootstrap pivot required; unlinking bootstrap
//! node annotations", renamed to `node-annotation.json.bak`). Until then the node counts as
//! unavailable and the cluster waits for it: the agent-ready gate a real cluster has.

use super::AgentEnv;
use super::common::CURRENT_CONFIG_FILE;
use crate::mco::machine_config::MachineConfig;
use crate::mco::{CURRENT_CONFIG, INITIAL_NODE_ANNOTATIONS, McoObject};
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use serde_json::json;
use std::collections::BTreeMap;

/// Where upstream moves the initial annotations once they are applied.
pub const INITIAL_NODE_ANNOTATIONS_BAK: &str = "/etc/machine-config-daemon/node-annotation.json.bak";

/// Set the Node's initial annotations if it has no `currentConfig` yet; `Err` says why it
/// could not (the daemon retries, as upstream's sync does).
pub async fn load_node_annotations(env: &AgentEnv) -> Result<(), String> {
    let nodes: Api<Node> = Api::all(env.client.clone());
    let node = nodes
        .get(&env.node_name)
        .await
        .map_err(|e| format!("node {}: {e}", env.node_name))?;
    let annotations = node.metadata.annotations.unwrap_or_default();
    if annotations.get(CURRENT_CONFIG).is_some_and(|c| !c.is_empty()) {
        return Ok(());
    }
    env.log(&format!(
        "No {CURRENT_CONFIG} annotation on node {}: {annotations:?}, in cluster bootstrap, loading initial node annotation from {INITIAL_NODE_ANNOTATIONS}",
        env.node_name
    ));
    let initial: BTreeMap<String, String> = match std::fs::read(env.path(INITIAL_NODE_ANNOTATIONS)) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| format!("failed to unmarshal initial annotations: {e}"))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Best effort: the config on disk names the current config.
            let on_disk: MachineConfig = std::fs::read(env.path(CURRENT_CONFIG_FILE))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .ok_or_else(|| format!("no {INITIAL_NODE_ANNOTATIONS} and no config on disk"))?;
            let name = on_disk.name().to_string();
            env.log(&format!(
                "Setting initial node config based on current configuration on disk: {name}"
            ));
            BTreeMap::from([(CURRENT_CONFIG.to_string(), name)])
        }
        Err(e) => {
            return Err(format!(
                "failed to read initial annotations from {INITIAL_NODE_ANNOTATIONS:?}: {e}"
            ));
        }
    };
    if let Some(current) = initial.get(CURRENT_CONFIG) {
        env.log(&format!("Setting initial node config: {current}"));
    }
    env.annotate_node(json!(initial))
        .await
        .map_err(|e| format!("failed to set initial annotations: {e}"))?;
    if env.path(INITIAL_NODE_ANNOTATIONS).exists() {
        env.log_system("No bootstrap pivot required; unlinking bootstrap node annotations");
        std::fs::rename(
            env.path(INITIAL_NODE_ANNOTATIONS),
            env.path(INITIAL_NODE_ANNOTATIONS_BAK),
        )
        .map_err(|e| format!("renaming initial node annotation file: {e}"))?;
    }
    Ok(())
}
