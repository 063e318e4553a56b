//! Protobuf bodies refused: malformed ones with the 400 kube-apiserver 1.36 gives in the
//! generated decoders' words, custom resources and types it does not read as 1.36 refuses them.

use super::*;

/// The 400 kube-apiserver answers a body it cannot decode with.
fn bad_request(message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "BadRequest", "code": 400})
}

/// A reply's Status without its `details` (a 400 has none on either server, or an empty one).
fn status(reply: &crate::common::Reply) -> Value {
    let mut body = reply.body.clone();
    if let Some(fields) = body.as_object_mut() {
        fields.remove("details");
    }
    body
}

#[tokio::test]
async fn malformed_protobuf_bodies_are_400_in_the_decoders_words() {
    let c = cluster().await;
    let cms = c.path("v1", "configmaps");
    let unrecognized = "the object provided is unrecognized (must be of type ConfigMap)";
    let cannot = "ConfigMap in version \"v1\" cannot be handled as a ConfigMap";
    let named = meta("pb-bad", &[], None);
    let mut cut_short = Vec::new();
    field(&mut cut_short, 1, &named);
    cut_short.truncate(cut_short.len() - 2);
    let cases: Vec<(Vec<u8>, String)> = vec![
        (Vec::new(), format!("{unrecognized}: empty data (<empty>)")),
        (
            b"k8s\0".to_vec(),
            format!("{unrecognized}: empty body (6b387300)"),
        ),
        (
            br#"{"kind":"ConfigMap"}"#.to_vec(),
            format!(
                "{unrecognized}: provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({{\"kind\":\"ConfigMap\"}})"
            ),
        ),
        (
            b"k8s\0\x0a\x05v1".to_vec(),
            format!("{unrecognized}: unexpected EOF (6b3873000a057631)"),
        ),
        (
            b"k8s\0\x00".to_vec(),
            format!("{unrecognized}: proto: Unknown: illegal tag 0 (wire type 0) (6b38730000)"),
        ),
        (
            envelope("v1", "ConfigMap", &cut_short),
            format!("{cannot}: unexpected EOF"),
        ),
        (
            envelope("v1", "ConfigMap", b"\x08\x01"),
            format!("{cannot}: proto: wrong wireType = 0 for field ObjectMeta"),
        ),
        (
            envelope("v1", "ConfigMap", b"\x0a\x02\x38\xff"),
            format!("{cannot}: unexpected EOF"),
        ),
        (
            envelope("v1", "ConfigMap", b"\x0a\x03\x58\x01\x00"),
            format!("{cannot}: proto: wrong wireType = 0 for field Labels"),
        ),
    ];
    for (body, message) in cases {
        let what = format!("{body:?}");
        let reply = post_for_json(&c, &cms, PROTOBUF, body).await;
        assert_eq!(status(&reply), bad_request(&message), "{what}");
    }
    let gone = send(&c.client, "GET", &format!("{cms}/pb-bad"), None, Vec::new()).await;
    assert_eq!(gone.code, 404, "a refused body created nothing: {}", gone.body);
    c.cleanup().await;
}

#[tokio::test]
async fn custom_resources_and_unread_types_are_refused_as_1_36_refuses_them() {
    let c = cluster().await;
    ensure_widget_crd(&c.client).await;
    let widgets = c.path(&format!("{WIDGET_GROUP}/v1"), "widgets");
    let mut raw = Vec::new();
    field(&mut raw, 1, &meta("pb-widget", &[], None));
    let widget = envelope(&format!("{WIDGET_GROUP}/v1"), "Widget", &raw);
    // 1.36's CRD serializer offers protobuf but cannot decode into an unstructured object.
    let no_kind = "Widget in version \"v1\" cannot be handled as a Widget: Object 'Kind' is missing in 'object has no kind field '";
    let ignored = format!("{widgets}?fieldValidation=Ignore");
    let reply = post_for_json(&c, &ignored, PROTOBUF, widget.clone()).await;
    assert_eq!(status(&reply), bad_request(no_kind));
    let why = "kube-apiserver 1.36 panics (500): its CRD serializer offers protobuf without a strict decoder";
    if c.fake_because("a custom resource's protobuf body with fieldValidation Warn", why)
        .is_some()
    {
        let reply = post_for_json(&c, &widgets, PROTOBUF, widget).await;
        assert_eq!(status(&reply), bad_request(no_kind));
    }

    // Asked for in protobuf first, a custom resource cannot be written so: 1.36 answers the
    // encoder's error, a 406 Status in protobuf (a missing one is still its 404).
    c.create(
        &widgets,
        json!({"apiVersion": format!("{WIDGET_GROUP}/v1"), "kind": "Widget", "metadata": {"name": "w"}}),
    )
    .await;
    let contains = |bytes: &[u8], text: &str| bytes.windows(text.len()).any(|w| w == text.as_bytes());
    for (path, go_type, code) in [
        (format!("{widgets}/w"), "*unstructured.Unstructured", 406),
        (widgets.clone(), "*unstructured.UnstructuredList", 406),
        (format!("{widgets}/missing"), "", 404),
    ] {
        let reply = send_with(&c.client, "GET", &path, &[("Accept", PROTOBUF)], None, Vec::new()).await;
        assert_eq!(reply.code, code, "{path}: {:?}", reply.bytes);
        assert!(reply.bytes.starts_with(b"k8s\0"), "{path}: {:?}", reply.bytes);
        let refusal = format!("object {go_type} does not implement the protobuf marshalling interface");
        assert_eq!(
            contains(&reply.bytes, &refusal),
            code == 406,
            "{path}: {:?}",
            reply.bytes
        );
    }
    let json = [(
        "Accept",
        "application/vnd.kubernetes.protobuf;q=0.5, application/json",
    )];
    let reply = send_with(&c.client, "GET", &format!("{widgets}/w"), &json, None, Vec::new()).await;
    assert_eq!((reply.code, &reply.body["metadata"]["name"]), (200, &json!("w")));

    // A body type nobody reads: the three 1.36 offers, for built-in and custom alike.
    let offered = "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf";
    for path in [c.path("v1", "configmaps"), widgets.clone()] {
        let reply = post_for_json(&c, &path, "text/plain", b"name: x".to_vec()).await;
        assert_eq!(reply.code, 415, "{path}: {}", reply.body);
        assert_eq!(reply.body["reason"], "UnsupportedMediaType");
        assert_eq!(reply.body["message"], offered, "{path}");
    }

    // A built-in kind this server does not read in protobuf.
    let why = "the fake reads only some built-in kinds in protobuf (fake-apiserver/README.md)";
    if c.fake_because("a Pod's protobuf body", why).is_some() {
        let mut pod = Vec::new();
        field(&mut pod, 1, &meta("pb-pod", &[], None));
        let reply = post_for_json(&c, &c.path("v1", "pods"), PROTOBUF, envelope("v1", "Pod", &pod)).await;
        assert_eq!(reply.code, 415, "{}", reply.body);
        assert_eq!(
            reply.body["message"],
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
        );
    }
    c.cleanup().await;
}
