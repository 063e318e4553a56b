//! The machine-config server: what a machine booting into a pool is served (upstream
//! `pkg/server/cluster_server.go` `GetConfig`), by the reference read from the API as upstream
//! reads it, or by upstream's own `machine-config-server` run beside the cluster
//! (`--server-binary`, [`super::upstream_server`]). Nodes at a scenario's start and nodes that
//! join later boot what it serves; seeding a node from it is `node::seed`'s.
//!
//! The rule every release shares: the pool's newest rendered config (`spec.configuration`) once
//! one of its nodes has it (`status.updatedMachineCount > 0`), its status config before that —
//! "this avoids deadlocks in situations where the old configuration broke somehow" — so a machine
//! scaled into a paused pool boots the config the pool's nodes run, not the one they are held
//! back from. What each release adds is [`ServerRule`].

use super::ClusterError;
use crate::mco::McoObject;
use crate::mco::api::{controller_configs, machine_config_pools, machine_configs};
use crate::mco::controller_config::ControllerConfigSpec;
use crate::mco::machine_config::{File, FileContents, MachineConfigSpec};
use crate::mco::names::{CA_BUNDLE_KEY, KUBECONFIG_DATA};
use crate::mco::pool::MachineConfigPool;
use crate::mco::{CLOUD_CA_PATH, KUBELET_CA_PATH};
use crate::profile::{Profile, ServerRule};
use base64::Engine;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

pub use crate::mco::served::Served;

/// The rendered config the server picks for `pool`.
pub fn pool_config(pool: &MachineConfigPool) -> &str {
    let status = pool.status.as_ref();
    match status {
        Some(s) if s.updated_machine_count > 0 => &pool.spec.configuration.name,
        Some(s) => &s.configuration.name,
        None => "",
    }
}

/// What the reference server serves a machine booting into `pool` now.
pub async fn serve(admin: &kube::Client, profile: Profile, pool: &str) -> Result<Served, ClusterError> {
    let object = machine_config_pools(admin)
        .get(pool)
        .await
        .map_err(|e| ClusterError::kube(format!("machineconfigpool {pool}"), e))?;
    let parsed = MachineConfigPool::of(&object)
        .map_err(|e| ClusterError::Fixture(format!("machineconfigpool {pool}: {e}")))?;
    let rendered = pool_config(&parsed).to_string();
    if rendered.is_empty() {
        // Upstream answers "could not fetch config" for a pool with no config yet.
        return Err(ClusterError::Fixture(format!(
            "machineconfigpool {pool} has no rendered config to serve yet"
        )));
    }
    let mc = machine_configs(admin)
        .get(&rendered)
        .await
        .map_err(|e| ClusterError::kube(format!("machineconfig {rendered}"), e))?;
    let spec = MachineConfigSpec::of(&mc.data)
        .map_err(|e| ClusterError::Fixture(format!("machineconfig {rendered}: {e}")))?;
    serve_config(admin, profile, rendered, spec).await
}

/// What the server adds to the rendered config `spec` (named `rendered`) for the release.
pub async fn serve_config(
    admin: &kube::Client,
    profile: Profile,
    rendered: String,
    config: MachineConfigSpec,
) -> Result<Served, ClusterError> {
    let mut boot = config.clone();
    let ServerRule {
        controller_config_cas,
        kubeconfig_ca_from_kubeconfig_data,
    } = profile.traits().server;
    if controller_config_cas {
        let cc = controller_configs(admin)
            .get("machine-config-controller")
            .await
            .map_err(|e| ClusterError::kube("controllerconfig machine-config-controller".into(), e))?;
        let spec = ControllerConfigSpec::of(&cc.data).map_err(|e| {
            ClusterError::Fixture(format!("controllerconfig machine-config-controller spec: {e}"))
        })?;
        for (path, field) in [
            (KUBELET_CA_PATH, "kubeAPIServerServingCAData"),
            (CLOUD_CA_PATH, "cloudProviderCAData"),
        ] {
            let data = spec
                .data(field)
                .map_err(|e| ClusterError::Fixture(format!("controllerconfig {field}: {e}")))?;
            add_or_replace(&mut boot, path, &data);
        }
    }
    let kubeconfig_ca = if kubeconfig_ca_from_kubeconfig_data {
        kubeconfig_data_ca(admin).await?
    } else {
        None
    };
    Ok(Served {
        rendered,
        config,
        boot,
        kubeconfig_ca,
    })
}

/// `kubeconfig-data`'s `ca-bundle.crt`, when the ConfigMap exists (the server logs and goes on
/// without it otherwise).
async fn kubeconfig_data_ca(admin: &kube::Client) -> Result<Option<String>, ClusterError> {
    let (ns, name) = KUBECONFIG_DATA;
    let found = Api::<ConfigMap>::namespaced(admin.clone(), ns)
        .get_opt(name)
        .await
        .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))?;
    Ok(found
        .and_then(|cm| cm.binary_data)
        .and_then(|data| data.get(CA_BUNDLE_KEY).cloned())
        .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned()))
}

/// Upstream's `addDataAndMaybeAppendToIgnition`: an existing entry gets the new contents, a
/// missing one is added (mode 0644, overwrite), and empty data changes nothing.
fn add_or_replace(spec: &mut MachineConfigSpec, path: &str, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let source = format!(
        "data:text/plain;charset=utf-8;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(data)
    );
    let files = &mut spec.config.storage.files;
    match files.iter_mut().find(|f| f.path == path) {
        Some(file) => file.contents.get_or_insert_with(Default::default).source = Some(source),
        None => files.push(File {
            path: path.to_string(),
            mode: Some(0o644),
            contents: Some(FileContents {
                source: Some(source),
                other: Default::default(),
            }),
            other: [("overwrite".to_string(), serde_json::Value::Bool(true))]
                .into_iter()
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pool(spec: &str, status: &str, updated: i32) -> MachineConfigPool {
        MachineConfigPool::from_json(&json!({
            "metadata": {"name": "worker"},
            "spec": {"configuration": {"name": spec}},
            "status": {"configuration": {"name": status}, "updatedMachineCount": updated},
        }))
        .unwrap()
    }

    #[test]
    fn a_pool_none_of_whose_nodes_has_its_newest_config_serves_its_status_config() {
        assert_eq!(
            pool_config(&pool("rendered-new", "rendered-old", 0)),
            "rendered-old"
        );
        assert_eq!(
            pool_config(&pool("rendered-new", "rendered-old", 1)),
            "rendered-new"
        );
    }

    #[test]
    fn an_entry_is_replaced_in_place_and_a_missing_one_added_but_never_emptied() {
        let mut spec = MachineConfigSpec::of(&json!({"spec": {"config": {"storage": {"files": [
            {"path": "/a", "mode": 384, "contents": {"source": "data:,old"}},
        ]}}}}))
        .unwrap();
        add_or_replace(&mut spec, "/a", b"new");
        add_or_replace(&mut spec, "/b", b"added");
        add_or_replace(&mut spec, "/c", b"");
        assert_eq!(spec.file("/a").unwrap().data(), b"new");
        assert_eq!(spec.file("/a").unwrap().mode, Some(0o600), "the mode stays");
        assert_eq!(spec.file("/b").unwrap().data(), b"added");
        assert_eq!(spec.file("/b").unwrap().mode, Some(0o644));
        assert!(spec.file("/c").is_none());
        add_or_replace(&mut spec, "/a", b"");
        assert_eq!(spec.file("/a").unwrap().data(), b"new");
    }
}
