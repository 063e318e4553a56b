//! MachineConfigs added to a running scenario: the daemon applies them, and one it must refuse
//! ends the wait at once with the node's state and reason, not after the deadline.

use harness::Profile;
use harness::scenario::{Scenario, ScenarioError, ScenarioOptions};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreconcilable_config_fails_the_wait_with_the_nodes_reason() {
    let s = Scenario::start(ScenarioOptions::new(Profile::Ocp412))
        .await
        .unwrap();
    let err = s
        .add_machine_config("worker", json!({"fips": true}))
        .await
        .unwrap_err();
    let ScenarioError::NotConverged(message) = err else {
        panic!("{err}");
    };
    assert!(
        message.starts_with("node worker-0 is Unreconcilable (currentConfig rendered-worker-")
            && message.contains("detected change to FIPS flag; refusing to modify FIPS on a running cluster"),
        "{message}"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_the_daemon_writes_and_enables_starts_at_the_next_boot() {
    let s = Scenario::start(ScenarioOptions::new(Profile::Ocp416))
        .await
        .unwrap();
    s.add_machine_config(
        "worker",
        json!({"config": {"ignition": {"version": "3.2.0"}, "systemd": {"units": [
            {"name": "example.service", "enabled": true, "contents": "[Service]\nExecStart=/bin/true\n"}
        ]}}}),
    )
    .await
    .unwrap();
    for node in &s.nodes {
        let journal = node
            .journal_since(harness::node::JournalMark(0))
            .await
            .unwrap()
            .join("\n");
        assert!(
            journal.contains("systemd[1]: Started example.service."),
            "enabled, so it starts when the node reboots for it: {journal}"
        );
    }
    s.shutdown().await;
}

/// A daemon that asks for a reboot is stopped by it, not ended before it, as upstream's sleeps
/// until the shutdown kills it (release-4.16 pkg/daemon/update.go `reboot()`): the node's
/// journal shows the agent's unit neither failed nor ended on its own before the new boot. A
/// daemon that returned once it had asked used to fail its unit in the moment before the reboot
/// stopped it, which a loaded host let the harness's "is the agent running" check see. On 4.12
/// the update loop is the daemon's only work, so its end was the daemon's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_that_asks_for_a_reboot_is_stopped_by_it_not_ended() {
    let s = Scenario::start(ScenarioOptions::new(Profile::Ocp412))
        .await
        .unwrap();
    s.add_machine_config(
        "worker",
        json!({"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": [
            {"path": "/etc/mco-conformance/example.conf", "mode": 420, "contents": {"source": "data:,rebooted"}}
        ]}}}),
    )
    .await
    .unwrap();
    let unit = harness::node::AGENT_UNIT;
    for node in &s.nodes {
        let journal = node
            .journal_since(harness::node::JournalMark(0))
            .await
            .unwrap()
            .join("\n");
        assert!(
            journal.contains("-- Boot "),
            "the config needs a reboot: {journal}"
        );
        for ended in [
            format!("{unit}: Failed with result"),
            format!("{unit}: Deactivated successfully"),
        ] {
            assert!(!journal.contains(&ended), "{ended}: {journal}");
        }
        assert!(
            journal.contains(&format!("Stopped {unit}.")),
            "the reboot stopped the daemon: {journal}"
        );
    }
    s.shutdown().await;
}
