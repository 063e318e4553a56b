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
//!
//! Upstream decodes and writes with Go's JSON (`github.com/clarketm/json`, a copy of
//! `encoding/json`), not serde_json's strict reading: keys matched to fields ignoring case,
//! `null` hosts and fields, duplicate keys, invalid UTF-8 and the output's escapes all follow Go
//! (`dockerconfig.rs` over `go_syntax.rs` and `go_json.rs`), checked against Go's own answers
//! in `go_corpus.jsonl`.

mod dockerconfig;
#[cfg(test)]
mod go_corpus_tests;
mod go_json;
mod go_syntax;

use super::ClusterError;
use dockerconfig::Hosts;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};

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

/// `MergeDockerConfigstoJSONMap` of the `machine-os-puller` pull secret `name`'s `.dockercfg`:
/// its hosts replace those in `auths`, or, when it does not decode, nothing changes and the
/// assembly fails (4.16) or goes on (`skip_unreadable`, 4.14, which ignores the error).
fn merge_puller_secret(
    name: &str,
    raw: &[u8],
    auths: &mut Hosts,
    skip_unreadable: bool,
) -> Result<(), ClusterError> {
    match dockerconfig::unmarshal_docker_config(raw) {
        Ok(hosts) => auths.extend(hosts),
        Err(_) if skip_unreadable => {}
        Err(e) => {
            return Err(ClusterError::Operator(format!(
                "could not merge auths from secret {name}: unmarshal failure: {e}"
            )));
        }
    }
    Ok(())
}

/// `ConvertSecretTodockercfg` of the global pull secret's `.dockerconfigjson`, then
/// `MergeDockerConfigstoJSONMap` of what it gives.
fn merge_global_pull_secret(raw: &[u8], auths: &mut Hosts) -> Result<(), ClusterError> {
    let (pns, pname) = CLUSTER_PULL_SECRET;
    let old_style = dockerconfig::convert_secret_to_dockercfg(raw).map_err(|e| {
        ClusterError::Operator(format!(
            "{pns}/{pname}: could not decode new-style pull secret: {e}"
        ))
    })?;
    let hosts = dockerconfig::unmarshal_old_style(&old_style).map_err(|e| {
        ClusterError::Operator(format!(
            "failed to merge global pull secret: unmarshal failure: {e}"
        ))
    })?;
    auths.extend(hosts);
    Ok(())
}

/// The secret written from the merged hosts: the internal registry's entry copied to its
/// default route, then `json.Marshal`; `None` when no host is left.
fn written(mut auths: Hosts, base_domain: &str) -> Option<Vec<u8>> {
    if let Some(entry) = auths.get(INTERNAL_REGISTRY_HOST).cloned() {
        auths.insert(format!("{DEFAULT_ROUTE_PREFIX}{base_domain}"), entry);
    }
    if auths.is_empty() {
        return None;
    }
    Some(dockerconfig::marshal_docker_config_json(&auths))
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
    let mut auths = Hosts::new();
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
        merge_puller_secret(name, &raw, &mut auths, skip_unreadable)?;
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
    merge_global_pull_secret(&raw, &mut auths)?;
    Ok(written(auths, &base_domain))
}
