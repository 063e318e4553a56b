//! The machine-config controller's pure parts: templates to the `00-<role>` MachineConfig,
//! a pool's MachineConfigs merged into one rendered config, and its name
//! `rendered-<pool>-<32 hex>` (MCO `pkg/controller/template`, `pkg/controller/render`,
//! `pkg/controller/common/helpers.go`; mco-source.md §1).
//!
//! Templates are typed data (`fixtures/templates.yaml`); nothing here branches on a profile
//! except through a template's `profiles` list.

pub use crate::mco::ignition::decode_data_url;
use crate::profile::Profile;
use base64::Engine;
use md5::{Digest, Md5};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::path::Path;

/// The label pools select their MachineConfigs by.
pub const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";
pub const GENERATED_BY: &str = "machineconfiguration.openshift.io/generated-by-controller-version";
pub const CONTROLLER_VERSION: &str = concat!("mco-conformance-", env!("CARGO_PKG_VERSION"));
/// The Ignition spec version rendered configs carry.
pub const IGNITION_VERSION: &str = "3.2.0";

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileTemplate {
    pub path: String,
    /// Octal, as written in MCO templates (`"0644"`).
    pub mode: String,
    /// The ControllerConfig spec field holding the contents (base64).
    pub from: String,
    #[serde(default)]
    pub when_set: bool,
    pub profiles: Vec<String>,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitTemplate {
    pub name: String,
    pub enabled: bool,
    pub profiles: Vec<String>,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Templates {
    pub roles: Vec<String>,
    pub files: Vec<FileTemplate>,
    #[serde(default)]
    pub units: Vec<UnitTemplate>,
}

#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct TemplateError {
    pub file: String,
    pub message: String,
}

impl Templates {
    pub fn load(file: &Path) -> Result<Self, TemplateError> {
        let err = |message: String| TemplateError {
            file: file.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(file).map_err(|e| err(e.to_string()))?;
        let t: Templates = serde_yaml::from_str(&text).map_err(|e| err(e.to_string()))?;
        for f in &t.files {
            u32::from_str_radix(&f.mode, 8)
                .map_err(|_| err(format!("file {}: mode {:?} is not octal", f.path, f.mode)))?;
            for p in &f.profiles {
                p.parse::<Profile>()
                    .map_err(|e| err(format!("file {}: {e}", f.path)))?;
            }
        }
        Ok(t)
    }
}

/// An Ignition `data:` URL for `contents`.
pub fn data_url(contents: &[u8]) -> String {
    format!(
        "data:;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(contents)
    )
}

/// The `00-<role>` MachineConfig for a ControllerConfig spec.
pub fn template_machine_config(
    templates: &Templates,
    profile: Profile,
    role: &str,
    cc_spec: &Value,
) -> Value {
    let applies = |profiles: &[String]| profiles.iter().any(|p| p == profile.as_str());
    let mut files = Vec::new();
    for f in templates.files.iter().filter(|f| applies(&f.profiles)) {
        let encoded = cc_spec[&f.from].as_str().unwrap_or("");
        let contents = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap_or_default();
        if f.when_set && contents.is_empty() {
            continue;
        }
        files.push(json!({
            "path": f.path,
            "mode": u32::from_str_radix(&f.mode, 8).expect("checked on load"),
            "overwrite": true,
            "contents": {"source": data_url(&contents)},
        }));
    }
    let units: Vec<Value> = templates
        .units
        .iter()
        .filter(|u| applies(&u.profiles))
        .map(|u| json!({"name": u.name, "enabled": u.enabled}))
        .collect();
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "name": format!("00-{role}"),
            "labels": {ROLE_LABEL: role},
            "annotations": {GENERATED_BY: CONTROLLER_VERSION},
        },
        "spec": {
            "config": {"ignition": {"version": IGNITION_VERSION}, "storage": {"files": files}, "systemd": {"units": units}},
            "osImageURL": cc_spec["osImageURL"].as_str().unwrap_or(""),
            "kernelArguments": [],
            "extensions": [],
            "fips": false,
            "kernelType": "",
        },
    })
}

fn merge_by_key(into: &mut Vec<Value>, from: &[Value], key: &str) {
    for item in from {
        match into.iter().position(|i| i[key] == item[key]) {
            Some(at) => into[at] = item.clone(),
            None => into.push(item.clone()),
        }
    }
}

/// MachineConfigs (any order) merged as MCO's `MergeMachineConfigs`: by name; files by path
/// and units by name, later wins; kernel arguments appended once each; osImageURL and
/// kernelType the last set; fips if any.
pub fn merge_machine_configs(configs: &[Value]) -> Value {
    let mut sorted: Vec<&Value> = configs.iter().collect();
    sorted.sort_by_key(|c| c["metadata"]["name"].as_str().unwrap_or("").to_string());
    let (mut files, mut units, mut kargs, mut extensions) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut os_image, mut kernel_type, mut fips) = (String::new(), String::new(), false);
    let mut passwd: Map<String, Value> = Map::new();
    for mc in sorted {
        let spec = &mc["spec"];
        let array = |v: &Value| v.as_array().cloned().unwrap_or_default();
        merge_by_key(&mut files, &array(&spec["config"]["storage"]["files"]), "path");
        merge_by_key(&mut units, &array(&spec["config"]["systemd"]["units"]), "name");
        for k in array(&spec["kernelArguments"])
            .into_iter()
            .chain(array(&spec["extensions"]))
        {
            let target = if spec["kernelArguments"].as_array().is_some_and(|a| a.contains(&k)) {
                &mut kargs
            } else {
                &mut extensions
            };
            if !target.contains(&k) {
                target.push(k);
            }
        }
        if let Some(users) = spec["config"]["passwd"].as_object() {
            passwd.extend(users.clone());
        }
        if let Some(url) = spec["osImageURL"].as_str().filter(|s| !s.is_empty()) {
            os_image = url.to_string();
        }
        if let Some(k) = spec["kernelType"].as_str().filter(|s| !s.is_empty()) {
            kernel_type = k.to_string();
        }
        fips |= spec["fips"].as_bool().unwrap_or(false);
    }
    let mut config = json!({"ignition": {"version": IGNITION_VERSION}, "storage": {"files": files}, "systemd": {"units": units}});
    if !passwd.is_empty() {
        config["passwd"] = Value::Object(passwd);
    }
    json!({
        "config": config,
        "osImageURL": os_image,
        "kernelArguments": kargs,
        "extensions": extensions,
        "fips": fips,
        "kernelType": kernel_type,
    })
}

/// `rendered-<pool>-<hex(md5(salt ‖ spec))>` (MCO `pkg/controller/render/hash.go`; the salt
/// and the serialisation are ours, the shape is upstream's).
pub fn rendered_name(pool: &str, spec: &Value) -> String {
    let mut hasher = Md5::new();
    hasher.update(b"mco-conformance-render-salt");
    hasher.update(serde_json::to_vec(spec).expect("serialises"));
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("rendered-{pool}-{hex}")
}

/// The file at `path` in a rendered spec, decoded.
pub fn file_contents(spec: &Value, path: &str) -> Option<Vec<u8>> {
    spec["config"]["storage"]["files"]
        .as_array()?
        .iter()
        .find(|f| f["path"] == path)
        .and_then(|f| f["contents"]["source"].as_str())
        .and_then(decode_data_url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn templates() -> Templates {
        Templates::load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .unwrap()
                .join("fixtures/templates.yaml"),
        )
        .unwrap()
    }

    fn cc(ca: &str) -> Value {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        json!({"kubeAPIServerServingCAData": b64(ca), "rootCAData": b64("root"), "cloudProviderCAData": null})
    }

    #[test]
    fn only_4_12_templates_the_kubelet_ca() {
        let t = templates();
        let old = template_machine_config(&t, Profile::Ocp412, "worker", &cc("bundle-1"));
        assert_eq!(old["metadata"]["name"], "00-worker");
        assert_eq!(
            file_contents(&old["spec"], "/etc/kubernetes/kubelet-ca.crt").unwrap(),
            b"bundle-1"
        );
        assert!(
            file_contents(
                &old["spec"],
                "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem"
            )
            .is_none(),
            "skipped when unset"
        );
        let new = template_machine_config(&t, Profile::Ocp416, "worker", &cc("bundle-1"));
        assert!(file_contents(&new["spec"], "/etc/kubernetes/kubelet-ca.crt").is_none());
        assert_eq!(
            file_contents(&new["spec"], "/etc/kubernetes/ca.crt").unwrap(),
            b"root"
        );
    }

    #[test]
    fn a_bundle_change_renders_a_new_name_on_4_12_only() {
        let t = templates();
        let name = |profile, ca| {
            rendered_name(
                "worker",
                &merge_machine_configs(&[template_machine_config(&t, profile, "worker", &cc(ca))]),
            )
        };
        assert_ne!(name(Profile::Ocp412, "a"), name(Profile::Ocp412, "b"));
        assert_eq!(name(Profile::Ocp416, "a"), name(Profile::Ocp416, "b"));
        let n = name(Profile::Ocp412, "a");
        assert!(
            n.starts_with("rendered-worker-") && n.len() == "rendered-worker-".len() + 32,
            "{n}"
        );
    }

    #[test]
    fn later_configs_win_and_kernel_arguments_accumulate() {
        let mc = |name: &str, path: &str, data: &str, kargs: Value| {
            json!({"metadata": {"name": name}, "spec": {"config": {"storage": {"files": [
                {"path": path, "mode": 420, "contents": {"source": data_url(data.as_bytes())}}]}}, "kernelArguments": kargs}})
        };
        let merged = merge_machine_configs(&[
            mc("99-worker-custom", "/etc/a", "override", json!(["nosmt"])),
            mc("00-worker", "/etc/a", "base", json!(["nosmt", "quiet"])),
        ]);
        assert_eq!(file_contents(&merged, "/etc/a").unwrap(), b"override");
        assert_eq!(merged["kernelArguments"], json!(["nosmt", "quiet"]));
    }

    #[test]
    fn data_urls_both_ways() {
        assert_eq!(
            decode_data_url("data:,hello%20world%0A").unwrap(),
            b"hello world\n"
        );
        assert_eq!(decode_data_url(&data_url(b"x\ny")).unwrap(), b"x\ny");
        assert!(decode_data_url("https://example.com").is_none());
    }
}
