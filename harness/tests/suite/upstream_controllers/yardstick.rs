//! The render yardstick: upstream's controller started on a cluster the reference has settled,
//! its rendered configs, its certificate status and its answer to a forced kubelet signer
//! rotation judged against the reference's. Which tests run it, and when they skip, is the
//! parent's.

use super::opt_in;
use crate::common::Controllers;
use harness::Profile;
use harness::cluster::operator::controller_configs;
use harness::cluster::upstream::{RunningController, UpstreamController};
use harness::mco::api::{machine_config_pools, machine_configs};
use harness::mco::machine_config::MachineConfigSpec;
use harness::profile::KubeletCaSource;
use harness::steps::oracle::ignition_file;
use kube::api::ListParams;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long upstream's controller may take to take its lease, start its informers and render
/// (its render controller waits 5 s for the template controller, node_controller.go:1012).
const DEADLINE: Duration = Duration::from_secs(180);

const GENERATED_BY_CONTROLLER: &str = "machineconfiguration.openshift.io/generated-by-controller-version";

/// The MachineConfig's files as (mode, contents) by path, decoded by the oracle's reader.
fn files(mc: &Value) -> BTreeMap<String, (u32, Vec<u8>)> {
    let spec = MachineConfigSpec::of(mc).unwrap();
    spec.files()
        .iter()
        .map(|f| {
            let (path, contents, mode) = ignition_file(f).unwrap();
            (path, (mode, contents))
        })
        .collect()
}

/// The rendered config the pool targets, once upstream's render controller has written it (its
/// generated-by-controller-version is not the reference's).
async fn upstream_rendered(
    c: &Controllers,
    pool: &str,
    not: &[String],
    up: &RunningController,
) -> (String, Value) {
    let probe = || async {
        let p = machine_config_pools(&c.client)
            .get(pool)
            .await
            .map_err(|e| e.to_string())?;
        let name = p.data["spec"]["configuration"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if name.is_empty() || not.contains(&name) {
            return Err(format!("pool {pool} targets {name:?}"));
        }
        let mc = machine_configs(&c.client)
            .get(&name)
            .await
            .map_err(|e| e.to_string())?;
        let by = mc
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(GENERATED_BY_CONTROLLER))
            .cloned();
        if by.as_deref() == Some(harness::cluster::render::CONTROLLER_VERSION) {
            return Err(format!("pool {pool} targets the reference's {name}"));
        }
        Ok((name, serde_json::to_value(&mc).unwrap()))
    };
    harness::wait::eventually(DEADLINE, probe)
        .await
        .unwrap_or_else(|e| panic!("{e}\nupstream's log:\n{}", up.tail(30)))
}

async fn rendered_names(c: &Controllers, pool: &str) -> Vec<String> {
    let prefix = format!("rendered-{pool}-");
    let mut names: Vec<String> = machine_configs(&c.client)
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| m.metadata.name)
        .filter(|n| n.starts_with(&prefix))
        .collect();
    names.sort();
    names
}

/// Signers and operator until quiet: the cluster side that is not the machine-config controller.
async fn settle_operators(c: &Controllers) {
    for _ in 0..20 {
        let mut changed = !c.signers.reconcile().await.unwrap().is_empty();
        changed |= c.operator.reconcile().await.unwrap();
        if !changed {
            return;
        }
    }
    panic!("the signers and operator did not settle in 20 passes");
}

pub(super) async fn judge(release: &str, profile: Profile) {
    let Some((binary, templates)) = opt_in(release) else {
        return;
    };
    let c = Controllers::start(profile, "fresh-install", true).await;
    c.settle().await;
    let reference_00 =
        serde_json::to_value(machine_configs(&c.client).get("00-worker").await.unwrap()).unwrap();
    let reference_rendered = rendered_names(&c, "worker").await;
    let cc = controller_configs(&c.client)
        .get("machine-config-controller")
        .await
        .unwrap();
    let reference_certificates = cc.data["status"]["controllerCertificates"].clone();

    // The harness as the operator of the controller's build, as `--controller-binary` runs it.
    let dir = tempfile::tempdir().unwrap();
    let controller = UpstreamController {
        binary,
        args: vec![format!("--templates={}", templates.display())],
    };
    let up = controller
        .start(
            &c.client,
            &c.server.kubeconfig(c.server.admin_identity()),
            profile.payload_version(),
            dir.path(),
        )
        .await
        .unwrap();
    for pool in ["master", "worker"] {
        upstream_rendered(&c, pool, &[], &up).await;
    }
    let (first, rendered) = upstream_rendered(&c, "worker", &reference_rendered, &up).await;

    // Every file the reference templates is upstream's, mode and contents alike.
    let upstream_files = files(&rendered);
    let mut differ = Vec::new();
    for (path, (mode, contents)) in files(&reference_00) {
        match upstream_files.get(&path) {
            None => differ.push(format!("{path}: upstream renders no such file")),
            Some((m, data)) if (*m, data) != (mode, &contents) => differ.push(format!(
                "{path}: reference {mode:04o} {:?}, upstream {m:04o} {:?}",
                String::from_utf8_lossy(&contents),
                String::from_utf8_lossy(data)
            )),
            Some(_) => {}
        }
    }
    // And every certificate file upstream's templates render, the reference's do.
    let reference_files = files(&reference_00);
    for path in upstream_files.keys() {
        if (path.ends_with(".crt") || path.ends_with(".pem")) && !reference_files.contains_key(path) {
            differ.push(format!("{path}: upstream renders it, the reference does not"));
        }
    }
    assert!(
        differ.is_empty(),
        "{release}: the reference's templates differ from upstream's:\n{}",
        differ.join("\n")
    );

    // The template controller's certificate status (4.14+), as the reference wrote it.
    let status = || async {
        let cc = controller_configs(&c.client)
            .get("machine-config-controller")
            .await
            .map_err(|e| e.to_string())?;
        let done = cc.data["status"]["observedGeneration"] == json!(cc.metadata.generation)
            && cc.data["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "TemplateControllerCompleted" && c["status"] == "True")
            });
        if done {
            Ok(cc)
        } else {
            Err(format!("status {}", cc.data["status"]))
        }
    };
    let cc = harness::wait::eventually(DEADLINE, status)
        .await
        .unwrap_or_else(|e| panic!("{e}\nupstream's log:\n{}", up.tail(30)));
    assert_eq!(
        cc.data["status"]["controllerCertificates"], reference_certificates,
        "{release}: upstream's status.controllerCertificates (left) against the reference's (right)"
    );

    // A forced rotation of the kubelet signer, through the operator into ControllerConfig.
    let zero_worker_rv = machine_configs(&c.client)
        .get("00-worker")
        .await
        .unwrap()
        .metadata
        .resource_version;
    c.force_kubelet_signer_rotation().await;
    settle_operators(&c).await;
    let cc = controller_configs(&c.client)
        .get("machine-config-controller")
        .await
        .unwrap();
    let new_bundle = harness::mco::controller_config::ControllerConfigSpec::of(&cc.data)
        .unwrap()
        .data("kubeAPIServerServingCAData")
        .unwrap();
    if matches!(profile.traits().kubelet_ca, KubeletCaSource::RenderedConfig) {
        let mut seen = vec![first.clone()];
        seen.extend(reference_rendered.iter().cloned());
        let (second, rendered) = upstream_rendered(&c, "worker", &seen, &up).await;
        let kubelet_ca = files(&rendered)
            .remove("/etc/kubernetes/kubelet-ca.crt")
            .map(|(_, data)| data);
        assert_eq!(
            kubelet_ca.as_deref(),
            Some(new_bundle.as_slice()),
            "{release}: {second}'s kubelet-ca.crt is not the ControllerConfig's new bundle"
        );
    } else {
        harness::wait::eventually(DEADLINE, status)
            .await
            .unwrap_or_else(|e| panic!("{e}\nupstream's log:\n{}", up.tail(30)));
        let now = machine_configs(&c.client)
            .get("00-worker")
            .await
            .unwrap()
            .metadata
            .resource_version;
        assert_eq!(now, zero_worker_rv, "{release}: the rotation rewrote 00-worker");
        let mut expected = reference_rendered.clone();
        expected.push(first.clone());
        expected.sort();
        assert_eq!(
            rendered_names(&c, "worker").await,
            expected,
            "{release}: a rendered config came of the rotation"
        );
    }
}
