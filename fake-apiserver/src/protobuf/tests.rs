use super::wire::{put_delimited, put_tag, put_varint};
use super::*;

/// The body kubectl 1.33 sends for `kubectl create configmap probe --from-literal=a=b`
/// (captured with `-v=9`).
const KUBECTL_CONFIG_MAP: &[u8] = b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x1f\x0a\x15\x0a\x05probe\x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x12\x06\x0a\x01a\x12\x01b\x1a\x00\x22\x00";

/// A body around `raw`, naming `api_version` and `kind`.
fn body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    put_delimited(&mut type_meta, 1, api_version.as_bytes());
    put_delimited(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    put_delimited(&mut out, 1, &type_meta);
    put_delimited(&mut out, 2, raw);
    out
}

fn entry(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut e = Vec::new();
    put_delimited(&mut e, 1, key);
    put_delimited(&mut e, 2, value);
    e
}

fn decode(body: &[u8]) -> Result<Value, String> {
    let envelope = open(body, "", "v1", "ConfigMap")?;
    object(&envelope).map_err(|e| format!("{e:?}"))
}

#[test]
fn kubectls_config_map_reads_as_its_json() {
    assert_eq!(
        decode(KUBECTL_CONFIG_MAP).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "probe", "creationTimestamp": null}, "data": {"a": "b"}})
    );
}

#[test]
fn every_modelled_kind_reads() {
    let mut meta = Vec::new();
    put_delimited(&mut meta, 1, b"x");
    put_delimited(&mut meta, 11, &entry(b"app", b"web"));
    let mut owner = Vec::new();
    put_delimited(&mut owner, 1, b"Node");
    put_delimited(&mut owner, 3, b"n1");
    put_tag(&mut owner, 6, 0);
    put_varint(&mut owner, 1);
    put_delimited(&mut meta, 13, &owner);
    put_delimited(&mut meta, 14, b"example.com/keep");
    let with_meta = |rest: &[u8]| {
        let mut raw = Vec::new();
        put_delimited(&mut raw, 1, &meta);
        raw.extend_from_slice(rest);
        raw
    };
    let meta_json = json!({"name": "x", "creationTimestamp": null, "labels": {"app": "web"},
        "ownerReferences": [{"apiVersion": "", "kind": "Node", "name": "n1", "uid": "", "controller": true}],
        "finalizers": ["example.com/keep"]});

    let mut secret = Vec::new();
    put_delimited(&mut secret, 2, &entry(b"password", b"\x00\xffs3cret"));
    put_delimited(&mut secret, 3, b"Opaque");
    put_tag(&mut secret, 5, 0);
    put_varint(&mut secret, 0);
    let mut timestamp = Vec::new();
    put_tag(&mut timestamp, 1, 0);
    put_varint(&mut timestamp, 1_795_939_200);
    put_tag(&mut timestamp, 2, 0);
    put_varint(&mut timestamp, 123_456_789);
    let mut lease_spec = Vec::new();
    put_delimited(&mut lease_spec, 1, b"node-1");
    put_tag(&mut lease_spec, 2, 0);
    put_varint(&mut lease_spec, 40);
    put_delimited(&mut lease_spec, 4, &timestamp);
    let mut lease = Vec::new();
    put_delimited(&mut lease, 2, &lease_spec);
    let mut namespace_spec = Vec::new();
    put_delimited(&mut namespace_spec, 1, b"kubernetes");
    let mut namespace = Vec::new();
    put_delimited(&mut namespace, 2, &namespace_spec);
    let mut account = Vec::new();
    put_delimited(&mut account, 3, &{
        let mut r = Vec::new();
        put_delimited(&mut r, 1, b"pull");
        r
    });
    let mut event = Vec::new();
    put_delimited(&mut event, 2, &{
        let mut r = Vec::new();
        put_delimited(&mut r, 1, b"Node");
        put_delimited(&mut r, 3, b"n1");
        r
    });
    put_delimited(&mut event, 3, b"Rebooted");
    put_delimited(&mut event, 6, &timestamp);
    put_tag(&mut event, 8, 0);
    put_varint(&mut event, 2);

    let cases = [
        (
            "v1",
            "Secret",
            secret,
            json!({"immutable": false, "data": {"password": "AP9zM2NyZXQ="}, "type": "Opaque"}),
        ),
        (
            "coordination.k8s.io/v1",
            "Lease",
            lease,
            json!({"spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40,
                "renewTime": "2026-11-29T08:00:00.123456Z"}}),
        ),
        (
            "v1",
            "Namespace",
            namespace,
            json!({"spec": {"finalizers": ["kubernetes"]}, "status": {}}),
        ),
        (
            "v1",
            "ServiceAccount",
            account,
            json!({"imagePullSecrets": [{"name": "pull"}]}),
        ),
        (
            "v1",
            "Event",
            event,
            json!({"involvedObject": {"kind": "Node", "name": "n1"}, "reason": "Rebooted",
                "source": {}, "firstTimestamp": "2026-11-29T08:00:00Z", "lastTimestamp": null,
                "count": 2, "eventTime": null, "reportingComponent": "", "reportingInstance": ""}),
        ),
    ];
    for (api_version, kind, rest, expected) in cases {
        let got = object(&open(&body(api_version, kind, &with_meta(&rest)), "", "v1", "ConfigMap").unwrap())
            .unwrap();
        let mut want = json!({"apiVersion": api_version, "kind": kind, "metadata": meta_json});
        want.as_object_mut()
            .unwrap()
            .extend(expected.as_object().unwrap().clone());
        assert_eq!(got, want, "{kind}");
    }
}

#[test]
fn the_urls_type_fills_what_the_envelope_leaves_out() {
    let envelope = open(&body("", "", b""), "coordination.k8s.io", "v1", "Lease").unwrap();
    assert_eq!(
        (
            envelope.group.as_str(),
            envelope.version.as_str(),
            envelope.kind.as_str()
        ),
        ("coordination.k8s.io", "v1", "Lease")
    );
    // A version of its own keeps the envelope's group, even none.
    let envelope = open(&body("v2", "Secret", b""), "coordination.k8s.io", "v1", "Lease").unwrap();
    assert_eq!(envelope.api_version(), "v2");
    assert_eq!(envelope.kind, "Secret");
    // Two slashes name no version.
    let envelope = open(&body("a/b/c", "", b""), "", "v1", "ConfigMap").unwrap();
    assert_eq!(envelope.api_version(), "v1");
}

#[test]
fn a_later_value_wins_and_a_repeated_message_merges() {
    let mut meta_a = Vec::new();
    put_delimited(&mut meta_a, 1, b"first");
    put_delimited(&mut meta_a, 3, b"ns");
    let mut meta_b = Vec::new();
    put_delimited(&mut meta_b, 1, b"second");
    let mut raw = Vec::new();
    put_delimited(&mut raw, 1, &meta_a);
    put_delimited(&mut raw, 1, &meta_b);
    put_delimited(&mut raw, 2, &entry(b"k", b"1"));
    put_delimited(&mut raw, 2, &entry(b"k", b"2"));
    // An unknown field is skipped; managed fields are read and not kept.
    put_tag(&mut raw, 99, 0);
    put_varint(&mut raw, 7);
    let mut managed = Vec::new();
    put_delimited(&mut managed, 1, b"kubectl");
    let mut meta_c = Vec::new();
    put_delimited(&mut meta_c, 17, &managed);
    put_delimited(&mut raw, 1, &meta_c);
    let got = decode(&body("v1", "ConfigMap", &raw)).unwrap();
    assert_eq!(got["metadata"]["name"], "second");
    // A map entry's key may run past the entry, within the message: Go reads it, then goes on
    // after the entry (here, into an unknown field 5 that the key's bytes also were).
    let overlapping = decode(&body("v1", "ConfigMap", b"\x12\x02\x0a\x02\x2a\x00")).unwrap();
    assert_eq!(overlapping["data"], json!({"*\u{0}": ""}));
    assert_eq!(got["metadata"]["namespace"], "ns");
    assert_eq!(got["metadata"].get("managedFields"), None);
    assert_eq!(got["data"], json!({"k": "2"}));
}

#[test]
fn malformed_bodies_fail_in_the_decoders_words() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"".to_vec(), "empty data"),
        (
            b"{\"kind\":\"ConfigMap\"}".to_vec(),
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        ),
        (b"k8s\0".to_vec(), "empty body"),
        (b"k8s\0\x0a\x05v1".to_vec(), "unexpected EOF"),
        (
            b"k8s\0\x00".to_vec(),
            "proto: Unknown: illegal tag 0 (wire type 0)",
        ),
        (
            b"k8s\0\x0c".to_vec(),
            "proto: Unknown: wiretype end group for non-group",
        ),
        (
            b"k8s\0\x08\x01".to_vec(),
            "proto: wrong wireType = 0 for field TypeMeta",
        ),
        (
            b"k8s\0\x0a\x02\x08\x01".to_vec(),
            "proto: wrong wireType = 0 for field APIVersion",
        ),
        (b"k8s\0\x2e".to_vec(), "proto: illegal wireType 6"),
    ];
    for (bytes, message) in cases {
        assert_eq!(decode(&bytes).unwrap_err(), message, "{bytes:?}");
    }
    let object_cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"\x08\x01".to_vec(),
            "proto: wrong wireType = 0 for field ObjectMeta",
        ),
        (b"\x0a\x02\x38\x80".to_vec(), "unexpected EOF"),
        (b"\x12\x03\x0a\x05a".to_vec(), "unexpected EOF"),
        (
            b"\x20\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01".to_vec(),
            "proto: integer overflow",
        ),
        (
            b"\x0a\x0b\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01".to_vec(),
            "proto: negative length found during unmarshaling",
        ),
        (b"\x0a\x02\x42\x02\x10\x01".to_vec(), "unexpected EOF"),
        (
            b"\x0a\x04\x42\x02\x12\x00".to_vec(),
            "proto: wrong wireType = 2 for field Nanos",
        ),
    ];
    for (raw, message) in object_cases {
        assert_eq!(
            decode(&body("v1", "ConfigMap", &raw)).unwrap_err(),
            format!("{:?}", ObjectError::Malformed(message.into())),
            "{raw:?}"
        );
    }
    assert_eq!(
        decode(&body("v1", "Pod", b"")).unwrap_err(),
        format!("{:?}", ObjectError::NotModelled)
    );
}

/// Each answer, read back through the tables it was written with, is the document again.
#[test]
fn answers_read_back_as_they_were_written() {
    let documents = [
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                "creationTimestamp": "2026-11-29T08:00:00Z", "labels": {"b": "2", "a": "1"},
                "deletionGracePeriodSeconds": -5},
            "immutable": true, "data": {"k": "v"}, "binaryData": {"bin": "AP8="}}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "n1", "creationTimestamp": null},
            "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40, "leaseTransitions": 0,
                "renewTime": "2026-11-29T08:00:00.123456Z"}}),
        json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e", "creationTimestamp": null},
            "involvedObject": {"kind": "Node", "name": "n1"}, "source": {"component": "kubelet"},
            "firstTimestamp": "2026-11-29T08:00:00Z", "lastTimestamp": null, "count": 3,
            "eventTime": "2026-11-29T08:00:00.000001Z", "series": {"count": 2, "lastObservedTime": null},
            "reportingComponent": "", "reportingInstance": "x"}),
        json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": "csr-1", "creationTimestamp": null},
            "spec": {"request": "AAEC", "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                "expirationSeconds": 3600, "usages": ["client auth"], "username": "u", "groups": ["g"],
                "extra": {"none": null, "scopes": ["a", "b"]}},
            "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "ok",
                "lastUpdateTime": "2026-11-29T08:00:00Z", "lastTransitionTime": null}],
                "certificate": "AAEC"}}),
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "creationTimestamp": null},
            "eventTime": "2026-11-29T08:00:00.000001Z", "series": {"count": 0, "lastObservedTime": null},
            "reportingController": "c", "regarding": {"kind": "Node", "name": "n"},
            "deprecatedSource": {}, "deprecatedFirstTimestamp": null, "deprecatedLastTimestamp": null}),
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-0", "creationTimestamp": null,
                "annotations": {"machineconfiguration.openshift.io/state": "Done"}},
            "spec": {"podCIDR": "10.128.0.0/23", "podCIDRs": ["10.128.0.0/23"], "unschedulable": true,
                "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                    "timeAdded": "2026-11-29T08:00:00Z"}]},
            "status": {"capacity": {"cpu": "4", "memory": "16393276Ki", "pods": "250"},
                "allocatable": {"cpu": "3500m", "zero": "0"},
                "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-29T08:00:00Z",
                    "lastTransitionTime": null, "reason": "KubeletReady"}],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "k",
                    "osImage": "o", "containerRuntimeVersion": "cri-o://1.36", "kubeletVersion": "v1.36.2",
                    "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64",
                    "swap": {"capacity": 0}},
                "images": [{"names": ["quay.io/x@sha256:1"], "sizeBytes": 1024}],
                "volumesInUse": ["v"], "volumesAttached": [{"name": "v", "devicePath": "/dev/x"}],
                "config": {"active": {"configMap": {"namespace": "kube-system", "name": "c",
                    "kubeletConfigKey": "kubelet"}}},
                "runtimeHandlers": [{"name": "runc", "features": {"recursiveReadOnlyMounts": true}}],
                "features": {"supplementalGroupsPolicy": false}}}),
    ];
    for document in documents {
        let answer = answer(&document).unwrap();
        let read = object(&open(&answer, "", "v1", "ConfigMap").unwrap()).unwrap();
        assert_eq!(read, document);
    }
}

#[test]
fn statuses_and_lists_are_written_in_protobuf_and_nothing_else_is() {
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "configmaps \"a\" is invalid", "reason": "Invalid", "code": 422,
        "details": {"name": "a", "kind": "configmaps",
            "causes": [{"reason": "FieldValueInvalid", "message": "bad", "field": "data"}]}});
    let envelope = open(&answer(&status).unwrap(), "", "v1", "Status").unwrap();
    let decoded = message::decode(&schema::STATUS, &envelope.raw).unwrap();
    let mut read = json!({"kind": "Status", "apiVersion": "v1"});
    read.as_object_mut()
        .unwrap()
        .extend(message::to_json(&schema::STATUS, &decoded));
    assert_eq!(read, status);

    static CONFIG_MAP_LIST: schema::Message = schema::Message {
        go: "ConfigMapList",
        fields: &[
            schema::Field {
                number: 1,
                json: "metadata",
                go: "ListMeta",
                ty: schema::Ty::Message(&schema::LIST_META),
                json_rule: schema::Json::OmitEmpty,
            },
            schema::Field {
                number: 2,
                json: "items",
                go: "Items",
                ty: schema::Ty::Messages(&schema::CONFIG_MAP),
                json_rule: schema::Json::Always,
            },
        ],
    };
    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "9", "continue": "abc"},
        "items": [{"metadata": {"name": "a", "creationTimestamp": null}, "data": {"k": "v"}},
            {"metadata": {"name": "b", "creationTimestamp": null}}]});
    let envelope = open(&answer(&list).unwrap(), "", "v1", "ConfigMapList").unwrap();
    let decoded = message::decode(&CONFIG_MAP_LIST, &envelope.raw).unwrap();
    let mut read = json!({"apiVersion": "v1", "kind": "ConfigMapList"});
    read.as_object_mut()
        .unwrap()
        .extend(message::to_json(&CONFIG_MAP_LIST, &decoded));
    assert_eq!(read, list);

    for other in [
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "Table", "rows": []}),
        json!({"major": "1", "minor": "36"}),
    ] {
        assert_eq!(answer(&other), None, "{other}");
    }
}

/// One field of a Go struct as its tags declare it.
#[derive(Debug)]
struct GoField {
    name: String,
    pointer: bool,
    json: String,
    omit_empty: bool,
    number: i32,
}

/// The fields of `type <name> struct` in `source` that carry a `protobuf` tag.
fn go_struct(source: &str, name: &str) -> Option<Vec<GoField>> {
    let start = source.find(&format!("\ntype {name} struct {{"))?;
    let body = &source[start..];
    let body = &body[..body.find("\n}")?];
    let tag = |line: &str, key: &str| {
        let from = line.find(&format!("{key}:\""))? + key.len() + 2;
        Some(line[from..].split('"').next()?.to_string())
    };
    let mut fields = Vec::new();
    for line in body.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
        let (Some(protobuf), Some(json)) = (tag(line, "protobuf"), tag(line, "json")) else {
            continue;
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        // An embedded struct (`metav1.ObjectMeta`) is named by its type.
        let embedded = words.get(1).is_some_and(|w| w.starts_with('`'));
        let (name, ty) = if embedded {
            (words[0].rsplit('.').next().unwrap_or(""), words[0])
        } else {
            (words[0], words[1])
        };
        let mut json_parts = json.split(',');
        fields.push(GoField {
            name: name.to_string(),
            pointer: ty.starts_with('*'),
            json: json_parts.next().unwrap_or("").to_string(),
            omit_empty: json_parts.any(|o| o == "omitempty"),
            number: protobuf.split(',').nth(1)?.parse().ok()?,
        });
    }
    Some(fields)
}

/// The type of field `number` of `message <name>` in a `generated.proto`.
fn proto_type(source: &str, name: &str, number: i32) -> Option<String> {
    let start = source.find(&format!("\nmessage {name} {{"))?;
    let body = &source[start..];
    let body = &body[..body.find("\n}")?];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .find(|l| l.ends_with(&format!("= {number};")))
        .and_then(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = usize::from(matches!(words.first(), Some(&"optional" | &"repeated")));
            words.get(at).map(|w| w.to_string())
        })
}

/// Opt-in, as it needs Kubernetes' sources: with `K8S_IO_SOURCE` naming a directory that holds
/// `api/` and `apimachinery/` of a 1.36 tree (its `staging/src/k8s.io`), every table's fields
/// must be the Go struct's (number, Go name, JSON name, pointer or `omitempty`), all of them,
/// with the wire type `generated.proto` gives.
#[test]
fn tables_match_the_upstream_sources() {
    let Some(root) = std::env::var_os("K8S_IO_SOURCE") else {
        eprintln!("SKIP (opt-in): set K8S_IO_SOURCE to a Kubernetes tree's staging/src/k8s.io");
        return;
    };
    let root = std::path::PathBuf::from(root);
    let mut problems = Vec::new();
    for (package, message) in schema::UPSTREAM {
        let read = |file: &str| std::fs::read_to_string(root.join(package).join(file)).unwrap();
        let (types, proto) = (read("types.go"), read("generated.proto"));
        let Some(go_fields) = go_struct(&types, message.go) else {
            problems.push(format!("{package}: no struct {}", message.go));
            continue;
        };
        for go in &go_fields {
            let Some(field) = message.fields.iter().find(|f| f.number == go.number) else {
                problems.push(format!("{}: field {go:?} is missing", message.go));
                continue;
            };
            let rule = if go.pointer {
                schema::Json::Pointer
            } else if go.omit_empty {
                schema::Json::OmitEmpty
            } else {
                schema::Json::Always
            };
            let varint = matches!(field.ty, schema::Ty::Bool | schema::Ty::Int32 | schema::Ty::Int64);
            let wire = proto_type(&proto, message.go, go.number).unwrap_or_default();
            let wire_varint = matches!(wire.as_str(), "bool" | "int32" | "int64");
            if (field.go, field.json) != (go.name.as_str(), go.json.as_str())
                || field.json_rule != rule
                || varint != wire_varint
            {
                problems.push(format!(
                    "{}.{}: upstream says {go:?} ({wire})",
                    message.go, field.json
                ));
            }
        }
        for field in message.fields {
            if !go_fields.iter().any(|g| g.number == field.number) {
                problems.push(format!("{}.{}: not in the Go struct", message.go, field.json));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
