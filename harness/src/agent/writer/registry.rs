//! The writer's registry trust (`certificate_writer.go`): the internal registry's pull secret
//! merged with a mounted per-role one (`syncOSImagePullSecrets`, 4.16 only), and the image
//! registry CAs under `/etc/docker/certs.d` (4.14 and 4.16).

use super::AgentEnv;
use super::step::{SyncError, write_to_disk};
use crate::mco::controller_config::ControllerConfigSpec;
use crate::profile::MissingRegistryCaDir;
use base64::Engine;
use k8s_openapi::api::core::v1::Node;
use serde_json::json;

pub use crate::mco::{INTERNAL_REGISTRY_PULL_SECRET, REGISTRY_CA_DIR};
/// Where a per-role pull secret may be mounted (`syncOSImagePullSecrets`).
pub const MOUNTED_PULL_SECRETS: &str = "/run/secrets/os-image-pull-secrets";

/// The node's first role (`node-role.kubernetes.io/<role>` labels, sorted), or the error
/// upstream's `syncOSImagePullSecrets` returns without one, in its words (release-4.16
/// certificate_writer.go:435-440). Upstream's Node worker calls it too on every sync of the
/// Node (daemon.go:759), so a node that loses its role label goes Degraded whichever of the
/// Node and the ControllerConfig changes the daemon sees first.
pub(super) fn first_role<'a>(env: &AgentEnv, node: &'a Node) -> Result<&'a str, String> {
    node.metadata
        .labels
        .iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .min()
        .ok_or_else(|| format!("node {} has no node-role.kubernetes.io label", env.node_name))
}

/// `spec.internalRegistryPullSecret` merged with the node role's mounted secret (its
/// `.dockerconfigjson`, or a legacy `.dockercfg`); the mounted entries win. With no mounted
/// secret, the ControllerConfig's bytes as they are (empty ones too).
pub(super) fn pull_secret(
    env: &AgentEnv,
    spec: &ControllerConfigSpec,
    node: &Node,
) -> Result<Option<Vec<u8>>, SyncError> {
    let node_error = |e: String| SyncError::Node(e);
    let decoded = spec
        .data("internalRegistryPullSecret")
        .map_err(|e| node_error(format!("controllerconfig spec.internalRegistryPullSecret: {e}")))?;
    let role = first_role(env, node).map_err(node_error)?;
    let dir = format!("{MOUNTED_PULL_SECRETS}/{role}");
    let mounted = [".dockerconfigjson", ".dockercfg"].into_iter().find_map(|name| {
        let path = format!("{dir}/{name}");
        std::fs::read(env.path(&path))
            .ok()
            .map(|bytes| (path, name, bytes))
    });
    // No mounted secret: the ControllerConfig's bytes as they are, empty too (upstream writes
    // the file on every sync, release-4.16 certificate_writer.go:374-380, 452).
    let Some((path, name, bytes)) = mounted else {
        return Ok(Some(decoded));
    };
    let mut merged: serde_json::Value = serde_json::from_slice(&decoded).map_err(|e| {
        node_error(format!(
            "could not merge on-disk secrets with ControllerConfig: controllerconfig spec.internalRegistryPullSecret is not JSON: {e}"
        ))
    })?;
    {
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
                    if into.contains_key(registry) && !env.faults().later_auth_wins() {
                        continue;
                    }
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
/// `/etc/docker/certs.d`, none on 4.16 and all of them (the directory made) on 4.14; otherwise
/// every subdirectory that no CA's raw file name equals is removed, and each CA goes to
/// `<file with ".." read as ":">/ca.crt`. A file name that would leave the directory (a `/` in
/// it, or empty or `.`) is refused with an error in the log and nothing written for it.
pub(super) fn sync_registry_cas(
    env: &AgentEnv,
    spec: &ControllerConfigSpec,
    missing_dir: MissingRegistryCaDir,
) -> Result<(), SyncError> {
    let dir = env.path(REGISTRY_CA_DIR);
    let existing: Vec<std::fs::DirEntry> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.flatten().collect(),
        Err(e) => match missing_dir {
            MissingRegistryCaDir::WritesNoCa => {
                env.log(&format!("{REGISTRY_CA_DIR} does not exist yet: {e}"));
                return Ok(());
            }
            // release-4.14 certificate_writer.go:139-142: only "not exist" is let pass.
            MissingRegistryCaDir::Created if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            MissingRegistryCaDir::Created => {
                return Err(SyncError::Node(format!("{REGISTRY_CA_DIR}: {e}")));
            }
        },
    };
    let mut cas = Vec::new();
    for entry in spec.registry_bundles() {
        let file = entry.file.clone();
        if file.is_empty() || file == "." || file.contains('/') || file.contains('\0') {
            env.log(&format!(
                "refusing image registry CA {file:?}: its directory would not be a child of {REGISTRY_CA_DIR}"
            ));
            continue;
        }
        let data = base64::engine::general_purpose::STANDARD
            .decode(&entry.data)
            .map_err(|e| SyncError::Node(format!("image registry CA {file:?}: {e}")))?;
        cas.push((file, data));
    }
    // Upstream walks the entries as os.ReadDir gives them (DirEntry.IsDir: a symlink is not a
    // directory, whatever it points at) and only warns when one cannot be removed
    // (release-4.14 certificate_writer.go:144-159, release-4.16 :251-266).
    for stale in existing {
        let name = stale.file_name().to_string_lossy().into_owned();
        let is_dir = stale.file_type().is_ok_and(|t| t.is_dir());
        let stale_ca = is_dir && !cas.iter().any(|(file, _)| *file == name);
        if env.faults().removes_stale_registry_ca(stale_ca)
            && let Err(e) = std::fs::remove_dir_all(stale.path())
        {
            env.log(&format!(
                "Could not remove old certificate: {REGISTRY_CA_DIR}/{name}: {e}"
            ));
        }
    }
    for (file, data) in cas {
        let path = env
            .faults()
            .registry_ca_path(format!("{REGISTRY_CA_DIR}/{}/ca.crt", file.replace("..", ":")));
        write_to_disk(env, &path, data).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}
