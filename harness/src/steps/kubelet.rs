//! The kubelet's verdict on the kube-apiserver's client certificate: what `oc logs` needs.

use super::params::SignerName;
use anyhow::ensure;
use cucumber::{then, when};
use harness::node::kubelet::{CA_RELOAD_LOG, probe};
use harness::pki::{Clock, Signer};
use harness::scenario::Scenario;
use harness::world::ConformanceWorld;

/// Every node's kubelet accepts this client certificate, or the first refusal with its reason.
async fn every_kubelet_accepts(c: &Scenario, cert_pem: &str, key_pem: &str) -> anyhow::Result<()> {
    for node in &c.nodes {
        let addr = c.kubelet_address(node.name()).await?;
        probe(addr, cert_pem, key_pem).await?;
    }
    Ok(())
}

/// Every Node's Ready condition is True ("Ready": its kubelet posts status with the API
/// server's trust), or none is ("NotReady": the node lifecycle controller marks a kubelet that
/// stopped posting status `Unknown`, which `oc get nodes` shows as NotReady). "Ready" waits for
/// the kubelets' posts; "NotReady" is judged at once.
#[then(regex = r"^every node is (Ready|NotReady)$")]
async fn every_node_readiness(world: &mut ConformanceWorld, wanted: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let judge = || async {
        for node in &c.nodes {
            let ready = c.node_ready(node.name()).await.map_err(|e| e.to_string())?;
            let is_ready = matches!(&ready, Some((status, _)) if status == "True");
            if is_ready != (wanted == "Ready") {
                return Err(format!(
                    "{} is not {wanted}: its Ready condition (status, reason) is {ready:?}",
                    node.name()
                ));
            }
        }
        Ok(())
    };
    // Only a kubelet's own post makes a node Ready, so waiting for one proves nothing false; a
    // node that should be NotReady is judged as it is now.
    if wanted == "Ready" {
        harness::wait::eventually(world.deadline, judge).await
    } else {
        judge().await
    }
    .map_err(anyhow::Error::msg)
}

/// How often every node's kubelet loaded a changed `/etc/kubernetes/kubelet-ca.crt` since the
/// cluster started (its "Loaded a new CA Bundle and Verifier" lines, which it logs when the
/// content changed and at every start). A count off says why: the kubelet's starts in that
/// time, a change that never reached the file, or content in between.
#[then(regex = r"^every kubelet loaded a new kubelet-ca\.crt (\d+) time(?:s|\(s\))?$")]
async fn kubelet_ca_loads(world: &mut ConformanceWorld, expected: usize) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        // A kubelet in a process of its own logs the load when its file watch fires, which may
        // come after the agent reported the update done: wait for the loads expected, then count.
        let mark = world.mark(node.name())?;
        let _ = harness::wait::eventually(world.deadline, || async {
            let lines = node.journal_since(mark).await.map_err(|e| e.to_string())?;
            let seen = lines.iter().filter(|l| l.contains(CA_RELOAD_LOG)).count();
            if seen >= expected {
                Ok(())
            } else {
                Err(format!("{seen} loads"))
            }
        })
        .await;
        let lines = node.journal_since(mark).await?;
        let loads: Vec<&String> = lines.iter().filter(|l| l.contains(CA_RELOAD_LOG)).collect();
        // Why, where the count says it: the kubelet loads the file whenever its content
        // changes and once at every start, so more loads than bundle changes means the kubelet
        // was started again (its journal says so) or content in between (a file written in
        // pieces, or rewritten), and fewer means a change that never reached the file.
        let starts = lines
            .iter()
            .filter(|l| l.ends_with("Started kubelet.service."))
            .count();
        let why = match loads.len().cmp(&expected) {
            std::cmp::Ordering::Greater if starts > 0 => format!(
                " (the kubelet was started {starts} time(s) in that time, and it loads the file at every start)"
            ),
            std::cmp::Ordering::Greater => " (the file's content changed more often than the bundle did: written in pieces or not atomically, or rewritten with other content?)".to_string(),
            std::cmp::Ordering::Less => " (a bundle change never reached the file?)".to_string(),
            std::cmp::Ordering::Equal => String::new(),
        };
        anyhow::ensure!(
            loads.len() == expected,
            "{}: the kubelet loaded a new kubelet-ca.crt {} times, expected {expected}{why}:\n{}",
            node.name(),
            loads.len(),
            loads.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n")
        );
    }
    Ok(())
}

/// A kubelet client certificate for `system:kube-apiserver`, issued now by the named
/// certificate's current one (which must be a CA).
async fn client_from(c: &Scenario, signer: &str) -> anyhow::Result<harness::pki::IssuedCert> {
    let (name, cert) = c.named_certificate(signer).await?;
    ensure!(
        name.is_ca(),
        "{} is a client certificate, not a CA: it signs nothing; write its signer, {}",
        name.described(),
        name.issued_by.as_deref().unwrap_or("its signer")
    );
    let client = Signer { cert }.issue_client(
        "system:kube-apiserver",
        &["kube-master"],
        c.clock.now(),
        time::Duration::days(30),
        9999,
    )?;
    Ok(client)
}

/// A kubelet client certificate from the signer's current certificate (what the
/// kube-apiserver holds once its certificate is re-issued, or, from kube-csr-signer's
/// `csr-signer`, a client certificate the CSR API signs) is accepted by every kubelet. Any
/// signer or target of `fixtures/signers.yaml` that signs.
#[then(expr = "every kubelet accepts a client certificate from the current {signer}")]
async fn kubelets_accept(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let client = client_from(c, &signer).await?;
    every_kubelet_accepts(c, &client.pem, &client.key_pem).await
}

/// Every kubelet refuses a kubelet client certificate from the signer's current certificate
/// (its kubelet-ca.crt does not list that signer), each with the TLS error it gave; a kubelet
/// that is not serving judged nothing and fails the step.
#[then(expr = "no kubelet accepts a client certificate from the current {signer}")]
async fn kubelets_refuse(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let client = client_from(c, &signer).await?;
    every_kubelet_refuses(
        c,
        &client,
        &format!("a client certificate from the current {signer}"),
    )
    .await
}

/// The kube-apiserver's own kubelet client certificate is accepted by every kubelet.
#[then("every kubelet accepts the kube-apiserver's kubelet client certificate")]
async fn kubelets_accept_kube_apiserver(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let client = c
        .certificate("openshift-kube-apiserver", "kubelet-client")
        .await?;
    every_kubelet_accepts(c, &client.pem, &client.key_pem).await
}

/// Whether the kube-apiserver's kubelet client certificate was issued by the signer's current
/// certificate, and a sentence saying which issued it.
async fn client_from_current(world: &ConformanceWorld, signer: &str) -> anyhow::Result<(bool, String)> {
    let c = world.cluster()?;
    let client = c
        .certificate("openshift-kube-apiserver", "kubelet-client")
        .await?;
    let (name, current) = c.named_certificate(signer).await?;
    let said = format!(
        "the kubelet client certificate (since {}) is issued by {}; the current {} is {}",
        harness::pki::rfc3339(client.not_before),
        client.issuer_common_name,
        name.described(),
        current.common_name
    );
    Ok((client.issuer_common_name == current.common_name, said))
}

/// The kube-apiserver's kubelet client certificate was issued by the signer's current
/// certificate (library-go re-issues it on its own refresh, not at the signer's rotation).
#[then(expr = "the kube-apiserver's kubelet client certificate is issued by the current {signer}")]
async fn client_issued_by_current(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let (current, said) = client_from_current(world, &signer).await?;
    anyhow::ensure!(current, "{said}");
    Ok(())
}

/// The kube-apiserver's kubelet client certificate was not issued by the current signer yet.
#[then(expr = "the kube-apiserver's kubelet client certificate is still issued by the previous {signer}")]
async fn client_issued_by_previous(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let (current, said) = client_from_current(world, &signer).await?;
    anyhow::ensure!(!current, "{said}");
    Ok(())
}

/// Every kubelet refuses the kube-apiserver's own kubelet client certificate (what breaks
/// `oc logs`, `exec` and `attach`), each with the TLS error it gave.
#[then("no kubelet accepts the kube-apiserver's kubelet client certificate")]
async fn kubelets_refuse_kube_apiserver(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let client = c
        .certificate("openshift-kube-apiserver", "kubelet-client")
        .await?;
    every_kubelet_refuses(c, &client, "the kube-apiserver's kubelet client certificate").await
}

/// Every kubelet refuses `client`. Only a refusal counts: a kubelet that is not serving judged
/// nothing.
async fn every_kubelet_refuses(
    c: &Scenario,
    client: &harness::pki::IssuedCert,
    what: &str,
) -> anyhow::Result<()> {
    for node in &c.nodes {
        let addr = c.kubelet_address(node.name()).await?;
        match probe(addr, &client.pem, &client.key_pem).await {
            Err(harness::node::kubelet::ProbeError::Rejected { .. }) => {}
            Ok(()) => anyhow::bail!(
                "{} accepts {what} (issued by {})",
                node.name(),
                client.issuer_common_name
            ),
            Err(e) => anyhow::bail!("{}: could not ask its kubelet: {e}", node.name()),
        }
    }
    Ok(())
}

/// `systemctl restart kubelet` on every node, as QE restarts it on a real node; the step ends
/// when each node's service manager has started it again. Whether the kubelet then serves is for
/// the steps after to judge (a kubelet whose start fails exits and is started again).
#[when("the kubelet restarts on every node")]
async fn restart_kubelet(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let out = node.systemctl(&["restart", "kubelet"]).await?;
        ensure!(
            out.exit_code == 0,
            "{}: systemctl restart kubelet: {}",
            node.name(),
            out.stderr.trim()
        );
    }
    Ok(())
}

/// Every node's kubelet listens, and its Node's status publishes that port (what the
/// kube-apiserver dials for `oc logs`): waited for, as a kubelet that starts again takes its
/// time to post its status.
#[then("every node's kubelet serves")]
async fn kubelets_serve(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let node = node.as_ref();
        harness::wait::eventually(world.deadline, || async {
            let listening = node.kubelet_endpoint().await.map_err(|e| e.to_string())?;
            let published = c.kubelet_address(node.name()).await.ok();
            match (listening, published) {
                (Some(l), Some(p)) if l.port() == p.port() => Ok(()),
                _ => Err(format!(
                    "{}: the kubelet listens at {listening:?}, its Node's status publishes {published:?}",
                    node.name()
                )),
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// No node's kubelet listens (its start failed, or it is stopped), judged as it is now.
#[then("no node's kubelet serves")]
async fn no_kubelet_serves(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        if let Some(addr) = node.kubelet_endpoint().await? {
            anyhow::bail!("{}: its kubelet listens at {addr}", node.name());
        }
    }
    Ok(())
}

/// `systemctl kill -s KILL kubelet` on every node, as QE crashes a kubelet on a real node; the
/// step ends when each node's service manager has started the kubelet again and it serves. An
/// embedded node's kubelet runs inside the node's service manager with no process to kill, so
/// this needs container nodes (`@container`).
#[when("the kubelet is killed with SIGKILL on every node")]
async fn kill_kubelet(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let before = node.kubelet_endpoint().await?;
        let mark = node.journal_mark().await?;
        let out = node.systemctl(&["kill", "-s", "KILL", "kubelet"]).await?;
        ensure!(
            out.exit_code == 0,
            "{}: systemctl kill -s KILL kubelet: {}",
            node.name(),
            out.stderr.trim()
        );
        let node = node.as_ref();
        harness::wait::eventually(world.deadline, || async {
            let lines = node.journal_since(mark).await.map_err(|e| e.to_string())?;
            let restarted = lines.iter().any(|l| l.ends_with("Started kubelet.service."));
            let serving = node.kubelet_endpoint().await.map_err(|e| e.to_string())?;
            if restarted && serving.is_some() && serving != before {
                Ok(())
            } else {
                Err(format!(
                    "{}: the kubelet is not back yet (serving at {serving:?}); journal since the kill: {lines:?}",
                    node.name()
                ))
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}
