//! Starting a scenario's cluster.

use anyhow::Context;
use cucumber::{given, then, when};
use harness::scenario::{NodeBackend, Scenario, ScenarioOptions};
use harness::world::ConformanceWorld;
use std::collections::BTreeSet;

async fn start(world: &mut ConformanceWorld, state: &str, workers: usize) -> anyhow::Result<()> {
    let mut options = ScenarioOptions::new(world.profile);
    options.starting_state = state.to_string();
    options.nodes = vec![("worker".to_string(), workers)];
    start_with(world, options).await
}

async fn start_with(world: &mut ConformanceWorld, mut options: ScenarioOptions) -> anyhow::Result<()> {
    options.agent = world.agent.clone();
    // Light nodes are asked for by the step itself, whatever the run's node kind.
    if options.backend != NodeBackend::Light {
        options.backend = world.backend.clone();
    }
    options.deadline = world.deadline;
    options.timeline = world.timeline;
    options.nudge_first_sync = world.nudge_first_sync;
    options.controller = world.controller.clone();
    options.server = world.server.clone();
    options.endpoint = world.endpoint.clone();
    let scenario = Scenario::start(options).await?;
    for node in &scenario.nodes {
        record_node_start(world, &scenario, node.as_ref()).await?;
    }
    world.replaced_before_start = replaced_before_start(world, &scenario).await?;
    // Every signer's and target's certificate as the cluster started, for "has (not) rotated".
    for (name, namespace) in scenario.catalogue_certificates() {
        let cert = scenario.certificate(&namespace, &name).await?;
        world.signers_at_start.insert(name, cert);
    }
    world.scenario = Some(scenario);
    Ok(())
}

/// The rendered configs that no node ran and no pool targeted when the cluster was up: ones the
/// controller made and replaced on its way up. Upstream's render controller renders a pool that
/// has no config yet at once, without waiting for its sub-controllers (release-4.14/4.16
/// render_controller.go:442-447, release-4.12 always), and again on each MachineConfig its
/// template and kubelet-config controllers write in their first seconds (each after its 5 s
/// `renderDelay`): a host slow enough to spread those writes past the delay leaves an earlier
/// render behind. A cluster that was up long ago has them too; they are not the scenario's.
async fn replaced_before_start(
    world: &ConformanceWorld,
    scenario: &Scenario,
) -> anyhow::Result<BTreeSet<String>> {
    let (mut rendered, mut targets) = (Vec::new(), BTreeSet::new());
    for pool in scenario.pool_names().await? {
        targets.insert(scenario.pool_spec(&pool).await?.configuration.name);
        rendered.extend(scenario.rendered_configs(&pool).await?);
    }
    let run: BTreeSet<String> = world.configs_at_start.values().cloned().collect();
    Ok(left_behind(&rendered, &run, &targets))
}

/// Of the `rendered` configs, those neither `run` by a node nor a pool's target.
fn left_behind(rendered: &[String], run: &BTreeSet<String>, targets: &BTreeSet<String>) -> BTreeSet<String> {
    rendered
        .iter()
        .filter(|name| !run.contains(*name) && !targets.contains(*name))
        .cloned()
        .collect()
}

/// Where a node stood once it was up: its journal position, boot id and config, which the
/// steps after judge it against.
async fn record_node_start(
    world: &mut ConformanceWorld,
    scenario: &Scenario,
    node: &dyn harness::node::Node,
) -> anyhow::Result<()> {
    let name = node.name().to_string();
    world.marks.insert(name.clone(), node.journal_mark().await?);
    world.boot_ids.insert(name.clone(), node.boot_id().await?);
    let config = scenario
        .node_annotations(&name)
        .await?
        .get(harness::mco::CURRENT_CONFIG)
        .cloned()
        .unwrap_or_default();
    world.configs_at_start.insert(name, config);
    Ok(())
}

/// A new node joins the pool, as a machine scaled into it does: it boots what the
/// machine-config server serves now (the pool's current rendered config; on 4.16 kubelet-ca.crt
/// from the ControllerConfig beside it). The step ends when its kubelet posts status and the
/// cluster and every node have caught up; every "every node" step after it includes it.
#[when(regex = r"^a (\w+) node joins the cluster$")]
async fn node_joins(world: &mut ConformanceWorld, role: String) -> anyhow::Result<()> {
    let mut scenario = world
        .scenario
        .take()
        .context("no cluster yet: start one with a Given step")?;
    let joined = scenario.join_node(&role).await;
    let recorded = match &joined {
        Ok(name) => match scenario.nodes.iter().find(|n| n.name() == name) {
            Some(node) => record_node_start(world, &scenario, node.as_ref()).await,
            None => Err(anyhow::anyhow!("{name} joined but is not among the nodes")),
        },
        Err(_) => Ok(()),
    };
    world.scenario = Some(scenario);
    joined?;
    recorded
}

/// A freshly installed cluster (every signer new) with that many worker nodes.
#[given(expr = "a fresh cluster with {int} worker node(s)")]
async fn fresh_cluster(world: &mut ConformanceWorld, workers: usize) -> anyhow::Result<()> {
    start(world, "fresh-install", workers).await
}

/// A freshly installed cluster with that many light worker nodes: the reference daemon's
/// logic and each node's own files and journal in this process, with no connection of their
/// own, for thousands of nodes (`harness/src/node/light.rs` lists what they cannot show: no
/// kubelet TLS, status posted under a shared identity, the reference daemon only).
#[given(expr = "a fresh cluster with {int} light worker node(s)")]
async fn fresh_light_cluster(world: &mut ConformanceWorld, workers: usize) -> anyhow::Result<()> {
    let mut options = ScenarioOptions::new(world.profile);
    options.nodes = vec![("worker".to_string(), workers)];
    options.backend = NodeBackend::Light;
    start_with(world, options).await
}

/// A freshly installed cluster whose bootstrap node has not handed over yet
/// (`kube-system/bootstrap` is missing): its nodes run the configs the bootstrap MCO rendered.
/// Its certificates are those of the starting state `bootstrap-hand-over`: the installer's made
/// 850 s before the operators' first ones, as a real install's are.
#[given(expr = "a cluster installed from its bootstrap node with {int} worker node(s)")]
async fn bootstrap_cluster(world: &mut ConformanceWorld, workers: usize) -> anyhow::Result<()> {
    let mut options = ScenarioOptions::new(world.profile);
    options.starting_state = "bootstrap-hand-over".to_string();
    options.nodes = vec![("worker".to_string(), workers)];
    options.bootstrap_complete = false;
    start_with(world, options).await
}

/// A cluster installed on the release before and upgraded into this one: since install the
/// kube-apiserver operator made a localhost-recovery serving signer in the cluster
/// (`openshift-kube-apiserver-operator_localhost-recovery-serving-signer@<unix>`), which the
/// serving CA bundle holds and the nodes' kubeconfigs, made at install, lack; and no machine-config
/// operator of this release has written `kubeconfig-data` yet. "The added CA" of later steps is
/// that signer; the journal steps read each node's journal from its first boot, as the daemon's
/// first sync after the upgrade comes while the nodes start.
#[given(
    expr = "a cluster upgraded into this release with {int} worker node(s), before its operator wrote kubeconfig-data"
)]
async fn upgraded_cluster(world: &mut ConformanceWorld, workers: usize) -> anyhow::Result<()> {
    let mut options = ScenarioOptions::new(world.profile);
    options.nodes = vec![("worker".to_string(), workers)];
    // Made by KAS-O a month before the scenario begins, as library-go names a signer.
    let made = harness::pki::SIMULATION_EPOCH.unix_timestamp() - 30 * 24 * 3600;
    options.upgraded_with_serving_signer = Some(format!(
        "openshift-kube-apiserver-operator_localhost-recovery-serving-signer@{made}"
    ));
    start_with(world, options).await?;
    world.added_serving_ca = world.cluster()?.upgraded_serving_ca();
    for mark in world.marks.values_mut() {
        *mark = harness::node::JournalMark(0);
    }
    Ok(())
}

/// The bootstrap node hands over (`kube-system/bootstrap` appears); the step ends when the
/// cluster and the nodes have followed.
#[when("the bootstrap node hands over")]
async fn bootstrap_hands_over(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    world.cluster()?.complete_bootstrap().await?;
    Ok(())
}

/// Every node runs the rendered config the bootstrap MCO made for its pool, that config exists
/// in the cluster, and the pool targets it: the in-cluster controller rendered the same name.
#[then("every node runs the bootstrap rendered config")]
async fn runs_bootstrap_config(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let pool = "worker";
    let bootstrap = c
        .bootstrap_rendered
        .get(pool)
        .context("this cluster did not start from a bootstrap node")?;
    let rendered = c.rendered_configs(pool).await?;
    anyhow::ensure!(
        rendered.contains(bootstrap),
        "the cluster has no {bootstrap} (the bootstrap render); it has {rendered:?}"
    );
    let target = c.pool_spec(pool).await?.configuration.name;
    anyhow::ensure!(
        target == *bootstrap,
        "pool {pool} targets {target}, not the bootstrap render {bootstrap}"
    );
    for node in &c.nodes {
        let current = c
            .node_annotations(node.name())
            .await?
            .get(harness::mco::CURRENT_CONFIG)
            .cloned();
        anyhow::ensure!(
            current.as_deref() == Some(bootstrap.as_str()),
            "{} runs {current:?}, not the bootstrap render {bootstrap}",
            node.name()
        );
    }
    Ok(())
}

/// A cluster whose certificates are as old as a state of fixtures/starting-states.yaml says.
#[given(expr = "a cluster in the starting state {string} with {int} worker node(s)")]
async fn aged_cluster(world: &mut ConformanceWorld, state: String, workers: usize) -> anyhow::Result<()> {
    start(world, &state, workers).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_config_left_behind_is_one_no_node_ran_and_no_pool_targets() {
        let rendered: Vec<String> = [
            "rendered-worker-a",
            "rendered-worker-b",
            "rendered-master-c",
            "rendered-worker-d",
        ]
        .map(String::from)
        .to_vec();
        // Nodes run a and c; the worker pool targets d (a paused pool's newer config, say).
        let left = left_behind(
            &rendered,
            &set(&["rendered-worker-a", "rendered-master-c"]),
            &set(&["rendered-worker-d", "rendered-master-c"]),
        );
        assert_eq!(left, set(&["rendered-worker-b"]));
        // A cluster with one config per pool leaves nothing behind.
        assert!(
            left_behind(
                &rendered[..1],
                &set(&["rendered-worker-a"]),
                &set(&["rendered-worker-a"])
            )
            .is_empty()
        );
        // A bootstrap config the nodes still run beside the in-cluster target stays counted.
        let both: Vec<String> = vec!["rendered-worker-boot".into(), "rendered-worker-new".into()];
        assert!(
            left_behind(
                &both,
                &set(&["rendered-worker-boot"]),
                &set(&["rendered-worker-new"])
            )
            .is_empty()
        );
    }
}
