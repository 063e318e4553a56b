//! The cluster's side of a kubelet's TLS bootstrap: who approves a node's request for a client
//! certificate, and who signs it.
//!
//! - **cluster-machine-approver** (`pkg/controller/csr_check.go`, `authorizeNodeClientCSR`)
//!   approves a node-bootstrapper's request only for a node that does not exist yet and whose
//!   Machine has no node reference; for a node that already exists it logs
//!   "<csr>: node <name> already exists, cannot approve" and leaves the request pending. So a
//!   kubelet that re-bootstraps on a running node (the 4.16 daemon's `kubeletRebootstrap`) waits
//!   for an administrator's `oc adm certificate approve`. The harness has no Machine API, so no
//!   request is approved here at all; the approver's words are in the cluster log.
//! - **kube-controller-manager's csrsigning** signs an approved
//!   `kubernetes.io/kube-apiserver-client-kubelet` request. A kubelet's client certificate is an
//!   API client identity, which lives in wall time (DESIGN.md, "Time: two domains"): it is issued
//!   by the API server's client CA, standing for the kube-csr-signer, valid as long as every
//!   other identity here.

use super::ClusterLog;
use crate::pki::Clock;
use futures::StreamExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use std::collections::BTreeSet;
use tokio_util::sync::CancellationToken;

/// The signer of kubelet client certificates.
pub const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";

/// Approve nothing, say why, and sign what an administrator approved, until `stop`.
pub async fn run(
    admin: kube::Client,
    ca: fake_apiserver::CertificateAuthority,
    clock: crate::pki::SimClock,
    log: ClusterLog,
    stop: CancellationToken,
) {
    let api: Api<CertificateSigningRequest> = Api::all(admin.clone());
    let nodes: Api<Node> = Api::all(admin);
    let mut events = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    let mut judged = BTreeSet::new();
    loop {
        let csr = tokio::select! {
            _ = stop.cancelled() => return,
            event = events.next() => match event {
                Some(Ok(csr)) => csr,
                Some(Err(_)) => continue,
                None => return,
            },
        };
        if csr.spec.signer_name != KUBELET_CLIENT_SIGNER {
            continue;
        }
        let name = csr.metadata.name.clone().unwrap_or_default();
        let status = csr.status.clone().unwrap_or_default();
        let decided = |kind: &str| {
            status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == kind && c.status == "True")
        };
        let issued = status.certificate.as_ref().is_some_and(|c| !c.0.is_empty());
        if !decided("Approved") && !decided("Denied") {
            if judged.insert(name.clone()) {
                let asking = requested_node(&csr).unwrap_or_default();
                let why = match nodes.get_opt(&asking).await {
                    Ok(Some(_)) => format!("node {asking} already exists, cannot approve"),
                    Ok(None) => format!("failed to find machine for node {asking}, cannot approve"),
                    Err(e) => format!("unable to get node {asking} error: {e}"),
                };
                log.record(clock.now(), &format!("machine-approver: {name}: {why}"));
            }
            continue;
        }
        if !decided("Approved") || decided("Denied") || issued {
            continue;
        }
        let signed = fake_apiserver::csr::parse_request(&base64_of(&csr.spec.request.0))
            .map_err(|e| e.to_string())
            .and_then(|der| {
                ca.sign_request(&der, fake_apiserver::pki::IDENTITY_VALIDITY)
                    .map_err(|e| e.to_string())
            });
        let mut updated = csr.clone();
        let mut status = status.clone();
        match signed {
            Ok(pem) => status.certificate = Some(k8s_openapi::ByteString(pem.into_bytes())),
            Err(e) => {
                log.record(clock.now(), &format!("csrsigning: {name}: {e}"));
                continue;
            }
        }
        updated.status = Some(status);
        match api.replace_status(&name, &PostParams::default(), &updated).await {
            Ok(_) => log.record(clock.now(), &format!("csrsigning: {name}: issued")),
            Err(e) => log.record(clock.now(), &format!("csrsigning: {name}: {e}")),
        }
    }
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The node a request's subject names (`CN=system:node:<name>`).
pub fn requested_node(csr: &CertificateSigningRequest) -> Option<String> {
    let der = fake_apiserver::csr::parse_request(&base64_of(&csr.spec.request.0)).ok()?;
    let (_, request) =
        <x509_parser::certification_request::X509CertificationRequest as x509_parser::prelude::FromDer<
            '_,
            _,
        >>::from_der(&der)
        .ok()?;
    let cn = request
        .certification_request_info
        .subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    cn.strip_prefix("system:node:").map(str::to_string)
}
