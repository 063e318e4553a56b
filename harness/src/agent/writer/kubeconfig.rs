//! The 4.16 writer's kubeconfig CA block (release-4.16 `certificate_writer.go`): the kube-apiserver
//! serving CA from `kubeconfig-data`, compared with `/etc/kubernetes/kubeconfig`'s, and whether
//! the kubelet restarts now or later.

use super::AgentEnv;
use crate::mco::names::{CA_BUNDLE_KEY, KUBECONFIG_DATA};
use base64::Engine;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;

/// `openshift-machine-config-operator/kubeconfig-data`'s `ca-bundle.crt`, read as upstream's
/// `cmToData` reads it (`mco::config_map_bytes`).
pub(super) async fn kubeconfig_data(env: &AgentEnv) -> Result<String, String> {
    let (ns, name) = KUBECONFIG_DATA;
    let cm = Api::<ConfigMap>::namespaced(env.client.clone(), ns)
        .get(name)
        .await
        .map_err(|e| format!("configmap {ns}/{name}: {e}"))?;
    let bytes = crate::mco::config_map_bytes(&cm, CA_BUNDLE_KEY)
        .ok_or_else(|| format!("{CA_BUNDLE_KEY} not found in {ns}/{name}"))?;
    String::from_utf8(bytes).map_err(|e| format!("configmap {ns}/{name}: {e}"))
}

/// A kubeconfig's `clusters[0].cluster.certificate-authority-data`, decoded.
pub(super) fn kubeconfig_ca(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let config: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let encoded = config["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .unwrap_or("");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("{}: certificate-authority-data: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The kubeconfig at `path` with `clusters[0]`'s CA replaced.
pub(super) fn with_kubeconfig_ca(path: &std::path::Path, ca: &str) -> Result<Vec<u8>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut config: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let cluster = config
        .get_mut("clusters")
        .and_then(|c| c.get_mut(0))
        .and_then(|c| c.get_mut("cluster"))
        .and_then(|c| c.as_mapping_mut())
        .ok_or_else(|| format!("{}: no clusters[0].cluster", path.display()))?;
    cluster.insert(
        "certificate-authority-data".into(),
        base64::engine::general_purpose::STANDARD.encode(ca).into(),
    );
    serde_yaml::to_string(&config)
        .map(String::into_bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// What the certificate writer does about the kubeconfig CA (release-4.16
/// `certificate_writer.go`).
#[derive(Debug, PartialEq, Eq)]
pub struct KubeconfigPlan {
    /// `kubeConfigDiff && !allCertsThere`: write `/etc/kubernetes/kubeconfig`.
    pub rewrite: bool,
    /// Every added certificate is a localhost or load-balancer serving signer.
    pub defer_restart: bool,
    pub log: Vec<String>,
}

/// Serving signers whose addition does not restart the kubelet: a new certificate whose CN
/// contains one of these (release-4.16 `certificate_writer.go:211`). The installer's own
/// localhost and load-balancer signers and any localhost-recovery signer match; a signer KAS-O
/// rotated (`openshift-kube-apiserver-operator_localhost-serving-signer@…`,
/// `…_loadbalancer-serving-signer@…`) does not, so upstream restarts the kubelet for it.
pub const DEFERRED_SIGNERS: &[&str] = &[
    "kube-apiserver-localhost-signer",
    "openshift-kube-apiserver-operator_localhost-recovery-serving-signer",
    "kube-apiserver-lb-signer",
];

const END_CERTIFICATE: &str = "-----END CERTIFICATE-----";

/// Compare the on-disk kubeconfig CA with `kubeconfig-data`'s: split both on the END marker;
/// a configmap certificate missing on disk is added; one added certificate from outside
/// `DEFERRED_SIGNERS` means the kubelet restarts now.
pub fn plan_kubeconfig(on_disk: &str, server_ca: &str) -> KubeconfigPlan {
    let pieces = |text: &str| -> Vec<String> {
        text.split(END_CERTIFICATE)
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()
    };
    let (disk, wanted) = (pieces(on_disk), pieces(server_ca));
    let differs = on_disk.trim() != server_ca.trim();
    let mut all_there = true;
    let mut defer_restart = true;
    let mut log = Vec::new();
    for piece in wanted.iter().filter(|p| !disk.contains(p)) {
        all_there = false;
        let pem = format!("{piece}\n{END_CERTIFICATE}\n");
        let name = crate::pki::subjects(&pem)
            .ok()
            .and_then(|s| s.into_iter().next())
            .unwrap_or_default();
        log.push(format!(
            "Cert not found in kubeconfig. This means we need to write to disk. Subject is: {name}"
        ));
        if DEFERRED_SIGNERS.iter().any(|s| name.contains(s)) {
            log.push("Skipping kubelet restart".into());
        } else {
            defer_restart = false;
            log.push("Need to restart kubelet".into());
        }
    }
    KubeconfigPlan {
        rewrite: differs && !all_there,
        defer_restart,
        log,
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use fake_apiserver::CertificateAuthority;

    fn ca(cn: &str) -> String {
        CertificateAuthority::generate(cn).unwrap().cert_pem
    }

    #[test]
    fn the_kubeconfig_plan_follows_the_added_certificates() {
        let (current, next) = (ca("kube-apiserver-service-network-signer"), ca("serving-ca-2"));
        let localhost = ca("openshift-kube-apiserver-operator_kube-apiserver-localhost-signer@1767600000");
        let lb = ca("kube-apiserver-lb-signer");

        // As KAS-O names a rotated localhost serving signer: not on upstream's list, so it
        // restarts the kubelet.
        let rotated = ca("openshift-kube-apiserver-operator_localhost-serving-signer@1767600000");
        let restarts = plan_kubeconfig(&current, &format!("{current}{rotated}"));
        assert!(restarts.rewrite && !restarts.defer_restart, "{restarts:?}");

        let same = plan_kubeconfig(&current, &current);
        assert!(!same.rewrite && same.log.is_empty(), "{same:?}");

        let added = plan_kubeconfig(&current, &format!("{current}{next}"));
        assert!(added.rewrite && !added.defer_restart, "{added:?}");
        assert_eq!(
            added.log,
            [
                "Cert not found in kubeconfig. This means we need to write to disk. Subject is: serving-ca-2",
                "Need to restart kubelet"
            ]
        );

        let deferred = plan_kubeconfig(&current, &format!("{current}{localhost}{lb}"));
        assert!(deferred.rewrite && deferred.defer_restart, "{deferred:?}");

        let mixed = plan_kubeconfig(&current, &format!("{localhost}{next}"));
        assert!(mixed.rewrite && !mixed.defer_restart, "{mixed:?}");

        // Only removed: the bundle differs, but every configmap certificate is on disk.
        let removed = plan_kubeconfig(&format!("{current}{next}"), &current);
        assert!(!removed.rewrite, "{removed:?}");
    }
}
