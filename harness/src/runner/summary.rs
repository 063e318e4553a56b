//! What a run reports: its counts and verdict ([`Summary`]), each scenario's timeline, the
//! steps no definition matched, and how long nodes took to follow a change.

use super::select::CONTAINER_SKIP;
use crate::profile::Profile;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    /// `@mco-logs` scenarios an agent other than the reference daemon failed: reported, not
    /// counted in `failed`.
    pub mco_logs_failed: usize,
    /// `@beyond-upstream` scenarios (hardening the reference daemon does and upstream does not)
    /// an agent other than the reference daemon failed: reported, not counted in `failed`.
    pub beyond_upstream_failed: usize,
    /// `profile: feature: scenario: reason`
    pub skipped: Vec<String>,
    /// Per scenario run, the longest its nodes took to reflect a change.
    pub sync_latencies: Vec<SyncLatency>,
    /// The signal that interrupted the run (its scenarios stopped early and failed).
    pub interrupted: Option<&'static str>,
    /// Steps of the selected scenarios that no step definition matches (or more than one
    /// does), each with where it is and the nearest known phrases.
    pub undefined: Vec<UndefinedStep>,
    /// Per scenario run, what changed when (recorded when `--html` or `--report` asks).
    pub timelines: Vec<ScenarioTimeline>,
    /// Per crash-consistency scenario run, the crash points it tried and the states it judged.
    pub crash_counts: Vec<CrashCounts>,
    /// Every failed scenario (those counted apart too): `profile: file:line: scenario: the
    /// first line of why`.
    pub failures: Vec<String>,
}

/// One scenario's timeline, as the reports show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioTimeline {
    pub profile: Profile,
    /// The feature file's name and the scenario's line (an Outline row's own line).
    pub file: String,
    pub line: usize,
    pub scenario: String,
    /// When the scenario's cluster was up, and its clock at the last look (simulated).
    pub started: time::OffsetDateTime,
    pub ended: time::OffsetDateTime,
    pub events: Vec<crate::scenario::timeline::TimelineEvent>,
}

impl ScenarioTimeline {
    /// How many certificates the timeline saw the signer of `lane` issue (the first at install).
    pub fn times_issued(&self, lane: &str) -> usize {
        self.events
            .iter()
            .filter(|e| e.lane == lane && e.kind == "issued")
            .count()
    }
}

/// How much a crash-consistency scenario tried: the agent killed at crash points, and the
/// states a power loss can leave judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashCounts {
    pub profile: Profile,
    /// The feature file's name and the scenario's line (an Outline row's own line).
    pub file: String,
    pub line: usize,
    /// The crash points the counting runs found, and the crash runs that tried them.
    pub crash_points: usize,
    pub crash_runs: usize,
    /// The states a power loss can leave of the recorded syncs, each judged.
    pub power_loss_states: usize,
}

/// A step that matches no definition, or more than one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndefinedStep {
    pub file: String,
    pub line: usize,
    /// The step as written, keyword first.
    pub step: String,
    /// Why: "undefined", or "ambiguous: …".
    pub problem: String,
    /// The catalogue's nearest phrases, best first.
    pub nearest: Vec<String>,
}

impl std::fmt::Display for UndefinedStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {} step: {}",
            self.file, self.line, self.problem, self.step
        )?;
        match self.nearest.as_slice() {
            [] => write!(f, " (no phrase is close: `mco-conformance steps` lists them all)"),
            nearest => {
                let quoted: Vec<String> = nearest.iter().map(|p| format!("\"{p}\"")).collect();
                write!(f, "; did you mean {}", quoted.join(" or "))
            }
        }
    }
}

/// How long a scenario's nodes took, at most, to reflect a change (wall time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncLatency {
    pub profile: Profile,
    pub feature: String,
    pub scenario: String,
    pub slowest: std::time::Duration,
}

impl Summary {
    /// This run's summary with a container run of its `@container` scenarios folded in: those
    /// count as that run says, no longer as skipped for want of container nodes.
    pub fn with_container_run(mut self, container: Summary) -> Summary {
        self.skipped.retain(|s| !s.ends_with(CONTAINER_SKIP));
        self.absorb(container);
        self
    }

    /// Add a part of the run (one profile's scenarios, or the container run's) to it.
    pub(super) fn absorb(&mut self, part: Summary) {
        self.passed += part.passed;
        self.failed += part.failed;
        self.mco_logs_failed += part.mco_logs_failed;
        self.beyond_upstream_failed += part.beyond_upstream_failed;
        self.skipped.extend(part.skipped);
        self.sync_latencies.extend(part.sync_latencies);
        self.timelines.extend(part.timelines);
        self.crash_counts.extend(part.crash_counts);
        self.failures.extend(part.failures);
        self.interrupted = self.interrupted.or(part.interrupted);
        for u in part.undefined {
            if !self.undefined.contains(&u) {
                self.undefined.push(u);
            }
        }
    }

    /// The run's verdict, the one rule the console, the YAML report and the HTML page share:
    /// `interrupted` when a signal stopped it, `failed` when a scenario counted in the verdict
    /// failed or a step matched no definition, else `passed`.
    pub fn verdict(&self) -> &'static str {
        if self.interrupted.is_some() {
            "interrupted"
        } else if self.failed > 0 || !self.undefined.is_empty() {
            "failed"
        } else {
            "passed"
        }
    }

    /// Whether the run passed, by the same rule: what both runners' exit status says.
    pub fn passed(&self) -> bool {
        self.verdict() == "passed"
    }

    pub fn line(&self) -> String {
        let mut counts = format!(
            "{} passed, {} failed, {} skipped",
            self.passed,
            self.failed,
            self.skipped.len()
        );
        if !self.undefined.is_empty() {
            counts.push_str(&format!(" ({} undefined step(s))", self.undefined.len()));
        }
        match self.interrupted {
            Some(signal) => format!("interrupted by {signal}: {counts}"),
            None => counts,
        }
    }
}
