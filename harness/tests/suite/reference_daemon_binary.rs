//! `mco-reference-daemon` as a process on embedded nodes, through the agent contract only:
//! the environment, `systemctl` on its PATH (the `mco-node-tools` shim, answered by the
//! node's service manager), and its output in the journal. The same rotation reaches the nodes
//! as with the in-process daemon.

use harness::Profile;
use harness::cluster::mcc::machine_config_pools;
use harness::mco::{CURRENT_CONFIG, KUBELET_CA_PATH};
use harness::scenario::{AgentKind, Scenario, ScenarioOptions};
use k8s_openapi::api::core::v1::Node as NodeObject;
use kube::api::Api;
use std::path::PathBuf;

fn options(profile: Profile) -> ScenarioOptions {
    let mut options = ScenarioOptions::new(profile);
    options.agent = AgentKind::Binary {
        path: PathBuf::from(env!("CARGO_BIN_EXE_mco-reference-daemon")),
        args: vec![],
        node_tools: PathBuf::from(env!("CARGO_BIN_EXE_mco-node-tools")),
    };
    options
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_4_16_the_daemon_process_writes_the_client_ca() {
    let s = Scenario::start(options(Profile::Ocp416)).await.unwrap();
    s.force_rotation(
        "openshift-kube-apiserver-operator",
        "kube-apiserver-to-kubelet-signer",
    )
    .await
    .unwrap();
    let expected = s
        .bundle("openshift-config-managed", "kube-apiserver-client-ca")
        .await
        .unwrap();
    for node in &s.nodes {
        let on_disk = String::from_utf8(node.read(KUBELET_CA_PATH).await.unwrap()).unwrap();
        assert_eq!(on_disk, expected, "{}", node.name());
        let journal = node
            .journal_since(harness::node::JournalMark(0))
            .await
            .unwrap()
            .join("\n");
        assert!(
            journal.contains("machine-config-daemon[")
                && journal.contains("Certificate was synced from controllerconfig resourceVersion"),
            "the process's output is in the journal under the unit: {journal}"
        );
    }
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_4_12_the_daemon_process_applies_the_rendered_config_through_the_node_tools() {
    let s = Scenario::start(options(Profile::Ocp412)).await.unwrap();
    let marks: Vec<_> = futures::future::try_join_all(s.nodes.iter().map(|n| n.journal_mark()))
        .await
        .unwrap();
    s.force_rotation(
        "openshift-kube-apiserver-operator",
        "kube-apiserver-to-kubelet-signer",
    )
    .await
    .unwrap();
    let pool = machine_config_pools(&s.admin).get("worker").await.unwrap();
    let target = pool.data["spec"]["configuration"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    for (node, mark) in s.nodes.iter().zip(marks) {
        let object = Api::<NodeObject>::all(s.admin.clone())
            .get(node.name())
            .await
            .unwrap();
        assert_eq!(object.metadata.annotations.unwrap()[CURRENT_CONFIG], target);
        let journal = node.journal_since(mark).await.unwrap().join("\n");
        assert!(
            journal.contains("systemd[1]: Reloading.") && journal.contains("Enabled systemd units"),
            "`systemctl enable` reached the node's service manager: {journal}"
        );
        assert!(journal.contains(&format!("Node has Desired Config {target}, skipping reboot")));
    }
    s.shutdown().await;
}

#[test]
fn without_the_contracts_environment_it_says_what_is_missing() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mco-reference-daemon"))
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "mco-reference-daemon: KUBECONFIG is not set"
    );
}

#[test]
fn the_node_tools_outside_a_node_say_which_socket_they_could_not_reach() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mco-node-tools"))
        .arg("is-active")
        .env_clear()
        .env("MCO_NODE_SOCKET", "/nonexistent/node.sock")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("systemctl: cannot reach the node at /nonexistent/node.sock"),
        "{stderr}"
    );
}
