//! Starting a scenario's cluster.

use cucumber::given;
use harness::node::Node;
use harness::scenario::{Scenario, ScenarioOptions};
use harness::world::ConformanceWorld;

async fn start(world: &mut ConformanceWorld, state: &str, workers: usize) -> anyhow::Result<()> {
    let mut options = ScenarioOptions::new(world.profile);
    options.starting_state = state.to_string();
    options.nodes = vec![("worker".to_string(), workers)];
    let scenario = Scenario::start(options).await?;
    for node in &scenario.nodes {
        world
            .marks
            .insert(node.name().to_string(), node.journal_mark().await);
        world
            .boot_ids
            .insert(node.name().to_string(), node.boot_id().await);
    }
    world.signers_at_start.insert(
        "kube-apiserver-to-kubelet-signer".into(),
        scenario
            .certificate(
                "openshift-kube-apiserver-operator",
                "kube-apiserver-to-kubelet-signer",
            )
            .await?,
    );
    world.scenario = Some(scenario);
    Ok(())
}

/// A freshly installed cluster (every signer new) with that many worker nodes.
#[given(expr = "a fresh cluster with {int} worker node(s)")]
async fn fresh_cluster(world: &mut ConformanceWorld, workers: usize) -> anyhow::Result<()> {
    start(world, "fresh-install", workers).await
}

/// A cluster whose certificates are as old as a state of fixtures/starting-states.yaml says.
#[given(expr = "a cluster in the starting state {string} with {int} worker node(s)")]
async fn aged_cluster(world: &mut ConformanceWorld, state: String, workers: usize) -> anyhow::Result<()> {
    start(world, &state, workers).await
}
