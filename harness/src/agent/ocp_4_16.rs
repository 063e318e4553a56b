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
//!
//! With `service-ca-rotate: "true"` that this node has not acted on, it compares
//! `kubeconfig-data`'s CA with `/etc/kubernetes/kubeconfig`'s: certificates the configmap adds
//! get `/etc/kubernetes/kubeconfig` rewritten, and unless every added one is a localhost or
//! load-balancer serving signer, the kubelet restarts: `systemctl stop kubelet`, the CA in
//! `/var/lib/kubelet/kubeconfig` rewritten, `daemon-reload`, `start`.

use super::common::write_file_atomically;
use super::{AgentEnv, Behaviour};
use crate::cluster::names::{CA_BUNDLE_KEY, KUBECONFIG_DATA};
use crate::cluster::operator::{CONTROLLER_CONFIG, controller_configs};
use crate::mco::{
    KUBELET_CA_PATH, LAST_OBSERVED_SERVER_CA, LAST_SYNCED_CONTROLLER_CONFIG, REASON, SERVICE_CA_ROTATE,
    STATE, STATE_DEGRADED, STATE_DONE,
};
use crate::node::seed::{KUBELET_KUBECONFIG, NODE_KUBECONFIG};
use base64::Engine;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use tokio_util::sync::CancellationToken;

pub const BEHAVIOUR: Behaviour = Behaviour {
    skip_certificate_files: true,
    certificate_writer: true,
};

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
    // The reason this writer marked the node Degraded with (upstream `updateErrorState`).
    let mut degraded: Option<String> = None;
    loop {
        let cc = tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(retry_in), if failed.is_some() => {
                retry_in = (retry_in * 2).min(RETRY_MAX);
                failed.take().expect("guarded by is_some")
            }
            event = events.next() => match event {
                Some(Ok(cc)) => {
                    // The newest ControllerConfig replaces a failed older one: never sync back.
                    failed = None;
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
        match sync(env, &cc).await {
            Ok(()) => {
                if let Some(reason) = degraded.take() {
                    clear_own_degraded(env, &reason).await;
                }
            }
            Err(SyncError::Transient(e)) => {
                env.log(&format!("Error syncing certificates from controllerconfig: {e}"));
                failed = Some(cc);
            }
            Err(SyncError::Node(reason)) => {
                env.log(&format!(
                    "Error syncing certificates from controllerconfig: {reason}"
                ));
                // Marked again whenever the node does not say so (someone else may have
                // changed its state since).
                if !node_says(env, STATE_DEGRADED, &reason).await {
                    env.log(&format!("Marking Degraded due to: {reason}"));
                    set_state(env, STATE_DEGRADED, &reason).await;
                }
                degraded = Some(reason);
                failed = Some(cc);
            }
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

/// `openshift-machine-config-operator/kubeconfig-data`'s `ca-bundle.crt`: binaryData first,
/// otherwise data, base64-decoded if it decodes and as it is if not.
async fn kubeconfig_data(env: &AgentEnv) -> Result<String, String> {
    let (ns, name) = KUBECONFIG_DATA;
    let cm = Api::<ConfigMap>::namespaced(env.client.clone(), ns)
        .get(name)
        .await
        .map_err(|e| format!("configmap {ns}/{name}: {e}"))?;
    if let Some(bytes) = cm.binary_data.as_ref().and_then(|b| b.get(CA_BUNDLE_KEY)) {
        return String::from_utf8(bytes.0.clone()).map_err(|e| format!("configmap {ns}/{name}: {e}"));
    }
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get(CA_BUNDLE_KEY))
        .cloned()
        .ok_or_else(|| format!("configmap {ns}/{name} has no {CA_BUNDLE_KEY}"))?;
    Ok(base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or(text))
}

/// A kubeconfig's `clusters[0].cluster.certificate-authority-data`, decoded.
fn kubeconfig_ca(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let config: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let encoded = config["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .unwrap_or("");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("{}: certificate-authority-data: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The kubeconfig at `path` with `clusters[0]`'s CA replaced.
fn with_kubeconfig_ca(path: &std::path::Path, ca: &str) -> Result<Vec<u8>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut config: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let cluster = config
        .get_mut("clusters")
        .and_then(|c| c.get_mut(0))
        .and_then(|c| c.get_mut("cluster"))
        .and_then(|c| c.as_mapping_mut())
        .ok_or_else(|| format!("{}: no clusters[0].cluster", path.display()))?;
    cluster.insert(
        "certificate-authority-data".into(),
        base64::engine::general_purpose::STANDARD.encode(ca).into(),
    );
    serde_yaml::to_string(&config)
        .map(String::into_bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// What the certificate writer does about the kubeconfig CA (release-4.16
/// `certificate_writer.go`).
#[derive(Debug, PartialEq, Eq)]
pub struct KubeconfigPlan {
    /// `kubeConfigDiff && !allCertsThere`: write `/etc/kubernetes/kubeconfig`.
    pub rewrite: bool,
    /// Every added certificate is a localhost or load-balancer serving signer.
    pub defer_restart: bool,
    pub log: Vec<String>,
}

/// Serving signers whose rotation does not restart the kubelet: it reaches the API through
/// neither (upstream's list).
pub const DEFERRED_SIGNERS: &[&str] = &[
    "kube-apiserver-localhost-signer",
    "openshift-kube-apiserver-operator_localhost-recovery-serving-signer",
    "kube-apiserver-lb-signer",
];

const END_CERTIFICATE: &str = "-----END CERTIFICATE-----";

/// Compare the on-disk kubeconfig CA with `kubeconfig-data`'s: split both on the END marker;
/// a configmap certificate missing on disk is added; one added certificate from outside
/// `DEFERRED_SIGNERS` means the kubelet restarts now.
pub fn plan_kubeconfig(on_disk: &str, server_ca: &str) -> KubeconfigPlan {
    let pieces = |text: &str| -> Vec<String> {
        text.split(END_CERTIFICATE)
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()
    };
    let (disk, wanted) = (pieces(on_disk), pieces(server_ca));
    let differs = on_disk.trim() != server_ca.trim();
    let mut all_there = true;
    let mut defer_restart = true;
    let mut log = Vec::new();
    for piece in wanted.iter().filter(|p| !disk.contains(p)) {
        all_there = false;
        let pem = format!("{piece}\n{END_CERTIFICATE}\n");
        let name = crate::pki::subjects(&pem)
            .ok()
            .and_then(|s| s.into_iter().next())
            .unwrap_or_default();
        if !DEFERRED_SIGNERS.iter().any(|s| name.contains(s)) {
            defer_restart = false;
            log.push(format!(
                "Need to restart kubelet: new certificate {name:?} in the kube-apiserver serving CA bundle"
            ));
        }
    }
    KubeconfigPlan {
        rewrite: differs && !all_there,
        defer_restart,
        log,
    }
}

async fn systemctl(env: &AgentEnv, args: &[&str]) -> Result<(), String> {
    let out = env.host.systemctl(args).await?;
    if out.exit_code != 0 {
        return Err(format!(
            "systemctl {}: exit {}: {}",
            args.join(" "),
            out.exit_code,
            out.stderr.trim()
        ));
    }
    Ok(())
}

/// Why a sync failed: the API (try again) or this node's state (also marks it Degraded).
enum SyncError {
    Transient(String),
    Node(String),
}

impl From<String> for SyncError {
    fn from(e: String) -> Self {
        SyncError::Transient(e)
    }
}

/// Whether the node's state and reason annotations are these.
async fn node_says(env: &AgentEnv, state: &str, reason: &str) -> bool {
    let Ok(node) = Api::<Node>::all(env.client.clone()).get(&env.node_name).await else {
        return false;
    };
    let a = node.metadata.annotations.unwrap_or_default();
    a.get(STATE).map(String::as_str) == Some(state) && a.get(REASON).map(String::as_str) == Some(reason)
}

/// Back to Done, but only from the Degraded this writer set: a Degraded from a failed update
/// or config drift is not the writer's to clear.
async fn clear_own_degraded(env: &AgentEnv, reason: &str) {
    if node_says(env, STATE_DEGRADED, reason).await {
        set_state(env, STATE_DONE, "").await;
    }
}

async fn set_state(env: &AgentEnv, state: &str, reason: &str) {
    let patch = json!({"metadata": {"annotations": {STATE: state, REASON: reason}}});
    let _ = Api::<Node>::all(env.client.clone())
        .patch(&env.node_name, &PatchParams::default(), &Patch::Merge(patch))
        .await;
}

/// Where the 4.16 writer puts the internal registry's pull secret, and where a per-role secret
/// may be mounted (`syncOSImagePullSecrets`).
pub const INTERNAL_REGISTRY_PULL_SECRET: &str = "/etc/mco/internal-registry-pull-secret.json";
pub const MOUNTED_PULL_SECRETS: &str = "/run/secrets/os-image-pull-secrets";
/// The registry CA directory (`imageCAFilePath`).
pub const REGISTRY_CA_DIR: &str = "/etc/docker/certs.d";

/// `spec.internalRegistryPullSecret` merged with the node role's mounted secret (its
/// `.dockerconfigjson`, or a legacy `.dockercfg`); the mounted entries win. None when the
/// ControllerConfig has no secret.
fn pull_secret(env: &AgentEnv, cc: &DynamicObject, node: &Node) -> Result<Option<Vec<u8>>, SyncError> {
    let Some(encoded) = cc.data["spec"]["internalRegistryPullSecret"]
        .as_str()
        .filter(|e| !e.is_empty())
    else {
        return Ok(None);
    };
    let node_error = |e: String| SyncError::Node(e);
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| node_error(format!("controllerconfig spec.internalRegistryPullSecret: {e}")))?;
    let mut merged: serde_json::Value = serde_json::from_slice(&decoded).map_err(|e| {
        node_error(format!(
            "controllerconfig spec.internalRegistryPullSecret is not JSON: {e}"
        ))
    })?;
    let mut roles: Vec<&str> = node
        .metadata
        .labels
        .iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .collect();
    roles.sort();
    let Some(role) = roles.first() else {
        return Err(node_error(format!(
            "node {} has no node-role.kubernetes.io/<role> label: cannot tell which mounted pull secret under {MOUNTED_PULL_SECRETS} applies",
            env.node_name
        )));
    };
    let dir = format!("{MOUNTED_PULL_SECRETS}/{role}");
    let mounted = [".dockerconfigjson", ".dockercfg"].into_iter().find_map(|name| {
        let path = format!("{dir}/{name}");
        std::fs::read(env.path(&path))
            .ok()
            .map(|bytes| (path, name, bytes))
    });
    if let Some((path, name, bytes)) = mounted {
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| node_error(format!("{path} is not JSON: {e}")))?;
        let auths = if name == ".dockercfg" {
            value
        } else {
            value["auths"].clone()
        };
        if let Some(from) = auths.as_object() {
            let Some(top) = merged.as_object_mut() else {
                return Err(node_error(
                    "controllerconfig spec.internalRegistryPullSecret is not a JSON object".into(),
                ));
            };
            let into = top.entry("auths").or_insert_with(|| json!({}));
            if let Some(into) = into.as_object_mut() {
                for (registry, credentials) in from {
                    into.insert(registry.clone(), credentials.clone());
                }
            }
        }
    }
    serde_json::to_vec(&merged)
        .map(Some)
        .map_err(|e| node_error(e.to_string()))
}

/// The registry CAs (`imageRegistryBundleData` then `imageRegistryBundleUserData`): with no
/// `/etc/docker/certs.d`, none; otherwise every subdirectory that no CA's raw file name equals
/// is removed, and each CA goes to `<file with ".." read as ":">/ca.crt`. A file name that
/// would leave the directory (a `/` in it, or empty or `.`) is refused with an error in the log
/// and nothing written for it.
fn sync_registry_cas(env: &AgentEnv, cc: &DynamicObject) -> Result<(), SyncError> {
    let dir = env.path(REGISTRY_CA_DIR);
    let Ok(existing) = std::fs::read_dir(&dir) else {
        env.log(&format!("{REGISTRY_CA_DIR} does not exist yet"));
        return Ok(());
    };
    let spec = &cc.data["spec"];
    let mut cas = Vec::new();
    for entry in spec["imageRegistryBundleData"]
        .as_array()
        .into_iter()
        .chain(spec["imageRegistryBundleUserData"].as_array())
        .flatten()
    {
        let file = entry["file"].as_str().unwrap_or("").to_string();
        if file.is_empty() || file == "." || file.contains('/') || file.contains('\0') {
            env.log(&format!(
                "refusing image registry CA {file:?}: its directory would not be a child of {REGISTRY_CA_DIR}"
            ));
            continue;
        }
        let data = base64::engine::general_purpose::STANDARD
            .decode(entry["data"].as_str().unwrap_or(""))
            .map_err(|e| SyncError::Node(format!("image registry CA {file:?}: {e}")))?;
        cas.push((file, data));
    }
    for stale in existing.flatten() {
        let name = stale.file_name().to_string_lossy().into_owned();
        if stale.path().is_dir() && !cas.iter().any(|(file, _)| *file == name) {
            std::fs::remove_dir_all(stale.path()).map_err(|e| format!("{REGISTRY_CA_DIR}/{name}: {e}"))?;
        }
    }
    for (file, data) in cas {
        let path = format!("{REGISTRY_CA_DIR}/{}/ca.crt", file.replace("..", ":"));
        write_to_disk(env, &path, data).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

async fn sync(env: &AgentEnv, cc: &DynamicObject) -> Result<(), SyncError> {
    let nodes: Api<Node> = Api::all(env.client.clone());
    let node = nodes
        .get(&env.node_name)
        .await
        .map_err(|e| format!("node {}: {e}", env.node_name))?;
    let annotations = node.metadata.annotations.clone().unwrap_or_default();
    let rv = cc.metadata.resource_version.clone().unwrap_or_default();
    let rotate = cc
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SERVICE_CA_ROTATE))
        .is_some_and(|v| v == "true");
    let rotate_value = cc
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SERVICE_CA_ROTATE))
        .cloned()
        .unwrap_or_default();
    let observed = annotations
        .get(LAST_OBSERVED_SERVER_CA)
        .cloned()
        .unwrap_or_default();
    let mut restart_kubelet = None;
    if annotations.get(LAST_SYNCED_CONTROLLER_CONFIG) != Some(&rv) || rotate {
        let mut path_to_data: Vec<(String, Vec<u8>)> = Vec::new();
        for (path, field) in CERTIFICATE_FILES {
            let encoded = cc.data["spec"][*field].as_str().unwrap_or("");
            let data = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| SyncError::Node(format!("controllerconfig spec.{field}: {e}")))?;
            path_to_data.push((path.to_string(), data));
        }
        if let Some(secret) = pull_secret(env, cc, &node)? {
            path_to_data.push((INTERNAL_REGISTRY_PULL_SECRET.to_string(), secret));
        }
        if rotate && observed != "true" {
            // As upstream: a configmap that cannot be read rules out the kubeconfig update and
            // the restart, not the rest of the sync.
            match kubeconfig_data(env).await {
                Err(e) => env.log(&format!(
                    "cannot read the kube-apiserver serving CA for the kubeconfigs: {e}"
                )),
                Ok(server_ca) => {
                    let on_disk = kubeconfig_ca(&env.path(NODE_KUBECONFIG))?;
                    let plan = plan_kubeconfig(&on_disk, &server_ca);
                    for line in &plan.log {
                        env.log(line);
                    }
                    if plan.rewrite {
                        let updated = with_kubeconfig_ca(&env.path(NODE_KUBECONFIG), &server_ca)?;
                        path_to_data.push((NODE_KUBECONFIG.to_string(), updated));
                        if !plan.defer_restart && !on_disk.trim().is_empty() {
                            restart_kubelet = Some(server_ca);
                        }
                    }
                }
            }
        }
        for (path, data) in path_to_data {
            write_to_disk(env, &path, data).map_err(|e| format!("{path}: {e}"))?;
        }
        // The restart comes before anything else that can fail: a retry compares against the
        // kubeconfig just written and would not restart again.
        if let Some(server_ca) = restart_kubelet {
            env.log("restarting kubelet due to server-ca rotation");
            systemctl(env, &["stop", "kubelet"]).await?;
            let updated = with_kubeconfig_ca(&env.path(KUBELET_KUBECONFIG), &server_ca)?;
            write_to_disk(env, KUBELET_KUBECONFIG, updated)
                .map_err(|e| format!("{KUBELET_KUBECONFIG}: {e}"))?;
            systemctl(env, &["daemon-reload"]).await?;
            systemctl(env, &["start", "kubelet"]).await?;
        }
        sync_registry_cas(env, cc)?;
    }
    let mut set = serde_json::Map::new();
    set.insert(LAST_SYNCED_CONTROLLER_CONFIG.into(), json!(rv));
    if observed != rotate_value {
        set.insert(LAST_OBSERVED_SERVER_CA.into(), json!(rotate_value));
    }
    let patch = json!({"metadata": {"annotations": set}});
    nodes
        .patch(&env.node_name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(|e| format!("node {}: {e}", env.node_name))?;
    env.log(&format!(
        "Certificate was synced from controllerconfig resourceVersion {rv}"
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fake_apiserver::CertificateAuthority;

    fn ca(cn: &str) -> String {
        CertificateAuthority::generate(cn).unwrap().cert_pem
    }

    #[test]
    fn the_kubeconfig_plan_follows_the_added_certificates() {
        let (current, next) = (ca("kube-apiserver-service-network-signer"), ca("serving-ca-2"));
        let localhost = ca("openshift-kube-apiserver-operator_kube-apiserver-localhost-signer@1767600000");
        let lb = ca("kube-apiserver-lb-signer");

        let same = plan_kubeconfig(&current, &current);
        assert!(!same.rewrite && same.log.is_empty(), "{same:?}");

        let added = plan_kubeconfig(&current, &format!("{current}{next}"));
        assert!(added.rewrite && !added.defer_restart, "{added:?}");
        assert!(added.log[0].contains("serving-ca-2"), "{added:?}");

        let deferred = plan_kubeconfig(&current, &format!("{current}{localhost}{lb}"));
        assert!(deferred.rewrite && deferred.defer_restart, "{deferred:?}");

        let mixed = plan_kubeconfig(&current, &format!("{localhost}{next}"));
        assert!(mixed.rewrite && !mixed.defer_restart, "{mixed:?}");

        // Only removed: the bundle differs, but every configmap certificate is on disk.
        let removed = plan_kubeconfig(&format!("{current}{next}"), &current);
        assert!(!removed.rewrite, "{removed:?}");
    }
}
