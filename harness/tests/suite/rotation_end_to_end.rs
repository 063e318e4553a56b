//! A forced kube-apiserver-to-kubelet-signer rotation across the whole stack (the fake API
//! server, the reference cluster side on watches, embedded nodes with fake kubelets and the
//! reference daemon), on each profile, checked by what a user observes: node files,
//! annotations, rendered configs, the journal, and the kubelets' TLS verdicts.

use harness::Profile;
use harness::cluster::mcc::machine_config_pools;
use harness::cluster::operator::controller_configs;
use harness::cluster::render::file_contents;
use harness::mco::{KUBELET_CA_PATH, LAST_SYNCED_CONTROLLER_CONFIG};
use harness::node::kubelet::probe;
use harness::pki::{Clock, Signer};
use harness::scenario::{Scenario, ScenarioOptions};
use k8s_openapi::api::core::v1::Node as NodeObject;
use kube::api::Api;

const KUBELET_SIGNER: (&str, &str) = (
    "openshift-kube-apiserver-operator",
    "kube-apiserver-to-kubelet-signer",
);

async fn annotation(s: &Scenario, node: &str, key: &str) -> String {
    let n = Api::<NodeObject>::all(s.admin.clone()).get(node).await.unwrap();
    n.metadata
        .annotations
        .unwrap_or_default()
        .get(key)
        .cloned()
        .unwrap_or_default()
}

async fn pool_target(s: &Scenario) -> String {
    let pool = machine_config_pools(&s.admin).get("worker").await.unwrap();
    pool.data["spec"]["configuration"]["name"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Every kubelet accepts a client certificate from the current signer (what the kube-apiserver
/// presents once its certificate is re-issued).
async fn every_kubelet_accepts_the_current_signer(s: &Scenario) {
    let signer = Signer {
        cert: s.certificate(KUBELET_SIGNER.0, KUBELET_SIGNER.1).await.unwrap(),
    };
    let client = signer
        .issue_client(
            "system:kube-apiserver",
            &["kube-master"],
            s.clock.now(),
            time::Duration::days(30),
            99,
        )
        .unwrap();
    for node in &s.nodes {
        let addr = node.kubelet_endpoint().await.unwrap().expect("kubelet serving");
        probe(addr, &client.pem, &client.key_pem)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", node.name()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_4_16_the_daemon_writes_the_client_ca_with_no_new_config_and_no_reboot() {
    let s = Scenario::start(ScenarioOptions::new(Profile::Ocp416))
        .await
        .unwrap();
    let marks: Vec<_> = futures::future::try_join_all(s.nodes.iter().map(|n| n.journal_mark()))
        .await
        .unwrap();
    let boots: Vec<_> = futures::future::try_join_all(s.nodes.iter().map(|n| n.boot_id()))
        .await
        .unwrap();
    s.force_rotation(KUBELET_SIGNER.0, KUBELET_SIGNER.1)
        .await
        .unwrap();
    let expected = s
        .bundle("openshift-config-managed", "kube-apiserver-client-ca")
        .await
        .unwrap();
    let cc_rv = controller_configs(&s.admin)
        .get("machine-config-controller")
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    for (node, mark) in s.nodes.iter().zip(&marks) {
        let on_disk = String::from_utf8(node.read(KUBELET_CA_PATH).await.unwrap()).unwrap();
        assert_eq!(
            on_disk,
            expected,
            "{}: kubelet-ca.crt is kube-apiserver-client-ca",
            node.name()
        );
        assert_eq!(
            annotation(&s, node.name(), LAST_SYNCED_CONTROLLER_CONFIG).await,
            cc_rv
        );
        let journal = node.journal_since(*mark).await.unwrap().join("\n");
        assert!(
            journal.contains("machine-config-daemon[")
                && journal.contains(&format!(
                    "Certificate was synced from controllerconfig resourceVersion {cc_rv}"
                )),
            "{journal}"
        );
        assert!(
            journal.contains("Loaded a new CA Bundle and Verifier"),
            "the kubelet reloaded: {journal}"
        );
    }
    assert_eq!(
        s.rendered_configs("worker").await.unwrap().len(),
        1,
        "no new rendered config on 4.16"
    );
    let after: Vec<_> = futures::future::try_join_all(s.nodes.iter().map(|n| n.boot_id()))
        .await
        .unwrap();
    assert_eq!(after, boots, "no node rebooted");
    every_kubelet_accepts_the_current_signer(&s).await;
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_4_12_the_bundle_arrives_through_a_new_rendered_config_without_reboot() {
    let s = Scenario::start(ScenarioOptions::new(Profile::Ocp412))
        .await
        .unwrap();
    let marks: Vec<_> = futures::future::try_join_all(s.nodes.iter().map(|n| n.journal_mark()))
        .await
        .unwrap();
    let before = pool_target(&s).await;
    s.force_rotation(KUBELET_SIGNER.0, KUBELET_SIGNER.1)
        .await
        .unwrap();
    let target = pool_target(&s).await;
    assert_ne!(target, before, "a new rendered config");
    let rendered = harness::cluster::mcc::machine_configs(&s.admin)
        .get(&target)
        .await
        .unwrap();
    for (node, mark) in s.nodes.iter().zip(&marks) {
        assert_eq!(
            annotation(&s, node.name(), harness::mco::CURRENT_CONFIG).await,
            target
        );
        let journal = node.journal_since(*mark).await.unwrap().join("\n");
        assert!(journal.contains(&format!(
            "Starting update from {before} to {target}: &{{osUpdate:false kargs:false fips:false passwd:false files:true units:false kernelType:false extensions:false}}"
        )), "{journal}");
        // The daemon's own line, not the copy it hands `logger` (`root[pid]: …`).
        assert_eq!(
            journal
                .lines()
                .filter(|l| l.contains("Starting update from") && !l.contains(" root["))
                .count(),
            1,
            "one update per new config, not one per queued Node event: {journal}"
        );
        assert!(
            journal.contains("systemd[1]: Reloading."),
            "units enabled through systemctl: {journal}"
        );
        assert!(
            journal.contains(&format!("Node has Desired Config {target}, skipping reboot")),
            "{journal}"
        );
        assert!(!journal.contains("-- Boot "), "no reboot: {journal}");
        let on_disk = node.read(KUBELET_CA_PATH).await.unwrap();
        assert_eq!(
            Some(on_disk),
            file_contents(
                &harness::mco::machine_config::MachineConfigSpec::of(&rendered.data).unwrap(),
                KUBELET_CA_PATH
            )
        );
    }
    assert_eq!(
        s.rendered_configs("worker").await.unwrap().len(),
        2,
        "one more rendered config on 4.12"
    );
    every_kubelet_accepts_the_current_signer(&s).await;
    s.shutdown().await;
}
