//! Signer rotation: the part of the kube-apiserver and kube-controller-manager operators that
//! issues and rotates the catalogue's signers, publishes their CA bundles, re-issues their
//! targets (the kube-apiserver's kubelet client certificate, KCM-O's `csr-signer` and its
//! `csr-signer-ca`), and keeps the unions (`csr-controller-ca`,
//! `openshift-config-managed/kube-apiserver-client-ca`) up to date. `seed` issues what a
//! starting state holds at install.
//!
//! Everything goes through the API server: signers and targets are `kubernetes.io/tls`
//! Secrets with library-go's annotations, bundles are ConfigMaps with `ca-bundle.crt`. A forced
//! rotation is what MCO's e2e does: a JSON patch that nulls `certificate-not-after`, which the
//! next reconcile sees as a missing annotation. Decisions are the pure rules of `pki`; this
//! module reads, decides at the simulated clock's now, and writes.

mod seed;
mod store;
mod stored;

use stored::{Stored, stored_from_secret};

use super::names::{
    CA_BUNDLE_KEY, CLIENT_CA_SOURCES, CSR_CONTROLLER_CA, CSR_CONTROLLER_CA_SOURCES, KUBE_APISERVER_CLIENT_CA,
};
use super::{ClusterError, ClusterLog};
use crate::pki::{
    BundleOrder, Catalogue, Clock, IssuedCert, MANAGED_TYPE_LABEL, Signer, SignerSpec, SimClock,
    TargetContext, TargetKind, TargetSpec, append_to_ca_bundle, combine_bundles, expired, manage_ca_bundle,
    parse_certs, rfc3339, signer_deadline, signer_rotation, subjects, target_deadline, target_rotation,
    target_validity,
};
use crate::profile::Profile;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use time::OffsetDateTime;

/// The controller. Cheap to share; `run` drives it, `reconcile` is one pass.
pub struct SignerRotation {
    client: kube::Client,
    catalogue: Arc<Catalogue>,
    profile: Profile,
    clock: SimClock,
    log: ClusterLog,
    serial: AtomicU64,
    /// During a pass: every managed Secret and every ConfigMap bundle, read with two lists
    /// instead of a GET per object, and kept current by this controller's own writes.
    snapshot: std::sync::Mutex<Option<Snapshot>>,
}

#[derive(Default)]
struct Snapshot {
    certs: BTreeMap<(String, String), Stored>,
    bundles: BTreeMap<(String, String), String>,
}

fn key(ns: &str, name: &str) -> (String, String) {
    (ns.to_string(), name.to_string())
}

fn split(ns_name: &str) -> (&str, &str) {
    ns_name
        .split_once('/')
        .expect("catalogue bundles are checked to be namespace/name")
}

impl SignerRotation {
    pub fn new(
        client: kube::Client,
        catalogue: Arc<Catalogue>,
        profile: Profile,
        clock: SimClock,
        log: ClusterLog,
    ) -> Self {
        SignerRotation {
            client,
            catalogue,
            profile,
            clock,
            log,
            serial: AtomicU64::new(1000),
            snapshot: std::sync::Mutex::new(None),
        }
    }

    fn snapshot(&self) -> std::sync::MutexGuard<'_, Option<Snapshot>> {
        self.snapshot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Read every managed Secret and every ConfigMap once, for the pass about to run.
    async fn take_snapshot(&self) -> Result<(), ClusterError> {
        let secrets = Api::<Secret>::all(self.client.clone())
            .list(&ListParams::default().labels(MANAGED_TYPE_LABEL))
            .await
            .map_err(|e| ClusterError::kube("managed secrets".into(), e))?;
        let configmaps = Api::<ConfigMap>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("configmaps".into(), e))?;
        let mut snapshot = Snapshot::default();
        for secret in secrets {
            let k = key(
                secret.metadata.namespace.as_deref().unwrap_or(""),
                secret.metadata.name.as_deref().unwrap_or(""),
            );
            if let Some(stored) = stored_from_secret(secret)? {
                snapshot.certs.insert(k, stored);
            }
        }
        for cm in configmaps {
            let k = key(
                cm.metadata.namespace.as_deref().unwrap_or(""),
                cm.metadata.name.as_deref().unwrap_or(""),
            );
            snapshot.bundles.insert(
                k,
                cm.data
                    .unwrap_or_default()
                    .get(CA_BUNDLE_KEY)
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        *self.snapshot() = Some(snapshot);
        Ok(())
    }

    fn drop_snapshot(&self) {
        *self.snapshot() = None;
    }

    fn next_serial(&self) -> u64 {
        self.serial.fetch_add(1, Ordering::Relaxed)
    }

    fn order(&self) -> BundleOrder {
        self.profile.traits().bundle_order
    }

    /// One pass at the clock's now. Returns what changed, for the cluster log.
    pub async fn reconcile(&self) -> Result<Vec<String>, ClusterError> {
        self.take_snapshot().await?;
        let result = self.reconcile_snapshot().await;
        self.drop_snapshot();
        result
    }

    async fn reconcile_snapshot(&self) -> Result<Vec<String>, ClusterError> {
        let now = self.clock.now();
        let mut changes = Vec::new();
        for spec in self.catalogue.signers.iter().filter(|s| !s.installer_only) {
            self.reconcile_signer(spec, now, &mut changes).await?;
        }
        // Bundles that only installer-only signers feed just lose what expires.
        for spec in self.catalogue.signers.iter().filter(|s| s.installer_only) {
            if self
                .catalogue
                .signers
                .iter()
                .any(|o| !o.installer_only && o.bundle == spec.bundle)
            {
                continue;
            }
            self.drop_expired(&spec.bundle, now, &mut changes).await?;
        }
        for target in &self.catalogue.targets {
            self.reconcile_target(target, now, &mut changes).await?;
        }
        if self.publish_unions(now).await? {
            changes.push(format!(
                "published {}/{}",
                KUBE_APISERVER_CLIENT_CA.0, KUBE_APISERVER_CLIENT_CA.1
            ));
        }
        for change in &changes {
            self.log.record(now, change);
        }
        Ok(changes)
    }

    /// A signer rotated when missing or when its rule says so, and its bundle managed.
    async fn reconcile_signer(
        &self,
        spec: &SignerSpec,
        now: OffsetDateTime,
        changes: &mut Vec<String>,
    ) -> Result<(), ClusterError> {
        let stored = self.read_cert(&spec.namespace, &spec.name).await?;
        let reason = match &stored {
            None => Some("missing".to_string()),
            Some(s) => {
                signer_rotation(&s.annotations, now, &spec.policy(self.profile)).map(|r| r.to_string())
            }
        };
        let current = match (reason, stored) {
            (None, Some(stored)) => stored.cert,
            (reason, _) => {
                let reason = reason.unwrap_or_else(|| "missing".to_string());
                let issued = self.issue_signer(spec, now, false)?;
                self.write_cert_secret(&spec.namespace, &spec.name, &issued, "signer")
                    .await?;
                changes.push(format!(
                    "rotated signer {}/{} ({reason}): new {}",
                    spec.namespace, spec.name, issued.common_name
                ));
                issued
            }
        };
        let (ns, name) = split(&spec.bundle);
        let existing = self.read_bundle(ns, name).await?;
        let next = manage_ca_bundle(&current.pem, &existing, now, self.order())?;
        if next != existing {
            self.write_bundle(ns, name, &next).await?;
            changes.push(format!("published {ns}/{name}: {:?}", subjects(&next)?));
        }
        Ok(())
    }

    /// The bundle (`namespace/name`) without its expired certificates.
    async fn drop_expired(
        &self,
        bundle: &str,
        now: OffsetDateTime,
        changes: &mut Vec<String>,
    ) -> Result<(), ClusterError> {
        let (ns, name) = split(bundle);
        let existing = self.read_bundle(ns, name).await?;
        let kept: String = parse_certs(&existing)?
            .into_iter()
            .filter(|c| !expired(c.not_after, now))
            .map(|c| c.pem)
            .collect();
        if kept != existing {
            self.write_bundle(ns, name, &kept).await?;
            changes.push(format!("dropped expired certificates from {ns}/{name}"));
        }
        Ok(())
    }

    /// A target certificate re-issued from its signer when missing or when its rule says so,
    /// and appended to its bundle if it has one. Nothing while its signer is missing.
    async fn reconcile_target(
        &self,
        target: &TargetSpec,
        now: OffsetDateTime,
        changes: &mut Vec<String>,
    ) -> Result<(), ClusterError> {
        let signer_spec = signer_of(&self.catalogue, target);
        let Some(signer) = self.read_cert(&signer_spec.namespace, &signer_spec.name).await? else {
            return Ok(());
        };
        let (ns, name) = split(&signer_spec.bundle);
        let bundle_subjects = subjects(&self.read_bundle(ns, name).await?)?;
        let context = TargetContext {
            signer_not_before: signer.cert.not_before,
            bundle_subjects: &bundle_subjects,
        };
        let stored = self.read_cert(&target.namespace, &target.name).await?;
        let reason = match &stored {
            None => Some("missing".to_string()),
            Some(s) => target_rotation(&s.annotations, now, &target.policy(self.profile), &context)
                .map(|r| r.to_string()),
        };
        let current = match (reason, stored) {
            (None, Some(stored)) => stored.cert,
            (reason, _) => {
                let reason = reason.unwrap_or_else(|| "missing".to_string());
                let issued = self.make_target(target, &signer.cert, now)?;
                self.write_cert_secret(&target.namespace, &target.name, &issued, "target")
                    .await?;
                changes.push(format!(
                    "re-issued {}/{} ({reason}): {} from {}, valid until {}",
                    target.namespace,
                    target.name,
                    issued.common_name,
                    issued.issuer_common_name,
                    rfc3339(issued.not_after)
                ));
                issued
            }
        };
        if let Some(ns_name) = &target.bundle {
            let (ns, name) = split(ns_name);
            let existing = self.read_bundle(ns, name).await?;
            let next = append_to_ca_bundle(&current.pem, &existing, now)?;
            if next != existing {
                self.write_bundle(ns, name, &next).await?;
                changes.push(format!("published {ns}/{name}: {:?}", subjects(&next)?));
            }
        }
        Ok(())
    }

    /// The next instant after now at which a rule fires or a bundle certificate expires.
    pub async fn next_deadline(&self) -> Result<Option<OffsetDateTime>, ClusterError> {
        Ok(self.deadlines().await?.first().copied())
    }

    /// Every instant after now at which a rule fires or a bundle certificate expires, earliest
    /// first.
    pub async fn deadlines(&self) -> Result<Vec<OffsetDateTime>, ClusterError> {
        self.take_snapshot().await?;
        let result = self.deadline_snapshot().await;
        self.drop_snapshot();
        result
    }

    async fn deadline_snapshot(&self) -> Result<Vec<OffsetDateTime>, ClusterError> {
        let now = self.clock.now();
        let mut deadlines = Vec::new();
        for spec in &self.catalogue.signers {
            if let Some(s) = self.read_cert(&spec.namespace, &spec.name).await? {
                deadlines.extend(signer_deadline(&s.annotations, &spec.policy(self.profile)));
            }
            deadlines.extend(self.expiries(&spec.bundle).await?);
        }
        for target in &self.catalogue.targets {
            let signer_spec = signer_of(&self.catalogue, target);
            let signer = self.read_cert(&signer_spec.namespace, &signer_spec.name).await?;
            if let (Some(t), Some(signer)) = (self.read_cert(&target.namespace, &target.name).await?, signer)
            {
                deadlines.extend(target_deadline(
                    &t.annotations,
                    &target.policy(self.profile),
                    signer.cert.not_before,
                ));
            }
            if let Some(bundle) = &target.bundle {
                deadlines.extend(self.expiries(bundle).await?);
            }
        }
        deadlines.retain(|d| *d > now);
        deadlines.sort();
        deadlines.dedup();
        Ok(deadlines)
    }

    /// When each certificate of a bundle leaves it: at its notAfter (`pki::expired`).
    async fn expiries(&self, ns_name: &str) -> Result<Vec<OffsetDateTime>, ClusterError> {
        let (ns, name) = split(ns_name);
        Ok(parse_certs(&self.read_bundle(ns, name).await?)?
            .into_iter()
            .map(|c| c.not_after)
            .collect())
    }

    /// A signer certificate made at `at`: the installer's own (`by_installer`, for a signer the
    /// catalogue gives one), or library-go's.
    fn issue_signer(
        &self,
        spec: &SignerSpec,
        at: OffsetDateTime,
        by_installer: bool,
    ) -> Result<IssuedCert, ClusterError> {
        let signer = match (&spec.installer, spec.installer_validity()) {
            (Some(installer), Some(validity)) if by_installer => {
                Signer::issue_named(&installer.common_name, at, validity, self.next_serial())?
            }
            _ => Signer::issue(
                &spec.namespace,
                &spec.name,
                at,
                spec.policy(self.profile).validity,
                self.next_serial(),
            )?,
        };
        Ok(signer.cert)
    }

    /// A target certificate from `signer` at `at`, its validity capped by the signer's.
    fn make_target(
        &self,
        target: &TargetSpec,
        signer: &IssuedCert,
        at: OffsetDateTime,
    ) -> Result<IssuedCert, ClusterError> {
        let validity = target_validity(&target.policy(self.profile), signer, at);
        let issuer = Signer { cert: signer.clone() };
        let serial = self.next_serial();
        Ok(match target.kind {
            TargetKind::Client => {
                let orgs: Vec<&str> = target.organizations.iter().map(String::as_str).collect();
                issuer.issue_client(&target.common_name, &orgs, at, validity, serial)?
            }
            TargetKind::Signer => {
                issuer
                    .issue_intermediate(&target.common_name, at, validity, serial)?
                    .cert
            }
        })
    }

    /// Rebuild `csr-controller-ca` and `kube-apiserver-client-ca`; true if either changed.
    async fn publish_unions(&self, now: OffsetDateTime) -> Result<bool, ClusterError> {
        let mut changed = false;
        for (target, sources) in [
            (CSR_CONTROLLER_CA, CSR_CONTROLLER_CA_SOURCES),
            (KUBE_APISERVER_CLIENT_CA, CLIENT_CA_SOURCES),
        ] {
            let mut texts = Vec::new();
            for (ns, name) in sources {
                texts.push(self.read_bundle(ns, name).await?);
            }
            let union = combine_bundles(texts.iter().map(String::as_str), now)?;
            if union != self.read_bundle(target.0, target.1).await? {
                self.write_bundle(target.0, target.1, &union).await?;
                changed = true;
            }
        }
        Ok(changed)
    }
}

/// MCO's e2e way to force a rotation (`ForceKubeApiserverCertificateRotation`): a JSON patch
/// nulling `auth.openshift.io/certificate-not-after` on the signer's Secret.
pub async fn force_rotation(
    client: &kube::Client,
    namespace: &str,
    signer: &str,
) -> Result<(), ClusterError> {
    let force: json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/metadata/annotations/auth.openshift.io~1certificate-not-after", "value": null}
    ]))
    .expect("a valid JSON patch");
    Api::<Secret>::namespaced(client.clone(), namespace)
        .patch(signer, &PatchParams::default(), &Patch::Json::<()>(force))
        .await
        .map_err(|e| ClusterError::kube(format!("secret {namespace}/{signer}"), e))?;
    Ok(())
}

fn signer_of<'a>(catalogue: &'a Catalogue, target: &TargetSpec) -> &'a SignerSpec {
    catalogue
        .signer(&target.signer)
        .expect("the catalogue checks every target's signer")
}
