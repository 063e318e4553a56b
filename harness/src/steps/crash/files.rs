//! The files a crash run watches and what each should hold once the sync is done, computed from
//! the API objects the run read (the rendered MachineConfig's Ignition files on 4.12, the
//! ControllerConfig's fields as release-4.16 `writeToDisk` writes them otherwise), never with the
//! reference daemon's code; the paths are upstream's, written out again.

use anyhow::Context;
use base64::Engine;
use harness::mco::machine_config::MachineConfigSpec;
use harness::scenario::{CrashRun, FileState, Files};
use harness::steps::oracle;

/// The prefix of the MCO's node annotations (`machineconfiguration.openshift.io/currentConfig`, …),
/// written out here rather than taken from the reference.
pub(super) const ANNOTATION: &str = "machineconfiguration.openshift.io/";

/// The files the kubelet reads whatever the config: its client CA, and the kubeconfigs of the
/// node and of the kubelet (MCO `pkg/daemon/constants`, the kubelet's `--kubeconfig`).
const KUBELET_CA: &str = "/etc/kubernetes/kubelet-ca.crt";
const KUBECONFIGS: &[&str] = &["/etc/kubernetes/kubeconfig", "/var/lib/kubelet/kubeconfig"];
/// The cloud provider CA (release-4.16 `certificate_writer.go`, `caBundleFilePath` of the
/// cloud config).
const CLOUD_CA: &str = "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem";
/// Registry CAs CRI-O reads (release-4.16 `certificate_writer.go`: `/etc/docker/certs.d/<file>/ca.crt`,
/// `..` in the file name standing for `:`).
const REGISTRY_CA_DIR: &str = "/etc/docker/certs.d";

/// The files the kubelet and CRI-O read on the node, from what its config writes: on a release
/// whose rendered config carries kubelet-ca.crt (4.12), every file of the node's rendered
/// config; otherwise the files the ControllerConfig's fields give (kubelet-ca.crt, the cloud CA
/// when there is one, the registry CAs). The kubeconfigs on both.
pub(super) async fn watched_files(
    c: &harness::scenario::Scenario,
    node: &str,
) -> anyhow::Result<Vec<String>> {
    let annotations = c.node_annotations(node).await?;
    let current = annotations
        .get(&format!("{ANNOTATION}currentConfig"))
        .with_context(|| format!("{node} has no currentConfig"))?;
    let rendered = c.machine_config_spec(current).await?;
    let mut out: Vec<String> = KUBECONFIGS.iter().map(|s| s.to_string()).collect();
    if carries_kubelet_ca(&rendered) {
        for file in rendered.files() {
            out.push(file.path.clone());
        }
    } else {
        let spec = c.controller_config_spec().await?;
        out.push(KUBELET_CA.into());
        if !oracle::spec_bytes(&spec, "cloudProviderCAData")
            .unwrap_or_default()
            .is_empty()
        {
            out.push(CLOUD_CA.into());
        }
        for entry in spec
            .image_registry_bundle_data
            .iter()
            .chain(&spec.image_registry_bundle_user_data)
        {
            out.push(format!(
                "{REGISTRY_CA_DIR}/{}/ca.crt",
                entry.file.replace("..", ":")
            ));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

pub(super) fn carries_kubelet_ca(spec: &MachineConfigSpec) -> bool {
    spec.files().iter().any(|f| f.path == KUBELET_CA)
}

/// What each watched file should be once the run's sync is done: from the rendered config it
/// was given (4.12) or the ControllerConfig (`writeToDisk`: the field's bytes and a newline;
/// an existing file's mode kept, a new one 0644); a file the change does not write, as it was.
/// Owners: as before, a new file the node's root user's.
pub(crate) fn expected_files(run: &CrashRun, root: (u32, u32)) -> anyhow::Result<Files> {
    let mut out = run.before.clone();
    match &run.desired {
        Some((_, spec)) if carries_kubelet_ca(spec) => {
            for file in spec.files() {
                if !out.contains_key(&file.path) {
                    continue;
                }
                let (path, contents, mode) = oracle::ignition_file(file)?;
                let (uid, gid) = owner(run, &path, root);
                out.insert(
                    path,
                    Some(FileState {
                        contents,
                        mode,
                        uid,
                        gid,
                    }),
                );
            }
        }
        _ => {
            let spec = &run.controller_config.0;
            let mut written = Vec::new();
            for entry in spec
                .image_registry_bundle_data
                .iter()
                .chain(&spec.image_registry_bundle_user_data)
            {
                let path = format!("{REGISTRY_CA_DIR}/{}/ca.crt", entry.file.replace("..", ":"));
                if out.contains_key(&path) {
                    let data = base64::engine::general_purpose::STANDARD
                        .decode(&entry.data)
                        .with_context(|| {
                            format!(
                                "the ControllerConfig's registry CA {:?} is not base64",
                                entry.file
                            )
                        })?;
                    written.push((path, data));
                }
            }
            for (path, field) in [
                (KUBELET_CA, "kubeAPIServerServingCAData"),
                (CLOUD_CA, "cloudProviderCAData"),
            ] {
                if out.contains_key(path) {
                    written.push((path.to_string(), oracle::spec_bytes(spec, field)?));
                }
            }
            for (path, data) in written {
                let state = by_certificate_writer(run, &path, &data, root);
                out.insert(path, Some(state));
            }
        }
    }
    Ok(out)
}

/// A file's owner after the sync: as before, a new file the node's root user's.
fn owner(run: &CrashRun, path: &str, root: (u32, u32)) -> (u32, u32) {
    run.before
        .get(path)
        .cloned()
        .flatten()
        .map(|f| (f.uid, f.gid))
        .unwrap_or(root)
}

/// A file as the 4.14/4.16 certificate writer leaves it (`writeToDisk`): the bytes and a
/// newline, an existing file's mode kept, a new one 0644.
fn by_certificate_writer(run: &CrashRun, path: &str, data: &[u8], root: (u32, u32)) -> FileState {
    let old = run.before.get(path).cloned().flatten();
    let (uid, gid) = owner(run, path, root);
    FileState {
        contents: oracle::written_by_4_16(data),
        mode: old.map(|f| f.mode).unwrap_or(0o644),
        uid,
        gid,
    }
}
