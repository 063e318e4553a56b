//! The 4.16 operator's serving-CA sync (release-4.16 `pkg/operator/sync.go` 985-1087): its wait
//! for `kube-apiserver-server-ca` to settle, the copy into `kubeconfig-data`, and the
//! ControllerConfig's `service-ca-rotate` annotation (see the parent module's doc); the wait's
//! state and what a pass decides are `settling`'s.

use super::settling::{SETTLE_WAIT, ServingCa, Settling};
use super::{CONTROLLER_CONFIG, Operator, controller_configs};
use crate::cluster::ClusterError;
use crate::cluster::names::{CA_BUNDLE_KEY, KUBE_APISERVER_SERVER_CA, KUBECONFIG_DATA};
use crate::mco::{SERVICE_CA_ROTATE, config_map_bytes};
use crate::pki::Clock;
use base64::Engine;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

impl Operator {
    /// What the 4.16 operator's serving-CA sync does at the clock's now, from one read of
    /// `kube-apiserver-server-ca` and `kubeconfig-data`: its wait for the bundle to settle moved
    /// to now (a change seen with no wait running starts one), and what it then copies.
    pub(super) async fn serving_ca(&self) -> Result<ServingCa, ClusterError> {
        let now = self.clock.now();
        let server_ca = self.server_ca().await?;
        let existing = self.kubeconfig_data().await?;
        let mut settling = self.settling.lock().unwrap_or_else(|p| p.into_inner());
        let Some(wait) = settling.as_mut() else {
            let Some(server_ca) = server_ca else {
                return Ok(ServingCa::InStep); // nothing to copy
            };
            let Some(held) = &existing else {
                // kubeconfig-data is created at once (sync.go:1069-1077).
                return Ok(ServingCa::Copy {
                    bundle: server_ca,
                    create: true,
                    ended_wait: false,
                });
            };
            if config_map_bytes(held, CA_BUNDLE_KEY).as_deref() == Some(server_ca.as_slice()) {
                return Ok(ServingCa::InStep);
            }
            *settling = Some(Settling {
                since: now,
                polled: now,
                bundle: server_ca,
            });
            drop(settling);
            self.log.record(
                now,
                "operator: kube-apiserver-server-ca differs from kubeconfig-data; polling it every 15 s until it is unchanged for a minute",
            );
            return Ok(ServingCa::Waiting);
        };
        // Every poll due by now, each reading the bundle as it is now: the clock stops at each
        // (`deadline`), so no change falls between two polls unseen.
        while wait.next() <= now && wait.next() < wait.since + SETTLE_WAIT {
            wait.polled = wait.next();
            if let Some(seen) = &server_ca
                && *seen != wait.bundle
            {
                wait.bundle = seen.clone();
                wait.since = wait.polled;
                self.log.record(
                    wait.polled,
                    "operator: found new data in kube-apiserver-server-ca while polling; waiting a further minute",
                );
            }
        }
        if now < wait.since + SETTLE_WAIT {
            return Ok(ServingCa::Waiting);
        }
        // The wait is over: it copies what its last poll saw. The wait ends once that is
        // written (`sync_server_ca`), so a pass that fails before keeps it.
        Ok(ServingCa::Copy {
            bundle: wait.bundle.clone(),
            create: existing.is_none(),
            ended_wait: true,
        })
    }

    async fn server_ca(&self) -> Result<Option<Vec<u8>>, ClusterError> {
        let (ns, name) = KUBE_APISERVER_SERVER_CA;
        Ok(Api::<ConfigMap>::namespaced(self.client.clone(), ns)
            .get_opt(name)
            .await
            .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))?
            .and_then(|cm| config_map_bytes(&cm, CA_BUNDLE_KEY)))
    }

    async fn kubeconfig_data(&self) -> Result<Option<ConfigMap>, ClusterError> {
        let (ns, name) = KUBECONFIG_DATA;
        Api::<ConfigMap>::namespaced(self.client.clone(), ns)
            .get_opt(name)
            .await
            .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))
    }

    /// 4.16: what `serving_ca` decided — `kube-apiserver-server-ca`'s bundle into
    /// `kubeconfig-data` — and `service-ca-rotate`.
    pub(super) async fn sync_server_ca(&self, step: ServingCa) -> Result<bool, ClusterError> {
        let (ns, name) = KUBECONFIG_DATA;
        let configmaps: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        let mut changed = false;
        // A wait that ended writes what it saw, even what kubeconfig-data already holds, and
        // marks the rotation (sync.go:1045-1066 patch and set editCCAnno unconditionally).
        let differs = matches!(step, ServingCa::Copy { .. });
        if let ServingCa::Copy {
            bundle: server_ca,
            create,
            ended_wait,
        } = step
        {
            // Upstream writes the bundle as binaryData: a create, or a merge patch from the
            // object it read to one holding only binaryData, which drops `data` (sync.go:1045-1076).
            let encoded = base64::engine::general_purpose::STANDARD.encode(&server_ca);
            let what = || format!("configmap {ns}/{name}");
            if !create {
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
                    binary_data: Some([(CA_BUNDLE_KEY.into(), k8s_openapi::ByteString(server_ca))].into()),
                    ..Default::default()
                };
                configmaps
                    .create(&Default::default(), &object)
                    .await
                    .map_err(|e| ClusterError::kube(what(), e))?;
            }
            if ended_wait {
                *self.settling.lock().unwrap_or_else(|p| p.into_inner()) = None;
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
}
