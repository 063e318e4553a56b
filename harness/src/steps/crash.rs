//! Crash consistency: the agent killed with SIGKILL at each file-changing system call of a sync
//! (`harness::scenario::crash`, under strace), and the judgement of what each crash left. What a
//! file should hold after the sync is computed here from the API objects each run read (the
//! ControllerConfig's fields as release-4.16 `writeToDisk` writes them, or the rendered
//! MachineConfig's Ignition files on 4.12), never with the reference daemon's code; the paths
//! are upstream's, written out again.
//!
//! Upstream writes each file whole or not at all (release-4.16 `pkg/daemon/file_writers.go`
//! `writeFileAtomically`: a temporary file in the same directory, chmod, write, fsync, close,
//! rename), so after any crash a reader finds the old file or the new one, never a part.
//!
//! The steps and the reading of each run's report are here; `plans` sets up each node's runs,
//! `files` says which files are watched and what each should hold, `whole` judges a file a crash
//! left. `steps::power_loss` judges its states with the same three.

mod files;
mod plans;
mod whole;

pub(super) use files::expected_files;
use files::{ANNOTATION, carries_kubelet_ca};
pub(super) use plans::{plans, root_owner};
pub(super) use whole::{describe, not_whole};

use super::params::SignerName;
use anyhow::{bail, ensure};
use cucumber::{then, when};
use harness::scenario::{CrashReport, CrashRun};
use harness::world::ConformanceWorld;
use std::collections::BTreeMap;

/// The agent is killed with SIGKILL at each of its file-changing system calls in turn, each
/// time in the sync of a new forced rotation of the signer (counted first with a traced run),
/// and started again as its service is; what each crash left is recorded for the steps after.
/// Needs `strace` and embedded nodes; the reference daemon runs as its binary for this.
#[when(
    expr = "the agent is killed at each of its file-changing system calls as it syncs a forced rotation of the {signer}"
)]
async fn killed_at_each_call(world: &mut ConformanceWorld, signer: SignerName) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    for plan in plans(world, &signer).await? {
        let report = world.cluster()?.crash_each_file_change(plan).await?;
        progress(world, &report.node, &summary(&report));
        reports.push(report);
    }
    world.crashes = reports;
    Ok(())
}

/// A progress line for a node's crash run, when the run prints them.
pub(super) fn progress(world: &ConformanceWorld, node: &str, summary: &str) {
    if world.progress {
        println!("  ... {} {}: {node}: {summary}", world.profile, world.place);
    }
}

/// Every file the kubelet or CRI-O reads held, at every crash, the old contents or the new ones,
/// whole, with the mode and owner that go with them.
#[then("every file the kubelet and CRI-O read was whole after every crash")]
async fn whole_after_every_crash(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let root = root_owner(world).await?;
    for report in crashes(world)? {
        for (i, run) in crash_runs(report) {
            let Some((at_crash, _)) = &run.at_crash else {
                continue;
            };
            let expected = expected_files(run, root)?;
            for (path, seen) in at_crash {
                let old = run.before.get(path).cloned().flatten();
                let new = expected.get(path).cloned().flatten();
                if let Some(why) = not_whole(seen.as_ref(), old.as_ref(), new.as_ref()) {
                    bail!("{}: {path} {why}\n{}", report.node, where_(report, i, run));
                }
            }
        }
    }
    Ok(())
}

/// After every crash the node converged within one sync of its restarted agent: the new files
/// with their modes and owners, `Done` on the config it was given, and no MCO annotation lost.
#[then("the node converged after every crash")]
async fn converged_after_every_crash(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let root = root_owner(world).await?;
    for report in crashes(world)? {
        for (i, run) in report.runs.iter().enumerate() {
            let (files, annotations) = run
                .after
                .as_ref()
                .map_err(|e| anyhow::anyhow!("{}: {e}\n{}", report.node, where_(report, i, run)))?;
            let expected = expected_files(run, root)?;
            for (path, want) in &expected {
                let seen = files.get(path).cloned().flatten();
                ensure!(
                    seen == *want,
                    "{}: after the restart {path} is {}, expected {}\n{}",
                    report.node,
                    describe(seen.as_ref()),
                    describe(want.as_ref()),
                    where_(report, i, run)
                );
            }
            if let Some(why) = not_synced(run, annotations) {
                bail!(
                    "{}: after the restart {why}\n{}",
                    report.node,
                    where_(report, i, run)
                );
            }
        }
    }
    Ok(())
}

/// No crash found the node reported synced (`Done` on the new config, or the new
/// ControllerConfig's resourceVersion) while a file was not yet what the new config says.
#[then("no crash found the node reported synced before its files were written")]
async fn no_false_done(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let root = root_owner(world).await?;
    for report in crashes(world)? {
        for (i, run) in crash_runs(report) {
            let Some((files, annotations)) = &run.at_crash else {
                continue;
            };
            if not_synced(run, annotations).is_some() {
                continue;
            }
            for (path, want) in expected_files(run, root)? {
                let seen = files.get(&path).cloned().flatten();
                ensure!(
                    seen == want,
                    "{}: the node was reported synced ({}) while {path} was {}, not the new {}\n{}",
                    report.node,
                    synced_marks(annotations),
                    describe(seen.as_ref()),
                    describe(want.as_ref()),
                    where_(report, i, run)
                );
            }
        }
    }
    Ok(())
}

/// Every crash point the counting runs found was reached: the agent was killed there, in one of
/// the syncs it was tried in, and there was at least one.
#[then("every crash point was reached")]
async fn every_point_reached(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    for report in crashes(world)? {
        ensure!(
            !report.points.is_empty(),
            "{}: the sync changed no file the kubelet or CRI-O reads ({} file-changing calls in all): nothing to crash at",
            report.node,
            report.file_changes.len()
        );
        for point in &report.points {
            let reached = report
                .runs
                .iter()
                .any(|r| r.point.as_ref() == Some(point) && r.at_crash.is_some());
            ensure!(
                reached,
                "{}: the agent was never killed at {}#{} ({}), counted as `{}`; {}",
                report.node,
                point.syscall,
                point.nth,
                if point.path_filtered {
                    "among calls naming a watched file"
                } else {
                    "among all calls of that name"
                },
                point.counted,
                summary(report)
            );
        }
    }
    Ok(())
}

/// Why the annotations do not say the node synced this run's change (`None`: they do): Done,
/// on the config it was given (4.12), or with the ControllerConfig's resourceVersion synced.
fn not_synced(run: &CrashRun, annotations: &BTreeMap<String, String>) -> Option<String> {
    let get = |key: &str| annotations.get(&format!("{ANNOTATION}{key}")).map(String::as_str);
    if get("state") != Some("Done") {
        return Some(format!("the node is not Done ({})", synced_marks(annotations)));
    }
    match &run.desired {
        Some((name, spec)) if carries_kubelet_ca(spec) => (get("currentConfig") != Some(name.as_str())
            || get("desiredConfig") != Some(name.as_str()))
        .then(|| {
            format!(
                "the node does not run its new config {name} ({})",
                synced_marks(annotations)
            )
        }),
        _ => {
            let rv = &run.controller_config.1;
            // A later resourceVersion of the same spec counts: only the ControllerConfig's
            // metadata moved since the change (the first-sync nudge's annotation).
            let later = run
                .controller_config_after
                .as_ref()
                .filter(|(spec, _)| *spec == run.controller_config.0)
                .map(|(_, rv)| rv.as_str());
            let synced = get("lastSyncedControllerConfigResourceVersion");
            ((synced != Some(rv.as_str()) && (synced.is_none() || synced != later))
                || get("currentConfig").is_none()
                || get("desiredConfig").is_none())
            .then(|| {
                format!(
                    "the node has not synced ControllerConfig resourceVersion {rv} ({})",
                    synced_marks(annotations)
                )
            })
        }
    }
}

fn synced_marks(annotations: &BTreeMap<String, String>) -> String {
    [
        "state",
        "currentConfig",
        "desiredConfig",
        "lastSyncedControllerConfigResourceVersion",
    ]
    .iter()
    .map(|k| {
        format!(
            "{k}={}",
            annotations
                .get(&format!("{ANNOTATION}{k}"))
                .map(String::as_str)
                .unwrap_or("<none>")
        )
    })
    .collect::<Vec<_>>()
    .join(" ")
}

/// The runs that tried a crash point, numbered from 1 (after the two counting runs).
fn crash_runs(report: &CrashReport) -> impl Iterator<Item = (usize, &CrashRun)> {
    report.runs.iter().enumerate().filter(|(_, r)| r.point.is_some())
}

/// Which run it was, what it was killed at, and the tally.
fn where_(report: &CrashReport, index: usize, run: &CrashRun) -> String {
    let which = match &run.point {
        None => format!("in counting run {} of 2 (no crash)", index + 1),
        Some(p) => format!(
            "after the crash at {}#{} ({}), killed at `{}`",
            p.syscall,
            p.nth,
            if p.path_filtered {
                "among calls naming a watched file"
            } else {
                "among all calls of that name"
            },
            run.killed
                .as_deref()
                .unwrap_or("no call: the crash point was not reached")
        ),
    };
    format!("{which}; {}", summary(report))
}

fn summary(report: &CrashReport) -> String {
    let tried = report.runs.iter().filter(|r| r.point.is_some()).count();
    let reached = report.runs.iter().filter(|r| r.at_crash.is_some()).count();
    format!(
        "{} crash point(s) from {} file-changing calls in the sync; {tried} crash run(s), {reached} killed at their point",
        report.points.len(),
        report.file_changes.len()
    )
}

fn crashes(world: &ConformanceWorld) -> anyhow::Result<&[CrashReport]> {
    ensure!(
        !world.crashes.is_empty(),
        "no crash runs to judge: put `When the agent is killed at each of its file-changing system calls …` first"
    );
    Ok(&world.crashes)
}
