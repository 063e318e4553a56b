//! The bootstrap render of an upstream machine-config-controller (`--controller-binary`): what
//! a real install's bootstrap node runs before the cluster has a controller,
//! `machine-config-controller bootstrap --templates … --manifest-dir … --dest-dir …
//! --pull-secret …` (release-4.12/4.14/4.16 cmd/machine-config-controller/bootstrap.go,
//! pkg/controller/bootstrap/bootstrap.go). Its rendered configs are what the nodes boot with;
//! the controller that starts in the cluster later must arrive at the same names (PR #3513).
//!
//! The manifests are the cluster's objects as the installer gives them to the bootstrap MCO: the
//! ControllerConfig with the kubelet CA bundle of a cluster whose bootstrap has not completed,
//! the MachineConfigPools and the MachineConfigs that are not rendered ones, whatever
//! KubeletConfigs, ContainerRuntimeConfigs, image mirror policies and ClusterImagePolicies the
//! cluster holds (a user's install manifests, as files in `fixtures/cluster/`), the FeatureGate,
//! Node and Image configs `cluster`; the pull secret is `openshift-config/pull-secret`. The
//! controller reads the release it renders for from `RELEASE_VERSION` (pkg/version), which picks
//! the FeatureGate's gates; the ControllerConfig carries the controller's own version as the
//! operator stamps it, or the render refuses it.

use super::{ClusterError, upstream::UpstreamController};
use crate::mco::api::{controller_configs, machine_config_pools, machine_configs};
use crate::mco::machine_config::MachineConfigSpec;
use base64::Engine;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

/// An object as a manifest: its kind, its name (and labels), its spec, and its status where the
/// bootstrap reads one (the FeatureGate's gates per release).
fn manifest(object: &DynamicObject, api_version: &str, kind: &str, keep_status: bool) -> Value {
    let data = &object.data;
    let mut out = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": object.metadata.name,
            "labels": object.metadata.labels,
        },
        "spec": data["spec"],
    });
    if keep_status && !data["status"].is_null() {
        out["status"] = data["status"].clone();
    }
    out
}

fn config_api(client: &kube::Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", kind);
    Api::all_with(client.clone(), &ApiResource::from_gvk_with_plural(&gvk, plural))
}

fn write(dir: &Path, name: &str, value: &Value) -> Result<(), ClusterError> {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string())
        .map_err(|e| ClusterError::Operator(format!("{}: {e}", path.display())))
}

/// The kinds besides pools, MachineConfigs and the ControllerConfig that a release's bootstrap
/// reads from its manifests, as `(group, version, kind, plural)`: what a user's install adds
/// (release-4.12 pkg/controller/bootstrap/bootstrap.go:110-133; 4.14 adds the mirror sets,
/// :129-132; 4.16 ClusterImagePolicy, :140). A release that does not know a kind skips its
/// manifest (`IsNotRegisteredError`, or "unhandled" in the type switch); a cluster that does not
/// serve one has none to give.
const USER_KINDS: [(&str, &str, &str, &str); 6] = [
    (
        "machineconfiguration.openshift.io",
        "v1",
        "KubeletConfig",
        "kubeletconfigs",
    ),
    (
        "machineconfiguration.openshift.io",
        "v1",
        "ContainerRuntimeConfig",
        "containerruntimeconfigs",
    ),
    (
        "operator.openshift.io",
        "v1alpha1",
        "ImageContentSourcePolicy",
        "imagecontentsourcepolicies",
    ),
    (
        "config.openshift.io",
        "v1",
        "ImageDigestMirrorSet",
        "imagedigestmirrorsets",
    ),
    (
        "config.openshift.io",
        "v1",
        "ImageTagMirrorSet",
        "imagetagmirrorsets",
    ),
    (
        "config.openshift.io",
        "v1alpha1",
        "ClusterImagePolicy",
        "clusterimagepolicies",
    ),
];

/// Write the bootstrap's manifests into `manifests`, as the installer hands them to the bootstrap
/// MCO: the ControllerConfig stamped with `controller_version` and given `kubelet_ca_bundle` as
/// its kubelet CA bundle, every pool and every MachineConfig that is not a rendered one, the
/// objects of [`USER_KINDS`] the cluster holds, and the FeatureGate, Node and Image configs
/// `cluster`. Returns the pools' names.
pub async fn write_manifests(
    admin: &kube::Client,
    controller_version: &str,
    kubelet_ca_bundle: &str,
    manifests: &Path,
) -> Result<Vec<String>, ClusterError> {
    let kube = |what: &str| {
        let what = what.to_string();
        move |e| ClusterError::kube(what, e)
    };
    std::fs::create_dir_all(manifests)
        .map_err(|e| ClusterError::Operator(format!("{}: {e}", manifests.display())))?;
    let mcfg = "machineconfiguration.openshift.io/v1";
    let cc = controller_configs(admin)
        .get("machine-config-controller")
        .await
        .map_err(kube("controllerconfig machine-config-controller"))?;
    let mut cc = manifest(&cc, mcfg, "ControllerConfig", false);
    // As the operator stamps it: the render refuses a ControllerConfig of another version.
    cc["metadata"]["annotations"] = json!({super::upstream::GENERATED_BY_VERSION: controller_version});
    cc["spec"]["kubeAPIServerServingCAData"] = base64::engine::general_purpose::STANDARD
        .encode(kubelet_ca_bundle)
        .into();
    write(manifests, "controllerconfig.json", &cc)?;
    let pools = machine_config_pools(admin)
        .list(&ListParams::default())
        .await
        .map_err(kube("machineconfigpools"))?;
    let mut roles = Vec::new();
    for pool in &pools {
        let name = pool.metadata.name.clone().unwrap_or_default();
        write(
            manifests,
            &format!("pool-{name}.json"),
            &manifest(pool, mcfg, "MachineConfigPool", false),
        )?;
        roles.push(name);
    }
    let configs = machine_configs(admin)
        .list(&ListParams::default())
        .await
        .map_err(kube("machineconfigs"))?;
    for config in configs.iter().filter(|c| {
        !c.metadata
            .name
            .as_deref()
            .unwrap_or_default()
            .starts_with("rendered-")
    }) {
        let name = config.metadata.name.clone().unwrap_or_default();
        write(
            manifests,
            &format!("mc-{name}.json"),
            &manifest(config, mcfg, "MachineConfig", false),
        )?;
    }
    write_user_objects(admin, manifests).await?;
    for (kind, plural, status) in [
        ("FeatureGate", "featuregates", true),
        ("Node", "nodes", false),
        ("Image", "images", false),
    ] {
        if let Some(object) = config_api(admin, kind, plural)
            .get_opt("cluster")
            .await
            .map_err(kube(&format!("{plural}.config.openshift.io cluster")))?
        {
            let file = format!("{}.json", kind.to_lowercase());
            write(
                manifests,
                &file,
                &manifest(&object, "config.openshift.io/v1", kind, status),
            )?;
        }
    }
    Ok(roles)
}

/// The objects of [`USER_KINDS`] the cluster holds, a manifest each.
async fn write_user_objects(admin: &kube::Client, manifests: &Path) -> Result<(), ClusterError> {
    for (group, version, kind, plural) in USER_KINDS {
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let api: Api<DynamicObject> =
            Api::all_with(admin.clone(), &ApiResource::from_gvk_with_plural(&gvk, plural));
        let objects = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(e) => return Err(ClusterError::kube(format!("{plural}.{group}"), e)),
        };
        let api_version = format!("{group}/{version}");
        for object in &objects {
            let name = object.metadata.name.clone().unwrap_or_default();
            write(
                manifests,
                &format!("{}-{name}.json", kind.to_lowercase()),
                &manifest(object, &api_version, kind, false),
            )?;
        }
    }
    Ok(())
}

/// The bootstrap's `--pull-secret` file, in the directory the render is given.
const PULL_SECRET_FILE: &str = "pull-secret.json";

/// `openshift-config/pull-secret` as the bootstrap's `--pull-secret` file.
async fn write_pull_secret(admin: &kube::Client, dir: &Path) -> Result<(), ClusterError> {
    let secret = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(admin.clone(), "openshift-config")
        .get("pull-secret")
        .await
        .map_err(|e| ClusterError::kube("secret openshift-config/pull-secret".to_string(), e))?;
    let mut secret_json = serde_json::to_value(&secret).map_err(|e| ClusterError::Operator(e.to_string()))?;
    secret_json["apiVersion"] = "v1".into();
    secret_json["kind"] = "Secret".into();
    write(dir, PULL_SECRET_FILE, &secret_json)
}

impl UpstreamController {
    /// The rendered config of each pool, `role → (name, spec)`, as this controller's bootstrap
    /// renders it with `kubelet_ca_bundle` as the ControllerConfig's kubelet CA bundle; `dir`
    /// holds the manifests and its output.
    pub async fn bootstrap_render(
        &self,
        admin: &kube::Client,
        kubelet_ca_bundle: &str,
        payload_version: &str,
        dir: &Path,
    ) -> Result<BTreeMap<String, (String, MachineConfigSpec)>, ClusterError> {
        let manifests = dir.join("manifests");
        let dest = dir.join("dest");
        let version = self.version().map_err(ClusterError::Operator)?;
        let roles = write_manifests(admin, &version, kubelet_ca_bundle, &manifests).await?;
        write_pull_secret(admin, dir).await?;
        let pull_secret = dir.join(PULL_SECRET_FILE);
        // Its `--templates` (a root flag, as `--templates=DIR` or `--templates DIR`); `start`'s
        // other arguments are not the bootstrap's.
        let mut templates: Vec<&String> = Vec::new();
        let mut args = self.args.iter();
        while let Some(arg) = args.next() {
            if arg.starts_with("--templates=") {
                templates.push(arg);
            } else if arg == "--templates" {
                templates.push(arg);
                templates.extend(args.next());
            }
        }
        let out = tokio::process::Command::new(&self.binary)
            .arg("bootstrap")
            .args(templates)
            .arg("--manifest-dir")
            .arg(&manifests)
            .arg("--dest-dir")
            .arg(&dest)
            .arg("--pull-secret")
            .arg(&pull_secret)
            .env("RELEASE_VERSION", payload_version)
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| ClusterError::Operator(format!("{} bootstrap: {e}", self.binary.display())))?;
        if !out.status.success() {
            let log = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = log.lines().rev().take(10).collect();
            return Err(ClusterError::Operator(format!(
                "{} bootstrap exited with {}: {}",
                self.binary.display(),
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )));
        }
        let mut rendered = BTreeMap::new();
        for role in roles {
            let prefix = format!("rendered-{role}-");
            let configs_dir = dest.join("machine-configs");
            let entries = std::fs::read_dir(&configs_dir)
                .map_err(|e| ClusterError::Operator(format!("{}: {e}", configs_dir.display())))?;
            for entry in entries.flatten() {
                let file = entry.file_name().to_string_lossy().to_string();
                let Some(name) = file.strip_suffix(".yaml").filter(|n| n.starts_with(&prefix)) else {
                    continue;
                };
                let text = std::fs::read_to_string(entry.path())
                    .map_err(|e| ClusterError::Operator(format!("{}: {e}", entry.path().display())))?;
                let object: Value = serde_yaml::from_str(&text)
                    .map_err(|e| ClusterError::Operator(format!("{}: {e}", entry.path().display())))?;
                let spec = MachineConfigSpec::of(&object)
                    .map_err(|e| ClusterError::Operator(format!("{}: {e}", entry.path().display())))?;
                rendered.insert(role.clone(), (name.to_string(), spec));
            }
        }
        Ok(rendered)
    }
}
