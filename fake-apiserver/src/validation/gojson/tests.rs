//! `gojson` held to Go's own answers: every line of `testdata/go_json_errors.jsonl`, and
//! `quoteChar` at the edges of its table.

use super::*;
use serde_json::Value;

/// Each line of the corpus: the input as runs of a repeated piece, and Go's answer.
fn corpus() -> Vec<(Vec<u8>, String, Option<String>)> {
    include_str!("testdata/go_json_errors.jsonl")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let entry: Value = serde_json::from_str(line).expect("a JSON line");
            let mut input = Vec::new();
            for run in entry["input"].as_array().expect("runs") {
                let piece = hex(run[0].as_str().expect("hex"));
                for _ in 0..run[1].as_u64().expect("times") {
                    input.extend_from_slice(&piece);
                }
            }
            let quoted = entry["quoted"].as_str().expect("quoted").to_string();
            (input, quoted, entry["error"].as_str().map(str::to_string))
        })
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digits"))
        .collect()
}

#[test]
fn every_answer_is_go_s() {
    let corpus = corpus();
    assert!(corpus.len() >= 60, "{} entries", corpus.len());
    let wrong: Vec<String> = corpus
        .iter()
        .filter_map(|(input, quoted, want)| {
            let got = unmarshal_map_error(input);
            (&got != want).then(|| format!("{quoted}: Go {want:?}, here {got:?}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn quote_char_is_go_s() {
    let cases: [(u8, &str); 9] = [
        (b'x', "'x'"),
        (b'\'', r"'\''"),
        (b'"', "'\"'"),
        (b'\n', r"'\n'"),
        (0x01, r"'\x01'"),
        (0x7f, r"'\x7f'"),
        (0x85, r"'\u0085'"),
        (0xef, "'ï'"),
        (b' ', "' '"),
    ];
    for (c, want) in cases {
        assert_eq!(quote_char(c), want, "{c:#x}");
    }
}
