//! The suite proving its own power (`mco-conformance self-test`): every mutant of the reference
//! daemon (`agent::mutant`) runs over the features on each profile it breaks, judged as any
//! vendor's agent is (`@mco-logs` apart). A mutant is rejected on a profile by a scenario that
//! fails under it and, run alone, fails under it again and passes with the reference daemon (so
//! a flake never counts as a rejection); the table says which scenario and step rejected it, and
//! with what message. A mutant that survives a profile fails the self-test: the fix is a
//! scenario, never a weaker mutant.
//!
//! Results come from the runs' Cucumber JSON documents, as the conformance report's do.

pub use super::identity::{ScenarioId, at_line, locate};
use super::{Nodes, RunConfig, RunError, run};
use crate::agent::Mutant;
use crate::profile::Profile;
use crate::scenario::AgentKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One scenario that failed under a mutant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The feature file's name (`signer_rotation.feature`).
    pub file: String,
    pub scenario: String,
    /// An Outline row's values under their headers (empty for a plain scenario).
    pub row: Vec<(String, String)>,
    pub line: u64,
    /// The step that failed, with its keyword; empty for a scenario failed by an undefined step.
    pub step: String,
    pub message: String,
}

/// A mutant on one profile: the scenario that rejected it, confirmed, and every scenario the
/// first pass saw fail.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub mutant: Mutant,
    pub profile: Profile,
    /// A scenario that failed under the mutant, failed again when run alone with the mutant,
    /// and passed alone with the reference daemon: a rejection for the mutant's fault, not a
    /// flake. `None`: the mutant survived.
    pub rejection: Option<Rejection>,
    /// What the first pass (the whole suite, stopping at the first failure) saw fail.
    pub seen: Vec<Rejection>,
    pub took: Duration,
}

impl Rejection {
    /// Who the scenario is, whatever line it is at now.
    pub fn id(&self) -> ScenarioId {
        ScenarioId {
            file: self.file.clone(),
            name: self.scenario.clone(),
            row: self.row.clone(),
        }
    }
}

impl Verdict {
    pub fn rejected(&self) -> bool {
        self.rejection.is_some()
    }
}

#[derive(Debug, Clone)]
pub struct SelfTestConfig {
    pub paths: Vec<PathBuf>,
    /// Each mutant's run reports go to `<report dir>/<mutant>/<profile>/`.
    pub report_dir: PathBuf,
    pub mutants: Vec<Mutant>,
    /// A step's deadline in the discovery pass (the whole suite under the mutant): the
    /// reference daemon converges in well under a second per step, and a mutant that never
    /// converges should not hold the self-test for long.
    pub agent_timeout: Duration,
    /// A step's deadline when a failure is confirmed (the scenario alone, with the reference
    /// daemon and with the mutant): a vendor's run's default, so that a rejection is one a
    /// vendor's run makes too, never a deadline only the short discovery one missed.
    pub confirm_timeout: Duration,
    pub concurrency: usize,
}

impl SelfTestConfig {
    /// Every mutant over every feature under `paths`.
    pub fn new(paths: Vec<PathBuf>, report_dir: PathBuf) -> Self {
        SelfTestConfig {
            paths,
            report_dir,
            mutants: Mutant::ALL.to_vec(),
            agent_timeout: Duration::from_secs(5),
            confirm_timeout: RunConfig::new(Vec::new(), PathBuf::new()).agent_timeout,
            concurrency: 8,
        }
    }
}

/// How many failed scenarios of the first pass are tried, in order, as the confirmed rejection.
const CANDIDATES: usize = 3;

/// How many mutants run at once: most of a mutant's time is a step waiting out its deadline,
/// which costs no CPU.
const PARALLEL_MUTANTS: usize = 3;

/// Run every mutant on each of its profiles: the whole suite until the first failure, then that
/// failure confirmed (`confirm`). Verdicts come in the catalogue's order.
pub async fn self_test(config: &SelfTestConfig) -> Result<Vec<Verdict>, RunError> {
    use futures::StreamExt;
    let pairs: Vec<(Mutant, Profile)> = config
        .mutants
        .iter()
        .flat_map(|&m| m.profiles().iter().map(move |&p| (m, p)))
        .collect();
    futures::stream::iter(pairs)
        .map(|(mutant, profile)| verdict(config, mutant, profile))
        .buffered(PARALLEL_MUTANTS)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}

async fn verdict(config: &SelfTestConfig, mutant: Mutant, profile: Profile) -> Result<Verdict, RunError> {
    let started = Instant::now();
    let dir = config.report_dir.join(mutant.name()).join(profile.as_str());
    let agent = AgentKind::Mutant(mutant);
    // Nothing from an earlier self-test may pass for this one's.
    let _ = std::fs::remove_dir_all(&dir);
    let whole = (None, config.agent_timeout);
    let mut seen = run_once(config, &dir.join("suite"), profile, &agent, whole.clone(), true).await?;
    let mut rejection = confirm_first(config, mutant, profile, &seen, &[]).await?;
    if rejection.is_none() {
        // The first failure was not the mutant's (a scenario that also fails alone with the
        // reference, or passes alone with the mutant: load, not the fault), and stopping there
        // hid the rest: run every scenario and try those not tried yet.
        let tried: Vec<Rejection> = seen.iter().take(CANDIDATES).cloned().collect();
        seen = run_once(config, &dir.join("whole-suite"), profile, &agent, whole, false).await?;
        rejection = confirm_first(config, mutant, profile, &seen, &tried).await?;
    }
    Ok(Verdict {
        mutant,
        profile,
        rejection,
        seen,
        took: started.elapsed(),
    })
}

/// The first of `candidates` (at most `CANDIDATES`, skipping those in `tried`) that `confirm`
/// holds for.
async fn confirm_first(
    config: &SelfTestConfig,
    mutant: Mutant,
    profile: Profile,
    candidates: &[Rejection],
    tried: &[Rejection],
) -> Result<Option<Rejection>, RunError> {
    let fresh = candidates
        .iter()
        .filter(|c| !tried.iter().any(|t| t.file == c.file && t.line == c.line));
    for candidate in fresh.take(CANDIDATES) {
        if let Some(r) = confirm(config, mutant, profile, &candidate.file, candidate.line).await? {
            return Ok(Some(r));
        }
    }
    Ok(None)
}

/// Whether the scenario at `file:line`, run alone, passes with the reference daemon and fails
/// with the mutant: the failure under the mutant when it does.
pub async fn confirm(
    config: &SelfTestConfig,
    mutant: Mutant,
    profile: Profile,
    file: &str,
    line: u64,
) -> Result<Option<Rejection>, RunError> {
    let dir = config
        .report_dir
        .join(mutant.name())
        .join(profile.as_str())
        .join(format!("{file}-{line}"));
    let only = Some((file.to_string(), line));
    let deadline = config.confirm_timeout;
    let reference = run_once(
        config,
        &dir.join("reference"),
        profile,
        &AgentKind::Reference,
        (only.clone(), deadline),
        false,
    )
    .await?;
    if !reference.is_empty() {
        return Ok(None);
    }
    let agent = AgentKind::Mutant(mutant);
    Ok(run_once(
        config,
        &dir.join("mutant"),
        profile,
        &agent,
        (only, deadline),
        false,
    )
    .await?
    .into_iter()
    .next())
}

/// One quiet run for one profile on embedded nodes, of the scenario at a file and line or of
/// every scenario, under a step deadline; the scenarios that failed. The run's conformance
/// report (`conformance-report.yaml` in `dir`) says what ran and how.
async fn run_once(
    config: &SelfTestConfig,
    dir: &Path,
    profile: Profile,
    agent: &AgentKind,
    (only, agent_timeout): (Option<(String, u64)>, Duration),
    fail_fast: bool,
) -> Result<Vec<Rejection>, RunError> {
    let mut run_config = RunConfig::new(config.paths.clone(), dir.to_path_buf());
    run_config.profiles = vec![profile];
    run_config.nodes = Nodes::Embedded;
    run_config.agent = agent.clone();
    run_config.agent_timeout = agent_timeout;
    run_config.report = Some(dir.join("conformance-report.yaml"));
    run_config.concurrency = config.concurrency;
    run_config.quiet = true;
    run_config.fail_fast = fail_fast;
    run_config.only = only;
    // A mutant's run may select nothing on a profile (its scenario is the other profile's).
    run_config.allow_empty = true;
    run(&run_config).await?;
    rejections(&dir.join(format!("{profile}.cucumber.json"))).map_err(RunError::Report)
}

/// The failed scenarios of a run's Cucumber JSON, `@mco-logs` and `@beyond-upstream` left out
/// (a mutant is judged as a vendor's agent is), in file and line order.
pub fn rejections(json: &Path) -> Result<Vec<Rejection>, String> {
    let mut out = Vec::new();
    for feature in super::report::read_results(json)? {
        let file = Path::new(&feature.uri)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        for outcome in feature.scenarios {
            let apart = outcome
                .tags
                .iter()
                .any(|t| t == "mco-logs" || t == super::BEYOND_UPSTREAM);
            let (true, false, Some(failure)) = (outcome.failed, apart, outcome.failure) else {
                continue;
            };
            // The row's values come from the feature file the run read.
            let id = at_line(Path::new(&feature.uri), outcome.line);
            out.push(Rejection {
                file: file.clone(),
                scenario: id.as_ref().map_or(outcome.name, |id| id.name.clone()),
                row: id.map(|id| id.row).unwrap_or_default(),
                line: outcome.line,
                step: failure.step,
                message: failure.message,
            });
        }
    }
    out.sort_by(|a, b| (&a.file, a.line, &a.scenario).cmp(&(&b.file, b.line, &b.scenario)));
    Ok(out)
}

/// The first line of a step's failure that says what was expected or seen, cut to `max`
/// characters.
pub fn message_summary(message: &str, max: usize) -> String {
    let line = message
        .lines()
        .map(str::trim)
        .find(|l| {
            !l.is_empty()
                && !l.starts_with("Step failed")
                && !l.starts_with("Defined:")
                && !l.starts_with("Matched:")
        })
        .unwrap_or("");
    let line = line.trim_start_matches("Step panicked. Captured output: ");
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line.to_string()
    }
}

/// The table printed after a self-test: one row per mutant and profile.
pub fn table_text(verdicts: &[Verdict]) -> String {
    let mut out = String::new();
    for v in verdicts {
        match &v.rejection {
            Some(r) => out.push_str(&format!(
                "REJECTED  {:<30} {:<9} by {} ({:.1} s)\n          step: {}\n          seen: {}\n",
                v.mutant.name(),
                v.profile.as_str(),
                r.id(),
                v.took.as_secs_f64(),
                r.step,
                message_summary(&r.message, 200)
            )),
            None if v.seen.is_empty() => out.push_str(&format!(
                "SURVIVED  {:<30} {:<9} no scenario failed: {}\n",
                v.mutant.name(),
                v.profile.as_str(),
                v.mutant.broken()
            )),
            None => out.push_str(&format!(
                "SURVIVED  {:<30} {:<9} no failure was confirmed (each failed scenario passed alone with the mutant, or failed with the reference too): {}\n",
                v.mutant.name(),
                v.profile.as_str(),
                v.seen.iter().map(|r| r.id().to_string()).collect::<Vec<_>>().join("; ")
            )),
        }
    }
    let survived = verdicts.iter().filter(|v| !v.rejected()).count();
    out.push_str(&format!(
        "{} mutant run(s): {} rejected, {survived} survived\n",
        verdicts.len(),
        verdicts.len() - survived
    ));
    out
}

/// The self-test table of `docs/self-test.md` (markdown): mutant, profile, what it breaks, the
/// first scenario and step that rejected it, and the message.
pub fn table_markdown(verdicts: &[Verdict]) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::from(
        "| mutant | profile | broken behaviour | rejected by (scenario) | step | message |\n|---|---|---|---|---|---|\n",
    );
    for v in verdicts {
        let (scenario, step, message) = match &v.rejection {
            Some(r) => (
                format!("`{}` {}", r.file, r.id().scenario()),
                r.step.clone(),
                message_summary(&r.message, 160),
            ),
            None => ("**survived**".into(), String::new(), String::new()),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            v.mutant.name(),
            v.profile.as_str(),
            cell(v.mutant.broken()),
            cell(&scenario),
            cell(&step),
            cell(&message)
        ));
    }
    out
}

/// One row of a self-test table: the claim that a scenario, named by its file and as
/// `ScenarioId::scenario` writes it (no line: `locate` finds where it is now), rejects the
/// mutant on the profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRow {
    pub mutant: String,
    pub profile: String,
    pub file: String,
    pub scenario: String,
}

/// The rows of a self-test table in markdown, as the table names them, so a test can check each
/// claim again.
pub fn table_rows(markdown: &str) -> Vec<TableRow> {
    markdown
        .lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let (file, scenario) = cells.get(3)?.strip_prefix('`')?.split_once("` ")?;
            Some(TableRow {
                mutant: cells
                    .first()?
                    .trim_start_matches("| `")
                    .trim_end_matches('`')
                    .to_string(),
                profile: cells.get(1)?.to_string(),
                file: file.to_string(),
                scenario: scenario.replace("\\|", "|"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections_read_failed_scenarios_and_leave_mco_logs_apart() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let doc = serde_json::json!([{
            "uri": "/x/features/a.feature",
            "tags": [],
            "elements": [
                {"name": "passes", "line": 3, "tags": [], "steps": [{"keyword": "Then ", "name": "ok", "result": {"status": "passed"}}]},
                {"name": "logs", "line": 9, "tags": [{"name": "@mco-logs"}], "steps": [{"keyword": "Then ", "name": "x", "result": {"status": "failed", "error_message": "no"}}]},
                {"name": "fails", "line": 20, "tags": [], "steps": [
                    {"keyword": "Given ", "name": "a", "result": {"status": "passed"}},
                    {"keyword": "Then ", "name": "b", "result": {"status": "failed", "error_message": "Step failed:\nDefined: x\nexpected 0644, saw 0600"}}
                ]},
                {"name": "first", "line": 5, "tags": [], "steps": [{"keyword": "When ", "name": "typo", "result": {"status": "skipped"}}]}
            ]
        }]);
        std::fs::write(&json, doc.to_string()).unwrap();
        let r = rejections(&json).unwrap();
        assert_eq!(
            r.iter().map(|r| (r.line, r.step.as_str())).collect::<Vec<_>>(),
            [(5, "When typo"), (20, "Then b")]
        );
        assert_eq!(r[0].file, "a.feature");
        assert_eq!(message_summary(&r[1].message, 100), "expected 0644, saw 0600");
        assert!(rejections(&dir.path().join("missing.json")).is_err());
    }

    #[test]
    fn the_markdown_table_reads_back() {
        let v = Verdict {
            mutant: Mutant::WrongMode,
            profile: Profile::Ocp416,
            rejection: Some(Rejection {
                file: "a.feature".into(),
                scenario: "S | T".into(),
                row: vec![("a".into(), "1".into())],
                line: 1,
                step: "Then x".into(),
                message: "m".into(),
            }),
            seen: Vec::new(),
            took: Duration::ZERO,
        };
        let md = table_markdown(&[v]);
        assert_eq!(
            table_rows(&md),
            [TableRow {
                mutant: "wrong-mode".into(),
                profile: "ocp-4.16".into(),
                file: "a.feature".into(),
                scenario: "S | T (row: a=1)".into(),
            }]
        );
        assert!(md.contains("S \\| T"), "{md}");
        assert!(md.contains("S \\| T"), "{md}");
    }
}
