//! A node's sync crashed at each of its file-changing system calls in turn (`crate::node::crash`
//! has the mechanism and says where the crash points are): the sync is counted first with a
//! traced run, then for each crash point the agent is stopped, the change is made, and the
//! agent is started under strace with SIGKILL injected at that call. At the crash the node's
//! service manager holds the agent's restart while the watched files and the Node's annotations
//! are read, then restarts it as a failed pod's container is (at once), and the scenario waits
//! for the node to converge. What each run saw is recorded here; the steps judge it.
//!
//! The change is a forced signer rotation (each run a new one, as no change can be made twice):
//! every run syncs the same files, so each run's calls are those the counting runs saw.

use super::*;
use crate::node::crash::{self, AgentLaunch, CrashPoint, FILE_CHANGING, TraceRun};

/// A watched file as the node's kernel had it: contents, mode and owner.
pub use crate::node::power_loss::FileState;

/// Each watched node path and what was there (`None`: nothing).
pub type Files = BTreeMap<String, Option<FileState>>;

/// What to crash: one node's agent, the files to watch, the change that makes it sync.
pub struct CrashPlan {
    pub node: String,
    /// Node paths of the files the kubelet and CRI-O read.
    pub watched: Vec<String>,
    /// `(namespace, name)` of the signer Secret whose forced rotation each run syncs.
    pub signer: (String, String),
    /// Runs the agent as this process (the reference daemon's binary, or a mutant's) when it
    /// runs in the harness's process, where no tracer can reach it.
    pub process: Option<AgentProcess>,
    /// What the watched files hold once a run's sync is done (the steps' oracle): a node has
    /// converged when its annotations say so *and* its files are these, so an agent that reports
    /// its sync before it writes is not stopped halfway by the harness itself.
    pub expect: Expectation,
}

/// The watched files a run's sync should leave, or why they cannot be said.
pub type Expectation = Arc<dyn Fn(&CrashRun) -> Result<Files, String> + Send + Sync>;

/// One sync and what was seen of it.
#[derive(Debug, Clone)]
pub struct CrashRun {
    /// The crash point tried (`None`: a counting run, not killed).
    pub point: Option<CrashPoint>,
    /// strace's line for the call the agent was killed at; `None` when it was not killed.
    pub killed: Option<String>,
    /// How the traced run ended, as the service manager saw it.
    pub exit: Option<String>,
    pub before: Files,
    /// The watched files and the Node's annotations at the crash.
    pub at_crash: Option<(Files, BTreeMap<String, String>)>,
    /// Once the node converged after the restart: the files, the annotations, or why not.
    pub after: Result<(Files, BTreeMap<String, String>), String>,
    /// What the change asks of the node, read once the cluster side settled: the
    /// ControllerConfig's spec and resourceVersion, and the node's desiredConfig with its spec.
    pub controller_config: (ControllerConfigSpec, String),
    pub desired: Option<(String, MachineConfigSpec)>,
}

/// The crash runs of one node's sync.
#[derive(Debug, Clone)]
pub struct CrashReport {
    pub node: String,
    /// The file-changing calls of the counting sync (strace's lines).
    pub file_changes: Vec<String>,
    pub points: Vec<CrashPoint>,
    /// The two counting runs, then one run per crash point attempt.
    pub runs: Vec<CrashRun>,
}

/// How long a traced run whose node converged may still take to reach its crash point (an agent
/// that changes files after it reported its sync); past it the point was not reached.
const LATE_CRASH_BOUND: Duration = Duration::from_secs(3);

/// How many syncs a crash point is tried in before it counts as not reached (strace counts per
/// thread, so a call that ran on another thread than in the counting run is not the k-th).
const ATTEMPTS: usize = 2;

impl CrashPlan {
    /// An error about the plan's node.
    pub(super) fn node_error(&self, message: String) -> ScenarioError {
        ScenarioError::Node {
            node: self.node.clone(),
            message,
        }
    }
}

/// A node whose agent the harness runs under strace: only an embedded node's agent is a
/// process of this host.
pub(super) struct TracedNode<'a> {
    pub(super) node: &'a dyn Node,
    pub(super) embedded: &'a EmbeddedNode,
    pub(super) strace: PathBuf,
}

impl Scenario {
    /// The plan's node, ready for its agent to run under strace: strace found, the node an
    /// embedded one (`embedded_only` says why it must be), and the plan's agent process, if
    /// any, in place of the node's agent, restarted and converged.
    pub(super) async fn traced_node(
        &self,
        plan: &mut CrashPlan,
        embedded_only: &str,
    ) -> Result<TracedNode<'_>, ScenarioError> {
        let strace = crash::strace().map_err(|message| plan.node_error(message))?;
        let node = self
            .node(&plan.node)
            .ok_or_else(|| plan.node_error("no such node in the scenario".into()))?;
        let embedded = node
            .as_embedded()
            .ok_or_else(|| plan.node_error(embedded_only.into()))?;
        if let Some(process) = plan.process.take() {
            embedded.set_service(AGENT_UNIT, Arc::new(process));
            self.agent_unit(node, "restart").await?;
            self.converge().await?;
        }
        Ok(TracedNode {
            node,
            embedded,
            strace,
        })
    }

    /// Crash `plan.node`'s agent at each crash point of the sync of a forced rotation.
    pub async fn crash_each_file_change(&self, mut plan: CrashPlan) -> Result<CrashReport, ScenarioError> {
        let traced = self
            .traced_node(
                &mut plan,
                "crash injection runs the agent under strace on this host: it needs embedded nodes (container nodes are not supported yet)",
            )
            .await?;
        let traces = tempfile::Builder::new()
            .prefix("mco-crash-")
            .tempdir_in(crate::node::scratch_dir())
            .map_err(|e| plan.node_error(format!("a directory for the traces: {e}")))?;
        let root = traced.embedded.root().to_path_buf();
        let watched_host: Vec<PathBuf> = plan
            .watched
            .iter()
            .map(|p| root.join(p.trim_start_matches('/')))
            .collect();
        let filter = path_filter(&watched_host);
        let mut runs = Vec::new();
        // Counting: every file-changing call, then those naming a watched path.
        let all = TraceRun {
            trace: traces.path().join("count-all"),
            paths: Vec::new(),
            syscalls: FILE_CHANGING.iter().map(|s| s.to_string()).collect(),
            kill_at: None,
            data: false,
        };
        runs.push(self.crash_sync(&traced, &plan, &all).await?);
        if runs.iter().any(|r| r.after.is_err()) {
            return Ok(CrashReport {
                node: plan.node.clone(),
                file_changes: Vec::new(),
                points: Vec::new(),
                runs,
            });
        }
        let all_calls = read_trace(&all.trace)?;
        let named = TraceRun {
            trace: traces.path().join("count-named"),
            paths: filter.clone(),
            ..all.clone()
        };
        runs.push(self.crash_sync(&traced, &plan, &named).await?);
        let named_calls = read_trace(&named.trace)?;
        let mut points = crash::crash_points(&named_calls, true, &[]);
        points.extend(crash::crash_points(&all_calls, false, &watched_host));
        // A node that did not converge after a crash ends the runs: what it was left in is the
        // finding, and later runs would start from it.
        for (i, point) in points.iter().enumerate() {
            if runs.iter().any(|r| r.after.is_err()) {
                break;
            }
            let trace = |attempt: usize| traces.path().join(format!("crash-{i}-{attempt}"));
            runs.extend(self.crash_at(&traced, &plan, point, &filter, trace).await?);
        }
        Ok(CrashReport {
            node: plan.node.clone(),
            file_changes: all_calls
                .iter()
                .filter(|c| crash::changes_a_file(c))
                .map(|c| c.line.clone())
                .collect(),
            points,
            runs,
        })
    }

    /// The runs that try one crash point: up to `ATTEMPTS` syncs, until one reaches it or the
    /// node does not converge. `trace`: where each attempt's trace goes.
    async fn crash_at(
        &self,
        traced: &TracedNode<'_>,
        plan: &CrashPlan,
        point: &CrashPoint,
        filter: &[PathBuf],
        trace: impl Fn(usize) -> PathBuf,
    ) -> Result<Vec<CrashRun>, ScenarioError> {
        let mut runs = Vec::new();
        for attempt in 0..ATTEMPTS {
            let run = TraceRun {
                trace: trace(attempt),
                paths: if point.path_filtered {
                    filter.to_vec()
                } else {
                    Vec::new()
                },
                syscalls: vec![point.syscall.clone()],
                kill_at: Some((point.syscall.clone(), point.nth)),
                data: false,
            };
            let mut seen = self.crash_sync(traced, plan, &run).await?;
            seen.point = Some(point.clone());
            seen.killed = crash::killed_call(&read_trace(&run.trace)?).map(|c| c.line.clone());
            let (reached, stuck) = (seen.at_crash.is_some(), seen.after.is_err());
            runs.push(seen);
            if reached || stuck {
                break;
            }
        }
        Ok(runs)
    }

    /// One sync under `run`: the change made while the agent is stopped, the agent started
    /// under strace, the node looked at when the traced agent ends, then converged.
    pub(super) async fn crash_sync(
        &self,
        traced: &TracedNode<'_>,
        plan: &CrashPlan,
        run: &TraceRun,
    ) -> Result<CrashRun, ScenarioError> {
        let node = traced.node;
        let mut seen = self.change_while_stopped(node, plan).await?;
        let (ended_tx, mut ended) = tokio::sync::oneshot::channel();
        let (resume, resume_rx) = tokio::sync::oneshot::channel();
        traced.embedded.arm_agent_launch(AgentLaunch {
            wrapper: run.wrapper(&traced.strace),
            ended: ended_tx,
            resume: resume_rx,
        });
        self.agent_unit(node, "start").await?;
        let expected = (plan.expect)(&seen).map_err(|message| plan.node_error(message))?;
        // The traced agent ends at its crash point, or the node converges without it.
        let exit = tokio::select! {
            status = &mut ended => status.ok(),
            converged = self.converged(node, &plan.watched, &expected) => match converged {
                Ok(()) if run.kill_at.is_some() => tokio::time::timeout(LATE_CRASH_BOUND, &mut ended)
                    .await
                    .ok()
                    .and_then(Result::ok),
                Ok(()) => None,
                Err(e) => {
                    seen.after = Err(e.to_string());
                    None
                }
            },
        };
        let at_crash = match &exit {
            Some(_) => {
                let files = self.watched_files(node, &plan.watched).await?;
                let annotations = self.node_annotations(&plan.node).await?;
                Some((files, annotations))
            }
            None => None,
        };
        drop(traced.embedded.take_agent_launch());
        let _ = resume.send(());
        // A node that did not converge once is not waited for again.
        let after = match &seen.after {
            Err(e) if !e.is_empty() => Err(e.clone()),
            _ => self.converged_state(node, plan, &expected).await?,
        };
        if run.kill_at.is_none() {
            // The counting run's trace is whole once its agent is gone; the next run starts
            // the agent again.
            self.agent_unit(node, "stop").await?;
            self.agent_unit(node, "start").await?;
        }
        seen.exit = exit;
        seen.at_crash = at_crash;
        seen.after = after;
        Ok(seen)
    }

    /// A run's change: the agent stopped, the watched files read, the plan's signer rotated by
    /// force and the cluster side settled, and what the change then asks of the node.
    pub(super) async fn change_while_stopped(
        &self,
        node: &dyn Node,
        plan: &CrashPlan,
    ) -> Result<CrashRun, ScenarioError> {
        // A new signer needs a new minute (see `force_rotation`); the agent runs meanwhile.
        self.advance(time::Duration::minutes(1)).await?;
        self.agent_unit(node, "stop").await?;
        let before = self.watched_files(node, &plan.watched).await?;
        self.change(plan, before).await
    }

    /// The plan's signer rotated by force and the cluster side settled, and what the change then
    /// asks of the node; `before`: the watched files before it.
    pub(super) async fn change(&self, plan: &CrashPlan, before: Files) -> Result<CrashRun, ScenarioError> {
        let (namespace, signer) = &plan.signer;
        crate::cluster::force_rotation(&self.admin, namespace, signer).await?;
        self.settle().await?;
        let controller_config = (
            self.controller_config_spec().await?,
            self.controller_config_resource_version().await?,
        );
        let desired = match self.node_annotations(&plan.node).await?.get(DESIRED_CONFIG) {
            Some(name) if !name.is_empty() => Some((name.clone(), self.machine_config_spec(name).await?)),
            _ => None,
        };
        Ok(CrashRun {
            point: None,
            killed: None,
            exit: None,
            before,
            at_crash: None,
            after: Err(String::new()),
            controller_config,
            desired,
        })
    }

    /// The node converged to `expected`, then its watched files and annotations; or why it did
    /// not converge.
    pub(super) async fn converged_state(
        &self,
        node: &dyn Node,
        plan: &CrashPlan,
        expected: &Files,
    ) -> Result<Result<(Files, BTreeMap<String, String>), String>, ScenarioError> {
        Ok(match self.converged(node, &plan.watched, expected).await {
            Ok(()) => Ok((
                self.watched_files(node, &plan.watched).await?,
                self.node_annotations(&plan.node).await?,
            )),
            Err(e) => Err(e.to_string()),
        })
    }

    /// The cluster and nodes converged (`converge`) and the node's watched files are what the
    /// sync should leave, waited for up to the deadline.
    async fn converged(
        &self,
        node: &dyn Node,
        watched: &[String],
        expected: &Files,
    ) -> Result<(), ScenarioError> {
        self.converge().await?;
        eventually(self.options.deadline, || async {
            let files = self
                .watched_files(node, watched)
                .await
                .map_err(|e| e.to_string())?;
            match files
                .iter()
                .find(|(path, state)| expected.get(*path) != Some(state))
            {
                None => Ok(()),
                Some((path, _)) => Err(format!(
                    "node {}: {path} is not yet what the sync should leave",
                    node.name()
                )),
            }
        })
        .await
        .map_err(ScenarioError::NotConverged)
    }

    /// `systemctl <verb> machine-config-daemon` on the node; a failure names the node.
    pub(super) async fn agent_unit(&self, node: &dyn Node, verb: &str) -> Result<(), ScenarioError> {
        let out = node
            .systemctl(&[verb, AGENT_UNIT])
            .await
            .map_err(|e| ScenarioError::Node {
                node: node.name().into(),
                message: e.to_string(),
            })?;
        if out.exit_code != 0 {
            return Err(ScenarioError::Node {
                node: node.name().into(),
                message: format!("systemctl {verb} {AGENT_UNIT}: {}", out.stderr.trim()),
            });
        }
        Ok(())
    }

    /// The watched files as the node's kernel has them now; a failed read is an error.
    pub(super) async fn watched_files(
        &self,
        node: &dyn Node,
        paths: &[String],
    ) -> Result<Files, ScenarioError> {
        let mut out = Files::new();
        for path in paths {
            let err = |e: crate::node::NodeError| ScenarioError::Node {
                node: node.name().into(),
                message: e.to_string(),
            };
            let state = match node.stat(path).await.map_err(err)? {
                None => None,
                Some(stat) => Some(FileState {
                    contents: node.read(path).await.map_err(err)?,
                    mode: stat.mode,
                    uid: stat.uid,
                    gid: stat.gid,
                }),
            };
            out.insert(path.clone(), state);
        }
        Ok(out)
    }
}

/// strace's `-P` paths for the watched files: the files and their directories (a descriptor of
/// the directory names them).
fn path_filter(watched_host: &[PathBuf]) -> Vec<PathBuf> {
    let mut filter = watched_host.to_vec();
    for p in watched_host {
        if let Some(dir) = p.parent()
            && !filter.iter().any(|f| f == dir)
        {
            filter.push(dir.to_path_buf());
        }
    }
    filter
}

pub(super) fn read_trace(path: &Path) -> Result<Vec<crash::Call>, ScenarioError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ScenarioError::NotConverged(format!("strace's output {}: {e}", path.display())))?;
    Ok(crash::parse_trace(&text))
}
