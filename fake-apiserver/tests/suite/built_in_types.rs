//! Built-in objects keep kube-apiserver's rules on every write path: label and annotation keys
//! and values, finalizer names, owner references, ConfigMap keys and the 1 MiB data limit, each
//! a 422 in upstream's words (apimachinery `api/validation/objectmeta.go`,
//! `api/validate/content/kube.go`; kubernetes `apis/core/validation/validation.go`), and every
//! stored object still decodes with a typed client.

use crate::common::{TestCluster, WIDGET_GROUP, cluster, ensure_widget_crd, send};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

const LABEL_KEY: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// A test namespace holding the ConfigMap `exists`, and the widget CRD; with the ConfigMaps'
/// and widgets' paths.
async fn seeded() -> (TestCluster, String, String) {
    let c = cluster().await;
    ensure_widget_crd(&c.client).await;
    let (cms, widgets) = (
        c.path("v1", "configmaps"),
        c.path(&format!("{WIDGET_GROUP}/v1"), "widgets"),
    );
    c.create(
        &cms,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "exists"}, "data": {"k": "v"}}),
    )
    .await;
    (c, cms, widgets)
}

fn cm(name: &str, extra: Value) -> Vec<u8> {
    let mut body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    for (k, v) in extra.as_object().unwrap() {
        if k == "metadata" {
            for (mk, mv) in v.as_object().unwrap() {
                body["metadata"][mk] = mv.clone();
            }
        } else {
            body[k] = v.clone();
        }
    }
    body.to_string().into_bytes()
}

fn invalid(name: &str, causes: &[(&str, &str, &str)]) -> Value {
    let each: Vec<String> = causes.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
    let all = match each.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("ConfigMap {name:?} is invalid: {all}"), "reason": "Invalid",
        "details": {"name": name, "kind": "ConfigMap",
            "causes": causes.iter().map(|(f, r, m)| json!({"field": f, "reason": r, "message": m})).collect::<Vec<_>>()},
        "code": 422})
}

#[tokio::test]
async fn metadata_and_data_rules_hold_on_create() {
    let (c, cms, _) = seeded().await;
    let client = &c.client;
    let too_long = "Too long: may not be more than 1048576 bytes";
    let cases = [
        (
            cm("big", json!({"data": {"a": "x".repeat(1024 * 1024), "b": "y"}})),
            invalid("big", &[("[]", "FieldValueTooLong", too_long)]),
        ),
        (
            cm("l", json!({"metadata": {"labels": {"bad key": "ok"}}})),
            invalid(
                "l",
                &[(
                    "metadata.labels",
                    "FieldValueInvalid",
                    &format!("Invalid value: \"bad key\": {LABEL_KEY}"),
                )],
            ),
        ),
        (
            cm("a", json!({"metadata": {"annotations": {"a/b/c": "x"}}})),
            invalid(
                "a",
                &[(
                    "metadata.annotations",
                    "FieldValueInvalid",
                    "Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                )],
            ),
        ),
        (
            cm("f", json!({"metadata": {"finalizers": ["hold"]}})),
            invalid(
                "f",
                &[(
                    "metadata.finalizers[0]",
                    "FieldValueInvalid",
                    "Invalid value: \"hold\": name is neither a standard finalizer name nor is it fully qualified",
                )],
            ),
        ),
        (
            cm(
                "o",
                json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n"}]}}),
            ),
            invalid(
                "o",
                &[(
                    "metadata.ownerReferences.uid",
                    "FieldValueInvalid",
                    "Invalid value: \"\": must not be empty",
                )],
            ),
        ),
        (
            cm("k", json!({"data": {"a b": "x"}})),
            invalid(
                "k",
                &[(
                    "data[a b]",
                    "FieldValueInvalid",
                    "Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                )],
            ),
        ),
        (
            cm("Two", json!({"metadata": {"labels": {"ok": "-bad"}}})),
            invalid(
                "Two",
                &[
                    (
                        "metadata.name",
                        "FieldValueInvalid",
                        "Invalid value: \"Two\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                    ),
                    (
                        "metadata.labels",
                        "FieldValueInvalid",
                        "Invalid value: \"-bad\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                    ),
                ],
            ),
        ),
    ];
    for (body, want) in cases {
        let r = send(client, "POST", &cms, Some("application/json"), body).await;
        assert_eq!(r.code, 422, "{}", r.body);
        assert_eq!(r.body, want);
    }
    let listed = send(client, "GET", &cms, None, vec![]).await;
    assert_eq!(
        listed.body["items"].as_array().unwrap().len(),
        1,
        "only the seeded one"
    );
    c.cleanup().await;
}

#[tokio::test]
async fn the_rules_hold_on_every_update_path_and_stored_objects_decode() {
    let (c, cms, widgets) = seeded().await;
    let client = &c.client;
    let path = format!("{cms}/exists");
    let big = "x".repeat(1024 * 1024 + 1);
    let cases = [
        ("application/merge-patch+json", json!({"data": {"k": big}})),
        (
            "application/strategic-merge-patch+json",
            json!({"metadata": {"labels": {"bad key": "v"}}}),
        ),
        (
            "application/json-patch+json",
            json!([{"op": "add", "path": "/metadata/finalizers", "value": ["hold"]}]),
        ),
        (
            "application/apply-patch+yaml",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "exists", "annotations": {"/x": "y"}}}),
        ),
    ];
    for (ct, patch) in cases {
        let query = if ct.starts_with("application/apply") {
            "?fieldManager=t"
        } else {
            ""
        };
        let r = send(
            client,
            "PATCH",
            &format!("{path}{query}"),
            Some(ct),
            patch.to_string().into_bytes(),
        )
        .await;
        assert_eq!(
            (r.code, r.body["reason"].as_str()),
            (422, Some("Invalid")),
            "{ct}: {}",
            r.body
        );
        assert_eq!(r.body["details"]["name"], "exists", "{ct}");
    }
    let mut replacement = send(client, "GET", &path, None, vec![]).await.body;
    replacement["data"] = json!({"a b": "x"});
    let r = send(
        client,
        "PUT",
        &path,
        Some("application/json"),
        replacement.to_string().into_bytes(),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);

    // A custom resource's finalizer need only be a qualified name (no core rule).
    let widget = json!({"apiVersion": "conformance.mco.test/v1", "kind": "Widget", "metadata": {"name": "w", "finalizers": ["hold"]}});
    let r = send(
        client,
        "POST",
        &widgets,
        Some("application/json"),
        widget.to_string().into_bytes(),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    // Let the namespace go (the finalizer holds the widget, and a real server's namespace with it).
    let r = send(
        client,
        "PATCH",
        &format!("{widgets}/w"),
        Some("application/merge-patch+json"),
        br#"{"metadata":{"finalizers":null}}"#.to_vec(),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);

    let typed: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), &c.ns);
    let all = typed
        .list(&Default::default())
        .await
        .expect("every stored ConfigMap decodes");
    assert_eq!(all.items.len(), 1);
    assert_eq!(
        all.items[0].data.as_ref().unwrap()["k"],
        "v",
        "no refused write changed it"
    );
    c.cleanup().await;
}

#[tokio::test]
async fn metadata_keeps_only_what_object_meta_declares() {
    // A typed decode drops what ObjectMeta does not declare, however deep it nests.
    let (c, cms, widgets) = seeded().await;
    let client = &c.client;
    let deep = format!("{}1{}", "{\"a\":".repeat(5000), "}".repeat(5000));
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"m","extra":{deep},"ownerReferences":[{{"apiVersion":"v1","kind":"Node","name":"n","uid":"u","junk":{deep}}}]}}}}"#
    );
    let r = send(client, "POST", &cms, Some("application/json"), body.into_bytes()).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.body["metadata"].get("extra").is_none());
    assert_eq!(
        r.body["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u"}])
    );
    let widget = format!(
        r#"{{"apiVersion":"conformance.mco.test/v1","kind":"Widget","metadata":{{"name":"w","extra":{deep}}}}}"#
    );
    let r = send(
        client,
        "POST",
        &widgets,
        Some("application/json"),
        widget.into_bytes(),
    )
    .await;
    assert_eq!(r.code, 201);
    assert!(r.body["metadata"].get("extra").is_none());
    c.cleanup().await;
}

/// Send `body` as JSON; the code, the `Warning` headers and the body.
async fn send_warned(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Value,
) -> (u16, Vec<String>, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(body.to_string().into_bytes()))
        .unwrap();
    let response = client.send(req).await.expect("an answer");
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (
        code,
        warnings,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn unknown_fields_are_dropped_with_a_warning_or_refused_when_strict() {
    let (c, cms, _) = seeded().await;
    let client = &c.client;
    let body = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "colour": "red"},
               "data": {"a": "b"}, "spec": {"x": 1}})
    };
    let expected = [
        r#"299 - "unknown field \"metadata.colour\"""#.to_string(),
        r#"299 - "unknown field \"spec\"""#.to_string(),
    ];
    // Unset is Warn: stored without them, one warning each.
    let (code, warnings, created) = send_warned(client, "POST", &cms, body("warned")).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(warnings, expected);
    assert_eq!(created.get("spec"), None);
    assert_eq!(created["data"], json!({"a": "b"}));
    let mut again = body("warned");
    again["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    let (code, warnings, _) = send_warned(client, "PUT", &format!("{cms}/warned"), again).await;
    assert_eq!(
        (code, warnings),
        (200, expected.to_vec()),
        "an update warns alike"
    );
    let (code, warnings, _) = send_warned(
        client,
        "POST",
        &format!("{cms}?fieldValidation=Ignore"),
        body("ignored"),
    )
    .await;
    assert_eq!((code, warnings), (201, Vec::new()));
    let (code, _, refused) = send_warned(
        client,
        "POST",
        &format!("{cms}?fieldValidation=Strict"),
        body("strict"),
    )
    .await;
    assert_eq!(code, 400, "{refused}");
    assert_eq!(
        refused["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"metadata.colour\", unknown field \"spec\""
    );
    // A field of the wrong type is reported first, as the typed decode fails before the strict
    // check.
    let mut mistyped = body("mistyped");
    mistyped["data"] = json!({"a": 1});
    let (code, _, refused) =
        send_warned(client, "POST", &format!("{cms}?fieldValidation=Strict"), mistyped).await;
    assert_eq!(code, 400);
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or("")
            .contains("json: cannot unmarshal number"),
        "{refused}"
    );
    c.cleanup().await;
}

#[tokio::test]
async fn a_patch_that_adds_unknown_fields_is_warned_or_refused_when_strict() {
    let (c, cms, _) = seeded().await;
    let client = &c.client;
    let created = send(
        client,
        "POST",
        &cms,
        Some("application/json"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_eq!(created.code, 201, "{}", created.body);
    let patch = |content_type: &'static str, query: &'static str, body: Value| {
        let path = format!("{cms}/p{query}");
        async move {
            let req = http::Request::patch(&path)
                .header("content-type", content_type)
                .body(kube::client::Body::from(body.to_string().into_bytes()))
                .unwrap();
            let response = client.send(req).await.expect("an answer");
            let code = response.status().as_u16();
            let warnings: Vec<String> = response
                .headers()
                .get_all("warning")
                .iter()
                .map(|v| v.to_str().unwrap().to_string())
                .collect();
            let bytes = http_body_util::BodyExt::collect(response.into_body())
                .await
                .unwrap()
                .to_bytes();
            (
                code,
                warnings,
                serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null),
            )
        }
    };
    let warning = vec![r#"299 - "unknown field \"spec\"""#.to_string()];
    for content_type in [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ] {
        let (code, warnings, patched) =
            patch(content_type, "", json!({"spec": {"x": 1}, "data": {"a": "b"}})).await;
        assert_eq!((code, &warnings), (200, &warning), "{content_type}: {patched}");
        assert_eq!(patched.get("spec"), None, "{content_type}");
        assert_eq!(patched["data"], json!({"a": "b"}));
    }
    let (code, warnings, _) = patch(
        "application/json-patch+json",
        "",
        json!([{"op": "add", "path": "/spec", "value": 1}]),
    )
    .await;
    assert_eq!((code, warnings), (200, warning));
    let (code, _, refused) = patch(
        "application/merge-patch+json",
        "?fieldValidation=Strict",
        json!({"spec": {"x": 1}}),
    )
    .await;
    assert_eq!(
        (code, refused["reason"].as_str()),
        (422, Some("Invalid")),
        "{refused}"
    );
    let cause = &refused["details"]["causes"][0];
    assert_eq!(cause["field"], "patch");
    assert!(
        cause["message"]
            .as_str()
            .unwrap_or("")
            .ends_with(": strict decoding error: unknown field \"spec\""),
        "{refused}"
    );
    c.cleanup().await;
}
