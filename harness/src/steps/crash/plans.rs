//! Each node's crash plan: the files watched, the signer whose forced rotation is synced, the
//! agent process strace can reach, and what each file may hold. Judging what the runs left is
//! the steps' (`steps::crash`, `steps::power_loss`).

use super::files::{expected_files, watched_files};
use anyhow::{Context, bail};
use harness::scenario::{AgentKind, CrashPlan, CrashRun};
use harness::steps::params::SignerName;
use harness::world::ConformanceWorld;

/// One plan per node for a run of the agent's sync of a forced rotation of `signer`: the files
/// the node's kubelet and CRI-O read, and what each may hold (`expected_files`, from the API
/// objects the run read). Shared by the process-kill and the power-loss steps.
pub(crate) async fn plans(world: &ConformanceWorld, signer: &SignerName) -> anyhow::Result<Vec<CrashPlan>> {
    let root = root_owner(world).await?;
    let expect: harness::scenario::Expectation =
        std::sync::Arc::new(move |run: &CrashRun| expected_files(run, root).map_err(|e| format!("{e:#}")));
    let c = world.cluster()?;
    let name = c.certificate_name(signer)?;
    let mut plans = Vec::new();
    for node in &c.nodes {
        // A container node's agent is a process of the container already, whichever it is.
        let process = match node.as_embedded() {
            Some(_) => agent_process(world)?,
            None => None,
        };
        plans.push(CrashPlan {
            node: node.name().to_string(),
            watched: watched_files(c, node.name()).await?,
            signer: (name.namespace.clone(), name.name.clone()),
            process,
            expect: expect.clone(),
        });
    }
    Ok(plans)
}

/// On an embedded node the reference daemon runs in the harness's process, where no tracer
/// reaches it: for the crash runs it runs as its binary (a mutant too); a binary agent runs as
/// it is.
pub(super) fn agent_process(
    world: &ConformanceWorld,
) -> anyhow::Result<Option<harness::node::agent_service::AgentProcess>> {
    let mutant = match &world.agent {
        AgentKind::Reference => None,
        AgentKind::Mutant(m) => Some(*m),
        AgentKind::Binary { .. } => return Ok(None),
        AgentKind::Image { image, .. } => {
            bail!("the agent image {image} runs on container nodes only")
        }
    };
    let daemon = harness::node::programs::reference_daemon()?;
    let mutant_args = mutant.map(|m| vec!["--mutant".to_string(), m.name().to_string()]);
    Ok(Some(harness::node::agent_service::AgentProcess {
        binary: daemon.path,
        args: daemon
            .args
            .into_iter()
            .chain(mutant_args.unwrap_or_default())
            .collect(),
        profile: world.profile,
        node_tools: harness::node::programs::node_tools()?,
    }))
}

/// The owner of the node's `/` (the node's root user).
pub(crate) async fn root_owner(world: &ConformanceWorld) -> anyhow::Result<(u32, u32)> {
    let c = world.cluster()?;
    let node = c.nodes.first().context("the cluster has no node")?;
    let root = node
        .stat("/")
        .await?
        .with_context(|| format!("{}: no /", node.name()))?;
    Ok((root.uid, root.gid))
}
