//! A run's plan, decided before anything runs: the paths checked, the features linted, the
//! one scenario `--only` names found, the tag expression parsed, the steps no definition
//! matches named, and which scenarios each profile skips and why. Nothing here starts a node
//! or writes a report; a plan that selects nothing to run is refused here.

use super::profile_run::report_path;
use super::select::{Selection, TagFilter, expanded, picked, scenarios_of, select_for_agent, tags_of};
use super::undefined::undefined_steps;
use super::*;

/// The features a run takes, as linted, the user's tags, and the steps no definition matches.
pub(super) struct Plan {
    pub(super) features: Vec<Feature>,
    pub(super) tags: Option<TagFilter>,
    pub(super) undefined: Vec<UndefinedStep>,
}

/// Every report file a run writes: removed before it starts.
fn report_files(config: &RunConfig) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = config
        .profiles
        .iter()
        .flat_map(|&p| {
            [
                report_path(config, config.junit.as_ref(), p, "junit.xml"),
                report_path(config, config.json.as_ref(), p, "cucumber.json"),
            ]
        })
        .collect();
    files.extend(config.report.clone());
    files.extend(config.html.clone());
    files
}

/// Remove the reports and the failed scenarios' evidence an earlier run left where this one
/// writes: a stale report must not stand for this run, refused or not.
pub(super) fn clear_reports(config: &RunConfig) -> Result<(), RunError> {
    for file in report_files(config) {
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(RunError::Io(file, e)),
            _ => {}
        }
    }
    for profile in &config.profiles {
        let _ = std::fs::remove_dir_all(config.report_dir.join("failed").join(profile.as_str()));
    }
    Ok(())
}

/// The paths checked and their features linted, `--only` found, the tags parsed, and the
/// undefined steps of the scenarios the run selects.
pub(super) fn plan(config: &RunConfig) -> Result<Plan, RunError> {
    for path in &config.paths {
        if !path.exists() {
            return Err(RunError::MissingPath(path.clone()));
        }
        if path.is_file() && path.extension().is_none_or(|x| x != "feature") {
            return Err(RunError::NotAFeature(path.clone()));
        }
    }
    let files = lint::feature_files(&config.paths);
    if files.is_empty() {
        return Err(RunError::NoFeatures(config.paths.clone()));
    }
    let features = lint::lint(&files).map_err(RunError::Lint)?;
    if let Some(only) = &config.only {
        only_names_a_scenario(&features, only)?;
    }
    let tags = match &config.tags {
        Some(t) => Some(TagFilter::parse(t).map_err(|e| RunError::Tags(t.clone(), e))?),
        None => None,
    };
    let undefined = undefined_steps(config, &features, tags.as_ref());
    Ok(Plan {
        features,
        tags,
        undefined,
    })
}

/// `--only`'s file and line name a scenario (or an Outline's row) of the features.
fn only_names_a_scenario(features: &[Feature], (file, line): &(String, u64)) -> Result<(), RunError> {
    let lines: Vec<u64> = features
        .iter()
        .filter(|f| {
            f.path
                .as_ref()
                .and_then(|p| p.file_name())
                .is_some_and(|n| n.to_string_lossy() == *file)
        })
        .flat_map(|f| scenarios_of(f).flat_map(|(_, s)| expanded(s)).map(|(_, _, l)| l))
        .collect();
    if lines.contains(line) {
        return Ok(());
    }
    Err(RunError::NoScenarioAt {
        file: file.clone(),
        line: *line,
        lines,
    })
}

impl Plan {
    /// The scenarios the run skips, each `profile: feature: scenario: reason`, in the order of
    /// the profiles, the features and their scenarios. `no_engine`: why there are no container
    /// nodes (no Docker engine), so that every scenario that would run is skipped instead, and
    /// nothing counts as passed. A run that selects nothing to run is refused unless
    /// `allow_empty`.
    pub(super) fn skips(&self, config: &RunConfig, no_engine: Option<&str>) -> Result<Vec<String>, RunError> {
        let mut skipped = Vec::new();
        let mut to_run = 0;
        let reference = matches!(config.agent, AgentKind::Reference);
        for &profile in &config.profiles {
            for feature in &self.features {
                // A skipped scenario is named by its identity (an Outline row by its values).
                let ids: std::collections::BTreeMap<u64, identity::ScenarioId> = identity::scenarios(feature)
                    .into_iter()
                    .map(|e| (e.line, e.id))
                    .collect();
                for (rule, scenario) in scenarios_of(feature) {
                    for (name, scenario_tags, line) in expanded(scenario) {
                        if !picked(config.only.as_ref(), feature, line) {
                            continue;
                        }
                        let mut all = tags_of(feature, rule, scenario);
                        all.extend(scenario_tags);
                        let selection = select_for_agent(
                            profile,
                            config.nodes,
                            self.tags.as_ref(),
                            &all,
                            reference,
                            config.real_apiserver(),
                        );
                        let reason = match (selection, no_engine) {
                            (Selection::Skip(reason), _) => reason,
                            (Selection::Run, Some(why)) => format!("no Docker engine ({why})"),
                            (Selection::Run, None) => {
                                to_run += 1;
                                continue;
                            }
                            (Selection::Out, _) => continue,
                        };
                        let name = ids.get(&line).map_or(name, identity::ScenarioId::scenario);
                        skipped.push(format!("{profile}: {}: {name}: {reason}", feature.name));
                    }
                }
            }
        }
        if to_run == 0 && !config.allow_empty {
            return Err(nothing_to_run(config, &skipped));
        }
        Ok(skipped)
    }
}

/// Why a run's paths and tags select no scenario to run, naming the first skips.
fn nothing_to_run(config: &RunConfig, skipped: &[String]) -> RunError {
    let profiles: Vec<&str> = config.profiles.iter().map(|p| p.as_str()).collect();
    let mut why = format!(
        "no scenario of {} is selected to run on {} with {} nodes",
        config
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        profiles.join(" and "),
        match config.nodes {
            Nodes::Embedded => "embedded",
            Nodes::Container => "container",
        },
    );
    if let Some(t) = &config.tags {
        why.push_str(&format!(" and the tags {t:?}"));
    }
    if !skipped.is_empty() {
        why.push_str(&format!(
            "; {} skipped: {}",
            skipped.len(),
            skipped.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
        ));
    }
    RunError::Empty(why)
}

#[cfg(test)]
mod tests;
