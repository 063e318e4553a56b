//! Which scenarios a run takes: the profile tags, the user's tag expression, `@slow`, `@scale`,
//! `@container` and `@embedded`, and one scenario by file and line; and the scenarios of a feature as cucumber
//! expands them (an Outline's rows, each with its own line).

use super::*;
use crate::scenario::endpoint::{IN_PROCESS_REASON, IN_PROCESS_TAG};

/// Why an embedded run skips a `@container` scenario.
pub(super) const CONTAINER_SKIP: &str = "@container: needs container nodes (--nodes container)";

/// Why a container run skips an `@embedded` scenario.
pub(super) const EMBEDDED_SKIP: &str = "@embedded: needs embedded nodes (the scenario asks for them)";

/// Why a run whose agent is not the reference daemon skips a `@light` scenario.
pub(super) const LIGHT_SKIP: &str =
    "@light: light nodes run the reference daemon in this process; this run's agent is another";

/// What to do with one (expanded) scenario in a run for `profile`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Selection {
    Run,
    /// Not part of this run at all (another profile's, or excluded by the user's tags).
    Out,
    Skip(String),
}

/// Tags whose scenarios run only when the user's tag expression names them: `@slow` (long
/// simulated spans) and `@scale` (clusters of a thousand nodes and more).
pub(crate) const OPT_IN_TAGS: [&str; 2] = ["slow", "scale"];

/// The user's tag expression, parsed, and the opt-in tags it names.
#[derive(Debug, Clone)]
pub(super) struct TagFilter {
    pub(super) expr: cucumber::gherkin::tagexpr::TagOperation,
    pub(super) opted_in: Vec<&'static str>,
}

impl TagFilter {
    pub(super) fn parse(text: &str) -> Result<TagFilter, String> {
        Ok(TagFilter {
            expr: text
                .parse::<cucumber::gherkin::tagexpr::TagOperation>()
                .map_err(|e| e.to_string())?,
            opted_in: OPT_IN_TAGS
                .into_iter()
                .filter(|tag| text.contains(&format!("@{tag}")))
                .collect(),
        })
    }
}

pub(super) fn select(
    profile: Profile,
    nodes: Nodes,
    tags: Option<&TagFilter>,
    all_tags: &[String],
) -> Selection {
    let has = |t: &str| all_tags.iter().any(|x| x == t);
    let for_profiles: Vec<&str> = lint::PROFILE_TAGS.iter().copied().filter(|t| has(t)).collect();
    if !for_profiles.is_empty() && !for_profiles.contains(&profile.as_str()) {
        return Selection::Out;
    }
    if let Some(filter) = tags
        && !filter.expr.eval(all_tags.iter())
    {
        return Selection::Out;
    }
    for tag in OPT_IN_TAGS {
        if has(tag) && !tags.is_some_and(|t| t.opted_in.contains(&tag)) {
            return Selection::Skip(format!("@{tag}: left out unless asked for (--tags @{tag})"));
        }
    }
    if has("container") && nodes == Nodes::Embedded {
        return Selection::Skip(CONTAINER_SKIP.into());
    }
    if has("embedded") && nodes == Nodes::Container {
        return Selection::Skip(EMBEDDED_SKIP.into());
    }
    Selection::Run
}

/// [`select`] for a run whose agent is the reference daemon or not, against the in-process
/// API server or not: light nodes (`Given a fresh cluster with N light worker nodes`, tag
/// `@light`) run only the reference daemon, so with another agent their scenarios are skipped,
/// saying why, rather than failed; likewise `@in-process-apiserver` scenarios against a
/// kube-apiserver given by kubeconfig.
pub(super) fn select_for_agent(
    profile: Profile,
    nodes: Nodes,
    tags: Option<&TagFilter>,
    all_tags: &[String],
    reference_agent: bool,
    real_apiserver: bool,
) -> Selection {
    let has = |t: &str| all_tags.iter().any(|x| x == t);
    match select(profile, nodes, tags, all_tags) {
        Selection::Run if !reference_agent && has("light") => Selection::Skip(LIGHT_SKIP.into()),
        Selection::Run if real_apiserver && has(IN_PROCESS_TAG) => {
            Selection::Skip(format!("@{IN_PROCESS_TAG}: {IN_PROCESS_REASON}"))
        }
        other => other,
    }
}

/// Whether `--only` (a file name and a line) picks the scenario at `line` of `feature`.
pub(super) fn picked(only: Option<&(String, u64)>, feature: &Feature, line: u64) -> bool {
    only.is_none_or(|(file, at)| {
        line == *at
            && feature
                .path
                .as_ref()
                .and_then(|p| p.file_name())
                .is_some_and(|f| f.to_string_lossy() == *file)
    })
}

/// Every scenario of a feature, with the rule it sits in, if any.
pub(super) fn scenarios_of(feature: &Feature) -> impl Iterator<Item = (Option<&Rule>, &Scenario)> {
    feature.scenarios.iter().map(|s| (None, s)).chain(
        feature
            .rules
            .iter()
            .flat_map(|r| r.scenarios.iter().map(move |s| (Some(r), s))),
    )
}

/// A scenario's tags: the feature's, the rule's and its own, and `@in-process-apiserver` where
/// a step of it (or of a Background it runs) needs the in-process API server, whether the
/// feature says so or not.
pub(super) fn tags_of(feature: &Feature, rule: Option<&Rule>, scenario: &Scenario) -> Vec<String> {
    let mut tags: Vec<String> = feature
        .tags
        .iter()
        .chain(rule.iter().flat_map(|r| r.tags.iter()))
        .chain(scenario.tags.iter())
        .cloned()
        .collect();
    if !tags.iter().any(|t| t == IN_PROCESS_TAG) && in_process_step(feature, rule, scenario).is_some() {
        tags.push(IN_PROCESS_TAG.to_string());
    }
    tags
}

/// The steps only the in-process API server can take (they swap its serving certificate), by
/// how they begin.
const IN_PROCESS_STEPS: &[&str] = &["the kube-apiserver serves a certificate from"];

/// The first step the scenario runs (Backgrounds first) that only the in-process API server
/// can take.
pub(super) fn in_process_step<'a>(
    feature: &'a Feature,
    rule: Option<&'a Rule>,
    scenario: &'a Scenario,
) -> Option<&'a cucumber::gherkin::Step> {
    steps_run(feature, rule, scenario).find(|s| IN_PROCESS_STEPS.iter().any(|p| s.value.starts_with(p)))
}

/// Every step a scenario runs, in order: the feature's Background, the rule's, then its own.
pub(super) fn steps_run<'a>(
    feature: &'a Feature,
    rule: Option<&'a Rule>,
    scenario: &'a Scenario,
) -> impl Iterator<Item = &'a cucumber::gherkin::Step> {
    feature
        .background
        .iter()
        .chain(rule.and_then(|r| r.background.as_ref()))
        .flat_map(|b| b.steps.iter())
        .chain(scenario.steps.iter())
}

/// A scenario's name, the extra tags of each row it expands to, and the line cucumber gives it
/// (an Outline's row: the row's line, counted as cucumber counts it from its Examples keyword).
pub(super) fn expanded(scenario: &Scenario) -> Vec<(String, Vec<String>, u64)> {
    if scenario.examples.is_empty() {
        return vec![(scenario.name.clone(), Vec::new(), scenario.position.line as u64)];
    }
    scenario
        .examples
        .iter()
        .flat_map(|ex| {
            let rows = ex.table.as_ref().map_or(0, |t| t.rows.len().saturating_sub(1));
            (0..rows).map(move |i| {
                (
                    format!("{} (row {})", scenario.name, i + 1),
                    ex.tags.clone(),
                    (ex.position.line + i + 2) as u64,
                )
            })
        })
        .collect()
}

/// `features/x.feature:27`, as the progress lines and reports name a scenario: the file and
/// the line, when the argument is not itself a path that exists and the part before the last
/// `:` is a file.
pub fn scenario_at(arg: &std::path::Path) -> Option<(PathBuf, u64)> {
    if arg.exists() {
        return None;
    }
    let text = arg.to_str()?;
    let (file, line) = text.rsplit_once(':')?;
    let line = line.parse::<u64>().ok().filter(|l| *l > 0)?;
    let file = PathBuf::from(file);
    file.is_file().then_some((file, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Feature {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("swap.feature");
        std::fs::write(&file, text).unwrap();
        lint::lint(&[file]).unwrap().remove(0)
    }

    /// A scenario that swaps the API server's serving certificate, in its own steps or its
    /// Background's, runs in process without the tag and is skipped, saying why, against
    /// `--apiserver`; one that does not is left alone.
    #[test]
    fn a_serving_certificate_swap_needs_no_tag_to_run_in_process_only() {
        let feature = parsed(
            "Feature: f\n  Scenario: untagged swap\n    Given a fresh cluster with 1 worker node\n    When the kube-apiserver serves a certificate from its new CA\n\n  Scenario: no swap\n    Given a fresh cluster with 1 worker node\n\n  Rule: r\n    Background:\n      Given a fresh cluster with 1 worker node\n      When the kube-apiserver serves a certificate from its new CA\n\n    Scenario: swapped by the background\n      Then every node is Ready\n",
        );
        let p = Profile::Ocp416;
        let verdicts: Vec<(String, Selection, Selection)> = scenarios_of(&feature)
            .map(|(rule, scenario)| {
                let tags = tags_of(&feature, rule, scenario);
                (
                    scenario.name.clone(),
                    select_for_agent(p, Nodes::Embedded, None, &tags, true, false),
                    select_for_agent(p, Nodes::Embedded, None, &tags, true, true),
                )
            })
            .collect();
        let skipped = Selection::Skip(format!("@{IN_PROCESS_TAG}: {IN_PROCESS_REASON}"));
        assert_eq!(
            verdicts,
            [
                ("untagged swap".to_string(), Selection::Run, skipped.clone()),
                ("no swap".to_string(), Selection::Run, Selection::Run),
                ("swapped by the background".to_string(), Selection::Run, skipped),
            ]
        );
        // A tag filter sees the inferred tag as a written one.
        let (rule, scenario) = scenarios_of(&feature).next().unwrap();
        assert!(tags_of(&feature, rule, scenario).contains(&IN_PROCESS_TAG.to_string()));
    }
}
