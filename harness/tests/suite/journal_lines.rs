//! A line reaches a node's journal after the process that logged it went on (journald on a
//! real node, the node's service manager here, reading the agent's output from a pipe). A
//! step that reads the journal must wait for a line as someone following `journalctl` would,
//! not judge the journal of the instant it first looks: on a loaded machine the reference
//! daemon's "Certificate was synced" line once reached the journal after the step had looked
//! and failed (the agent-binary suite on container nodes, 2026-11-28).
//!
//! The agent here is the reference daemon behind a shell script that logs one more line a
//! second after the scenario writes a file no config names, which the daemon leaves alone (the
//! force file would make a daemon that has not yet run its start check reboot the node, and
//! the reboot's lines would push the late one out of the failure's last lines);
//! the scenario's Then step asks for that line at once. The step passes by waiting for it, and
//! still fails, naming the node and the line, for a line that never comes. The failing run first
//! waits for the late line too, so what the failure shows does not depend on how fast the host
//! ran the script.

use harness::runner::{Summary, run};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

fn feature(lines: &[&str]) -> String {
    let mut feature = "Feature: A line logged late

  Scenario: The journal shows a line the agent logs a second after the step before
    Given a fresh cluster with 1 worker node
    When the file /etc/mco-late-line-trigger is written on every node
"
    .to_string();
    for (i, line) in lines.iter().enumerate() {
        let keyword = if i == 0 { "Then" } else { "And" };
        feature.push_str(&format!("    {keyword} every node's journal shows \"{line}\"\n"));
    }
    feature
}

async fn run_with_late_line(asked: &[&str], timeout: Duration) -> (Summary, tempfile::TempDir) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("late-line-agent");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n\
             # The reference daemon does the agent's work; this script only logs a line late.\n\
             {daemon} \"$@\" &\n\
             until [ -e \"$MCO_NODE_ROOT/etc/mco-late-line-trigger\" ]; do sleep 0.05; done\n\
             sleep 1\n\
             echo 'a line logged a second late'\n\
             wait\n",
            daemon = env!("CARGO_BIN_EXE_mco-reference-daemon"),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = crate::common::one_feature_with_agent(
        dir.path(),
        "late_line.feature",
        &feature(asked),
        script,
        &[],
        timeout,
    );
    let summary = run(&config).await.expect("the run itself works");
    (summary, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_step_waits_for_a_line_logged_after_it_first_looks() {
    let (summary, _dir) = run_with_late_line(&["a line logged a second late"], Duration::from_secs(30)).await;
    assert_eq!(
        (summary.passed, summary.failed),
        (1, 0),
        "the step waits for the late line: {summary:?}"
    );

    // The late line is waited for first (it comes), then the line that never does: the deadline
    // bounds only how long the failing step waits, not whether the late line made it in time.
    let (summary, dir) = run_with_late_line(
        &["a line logged a second late", "a line never logged"],
        Duration::from_secs(20),
    )
    .await;
    assert_eq!((summary.passed, summary.failed), (0, 1), "{summary:?}");
    let rejections =
        harness::runner::self_test::rejections(&dir.path().join("report/ocp-4.16.cucumber.json")).unwrap();
    let message = &rejections[0].message;
    assert!(
        message.contains("worker-0") && message.contains("\"a line never logged\""),
        "the failure names the node and the line: {message}"
    );
    assert!(
        message.contains("a line logged a second late"),
        "and shows the journal's last lines, the late line among them: {message}"
    );
}
