//! The reference daemon as a binary runs the whole suite through exactly the path a vendor's
//! agent takes (`--agent-binary`): a process per node with the contract's environment and the
//! node tools on its PATH, on embedded nodes, and on container nodes with the binary copied
//! into the node image. Every scenario that runs must pass; the container run skips, saying
//! why, without a Docker engine.

use harness::runner::{Nodes, RunConfig, Summary, run};
use harness::scenario::AgentKind;
use std::path::{Path, PathBuf};

async fn whole_suite(nodes: Nodes) -> Summary {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = RunConfig::new(vec![root.join("features")], dir.path().to_path_buf());
    config.nodes = nodes;
    config.agent = AgentKind::Binary {
        path: PathBuf::from(env!("CARGO_BIN_EXE_mco-reference-daemon")),
        args: Vec::new(),
        node_tools: PathBuf::from(env!("CARGO_BIN_EXE_mco-node-tools")),
    };
    let summary = run(&config).await.expect("the run itself works");
    if !summary.passed() {
        // Straight to the process's stderr: the cucumber run replaced the panic hook, so an
        // assertion's message would not reach the test's output (the FAIL lines above say
        // which scenario and step).
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{nodes:?} run: {}", summary.line());
        for failure in &summary.failures {
            let _ = writeln!(err, "  failed: {failure}");
        }
    }
    summary
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_suite_passes_with_the_reference_daemon_binary_on_both_node_kinds() {
    let embedded = whole_suite(Nodes::Embedded).await;
    assert_eq!(
        (embedded.failed, embedded.mco_logs_failed),
        (0, 0),
        "{embedded:?}"
    );
    assert!(embedded.passed > 60, "{embedded:?}");
    // @scale scenarios (a thousand nodes) run only when asked for, on either node kind.
    let scale_skips = |skipped: &[String]| skipped.iter().filter(|s| s.contains("@scale")).count();
    assert!(scale_skips(&embedded.skipped) > 0, "{:?}", embedded.skipped);
    assert!(
        embedded
            .skipped
            .iter()
            .all(|s| s.contains("@container") || s.contains("@scale")),
        "only the @container scenarios wait for container nodes: {:?}",
        embedded.skipped
    );
    if let Some(why) = harness::node::image::docker_unavailable() {
        fake_apiserver::testing::skip(&format!("the container half: no Docker engine ({why})"));
        return;
    }
    let container = whole_suite(Nodes::Container).await;
    assert_eq!(
        (container.failed, container.mco_logs_failed),
        (0, 0),
        "{container:?}"
    );
    // @embedded scenarios wait for embedded nodes, as @container ones wait for container nodes
    // (the crash features run on both: strace runs inside a container node).
    let tagged = |skipped: &[String], tag: &str| skipped.iter().filter(|s| s.contains(tag)).count();
    assert!(
        container
            .skipped
            .iter()
            .all(|s| s.contains("@embedded") || s.contains("@scale")),
        "only the @embedded scenarios wait for embedded nodes: {:?}",
        container.skipped
    );
    assert_eq!(
        container.passed + tagged(&container.skipped, "@embedded"),
        embedded.passed + tagged(&embedded.skipped, "@container"),
        "every scenario but the @scale ones ran on one node kind or the other, each where it can"
    );
}
