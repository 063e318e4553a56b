//! No function of the libraries over 80 lines outside test code.
//!
//! Read from rustfmt-formatted sources, not parsed: a function starts at a line that declares it
//! (`fn`, after `pub`, `pub(…)`, `async`, `const` or `unsafe`) and ends at the first later line
//! that is its indentation and `}`; a declaration ending in `;` or on one line with its body is
//! no function to measure. Test code is left out: a file's text from its first `#[cfg(test)]`
//! on, files named `tests.rs` and everything under a `tests` directory.

use std::path::{Path, PathBuf};

/// The longest a function may be.
const LIMIT: usize = 80;

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
fn no_function_of_the_libraries_is_over_80_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut problems = Vec::new();
    for (relative, path) in sources(root) {
        let text = std::fs::read_to_string(&path).unwrap();
        for (name, lines) in functions(&text) {
            if lines > LIMIT {
                problems.push(format!(
                    "{relative}: {name} is {lines} lines, over the {LIMIT}-line limit: split it by concern"
                ));
            }
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
