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

/// True, having said why (a failure under CI), when no image can be built here: no Docker
/// engine or no static busybox.
fn cannot_build() -> bool {
    if let Some(why) = docker_unavailable() {
        fake_apiserver::testing::skip(&format!("no Docker engine ({why})"));
        return true;
    }
    if find_busybox().is_err() {
        fake_apiserver::testing::skip(&ImageError::NoBusybox.to_string());
        return true;
    }
    false
}

#[test]
fn the_node_image_is_built_here_reused_while_unchanged_and_runs_our_binaries() {
    if cannot_build() {
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
    // A run takes the image built from the same files, while Docker has it, without laying out
    // a root filesystem again.
    let ensured = ensure_node_image(&binaries).unwrap();
    assert_eq!(ensured.reference, first.reference);
    let again = ensure_node_image(&binaries).unwrap();
    assert_eq!(
        (again.reference.as_str(), again.reused, again.assembled),
        (first.reference.as_str(), true, false)
    );
    assert_eq!(again.how(), "reused, built from the same files");
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

/// Each `mco-conformance` process (a run, `node-image`) finds the image an earlier process built
/// from the same files by its inputs tag, and lays out no root filesystem for it.
#[test]
fn another_process_finds_the_image_built_from_the_same_files() {
    if cannot_build() {
        return;
    }
    let node_image = || {
        let out = Command::new(env!("CARGO_BIN_EXE_mco-conformance"))
            .arg("node-image")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let first = node_image();
    let reference = first.split_whitespace().next().unwrap().to_string();
    assert!(reference.starts_with("mco-conformance-node:sha-"), "{first}");
    let second = node_image();
    assert!(
        second.starts_with(&format!("{reference} (reused, built from the same files)\n")),
        "the second process took the first's image by its input files: {second}"
    );
}
