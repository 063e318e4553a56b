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

use crate::common::Controllers;
use harness::Profile;
use harness::cluster::operator::controller_configs;
use harness::cluster::upstream::{RunningController, UpstreamController};
use harness::mco::api::{machine_config_pools, machine_configs};
use harness::mco::machine_config::MachineConfigSpec;
use harness::profile::KubeletCaSource;
use harness::steps::oracle::ignition_file;
use kube::api::ListParams;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long upstream's controller may take to take its lease, start its informers and render
/// (its render controller waits 5 s for the template controller, node_controller.go:1012).
const DEADLINE: Duration = Duration::from_secs(180);

const GENERATED_BY_CONTROLLER: &str = "machineconfiguration.openshift.io/generated-by-controller-version";

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

/// The MachineConfig's files as (mode, contents) by path, decoded by the oracle's reader.
fn files(mc: &Value) -> BTreeMap<String, (u32, Vec<u8>)> {
    let spec = MachineConfigSpec::of(mc).unwrap();
    spec.files()
        .iter()
        .map(|f| {
            let (path, contents, mode) = ignition_file(f).unwrap();
            (path, (mode, contents))
        })
        .collect()
}

/// The rendered config the pool targets, once upstream's render controller has written it (its
/// generated-by-controller-version is not the reference's).
async fn upstream_rendered(
    c: &Controllers,
    pool: &str,
    not: &[String],
    up: &RunningController,
) -> (String, Value) {
    let probe = || async {
        let p = machine_config_pools(&c.client)
            .get(pool)
            .await
            .map_err(|e| e.to_string())?;
        let name = p.data["spec"]["configuration"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if name.is_empty() || not.contains(&name) {
            return Err(format!("pool {pool} targets {name:?}"));
        }
        let mc = machine_configs(&c.client)
            .get(&name)
            .await
            .map_err(|e| e.to_string())?;
        let by = mc
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(GENERATED_BY_CONTROLLER))
            .cloned();
        if by.as_deref() == Some(harness::cluster::render::CONTROLLER_VERSION) {
            return Err(format!("pool {pool} targets the reference's {name}"));
        }
        Ok((name, serde_json::to_value(&mc).unwrap()))
    };
    harness::wait::eventually(DEADLINE, probe)
        .await
        .unwrap_or_else(|e| panic!("{e}\nupstream's log:\n{}", up.tail(30)))
}

async fn rendered_names(c: &Controllers, pool: &str) -> Vec<String> {
    let prefix = format!("rendered-{pool}-");
    let mut names: Vec<String> = machine_configs(&c.client)
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| m.metadata.name)
        .filter(|n| n.starts_with(&prefix))
        .collect();
    names.sort();
    names
}

/// Signers and operator until quiet: the cluster side that is not the machine-config controller.
async fn settle_operators(c: &Controllers) {
    for _ in 0..20 {
        let mut changed = !c.signers.reconcile().await.unwrap().is_empty();
        changed |= c.operator.reconcile().await.unwrap();
        if !changed {
            return;
        }
    }
    panic!("the signers and operator did not settle in 20 passes");
}

async fn judge(release: &str, profile: Profile) {
    let Some((binary, templates)) = opt_in(release) else {
        return;
    };
    let c = Controllers::start(profile, "fresh-install", true).await;
    c.settle().await;
    let reference_00 =
        serde_json::to_value(machine_configs(&c.client).get("00-worker").await.unwrap()).unwrap();
    let reference_rendered = rendered_names(&c, "worker").await;
    let cc = controller_configs(&c.client)
        .get("machine-config-controller")
        .await
        .unwrap();
    let reference_certificates = cc.data["status"]["controllerCertificates"].clone();

    // The harness as the operator of the controller's build, as `--controller-binary` runs it.
    let dir = tempfile::tempdir().unwrap();
    let controller = UpstreamController {
        binary,
        args: vec![format!("--templates={}", templates.display())],
    };
    let up = controller
        .start(
            &c.client,
            &c.server.kubeconfig(c.server.admin_identity()),
            profile.payload_version(),
            dir.path(),
        )
        .await
        .unwrap();
    for pool in ["master", "worker"] {
        upstream_rendered(&c, pool, &[], &up).await;
    }
    let (first, rendered) = upstream_rendered(&c, "worker", &reference_rendered, &up).await;

    // Every file the reference templates is upstream's, mode and contents alike.
    let upstream_files = files(&rendered);
    let mut differ = Vec::new();
    for (path, (mode, contents)) in files(&reference_00) {
        match upstream_files.get(&path) {
            None => differ.push(format!("{path}: upstream renders no such file")),
            Some((m, data)) if (*m, data) != (mode, &contents) => differ.push(format!(
                "{path}: reference {mode:04o} {:?}, upstream {m:04o} {:?}",
                String::from_utf8_lossy(&contents),
                String::from_utf8_lossy(data)
            )),
            Some(_) => {}
        }
    }
    // And every certificate file upstream's templates render, the reference's do.
    let reference_files = files(&reference_00);
    for path in upstream_files.keys() {
        if (path.ends_with(".crt") || path.ends_with(".pem")) && !reference_files.contains_key(path) {
            differ.push(format!("{path}: upstream renders it, the reference does not"));
        }
    }
    assert!(
        differ.is_empty(),
        "{release}: the reference's templates differ from upstream's:\n{}",
        differ.join("\n")
    );

    // The template controller's certificate status (4.14+), as the reference wrote it.
    let status = || async {
        let cc = controller_configs(&c.client)
            .get("machine-config-controller")
            .await
            .map_err(|e| e.to_string())?;
        let done = cc.data["status"]["observedGeneration"] == json!(cc.metadata.generation)
            && cc.data["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "TemplateControllerCompleted" && c["status"] == "True")
            });
        if done {
            Ok(cc)
        } else {
            Err(format!("status {}", cc.data["status"]))
        }
    };
    let cc = harness::wait::eventually(DEADLINE, status)
        .await
        .unwrap_or_else(|e| panic!("{e}\nupstream's log:\n{}", up.tail(30)));
    assert_eq!(
        cc.data["status"]["controllerCertificates"], reference_certificates,
        "{release}: upstream's status.controllerCertificates (left) against the reference's (right)"
    );

    // A forced rotation of the kubelet signer, through the operator into ControllerConfig.
    let zero_worker_rv = machine_configs(&c.client)
        .get("00-worker")
        .await
        .unwrap()
        .metadata
        .resource_version;
    c.force_kubelet_signer_rotation().await;
    settle_operators(&c).await;
    let cc = controller_configs(&c.client)
        .get("machine-config-controller")
        .await
        .unwrap();
    let new_bundle = harness::mco::controller_config::ControllerConfigSpec::of(&cc.data)
        .unwrap()
        .data("kubeAPIServerServingCAData")
        .unwrap();
    if matches!(profile.traits().kubelet_ca, KubeletCaSource::RenderedConfig) {
        let mut seen = vec![first.clone()];
        seen.extend(reference_rendered.iter().cloned());
        let (second, rendered) = upstream_rendered(&c, "worker", &seen, &up).await;
        let kubelet_ca = files(&rendered)
            .remove("/etc/kubernetes/kubelet-ca.crt")
            .map(|(_, data)| data);
        assert_eq!(
            kubelet_ca.as_deref(),
            Some(new_bundle.as_slice()),
            "{release}: {second}'s kubelet-ca.crt is not the ControllerConfig's new bundle"
        );
    } else {
        harness::wait::eventually(DEADLINE, status)
            .await
            .unwrap_or_else(|e| panic!("{e}\nupstream's log:\n{}", up.tail(30)));
        let now = machine_configs(&c.client)
            .get("00-worker")
            .await
            .unwrap()
            .metadata
            .resource_version;
        assert_eq!(now, zero_worker_rv, "{release}: the rotation rewrote 00-worker");
        let mut expected = reference_rendered.clone();
        expected.push(first.clone());
        expected.sort();
        assert_eq!(
            rendered_names(&c, "worker").await,
            expected,
            "{release}: a rendered config came of the rotation"
        );
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

/// Every feature of the profile with `controller` as the cluster's machine-config controller
/// (and upstream's machine-config-server of the same release, where `MCO_UPSTREAM_MCS_4_xx`
/// names one), on embedded nodes with the reference daemon: what passed, per `file: scenario`.
/// Where an opt-in run keeps its reports and the evidence of its failed scenarios (journals,
/// cluster and controller logs under `failed/`): under `target/`, emptied when the run starts,
/// kept after it so that a failure can be read.
fn kept_report_dir(run: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/upstream-runs")
        .join(run);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn whole_suite(
    controller: &Controller,
    binary: PathBuf,
    templates: PathBuf,
) -> BTreeMap<String, (bool, String)> {
    let server = crate::upstream_servers::opt_in(&controller.release);
    use harness::runner::{RunConfig, run};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = kept_report_dir(&format!("controller-{}", controller.release));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let profile: Profile = controller.profile.parse().unwrap();
    let mut config = RunConfig::new(vec![root.join("features")], dir.clone());
    config.profiles = vec![profile];
    config.quiet = true;
    // Most of a scenario's time is the controller's own schedule (its render controller waits
    // 5 s), in wall time: more run at once than the CPUs alone would allow.
    config.concurrency = 6;
    config.agent_timeout = Duration::from_secs(90);
    config.controller = Some(harness::cluster::upstream::UpstreamController {
        binary,
        args: vec![format!("--templates={}", templates.display())],
    });
    config.server = server;
    run(&config).await.expect("the run itself works");
    crate::common::scenario_outcomes(&dir.join(format!("{profile}.cucumber.json")))
        .into_iter()
        .map(|(scenario, (passed, _, why))| (scenario, (passed, why)))
        .collect()
}

async fn judge_whole_suite(release: &str) {
    let fixture = fixture();
    let Some((binary, templates)) = opt_in(release) else {
        return;
    };
    let Some(controller) = fixture.controllers.iter().find(|c| c.release == release) else {
        eprintln!(
            "SKIP: release-{release}'s controller has not been measured under the whole suite: \
             run it with `mco-conformance run --controller-binary` and record its outcomes in \
             fixtures/upstream-controllers.yaml"
        );
        return;
    };
    let seen = whole_suite(controller, binary, templates).await;
    assert!(!seen.is_empty(), "the run judged no scenario");
    let expected: BTreeMap<&str, &Difference> = controller
        .differences
        .iter()
        .map(|d| (d.scenario.as_str(), d))
        .collect();
    let mut wrong = Vec::new();
    for (scenario, (passed, why)) in &seen {
        match (expected.get(scenario.as_str()), passed) {
            (None, false) => wrong.push(format!("{scenario}: failed, expected to pass: {why}")),
            (Some(d), true) => wrong.push(format!(
                "{scenario}: passed, the fixture says it fails ({})",
                d.reason
            )),
            _ => {}
        }
    }
    for scenario in expected.keys() {
        if !seen.contains_key(*scenario) {
            wrong.push(format!("{scenario}: listed in the fixture, not run"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} against fixtures/upstream-controllers.yaml (reports and evidence in target/upstream-runs/controller-{}):\n{}",
        controller.name,
        controller.release,
        wrong.join("\n")
    );
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

/// Every feature of the profile with the release's whole machine-config side from upstream: its
/// controller (and its server, where `MCO_UPSTREAM_MCS_4_xx` names one) as the cluster's, its
/// daemon as every container node's agent. Opt-in on the controller's variables and the
/// daemon's (`MCO_UPSTREAM_MCD_4_xx`); needs Docker. Every scenario passes unless the
/// controllers' fixture or the daemons' fixture lists it.
async fn judge_together(release: &str) {
    let Some((binary, templates)) = opt_in(release) else {
        return;
    };
    let controllers = fixture();
    let Some(controller) = controllers.controllers.iter().find(|c| c.release == release) else {
        eprintln!("SKIP: release-{release}'s controller is not in fixtures/upstream-controllers.yaml");
        return;
    };
    let daemons = crate::upstream_daemons::fixture();
    let daemon = daemons
        .daemons
        .iter()
        .find(|d| d.name == controller.name)
        .expect("the daemons' fixture lists the release");
    let Ok(daemon_binary) = std::env::var(&daemon.env) else {
        eprintln!(
            "SKIP (opt-in): {} is not set; it names release-{release}'s machine-config-daemon",
            daemon.env
        );
        return;
    };
    if let Some(why) = harness::node::image::docker_unavailable() {
        fake_apiserver::testing::skip(&format!("{}: no Docker engine ({why})", controller.name));
        return;
    }
    use harness::runner::{Nodes, RunConfig, run};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = kept_report_dir(&format!("together-{release}"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let profile: Profile = controller.profile.parse().unwrap();
    let mut config = RunConfig::new(vec![root.join("features")], dir.clone());
    config.profiles = vec![profile];
    config.quiet = true;
    config.nodes = Nodes::Container;
    config.concurrency = 6;
    config.agent_timeout = Duration::from_secs(180);
    config.nudge_first_sync = true;
    config.controller = Some(harness::cluster::upstream::UpstreamController {
        binary,
        args: vec![format!("--templates={}", templates.display())],
    });
    config.server = crate::upstream_servers::opt_in(release);
    config.agent = harness::scenario::AgentKind::Binary {
        path: PathBuf::from(daemon_binary),
        args: daemon.args.clone(),
        node_tools: PathBuf::from(env!("CARGO_BIN_EXE_mco-node-tools")),
    };
    run(&config).await.expect("the run itself works");
    let seen = crate::common::scenario_outcomes(&dir.join(format!("{profile}.cucumber.json")));
    assert!(!seen.is_empty(), "the run judged no scenario");
    let listed: BTreeMap<&str, &str> = controller
        .differences
        .iter()
        .map(|d| (d.scenario.as_str(), d.reason.as_str()))
        .chain(
            daemon
                .differences
                .iter()
                .map(|d| (d.scenario.as_str(), d.reason.as_str())),
        )
        .collect();
    let wrong: Vec<String> = seen
        .iter()
        .filter(|(scenario, (passed, _, _))| !passed && !listed.contains_key(scenario.as_str()))
        .map(|(scenario, (_, _, why))| format!("{scenario}: failed, expected to pass: {why}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "{}'s controller and daemon together, against fixtures/upstream-controllers.yaml and upstream-daemons.yaml (reports and evidence in target/upstream-runs/together-{release}):\n{}",
        controller.name,
        wrong.join("\n")
    );
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
