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
    // Straight to the process's stderr too: the summary line says which scenarios failed where,
    // whatever the assertions below find.
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr().lock(),
        "{agent} on {nodes:?} nodes: {}",
        summary.line()
    );
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
    faulty_fails_reference_passes(Nodes::Embedded).await;
}

/// The same on container nodes, where each agent binary is copied into the node image as
/// `/usr/bin/<name>` and run by the node's init.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_container_nodes_too() {
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
    assert_eq!(
        failed.len(),
        harness::Profile::ALL.len(),
        "one entry per profile: {failed:?}"
    );
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

/// Run forced_rotation.feature on 4.16 with `agent` as the agent binary, a long agent timeout
/// (a run that waited for a dead agent would show it as "not reached within"); the report.
async fn run_with_dead_agent(agent: &Path, nodes: Nodes, dir: &Path) -> Value {
    run_with_idle_or_dead_agent(
        agent,
        nodes,
        dir,
        harness::profile::Profile::Ocp416,
        std::time::Duration::from_secs(120),
    )
    .await
}

async fn run_with_idle_or_dead_agent(
    agent: &Path,
    nodes: Nodes,
    dir: &Path,
    profile: harness::profile::Profile,
    timeout: std::time::Duration,
) -> Value {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut config = RunConfig::new(
        vec![root.join("features/forced_rotation.feature")],
        dir.join("reports"),
    );
    config.profiles = vec![profile];
    config.nodes = nodes;
    config.agent_timeout = timeout;
    config.agent = AgentKind::Binary {
        path: agent.to_path_buf(),
        args: Vec::new(),
        node_tools: binary("mco-node-tools"),
    };
    let report = dir.join("report.yaml");
    config.report = Some(report.clone());
    let summary = run(&config).await.expect("the run itself works");
    assert!(summary.passed == 0 && summary.failed > 0, "{summary:?}");
    serde_yaml::from_str(&std::fs::read_to_string(&report).expect("the report")).expect("YAML")
}

/// Every scenario failed at its first step, on the dead agent, with `evidence` in the message.
fn every_scenario_failed_on_the_dead_agent(report: &Value, evidence: &[&str]) {
    let mut seen = 0;
    for profile in report["results"].as_sequence().into_iter().flatten() {
        for feature in profile["features"].as_sequence().into_iter().flatten() {
            for s in feature["scenarios"].as_sequence().into_iter().flatten() {
                seen += 1;
                let message = s["failure"]["message"].as_str().unwrap_or("");
                assert_eq!(
                    s["failure"]["step"].as_str(),
                    Some("Given a fresh cluster with 1 worker node"),
                    "{s:?}"
                );
                assert!(
                    message.contains("the agent is not running: machine-config-daemon.service failed"),
                    "failed at once on the dead agent, not after the timeout: {message}"
                );
                for e in evidence {
                    assert!(message.contains(e), "the failure shows {e:?}: {message}");
                }
            }
        }
    }
    assert!(seen > 0, "{report:?}");
}

/// An agent that exits fails the first step at once, with its exit status and its last words
/// (what it printed just before it exited is in the journal the failure shows).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_exits_fails_at_once_with_its_exit_status_and_last_words() {
    agent_that_exits(Nodes::Embedded).await;
}

/// The same on container nodes, where the node's init supervises the agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_exits_on_a_container_node_fails_at_once_too() {
    if let Some(why) = harness::node::image::docker_unavailable() {
        fake_apiserver::testing::skip(&format!("no Docker engine ({why})"));
        return;
    }
    agent_that_exits(Nodes::Container).await;
}

async fn agent_that_exits(nodes: Nodes) {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("dying-agent");
    std::fs::write(
        &agent,
        "#!/bin/sh\necho 'agent: cannot load its config: boom' >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let report = run_with_dead_agent(&agent, nodes, dir.path()).await;
    every_scenario_failed_on_the_dead_agent(
        &report,
        &["agent: cannot load its config: boom", "exited: exit status: 3"],
    );
}

/// An agent that cannot start (a file that is not executable, a directory) fails the first
/// step at once, saying why it could not start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_cannot_start_fails_at_once_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let not_executable = dir.path().join("not-executable");
    std::fs::write(&not_executable, "not a program\n").unwrap();
    let report = run_with_dead_agent(&not_executable, Nodes::Embedded, dir.path()).await;
    every_scenario_failed_on_the_dead_agent(&report, &["cannot start", "Permission denied"]);
    let directory = dir.path().join("a-directory");
    std::fs::create_dir(&directory).unwrap();
    let report = run_with_dead_agent(&directory, Nodes::Embedded, dir.path()).await;
    every_scenario_failed_on_the_dead_agent(&report, &["cannot start"]);
}

/// An agent that runs and never acts passes nothing, on 4.12 too, where no ControllerConfig
/// sync shows that an agent runs: a new node's Node has none of MCO's annotations until its
/// agent's first run sets them from the node's disk, and the cluster waits for that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_never_acts_passes_no_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("idle-agent");
    std::fs::write(&agent, "#!/bin/sh\nexec sleep 100000\n").unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for profile in [
        harness::profile::Profile::Ocp412,
        harness::profile::Profile::Ocp416,
    ] {
        let report = run_with_idle_or_dead_agent(
            &agent,
            Nodes::Embedded,
            &dir.path().join(profile.as_str()),
            profile,
            std::time::Duration::from_secs(3),
        )
        .await;
        assert_eq!(
            report["verdict"].as_str(),
            Some("failed"),
            "{profile}: {report:?}"
        );
    }
}

/// What an agent prints is kept whatever it is: bytes that are not UTF-8 escaped, a line
/// longer than journald's LineMax cut into records of 48 KiB, and the failure shows each line
/// shortened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_and_endless_output_is_kept_escaped_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("noisy-agent");
    std::fs::write(
        &agent,
        "#!/bin/sh\nprintf 'bin \\377\\376 end\\n'\nhead -c 100000 /dev/zero | tr '\\0' a\necho\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let report = run_with_dead_agent(&agent, Nodes::Embedded, dir.path()).await;
    every_scenario_failed_on_the_dead_agent(&report, &["bin \\xff\\xfe end", "… (", "exit status: 3"]);
    let text = serde_yaml::to_string(&report).unwrap();
    // 100,000 bytes without a newline: records of 49,152, 49,152 and 1,696 bytes, each shown
    // shortened with its length as a journal line (after the 54 bytes of
    // "Jan 05 08:00:00 worker-0 machine-config-daemon[1001]: ").
    for length in ["(49206 bytes)", "(1750 bytes)"] {
        assert!(text.contains(length), "a record {length}: {text}");
    }
}
