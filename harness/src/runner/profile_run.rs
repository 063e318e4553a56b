//! One cucumber run for one profile: the features handed over as linted, each scenario's
//! World, the writers (progress, JUnit, Cucumber JSON), and what each scenario leaves for the
//! summary (its timeline, sync latencies, the journals of a failure).

use super::select::{Selection, picked, select_for_agent, tags_of};
use super::*;

/// A profile's run is tallied in a [`Summary`] of its own, which the run adds to its whole
/// ([`Summary::absorb`]).
impl Summary {
    /// Count a finished scenario. `@mco-logs` checks upstream log wording, `@beyond-upstream`
    /// asks more than upstream does: part of the verdict for the reference daemon, counted apart
    /// for any other agent (`vendor`; DESIGN.md). `tags` are the scenario's with its feature's
    /// and rule's (and its Examples block's, once expanded).
    pub(super) fn count(&mut self, failed: bool, vendor: bool, tags: &[String]) {
        let apart = |tag: &str| vendor && tags.iter().any(|t| t == tag);
        match (failed, apart("mco-logs"), apart(BEYOND_UPSTREAM)) {
            (true, true, _) => self.mco_logs_failed += 1,
            (true, false, true) => self.beyond_upstream_failed += 1,
            (true, false, false) => self.failed += 1,
            (false, ..) => self.passed += 1,
        }
    }
}

/// The features of a run, parsed and linted once, handed to cucumber as they are: one cucumber
/// run per profile covers every file, so scenarios of different files run side by side and each
/// report is one document.
pub(super) struct Linted(Vec<Feature>);

impl cucumber::Parser<()> for Linted {
    type Cli = cucumber::cli::Empty;
    type Output = futures::stream::Iter<std::vec::IntoIter<cucumber::parser::Result<Feature>>>;

    fn parse(self, _: (), _: Self::Cli) -> Self::Output {
        use cucumber::feature::Ext as _;
        let cwd = std::env::current_dir().ok();
        let expanded: Vec<_> = self
            .0
            .into_iter()
            .map(|mut f| {
                // cucumber's JUnit and JSON writers cut the working directory off a feature's
                // path, then every leading `/`: an absolute path elsewhere would lose its root.
                // A path relative to the working directory survives, and still resolves.
                if let (Some(path), Some(cwd)) = (&f.path, &cwd) {
                    f.path = Some(relative_to(cwd, path));
                }
                f.expand_examples()
                    .map_err(|e| cucumber::parser::Error::ExampleExpansion(Arc::new(e)))
            })
            .collect();
        futures::stream::iter(expanded)
    }
}

/// `path` relative to the directory `base` (both absolute), with `..` where it climbs out;
/// a relative `path` is returned as it is.
pub(super) fn relative_to(base: &std::path::Path, path: &std::path::Path) -> PathBuf {
    if !path.is_absolute() || !base.is_absolute() {
        return path.to_path_buf();
    }
    let (b, p): (Vec<_>, Vec<_>) = (base.components().collect(), path.components().collect());
    let common = b.iter().zip(&p).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c);
    }
    out
}

/// Where a report goes: the path asked for (with the profile before its extension when the
/// run covers both profiles), else `<report dir>/<profile>.<default suffix>`.
pub(super) fn report_path(
    config: &RunConfig,
    asked: Option<&PathBuf>,
    profile: Profile,
    suffix: &str,
) -> PathBuf {
    match asked {
        Some(path) if config.profiles.len() == 1 => path.clone(),
        Some(path) => {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = match path.extension() {
                Some(ext) => format!("{stem}.{profile}.{}", ext.to_string_lossy()),
                None => format!("{stem}.{profile}"),
            };
            path.with_file_name(name)
        }
        None => config.report_dir.join(format!("{profile}.{suffix}")),
    }
}

/// cucumber's runner swaps the process's panic hook for a silent one while it runs (it reports
/// a step's panic itself) and puts back the hook it found when it ends. Two runs at once in one
/// process (tests at a time) interleave that: the second takes the first's silent hook, puts it
/// back last, and every later panic in the process, a test's failed assertion among them, says
/// nothing. The first run to start keeps the hook it found; the last to end puts it back.
///
/// While runs are under way the hook is silent only for a panic in a run's own future (a step's,
/// which cucumber reports): any other panic in the process, a test's assertion beside a run or a
/// task of its own, reaches the hook found before the runs, so it still says why. cucumber puts
/// its silent hook in place as its run starts; each scenario's Before hook puts this one back
/// ([`PanicHookGuard::reinstate`]).
struct PanicHookGuard;

tokio::task_local! {
    /// Set while a run's cucumber future is polled: a panic there is a step's.
    static IN_A_RUN: ();
}

/// Silent for a panic inside a run's future; `found` for any other.
fn silent_in_runs(found: Hook) -> Hook {
    Arc::new(move |info| {
        if IN_A_RUN.try_with(|_| ()).is_err() {
            found(info)
        }
    })
}

type Hook = Arc<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync>;

/// Runs under way, and the hook in place when the first of them started.
static RUNS_UNDER_WAY: Mutex<(usize, Option<Hook>)> = Mutex::new((0, None));

fn install(hook: Hook) {
    std::panic::set_hook(Box::new(move |info| hook(info)));
}

impl PanicHookGuard {
    fn enter() -> Self {
        let mut runs = RUNS_UNDER_WAY.lock().unwrap_or_else(|p| p.into_inner());
        if runs.0 == 0 && !std::thread::panicking() {
            let found: Hook = Arc::from(std::panic::take_hook());
            install(silent_in_runs(found.clone()));
            runs.1 = Some(found);
        }
        runs.0 += 1;
        PanicHookGuard
    }

    /// Put back the hook of [`PanicHookGuard`]'s runs in place of cucumber's silent one.
    fn reinstate() {
        let runs = RUNS_UNDER_WAY.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = &runs.1
            && !std::thread::panicking()
        {
            install(silent_in_runs(found.clone()));
        }
    }
}

impl Drop for PanicHookGuard {
    fn drop(&mut self) {
        let mut runs = RUNS_UNDER_WAY.lock().unwrap_or_else(|p| p.into_inner());
        runs.0 = runs.0.saturating_sub(1);
        if runs.0 == 0
            && !std::thread::panicking()
            && let Some(found) = runs.1.take()
        {
            install(found);
        }
    }
}

pub(super) async fn run_profile(
    config: &RunConfig,
    profile: Profile,
    features: &[Feature],
    tags: Option<TagFilter>,
    backend: NodeBackend,
) -> Result<Summary, RunError> {
    let _hook = PanicHookGuard::enter();
    let tally = Arc::new(Mutex::new(Summary::default()));
    let report = config.report_dir.clone();
    let create = |path: PathBuf| {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| RunError::Io(dir.to_path_buf(), e))?;
        }
        std::fs::File::create(&path).map_err(|e| RunError::Io(path, e))
    };
    let junit = create(report_path(config, config.junit.as_ref(), profile, "junit.xml"))?;
    let json = create(report_path(
        config,
        config.json.as_ref(),
        profile,
        "cucumber.json",
    ))?;
    let after_tally = tally.clone();
    let failed_dir = report.join("failed").join(profile.as_str());
    let nodes = config.nodes;
    let reference_agent = matches!(config.agent, crate::scenario::AgentKind::Reference);
    let steps = Arc::new(ConformanceWorld::collection());
    let (agent, agent_timeout, step_limit) = (config.agent.clone(), config.agent_timeout, config.step_limit);
    let nudge_first_sync = config.nudge_first_sync;
    let controller = config.controller.clone();
    let server = config.server.clone();
    let (endpoint, real_apiserver) = (config.endpoint.clone(), config.real_apiserver());
    let vendor = !matches!(agent, AgentKind::Reference);
    let quiet = config.quiet;
    let evidence: progress::Evidence = Default::default();
    let timeline = config.html.is_some() || config.report.is_some();
    let console: Box<dyn std::io::Write + Send> = if quiet {
        Box::new(std::io::sink())
    } else {
        Box::new(std::io::stdout())
    };
    {
        let filter_tags = tags.clone();
        let cucumber = ConformanceWorld::cucumber::<PathBuf>()
            .with_parser(Linted(features.to_vec()))
            .steps(watchdog::guarded_steps::<ConformanceWorld>())
            .max_concurrent_scenarios(if real_apiserver {
                1
            } else {
                config.concurrency.max(1)
            });
        let cucumber = if config.fail_fast {
            cucumber.fail_fast()
        } else {
            cucumber
        };
        let only = config.only.clone();
        let run = cucumber
            .before(move |feature, _, scenario, world| {
                PanicHookGuard::reinstate();
                let (file, line) = progress::scenario_key(feature, scenario);
                world.place = format!("{file}:{line}");
                world.progress = !quiet;
                world.timeline = timeline;
                world.profile = profile;
                world.agent = agent.clone();
                world.backend = backend.clone();
                world.deadline = agent_timeout;
                world.step_limit = step_limit;
                world.endpoint = endpoint.clone();
                world.nudge_first_sync = nudge_first_sync;
                world.controller = controller.clone();
                world.server = server.clone();
                Box::pin(async {})
            })
            .after({
                let tally = after_tally.clone();
                let failed_dir = failed_dir.clone();
                let steps = steps.clone();
                let evidence = evidence.clone();
                move |feature, rule, scenario, finished, world| {
                    // A step that matches no definition is reported "skipped" and does not end
                    // the scenario in error; it fails the scenario here (fail_on_skipped),
                    // unless the scenario is tagged @allow.skipped.
                    let allowed_skip = scenario.tags.iter().any(|t| t == "allow.skipped");
                    let backgrounds = feature
                        .background
                        .iter()
                        .chain(rule.and_then(|r| r.background.as_ref()));
                    let unmatched = backgrounds
                        .flat_map(|b| b.steps.iter())
                        .chain(scenario.steps.iter())
                        .any(|step| !matches!(steps.find(step), Ok(Some(_))));
                    let failed = match finished {
                        event::ScenarioFinished::StepFailed(..)
                        | event::ScenarioFinished::BeforeHookFailed(_) => true,
                        event::ScenarioFinished::StepSkipped | event::ScenarioFinished::StepPassed => {
                            unmatched && !allowed_skip
                        }
                    };
                    // The same tags as the filter reads: feature, rule and scenario.
                    let tags = tags_of(feature, rule, scenario);
                    let mut counted = tally.lock().unwrap_or_else(|p| p.into_inner());
                    counted.count(failed, vendor, &tags);
                    if failed {
                        let (file, line) = progress::scenario_key(feature, scenario);
                        let why = match finished {
                            event::ScenarioFinished::StepFailed(_, _, error) => progress::error_text(error),
                            event::ScenarioFinished::BeforeHookFailed(info) => {
                                format!("the Before hook: {}", progress::panic_text(info))
                            }
                            _ => "a step no step definition matches".to_string(),
                        };
                        let first = why.lines().next().unwrap_or_default();
                        counted
                            .failures
                            .push(format!("{profile}: {file}:{line}: {}: {first}", scenario.name));
                    }
                    drop(counted);
                    let name = scenario.name.clone();
                    let feature_name = feature.name.clone();
                    let failed_dir = failed_dir.clone();
                    let tally = tally.clone();
                    let key = progress::scenario_key(feature, scenario);
                    let evidence = evidence.clone();
                    Box::pin(async move {
                        let Some(world) = world else { return };
                        if let Some(s) = world.scenario.take() {
                            {
                                let mut t = tally.lock().unwrap_or_else(|p| p.into_inner());
                                t.sync_latencies.push(SyncLatency {
                                    profile,
                                    feature: feature_name,
                                    scenario: name.clone(),
                                    slowest: s.slowest_sync(),
                                });
                                if let Some((started, ended, events)) = s.timeline() {
                                    t.timelines.push(ScenarioTimeline {
                                        profile,
                                        file: key.0.clone(),
                                        line: key.1,
                                        scenario: name.clone(),
                                        started,
                                        ended,
                                        events,
                                    });
                                }
                            }
                            // Under the step limit too: a node that never answers must not
                            // hold the run at the scenario's end either.
                            let end = async {
                                if failed && let Some(dir) = keep_evidence(&failed_dir, &name, &s).await {
                                    evidence
                                        .lock()
                                        .unwrap_or_else(|p| p.into_inner())
                                        .insert(key.clone(), dir);
                                }
                                s.shutdown().await;
                            };
                            if tokio::time::timeout(step_limit, end).await.is_err() {
                                use std::io::Write as _;
                                let _ = writeln!(
                                    std::io::stderr(),
                                    "{profile} {}:{} {name:?}: the scenario's shutdown did not end within the step limit ({}); what it started may be left running",
                                    key.0,
                                    key.1,
                                    watchdog::show(step_limit)
                                );
                            }
                        }
                    })
                }
            })
            .with_writer(
                progress::Progress::new(console, profile, evidence.clone(), config.verbose)
                    .tee::<ConformanceWorld, _>(writer::JUnit::for_tee(
                        junit.try_clone().map_err(|e| RunError::Io(report.clone(), e))?,
                        0,
                    ))
                    .tee::<ConformanceWorld, _>(writer::Json::for_tee(
                        json.try_clone().map_err(|e| RunError::Io(report.clone(), e))?,
                    ))
                    .normalized(),
            )
            // After the writer (it wraps it): a step no definition matches is a failure in
            // every report, not a skip, unless the scenario is tagged @allow.skipped.
            .fail_on_skipped()
            // Last: changing the writer drops CLI options set before it, and without them
            // cucumber would parse this process's own arguments.
            .with_cli(cucumber::cli::Opts::<_, _, _, cucumber::cli::Empty>::default())
            .filter_run((), move |feature, rule, scenario| {
                picked(only.as_ref(), feature, scenario.position.line as u64)
                    && select_for_agent(
                        profile,
                        nodes,
                        filter_tags.as_ref(),
                        &tags_of(feature, rule, scenario),
                        reference_agent,
                        real_apiserver,
                    ) == Selection::Run
            });
        IN_A_RUN.scope((), run).await;
    }
    let mut t = tally.lock().unwrap_or_else(|p| p.into_inner());
    Ok(std::mem::take(&mut *t))
}

/// Write each node's journal and the cluster log of a failed scenario; where they went.
pub(super) async fn keep_evidence(
    dir: &std::path::Path,
    scenario: &str,
    s: &crate::scenario::Scenario,
) -> Option<PathBuf> {
    let safe: String = scenario
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = dir.join(safe);
    std::fs::create_dir_all(&dir).ok()?;
    for node in &s.nodes {
        let text = match node.journal_since(crate::node::JournalMark(0)).await {
            Ok(lines) => lines.join("\n"),
            Err(e) => format!("(the journal could not be read: {e})"),
        };
        let _ = std::fs::write(dir.join(format!("{}.journal", node.name())), text);
    }
    let _ = std::fs::write(dir.join("cluster.log"), s.log.lines().join("\n"));
    if let Some(controller) = s.upstream_controller() {
        let _ = std::fs::copy(&controller.log, dir.join("machine-config-controller.log"));
    }
    if let Some(server) = s.upstream_server() {
        let _ = std::fs::copy(&server.log, dir.join("machine-config-server.log"));
    }
    Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apart_scenarios_count_toward_the_verdict_for_the_reference_daemon_only() {
        let tags = |t: &[&str]| t.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let count = |failed, vendor, t: &[&str]| {
            let mut tally = Summary::default();
            tally.count(failed, vendor, &tags(t));
            (
                tally.passed,
                tally.failed,
                tally.mco_logs_failed,
                tally.beyond_upstream_failed,
            )
        };
        assert_eq!(count(true, true, &["mco-logs"]), (0, 0, 1, 0));
        assert_eq!(count(true, true, &[BEYOND_UPSTREAM]), (0, 0, 0, 1));
        assert_eq!(count(true, true, &["mco-logs", BEYOND_UPSTREAM]), (0, 0, 1, 0));
        assert_eq!(count(true, true, &["ocp-4.16"]), (0, 1, 0, 0));
        assert_eq!(count(true, false, &["mco-logs"]), (0, 1, 0, 0));
        assert_eq!(count(true, false, &[BEYOND_UPSTREAM]), (0, 1, 0, 0));
        assert_eq!(count(false, true, &[BEYOND_UPSTREAM]), (1, 0, 0, 0));
    }

    /// The panic hook is the process's: a test of it runs alone in a process of its own (this
    /// test binary, run again for the one test). True in that process; in the parent, runs it
    /// and checks that it passed.
    fn alone_in_a_process(test: &str) -> bool {
        const CHILD: &str = "MCO_PANIC_HOOK_CHILD";
        if std::env::var_os(CHILD).is_some() {
            return true;
        }
        let name = format!("runner::profile_run::tests::{test}");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name.as_str(), "--exact", "--test-threads=1", "--nocapture"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
        false
    }

    #[test]
    fn beside_a_run_a_panic_elsewhere_reaches_the_hook_and_a_steps_does_not() {
        if !alone_in_a_process("beside_a_run_a_panic_elsewhere_reaches_the_hook_and_a_steps_does_not") {
            return;
        }
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let calls = || CALLS.load(std::sync::atomic::Ordering::SeqCst);
        std::panic::set_hook(Box::new(|_| {
            CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
        let guard = PanicHookGuard::enter();
        // cucumber's start of a run, then a scenario's Before hook.
        let found_by_cucumber = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        PanicHookGuard::reinstate();
        // A step's panic, inside the run's future: cucumber reports it, the hook stays quiet.
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(IN_A_RUN.scope((), async {
            assert!(std::panic::catch_unwind(|| panic!("a step")).is_err());
        }));
        assert_eq!(calls(), 0, "a step's panic went to the hook");
        // Another test's assertion beside the run.
        assert!(std::panic::catch_unwind(|| panic!("beside the run")).is_err());
        assert_eq!(calls(), 1, "a panic beside the run said nothing");
        std::panic::set_hook(found_by_cucumber);
        drop(guard);
        assert!(std::panic::catch_unwind(|| panic!("after the run")).is_err());
        assert_eq!(calls(), 2, "the hook found before the run is back after it");
    }

    /// The hook cucumber would leave behind when two runs overlap.
    #[test]
    fn overlapping_runs_leave_the_hook_they_found() {
        if !alone_in_a_process("overlapping_runs_leave_the_hook_they_found") {
            return;
        }
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        std::panic::set_hook(Box::new(|_| {
            CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
        // What cucumber's runner does around each run, two runs overlapping.
        let a = PanicHookGuard::enter();
        let found_by_a = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let b = PanicHookGuard::enter();
        let found_by_b = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        std::panic::set_hook(found_by_a);
        drop(a);
        std::panic::set_hook(found_by_b);
        drop(b);
        assert!(std::panic::catch_unwind(|| panic!("after both runs")).is_err());
        assert_eq!(
            CALLS.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "the hook in place before the runs saw the panic after them"
        );
    }
}
