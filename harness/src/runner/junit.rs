//! The JUnit report's test case names. Cucumber's JUnit writer names a case
//! `Scenario: <name>: <path>:<line>:<column>` (after `Rule: <rule>: ` in a Rule), and CI test
//! views follow a test from run to run by its name: a line added at the top of a feature file
//! would make each of its scenarios a new test and end the history of the old ones. Once the
//! run has written the file, each case is renamed `Scenario: <identity>` (the name, and an
//! Outline row's values: `identity::ScenarioId::scenario`); its feature is the test suite
//! around it already (`Feature: <name>: <path>`, no line).

use super::identity::ScenarioId;
use std::collections::HashMap;

/// The scenarios a run finished, by their feature file's name and their line in this run.
pub type RunIds = HashMap<(String, usize), ScenarioId>;

const CASE: &str = "<testcase name=\"";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The stable name of a case cucumber named `written` (escaped as in the file), if `ids` knows
/// the scenario it names.
fn stable_name(written: &str, ids: &RunIds) -> Option<String> {
    let (rest, _column) = written.rsplit_once(':')?;
    let (rest, line) = rest.rsplit_once(':')?;
    let line: usize = line.parse().ok()?;
    let (_, path) = rest.rsplit_once(": ")?;
    let path = unescape(path);
    let file = std::path::Path::new(&path)
        .file_name()?
        .to_string_lossy()
        .into_owned();
    let id = ids.get(&(file, line))?;
    let start = written.find("Scenario: ")?;
    Some(format!(
        "{}Scenario: {}",
        &written[..start],
        escape(&id.scenario())
    ))
}

/// The document with every case `ids` knows renamed by its identity; the rest as it was.
pub fn cases_named_by_identity(xml: &str, ids: &RunIds) -> String {
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml;
    while let Some(at) = rest.find(CASE) {
        let value_at = at + CASE.len();
        out.push_str(&rest[..value_at]);
        rest = &rest[value_at..];
        let Some(end) = rest.find('"') else { break };
        let written = &rest[..end];
        out.push_str(&stable_name(written, ids).unwrap_or_else(|| written.to_string()));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Rename the cases of the JUnit file at `path` (written whole by the run).
pub fn rename_cases(path: &std::path::Path, ids: &RunIds) -> std::io::Result<()> {
    let xml = std::fs::read_to_string(path)?;
    std::fs::write(path, cases_named_by_identity(&xml, ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str, row: &[(&str, &str)]) -> ScenarioId {
        ScenarioId {
            file: "logs.feature".into(),
            name: name.into(),
            row: row.iter().map(|(h, v)| (h.to_string(), v.to_string())).collect(),
        }
    }

    /// Each case the run knows is named by its identity, whatever line it was at; an Outline's
    /// rows of one name are told apart by their values; a case it does not know is left alone.
    #[test]
    fn a_case_is_named_by_its_identity_not_its_line() {
        let ids: RunIds = [
            (
                ("logs.feature".to_string(), 27),
                id("The daemon's log: <line>", &[]),
            ),
            (("logs.feature".to_string(), 40), id("Rows", &[("line", "a & b")])),
            (("logs.feature".to_string(), 41), id("Rows", &[("line", "c")])),
        ]
        .into_iter()
        .collect();
        let xml = concat!(
            r#"<testsuite name="Feature: f: features/logs.feature">"#,
            r#"<testcase name="Scenario: The daemon&apos;s log: &lt;line&gt;: features/logs.feature:27:3" time="0.3"></testcase>"#,
            r#"<testcase name="Rule: r: Scenario: Rows: features/logs.feature:40:7" time="0.1"></testcase>"#,
            r#"<testcase name="Scenario: Rows: features/logs.feature:41:7" time="0.1"></testcase>"#,
            r#"<testcase name="Scenario: Unknown: features/other.feature:5:3" time="0.1"></testcase>"#,
            "</testsuite>"
        );
        let renamed = cases_named_by_identity(xml, &ids);
        let names: Vec<&str> = renamed
            .split(CASE)
            .skip(1)
            .map(|c| &c[..c.find('"').unwrap()])
            .collect();
        assert_eq!(
            names,
            [
                "Scenario: The daemon&apos;s log: &lt;line&gt;",
                "Rule: r: Scenario: Rows (row: line=a &amp; b)",
                "Scenario: Rows (row: line=c)",
                "Scenario: Unknown: features/other.feature:5:3",
            ]
        );
        assert!(renamed.starts_with(r#"<testsuite name="Feature: f: features/logs.feature">"#));
        assert!(renamed.ends_with(r#" time="0.1"></testcase></testsuite>"#));
    }
}
