//! A cluster's certificates as a starting state says they are: each signer and target of the
//! catalogue at its age, with the earlier generations its bundles would still carry, and the
//! installer's own certificates, from which the installer's client CA bundle is made. Issued
//! here once, at install; `super` rotates them from then on.
//!
//! Who made a certificate decides its shape. The installer's (`InstallerCert`) carry its name
//! and validity and start at the instant they were made; everything after is library-go's,
//! named `<namespace>_<name>@<unix>` and backdated a second (`pki::Signer::issue`).

use super::{SignerRotation, split};
use crate::cluster::ClusterError;
use crate::pki::{
    Clock, IssuedCert, SignerSpec, StartingState, TargetSpec, append_to_ca_bundle, expired, manage_ca_bundle,
};
use std::collections::BTreeMap;
use time::{Duration, OffsetDateTime};

/// The installer's client CA bundle, in its order (installer `pkg/asset/tls`
/// `KubeAPIServerCompleteClientCABundle`), named by the catalogue signer whose installer
/// certificate it holds (`csr-signer-signer`'s is the installer's kubelet-signer). MCO's
/// bootstrap publishes it as `openshift-config/initial-kube-apiserver-server-ca` (release-4.12
/// `manifests/machineconfigserver/kube-apiserver-serving-ca-configmap.yaml`); nothing rotates or
/// prunes it.
pub const INSTALLER_CLIENT_CA_BUNDLE: &[&str] = &[
    "admin-kubeconfig-signer",
    "csr-signer-signer",
    "kube-control-plane-signer",
    "kube-apiserver-to-kubelet-signer",
    "kubelet-bootstrap-kubeconfig-signer",
];

impl SignerRotation {
    /// Issue every signer and target as `state` says, publish their bundles and the unions,
    /// and return the installer's client CA bundle (`INSTALLER_CLIENT_CA_BUNDLE`), made of the
    /// very installer certificates the cluster was seeded with.
    pub async fn seed(&self, state: &StartingState) -> Result<String, ClusterError> {
        let now = self.clock.now();
        let installed = now - state.cluster_age();
        let mut installers: BTreeMap<&str, IssuedCert> = BTreeMap::new();
        let mut generations: BTreeMap<&str, Vec<IssuedCert>> = BTreeMap::new();
        let mut bundles: BTreeMap<String, String> = BTreeMap::new();
        for spec in &self.catalogue.signers {
            let installer = match &spec.installer {
                Some(_) if spec.installer_only => {
                    Some(self.issue_signer(spec, now - state.age_of_signer(spec), true)?)
                }
                Some(_) => Some(self.issue_signer(spec, installed, true)?),
                None => None,
            };
            let gens = self.signer_generations(spec, state, installer.as_ref())?;
            let bundle = bundles.entry(spec.bundle.clone()).or_default();
            for cert in &gens {
                *bundle = manage_ca_bundle(&cert.pem, bundle, now, self.order())?;
            }
            let current = gens.last().expect("a signer has a current certificate");
            self.write_cert_secret(&spec.namespace, &spec.name, current, "signer")
                .await?;
            if let Some(cert) = installer {
                installers.insert(&spec.name, cert);
            }
            generations.insert(&spec.name, gens);
        }
        for (ns_name, bundle) in &bundles {
            let (ns, name) = split(ns_name);
            self.write_bundle(ns, name, bundle).await?;
        }
        for target in &self.catalogue.targets {
            let issuers = &generations[target.signer.as_str()];
            let gens = self.target_generations(target, state, installed, issuers)?;
            if let Some(ns_name) = &target.bundle {
                let mut bundle = String::new();
                for cert in &gens {
                    bundle = append_to_ca_bundle(&cert.pem, &bundle, now)?;
                }
                let (ns, name) = split(ns_name);
                self.write_bundle(ns, name, &bundle).await?;
            }
            let current = gens.last().expect("a target has a current certificate");
            self.write_cert_secret(&target.namespace, &target.name, current, "target")
                .await?;
        }
        self.publish_unions(now).await?;
        let mut initial = String::new();
        for name in INSTALLER_CLIENT_CA_BUNDLE {
            let cert = installers.get(name).ok_or_else(|| {
                ClusterError::Fixture(format!(
                    "fixtures/signers.yaml: signer {name} has no installer certificate"
                ))
            })?;
            initial.push_str(&cert.pem);
        }
        Ok(initial)
    }

    /// A signer's certificates a cluster of this state still holds, oldest first, the current
    /// one last: the current one at its age (the installer's own when it is as old as the
    /// cluster), then earlier ones one rotation interval apart since the install while they are
    /// valid, and the installer's first one if it still is.
    fn signer_generations(
        &self,
        spec: &SignerSpec,
        state: &StartingState,
        installer: Option<&IssuedCert>,
    ) -> Result<Vec<IssuedCert>, ClusterError> {
        if spec.installer_only || state.signer_is_installers(spec) {
            return Ok(installer.cloned().into_iter().collect());
        }
        let now = self.clock.now();
        let installed = now - state.cluster_age();
        let policy = spec.policy(self.profile);
        let interval = rotation_interval(&policy);
        let issued_at = now - state.age_of_signer(spec);
        let mut newest_first = vec![self.issue_signer(spec, issued_at, false)?];
        let mut earlier = issued_at - interval;
        let after_install = |t: OffsetDateTime| match installer {
            Some(_) => t > installed,
            None => t >= installed,
        };
        while interval.is_positive() && after_install(earlier) && !expired(earlier + policy.validity, now) {
            newest_first.push(self.issue_signer(spec, earlier, false)?);
            earlier -= interval;
        }
        newest_first.extend(installer.filter(|c| !expired(c.not_after, now)).cloned());
        newest_first.reverse();
        Ok(newest_first)
    }

    /// A target's certificates, oldest first: the current one at its age from the current
    /// signer, and, for a target with a bundle, earlier ones one interval apart since the
    /// install, each from the signer generation current then, while they are valid.
    fn target_generations(
        &self,
        target: &TargetSpec,
        state: &StartingState,
        installed: OffsetDateTime,
        issuers: &[IssuedCert],
    ) -> Result<Vec<IssuedCert>, ClusterError> {
        let now = self.clock.now();
        let signer = issuers.last().expect("a signer has a current certificate");
        let issued_at = (now - state.age_of(&target.name)).max(signer.not_before);
        let mut newest_first = vec![self.make_target(target, signer, issued_at)?];
        let interval = rotation_interval(&target.policy(self.profile));
        let mut earlier = issued_at - interval;
        while target.bundle.is_some() && interval.is_positive() && earlier >= installed {
            let issuer = issuers
                .iter()
                .rev()
                .find(|s| s.not_before <= earlier && !expired(s.not_after, earlier));
            let Some(issuer) = issuer else { break };
            let cert = self.make_target(target, issuer, earlier)?;
            if expired(cert.not_after, now) {
                break;
            }
            newest_first.push(cert);
            earlier -= interval;
        }
        newest_first.reverse();
        Ok(newest_first)
    }
}

/// How long one generation lasts before the rules replace it: its refresh, or its 80 % point
/// if sooner, or its whole validity when only expiry replaces it.
fn rotation_interval(policy: &crate::pki::RotationPolicy) -> Duration {
    if policy.refresh_only_when_expired {
        return policy.validity;
    }
    let eighty = policy.validity - policy.validity / 5;
    policy.refresh.map_or(eighty, |r| r.min(eighty))
}
