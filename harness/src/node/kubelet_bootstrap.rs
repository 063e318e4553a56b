//! The kubelet's TLS bootstrap (kubelet `pkg/kubelet/certificate/bootstrap`), as a kubelet that
//! starts without `/var/lib/kubelet/kubeconfig` does it: with the bootstrap kubeconfig
//! `/etc/kubernetes/kubeconfig` (`--bootstrap-kubeconfig`) it asks for a client certificate
//! through a CertificateSigningRequest (CN `system:node:<name>`, O `system:nodes`, signer
//! `kubernetes.io/kube-apiserver-client-kubelet`), waits until the request is approved and
//! issued, writes the certificate and key to `/var/lib/kubelet/pki/kubelet-client-current.pem`
//! and a kubeconfig that names that file and trusts the bootstrap kubeconfig's CA, then goes on
//! as any kubelet. This is what the 4.16 daemon's `kubeletRebootstrap` relies on (release-4.16
//! daemon.go:1406-1429: it removes the kubeconfig, restarts the kubelet and waits for the file).
//!
//! The real kubelet links `kubelet-client-current.pem` to a dated file; here it is the file
//! itself. A denied request ends the kubelet with an error, as the real one's bootstrap does.

use super::embedded::ServiceContext;
use super::seed::{KUBELET_KUBECONFIG, NODE_KUBECONFIG};
use super::{Node, NodeError};
use base64::Engine;
use futures::StreamExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

/// Where the kubelet keeps its client certificate and key (one PEM file, as upstream).
pub const KUBELET_CLIENT_CERT: &str = "/var/lib/kubelet/pki/kubelet-client-current.pem";
/// The signer a kubelet's client certificate is requested from.
pub const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";

/// Make sure the kubelet has its kubeconfig: return at once when it does, otherwise bootstrap
/// one (waiting as long as it takes for the request to be approved and issued).
pub async fn ensure_kubeconfig(ctx: &ServiceContext) -> Result<(), String> {
    let node = &ctx.node;
    match node.read(KUBELET_KUBECONFIG).await {
        Ok(_) => return Ok(()),
        Err(NodeError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{KUBELET_KUBECONFIG}: {e}")),
    }
    ctx.log(
        "I0000 bootstrap.go:85] \"Using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file\"",
    );
    let bootstrap = node
        .read(NODE_KUBECONFIG)
        .await
        .map_err(|e| format!("unable to load bootstrap kubeconfig: {NODE_KUBECONFIG}: {e}"))?;
    let bootstrap = String::from_utf8_lossy(&bootstrap).into_owned();
    let client = fake_apiserver::client_from_kubeconfig(&bootstrap)
        .await
        .map_err(|e| format!("unable to load bootstrap kubeconfig: {e}"))?;
    ctx.log(
        "I0000 bootstrap.go:101] \"No valid private key and/or certificate found, reusing existing private key or creating a new one\"",
    );
    let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("system:node:{}", node.name()));
    let request = params
        .serialize_request(&key)
        .and_then(|r| r.pem())
        .map_err(|e| e.to_string())?;
    let api: Api<CertificateSigningRequest> = Api::all(client);
    let csr: CertificateSigningRequest = serde_json::from_value(json!({
        "metadata": {"generateName": "csr-"},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(&request),
            "signerName": KUBELET_CLIENT_SIGNER,
            "usages": ["digital signature", "client auth"],
        },
    }))
    .map_err(|e| e.to_string())?;
    let created = api
        .create(&PostParams::default(), &csr)
        .await
        .map_err(|e| format!("unable to create certificate signing request: {e}"))?;
    let name = created.metadata.name.clone().unwrap_or_default();
    ctx.log(&format!(
        "I0000 csr.go:261] \"Certificate signing request is pending approval\" csr=\"{name}\""
    ));
    let certificate = issued(&api, &name).await?;
    ctx.log(&format!(
        "I0000 csr.go:257] \"Certificate signing request is issued\" csr=\"{name}\""
    ));
    let mut pem = certificate;
    pem.push_str(&key.serialize_pem());
    node.write(KUBELET_CLIENT_CERT, pem.as_bytes(), 0o600)
        .await
        .map_err(|e| format!("{KUBELET_CLIENT_CERT}: {e}"))?;
    let kubeconfig = kubeconfig_from_bootstrap(&bootstrap)?;
    node.write(KUBELET_KUBECONFIG, kubeconfig.as_bytes(), 0o600)
        .await
        .map_err(|e| format!("{KUBELET_KUBECONFIG}: {e}"))?;
    Ok(())
}

/// Wait for the request's certificate (PEM); a denied or failed request is an error.
async fn issued(api: &Api<CertificateSigningRequest>, name: &str) -> Result<String, String> {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = watcher(api.clone(), config)
        .default_backoff()
        .applied_objects()
        .boxed();
    while let Some(event) = events.next().await {
        let Ok(csr) = event else { continue };
        let Some(status) = csr.status else { continue };
        for condition in status.conditions.iter().flatten() {
            if matches!(condition.type_.as_str(), "Denied" | "Failed") && condition.status == "True" {
                return Err(format!(
                    "certificate signing request {name} is {}: {}",
                    condition.type_.to_lowercase(),
                    condition.message.clone().unwrap_or_default()
                ));
            }
        }
        if let Some(certificate) = status.certificate.filter(|c| !c.0.is_empty()) {
            return String::from_utf8(certificate.0).map_err(|e| e.to_string());
        }
    }
    Err(format!("the watch of certificate signing request {name} ended"))
}

/// The kubeconfig the kubelet writes after its bootstrap (`writeKubeconfigFromBootstrapping`):
/// the bootstrap kubeconfig's server and CA, and the client certificate file.
fn kubeconfig_from_bootstrap(bootstrap: &str) -> Result<String, String> {
    let doc: serde_yaml::Value =
        serde_yaml::from_str(bootstrap).map_err(|e| format!("bootstrap kubeconfig: {e}"))?;
    let cluster = &doc["clusters"][0]["cluster"];
    let server = cluster["server"].as_str().unwrap_or_default();
    let ca = cluster["certificate-authority-data"].as_str().unwrap_or_default();
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "default-cluster", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "contexts": [{"name": "default-context", "context": {"cluster": "default-cluster", "namespace": "default", "user": "default-auth"}}],
        "current-context": "default-context",
        "preferences": {},
        "users": [{"name": "default-auth", "user": {"client-certificate": KUBELET_CLIENT_CERT, "client-key": KUBELET_CLIENT_CERT}}],
    });
    serde_yaml::to_string(&kubeconfig).map_err(|e| e.to_string())
}

/// `yaml` with the client certificate and key files it names read from the node and put inline:
/// kube-rs would read those paths on this host, not under the node's root.
pub async fn inline_client_files(node: &dyn Node, yaml: &str) -> Result<String, String> {
    let mut doc: serde_yaml::Value = serde_yaml::from_str(yaml).map_err(|e| e.to_string())?;
    let Some(users) = doc["users"].as_sequence_mut() else {
        return Ok(yaml.to_string());
    };
    for user in users {
        let user = &mut user["user"];
        for (file_key, data_key) in [
            ("client-certificate", "client-certificate-data"),
            ("client-key", "client-key-data"),
        ] {
            let Some(path) = user[file_key].as_str().map(str::to_string) else {
                continue;
            };
            let bytes = node.read(&path).await.map_err(|e| format!("{path}: {e}"))?;
            let map = user.as_mapping_mut().ok_or("a user that is not a map")?;
            map.remove(file_key);
            map.insert(
                data_key.into(),
                base64::engine::general_purpose::STANDARD.encode(bytes).into(),
            );
        }
    }
    serde_yaml::to_string(&doc).map_err(|e| e.to_string())
}
