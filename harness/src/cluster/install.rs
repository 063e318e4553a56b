//! What a freshly installed cluster holds before any operator reconciles: the namespaces, the
//! MCO CRDs and ControllerConfig from `fixtures/`, the signers of the starting state, the
//! installer's `initial-kube-apiserver-server-ca` (its five client signers as made at install:
//! `SignerRotation::seed`, `INSTALLER_CLIENT_CA_BUNDLE`), and `kube-system/bootstrap` once the
//! bootstrap node has handed over. Written through the API like everything else.

use super::names::{
    CA_BUNDLE_KEY, FIELD_MANAGER, INITIAL_KUBE_APISERVER_SERVER_CA, KUBE_APISERVER_SERVER_CA, KUBECONFIG_DATA,
};
use super::operator::BOOTSTRAP_CONFIGMAP;
use super::{ClusterError, SignerRotation};
use crate::Profile;
use crate::pki::StartingState;
use base64::Engine;
use fake_apiserver::manifests;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};
use std::path::Path;

/// The gates the upstream daemons and controllers ask about, as the Default feature set has them
/// (openshift/api `features/features.go`). A gate asked about that neither list names makes
/// library-go's reader panic (`feature "PinnedImages" is not registered in FeatureGates`), so every
/// gate of every release the suite runs is listed: main's daemon (IrreconcilableMachineConfig,
/// ImageModeStatusReporting); release-4.16's daemon (PinnedImages, MachineConfigNodes,
/// NodeDisruptionPolicy: Tech Preview in 4.16, so off by default; start.go:220, daemon.go,
/// drain.go) and its controller (the ExternalCloudProvider gates, Default in 4.16; ManagedBootImages,
/// OnClusterBuild, SigstoreImageVerification, ValidatingAdmissionPolicy, Tech Preview: release-4.16
/// pkg/controller, cmd/machine-config-controller/start.go). release-4.12's daemon reads no gates.
const ENABLED_GATES: &[&str] = &[
    "IrreconcilableMachineConfig",
    "ExternalCloudProvider",
    "ExternalCloudProviderAzure",
    "ExternalCloudProviderExternal",
    "ExternalCloudProviderGCP",
];
const DISABLED_GATES: &[&str] = &[
    "ImageModeStatusReporting",
    "PinnedImages",
    "MachineConfigNodes",
    "NodeDisruptionPolicy",
    "ManagedBootImages",
    "OnClusterBuild",
    "SigstoreImageVerification",
    "ValidatingAdmissionPolicy",
];

const CLUSTER_ID: &str = "6d3f1c9e-0b1a-4c57-9d7e-000000000001";
const RELEASE_IMAGE: &str = "quay.io/openshift-release-dev/ocp-release@sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// The namespaces `fixtures/cluster` makes (`00-namespaces.yaml`): those the cluster side writes
/// into.
pub fn namespaces(fixtures: &Path) -> Result<Vec<String>, ClusterError> {
    let loaded =
        manifests::load(&[fixtures.join("cluster")]).map_err(|e| ClusterError::Fixture(e.to_string()))?;
    Ok(loaded
        .iter()
        .filter(|m| m.object["kind"] == "Namespace" && m.object["apiVersion"] == "v1")
        .filter_map(|m| m.object["metadata"]["name"].as_str().map(str::to_string))
        .collect())
}

async fn apply(client: &kube::Client, object: &Value) -> Result<(), ClusterError> {
    let (api_version, kind) = (
        object["apiVersion"].as_str().unwrap_or(""),
        object["kind"].as_str().unwrap_or(""),
    );
    let name = object["metadata"]["name"].as_str().unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(name, &params, &Patch::Apply(object))
        .await
        .map_err(|e| ClusterError::kube(format!("{kind} {name}"), e))?;
    // A resource with a status subresource ignores status on the main resource, as a real API
    // server does; the status goes through `/status`, as its controller would write it.
    if let Some(status) = object.get("status") {
        let patch =
            json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "status": status});
        api.patch_status(name, &params, &Patch::Apply(&patch))
            .await
            .map_err(|e| ClusterError::kube(format!("{kind} {name} status"), e))?;
    }
    Ok(())
}

/// What the release payload puts in every cluster and node agents read at start: ClusterVersion
/// `version` with the release as its desired version, and FeatureGate `cluster` listing the
/// gates for that release. The upstream daemon waits up to a minute for the FeatureGate entry of
/// its payload version, found through ClusterVersion when it runs without `--payload-version`
/// (library-go `simple_featuregate_reader.go`), and exits if none comes.
async fn install_payload(client: &kube::Client, profile: Profile) -> Result<(), ClusterError> {
    let version = profile.payload_version();
    let cluster_version = json!({
        "apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "spec": {"clusterID": CLUSTER_ID, "channel": format!("stable-{}", minor(version))},
        "status": {
            "desired": {"version": version, "image": RELEASE_IMAGE},
            "history": [{"state": "Completed", "version": version, "image": RELEASE_IMAGE,
                "verified": false, "startedTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:30:00Z"}],
            "observedGeneration": 1, "versionHash": "", "availableUpdates": null,
        },
    });
    apply(client, &cluster_version).await?;
    let names = |gates: &[&str]| gates.iter().map(|g| json!({"name": g})).collect::<Vec<_>>();
    let feature_gate = json!({
        "apiVersion": "config.openshift.io/v1", "kind": "FeatureGate",
        "metadata": {"name": "cluster"},
        "spec": {},
        "status": {"featureGates": [{
            "version": version,
            "enabled": names(ENABLED_GATES),
            "disabled": names(DISABLED_GATES),
        }]},
    });
    apply(client, &feature_gate).await
}

/// `4.16` of `4.16.0`.
fn minor(version: &str) -> &str {
    version.rsplit_once('.').map_or(version, |(minor, _)| minor)
}

/// Where the cluster stands when a scenario begins, beyond its certificates' ages.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// The bootstrap node has handed over (`kube-system/bootstrap` exists).
    pub bootstrap_complete: bool,
    /// Installed on an earlier release and upgraded into this one: the kube-apiserver's serving
    /// CA bundle holds this CA (PEM) besides the one the nodes' kubeconfigs were made with (a
    /// signer KAS-O made in the cluster since), and no operator of this release has written
    /// `kubeconfig-data` yet.
    pub upgraded_with_serving_ca: Option<String>,
}

/// Install: `fixtures/crds`, `fixtures/cluster` (its namespaces first), the payload's ClusterVersion and
/// FeatureGate, the starting state's signers and the initial bundle; the API server's serving CA as `kube-apiserver-server-ca` and its copy
/// `kubeconfig-data` (what the nodes' kubeconfigs were made with), or, upgraded, the bundle with
/// the CA made since and no copy; then mark bootstrap complete if asked.
pub async fn install(
    client: &kube::Client,
    profile: Profile,
    fixtures: &Path,
    signers: &SignerRotation,
    state: &StartingState,
    serving_ca: &str,
    history: &History,
) -> Result<(), ClusterError> {
    let loaded = manifests::load(&[fixtures.join("crds"), fixtures.join("cluster")])
        .map_err(|e| ClusterError::Fixture(e.to_string()))?;
    let (crds, rest): (Vec<_>, Vec<_>) = loaded
        .into_iter()
        .partition(|m| m.object["kind"] == "CustomResourceDefinition");
    for m in &crds {
        apply(client, &m.object).await?;
    }
    // A kube-apiserver serves a new CRD's resources once it is Established (the fake at once).
    for m in &crds {
        await_established(client, m.object["metadata"]["name"].as_str().unwrap_or("")).await?;
    }
    for m in &rest {
        apply(client, &m.object).await?;
    }
    install_payload(client, profile).await?;
    let initial = signers.seed(state).await?;
    let (ns, name) = INITIAL_KUBE_APISERVER_SERVER_CA;
    apply(client, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {CA_BUNDLE_KEY: initial}})).await?;
    let (ns, name) = KUBE_APISERVER_SERVER_CA;
    let bundle = format!(
        "{serving_ca}{}",
        history.upgraded_with_serving_ca.as_deref().unwrap_or_default()
    );
    apply(client, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {CA_BUNDLE_KEY: bundle}})).await?;
    if history.upgraded_with_serving_ca.is_none() {
        let (ns, name) = KUBECONFIG_DATA;
        let encoded = base64::engine::general_purpose::STANDARD.encode(serving_ca);
        apply(client, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "binaryData": {CA_BUNDLE_KEY: encoded}})).await?;
    }
    if history.bootstrap_complete {
        let (ns, name) = BOOTSTRAP_CONFIGMAP;
        apply(client, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"status": "complete"}})).await?;
    }
    Ok(())
}

/// Wait until the CRD `name` is Established (a watch on it), for up to a minute.
async fn await_established(client: &kube::Client, name: &str) -> Result<(), ClusterError> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::runtime::wait::{await_condition, conditions::is_crd_established};
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let established = await_condition(api, name, is_crd_established());
    match tokio::time::timeout(std::time::Duration::from_secs(60), established).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(ClusterError::Fixture(format!(
            "waiting for CustomResourceDefinition {name} to be Established: {e}"
        ))),
        Err(_) => Err(ClusterError::Fixture(format!(
            "CustomResourceDefinition {name} was not Established within a minute"
        ))),
    }
}

/// Before a scenario on a kube-apiserver that others ran on: delete everything a scenario makes
/// — every custom resource of `fixtures/crds`, Nodes, CertificateSigningRequests, the
/// ConfigMaps, Secrets and Events of the openshift namespaces install makes, the Events in
/// `default` and `kube-system/bootstrap`. Namespaces and CRDs stay (a namespace is never gone without a namespace
/// controller; install applies both again).
pub async fn clean(client: &kube::Client, fixtures: &Path) -> Result<(), ClusterError> {
    use kube::api::{DeleteParams, ListParams};
    let namespaces = namespaces(fixtures)?;
    let mut kinds = crd_resources(fixtures)?;
    let core = |kind: &str, plural: &str| {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", kind), plural)
    };
    kinds.push((core("Node", "nodes"), false));
    kinds.push((
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("certificates.k8s.io", "v1", "CertificateSigningRequest"),
            "certificatesigningrequests",
        ),
        false,
    ));
    // What scenarios write outside the cluster-scoped kinds: every ConfigMap, Secret and Event of
    // the openshift namespaces install makes (they are the suite's own), the Events agents post
    // in `default`, and `kube-system/bootstrap`; nothing else of a shared cluster's namespaces.
    for (kind, plural) in [
        ("ConfigMap", "configmaps"),
        ("Secret", "secrets"),
        ("Event", "events"),
    ] {
        kinds.push((core(kind, plural), true));
    }
    let events = core("Event", "events");
    gone_or_missing(
        Api::<DynamicObject>::namespaced_with(client.clone(), "default", &events)
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
            .map(|_| ()),
        || "deleting every event in default".into(),
    )?;
    let (ns, name) = BOOTSTRAP_CONFIGMAP;
    gone_or_missing(
        Api::<DynamicObject>::namespaced_with(client.clone(), ns, &core("ConfigMap", "configmaps"))
            .delete(name, &DeleteParams::default())
            .await
            .map(|_| ()),
        || format!("deleting ConfigMap {ns}/{name}"),
    )?;
    for (resource, namespaced) in &kinds {
        let apis: Vec<Api<DynamicObject>> = if *namespaced {
            namespaces
                .iter()
                .map(|ns| Api::namespaced_with(client.clone(), ns, resource))
                .collect()
        } else {
            vec![Api::all_with(client.clone(), resource)]
        };
        for api in apis {
            // A namespace not made yet holds nothing.
            gone_or_missing(
                api.delete_collection(&DeleteParams::default(), &ListParams::default())
                    .await
                    .map(|_| ()),
                || format!("deleting every {}", resource.plural),
            )?;
        }
    }
    Ok(())
}

/// A deletion's answer: done, or nothing there to delete (404), or the error, said as `what`.
fn gone_or_missing(
    result: Result<(), kube::Error>,
    what: impl FnOnce() -> String,
) -> Result<(), ClusterError> {
    match result {
        Ok(()) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(ClusterError::kube(what(), e)),
    }
}

/// Each CRD of `fixtures/crds` as the resource of its storage version, and whether it is
/// namespaced.
fn crd_resources(fixtures: &Path) -> Result<Vec<(ApiResource, bool)>, ClusterError> {
    let loaded =
        manifests::load(&[fixtures.join("crds")]).map_err(|e| ClusterError::Fixture(e.to_string()))?;
    let mut kinds = Vec::new();
    for m in loaded
        .iter()
        .filter(|m| m.object["kind"] == "CustomResourceDefinition")
    {
        let spec = &m.object["spec"];
        let version = spec["versions"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["storage"] == true))
            .and_then(|v| v["name"].as_str())
            .unwrap_or("v1");
        let group = spec["group"].as_str().unwrap_or("");
        let gvk = GroupVersionKind::gvk(group, version, spec["names"]["kind"].as_str().unwrap_or(""));
        let plural = spec["names"]["plural"].as_str().unwrap_or("");
        kinds.push((
            ApiResource::from_gvk_with_plural(&gvk, plural),
            spec["scope"] == "Namespaced",
        ));
    }
    Ok(kinds)
}

/// On a kube-apiserver given by kubeconfig: the daemons' service account may do what the
/// fake lets it (the fake does not model RBAC, so the rights are cluster-admin's; upstream's
/// narrower ClusterRole is a difference neither server checks today). A server that serves no
/// RBAC (the fake given by kubeconfig) has nothing to grant.
pub async fn grant_daemon_rights(client: &kube::Client) -> Result<(), ClusterError> {
    let granted = apply(
        client,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "mco-conformance-machine-config-daemon"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                "name": "system:serviceaccount:openshift-machine-config-operator:machine-config-daemon"}],
        }),
    )
    .await;
    match granted {
        Err(ClusterError::Kube {
            source: kube::Error::Api(e),
            ..
        }) if e.code == 404 => Ok(()),
        other => other,
    }
}
