//! Feature-file lint, run before anything executes (DESIGN.md, "Profiles and tags"): a
//! feature that does not parse, a `profile` column in Examples (write one tagged Examples
//! block per profile instead), a Scenario Outline without Examples, and untagged Examples in an
//! Outline whose other Examples are tagged by profile. Every error names the file and line.

use cucumber::gherkin::{Feature, GherkinEnv, Scenario};
use std::path::{Path, PathBuf};

pub const PROFILE_TAGS: &[&str] = &["ocp-4.12", "ocp-4.16"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct LintError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// Every `.feature` file under `paths` (files, or directories searched recursively), sorted.
pub fn feature_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    fn walk(p: &Path, out: &mut Vec<PathBuf>) {
        if p.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            entries.sort();
            for e in entries {
                walk(&e, out);
            }
        } else if p.extension().is_some_and(|x| x == "feature") {
            out.push(p.to_path_buf());
        }
    }
    for p in paths {
        walk(p, &mut out);
    }
    out
}

fn scenarios(feature: &Feature) -> impl Iterator<Item = &Scenario> {
    feature
        .scenarios
        .iter()
        .chain(feature.rules.iter().flat_map(|r| r.scenarios.iter()))
}

/// Parse and check `files`; every problem found, not just the first.
pub fn lint(files: &[PathBuf]) -> Result<Vec<Feature>, Vec<LintError>> {
    let (mut features, mut errors) = (Vec::new(), Vec::new());
    for file in files {
        let name = file.display().to_string();
        let feature = match Feature::parse_path(file, GherkinEnv::default()) {
            Ok(f) => f,
            Err(e) => {
                let line = parse_error_line(&e.to_string()).unwrap_or(1);
                errors.push(LintError {
                    file: name,
                    line,
                    message: format!("does not parse: {e}"),
                });
                continue;
            }
        };
        for scenario in scenarios(&feature) {
            let err = |line: usize, message: String| LintError {
                file: name.clone(),
                line,
                message,
            };
            let outline = scenario.keyword.contains("Outline") || scenario.keyword.contains("Template");
            if outline && scenario.examples.is_empty() {
                errors.push(err(
                    scenario.position.line,
                    format!("Scenario Outline {:?} has no Examples", scenario.name),
                ));
            }
            let tagged = scenario
                .examples
                .iter()
                .filter(|e| e.tags.iter().any(|t| PROFILE_TAGS.contains(&t.as_str())))
                .count();
            for examples in &scenario.examples {
                if let Some(header) = examples.table.as_ref().and_then(|t| t.rows.first())
                    && header.iter().any(|h| h.trim().eq_ignore_ascii_case("profile"))
                {
                    errors.push(err(
                        examples.position.line,
                        "a `profile` column: write one Examples block per profile, tagged @ocp-4.12 or @ocp-4.16".into(),
                    ));
                }
                let untagged = !examples.tags.iter().any(|t| PROFILE_TAGS.contains(&t.as_str()));
                if tagged > 0 && untagged {
                    errors.push(err(
                        examples.position.line,
                        "untagged Examples in an Outline whose other Examples are tagged by profile: tag it @ocp-4.12 or @ocp-4.16".into(),
                    ));
                }
            }
        }
        features.push(feature);
    }
    if errors.is_empty() {
        Ok(features)
    } else {
        Err(errors)
    }
}

fn parse_error_line(message: &str) -> Option<usize> {
    let after = message.split("line").nth(1)?;
    after
        .trim_start_matches([' ', ':'])
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lint_text(text: &str) -> Result<Vec<Feature>, Vec<LintError>> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.feature");
        std::fs::write(&file, text).unwrap();
        lint(&[file])
    }

    #[test]
    fn the_three_rules_and_parse_errors() {
        let ok = "Feature: f\n  Scenario Outline: o <n>\n    Given <n>\n\n    @ocp-4.12\n    Examples:\n      | n |\n      | 1 |\n\n    @ocp-4.16\n    Examples:\n      | n |\n      | 2 |\n";
        assert!(lint_text(ok).is_ok());
        let column = "Feature: f\n  Scenario Outline: o\n    Given <profile>\n\n    Examples:\n      | profile |\n      | ocp-4.12 |\n";
        let e = lint_text(column).unwrap_err();
        assert_eq!(
            (e[0].line, e[0].message.starts_with("a `profile` column")),
            (5, true),
            "{e:?}"
        );
        let bare = "Feature: f\n  Scenario Outline: o\n    Given x\n";
        assert!(
            lint_text(bare).unwrap_err()[0]
                .message
                .contains("has no Examples")
        );
        let mixed = ok.replace("    @ocp-4.16\n", "");
        let e = lint_text(&mixed).unwrap_err();
        assert!(e[0].message.starts_with("untagged Examples"), "{e:?}");
        assert!(e[0].to_string().contains("x.feature:10:"), "{}", e[0]);
        let broken = lint_text("Scenario: no feature\n    Given x\n").unwrap_err();
        assert!(broken[0].message.starts_with("does not parse"), "{broken:?}");
    }

    #[test]
    fn the_shipped_features_pass() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .join("features");
        let files = feature_files(&[dir]);
        assert!(!files.is_empty());
        lint(&files).unwrap_or_else(|e| {
            panic!(
                "{}",
                e.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
            )
        });
    }
}
