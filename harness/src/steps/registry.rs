//! 4.14 and 4.16 registry trust on the node: image registry CAs under `/etc/docker/certs.d` and
//! the internal registry's pull secret. The steps publish what the cluster and its administrator
//! publish (ConfigMaps, `image.config`, the image registry's service account); the operator
//! copies them into the ControllerConfig, and the oracle works out what that copy holds from
//! the same objects by upstream's rule.

use super::oracle::{INTERNAL_REGISTRY_PULL_SECRET, MOUNTED_PULL_SECRETS};
use anyhow::{Context, bail, ensure};
use base64::Engine;
use cucumber::{given, then, when};
use harness::world::ConformanceWorld;
use serde_json::{Value, json};

/// The quoted names of a list such as `"a", "b" and "c"`.
fn quoted(list: &str) -> Vec<String> {
    list.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Credentials as a dockerconfigjson `auth` entry.
fn auth(user: &str) -> Value {
    json!({"auth": b64(format!("{user}:mco-conformance").as_bytes())})
}

/// The cluster's registry CAs become one new CA per quoted file name: the ConfigMap
/// `openshift-config-managed/image-registry-ca` (what the image registry operator keeps) holds
/// exactly those keys, each a CA's PEM, and the machine-config operator copies it into the
/// ControllerConfig's `imageRegistryBundleData`; the step ends when every node synced that.
#[when(regex = r"^the image registry CAs? (.+) (?:is|are) published$")]
async fn registry_cas(world: &mut ConformanceWorld, list: String) -> anyhow::Result<()> {
    let (ns, name) = IMAGE_REGISTRY_CA;
    publish_registry_cas(world, ns, name, &list, false).await
}

/// The user's registry CAs become one new CA per quoted file name, as the OpenShift docs have
/// an administrator add them: a ConfigMap in `openshift-config` (`registry-config`) holding
/// exactly those keys, named by `image.config.openshift.io/cluster`'s
/// `spec.additionalTrustedCA`; the machine-config operator copies it into the ControllerConfig's
/// `imageRegistryBundleUserData` (release-4.14 sync.go:281-310, release-4.16 :293-322), the
/// cluster's registry CAs staying. The step ends when every node synced that.
#[when(regex = r"^the user's registry CAs? (.+) (?:is|are) published$")]
async fn user_registry_cas(world: &mut ConformanceWorld, list: String) -> anyhow::Result<()> {
    publish_registry_cas(world, USER_CA_NAMESPACE, USER_CA_CONFIGMAP, &list, true).await
}

/// The ConfigMap the cluster's registry CAs are published in.
const IMAGE_REGISTRY_CA: (&str, &str) = ("openshift-config-managed", "image-registry-ca");
/// Where the user's registry CAs are published, and the ConfigMap's name there.
const USER_CA_NAMESPACE: &str = "openshift-config";
const USER_CA_CONFIGMAP: &str = "registry-config";

async fn publish_registry_cas(
    world: &mut ConformanceWorld,
    ns: &str,
    name: &str,
    list: &str,
    user: bool,
) -> anyhow::Result<()> {
    let files = quoted(list);
    ensure!(!files.is_empty(), "name the CAs' files in quotes: {list}");
    let mut data = std::collections::BTreeMap::new();
    for file in files {
        let ca = fake_apiserver::CertificateAuthority::generate(&format!("registry CA for {file}"))?;
        data.insert(file, ca.cert_pem);
    }
    let started = harness::pace::Mark::now();
    let c = world.cluster()?;
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(c.admin.clone(), ns);
    let mut cm = api
        .get_opt(name)
        .await
        .with_context(|| format!("reading configmap {ns}/{name}"))?
        .unwrap_or_default();
    cm.metadata.name = Some(name.to_string());
    cm.metadata.namespace = Some(ns.to_string());
    cm.data = Some(data);
    cm.binary_data = None;
    if cm.metadata.resource_version.is_some() {
        api.replace(name, &Default::default(), &cm).await
    } else {
        api.create(&Default::default(), &cm).await
    }
    .with_context(|| format!("writing configmap {ns}/{name}"))?;
    if user {
        let images: kube::Api<kube::api::DynamicObject> =
            kube::Api::all_with(c.admin.clone(), &image_config_resource());
        images
            .patch(
                "cluster",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"spec": {"additionalTrustedCA": {"name": name}}})),
            )
            .await
            .context("naming the ConfigMap in image.config.openshift.io/cluster")?;
    }
    c.controller_config_synced(started).await?;
    Ok(())
}

fn image_config_resource() -> kube::api::ApiResource {
    kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("config.openshift.io", "v1", "Image"),
        "images",
    )
}

/// `oc scale deployment/machine-config-operator -n openshift-machine-config-operator
/// --replicas=0`, as QE does to edit the ControllerConfig by hand: the operator writes nothing
/// for the rest of the scenario, so a hand edit stays (a running operator puts its own copy back
/// at its next sync).
#[when("the machine-config operator is scaled down")]
async fn operator_scaled_down(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    world.cluster()?.side.scale_operator_down();
    Ok(())
}

/// A hand edit of the ControllerConfig (`oc edit controllerconfig`): one new CA per quoted file
/// name appended to `spec.imageRegistryBundleData`, whatever the name (a ConfigMap key could not
/// hold most of what an edit can). It needs the operator scaled down; the step ends when every
/// node synced the edit.
#[when(regex = r"^the ControllerConfig's image registry CAs are edited to add (.+)$")]
async fn edit_registry_cas(world: &mut ConformanceWorld, list: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    ensure!(
        c.side.operator_scaled_down(),
        "the machine-config operator would put its own copy back: scale it down first (When the machine-config operator is scaled down)"
    );
    let files = quoted(&list);
    ensure!(!files.is_empty(), "name the CAs' files in quotes: {list}");
    let cc = harness::mco::api::controller_configs(&c.admin)
        .get("machine-config-controller")
        .await
        .context("reading controllerconfig machine-config-controller")?;
    let mut entries = cc.data["spec"]["imageRegistryBundleData"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for file in files {
        let ca = fake_apiserver::CertificateAuthority::generate(&format!("registry CA for {file}"))?;
        entries.push(json!({"file": file, "data": b64(ca.cert_pem.as_bytes())}));
    }
    c.publish_controller_config(json!({"spec": {"imageRegistryBundleData": entries}}))
        .await?;
    Ok(())
}

/// A new cloud provider CA in the ControllerConfig's `spec.cloudProviderCAData` (what the
/// operator copies from `openshift-config-managed/kube-cloud-config`), given without a trailing
/// newline; the step ends when every node synced it.
#[when("the cloud provider CA is published")]
async fn cloud_provider_ca(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let ca = fake_apiserver::CertificateAuthority::generate("cloud provider CA (mco-conformance)")?;
    let pem = ca.cert_pem.trim_end().as_bytes().to_vec();
    world
        .cluster()?
        .publish_controller_config(json!({"spec": {"cloudProviderCAData": b64(&pem)}}))
        .await?;
    Ok(())
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

/// Whether the ControllerConfig's `status.controllerCertificates` has an entry for the registry
/// CA published under that file name: `bundleFile` the file name, the subject the published
/// certificate's (release-4.14 and 4.16 template controller `updateControllerConfigCerts`: the
/// cluster's and the user's registry bundles after the four CA fields). "lacks": no entry with
/// that `bundleFile`. Waited for: the template controller writes the status after the spec.
#[then(
    regex = r#"^the ControllerConfig's status (lists|lacks) the (registry CA|user's registry CA) "(.+)"$"#
)]
async fn status_lists_registry_ca(
    world: &mut ConformanceWorld,
    verdict: String,
    whose: String,
    file: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let wanted = verdict == "lists";
    harness::wait::eventually(world.deadline, || async {
        let cc = harness::mco::api::controller_configs(&c.admin)
            .get("machine-config-controller")
            .await
            .map_err(|e| format!("reading controllerconfig machine-config-controller: {e}"))?;
        let field = if whose == "registry CA" {
            "imageRegistryBundleData"
        } else {
            "imageRegistryBundleUserData"
        };
        let published = cc.data["spec"][field]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["file"] == file.as_str())
            .map(|e| decoded_pem_subject(&e["data"]))
            .transpose()
            .map_err(|e| format!("spec.{field} {file}: {e:#}"))?;
        let entries = cc.data["status"]["controllerCertificates"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let listed = entries.iter().any(|e| {
            e["bundleFile"] == file.as_str()
                && published
                    .as_ref()
                    .is_none_or(|subject| e["subject"] == subject.as_str())
        });
        let seen: Vec<String> = entries
            .iter()
            .map(|e| format!("{} {}", e["bundleFile"], e["subject"]))
            .collect();
        if wanted && published.is_none() {
            return Err(format!("spec.{field} has no CA for {file:?}"));
        }
        if listed == wanted {
            Ok(())
        } else {
            Err(format!(
                "the ControllerConfig's status {} {file:?}; it lists {seen:?}",
                if listed { "lists" } else { "lacks" }
            ))
        }
    })
    .await
    .map_err(anyhow::Error::msg)
}

/// The subject, as Go prints it, of the first certificate of a base64 PEM field.
fn decoded_pem_subject(field: &Value) -> anyhow::Result<String> {
    let text = field
        .as_str()
        .with_context(|| format!("not a base64 string: {field}"))?;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(text)
        .context("not base64")?;
    let cert = super::oracle::certs(&pem)?
        .into_iter()
        .next()
        .context("no certificate in it")?;
    Ok(cert.subject)
}

/// The bytes published for a registry file name, as the operator is to copy them into the
/// ControllerConfig (upstream's rule, release-4.16 sync.go:289-345): the key of the cluster's
/// ConfigMap `openshift-config-managed/image-registry-ca`, or of the user's, the ConfigMap in
/// `openshift-config` that `image.config.openshift.io/cluster` names; a `data` value that is
/// base64 (newlines aside) decoded, any other as it is; else a `binaryData` value.
async fn published_registry_ca(
    c: &harness::scenario::Scenario,
    user: bool,
    file: &str,
) -> anyhow::Result<Vec<u8>> {
    let (ns, name) = if user {
        let images: kube::Api<kube::api::DynamicObject> =
            kube::Api::all_with(c.admin.clone(), &image_config_resource());
        let image = images
            .get("cluster")
            .await
            .context("reading image.config.openshift.io cluster")?;
        let named = image.data["spec"]["additionalTrustedCA"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        ensure!(
            !named.is_empty(),
            "image.config.openshift.io/cluster names no ConfigMap of user registry CAs"
        );
        (USER_CA_NAMESPACE.to_string(), named)
    } else {
        (IMAGE_REGISTRY_CA.0.to_string(), IMAGE_REGISTRY_CA.1.to_string())
    };
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(c.admin.clone(), &ns);
    let cm = api
        .get(&name)
        .await
        .with_context(|| format!("reading configmap {ns}/{name}"))?;
    if let Some(value) = cm.data.as_ref().and_then(|d| d.get(file)) {
        let text: String = value.chars().filter(|ch| !matches!(ch, '\n' | '\r')).collect();
        let lenient = base64::engine::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
        );
        return Ok(lenient.decode(text).unwrap_or_else(|_| value.as_bytes().to_vec()));
    }
    if let Some(value) = cm.binary_data.as_ref().and_then(|d| d.get(file)) {
        return Ok(value.0.clone());
    }
    bail!("configmap {ns}/{name} publishes no CA {file:?}")
}

/// Every node's file holds the CA published for that registry file name: the cluster's
/// (`imageRegistryBundleData`) or the user's (`imageRegistryBundleUserData`).
#[then(regex = r#"^every node has the (registry CA|user's registry CA) "(.+)" in (/\S+)$"#)]
async fn has_registry_ca(
    world: &mut ConformanceWorld,
    whose: String,
    file: String,
    path: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let mut expected = published_registry_ca(c, whose == "user's registry CA", &file).await?;
    if expected.last() != Some(&b'\n') {
        expected.push(b'\n');
    }
    // Until the deadline: the agent's sync annotation may come before its last file (main's
    // daemon was once seen between the two); what is judged is the file that arrives.
    let nodes = &c.nodes;
    let (path, expected, file, whose) = (&path, &expected, &file, &whose);
    harness::wait::eventually(world.deadline, || async move {
        for node in nodes {
            let on_disk = node
                .read(path)
                .await
                .map_err(|e| format!("node {}: {e}", node.name()))?;
            if on_disk != *expected {
                return Err(format!(
                    "{}: {path} is not the {whose} published for {file:?}",
                    node.name()
                ));
            }
        }
        Ok(())
    })
    .await
    .map_err(anyhow::Error::msg)
}

/// No node has anything at the path (file or directory).
#[then(regex = r"^no node has the path (/\S+)$")]
async fn no_path(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        ensure!(node.stat(&path).await?.is_none(), "{} has {path}", node.name());
    }
    Ok(())
}

/// Every node has something at the path (file or directory).
#[then(regex = r"^every node has the path (/\S+)$")]
async fn every_node_has_path(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        ensure!(node.stat(&path).await?.is_some(), "{} has no {path}", node.name());
    }
    Ok(())
}

/// The path (a file, or a directory and all in it) is removed from every node.
#[when(regex = r"^(/\S+) is removed from every node$")]
async fn remove_path(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        node.remove(&path).await?;
    }
    Ok(())
}

/// Every Node object gets the label, `key=value`, or `key` alone for an empty value (as role
/// labels have: `node-role.kubernetes.io/worker`), as `oc label node … key=value` would.
#[when(regex = r"^every node is labelled (\S+)$")]
async fn label_every_node(world: &mut ConformanceWorld, label: String) -> anyhow::Result<()> {
    let (key, value) = label.split_once('=').unwrap_or((&label, ""));
    ensure!(!key.is_empty(), "{label:?} is not a label as key or key=value");
    let c = world.cluster()?;
    for node in &c.nodes {
        c.label_node(node.name(), key, value).await?;
    }
    Ok(())
}

/// Every Node object loses its `node-role.kubernetes.io/<role>` labels.
#[when("every node loses its node-role label")]
async fn lose_role(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        c.remove_role_labels(node.name()).await?;
    }
    Ok(())
}
