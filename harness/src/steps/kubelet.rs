//! The kubelet's verdict on the kube-apiserver's client certificate: what `oc logs` needs.

use cucumber::then;
use harness::node::Node;
use harness::node::kubelet::probe;
use harness::pki::{Clock, Signer};
use harness::world::ConformanceWorld;

/// A kubelet client certificate from the signer's current certificate (what the
/// kube-apiserver holds once its certificate is re-issued) is accepted by every kubelet.
#[then(expr = "every kubelet accepts a client certificate from the current {word}")]
async fn kubelets_accept(world: &mut ConformanceWorld, signer: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let issuer = Signer {
        cert: c
            .certificate("openshift-kube-apiserver-operator", &signer)
            .await?,
    };
    let client = issuer.issue_client(
        "system:kube-apiserver",
        &["kube-master"],
        c.clock.now(),
        time::Duration::days(30),
        9999,
    )?;
    for node in &c.nodes {
        let addr = node
            .kubelet_endpoint()
            .await
            .ok_or_else(|| anyhow::anyhow!("{}: the kubelet is not serving", node.name()))?;
        probe(addr, &client.pem, &client.key_pem).await?;
    }
    Ok(())
}

/// The kube-apiserver's own kubelet client certificate is accepted by every kubelet.
#[then("every kubelet accepts the kube-apiserver's kubelet client certificate")]
async fn kubelets_accept_kube_apiserver(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let client = c
        .certificate("openshift-kube-apiserver", "kubelet-client")
        .await?;
    for node in &c.nodes {
        let addr = node
            .kubelet_endpoint()
            .await
            .ok_or_else(|| anyhow::anyhow!("{}: the kubelet is not serving", node.name()))?;
        probe(addr, &client.pem, &client.key_pem).await?;
    }
    Ok(())
}
