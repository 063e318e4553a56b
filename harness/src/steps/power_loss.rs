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
    record_power_losses(world, &signer, 1).await
}

/// The same over one record of the agent's syncs of several forced rotations, a minute apart:
/// the first synced as the agent starts, each later one as the running agent sees it. A power
/// loss late in the record may also undo what the earlier syncs left unsynced.
#[when(
    expr = "the node loses power at each point of the agent's syncs of {int} forced rotations of the {signer}"
)]
async fn loses_power_over_syncs(
    world: &mut ConformanceWorld,
    syncs: usize,
    signer: SignerName,
) -> anyhow::Result<()> {
    ensure!(syncs >= 1, "at least one forced rotation is needed for a record");
    record_power_losses(world, &signer, syncs).await
}

async fn record_power_losses(
    world: &mut ConformanceWorld,
    signer: &SignerName,
    syncs: usize,
) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    for plan in plans(world, signer).await? {
        let report = world.cluster()?.power_loss_states(plan, syncs).await?;
        progress(world, &report.node, &summary(&report));
        reports.push(report);
    }
    world.power_losses = reports;
    Ok(())
}

/// In every state a power loss can leave, every file the kubelet or CRI-O reads is a version it
/// had whole: as before the record, or as one of the recorded syncs should leave it, with the
/// mode and owner that go with it; and the record replayed whole is what the node had once it
/// synced the last change (the record missed nothing).
#[then("every file the kubelet and CRI-O read is whole in every state a power loss can leave")]
async fn whole_after_power_loss(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let root = root_owner(world).await?;
    for report in power_losses(world)? {
        let (Some(first), Some(last)) = (report.runs.first(), report.runs.last()) else {
            bail!("{}: no sync was recorded", report.node);
        };
        let (after, _) = last
            .after
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{}: a recorded sync did not converge: {e}", report.node))?;
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
        // Each sync's files, from the API objects it read.
        let mut expected = Vec::new();
        for run in &report.runs {
            expected.push(expected_files(run, root)?);
        }
        for (state, view) in &report.states {
            for (path, seen) in &report.views[*view] {
                let old = first.before.get(path).cloned().flatten();
                let whole = std::iter::once(&old)
                    .chain(expected.iter().filter_map(|files| files.get(path)))
                    .any(|version| version == seen);
                if whole {
                    continue;
                }
                let new = expected
                    .last()
                    .and_then(|files| files.get(path))
                    .cloned()
                    .flatten();
                let why = not_whole(seen.as_ref(), old.as_ref(), new.as_ref())
                    .unwrap_or_default()
                    .replace("at the crash", "after the power loss");
                let between = match report.runs.len() {
                    1 => String::new(),
                    n => format!(" (nor what any of the {} syncs between left)", n - 1),
                };
                bail!(
                    "{}: {path} {why}{between}\n{}; {}",
                    report.node,
                    report.describe(state),
                    summary(report)
                );
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
    let watched = report.runs.first().map(|r| r.before.len()).unwrap_or_default();
    format!(
        "{} crash state(s) from {calls} recorded file system calls of {} sync(s) ({relevant} can change one of the {watched} watched files), {} distinct view(s) of them, materialised in {:.1} s",
        report.states.len(),
        report.runs.len(),
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
