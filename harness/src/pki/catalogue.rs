//! The signer catalogue and the starting states, as typed data loaded from `fixtures/`.
//!
//! `fixtures/signers.yaml` lists every signer the simulated cluster rotates and the target
//! certificates they issue, with validity and refresh per profile and the upstream source of
//! each figure. `fixtures/starting-states.yaml` names how old each signer is when a scenario
//! starts. Unknown fields are refused; every error names the file (and line, where YAML knows).

use super::duration::{DurationError, parse_duration};
use super::signer::RotationPolicy;
use crate::profile::Profile;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error("{file}: {source}")]
    Read { file: PathBuf, source: std::io::Error },
    #[error("{file}: {message}")]
    Invalid { file: PathBuf, message: String },
}

/// Validity and refresh, as written in the catalogue (`365d`, `292d`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    pub validity: String,
    #[serde(default)]
    pub refresh: Option<String>,
    #[serde(default)]
    pub refresh_only_when_expired: bool,
}

impl PolicySpec {
    pub fn policy(&self) -> Result<RotationPolicy, DurationError> {
        Ok(RotationPolicy {
            validity: parse_duration(&self.validity)?,
            refresh: self.refresh.as_deref().map(parse_duration).transpose()?,
            refresh_only_when_expired: self.refresh_only_when_expired,
        })
    }
}

/// The installer's own certificate of a signer (openshift-install `pkg/asset/tls`): made at
/// install, valid from that instant (not backdated), under the installer's name and validity.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallerCert {
    pub common_name: String,
    pub validity: String,
}

/// A signer (a CA the cluster rotates).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignerSpec {
    pub name: String,
    pub namespace: String,
    /// `namespace/name` of the ConfigMap whose `ca-bundle.crt` carries this signer.
    pub bundle: String,
    /// The installer's certificate, when the installer made the first one: an operator's
    /// bootkube manifest loads it into the signer's Secret, and the operator rotates it from
    /// there like any other.
    #[serde(default)]
    pub installer: Option<InstallerCert>,
    /// Made by the installer and rotated by nobody: it leaves bundles when it expires. Such a
    /// signer has no per-profile policy.
    #[serde(default)]
    pub installer_only: bool,
    #[serde(rename = "ocp-4.12", default)]
    pub ocp_4_12: Option<PolicySpec>,
    #[serde(rename = "ocp-4.14", default)]
    pub ocp_4_14: Option<PolicySpec>,
    #[serde(rename = "ocp-4.16", default)]
    pub ocp_4_16: Option<PolicySpec>,
    /// Where the figures come from upstream.
    pub source: String,
}

/// What a target certificate is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// A client certificate named `common_name` (library-go `ClientRotation`).
    #[default]
    Client,
    /// A CA of its own, signed by the signer and named `<common_name>_@<unix>` (library-go
    /// `SignerRotation`, as KCM-O's `csr-signer`).
    Signer,
}

/// A certificate a signer issues (the kube-apiserver's kubelet client certificate, KCM-O's
/// `csr-signer`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    pub name: String,
    pub namespace: String,
    pub signer: String,
    #[serde(default)]
    pub kind: TargetKind,
    pub common_name: String,
    #[serde(default)]
    pub organizations: Vec<String>,
    /// `namespace/name` of the ConfigMap that collects a signer-kind target's certificates
    /// (KCM-O's `csr-signer-ca`).
    #[serde(default)]
    pub bundle: Option<String>,
    #[serde(rename = "ocp-4.12")]
    pub ocp_4_12: PolicySpec,
    #[serde(rename = "ocp-4.14")]
    pub ocp_4_14: PolicySpec,
    #[serde(rename = "ocp-4.16")]
    pub ocp_4_16: PolicySpec,
    pub source: String,
}

fn for_profile(profile: Profile, a: &PolicySpec, b: &PolicySpec, c: &PolicySpec) -> RotationPolicy {
    profile
        .column(a, b, c)
        .policy()
        .expect("durations are checked when the catalogue loads")
}

impl SignerSpec {
    /// How the signer is rotated on `profile`; an installer-only signer only expires.
    pub fn policy(&self, profile: Profile) -> RotationPolicy {
        match (&self.ocp_4_12, &self.ocp_4_14, &self.ocp_4_16) {
            (Some(a), Some(b), Some(c)) => for_profile(profile, a, b, c),
            _ => RotationPolicy {
                validity: self
                    .installer_validity()
                    .expect("the catalogue checks installer-only signers have an installer certificate"),
                refresh: None,
                refresh_only_when_expired: true,
            },
        }
    }

    /// The validity of the installer's certificate, if the installer made one.
    pub fn installer_validity(&self) -> Option<Duration> {
        self.installer
            .as_ref()
            .map(|i| parse_duration(&i.validity).expect("durations are checked when the catalogue loads"))
    }

    fn check(&self) -> Result<(), String> {
        if let Some(i) = &self.installer {
            parse_duration(&i.validity).map_err(|e| format!("installer: {e}"))?;
        }
        match (
            self.installer_only,
            &self.ocp_4_12,
            &self.ocp_4_14,
            &self.ocp_4_16,
        ) {
            (true, None, None, None) if self.installer.is_some() => {}
            (true, ..) => {
                return Err("installer_only needs an installer certificate and no per-profile policy".into());
            }
            (false, Some(a), Some(b), Some(c)) => {
                for (profile, spec) in [("ocp-4.12", a), ("ocp-4.14", b), ("ocp-4.16", c)] {
                    spec.policy().map_err(|e| format!("{profile}: {e}"))?;
                }
            }
            (false, ..) => return Err("needs a policy for each of ocp-4.12, ocp-4.14 and ocp-4.16".into()),
        }
        if !self.bundle.contains('/') {
            return Err(format!("bundle {:?} must be namespace/name", self.bundle));
        }
        Ok(())
    }
}

impl TargetSpec {
    pub fn policy(&self, profile: Profile) -> RotationPolicy {
        for_profile(profile, &self.ocp_4_12, &self.ocp_4_14, &self.ocp_4_16)
    }

    fn check(&self, catalogue: &Catalogue) -> Result<(), String> {
        for (profile, spec) in [
            ("ocp-4.12", &self.ocp_4_12),
            ("ocp-4.14", &self.ocp_4_14),
            ("ocp-4.16", &self.ocp_4_16),
        ] {
            spec.policy().map_err(|e| format!("{profile}: {e}"))?;
        }
        if catalogue.signer(&self.signer).is_none() {
            return Err(format!("no signer named {:?}", self.signer));
        }
        match (&self.bundle, self.kind) {
            (Some(b), TargetKind::Signer) if b.contains('/') => Ok(()),
            (Some(b), TargetKind::Signer) => Err(format!("bundle {b:?} must be namespace/name")),
            (Some(_), TargetKind::Client) => Err("only a signer-kind target has a bundle".into()),
            (None, _) => Ok(()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalogue {
    pub signers: Vec<SignerSpec>,
    #[serde(default)]
    pub targets: Vec<TargetSpec>,
}

/// How old each signer and target is when a scenario starts (those not named are new, but for
/// installer-only signers, which are as old as the cluster).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StartingState {
    pub name: String,
    pub ages: BTreeMap<String, Duration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartingStatesFile {
    states: BTreeMap<String, BTreeMap<String, String>>,
}

fn read(file: &Path) -> Result<String, CatalogueError> {
    std::fs::read_to_string(file).map_err(|source| CatalogueError::Read {
        file: file.into(),
        source,
    })
}

fn invalid(file: &Path, message: impl std::fmt::Display) -> CatalogueError {
    CatalogueError::Invalid {
        file: file.into(),
        message: message.to_string(),
    }
}

impl Catalogue {
    pub fn load(file: &Path) -> Result<Self, CatalogueError> {
        Self::parse(file, &read(file)?)
    }

    pub fn parse(file: &Path, text: &str) -> Result<Self, CatalogueError> {
        let catalogue: Catalogue = serde_yaml::from_str(text).map_err(|e| invalid(file, e))?;
        for s in &catalogue.signers {
            s.check()
                .map_err(|e| invalid(file, format!("signer {}: {e}", s.name)))?;
        }
        for t in &catalogue.targets {
            t.check(&catalogue)
                .map_err(|e| invalid(file, format!("target {}: {e}", t.name)))?;
        }
        Ok(catalogue)
    }

    pub fn signer(&self, name: &str) -> Option<&SignerSpec> {
        self.signers.iter().find(|s| s.name == name)
    }

    pub fn target(&self, name: &str) -> Option<&TargetSpec> {
        self.targets.iter().find(|t| t.name == name)
    }
}

impl StartingState {
    /// Every state in a starting-states file, checked against the catalogue.
    pub fn load_all(file: &Path, catalogue: &Catalogue) -> Result<Vec<StartingState>, CatalogueError> {
        Self::parse_all(file, &read(file)?, catalogue)
    }

    pub fn parse_all(
        file: &Path,
        text: &str,
        catalogue: &Catalogue,
    ) -> Result<Vec<StartingState>, CatalogueError> {
        let parsed: StartingStatesFile = serde_yaml::from_str(text).map_err(|e| invalid(file, e))?;
        let mut out = Vec::new();
        for (name, ages) in parsed.states {
            let mut state = StartingState {
                name: name.clone(),
                ages: BTreeMap::new(),
            };
            for (signer, age) in ages {
                if catalogue.signer(&signer).is_none() && catalogue.target(&signer).is_none() {
                    return Err(invalid(
                        file,
                        format!("state {name}: no signer or target named {signer:?} in the catalogue"),
                    ));
                }
                let age = parse_duration(&age)
                    .map_err(|e| invalid(file, format!("state {name}: {signer}: {e}")))?;
                state.ages.insert(signer, age);
            }
            out.push(state);
        }
        Ok(out)
    }

    /// How long ago the cluster was installed: its oldest certificate's age.
    pub fn cluster_age(&self) -> Duration {
        self.ages.values().copied().max().unwrap_or(Duration::ZERO)
    }

    /// How old a signer or target is at the start (zero when not named).
    pub fn age_of(&self, signer: &str) -> Duration {
        self.ages.get(signer).copied().unwrap_or(Duration::ZERO)
    }

    /// How old a signer of the catalogue is at the start: as named, else as old as the cluster
    /// for installer-only signers (made at install, never rotated) and new for the others.
    pub fn age_of_signer(&self, spec: &SignerSpec) -> Duration {
        match self.ages.get(&spec.name) {
            Some(age) => *age,
            None if spec.installer_only => self.cluster_age(),
            None => Duration::ZERO,
        }
    }

    /// Whether the signer's current certificate at the start is the installer's own: one the
    /// installer made (at install, when the cluster's age began) and no operator has replaced.
    pub fn signer_is_installers(&self, spec: &SignerSpec) -> bool {
        spec.installer.is_some() && self.age_of_signer(spec) == self.cluster_age()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_file(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .join("fixtures")
            .join(name)
    }

    #[test]
    fn the_shipped_catalogue_and_states_load() {
        let cat = Catalogue::load(&repo_file("signers.yaml")).unwrap();
        let kubelet = cat.signer("kube-apiserver-to-kubelet-signer").unwrap();
        assert_eq!(kubelet.policy(Profile::Ocp412).validity, Duration::days(365));
        assert_eq!(kubelet.policy(Profile::Ocp416).refresh, Some(Duration::days(292)));
        assert!(cat.target("kubelet-client").is_some());
        let csr_signer_signer = cat.signer("csr-signer-signer").unwrap();
        assert_eq!(
            csr_signer_signer.installer_validity(),
            Some(Duration::hours(24)),
            "the installer's kubelet-signer is the first csr-signer-signer"
        );
        let csr_signer = cat.target("csr-signer").unwrap();
        assert_eq!(
            (csr_signer.kind, csr_signer.signer.as_str()),
            (TargetKind::Signer, "csr-signer-signer")
        );
        let states = StartingState::load_all(&repo_file("starting-states.yaml"), &cat).unwrap();
        assert!(
            states
                .iter()
                .any(|s| s.name == "fresh-install" && s.ages.is_empty())
        );
    }

    #[test]
    fn errors_name_the_file_and_the_problem() {
        let file = Path::new("signers.yaml");
        let e = Catalogue::parse(file, "signers:\n- name: x\n  colour: red\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("signers.yaml: signers[0]: unknown field `colour`"),
            "{e}"
        );
        let text = "signers:\n- {name: s, namespace: n, bundle: n/b, source: x, ocp-4.12: {validity: 10 fortnights}, ocp-4.14: {validity: 1d}, ocp-4.16: {validity: 1d}}\n";
        let e = Catalogue::parse(file, text).unwrap_err();
        assert!(
            e.to_string()
                .contains("signer s: ocp-4.12: invalid duration \"10 fortnights\""),
            "{e}"
        );
        let e = Catalogue::parse(
            file,
            "signers:\n- {name: s, namespace: n, bundle: n/b, source: x, installer_only: true}\n",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("signer s: installer_only needs an installer certificate"),
            "{e}"
        );
        let cat = Catalogue::parse(file, &text.replace("10 fortnights", "10d")).unwrap();
        let e = StartingState::parse_all(Path::new("states.yaml"), "states:\n  old: {nope: 3d}\n", &cat)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "states.yaml: state old: no signer or target named \"nope\" in the catalogue"
        );
    }
}
