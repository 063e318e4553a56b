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
//!
//! It copies a changed bundle only once it settled (release-4.16 sync.go:1020-1043): it polls
//! `kube-apiserver-server-ca` every 15 s for a minute, and a change it sees starts the minute
//! again from that poll; the copy is the bundle of the last poll, written when a minute passed
//! with no change. The sync is blocked meanwhile, so nothing of the ControllerConfig is
//! written either. Here each poll is an instant the clock stops at (`Operator::deadline`); at
//! the minute's end the copy is written without a poll (upstream's last tick and its timeout
//! fall on the same instant). A missing `kubeconfig-data` is created at once (:1069-1077). A pass
//! reads `kube-apiserver-server-ca` once and copies only what that read or its wait's polls saw,
//! as upstream's sync does (:985-1043): a change landing during a pass is the next pass's.
//! That half lives in `serving_ca`, the wait's state in `settling`.

use super::names::{
    CA_BUNDLE_KEY, INITIAL_KUBE_APISERVER_SERVER_CA, KUBE_APISERVER_CLIENT_CA,
    KUBE_APISERVER_TO_KUBELET_CLIENT_CA, KUBE_APISERVER_TO_KUBELET_SIGNER,
};
use super::{ClusterError, ClusterLog};
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
    /// `kube-system/bootstrap` exists and the operator is past in-cluster bring-up. Bring-up is
    /// the operator's first start on a new cluster (no ControllerConfig CRD yet) until its first
    /// sync without error (release-4.14 operator.go:265-273 and sync.go:191-194, release-4.16
    /// operator.go:325-333 and sync.go:207-210). A scenario's cluster has its CRDs before the
    /// operator's first pass (`fixtures/crds`), so upstream's operator started on it would not be
    /// in bring-up, and the reference's never is.
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
    /// A serving-CA change the 4.16 operator is waiting on to settle.
    settling: std::sync::Mutex<Option<Settling>>,
    /// Scaled down (`oc scale deployment/machine-config-operator --replicas=0`): it writes
    /// nothing, so a hand edit of the ControllerConfig stays.
    scaled_down: std::sync::atomic::AtomicBool,
}

impl Operator {
    pub fn new(client: kube::Client, profile: Profile, clock: SimClock, log: ClusterLog) -> Self {
        Operator {
            client,
            profile,
            clock,
            log,
            rotate_set_at: std::sync::Mutex::new(None),
            settling: std::sync::Mutex::new(None),
            scaled_down: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Scale the operator down for the rest of the scenario: it writes nothing from now on.
    pub fn scale_down(&self) {
        self.scaled_down.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn is_scaled_down(&self) -> bool {
        self.scaled_down.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The next instant the operator acts at of its own (a poll of its wait for the serving CA
    /// bundle to settle, or the copy at the wait's end): the clock must stop there.
    pub fn deadline(&self) -> Option<time::OffsetDateTime> {
        self.settling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(Settling::next)
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
        if self.is_scaled_down() {
            return Ok(false);
        }
        // The serving CA bundle is read once a pass, before anything is written (upstream's
        // sync reads it once and copies only what that read or its wait's polls saw, sync.go:985-1043):
        // a change landing during the pass is the next pass's to see.
        let serving_ca = match self.profile.traits().serving_ca_rotation {
            true => match self.serving_ca().await? {
                ServingCa::Waiting => return Ok(false), // its sync waits: nothing else is written
                step => Some(step),
            },
            false => None,
        };
        // Everything the sync writes is worked out before anything is written: a failed
        // assembly fails the whole sync, the kubelet CA bundle included (release-4.16
        // sync.go:464-479 returns before the ControllerConfig is applied).
        let registry_cas = match self.profile.traits().registry_ca_copy {
            true => Some(super::registry_bundles::assemble(&self.client).await?),
            false => None,
        };
        let pull_secret = self.registry_pull_secret().await?;
        let mut changed = self.sync_kubelet_ca().await?;
        if let Some((cluster, user)) = registry_cas {
            changed |= self.write_registry_cas(&cluster, &user).await?;
        }
        if let Some(encoded) = pull_secret {
            changed |= self
                .write_spec_field(
                    "internalRegistryPullSecret",
                    encoded,
                    "internal registry pull secret",
                )
                .await?;
        }
        if let Some(step) = serving_ca {
            changed |= self.sync_server_ca(step).await?;
        }
        Ok(changed)
    }

    /// ControllerConfig `internalRegistryPullSecret` as the operator assembles it after the
    /// hand-over (`super::registry_pull_secret`), nothing before; written when it differs.
    /// What ControllerConfig `internalRegistryPullSecret` is to hold, base64 (`Some(None)`: no
    /// secret), as the operator assembles it after the hand-over (`super::registry_pull_secret`),
    /// nothing before; `None` where the release has no such field.
    async fn registry_pull_secret(&self) -> Result<Option<Option<String>>, ClusterError> {
        use crate::profile::RegistryPullSecretAssembly as A;
        let skip_unreadable = match self.profile.traits().registry_pull_secret_assembly {
            A::None => return Ok(None),
            A::SkippingUnreadableSecrets => true,
            A::Strict => false,
        };
        let wanted = match self.sources().await?.bootstrap_complete {
            true => super::registry_pull_secret::assemble(&self.client, skip_unreadable).await?,
            false => None,
        };
        Ok(Some(
            wanted.map(|b| base64::engine::general_purpose::STANDARD.encode(b)),
        ))
    }

    /// Write a base64 `[]byte` field of the ControllerConfig's spec (`None`: none) when it
    /// differs from what the ControllerConfig holds, logging it as `what`; whether it wrote.
    async fn write_spec_field(
        &self,
        field: &str,
        encoded: Option<String>,
        what: &str,
    ) -> Result<bool, ClusterError> {
        self.write_spec(json!({ field: encoded }), what).await
    }

    /// ControllerConfig `imageRegistryBundleData` and `imageRegistryBundleUserData`, written
    /// together when either differs from what the ControllerConfig holds; whether it wrote.
    async fn write_registry_cas(
        &self,
        cluster: &[super::registry_bundles::Bundle],
        user: &[super::registry_bundles::Bundle],
    ) -> Result<bool, ClusterError> {
        let as_json = |list: &[super::registry_bundles::Bundle]| {
            serde_json::Value::Array(
                list.iter()
                    .map(|(file, data)| {
                        json!({"file": file, "data": base64::engine::general_purpose::STANDARD.encode(data)})
                    })
                    .collect(),
            )
        };
        let fields = json!({"imageRegistryBundleData": as_json(cluster), "imageRegistryBundleUserData": as_json(user)});
        self.write_spec(fields, "image registry CAs").await
    }

    /// Merge `fields` into the ControllerConfig's spec when any differs from what it holds (no
    /// value and an empty list are the same: Go writes `[]` for an empty slice), logging the
    /// write as `what`; whether it wrote.
    async fn write_spec(&self, fields: serde_json::Value, what: &str) -> Result<bool, ClusterError> {
        let api = controller_configs(&self.client);
        let object = || format!("controllerconfig {CONTROLLER_CONFIG}");
        let cc = api
            .get(CONTROLLER_CONFIG)
            .await
            .map_err(|e| ClusterError::kube(object(), e))?;
        let same = fields.as_object().into_iter().flatten().all(|(field, wanted)| {
            let held = &cc.data["spec"][field];
            held == wanted || (held.is_null() && *wanted == json!([]))
        });
        if same {
            return Ok(false);
        }
        let updated = api
            .patch(
                CONTROLLER_CONFIG,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": fields })),
            )
            .await
            .map_err(|e| ClusterError::kube(object(), e))?;
        self.log.record(
            self.clock.now(),
            &format!(
                "operator: controllerconfig {CONTROLLER_CONFIG} {what} updated (resourceVersion {})",
                updated.metadata.resource_version.unwrap_or_default()
            ),
        );
        Ok(true)
    }

    async fn sync_kubelet_ca(&self) -> Result<bool, ClusterError> {
        let bundle = kubelet_ca_bundle(self.profile, &self.sources().await?)?;
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bundle);
        self.write_spec_field("kubeAPIServerServingCAData", Some(encoded), "kubelet CA bundle")
            .await
    }
}

mod serving_ca;
mod settling;
#[cfg(test)]
mod tests;

pub use settling::{SETTLE_POLL, SETTLE_WAIT};
use settling::{ServingCa, Settling};
