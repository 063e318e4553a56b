//! A kubelet's TLS bootstrap as `oc get csr` shows it: the request each node's kubelet made for
//! a client certificate, an administrator's `oc adm certificate approve`, and the certificate
//! the kubelet got. Requests are read from the API and decoded here with x509-parser.

use anyhow::Context;
use cucumber::{then, when};
use harness::wait::eventually;
use harness::world::ConformanceWorld;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, ListParams, PostParams};
use x509_parser::prelude::FromDer;

/// The signer kubelets request their client certificates from (Kubernetes' well-known name).
const KUBELET_CLIENT: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// Where the kubelet keeps its client certificate and key after a bootstrap (kubelet
/// `--cert-dir`, `kubelet-client-current.pem`).
const CLIENT_CERT_FILE: &str = "/var/lib/kubelet/pki/kubelet-client-current.pem";

/// The subject of a request: (CN, [O]).
fn subject(csr: &CertificateSigningRequest) -> anyhow::Result<(String, Vec<String>)> {
    let pem = &csr.spec.request.0;
    let (_, block) = x509_parser::pem::parse_x509_pem(pem).context("spec.request is not PEM")?;
    let (_, request) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
            .context("spec.request is not a certificate request")?;
    let name = &request.certification_request_info.subject;
    let cn = name
        .iter_common_name()
        .next()
        .and_then(|c| c.as_str().ok())
        .unwrap_or("")
        .to_string();
    let orgs = name
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Ok((cn, orgs))
}

fn decided(csr: &CertificateSigningRequest, kind: &str) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == kind && c.status == "True"))
}

fn certificate(csr: &CertificateSigningRequest) -> Option<&[u8]> {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .map(|c| c.0.as_slice())
        .filter(|c| !c.is_empty())
}

/// Every node's kubelet requests, one per node, that ask for its client certificate.
async fn kubelet_requests(
    world: &ConformanceWorld,
) -> anyhow::Result<Vec<(String, CertificateSigningRequest)>> {
    let c = world.cluster()?;
    let api: Api<CertificateSigningRequest> = Api::all(c.admin.clone());
    let all = api
        .list(&ListParams::default())
        .await
        .context("listing certificatesigningrequests")?;
    let mut out = Vec::new();
    for csr in all.items {
        if csr.spec.signer_name != KUBELET_CLIENT {
            continue;
        }
        let (cn, orgs) = subject(&csr)?;
        if let Some(node) = cn.strip_prefix("system:node:")
            && orgs.iter().any(|o| o == "system:nodes")
        {
            out.push((node.to_string(), csr));
        }
    }
    Ok(out)
}

/// Each node's kubelet has asked for a client certificate (a CertificateSigningRequest for
/// `system:node:<name>` in `system:nodes` from `kubernetes.io/kube-apiserver-client-kubelet`)
/// that nobody has approved or denied, and has no kubeconfig of its own meanwhile: what
/// cluster-machine-approver leaves for an administrator when the node already exists.
#[then("every node's kubelet waits for approval of its client certificate request")]
async fn waits_for_approval(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let deadline = world.deadline;
    let world = &*world;
    eventually(deadline, || async {
        let requests = kubelet_requests(world).await.map_err(|e| format!("{e:#}"))?;
        for node in &c.nodes {
            let mine: Vec<&CertificateSigningRequest> = requests
                .iter()
                .filter(|(n, _)| n == node.name())
                .map(|(_, csr)| csr)
                .collect();
            let Some(csr) = mine.last() else {
                return Err(format!(
                    "{}: no certificate signing request for system:node:{} from {KUBELET_CLIENT}",
                    node.name(),
                    node.name()
                ));
            };
            let name = csr.metadata.name.clone().unwrap_or_default();
            if decided(csr, "Approved") || decided(csr, "Denied") || certificate(csr).is_some() {
                return Err(format!(
                    "{}: its request {name} is not pending: {:?}",
                    node.name(),
                    csr.status
                ));
            }
            if node
                .stat("/var/lib/kubelet/kubeconfig")
                .await
                .map_err(|e| e.to_string())?
                .is_some()
            {
                return Err(format!(
                    "{}: /var/lib/kubelet/kubeconfig exists while its request {name} is pending",
                    node.name()
                ));
            }
        }
        Ok(())
    })
    .await
    .map_err(anyhow::Error::msg)
}

/// An administrator approves every request that is neither approved nor denied, as
/// `oc adm certificate approve` does (an `Approved` condition through the `/approval`
/// subresource); the step ends once each has its certificate.
#[when("every pending certificate signing request is approved")]
async fn approve_pending(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let api: Api<CertificateSigningRequest> = Api::all(c.admin.clone());
    let pending: Vec<CertificateSigningRequest> = api
        .list(&ListParams::default())
        .await
        .context("listing certificatesigningrequests")?
        .items
        .into_iter()
        .filter(|csr| !decided(csr, "Approved") && !decided(csr, "Denied"))
        .collect();
    anyhow::ensure!(!pending.is_empty(), "no certificate signing request is pending");
    let mut names = Vec::new();
    for mut csr in pending {
        let name = csr.metadata.name.clone().unwrap_or_default();
        let mut status = csr.status.take().unwrap_or_default();
        let mut conditions = status.conditions.take().unwrap_or_default();
        conditions.push(serde_json::from_value(serde_json::json!({
            "type": "Approved", "status": "True", "reason": "KubectlApprove",
            "message": "This CSR was approved by kubectl certificate approve.",
            "lastUpdateTime": harness::pki::rfc3339(time::OffsetDateTime::now_utc()),
        }))?);
        status.conditions = Some(conditions);
        csr.status = Some(status);
        api.replace_subresource("approval", &name, &PostParams::default(), &csr)
            .await
            .with_context(|| format!("approving certificatesigningrequest {name}"))?;
        names.push(name);
    }
    eventually(world.deadline, || async {
        for name in &names {
            let csr = api.get(name).await.map_err(|e| format!("{name}: {e}"))?;
            if certificate(&csr).is_none() {
                return Err(format!("{name} is approved but has no certificate yet"));
            }
        }
        Ok(())
    })
    .await
    .map_err(anyhow::Error::msg)
}

/// Each node's kubelet holds, in `/var/lib/kubelet/pki/kubelet-client-current.pem`, the
/// certificate its approved request was issued, for `system:node:<name>`, and its
/// `/var/lib/kubelet/kubeconfig` names that file.
#[then("every node's kubelet uses the client certificate its approved request was issued")]
async fn uses_issued(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let deadline = world.deadline;
    let world = &*world;
    eventually(deadline, || async {
        let requests = kubelet_requests(world).await.map_err(|e| format!("{e:#}"))?;
        for node in &c.nodes {
            let issued = requests
                .iter()
                .filter(|(n, csr)| n == node.name() && decided(csr, "Approved"))
                .filter_map(|(_, csr)| certificate(csr))
                .next_back()
                .ok_or_else(|| format!("{}: no approved request of its kubelet was issued", node.name()))?;
            let issued = super::oracle::certs(issued).map_err(|e| format!("{e:#}"))?;
            let held = node.read(CLIENT_CERT_FILE).await.map_err(|e| e.to_string())?;
            let held = super::oracle::certs(&held)
                .map_err(|e| format!("{}: {CLIENT_CERT_FILE}: {e:#}", node.name()))?;
            let (Some(issued), Some(held)) = (issued.first(), held.first()) else {
                return Err(format!("{}: no certificate to compare", node.name()));
            };
            if issued.der != held.der {
                return Err(format!(
                    "{}: {CLIENT_CERT_FILE} holds {} (not the issued {})",
                    node.name(),
                    held.name,
                    issued.name
                ));
            }
            if held.name != format!("system:node:{}", node.name()) {
                return Err(format!("{}: the certificate is for {}", node.name(), held.name));
            }
            let kubeconfig = node
                .read("/var/lib/kubelet/kubeconfig")
                .await
                .map_err(|e| e.to_string())?;
            let doc: serde_yaml::Value = serde_yaml::from_slice(&kubeconfig)
                .map_err(|e| format!("{}: kubeconfig: {e}", node.name()))?;
            let named = doc["users"][0]["user"]["client-certificate"].as_str();
            if named != Some(CLIENT_CERT_FILE) {
                return Err(format!(
                    "{}: /var/lib/kubelet/kubeconfig names client-certificate {named:?}",
                    node.name()
                ));
            }
        }
        Ok(())
    })
    .await
    .map_err(anyhow::Error::msg)
}
