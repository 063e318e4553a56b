//! Every feature of a profile with upstream's machine-config-controller as the cluster's
//! (and its server where one is named): on embedded nodes with the reference daemon, or with
//! upstream's daemon as every container node's agent; the outcomes judged against the
//! fixtures of known differences. Reports and evidence are kept under `target/upstream-runs/`.

use super::{Controller, Difference, fixture, opt_in};
use harness::Profile;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

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

pub(super) async fn judge_whole_suite(release: &str) {
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

/// Every feature of the profile with the release's whole machine-config side from upstream: its
/// controller (and its server, where `MCO_UPSTREAM_MCS_4_xx` names one) as the cluster's, its
/// daemon as every container node's agent. Opt-in on the controller's variables and the
/// daemon's (`MCO_UPSTREAM_MCD_4_xx`); needs Docker. Every scenario passes unless the
/// controllers' fixture or the daemons' fixture lists it.
pub(super) async fn judge_together(release: &str) {
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
