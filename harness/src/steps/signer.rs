//! Signers: forcing a rotation, and whether one happened.

use anyhow::ensure;
use cucumber::{then, when};
use harness::world::ConformanceWorld;

const NAMESPACE: &str = "openshift-kube-apiserver-operator";

/// MCO's e2e way: a JSON patch nulling `auth.openshift.io/certificate-not-after`.
#[when(expr = "the {word} is rotated by force")]
async fn rotate_by_force(world: &mut ConformanceWorld, signer: String) -> anyhow::Result<()> {
    world.cluster()?.force_rotation(NAMESPACE, &signer).await?;
    Ok(())
}

/// The slide's way: remove one of the signer Secret's `auth.openshift.io/` annotations
/// (`certificate-not-after`, `certificate-not-before` or `certificate-issuer`) with a JSON patch.
#[when(
    regex = r"^the (\S+)'s (certificate-not-after|certificate-not-before|certificate-issuer) annotation is removed$"
)]
async fn remove_annotation(
    world: &mut ConformanceWorld,
    signer: String,
    annotation: String,
) -> anyhow::Result<()> {
    world
        .cluster()?
        .remove_signer_annotation(NAMESPACE, &signer, &annotation)
        .await?;
    Ok(())
}

/// The signer is another certificate than when the cluster started.
#[then(expr = "the {word} has rotated")]
async fn has_rotated(world: &mut ConformanceWorld, signer: String) -> anyhow::Result<()> {
    let now = world.cluster()?.certificate(NAMESPACE, &signer).await?;
    let before = &world.signers_at_start[&signer];
    ensure!(
        now.pem != before.pem,
        "{signer} is still {} (since {})",
        now.common_name,
        harness::pki::rfc3339(now.not_before)
    );
    Ok(())
}

/// The signer is the certificate the cluster started with.
#[then(expr = "the {word} has not rotated")]
async fn has_not_rotated(world: &mut ConformanceWorld, signer: String) -> anyhow::Result<()> {
    let now = world.cluster()?.certificate(NAMESPACE, &signer).await?;
    let before = &world.signers_at_start[&signer];
    ensure!(
        now.pem == before.pem,
        "{signer} rotated: now {} (since {})",
        now.common_name,
        harness::pki::rfc3339(now.not_before)
    );
    Ok(())
}

/// The signer's CA bundle lists that many signers.
#[then(expr = "the {word} bundle holds {int} signer(s)")]
async fn bundle_holds(world: &mut ConformanceWorld, signer: String, count: usize) -> anyhow::Result<()> {
    let bundle_name = match signer.as_str() {
        "kube-apiserver-to-kubelet-signer" => "kube-apiserver-to-kubelet-client-ca",
        other => anyhow::bail!("no bundle known for {other}"),
    };
    let names = super::oracle::names(world.cluster()?.bundle(NAMESPACE, bundle_name).await?.as_bytes())?;
    ensure!(
        names.len() == count,
        "{bundle_name} holds {}: {names:?}",
        names.len()
    );
    Ok(())
}
