//! A node's syncs recorded under strace and every state a power loss can leave of them
//! (`crate::node::power_loss` has the persistence model): the agent is stopped, the first change
//! made, and the agent started under `strace -f -y -x -s <large>` tracing its file-changing
//! calls with the bytes they wrote; each later change is made while the traced agent runs (the
//! sync its watch starts). Once the node converged on the last, the record is read into
//! operations, the model enumerates the states, and each is materialised on a copy of the
//! watched files and read back. What each state left is recorded here; the steps judge it.

use super::crash::{AfterStart, TracedNode};
use super::*;
use crate::node::crash::TraceRun;
use crate::node::power_loss::{self, Record, State};

/// The states a power loss can leave of one node's recorded syncs.
#[derive(Debug, Clone)]
pub struct PowerLossReport {
    pub node: String,
    /// The recorded syncs, in order, each with the files before it, once it converged, and what
    /// its change asked; the record ends with the last (or the first that did not converge).
    pub runs: Vec<CrashRun>,
    /// The record read into operations (`None` when the node did not converge).
    pub record: Option<Record>,
    /// Each state, and the index of what it left in `views`.
    pub states: Vec<(State, usize)>,
    /// The watched files (node paths) as the states left them, each distinct view once.
    pub views: Vec<Files>,
    /// The watched files with every recorded call persisted.
    pub end: Files,
    /// Wall time spent enumerating and materialising the states.
    pub took: Duration,
}

impl PowerLossReport {
    /// Where the power went and what was lost, for a finding.
    pub fn describe(&self, state: &State) -> String {
        let Some(record) = &self.record else {
            return String::new();
        };
        let after = match state.at {
            0 => "before the record's first call".to_string(),
            n => format!("after `{}`", short(&record.ops[n - 1].line)),
        };
        let (lost, zeroed) = record.lost(state);
        let list = |l: &[&str]| {
            l.iter()
                .map(|line| format!("`{}`", short(line)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = format!("the power went {after}");
        if !lost.is_empty() {
            out.push_str(&format!("; lost: {}", list(&lost)));
        }
        if !zeroed.is_empty() {
            out.push_str(&format!("; left zero-filled: {}", list(&zeroed)));
        }
        out
    }
}

impl Scenario {
    /// Record `plan.node`'s syncs of `syncs` forced rotations and materialise every state a
    /// power loss can leave of them.
    pub async fn power_loss_states(
        &self,
        mut plan: CrashPlan,
        syncs: usize,
    ) -> Result<PowerLossReport, ScenarioError> {
        let traced = self.traced_node(&mut plan, "the power-loss record").await?;
        let node_err = |message: String| plan.node_error(message);
        let traces = traced.trace_dir("mco-power-loss-").map_err(node_err)?;
        let recorded = TraceRun {
            trace: traces.path("record"),
            paths: Vec::new(),
            syscalls: power_loss::recorded_syscalls(),
            kill_at: None,
            data: true,
        };
        let runs = self
            .recorded_syncs(&traced, &plan, &recorded, syncs.max(1))
            .await?;
        let mut report = PowerLossReport {
            node: plan.node.clone(),
            runs,
            record: None,
            states: Vec::new(),
            views: Vec::new(),
            end: Files::new(),
            took: Duration::ZERO,
        };
        if report.runs.iter().any(|r| r.after.is_err()) {
            return Ok(report);
        }
        let calls = traces.read(&recorded.trace)?;
        let root = traced.root();
        let host = |p: &str| root.join(p.trim_start_matches('/')).display().to_string();
        let to_node: BTreeMap<String, String> = plan.watched.iter().map(|p| (host(p), p.clone())).collect();
        let initial: BTreeMap<String, Option<FileState>> = report.runs[0]
            .before
            .iter()
            .map(|(p, s)| (host(p), s.clone()))
            .collect();
        let creator = match traced.node.stat("/").await {
            Ok(Some(stat)) => (stat.uid, stat.gid),
            _ => (0, 0),
        };
        let record = power_loss::record(&calls, &initial, creator).map_err(node_err)?;
        let scratch = traces.scratch("states");
        let started = std::time::Instant::now();
        // Materialising is file system work: off the runtime's threads.
        let done = tokio::task::spawn_blocking(move || materialise(record, &scratch, &to_node))
            .await
            .map_err(|e| node_err(format!("the power-loss states: {e}")))?
            .map_err(node_err)?;
        report.took = started.elapsed();
        report.record = Some(done.record);
        report.states = done.states;
        report.views = done.views;
        report.end = done.end;
        Ok(report)
    }

    /// One record of `syncs` syncs (at least one): the first of a change made while the agent is
    /// stopped, the agent then started under strace; each later one of a change made while the
    /// traced agent runs, a minute on. The runs end early at a node that does not converge. The
    /// record is whole once the agent is stopped at the end; it then runs again untraced.
    async fn recorded_syncs(
        &self,
        traced: &TracedNode<'_>,
        plan: &CrashPlan,
        recorded: &TraceRun,
        syncs: usize,
    ) -> Result<Vec<CrashRun>, ScenarioError> {
        let node = traced.node;
        let mut seen = self.change_while_stopped(node, plan).await?;
        let launch = traced.arm(traced.wrapper(recorded)).await?;
        self.agent_unit(node, "start").await?;
        let mut runs = Vec::new();
        loop {
            let expected = (plan.expect)(&seen).map_err(|message| plan.node_error(message))?;
            let after_start = if runs.is_empty() {
                AfterStart::Yes
            } else {
                AfterStart::No
            };
            seen.after = self.converged_state(node, plan, &expected, after_start).await?;
            if seen.after.is_ok() {
                seen.controller_config_after = Some(self.controller_config_now().await?);
            }
            let stuck = seen.after.is_err();
            runs.push(seen);
            if stuck || runs.len() >= syncs {
                break;
            }
            self.advance(time::Duration::minutes(1)).await?;
            let before = self.watched_files(node, &plan.watched).await?;
            seen = self.change(plan, before).await?;
        }
        launch.finish().await;
        self.agent_unit(node, "stop").await?;
        self.agent_unit(node, "start").await?;
        Ok(runs)
    }
}

/// Every state a power loss can leave of a record, materialised and read back by node path.
struct Materialised {
    record: Record,
    /// Each state, and the index of what it left in `views`.
    states: Vec<(State, usize)>,
    views: Vec<Files>,
    /// What every recorded call persisted leaves.
    end: Files,
}

/// Enumerate the states of `record` and materialise each under `scratch`; `to_node` maps the
/// watched files' host paths to their node paths. File system work: run it off the runtime.
fn materialise(
    record: Record,
    scratch: &Path,
    to_node: &BTreeMap<String, String>,
) -> Result<Materialised, String> {
    let by_node = |files: BTreeMap<String, Option<FileState>>| -> Files {
        files
            .into_iter()
            .filter_map(|(host, state)| to_node.get(&host).map(|p| (p.clone(), state)))
            .collect()
    };
    let states = power_loss::states(&record, power_loss::STATE_BOUND)?;
    let mut views: Vec<Files> = Vec::new();
    let mut index: std::collections::HashMap<Files, usize> = Default::default();
    let mut out = Vec::with_capacity(states.len());
    for state in states {
        let view = by_node(record.materialise(&state, scratch).map_err(|e| e.to_string())?);
        let i = *index.entry(view.clone()).or_insert_with(|| {
            views.push(view);
            views.len() - 1
        });
        out.push((state, i));
    }
    let end = by_node(
        record
            .materialise(&record.whole(), scratch)
            .map_err(|e| e.to_string())?,
    );
    Ok(Materialised {
        record,
        states: out,
        views,
        end,
    })
}

/// strace's line cut to a readable length (a write's bytes are printed whole).
fn short(line: &str) -> String {
    const MAX: usize = 160;
    match line.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}
