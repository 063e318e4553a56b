//! The operator's assembly of ControllerConfig `spec.internalRegistryPullSecret` (release-4.14
//! sync.go:1560-1650, release-4.16 sync.go:1910-2002 `getImageRegistryPullSecrets`), run after
//! the hand-over, as the kubelet CA bundle from `kube-apiserver-client-ca` is:
//!
//! - no ClusterOperator `image-registry` (the ImageRegistry capability off): nothing;
//! - the DNS config `cluster` must exist (its base domain names the default route);
//! - no ServiceAccount `openshift-machine-config-operator/machine-os-puller` yet: nothing;
//! - each of its `imagePullSecrets`, a `kubernetes.io/dockercfg` Secret beside it, merged in
//!   (host by host, a later one replacing an earlier one's host);
//! - then `openshift-config/pull-secret`, which must be `kubernetes.io/dockerconfigjson`, its
//!   `auths` merged in the same way;
//! - the entry of `image-registry.openshift-image-registry.svc:5000`, if any, copied to
//!   `default-route-openshift-image-registry.apps.<base domain>`;
//! - written as `{"auths":{…}}`, hosts in order, each entry with its username, password, email
//!   and auth (empty when absent); nothing when no host is left.

use super::ClusterError;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use serde::Serialize;
use std::collections::BTreeMap;

/// The ClusterOperator whose presence says the cluster has an image registry.
pub const IMAGE_REGISTRY_OPERATOR: &str = "image-registry";
/// The service account whose image pull secrets the operator merges.
pub const PULLER_SERVICE_ACCOUNT: (&str, &str) = ("openshift-machine-config-operator", "machine-os-puller");
/// The cluster's global pull secret.
pub const CLUSTER_PULL_SECRET: (&str, &str) = ("openshift-config", "pull-secret");
/// The in-cluster registry's service host.
pub const INTERNAL_REGISTRY_HOST: &str = "image-registry.openshift-image-registry.svc:5000";
/// The route host the operator adds for it, before the base domain.
pub const DEFAULT_ROUTE_PREFIX: &str = "default-route-openshift-image-registry.apps.";

/// One host's credentials, as upstream's `DockerConfigEntry` writes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
struct Entry {
    username: String,
    password: String,
    email: String,
    auth: String,
}

impl Entry {
    /// The four fields from a host's JSON object; other fields are dropped, a field that is
    /// not a string is an error (as Go's decoding into the struct has it).
    fn of(host: &str, value: &serde_json::Value) -> Result<Entry, String> {
        let object = value
            .as_object()
            .ok_or_else(|| format!("the entry of {host} is not a JSON object"))?;
        let field = |name: &str| match object.get(name) {
            None | Some(serde_json::Value::Null) => Ok(String::new()),
            Some(serde_json::Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!("{host}.{name} is not a string: {other}")),
        };
        Ok(Entry {
            username: field("username")?,
            password: field("password")?,
            email: field("email")?,
            auth: field("auth")?,
        })
    }
}

#[derive(Serialize)]
struct DockerConfigJson<'a> {
    auths: &'a BTreeMap<String, Entry>,
}

/// Merge a `{host: entry}` JSON map into `auths` (`null` is an empty one, as Go decodes it).
fn merge(raw: &[u8], auths: &mut BTreeMap<String, Entry>) -> Result<(), String> {
    let value: serde_json::Value =
        serde_json::from_slice(raw).map_err(|e| format!("unmarshal failure: {e}"))?;
    let map = match value {
        serde_json::Value::Null => return Ok(()),
        serde_json::Value::Object(map) => map,
        other => return Err(format!("unmarshal failure: {other} is not a map of hosts")),
    };
    for (host, value) in &map {
        auths.insert(host.clone(), Entry::of(host, value)?);
    }
    Ok(())
}

fn config_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("config.openshift.io", "v1", kind), plural)
}

/// The secret the operator writes into the ControllerConfig now, or `None` for none; with
/// `skip_unreadable`, a `machine-os-puller` pull secret that does not read adds nothing (4.14)
/// instead of failing the assembly (4.16).
pub async fn assemble(client: &kube::Client, skip_unreadable: bool) -> Result<Option<Vec<u8>>, ClusterError> {
    let operators: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &config_resource("ClusterOperator", "clusteroperators"),
    );
    let registry = operators
        .get_opt(IMAGE_REGISTRY_OPERATOR)
        .await
        .map_err(|e| ClusterError::kube(format!("clusteroperator {IMAGE_REGISTRY_OPERATOR}"), e))?;
    if registry.is_none() {
        return Ok(None);
    }
    let dns = Api::<DynamicObject>::all_with(client.clone(), &config_resource("DNS", "dnses"))
        .get_opt("cluster")
        .await
        .map_err(|e| ClusterError::kube("dns cluster".into(), e))?
        .ok_or_else(|| ClusterError::Missing("dns.config.openshift.io cluster".into()))?;
    let base_domain = dns.data["spec"]["baseDomain"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (ns, sa_name) = PULLER_SERVICE_ACCOUNT;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let Some(sa) = Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .get_opt(sa_name)
        .await
        .map_err(|e| ClusterError::kube(format!("serviceaccount {ns}/{sa_name}"), e))?
    else {
        return Ok(None);
    };
    let mut auths = BTreeMap::new();
    for reference in sa.image_pull_secrets.iter().flatten() {
        let name = &reference.name;
        let secret = secrets
            .get(name)
            .await
            .map_err(|e| ClusterError::kube(format!("image pull secret {ns}/{name}"), e))?;
        let raw = secret
            .data
            .as_ref()
            .and_then(|d| d.get(".dockercfg"))
            .map(|b| b.0.clone())
            .unwrap_or_default();
        match merge(&raw, &mut auths) {
            Ok(()) => {}
            Err(_) if skip_unreadable => {}
            Err(e) => {
                return Err(ClusterError::Operator(format!(
                    "could not merge auths from secret {name}: {e}"
                )));
            }
        }
    }
    let (pns, pname) = CLUSTER_PULL_SECRET;
    let pull = Api::<Secret>::namespaced(client.clone(), pns)
        .get(pname)
        .await
        .map_err(|e| ClusterError::kube(format!("secret {pns}/{pname}"), e))?;
    let kind = pull.type_.as_deref().unwrap_or_default();
    if kind != "kubernetes.io/dockerconfigjson" {
        return Err(ClusterError::Operator(format!(
            "{pns}/{pname}: expected secret type kubernetes.io/dockerconfigjson found {kind}"
        )));
    }
    let raw = pull
        .data
        .as_ref()
        .and_then(|d| d.get(".dockerconfigjson"))
        .map(|b| b.0.clone())
        .unwrap_or_default();
    let global: serde_json::Value = serde_json::from_slice(&raw).map_err(|e| {
        ClusterError::Operator(format!(
            "{pns}/{pname}: could not decode new-style pull secret: {e}"
        ))
    })?;
    let old_style = serde_json::to_vec(global.get("auths").unwrap_or(&serde_json::Value::Null))
        .map_err(|e| ClusterError::Operator(e.to_string()))?;
    merge(&old_style, &mut auths)
        .map_err(|e| ClusterError::Operator(format!("failed to merge global pull secret: {e}")))?;
    if let Some(entry) = auths.get(INTERNAL_REGISTRY_HOST).cloned() {
        auths.insert(format!("{DEFAULT_ROUTE_PREFIX}{base_domain}"), entry);
    }
    if auths.is_empty() {
        return Ok(None);
    }
    let bytes = serde_json::to_vec(&DockerConfigJson { auths: &auths })
        .map_err(|e| ClusterError::Operator(e.to_string()))?;
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_secret_replaces_a_host_and_entries_keep_four_fields() {
        let mut auths = BTreeMap::new();
        merge(
            br#"{"a":{"auth":"one","extra":1},"b":{"username":"u"}}"#,
            &mut auths,
        )
        .unwrap();
        merge(br#"{"a":{"auth":"two"}}"#, &mut auths).unwrap();
        let text = serde_json::to_string(&DockerConfigJson { auths: &auths }).unwrap();
        assert_eq!(
            text,
            r#"{"auths":{"a":{"username":"","password":"","email":"","auth":"two"},"b":{"username":"u","password":"","email":"","auth":""}}}"#
        );
        assert!(merge(br#"{"a":{"auth":1}}"#, &mut auths).is_err());
        assert!(merge(b"[]", &mut auths).is_err());
        // `null` reads as an empty map, as Go decodes it: nothing changes.
        let before = auths.clone();
        merge(b"null", &mut auths).unwrap();
        assert_eq!(auths, before);
    }
}
