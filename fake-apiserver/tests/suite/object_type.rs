//! The type of a written object comes from the URL when the body leaves it out, as
//! kube-apiserver's decoder defaults it (apimachinery `runtime/serializer/json`,
//! `gvkWithDefaults`): the Python client and `kubectl create --raw` send built-in objects
//! without `apiVersion`/`kind`. A body that names another type, a custom resource without a
//! kind, and an apply configuration without its type are refused as the real server refuses
//! them.

use crate::common::{WIDGET_GROUP, cluster, ensure_widget_crd, send};
use serde_json::json;

fn body(v: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

#[tokio::test]
async fn a_built_in_object_without_its_type_takes_the_urls() {
    let c = cluster().await;
    let client = &c.client;
    let (cms, leases) = (
        &c.path("v1", "configmaps"),
        &c.path("coordination.k8s.io/v1", "leases"),
    );
    let cases = [
        (
            cms,
            json!({"metadata": {"name": "bare"}, "data": {"k": "v"}}),
            "v1",
            "ConfigMap",
        ),
        (
            cms,
            json!({"apiVersion": "v1", "metadata": {"name": "no-kind"}}),
            "v1",
            "ConfigMap",
        ),
        (
            cms,
            json!({"kind": "ConfigMap", "metadata": {"name": "no-version"}}),
            "v1",
            "ConfigMap",
        ),
        (
            leases,
            json!({"kind": "Lease", "metadata": {"name": "l"}}),
            "coordination.k8s.io/v1",
            "Lease",
        ),
        (
            leases,
            json!({"metadata": {"name": "m"}}),
            "coordination.k8s.io/v1",
            "Lease",
        ),
    ];
    for (path, object, api_version, kind) in cases {
        let name = object["metadata"]["name"].as_str().unwrap().to_string();
        let created = send(client, "POST", path, Some("application/json"), body(object)).await;
        assert_eq!(created.code, 201, "{path} {name}: {}", created.body);
        assert_eq!(
            (created.body["apiVersion"].as_str(), created.body["kind"].as_str()),
            (Some(api_version), Some(kind))
        );
        let read = send(client, "GET", &format!("{path}/{name}"), None, vec![]).await;
        assert_eq!(read.body["kind"], kind, "stored with the URL's kind");
        assert_eq!(read.body["apiVersion"], api_version);
        let mut replacement = read.body.clone();
        let map = replacement.as_object_mut().unwrap();
        map.remove("kind");
        map.remove("apiVersion");
        let replaced = send(
            client,
            "PUT",
            &format!("{path}/{name}"),
            Some("application/json"),
            body(replacement),
        )
        .await;
        assert_eq!(replaced.code, 200, "PUT without a type: {}", replaced.body);
        assert_eq!(replaced.body["kind"], kind);
    }
    // Through kube-rs's typed API the stored object decodes.
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(client.clone(), &c.ns);
    assert_eq!(cms.get("bare").await.unwrap().data.unwrap()["k"], "v");
    c.cleanup().await;
}

#[tokio::test]
async fn a_body_naming_another_type_is_refused() {
    let c = cluster().await;
    let client = &c.client;
    ensure_widget_crd(client).await;
    let cms = &c.path("v1", "configmaps");
    let widgets = &c.path(&format!("{WIDGET_GROUP}/v1"), "widgets");
    let cases = [
        (
            cms,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
            "Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion",
        ),
        (
            cms,
            json!({"apiVersion": "apps/v1", "metadata": {"name": "s"}}),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: no kind \"ConfigMap\" is registered for version \"apps/v1\" in scheme \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30\"",
        ),
        // A custom resource's apiVersion must be the URL's.
        (
            widgets,
            json!({"apiVersion": "other.test/v1", "kind": "Widget", "metadata": {"name": "w"}}),
            "the API version in the data (other.test/v1) does not match the expected API version (conformance.mco.test/v1)",
        ),
        (
            cms,
            json!({"apiVersion": "a/b/c", "metadata": {"name": "s"}}),
            "the object provided is unrecognized (must be of type ConfigMap): unexpected GroupVersion string: a/b/c ({\"apiVersion\":\"a/b/c\",\"metadat ...)",
        ),
        // A custom resource is decoded as unstructured: its kind is required
        // (apimachinery `unstructuredscheme`, apiextensions-apiserver `crdserverscheme`).
        (
            widgets,
            json!({"apiVersion": "conformance.mco.test/v1", "metadata": {"name": "w"}}),
            "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{\"apiVersion\":\"conformance.mco.test/v1\",\"metadata\":{\"name\":\"w\"}}' ({\"apiVersion\":\"conformance.mco ...)",
        ),
    ];
    for (path, object, message) in cases {
        let r = send(client, "POST", path, Some("application/json"), body(object)).await;
        assert_eq!(
            (r.code, r.body["reason"].as_str()),
            (400, Some("BadRequest")),
            "{}",
            r.body
        );
        assert_eq!(official_scheme(r.body["message"].as_str().unwrap_or("")), message);
    }
    c.cleanup().await;
}

/// A decode error names the legacy scheme by the file that declares it; a build from a tree
/// other than `k8s.io/kubernetes` (an OpenShift fork vendored elsewhere) names another path.
fn official_scheme(message: &str) -> String {
    const FILE: &str = "pkg/api/legacyscheme/scheme.go:30\"";
    match message.split_once(" in scheme \"") {
        Some((head, file)) if file.ends_with(FILE) => {
            format!("{head} in scheme \"k8s.io/kubernetes/{FILE}")
        }
        _ => message.to_string(),
    }
}

#[tokio::test]
async fn an_apply_configuration_must_name_the_urls_type() {
    // Server-side apply checks the applied object's type before anything else
    // (apimachinery `managedfields/internal/versioncheck.go`).
    let c = cluster().await;
    let client = &c.client;
    let cms = &c.path("v1", "configmaps");
    let apply = Some("application/apply-patch+yaml");
    let cases = [
        (
            json!({"metadata": {"name": "a"}}),
            "invalid object type: /, Kind=",
        ),
        (
            json!({"kind": "ConfigMap", "metadata": {"name": "a"}}),
            "invalid object type: /, Kind=ConfigMap",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}}),
            "invalid object type: /v1, Kind=Secret",
        ),
    ];
    for (object, message) in cases {
        let r = send(
            client,
            "PATCH",
            &format!("{cms}/a?fieldManager=t"),
            apply,
            body(object),
        )
        .await;
        assert_eq!(
            (r.code, r.body["reason"].as_str()),
            (400, Some("BadRequest")),
            "{}",
            r.body
        );
        assert_eq!(r.body["message"], message);
    }
    let ok = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let r = send(
        client,
        "PATCH",
        &format!("{cms}/a?fieldManager=t"),
        apply,
        body(ok),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    c.cleanup().await;
}
