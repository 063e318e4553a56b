//! The steps no definition matches (or several do), named before a run with the nearest
//! phrases of the catalogue.

use super::select::{Selection, TagFilter, picked, scenarios_of, select, steps_run, tags_of};
use super::*;

/// The steps of the scenarios this run selects that match no step definition, or several.
pub(super) fn undefined_steps(
    config: &RunConfig,
    features: &[Feature],
    tags: Option<&TagFilter>,
) -> Vec<UndefinedStep> {
    let steps = ConformanceWorld::collection();
    let phrases = catalogue::catalogue();
    let mut out: Vec<UndefinedStep> = Vec::new();
    for feature in features {
        use cucumber::feature::Ext as _;
        let Ok(feature) = feature.clone().expand_examples() else {
            continue;
        };
        let file = feature
            .path
            .as_ref()
            .map_or_else(|| feature.name.clone(), |p| p.display().to_string());
        for (rule, scenario) in scenarios_of(&feature) {
            let all = tags_of(&feature, rule, scenario);
            if !picked(config.only.as_ref(), &feature, scenario.position.line as u64)
                || config
                    .profiles
                    .iter()
                    .all(|&p| select(p, config.nodes, tags, &all) == Selection::Out)
            {
                continue;
            }
            for step in steps_run(&feature, rule, scenario) {
                let (problem, nearest) = match steps.find(step) {
                    Ok(Some(_)) => continue,
                    Ok(None) => ("undefined".to_string(), catalogue::nearest(&step.value, &phrases)),
                    Err(e) => (format!("ambiguous ({e})"), Vec::new()),
                };
                let found = UndefinedStep {
                    file: file.clone(),
                    line: step.position.line,
                    step: format!("{}{}", step.keyword, step.value),
                    problem,
                    nearest,
                };
                if !out.contains(&found) {
                    out.push(found);
                }
            }
        }
    }
    out
}
