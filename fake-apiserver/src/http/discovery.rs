//! Discovery: `/version`, `/api`, `/apis`, `/apis/{group}` and the per group-version resource
//! lists, in the legacy shape (`APIVersions`, `APIGroupList`, `APIResourceList`) and the
//! aggregated one (`apidiscovery.k8s.io` v2 and v2beta1 `APIGroupDiscoveryList`), chosen by
//! the Accept header as kube-apiserver does (apiserver-wire.md, "Discovery and OpenAPI").
//! Built from the registry on every request, so a CRD's resource appears once it is created.

use crate::error::ApiError;
use crate::resource::{Registry, ResourceInfo};
use http::HeaderMap;
use serde_json::{Value, json};

/// The version this server reports (the Kubernetes minor the k8s-openapi types are built for).
pub(super) fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": concat!("v1.33.0-fake+mco-conformance.", env!("CARGO_PKG_VERSION")),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "n/a (fake-apiserver, Rust)",
        "compiler": "rustc",
        "platform": "linux/amd64",
    })
}

const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

/// Which discovery document shape the client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    Legacy,
    Aggregated(&'static str),
}

/// The first media type in Accept that this server serves.
pub(super) fn shape(headers: &HeaderMap) -> Shape {
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    for media in accept.split(',') {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        if params.contains(&"as=APIGroupDiscoveryList") && params.contains(&"g=apidiscovery.k8s.io") {
            if params.contains(&"v=v2") {
                return Shape::Aggregated("v2");
            }
            if params.contains(&"v=v2beta1") {
                return Shape::Aggregated("v2beta1");
            }
        } else if params
            .first()
            .is_some_and(|m| matches!(*m, "application/json" | "*/*"))
        {
            return Shape::Legacy;
        }
    }
    Shape::Legacy
}

pub(super) fn aggregated_content_type(version: &str) -> String {
    format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
}

/// `/api`.
pub(super) fn core_versions(registry: &Registry, shape: Shape, server_address: &str) -> Value {
    match shape {
        Shape::Legacy => json!({
            "kind": "APIVersions",
            "versions": registry.versions_of(""),
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        }),
        Shape::Aggregated(v) => aggregated(registry, v, |g| g.is_empty()),
    }
}

/// `/apis`.
pub(super) fn groups(registry: &Registry, shape: Shape) -> Value {
    match shape {
        Shape::Legacy => json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": registry.groups().iter().filter(|g| !g.is_empty()).map(|g| group_doc(registry, g)).collect::<Vec<_>>(),
        }),
        Shape::Aggregated(v) => aggregated(registry, v, |g| !g.is_empty()),
    }
}

/// `/apis/{group}`.
pub(super) fn group(registry: &Registry, name: &str) -> Result<Value, ApiError> {
    if name.is_empty() || registry.versions_of(name).is_empty() {
        return Err(ApiError::NoSuchResource);
    }
    let mut doc = group_doc(registry, name);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Ok(doc)
}

fn group_doc(registry: &Registry, group: &str) -> Value {
    let versions: Vec<Value> = registry
        .versions_of(group)
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"name": group, "versions": versions, "preferredVersion": versions.first()})
}

/// `/api/v1` or `/apis/{group}/{version}` as an `APIResourceList`.
pub(super) fn resource_list(registry: &Registry, group: &str, version: &str) -> Result<Value, ApiError> {
    let resources = registry.resources_of(group, version);
    if resources.is_empty() {
        return Err(ApiError::NoSuchResource);
    }
    let mut out = Vec::new();
    for r in resources {
        let mut entry = json!({
            "name": r.resource, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": r.verbs(),
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        out.push(entry);
        if r.status_subresource {
            out.push(json!({
                "name": format!("{}/status", r.resource), "singularName": "", "namespaced": r.namespaced,
                "kind": r.kind, "verbs": STATUS_VERBS,
            }));
        }
        if crate::csr::is_csr(r) {
            out.push(json!({
                "name": format!("{}/approval", r.resource), "singularName": "", "namespaced": r.namespaced,
                "kind": r.kind, "verbs": STATUS_VERBS,
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Ok(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}))
}

fn aggregated_resource(r: &ResourceInfo) -> Value {
    let kind = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let mut entry = json!({
        "resource": r.resource,
        "responseKind": kind,
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs(),
    });
    if !r.short_names.is_empty() {
        entry["shortNames"] = json!(r.short_names);
    }
    if r.status_subresource {
        let mut subresources =
            vec![json!({"subresource": "status", "responseKind": kind, "verbs": STATUS_VERBS})];
        if crate::csr::is_csr(r) {
            subresources.insert(
                0,
                json!({"subresource": "approval", "responseKind": kind, "verbs": STATUS_VERBS}),
            );
        }
        entry["subresources"] = json!(subresources);
    }
    entry
}

fn aggregated(registry: &Registry, api_version: &str, include: impl Fn(&str) -> bool) -> Value {
    let items: Vec<Value> = registry
        .groups()
        .iter()
        .filter(|g| include(g))
        .map(|g| {
            let versions: Vec<Value> = registry
                .versions_of(g)
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = registry
                        .resources_of(g, v)
                        .into_iter()
                        .map(aggregated_resource)
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let metadata = if g.is_empty() {
                json!({"creationTimestamp": null})
            } else {
                json!({"name": g, "creationTimestamp": null})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{api_version}"),
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_picks_the_shape() {
        let mut h = HeaderMap::new();
        assert_eq!(shape(&h), Shape::Legacy);
        h.insert(
            http::header::ACCEPT,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
                .parse()
                .unwrap(),
        );
        assert_eq!(shape(&h), Shape::Aggregated("v2"));
        h.insert(
            http::header::ACCEPT,
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
                .parse()
                .unwrap(),
        );
        assert_eq!(shape(&h), Shape::Aggregated("v2beta1"));
    }

    #[test]
    fn resource_lists_carry_status_subresources() {
        let reg = Registry::default();
        let list = resource_list(&reg, "", "v1").unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"configmaps") && names.contains(&"nodes/status"));
        assert_eq!(resource_list(&reg, "nope.io", "v1").unwrap_err().code(), 404);
        let agg = groups(&reg, Shape::Aggregated("v2"));
        let crd_group = agg["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["metadata"]["name"] == "apiextensions.k8s.io")
            .unwrap();
        assert_eq!(
            crd_group["versions"][0]["resources"][0]["subresources"][0]["subresource"],
            "status"
        );
    }
}
