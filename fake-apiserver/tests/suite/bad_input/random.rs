//! Random requests at the router: methods, paths, queries, content types and bodies from a
//! proptest strategy (a fixed number of cases from a fixed seed); none panics the server or
//! changes the store.

use super::*;

fn request_strategy() -> impl Strategy<Value = (String, String, Option<String>, Vec<u8>)> {
    let method = prop::sample::select(vec!["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]);
    let segment = prop_oneof![
        prop::sample::select(vec![
            "api",
            "apis",
            "v1",
            "namespaces",
            "default",
            "configmaps",
            "exists",
            "status",
            "nodes",
            "conformance.mco.test",
            "widgets",
            "w",
            "watch",
            "openapi",
            "v3",
            "_fake",
            "faults",
            "..",
            "%00",
            "",
        ])
        .prop_map(str::to_string),
        "[a-zA-Z0-9._~%-]{0,12}",
    ];
    let path = prop::collection::vec(segment, 0..7).prop_map(|s| format!("/{}", s.join("/")));
    let query = prop::sample::select(vec![
        "",
        "?watch=true&timeoutSeconds=1",
        "?limit=1",
        "?limit=-1",
        "?continue=%%%",
        "?labelSelector=!!",
        "?fieldSelector=metadata.name%3Dexists",
        "?resourceVersion=999999999999999999999",
        "?fieldManager=fuzz",
        "?dryRun=All",
        "?sendInitialEvents=true",
        "?allowWatchBookmarks=yes",
    ]);
    let content_type = prop::option::of(prop::sample::select(vec![
        "application/json",
        "application/yaml",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
        "text/plain",
        "application/json; charset=utf-8",
    ]));
    let body = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        prop::sample::select(vec![
            "{}",
            "[]",
            "null",
            "{\"kind\":\"Bogus\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\"}}",
            "[{\"op\":\"bogus\"}]",
            "[{\"op\":\"test\",\"path\":\"/nope\",\"value\":1}]",
            "{\"metadata\":",
            "\"str\"",
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"UPPER\"}}",
            "- a\n- b\n",
            "{\"a\":1e999}",
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":\"x\"}",
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"n\",\"labels\":[1]}}",
            "{\"metadata\":{\"name\":\"n\"},\"data\":{\"k\":1}}",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
    ];
    (method, path, query, content_type, body)
        .prop_map(|(m, p, q, ct, b)| (m.to_string(), format!("{p}{q}"), ct.map(str::to_string), b))
}

#[tokio::test]
async fn random_requests_never_panic_or_change_the_store() {
    let why = "random requests need the fake's authorizer to hold back deletes, and its store's version to show nothing changed";
    if skip_external("random requests", why) {
        return;
    }
    init_crypto();
    let server = FakeApiServer::builder()
        .authorizer(Arc::new(NoDeletes))
        .object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "exists", "namespace": "default"}}))
        .start()
        .await
        .unwrap();
    let admin = server.admin_client().await.unwrap();
    let fuzzer = server
        .client(&server.identity("fuzzer", &["fuzzers"]).unwrap())
        .await
        .unwrap();
    let before = store_version(&admin).await;
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 400,
            ..Config::default()
        },
        proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let strategy = request_strategy();
    for _ in 0..400 {
        let (method, path, ct, body) = strategy.new_tree(&mut runner).expect("strategy yields").current();
        let Ok(uri) = path.parse::<http::Uri>() else {
            continue;
        };
        let reply = send(&fuzzer, &method, &uri.to_string(), ct.as_deref(), body).await;
        let what = format!("{method} {path}");
        assert!(reply.code < 500, "{what}: a server error: {}", reply.body);
        // Errors are Status bodies, but Go's plain-text 404 for paths outside the served
        // groups (as kube-apiserver's).
        let plain_404 = reply.code == 404 && &reply.bytes[..] == b"404 page not found\n";
        if reply.code >= 400 && method != "HEAD" && !plain_404 {
            assert_eq!(reply.body["kind"], "Status", "{what}: errors are Status bodies");
            assert_eq!(reply.body["code"], reply.code, "{what}");
        }
    }
    assert_eq!(store_version(&admin).await, before, "the store is unchanged");
    let health = send(&admin, "GET", "/readyz", None, vec![]).await;
    assert_eq!(health.code, 200, "the server still serves");
}
