//! Container nodes: the node image's init as PID 1, the same `Node` trait as the
//! embedded backend, and the node's tools inside the container. Each test skips, saying why,
//! without a Docker engine or a static busybox.
//!
//! Here: the node image (or why a test skips), a one-node scenario, and `docker exec`. The
//! tests are grouped by what they ask of the node: `systemctl`, the tools and kernel inside
//! the container, an agent image, the start limit, a control socket that is gone, and what
//! upstream's daemon asks of an RHCOS node.

use harness::node::image::{ImageError, docker_unavailable, ensure_node_image, find_busybox};
use harness::profile::Profile;
use harness::scenario::{NodeBackend, Scenario, ScenarioOptions};
use std::process::Command;

/// The node image with this build's binaries, or why there can be none here.
fn node_image() -> Result<String, String> {
    if let Some(why) = docker_unavailable() {
        return Err(format!("no Docker engine ({why})"));
    }
    if find_busybox().is_err() {
        return Err(ImageError::NoBusybox.to_string());
    }
    // The harness's binaries, built beside this test by cargo: missing ones fail the test.
    let binaries = harness::node::image::harness_binaries().unwrap();
    Ok(ensure_node_image(&binaries).unwrap().reference)
}

macro_rules! image_or_skip {
    () => {
        match node_image() {
            Ok(image) => image,
            Err(why) => {
                fake_apiserver::testing::skip(&why);
                return;
            }
        }
    };
}

// Declared after `image_or_skip!`, which they use.
mod agent_image;
mod control_socket;
mod node_tools;
mod rhcos;
mod start_limit;
mod systemctl;

async fn scenario(backend: NodeBackend) -> Scenario {
    let mut options = ScenarioOptions::new(Profile::Ocp416);
    options.nodes = vec![("worker".into(), 1)];
    options.backend = backend;
    Scenario::start(options).await.unwrap()
}

fn docker_exec(container: &str, command: &[&str]) -> (i32, String, String) {
    let out = Command::new("docker")
        .args(["exec", container])
        .args(command)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
