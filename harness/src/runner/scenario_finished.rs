//! A profile's After hook: what each finished scenario leaves for the summary. Its verdict by
//! the run's rule (a failed step, or a step no definition matches unless `@allow.skipped`),
//! counted toward the verdict or apart; its identity for the JUnit report; its timeline, sync
//! latency and crash counts; and, for a failure, its nodes' journals kept. Then the scenario's
//! cluster and nodes are shut down, under the step limit.

use super::select::{steps_run, tags_of};
use super::*;

/// What a profile's run keeps of its finished scenarios, shared by its After hook.
pub(super) struct Ending {
    pub(super) profile: Profile,
    /// The agent is not the reference daemon: `@mco-logs` and `@beyond-upstream` count apart.
    pub(super) vendor: bool,
    pub(super) step_limit: std::time::Duration,
    /// Where a failed scenario's journals go.
    pub(super) failed_dir: PathBuf,
    /// Where each failed scenario's journals went, for its progress line.
    pub(super) evidence: progress::Evidence,
    pub(super) steps: cucumber::step::Collection<ConformanceWorld>,
    pub(super) tally: Mutex<Summary>,
    /// Who each finished scenario is, to name the JUnit report's cases by it once it is written.
    pub(super) run_ids: Mutex<junit::RunIds>,
}

impl Ending {
    pub(super) fn new(config: &RunConfig, profile: Profile, evidence: progress::Evidence) -> Self {
        Ending {
            profile,
            vendor: !matches!(config.agent, AgentKind::Reference),
            step_limit: config.step_limit,
            failed_dir: config.report_dir.join("failed").join(profile.as_str()),
            evidence,
            steps: ConformanceWorld::collection(),
            tally: Mutex::default(),
            run_ids: Mutex::default(),
        }
    }

    /// Whether a finished scenario failed. A step that matches no definition is reported
    /// "skipped" and does not end the scenario in error; it fails the scenario here
    /// (fail_on_skipped), unless the scenario is tagged @allow.skipped.
    fn failed(
        &self,
        feature: &Feature,
        rule: Option<&Rule>,
        scenario: &Scenario,
        finished: &event::ScenarioFinished,
    ) -> bool {
        let allowed_skip = scenario.tags.iter().any(|t| t == "allow.skipped");
        let unmatched =
            steps_run(feature, rule, scenario).any(|step| !matches!(self.steps.find(step), Ok(Some(_))));
        match finished {
            event::ScenarioFinished::StepFailed(..) | event::ScenarioFinished::BeforeHookFailed(_) => true,
            event::ScenarioFinished::StepSkipped | event::ScenarioFinished::StepPassed => {
                unmatched && !allowed_skip
            }
        }
    }

    /// Count the scenario, toward the verdict or apart, and a failure with the first line of why.
    fn count(
        &self,
        feature: &Feature,
        rule: Option<&Rule>,
        scenario: &Scenario,
        finished: &event::ScenarioFinished,
        failed: bool,
    ) {
        // The same tags as the filter reads: feature, rule and scenario.
        let tags = tags_of(feature, rule, scenario);
        let mut counted = self.tally.lock().unwrap_or_else(|p| p.into_inner());
        counted.count(failed, self.vendor, &tags);
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
            counted.failures.push(format!(
                "{}: {file}:{line}: {}: {first}",
                self.profile, scenario.name
            ));
        }
    }

    /// What the scenario's run leaves for the reports: the slowest sync, the timeline, the
    /// crash counts.
    fn record(&self, s: &crate::scenario::Scenario, world: &ConformanceWorld, at: &At) {
        let mut t = self.tally.lock().unwrap_or_else(|p| p.into_inner());
        let profile = self.profile;
        t.sync_latencies.push(SyncLatency {
            profile,
            feature: at.feature.clone(),
            scenario: at.name.clone(),
            slowest: s.slowest_sync(),
        });
        if let Some((started, ended, events)) = s.timeline() {
            t.timelines.push(ScenarioTimeline {
                profile,
                file: at.key.0.clone(),
                line: at.key.1,
                scenario: at.name.clone(),
                started,
                ended,
                events,
            });
        }
        if !world.crashes.is_empty() || !world.power_losses.is_empty() {
            t.crash_counts.push(CrashCounts {
                profile,
                file: at.key.0.clone(),
                line: at.key.1,
                crash_points: world.crashes.iter().map(|r| r.points.len()).sum(),
                crash_runs: world
                    .crashes
                    .iter()
                    .flat_map(|r| &r.runs)
                    .filter(|r| r.point.is_some())
                    .count(),
                power_loss_states: world.power_losses.iter().map(|r| r.states.len()).sum(),
            });
        }
    }

    /// Record the scenario's run, keep a failure's journals and shut the scenario down, under
    /// the step limit too: a node that never answers must not hold the run at the scenario's
    /// end either.
    async fn close(&self, world: &mut ConformanceWorld, at: At) {
        let Some(s) = world.scenario.take() else {
            return;
        };
        self.record(&s, world, &at);
        let end = async {
            if at.failed
                && let Some(dir) = keep_evidence(&self.failed_dir, &at.id, &s).await
            {
                self.evidence
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(at.key.clone(), dir);
            }
            s.shutdown().await;
        };
        if tokio::time::timeout(self.step_limit, end).await.is_err() {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "{} {}:{} {:?}: the scenario's shutdown did not end within the step limit ({}); what it started may be left running",
                self.profile,
                at.key.0,
                at.key.1,
                at.name,
                watchdog::show(self.step_limit)
            );
        }
    }
}

/// Who and where a finished scenario is, and its verdict.
struct At {
    feature: String,
    name: String,
    key: (String, usize),
    id: identity::ScenarioId,
    failed: bool,
}

/// The After hook: count the scenario and name it at once, then, once its World is handed
/// over, record it and shut it down.
pub(super) fn scenario_finished<'a>(
    ending: &Arc<Ending>,
    feature: &'a Feature,
    rule: Option<&'a Rule>,
    scenario: &'a Scenario,
    finished: &'a event::ScenarioFinished,
    world: Option<&'a mut ConformanceWorld>,
) -> futures::future::LocalBoxFuture<'a, ()> {
    let failed = ending.failed(feature, rule, scenario, finished);
    ending.count(feature, rule, scenario, finished, failed);
    let id = identity::of(feature, scenario.position.line as u64, &scenario.name);
    ending
        .run_ids
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(progress::scenario_key(feature, scenario), id.clone());
    let at = At {
        feature: feature.name.clone(),
        name: scenario.name.clone(),
        key: progress::scenario_key(feature, scenario),
        id,
        failed,
    };
    let ending = ending.clone();
    Box::pin(async move {
        if let Some(world) = world {
            ending.close(world, at).await;
        }
    })
}

/// Write each node's journal and the cluster log of a failed scenario; where they went: a
/// directory named by the scenario's identity (`<file>/<name (row: …)>`, never its line).
async fn keep_evidence(
    dir: &std::path::Path,
    id: &identity::ScenarioId,
    s: &crate::scenario::Scenario,
) -> Option<PathBuf> {
    let safe = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    let dir = dir.join(safe(&id.file)).join(safe(&id.scenario()));
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
    keep_objects(&dir, &s.admin).await;
    Some(dir)
}

/// The objects a rollout's story is told in, as the API server held them when the scenario
/// failed: one YAML list per kind (`oc get machineconfigs -o yaml` and so on), or the error
/// that kept it from being read.
async fn keep_objects(dir: &std::path::Path, client: &kube::Client) {
    use kube::api::ListParams;
    let kinds = ["MachineConfig", "MachineConfigPool", "ControllerConfig"];
    let mut lists: Vec<(String, Result<serde_json::Value, kube::Error>)> = Vec::new();
    for kind in kinds {
        let listed = crate::mco::api::mco_api(client, kind)
            .list(&ListParams::default())
            .await
            .map(|l| serde_json::json!({"apiVersion": "v1", "kind": "List", "items": l.items}));
        lists.push((format!("{}s", kind.to_lowercase()), listed));
    }
    let nodes = kube::Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map(|l| serde_json::json!({"apiVersion": "v1", "kind": "List", "items": l.items}));
    lists.push(("nodes".into(), nodes));
    for (name, listed) in lists {
        let text = match listed.map(|v| serde_yaml::to_string(&v)) {
            Ok(Ok(yaml)) => yaml,
            Ok(Err(e)) => format!("# could not be written as YAML: {e}\n"),
            Err(e) => format!("# could not be listed: {e}\n"),
        };
        let _ = std::fs::write(dir.join(format!("{name}.yaml")), text);
    }
}
