//! The signer controller's reads and writes: certificate Secrets (`kubernetes.io/tls`, with
//! library-go's annotations) and CA bundle ConfigMaps, through the pass's snapshot when one is
//! taken, applied server-side as the controller's field manager.

use super::stored::{Stored, stored_from_secret};
use super::{SignerRotation, key};
use crate::cluster::ClusterError;
use crate::cluster::names::{CA_BUNDLE_KEY, FIELD_MANAGER};
use crate::pki::{IssuedCert, MANAGED_TYPE_LABEL};
use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

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
