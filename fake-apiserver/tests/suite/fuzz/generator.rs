//! The request generator: random HTTP/1.1 requests over the API server's whole surface (method,
//! path, query, headers, body), mostly aimed at routes it serves, with JSON bodies small and
//! typed, deep, or wide, and protobuf bodies of random fields. The same seed gives the same
//! requests everywhere.

use super::TOKEN;

mod bodies;

use bodies::{PROTOBUF, body, protobuf_body};

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
