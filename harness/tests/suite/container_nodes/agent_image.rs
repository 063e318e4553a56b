//! A vendor's agent image built FROM the node image, run through a whole feature, and an agent
//! image that is missing.

use super::node_image;
use harness::node::image::docker_unavailable;
use std::process::Command;

/// A vendor's agent image built FROM the node image: the init stays PID 1 and runs the image's
/// entrypoint and command as the agent service, and the report names the image and its id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_image_built_from_the_node_image_runs_as_the_agent_service() {
    let image = image_or_skip!();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tag = format!("mco-conformance-test-agent:{}", image.rsplit_once(':').unwrap().1);
    let dockerfile =
        format!("FROM {image}\nENTRYPOINT [\"/usr/bin/mco-reference-daemon\"]\nCMD [\"--from-the-image\"]\n");
    let mut build = Command::new("docker")
        .args(["build", "-q", "-t", &tag, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    build
        .stdin
        .take()
        .unwrap()
        .write_all(dockerfile.as_bytes())
        .unwrap();
    let built = build.wait_with_output().unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );

    let command = harness::node::image::agent_image_command(&tag).unwrap();
    assert_eq!(command, ["/usr/bin/mco-reference-daemon", "--from-the-image"]);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = harness::runner::RunConfig::new(
        vec![root.join("features/kubelet_restart.feature")],
        dir.path().to_path_buf(),
    );
    config.nodes = harness::runner::Nodes::Container;
    config.agent = harness::scenario::AgentKind::Image {
        image: tag.clone(),
        command,
    };
    let report = dir.path().join("report.yaml");
    config.report = Some(report.clone());
    let summary = harness::runner::run(&config).await.unwrap();
    assert_eq!(summary.failed, 0, "{summary:?}");
    assert!(summary.passed >= 4, "{summary:?}");
    let yaml: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(yaml["agent"]["kind"].as_str(), Some("image"));
    assert_eq!(yaml["agent"]["image"].as_str(), Some(tag.as_str()));
    assert_eq!(yaml["agent"]["sha256"].as_str().map(str::len), Some(64));
    assert_eq!(yaml["nodes"].as_str(), Some("container"), "{yaml:?}");
}

#[test]
fn a_missing_agent_image_is_an_error_naming_it() {
    if let Some(why) = docker_unavailable() {
        fake_apiserver::testing::skip(&format!("no Docker engine ({why})"));
        return;
    }
    let err = harness::node::image::agent_image_command("mco-conformance-no-such-image:0")
        .unwrap_err()
        .to_string();
    assert!(err.contains("mco-conformance-no-such-image:0"), "{err}");
}
