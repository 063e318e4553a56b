//! A fuzz target over the whole HTTP surface: raw requests over TLS whose method, path, query,
//! headers and body come from a seeded generator that knows the API's grammar (group, version,
//! namespace, resource, name, subresource; the query keys and content types the server reads)
//! and mixes in what it does not expect (percent-escapes, NULs, unknown keys, random bytes,
//! JSON nested thousands deep or thousands wide). Every request must get an HTTP answer that is
//! not a 5xx, within five seconds: a handler that panics drops its connection, and a server that
//! hangs answers nothing. The server must still be ready at the end.
//!
//! It is not coverage-guided (no nightly toolchain here): the generator is structured instead,
//! and deterministic for a seed. CI runs it for `FUZZ_SECONDS` (default 3); by hand,
//! `FUZZ_SECONDS=600 FUZZ_SEED=$RANDOM cargo test -p fake-apiserver --test suite fuzz:: -- --nocapture`.
//! A request that fails is written to `target/fuzz-failures/`; copied into
//! `fake-apiserver/tests/fuzz-corpus/`, it is replayed first on every run from then on.

use crate::common::{init_crypto, skip_external};
use crate::http_edges::connect;
use fake_apiserver::{FakeApiServer, Identity, ServerHandle};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "fuzz-token";

/// xorshift64*: small, fast, and the same sequence for the same seed everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const METHODS: &[&str] = &[
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "PROPFIND", "get",
];
const SEGMENTS: &[&str] = &[
    "api",
    "apis",
    "v1",
    "v1beta1",
    "namespaces",
    "default",
    "kube-system",
    "kube-public",
    "configmaps",
    "secrets",
    "nodes",
    "pods",
    "events",
    "leases",
    "serviceaccounts",
    "namespaces",
    "status",
    "binding",
    "proxy",
    "coordination.k8s.io",
    "apiextensions.k8s.io",
    "customresourcedefinitions",
    "machineconfiguration.openshift.io",
    "machineconfigs",
    "controllerconfigs",
    "exists",
    "x",
    "node-1",
    "%2F",
    "%2e%2e",
    "..",
    ".",
    "%00",
    "%zz",
    "a%20b",
    "UPPER",
    "-",
    "ünïcode",
    "openapi",
    "version",
    "healthz",
    "readyz",
    "livez",
    "metrics",
    "",
];
const QUERY_KEYS: &[&str] = &[
    "watch",
    "labelSelector",
    "fieldSelector",
    "resourceVersion",
    "resourceVersionMatch",
    "limit",
    "continue",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "dryRun",
    "fieldManager",
    "fieldValidation",
    "force",
    "propagationPolicy",
    "gracePeriodSeconds",
    "pretty",
    "unknown",
];
const QUERY_VALUES: &[&str] = &[
    "true",
    "false",
    "0",
    "1",
    "-1",
    "99999999999999999999",
    "",
    "a=b",
    "a!=b",
    "a in (b,c)",
    "!a",
    "metadata.name=exists",
    "metadata.namespace==default",
    "spec.x=y",
    "NotOlderThan",
    "Exact",
    "All",
    "Foreground",
    "Strict",
    "1.5",
    "%ff",
    "%",
    "a,b,,c",
    "(",
];
const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
    "application/json; charset=utf-8",
    "garbage/\u{1}",
];
const ACCEPTS: &[&str] = &[
    "application/json",
    "*/*",
    "application/*",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;stream=watch",
    "text/html",
    ",,,",
];
const KINDS: &[&str] = &[
    "ConfigMap",
    "Secret",
    "Node",
    "Namespace",
    "Pod",
    "Lease",
    "Event",
    "CustomResourceDefinition",
    "MachineConfig",
    "",
];
const VERSIONS: &[&str] = &[
    "v1",
    "coordination.k8s.io/v1",
    "apiextensions.k8s.io/v1",
    "machineconfiguration.openshift.io/v1",
    "no/such",
    "",
];

/// A JSON value of the generator's choosing: small and typed, or deep, or wide.
fn value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 4 { 5 } else { 9 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(rng.next() as i64),
        3 => json!(f64::from_bits(rng.next() & 0x7fef_ffff_ffff_ffff)),
        4 => json!(rng.pick(SEGMENTS)),
        5 | 6 => {
            let n = rng.below(4);
            Value::Array((0..n).map(|_| value(rng, depth + 1)).collect())
        }
        _ => {
            let n = rng.below(4);
            let keys = [
                "metadata",
                "spec",
                "status",
                "data",
                "binaryData",
                "labels",
                "name",
                "x",
            ];
            Value::Object(
                (0..n)
                    .map(|_| (keys[rng.below(keys.len())].to_string(), value(rng, depth + 1)))
                    .collect(),
            )
        }
    }
}

/// A body: an object shaped like a Kubernetes object with random parts, a JSON patch, JSON
/// nested or spread past any sane size, or bytes.
fn body(rng: &mut Rng) -> Vec<u8> {
    match rng.below(8) {
        0 => Vec::new(),
        1 => {
            // Nested deep: arrays or objects, up to 20,000 levels.
            let depth = 1 + rng.below(20_000);
            let (open, close) = if rng.chance(50) {
                ("[", "]")
            } else {
                ("{\"a\":", "}")
            };
            let mut text = open.repeat(depth);
            text.push('1');
            text.push_str(&close.repeat(depth));
            text.into_bytes()
        }
        2 => {
            // Wide: thousands of keys or items.
            let n = rng.below(20_000);
            let data: serde_json::Map<String, Value> =
                (0..n).map(|i| (format!("k{i}"), json!("v"))).collect();
            serde_json::to_vec(
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wide"}, "data": data}),
            )
            .unwrap_or_default()
        }
        3 => {
            let ops = ["add", "remove", "replace", "move", "copy", "test", "nope"];
            let paths = [
                "/metadata/labels/a",
                "/data",
                "/",
                "",
                "/spec/x/-",
                "/metadata",
                "/a~1b",
                "/data/0",
            ];
            let patch: Vec<Value> = (0..1 + rng.below(4))
                .map(|_| json!({"op": ops[rng.below(ops.len())], "path": paths[rng.below(paths.len())], "from": paths[rng.below(paths.len())], "value": value(rng, 2)}))
                .collect();
            serde_json::to_vec(&patch).unwrap_or_default()
        }
        4 => (0..rng.below(512)).map(|_| rng.next() as u8).collect(),
        5 => b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {a: [1, {b: *x}]}\n".to_vec(),
        _ => {
            let mut object = json!({
                "apiVersion": rng.pick(VERSIONS),
                "kind": rng.pick(KINDS),
                "metadata": {"name": rng.pick(SEGMENTS), "namespace": rng.pick(SEGMENTS)},
            });
            for key in ["metadata", "spec", "data", "status"] {
                if rng.chance(40) {
                    object[key] = value(rng, 1);
                }
            }
            serde_json::to_vec(&object).unwrap_or_default()
        }
    }
}

const GROUPS: &[(&str, &str, &[&str])] = &[
    (
        "",
        "v1",
        &[
            "configmaps",
            "secrets",
            "nodes",
            "pods",
            "events",
            "namespaces",
            "serviceaccounts",
        ],
    ),
    ("coordination.k8s.io", "v1", &["leases"]),
    ("apiextensions.k8s.io", "v1", &["customresourcedefinitions"]),
    (
        "machineconfiguration.openshift.io",
        "v1",
        &["machineconfigs", "controllerconfigs", "machineconfigpools"],
    ),
];
const NAMES: &[&str] = &[
    "exists",
    "new",
    "default",
    "kube-system",
    "node-1",
    "a.b",
    "UPPER",
    "x%2Fy",
    "",
];

/// The segments of a path the API serves, mostly: discovery, or a collection or an object
/// (namespaced or not) with a subresource now and then.
fn route_segments(rng: &mut Rng) -> Vec<&'static str> {
    if rng.chance(10) {
        let roots: &[&[&str]] = &[
            &["api"],
            &["apis"],
            &["api", "v1"],
            &["version"],
            &["readyz"],
            &["healthz"],
            &["openapi", "v2"],
            &[],
        ];
        return roots[rng.below(roots.len())].to_vec();
    }
    let (group, version, resources) = GROUPS[rng.below(GROUPS.len())];
    let mut out: Vec<&'static str> = if group.is_empty() {
        vec!["api", version]
    } else {
        vec!["apis", group, version]
    };
    if rng.chance(60) {
        out.extend([
            "namespaces",
            rng.pick(&["default", "kube-system", "kube-public", "missing"]),
        ]);
    }
    out.push(resources[rng.below(resources.len())]);
    if rng.chance(60) {
        out.push(rng.pick(NAMES));
        if rng.chance(20) {
            out.push(rng.pick(&["status", "binding", "scale", "proxy"]));
        }
    }
    out
}

/// One raw HTTP/1.1 request, and the route it aimed at (method and path, without the query).
fn request(rng: &mut Rng) -> (Vec<u8>, String) {
    let method = rng.pick(METHODS);
    let mut segments = route_segments(rng);
    // Now and then a segment the grammar would not give.
    for segment in segments.iter_mut() {
        if rng.chance(8) {
            *segment = rng.pick(SEGMENTS);
        }
    }
    let mut path = format!("/{}", segments.join("/"));
    if rng.chance(60) {
        let query: Vec<String> = (0..1 + rng.below(4))
            .map(|_| format!("{}={}", rng.pick(QUERY_KEYS), rng.pick(QUERY_VALUES)))
            .collect();
        path = format!("{path}?{}", query.join("&"));
    }
    // Bytes a request line may not hold are escaped, as a client would send them.
    let path: String = path
        .bytes()
        .map(|b| match b {
            b' ' => "%20".to_string(),
            0x21..=0x7e => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect();
    let body = body(rng);
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    match rng.below(10) {
        0 => {}
        1 => head.push_str("Authorization: Bearer not-a-token\r\n"),
        2 => head.push_str("Authorization: Basic Zm9vOmJhcg==\r\n"),
        _ => head.push_str(&format!("Authorization: Bearer {TOKEN}\r\n")),
    }
    if rng.chance(80) {
        head.push_str(&format!("Content-Type: {}\r\n", rng.pick(CONTENT_TYPES)));
    }
    if rng.chance(60) {
        head.push_str(&format!("Accept: {}\r\n", rng.pick(ACCEPTS)));
    }
    if rng.chance(10) {
        head.push_str(&format!("Impersonate-User: {}\r\n", rng.pick(SEGMENTS)));
        if rng.chance(50) {
            head.push_str(&format!("Impersonate-Group: {}\r\n", rng.pick(SEGMENTS)));
        }
    }
    if rng.chance(5) {
        head.push_str("Expect: 100-continue\r\n");
    }
    let mut out;
    if rng.chance(10) {
        // Chunked, in pieces of random size.
        head.push_str("Transfer-Encoding: chunked\r\n\r\n");
        out = head.into_bytes();
        let mut rest = body.as_slice();
        while !rest.is_empty() {
            let n = 1 + rng.below(rest.len().min(4096));
            out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
            out.extend_from_slice(&rest[..n]);
            out.extend_from_slice(b"\r\n");
            rest = &rest[n..];
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        out = head.into_bytes();
        out.extend_from_slice(&body);
    }
    let route = format!("{method} /{}", segments.join("/"));
    (out, route)
}

/// The first status code of a final answer in what was read so far (a 100 Continue is not
/// one: the answer follows it).
fn final_code(read: &[u8]) -> Option<u16> {
    String::from_utf8_lossy(read)
        .split("\r\n")
        .filter_map(|l| l.strip_prefix("HTTP/1.1 "))
        .filter_map(|l| l.split(' ').next()?.parse::<u16>().ok())
        .find(|c| *c != 100)
}

/// Send one request on a connection of its own; the status code, or why there is none.
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
            if let Some(code) = final_code(&read) {
                return Ok(code);
            }
            match tls.read(&mut chunk).await {
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
        assert!(
            code.as_ref().is_ok_and(|c| *c < 500),
            "{}: {code:?}",
            file.display()
        );
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
    let mut failures = Vec::new();
    while started.elapsed() < Duration::from_secs(seconds) {
        let (raw, route) = request(&mut rng);
        sent += 1;
        match answer(&server, &raw).await {
            Ok(code) if code < 500 => {
                routes.insert(route);
                codes.insert(code);
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
        "fuzz: seed {seed}, {sent} requests in {:.1} s, {} distinct routes (method and path), status codes {codes:?}, failures {}",
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
