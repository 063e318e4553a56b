//! Running features: lint them, then one cucumber run per profile, each scenario in its own
//! World, and one summary whose last line is `N passed, N failed, N skipped` (scenarios).
//!
//! A scenario tagged `@ocp-4.12`, `@ocp-4.14` or `@ocp-4.16` (on itself, its feature, or its Examples block)
//! runs for that profile only; `@container` is skipped on embedded nodes, and `@slow` and
//! `@scale` unless the tag expression asks for them, each listed with its reason above the
//! summary. JUnit XML and Cucumber JSON go under the report directory, one file per profile. A
//! failed scenario's node journals are kept there too, and their path printed.
//!
//! # Layout
//! - `lint`: feature-file checks run before anything executes.
//! - `report`: the YAML conformance report.
//! - `features_table`: the features table of `docs/features.md`, from the files.
//! - `self_test`: every mutant of the reference daemon over the suite, and who rejected it.
//! - `catalogue`: the step phrases, read from the step sources, and the nearest ones to a step
//!   that matches none.
//! - `progress`: the console while a run goes, a line per scenario.
//! - `select`: which scenarios a run takes; `undefined`: steps no definition matches.
//! - The run itself, a pipeline (`pipeline`): `plan` (paths, lint, `--only`, tags, undefined
//!   steps, skips) → `execute` (the node backend, then per profile `profile_run`: one cucumber
//!   run, its After hook `scenario_finished`, the process's `panic_hook` meanwhile) → `publish`
//!   (the console recap, the YAML report, the HTML page, the summary line).
//!
//! No silent green: a step no definition matches is named before the run with the nearest
//! phrases, and fails its scenario in every report; a run whose paths and tags select no
//! scenario to run is an error unless `allow_empty`; the reports a run writes are removed
//! before it starts, so a refused run leaves none from an earlier one.

pub mod catalogue;
mod execute;
mod features_table;
pub mod html;
mod identity;
mod junit;
pub mod lint;
pub mod node_roles;
pub mod options;
mod panic_hook;
mod pipeline;
mod plan;
mod profile_run;
mod progress;
mod publish;
pub mod report;
mod scenario_finished;
mod select;
pub mod self_test;
mod summary;
mod undefined;
pub mod watchdog;

pub use pipeline::run;
pub use select::scenario_at;

pub use features_table::features_markdown;
pub use summary::{CrashCounts, ScenarioTimeline, Summary, SyncLatency, UndefinedStep};

use crate::node::image;
use crate::profile::Profile;
use crate::scenario::{AgentKind, NodeBackend};
use crate::world::ConformanceWorld;
use cucumber::gherkin::{Feature, Rule, Scenario};
use cucumber::tag::Ext as _;
use cucumber::{World as _, WriterExt as _, event, writer};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Which node backend a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nodes {
    Embedded,
    Container,
}

/// `--nodes` / `MCO_CONFORMANCE_NODES`, as the CLI and `cargo test` read it.
impl std::str::FromStr for Nodes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "embedded" => Ok(Nodes::Embedded),
            "container" => Ok(Nodes::Container),
            other => Err(format!(
                "unknown node backend {other:?}: expected embedded or container"
            )),
        }
    }
}

/// `--profile` / `MCO_CONFORMANCE_PROFILE`, as the CLI and `cargo test` read it: a profile's
/// name, or `all` for every profile.
pub fn profiles_named(name: &str) -> Result<Vec<Profile>, crate::profile::UnknownProfile> {
    match name {
        "all" => Ok(Profile::ALL.to_vec()),
        one => Ok(vec![one.parse()?]),
    }
}

#[derive(Debug, Clone)]
pub struct RunConfig {
    pub profiles: Vec<Profile>,
    /// A tag expression added to (never replacing) the profile and `@slow`/`@scale`/`@container` rules.
    pub tags: Option<String>,
    pub nodes: Nodes,
    /// Feature files or directories.
    pub paths: Vec<PathBuf>,
    /// Where JUnit XML, Cucumber JSON and failed scenarios' journals go.
    pub report_dir: PathBuf,
    /// The JUnit XML file, instead of `<report dir>/<profile>.junit.xml` (with the profile
    /// before the extension when the run covers both).
    pub junit: Option<PathBuf>,
    /// The Cucumber JSON file, likewise instead of `<report dir>/<profile>.cucumber.json`.
    pub json: Option<PathBuf>,
    /// Scenarios run at once (each starts an API server and its nodes).
    pub concurrency: usize,
    /// The agent every node runs.
    pub agent: AgentKind,
    /// How long a step waits for the cluster and the agents (`--agent-timeout`).
    pub agent_timeout: std::time::Duration,
    /// How long any one step may run before it is stopped and failed (`--step-limit`;
    /// `watchdog`).
    pub step_limit: std::time::Duration,
    /// The API server the scenarios run against (`--apiserver`).
    pub endpoint: crate::scenario::ClusterEndpoint,
    /// Touch the ControllerConfig until every agent's first sync (`--nudge-first-sync`;
    /// `scenario/nudge.rs`).
    pub nudge_first_sync: bool,
    /// An upstream machine-config-controller in the reference's place (`--controller-binary`).
    pub controller: Option<crate::cluster::upstream::UpstreamController>,
    /// An upstream machine-config-server in the reference's place (`--server-binary`).
    pub server: Option<crate::cluster::upstream_server::UpstreamServer>,
    /// Where the YAML conformance report goes, if anywhere.
    pub report: Option<PathBuf>,
    /// The command line to print in the report as the way to reproduce the run.
    pub command: String,
    /// Print nothing (the self-test runs the suite many times and prints its own table).
    pub quiet: bool,
    /// Stop starting scenarios after the first failure (the self-test's first pass).
    pub fail_fast: bool,
    /// Run only the scenario at this feature file name and line (an Outline's row: the row's
    /// line), as the Cucumber JSON names it.
    pub only: Option<(String, u64)>,
    /// Print every step of every scenario, not just a line per scenario.
    pub verbose: bool,
    /// A run that selects no scenario to run is not an error.
    pub allow_empty: bool,
    /// Write the run as one self-contained HTML page here: per scenario its steps, result and
    /// timeline.
    pub html: Option<PathBuf>,
}

impl RunConfig {
    /// Whether the scenarios run against a kube-apiserver given by kubeconfig.
    pub fn real_apiserver(&self) -> bool {
        matches!(self.endpoint, crate::scenario::ClusterEndpoint::Kubeconfig(_))
    }

    /// Every feature under `paths`, both profiles, embedded nodes, the reference daemon.
    pub fn new(paths: Vec<PathBuf>, report_dir: PathBuf) -> Self {
        RunConfig {
            profiles: Profile::ALL.to_vec(),
            tags: None,
            nodes: Nodes::Embedded,
            paths,
            report_dir,
            junit: None,
            json: None,
            concurrency: 4,
            agent: AgentKind::Reference,
            agent_timeout: std::time::Duration::from_secs(30),
            step_limit: watchdog::DEFAULT_STEP_LIMIT,
            endpoint: crate::scenario::ClusterEndpoint::InProcess,
            nudge_first_sync: false,
            controller: None,
            server: None,
            report: None,
            command: String::new(),
            quiet: false,
            fail_fast: false,
            only: None,
            verbose: false,
            allow_empty: false,
            html: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{} feature file problem(s):\n{}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Lint(Vec<lint::LintError>),
    #[error("no feature files under {}", .0.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoFeatures(Vec<PathBuf>),
    #[error("{}: no such file or directory", .0.display())]
    MissingPath(PathBuf),
    #[error("{}: not a feature file (a feature file's name ends in .feature)", .0.display())]
    NotAFeature(PathBuf),
    #[error(
        "{file}:{line}: no scenario starts at line {line} (scenarios and Examples rows start at lines {})",
        lines.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    NoScenarioAt {
        file: String,
        line: u64,
        lines: Vec<u64>,
    },
    #[error("nothing to run: {0} (--allow-empty makes this a success)")]
    Empty(String),
    #[error("invalid tag expression {0:?}: {1}")]
    Tags(String, String),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("writing the conformance report: {0}")]
    Report(String),
    #[error("container nodes: {0}")]
    Containers(String),
}

/// The tag of scenarios that ask more than upstream MCO does (a hardening requirement the
/// reference daemon meets): judged for the reference daemon, reported apart for other agents.
pub const BEYOND_UPSTREAM: &str = "beyond-upstream";

#[cfg(test)]
mod tests {
    #[test]
    fn profile_and_node_options_read_alike_for_both_runners() {
        use super::{Nodes, profiles_named};
        use crate::profile::Profile;
        assert_eq!(profiles_named("all").unwrap(), Profile::ALL.to_vec());
        assert_eq!(profiles_named("ocp-4.12").unwrap(), vec![Profile::Ocp412]);
        assert!(
            profiles_named("4.16")
                .unwrap_err()
                .to_string()
                .contains("ocp-4.16")
        );
        assert_eq!("container".parse::<Nodes>(), Ok(Nodes::Container));
        assert_eq!("embedded".parse::<Nodes>(), Ok(Nodes::Embedded));
        assert!(
            "kind"
                .parse::<Nodes>()
                .unwrap_err()
                .contains("expected embedded or container")
        );
    }

    /// A step that matched no definition fails the run even where its scenario was allowed to
    /// skip it (`@allow.skipped`, so no scenario counted failed), and an interrupted run never
    /// passes: the exit status, the console, the report and the HTML page agree.
    #[test]
    fn the_verdict_counts_undefined_steps_and_interrupts() {
        let clean = super::Summary {
            passed: 3,
            ..Default::default()
        };
        assert!(clean.passed());
        let undefined = super::Summary {
            undefined: vec![super::UndefinedStep {
                file: "features/x.feature".into(),
                line: 3,
                step: "Given a step nobody wrote".into(),
                problem: "undefined".into(),
                nearest: vec![],
            }],
            ..clean.clone()
        };
        assert_eq!((undefined.verdict(), undefined.passed()), ("failed", false));
        let stopped = super::Summary {
            interrupted: Some("SIGTERM"),
            ..clean.clone()
        };
        assert_eq!((stopped.verdict(), stopped.passed()), ("interrupted", false));
        let failed = super::Summary { failed: 1, ..clean };
        assert!(!failed.passed());
    }

    use super::profile_run::relative_to;
    use super::select::{Selection, TagFilter, select, select_for_agent};
    use super::*;

    fn t(tags: &[&str]) -> Vec<String> {
        tags.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn report_paths_are_relative_to_the_working_directory() {
        let rel = |b: &str, p: &str| relative_to(std::path::Path::new(b), std::path::Path::new(p));
        assert_eq!(
            rel("/work/main", "/work/main/features/a.feature"),
            PathBuf::from("features/a.feature")
        );
        assert_eq!(
            rel("/work/main/harness", "/work/main/features/a.feature"),
            PathBuf::from("../features/a.feature")
        );
        assert_eq!(
            rel("/work/main", "/tmp/up/one.feature"),
            PathBuf::from("../../tmp/up/one.feature")
        );
        assert_eq!(
            rel("/work/main", "features/a.feature"),
            PathBuf::from("features/a.feature")
        );
    }

    #[test]
    fn selection_by_profile_backend_and_tags() {
        let p = Profile::Ocp412;
        assert_eq!(select(p, Nodes::Embedded, None, &t(&[])), Selection::Run);
        assert_eq!(
            select(p, Nodes::Embedded, None, &t(&["ocp-4.12"])),
            Selection::Run
        );
        assert_eq!(
            select(p, Nodes::Embedded, None, &t(&["ocp-4.16"])),
            Selection::Out
        );
        assert!(
            matches!(select(p, Nodes::Embedded, None, &t(&["container"])), Selection::Skip(r) if r.starts_with("@container"))
        );
        assert!(
            matches!(select(p, Nodes::Container, None, &t(&["embedded"])), Selection::Skip(r) if r.starts_with("@embedded"))
        );
        assert_eq!(
            select(p, Nodes::Embedded, None, &t(&["embedded"])),
            Selection::Run
        );
        assert_eq!(
            select(p, Nodes::Container, None, &t(&["container"])),
            Selection::Run
        );
        assert!(matches!(
            select(p, Nodes::Embedded, None, &t(&["slow"])),
            Selection::Skip(_)
        ));
        let slow = TagFilter::parse("@slow").unwrap();
        assert_eq!(
            select(p, Nodes::Embedded, Some(&slow), &t(&["slow"])),
            Selection::Run
        );
        assert!(matches!(
            select(p, Nodes::Embedded, None, &t(&["scale"])),
            Selection::Skip(r) if r == "@scale: left out unless asked for (--tags @scale)"
        ));
        assert!(matches!(
            select(p, Nodes::Embedded, Some(&slow), &t(&["slow", "scale"])),
            Selection::Skip(r) if r.starts_with("@scale")
        ));
        let scale = TagFilter::parse("@scale and not @container").unwrap();
        assert_eq!(
            select(p, Nodes::Embedded, Some(&scale), &t(&["scale"])),
            Selection::Run
        );
        assert_eq!(
            select(p, Nodes::Embedded, Some(&slow), &t(&[])),
            Selection::Out,
            "user tags narrow the run"
        );
        let light = t(&["light"]);
        assert_eq!(
            select_for_agent(p, Nodes::Embedded, None, &light, true, false),
            Selection::Run,
            "the reference daemon runs on light nodes"
        );
        assert!(
            matches!(select_for_agent(p, Nodes::Embedded, None, &light, false, false), Selection::Skip(r) if r.starts_with("@light")),
            "another agent skips light scenarios"
        );
        assert_eq!(
            select_for_agent(p, Nodes::Embedded, None, &t(&["ocp-4.16"]), false, false),
            Selection::Out,
            "out stays out"
        );
        let swap = t(&["in-process-apiserver"]);
        assert_eq!(
            select_for_agent(p, Nodes::Embedded, None, &swap, true, false),
            Selection::Run,
            "the in-process API server runs them"
        );
        assert!(
            matches!(select_for_agent(p, Nodes::Embedded, None, &swap, true, true), Selection::Skip(r) if r.starts_with("@in-process-apiserver: it swaps")),
            "a server given by kubeconfig skips them, saying why"
        );
    }
}
