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

/// A signer (a CA the cluster rotates).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignerSpec {
    pub name: String,
    pub namespace: String,
    /// `namespace/name` of the ConfigMap whose `ca-bundle.crt` carries this signer.
    pub bundle: String,
    /// Issued once by the installer and never rotated: it leaves bundles when it expires.
    #[serde(default)]
    pub installer: bool,
    /// The validity of the installer's first certificate of an operator-rotated signer, when it
    /// differs from the operator's (`365d` for kube-control-plane-signer).
    #[serde(default)]
    pub installer_validity: Option<String>,
    #[serde(rename = "ocp-4.12")]
    pub ocp_4_12: PolicySpec,
    #[serde(rename = "ocp-4.16")]
    pub ocp_4_16: PolicySpec,
    /// Where the figures come from upstream.
    pub source: String,
}

/// A certificate a signer issues (the kube-apiserver's kubelet client certificate).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    pub name: String,
    pub namespace: String,
    pub signer: String,
    pub common_name: String,
    #[serde(default)]
    pub organizations: Vec<String>,
    #[serde(rename = "ocp-4.12")]
    pub ocp_4_12: PolicySpec,
    #[serde(rename = "ocp-4.16")]
    pub ocp_4_16: PolicySpec,
    pub source: String,
}

fn for_profile(profile: Profile, a: &PolicySpec, b: &PolicySpec) -> RotationPolicy {
    match profile {
        Profile::Ocp412 => a,
        Profile::Ocp416 => b,
    }
    .policy()
    .expect("durations are checked when the catalogue loads")
}

impl SignerSpec {
    pub fn policy(&self, profile: Profile) -> RotationPolicy {
        for_profile(profile, &self.ocp_4_12, &self.ocp_4_16)
    }
}

impl TargetSpec {
    pub fn policy(&self, profile: Profile) -> RotationPolicy {
        for_profile(profile, &self.ocp_4_12, &self.ocp_4_16)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalogue {
    pub signers: Vec<SignerSpec>,
    #[serde(default)]
    pub targets: Vec<TargetSpec>,
}

/// How old each signer is when a scenario starts (signers not named are new).
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
            for (profile, spec) in [("ocp-4.12", &s.ocp_4_12), ("ocp-4.16", &s.ocp_4_16)] {
                spec.policy()
                    .map_err(|e| invalid(file, format!("signer {}: {profile}: {e}", s.name)))?;
            }
            if !s.bundle.contains('/') {
                return Err(invalid(
                    file,
                    format!("signer {}: bundle {:?} must be namespace/name", s.name, s.bundle),
                ));
            }
        }
        for t in &catalogue.targets {
            for (profile, spec) in [("ocp-4.12", &t.ocp_4_12), ("ocp-4.16", &t.ocp_4_16)] {
                spec.policy()
                    .map_err(|e| invalid(file, format!("target {}: {profile}: {e}", t.name)))?;
            }
            if catalogue.signer(&t.signer).is_none() {
                return Err(invalid(
                    file,
                    format!("target {}: no signer named {:?}", t.name, t.signer),
                ));
            }
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
                if catalogue.signer(&signer).is_none() {
                    return Err(invalid(
                        file,
                        format!("state {name}: no signer named {signer:?} in the catalogue"),
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

    /// How old `signer` is at the start (zero when not named).
    pub fn age_of(&self, signer: &str) -> Duration {
        self.ages.get(signer).copied().unwrap_or(Duration::ZERO)
    }

    /// How old a signer of the catalogue is at the start: as named, else as old as the cluster
    /// for the installer's signers (made at install, never rotated) and new for the others.
    pub fn age_of_signer(&self, spec: &SignerSpec) -> Duration {
        match self.ages.get(&spec.name) {
            Some(age) => *age,
            None if spec.installer => self.cluster_age(),
            None => Duration::ZERO,
        }
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
        let text = "signers:\n- {name: s, namespace: n, bundle: n/b, source: x, ocp-4.12: {validity: 10 fortnights}, ocp-4.16: {validity: 1d}}\n";
        let e = Catalogue::parse(file, text).unwrap_err();
        assert!(
            e.to_string()
                .contains("signer s: ocp-4.12: invalid duration \"10 fortnights\""),
            "{e}"
        );
        let cat = Catalogue::parse(file, &text.replace("10 fortnights", "10d")).unwrap();
        let e = StartingState::parse_all(Path::new("states.yaml"), "states:\n  old: {nope: 3d}\n", &cat)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "states.yaml: state old: no signer named \"nope\" in the catalogue"
        );
    }
}
