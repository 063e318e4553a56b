//! No function of the libraries over 80 lines outside test code, but those listed in `LONG`,
//! each at most as long as it was when listed: the list may only shrink. A function that was
//! split below the limit must leave the list (the test says so), so it never holds more than the
//! functions still to split.
//!
//! Read from rustfmt-formatted sources, not parsed: a function starts at a line that declares it
//! (`fn`, after `pub`, `pub(…)`, `async`, `const` or `unsafe`) and ends at the first later line
//! that is its indentation and `}`; a declaration ending in `;` or on one line with its body is
//! no function to measure. Test code is left out: a file's text from its first `#[cfg(test)]`
//! on, files named `tests.rs` and everything under a `tests` directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The longest a function may be.
const LIMIT: usize = 80;

/// The functions still over the limit, as `(file from the repository root, name, lines)`.
const LONG: &[(&str, &str, usize)] = &[
    ("fake-apiserver/src/auth/impersonation/mod.rs", "try_mode", 121),
    ("fake-apiserver/src/http/mod.rs", "dispatch", 107),
    ("fake-apiserver/src/http/objects.rs", "handle", 143),
    ("fake-apiserver/src/http/watch.rs", "start", 104),
    ("fake-apiserver/src/protobuf/message.rs", "encode_field", 91),
    ("fake-apiserver/src/store/prepare.rs", "prepare_update", 103),
    ("fake-apiserver/src/store/write.rs", "create", 84),
    ("fake-apiserver/src/validation/crd.rs", "spec_causes", 93),
    ("fake-apiserver/src/validation/gojson/mod.rs", "feed", 112),
    ("fake-apiserver/src/validation/schema.rs", "check", 83),
];

/// Every function of `text` as (name, lines), test code left out.
fn functions(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .position(|l| l.trim() == "#[cfg(test)]")
        .unwrap_or(lines.len());
    let mut out = Vec::new();
    for (i, line) in lines[..end].iter().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let Some(name) = declared(line.trim_start()) else {
            continue;
        };
        let trimmed = line.trim_end();
        if trimmed.ends_with(';') || (trimmed.contains('{') && trimmed.ends_with('}')) {
            continue;
        }
        let closing = format!("{}}}", " ".repeat(indent));
        if let Some(last) = (i + 1..end).find(|&j| lines[j].trim_end() == closing) {
            out.push((name, last - i + 1));
        }
    }
    out
}

/// The name a line declares as a function, if it does.
fn declared(line: &str) -> Option<String> {
    let mut rest = line;
    loop {
        if let Some(after) = rest.strip_prefix("pub(") {
            rest = after.split_once(") ")?.1;
        } else if let Some(after) = ["pub ", "async ", "const ", "unsafe ", "extern \"C\" "]
            .iter()
            .find_map(|p| rest.strip_prefix(p))
        {
            rest = after;
        } else {
            break;
        }
    }
    let after = rest.strip_prefix("fn ")?;
    let name: String = after
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The library sources of the harness, the fake API server and the top-level crate, by path
/// from the repository root.
fn sources(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["harness/src", "fake-apiserver/src", "src"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" {
                let relative = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((relative, path));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_function_is_over_80_lines_but_those_listed_and_none_grows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let listed: BTreeMap<(&str, &str), usize> = LONG.iter().map(|(f, n, l)| ((*f, *n), *l)).collect();
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for (relative, path) in sources(root) {
        let text = std::fs::read_to_string(&path).unwrap();
        for (name, lines) in functions(&text) {
            match listed.get(&(relative.as_str(), name.as_str())) {
                Some(&max) if lines > max => problems.push(format!(
                    "{relative}: {name} grew to {lines} lines (listed at {max}); split it instead"
                )),
                Some(_) if lines <= LIMIT => problems.push(format!(
                    "{relative}: {name} is {lines} lines now: take it out of LONG"
                )),
                Some(_) => seen.push((relative.clone(), name.clone())),
                None if lines > LIMIT => problems.push(format!(
                    "{relative}: {name} is {lines} lines, over the {LIMIT}-line limit"
                )),
                None => {}
            }
        }
    }
    for (file, name, _) in LONG {
        if !seen.iter().any(|(f, n)| f == file && n == name)
            && !problems
                .iter()
                .any(|p| p.starts_with(&format!("{file}: {name} ")))
        {
            problems.push(format!("{file}: {name} is gone: take it out of LONG"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_function_is_measured_from_its_declaration_to_its_closing_brace() {
    let text = "\
pub(crate) async fn long() -> u8 {
    let x = 1;
    x
}

fn one_line() {}
    fn declared_only(&self);
impl A {
    pub fn method(&self) {
        inner();
    }
}
#[cfg(test)]
mod tests {
    fn ignored() {
    }
}
";
    assert_eq!(
        functions(text),
        vec![("long".to_string(), 4), ("method".to_string(), 3)]
    );
}
