//! The kubelet's node status and the node lifecycle controller, through a whole scenario: the
//! kubelet publishes where it serves and posts Ready at every clock move; a stopped kubelet
//! goes Unknown once the grace period passes on the simulated clock, and Ready again when it
//! starts.

use harness::Profile;
use harness::cluster::lifecycle::{NODE_MONITOR_GRACE, UNKNOWN_REASON};
use harness::node::kubelet_status::READY_REASON;
use harness::node::{HEARTBEAT_FILE, KUBELET_UNIT, NOW_FILE};
use harness::pki::{Clock, rfc3339};
use harness::scenario::{Scenario, ScenarioOptions};
use k8s_openapi::api::core::v1::Node as NodeObject;
use kube::api::Api;

async fn heartbeat(s: &Scenario, node: &str) -> String {
    let n = Api::<NodeObject>::all(s.admin.clone()).get(node).await.unwrap();
    let ready = n
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    let at = ready.last_heartbeat_time.unwrap().0.as_second();
    rfc3339(time::OffsetDateTime::from_unix_timestamp(at).unwrap())
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap().trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubelet_publishes_its_port_and_posts_ready_at_simulated_time() {
    let s = Scenario::start(ScenarioOptions::new(Profile::Ocp416))
        .await
        .unwrap();
    for node in &s.nodes {
        assert_eq!(
            s.kubelet_address(node.name()).await.unwrap(),
            node.kubelet_endpoint()
                .await
                .unwrap()
                .expect("the kubelet serves"),
            "the Node's InternalIP and daemonEndpoints port are where the kubelet serves"
        );
        assert_eq!(
            s.node_ready(node.name()).await.unwrap(),
            Some(("True".into(), READY_REASON.into()))
        );
        assert_eq!(text(node.read(NOW_FILE).await.unwrap()), rfc3339(s.clock.now()));
    }
    s.advance(time::Duration::days(3)).await.unwrap();
    let now = rfc3339(s.clock.now());
    for node in &s.nodes {
        assert_eq!(
            heartbeat(&s, node.name()).await,
            now,
            "a heartbeat at the new instant"
        );
        assert_eq!(
            text(node.read(HEARTBEAT_FILE).await.unwrap()),
            format!("{now} ok")
        );
        assert_eq!(
            text(node.read(NOW_FILE).await.unwrap()),
            now,
            "the now file follows the clock"
        );
    }
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_kubelet_goes_unknown_after_the_grace_period_and_ready_when_it_starts() {
    let s = Scenario::start(ScenarioOptions::new(Profile::Ocp412))
        .await
        .unwrap();
    let node = &s.nodes[0];
    let other = s.nodes[1].name().to_string();
    node.systemctl(&["stop", KUBELET_UNIT]).await.unwrap();
    s.advance(NODE_MONITOR_GRACE).await.unwrap();
    assert_eq!(
        s.node_ready(node.name()).await.unwrap().unwrap().0,
        "True",
        "exactly the grace period: not yet"
    );
    s.advance(time::Duration::SECOND).await.unwrap();
    assert_eq!(
        s.node_ready(node.name()).await.unwrap(),
        Some(("Unknown".into(), UNKNOWN_REASON.into()))
    );
    assert_eq!(
        s.node_ready(&other).await.unwrap().unwrap().0,
        "True",
        "the node whose kubelet runs stays Ready"
    );
    node.systemctl(&["start", KUBELET_UNIT]).await.unwrap();
    harness::wait::eventually(std::time::Duration::from_secs(10), || async {
        match s.node_ready(node.name()).await.unwrap() {
            Some((status, _)) if status == "True" => Ok(()),
            seen => Err(format!("{seen:?}")),
        }
    })
    .await
    .unwrap();
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubelet_that_cannot_verify_the_api_servers_new_serving_cert_goes_not_ready() {
    let s = Scenario::start(ScenarioOptions::new(Profile::Ocp416))
        .await
        .unwrap();
    let marks: Vec<_> = futures::future::try_join_all(s.nodes.iter().map(|n| n.journal_mark()))
        .await
        .unwrap();
    s.rotate_api_serving_cert().unwrap();
    s.advance(time::Duration::minutes(1)).await.unwrap();
    let now = rfc3339(s.clock.now());
    for (node, mark) in s.nodes.iter().zip(marks) {
        assert_eq!(
            s.node_ready(node.name()).await.unwrap(),
            Some(("Unknown".into(), UNKNOWN_REASON.into())),
            "{}: no status for a minute",
            node.name()
        );
        let attempt = text(node.read(HEARTBEAT_FILE).await.unwrap());
        assert!(attempt.starts_with(&format!("{now} failed: ")), "{attempt}");
        let journal = node.journal_since(mark).await.unwrap().join("\n");
        assert!(
            journal.contains("\"Error updating node status, will retry\""),
            "the kubelet says why: {journal}"
        );
    }
    s.shutdown().await;
}
