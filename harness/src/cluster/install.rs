//! What a freshly installed cluster holds before any operator reconciles: the namespaces, the
//! MCO CRDs and ControllerConfig from `fixtures/`, the signers of the starting state, the
//! installer's `initial-kube-apiserver-server-ca` (the serving CAs and the first
//! kube-apiserver-to-kubelet signer, mco-source.md §1), and `kube-system/bootstrap` once the
//! bootstrap node has handed over. Written through the API like everything else.

use super::names::{
    CA_BUNDLE_KEY, FIELD_MANAGER, INITIAL_KUBE_APISERVER_SERVER_CA, KUBE_APISERVER_SERVER_CA, KUBECONFIG_DATA,
};
use super::operator::BOOTSTRAP_CONFIGMAP;
use super::{ClusterError, SignerRotation};
use crate::pki::{StartingState, combine_bundles};
use base64::Engine;
use fake_apiserver::manifests;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};
use std::path::Path;

/// Namespaces the reference cluster side writes into.
pub const NAMESPACES: &[&str] = &[
    "openshift-config",
    "openshift-config-managed",
    "openshift-kube-apiserver",
    "openshift-kube-apiserver-operator",
    "openshift-kube-controller-manager-operator",
    "openshift-machine-config-operator",
];

/// The serving-CA bundles the installer puts into the initial bundle, then the kubelet signer's.
const INITIAL_BUNDLE_SOURCES: &[(&str, &str)] = &[
    ("openshift-kube-apiserver-operator", "loadbalancer-serving-ca"),
    ("openshift-kube-apiserver-operator", "localhost-serving-ca"),
    ("openshift-kube-apiserver-operator", "service-network-serving-ca"),
    (
        "openshift-kube-apiserver-operator",
        "kube-apiserver-to-kubelet-client-ca",
    ),
];

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
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .map_err(|e| ClusterError::kube(format!("{kind} {name}"), e))?;
    Ok(())
}

/// Install: namespaces, `fixtures/crds`, `fixtures/cluster`, the starting state's signers and
/// the initial bundle; the API server's serving CA as `kube-apiserver-server-ca` and its copy
/// `kubeconfig-data` (what the nodes' kubeconfigs were made with); then mark bootstrap complete
/// if asked.
pub async fn install(
    client: &kube::Client,
    fixtures: &Path,
    signers: &SignerRotation,
    state: &StartingState,
    serving_ca: &str,
    bootstrap_complete: bool,
) -> Result<(), ClusterError> {
    for ns in NAMESPACES {
        apply(
            client,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?;
    }
    let loaded = manifests::load(&[fixtures.join("crds"), fixtures.join("cluster")])
        .map_err(|e| ClusterError::Fixture(e.to_string()))?;
    let (crds, rest): (Vec<_>, Vec<_>) = loaded
        .into_iter()
        .partition(|m| m.object["kind"] == "CustomResourceDefinition");
    for m in crds.iter().chain(rest.iter()) {
        apply(client, &m.object).await?;
    }
    signers.seed(state).await?;
    let mut texts = Vec::new();
    for (ns, name) in INITIAL_BUNDLE_SOURCES {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let cm = api
            .get(name)
            .await
            .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))?;
        texts.push(
            cm.data
                .unwrap_or_default()
                .get(CA_BUNDLE_KEY)
                .cloned()
                .unwrap_or_default(),
        );
    }
    let initial = combine_bundles(texts.iter().map(String::as_str))?;
    let (ns, name) = INITIAL_KUBE_APISERVER_SERVER_CA;
    apply(client, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {CA_BUNDLE_KEY: initial}})).await?;
    let (ns, name) = KUBE_APISERVER_SERVER_CA;
    apply(client, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {CA_BUNDLE_KEY: serving_ca}})).await?;
    let (ns, name) = KUBECONFIG_DATA;
    let encoded = base64::engine::general_purpose::STANDARD.encode(serving_ca);
    apply(client, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "binaryData": {CA_BUNDLE_KEY: encoded}})).await?;
    if bootstrap_complete {
        let (ns, name) = BOOTSTRAP_CONFIGMAP;
        apply(client, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"status": "complete"}})).await?;
    }
    Ok(())
}
