//! The request generator: random HTTP/1.1 requests over the API server's whole surface (method,
//! path, query, headers, body), mostly aimed at routes it serves, with JSON bodies small and
//! typed, deep, or wide, and protobuf bodies of random fields. The same seed gives the same
//! requests everywhere.

use super::TOKEN;
use serde_json::{Value, json};

/// xorshift64*: small, fast, and the same sequence for the same seed everywhere.
pub(super) struct Rng(pub(super) u64);

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
/// The query parameters a client gives as numbers (a resourceVersion is one too, to the
/// storage): each is sent at the edges of every integer type a server might read it into,
/// past them, signed, padded and in other notations.
pub(super) const NUMERIC_KEYS: &[&str] =
    &["limit", "timeoutSeconds", "gracePeriodSeconds", "resourceVersion"];
pub(super) const EXTREMES: &[&str] = &[
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999999",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967296",
    // Seconds whose nanoseconds just fit, or just do not, in an int64.
    "9223372036",
    "9223372037",
    "-9223372037",
    "-1",
    "-0",
    "%2B1",
    "0000000000000000000001",
    "1e18",
    "0x10",
    "%201",
    "1%00",
];
/// Continue tokens: the server's own shape with numbers at their extremes, and worse.
const CONTINUE_TOKENS: &[&str] = &[
    // {"v":"meta.k8s.io/v1","rv":18446744073709551615,"snapshot":18446744073709551615}
    "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTg0NDY3NDQwNzM3MDk1NTE2MTUsInNuYXBzaG90IjoxODQ0Njc0NDA3MzcwOTU1MTYxNX0=",
    // {"v":"meta.k8s.io/v1","rv":-1,"snapshot":-9223372036854775808}
    "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInNuYXBzaG90IjotOTIyMzM3MjAzNjg1NDc3NTgwOH0=",
    // {"v":"meta.k8s.io/v1","rv":1e400,"snapshot":0}
    "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MWU0MDAsInNuYXBzaG90IjowfQ==",
    // {"v":"meta.k8s.io/v1","rv":0,"snapshot":0}
    "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic25hcHNob3QiOjB9",
    "%3D%3D%3D%3D",
    "bm90IGpzb24",
];
/// Content-Length values at the edges (the body sent is the generator's, shorter or longer).
const CONTENT_LENGTHS: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "4294967296",
    "-1",
    "3145729",
];
const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "application/yaml",
    PROTOBUF,
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

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A protobuf body: the `k8s\0` magic and an envelope naming a kind, around a message of random
/// fields (strings, varints at their edges, map entries, nested messages, tags with any wire
/// type and lengths that lie), sometimes cut short anywhere.
fn protobuf_body(rng: &mut Rng) -> Vec<u8> {
    let mut raw = Vec::new();
    protobuf_fields(rng, &mut raw, 0);
    let mut type_meta = Vec::new();
    delimited(&mut type_meta, 1, rng.pick(VERSIONS).as_bytes());
    delimited(&mut type_meta, 2, rng.pick(KINDS).as_bytes());
    let mut out = b"k8s\0".to_vec();
    delimited(&mut out, 1, &type_meta);
    delimited(&mut out, 2, &raw);
    if rng.chance(20) {
        out.truncate(rng.below(out.len() + 1));
    }
    out
}

fn protobuf_fields(rng: &mut Rng, out: &mut Vec<u8>, depth: usize) {
    for _ in 0..rng.below(8) {
        let field = if rng.chance(10) {
            rng.next() >> rng.below(64)
        } else {
            1 + rng.below(17) as u64
        };
        match rng.below(6) {
            0 => {
                varint(out, field << 3);
                let edges = [0, 1, u64::MAX, i64::MAX as u64, 1 << 31, 1 << 32];
                let n = if rng.chance(50) {
                    edges[rng.below(edges.len())]
                } else {
                    rng.next()
                };
                varint(out, n);
            }
            1 if depth < 4 => {
                let mut inner = Vec::new();
                protobuf_fields(rng, &mut inner, depth + 1);
                delimited(out, field, &inner);
            }
            2 => delimited(out, field, rng.pick(SEGMENTS).as_bytes()),
            3 => {
                let mut entry = Vec::new();
                delimited(&mut entry, 1, rng.pick(SEGMENTS).as_bytes());
                delimited(&mut entry, 2, rng.pick(SEGMENTS).as_bytes());
                delimited(out, field, &entry);
            }
            _ => {
                varint(out, (field << 3) | rng.below(8) as u64);
                varint(out, rng.next() >> rng.below(64));
            }
        }
    }
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn delimited(out: &mut Vec<u8>, field: u64, payload: &[u8]) {
    varint(out, (field << 3) | 2);
    varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
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

/// Collections and an object of served resources, where every numeric parameter is read.
const PROBED: &[&str] = &[
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/nodes",
    "/api/v1/namespaces",
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
    "/apis/machineconfiguration.openshift.io/v1/machineconfigs",
    "/api/v1/namespaces/default/configmaps/new",
];

/// A well-formed, authenticated list, watch, get or delete of a served resource with one or
/// two numbers at their extremes: where the server turns them into deadlines, page sizes,
/// versions and grace periods.
fn number_probe(rng: &mut Rng) -> (Vec<u8>, String) {
    let method = if rng.chance(80) { "GET" } else { "DELETE" };
    let path = rng.pick(PROBED);
    let mut query: Vec<String> = (0..1 + rng.below(2))
        .map(|_| {
            // Half the time one of the 64-bit edges, where overflow lives.
            let value = if rng.chance(50) {
                rng.pick(&EXTREMES[..6])
            } else {
                rng.pick(EXTREMES)
            };
            format!("{}={value}", rng.pick(NUMERIC_KEYS))
        })
        .collect();
    if rng.chance(50) {
        query.push("watch=true".into());
    }
    let raw = format!(
        "{method} {path}?{} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 0\r\n\r\n",
        query.join("&")
    );
    (raw.into_bytes(), format!("{method} {path}"))
}

/// A value for `key`: numbers at their extremes half the time for the numeric keys, crafted
/// tokens for `continue`, anything from the list otherwise.
pub(super) fn query_value(rng: &mut Rng, key: &str) -> &'static str {
    if NUMERIC_KEYS.contains(&key) && rng.chance(50) {
        rng.pick(EXTREMES)
    } else if key == "continue" && rng.chance(60) {
        rng.pick(CONTINUE_TOKENS)
    } else {
        rng.pick(QUERY_VALUES)
    }
}

/// One raw HTTP/1.1 request, and the route it aimed at (method and path, without the query).
pub(super) fn request(rng: &mut Rng) -> (Vec<u8>, String) {
    if rng.chance(25) {
        return number_probe(rng);
    }
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
            .map(|_| {
                let key = rng.pick(QUERY_KEYS);
                format!("{key}={}", query_value(rng, key))
            })
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
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    match rng.below(10) {
        0 => {}
        1 => head.push_str("Authorization: Bearer not-a-token\r\n"),
        2 => head.push_str("Authorization: Basic Zm9vOmJhcg==\r\n"),
        _ => head.push_str(&format!("Authorization: Bearer {TOKEN}\r\n")),
    }
    let content_type = rng.chance(80).then(|| rng.pick(CONTENT_TYPES));
    if let Some(content_type) = content_type {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    let body = if content_type == Some(PROTOBUF) && rng.chance(75) {
        protobuf_body(rng)
    } else {
        body(rng)
    };
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
    } else if rng.chance(3) {
        // A length at its extremes: far more than is sent (or unreadable as a number).
        head.push_str(&format!("Content-Length: {}\r\n\r\n", rng.pick(CONTENT_LENGTHS)));
        out = head.into_bytes();
        out.extend_from_slice(&body);
    } else {
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        out = head.into_bytes();
        out.extend_from_slice(&body);
    }
    let route = format!("{method} /{}", segments.join("/"));
    (out, route)
}
