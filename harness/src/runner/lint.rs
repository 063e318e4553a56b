//! Feature-file lint, run before anything executes (DESIGN.md, "Profiles and tags"): a
//! feature that does not parse (with the line, column and what the parser expected there), a
//! `profile` column in Examples (write one tagged Examples block per profile instead), a
//! Scenario Outline without Examples, untagged Examples in an Outline whose other Examples are
//! tagged by profile, an `@ocp-*` tag naming no profile this suite knows (it would run the
//! scenario on every profile), and a scenario with no steps (a misspelt keyword turns a step
//! into description text, and an empty scenario passes). Every error names the file and line.

use crate::profile::Profile;
use cucumber::gherkin::{Feature, GherkinEnv, Scenario};
use std::path::{Path, PathBuf};

/// "@ocp-4.12, @ocp-4.14 or @ocp-4.16", for messages.
fn profile_tag_list() -> String {
    let tags: Vec<String> = PROFILE_TAGS.iter().map(|t| format!("@{t}")).collect();
    match tags.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

pub const PROFILE_TAGS: [&str; Profile::ALL.len()] = {
    let mut tags = [""; Profile::ALL.len()];
    let mut i = 0;
    while i < tags.len() {
        tags[i] = Profile::ALL[i].as_str();
        i += 1;
    }
    tags
};

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
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) => {
                errors.push(LintError {
                    file: name,
                    line: 0,
                    message: format!("cannot be read: {e}"),
                });
                continue;
            }
        };
        let feature = match Feature::parse_path(file, GherkinEnv::default()) {
            Ok(f) => f,
            Err(e) => {
                errors.push(parse_error(&name, &text, &e));
                continue;
            }
        };
        let mut check = Check {
            file: &name,
            text: &text,
            errors: &mut errors,
        };
        check.profile_tags(&feature);
        let background_steps = feature.background.as_ref().map_or(0, |b| b.steps.len());
        for scenario in scenarios(&feature) {
            check.scenario(scenario, background_steps);
        }
        features.push(feature);
    }
    if errors.is_empty() {
        Ok(features)
    } else {
        Err(errors)
    }
}

/// The checks of one parsed feature file, each problem added to `errors`.
struct Check<'a> {
    file: &'a str,
    text: &'a str,
    errors: &'a mut Vec<LintError>,
}

impl Check<'_> {
    fn err(&mut self, line: usize, message: String) {
        self.errors.push(LintError {
            file: self.file.to_string(),
            line,
            message,
        });
    }

    /// A tag `@ocp-…` on the feature, a rule, a scenario or an Examples block that names no
    /// profile of this suite.
    fn profile_tags(&mut self, feature: &Feature) {
        let mut tagged_at: Vec<(usize, &Vec<String>)> = vec![(feature.position.line, &feature.tags)];
        for rule in &feature.rules {
            tagged_at.push((rule.position.line, &rule.tags));
        }
        for scenario in scenarios(feature) {
            tagged_at.push((scenario.position.line, &scenario.tags));
            for examples in &scenario.examples {
                tagged_at.push((examples.position.line, &examples.tags));
            }
        }
        for (line, tags) in tagged_at {
            for tag in tags {
                if tag.starts_with("ocp-") && !PROFILE_TAGS.contains(&tag.as_str()) {
                    let line = tag_line(self.text, line, tag);
                    self.err(
                        line,
                        format!(
                            "@{tag} names no profile of this suite (it would run on every profile): use {}",
                            PROFILE_TAGS
                                .iter()
                                .map(|t| format!("@{t}"))
                                .collect::<Vec<_>>()
                                .join(" or ")
                        ),
                    );
                }
            }
        }
    }

    /// A scenario with no steps (nor a Background's), an Outline without Examples, and its
    /// Examples blocks.
    fn scenario(&mut self, scenario: &Scenario, background_steps: usize) {
        if scenario.steps.is_empty() && background_steps == 0 {
            let hint = scenario
                .description
                .as_deref()
                .and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()))
                .map(|l| {
                    format!(
                        ": `{l}` is description text, not a step (a step starts with Given, When, Then, And, But or *)"
                    )
                })
                .unwrap_or_default();
            self.err(
                scenario.position.line,
                format!(
                    "Scenario {:?} has no steps, and would pass doing nothing{hint}",
                    scenario.name
                ),
            );
        }
        let outline = scenario.keyword.contains("Outline") || scenario.keyword.contains("Template");
        if outline && scenario.examples.is_empty() {
            self.err(
                scenario.position.line,
                format!("Scenario Outline {:?} has no Examples", scenario.name),
            );
        }
        let tagged = scenario
            .examples
            .iter()
            .filter(|e| e.tags.iter().any(|t| PROFILE_TAGS.contains(&t.as_str())))
            .count();
        for examples in &scenario.examples {
            self.examples(examples, tagged > 0);
        }
    }

    /// An Examples block with a `profile` column, rows of another width than the header, or no
    /// profile tag where a block of the Outline has one (`any_tagged`).
    fn examples(&mut self, examples: &cucumber::gherkin::Examples, any_tagged: bool) {
        if let Some(header) = examples.table.as_ref().and_then(|t| t.rows.first())
            && header.iter().any(|h| h.trim().eq_ignore_ascii_case("profile"))
        {
            self.err(
                examples.position.line,
                format!(
                    "a `profile` column: write one Examples block per profile, tagged {}",
                    profile_tag_list()
                ),
            );
        }
        // The parser drops cells beyond the header's width: count them in the text.
        if let Some(table) = &examples.table {
            let text = self.text;
            let cells = |n: usize| {
                text.lines()
                    .nth(n.saturating_sub(1))
                    .map_or(0, |l| l.trim().matches('|').count().saturating_sub(1))
            };
            let width = cells(table.position.line);
            for n in table.position.line..table.position.line + table.rows.len() {
                if cells(n) != width {
                    self.err(
                        n,
                        format!(
                            "an Examples row with {} cells under a header of {width}",
                            cells(n)
                        ),
                    );
                }
            }
        }
        let untagged = !examples.tags.iter().any(|t| PROFILE_TAGS.contains(&t.as_str()));
        if any_tagged && untagged {
            self.err(
                examples.position.line,
                format!(
                    "untagged Examples in an Outline whose other Examples are tagged by profile: tag it {}",
                    profile_tag_list()
                ),
            );
        }
    }
}

/// A parse failure as `file:line: does not parse at column C: found `…`; expected …`. The
/// gherkin parser names the position and the tokens it expected only in its error's source
/// (`Error at L:C: {tokens}`).
fn parse_error(file: &str, text: &str, error: &cucumber::gherkin::ParseFileError) -> LintError {
    let mut detail = None;
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = source {
        detail = detail.or_else(|| parse_position(&e.to_string()));
        source = e.source();
    }
    let Some((line, column, expected)) = detail else {
        return LintError {
            file: file.into(),
            line: 0,
            message: format!("does not parse: {error}"),
        };
    };
    let found = text
        .lines()
        .nth(line.saturating_sub(1))
        .map(str::trim)
        .unwrap_or("");
    let found = if found.is_empty() {
        "the end of the file or an empty line".to_string()
    } else {
        format!("`{found}`")
    };
    // The parser's own rule names (`_`, `unknown keyword`, character classes) tell a reader
    // nothing; keywords do.
    let mut expected: Vec<&str> = expected
        .split(',')
        .map(|t| t.trim().trim_matches('"').trim())
        .filter(|t| {
            !t.is_empty() && t.chars().next().is_some_and(char::is_alphabetic) && *t != "unknown keyword"
        })
        .collect();
    expected.sort_unstable();
    expected.dedup();
    let wanted = if expected.is_empty() {
        String::new()
    } else {
        format!("; expected {}", expected.join(", "))
    };
    let hint = if text.lines().all(|l| !l.trim_start().starts_with("Feature:")) {
        " (a feature file starts with `Feature:`, after any tags and comments)".to_string()
    } else {
        match unknown_line(text, line) {
            Some((at, l)) => format!(" (line {at}, `{l}`, starts with no Gherkin keyword)"),
            None => String::new(),
        }
    };
    LintError {
        file: file.into(),
        line,
        message: format!("does not parse at column {column}: found {found}{wanted}{hint}"),
    }
}

/// The nearest line at or above `line` that starts with no Gherkin keyword (a misspelt
/// `Scenario:` is taken as description text, and the parser fails further down).
fn unknown_line(text: &str, line: usize) -> Option<(usize, String)> {
    const STARTS: &[&str] = &[
        "Feature:",
        "Rule:",
        "Background:",
        "Scenario:",
        "Scenario Outline:",
        "Scenario Template:",
        "Example:",
        "Examples:",
        "Scenarios:",
        "Given ",
        "When ",
        "Then ",
        "And ",
        "But ",
        "* ",
        "|",
        "@",
        "#",
        "\"\"\"",
        "```",
    ];
    let lines: Vec<&str> = text.lines().collect();
    (1..=line.min(lines.len())).rev().find_map(|n| {
        let l = lines[n - 1].trim();
        let known = l.is_empty() || STARTS.iter().any(|k| l.starts_with(k));
        (!known && l.contains(':')).then(|| (n, l.to_string()))
    })
}

/// `(line, column, expected tokens)` from the gherkin parser's `Error at L:C: {…}`.
fn parse_position(message: &str) -> Option<(usize, usize, String)> {
    let rest = message.strip_prefix("Error at ")?;
    let (position, expected) = rest.split_once(": ")?;
    let (line, column) = position.split_once(':')?;
    let expected = expected.trim().trim_start_matches('{').trim_end_matches('}');
    Some((
        line.parse().ok()?,
        column.parse().ok()?,
        expected.replace("\\\"", ""),
    ))
}

/// The line of `@tag` for an element at `line`: the nearest line at or above it that carries
/// the tag (tags sit on the lines before the keyword).
fn tag_line(text: &str, line: usize, tag: &str) -> usize {
    let needle = format!("@{tag}");
    let lines: Vec<&str> = text.lines().collect();
    (1..=line.min(lines.len()))
        .rev()
        .find(|&l| lines[l - 1].split_whitespace().any(|w| w == needle))
        .unwrap_or(line)
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
        // The in-process tag is optional: the runner infers it (`select::tags_of`).
        let swap = "Feature: f\n  Scenario: s\n    Given x\n    When the kube-apiserver serves a certificate from its new CA\n";
        assert!(lint_text(swap).is_ok());
        assert!(lint_text(&swap.replace("  Scenario", "  @in-process-apiserver\n  Scenario")).is_ok());
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
