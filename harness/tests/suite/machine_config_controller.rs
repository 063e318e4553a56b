//! The machine-config controller on both profiles: a kubelet-signer rotation renders a new
//! config on 4.12 (rolled out one node at a time, held back by a paused pool) and none on
//! 4.16; drain requests are answered.

use crate::common::Controllers;
use base64::Engine;
use harness::Profile;
use harness::cluster::mcc::{machine_config_pools, machine_configs};
use harness::cluster::operator::controller_configs;
use harness::cluster::render::file_contents;
use harness::mco::{CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN, STATE};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// A settled cluster with two worker nodes on the pool's first rendered config.
async fn cluster(profile: Profile) -> Controllers {
    let c = Controllers::start(profile, "fresh-install", true).await;
    c.settle().await;
    let target = c.pool_target("worker").await;
    let nodes: Api<Node> = Api::all(c.client.clone());
    for name in ["worker-0", "worker-1"] {
        let node = json!({"metadata": {"name": name, "labels": {"node-role.kubernetes.io/worker": ""},
            "annotations": {CURRENT_CONFIG: target, DESIRED_CONFIG: target, STATE: "Done"}}});
        nodes
            .create(&PostParams::default(), &serde_json::from_value(node).unwrap())
            .await
            .unwrap();
    }
    c.settle().await;
    c
}

impl Controllers {
    async fn pool_target(&self, pool: &str) -> String {
        let p = machine_config_pools(&self.client).get(pool).await.unwrap();
        p.data["spec"]["configuration"]["name"]
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn rendered(&self, pool: &str) -> Vec<String> {
        let prefix = format!("rendered-{pool}-");
        let all = machine_configs(&self.client)
            .list(&ListParams::default())
            .await
            .unwrap();
        all.into_iter()
            .filter_map(|m| m.metadata.name)
            .filter(|n| n.starts_with(&prefix))
            .collect()
    }

    async fn node(&self, name: &str) -> Node {
        Api::<Node>::all(self.client.clone()).get(name).await.unwrap()
    }

    async fn annotation(&self, node: &str, key: &str) -> String {
        self.node(node)
            .await
            .metadata
            .annotations
            .unwrap_or_default()
            .get(key)
            .cloned()
            .unwrap_or_default()
    }

    /// What an agent does once it has applied a config.
    async fn node_reaches(&self, node: &str, config: &str) {
        let patch = json!({"metadata": {"annotations": {CURRENT_CONFIG: config, STATE: "Done"}}});
        Api::<Node>::all(self.client.clone())
            .patch(node, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap();
    }

    /// A forced rotation an hour in, and the cluster side settled after it.
    async fn force_rotation(&self) {
        self.force_kubelet_signer_rotation().await;
        self.clock.advance(time::Duration::hours(1));
        self.settle().await;
    }

    async fn pause(&self, pool: &str, paused: bool) {
        let patch = Patch::Merge(json!({"spec": {"paused": paused}}));
        machine_config_pools(&self.client)
            .patch(pool, &PatchParams::default(), &patch)
            .await
            .unwrap();
        self.settle().await;
    }
}

#[tokio::test]
async fn on_4_12_a_rotation_renders_a_config_rolled_out_one_node_at_a_time() {
    let c = cluster(Profile::Ocp412).await;
    let first = c.pool_target("worker").await;
    assert_eq!(c.rendered("worker").await, std::slice::from_ref(&first));
    c.force_rotation().await;
    let second = c.pool_target("worker").await;
    assert_ne!(second, first, "a new rendered config for the new bundle");
    assert_eq!(c.rendered("worker").await.len(), 2);
    let mc = machine_configs(&c.client).get(&second).await.unwrap();
    let cc = controller_configs(&c.client)
        .get("machine-config-controller")
        .await
        .unwrap();
    let bundle = base64::engine::general_purpose::STANDARD
        .decode(cc.data["spec"]["kubeAPIServerServingCAData"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        file_contents(
            &harness::mco::machine_config::MachineConfigSpec::of(&mc.data).unwrap(),
            "/etc/kubernetes/kubelet-ca.crt"
        )
        .unwrap(),
        bundle,
        "the rendered file is the ControllerConfig bundle"
    );

    assert_eq!(
        c.annotation("worker-0", DESIRED_CONFIG).await,
        second,
        "maxUnavailable 1: the first node"
    );
    assert_eq!(
        c.annotation("worker-1", DESIRED_CONFIG).await,
        first,
        "the second waits"
    );
    c.node_reaches("worker-0", &second).await;
    c.settle().await;
    assert_eq!(c.annotation("worker-1", DESIRED_CONFIG).await, second);
    c.node_reaches("worker-1", &second).await;
    c.settle().await;
    let pool = machine_config_pools(&c.client).get("worker").await.unwrap();
    assert_eq!(pool.data["status"]["configuration"]["name"], second);
    assert_eq!(pool.data["status"]["updatedMachineCount"], 2);
}

#[tokio::test]
async fn on_4_12_a_paused_pool_renders_but_holds_its_nodes() {
    let c = cluster(Profile::Ocp412).await;
    let first = c.pool_target("worker").await;
    c.pause("worker", true).await;
    c.force_rotation().await;
    let second = c.pool_target("worker").await;
    assert_ne!(second, first, "rendering ignores paused");
    for node in ["worker-0", "worker-1"] {
        assert_eq!(
            c.annotation(node, DESIRED_CONFIG).await,
            first,
            "{node} held back"
        );
    }
    let pool = machine_config_pools(&c.client).get("worker").await.unwrap();
    assert_eq!(pool.data["status"]["configuration"]["name"], first);
    c.pause("worker", false).await;
    assert_eq!(
        c.annotation("worker-0", DESIRED_CONFIG).await,
        second,
        "unpaused: the rollout starts"
    );
}

#[tokio::test]
async fn on_4_16_a_rotation_renders_nothing_new() {
    let c = cluster(Profile::Ocp416).await;
    let first = c.pool_target("worker").await;
    c.force_rotation().await;
    assert_eq!(c.rendered("worker").await, std::slice::from_ref(&first));
    assert_eq!(c.annotation("worker-0", DESIRED_CONFIG).await, first);
}

#[tokio::test]
async fn drain_requests_are_answered_and_cordon() {
    let c = cluster(Profile::Ocp416).await;
    let nodes: Api<Node> = Api::all(c.client.clone());
    let ask = |value: &str| Patch::Merge(json!({"metadata": {"annotations": {DESIRED_DRAIN: value}}}));
    nodes
        .patch(
            "worker-0",
            &PatchParams::default(),
            &ask("drain-rendered-worker-x"),
        )
        .await
        .unwrap();
    c.settle().await;
    assert_eq!(
        c.annotation("worker-0", LAST_APPLIED_DRAIN).await,
        "drain-rendered-worker-x"
    );
    assert_eq!(c.node("worker-0").await.spec.unwrap().unschedulable, Some(true));
    nodes
        .patch(
            "worker-0",
            &PatchParams::default(),
            &ask("uncordon-rendered-worker-x"),
        )
        .await
        .unwrap();
    c.settle().await;
    assert_eq!(c.node("worker-0").await.spec.unwrap().unschedulable, Some(false));
}
