//! The README's features table, generated from the feature files with the run's own selection
//! rules, so it cannot go stale.

use super::{Nodes, Selection, expanded, lint, scenarios_of, select, tags_of};
use crate::profile::Profile;
use std::path::PathBuf;

/// The features table of the README, generated from the feature files so it cannot go stale:
/// per file its title, how many scenarios run on each profile (Outline rows counted, `@slow`
/// and `@container` ones included), and its scenarios' titles with the profiles they are for.
pub fn features_markdown(paths: &[PathBuf]) -> Result<String, Vec<lint::LintError>> {
    let files = lint::feature_files(paths);
    let features = lint::lint(&files)?;
    let mut out = String::from(
        "| feature | scenarios (ocp-4.12 / ocp-4.16) | what it checks: its scenarios |\n|---|---|---|\n",
    );
    for (file, feature) in files.iter().zip(&features) {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut totals = [0usize; 2];
        let mut titles = Vec::new();
        for (rule, scenario) in scenarios_of(feature) {
            let mut counts = [0usize; 2];
            for (_, row_tags, _) in expanded(scenario) {
                let mut all = tags_of(feature, rule, scenario);
                all.extend(row_tags);
                for (i, profile) in Profile::ALL.iter().enumerate() {
                    if !matches!(select(*profile, Nodes::Container, None, &all), Selection::Out) {
                        counts[i] += 1;
                    }
                }
            }
            totals[0] += counts[0];
            totals[1] += counts[1];
            let mut notes = Vec::new();
            match counts {
                [n, 0] => notes.push(if n > 1 {
                    format!("4.12 only, {n} rows")
                } else {
                    "4.12 only".into()
                }),
                [0, n] => notes.push(if n > 1 {
                    format!("4.16 only, {n} rows")
                } else {
                    "4.16 only".into()
                }),
                [a, b] if a > 1 || b > 1 => notes.push(format!("{a} rows on 4.12, {b} on 4.16")),
                _ => {}
            }
            for tag in ["slow", "scale", "container"] {
                if tags_of(feature, rule, scenario).iter().any(|t| t == tag) {
                    notes.push(format!("@{tag}"));
                }
            }
            let title = scenario.name.replace('|', "\\|");
            titles.push(if notes.is_empty() {
                title
            } else {
                format!("{title} ({})", notes.join(", "))
            });
        }
        out.push_str(&format!(
            "| `{name}`: {} | {} / {} | {} |\n",
            feature.name.replace('|', "\\|"),
            totals[0],
            totals[1],
            titles.join("; ")
        ));
    }
    Ok(out)
}
