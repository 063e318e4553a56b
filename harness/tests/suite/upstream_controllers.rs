//! Each release's upstream machine-config-controller over the cluster the harness installs: the
//! yardstick for the reference's template, render and certificate-status rules.
//!
//! The reference cluster side settles first (signers, operator, machine-config controller), so
//! the ControllerConfig holds the CA bundles the operator writes and the reference has rendered
//! `00-worker` and written `status.controllerCertificates`. Then upstream's controller starts on
//! the same cluster, unmodified, with its own tree's `templates/`, the harness playing the
//! operator of its build (the ControllerConfig's `generated-by-version` is the controller's own
//! version, as release-4.16 render_controller.go:590-598 demands). The test judges:
//! - upstream renders a config for every pool;
//! - every file of the reference's `00-worker` (fixtures/templates.yaml) is in upstream's
//!   rendered worker config with the same mode and contents, and every certificate file
//!   (`*.crt`, `*.pem`) upstream renders is in the reference's;
//! - upstream's `status.controllerCertificates` (4.14+) lists what the reference's did;
//! - a forced kube-apiserver-to-kubelet-signer rotation renders a new worker config whose
//!   kubelet-ca.crt is the new bundle on 4.12, and on 4.14/4.16 leaves `00-worker` and the
//!   rendered configs as they were once the template controller has finished the new
//!   ControllerConfig generation.
//!
//! Opt-in, as the upstream daemons are: `MCO_UPSTREAM_MCC_4_12`, `MCO_UPSTREAM_MCC_4_14` and
//! `MCO_UPSTREAM_MCC_4_16` name controller binaries (`go build ./cmd/machine-config-controller`
//! in a release branch's tree), `MCO_UPSTREAM_TEMPLATES_4_12` … that tree's `templates/`
//! directory. Without them each test says `SKIP (opt-in)` and passes, in CI too, where nobody can
//! fetch the upstream source.
//!
//! The tests are here, with the opt-in variables and the fixture of known differences;
//! `yardstick` judges upstream's render against the reference's, `whole_suite` runs every
//! feature with upstream's controller (alone, or with upstream's daemon as every node's agent),
//! `bootstrap` checks what the bootstrap render is given (on every run) and what a release's
//! bootstrap makes of an install's KubeletConfig (opt-in).

mod bootstrap;
mod whole_suite;
mod yardstick;

use harness::Profile;
use std::path::{Path, PathBuf};
use whole_suite::{judge_together, judge_whole_suite};
use yardstick::judge;

/// The binary and templates a release's variables name, or why the test skips.
fn opt_in(release: &str) -> Option<(PathBuf, PathBuf)> {
    let var = format!("MCO_UPSTREAM_MCC_{}", release.replace('.', "_"));
    let templates_var = format!("MCO_UPSTREAM_TEMPLATES_{}", release.replace('.', "_"));
    match (std::env::var(&var), std::env::var(&templates_var)) {
        (Ok(binary), Ok(templates)) => Some((binary.into(), templates.into())),
        _ => {
            eprintln!(
                "SKIP (opt-in): {var} and {templates_var} name a machine-config-controller built from \
                 release-{release} and that tree's templates/ directory (docs: the upstream yardstick)"
            );
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_12() {
    judge("4.12", Profile::Ocp412).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_14() {
    judge("4.14", Profile::Ocp414).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_16() {
    judge("4.16", Profile::Ocp416).await;
}

/// `fixtures/upstream-controllers.yaml`: per controller, the scenarios of its profile it does
/// not pass under the whole suite, and why.
#[derive(Debug, serde::Deserialize)]
struct Fixture {
    controllers: Vec<Controller>,
}

#[derive(Debug, serde::Deserialize)]
struct Controller {
    /// The branch it is built from (`release-4.16`).
    name: String,
    /// The commit it was measured at.
    commit: String,
    /// The release of its variables (`4.16`).
    release: String,
    profile: String,
    #[serde(default)]
    differences: Vec<Difference>,
}

#[derive(Debug, serde::Deserialize)]
struct Difference {
    /// `file.feature: scenario name`
    scenario: String,
    reason: String,
}

fn fixture() -> Fixture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/upstream-controllers.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture reads, and names each difference once with a reason.
#[test]
fn the_upstream_controllers_fixture_reads() {
    for c in fixture().controllers {
        c.profile.parse::<Profile>().unwrap();
        assert!(!c.commit.is_empty() && c.name.ends_with(&c.release), "{}", c.name);
        let mut seen = std::collections::BTreeSet::new();
        for d in &c.differences {
            assert!(seen.insert(&d.scenario), "{}: {} twice", c.name, d.scenario);
            assert!(
                !d.reason.trim().is_empty(),
                "{}: {} has no reason",
                c.name,
                d.scenario
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_16s_controller_runs_the_4_16_profile() {
    judge_whole_suite("4.16").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_12s_controller_runs_the_4_12_profile() {
    judge_whole_suite("4.12").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_14s_controller_runs_the_4_14_profile() {
    judge_whole_suite("4.14").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_12s_controller_and_daemon_run_the_4_12_profile_together() {
    judge_together("4.12").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_14s_controller_and_daemon_run_the_4_14_profile_together() {
    judge_together("4.14").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_16s_controller_and_daemon_run_the_4_16_profile_together() {
    judge_together("4.16").await;
}
