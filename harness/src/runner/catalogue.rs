//! The step catalogue: every step phrase with its description and where it is defined, read
//! from the step sources themselves (`steps/`, with the doc comment above each definition). It
//! serves `mco-conformance steps`, the table of `docs/steps.md`, and the nearest phrases offered
//! for an undefined step.

mod sources;
pub use sources::SOURCES;

/// One step definition as its source declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepDoc {
    pub keyword: &'static str,
    pub phrase: String,
    pub description: String,
    pub location: String,
}

/// Every step, read from the step sources: the attribute's expression or regex, the first line
/// of its doc comment, and where it is defined.
pub fn catalogue() -> Vec<StepDoc> {
    let mut out = Vec::new();
    for (file, text) in SOURCES {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let line = line.trim();
            let Some(keyword) = ["given", "when", "then"]
                .into_iter()
                .find(|k| line.starts_with(&format!("#[{k}(")))
            else {
                continue;
            };
            // rustfmt breaks a long attribute over lines: read it to its closing `)]`.
            let attribute: String = lines[i..]
                .iter()
                .map(|l| l.trim())
                .scan(false, |closed, l| {
                    if *closed {
                        return None;
                    }
                    *closed = l.ends_with(")]");
                    Some(l)
                })
                .collect::<Vec<_>>()
                .join(" ");
            let phrase = attribute
                .split_once('"')
                .map(|(_, rest)| rest.rsplit_once('"').map_or(rest, |(p, _)| p))
                .unwrap_or("")
                .trim_start_matches('^')
                .trim_end_matches('$')
                .replace("\\\\", "\\");
            let mut doc = Vec::new();
            for prev in lines[..i].iter().rev() {
                match prev.trim().strip_prefix("///") {
                    Some(d) => doc.push(d.trim()),
                    None => break,
                }
            }
            doc.reverse();
            let keyword = match keyword {
                "given" => "Given",
                "when" => "When",
                _ => "Then",
            };
            out.push(StepDoc {
                keyword,
                phrase,
                description: doc.join(" "),
                location: format!("{file}:{}", i + 1),
            });
        }
    }
    out
}

/// The catalogue as the Markdown table of `docs/steps.md`, then the values each fixture-named
/// parameter accepts.
pub fn catalogue_markdown() -> String {
    format!(
        "{}\nParameters that name something of the fixtures accept exactly these values (any other fails the step with this list):\n\n{}",
        steps_markdown(),
        parameter_values_markdown()
    )
}

/// The step phrases as a Markdown table.
fn steps_markdown() -> String {
    let mut out = String::from("| step | what it does | defined in |\n|---|---|---|\n");
    for s in catalogue() {
        out.push_str(&format!(
            "| {} `{}` | {} | `{}` |\n",
            s.keyword,
            human(&s.phrase).replace('|', "\\|"),
            s.description,
            s.location
        ));
    }
    out
}

/// What a step parameter naming something of the fixtures accepts: the kind, the steps that
/// take it, and its values (read from the fixtures this binary was built with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterValues {
    pub kind: &'static str,
    pub used_by: String,
    pub values: Vec<String>,
}

/// The one step that takes a starting state, as the catalogue reads it.
pub const STARTING_STATE_STEP: &str = "a cluster in the starting state \"<text>\" with <n> worker node(s)";

/// Every fixture-named parameter with the values it accepts; a step given another name fails
/// with this list. Each is taken by the steps whose phrase shows its slot (`<signer>`,
/// `<pool>`; a starting state by `STARTING_STATE_STEP`), which `harness/tests/suite/vocabulary.rs`
/// walks with every value.
pub fn parameter_values() -> Vec<ParameterValues> {
    use crate::pki::{Catalogue, StartingState};
    use std::path::Path;
    let catalogue = Catalogue::parse(
        Path::new("fixtures/signers.yaml"),
        include_str!("../../../fixtures/signers.yaml"),
    );
    let (signers, targets, common_names, states) = match &catalogue {
        Ok(c) => (
            c.signers.iter().map(|s| s.name.clone()).collect(),
            c.targets.iter().map(|t| t.name.clone()).collect(),
            c.common_names(),
            StartingState::parse_all(
                Path::new("fixtures/starting-states.yaml"),
                include_str!("../../../fixtures/starting-states.yaml"),
                c,
            )
            .map(|all| all.into_iter().map(|s| s.name).collect())
            .unwrap_or_default(),
        ),
        Err(_) => (Vec::new(), Vec::new(), Vec::new(), Vec::new()),
    };
    let mapping: Vec<String> = common_names
        .iter()
        .map(|n| format!("`{}` is {}", n.common_name, n.why))
        .collect();
    let pools = include_str!("../../../fixtures/cluster/machineconfigpools.yaml")
        .split("\n---")
        .filter_map(|doc| serde_yaml::from_str::<serde_yaml::Value>(doc).ok())
        .filter_map(|doc| doc["metadata"]["name"].as_str().map(String::from))
        .collect();
    vec![
        ParameterValues {
            kind: "signer",
            used_by: "every step with a `<signer>`".into(),
            values: signers,
        },
        ParameterValues {
            kind: "target (a certificate a signer issues)",
            used_by: "every step with a `<signer>`: a target \"has rotated\" when it was re-issued; `kubelet-client`, a client certificate, has no bundle and signs nothing, so `the <signer> bundle holds <n> signer(s)`, `every kubelet accepts a client certificate from the current <signer>` and its negation refuse it, naming its signer".into(),
            values: targets,
        },
        ParameterValues {
            kind: "certificate name (names the Secret it lives in)",
            used_by: format!(
                "every step with a `<signer>`: {}; so does `<CN>_@<unix>` for a target that is a CA (`kube-csr-signer_@1675718562`), and an operator's name for what it issues, `<operator namespace>_<signer>@<unix>` (`openshift-kube-controller-manager-operator_csr-signer-signer@1675718562`)",
                mapping.join(", ")
            ),
            values: common_names.into_iter().map(|n| n.common_name).collect(),
        },
        ParameterValues {
            kind: "pool",
            used_by: "every step with a `<pool>`".into(),
            values: pools,
        },
        ParameterValues {
            kind: "starting state",
            used_by: STARTING_STATE_STEP.into(),
            values: states,
        },
    ]
}

/// The parameter values as a Markdown table (the last of `docs/steps.md`).
pub fn parameter_values_markdown() -> String {
    let mut out = String::from("| parameter | accepted values | taken by |\n|---|---|---|\n");
    for p in parameter_values() {
        let values: Vec<String> = p.values.iter().map(|v| format!("`{v}`")).collect();
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            p.kind,
            values.join(", "),
            p.used_by.replace('|', "\\|")
        ));
    }
    out
}

/// How to read the phrases `human` writes.
pub const NOTATION: &str = "<n> is a number, <signer> a signer or a certificate one issues and <pool> a pool (the values listed under the steps), <name> any other name (an annotation, a condition, a label), <path> an absolute path, <mode> an octal mode such as 0644, <duration> a whole number of days, hours, minutes or seconds (292 days, 1 hour), <text> any text (inside quotes where the phrase shows them); [a|b] is one of the choices; (s) and (es) are optional endings: write node or nodes, not node(s).";

/// A phrase as QE reads it: regex and expression syntax turned into words. Parameters become
/// `<n>`, `<name>`, `<path>`, `<mode>` or `<text>`; a choice becomes `[a|b]`; an optional plural
/// or ending becomes `(s)`/`(es)`; escapes and anchors go. `^(\d+ (?:days?|hours?)) pass(?:es)?$`
/// reads `<n> [day(s)|hour(s)] pass(es)`.
pub fn human(phrase: &str) -> String {
    let body = phrase.strip_prefix('^').unwrap_or(phrase);
    let body = body.strip_suffix('$').unwrap_or(body);
    let chars: Vec<char> = body.chars().collect();
    let mut out = String::new();
    human_into(&chars, &mut out);
    out
}

/// What a parameter pattern (a group's content with no choice of words in it) stands for.
fn parameter_name(pattern: &str) -> Option<&'static str> {
    Some(match pattern {
        r"\d+" => "<n>",
        r"0[0-7]{3}" => "<mode>",
        r".+" | r".*" => "<text>",
        r"\w+" | r"\S+" => "<name>",
        p if p.starts_with(r"/\S+") => "<path>",
        _ => return None,
    })
}

/// The index of the `)` closing the group opened just before `from`.
fn group_end(chars: &[char], from: usize) -> usize {
    let mut depth = 1;
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

/// The top-level alternatives of a group's content.
fn alternatives(chars: &[char]) -> Vec<&[char]> {
    let (mut out, mut depth, mut start, mut i) = (Vec::new(), 0, 0, 0);
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '(' => depth += 1,
            ')' => depth -= 1,
            '|' if depth == 0 => {
                out.push(&chars[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&chars[start..]);
    out
}

/// A group opening at `i` (`(…)`, `(?:…)`, `(?P<name>…)`, an optional one with `?` after
/// it) read into `out`; the index after it.
fn group_into(chars: &[char], i: usize, out: &mut String) -> usize {
    let end = group_end(chars, i + 1);
    let mut inner = &chars[i + 1..end.min(chars.len())];
    // A named group (`(?P<signer>\S+)`) takes what its name says: it reads as the
    // parameter types do (`<signer>`, `<pool>`).
    if inner.starts_with(&['?', 'P', '<'])
        && let Some(close) = inner.iter().position(|c| *c == '>')
    {
        out.push('<');
        out.extend(&inner[3..close]);
        out.push('>');
        return end + 1;
    }
    if inner.starts_with(&['?', ':']) {
        inner = &inner[2..];
    }
    let optional = chars.get(end + 1) == Some(&'?');
    let text: String = inner.iter().collect();
    let choices = alternatives(inner);
    if let Some(name) = parameter_name(&text) {
        out.push_str(name);
    } else if optional && choices.len() > 1 {
        // `(?:s|\(s\))?`: an optional ending written two ways reads as its first.
        out.push('(');
        human_into(choices[0], out);
        out.push(')');
    } else if optional {
        out.push('(');
        human_into(inner, out);
        out.push(')');
    } else if choices.len() > 1 {
        out.push('[');
        for (n, choice) in choices.iter().enumerate() {
            if n > 0 {
                out.push('|');
            }
            human_into(choice, out);
        }
        out.push(']');
    } else if i > 0 && chars[i - 1].is_alphanumeric() && !text.contains(['\\', '[', '(', '.', '+', '*']) {
        // An expression's optional text after a word (`signer(s)`).
        out.push('(');
        human_into(inner, out);
        out.push(')');
    } else {
        human_into(inner, out);
    }
    end + 1 + usize::from(optional)
}

fn human_into(chars: &[char], out: &mut String) {
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                let next = chars[i + 1];
                match next {
                    'd' | 'S' | 'w' => out.push_str(match next {
                        'd' => "<n>",
                        _ => "<name>",
                    }),
                    c => out.push(c),
                }
                i += 2;
                if chars.get(i) == Some(&'+') {
                    i += 1;
                }
            }
            '{' => {
                let end = chars[i..]
                    .iter()
                    .position(|c| *c == '}')
                    .map_or(chars.len(), |p| i + p);
                let name: String = chars[i + 1..end].iter().collect();
                // A parameter type of the steps' own (`{signer}`, `{pool}`) reads as its name.
                match name.as_str() {
                    "int" | "float" => out.push_str("<n>"),
                    "string" => out.push_str("\"<text>\""),
                    "word" => out.push_str("<name>"),
                    own => out.push_str(&format!("<{own}>")),
                }
                i = end + 1;
            }
            '(' => i = group_into(chars, i, out),
            // `days?`, `CAs?`: an optional last letter.
            c if chars.get(i + 1) == Some(&'?') => {
                out.push('(');
                out.push(c);
                out.push(')');
                i += 2;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

/// A phrase as words, each parameter (`{int}`, `{word}`, a regex group) one wildcard word.
fn skeleton(phrase: &str) -> Vec<String> {
    let mut out = String::new();
    let mut chars = phrase.chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        match c {
            '{' => {
                for d in chars.by_ref() {
                    if d == '}' {
                        break;
                    }
                }
                out.push_str(" \u{0} ");
            }
            '(' => {
                let mut depth = 1;
                let mut inner = String::new();
                for d in chars.by_ref() {
                    match d {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    if depth == 0 {
                        break;
                    }
                    inner.push(d);
                }
                // `signer(s)` and `pass(es)` are optional endings and `pass(?:es)?` an optional ending, not
                // parameters.
                let optional = chars.peek() == Some(&'?');
                if optional {
                    chars.next();
                }
                let plural = prev.is_alphanumeric() && matches!(inner.as_str(), "s" | "es");
                if !(optional || plural) {
                    out.push_str(" \u{0} ");
                }
            }
            '\\' => {
                if let Some(d) = chars.next() {
                    out.push(d);
                }
            }
            '^' | '$' | '?' => {}
            _ => out.push(c),
        }
        prev = c;
    }
    out.split_whitespace().map(str::to_lowercase).collect()
}

/// Word-level edit distance where a wildcard (`\0`) matches any one word.
fn distance(text: &[String], phrase: &[String]) -> usize {
    let mut row: Vec<usize> = (0..=phrase.len()).collect();
    for (i, t) in text.iter().enumerate() {
        let mut next = vec![i + 1; phrase.len() + 1];
        for (j, p) in phrase.iter().enumerate() {
            let same = p == "\u{0}" || p == t;
            next[j + 1] = (row[j] + usize::from(!same)).min(row[j + 1] + 1).min(next[j] + 1);
        }
        row = next;
    }
    row[phrase.len()]
}

/// The catalogue's phrases nearest a step's text (without its keyword), best first: at most
/// three, each within half the step's words.
pub fn nearest(text: &str, catalogue: &[StepDoc]) -> Vec<String> {
    let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    let mut scored: Vec<(usize, String)> = catalogue
        .iter()
        .filter_map(|s| {
            let phrase = skeleton(&s.phrase);
            // A phrase of mostly parameters is near anything: at least half its own words
            // must be in the step.
            let literal: Vec<&String> = phrase.iter().filter(|w| *w != "\u{0}").collect();
            let shared = literal.iter().filter(|w| words.contains(w)).count();
            (shared * 2 >= literal.len()).then(|| {
                (
                    distance(&words, &phrase),
                    format!("{} {}", s.keyword, human(&s.phrase)),
                )
            })
        })
        .filter(|(d, _)| *d <= (words.len() / 2).max(2))
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests;
