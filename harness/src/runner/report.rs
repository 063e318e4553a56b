//! The conformance report a vendor hands on (`--report PATH`, YAML), in the spirit of Gateway
//! API's ConformanceReport: what was claimed and run (profile, agent and its sha256, harness
//! version and commit, node backend), the verdict, per feature and scenario the result, skips
//! with reasons, each failure's step with what was expected and what was seen, the `@mco-logs`
//! and `@beyond-upstream`
//! results apart from the verdict, and the command that reproduces the run.
//!
//! Scenario results come from the run's Cucumber JSON documents, one per profile.

use super::{Nodes, Summary};
use crate::profile::Profile;
use crate::scenario::AgentKind;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A feature's scenarios as a run's Cucumber JSON document has them.
pub struct FeatureResults {
    pub name: String,
    /// The feature file's path, as the document gives it.
    pub uri: String,
    pub scenarios: Vec<ScenarioOutcome>,
}

/// One (expanded) scenario of a run: its tags (feature's and its own, without `@`), and
/// whether it failed, by the run's own rule: a failed step, or a step no definition matched
/// unless the scenario is tagged `@allow.skipped`.
pub struct ScenarioOutcome {
    pub name: String,
    pub line: u64,
    pub tags: Vec<String>,
    pub failed: bool,
    /// The failed step, or the first one that did not pass when none failed.
    pub failure: Option<FailedStep>,
    /// Every step in order, with its status (`passed`, `failed`, `undefined`, `skipped`).
    pub steps: Vec<StepOutcome>,
}

pub struct StepOutcome {
    /// Keyword and text.
    pub step: String,
    pub line: u64,
    pub status: String,
    /// The error message of a step that did not pass.
    pub message: Option<String>,
}

pub struct FailedStep {
    /// Keyword and text (`Then every node is Done`).
    pub step: String,
    pub line: u64,
    pub message: String,
}

/// A step's error as a reader wants it: cucumber's JSON writer puts the step definition's
/// place in our Rust source (`Matched: harness/src/steps/…`) and `Step panicked. Captured
/// output:` before the message a step returned; neither says anything about the agent.
fn step_message(raw: &str) -> String {
    raw.lines()
        .filter(|l| !l.trim_start().starts_with("Matched: "))
        .map(|l| l.strip_prefix("Step panicked. Captured output: ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// Read a run's Cucumber JSON document.
pub fn read_results(path: &Path) -> Result<Vec<FeatureResults>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let document: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut features = Vec::new();
    for feature in document.as_array().into_iter().flatten() {
        let mut scenarios = Vec::new();
        for element in feature["elements"].as_array().into_iter().flatten() {
            let tags: Vec<String> = element["tags"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(feature["tags"].as_array().into_iter().flatten())
                .filter_map(|t| t["name"].as_str().map(|n| n.trim_start_matches('@').to_string()))
                .collect();
            let steps = element["steps"].as_array().cloned().unwrap_or_default();
            let failed_step = steps.iter().find(|s| s["result"]["status"] == "failed");
            let not_passed = steps.iter().find(|s| s["result"]["status"] != "passed");
            let allowed_skip = tags.iter().any(|t| t == "allow.skipped");
            let failed = failed_step.is_some() || (not_passed.is_some() && !allowed_skip);
            let failure = failed_step.or(not_passed).map(|s| FailedStep {
                step: format!(
                    "{}{}",
                    s["keyword"].as_str().unwrap_or(""),
                    s["name"].as_str().unwrap_or("")
                ),
                line: s["line"].as_u64().unwrap_or(0),
                message: step_message(
                    s["result"]["error_message"]
                        .as_str()
                        .unwrap_or("no step definition matches"),
                ),
            });
            let steps = steps
                .iter()
                .map(|s| StepOutcome {
                    step: format!(
                        "{}{}",
                        s["keyword"].as_str().unwrap_or(""),
                        s["name"].as_str().unwrap_or("")
                    ),
                    line: s["line"].as_u64().unwrap_or(0),
                    status: s["result"]["status"].as_str().unwrap_or("unknown").to_string(),
                    message: s["result"]["error_message"]
                        .as_str()
                        .map(|m| m.trim().to_string()),
                })
                .collect();
            scenarios.push(ScenarioOutcome {
                name: element["name"].as_str().unwrap_or("").to_string(),
                line: element["line"].as_u64().unwrap_or(0),
                tags,
                failed,
                failure,
                steps,
            });
        }
        features.push(FeatureResults {
            name: feature["name"].as_str().unwrap_or("").to_string(),
            uri: feature["uri"].as_str().unwrap_or("").to_string(),
            scenarios,
        });
    }
    Ok(features)
}

/// Everything the report says beyond the scenario results.
pub struct ReportContext<'a> {
    pub agent: &'a AgentKind,
    pub nodes: Nodes,
    /// The API server the scenarios ran against: `in-process` or its URL.
    pub api_server: String,
    pub summary: &'a Summary,
    /// Per profile run, its Cucumber JSON document.
    pub results: Vec<(Profile, PathBuf)>,
    /// The command line that reproduces the run.
    pub command: String,
    /// How long a step waited for the agents (`--agent-timeout`).
    pub agent_timeout: std::time::Duration,
}

/// The scenarios judged apart from the verdict for an agent other than the reference daemon,
/// each with its feature and profile.
#[derive(Default)]
struct Apart {
    mco_logs: Vec<Value>,
    beyond_upstream: Vec<Value>,
}

/// The report as YAML.
pub async fn conformance_report(ctx: &ReportContext<'_>) -> Result<String, String> {
    let mut profiles = Vec::new();
    let mut apart = Apart::default();
    let vendor = !matches!(ctx.agent, AgentKind::Reference);
    for (profile, path) in &ctx.results {
        let mut features = Vec::new();
        for feature in read_results(path)? {
            features.push(feature_results(ctx, *profile, feature, vendor, &mut apart)?);
        }
        profiles.push(json!({"profile": profile.as_str(), "features": features}));
    }
    // The run's one verdict rule (the console and the HTML page give the same): the runner
    // counted each scenario, apart or toward the verdict, as it finished.
    let verdict = ctx.summary.verdict();
    let report = Report {
        api_version: "mco-conformance.openshift.io/v1alpha1",
        kind: "ConformanceReport",
        date: crate::pki::rfc3339(time::OffsetDateTime::now_utc()),
        harness: json!({"version": env!("CARGO_PKG_VERSION"), "commit": harness_commit()}),
        claimed_profiles: ctx.results.iter().map(|(p, _)| p.as_str()).collect(),
        agent: agent_entry(ctx.agent).await,
        nodes: match ctx.nodes {
            Nodes::Embedded => "embedded",
            Nodes::Container => "container",
        },
        api_server: ctx.api_server.clone(),
        verdict,
        summary: json!({
            "passed": ctx.summary.passed,
            "failed": ctx.summary.failed,
            "skipped": ctx.summary.skipped.len(),
            "mcoLogsFailed": ctx.summary.mco_logs_failed,
            "beyondUpstreamFailed": ctx.summary.beyond_upstream_failed,
            "interruptedBy": ctx.summary.interrupted,
        }),
        reproduce: ctx.command.clone(),
        timeliness: timeliness(ctx),
        results: profiles,
        skipped: ctx.summary.skipped.clone(),
        undefined_steps: ctx
            .summary
            .undefined
            .iter()
            .map(|u| {
                json!({
                    "file": u.file,
                    "line": u.line,
                    "step": u.step,
                    "problem": u.problem,
                    "nearest": u.nearest,
                })
            })
            .collect(),
        mco_logs: json!({
            "note": if vendor {
                "@mco-logs scenarios check upstream MCO log wording; for an agent other than the reference daemon they are reported here, apart from the verdict"
            } else {
                "@mco-logs scenarios check upstream MCO log wording; for the reference daemon they count toward the verdict"
            },
            "scenarios": apart.mco_logs,
        }),
        beyond_upstream: json!({
            "note": if vendor {
                "@beyond-upstream scenarios ask more than upstream MCO does (hardening the reference daemon meets); for an agent other than the reference daemon they are reported here, apart from the verdict"
            } else {
                "@beyond-upstream scenarios ask more than upstream MCO does; for the reference daemon they count toward the verdict"
            },
            "scenarios": apart.beyond_upstream,
        }),
    };
    serde_yaml::to_string(&report).map_err(|e| e.to_string())
}

/// A feature's entry in a profile's results: its scenarios, each also listed in `apart` when
/// it is judged apart, and then left out here for a `vendor`'s agent.
fn feature_results(
    ctx: &ReportContext<'_>,
    profile: Profile,
    feature: FeatureResults,
    vendor: bool,
    apart: &mut Apart,
) -> Result<Value, String> {
    let mut scenarios = Vec::new();
    let file = Path::new(&feature.uri)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Who each scenario is, from the feature file the run read: an Outline row is its
    // name and its values, whatever line it is at.
    let ids: Vec<super::identity::Expanded> =
        cucumber::gherkin::Feature::parse_path(&feature.uri, cucumber::gherkin::GherkinEnv::default())
            .map(|f| super::identity::scenarios(&f))
            .unwrap_or_default();
    for outcome in feature.scenarios {
        let entry = scenario_entry(ctx, profile, &file, &ids, &outcome)?;
        let tags = outcome.tags;
        // Scenarios judged apart for an agent other than the reference daemon: their
        // own list, in the profile's results only for the reference daemon.
        let list = if tags.iter().any(|t| t == "mco-logs") {
            Some(&mut apart.mco_logs)
        } else if tags.iter().any(|t| t == super::BEYOND_UPSTREAM) {
            Some(&mut apart.beyond_upstream)
        } else {
            None
        };
        if let Some(list) = list {
            let mut apart_entry = entry.clone();
            apart_entry["feature"] = json!(feature.name);
            apart_entry["profile"] = json!(profile.as_str());
            list.push(apart_entry);
            if vendor {
                continue;
            }
        }
        scenarios.push(entry);
    }
    Ok(json!({"name": feature.name, "file": feature.uri, "scenarios": scenarios}))
}

/// One scenario's entry: its result, its Outline row's values, its failure, and what the run
/// recorded of it (its timeline, its crash counts).
fn scenario_entry(
    ctx: &ReportContext<'_>,
    profile: Profile,
    file: &str,
    ids: &[super::identity::Expanded],
    outcome: &ScenarioOutcome,
) -> Result<Value, String> {
    let result = if outcome.failed { "failed" } else { "passed" };
    let mut entry = json!({"name": outcome.name, "line": outcome.line, "result": result});
    if let Some(s) = ids
        .iter()
        .find(|s| s.line == outcome.line && !s.id.row.is_empty())
    {
        let row: serde_json::Map<String, Value> =
            s.id.row.iter().map(|(h, v)| (h.clone(), json!(v))).collect();
        entry["row"] = Value::Object(row);
    }
    if let Some(f) = &outcome.failure {
        entry["failure"] = json!({"step": f.step, "line": f.line, "message": f.message});
    }
    // What changed when, in simulated time: the events the HTML page draws.
    if let Some(t) = ctx
        .summary
        .timelines
        .iter()
        .find(|t| t.profile == profile && t.file == file && t.line as u64 == outcome.line)
    {
        entry["timeline"] = json!({
            "started": crate::pki::rfc3339(t.started),
            "ended": crate::pki::rfc3339(t.ended),
            "events": serde_json::to_value(&t.events).map_err(|e| e.to_string())?,
        });
    }
    // How much a crash-consistency scenario tried (docs/crash-consistency.md).
    if let Some(c) = ctx
        .summary
        .crash_counts
        .iter()
        .find(|c| c.profile == profile && c.file == file && c.line as u64 == outcome.line)
    {
        entry["crashes"] = json!({
            "crashPointsTried": c.crash_points,
            "crashRuns": c.crash_runs,
            "powerLossStatesJudged": c.power_loss_states,
        });
    }
    Ok(entry)
}

/// The report's top level, in the order a reader wants it.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    api_version: &'static str,
    kind: &'static str,
    date: String,
    harness: Value,
    claimed_profiles: Vec<&'static str>,
    agent: Value,
    nodes: &'static str,
    api_server: String,
    verdict: &'static str,
    summary: Value,
    reproduce: String,
    results: Vec<Value>,
    skipped: Vec<String>,
    /// Steps no definition matches (or several do): each fails its scenario.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    undefined_steps: Vec<Value>,
    timeliness: Value,
    mco_logs: Value,
    beyond_upstream: Value,
}

/// The agent timeout the run allowed, the bound a change must reach the nodes within whatever
/// that timeout is, and per scenario the longest the nodes took.
fn timeliness(ctx: &ReportContext<'_>) -> Value {
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let slowest = ctx.summary.sync_latencies.iter().max_by_key(|l| l.slowest);
    json!({
        "agentTimeoutSeconds": ctx.agent_timeout.as_secs(),
        "syncBoundSeconds": crate::scenario::SYNC_BOUND.as_secs(),
        "slowest": slowest.map(|l| json!({"profile": l.profile.as_str(), "feature": l.feature, "scenario": l.scenario, "ms": ms(l.slowest)})),
        "scenarios": ctx.summary.sync_latencies.iter().map(|l| json!({
            "profile": l.profile.as_str(), "feature": l.feature, "scenario": l.scenario, "slowestSyncMs": ms(l.slowest),
        })).collect::<Vec<_>>(),
    })
}

async fn agent_entry(agent: &AgentKind) -> Value {
    match agent {
        AgentKind::Reference => json!({"kind": "reference", "name": "the reference daemon, in process"}),
        AgentKind::Mutant(m) => json!({"kind": "mutant", "name": m.name(), "broken": m.broken()}),
        AgentKind::Binary { path, args, .. } => {
            let mut entry = json!({"kind": "binary", "path": path.display().to_string(), "args": args});
            match std::fs::read(path) {
                Ok(bytes) => {
                    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
                    entry["sha256"] = json!(
                        digest
                            .as_ref()
                            .iter()
                            .map(|b| format!("{b:02x}"))
                            .collect::<String>()
                    );
                }
                Err(e) => entry["sha256"] = json!(format!("unreadable: {e}")),
            }
            if let Some(version) = agent_version(path).await {
                entry["version"] = json!(version);
            }
            entry
        }
        AgentKind::Image { image, command } => {
            let mut entry = json!({"kind": "image", "image": image, "command": command});
            entry["sha256"] = match crate::node::image::image_id(image) {
                Ok(id) => json!(id.trim_start_matches("sha256:")),
                Err(e) => json!(format!("unreadable: {e}")),
            };
            entry
        }
    }
}

/// The first line an agent prints for `--version`, if it answers within two seconds with exit 0.
/// The probe runs in a process group of its own, read for at most 64 KiB: an agent that takes
/// `--version` for a start, floods its output or leaves children behind is killed with all it
/// started and reaped, whatever it did, so nothing of the probe outlives it.
async fn agent_version(path: &Path) -> Option<String> {
    use tokio::io::AsyncReadExt;
    const MOST: u64 = 64 * 1024;
    let mut child = tokio::process::Command::new(path)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let group = child.id()?;
    let mut stdout = child.stdout.take()?;
    let answered = tokio::time::timeout(std::time::Duration::from_secs(2), async {
        let mut out = Vec::new();
        (&mut stdout).take(MOST).read_to_end(&mut out).await.ok()?;
        drop(stdout);
        let status = child.wait().await.ok()?;
        status.success().then_some(out)
    })
    .await
    .ok()
    .flatten();
    // The whole group, the agent's children included; then the agent itself is reaped.
    // SAFETY: kill(2) with a negative pid signals the process group the probe leads.
    unsafe { libc::kill(-(group as i32), libc::SIGKILL) };
    let _ = child.wait().await;
    String::from_utf8_lossy(&answered?)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

/// The commit the harness was built from: `MCO_CONFORMANCE_COMMIT` at build time, else what git
/// says of the source tree, else "unknown".
fn harness_commit() -> String {
    if let Some(commit) = option_env!("MCO_CONFORMANCE_COMMIT") {
        return commit.to_string();
    }
    std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests;
