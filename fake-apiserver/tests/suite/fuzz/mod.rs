//! A fuzz target over the whole HTTP surface: raw requests over TLS whose method, path, query,
//! headers and body come from a seeded generator that knows the API's grammar (group, version,
//! namespace, resource, name, subresource; the query keys and content types the server reads)
//! and mixes in what it does not expect (percent-escapes, NULs, unknown keys, random bytes,
//! JSON nested thousands deep or thousands wide, protobuf envelopes around random fields), and every number a client gives at the edges
//! of every integer type (a quarter of the requests are well-formed lists, watches, gets and
//! deletes with such numbers; `the_generator_sends_every_number_at_every_extreme` holds the
//! generator to it). Every request must get an HTTP answer that is not a 5xx (but for
//! kube-apiserver's own 504 for a resourceVersion past the newest), within five seconds: a
//! handler that panics drops its connection, and a server that hangs answers nothing. The server
//! must still be ready at the end.
//!
//! It is not coverage-guided (no nightly toolchain here): the generator is structured instead,
//! and deterministic for a seed. CI runs it for `FUZZ_SECONDS` (default 3); by hand,
//! `FUZZ_SECONDS=600 FUZZ_SEED=$RANDOM cargo test -p fake-apiserver --test suite fuzz:: -- --nocapture`.
//! A request that fails is written to `target/fuzz-failures/`; copied into
//! `fake-apiserver/tests/fuzz-corpus/`, it is replayed first on every run from then on.

use crate::common::{init_crypto, skip_external};
use crate::http_edges::connect;
use fake_apiserver::{FakeApiServer, Identity, ServerHandle};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod generator;

use generator::{Rng, request};

const TOKEN: &str = "fuzz-token";

/// The first status code of a final answer in what was read so far (a 100 Continue is not
/// one: the answer follows it).
fn final_code(read: &[u8]) -> Option<u16> {
    String::from_utf8_lossy(read)
        .split("\r\n")
        .filter_map(|l| l.strip_prefix("HTTP/1.1 "))
        .filter_map(|l| l.split(' ').next()?.parse::<u16>().ok())
        .find(|c| *c != 100)
}

/// The one 5xx kube-apiserver gives for a client's request: a resourceVersion past the
/// newest, which its watch cache waits for and gives up on (504 `Timeout`).
const TOO_LARGE: &str = "Too large resource version";

/// Send one request on a connection of its own; the status code, or why there is none. A 5xx
/// is read whole: it counts as an answer only as kube-apiserver's own `TOO_LARGE` 504.
async fn answer(server: &ServerHandle, raw: &[u8]) -> Result<u16, String> {
    let exchange = async {
        let mut tls = connect(server).await;
        // The server may answer before it has read all of a body it refuses: a failed write is
        // not the server's failure, a missing answer is.
        let _ = tls.write_all(raw).await;
        let _ = tls.flush().await;
        let mut read = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(code) = final_code(&read).filter(|c| *c < 500) {
                return Ok(code);
            }
            match tls.read(&mut chunk).await {
                Ok(0) | Err(_) if final_code(&read).is_some() => {
                    let code = final_code(&read).unwrap_or_default();
                    let text = String::from_utf8_lossy(&read);
                    return if code == 504 && text.contains(TOO_LARGE) {
                        Ok(code)
                    } else {
                        Err(format!("{code}: {text}"))
                    };
                }
                Ok(0) | Err(_) => {
                    return Err(format!(
                        "no HTTP answer (the connection closed): {:?}",
                        String::from_utf8_lossy(&read)
                            .chars()
                            .take(200)
                            .collect::<String>()
                    ));
                }
                Ok(n) => read.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .unwrap_or_else(|_| Err("no answer within 5 s".into()))
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus")
}

/// Keep a failing request where a person can move it into the corpus.
fn keep_failure(raw: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let name = format!(
        "{:016x}.http",
        raw.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ *b as u64)
            .wrapping_mul(0x100_0000_01b3))
    );
    let path = dir.join(name);
    let _ = std::fs::write(&path, raw);
    path
}

async fn fuzz_server() -> ServerHandle {
    init_crypto();
    FakeApiServer::builder()
        .token(TOKEN, Identity::new("fuzzer", &["system:masters"]))
        .object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "exists", "namespace": "default"}}))
        .start()
        .await
        .unwrap()
}

async fn ready(server: &ServerHandle) -> bool {
    let raw = format!(
        "GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    );
    answer(server, raw.as_bytes()).await == Ok(200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_corpus_still_gets_answers() {
    if skip_external(
        "the fuzz corpus",
        "it speaks raw HTTP with the fake's bearer token",
    ) {
        return;
    }
    let server = fuzz_server().await;
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("the fuzz corpus directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "http"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the corpus holds requests");
    for file in &files {
        let raw = std::fs::read(file).unwrap();
        let code = answer(&server, &raw).await;
        assert!(code.is_ok(), "{}: {code:?}", file.display());
    }
    assert!(ready(&server).await, "the server still serves after the corpus");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_requests_over_the_whole_surface_get_answers() {
    if skip_external(
        "the fuzz target",
        "it speaks raw HTTP with the fake's bearer token",
    ) {
        return;
    }
    let seconds: u64 = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let server = fuzz_server().await;
    let mut rng = Rng(seed.max(1));
    let started = Instant::now();
    let (mut sent, mut routes, mut codes) = (0u64, BTreeSet::new(), BTreeSet::new());
    // Protobuf envelopes sent as such, and what they got.
    let (mut protobuf, mut protobuf_codes) = (0u64, std::collections::BTreeMap::new());
    let mut failures = Vec::new();
    while started.elapsed() < Duration::from_secs(seconds) {
        let (raw, route) = request(&mut rng);
        sent += 1;
        let enveloped = contains(&raw, b"Content-Type: application/vnd.kubernetes.protobuf\r\n")
            && contains(&raw, b"\r\n\r\nk8s\0");
        protobuf += u64::from(enveloped);
        match answer(&server, &raw).await {
            Ok(code) => {
                routes.insert(route);
                codes.insert(code);
                if enveloped {
                    *protobuf_codes.entry(code).or_insert(0u64) += 1;
                }
            }
            outcome => {
                let kept = keep_failure(&raw);
                failures.push(format!(
                    "{route}: {outcome:?} (request kept in {})",
                    kept.display()
                ));
                if failures.len() >= 5 {
                    break;
                }
            }
        }
    }
    println!(
        "fuzz: seed {seed}, {sent} requests in {:.1} s, {} distinct routes (method and path), status codes {codes:?}, failures {}; {protobuf} protobuf envelopes, answered {protobuf_codes:?}",
        started.elapsed().as_secs_f64(),
        routes.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
    assert!(
        ready(&server).await,
        "the server still serves after {sent} requests"
    );
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The generator sends every numeric query parameter at every extreme it knows, with the
/// default seed, well within what a long run sends.
#[test]
fn the_generator_sends_every_number_at_every_extreme() {
    let mut missing: BTreeSet<(&str, &str)> = generator::NUMERIC_KEYS
        .iter()
        .flat_map(|k| generator::EXTREMES.iter().map(move |v| (*k, *v)))
        .collect();
    let mut rng = Rng(0x5eed);
    for _ in 0..20_000 {
        if missing.is_empty() {
            break;
        }
        let (raw, _) = request(&mut rng);
        let line = raw.split(|b| *b == b'\r').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let Some(query) = line.split(' ').nth(1).and_then(|p| p.split_once('?')) else {
            continue;
        };
        for pair in query.1.split('&') {
            if let Some((key, value)) = pair.split_once('=') {
                missing.retain(|(k, v)| !(*k == key && *v == value));
            }
        }
    }
    assert!(missing.is_empty(), "never sent: {missing:?}");
}
