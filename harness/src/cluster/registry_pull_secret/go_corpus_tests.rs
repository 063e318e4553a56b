//! The merge this module runs against Go's answers: every case of `go_corpus.jsonl`, made by
//! upstream's types and calls under Go (the file's header says how), must give the same bytes,
//! the same "nothing written", or an error where Go gives one, in 4.16 and in 4.14.

use super::*;

const CORPUS: &str = include_str!("go_corpus.jsonl");
/// The base domain the Go program's default route uses.
const BASE_DOMAIN: &str = "example.com";

/// One corpus line; the `encoding_json_*` answers document the standard library's and are
/// not checked.
#[derive(serde::Deserialize)]
struct Case {
    name: String,
    dockercfg: Vec<String>,
    dockerconfigjson: String,
    go_4_16: Option<String>,
    go_4_14: Option<String>,
}

/// The corpus writes bytes as code points U+0000-U+00FF.
fn bytes(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| u8::try_from(c).expect("corpus bytes are code points up to U+00FF"))
        .collect()
}

fn cases() -> Vec<Case> {
    CORPUS
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("corpus line {line:.80}: {e}")))
        .collect()
}

/// What `assemble` does after its reads, step for step.
fn assembled(case: &Case, skip_unreadable: bool) -> Result<Option<Vec<u8>>, ClusterError> {
    let mut auths = Hosts::new();
    for (i, raw) in case.dockercfg.iter().enumerate() {
        merge_puller_secret(&format!("puller-{i}"), &bytes(raw), &mut auths, skip_unreadable)?;
    }
    merge_global_pull_secret(&bytes(&case.dockerconfigjson), &mut auths)?;
    Ok(written(auths, BASE_DOMAIN))
}

fn agrees(go: Option<&str>, harness: &Result<Option<Vec<u8>>, ClusterError>) -> bool {
    match (go, harness) {
        (Some("error"), result) => result.is_err(),
        (go, Ok(written)) => go.map(bytes) == *written,
        (_, Err(_)) => false,
    }
}

#[test]
fn registry_pull_secret_merge_matches_go_on_every_corpus_case() {
    let cases = cases();
    assert!(cases.len() >= 40, "the corpus holds {} cases", cases.len());
    let mut differences = Vec::new();
    for case in &cases {
        for (release, skip_unreadable, go) in [("4.16", false, &case.go_4_16), ("4.14", true, &case.go_4_14)]
        {
            let harness = assembled(case, skip_unreadable);
            if !agrees(go.as_deref(), &harness) {
                let harness = harness.map(|w| w.map(|b| String::from_utf8_lossy(&b).into_owned()));
                differences.push(format!(
                    "{release} {:?}: Go {go:?}, harness {harness:?}",
                    case.name
                ));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "{} answers differ from Go's:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

#[test]
fn registry_pull_secret_corpus_holds_errors_nothing_and_writes() {
    let cases = cases();
    let answers: Vec<Option<&str>> = cases
        .iter()
        .flat_map(|c| [c.go_4_16.as_deref(), c.go_4_14.as_deref()])
        .collect();
    assert!(answers.contains(&Some("error")));
    assert!(answers.contains(&None));
    assert!(answers.iter().flatten().any(|a| a.starts_with("{\"auths\":{")));
}
