//! Power loss: the agent's sync of a change recorded under strace, and every state a power loss
//! can leave of it under the persistence model (`harness::node::power_loss`: unsynced data may
//! be lost or zero-filled, a rename not followed by an fsync of its directory may be lost or
//! kept), each materialised on a copy of the node's files and judged here as a crash is
//! (`steps::crash`): every file the kubelet and CRI-O read is the old file or the new one, whole,
//! with its mode and owner. The new files are computed from the API objects the run read, never
//! with the reference daemon's code.
//!
//! Upstream's writer passes: release-4.16 `pkg/daemon/file_writers.go` `writeFileAtomically`
//! (renameio's pattern) fsyncs the temporary file before the rename and not the directory, so a
//! power loss leaves the old file (the rename lost: stale but whole) or the new one.

use super::crash::{describe, expected_files, not_whole, plans, progress, root_owner};
use super::params::SignerName;
use anyhow::{bail, ensure};
use cucumber::{then, when};
use harness::scenario::PowerLossReport;
use harness::world::ConformanceWorld;

/// The agent's sync of a new forced rotation of the signer is recorded under strace (every
/// file-changing call, with the bytes it wrote), and every state a power loss at any point of
/// it can leave is materialised on a copy of the node's files for the steps after. Needs
/// `strace` and embedded nodes; the reference daemon runs as its binary for this.
#[when(expr = "the node loses power at each point of the agent's sync of a forced rotation of the {signer}")]
async fn loses_power(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    for plan in plans(world, &signer).await? {
        let report = world.cluster()?.power_loss_states(plan).await?;
        progress(world, &report.node, &summary(&report));
        reports.push(report);
    }
    world.power_losses = reports;
    Ok(())
}

/// In every state a power loss can leave, every file the kubelet or CRI-O reads is the old file
/// or the new one, whole, with the mode and owner that go with it; and the record replayed whole
/// is what the node had once it synced (the record missed nothing).
#[then("every file the kubelet and CRI-O read is whole in every state a power loss can leave")]
async fn whole_after_power_loss(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let root = root_owner(world).await?;
    for report in power_losses(world)? {
        let (after, _) = report
            .run
            .after
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{}: the recorded sync did not converge: {e}", report.node))?;
        for (path, seen) in &report.end {
            let have = after.get(path).cloned().flatten();
            ensure!(
                *seen == have,
                "{}: the record replayed whole leaves {path} {}, but the node has it {}: the record missed a call that wrote it",
                report.node,
                describe(seen.as_ref()),
                describe(have.as_ref())
            );
        }
        let expected = expected_files(&report.run, root)?;
        for (state, view) in &report.states {
            for (path, seen) in &report.views[*view] {
                let old = report.run.before.get(path).cloned().flatten();
                let new = expected.get(path).cloned().flatten();
                if let Some(why) = not_whole(seen.as_ref(), old.as_ref(), new.as_ref()) {
                    let why = why.replace("at the crash", "after the power loss");
                    bail!(
                        "{}: {path} {why}\n{}; {}",
                        report.node,
                        report.describe(state),
                        summary(report)
                    );
                }
            }
        }
    }
    Ok(())
}

/// How many states a power loss can leave were judged, over every node: the model's count for
/// the recorded syncs, never padded (a record that saw no write of a watched file has one).
#[then(expr = "at least {int} crash states were judged")]
async fn states_judged(world: &mut ConformanceWorld, want: usize) -> anyhow::Result<()> {
    let judged: usize = power_losses(world)?.iter().map(|r| r.states.len()).sum();
    ensure!(
        judged >= want,
        "{judged} crash states were judged, fewer than {want}: {}",
        power_losses(world)?
            .iter()
            .map(|r| format!("{}: {}", r.node, summary(r)))
            .collect::<Vec<_>>()
            .join("; ")
    );
    Ok(())
}

fn summary(report: &PowerLossReport) -> String {
    let (calls, relevant) = report.record.as_ref().map(|r| r.counts()).unwrap_or((0, 0));
    format!(
        "{} crash state(s) from {calls} recorded file system calls ({relevant} can change one of the {} watched files), {} distinct view(s) of them, materialised in {:.1} s",
        report.states.len(),
        report.run.before.len(),
        report.views.len(),
        report.took.as_secs_f64()
    )
}

fn power_losses(world: &ConformanceWorld) -> anyhow::Result<&[PowerLossReport]> {
    ensure!(
        !world.power_losses.is_empty(),
        "no power-loss states to judge: put `When the node loses power at each point of the agent's sync …` first"
    );
    Ok(&world.power_losses)
}
