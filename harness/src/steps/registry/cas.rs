//! Registry CAs on the node: the cluster's (`image-registry-ca`) and the user's
//! (`image.config`'s `additionalTrustedCA`) published, a hand edit of the ControllerConfig's copy
//! with the operator scaled down, the cloud provider CA; then what the ControllerConfig's status
//! lists and what every node holds. The expected bytes are read from the published ConfigMaps by
//! upstream's rule, never from the operator's copy. Pull secrets are `pull_secret`'s.

use super::{b64, quoted};
use anyhow::{Context, bail, ensure};
use base64::Engine;
use cucumber::{then, when};
use harness::steps::oracle;
use harness::world::ConformanceWorld;
use serde_json::{Value, json};

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
    let cert = oracle::certs(&pem)?
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
