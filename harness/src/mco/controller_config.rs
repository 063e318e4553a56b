//! The ControllerConfig's spec as the template controller and the 4.14+ certificate writer read
//! it (`machineconfiguration.openshift.io/v1` `ControllerConfigSpec`). Which certificate field
//! feeds which file is data (`fixtures/templates.yaml`, the writer's table), so those fields are
//! read by name and decoded here (`data`); the image registry bundles and the OS image are typed.
//! Every field is kept as it came. The status's `controllerCertificates` (4.14+: what the
//! template controller found in those bundles) is typed too.

use super::machine_config::zero_if_null;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerConfigSpec {
    #[serde(rename = "osImageURL", default, deserialize_with = "zero_if_null")]
    pub os_image_url: String,
    /// Registry CAs from `image.config.openshift.io/cluster`'s `additionalTrustedCA`.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub image_registry_bundle_data: Vec<ImageRegistryBundle>,
    /// Registry CAs the user added.
    #[serde(default, deserialize_with = "zero_if_null")]
    pub image_registry_bundle_user_data: Vec<ImageRegistryBundle>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One registry CA: the directory name under `/etc/docker/certs.d` and the PEM (base64).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImageRegistryBundle {
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub data: String,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `status` of a ControllerConfig, as far as the suite reads it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerConfigStatus {
    #[serde(default, deserialize_with = "zero_if_null")]
    pub controller_certificates: Vec<ControllerCertificate>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One certificate of the ControllerConfig's bundles (release-4.16 `ControllerCertificate`;
/// release-4.14's has no dates).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerCertificate {
    #[serde(default)]
    pub subject: String,
    #[serde(default)]
    pub signer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<String>,
    /// Which bundle it came from: a spec field's Go name (`KubeAPIServerServingCAData`) or a
    /// registry bundle's file name.
    #[serde(default)]
    pub bundle_file: String,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl ControllerConfigStatus {
    /// The status of a ControllerConfig object, zero values where it has none.
    pub fn of(object: &Value) -> Result<Self, serde_json::Error> {
        super::status_of(object)
    }
}

impl ControllerConfigSpec {
    /// The spec of a ControllerConfig object (its `spec`), zero values where it has none.
    pub fn of(object: &Value) -> Result<Self, serde_json::Error> {
        super::spec_of(object)
    }

    /// A `[]byte` field of the spec by its JSON name (`kubeAPIServerServingCAData`,
    /// `rootCAData`, `internalRegistryPullSecret`, …), base64-decoded as Go's JSON decoding
    /// does; empty when the field is missing or `null`.
    pub fn data(&self, field: &str) -> Result<Vec<u8>, base64::DecodeError> {
        match self.other.get(field).and_then(Value::as_str) {
            Some(encoded) => base64::engine::general_purpose::STANDARD.decode(encoded),
            None => Ok(Vec::new()),
        }
    }

    /// Both registry bundles, the cluster's first.
    pub fn registry_bundles(&self) -> impl Iterator<Item = &ImageRegistryBundle> {
        self.image_registry_bundle_data
            .iter()
            .chain(&self.image_registry_bundle_user_data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_by_name_decode_and_registry_bundles_are_typed() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let object = json!({"spec": {
            "kubeAPIServerServingCAData": b64("bundle"),
            "cloudProviderCAData": null,
            "rootCAData": "not base64!",
            "osImageURL": "quay.io/os@sha256:1",
            "imageRegistryBundleData": [{"file": "registry.example:5000", "data": b64("ca")}],
            "imageRegistryBundleUserData": null,
            "proxy": {"httpProxy": "http://p"},
        }});
        let spec = ControllerConfigSpec::of(&object).unwrap();
        assert_eq!(spec.data("kubeAPIServerServingCAData").unwrap(), b"bundle");
        assert!(
            spec.data("cloudProviderCAData").unwrap().is_empty(),
            "null is empty"
        );
        assert!(
            spec.data("additionalTrustBundle").unwrap().is_empty(),
            "missing is empty"
        );
        assert!(spec.data("rootCAData").is_err(), "bad base64 is an error");
        assert_eq!(spec.os_image_url, "quay.io/os@sha256:1");
        let files: Vec<&str> = spec.registry_bundles().map(|b| b.file.as_str()).collect();
        assert_eq!(files, ["registry.example:5000"]);
        assert_eq!(spec.other["proxy"], json!({"httpProxy": "http://p"}), "kept");
    }

    #[test]
    fn controller_certificates_read_with_or_without_dates_and_write_back_the_same() {
        let status = json!({"controllerCertificates": [
            {"subject": "CN=a", "signer": "CN=a", "notBefore": "2026-11-28T00:00:00Z",
                "notAfter": "2036-11-28T00:00:00Z", "bundleFile": "KubeAPIServerServingCAData"},
            {"subject": "CN=b", "signer": "CN=root", "bundleFile": "registry.example:5000"},
        ], "observedGeneration": 2});
        let read = ControllerConfigStatus::of(&json!({"status": status})).unwrap();
        let certs = &read.controller_certificates;
        assert_eq!(certs[0].not_after.as_deref(), Some("2036-11-28T00:00:00Z"));
        assert_eq!(
            (certs[1].not_before.as_deref(), certs[1].bundle_file.as_str()),
            (None, "registry.example:5000")
        );
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            status,
            "written back as read"
        );
        assert!(
            ControllerConfigStatus::of(&json!({}))
                .unwrap()
                .controller_certificates
                .is_empty()
        );
        assert!(ControllerConfigStatus::of(&json!({"status": {"controllerCertificates": {}}})).is_err());
    }
}
