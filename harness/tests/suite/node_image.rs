//! The container node image: built here from our binaries, their libraries and busybox with no
//! registry, reused while its content is unchanged, tagged for vendors' `FROM` lines, and able
//! to run what it carries. Skips, saying why, without a Docker engine or a static busybox.

use harness::node::image::{
    ImageError, build_node_image, docker_unavailable, ensure_node_image, find_busybox,
};
use std::path::PathBuf;
use std::process::Command;

fn run_in(image: &str, command: &[&str]) -> String {
    let out = Command::new("docker")
        .args([
            "run",
            "--rm",
            "--network",
            "none",
            "--entrypoint",
            command[0],
            image,
        ])
        .args(&command[1..])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{command:?} in {image}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_node_image_is_built_here_reused_while_unchanged_and_runs_our_binaries() {
    if let Some(why) = docker_unavailable() {
        fake_apiserver::testing::skip(&format!("no Docker engine ({why})"));
        return;
    }
    if find_busybox().is_err() {
        fake_apiserver::testing::skip(&ImageError::NoBusybox.to_string());
        return;
    }
    let binaries = vec![
        PathBuf::from(env!("CARGO_BIN_EXE_mco-reference-daemon")),
        PathBuf::from(env!("CARGO_BIN_EXE_mco-node-tools")),
    ];
    let first = build_node_image(&binaries).unwrap();
    let second = build_node_image(&binaries).unwrap();
    assert_eq!(
        first.reference, second.reference,
        "the same content, the same tag"
    );
    assert!(second.reused, "the second build reuses the first image");
    // A run in the same process takes the image built from the same files, while Docker has it.
    let ensured = ensure_node_image(&binaries).unwrap();
    assert_eq!(ensured.reference, first.reference);
    let again = ensure_node_image(&binaries).unwrap();
    assert_eq!(
        (again.reference.as_str(), again.reused),
        (first.reference.as_str(), true)
    );
    assert!(
        first.reference.starts_with("mco-conformance-node:sha-"),
        "{first:?}"
    );
    assert_eq!(
        first.version_reference,
        concat!("mco-conformance-node:", env!("CARGO_PKG_VERSION"))
    );

    let version = run_in(
        &first.version_reference,
        &["/usr/bin/mco-reference-daemon", "--version"],
    );
    assert_eq!(
        version.trim(),
        concat!("mco-reference-daemon ", env!("CARGO_PKG_VERSION"))
    );
    let shell = run_in(
        &first.reference,
        &[
            "/bin/sh",
            "-c",
            "cat /etc/os-release; ls /usr/bin; test -d /etc/docker/certs.d && echo certs.d",
        ],
    );
    assert!(shell.contains("ID=mco-conformance"), "{shell}");
    assert!(
        shell.contains("mco-node-tools") && shell.contains("certs.d"),
        "{shell}"
    );
}
