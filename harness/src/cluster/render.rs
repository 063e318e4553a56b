//! The machine-config controller's pure parts: templates to the `00-<role>` MachineConfig,
//! a pool's MachineConfigs merged into one rendered config, and its name
//! `rendered-<pool>-<32 hex>` (MCO `pkg/controller/template`, `pkg/controller/render`,
//! `pkg/controller/common/helpers.go`; mco-source.md §1).
//!
//! Templates are typed data (`fixtures/templates.yaml`); nothing here branches on a profile
//! except through a template's `profiles` list.

use crate::mco::McoObject;
use crate::mco::controller_config::ControllerConfigSpec;
pub use crate::mco::ignition::decode_data_url;
use crate::mco::machine_config::{MachineConfig, MachineConfigSpec};
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
    pub profiles: Vec<String>,
    pub source: String,
}

/// A systemd unit as upstream's unit templates write it: `enabled` only where the template says
/// (crio.service's does not, and no daemon enables it), its contents, its drop-ins.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitTemplate {
    pub name: String,
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub contents: Option<String>,
    #[serde(default)]
    pub dropins: Vec<DropinTemplate>,
    pub profiles: Vec<String>,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropinTemplate {
    pub name: String,
    pub contents: String,
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
    cc_spec: &ControllerConfigSpec,
) -> Value {
    let applies = |profiles: &[String]| profiles.iter().any(|p| p == profile.as_str());
    let mut files = Vec::new();
    for f in templates.files.iter().filter(|f| applies(&f.profiles)) {
        let contents = cc_spec.data(&f.from).unwrap_or_default();
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
        .map(|u| {
            let mut unit = json!({"name": u.name});
            if let Some(enabled) = u.enabled {
                unit["enabled"] = enabled.into();
            }
            if let Some(contents) = &u.contents {
                unit["contents"] = contents.as_str().into();
            }
            if !u.dropins.is_empty() {
                unit["dropins"] = u
                    .dropins
                    .iter()
                    .map(|d| json!({"name": d.name, "contents": d.contents}))
                    .collect();
            }
            unit
        })
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
            "osImageURL": cc_spec.os_image_url,
            "kernelArguments": [],
            "extensions": [],
            "fips": false,
            "kernelType": "",
        },
    })
}

/// `from`'s entries over `into`'s: one with the same key replaces it in place, a new one is
/// appended.
fn merge_by<T: Clone>(into: &mut Vec<T>, from: &[T], key: impl Fn(&T) -> &str) {
    for item in from {
        match into.iter().position(|i| key(i) == key(item)) {
            Some(at) => into[at] = item.clone(),
            None => into.push(item.clone()),
        }
    }
}

/// MachineConfigs (any order) merged as MCO's `MergeMachineConfigs`: by name; files by path
/// and units by name, later wins; kernel arguments and extensions appended once each;
/// osImageURL and kernelType the last set; fips if any.
pub fn merge_machine_configs(configs: &[MachineConfig]) -> MachineConfigSpec {
    let mut sorted: Vec<&MachineConfig> = configs.iter().collect();
    sorted.sort_by_key(|c| c.name());
    let mut merged = MachineConfigSpec::default();
    merged.config.ignition = json!({"version": IGNITION_VERSION});
    let mut passwd: Map<String, Value> = Map::new();
    for mc in sorted {
        let spec = &mc.spec;
        merge_by(&mut merged.config.storage.files, spec.files(), |f| &f.path);
        merge_by(&mut merged.config.systemd.units, spec.units(), |u| &u.name);
        for (from, into) in [
            (&spec.kernel_arguments, &mut merged.kernel_arguments),
            (&spec.extensions, &mut merged.extensions),
        ] {
            for k in from {
                if !into.contains(k) {
                    into.push(k.clone());
                }
            }
        }
        if let Some(users) = spec.config.passwd.as_ref().and_then(Value::as_object) {
            passwd.extend(users.clone());
        }
        if !spec.os_image_url.is_empty() {
            merged.os_image_url = spec.os_image_url.clone();
        }
        if !spec.kernel_type.is_empty() {
            merged.kernel_type = spec.kernel_type.clone();
        }
        merged.fips |= spec.fips;
    }
    if !passwd.is_empty() {
        merged.config.passwd = Some(Value::Object(passwd));
    }
    merged
}

/// `rendered-<pool>-<hex(md5(salt ‖ spec))>` (MCO `pkg/controller/render/hash.go`; the salt
/// and the serialisation are ours, the shape is upstream's).
pub fn rendered_name(pool: &str, spec: &MachineConfigSpec) -> String {
    let mut hasher = Md5::new();
    hasher.update(b"mco-conformance-render-salt");
    hasher.update(serde_json::to_vec(&spec.to_value()).expect("serialises"));
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("rendered-{pool}-{hex}")
}

/// The file at `path` in a rendered spec, decoded.
pub fn file_contents(spec: &MachineConfigSpec, path: &str) -> Option<Vec<u8>> {
    let source = spec.file(path)?.contents.as_ref()?.source.as_deref()?;
    decode_data_url(source)
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

    fn cc(ca: &str) -> ControllerConfigSpec {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        ControllerConfigSpec::of(
            &json!({"spec": {"kubeAPIServerServingCAData": b64(ca), "rootCAData": b64("root"), "cloudProviderCAData": null}}),
        )
        .unwrap()
    }

    #[test]
    fn only_4_12_templates_the_kubelet_ca() {
        let t = templates();
        let old = template_machine_config(&t, Profile::Ocp412, "worker", &cc("bundle-1"));
        assert_eq!(old["metadata"]["name"], "00-worker");
        let old = MachineConfigSpec::of(&old).unwrap();
        assert_eq!(
            file_contents(&old, "/etc/kubernetes/kubelet-ca.crt").unwrap(),
            b"bundle-1"
        );
        // Unset fields render empty files, as upstream's `inline: |` templates do.
        assert_eq!(
            file_contents(
                &old,
                "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem"
            )
            .unwrap(),
            b""
        );
        let user_ca = old
            .file("/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt")
            .expect("the user CA bundle is always rendered");
        assert_eq!(user_ca.mode, Some(0o600));
        let new = MachineConfigSpec::of(&template_machine_config(
            &t,
            Profile::Ocp416,
            "worker",
            &cc("bundle-1"),
        ))
        .unwrap();
        assert!(file_contents(&new, "/etc/kubernetes/kubelet-ca.crt").is_none());
        assert_eq!(file_contents(&new, "/etc/kubernetes/ca.crt").unwrap(), b"root");
    }

    /// The units as upstream's templates write them in every release: kubelet.service enabled
    /// with its whole unit (one that restarts always), crio.service neither enabled nor given
    /// contents, only its two drop-ins (templates/<role>/01-<role>-kubelet/_base/units/
    /// kubelet.service.yaml, templates/common/_base/units/crio.service.yaml).
    #[test]
    fn units_are_rendered_as_upstream_s_templates_write_them() {
        let t = templates();
        for profile in Profile::ALL {
            let spec =
                MachineConfigSpec::of(&template_machine_config(&t, profile, "worker", &cc("b"))).unwrap();
            let unit = |name: &str| {
                spec.units()
                    .iter()
                    .find(|u| u.name == name)
                    .cloned()
                    .unwrap_or_else(|| panic!("{profile}: no {name}"))
            };
            let kubelet = unit("kubelet.service");
            assert_eq!(kubelet.enabled, Some(true), "{profile}");
            let contents = kubelet.contents.unwrap_or_default();
            assert!(contents.contains("Restart=always"), "{profile}: {contents}");
            let crio = unit("crio.service");
            assert_eq!(crio.enabled, None, "{profile}: the template does not enable crio");
            assert!(crio.contents.is_none(), "{profile}");
            let dropins: Vec<String> = crio.dropins().into_iter().map(|d| d.name).collect();
            assert_eq!(
                dropins,
                ["05-mco-ordering.conf", "10-mco-default-madv.conf"],
                "{profile}"
            );
        }
    }

    #[test]
    fn a_bundle_change_renders_a_new_name_on_4_12_only() {
        let t = templates();
        let name = |profile, ca| {
            rendered_name(
                "worker",
                &merge_machine_configs(&[MachineConfig::from_json(&template_machine_config(
                    &t,
                    profile,
                    "worker",
                    &cc(ca),
                ))
                .unwrap()]),
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
            MachineConfig::from_json(&json!({"metadata": {"name": name}, "spec": {"config": {"storage": {"files": [
                {"path": path, "mode": 420, "contents": {"source": data_url(data.as_bytes())}}]}}, "kernelArguments": kargs}}))
            .unwrap()
        };
        let merged = merge_machine_configs(&[
            mc("99-worker-custom", "/etc/a", "override", json!(["nosmt"])),
            mc("00-worker", "/etc/a", "base", json!(["nosmt", "quiet"])),
        ]);
        assert_eq!(file_contents(&merged, "/etc/a").unwrap(), b"override");
        assert_eq!(merged.kernel_arguments, ["nosmt", "quiet"]);
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
