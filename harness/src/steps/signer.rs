//! Signers and the certificates they issue: forcing a rotation, and whether one happened. A
//! `{signer}` is any name `harness::pki::names` accepts: a Secret's name, a CN a certificate
//! was issued under (`kubelet-signer`, `kube-csr-signer`) or an operator's name for it.

use super::oracle;
use super::params::{SignerName, Span};
use anyhow::{Context, ensure};
use cucumber::{then, when};
use harness::pki::{CertificateName, IssuedCert};
use harness::world::ConformanceWorld;

/// MCO's e2e way: a JSON patch nulling `auth.openshift.io/certificate-not-after`.
#[when(expr = "the {signer} is rotated by force")]
async fn rotate_by_force(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let name = c.certificate_name(&signer)?;
    c.force_rotation(&name.namespace, &name.name).await?;
    Ok(())
}

/// The slide's way: remove one of the signer Secret's `auth.openshift.io/` annotations
/// (`certificate-not-after`, `certificate-not-before` or `certificate-issuer`) with a JSON patch.
#[when(
    regex = r"^the (?P<signer>\S+)'s (certificate-not-after|certificate-not-before|certificate-issuer) annotation is removed$"
)]
async fn remove_annotation(
    world: &mut ConformanceWorld,
    signer: String,
    annotation: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let name = c.certificate_name(&signer)?;
    c.remove_signer_annotation(&name.namespace, &name.name, &annotation)
        .await?;
    Ok(())
}

/// A signer's or target's certificate now and when the cluster started, with what the name
/// the scenario wrote stands for; an unknown name is an error listing the known ones.
async fn now_and_at_start(
    world: &ConformanceWorld,
    written: &str,
) -> anyhow::Result<(CertificateName, IssuedCert, IssuedCert)> {
    let (name, now) = world.cluster()?.named_certificate(written).await?;
    let before = world.signers_at_start.get(&name.name).cloned().with_context(|| {
        format!(
            "no certificate of {} was recorded when the cluster started",
            name.described()
        )
    })?;
    Ok((name, now, before))
}

/// The signer is another certificate than when the cluster started; a target (`csr-signer`,
/// `kubelet-client`) has rotated when it was re-issued.
#[then(expr = "the {signer} has rotated")]
async fn has_rotated(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let (name, now, before) = now_and_at_start(world, &signer).await?;
    ensure!(
        now.pem != before.pem,
        "{} is still {} (since {})",
        name.described(),
        now.common_name,
        harness::pki::rfc3339(now.not_before)
    );
    Ok(())
}

/// The signer (or target) is the certificate the cluster started with.
#[then(expr = "the {signer} has not rotated")]
async fn has_not_rotated(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let (name, now, before) = now_and_at_start(world, &signer).await?;
    ensure!(
        now.pem == before.pem,
        "{} rotated: now {} (since {}), at the start {}",
        name.described(),
        now.common_name,
        harness::pki::rfc3339(now.not_before),
        before.common_name
    );
    Ok(())
}

/// The signer's CA bundle (its `bundle` in fixtures/signers.yaml, or for `csr-signer` the
/// `csr-signer-ca` that collects it) lists that many certificates.
#[then(expr = "the {signer} bundle holds {int} signer(s)")]
async fn bundle_holds(world: &mut ConformanceWorld, signer: SignerName, count: usize) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let (namespace, bundle_name) = c.signer_bundle(&signer)?;
    let names = super::oracle::names(c.bundle(&namespace, &bundle_name).await?.as_bytes())?;
    ensure!(
        names.len() == count,
        "{namespace}/{bundle_name} holds {}: {names:?}",
        names.len()
    );
    Ok(())
}

/// The ControllerConfig's `status.controllerCertificates` (what `oc get controllerconfig` shows:
/// the template controller's list of every certificate in its bundles) holds `cert` as an entry
/// of the kubelet CA bundle: subject as Go prints it (`CN=…`) and, where the release writes
/// dates, its notAfter.
async fn controller_config_lists(world: &ConformanceWorld, cert_pem: &str) -> anyhow::Result<(bool, String)> {
    let c = world.cluster()?;
    let cert = oracle::certs(cert_pem.as_bytes())?
        .into_iter()
        .next()
        .context("the signer's Secret holds no certificate")?;
    let cc = harness::mco::api::controller_configs(&c.admin)
        .get("machine-config-controller")
        .await
        .context("reading controllerconfig machine-config-controller")?;
    let entries = cc.data["status"]["controllerCertificates"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let not_after = time::OffsetDateTime::from_unix_timestamp(cert.not_after)?
        .format(&time::format_description::well_known::Rfc3339)?;
    let lists = entries.iter().any(|e| {
        e["bundleFile"] == "KubeAPIServerServingCAData"
            && e["subject"] == cert.subject.as_str()
            && (e["notAfter"].is_null() || e["notAfter"] == not_after.as_str())
    });
    let seen: Vec<String> = entries
        .iter()
        .map(|e| format!("{} {} until {}", e["bundleFile"], e["subject"], e["notAfter"]))
        .collect();
    Ok((
        lists,
        format!("{} (notAfter {not_after}); it lists {seen:?}", cert.subject),
    ))
}

/// Whether the ControllerConfig's certificate status lists the signer's current certificate
/// (release-4.14+ template controller, `status.controllerCertificates`).
#[then(regex = r"^the ControllerConfig's status (lists|lacks) the current (?P<signer>\S+)$")]
async fn controller_config_current(
    world: &mut ConformanceWorld,
    verdict: String,
    signer: String,
) -> anyhow::Result<()> {
    let (_, now, _) = now_and_at_start(world, &signer).await?;
    let (lists, what) = controller_config_lists(world, &now.pem).await?;
    ensure!(
        lists == (verdict == "lists"),
        "the ControllerConfig's status {}: {what}",
        if lists { "lists" } else { "lacks" }
    );
    Ok(())
}

/// Whether the ControllerConfig's certificate status lists the certificate the signer had
/// when the cluster started.
#[then(regex = r"^the ControllerConfig's status (lists|lacks) the (?P<signer>\S+) it started with$")]
async fn controller_config_at_start(
    world: &mut ConformanceWorld,
    verdict: String,
    signer: String,
) -> anyhow::Result<()> {
    let (_, _, before) = now_and_at_start(world, &signer).await?;
    let (lists, what) = controller_config_lists(world, &before.pem).await?;
    ensure!(
        lists == (verdict == "lists"),
        "the ControllerConfig's status {}: {what}",
        if lists { "lists" } else { "lacks" }
    );
    Ok(())
}

/// What library-go issues is backdated by one second: its common name records the instant it
/// was made (`<namespace>_<name>@<unix seconds>`) and its NotBefore is one second earlier
/// (library-go crypto.go `newSigningCertificateTemplateForDuration`, :1009 at f5bf38712dca,
/// :1002 at d932feccfc56). Read from the certificate the cluster holds now.
#[then(expr = "the current {signer} is valid from one second before the instant in its name")]
async fn backdated(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let (name, now) = world.cluster()?.named_certificate(&signer).await?;
    let cert = oracle::certs(now.pem.as_bytes())?
        .into_iter()
        .next()
        .with_context(|| format!("{} holds no certificate", name.described()))?;
    let made: i64 = cert
        .name
        .rsplit_once('@')
        .and_then(|(_, t)| t.parse().ok())
        .with_context(|| {
            format!(
                "{} names no instant (<namespace>_<name>@<unix seconds>): library-go did not issue it",
                cert.name
            )
        })?;
    ensure!(
        cert.not_before == made - 1,
        "{}: NotBefore is {} s from the instant in its name, not -1 s",
        cert.name,
        cert.not_before - made
    );
    Ok(())
}

/// The installer does not backdate (openshift-install pkg/asset/tls/tls.go
/// `SelfSignedCertificate`: NotBefore is the instant it was made, NotAfter that plus the
/// validity): the certificate the cluster started with lives exactly the span given.
#[then(expr = "the {signer} the cluster started with is valid for exactly {duration}")]
async fn valid_for_exactly(
    world: &mut ConformanceWorld,
    signer: SignerName,
    span: Span,
) -> anyhow::Result<()> {
    let (name, _, before) = now_and_at_start(world, &signer).await?;
    let cert = oracle::certs(before.pem.as_bytes())?
        .into_iter()
        .next()
        .with_context(|| format!("{} held no certificate", name.described()))?;
    let lives = cert.not_after - cert.not_before;
    ensure!(
        lives == span.span.whole_seconds(),
        "{}: valid for {lives} s (NotBefore {}, NotAfter {}), not exactly {span} ({} s)",
        cert.name,
        cert.not_before,
        cert.not_after,
        span.span.whole_seconds()
    );
    Ok(())
}
