//! A node seeded like a real one: its kubeconfigs with current
//! context and CA data, a non-CoreOS `/etc/os-release` (so upstream agents stay off
//! rpm-ostree), what the machine-config server served it (`cluster::server`: the files and units
//! of its rendered config as Ignition writes them, with the server's additions), the current
//! config on disk as its first-boot service leaves it, and the Node object with `currentConfig`
//! = `desiredConfig`, `state=Done`, matching drain annotations and role labels, and its
//! MachineConfigNode.
//!
//! Three kubeconfigs, as on a real node:
//! - `/etc/kubernetes/kubeconfig`, the node's (served by the MCS): the agent's identity and the
//!   CA the server put in it (the kube-apiserver's serving CA as installed, or on 4.16
//!   `kubeconfig-data`'s); the 4.16 daemon rewrites its CA;
//! - `/var/lib/kubelet/kubeconfig`, the kubelet's: the same CA, the kubelet's identity;
//! - the agent contract's `KUBECONFIG` (`AGENT_KUBECONFIG`), standing for the daemon pod's
//!   in-cluster configuration: the agent's identity and every serving CA the API server will
//!   serve from, so the agent outlives a serving CA rotation as the pod does.

use super::{Node, NodeError};
use crate::mco::CURRENT_CONFIG_FILE;
use crate::mco::api::mco_api;
use crate::mco::machine_config_node::MachineConfigNode;
use crate::mco::served::Served;
use crate::mco::{
    CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, INITIAL_NODE_ANNOTATIONS, LAST_APPLIED_DRAIN, STATE,
    STATE_DONE,
};
use crate::mco::{REGISTRY_CA_DIR, UNIT_DIR};

/// Where the OS's own unit files are.
const VENDOR_UNIT_DIR: &str = "/usr/lib/systemd/system";
/// The config the server encapsulates for the first-boot service, which consumes it: removed
/// when the node already runs what it names (release-4.16 daemon.go:1276-1282).
const ENCAPSULATED_CONFIG: &str = "/etc/ignition-machine-config-encapsulated.json";
use fake_apiserver::ClientIdentity;
use k8s_openapi::api::core::v1::Node as NodeObject;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

pub const AGENT_KUBECONFIG: &str = "/var/lib/mco-conformance/kubeconfig";
pub const NODE_KUBECONFIG: &str = "/etc/kubernetes/kubeconfig";
pub const KUBELET_KUBECONFIG: &str = "/var/lib/kubelet/kubeconfig";
pub const OS_RELEASE: &str = "/etc/os-release";

/// What a node starts from.
pub struct NodeSeed<'a> {
    pub role: &'a str,
    pub api_url: &'a str,
    /// The serving CAs the agent's kubeconfig trusts.
    pub agent_ca_pem: &'a str,
    /// The serving CA the node's and the kubelet's kubeconfigs hold where the server names
    /// none: the API server's as installed (the bootstrap token's `ca.crt`).
    pub bootstrap_ca_pem: &'a str,
    pub agent: &'a ClientIdentity,
    pub kubelet: &'a ClientIdentity,
    /// What the machine-config server served the node.
    pub served: &'a Served,
}

#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error(transparent)]
    Node(#[from] NodeError),
    #[error("node object {name} or its MachineConfigNode: {source}")]
    Api { name: String, source: kube::Error },
}

pub async fn seed_node(admin: &kube::Client, node: &dyn Node, seed: &NodeSeed<'_>) -> Result<(), SeedError> {
    let name = node.name().to_string();
    let served = seed.served;
    let kubeconfig_ca = served.kubeconfig_ca.as_deref().unwrap_or(seed.bootstrap_ca_pem);
    node.write(
        AGENT_KUBECONFIG,
        fake_apiserver::kubeconfig(seed.api_url, seed.agent_ca_pem, seed.agent).as_bytes(),
        0o600,
    )
    .await?;
    node.write(
        NODE_KUBECONFIG,
        fake_apiserver::kubeconfig(seed.api_url, kubeconfig_ca, seed.agent).as_bytes(),
        0o600,
    )
    .await?;
    node.write(
        KUBELET_KUBECONFIG,
        fake_apiserver::kubeconfig(seed.api_url, kubeconfig_ca, seed.kubelet).as_bytes(),
        0o600,
    )
    .await?;
    node.write(
        OS_RELEASE,
        b"NAME=\"mco-conformance node\"\nID=mco-conformance\nVERSION_ID=1\n",
        0o644,
    )
    .await?;
    // RHCOS's users, which the OS image carries (a container node's image has them already):
    // the daemon writes the `core` user's SSH keys.
    for (path, text, mode) in [
        ("/etc/passwd", super::users::PASSWD, 0o644),
        ("/etc/group", super::users::GROUP, 0o644),
        ("/etc/shadow", super::users::SHADOW, 0o400),
    ] {
        node.write(path, text.as_bytes(), mode).await?;
    }
    write_boot_config(node, served).await?;
    // Present on an installed node; the 4.16 daemon writes registry CAs only where it exists.
    node.create_dir(REGISTRY_CA_DIR).await?;
    let current = json!({"metadata": {"name": served.rendered}, "spec": served.config});
    node.write(CURRENT_CONFIG_FILE, current.to_string().as_bytes(), 0o644)
        .await?;
    // The machine-config server puts the Node's first annotations on the node's disk
    // (release-4.12/4.16 pkg/server/server.go appendNodeAnnotations); the agent's first run
    // sets them on the Node, which until then has none of MCO's.
    let initial =
        json!({CURRENT_CONFIG: served.rendered, DESIRED_CONFIG: served.rendered, STATE: STATE_DONE});
    node.write(INITIAL_NODE_ANNOTATIONS, initial.to_string().as_bytes(), 0o644)
        .await?;
    register(admin, &name, seed).await
}

/// What Ignition writes from the served config: its files (but the served kubeconfig, written
/// above with the node's own certificate), and every unit's contents and drop-ins.
async fn write_boot_config(node: &dyn Node, served: &Served) -> Result<(), SeedError> {
    // The served kubeconfig was written above with the node's certificate for the server's
    // bootstrap token.
    for file in served.boot.files() {
        if file.path == NODE_KUBECONFIG || file.path == ENCAPSULATED_CONFIG {
            continue;
        }
        node.write(&file.path, &file.data(), file.mode_or_default())
            .await?;
    }
    // Ignition writes every unit's contents and drop-ins too (upstream's templates carry both).
    // A unit the config enables without contents is one the OS ships (openvswitch.service,
    // rpm-ostreed.service on RHCOS): the node's OS has its file in /usr/lib/systemd/system.
    for unit in served.boot.units() {
        if unit.contents.as_deref().is_none_or(str::is_empty) && unit.enabled == Some(true) {
            let vendor = format!("{VENDOR_UNIT_DIR}/{}", unit.name);
            let text = format!("[Unit]\nDescription={} (shipped with the OS)\n", unit.name);
            node.write(&vendor, text.as_bytes(), 0o644).await?;
        }
        if let Some(contents) = unit.contents.as_deref().filter(|c| !c.is_empty()) {
            node.write(&format!("{UNIT_DIR}/{}", unit.name), contents.as_bytes(), 0o644)
                .await?;
        }
        for dropin in unit.dropins() {
            if let Some(contents) = dropin.contents.as_deref().filter(|c| !c.is_empty()) {
                node.write(&unit.dropin_path(UNIT_DIR, &dropin), contents.as_bytes(), 0o644)
                    .await?;
            }
        }
    }
    Ok(())
}

/// The node's Node object, labelled with its role and uncordoned, and its MachineConfigNode.
async fn register(admin: &kube::Client, name: &str, seed: &NodeSeed<'_>) -> Result<(), SeedError> {
    let served = seed.served;
    let name = name.to_string();
    let uncordoned = format!("uncordon-{}", served.rendered);
    let object = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {format!("node-role.kubernetes.io/{}", seed.role): "", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
            "annotations": {DESIRED_DRAIN: uncordoned, LAST_APPLIED_DRAIN: uncordoned},
        },
    });
    let api: Api<NodeObject> = Api::all(admin.clone());
    let params = PatchParams::apply("mco-conformance-seed").force();
    let created = api
        .patch(&name, &params, &Patch::Apply(&object))
        .await
        .map_err(|source| SeedError::Api {
            name: name.clone(),
            source,
        })?;
    // The operator creates every node's MachineConfigNode, owned by the Node (MCO
    // `pkg/operator/sync.go`); the upstream daemon applies its status from then on.
    let machine_config_node =
        MachineConfigNode::for_node(&name, created.metadata.uid.clone(), seed.role, &served.rendered);
    mco_api(admin, "MachineConfigNode")
        .patch(&name, &params, &Patch::Apply(&machine_config_node))
        .await
        .map_err(|source| SeedError::Api { name, source })?;
    Ok(())
}
