//! The OpenAPI documents kubectl fetches before it writes (apiserver-wire.md):
//!
//! - `/openapi/v3`: one entry per group-version with a `serverRelativeURL` whose `hash`
//!   changes when the group's resources do (kubectl caches by it);
//! - `/openapi/v3/apis/{group}/{version}` and `/openapi/v3/api/v1`: a path per resource whose
//!   PATCH operation carries `x-kubernetes-group-version-kind` and a `fieldValidation` query
//!   parameter, which is how kubectl decides the server validates fields itself; schemas are
//!   the CRD's own and an open object for built-in types. The PATCH request body does not
//!   list strategic merge, so kubectl computes strategic patches of built-in types from its
//!   compiled-in types instead of from these schemas;
//! - `/openapi/v2`: an empty Swagger 2.0 document, as protobuf (what kubectl asks for) or
//!   JSON. Nothing is validated client-side against it.

use crate::error::ApiError;
use crate::resource::{Registry, ResourceInfo};
use serde_json::{Map, Value, json};
use std::hash::{DefaultHasher, Hash, Hasher};

const TITLE: &str = "Kubernetes";
const VERSION: &str = "v1.33.0";

fn group_version_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`.
pub(super) fn v3_root(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for group in registry.groups() {
        for version in registry.versions_of(&group) {
            let doc = v3_group(registry, &group, &version).expect("listed by the registry");
            let mut hasher = DefaultHasher::new();
            doc.to_string().hash(&mut hasher);
            let key = group_version_key(&group, &version);
            paths.insert(
                key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={:016X}", hasher.finish())}),
            );
        }
    }
    json!({"paths": paths})
}

/// The schema name kube-apiserver would use: reversed group, version, kind.
fn schema_name(r: &ResourceInfo) -> String {
    if r.group.is_empty() {
        return format!("io.k8s.api.core.{}.{}", r.version, r.kind);
    }
    let reversed: Vec<&str> = r.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), r.version, r.kind)
}

fn operation(r: &ResourceInfo, action: &str, content: &[&str]) -> Value {
    let mut op = json!({
        "operationId": format!("{action}{}", r.kind),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
        "parameters": [
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}, "uniqueItems": true},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}, "uniqueItems": true},
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}, "uniqueItems": true},
        ],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{}", schema_name(r))}}}}},
    });
    if !content.is_empty() {
        let body: Map<String, Value> = content
            .iter()
            .map(|c| (c.to_string(), json!({"schema": {"type": "object"}})))
            .collect();
        op["requestBody"] = json!({"content": body, "required": true});
    }
    op
}

/// `/openapi/v3/apis/{group}/{version}` (or `api/v1`).
pub(super) fn v3_group(registry: &Registry, group: &str, version: &str) -> Result<Value, ApiError> {
    let resources = registry.resources_of(group, version);
    if resources.is_empty() {
        return Err(ApiError::NoSuchResource);
    }
    let prefix = format!("/{}", group_version_key(group, version));
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for r in resources {
        let collection = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.resource)
        } else {
            format!("{prefix}/{}", r.resource)
        };
        paths.insert(
            collection.clone(),
            json!({"get": operation(r, "list", &[]), "post": operation(r, "post", &["application/json", "application/yaml"])}),
        );
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({
                "get": operation(r, "get", &[]),
                "put": operation(r, "put", &["application/json", "application/yaml"]),
                "patch": operation(r, "patch", &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]),
                "delete": operation(r, "delete", &[]),
            }),
        );
        let mut schema = match r.schema.as_deref().map(|s| &s.0) {
            Some(Value::Object(declared)) => Value::Object(declared.clone()),
            _ => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        };
        schema["x-kubernetes-group-version-kind"] =
            json!([{"group": r.group, "version": r.version, "kind": r.kind}]);
        schemas.insert(schema_name(r), schema);
    }
    Ok(json!({
        "openapi": "3.0.0",
        "info": {"title": TITLE, "version": VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// `/openapi/v2` as JSON.
pub(super) fn v2_json() -> Value {
    json!({"swagger": "2.0", "info": {"title": TITLE, "version": VERSION}, "paths": {}})
}

/// `/openapi/v2` as the gnostic `openapi_v2.Document` protobuf kubectl asks for:
/// field 1 `swagger`, field 2 `info` { 1 `title`, 2 `version` }.
pub(super) fn v2_protobuf() -> Vec<u8> {
    fn field(out: &mut Vec<u8>, number: u8, bytes: &[u8]) {
        out.push((number << 3) | 2);
        out.push(u8::try_from(bytes.len()).expect("short fields"));
        out.extend_from_slice(bytes);
    }
    let mut info = Vec::new();
    field(&mut info, 1, TITLE.as_bytes());
    field(&mut info, 2, VERSION.as_bytes());
    let mut doc = Vec::new();
    field(&mut doc, 1, b"2.0");
    field(&mut doc, 2, &info);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_operations_advertise_field_validation() {
        let reg = Registry::default();
        let doc = v3_group(&reg, "", "v1").unwrap();
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "ConfigMap");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(
            patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_none()
        );
        let root = v3_root(&reg);
        assert!(
            root["paths"]["api/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/api/v1?hash=")
        );
    }
}
