//! An upstream machine-config-controller as the scenario's machine-config controller, in place of
//! the reference's template, render, node and drain controllers (`--controller-binary`). The
//! other cluster components stay the reference's: the signer rotations of KAS-O and KCM-O, the
//! operator's ControllerConfig, the CSR approver, the node lifecycle controller.
//!
//! The harness plays the operator of the controller's build: the ControllerConfig's
//! `generated-by-version` is the controller's own `version.Raw`, or its render controller ignores
//! the ControllerConfig (release-4.16 render_controller.go:590-598). The controller runs
//! unmodified: `<binary> start --kubeconfig … --resourcelock-namespace
//! openshift-machine-config-operator --metrics-listen-address 127.0.0.1:<port>`, with
//! `--payload-version` where it has the flag (4.14+), then the user's arguments (its
//! `--templates` directory, at least).
//!
//! It acts on its own schedule (its render controller waits 5 s for the template controller,
//! its queues back off), so a step cannot settle it as it settles the reference: [`caught_up`]
//! says whether it has acted on what the API holds now — the template controller on the
//! ControllerConfig's generation, each pool's rendered config on its MachineConfigs — and the
//! scenario's convergence waits for that.

use super::ClusterError;
use crate::mco::api::{controller_configs, machine_config_pools, machine_configs};
use crate::mco::machine_config::MachineConfigSpec;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub(super) const GENERATED_BY_VERSION: &str = "machineconfiguration.openshift.io/generated-by-version";

/// The controller a run names (`--controller-binary`, `--controller-arg`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamController {
    pub binary: PathBuf,
    pub args: Vec<String>,
}

/// The controller of one scenario, running until dropped.
pub struct RunningController {
    _child: tokio::process::Child,
    /// Where its Prometheus metrics are served (plain HTTP).
    pub metrics: SocketAddr,
    pub log: PathBuf,
}

impl RunningController {
    /// The log's last lines that are not a stack trace's, for a failure message.
    pub fn tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with(char::is_whitespace))
            .collect();
        kept[kept.len().saturating_sub(lines)..].join("\n")
    }
}

impl UpstreamController {
    /// Its `version.Raw`: `version` prints `MachineConfigController <Raw>-<Hash>`, the Hash a git
    /// commit (no dash) or, in a build without ldflags, `was-not-built-properly`.
    pub fn version(&self) -> Result<String, String> {
        let out = std::process::Command::new(&self.binary)
            .arg("version")
            .output()
            .map_err(|e| format!("{} version: {e}", self.binary.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        raw_version(&text).ok_or_else(|| format!("{} version printed {text:?}", self.binary.display()))
    }

    /// Start it for one scenario: `kubeconfig` (the cluster's admin) written under `dir`, the
    /// ControllerConfig stamped with its version, its log in `dir`.
    pub async fn start(
        &self,
        admin: &kube::Client,
        kubeconfig: &str,
        payload_version: &str,
        dir: &Path,
    ) -> Result<RunningController, ClusterError> {
        let fail = |what: String| ClusterError::Fixture(format!("{}: {what}", self.binary.display()));
        let version = self.version().map_err(fail)?;
        controller_configs(admin)
            .patch(
                "machine-config-controller",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {GENERATED_BY_VERSION: version}}})),
            )
            .await
            .map_err(|e| ClusterError::kube("controllerconfig machine-config-controller".into(), e))?;
        let path = dir.join("machine-config-controller.kubeconfig");
        std::fs::write(&path, kubeconfig).map_err(|e| fail(format!("{}: {e}", path.display())))?;
        // A free port for its metrics: taken here, let go, and given to it.
        let metrics = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| fail(format!("a port for its metrics: {e}")))?;
        let help = std::process::Command::new(&self.binary)
            .args(["start", "--help"])
            .output()
            .map_err(|e| fail(format!("start --help: {e}")))?;
        let mut args: Vec<String> = vec![
            "start".into(),
            "--kubeconfig".into(),
            path.display().to_string(),
            "--resourcelock-namespace".into(),
            "openshift-machine-config-operator".into(),
            "--metrics-listen-address".into(),
            metrics.to_string(),
        ];
        // release-4.12's controller reads no feature gates and has no such flag.
        if String::from_utf8_lossy(&help.stdout).contains("--payload-version") {
            args.extend(["--payload-version".into(), payload_version.to_string()]);
        }
        args.extend(self.args.iter().cloned());
        let log = dir.join("machine-config-controller.log");
        let file = std::fs::File::create(&log).map_err(|e| fail(format!("{}: {e}", log.display())))?;
        let err = file.try_clone().map_err(|e| fail(e.to_string()))?;
        let child = tokio::process::Command::new(&self.binary)
            .args(&args)
            .stdout(file)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| fail(e.to_string()))?;
        Ok(RunningController {
            _child: child,
            metrics,
            log,
        })
    }
}

/// `version.Raw` of `MachineConfigController <Raw>-<Hash>` (cmd/machine-config-controller/version.go).
fn raw_version(printed: &str) -> Option<String> {
    let both = printed.split_whitespace().nth(1)?;
    Some(
        both.strip_suffix("-was-not-built-properly")
            .or_else(|| both.rsplit_once('-').map(|(raw, _)| raw))
            .unwrap_or(both)
            .to_string(),
    )
}

/// Whether the upstream controller has acted on what the API holds now, or what it has not yet
/// acted on: its template controller on the ControllerConfig's generation
/// (`status.observedGeneration`, `TemplateControllerCompleted`), and its render controller on
/// each pool's MachineConfigs — the pool targets a rendered config made from exactly the
/// MachineConfigs its selector picks, whose files, units, kernel arguments, FIPS, kernel type and
/// extensions are theirs merged in name order (a later MachineConfig's file replaces an
/// earlier one's: release-4.16 pkg/controller/common/helpers.go MergeMachineConfigs) and its node
/// controller has synced the pool since, or the pool says the render failed (RenderDegraded). A pool with the empty selector is not rendered
/// (render_controller.go, SelectingAll).
pub async fn caught_up(client: &kube::Client) -> Result<(), String> {
    let cc = controller_configs(client)
        .get("machine-config-controller")
        .await
        .map_err(|e| format!("controllerconfig machine-config-controller: {e}"))?;
    let status = &cc.data["status"];
    let completed = status["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "TemplateControllerCompleted" && c["status"] == "True")
    });
    if status["observedGeneration"] != json!(cc.metadata.generation) || !completed {
        return Err(format!(
            "the template controller has not completed ControllerConfig generation {:?}: {}",
            cc.metadata.generation, status["conditions"]
        ));
    }
    let pools = machine_config_pools(client)
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("machineconfigpools: {e}"))?;
    let all = machine_configs(client)
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("machineconfigs: {e}"))?;
    let by_name: BTreeMap<String, Value> = all
        .iter()
        .map(|m| {
            (
                m.metadata.name.clone().unwrap_or_default(),
                serde_json::to_value(m).unwrap_or_default(),
            )
        })
        .collect();
    for pool in &pools {
        let name = pool.metadata.name.as_deref().unwrap_or("");
        let selector = &pool.data["spec"]["machineConfigSelector"];
        let empty = |key: &str| match &selector[key] {
            Value::Object(o) => o.is_empty(),
            Value::Array(a) => a.is_empty(),
            _ => true,
        };
        if empty("matchLabels") && empty("matchExpressions") {
            continue;
        }
        let sources: Vec<(&String, &Value)> = by_name
            .iter()
            .filter(|(_, mc)| super::mcc::selects(selector, &mc["metadata"]["labels"]))
            .collect();
        if sources.is_empty() {
            continue;
        }
        // A render that failed has been acted on: the pool says why (RenderDegraded).
        let render_failed = pool.data["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "RenderDegraded" && c["status"] == "True")
        });
        if render_failed {
            continue;
        }
        let target = pool.data["spec"]["configuration"]["name"].as_str().unwrap_or("");
        let Some(rendered) = by_name.get(target) else {
            return Err(format!("pool {name} targets {target:?}, not yet rendered"));
        };
        merged_matches(name, target, &sources, rendered)?;
        // The node controller has synced the pool since (its status carries the generation it
        // saw; a paused pool's pending-file gauge is set in that same sync, release-4.12
        // node_controller.go:778-787).
        let (generation, observed) = (
            pool.metadata.generation.unwrap_or(0),
            pool.data["status"]["observedGeneration"].as_i64().unwrap_or(0),
        );
        if observed < generation {
            return Err(format!(
                "the node controller has not synced pool {name} generation {generation} (status has {observed})"
            ));
        }
    }
    Ok(())
}

/// A JSON list of strings (a spec's kernel arguments, extensions), anything else as "".
fn strings(list: &Value) -> impl Iterator<Item = String> + '_ {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or("").to_string())
}

/// What a change can touch in MachineConfigs merged as the render controller merges them: a later
/// config's file, unit, kernel type and OS image win; kernel arguments and extensions gather; FIPS
/// is on if any asks for it.
#[derive(Debug, Default, PartialEq)]
struct Merged {
    files: BTreeMap<String, (Option<u32>, Option<String>)>,
    units: BTreeMap<String, (Option<bool>, Option<String>)>,
    kernel_arguments: BTreeSet<String>,
    fips: bool,
    kernel_type: String,
    os_image: String,
    extensions: BTreeSet<String>,
}

impl Merged {
    /// Merge in one more MachineConfig.
    fn add(&mut self, mc: &Value) -> Result<(), String> {
        let spec = MachineConfigSpec::of(mc).map_err(|e| format!("{}: {e}", mc["metadata"]["name"]))?;
        for f in spec.files() {
            self.files.insert(
                f.path.clone(),
                (f.mode, f.contents.as_ref().and_then(|c| c.source.clone())),
            );
        }
        for u in spec.units() {
            self.units.insert(u.name.clone(), (u.enabled, u.contents.clone()));
        }
        let raw = &mc["spec"];
        self.kernel_arguments.extend(strings(&raw["kernelArguments"]));
        self.fips |= raw["fips"].as_bool().unwrap_or(false);
        if let Some(t) = raw["kernelType"].as_str().filter(|t| !t.is_empty()) {
            self.kernel_type = t.to_string();
        }
        if let Some(url) = raw["osImageURL"].as_str().filter(|u| !u.is_empty()) {
            self.os_image = url.to_string();
        }
        self.extensions.extend(strings(&raw["extensions"]));
        Ok(())
    }

    /// How `rendered` differs from these sources merged, if it does. A kernel type or OS image
    /// no source names is the rendered config's own (the ControllerConfig's OS image).
    fn difference(&self, rendered: &Merged) -> Option<String> {
        if rendered.files != self.files {
            let differ: Vec<&String> = self
                .files
                .keys()
                .chain(rendered.files.keys())
                .filter(|p| self.files.get(*p) != rendered.files.get(*p))
                .collect();
            return Some(format!("files {differ:?} differ"));
        }
        if rendered.units != self.units {
            return Some("units differ".into());
        }
        if rendered.kernel_arguments != self.kernel_arguments {
            return Some(format!(
                "kernel arguments {:?}, its sources {:?}",
                rendered.kernel_arguments, self.kernel_arguments
            ));
        }
        if !self.os_image.is_empty() && rendered.os_image != self.os_image {
            return Some(format!(
                "OS image {:?}, its sources {:?}",
                rendered.os_image, self.os_image
            ));
        }
        if rendered.fips != self.fips {
            return Some("fips differs".into());
        }
        if !self.kernel_type.is_empty() && rendered.kernel_type != self.kernel_type {
            return Some(format!(
                "kernel type {:?}, its sources {:?}",
                rendered.kernel_type, self.kernel_type
            ));
        }
        if rendered.extensions != self.extensions {
            return Some(format!(
                "extensions {:?}, its sources {:?}",
                rendered.extensions, self.extensions
            ));
        }
        None
    }
}

/// Whether `rendered` is `sources` merged, by what a change can touch.
fn merged_matches(
    pool: &str,
    target: &str,
    sources: &[(&String, &Value)],
    rendered: &Value,
) -> Result<(), String> {
    let mut merged = Merged::default();
    for (_, mc) in sources {
        merged.add(mc)?;
    }
    let mut made = Merged::default();
    made.add(rendered)?;
    match merged.difference(&made) {
        None => Ok(()),
        Some(what) => Err(format!(
            "pool {pool}'s {target} is not its MachineConfigs merged: {what}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_raw_version_is_what_comes_before_the_hash() {
        let raw = |t: &str| raw_version(t);
        assert_eq!(
            raw("MachineConfigController v0.0.0-was-not-built-properly-was-not-built-properly\n").as_deref(),
            Some("v0.0.0-was-not-built-properly")
        );
        assert_eq!(
            raw("MachineConfigController v4.16.0-202411-7327bb2").as_deref(),
            Some("v4.16.0-202411")
        );
        assert_eq!(raw("nothing"), None);
    }

    fn mc(name: &str, files: &[(&str, &str)], kargs: &[&str]) -> Value {
        let files: Vec<Value> = files
            .iter()
            .map(|(p, d)| json!({"path": p, "mode": 420, "contents": {"source": format!("data:,{d}")}}))
            .collect();
        json!({"metadata": {"name": name}, "spec": {
            "config": {"ignition": {"version": "3.2.0"}, "storage": {"files": files}},
            "kernelArguments": kargs, "fips": false}})
    }

    /// A rendered config matches its sources merged in name order (a later file wins), and any
    /// difference a change can make — a file, a kernel argument — says the render is behind.
    #[test]
    fn a_rendered_config_is_caught_up_only_with_its_sources_merged() {
        let (a, b) = ("00-worker".to_string(), "99-worker-0".to_string());
        let base = mc(&a, &[("/etc/a", "1"), ("/etc/b", "1")], &[]);
        let user = mc(&b, &[("/etc/b", "2")], &["nosmt"]);
        let sources = [(&a, &base), (&b, &user)];
        let merged = mc(
            "rendered-worker-x",
            &[("/etc/a", "1"), ("/etc/b", "2")],
            &["nosmt"],
        );
        assert_eq!(
            merged_matches("worker", "rendered-worker-x", &sources, &merged),
            Ok(())
        );
        let stale_file = mc(
            "rendered-worker-x",
            &[("/etc/a", "1"), ("/etc/b", "1")],
            &["nosmt"],
        );
        let e = merged_matches("worker", "rendered-worker-x", &sources, &stale_file).unwrap_err();
        assert!(e.contains("/etc/b"), "{e}");
        let no_kargs = mc("rendered-worker-x", &[("/etc/a", "1"), ("/etc/b", "2")], &[]);
        let e = merged_matches("worker", "rendered-worker-x", &sources, &no_kargs).unwrap_err();
        assert!(e.contains("kernel arguments"), "{e}");
        let extra = mc(
            "rendered-worker-x",
            &[("/etc/a", "1"), ("/etc/b", "2"), ("/etc/gone", "x")],
            &["nosmt"],
        );
        assert!(merged_matches("worker", "rendered-worker-x", &sources, &extra).is_err());
    }
}
