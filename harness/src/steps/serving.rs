//! The kube-apiserver's serving CA: publishing a new one, serving from it, and what nodes
//! trust; the order of what a node's journal shows.

use anyhow::{Context, ensure};
use base64::Engine;
use cucumber::{then, when};
use harness::scenario::ServingCaChange;
use harness::world::ConformanceWorld;

/// A new CA joins `openshift-config-managed/kube-apiserver-server-ca` beside the current one,
/// as the kube-apiserver operator publishes it before serving from it: "a new CA" (the one
/// the API server will serve from) or "a new kube-apiserver-localhost-signer" (a serving
/// signer the nodes do not reach the API through). The step ends when the nodes followed.
#[when(
    regex = r"^the kube-apiserver's serving CA bundle gains (a new CA|a new kube-apiserver-localhost-signer)$"
)]
async fn bundle_gains(world: &mut ConformanceWorld, what: String) -> anyhow::Result<()> {
    let change = match what.as_str() {
        "a new CA" => ServingCaChange::Next,
        _ => ServingCaChange::LocalhostSigner,
    };
    world.cluster()?.publish_serving_ca(change).await?;
    Ok(())
}

/// The API server's serving certificate is replaced by one from the new CA and every
/// connection is dropped, so each client handshakes again.
#[when("the kube-apiserver serves a certificate from its new CA")]
async fn serves_from_new_ca(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    world.cluster()?.rotate_api_serving_cert()?;
    Ok(())
}

/// Whether every node's kubeconfig (`/etc/kubernetes/kubeconfig` or
/// `/var/lib/kubelet/kubeconfig`) lists, in `certificate-authority-data`, the API server's new
/// serving CA or a `kube-apiserver-localhost-signer`.
#[then(
    regex = r"^every node's (/\S+kubeconfig) (trusts|does not trust) (the kube-apiserver's new CA|a kube-apiserver-localhost-signer)$"
)]
async fn kubeconfig_trusts(
    world: &mut ConformanceWorld,
    path: String,
    verdict: String,
    what: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let next = c.next_serving_ca();
    for node in &c.nodes {
        let text = String::from_utf8(node.read(&path).await?)?;
        let config: serde_yaml::Value =
            serde_yaml::from_str(&text).with_context(|| format!("{}: {path}", node.name()))?;
        let encoded = config["clusters"][0]["cluster"]["certificate-authority-data"]
            .as_str()
            .unwrap_or("");
        let ca = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(encoded)?)?;
        let names = harness::pki::subjects(&ca).unwrap_or_default();
        let trusts = if what == "a kube-apiserver-localhost-signer" {
            names
                .iter()
                .any(|n| n.contains("kube-apiserver-localhost-signer"))
        } else {
            let next = next
                .as_deref()
                .context("the API server already serves from its new CA; check trust before that step")?;
            ca.contains(next.trim())
        };
        ensure!(
            trusts == (verdict == "trusts"),
            "{}: {path} {} {what}; its CAs: {names:?}",
            node.name(),
            if trusts { "trusts" } else { "does not trust" },
        );
    }
    Ok(())
}

/// These texts appear in every node's journal since the cluster started, each on a line after
/// the previous one's (a table with one text per row).
#[then("every node's journal shows, in this order:")]
async fn journal_in_order(
    world: &mut ConformanceWorld,
    step: &cucumber::gherkin::Step,
) -> anyhow::Result<()> {
    let table = step
        .table
        .as_ref()
        .context("the step needs a table, one text per row")?;
    let texts: Vec<&str> = table
        .rows
        .iter()
        .filter_map(|r| r.first().map(String::as_str))
        .collect();
    for node in &world.cluster()?.nodes {
        let lines = node.journal_since(world.marks[node.name()]).await;
        let mut from = 0;
        for text in &texts {
            let Some(at) = lines[from..].iter().position(|l| l.contains(text)) else {
                anyhow::bail!(
                    "{}: no line with {text:?} after the previous text; the journal from there:\n{}",
                    node.name(),
                    lines[from..]
                        .iter()
                        .take(30)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            };
            from += at + 1;
        }
    }
    Ok(())
}

/// No line containing the text appears in any node's journal since the cluster started.
#[then(regex = r#"^no node's journal shows "(.+)"$"#)]
async fn journal_lacks(world: &mut ConformanceWorld, text: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let lines = node.journal_since(world.marks[node.name()]).await;
        if let Some(line) = lines.iter().find(|l| l.contains(&text)) {
            anyhow::bail!("{}: its journal shows {line:?}", node.name());
        }
    }
    Ok(())
}
