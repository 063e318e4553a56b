//! The request generator: random HTTP/1.1 requests over the API server's whole surface (method,
//! path, query, headers, body), mostly aimed at routes it serves, with JSON bodies small and
//! typed, deep, or wide. The same seed gives the same requests everywhere.

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
pub(super) fn request(rng: &mut Rng) -> (Vec<u8>, String) {
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
