//! A deliberately wrong agent under the suite: `mco-conformance-faulty-agent` (the reference
//! daemon plus a kubelet restart on every kubelet-ca.crt change) must fail the scenario that
//! covers that behaviour, with a message saying what was expected and what was seen, on both
//! profiles; the reference daemon run the same way passes it. The conformance report names
//! both.

use harness::runner::{Nodes, RunConfig, run};
use harness::scenario::AgentKind;
use serde_yaml::Value;
use std::path::{Path, PathBuf};

const SCENARIO: &str = "A new kubelet CA bundle never restarts the kubelet";

fn binary(name: &str) -> PathBuf {
    match name {
        "mco-conformance-faulty-agent" => PathBuf::from(env!("CARGO_BIN_EXE_mco-conformance-faulty-agent")),
        "mco-reference-daemon" => PathBuf::from(env!("CARGO_BIN_EXE_mco-reference-daemon")),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_mco-node-tools")),
    }
}

/// Run the kubelet-restart feature with an agent binary; the summary and the parsed report.
async fn run_with(agent: &str, nodes: Nodes, dir: &Path) -> (harness::runner::Summary, Value) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut config = RunConfig::new(
        vec![root.join("features/kubelet_restart.feature")],
        dir.join(agent),
    );
    config.nodes = nodes;
    config.agent = AgentKind::Binary {
        path: binary(agent),
        args: Vec::new(),
        node_tools: binary("mco-node-tools"),
    };
    let report = dir.join(format!("{agent}.yaml"));
    config.report = Some(report.clone());
    config.command = format!("mco-conformance run --agent-binary {agent} features/kubelet_restart.feature");
    let summary = run(&config).await.expect("the run itself works");
    let yaml = std::fs::read_to_string(&report).expect("the report was written");
    (summary, serde_yaml::from_str(&yaml).expect("the report is YAML"))
}

/// The report entries for the scenario, per profile.
fn entries<'a>(report: &'a Value, scenario: &str) -> Vec<(&'a str, &'a Value)> {
    let mut out = Vec::new();
    for profile in report["results"].as_sequence().into_iter().flatten() {
        for feature in profile["features"].as_sequence().into_iter().flatten() {
            for s in feature["scenarios"].as_sequence().into_iter().flatten() {
                if s["name"].as_str() == Some(scenario) {
                    out.push((profile["profile"].as_str().unwrap_or(""), s));
                }
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_faulty_agent_fails_the_scenario_that_covers_its_fault_and_the_reference_passes_it() {
    let _turn = crate::take_turn().await;
    faulty_fails_reference_passes(Nodes::Embedded).await;
}

/// The same on container nodes, where each agent binary is copied into the node image as
/// `/usr/bin/<name>` and run by the node's init.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_container_nodes_too() {
    let _turn = crate::take_turn().await;
    if let Some(why) = harness::node::image::docker_unavailable() {
        fake_apiserver::testing::skip(&format!("no Docker engine ({why})"));
        return;
    }
    faulty_fails_reference_passes(Nodes::Container).await;
}

async fn faulty_fails_reference_passes(nodes: Nodes) {
    let dir = tempfile::tempdir().unwrap();

    let (summary, report) = run_with("mco-conformance-faulty-agent", nodes, dir.path()).await;
    assert!(summary.failed > 0, "{summary:?}");
    assert_eq!(report["verdict"].as_str(), Some("failed"));
    assert_eq!(report["agent"]["kind"].as_str(), Some("binary"));
    assert_eq!(
        report["agent"]["sha256"].as_str().map(str::len),
        Some(64),
        "{:?}",
        report["agent"]
    );
    let failed = entries(&report, SCENARIO);
    assert_eq!(failed.len(), 2, "one entry per profile: {failed:?}");
    for (profile, entry) in failed {
        assert_eq!(entry["result"].as_str(), Some("failed"), "{profile}: {entry:?}");
        let message = entry["failure"]["message"].as_str().unwrap_or("");
        assert!(
            entry["failure"]["step"].as_str()
                == Some("Then no node's journal shows \"Stopping kubelet.service\"")
                && message.contains("its journal shows")
                && message.contains("Stopping kubelet.service"),
            "{profile}: the failure names the step and what the journal showed: {entry:?}"
        );
    }

    let (summary, report) = run_with("mco-reference-daemon", nodes, dir.path()).await;
    assert_eq!(summary.failed, 0, "{summary:?}");
    assert_eq!(report["verdict"].as_str(), Some("passed"));
    for (profile, entry) in entries(&report, SCENARIO) {
        assert_eq!(entry["result"].as_str(), Some("passed"), "{profile}: {entry:?}");
    }
    assert!(
        report["reproduce"]
            .as_str()
            .is_some_and(|c| c.contains("--agent-binary mco-reference-daemon")),
        "{:?}",
        report["reproduce"]
    );
    // Timeliness as data: the timeout the run allowed, the bound, and per scenario run how long
    // its nodes took at most (every scenario of the feature, on both profiles).
    let timeliness = &report["timeliness"];
    assert_eq!(
        timeliness["agentTimeoutSeconds"].as_u64(),
        Some(30),
        "{timeliness:?}"
    );
    assert_eq!(
        timeliness["syncBoundSeconds"].as_u64(),
        Some(10),
        "{timeliness:?}"
    );
    let scenarios = timeliness["scenarios"]
        .as_sequence()
        .expect("per-scenario latencies");
    assert_eq!(scenarios.len(), summary.passed, "{timeliness:?}");
    assert!(
        scenarios
            .iter()
            .all(|s| s["slowestSyncMs"].as_u64().is_some_and(|ms| ms <= 10_000)),
        "{timeliness:?}"
    );
}
