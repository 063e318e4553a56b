//! `systemctl` on both backends: the same calls give the same exit codes, outputs and service
//! manager journal lines on an embedded node and in a container node, a reboot last.

use super::{node_image, scenario};
use harness::node::Node;
use harness::scenario::NodeBackend;
use std::time::Duration;

/// The systemctl calls of the golden test, with a reboot last.
const SEQUENCE: &[&[&str]] = &[
    &["daemon-reload"],
    &["is-active", "kubelet"],
    &["restart", "crio.service"],
    &["reload", "crio"],
    &["stop", "kubelet"],
    &["is-active", "kubelet"],
    &["start", "kubelet"],
    &["start", "nope"],
    &["frobnicate"],
    &["is-enabled", "kubelet"],
    &["list-units", "--state=failed", "--no-legend"],
    &["reboot"],
];

/// What every node answers to `SEQUENCE`: exit code, stdout and stderr per call, then the
/// service manager's journal lines (timestamps and host cut off, the boot id replaced).
const GOLDEN_OUTPUT: &[(i32, &str, &str)] = &[
    (0, "", ""),
    (0, "active\n", ""),
    (0, "", ""),
    (0, "", ""),
    (0, "", ""),
    (3, "inactive\n", ""),
    (0, "", ""),
    (
        5,
        "",
        "Failed to start nope.service: Unit nope.service not found.\n",
    ),
    (1, "", "Unknown command verb 'frobnicate'.\n"),
    (0, "enabled\n", ""),
    (0, "", ""),
    (0, "", ""),
];
const GOLDEN_JOURNAL: &[&str] = &[
    "systemd[1]: Reloading.",
    "systemd[1]: Stopping crio.service...",
    "systemd[1]: Stopped crio.service.",
    "systemd[1]: Starting crio.service...",
    "systemd[1]: Started crio.service.",
    "systemd[1]: Reloading crio.service...",
    "systemd[1]: Reloaded crio.service.",
    "systemd[1]: Stopping kubelet.service...",
    "systemd[1]: Stopped kubelet.service.",
    "systemd[1]: Starting kubelet.service...",
    "systemd[1]: Started kubelet.service.",
    "systemd[1]: Stopping crio.service...",
    "systemd[1]: Stopped crio.service.",
    "systemd[1]: Stopping kubelet.service...",
    "systemd[1]: Stopped kubelet.service.",
    "systemd[1]: Stopping machine-config-daemon.service...",
    "systemd[1]: Stopped machine-config-daemon.service.",
    "-- Boot <id> --",
    "systemd[1]: Starting crio.service...",
    "systemd[1]: Started crio.service.",
    "systemd[1]: Starting kubelet.service...",
    "systemd[1]: Started kubelet.service.",
    "systemd[1]: Starting machine-config-daemon.service...",
    "systemd[1]: Started machine-config-daemon.service.",
];

async fn run_sequence(node: &dyn Node) -> (Vec<(i32, String, String)>, Vec<String>) {
    let mark = node.journal_mark().await.unwrap();
    let mut outputs = Vec::new();
    for args in SEQUENCE {
        let out = node.systemctl(args).await.unwrap();
        outputs.push((out.exit_code, out.stdout, out.stderr));
    }
    node.wait_for_journal(
        mark,
        "Started machine-config-daemon.service.",
        Duration::from_secs(20),
    )
    .await
    .unwrap()
    .expect("the node booted again");
    let lines = node
        .journal_since(mark)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|line| {
            if line.starts_with("-- Boot ") {
                return Some("-- Boot <id> --".to_string());
            }
            let message = line.split_once(&format!(" {} ", node.name()))?.1.to_string();
            message.starts_with("systemd[1]: ").then_some(message)
        })
        .collect();
    (outputs, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn systemctl_gives_the_same_outputs_and_journal_lines_on_both_backends() {
    let image = image_or_skip!();
    let golden_output: Vec<(i32, String, String)> = GOLDEN_OUTPUT
        .iter()
        .map(|(c, o, e)| (*c, o.to_string(), e.to_string()))
        .collect();
    for backend in [NodeBackend::Embedded, NodeBackend::Container { image }] {
        let s = scenario(backend.clone()).await;
        let node = s.nodes[0].as_ref();
        let before = node.boot_id().await.unwrap();
        let (outputs, journal) = run_sequence(node).await;
        assert_eq!(outputs, golden_output, "{backend:?}");
        assert_eq!(journal, GOLDEN_JOURNAL, "{backend:?}");
        assert_ne!(
            node.boot_id().await.unwrap(),
            before,
            "{backend:?}: a new boot id"
        );
        s.shutdown().await;
    }
}
