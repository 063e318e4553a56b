//! The numbers, booleans and names a client puts in a URL, at their extremes, answered as
//! kube-apiserver 1.36 answers them: its parameter codec reads a number with Go's
//! `strconv.ParseInt` (a 400 in its words when that fails) and a boolean as false only for `0`
//! or `false`; a watch's `timeoutSeconds` becomes Go nanoseconds, wrapping as Go's int64 does,
//! and a deadline already past ends the stream at once; a `limit` of zero or less pages nothing;
//! a name that cannot be a path segment is 400 where the storage would key on it.

use crate::common::{Reply, TestCluster, cluster, send};
use serde_json::{Value, json};
use std::time::Duration;

/// Long enough for any answer on a loaded machine; the answers below come at once.
const DEADLINE: Duration = Duration::from_secs(20);

async fn get(c: &TestCluster, path: &str) -> Reply {
    tokio::time::timeout(DEADLINE, send(&c.client, "GET", path, None, Vec::new()))
        .await
        .unwrap_or_else(|_| panic!("GET {path}: no whole answer in time"))
}

/// A test namespace with three ConfigMaps, and their path.
async fn three_configmaps() -> (TestCluster, String) {
    let c = cluster().await;
    let cms = c.path("v1", "configmaps");
    for name in ["a", "b", "c"] {
        c.create(
            &cms,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
        )
        .await;
    }
    (c, cms)
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

fn bad_request(reply: &Reply, message: &str) {
    assert_eq!(
        (
            reply.code,
            reply.body["reason"].as_str(),
            reply.body["message"].as_str()
        ),
        (400, Some("BadRequest"), Some(message)),
        "{}",
        reply.body
    );
}

#[tokio::test]
async fn a_watch_timeout_past_the_clock_ends_the_watch_at_once() {
    let (c, cms) = three_configmaps().await;
    // From the list's version nothing is owed (no initial events, no change since), so what a
    // watch sends before its deadline is nothing on either server.
    let listed = get(&c, &cms).await;
    let rv = listed.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    // Seconds times 1e9 in Go's int64: i64::MAX wraps to -1 s, 1e10 to about -267 years,
    // 9223372037 to about -292 years: each a deadline already past, so the stream is empty.
    for seconds in ["9223372036854775807", "10000000000", "9223372037", "-1"] {
        let r = get(
            &c,
            &format!("{cms}?watch=true&resourceVersion={rv}&timeoutSeconds={seconds}"),
        )
        .await;
        assert_eq!(r.code, 200, "timeoutSeconds={seconds}: {}", r.body);
        assert!(r.bytes.is_empty(), "timeoutSeconds={seconds}: {:?}", r.bytes);
    }
    // Not a 64-bit number: the codec's own 400.
    for (seconds, why) in [
        ("9223372036854775808", "value out of range"),
        ("-9223372036854775809", "value out of range"),
        ("1e3", "invalid syntax"),
        ("", "invalid syntax"),
    ] {
        let r = get(&c, &format!("{cms}?watch=true&timeoutSeconds={seconds}")).await;
        bad_request(&r, &format!("strconv.ParseInt: parsing \"{seconds}\": {why}"));
    }
    // 9223372036 s is about 292 years and does not wrap; i64::MIN wraps to zero, the server's
    // default: either watch is open.
    for seconds in ["9223372036", "-9223372036854775808"] {
        let req = http::Request::get(format!("{cms}?watch=true&timeoutSeconds={seconds}"))
            .body(kube::client::Body::empty())
            .unwrap();
        let open = tokio::time::timeout(DEADLINE, c.client.send(req))
            .await
            .expect("the watch answers in time")
            .expect("the watch answers");
        assert_eq!(open.status().as_u16(), 200, "timeoutSeconds={seconds}");
    }
    c.cleanup().await;
}

#[tokio::test]
async fn a_limit_of_zero_or_less_pages_nothing_and_a_limit_is_a_64_bit_number() {
    let (c, cms) = three_configmaps().await;
    for limit in ["-1", "0", "-9223372036854775808", "9223372036854775807", "%2B0"] {
        let r = get(&c, &format!("{cms}?limit={limit}")).await;
        assert_eq!(r.code, 200, "limit={limit}: {}", r.body);
        assert_eq!(names(&r.body), ["a", "b", "c"], "limit={limit}");
        assert_eq!(r.body["metadata"]["continue"], Value::Null, "limit={limit}");
    }
    let r = get(&c, &format!("{cms}?limit=%2B2")).await;
    assert_eq!(names(&r.body), ["a", "b"], "limit=+2 pages");
    for (limit, why) in [
        ("9223372036854775808", "value out of range"),
        ("18446744073709551616", "value out of range"),
        ("ten", "invalid syntax"),
        ("1.5", "invalid syntax"),
        ("-", "invalid syntax"),
    ] {
        let r = get(&c, &format!("{cms}?limit={limit}")).await;
        bad_request(&r, &format!("strconv.ParseInt: parsing \"{limit}\": {why}"));
    }
    c.cleanup().await;
}

#[tokio::test]
async fn a_boolean_is_false_only_for_0_and_false() {
    let (c, cms) = three_configmaps().await;
    // A watch from now with a deadline already past is an empty 200; a list is a ConfigMapList.
    for (watch, is_watch) in [
        ("maybe", true),
        ("", true),
        ("yes", true),
        ("FALSE", false),
        ("False", false),
        ("0", false),
        ("f", true),
    ] {
        let r = get(&c, &format!("{cms}?watch={watch}&timeoutSeconds=-1")).await;
        assert_eq!(r.code, 200, "watch={watch}: {}", r.body);
        let listed = r.body["kind"] == "ConfigMapList";
        assert_eq!(listed, !is_watch, "watch={watch}: {:?}", r.bytes);
    }
    // The first of a repeated parameter counts.
    let r = get(&c, &format!("{cms}?watch=false&watch=true")).await;
    assert_eq!(r.body["kind"], "ConfigMapList");
    c.cleanup().await;
}

#[tokio::test]
async fn a_name_that_cannot_be_a_path_segment_is_400() {
    let (c, cms) = three_configmaps().await;
    let cases = [
        ("..", "Name parameter invalid: \"..\": may not be '..'"),
        ("%2e%2e", "Name parameter invalid: \"..\": may not be '..'"),
        ("%2E", "Name parameter invalid: \".\": may not be '.'"),
        ("a%25b", "Name parameter invalid: \"a%b\": may not contain '%'"),
    ];
    for (segment, message) in cases {
        for method in ["GET", "DELETE"] {
            let path = format!("{cms}/{segment}");
            let r = tokio::time::timeout(DEADLINE, send(&c.client, method, &path, None, Vec::new()))
                .await
                .expect("an answer in time");
            bad_request(&r, message);
        }
    }
    let r = get(&c, "/api/v1/namespaces/%2e%2e").await;
    bad_request(&r, "Name parameter invalid: \"..\": may not be '..'");
    c.cleanup().await;
}

#[tokio::test]
async fn a_grace_period_is_a_64_bit_number() {
    let (c, cms) = three_configmaps().await;
    let r = tokio::time::timeout(
        DEADLINE,
        send(
            &c.client,
            "DELETE",
            &format!("{cms}/a?gracePeriodSeconds=9223372036854775808"),
            None,
            Vec::new(),
        ),
    )
    .await
    .expect("an answer in time");
    bad_request(
        &r,
        "strconv.ParseInt: parsing \"9223372036854775808\": value out of range",
    );
    for grace in ["9223372036854775807", "-9223372036854775808"] {
        let name = if grace.starts_with('-') { "b" } else { "c" };
        let r = tokio::time::timeout(
            DEADLINE,
            send(
                &c.client,
                "DELETE",
                &format!("{cms}/{name}?gracePeriodSeconds={grace}"),
                None,
                Vec::new(),
            ),
        )
        .await
        .expect("an answer in time");
        assert_eq!(r.code, 200, "gracePeriodSeconds={grace}: {}", r.body);
    }
    c.cleanup().await;
}
