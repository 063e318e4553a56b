//! The console while a run goes: one line per scenario with its result, profile, place, name
//! and wall time; under a failed scenario, the step that failed, its message, and where its
//! journals were kept. Verbose (`-v`), each scenario's steps come first, one line each.
//!
//! The place is `FILE:LINE`, where the scenario is now, for the user to paste back
//! (`mco-conformance run FILE:LINE`). Within the run it is also the key that finds a scenario's
//! kept journals; nothing kept after the run is keyed by it: the reports and the evidence
//! directories name a scenario by its identity (`identity.rs`).
//!
//! An undefined step is printed as `undefined`, never as a skip: the run's writer chain turns
//! cucumber's "skipped" for a step that matches no definition into a failure (`fail_on_skipped`)
//! before any writer sees it, so the JUnit and Cucumber JSON reports say the same.

use crate::profile::Profile;
use cucumber::event::{self, Cucumber, Feature, Rule, Scenario, Step, StepError};
use cucumber::{Event, World, Writer, cli, parser};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Where a failed scenario's journals went, by (feature file name, scenario line): written by
/// the run's after-hook, read when the scenario's line is printed.
pub type Evidence = Arc<Mutex<HashMap<(String, usize), PathBuf>>>;

/// The key of a scenario: its feature file's name and its line (an Outline row's own line).
pub fn scenario_key(
    feature: &cucumber::gherkin::Feature,
    scenario: &cucumber::gherkin::Scenario,
) -> (String, usize) {
    (super::identity::feature_file(feature), scenario.position.line)
}

/// Where a scenario is, as the user can pass it back (`mco-conformance run FILE:LINE`): the
/// feature's path as the run holds it (relative to the working directory) and the line.
fn place(feature: &cucumber::gherkin::Feature, line: usize) -> String {
    let file = feature
        .path
        .as_ref()
        .map_or_else(|| feature.name.clone(), |p| p.display().to_string());
    format!("{file}:{line}")
}

#[derive(Default)]
struct Running {
    started: Option<SystemTime>,
    /// The first failure: the step as written, its line, and the message.
    failure: Option<(String, usize, String)>,
}

/// One line per finished scenario.
pub struct Progress {
    out: Box<dyn Write + Send>,
    profile: Profile,
    evidence: Evidence,
    verbose: bool,
    running: HashMap<(String, usize), Running>,
}

impl Progress {
    pub fn new(out: Box<dyn Write + Send>, profile: Profile, evidence: Evidence, verbose: bool) -> Self {
        Progress {
            out,
            profile,
            evidence,
            verbose,
            running: HashMap::new(),
        }
    }

    fn scenario<W>(
        &mut self,
        feature: &cucumber::gherkin::Feature,
        scenario: &cucumber::gherkin::Scenario,
        ev: &Scenario<W>,
        at: SystemTime,
    ) {
        let key = scenario_key(feature, scenario);
        let state = self.running.entry(key.clone()).or_default();
        if self.verbose
            && let Some(line) = step_line(self.profile, feature, scenario, ev)
        {
            let _ = writeln!(self.out, "{line}");
        }
        match ev {
            Scenario::Started => state.started = Some(at),
            Scenario::Hook(kind, event::Hook::Failed(_, info)) if state.failure.is_none() => {
                state.failure = Some((
                    format!("the {kind:?} hook"),
                    scenario.position.line,
                    panic_text(info),
                ));
            }
            Scenario::Step(step, Step::Failed(_, _, _, error))
            | Scenario::Background(step, Step::Failed(_, _, _, error))
                if state.failure.is_none() =>
            {
                let message = error_text(error);
                state.failure = Some((
                    format!("{}{}", step.keyword, step.value),
                    step.position.line,
                    message,
                ));
            }
            Scenario::Finished => self.finished(feature, scenario, key, at),
            _ => {}
        }
    }

    /// The scenario's line, `PASS` or `FAIL` with how long it took, and for a failure where and
    /// why, and where its journals were kept.
    fn finished(
        &mut self,
        feature: &cucumber::gherkin::Feature,
        scenario: &cucumber::gherkin::Scenario,
        key: (String, usize),
        at: SystemTime,
    ) {
        let state = self.running.remove(&key).unwrap_or_default();
        let took = state
            .started
            .and_then(|s| at.duration_since(s).ok())
            .unwrap_or_default();
        let verdict = match state.failure {
            None => "PASS",
            Some(_) => "FAIL",
        };
        let _ = writeln!(
            self.out,
            "{verdict} {} {} {} ({:.1} s)",
            self.profile,
            place(feature, key.1),
            scenario.name,
            took.as_secs_f64()
        );
        if let Some((step, line, message)) = state.failure {
            let _ = writeln!(self.out, "     at {}: {step}", place(feature, line));
            for l in message.lines() {
                let _ = writeln!(self.out, "       {l}");
            }
            let kept = self
                .evidence
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
            if let Some(dir) = kept {
                let _ = writeln!(self.out, "     journals and cluster log: {}", dir.display());
            }
        }
        let _ = self.out.flush();
    }
}

/// A verbose run's line for a scenario's start or a step's end.
fn step_line<W>(
    profile: Profile,
    feature: &cucumber::gherkin::Feature,
    scenario: &cucumber::gherkin::Scenario,
    ev: &Scenario<W>,
) -> Option<String> {
    match ev {
        Scenario::Started => Some(format!(
            "---- {} {} {}",
            profile,
            place(feature, scenario.position.line),
            scenario.name
        )),
        Scenario::Step(step, result) | Scenario::Background(step, result) => {
            let mark = match result {
                Step::Started => None,
                Step::Passed(..) => Some("ok  "),
                Step::Skipped => Some("skip"),
                Step::Failed(_, _, _, StepError::NotFound) => Some("undefined"),
                Step::Failed(..) => Some("FAIL"),
            };
            mark.map(|m| {
                format!(
                    "     {m} {}{} (line {})",
                    step.keyword, step.value, step.position.line
                )
            })
        }
        _ => None,
    }
}

/// The message a step's error or panic carried.
/// What a failed step's error says.
pub(super) fn error_text(error: &StepError) -> String {
    match error {
        StepError::NotFound => {
            "undefined: no step definition matches it (the run printed the nearest phrases before it started; `mco-conformance steps` lists them all)".to_string()
        }
        StepError::AmbiguousMatch(e) => format!("ambiguous: {e}"),
        StepError::Panic(info) => panic_text(info),
    }
}

pub(super) fn panic_text(info: &event::Info) -> String {
    if let Some(s) = info.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = info.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        "(a panic without a message)".into()
    }
}

impl<W: World> Writer<W> for Progress {
    type Cli = cli::Empty;

    async fn handle_event(&mut self, event: parser::Result<Event<Cucumber<W>>>, _: &Self::Cli) {
        let Ok(Event { value, at, .. }) = event else {
            return;
        };
        match value {
            Cucumber::Feature(feature, Feature::Scenario(scenario, ev))
            | Cucumber::Feature(feature, Feature::Rule(_, Rule::Scenario(scenario, ev))) => {
                self.scenario(&feature, &scenario, &ev.event, at);
            }
            _ => {}
        }
    }
}
