//! The machine-config operator's part of a rotation: turning the source CA bundles into
//! ControllerConfig `machine-config-controller`'s `spec.kubeAPIServerServingCAData`, the
//! kubelet's clientCAFile content (shared/notes/mco-source.md §1, §4).
//!
//! - 4.12 (`pkg/operator/sync.go syncRenderConfig`, release-4.12): the installer's
//!   `initial-kube-apiserver-server-ca`, with its kube-apiserver-to-kubelet signer replaced by
//!   the whole `kube-apiserver-to-kubelet-client-ca` bundle (or as is, if that is missing).
//! - 4.16 (PR #3458, gated by PR #3513): `kube-apiserver-client-ca`, but only once
//!   `kube-system/bootstrap` exists and the operator is past its in-cluster bring-up; before
//!   that the 4.12 rule, so the first in-cluster render equals the bootstrap one.
//!
//! `kubelet_ca_bundle` decides; `Operator` reads the sources and writes the ControllerConfig.
//!
//! 4.16 also keeps the nodes' kubeconfig CA in step (`syncControllerConfig`, PR #4106): when
//! `openshift-config-managed/kube-apiserver-server-ca` differs from
//! `openshift-machine-config-operator/kubeconfig-data`, it copies the bundle there and sets the
//! ControllerConfig annotation `service-ca-rotate: "true"`; at its next sync, with the two
//! equal, `"false"`. Its next sync is the next resync after the daemons saw `"true"`: here,
//! the next instant the simulated clock stops at.

use super::names::{
    CA_BUNDLE_KEY, INITIAL_KUBE_APISERVER_SERVER_CA, KUBE_APISERVER_CLIENT_CA, KUBE_APISERVER_SERVER_CA,
    KUBE_APISERVER_TO_KUBELET_CLIENT_CA, KUBE_APISERVER_TO_KUBELET_SIGNER, KUBECONFIG_DATA,
};
use super::{ClusterError, ClusterLog};
use crate::mco::{SERVICE_CA_ROTATE, config_map_bytes};
use crate::pki::{Clock, SimClock, merge_cert_with_ca_bundle};
use crate::profile::{KubeletCaBundleRule, Profile};
use base64::Engine;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

pub use crate::mco::api::{CONTROLLER_CONFIG, controller_config_resource, controller_configs};

/// `kube-system/bootstrap`: present once the bootstrap node has handed over.
pub const BOOTSTRAP_CONFIGMAP: (&str, &str) = ("kube-system", "bootstrap");

/// The inputs of the decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaSources {
    pub initial: Option<String>,
    pub kubelet_client_ca: Option<String>,
    pub client_ca: Option<String>,
    /// `kube-system/bootstrap` exists and the operator is past in-cluster bring-up.
    pub bootstrap_complete: bool,
}

/// The kubelet CA bundle a profile's operator puts into ControllerConfig.
pub fn kubelet_ca_bundle(profile: Profile, sources: &CaSources) -> Result<String, ClusterError> {
    let initial_rule = || -> Result<String, ClusterError> {
        let initial = sources.initial.as_deref().ok_or_else(|| {
            ClusterError::Missing(format!(
                "configmap {}/{}",
                INITIAL_KUBE_APISERVER_SERVER_CA.0, INITIAL_KUBE_APISERVER_SERVER_CA.1
            ))
        })?;
        match sources.kubelet_client_ca.as_deref() {
            Some(new) if !new.trim().is_empty() => Ok(merge_cert_with_ca_bundle(
                initial,
                new,
                KUBE_APISERVER_TO_KUBELET_SIGNER,
            )?),
            _ => Ok(initial.to_string()),
        }
    };
    match profile.traits().kubelet_ca_bundle {
        KubeletCaBundleRule::InitialMerged => initial_rule(),
        KubeletCaBundleRule::ClientCaOnceBootstrapped if sources.bootstrap_complete => {
            sources.client_ca.clone().ok_or_else(|| {
                ClusterError::Missing(format!(
                    "configmap {}/{}",
                    KUBE_APISERVER_CLIENT_CA.0, KUBE_APISERVER_CLIENT_CA.1
                ))
            })
        }
        KubeletCaBundleRule::ClientCaOnceBootstrapped => initial_rule(),
    }
}

/// The operator: keeps ControllerConfig's kubelet CA bundle in step with its sources.
pub struct Operator {
    client: kube::Client,
    profile: Profile,
    clock: SimClock,
    log: ClusterLog,
    /// When the operator last set `service-ca-rotate: "true"`.
    rotate_set_at: std::sync::Mutex<Option<time::OffsetDateTime>>,
}

impl Operator {
    pub fn new(client: kube::Client, profile: Profile, clock: SimClock, log: ClusterLog) -> Self {
        Operator {
            client,
            profile,
            clock,
            log,
            rotate_set_at: std::sync::Mutex::new(None),
        }
    }

    async fn bundle(&self, (ns, name): (&str, &str)) -> Result<Option<String>, ClusterError> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        let cm = api
            .get_opt(name)
            .await
            .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))?;
        Ok(cm.map(|c| {
            c.data
                .unwrap_or_default()
                .get(CA_BUNDLE_KEY)
                .cloned()
                .unwrap_or_default()
        }))
    }

    pub async fn sources(&self) -> Result<CaSources, ClusterError> {
        Ok(CaSources {
            initial: self.bundle(INITIAL_KUBE_APISERVER_SERVER_CA).await?,
            kubelet_client_ca: self.bundle(KUBE_APISERVER_TO_KUBELET_CLIENT_CA).await?,
            client_ca: self.bundle(KUBE_APISERVER_CLIENT_CA).await?,
            bootstrap_complete: {
                let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), BOOTSTRAP_CONFIGMAP.0);
                api.get_opt(BOOTSTRAP_CONFIGMAP.1)
                    .await
                    .map_err(|e| ClusterError::kube("configmap kube-system/bootstrap".into(), e))?
                    .is_some()
            },
        })
    }

    /// One pass: write the bundle into the ControllerConfig if it differs; on 4.16 keep
    /// `kubeconfig-data` and `service-ca-rotate` in step. Returns whether it wrote.
    pub async fn reconcile(&self) -> Result<bool, ClusterError> {
        let mut changed = self.sync_kubelet_ca().await?;
        if self.profile.traits().serving_ca_rotation {
            changed |= self.sync_server_ca().await?;
        }
        Ok(changed)
    }

    /// 4.16: `kube-apiserver-server-ca` into `kubeconfig-data`, and `service-ca-rotate`.
    async fn sync_server_ca(&self) -> Result<bool, ClusterError> {
        let read = |(ns, name): (&'static str, &'static str)| async move {
            Api::<ConfigMap>::namespaced(self.client.clone(), ns)
                .get_opt(name)
                .await
                .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))
        };
        // Both sides read as upstream's cmToData: binaryData, else data (base64 or raw).
        let Some(server_ca) = read(KUBE_APISERVER_SERVER_CA)
            .await?
            .and_then(|cm| config_map_bytes(&cm, CA_BUNDLE_KEY))
        else {
            return Ok(false);
        };
        let (ns, name) = KUBECONFIG_DATA;
        let configmaps: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        let existing = read(KUBECONFIG_DATA).await?;
        let copied = existing
            .as_ref()
            .and_then(|cm| config_map_bytes(cm, CA_BUNDLE_KEY));
        let differs = copied.as_deref() != Some(server_ca.as_slice());
        let mut changed = false;
        if differs {
            // Upstream writes the bundle as binaryData: a create, or a merge patch from the
            // object it read to one holding only binaryData, which drops `data` (sync.go:1045-1076).
            let encoded = base64::engine::general_purpose::STANDARD.encode(&server_ca);
            let what = || format!("configmap {ns}/{name}");
            if existing.is_some() {
                let patch = json!({"data": null, "binaryData": {CA_BUNDLE_KEY: encoded}});
                configmaps
                    .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map_err(|e| ClusterError::kube(what(), e))?;
            } else {
                let object = ConfigMap {
                    metadata: kube::api::ObjectMeta {
                        name: Some(name.into()),
                        namespace: Some(ns.into()),
                        ..Default::default()
                    },
                    binary_data: Some(
                        [(CA_BUNDLE_KEY.into(), k8s_openapi::ByteString(server_ca.clone()))].into(),
                    ),
                    ..Default::default()
                };
                configmaps
                    .create(&Default::default(), &object)
                    .await
                    .map_err(|e| ClusterError::kube(what(), e))?;
            }
            self.log.record(
                self.clock.now(),
                &format!("operator: configmap {ns}/{name} updated from kube-apiserver-server-ca"),
            );
            *self.rotate_set_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(self.clock.now());
            changed = true;
        }
        let set_at = *self.rotate_set_at.lock().unwrap_or_else(|p| p.into_inner());
        let rotate = if differs || set_at == Some(self.clock.now()) {
            "true"
        } else {
            "false"
        };
        let api = controller_configs(&self.client);
        let cc = api
            .get(CONTROLLER_CONFIG)
            .await
            .map_err(|e| ClusterError::kube(format!("controllerconfig {CONTROLLER_CONFIG}"), e))?;
        let current = cc
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SERVICE_CA_ROTATE));
        // Upstream sets it on every sync, "false" included (sync.go:1083-1087), so a cluster's
        // ControllerConfig always carries it once the operator has run.
        if current.map(String::as_str) != Some(rotate) {
            let patch = json!({"metadata": {"annotations": {SERVICE_CA_ROTATE: rotate}}});
            api.patch(CONTROLLER_CONFIG, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .map_err(|e| ClusterError::kube(format!("controllerconfig {CONTROLLER_CONFIG}"), e))?;
            self.log.record(
                self.clock.now(),
                &format!("operator: controllerconfig {CONTROLLER_CONFIG} {SERVICE_CA_ROTATE}={rotate}"),
            );
            changed = true;
        }
        Ok(changed)
    }

    async fn sync_kubelet_ca(&self) -> Result<bool, ClusterError> {
        let bundle = kubelet_ca_bundle(self.profile, &self.sources().await?)?;
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bundle);
        let api = controller_configs(&self.client);
        let what = || format!("controllerconfig {CONTROLLER_CONFIG}");
        let cc = api
            .get(CONTROLLER_CONFIG)
            .await
            .map_err(|e| ClusterError::kube(what(), e))?;
        if cc.data["spec"]["kubeAPIServerServingCAData"].as_str() == Some(encoded.as_str()) {
            return Ok(false);
        }
        let patch = json!({"spec": {"kubeAPIServerServingCAData": encoded}});
        let updated = api
            .patch(CONTROLLER_CONFIG, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map_err(|e| ClusterError::kube(what(), e))?;
        self.log.record(
            self.clock.now(),
            &format!(
                "operator: controllerconfig {CONTROLLER_CONFIG} kubelet CA bundle updated (resourceVersion {})",
                updated.metadata.resource_version.unwrap_or_default()
            ),
        );
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::{SIMULATION_EPOCH, Signer, subjects};
    use time::Duration;

    fn signer(name: &str, days: i64, serial: u64) -> String {
        Signer::issue(
            "openshift-kube-apiserver-operator",
            name,
            SIMULATION_EPOCH + Duration::days(days),
            Duration::days(365),
            serial,
        )
        .unwrap()
        .cert
        .pem
    }

    #[test]
    fn each_profile_picks_its_sources() {
        let serving = Signer::issue_named(
            "kube-apiserver-lb-signer",
            SIMULATION_EPOCH,
            Duration::days(3650),
            1,
        )
        .unwrap()
        .cert
        .pem;
        let (old, new) = (
            signer(KUBE_APISERVER_TO_KUBELET_SIGNER, 0, 2),
            signer(KUBE_APISERVER_TO_KUBELET_SIGNER, 292, 3),
        );
        let csr = signer("csr-signer", 0, 4);
        let sources = CaSources {
            initial: Some(format!("{serving}{old}")),
            kubelet_client_ca: Some(format!("{new}{old}")),
            client_ca: Some(format!("{csr}{new}{old}")),
            bootstrap_complete: true,
        };
        let names = |pem: &str| subjects(pem).unwrap();
        assert_eq!(
            names(&kubelet_ca_bundle(Profile::Ocp412, &sources).unwrap()),
            names(&format!("{serving}{new}{old}"))
        );
        assert_eq!(
            names(&kubelet_ca_bundle(Profile::Ocp416, &sources).unwrap()),
            names(&format!("{csr}{new}{old}"))
        );
        let bringing_up = CaSources {
            bootstrap_complete: false,
            ..sources.clone()
        };
        assert_eq!(
            kubelet_ca_bundle(Profile::Ocp416, &bringing_up).unwrap(),
            kubelet_ca_bundle(Profile::Ocp412, &bringing_up).unwrap(),
            "before bootstrap completes, 4.16 renders what the bootstrap did"
        );
        let no_new = CaSources {
            kubelet_client_ca: None,
            ..sources.clone()
        };
        assert_eq!(
            kubelet_ca_bundle(Profile::Ocp412, &no_new).unwrap(),
            format!("{serving}{old}")
        );
        let nothing = CaSources::default();
        assert!(
            kubelet_ca_bundle(Profile::Ocp412, &nothing)
                .unwrap_err()
                .to_string()
                .contains("initial-kube-apiserver-server-ca")
        );
    }
}
