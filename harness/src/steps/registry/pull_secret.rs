//! The internal registry's pull secret: the `machine-os-puller` service account's credentials
//! published, the ControllerConfig's `internalRegistryPullSecret` judged against upstream's
//! assembly from the cluster's objects, a pull secret mounted on the node, and what every node's
//! `/etc/mco/internal-registry-pull-secret.json` holds. Registry CAs are `cas`'s.

use super::{b64, quoted};
use anyhow::{Context, ensure};
use base64::Engine;
use cucumber::{given, then, when};
use harness::steps::oracle::{INTERNAL_REGISTRY_PULL_SECRET, MOUNTED_PULL_SECRETS};
use harness::world::ConformanceWorld;
use serde_json::{Value, json};

/// Credentials as a dockerconfigjson `auth` entry.
fn auth(user: &str) -> Value {
    json!({"auth": b64(format!("{user}:mco-conformance").as_bytes())})
}

/// The image registry comes up with credentials for each quoted registry, as a cluster with
/// the ImageRegistry capability has them: ClusterOperator `image-registry`, and the
/// `openshift-machine-config-operator/machine-os-puller` service account with a
/// `kubernetes.io/dockercfg` image pull secret (as openshift-controller-manager makes one for
/// every service account: user `serviceaccount`, a token as password) holding those
/// registries, replacing what it held. The operator then assembles ControllerConfig
/// `spec.internalRegistryPullSecret` from it and the cluster pull secret (4.14 and 4.16); the
/// step ends when every node synced it.
#[when(regex = r"^the internal registry pull secret holds credentials for (.+)$")]
async fn internal_pull_secret(world: &mut ConformanceWorld, list: String) -> anyhow::Result<()> {
    let registries = quoted(&list);
    ensure!(!registries.is_empty(), "name the registries in quotes: {list}");
    let started = harness::pace::Mark::now();
    let c = world.cluster()?;
    let entries: serde_json::Map<String, Value> = registries
        .into_iter()
        .map(|r| {
            let entry = json!({
                "username": "serviceaccount",
                "password": PULLER_TOKEN,
                "email": "serviceaccount@example.org",
                "auth": b64(format!("serviceaccount:{PULLER_TOKEN}").as_bytes()),
            });
            (r, entry)
        })
        .collect();
    let (ns, sa) = ("openshift-machine-config-operator", "machine-os-puller");
    let secret_name = format!("{sa}-dockercfg-qe7x2");
    let objects = [
        json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
               "metadata": {"name": "image-registry"}, "spec": {}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockercfg",
               "metadata": {"name": secret_name, "namespace": ns,
                            "annotations": {"kubernetes.io/service-account.name": sa}},
               "data": {".dockercfg": b64(Value::Object(entries).to_string().as_bytes())}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": sa, "namespace": ns},
               "imagePullSecrets": [{"name": secret_name}]}),
    ];
    for object in objects {
        apply(&c.admin, object).await?;
    }
    c.controller_config_synced(started).await?;
    Ok(())
}

/// Server-side apply of `object`, as `oc apply --server-side` would.
async fn apply(admin: &kube::Client, object: Value) -> anyhow::Result<()> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
    let plural = format!("{}s", kind.to_lowercase());
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, &plural);
    let api: kube::Api<kube::api::DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => kube::Api::namespaced_with(admin.clone(), ns, &resource),
        None => kube::Api::all_with(admin.clone(), &resource),
    };
    let params = kube::api::PatchParams::apply("mco-conformance").force();
    api.patch(&name, &params, &kube::api::Patch::Apply(&object))
        .await
        .with_context(|| format!("applying {kind} {name}"))?;
    Ok(())
}

/// The token the `machine-os-puller` service account's pull secret carries (a placeholder).
const PULLER_TOKEN: &str = "mco-conformance-token";

/// The ControllerConfig's `spec.internalRegistryPullSecret` is what upstream's operator
/// assembles (release-4.14 sync.go:1560-1650, release-4.16 sync.go:1910-2002), computed here
/// from the cluster's objects: every host of the `machine-os-puller` service account's image
/// pull secrets, then the cluster pull secret's hosts over them, then the in-cluster
/// registry's entry under `default-route-openshift-image-registry.apps.<base domain>`; each
/// entry with its username, password, email and auth. Compared as JSON.
#[then(
    "the ControllerConfig's internal registry pull secret is the machine-os-puller's pull secrets merged with the cluster pull secret"
)]
async fn assembled_pull_secret(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let get = |api: &str, path: String| {
        let admin = c.admin.clone();
        let url = format!("/{api}/{path}");
        async move {
            let request = http::Request::get(&url).body(Vec::new())?;
            admin
                .request::<Value>(request)
                .await
                .with_context(|| format!("GET {url}"))
        }
    };
    let ns = "openshift-machine-config-operator";
    let sa = get(
        "api/v1",
        format!("namespaces/{ns}/serviceaccounts/machine-os-puller"),
    )
    .await?;
    let mut expected = serde_json::Map::new();
    let mut add = |hosts: &Value, from: &str| -> anyhow::Result<()> {
        let hosts = hosts
            .as_object()
            .with_context(|| format!("{from}: not a map of hosts: {hosts}"))?;
        for (host, entry) in hosts {
            let field = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            expected.insert(
                host.clone(),
                json!({"username": field("username"), "password": field("password"),
                       "email": field("email"), "auth": field("auth")}),
            );
        }
        Ok(())
    };
    for reference in sa["imagePullSecrets"].as_array().into_iter().flatten() {
        let name = reference["name"]
            .as_str()
            .context("an imagePullSecrets entry has no name")?;
        let secret = get("api/v1", format!("namespaces/{ns}/secrets/{name}")).await?;
        add(&decoded_json(&secret["data"][".dockercfg"])?, name)?;
    }
    let pull = get("api/v1", "namespaces/openshift-config/secrets/pull-secret".into()).await?;
    add(
        &decoded_json(&pull["data"][".dockerconfigjson"])?["auths"],
        "openshift-config/pull-secret",
    )?;
    let dns = get("apis/config.openshift.io/v1", "dnses/cluster".into()).await?;
    let base_domain = dns["spec"]["baseDomain"].as_str().unwrap_or_default();
    if let Some(entry) = expected
        .get("image-registry.openshift-image-registry.svc:5000")
        .cloned()
    {
        expected.insert(
            format!("default-route-openshift-image-registry.apps.{base_domain}"),
            entry,
        );
    }
    let cc = get(
        "apis/machineconfiguration.openshift.io/v1",
        "controllerconfigs/machine-config-controller".into(),
    )
    .await?;
    let field = &cc["spec"]["internalRegistryPullSecret"];
    ensure!(
        !field.is_null(),
        "the ControllerConfig has no internalRegistryPullSecret; expected {}",
        Value::Object(expected)
    );
    let actual = decoded_json(field)?;
    ensure!(
        actual == json!({"auths": expected}),
        "the ControllerConfig's internalRegistryPullSecret is {actual}; the operator's rule gives {}",
        json!({"auths": expected})
    );
    Ok(())
}

/// A base64 field holding JSON.
fn decoded_json(field: &Value) -> anyhow::Result<Value> {
    let text = field
        .as_str()
        .with_context(|| format!("not a base64 string: {field}"))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .with_context(|| format!("not base64: {text}"))?;
    serde_json::from_slice(&bytes).with_context(|| format!("not JSON: {}", String::from_utf8_lossy(&bytes)))
}

/// A pull secret mounted for the role at `/run/secrets/os-image-pull-secrets/<role>/.dockerconfigjson`,
/// with credentials (user `mounted`) for each quoted registry.
#[given(regex = r"^every node has a mounted (\w+) pull secret with credentials for (.+)$")]
async fn mounted_pull_secret(world: &mut ConformanceWorld, role: String, list: String) -> anyhow::Result<()> {
    let auths: serde_json::Map<String, Value> =
        quoted(&list).into_iter().map(|r| (r, auth("mounted"))).collect();
    let secret = json!({"auths": auths}).to_string();
    for node in &world.cluster()?.nodes {
        node.write(
            &format!("{MOUNTED_PULL_SECRETS}/{role}/.dockerconfigjson"),
            secret.as_bytes(),
            0o600,
        )
        .await?;
    }
    Ok(())
}

/// Every node's `/etc/mco/internal-registry-pull-secret.json` has the registry's credentials
/// from the ControllerConfig or from the mounted secret (which wins where both have it).
#[then(
    regex = r#"^every node's internal registry pull secret has credentials for "(.+)" from (the ControllerConfig|the mounted secret)$"#
)]
async fn pull_secret_has(
    world: &mut ConformanceWorld,
    registry: String,
    source: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let expected = if source == "the ControllerConfig" {
        let spec = c.controller_config_spec().await?;
        let raw = spec
            .data("internalRegistryPullSecret")
            .context("controllerconfig spec.internalRegistryPullSecret")?;
        let secret: Value = serde_json::from_slice(&raw)
            .context("controllerconfig spec.internalRegistryPullSecret is not JSON")?;
        secret["auths"][&registry]["auth"].clone()
    } else {
        auth("mounted")["auth"].clone()
    };
    ensure!(!expected.is_null(), "{source} has no credentials for {registry}");
    for node in &c.nodes {
        let text = node.read(INTERNAL_REGISTRY_PULL_SECRET).await?;
        let secret: Value = serde_json::from_slice(&text)
            .with_context(|| format!("{}: {INTERNAL_REGISTRY_PULL_SECRET} is not JSON", node.name()))?;
        // The credentials are the `auth` field; upstream writes its struct out with empty
        // username, password and email beside it (DockerConfigEntry has no omitempty).
        ensure!(
            secret["auths"][&registry]["auth"] == expected,
            "{}: {INTERNAL_REGISTRY_PULL_SECRET} has {} for {registry}, expected the credentials of {source}",
            node.name(),
            secret["auths"][&registry]
        );
    }
    Ok(())
}

/// Every node's `/etc/mco/internal-registry-pull-secret.json` has no credentials for the
/// registry, from either source. Judged at once, on a file that must be there and be JSON.
#[then(regex = r#"^every node's internal registry pull secret has no credentials for "(.+)"$"#)]
async fn pull_secret_lacks(world: &mut ConformanceWorld, registry: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let text = node.read(INTERNAL_REGISTRY_PULL_SECRET).await?;
        let secret: Value = serde_json::from_slice(&text)
            .with_context(|| format!("{}: {INTERNAL_REGISTRY_PULL_SECRET} is not JSON", node.name()))?;
        ensure!(
            secret["auths"].get(&registry).is_none(),
            "{}: {INTERNAL_REGISTRY_PULL_SECRET} has {} for {registry}",
            node.name(),
            secret["auths"][&registry]
        );
    }
    Ok(())
}
