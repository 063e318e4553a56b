//! A scenario's identity: its feature file's name, its name as cucumber expands it (an Outline's
//! `<placeholders>` filled from its row), and for an Outline row the row's values. Within one
//! profile's run it names one scenario (Examples blocks of different profiles may hold the same
//! row). Tables key a scenario by it and its profile, so a line added to a feature file changes
//! none of them; a line is only where the scenario is now, found from its identity (`locate`) or
//! the other way round (`at_line`).

use super::lint::{PROFILE_TAGS, feature_files};
use cucumber::gherkin::{Feature, GherkinEnv, Scenario};
use std::path::{Path, PathBuf};

/// Who a scenario is, whatever line it starts at.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ScenarioId {
    /// The feature file's name (`signer_rotation.feature`).
    pub file: String,
    /// The scenario's name, an Outline's placeholders filled from its row.
    pub name: String,
    /// An Outline row's values under their headers, in the header's order.
    pub row: Vec<(String, String)>,
}

impl ScenarioId {
    /// The scenario as a table cell names it, after its file: its name, and an Outline row's
    /// values (`The journal shows each profile's log lines (row: line=skipping reboot)`).
    pub fn scenario(&self) -> String {
        if self.row.is_empty() {
            return self.name.clone();
        }
        let values: Vec<String> = self.row.iter().map(|(h, v)| format!("{h}={v}")).collect();
        format!("{} (row: {})", self.name, values.join(", "))
    }
}

impl std::fmt::Display for ScenarioId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.scenario())
    }
}

/// One scenario as cucumber runs it: who it is, where it is now, and its tags (the feature's, a
/// rule's, its own and its Examples block's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    pub id: ScenarioId,
    pub line: u64,
    pub tags: Vec<String>,
}

impl Expanded {
    /// Whether a run for the profile (`ocp-4.16`) takes it: it names that profile or none.
    pub fn for_profile(&self, profile: &str) -> bool {
        let named: Vec<&String> = self
            .tags
            .iter()
            .filter(|t| PROFILE_TAGS.contains(&t.as_str()))
            .collect();
        named.is_empty() || named.iter().any(|t| *t == profile)
    }
}

/// The name a feature goes by in identities and progress lines: its file's name (the feature's
/// own name for one read from no file).
pub fn feature_file(feature: &Feature) -> String {
    feature
        .path
        .as_ref()
        .and_then(|p| p.file_name())
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| feature.name.clone())
}

/// Every scenario of a feature as cucumber runs it (an Outline once per row), with the line
/// cucumber gives it (an Outline row's: its Examples keyword's line, plus one for the header,
/// plus the row's number).
pub fn scenarios(feature: &Feature) -> Vec<Expanded> {
    let file = feature_file(feature);
    let all = feature.scenarios.iter().map(|s| (&[][..], s)).chain(
        feature
            .rules
            .iter()
            .flat_map(|r| r.scenarios.iter().map(move |s| (&r.tags[..], s))),
    );
    let mut out = Vec::new();
    for (rule_tags, scenario) in all {
        let tags: Vec<String> = feature
            .tags
            .iter()
            .chain(rule_tags)
            .chain(&scenario.tags)
            .cloned()
            .collect();
        out.extend(expanded(&file, scenario, &tags));
    }
    out
}

fn expanded(file: &str, scenario: &Scenario, tags: &[String]) -> Vec<Expanded> {
    if scenario.examples.is_empty() {
        let id = ScenarioId {
            file: file.to_string(),
            name: scenario.name.clone(),
            row: Vec::new(),
        };
        return vec![Expanded {
            id,
            line: scenario.position.line as u64,
            tags: tags.to_vec(),
        }];
    }
    let mut out = Vec::new();
    for examples in &scenario.examples {
        let Some(table) = &examples.table else { continue };
        let Some((header, rows)) = table.rows.split_first() else {
            continue;
        };
        for (i, values) in rows.iter().enumerate() {
            let row: Vec<(String, String)> = header.iter().cloned().zip(values.iter().cloned()).collect();
            let name = row.iter().fold(scenario.name.clone(), |name, (h, v)| {
                name.replace(&format!("<{h}>"), v)
            });
            let id = ScenarioId {
                file: file.to_string(),
                name,
                row,
            };
            out.push(Expanded {
                id,
                line: (examples.position.line + i + 2) as u64,
                tags: tags.iter().chain(&examples.tags).cloned().collect(),
            });
        }
    }
    out
}

/// The identity of the scenario cucumber places at `line` of the feature file at `path`.
pub fn at_line(path: &Path, line: u64) -> Option<ScenarioId> {
    let feature = Feature::parse_path(path, GherkinEnv::default()).ok()?;
    scenarios(&feature)
        .into_iter()
        .find(|s| s.line == line)
        .map(|s| s.id)
}

/// Where the scenario a table names for a profile (`file`, and `scenario` as
/// `ScenarioId::scenario` writes it) is now: the feature file under `paths` and its line; an
/// error says what was looked for and what that file holds for the profile.
pub fn locate(
    paths: &[PathBuf],
    profile: &str,
    file: &str,
    scenario: &str,
) -> Result<(PathBuf, u64), String> {
    let path = feature_files(paths)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|f| f.to_string_lossy() == file))
        .ok_or_else(|| format!("no feature file {file} under {paths:?}"))?;
    let feature =
        Feature::parse_path(&path, GherkinEnv::default()).map_err(|e| format!("{}: {e}", path.display()))?;
    let all: Vec<Expanded> = scenarios(&feature)
        .into_iter()
        .filter(|s| s.for_profile(profile))
        .collect();
    all.iter()
        .find(|s| s.id.scenario() == scenario)
        .map(|s| (path.clone(), s.line))
        .ok_or_else(|| {
            let names: Vec<String> = all.iter().map(|s| s.id.scenario()).collect();
            format!("{file} has no scenario {scenario:?} for {profile}; it has {names:?}")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../features")
    }

    /// Every shipped feature file, and a copy of each with a line inserted at its top: the same
    /// identities, each one line further down, and unique within its file for each profile.
    #[test]
    fn a_line_inserted_at_the_top_changes_no_identity() {
        let copy = tempfile::tempdir().unwrap();
        let files = feature_files(&[features()]);
        assert!(files.len() >= 10, "{files:?}");
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            let moved = copy.path().join(file.file_name().unwrap());
            std::fs::write(&moved, format!("# a line inserted at the top\n{text}")).unwrap();
            let parse = |p: &Path| scenarios(&Feature::parse_path(p, GherkinEnv::default()).unwrap());
            let (before, after) = (parse(file), parse(&moved));
            assert_eq!(
                before.iter().map(|s| (&s.id, s.line + 1)).collect::<Vec<_>>(),
                after.iter().map(|s| (&s.id, s.line)).collect::<Vec<_>>(),
                "{}",
                file.display()
            );
            for profile in PROFILE_TAGS {
                let of_profile: Vec<&Expanded> = after.iter().filter(|s| s.for_profile(profile)).collect();
                let mut ids: Vec<&ScenarioId> = of_profile.iter().map(|s| &s.id).collect();
                ids.sort();
                ids.dedup();
                assert_eq!(
                    ids.len(),
                    of_profile.len(),
                    "identities are unique for {profile} in {}",
                    file.display()
                );
                for s in of_profile {
                    assert_eq!(at_line(&moved, s.line).as_ref(), Some(&s.id));
                    assert_eq!(
                        locate(
                            &[copy.path().to_path_buf()],
                            profile,
                            &s.id.file,
                            &s.id.scenario()
                        ),
                        Ok((moved.clone(), s.line))
                    );
                }
            }
        }
    }

    /// The tables that name scenarios (the self-test table of docs/self-test.md, the upstream
    /// daemons' and controllers' differences) name each by file and name alone, and each still
    /// names a scenario once every feature file has a line more at its top.
    #[test]
    fn a_line_inserted_at_the_top_changes_no_table() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let copy = tempfile::tempdir().unwrap();
        for file in feature_files(&[features()]) {
            let text = std::fs::read_to_string(&file).unwrap();
            std::fs::write(
                copy.path().join(file.file_name().unwrap()),
                format!("# a line inserted at the top\n{text}"),
            )
            .unwrap();
        }
        let (before, after) = (vec![features()], vec![copy.path().to_path_buf()]);
        let doc = std::fs::read_to_string(root.join("docs/self-test.md")).unwrap();
        let rows = super::super::self_test::table_rows(&doc);
        assert!(rows.len() >= 40, "{rows:?}");
        let line_of = |paths: &[PathBuf], r: &super::super::self_test::TableRow| {
            locate(paths, &r.profile, &r.file, &r.scenario).map(|(_, line)| line)
        };
        for row in &rows {
            let was = line_of(&before, row).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(line_of(&after, row), Ok(was + 1), "{row:?}");
        }
        assert!(
            !doc.lines()
                .any(|l| l.starts_with("| `") && l.contains(".feature:")),
            "the table names no line"
        );
        // The upstream tables name a scenario as `file: name`.
        let names: Vec<String> = feature_files(&after)
            .iter()
            .flat_map(|p| scenarios(&Feature::parse_path(p, GherkinEnv::default()).unwrap()))
            .map(|s| format!("{}: {}", s.id.file, s.id.name))
            .collect();
        for fixture in ["upstream-daemons.yaml", "upstream-controllers.yaml"] {
            let text = std::fs::read_to_string(root.join("fixtures").join(fixture)).unwrap();
            for line in text.lines().filter_map(|l| l.trim().strip_prefix("- scenario: ")) {
                let named = line.trim_matches('"');
                assert!(names.iter().any(|n| n == named), "{fixture}: {named}");
            }
        }
    }

    #[test]
    fn an_outline_row_is_named_with_its_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.feature");
        std::fs::write(
            &path,
            "Feature: f\n  Scenario Outline: change <what>\n    Given <n>\n\n    Examples:\n      | what | n |\n      | a    | 1 |\n      | b    | 2 |\n",
        )
        .unwrap();
        let id = at_line(&path, 8).unwrap();
        assert_eq!(id.to_string(), "o.feature: change b (row: what=b, n=2)");
        let e = locate(
            &[dir.path().to_path_buf()],
            "ocp-4.16",
            "o.feature",
            "change c (row: what=c, n=3)",
        )
        .unwrap_err();
        assert!(e.contains("change a (row: what=a, n=1)"), "{e}");
    }
}
