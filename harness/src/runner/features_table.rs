//! The features table of `docs/features.md`, generated from the feature files with the run's own
//! selection rules, so it cannot go stale.

use super::select::{Selection, expanded, scenarios_of, select, tags_of};
use super::{Nodes, lint};
use crate::profile::Profile;
use std::path::PathBuf;

/// The features table of `docs/features.md`, generated from the feature files so it cannot go
/// stale: per file its title, how many scenarios run on each profile (Outline rows counted, `@slow`
/// and `@container` ones included), and its scenarios' titles with the profiles they are for.
pub fn features_markdown(paths: &[PathBuf]) -> Result<String, Vec<lint::LintError>> {
    let files = lint::feature_files(paths);
    let features = lint::lint(&files)?;
    let columns = Profile::ALL.map(Profile::as_str).join(" / ");
    let mut out =
        format!("| feature | scenarios ({columns}) | what it checks: its scenarios |\n|---|---|---|\n");
    for (file, feature) in files.iter().zip(&features) {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut totals = [0usize; Profile::ALL.len()];
        let mut titles = Vec::new();
        for (rule, scenario) in scenarios_of(feature) {
            let mut counts = [0usize; Profile::ALL.len()];
            for (_, row_tags, _) in expanded(scenario) {
                let mut all = tags_of(feature, rule, scenario);
                all.extend(row_tags);
                for (i, profile) in Profile::ALL.iter().enumerate() {
                    if !matches!(select(*profile, Nodes::Container, None, &all), Selection::Out) {
                        counts[i] += 1;
                    }
                }
            }
            for (total, count) in totals.iter_mut().zip(counts) {
                *total += count;
            }
            let mut notes = Vec::new();
            notes.extend(profile_note(&counts));
            for tag in ["slow", "scale", "container", "in-process-apiserver"] {
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
            "| `{name}`: {} | {} | {} |\n",
            feature.name.replace('|', "\\|"),
            totals.map(|t| t.to_string()).join(" / "),
            titles.join("; ")
        ));
    }
    Ok(out)
}

/// What a scenario's row counts per profile say: which profiles it is for when not all, and its
/// rows per profile when an Outline has more than one ("4.14, 4.16 only"; "2 rows on 4.12, 3 on
/// 4.14, 3 on 4.16").
fn profile_note(counts: &[usize; Profile::ALL.len()]) -> Option<String> {
    let short = |p: &Profile| p.as_str().trim_start_matches("ocp-").to_string();
    let present: Vec<(String, usize)> = Profile::ALL
        .iter()
        .zip(counts)
        .filter(|(_, n)| **n > 0)
        .map(|(p, n)| (short(p), *n))
        .collect();
    let first = present.first().map_or(0, |(_, n)| *n);
    let same = present.iter().all(|(_, n)| *n == first);
    // "3 rows", or each profile's count when they differ.
    let rows = || {
        if same {
            format!("{first} rows")
        } else {
            present
                .iter()
                .enumerate()
                .map(|(i, (p, n))| match i {
                    0 => format!("{n} rows on {p}"),
                    _ => format!("{n} on {p}"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let many = present.iter().any(|(_, n)| *n > 1);
    match (present.len(), many) {
        (0, _) => None,
        (n, _) if n < Profile::ALL.len() => {
            let names: Vec<&str> = present.iter().map(|(p, _)| p.as_str()).collect();
            let names = names.join(", ");
            Some(if many {
                format!("{names} only, {}", rows())
            } else {
                format!("{names} only")
            })
        }
        (_, true) if same => Some(format!("{first} rows on each")),
        (_, true) => Some(rows()),
        (_, false) => None,
    }
}

#[cfg(test)]
mod note_tests {
    use super::profile_note;

    #[test]
    fn notes_name_the_profiles_a_scenario_is_for_and_its_rows() {
        assert_eq!(profile_note(&[1, 1, 1]), None);
        assert_eq!(profile_note(&[0, 0, 1]).as_deref(), Some("4.16 only"));
        assert_eq!(profile_note(&[0, 1, 1]).as_deref(), Some("4.14, 4.16 only"));
        assert_eq!(profile_note(&[3, 0, 0]).as_deref(), Some("4.12 only, 3 rows"));
        assert_eq!(
            profile_note(&[0, 2, 3]).as_deref(),
            Some("4.14, 4.16 only, 2 rows on 4.14, 3 on 4.16")
        );
        assert_eq!(profile_note(&[2, 2, 2]).as_deref(), Some("2 rows on each"));
        assert_eq!(
            profile_note(&[2, 3, 3]).as_deref(),
            Some("2 rows on 4.12, 3 on 4.14, 3 on 4.16")
        );
        assert_eq!(profile_note(&[0, 0, 0]), None);
    }
}
