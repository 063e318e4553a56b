//! The generator's request bodies: JSON shaped like Kubernetes objects, JSON patches, JSON past
//! any sane depth or width, raw bytes, and protobuf envelopes of random fields.

use super::{KINDS, Rng, SEGMENTS, VERSIONS};
use crate::protobuf::{field as delimited, varint};
use serde_json::{Value, json};

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
pub(super) fn body(rng: &mut Rng) -> Vec<u8> {
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

pub(super) const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A protobuf body: the `k8s\0` magic and an envelope naming a kind, around a message of random
/// fields (strings, varints at their edges, map entries, nested messages, tags with any wire
/// type and lengths that lie), sometimes cut short anywhere.
pub(super) fn protobuf_body(rng: &mut Rng) -> Vec<u8> {
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
