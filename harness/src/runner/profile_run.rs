//! One cucumber run for one profile: the features handed over as linted, each scenario's
//! World set up by the Before hook, the writers (progress, JUnit, Cucumber JSON), and the
//! After hook (`scenario_finished`) that tallies what each scenario leaves for the summary.

use super::panic_hook::{IN_A_RUN, PanicHookGuard};
use super::scenario_finished::{Ending, scenario_finished};
use super::select::{Selection, TagFilter, picked, select_for_agent, tags_of};
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

/// What the Before hook sets on each scenario's World: the run's options for this profile.
struct WorldSettings {
    profile: Profile,
    progress: bool,
    timeline: bool,
    agent: AgentKind,
    backend: NodeBackend,
    deadline: std::time::Duration,
    step_limit: std::time::Duration,
    endpoint: crate::scenario::ClusterEndpoint,
    nudge_first_sync: bool,
    controller: Option<crate::cluster::upstream::UpstreamController>,
    server: Option<crate::cluster::upstream_server::UpstreamServer>,
}

impl WorldSettings {
    fn new(config: &RunConfig, profile: Profile, backend: NodeBackend) -> Self {
        WorldSettings {
            profile,
            progress: !config.quiet,
            timeline: config.html.is_some() || config.report.is_some(),
            agent: config.agent.clone(),
            backend,
            deadline: config.agent_timeout,
            step_limit: config.step_limit,
            endpoint: config.endpoint.clone(),
            nudge_first_sync: config.nudge_first_sync,
            controller: config.controller.clone(),
            server: config.server.clone(),
        }
    }

    /// The Before hook: the panic hook put back in cucumber's place, the World told where it is
    /// and what the run asks.
    fn scenario_starting(&self, feature: &Feature, scenario: &Scenario, world: &mut ConformanceWorld) {
        PanicHookGuard::reinstate();
        let (file, line) = progress::scenario_key(feature, scenario);
        world.place = format!("{file}:{line}");
        world.progress = self.progress;
        world.timeline = self.timeline;
        world.profile = self.profile;
        world.agent = self.agent.clone();
        world.backend = self.backend.clone();
        world.deadline = self.deadline;
        world.step_limit = self.step_limit;
        world.endpoint = self.endpoint.clone();
        world.nudge_first_sync = self.nudge_first_sync;
        world.controller = self.controller.clone();
        world.server = self.server.clone();
    }
}

/// A report file created for writing, its directory made first.
fn create(path: &std::path::Path) -> Result<std::fs::File, RunError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| RunError::Io(dir.to_path_buf(), e))?;
    }
    std::fs::File::create(path).map_err(|e| RunError::Io(path.to_path_buf(), e))
}

/// Where the progress lines go: nowhere when the run is quiet.
fn console(config: &RunConfig) -> Box<dyn std::io::Write + Send> {
    if config.quiet {
        Box::new(std::io::sink())
    } else {
        Box::new(std::io::stdout())
    }
}

/// One cucumber run over `features` for `profile`: the scenarios the selection runs, the
/// reports written as they finish, and their tally.
pub(super) async fn run_profile(
    config: &RunConfig,
    profile: Profile,
    features: &[Feature],
    tags: Option<TagFilter>,
    backend: NodeBackend,
) -> Result<Summary, RunError> {
    let _hook = PanicHookGuard::enter();
    let junit_path = report_path(config, config.junit.as_ref(), profile, "junit.xml");
    let junit = create(&junit_path)?;
    let json = create(&report_path(
        config,
        config.json.as_ref(),
        profile,
        "cucumber.json",
    ))?;
    let evidence: progress::Evidence = Default::default();
    let ending = Arc::new(Ending::new(config, profile, evidence.clone()));
    let settings = WorldSettings::new(config, profile, backend);
    let (nodes, only, real_apiserver) = (config.nodes, config.only.clone(), config.real_apiserver());
    let reference_agent = matches!(config.agent, AgentKind::Reference);
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
    let after = ending.clone();
    let copy = |file: &std::fs::File| {
        file.try_clone()
            .map_err(|e| RunError::Io(config.report_dir.clone(), e))
    };
    let run = cucumber
        .before(move |feature, _, scenario, world| {
            settings.scenario_starting(feature, scenario, world);
            Box::pin(async {})
        })
        .after(move |feature, rule, scenario, finished, world| {
            scenario_finished(&after, feature, rule, scenario, finished, world)
        })
        .with_writer(
            progress::Progress::new(console(config), profile, evidence, config.verbose)
                .tee::<ConformanceWorld, _>(writer::JUnit::for_tee(copy(&junit)?, 0))
                .tee::<ConformanceWorld, _>(writer::Json::for_tee(copy(&json)?))
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
                    tags.as_ref(),
                    &tags_of(feature, rule, scenario),
                    reference_agent,
                    real_apiserver,
                ) == Selection::Run
        });
    IN_A_RUN.scope((), run).await;
    let ids = std::mem::take(&mut *ending.run_ids.lock().unwrap_or_else(|p| p.into_inner()));
    super::junit::rename_cases(&junit_path, &ids).map_err(|e| RunError::Io(junit_path.clone(), e))?;
    let mut t = ending.tally.lock().unwrap_or_else(|p| p.into_inner());
    Ok(std::mem::take(&mut *t))
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
}
