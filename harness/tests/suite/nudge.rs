//! `--nudge-first-sync` with an agent that starts as upstream's 4.16 daemon does
//! (`mco-conformance-late-sync-agent`, `harness/tests/agents/late_first_sync.rs`): its first
//! certificate sync waits for a ControllerConfig change. Without the nudge such an agent never
//! syncs at start and the scenario fails at its first step; with it the scenario passes, both
//! when the agent posts upstream's `ConfigDriftMonitorStarted` event and when it posts none (the
//! nudge then waits out its grace).

use harness::runner::{Summary, run};
use std::path::PathBuf;
use std::time::Duration;

/// One 4.16 scenario whose first Then reads what the first sync writes on the Node.
const FEATURE: &str = "Feature: The agent's first sync

  Scenario: Every node has synced the ControllerConfig at start
    Given a fresh cluster with 1 worker node
    Then every node's annotation machineconfiguration.openshift.io/lastSyncedControllerConfigResourceVersion is the ControllerConfig's resourceVersion
";

async fn run_late_agent(args: &[&str], nudge: bool, timeout: Duration) -> (Summary, tempfile::TempDir) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::common::one_feature_with_agent(
        dir.path(),
        "first_sync.feature",
        FEATURE,
        PathBuf::from(env!("CARGO_BIN_EXE_mco-conformance-late-sync-agent")),
        args,
        timeout,
    );
    config.nudge_first_sync = nudge;
    let summary = run(&config).await.expect("the run itself works");
    (summary, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_whose_first_sync_waits_for_a_change_passes_only_when_nudged() {
    let (summary, dir) = run_late_agent(&[], false, Duration::from_secs(8)).await;
    assert_eq!(
        (summary.passed, summary.failed),
        (0, 1),
        "not nudged, it never syncs: {summary:?}"
    );
    let rejections =
        harness::runner::self_test::rejections(&dir.path().join("report/ocp-4.16.cucumber.json")).unwrap();
    assert!(
        rejections[0]
            .message
            .contains("lastSyncedControllerConfigResourceVersion")
            || rejections[0].message.contains("synced"),
        "the failure names the missing sync: {rejections:?}"
    );

    let (summary, _dir) = run_late_agent(&[], true, Duration::from_secs(60)).await;
    assert_eq!(
        (summary.passed, summary.failed),
        (1, 0),
        "nudged, it syncs: {summary:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_posts_no_first_run_event_is_nudged_after_the_grace() {
    let (summary, _dir) = run_late_agent(&["--no-event"], true, Duration::from_secs(60)).await;
    assert_eq!(
        (summary.passed, summary.failed),
        (1, 0),
        "without the event the nudge still comes, after its grace: {summary:?}"
    );
}
