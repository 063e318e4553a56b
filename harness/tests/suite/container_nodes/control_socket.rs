//! A container node whose control socket is gone: every observation fails naming the node and
//! the socket, and moving the clock fails at once.

use super::{docker_exec, node_image, scenario};
use harness::node::JournalMark;
use harness::scenario::NodeBackend;

/// A container node whose control socket is gone cannot be observed, and says so: every read a
/// step makes fails naming the node and the socket, so no negative check ("no node's journal
/// shows …") can pass having read nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_control_socket_is_gone_fails_every_observation_naming_it() {
    let image = image_or_skip!();
    let s = scenario(NodeBackend::Container { image }).await;
    let node = &s.nodes[0];
    let id = node.container_id().expect("a container node");
    let (code, _, err) = docker_exec(&id, &["rm", harness::node::control::CONTROL_SOCKET]);
    assert_eq!(code, 0, "{err}");
    let errors = [
        node.journal_mark().await.map(|_| ()).unwrap_err().to_string(),
        node.journal_since(JournalMark(0))
            .await
            .map(|_| ())
            .unwrap_err()
            .to_string(),
        node.boot_id().await.map(|_| ()).unwrap_err().to_string(),
        node.kubelet_endpoint().await.map(|_| ()).unwrap_err().to_string(),
        node.read("/etc/kubernetes/kubelet-ca.crt")
            .await
            .map(|_| ())
            .unwrap_err()
            .to_string(),
        node.stat("/").await.map(|_| ()).unwrap_err().to_string(),
    ];
    for e in &errors {
        assert!(e.contains("worker-0"), "names the node: {e}");
        assert!(e.contains("init.sock"), "names the socket: {e}");
    }
    // Moving the clock fails at once with the node's reason: its clock cannot follow, and the
    // step does not wait out its deadline for a heartbeat that cannot come.
    let started = std::time::Instant::now();
    let e = s
        .advance(time::Duration::minutes(1))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("worker-0") && e.contains("clock did not follow") && e.contains("init.sock"),
        "{e}"
    );
    assert!(
        started.elapsed() < s.options.deadline,
        "failed after {:?}, the step's deadline is {:?}",
        started.elapsed(),
        s.options.deadline
    );
    s.shutdown().await;
}
