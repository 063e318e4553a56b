//! Step definitions, grouped by domain concept (cucumber-rs book, "modules"). Each step is a
//! few lines delegating to `harness::scenario::Scenario`.
//!
//! These files are compiled into each binary that runs features (`tests/conformance.rs`, the
//! `mco-conformance` CLI) rather than into the harness library: cucumber registers steps
//! through linker sections, which a library's unreferenced object files would lose.

pub mod cluster;
pub mod config;
pub mod drift;
pub mod kubelet;
pub mod node;
pub mod oracle;
pub mod pool;
pub mod registry;
pub mod serving;
pub mod signer;
pub mod time;

/// The step sources, for `mco-conformance steps` (phrases listed from the code itself).
pub const SOURCES: &[(&str, &str)] = &[
    ("harness/src/steps/cluster.rs", include_str!("cluster.rs")),
    ("harness/src/steps/config.rs", include_str!("config.rs")),
    ("harness/src/steps/drift.rs", include_str!("drift.rs")),
    ("harness/src/steps/kubelet.rs", include_str!("kubelet.rs")),
    ("harness/src/steps/node.rs", include_str!("node.rs")),
    ("harness/src/steps/oracle.rs", include_str!("oracle.rs")),
    ("harness/src/steps/pool.rs", include_str!("pool.rs")),
    ("harness/src/steps/registry.rs", include_str!("registry.rs")),
    ("harness/src/steps/serving.rs", include_str!("serving.rs")),
    ("harness/src/steps/signer.rs", include_str!("signer.rs")),
    ("harness/src/steps/time.rs", include_str!("time.rs")),
];

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

/// The catalogue as the README's Markdown table.
pub fn catalogue_markdown() -> String {
    let mut out = String::from("| step | what it does | defined in |\n|---|---|---|\n");
    for s in catalogue() {
        out.push_str(&format!(
            "| {} `{}` | {} | `{}` |\n",
            s.keyword,
            s.phrase.replace('|', "\\|"),
            s.description,
            s.location
        ));
    }
    out
}
