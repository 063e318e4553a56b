//! The operator's copy of the image registry CAs into ControllerConfig (release-4.14
//! sync.go:277-333, release-4.16 sync.go:289-345, `syncRenderConfig`), which the daemons'
//! certificate writers put under `/etc/docker/certs.d`:
//!
//! - `imageRegistryBundleUserData`: the ConfigMap in `openshift-config` that
//!   `image.config.openshift.io/cluster`'s `spec.additionalTrustedCA.name` names (none named:
//!   nothing; named but missing: nothing, with a warning); an unreadable `image.config` fails the
//!   sync;
//! - `imageRegistryBundleData`: `openshift-config-managed/image-registry-ca` (kept by the image
//!   registry operator), nothing when it is missing;
//! - in each, one entry per key: the `data` keys in sorted order, each value base64-decoded where
//!   it decodes (Go's `StdEncoding`, which skips newlines) and taken as it is where it does not
//!   (a PEM), then the `binaryData` keys in sorted order.

use super::ClusterError;
use base64::Engine;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};

/// The cluster's registry CAs, as the image registry operator publishes them.
pub const IMAGE_REGISTRY_CA: (&str, &str) = ("openshift-config-managed", "image-registry-ca");
/// Where the ConfigMap `additionalTrustedCA` names lives.
pub const USER_CA_NAMESPACE: &str = "openshift-config";

/// One registry CA of the ControllerConfig: its file name and its bytes.
pub type Bundle = (String, Vec<u8>);

/// A ConfigMap's entries as the operator lists them.
pub fn bundles(cm: &ConfigMap) -> Vec<Bundle> {
    // Go's StdEncoding: padded, the standard alphabet, newlines skipped, and (not strict) any
    // bits past the last whole byte ignored.
    let go_std = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    let mut out: Vec<Bundle> = Vec::new();
    for (key, value) in cm.data.iter().flatten() {
        let text: String = value.chars().filter(|c| *c != '\n' && *c != '\r').collect();
        let data = go_std.decode(text).unwrap_or_else(|_| value.as_bytes().to_vec());
        out.push((key.clone(), data));
    }
    for (key, value) in cm.binary_data.iter().flatten() {
        out.push((key.clone(), value.0.clone()));
    }
    out
}

/// `imageRegistryBundleData` and `imageRegistryBundleUserData`, in that order, as the operator
/// would write them now.
pub async fn assemble(client: &kube::Client) -> Result<(Vec<Bundle>, Vec<Bundle>), ClusterError> {
    let images = Api::<DynamicObject>::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("config.openshift.io", "v1", "Image"),
            "images",
        ),
    );
    let image = images
        .get("cluster")
        .await
        .map_err(|e| ClusterError::kube("image.config.openshift.io cluster".into(), e))?;
    let user_name = image.data["spec"]["additionalTrustedCA"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let read = |ns: &str, name: &str| {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let (ns, name) = (ns.to_string(), name.to_string());
        async move {
            api.get_opt(&name)
                .await
                .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))
        }
    };
    let user = match user_name.as_str() {
        "" => Vec::new(),
        name => read(USER_CA_NAMESPACE, name)
            .await?
            .map(|cm| bundles(&cm))
            .unwrap_or_default(),
    };
    let cluster = read(IMAGE_REGISTRY_CA.0, IMAGE_REGISTRY_CA.1)
        .await?
        .map(|cm| bundles(&cm))
        .unwrap_or_default();
    Ok((cluster, user))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use std::collections::BTreeMap;

    #[test]
    fn data_keys_sorted_decoded_where_they_decode_then_binary_data() {
        let cm = ConfigMap {
            data: Some(BTreeMap::from([
                (
                    "z.example.com".to_string(),
                    "-----BEGIN CERTIFICATE-----\nAAAA\n".to_string(),
                ),
                ("a.example.com..5000".to_string(), "aGVs\nbG8=".to_string()),
            ])),
            binary_data: Some(BTreeMap::from([(
                "b.example.com".to_string(),
                ByteString(vec![0, 1]),
            )])),
            ..Default::default()
        };
        assert_eq!(
            bundles(&cm),
            vec![
                ("a.example.com..5000".to_string(), b"hello".to_vec()),
                (
                    "z.example.com".to_string(),
                    b"-----BEGIN CERTIFICATE-----\nAAAA\n".to_vec()
                ),
                ("b.example.com".to_string(), vec![0, 1]),
            ]
        );
    }
}
