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

/// The report as YAML.
pub async fn conformance_report(ctx: &ReportContext<'_>) -> Result<String, String> {
    let mut profiles = Vec::new();
    let mut mco_logs = Vec::new();
    let mut beyond_upstream = Vec::new();
    let vendor = !matches!(ctx.agent, AgentKind::Reference);
    for (profile, path) in &ctx.results {
        let mut features = Vec::new();
        for feature in read_results(path)? {
            let mut scenarios = Vec::new();
            let file = Path::new(&feature.uri)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            // Who each scenario is, from the feature file the run read: an Outline row is its
            // name and its values, whatever line it is at.
            let ids: Vec<super::identity::Expanded> = cucumber::gherkin::Feature::parse_path(
                &feature.uri,
                cucumber::gherkin::GherkinEnv::default(),
            )
            .map(|f| super::identity::scenarios(&f))
            .unwrap_or_default();
            for outcome in feature.scenarios {
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
                    .find(|t| t.profile == *profile && t.file == file && t.line as u64 == outcome.line)
                {
                    entry["timeline"] = json!({
                        "started": crate::pki::rfc3339(t.started),
                        "ended": crate::pki::rfc3339(t.ended),
                        "events": serde_json::to_value(&t.events).map_err(|e| e.to_string())?,
                    });
                }
                let tags = outcome.tags;
                // Scenarios judged apart for an agent other than the reference daemon: their
                // own list, in the profile's results only for the reference daemon.
                let apart = if tags.iter().any(|t| t == "mco-logs") {
                    Some(&mut mco_logs)
                } else if tags.iter().any(|t| t == super::BEYOND_UPSTREAM) {
                    Some(&mut beyond_upstream)
                } else {
                    None
                };
                if let Some(list) = apart {
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
            features.push(json!({"name": feature.name, "file": feature.uri, "scenarios": scenarios}));
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
            "scenarios": mco_logs,
        }),
        beyond_upstream: json!({
            "note": if vendor {
                "@beyond-upstream scenarios ask more than upstream MCO does (hardening the reference daemon meets); for an agent other than the reference daemon they are reported here, apart from the verdict"
            } else {
                "@beyond-upstream scenarios ask more than upstream MCO does; for the reference daemon they count toward the verdict"
            },
            "scenarios": beyond_upstream,
        }),
    };
    serde_yaml::to_string(&report).map_err(|e| e.to_string())
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
async fn agent_version(path: &Path) -> Option<String> {
    let child = tokio::process::Command::new(path)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let output = tokio::time::timeout(std::time::Duration::from_secs(2), child.wait_with_output())
        .await
        .ok()?
        .ok()
        .filter(|o| o.status.success())?;
    String::from_utf8_lossy(&output.stdout)
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
mod step_message_tests {
    #[test]
    fn the_rust_source_place_and_cucumber_s_prefix_are_dropped() {
        assert_eq!(
            super::step_message(
                "Matched: harness/src/steps/node.rs:103:1\nStep panicked. Captured output: worker-0 rebooted\n"
            ),
            "worker-0 rebooted"
        );
        assert_eq!(
            super::step_message("Step doesn't match any function"),
            "Step doesn't match any function"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `@beyond-upstream` failure is listed apart for every agent and, for a vendor's agent
    /// (here a mutant, judged as one), left out of the profile's results; the verdict is the
    /// run's one rule (`Summary::verdict`), whatever the results file says.
    #[tokio::test]
    async fn beyond_upstream_failures_are_apart_for_other_agents_and_the_verdict_is_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let scenario = |name: &str, tags: &[&str], status: &str| {
            json!({"name": name, "line": 1,
                   "tags": tags.iter().map(|t| json!({"name": t})).collect::<Vec<_>>(),
                   "steps": [{"keyword": "Then ", "name": "x", "line": 2, "result": {"status": status, "error_message": "seen"}}]})
        };
        let document = json!([{"uri": "f.feature", "name": "F", "tags": [], "elements": [
            scenario("hardening", &["@beyond-upstream"], "failed"),
            scenario("plain", &[], "passed"),
        ]}]);
        std::fs::write(&json, document.to_string()).unwrap();
        let report = |agent: AgentKind, summary: Summary| {
            let json = json.clone();
            async move {
                let ctx = ReportContext {
                    agent: &agent,
                    nodes: Nodes::Embedded,
                    api_server: "in-process".into(),
                    summary: &summary,
                    results: vec![(Profile::Ocp416, json)],
                    command: String::new(),
                    agent_timeout: std::time::Duration::from_secs(30),
                };
                let yaml: serde_yaml::Value =
                    serde_yaml::from_str(&conformance_report(&ctx).await.unwrap()).unwrap();
                let listed: Vec<String> = yaml["results"][0]["features"][0]["scenarios"]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .map(|s| s["name"].as_str().unwrap().to_string())
                    .collect();
                (
                    yaml["verdict"].as_str().unwrap().to_string(),
                    yaml["beyondUpstream"]["scenarios"].as_sequence().unwrap().len(),
                    listed,
                )
            }
        };
        let mutant = || AgentKind::Mutant(crate::agent::Mutant::WrongMode);
        let counted = |passed, failed, beyond_upstream_failed| Summary {
            passed,
            failed,
            beyond_upstream_failed,
            ..Summary::default()
        };
        // The runner counts the hardening failure apart for the vendor, toward the verdict for
        // the reference daemon; the report follows the count.
        assert_eq!(
            report(mutant(), counted(1, 0, 1)).await,
            ("passed".into(), 1, vec!["plain".into()])
        );
        assert_eq!(
            report(AgentKind::Reference, counted(1, 1, 0)).await,
            ("failed".into(), 1, vec!["hardening".into(), "plain".into()])
        );
        let stopped = Summary {
            interrupted: Some("SIGINT"),
            ..counted(1, 0, 1)
        };
        assert_eq!(report(mutant(), stopped).await.0, "interrupted");
    }

    /// An Outline row's entry carries its values, read from the feature file the results name,
    /// so two rows of one name are told apart without their lines.
    #[tokio::test]
    async fn an_outline_row_is_reported_with_its_values() {
        let dir = tempfile::tempdir().unwrap();
        let feature = dir.path().join("o.feature");
        std::fs::write(
            &feature,
            "Feature: f\n  Scenario Outline: logs\n    Then <line>\n\n    Examples:\n      | line |\n      | a    |\n      | b    |\n\n  Scenario: plain\n    Then x\n",
        )
        .unwrap();
        let json_path = dir.path().join("r.json");
        let scenario = |line: u64| {
            json!({"name": if line == 10 { "plain" } else { "logs" }, "line": line, "tags": [],
                   "steps": [{"keyword": "Then ", "name": "x", "line": 3, "result": {"status": "passed"}}]})
        };
        let document = json!([{"uri": feature.display().to_string(), "name": "f", "tags": [],
                               "elements": [scenario(7), scenario(8), scenario(10)]}]);
        std::fs::write(&json_path, document.to_string()).unwrap();
        let summary = Summary {
            passed: 3,
            ..Summary::default()
        };
        let ctx = ReportContext {
            agent: &AgentKind::Reference,
            nodes: Nodes::Embedded,
            api_server: "in-process".into(),
            summary: &summary,
            results: vec![(Profile::Ocp416, json_path)],
            command: String::new(),
            agent_timeout: std::time::Duration::from_secs(30),
        };
        let yaml: serde_yaml::Value = serde_yaml::from_str(&conformance_report(&ctx).await.unwrap()).unwrap();
        let rows: Vec<Option<String>> = yaml["results"][0]["features"][0]["scenarios"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|s| s["row"]["line"].as_str().map(String::from))
            .collect();
        assert_eq!(rows, [Some("a".into()), Some("b".into()), None]);
    }
}
