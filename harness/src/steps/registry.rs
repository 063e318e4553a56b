//! 4.16 registry trust on the node: image registry CAs under `/etc/docker/certs.d` and the
//! internal registry's pull secret. The steps play the operator's part and write the
//! ControllerConfig's spec themselves.

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

/// The ControllerConfig's `spec.imageRegistryBundleData` becomes one new CA per quoted file
/// name (as the operator copies the image config's additional trusted CAs); the step ends when
/// every node synced it.
#[when(regex = r"^the image registry CAs? (.+) (?:is|are) published$")]
async fn registry_cas(world: &mut ConformanceWorld, list: String) -> anyhow::Result<()> {
    let mut entries = Vec::new();
    for file in quoted(&list) {
        let ca = fake_apiserver::CertificateAuthority::generate(&format!("registry CA for {file}"))?;
        entries.push(json!({"file": file, "data": b64(ca.cert_pem.as_bytes())}));
    }
    ensure!(!entries.is_empty(), "name the CAs' files in quotes: {list}");
    let c = world.cluster()?;
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

/// The ControllerConfig's `spec.internalRegistryPullSecret` gets credentials (user
/// `controllerconfig`) for each quoted registry; the step ends when every node synced it.
#[when(regex = r"^the internal registry pull secret holds credentials for (.+)$")]
async fn internal_pull_secret(world: &mut ConformanceWorld, list: String) -> anyhow::Result<()> {
    let auths: serde_json::Map<String, Value> = quoted(&list)
        .into_iter()
        .map(|r| (r, auth("controllerconfig")))
        .collect();
    let secret = json!({"auths": auths});
    world
        .cluster()?
        .publish_controller_config(
            json!({"spec": {"internalRegistryPullSecret": b64(secret.to_string().as_bytes())}}),
        )
        .await?;
    Ok(())
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
    let user = if source == "the ControllerConfig" {
        "controllerconfig"
    } else {
        "mounted"
    };
    for node in &world.cluster()?.nodes {
        let text = node.read(INTERNAL_REGISTRY_PULL_SECRET).await?;
        let secret: Value = serde_json::from_slice(&text)
            .with_context(|| format!("{}: {INTERNAL_REGISTRY_PULL_SECRET} is not JSON", node.name()))?;
        // The credentials are the `auth` field; upstream writes its struct out with empty
        // username, password and email beside it (DockerConfigEntry has no omitempty).
        ensure!(
            secret["auths"][&registry]["auth"] == auth(user)["auth"],
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

/// Every node's file holds the CA published for that registry file name.
#[then(regex = r#"^every node has the registry CA "(.+)" in (/\S+)$"#)]
async fn has_registry_ca(world: &mut ConformanceWorld, file: String, path: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let spec = c.controller_config_spec().await?;
    let Some(entry) = spec.image_registry_bundle_data.iter().find(|e| e.file == file) else {
        bail!("the ControllerConfig has no image registry CA {file:?}");
    };
    let mut expected = base64::engine::general_purpose::STANDARD
        .decode(&entry.data)
        .with_context(|| format!("the ControllerConfig's registry CA {file:?} is not base64"))?;
    if expected.last() != Some(&b'\n') {
        expected.push(b'\n');
    }
    // Until the deadline: the agent's sync annotation may come before its last file (main's
    // daemon was once seen between the two); what is judged is the file that arrives.
    let nodes = &c.nodes;
    let (path, expected, file) = (&path, &expected, &file);
    harness::wait::eventually(world.deadline, || async move {
        for node in nodes {
            let on_disk = node
                .read(path)
                .await
                .map_err(|e| format!("node {}: {e}", node.name()))?;
            if on_disk != *expected {
                return Err(format!(
                    "{}: {path} is not the CA published for {file:?}",
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
