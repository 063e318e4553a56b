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
    /// The ControllerConfig's spec and resourceVersion once the node converged: a later
    /// resourceVersion than the change's when only its metadata moved since (the first-sync
    /// nudge's annotation).
    pub controller_config_after: Option<(ControllerConfigSpec, String)>,
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

/// Whether the sync waited for is an agent's first after its (re)start. A started agent's first
/// sync is held to no sync bound, as at the start of a scenario (`await_first_sync`, with the
/// first-sync nudge when the run asks for it): upstream's 4.16 daemon requeues a ControllerConfig
/// that comes before it has read its Node for a minute (release-4.16 certificate_writer.go:30,
/// 113-116), and a crashed agent is restarted as its pod is. A running agent's sync of a change
/// is held to the sync bound (`converge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterStart {
    Yes,
    No,
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

/// A node whose agent the harness runs under strace.
pub(super) struct TracedNode<'a> {
    pub(super) node: &'a dyn Node,
    tracer: Tracer<'a>,
}

/// Where the agent runs, and so how strace wraps it.
enum Tracer<'a> {
    /// An embedded node's agent: a process of this host, under this host's strace.
    Host {
        embedded: &'a EmbeddedNode,
        strace: PathBuf,
    },
    /// A container node's agent: a process of the container, under the image's strace (the
    /// host's, copied in), its start armed over the init's control socket.
    Container(&'a crate::node::container::ContainerNode),
}

/// Where a container node's image has strace (`crate::node::image`: the host's, in `/usr/bin`).
const IMAGE_STRACE: &str = "/usr/bin/strace";

/// A directory for strace's output: as strace names it, and as this host reads it.
pub(super) struct TraceDir {
    host: tempfile::TempDir,
    seen_as: PathBuf,
}

impl TraceDir {
    /// The path strace writes `name` to.
    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.seen_as.join(name)
    }

    /// A directory of this host's for work of its own (materialising states).
    pub(super) fn scratch(&self, name: &str) -> PathBuf {
        self.host.path().join(name)
    }

    /// The calls of a trace strace wrote to `trace` (a path of this directory's).
    pub(super) fn read(&self, trace: &Path) -> Result<Vec<crash::Call>, ScenarioError> {
        let relative = trace.strip_prefix(&self.seen_as).unwrap_or(trace);
        read_trace(&self.host.path().join(relative))
    }
}

/// The agent's next start armed under a wrapper: how it ended, and the end of the arming.
pub(super) struct Launch<'a> {
    tracer: &'a Tracer<'a>,
    /// An embedded node's: the far ends of the launch.
    ended: Option<tokio::sync::oneshot::Receiver<String>>,
    resume: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Launch<'_> {
    /// How the wrapped agent ended, as its service manager saw it; `None` when it ended
    /// otherwise (stopped) or the node could not say. Safe to drop unfinished and ask again.
    pub(super) async fn ended(&mut self) -> Option<String> {
        match self.tracer {
            Tracer::Host { .. } => match self.ended.as_mut() {
                Some(ended) => ended.await.ok(),
                None => None,
            },
            Tracer::Container(node) => loop {
                match node.agent_launch_state(LAUNCH_POLL).await {
                    Ok(crash::LaunchState::Waiting) => continue,
                    Ok(crash::LaunchState::Ended { status }) => return status,
                    Err(_) => return None,
                }
            },
        }
    }

    /// The arming over: the next start runs the agent as it is, and the service manager may
    /// restart this one.
    pub(super) async fn finish(mut self) {
        match self.tracer {
            Tracer::Host { embedded, .. } => {
                drop(embedded.take_agent_launch());
                if let Some(resume) = self.resume.take() {
                    let _ = resume.send(());
                }
            }
            Tracer::Container(node) => {
                let _ = node.end_agent_launch().await;
            }
        }
    }
}

/// How long one question about a container node's armed start waits on the node.
const LAUNCH_POLL: Duration = Duration::from_secs(5);

impl TracedNode<'_> {
    /// The node's `/` as strace's paths name it: the embedded node's root on this host, or `/`
    /// inside a container.
    pub(super) fn root(&self) -> PathBuf {
        match &self.tracer {
            Tracer::Host { embedded, .. } => embedded.root().to_path_buf(),
            Tracer::Container(_) => PathBuf::from("/"),
        }
    }

    /// A directory for strace's output that this host can read: a temporary one here, or one
    /// in the directory a container node shares with this host.
    pub(super) fn trace_dir(&self, prefix: &str) -> Result<TraceDir, String> {
        let (host_parent, seen_parent) = match &self.tracer {
            Tracer::Host { .. } => (crate::node::scratch_dir(), None),
            Tracer::Container(node) => {
                let (host, seen) = node.shared_dir();
                (host.to_path_buf(), Some(PathBuf::from(seen)))
            }
        };
        let host = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(&host_parent)
            .map_err(|e| {
                format!(
                    "a directory for strace's output in {}: {e}",
                    host_parent.display()
                )
            })?;
        let seen_as = match seen_parent {
            Some(seen) => seen.join(host.path().file_name().unwrap_or_default()),
            None => host.path().to_path_buf(),
        };
        Ok(TraceDir { host, seen_as })
    }

    /// The strace command line for `run`, before the agent's own.
    pub(super) fn wrapper(&self, run: &TraceRun) -> Vec<String> {
        match &self.tracer {
            Tracer::Host { strace, .. } => run.wrapper(strace),
            Tracer::Container(_) => run.wrapper(Path::new(IMAGE_STRACE)),
        }
    }

    /// Arm the agent's next start under `wrapper`.
    pub(super) async fn arm(&self, wrapper: Vec<String>) -> Result<Launch<'_>, ScenarioError> {
        match &self.tracer {
            Tracer::Host { embedded, .. } => {
                let (ended, ended_rx) = tokio::sync::oneshot::channel();
                let (resume, resume_rx) = tokio::sync::oneshot::channel();
                embedded.arm_agent_launch(AgentLaunch {
                    wrapper,
                    ended,
                    resume: resume_rx,
                });
                Ok(Launch {
                    tracer: &self.tracer,
                    ended: Some(ended_rx),
                    resume: Some(resume),
                })
            }
            Tracer::Container(node) => {
                node.arm_agent_launch(wrapper)
                    .await
                    .map_err(|e| ScenarioError::Node {
                        node: self.node.name().into(),
                        message: e.to_string(),
                    })?;
                Ok(Launch {
                    tracer: &self.tracer,
                    ended: None,
                    resume: None,
                })
            }
        }
    }
}

impl Scenario {
    /// The plan's node, ready for its agent to run under strace: an embedded node with strace
    /// on this host, or a container node whose image has it (`what` says what needs it); and
    /// the plan's agent process, if any, in place of an embedded node's agent, restarted and
    /// converged.
    pub(super) async fn traced_node(
        &self,
        plan: &mut CrashPlan,
        what: &str,
    ) -> Result<TracedNode<'_>, ScenarioError> {
        let node = self
            .node(&plan.node)
            .ok_or_else(|| plan.node_error("no such node in the scenario".into()))?;
        let tracer = if let Some(embedded) = node.as_embedded() {
            let strace = crash::strace().map_err(|message| plan.node_error(message))?;
            if let Some(process) = plan.process.take() {
                embedded.set_service(AGENT_UNIT, Arc::new(process));
                self.agent_unit(node, "restart").await?;
                self.converge().await?;
            }
            Tracer::Host { embedded, strace }
        } else if let Some(container) = node.as_container() {
            let in_image = node
                .stat(IMAGE_STRACE)
                .await
                .map_err(|e| plan.node_error(e.to_string()))?;
            if in_image.is_none() {
                return Err(plan.node_error(format!(
                    "{what} runs the agent under strace, and the node image has none: it takes this host's ({})",
                    crash::strace().err().unwrap_or_default()
                )));
            }
            Tracer::Container(container)
        } else {
            return Err(plan.node_error(format!(
                "{what} runs the agent under strace: it needs embedded or container nodes (a light node's agent runs in the harness's process)"
            )));
        };
        Ok(TracedNode { node, tracer })
    }

    /// Crash `plan.node`'s agent at each crash point of the sync of a forced rotation.
    pub async fn crash_each_file_change(&self, mut plan: CrashPlan) -> Result<CrashReport, ScenarioError> {
        let traced = self.traced_node(&mut plan, "crash injection").await?;
        let traces = traced.trace_dir("mco-crash-").map_err(|e| plan.node_error(e))?;
        let root = traced.root();
        let watched_host: Vec<PathBuf> = plan
            .watched
            .iter()
            .map(|p| root.join(p.trim_start_matches('/')))
            .collect();
        let filter = path_filter(&watched_host);
        let mut runs = Vec::new();
        // Counting: every file-changing call, then those naming a watched path.
        let all = TraceRun {
            trace: traces.path("count-all"),
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
        let all_calls = traces.read(&all.trace)?;
        let named = TraceRun {
            trace: traces.path("count-named"),
            paths: filter.clone(),
            ..all.clone()
        };
        runs.push(self.crash_sync(&traced, &plan, &named).await?);
        let named_calls = traces.read(&named.trace)?;
        let mut points = crash::crash_points(&named_calls, true, &[]);
        points.extend(crash::crash_points(&all_calls, false, &watched_host));
        // A node that did not converge after a crash ends the runs: what it was left in is the
        // finding, and later runs would start from it.
        for (i, point) in points.iter().enumerate() {
            if runs.iter().any(|r| r.after.is_err()) {
                break;
            }
            let trace = |attempt: usize| format!("crash-{i}-{attempt}");
            runs.extend(
                self.crash_at(&traced, &plan, point, &filter, (&traces, trace))
                    .await?,
            );
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
    /// node does not converge. `traces`: where each attempt's trace goes, by its name.
    async fn crash_at(
        &self,
        traced: &TracedNode<'_>,
        plan: &CrashPlan,
        point: &CrashPoint,
        filter: &[PathBuf],
        (traces, trace): (&TraceDir, impl Fn(usize) -> String),
    ) -> Result<Vec<CrashRun>, ScenarioError> {
        let mut runs = Vec::new();
        for attempt in 0..ATTEMPTS {
            let run = TraceRun {
                trace: traces.path(&trace(attempt)),
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
            seen.killed = crash::killed_call(&traces.read(&run.trace)?).map(|c| c.line.clone());
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
        let mut launch = traced.arm(traced.wrapper(run)).await?;
        self.agent_unit(node, "start").await?;
        let expected = (plan.expect)(&seen).map_err(|message| plan.node_error(message))?;
        // The traced agent ends at its crash point, or the node converges without it.
        let exit = tokio::select! {
            status = launch.ended() => status,
            converged = self.converged(node, &plan.watched, &expected, AfterStart::Yes) => match converged {
                Ok(()) if run.kill_at.is_some() => tokio::time::timeout(LATE_CRASH_BOUND, launch.ended())
                    .await
                    .ok()
                    .flatten(),
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
        launch.finish().await;
        // A node that did not converge once is not waited for again.
        let after = match &seen.after {
            Err(e) if !e.is_empty() => Err(e.clone()),
            _ => {
                self.converged_state(node, plan, &expected, AfterStart::Yes)
                    .await?
            }
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
        if seen.after.is_ok() {
            seen.controller_config_after = Some(self.controller_config_now().await?);
        }
        Ok(seen)
    }

    /// The ControllerConfig's spec and resourceVersion as the API server has them now.
    pub(super) async fn controller_config_now(
        &self,
    ) -> Result<(ControllerConfigSpec, String), ScenarioError> {
        Ok((
            self.controller_config_spec().await?,
            self.controller_config_resource_version().await?,
        ))
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
        let controller_config = self.controller_config_now().await?;
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
            controller_config_after: None,
        })
    }

    /// The node converged to `expected`, then its watched files and annotations; or why it did
    /// not converge.
    pub(super) async fn converged_state(
        &self,
        node: &dyn Node,
        plan: &CrashPlan,
        expected: &Files,
        after_start: AfterStart,
    ) -> Result<Result<(Files, BTreeMap<String, String>), String>, ScenarioError> {
        Ok(
            match self.converged(node, &plan.watched, expected, after_start).await {
                Ok(()) => Ok((
                    self.watched_files(node, &plan.watched).await?,
                    self.node_annotations(&plan.node).await?,
                )),
                Err(e) => Err(e.to_string()),
            },
        )
    }

    /// The cluster and nodes converged (`converge`, or after the agent's start as at the start
    /// of a scenario) and the node's watched files are what the sync should leave, waited for
    /// up to the deadline.
    async fn converged(
        &self,
        node: &dyn Node,
        watched: &[String],
        expected: &Files,
        after_start: AfterStart,
    ) -> Result<(), ScenarioError> {
        match after_start {
            AfterStart::Yes => self.await_first_sync().await?,
            AfterStart::No => self.converge().await?,
        }
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
