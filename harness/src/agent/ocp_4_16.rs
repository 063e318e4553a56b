//! The 4.16 path (MCO release-4.16 `pkg/daemon/certificate_writer.go`): the daemon watches
//! ControllerConfig `machine-config-controller` and writes the CA files itself, whatever the
//! pool's `paused` says, with no new rendered config and no reboot. MachineConfig updates leave
//! those files alone (`skipCertificateWrite`).
//!
//! On every ControllerConfig event: if the node's `lastSyncedControllerConfigResourceVersion`
//! differs from the ControllerConfig's resourceVersion (or `service-ca-rotate` is "true"), write
//! kubelet-ca.crt and the cloud CA (a trailing newline added, existing modes kept, new files
//! 0644); then annotate the node with the resourceVersion and log
//! `Certificate was synced from controllerconfig resourceVersion N` — every time, as upstream
//! does (its line 303), which is why the line repeats.

use super::common::write_file_atomically;
use super::{AgentEnv, Behaviour};
use crate::cluster::operator::{CONTROLLER_CONFIG, controller_configs};
use crate::mco::{KUBELET_CA_PATH, LAST_SYNCED_CONTROLLER_CONFIG};
use base64::Engine;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use tokio_util::sync::CancellationToken;

pub const BEHAVIOUR: Behaviour = Behaviour {
    skip_certificate_files: true,
    certificate_writer: true,
};

/// The ControllerConfig annotation that asks for a kubelet kubeconfig CA update (issue 4).
pub const SERVICE_CA_ROTATE: &str = "machineconfiguration.openshift.io/service-ca-rotate";

/// Files the certificate writer owns, and the ControllerConfig spec field each comes from.
pub const CERTIFICATE_FILES: &[(&str, &str)] = &[
    (KUBELET_CA_PATH, "kubeAPIServerServingCAData"),
    (
        "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem",
        "cloudProviderCAData",
    ),
];

pub async fn certificate_writer(env: &AgentEnv, stop: CancellationToken) {
    let config = watcher::Config::default().fields(&format!("metadata.name={CONTROLLER_CONFIG}"));
    let mut events = watcher(controller_configs(&env.client), config)
        .default_backoff()
        .applied_objects()
        .boxed();
    // A failed sync is tried again with the newest ControllerConfig, backing off as upstream's
    // rate-limited ccQueue does (5 ms doubling), and at once when a newer one arrives.
    let mut failed: Option<DynamicObject> = None;
    let mut retry_in = RETRY_BASE;
    loop {
        let cc = tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(retry_in), if failed.is_some() => {
                retry_in = (retry_in * 2).min(RETRY_MAX);
                failed.take().expect("guarded by is_some")
            }
            event = events.next() => match event {
                Some(Ok(cc)) => {
                    retry_in = RETRY_BASE;
                    cc
                }
                Some(Err(e)) => {
                    env.log(&format!("controllerconfig watch: {e}"));
                    continue;
                }
                None => return,
            },
        };
        if let Err(e) = sync(env, &cc).await {
            env.log(&format!("Error syncing certificates from controllerconfig: {e}"));
            failed = Some(cc);
        }
    }
}

/// The ccQueue's backoff (client-go `DefaultControllerRateLimiter`: 5 ms doubling), capped here
/// at a second so a scenario's deadline is never spent waiting.
const RETRY_BASE: std::time::Duration = std::time::Duration::from_millis(5);
const RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// `writeToDisk`: a trailing newline, the existing file's mode (0644 for a new one).
fn write_to_disk(env: &AgentEnv, node_path: &str, mut data: Vec<u8>) -> std::io::Result<()> {
    if data.last() != Some(&b'\n') {
        data.push(b'\n');
    }
    let path = env.path(node_path);
    let mode = std::fs::metadata(&path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    write_file_atomically(&path, &data, mode)
}

async fn sync(env: &AgentEnv, cc: &DynamicObject) -> Result<(), String> {
    let nodes: Api<Node> = Api::all(env.client.clone());
    let node = nodes
        .get(&env.node_name)
        .await
        .map_err(|e| format!("node {}: {e}", env.node_name))?;
    let annotations = node.metadata.annotations.unwrap_or_default();
    let rv = cc.metadata.resource_version.clone().unwrap_or_default();
    let rotate = cc
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SERVICE_CA_ROTATE))
        .is_some_and(|v| v == "true");
    if annotations.get(LAST_SYNCED_CONTROLLER_CONFIG) != Some(&rv) || rotate {
        for (path, field) in CERTIFICATE_FILES {
            let encoded = cc.data["spec"][*field].as_str().unwrap_or("");
            let data = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| format!("controllerconfig spec.{field}: {e}"))?;
            write_to_disk(env, path, data).map_err(|e| format!("{path}: {e}"))?;
        }
    }
    let patch = json!({"metadata": {"annotations": {LAST_SYNCED_CONTROLLER_CONFIG: rv}}});
    nodes
        .patch(&env.node_name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(|e| format!("node {}: {e}", env.node_name))?;
    env.log(&format!(
        "Certificate was synced from controllerconfig resourceVersion {rv}"
    ));
    Ok(())
}
