//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`),
//! built by hand here: built-in objects created and updated from them, malformed ones refused
//! with the 400 kube-apiserver 1.36 gives in the generated decoders' words, and custom resources
//! and unknown body types answered as 1.36 answers them (apimachinery
//! `runtime/serializer/protobuf`, apiserver `endpoints/handlers/rest.go` `transformDecodeError`,
//! apiextensions-apiserver `customresource_handler.go`).

use crate::common::{TestCluster, WIDGET_GROUP, cluster, ensure_widget_crd, send, send_with};
use base64::Engine as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A varint (the fuzz generator's protobuf bodies use it too).
pub(crate) fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A length-delimited field (string, bytes, message, map entry).
pub(crate) fn field(out: &mut Vec<u8>, number: u64, payload: &[u8]) {
    varint(out, (number << 3) | 2);
    varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// A varint field (int32, int64, bool).
fn number(out: &mut Vec<u8>, number: u64, value: u64) {
    varint(out, number << 3);
    varint(out, value);
}

fn entry(key: &str, value: &[u8]) -> Vec<u8> {
    let mut e = Vec::new();
    field(&mut e, 1, key.as_bytes());
    field(&mut e, 2, value);
    e
}

/// `ObjectMeta` with a name, labels and (when given) a resourceVersion.
fn meta(name: &str, labels: &[(&str, &str)], resource_version: Option<&str>) -> Vec<u8> {
    let mut m = Vec::new();
    field(&mut m, 1, name.as_bytes());
    if let Some(rv) = resource_version {
        field(&mut m, 6, rv.as_bytes());
    }
    for (k, v) in labels {
        field(&mut m, 11, &entry(k, v.as_bytes()));
    }
    m
}

/// The body: `k8s\0`, then `runtime.Unknown` naming the type around the object's message.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    field(&mut type_meta, 1, api_version.as_bytes());
    field(&mut type_meta, 2, kind.as_bytes());
    let mut out = b"k8s\0".to_vec();
    field(&mut out, 1, &type_meta);
    field(&mut out, 2, raw);
    out
}

fn config_map(name: &str, resource_version: Option<&str>, data: &[(&str, &str)]) -> Vec<u8> {
    let mut raw = Vec::new();
    field(&mut raw, 1, &meta(name, &[("app", "pb")], resource_version));
    for (k, v) in data {
        field(&mut raw, 2, &entry(k, v.as_bytes()));
    }
    field(&mut raw, 3, &entry("blob", &[0, 0xff, 7]));
    envelope("v1", "ConfigMap", &raw)
}

async fn post(c: &TestCluster, path: &str, content_type: &str, body: Vec<u8>) -> crate::common::Reply {
    // kubectl 1.33 asks for protobuf first, JSON next.
    let accept = [("Accept", "application/vnd.kubernetes.protobuf,application/json")];
    send_with(&c.client, "POST", path, &accept, Some(content_type), body).await
}

/// `post` for an answer in JSON, to compare a Status whole.
async fn post_for_json(
    c: &TestCluster,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> crate::common::Reply {
    let accept = [("Accept", "application/json")];
    send_with(&c.client, "POST", path, &accept, Some(content_type), body).await
}

#[tokio::test]
async fn protobuf_bodies_create_and_update_built_in_objects() {
    let c = cluster().await;
    let cms = c.path("v1", "configmaps");
    let created = post(&c, &cms, PROTOBUF, config_map("pb-cm", None, &[("a", "b")])).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let cm = c.configmaps().get("pb-cm").await.unwrap();
    assert_eq!(cm.metadata.labels.unwrap()["app"], "pb");
    assert_eq!(cm.data.unwrap(), BTreeMap::from([("a".into(), "b".into())]));
    assert_eq!(cm.binary_data.unwrap()["blob"], ByteString(vec![0, 0xff, 7]));

    // An update names the version it replaces, as a JSON one does.
    let rv = cm.metadata.resource_version.unwrap();
    let body = config_map("pb-cm", Some(&rv), &[("a", "c"), ("line", "one\ntwo")]);
    let updated = send(&c.client, "PUT", &format!("{cms}/pb-cm"), Some(PROTOBUF), body).await;
    assert_eq!(updated.code, 200, "{}", updated.body);
    let data = c.configmaps().get("pb-cm").await.unwrap().data.unwrap();
    assert_eq!((data["a"].as_str(), data["line"].as_str()), ("c", "one\ntwo"));
    let stale = config_map("pb-cm", Some(&rv), &[("a", "d")]);
    let conflict = send(&c.client, "PUT", &format!("{cms}/pb-cm"), Some(PROTOBUF), stale).await;
    assert_eq!(conflict.code, 409, "{}", conflict.body);

    // A Secret's data is bytes, not necessarily text.
    let mut secret = Vec::new();
    field(&mut secret, 1, &meta("pb-secret", &[], None));
    field(&mut secret, 2, &entry("key", &[0x80, 0, b'k']));
    field(&mut secret, 3, b"Opaque");
    let created = post(
        &c,
        &c.path("v1", "secrets"),
        PROTOBUF,
        envelope("v1", "Secret", &secret),
    )
    .await;
    assert_eq!(created.code, 201, "{}", created.body);
    let secret = Api::<Secret>::namespaced(c.client.clone(), &c.ns)
        .get("pb-secret")
        .await
        .unwrap();
    assert_eq!(secret.data.unwrap()["key"], ByteString(vec![0x80, 0, b'k']));
    assert_eq!(secret.type_.as_deref(), Some("Opaque"));

    // A Lease of another group; its times are micro times.
    let mut renew = Vec::new();
    number(&mut renew, 1, 1_795_939_200);
    number(&mut renew, 2, 123_456_789);
    let mut spec = Vec::new();
    field(&mut spec, 1, b"node-1");
    number(&mut spec, 2, 40);
    field(&mut spec, 4, &renew);
    let mut lease = Vec::new();
    field(&mut lease, 1, &meta("pb-lease", &[], None));
    field(&mut lease, 2, &spec);
    let leases = c.path("coordination.k8s.io/v1", "leases");
    let created = post(
        &c,
        &leases,
        PROTOBUF,
        envelope("coordination.k8s.io/v1", "Lease", &lease),
    )
    .await;
    assert_eq!(created.code, 201, "{}", created.body);
    let lease = Api::<Lease>::namespaced(c.client.clone(), &c.ns)
        .get("pb-lease")
        .await
        .unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("node-1"));
    assert_eq!(spec.lease_duration_seconds, Some(40));
    let renewed = serde_json::to_value(spec.renew_time.unwrap()).unwrap();
    assert_eq!(renewed, "2026-11-29T08:00:00.123456Z");
    c.cleanup().await;
}

#[tokio::test]
async fn answers_are_protobuf_when_protobuf_is_asked_for_first() {
    let c = cluster().await;
    let cms = c.path("v1", "configmaps");
    let created = post(&c, &cms, PROTOBUF, config_map("pb-cm", None, &[("a", "b")])).await;
    let get = |path: String, accept: &'static str| {
        let client = c.client.clone();
        async move {
            let reply = send_with(&client, "GET", &path, &[("Accept", accept)], None, Vec::new()).await;
            let is_protobuf = reply.bytes.starts_with(b"k8s\0");
            (reply, is_protobuf)
        }
    };
    // The create's own answer: kubectl's Accept puts protobuf first.
    assert!(created.bytes.starts_with(b"k8s\0"), "{:?}", created.bytes);
    let one = format!("{cms}/pb-cm");
    for (path, accept, protobuf) in [
        (one.clone(), PROTOBUF, true),
        (
            one.clone(),
            "application/vnd.kubernetes.protobuf, application/json",
            true,
        ),
        (
            one.clone(),
            "application/json;q=0.9, application/vnd.kubernetes.protobuf",
            true,
        ),
        (
            one.clone(),
            "application/json, application/vnd.kubernetes.protobuf",
            false,
        ),
        (
            one.clone(),
            "application/vnd.kubernetes.protobuf;q=0.5, application/json",
            false,
        ),
        (cms.clone(), PROTOBUF, true),
        (format!("{cms}/missing"), PROTOBUF, true),
        // Server-side printing is a Table in JSON.
        (
            cms.clone(),
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            false,
        ),
    ] {
        let (reply, is_protobuf) = get(path.clone(), accept).await;
        assert_eq!(is_protobuf, protobuf, "{path} with {accept}: {:?}", reply.bytes);
    }
    // What one answer says, sent back as an update, is the object again (a round trip through
    // both directions; kubectl's test reads answers with the Go decoders).
    let (answer, _) = get(one.clone(), PROTOBUF).await;
    let put = send(&c.client, "PUT", &one, Some(PROTOBUF), answer.bytes.to_vec()).await;
    assert_eq!(put.code, 200, "{:?}", put.bytes);
    let cm = c.configmaps().get("pb-cm").await.unwrap();
    assert_eq!(cm.data.unwrap()["a"], "b");
    assert_eq!(cm.binary_data.unwrap()["blob"], ByteString(vec![0, 0xff, 7]));
    c.cleanup().await;
}

#[tokio::test]
async fn a_delete_takes_protobuf_options() {
    let c = cluster().await;
    let cms = c.path("v1", "configmaps");
    let created = post(&c, &cms, PROTOBUF, config_map("pb-cm", None, &[("a", "b")])).await;
    assert_eq!(created.code, 201);
    let delete = |uid: &str, dry_run: bool| {
        let mut preconditions = Vec::new();
        field(&mut preconditions, 1, uid.as_bytes());
        let mut options = Vec::new();
        field(&mut options, 2, &preconditions);
        if dry_run {
            field(&mut options, 5, b"All");
        }
        envelope("meta.k8s.io/v1", "DeleteOptions", &options)
    };
    let one = format!("{cms}/pb-cm");
    let wrong = send(
        &c.client,
        "DELETE",
        &one,
        Some(PROTOBUF),
        delete("not-the-uid", false),
    )
    .await;
    assert_eq!(wrong.code, 409, "a precondition is read: {}", wrong.body);
    let uid = c.configmaps().get("pb-cm").await.unwrap().metadata.uid.unwrap();
    let dry = send(&c.client, "DELETE", &one, Some(PROTOBUF), delete(&uid, true)).await;
    assert_eq!(dry.code, 200, "{}", dry.body);
    assert!(c.configmaps().get("pb-cm").await.is_ok(), "dryRun is read");
    let done = send(&c.client, "DELETE", &one, Some(PROTOBUF), delete(&uid, false)).await;
    assert_eq!(done.code, 200, "{}", done.body);
    assert!(c.configmaps().get("pb-cm").await.is_err());
    c.cleanup().await;
}

#[tokio::test]
async fn certificate_requests_and_new_events_are_read_too() {
    let c = cluster().await;
    let name = crate::csr::unique("pb-csr");
    let pem = base64::engine::general_purpose::STANDARD
        .decode(crate::csr::request_pem("system:node:pb"))
        .unwrap();
    let mut spec = Vec::new();
    field(&mut spec, 1, &pem);
    field(&mut spec, 5, b"client auth");
    field(&mut spec, 7, b"kubernetes.io/kube-apiserver-client");
    number(&mut spec, 8, 3600);
    let mut extra = Vec::new();
    field(&mut extra, 1, b"a");
    field(&mut extra, 1, b"b");
    let mut entry = Vec::new();
    field(&mut entry, 1, b"scopes");
    field(&mut entry, 2, &extra);
    field(&mut spec, 6, &entry);
    let mut csr = Vec::new();
    field(&mut csr, 1, &meta(&name, &[], None));
    field(&mut csr, 2, &spec);
    let body = envelope("certificates.k8s.io/v1", "CertificateSigningRequest", &csr);
    let csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let created = post_for_json(&c, csrs, PROTOBUF, body).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let spec = &created.body["spec"];
    assert_eq!(
        spec["request"],
        base64::engine::general_purpose::STANDARD.encode(&pem)
    );
    assert_eq!(spec["usages"], json!(["client auth"]));
    assert_eq!(spec["expirationSeconds"], 3600);
    // (`extra` was read too; like the other requester fields it is then the server's to write.)
    let gone = send(&c.client, "DELETE", &format!("{csrs}/{name}"), None, Vec::new()).await;
    assert_eq!(gone.code, 200, "{}", gone.body);

    let mut regarding = Vec::new();
    field(&mut regarding, 1, b"Node");
    field(&mut regarding, 3, b"n1");
    let mut event_time = Vec::new();
    number(&mut event_time, 1, 1_795_939_200);
    let mut event = Vec::new();
    field(&mut event, 1, &meta("pb-event", &[], None));
    field(&mut event, 2, &event_time);
    field(&mut event, 4, b"example.com/controller");
    field(&mut event, 5, b"instance-1");
    field(&mut event, 6, b"Reboot");
    field(&mut event, 7, b"Rebooted");
    field(&mut event, 8, &regarding);
    field(&mut event, 11, b"Normal");
    let events = c.path("events.k8s.io/v1", "events");
    let created = post_for_json(
        &c,
        &events,
        PROTOBUF,
        envelope("events.k8s.io/v1", "Event", &event),
    )
    .await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(created.body["eventTime"], "2026-11-29T08:00:00.000000Z");
    assert_eq!(created.body["regarding"], json!({"kind": "Node", "name": "n1"}));
    assert_eq!(created.body["reason"], "Rebooted");
    c.cleanup().await;
}

#[tokio::test]
async fn a_node_is_registered_and_written_whole_in_protobuf() {
    let c = cluster().await;
    if c.fake_because(
        "registering a Node",
        "a real server's node lifecycle controller acts on a Node nobody runs",
    )
    .is_none()
    {
        c.cleanup().await;
        return;
    }
    let name = crate::csr::unique("pb-node");
    let mut taint = Vec::new();
    field(&mut taint, 1, b"example.com/draining");
    field(&mut taint, 3, b"NoSchedule");
    let mut spec = Vec::new();
    field(&mut spec, 5, &taint);
    let mut status = Vec::new();
    field(
        &mut status,
        1,
        &entry("cpu", &{
            let mut q = Vec::new();
            field(&mut q, 1, b"4");
            q
        }),
    );
    let mut address = Vec::new();
    field(&mut address, 1, b"InternalIP");
    field(&mut address, 2, b"10.0.0.5");
    field(&mut status, 5, &address);
    let mut endpoint = Vec::new();
    number(&mut endpoint, 1, 10250);
    let mut endpoints = Vec::new();
    field(&mut endpoints, 1, &endpoint);
    field(&mut status, 6, &endpoints);
    let mut node = Vec::new();
    field(&mut node, 1, &meta(&name, &[("role", "worker")], None));
    field(&mut node, 2, &spec);
    field(&mut node, 3, &status);
    let created = post(&c, "/api/v1/nodes", PROTOBUF, envelope("v1", "Node", &node)).await;
    assert_eq!(created.code, 201, "{:?}", created.bytes);
    let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(c.client.clone());
    let stored = nodes.get(&name).await.unwrap();
    let taints = stored.spec.as_ref().and_then(|s| s.taints.clone()).unwrap();
    assert_eq!(
        (taints[0].key.as_str(), taints[0].effect.as_str()),
        ("example.com/draining", "NoSchedule")
    );
    let status = stored.status.clone().unwrap();
    assert_eq!(status.capacity.unwrap()["cpu"].0, "4");
    assert_eq!(status.addresses.unwrap()[0].address, "10.0.0.5");
    assert_eq!(
        status.daemon_endpoints.unwrap().kubelet_endpoint.unwrap().port,
        10250
    );

    // Written whole from its protobuf answer, it is the same Node.
    let path = format!("/api/v1/nodes/{name}");
    let answer = send_with(&c.client, "GET", &path, &[("Accept", PROTOBUF)], None, Vec::new()).await;
    assert!(answer.bytes.starts_with(b"k8s\0"), "{:?}", answer.bytes);
    let put = send(&c.client, "PUT", &path, Some(PROTOBUF), answer.bytes.to_vec()).await;
    assert_eq!(put.code, 200, "{:?}", put.bytes);
    let again = nodes.get(&name).await.unwrap();
    assert_eq!((again.spec, again.status), (stored.spec, stored.status));
    assert_eq!(again.metadata.labels, stored.metadata.labels);
    let gone = send(&c.client, "DELETE", &path, None, Vec::new()).await;
    assert_eq!(gone.code, 200, "{}", gone.body);
    c.cleanup().await;
}

mod refused;
