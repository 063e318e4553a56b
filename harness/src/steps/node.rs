//! Nodes: files, reboots and journals.

use anyhow::ensure;
use cucumber::then;
use harness::mco::KUBELET_CA_PATH;
use harness::node::Node;
use harness::pki::{merge_cert_with_ca_bundle, subjects};
use harness::world::ConformanceWorld;

/// Every node's `/etc/kubernetes/kubelet-ca.crt` equals a named bundle:
/// "kube-apiserver-client-ca" (what 4.16 writes), or "the initial bundle with the kubelet
/// signer's bundle merged in" (what 4.12 renders).
#[then(expr = "every node's kubelet-ca.crt equals {string}")]
async fn kubelet_ca_equals(world: &mut ConformanceWorld, source: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let expected = match source.as_str() {
        "kube-apiserver-client-ca" => {
            c.bundle("openshift-config-managed", "kube-apiserver-client-ca")
                .await?
        }
        "the initial bundle with the kubelet signer's bundle merged in" => {
            let initial = c
                .bundle("openshift-config", "initial-kube-apiserver-server-ca")
                .await?;
            let kubelet = c
                .bundle(
                    "openshift-kube-apiserver-operator",
                    "kube-apiserver-to-kubelet-client-ca",
                )
                .await?;
            merge_cert_with_ca_bundle(&initial, &kubelet, "kube-apiserver-to-kubelet-signer")?
        }
        other => anyhow::bail!("unknown bundle {other:?}"),
    };
    for node in &c.nodes {
        let on_disk = String::from_utf8(node.read(KUBELET_CA_PATH).await?)?;
        ensure!(
            on_disk.trim_end() == expected.trim_end(),
            "{}: kubelet-ca.crt holds {:?}, expected {:?}",
            node.name(),
            subjects(&on_disk)?,
            subjects(&expected)?
        );
    }
    Ok(())
}

/// Every node has the boot id it had when the cluster started.
#[then("no node has rebooted")]
async fn no_reboot(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        ensure!(
            node.boot_id().await == world.boot_ids[node.name()],
            "{} rebooted",
            node.name()
        );
    }
    Ok(())
}

/// A line containing the text appears in every node's journal since the cluster started (the
/// text runs to the last quote, so it may itself contain quotes).
#[then(regex = r#"^every node's journal shows "(.+)"$"#)]
async fn journal_shows(world: &mut ConformanceWorld, text: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let lines = node.journal_since(world.marks[node.name()]).await;
        ensure!(
            lines.iter().any(|l| l.contains(&text)),
            "{} journal has no line with {text:?}; last lines:\n{}",
            node.name(),
            lines[lines.len().saturating_sub(15)..].join("\n")
        );
    }
    Ok(())
}

/// Whether every node's `/etc/kubernetes/kubelet-ca.crt` lists the signer's current
/// certificate (as the API server holds it now).
#[then(regex = r"^every node's kubelet-ca\.crt (lists|lacks) the current (\S+)$")]
async fn kubelet_ca_lists(
    world: &mut ConformanceWorld,
    verdict: String,
    signer: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let current = c
        .certificate("openshift-kube-apiserver-operator", &signer)
        .await?;
    for node in &c.nodes {
        let on_disk = String::from_utf8(node.read(KUBELET_CA_PATH).await?)?;
        let names = subjects(&on_disk)?;
        let lists = names.contains(&current.common_name);
        ensure!(
            lists == (verdict == "lists"),
            "{}: kubelet-ca.crt {} {}: it holds {names:?}",
            node.name(),
            if lists { "lists" } else { "lacks" },
            current.common_name
        );
    }
    Ok(())
}
