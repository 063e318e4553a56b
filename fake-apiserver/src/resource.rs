//! What resources this server serves: the built-in core types and whatever a stored
//! CustomResourceDefinition registers.
//!
//! The registry is data the store keeps under its lock (a CRD write and the resource it adds
//! appear together). It knows names, scope, subresources and printer columns; it never holds
//! objects.

use crate::depth::DeepValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// `(group, resource)`: the key objects are stored under, whatever version a client used.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

/// An extra column for `kubectl get`, from a CRD's `additionalPrinterColumns`.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub json_path: String,
    pub description: String,
    pub priority: i64,
}

/// One served resource of one group-version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    pub group: String,
    pub version: String,
    /// Plural, lower-case: the URL segment.
    pub resource: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub status_subresource: bool,
    /// Built-in types answer DELETE with a `Success` Status, custom resources with the object;
    /// only built-in types take strategic merge patches.
    pub builtin: bool,
    /// Whether `metadata.generation` counts spec changes (custom resources and CRDs do).
    pub tracks_generation: bool,
    pub printer_columns: Vec<PrinterColumn>,
    /// The CRD's `openAPIV3Schema`, served under `/openapi/v3` for kubectl. Shared, so cloning
    /// a `ResourceInfo` (every request does) never copies a schema that may nest deep.
    pub schema: Option<Arc<DeepValue>>,
}

impl ResourceInfo {
    pub fn group_resource(&self) -> GroupResource {
        GroupResource {
            group: self.group.clone(),
            resource: self.resource.clone(),
        }
    }

    /// `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The verbs the resource serves: every one, but a namespace is deleted one at a time
    /// (kube-apiserver's namespace storage implements no `deletecollection`).
    pub fn verbs(&self) -> &'static [&'static str] {
        if self.builtin && self.group.is_empty() && self.resource == "namespaces" {
            NAMESPACE_VERBS
        } else {
            VERBS
        }
    }

    /// `configmaps` or `machineconfigpools.machineconfiguration.openshift.io`: how
    /// kube-apiserver names a resource in messages.
    pub fn qualified_name(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// What a resource serves, in the order discovery lists them.
const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const NAMESPACE_VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];

/// `(group, version, resource, kind, namespaced, status subresource)`
type Builtin = (&'static str, &'static str, &'static str, &'static str, bool, bool);

/// The built-in types: those the product and the agents in the field use
/// (core/v1 for the cluster and nodes, events in both APIs, CRDs).
const BUILTINS: &[Builtin] = &[
    ("", "v1", "namespaces", "Namespace", false, true),
    ("", "v1", "nodes", "Node", false, true),
    ("", "v1", "pods", "Pod", true, true),
    ("", "v1", "secrets", "Secret", true, false),
    ("", "v1", "configmaps", "ConfigMap", true, false),
    ("", "v1", "events", "Event", true, false),
    ("", "v1", "serviceaccounts", "ServiceAccount", true, false),
    ("events.k8s.io", "v1", "events", "Event", true, false),
    ("coordination.k8s.io", "v1", "leases", "Lease", true, false),
    (
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        false,
        true,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        true,
    ),
];

const SHORT_NAMES: &[(&str, &str)] = &[
    ("namespaces", "ns"),
    ("nodes", "no"),
    ("pods", "po"),
    ("configmaps", "cm"),
    ("events", "ev"),
    ("serviceaccounts", "sa"),
    ("customresourcedefinitions", "crd"),
    ("certificatesigningrequests", "csr"),
];

/// Every served resource, keyed by `(group, version, resource)`. Shared, copied on write: every
/// request reads it, and only a CRD's write changes it.
#[derive(Debug, Clone)]
pub struct Registry {
    by_gvr: Arc<BTreeMap<(String, String, String), ResourceInfo>>,
}

impl Default for Registry {
    fn default() -> Self {
        let mut by_gvr = BTreeMap::new();
        for &(group, version, resource, kind, namespaced, status) in BUILTINS {
            let info = ResourceInfo {
                group: group.into(),
                version: version.into(),
                resource: resource.into(),
                singular: kind.to_lowercase(),
                kind: kind.into(),
                list_kind: format!("{kind}List"),
                namespaced,
                short_names: SHORT_NAMES
                    .iter()
                    .filter(|(r, _)| *r == resource && group != "events.k8s.io")
                    .map(|(_, s)| s.to_string())
                    .collect(),
                status_subresource: status,
                builtin: true,
                tracks_generation: resource == "customresourcedefinitions",
                printer_columns: Vec::new(),
                schema: None,
            };
            by_gvr.insert((group.into(), version.into(), resource.into()), info);
        }
        Registry {
            by_gvr: Arc::new(by_gvr),
        }
    }
}

impl Registry {
    pub fn get(&self, group: &str, version: &str, resource: &str) -> Option<&ResourceInfo> {
        self.by_gvr
            .get(&(group.to_string(), version.to_string(), resource.to_string()))
    }

    /// The resource serving `kind` in `apiVersion`, as a manifest names it.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<&ResourceInfo> {
        self.by_gvr
            .values()
            .find(|r| r.api_version() == api_version && r.kind == kind)
    }

    pub fn all(&self) -> impl Iterator<Item = &ResourceInfo> {
        self.by_gvr.values()
    }

    /// Groups in a stable order: the core group first, then by name.
    pub fn groups(&self) -> Vec<String> {
        let mut groups: Vec<String> = self.by_gvr.keys().map(|(g, _, _)| g.clone()).collect();
        groups.dedup();
        groups
    }

    pub fn versions_of(&self, group: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .by_gvr
            .keys()
            .filter(|(g, _, _)| g == group)
            .map(|(_, v, _)| v.clone())
            .collect();
        v.dedup();
        v
    }

    pub fn resources_of(&self, group: &str, version: &str) -> Vec<&ResourceInfo> {
        self.by_gvr
            .values()
            .filter(|r| r.group == group && r.version == version)
            .collect()
    }

    /// Serve what a stored CRD declares. An established CRD replaces its earlier versions. A
    /// CRD never shadows a built-in resource: kube-apiserver serves its own groups before any
    /// CRD's, so a CRD naming a built-in group and resource (approved, in a protected group)
    /// serves nothing here, and its objects never share a built-in's storage.
    pub fn register_crd(&mut self, crd: &Value) {
        let Some(crd_name) = crd.pointer("/metadata/name").and_then(Value::as_str) else {
            return;
        };
        self.unregister_crd(crd_name);
        let resources = resources_from_crd(crd);
        let shadows = resources.iter().any(|r| {
            self.by_gvr
                .values()
                .any(|b| b.builtin && b.group_resource() == r.group_resource())
        });
        if shadows {
            return;
        }
        let by_gvr = Arc::make_mut(&mut self.by_gvr);
        for info in resources {
            by_gvr.insert(
                (info.group.clone(), info.version.clone(), info.resource.clone()),
                info,
            );
        }
    }

    /// Stop serving the resources of the CRD called `crd_name` (`<plural>.<group>`).
    pub fn unregister_crd(&mut self, crd_name: &str) -> Option<GroupResource> {
        let (plural, group) = crd_name.split_once('.')?;
        let before = self.by_gvr.len();
        let served = |(g, _, r): &(String, String, String), info: &ResourceInfo| {
            info.builtin || !(g == group && r == plural)
        };
        if self.by_gvr.iter().all(|(k, info)| served(k, info)) {
            return None;
        }
        Arc::make_mut(&mut self.by_gvr).retain(|k, info| served(k, info));
        (self.by_gvr.len() != before).then(|| GroupResource {
            group: group.to_string(),
            resource: plural.to_string(),
        })
    }
}

/// `(group, version)` of an `apiVersion` (apimachinery `schema.ParseGroupVersion`): `""`,
/// `version` or `group/version`; `None` for more than one slash.
pub(crate) fn parse_group_version(api_version: &str) -> Option<(String, String)> {
    match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [""] => Some((String::new(), String::new())),
        [version] => Some((String::new(), version.to_string())),
        [group, version] => Some((group.to_string(), version.to_string())),
        _ => None,
    }
}

/// One `ResourceInfo` per served version of a CRD.
pub(crate) fn resources_from_crd(crd: &Value) -> Vec<ResourceInfo> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let plural = text(&names["plural"]);
    let kind = text(&names["kind"]);
    let mut out = Vec::new();
    for version in spec["versions"].as_array().into_iter().flatten() {
        if version["served"] == Value::Bool(false) {
            continue;
        }
        let printer_columns = version["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| PrinterColumn {
                name: text(&c["name"]),
                type_: text(&c["type"]),
                json_path: text(&c["jsonPath"]),
                description: text(&c["description"]),
                priority: c["priority"].as_i64().unwrap_or(0),
            })
            .collect();
        out.push(ResourceInfo {
            group: text(&spec["group"]),
            version: text(&version["name"]),
            resource: plural.clone(),
            singular: names["singular"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| kind.to_lowercase()),
            kind: kind.clone(),
            list_kind: names["listKind"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("{kind}List")),
            namespaced: spec["scope"] == "Namespaced",
            short_names: names["shortNames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect(),
            status_subresource: version.pointer("/subresources/status").is_some(),
            builtin: false,
            tracks_generation: true,
            printer_columns,
            schema: version
                .pointer("/schema/openAPIV3Schema")
                .map(|s| Arc::new(DeepValue(s.clone()))),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v0", "served": false, "storage": false}]}
        })
    }

    #[test]
    fn a_crd_adds_its_served_versions_and_removal_takes_them_away() {
        let mut reg = Registry::default();
        reg.register_crd(&crd());
        let w = reg.get("example.com", "v1", "widgets").expect("registered");
        assert!(w.namespaced && w.status_subresource && !w.builtin);
        assert_eq!(w.list_kind, "WidgetList");
        assert_eq!(w.short_names, ["wd"]);
        assert!(reg.get("example.com", "v0", "widgets").is_none());
        assert_eq!(
            reg.by_kind("example.com/v1", "Widget").unwrap().resource,
            "widgets"
        );
        let gone = reg.unregister_crd("widgets.example.com").unwrap();
        assert_eq!(gone.resource, "widgets");
        assert!(reg.get("example.com", "v1", "widgets").is_none());
        assert!(reg.get("", "v1", "configmaps").is_some());
    }
}
