//! The documentation stays a reference a reader can follow: the README is a short front door,
//! every relative link in it, in `fake-apiserver/README.md` and in `docs/` leads to a file (and
//! heading) that exists, every `FILE:LINE` they show starts a scenario, and no tracked text
//! reads as a development diary, naming numbered work periods ("session" or "stop" and a
//! number) or the project's own numbered issues. Citations of upstream trackers
//! (`kubernetes #52222`, `OCPBUGS-33694`) are not that.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The Markdown files whose links are checked: the two READMEs and every page of `docs/`.
fn markdown_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md"), root.join("fake-apiserver/README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The text outside fenced code blocks, each line with its inline code spans blanked, so code
/// that happens to hold `](` is not read as a link.
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                kept.push(c);
            }
        }
        out.push((i + 1, kept));
    }
    out
}

/// Every `[text](target)` and `![alt](target)` of a file, with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (line, kept) in prose(text) {
        let mut rest = kept.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push((line, after[..end].trim().to_string()));
            rest = &after[end..];
        }
    }
    found
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a Markdown file's headings give, a repeated heading's `-1`, `-2`… included.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#').replace('`', "").as_str());
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// What is wrong with one link of `file`, if anything: a missing file, or a heading the target
/// page does not have.
fn broken(file: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let resolved = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().unwrap().join(path)
    };
    if !resolved.exists() {
        return Some(format!("{} does not exist", resolved.display()));
    }
    let anchor = anchor?;
    if resolved.extension().is_none_or(|e| e != "md") {
        return None;
    }
    if anchors(&read(&resolved)).contains(anchor) {
        None
    } else {
        Some(format!("{} has no heading #{anchor}", resolved.display()))
    }
}

#[test]
fn every_relative_link_of_the_docs_leads_somewhere() {
    let root = root();
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        for (line, target) in links(&read(&file)) {
            checked += 1;
            if let Some(why) = broken(&file, &target) {
                let shown = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
                problems.push(format!("{shown}:{line}: ({target}): {why}"));
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} links found: is the link reader broken?"
    );
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

#[test]
fn the_readme_is_a_front_door_of_at_most_200_lines() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: keep it to what the suite is, the two commands, running an agent \
         and links; move reference material into docs/"
    );
}

/// The words that, followed by a number, name a numbered period of work or the project's own
/// numbered issues.
const DIARY_WORDS: &[&str] = &["session", "sessions", "issue", "issues", "stop", "stops"];

/// Each place in `text` where a diary word, as a whole word in any case, is followed by a
/// number: after spaces, or across a line break and the comment leader that starts the next
/// line (`//!`, `///`, `//`, `#`, `*`). `issue #12` and `OCPBUGS-33694` are citations, not that.
fn diary_entries(text: &str) -> Vec<(usize, String)> {
    let lower = text.to_lowercase();
    let bytes = lower.as_bytes();
    let word_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    let mut found = Vec::new();
    for word in DIARY_WORDS {
        let mut from = 0;
        while let Some(at) = lower[from..].find(word) {
            let start = from + at;
            let end = start + word.len();
            from = end;
            if (start > 0 && word_char(bytes[start - 1])) || (end < bytes.len() && word_char(bytes[end])) {
                continue;
            }
            let rest = &lower[end..];
            let gap = rest.len() - rest.trim_start_matches([' ', '\t', '\u{a0}', '\u{202f}']).len();
            let mut rest = &rest[gap..];
            let mut spaced = gap > 0;
            if let Some(next) = rest.strip_prefix('\n') {
                let next = next.trim_start();
                rest = ["//!", "///", "//", "#", "*"]
                    .iter()
                    .find_map(|leader| next.strip_prefix(leader))
                    .unwrap_or(next)
                    .trim_start();
                spaced = true;
            }
            if spaced && rest.starts_with(|c: char| c.is_ascii_digit()) {
                let line = lower[..start].matches('\n').count() + 1;
                let shown: String = lower[start..].chars().take(word.len() + 8).collect();
                found.push((line, shown.replace('\n', " ")));
            }
        }
    }
    found
}

/// The tracked text files a reader meets: Markdown, Rust, features, YAML, TOML and the CI script.
fn tracked_text_files() -> Vec<PathBuf> {
    let root = root();
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["ls-files", "-z"])
        .output()
        .expect("git ls-files");
    assert!(
        out.status.success(),
        "git ls-files: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .filter(|p| {
            [".md", ".rs", ".feature", ".yaml", ".toml"]
                .iter()
                .any(|e| p.ends_with(e))
                || *p == ".ci/run"
        })
        .map(|p| root.join(p))
        .filter(|p| p.is_file())
        .collect()
}

#[test]
fn no_tracked_text_reads_as_a_development_diary() {
    let root = root();
    let files = tracked_text_files();
    assert!(files.len() > 50, "only {} tracked text files found", files.len());
    let mut entries = Vec::new();
    for file in files {
        for (line, shown) in diary_entries(&read(&file)) {
            let shown_path = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
            entries.push(format!("{shown_path}:{line}: {shown}…"));
        }
    }
    assert!(
        entries.is_empty(),
        "say what is true now, without the history (git keeps it):\n{}",
        entries.join("\n")
    );
}

/// The diary reader, table by table: what it flags and what it leaves alone. The flagged
/// phrases are built here from their parts, so this file does not flag itself.
#[test]
fn the_diary_reader_flags_numbered_work_periods_and_leaves_citations_alone() {
    let n = |word: &str, rest: &str| format!("{word}{rest}");
    let flagged = [
        n("session", " 27"),
        n("Session", " 26 (a fast day)"),
        n("sessions", " 24–26"),
        n("issue", " 17's target"),
        n("Stop", " 36"),
        n("(issue", "\n//! 16 #3)"),
        n("see issue", "\n# 5"),
    ];
    for text in &flagged {
        assert_eq!(diary_entries(text).len(), 1, "{text:?} should be flagged");
    }
    let allowed = [
        "the TLS session cache",
        "a resumed session, then 3 more",
        "kubernetes #52222",
        "OCPBUGS-33694",
        "bootkube #534",
        "issue #12 upstream",
        "the clock stops at every deadline; 5 stops so far",
        "non-stop 5",
        "sessions: 4",
        "a session-10 token",
    ];
    for text in allowed {
        assert!(diary_entries(text).is_empty(), "{text:?} should not be flagged");
    }
}

#[test]
fn the_link_reader_finds_links_outside_code_and_github_anchors() {
    let text = "see [a](docs/a.md#b) and `[not](code)`\n```\n[no](x)\n```\n![img](p.png)\n";
    let found: Vec<String> = links(text).into_iter().map(|(_, t)| t).collect();
    assert_eq!(found, ["docs/a.md#b", "p.png"]);
    let heading = anchors("# Title\n## What a `node` gives: an agent\n## Title\n");
    assert!(heading.contains("what-a-node-gives-an-agent"), "{heading:?}");
    assert!(heading.contains("title-1"), "{heading:?}");
}

/// The lines where `mco-conformance run FILE:LINE` finds a scenario in a feature file: each
/// Scenario's, and each Examples row's (its Examples keyword's line, plus one for the header,
/// plus the row's number), as cucumber counts them.
fn scenario_lines(path: &Path) -> BTreeSet<usize> {
    use cucumber::gherkin::{Feature, GherkinEnv};
    let feature = Feature::parse_path(path, GherkinEnv::default()).unwrap();
    let scenarios = feature
        .scenarios
        .iter()
        .chain(feature.rules.iter().flat_map(|r| r.scenarios.iter()));
    let mut lines = BTreeSet::new();
    for s in scenarios {
        if s.examples.is_empty() {
            lines.insert(s.position.line);
        }
        for ex in &s.examples {
            let rows = ex.table.as_ref().map_or(0, |t| t.rows.len().saturating_sub(1));
            lines.extend((0..rows).map(|i| ex.position.line + i + 2));
        }
    }
    lines
}

/// A `FILE:LINE` the docs show (a progress line, a command to paste) names a line where a
/// shipped feature file has a scenario or an Examples row today: a reader who pastes it runs
/// that scenario, not an error. Lines move when a feature file changes; this test says which.
#[test]
fn every_file_and_line_the_docs_show_names_a_scenario() {
    let root = root();
    let mut stale = Vec::new();
    let mut seen = 0;
    for doc in markdown_files() {
        let text = read(&doc);
        for (number, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices(".feature:") {
                let file = line[..at]
                    .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or_default();
                let digits: String = line[at + ".feature:".len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                let path = root.join("features").join(format!("{file}.feature"));
                let (Ok(target), true) = (digits.parse::<usize>(), path.is_file()) else {
                    continue;
                };
                seen += 1;
                let lines = scenario_lines(&path);
                if !lines.contains(&target) {
                    stale.push(format!(
                        "{}:{}: {file}.feature:{target} starts no scenario (they start at {lines:?})",
                        doc.display(),
                        number + 1
                    ));
                }
            }
        }
    }
    assert!(seen >= 3, "the docs show scenarios by FILE:LINE");
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}
