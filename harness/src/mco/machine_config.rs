//! A MachineConfig's spec as the reference cluster renders it and the reference daemon applies
//! it (`machineconfiguration.openshift.io/v1` `MachineConfigSpec` with its Ignition config):
//! typed where the suite reads a field, every other field kept as it came, so a spec read and
//! written back is the one the API server holds. Missing and `null` fields read as Go's zero
//! values, as upstream's structs read them (`osImageURL: ""`, `fips: false`, no files).

use super::ignition::decode_data_url;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// A MachineConfig object: its metadata (name, labels) and spec.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineConfig {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub spec: MachineConfigSpec,
}

impl super::McoObject for MachineConfig {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
}

/// `spec` of a MachineConfig.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigSpec {
    #[serde(default, deserialize_with = "zero_if_null")]
    pub config: IgnitionConfig,
    #[serde(rename = "osImageURL", default, deserialize_with = "zero_if_null")]
    pub os_image_url: String,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub kernel_arguments: Vec<String>,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub extensions: Vec<String>,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub fips: bool,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub kernel_type: String,
    /// Fields the suite does not read, kept.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The Ignition config inside a MachineConfig.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IgnitionConfig {
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub ignition: Value,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub storage: Storage,
    #[serde(default, deserialize_with = "zero_if_null")]
    pub systemd: Systemd,
    /// `passwd` as it came (users and their SSH keys); absent when no config sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passwd: Option<Value>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Storage {
    #[serde(default, deserialize_with = "zero_if_null")]
    pub files: Vec<File>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Systemd {
    #[serde(default, deserialize_with = "zero_if_null")]
    pub units: Vec<Unit>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// An Ignition file entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct File {
    #[serde(default)]
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contents: Option<FileContents>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileContents {
    /// A `data:` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A systemd unit entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contents: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl MachineConfigSpec {
    /// The spec of a MachineConfig object (its `spec`), zero values where it has none.
    pub fn of(object: &Value) -> Result<Self, serde_json::Error> {
        super::spec_of(object)
    }

    pub fn files(&self) -> &[File] {
        &self.config.storage.files
    }

    pub fn units(&self) -> &[Unit] {
        &self.config.systemd.units
    }

    /// The file at `path`.
    pub fn file(&self, path: &str) -> Option<&File> {
        self.files().iter().find(|f| f.path == path)
    }

    /// As JSON, keys in order (what the API server stores and a rendered name hashes).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a spec serialises")
    }
}

/// A unit's drop-in: `/etc/systemd/system/<unit>.d/<name>`, written when it has contents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dropin {
    pub name: String,
    pub contents: Option<String>,
}

impl Unit {
    /// Its drop-ins (Ignition `dropins`: name and contents), in order.
    pub fn dropins(&self) -> Vec<Dropin> {
        self.other
            .get("dropins")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|d| Dropin {
                name: d["name"].as_str().unwrap_or("").to_string(),
                contents: d["contents"].as_str().map(str::to_string),
            })
            .collect()
    }

    /// Where a drop-in of this unit lives under a systemd directory (`/etc/systemd/system`).
    pub fn dropin_path(&self, systemd_dir: &str, dropin: &Dropin) -> String {
        format!("{systemd_dir}/{}.d/{}", self.name, dropin.name)
    }
}

impl File {
    /// The decoded contents (empty when there are none or the URL does not decode).
    pub fn data(&self) -> Vec<u8> {
        self.contents
            .as_ref()
            .and_then(|c| c.source.as_deref())
            .and_then(decode_data_url)
            .unwrap_or_default()
    }

    /// The mode, Ignition's default 0644 when unset.
    pub fn mode_or_default(&self) -> u32 {
        self.mode.unwrap_or(0o644)
    }
}

/// Paths added, removed, or whose whole file entry differs (`CalculateConfigFileDiffs`).
pub fn changed_files(old: &MachineConfigSpec, new: &MachineConfigSpec) -> Vec<String> {
    let mut changed = BTreeSet::new();
    for f in old.files() {
        if new.file(&f.path) != Some(f) {
            changed.insert(f.path.clone());
        }
    }
    for f in new.files() {
        if old.file(&f.path).is_none() {
            changed.insert(f.path.clone());
        }
    }
    changed.into_iter().collect()
}

/// A missing or `null` field is the type's zero value, as Go's JSON decoding leaves it.
pub(crate) fn zero_if_null<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(
    d: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_round_trip_and_nulls_read_as_zero_values() {
        let spec = json!({
            "config": {
                "ignition": {"version": "3.2.0"},
                "storage": {"files": [{"path": "/etc/a", "mode": 420, "overwrite": true,
                    "contents": {"source": "data:,hello%20world", "compression": ""}}],
                    "directories": [{"path": "/etc/d"}]},
                "systemd": {"units": [{"name": "a.service", "enabled": true, "dropins": []}]},
            },
            "osImageURL": "quay.io/os@sha256:1",
            "kernelArguments": null,
            "extensions": ["usbguard"],
            "baseOSExtensionsContainerImage": "quay.io/ext",
        });
        let typed: MachineConfigSpec = serde_json::from_value(spec.clone()).unwrap();
        assert_eq!(typed.file("/etc/a").unwrap().data(), b"hello world");
        assert_eq!(typed.file("/etc/a").unwrap().mode_or_default(), 0o644);
        assert_eq!(typed.units()[0].enabled, Some(true));
        assert!(typed.kernel_arguments.is_empty() && !typed.fips && typed.kernel_type.is_empty());
        let back = typed.to_value();
        // Every field that came in goes back out; the zero values are written as Go writes them.
        let mut expected = spec;
        expected["kernelArguments"] = json!([]);
        expected["fips"] = json!(false);
        expected["kernelType"] = json!("");
        assert_eq!(back, expected);
        assert_eq!(
            MachineConfigSpec::of(&json!({"metadata": {}})).unwrap(),
            MachineConfigSpec::default()
        );
    }
}
