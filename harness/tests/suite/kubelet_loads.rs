//! `every kubelet loaded a new kubelet-ca.crt <n> time(s)` counts the kubelet's "Loaded a new CA
//! Bundle and Verifier" lines, which it logs when the file's content changes and at every start.
//! A kubelet that an agent restarts loads the file at its start, so when the count is off the
//! step says whether the kubelet was started in that time: a vendor reading "6 times, expected
//! 4" must be pointed at the restart, not at the way the file was written (CI, 2026-11-28: the
//! self-test's `restart-kubelet-on-ca-change` row on 4.16 showed the misleading hint, and passed
//! the count when the restart came before the kubelet's own reload).
//!
//! Both runs ask for 0 loads after a forced rotation, once a load is in the journal: the
//! reference daemon's kubelet loaded the new bundle (content, no start); the
//! `restart-kubelet-on-ca-change` mutant's kubelet was started once.

use harness::runner::run;
use std::time::Duration;

const FEATURE: &str = "Feature: The kubelet's loads of its client CA bundle

  Scenario: A forced rotation, counted against no load at all
    Given a fresh cluster with 1 worker node
    When the kube-apiserver-to-kubelet-signer is rotated by force
    Then every node's journal shows \"Loaded a new CA Bundle and Verifier\"
    And every kubelet loaded a new kubelet-ca.crt 0 times
";

/// The one failure message of a run of [`FEATURE`] with the reference daemon binary and `args`.
async fn failure_with(args: &[&str]) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let config = crate::common::one_feature_with_agent(
        dir.path(),
        "loads.feature",
        FEATURE,
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_mco-reference-daemon")),
        args,
        Duration::from_secs(30),
    );
    let summary = run(&config).await.expect("the run itself works");
    assert_eq!((summary.passed, summary.failed), (0, 1), "{args:?}: {summary:?}");
    let rejections =
        harness::runner::self_test::rejections(&dir.path().join("report/ocp-4.16.cucumber.json")).unwrap();
    assert_eq!(rejections.len(), 1, "{rejections:?}");
    assert!(
        rejections[0].step.contains("loaded a new kubelet-ca.crt 0 times"),
        "the count fails, not the steps before it: {rejections:?}"
    );
    rejections[0].message.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_off_says_whether_the_kubelet_was_started_again() {
    let reference = failure_with(&[]).await;
    assert!(
        reference.contains("worker-0: the kubelet loaded a new kubelet-ca.crt 1 times, expected 0")
            && reference.contains("the file's content changed more often than the bundle did")
            && !reference.contains("was started"),
        "the reference's kubelet only reloaded the file: {reference}"
    );

    let mutant = failure_with(&["--mutant", "restart-kubelet-on-ca-change"]).await;
    assert!(
        mutant.contains("worker-0: the kubelet loaded a new kubelet-ca.crt")
            && mutant.contains(
                "the kubelet was started 1 time(s) in that time, and it loads the file at every start"
            )
            && !mutant.contains("content changed more often"),
        "the mutant's restart is named: {mutant}"
    );
}
