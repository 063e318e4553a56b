//! The signer controller's reads and writes: certificate Secrets (`kubernetes.io/tls`, with
//! library-go's annotations) and CA bundle ConfigMaps, through the pass's snapshot when one is
//! taken, applied server-side as the controller's field manager.

use super::{SignerRotation, key};
use crate::cluster::ClusterError;
use crate::cluster::names::{CA_BUNDLE_KEY, FIELD_MANAGER};
use crate::pki::{IssuedCert, MANAGED_TYPE_LABEL, parse_certs};
use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::collections::BTreeMap;

pub(super) fn stored_from_secret(secret: Secret) -> Result<Option<Stored>, ClusterError> {
    let data = secret.data.unwrap_or_default();
    let text = |k: &str| {
        data.get(k)
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
            .unwrap_or_default()
    };
    let (pem, key_pem) = (text("tls.crt"), text("tls.key"));
    let Some(parsed) = parse_certs(&pem)?.into_iter().next() else {
        return Ok(None);
    };
    Ok(Some(Stored {
        cert: IssuedCert {
            pem,
            key_pem,
            common_name: parsed.common_name,
            issuer_common_name: parsed.issuer,
            not_before: parsed.not_before,
            not_after: parsed.not_after,
            serial: parsed.serial,
        },
        annotations: secret.metadata.annotations.unwrap_or_default(),
    }))
}

/// A certificate Secret as read back from the API server.
#[derive(Clone)]
pub(super) struct Stored {
    pub(super) cert: IssuedCert,
    pub(super) annotations: BTreeMap<String, String>,
}

impl SignerRotation {
    pub(super) async fn read_cert(&self, ns: &str, name: &str) -> Result<Option<Stored>, ClusterError> {
        if let Some(snapshot) = self.snapshot().as_ref() {
            return Ok(snapshot.certs.get(&key(ns, name)).cloned());
        }
        let api: Api<Secret> = Api::namespaced(self.client.clone(), ns);
        match api
            .get_opt(name)
            .await
            .map_err(|e| ClusterError::kube(format!("secret {ns}/{name}"), e))?
        {
            Some(secret) => stored_from_secret(secret),
            None => Ok(None),
        }
    }

    pub(super) async fn write_cert_secret(
        &self,
        ns: &str,
        name: &str,
        cert: &IssuedCert,
        kind: &str,
    ) -> Result<(), ClusterError> {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": ns, "annotations": cert.annotations(), "labels": {MANAGED_TYPE_LABEL: kind}},
            "data": {"tls.crt": b64(&cert.pem), "tls.key": b64(&cert.key_pem)},
        });
        let api: Api<Secret> = Api::namespaced(self.client.clone(), ns);
        api.patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(secret),
        )
        .await
        .map_err(|e| ClusterError::kube(format!("secret {ns}/{name}"), e))?;
        if let Some(snapshot) = self.snapshot().as_mut() {
            let stored = Stored {
                cert: cert.clone(),
                annotations: cert.annotations(),
            };
            snapshot.certs.insert(key(ns, name), stored);
        }
        Ok(())
    }

    pub(super) async fn read_bundle(&self, ns: &str, name: &str) -> Result<String, ClusterError> {
        if let Some(snapshot) = self.snapshot().as_ref() {
            return Ok(snapshot.bundles.get(&key(ns, name)).cloned().unwrap_or_default());
        }
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        let cm = api
            .get_opt(name)
            .await
            .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))?;
        Ok(cm
            .and_then(|c| c.data)
            .and_then(|d| d.get(CA_BUNDLE_KEY).cloned())
            .unwrap_or_default())
    }

    pub(super) async fn write_bundle(&self, ns: &str, name: &str, bundle: &str) -> Result<(), ClusterError> {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {CA_BUNDLE_KEY: bundle}});
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        api.patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(cm),
        )
        .await
        .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))?;
        if let Some(snapshot) = self.snapshot().as_mut() {
            snapshot.bundles.insert(key(ns, name), bundle.to_string());
        }
        Ok(())
    }
}
