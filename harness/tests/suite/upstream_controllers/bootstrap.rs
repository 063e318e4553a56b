//! The bootstrap render of upstream's controller (`machine-config-controller bootstrap`) is
//! given what an install hands the bootstrap MCO: besides pools, MachineConfigs and the
//! ControllerConfig, the KubeletConfigs, ContainerRuntimeConfigs and image mirror policies of the
//! user's install manifests. The manifests are checked here on every run; what a release's
//! bootstrap makes of a KubeletConfig, with that release's binary (opt-in, as the parent's tests).

use super::opt_in;
use crate::common::Controllers;
use base64::Engine;
use harness::Profile;
use harness::cluster::upstream::UpstreamController;
use harness::cluster::upstream_bootstrap::write_manifests;
use harness::mco::machine_config::MachineConfigSpec;
use harness::steps::oracle::ignition_file;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

const WORKER_POOL_LABEL: &str = "pools.operator.machineconfiguration.openshift.io/worker";

/// What a user's install could add, as `(apiVersion, kind, plural, object)`.
fn user_objects() -> Vec<(&'static str, &'static str, &'static str, Value)> {
    let selector = json!({"matchLabels": {WORKER_POOL_LABEL: ""}});
    vec![
        (
            "machineconfiguration.openshift.io/v1",
            "KubeletConfig",
            "kubeletconfigs",
            json!({"metadata": {"name": "set-max-pods"},
                   "spec": {"machineConfigPoolSelector": selector, "kubeletConfig": {"maxPods": 300}}}),
        ),
        (
            "machineconfiguration.openshift.io/v1",
            "ContainerRuntimeConfig",
            "containerruntimeconfigs",
            json!({"metadata": {"name": "set-pids-limit"},
                   "spec": {"machineConfigPoolSelector": selector, "containerRuntimeConfig": {"pidsLimit": 4096}}}),
        ),
        (
            "operator.openshift.io/v1alpha1",
            "ImageContentSourcePolicy",
            "imagecontentsourcepolicies",
            json!({"metadata": {"name": "mirror-ocp"},
                   "spec": {"repositoryDigestMirrors": [{"source": "quay.io/openshift-release-dev/ocp-release",
                                                         "mirrors": ["mirror.example.com/ocp/release"]}]}}),
        ),
        (
            "config.openshift.io/v1",
            "ImageDigestMirrorSet",
            "imagedigestmirrorsets",
            json!({"metadata": {"name": "digest-mirrors"},
                   "spec": {"imageDigestMirrors": [{"source": "registry.example.com/team",
                                                    "mirrors": ["mirror.example.com/team"]}]}}),
        ),
        (
            "config.openshift.io/v1",
            "ImageTagMirrorSet",
            "imagetagmirrorsets",
            json!({"metadata": {"name": "tag-mirrors"},
                   "spec": {"imageTagMirrors": [{"source": "registry.example.com/tags",
                                                 "mirrors": ["mirror.example.com/tags"]}]}}),
        ),
    ]
}

async fn create_user_objects(client: &kube::Client) {
    for (api_version, kind, plural, object) in user_objects() {
        let (group, version) = api_version.split_once('/').unwrap();
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let mut object = object;
        object["apiVersion"] = api_version.into();
        object["kind"] = kind.into();
        api.create(&PostParams::default(), &serde_json::from_value(object).unwrap())
            .await
            .unwrap_or_else(|e| panic!("creating {kind}: {e}"));
    }
}

/// Every manifest in `dir`, by file name.
fn read_manifests(dir: &Path) -> BTreeMap<String, Value> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let text = std::fs::read_to_string(entry.path()).unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                serde_json::from_str(&text).unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bootstrap_manifests_carry_the_installs_kubelet_configs_and_mirror_policies() {
    let c = Controllers::start(Profile::Ocp416, "fresh-install", false).await;
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before");
    write_manifests(&c.client, "4.16.0-test", "BUNDLE", &before)
        .await
        .unwrap();
    let before = read_manifests(&before);
    for (_, kind, _, _) in user_objects() {
        let prefix = format!("{}-", kind.to_lowercase());
        assert!(
            !before.keys().any(|name| name.starts_with(&prefix)),
            "a cluster without a {kind} gave the bootstrap one: {:?}",
            before.keys()
        );
    }

    create_user_objects(&c.client).await;
    let after = dir.path().join("after");
    let roles = write_manifests(&c.client, "4.16.0-test", "BUNDLE", &after)
        .await
        .unwrap();
    let after = read_manifests(&after);
    for (api_version, kind, _, object) in user_objects() {
        let name = object["metadata"]["name"].as_str().unwrap();
        let file = format!("{}-{name}.json", kind.to_lowercase());
        let manifest = after
            .get(&file)
            .unwrap_or_else(|| panic!("no {file} among {:?}", after.keys()));
        assert_eq!(manifest["apiVersion"], api_version, "{file}");
        assert_eq!(manifest["kind"], kind, "{file}");
        assert_eq!(manifest["metadata"]["name"], name, "{file}");
        assert_eq!(manifest["spec"], object["spec"], "{file}");
    }
    // What was there before is there still, with the ControllerConfig as the operator stamps it.
    for file in before.keys() {
        assert!(
            after.contains_key(file),
            "{file} is gone once the install adds objects"
        );
    }
    let cc = &after["controllerconfig.json"];
    assert_eq!(
        cc["metadata"]["annotations"]["machineconfiguration.openshift.io/generated-by-version"],
        "4.16.0-test"
    );
    let bundle = base64::engine::general_purpose::STANDARD
        .decode(cc["spec"]["kubeAPIServerServingCAData"].as_str().unwrap())
        .unwrap();
    assert_eq!(bundle, b"BUNDLE");
    let mut roles = roles;
    roles.sort();
    assert_eq!(roles, ["master", "worker"]);
    for role in &roles {
        assert_eq!(after[&format!("pool-{role}.json")]["kind"], "MachineConfigPool");
    }
}

/// The value of `key` in the kubelet configuration file of a rendered config.
fn kubelet_setting(spec: &MachineConfigSpec, key: &str) -> Value {
    let file = spec
        .files()
        .iter()
        .map(|f| ignition_file(f).unwrap())
        .find(|(path, _, _)| path == "/etc/kubernetes/kubelet.conf")
        .expect("the rendered config has /etc/kubernetes/kubelet.conf");
    let config: Value = serde_yaml::from_slice(&file.1).unwrap();
    config[key].clone()
}

/// With a release's controller: the bootstrap renders a KubeletConfig of the install into the
/// pools it selects (its kubelet-config controller's bootstrap, release-4.12/4.14/4.16
/// pkg/controller/kubelet-config/kubelet_config_bootstrap.go), and not into the others.
async fn bootstrap_renders_a_kubeletconfig(release: &str, profile: Profile) {
    let Some((binary, templates)) = opt_in(release) else {
        return;
    };
    let c = Controllers::start(profile, "fresh-install", false).await;
    create_user_objects(&c.client).await;
    let upstream = UpstreamController {
        binary,
        args: vec![format!("--templates={}", templates.display())],
    };
    let bundle = harness::cluster::kubelet_ca_bundle(profile, &c.operator.sources().await.unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rendered = upstream
        .bootstrap_render(&c.client, &bundle, profile.payload_version(), dir.path())
        .await
        .unwrap();
    let (worker, worker_spec) = &rendered["worker"];
    let (master, master_spec) = &rendered["master"];
    assert_eq!(
        kubelet_setting(worker_spec, "maxPods"),
        json!(300),
        "{worker}: the KubeletConfig selecting the worker pool is not in its kubelet.conf"
    );
    assert_ne!(
        kubelet_setting(master_spec, "maxPods"),
        json!(300),
        "{master}: a KubeletConfig for the worker pool reached the master pool"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_12s_bootstrap_renders_the_installs_kubeletconfig() {
    bootstrap_renders_a_kubeletconfig("4.12", Profile::Ocp412).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_14s_bootstrap_renders_the_installs_kubeletconfig() {
    bootstrap_renders_a_kubeletconfig("4.14", Profile::Ocp414).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_16s_bootstrap_renders_the_installs_kubeletconfig() {
    bootstrap_renders_a_kubeletconfig("4.16", Profile::Ocp416).await;
}
