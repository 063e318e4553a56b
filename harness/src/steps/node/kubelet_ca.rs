//! Every node's `/etc/kubernetes/kubelet-ca.crt`: which bundle it equals, how many certificates
//! it holds, whether it lists a signer's current or an expired certificate. The expected bundle
//! is worked out by `steps::oracle` from the API objects; any other file of a node belongs in
//! `files`.

use anyhow::{Context, ensure};
use cucumber::then;
use harness::mco::KUBELET_CA_PATH;
use harness::steps::oracle;
use harness::world::ConformanceWorld;

/// Every node's `/etc/kubernetes/kubelet-ca.crt` holds, certificate for certificate and in
/// order, a named bundle: "kube-apiserver-client-ca" (what 4.16 writes), or "the initial bundle
/// with the kubelet signer's bundle merged in" (what 4.12 renders: release-4.12
/// `mergeCertWithCABundle`, computed here from the two ConfigMaps).
#[then(expr = "every node's kubelet-ca.crt equals {string}")]
async fn kubelet_ca_equals(world: &mut ConformanceWorld, source: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let expected = match source.as_str() {
        "kube-apiserver-client-ca" => oracle::certs(
            c.bundle("openshift-config-managed", "kube-apiserver-client-ca")
                .await?
                .as_bytes(),
        )?,
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
            oracle::merge_4_12(
                &oracle::certs(initial.as_bytes())?,
                &oracle::certs(kubelet.as_bytes())?,
            )
        }
        other => anyhow::bail!(
            "unknown bundle {other:?}: \"kube-apiserver-client-ca\" or \"the initial bundle with the kubelet signer's bundle merged in\""
        ),
    };
    for node in &c.nodes {
        let on_disk = node.read(KUBELET_CA_PATH).await?;
        let seen = oracle::certs(&on_disk)
            .with_context(|| format!("{}: {KUBELET_CA_PATH} cannot be read as a CA bundle", node.name()))?;
        if let Some(why) = oracle::bundle_difference(&seen, &expected) {
            anyhow::bail!("{}: kubelet-ca.crt is not {source}: {why}", node.name());
        }
    }
    Ok(())
}

/// How many certificates every node's kubelet-ca.crt holds (their names on failure).
#[then(regex = r"^every node's kubelet-ca\.crt holds (\d+) certificates?$")]
async fn kubelet_ca_count(world: &mut ConformanceWorld, count: usize) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let names = oracle::names(&node.read(KUBELET_CA_PATH).await?)
            .with_context(|| format!("{}: {KUBELET_CA_PATH}", node.name()))?;
        ensure!(
            names.len() == count,
            "{}: kubelet-ca.crt holds {} certificates, expected {count}: {names:?}",
            node.name(),
            names.len()
        );
    }
    Ok(())
}

/// Whether every node's `/etc/kubernetes/kubelet-ca.crt` lists the signer's current
/// certificate (as the API server holds it now).
#[then(regex = r"^every node's kubelet-ca\.crt (lists|lacks) the current (?P<signer>\S+)$")]
async fn kubelet_ca_lists(
    world: &mut ConformanceWorld,
    verdict: String,
    signer: String,
) -> anyhow::Result<()> {
    kubelet_ca_judged(world, verdict == "lists", &signer).await
}

/// The longest a failed ControllerConfig waits for its next try in upstream's certificate
/// writer: release-4.16 `handleControllerConfigErr` puts it back with `AddRateLimited` on a
/// queue built with client-go's `DefaultControllerRateLimiter`, whose per-item backoff doubles
/// from 5 ms and stops at 1000 s. Every event about the ControllerConfig goes through the same
/// limiter (`enqueueControllerConfig`), so no change to it brings the try sooner.
const CC_QUEUE_LONGEST_BACKOFF: std::time::Duration = std::time::Duration::from_secs(1000);

/// As `every node's kubelet-ca.crt lists the current <signer>`, for a node whose certificate
/// writer failed before (a 4.16 node with no role label): waited for up to the longest backoff
/// of upstream's rate-limited ControllerConfig queue, plus the sync bound, in wall time (the
/// queue's timer is the wall clock's), or until every node's writer has synced the
/// ControllerConfig as it is now (its `lastSyncedControllerConfigResourceVersion`), after which
/// the file is judged as it is. An agent that tries again sooner passes sooner.
#[then(
    regex = r"^on its certificate writer's next try every node's kubelet-ca\.crt lists the current (?P<signer>\S+)$"
)]
async fn kubelet_ca_lists_on_retry(world: &mut ConformanceWorld, signer: String) -> anyhow::Result<()> {
    let deadline = CC_QUEUE_LONGEST_BACKOFF + harness::scenario::SYNC_BOUND;
    let c = world.cluster()?;
    harness::wait::eventually_wall(deadline, || async {
        let Err(e) = kubelet_ca_judged(world, true, &signer).await else {
            return Ok(Ok(()));
        };
        // Every node's writer synced the ControllerConfig as it is now (it annotates the Node
        // with its resourceVersion once it wrote, release-4.16 certificate_writer.go:291-303):
        // no try is pending, the file is what it will be.
        let cc_rv = c
            .controller_config_resource_version()
            .await
            .map_err(|e| e.to_string())?;
        for node in &c.nodes {
            let synced = c
                .node_annotations(node.name())
                .await
                .map_err(|e| e.to_string())?
                .get(harness::mco::LAST_SYNCED_CONTROLLER_CONFIG)
                .cloned()
                .unwrap_or_default();
            if synced != cc_rv {
                return Err(format!(
                    "{e:#}; {} synced controllerconfig {synced:?}, not {cc_rv}",
                    node.name()
                ));
            }
        }
        Ok(Err(e))
    })
    .await
    .map_err(anyhow::Error::msg)?
}

async fn kubelet_ca_judged(world: &ConformanceWorld, lists_wanted: bool, signer: &str) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let (_, current) = c.named_certificate(signer).await?;
    for node in &c.nodes {
        let names = oracle::names(&node.read(KUBELET_CA_PATH).await?)
            .with_context(|| format!("{}: {KUBELET_CA_PATH}", node.name()))?;
        let lists = names.contains(&current.common_name);
        ensure!(
            lists == lists_wanted,
            "{}: kubelet-ca.crt {} {}: it holds {names:?}",
            node.name(),
            if lists { "lists" } else { "lacks" },
            current.common_name
        );
    }
    Ok(())
}

/// Whether every node's `/etc/kubernetes/kubelet-ca.crt` holds a certificate of the named
/// signer or target (by any name it goes by, as `lists the current <signer>` reads names) that
/// expired before the scenario's simulated now.
#[then(regex = r"^every node's kubelet-ca\.crt (lists|lacks) an expired (\S+)$")]
async fn kubelet_ca_expired(
    world: &mut ConformanceWorld,
    verdict: String,
    name: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let now = harness::pki::Clock::now(&c.clock).unix_timestamp();
    for node in &c.nodes {
        let certs = oracle::certs(&node.read(KUBELET_CA_PATH).await?)
            .with_context(|| format!("{}: {KUBELET_CA_PATH}", node.name()))?;
        let (named, expired) = expired_of(&certs, now, &name, |n| c.certificate_name(n))?;
        ensure!(
            expired.is_empty() == (verdict == "lacks"),
            "{}: kubelet-ca.crt {} an expired {}: expired ones of it {expired:?}; it holds {:?}",
            node.name(),
            if expired.is_empty() { "lacks" } else { "lists" },
            named.described(),
            certs.iter().map(|c| c.name.as_str()).collect::<Vec<_>>()
        );
    }
    Ok(())
}

/// What `written` names (`resolve`: `pki::names`), and the common names of the certificates
/// of `certs` that expired before `now` (unix seconds) and whose common name names the same
/// Secret: names are resolved whole, never matched as a part of another (`kubelet-signer`, the
/// installer's first csr-signer-signer, is not `kube-apiserver-to-kubelet-signer`).
fn expired_of<'a, E>(
    certs: &'a [oracle::Cert],
    now: i64,
    written: &str,
    resolve: impl Fn(&str) -> Result<harness::pki::CertificateName, E>,
) -> Result<(harness::pki::CertificateName, Vec<&'a str>), E> {
    let named = resolve(written)?;
    let expired = certs
        .iter()
        .filter(|c| c.not_after < now)
        .filter(|c| resolve(&c.name).is_ok_and(|n| n.namespace == named.namespace && n.name == named.name))
        .map(|c| c.name.as_str())
        .collect();
    Ok((named, expired))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::pki::{Catalogue, SIMULATION_EPOCH, Signer};

    /// `an expired kubelet-signer` names the installer's first csr-signer-signer (its CN) and so
    /// every csr-signer-signer, whatever its CN; an expired kube-apiserver-to-kubelet-signer,
    /// whose CN holds the text `kubelet-signer`, is not one.
    #[test]
    fn an_expired_certificate_is_named_whole_not_by_a_part_of_its_name() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/signers.yaml");
        let catalogue = Catalogue::load(&fixtures).unwrap();
        let day: time::Duration = time::Duration::days(1);
        let pem = |signer: Signer| signer.cert.pem;
        let bundle = [
            pem(Signer::issue_named("kube-apiserver-to-kubelet-signer", SIMULATION_EPOCH, day, 1).unwrap()),
            pem(Signer::issue(
                "openshift-kube-apiserver-operator",
                "kube-apiserver-to-kubelet-signer",
                SIMULATION_EPOCH,
                day,
                2,
            )
            .unwrap()),
            pem(Signer::issue_named("kube-apiserver-lb-signer", SIMULATION_EPOCH, day * 3650, 3).unwrap()),
        ]
        .concat();
        let certs = oracle::certs(bundle.as_bytes()).unwrap();
        let now = (SIMULATION_EPOCH + time::Duration::days(2)).unix_timestamp();
        let expired = |written: &str, certs: &[oracle::Cert]| -> Vec<String> {
            let (_, found) = expired_of(certs, now, written, |n| catalogue.resolve(n)).unwrap();
            found.into_iter().map(String::from).collect()
        };
        assert_eq!(expired("kubelet-signer", &certs), Vec::<String>::new());
        assert_eq!(expired("csr-signer-signer", &certs), Vec::<String>::new());
        assert_eq!(expired("kube-apiserver-to-kubelet-signer", &certs).len(), 2);
        // Not expired: not listed.
        assert_eq!(
            expired("loadbalancer-serving-signer", &certs),
            Vec::<String>::new()
        );
        assert_eq!(expired("kube-apiserver-lb-signer", &certs), Vec::<String>::new());

        let with_csr = [
            bundle,
            pem(Signer::issue_named("kubelet-signer", SIMULATION_EPOCH, day, 4).unwrap()),
            pem(Signer::issue(
                "openshift-kube-controller-manager-operator",
                "csr-signer-signer",
                SIMULATION_EPOCH,
                day,
                5,
            )
            .unwrap()),
        ]
        .concat();
        let certs = oracle::certs(with_csr.as_bytes()).unwrap();
        let csr_signers = expired("kubelet-signer", &certs);
        assert_eq!(csr_signers.len(), 2, "{csr_signers:?}");
        assert!(
            csr_signers.iter().all(|n| !n.contains("kube-apiserver")),
            "{csr_signers:?}"
        );
        assert_eq!(expired("csr-signer-signer", &certs), csr_signers);
        // A name no certificate goes by is refused, as every other step refuses it.
        assert!(expired_of(&certs, now, "signer", |n| catalogue.resolve(n)).is_err());
    }
}
