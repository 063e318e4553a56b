//! Running a plan: the node backend made ready (for container nodes, the node image), then one
//! cucumber run per profile (`profile_run`), each tallied into the run's [`Summary`]. A signal
//! stops the profiles not yet started; they are listed as skipped.

use super::plan::Plan;
use super::profile_run::run_profile;
use super::*;

/// The node backend for a run: for container nodes, the node image built here (with the agent
/// binary in it, if one is given) or the vendor's agent image. `Ok(Err(why))`: no Docker
/// engine, and why.
pub(super) async fn prepare_backend(config: &RunConfig) -> Result<Result<NodeBackend, String>, RunError> {
    if config.nodes == Nodes::Embedded {
        return Ok(Ok(NodeBackend::Embedded));
    }
    let agent = config.agent.clone();
    let quiet = config.quiet;
    tokio::task::spawn_blocking(move || {
        if let Some(why) = image::docker_unavailable() {
            return Ok(Err(why));
        }
        // What a run killed outright left behind goes first.
        match image::remove_orphaned_nodes() {
            Ok(removed) if !removed.is_empty() && !quiet => crate::sayln!(
                "removed {} node container(s) left by a run that was killed: {}",
                removed.len(),
                removed.join(" ")
            ),
            Ok(_) => {}
            Err(e) => return Err(RunError::Containers(e.to_string())),
        }
        let image = match &agent {
            AgentKind::Image { image, .. } => image.clone(),
            AgentKind::Reference | AgentKind::Mutant(_) | AgentKind::Binary { .. } => {
                let mut binaries =
                    image::harness_binaries().map_err(|e| RunError::Containers(e.to_string()))?;
                if let AgentKind::Binary { path, .. } = &agent {
                    binaries.push(path.clone());
                }
                let built =
                    image::ensure_node_image(&binaries).map_err(|e| RunError::Containers(e.to_string()))?;
                if !quiet {
                    crate::sayln!("node image: {} ({})", built.reference, built.how());
                }
                built.reference
            }
        };
        Ok(Ok(NodeBackend::Container { image }))
    })
    .await
    .map_err(|e| RunError::Containers(e.to_string()))?
}

/// Run every profile of the plan on `backend` (none without one), each profile's counts added
/// to a summary that starts with the plan's undefined steps and `skipped`.
pub(super) async fn execute(
    config: &RunConfig,
    plan: &Plan,
    backend: &Result<NodeBackend, String>,
    skipped: Vec<String>,
) -> Result<Summary, RunError> {
    let mut summary = Summary {
        undefined: plan.undefined.clone(),
        skipped,
        ..Summary::default()
    };
    for &profile in &config.profiles {
        let Ok(backend) = backend else { continue };
        if let Some(signal) = crate::interrupt::interrupted() {
            summary.skipped.push(format!(
                "{profile}: every scenario: the run was interrupted ({signal}) before this profile"
            ));
            continue;
        }
        let started = crate::pace::Mark::now();
        let tally = run_profile(
            config,
            profile,
            &plan.features,
            plan.tags.clone(),
            backend.clone(),
        )
        .await?;
        if !config.quiet && config.profiles.len() > 1 {
            let prefix = format!("{profile}: ");
            let took = started.elapsed();
            // The pace lateness is judged at (`crate::pace`), over the profile's run.
            crate::sayln!(
                "{profile}: {} passed, {} failed, {} skipped in {:.1} s (the host at {:.0} % of its pace)",
                tally.passed,
                tally.failed,
                summary.skipped.iter().filter(|s| s.starts_with(&prefix)).count(),
                took.wall.as_secs_f64(),
                took.pace() * 100.0
            );
        }
        summary.absorb(tally);
    }
    summary.interrupted = crate::interrupt::interrupted();
    Ok(summary)
}
