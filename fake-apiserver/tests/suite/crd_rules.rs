//! A CustomResourceDefinition cannot shadow or break a built-in resource: apiextensions-apiserver's
//! static rules (`pkg/apis/apiextensions/validation/validation.go`) refuse a group without a
//! dot, a protected group without its approval annotation, and version and resource names that
//! are not DNS-1035 labels, each as a 422 with upstream's field path and message; and an
//! approved CRD in a built-in group never takes the built-in's place.

use crate::common::{await_established, cluster, remove_crd, send};
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn crd(group: &str, plural: &str, kind: &str, version: &str, scope: &str) -> Value {
    let name = format!("{plural}.{group}");
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": group, "scope": scope,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{"name": version, "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

/// GET `path`; while a real server's new resource answers 429 (its watch cache is still
/// filling), retry after the second its Retry-After asks for, five times at most.
async fn served(client: &kube::Client, path: &str) -> u16 {
    let mut code = 0;
    for _ in 0..5 {
        code = send(client, "GET", path, None, vec![]).await.code;
        if code != 429 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    code
}

async fn post(client: &kube::Client, path: &str, body: &Value) -> crate::common::Reply {
    send(
        client,
        "POST",
        path,
        Some("application/json"),
        body.to_string().into_bytes(),
    )
    .await
}

#[tokio::test]
async fn crds_that_would_break_built_ins_are_422_with_upstream_causes() {
    let c = cluster().await;
    let client = &c.client;
    let approval = "Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111";
    let cases = [
        (
            crd("apps", "deployments", "Deployment", "v1", "Namespaced"),
            vec![(
                "spec.group",
                "FieldValueInvalid",
                "Invalid value: \"apps\": should be a domain with at least one dot".to_string(),
            )],
        ),
        (
            crd("coordination.k8s.io", "leases", "Lease", "v1", "Namespaced"),
            vec![(
                "metadata.annotations[api-approved.kubernetes.io]",
                "FieldValueRequired",
                approval.to_string(),
            )],
        ),
        (
            crd("example.com", "widgets", "Widget", "V1", "Cluster"),
            vec![
                (
                    "spec.versions[0].name",
                    "FieldValueInvalid",
                    format!("Invalid value: \"V1\": {DNS1035}"),
                ),
                (
                    "spec.version",
                    "FieldValueInvalid",
                    format!("Invalid value: \"V1\": {DNS1035}"),
                ),
            ],
        ),
        (
            crd("example.com", "wid_gets", "Widget", "v1", "Cluster"),
            vec![
                (
                    "metadata.name",
                    "FieldValueInvalid",
                    format!("Invalid value: \"wid_gets.example.com\": {SUBDOMAIN}"),
                ),
                (
                    "spec.names.plural",
                    "FieldValueInvalid",
                    format!("Invalid value: \"wid_gets\": {DNS1035}"),
                ),
            ],
        ),
        (
            crd("example.com", "Widgets", "Widget", "v1", "Cluster"),
            vec![
                (
                    "metadata.name",
                    "FieldValueInvalid",
                    format!("Invalid value: \"Widgets.example.com\": {SUBDOMAIN}"),
                ),
                (
                    "spec.names.plural",
                    "FieldValueInvalid",
                    format!("Invalid value: \"Widgets\": {DNS1035}"),
                ),
            ],
        ),
        (
            crd("example.com", "gadgets", "Gadget", "v1", "Galaxy"),
            vec![(
                "spec.scope",
                "FieldValueNotSupported",
                "Unsupported value: \"Galaxy\": supported values: \"Cluster\", \"Namespaced\"".to_string(),
            )],
        ),
    ];
    for (object, want) in cases {
        let name = object["metadata"]["name"].as_str().unwrap().to_string();
        let r = post(client, CRDS, &object).await;
        assert_eq!(
            (r.code, r.body["reason"].as_str()),
            (422, Some("Invalid")),
            "{name}: {}",
            r.body
        );
        let causes: Vec<Value> = want
            .iter()
            .map(|(field, reason, message)| json!({"field": field, "reason": reason, "message": message}))
            .collect();
        assert_eq!(
            r.body["details"],
            json!({"name": name, "group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition", "causes": causes}),
            "{name}"
        );
        // One cause alone, several in brackets (apimachinery's Aggregate).
        let each: Vec<String> = want
            .iter()
            .map(|(field, _, message)| format!("{field}: {message}"))
            .collect();
        let all = match each.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        assert_eq!(
            r.body["message"],
            format!("CustomResourceDefinition.apiextensions.k8s.io {name:?} is invalid: {all}")
        );
    }
    let core = {
        let mut c = crd("", "configmaps", "ConfigMap", "v1", "Namespaced");
        c["metadata"]["name"] = json!("configmaps");
        c
    };
    let r = post(client, CRDS, &core).await;
    assert_eq!(
        r.body["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"configmaps\" is invalid: [metadata.name: Invalid value: \"configmaps\": must be spec.names.plural+\".\"+spec.group, spec.group: Required value]"
    );
    let listed = send(client, "GET", CRDS, None, vec![]).await;
    let stored: Vec<&Value> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|crd| &crd["metadata"]["name"])
        .collect();
    // (Not leases.coordination.k8s.io: the next test stores an approved one, perhaps on the same
    // server at the same time.)
    for name in [
        "deployments.apps",
        "widgets.example.com",
        "Widgets.example.com",
        "configmaps",
    ] {
        assert!(
            !stored.contains(&&json!(name)),
            "{name} was not stored: {stored:?}"
        );
    }
    c.cleanup().await;
}

#[tokio::test]
async fn an_approved_crd_in_a_built_in_group_does_not_replace_the_built_in() {
    let c = cluster().await;
    let client = &c.client;
    remove_crd(client, "leases.coordination.k8s.io").await;
    let leases = &format!("/apis/coordination.k8s.io/v1/namespaces/{}/leases", c.ns);
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}});
    assert_eq!(post(client, leases, &lease).await.code, 201);
    let mut shadow = crd("coordination.k8s.io", "leases", "Shadow", "v1", "Cluster");
    shadow["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "unapproved, testing"});
    let created = post(client, CRDS, &shadow).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let read = send(client, "GET", &format!("{leases}/l"), None, vec![]).await;
    assert_eq!(
        (read.code, read.body["kind"].as_str()),
        (200, Some("Lease")),
        "{}",
        read.body
    );
    let cluster_scoped = send(
        client,
        "GET",
        "/apis/coordination.k8s.io/v1/leases/l",
        None,
        vec![],
    )
    .await;
    assert_eq!(cluster_scoped.code, 404, "the CRD's cluster scope is not served");
    let deleted = send(
        client,
        "DELETE",
        &format!("{CRDS}/leases.coordination.k8s.io"),
        None,
        vec![],
    )
    .await;
    assert_eq!(deleted.code, 200);
    remove_crd(client, "leases.coordination.k8s.io").await;
    let still = send(client, "GET", &format!("{leases}/l"), None, vec![]).await;
    assert_eq!(still.code, 200, "deleting the CRD took nothing of the built-in");
    c.cleanup().await;
}

#[tokio::test]
async fn a_crd_is_held_to_the_rules_on_update_and_status_is_a_valid_plural() {
    let c = cluster().await;
    let client = &c.client;
    remove_crd(client, "status.example.com").await;
    // Upstream has no rule against the plural "status" (IsDNS1035Label("status") holds).
    let status = crd("example.com", "status", "Status", "v1", "Cluster");
    assert_eq!(post(client, CRDS, &status).await.code, 201);
    await_established(client, "status.example.com").await;
    assert_eq!(served(client, "/apis/example.com/v1/status").await, 200);
    let r = send(
        client,
        "PATCH",
        &format!("{CRDS}/status.example.com"),
        Some("application/merge-patch+json"),
        br#"{"spec":{"versions":[{"name":"V2","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}"#.to_vec(),
    )
    .await;
    assert_eq!(
        (r.code, r.body["details"]["causes"][0]["field"].as_str()),
        (422, Some("spec.versions[0].name")),
        "{}",
        r.body
    );
    remove_crd(client, "status.example.com").await;
    c.cleanup().await;
}
