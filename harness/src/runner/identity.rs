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

/// The HTML report's anchor for a scenario of a profile's run: the profile, the feature file
/// and the scenario as `ScenarioId::scenario` writes it, lower case, every run of other
/// characters than letters, digits, `.` and `_` one `-`
/// (`ocp-4.16/signer_rotation.feature/a-forced-rotation-reaches-the-node`). No line: a line
/// added to a feature file moves no anchor. `distinct` is false when another scenario on the
/// same page comes to the same anchor; both then end with a hash of their whole identity.
pub fn anchor(profile: &str, id: &ScenarioId, distinct: bool) -> String {
    let mut slug = String::new();
    for c in id.scenario().chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    let base = format!("{profile}/{}/{slug}", id.file);
    if distinct {
        return base;
    }
    // FNV-1a: the same on every run and platform.
    let hash = id.to_string().bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{base}-{:08x}", hash as u32)
}

/// The identities of a feature file's scenarios, read from the file at `path` (as a run's
/// results name it), to name each result a run reports by its line.
pub struct FileScenarios {
    file: String,
    scenarios: Vec<Expanded>,
}

impl FileScenarios {
    pub fn read(path: &Path) -> Self {
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let scenarios = Feature::parse_path(path, GherkinEnv::default())
            .map(|f| scenarios(&f))
            .unwrap_or_default();
        FileScenarios { file, scenarios }
    }

    /// Who the scenario the run placed at `line` and named `name` is; a file that no longer
    /// has it there (edited during the run) leaves its name alone.
    pub fn id(&self, line: u64, name: &str) -> ScenarioId {
        self.scenarios
            .iter()
            .find(|s| s.line == line)
            .map(|s| s.id.clone())
            .unwrap_or_else(|| ScenarioId {
                file: self.file.clone(),
                name: name.to_string(),
                row: Vec::new(),
            })
    }
}

/// Who a scenario cucumber runs is, from the feature as cucumber hands it to a hook: an
/// Outline's rows already expanded, each a scenario at its row's line with its name filled in and
/// one Examples table of the header and its row. `line` is the scenario's; one the feature has
/// no scenario at leaves `name` alone.
pub fn of(feature: &Feature, line: u64, name: &str) -> ScenarioId {
    let found = feature
        .scenarios
        .iter()
        .chain(feature.rules.iter().flat_map(|r| r.scenarios.iter()))
        .find(|s| s.position.line as u64 == line);
    let row = found
        .and_then(|s| s.examples.first())
        .and_then(|e| e.table.as_ref())
        .and_then(|t| match t.rows.as_slice() {
            [header, values] => Some(header.iter().cloned().zip(values.iter().cloned()).collect()),
            _ => None,
        })
        .unwrap_or_default();
    ScenarioId {
        file: feature_file(feature),
        name: found.map_or(name, |s| s.name.as_str()).to_string(),
        row,
    }
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

    /// The anchors of the HTML page of a run of every scenario of `files` for every profile,
    /// in the page's order.
    fn html_anchors(files: &[PathBuf]) -> Vec<String> {
        use super::super::report::{FeatureResults, ScenarioOutcome};
        let results = crate::profile::Profile::ALL
            .into_iter()
            .map(|profile| {
                let features = files
                    .iter()
                    .map(|path| FeatureResults {
                        name: String::new(),
                        uri: path.display().to_string(),
                        scenarios: scenarios(&Feature::parse_path(path, GherkinEnv::default()).unwrap())
                            .into_iter()
                            .filter(|s| s.for_profile(profile.as_str()))
                            .map(|s| ScenarioOutcome {
                                name: s.id.name,
                                line: s.line,
                                tags: Vec::new(),
                                failed: false,
                                failure: None,
                                steps: Vec::new(),
                            })
                            .collect(),
                    })
                    .collect();
                (profile, features)
            })
            .collect();
        let summary = super::super::Summary::default();
        let page = super::super::html::render(&super::super::html::Page {
            summary: &summary,
            results,
            command: "",
            verdict: "passed",
        });
        page.split(r#"<details class="scenario "#)
            .skip(1)
            .map(|d| {
                let id = &d[d.find(r#"id=""#).unwrap() + 4..];
                id[..id.find('"').unwrap()].to_string()
            })
            .collect()
    }

    /// Every shipped feature file, and a copy of each with a line inserted at its top: the same
    /// identities, each one line further down, and unique within its file for each profile; the
    /// same anchors on the HTML page, one for each scenario.
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
        let moved: Vec<PathBuf> = files
            .iter()
            .map(|f| copy.path().join(f.file_name().unwrap()))
            .collect();
        let (before, after) = (html_anchors(&files), html_anchors(&moved));
        assert!(before.len() > 3 * files.len(), "{before:?}");
        assert_eq!(before, after, "the HTML page's anchors");
        let mut unique = after.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), after.len(), "one anchor per scenario: {after:?}");
        assert!(
            after.iter().all(|a| !a.contains(':') && !a.contains(' ')),
            "{after:?}"
        );
    }

    /// As a hook sees them (cucumber expands every Outline row into a scenario of its own, its
    /// Examples table cut to the header and its row), every scenario of every shipped feature
    /// file is who the file says it is.
    #[test]
    fn a_scenario_as_cucumber_runs_it_is_who_its_file_says() {
        use cucumber::feature::Ext as _;
        let mut rows = 0;
        for file in feature_files(&[features()]) {
            let feature = Feature::parse_path(&file, GherkinEnv::default()).unwrap();
            let expected = scenarios(&feature);
            let run = feature.expand_examples().unwrap();
            let seen: Vec<(u64, ScenarioId)> = run
                .scenarios
                .iter()
                .chain(run.rules.iter().flat_map(|r| r.scenarios.iter()))
                .map(|s| (s.position.line as u64, of(&run, s.position.line as u64, &s.name)))
                .collect();
            rows += seen.iter().filter(|(_, id)| !id.row.is_empty()).count();
            assert_eq!(
                seen,
                expected.into_iter().map(|s| (s.line, s.id)).collect::<Vec<_>>(),
                "{}",
                file.display()
            );
        }
        assert!(rows > 50, "{rows} Outline rows");
    }

    /// Two scenarios whose names differ only in what an anchor leaves out each get their own,
    /// both ending with a hash; others keep the readable one.
    #[test]
    fn anchors_that_would_meet_are_told_apart() {
        let id = |name: &str| ScenarioId {
            file: "f.feature".into(),
            name: name.into(),
            row: Vec::new(),
        };
        assert_eq!(
            anchor("ocp-4.16", &id("A forced rotation: 80 % (day 292)"), true),
            "ocp-4.16/f.feature/a-forced-rotation-80-day-292"
        );
        let (a, b) = (id("Pool: paused"), id("Pool paused"));
        assert_eq!(anchor("ocp-4.16", &a, true), anchor("ocp-4.16", &b, true));
        assert_ne!(anchor("ocp-4.16", &a, false), anchor("ocp-4.16", &b, false));
        assert!(anchor("ocp-4.16", &a, false).starts_with("ocp-4.16/f.feature/pool-paused-"));
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
