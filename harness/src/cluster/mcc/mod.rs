//! The machine-config controller: template, render, node and drain controllers in one pass,
//! through the API server (MCO `pkg/controller/{template,render,node,drain}`).
//!
//! - template: `00-<role>` from ControllerConfig (`render::template_machine_config`), and
//! - render: each pool's MachineConfigs merged into `rendered-<pool>-<hash>`, and the pool's
//!   `spec.configuration` pointed at it, paused or not (both in `configs`);
//! - node: `desiredConfig` on the nodes `pools::nodes_to_update` names, and the pool status;
//! - drain: `lastAppliedDrain` answering `desiredDrain`, cordoning for `drain-…`.

mod configs;
mod view;

pub use view::NODE_ANNOTATIONS_READ;
pub(crate) use view::selects;

use super::metrics::ControllerMetrics;
use super::operator::{CONTROLLER_CONFIG, controller_configs};
use super::pools::{NodeView, PoolView, drain_answer, max_unavailable, nodes_to_update, pool_status};
use super::render::Templates;
use super::{ClusterError, ClusterLog, NodeCache};
use crate::mco::KUBELET_CA_PATH;
use crate::mco::McoObject;
pub use crate::mco::api::{machine_config_pools, machine_configs, mco_api};
use crate::mco::controller_config::{ControllerCertificate, ControllerConfigSpec, ControllerConfigStatus};
use crate::mco::machine_config::MachineConfig;
use crate::mco::machine_config::changed_files;
use crate::mco::pool::MachineConfigPool;
use crate::mco::{DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN};
use crate::pki::{Clock, SimClock};
use crate::pki::{parse_certs, rfc3339};
use crate::profile::{ControllerCertificates, PausedPoolSignal, Profile};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use std::sync::Arc;
use view::{ApiView, cert_expirys, certificate_entries, node_view, selects_labels};

fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).expect("a DynamicObject serialises")
}

/// A MachineConfig object as the typed one; an error names the one that does not read as one.
fn machine_config_of(object: &DynamicObject) -> Result<MachineConfig, ClusterError> {
    MachineConfig::of(object).map_err(|e| {
        ClusterError::Fixture(format!(
            "machineconfig {}: {e}",
            object.metadata.name.as_deref().unwrap_or("")
        ))
    })
}

/// A pool object as the typed pool; an error names the pool that does not read as one.
fn pool_of(object: &DynamicObject) -> Result<MachineConfigPool, ClusterError> {
    MachineConfigPool::of(object).map_err(|e| {
        ClusterError::Fixture(format!(
            "machineconfigpool {}: {e}",
            object.metadata.name.as_deref().unwrap_or("")
        ))
    })
}

pub struct MachineConfigController {
    client: kube::Client,
    templates: Arc<Templates>,
    profile: Profile,
    clock: SimClock,
    log: ClusterLog,
    metrics: ControllerMetrics,
    /// The Nodes as the watch shows them (a pass reads them there, not by a list).
    node_cache: NodeCache,
    /// The last `status.controllerCertificates` worked out, and the bundles it came from: a
    /// pass parses the ControllerConfig's certificates only when they changed.
    certificates: std::sync::Mutex<Option<(CertificateInputs, Vec<ControllerCertificate>)>>,
}

/// The bundles `status.controllerCertificates` is made from: each one's encoded data and its
/// `bundleFile`, and whether the entries carry dates.
type CertificateInputs = (Vec<(String, String)>, bool);

impl MachineConfigController {
    pub fn new(
        client: kube::Client,
        templates: Arc<Templates>,
        profile: Profile,
        clock: SimClock,
        log: ClusterLog,
        node_cache: NodeCache,
    ) -> Self {
        MachineConfigController {
            client,
            templates,
            profile,
            clock,
            log,
            metrics: ControllerMetrics::default(),
            node_cache,
            certificates: Default::default(),
        }
    }

    /// The Nodes as this controller reads them.
    pub fn node_cache(&self) -> &NodeCache {
        &self.node_cache
    }

    /// The gauges this controller sets, for its `/metrics` endpoint.
    pub fn metrics(&self) -> ControllerMetrics {
        self.metrics.clone()
    }

    fn note(&self, line: String) {
        self.log
            .record(self.clock.now(), &format!("machine-config-controller: {line}"));
    }

    /// One pass of all four controllers; true if anything was written. The pass reads the
    /// API state once (three requests, and the Nodes from the watch's cache once it shows the
    /// controller's own earlier writes) and keeps its own writes in that view, so a later
    /// controller of the pass sees what an earlier one wrote, as the informers would.
    pub async fn reconcile(&self) -> Result<bool, ClusterError> {
        let mut view = self.read().await?;
        let mut changed = self.template(&mut view).await?;
        match self.profile.traits().controller_certificates {
            ControllerCertificates::Absent => {}
            ControllerCertificates::WithoutDates => {
                changed |= self.controller_certificates(&mut view, false).await?;
            }
            ControllerCertificates::WithDates => {
                changed |= self.controller_certificates(&mut view, true).await?;
            }
        }
        changed |= self.render(&mut view).await?;
        changed |= self.nodes(&mut view).await?;
        changed |= self.drain(&mut view).await?;
        Ok(changed)
    }

    async fn read(&self) -> Result<ApiView, ClusterError> {
        let every = ListParams::default();
        let cc = controller_configs(&self.client)
            .get(CONTROLLER_CONFIG)
            .await
            .map_err(|e| ClusterError::kube(format!("controllerconfig {CONTROLLER_CONFIG}"), e))?;
        // One whose spec does not read as a MachineConfig fails the render of every pool that
        // selects it (render below).
        let (mut readable, mut unreadable) = (Vec::new(), Vec::new());
        for mc in machine_configs(&self.client)
            .list(&every)
            .await
            .map_err(|e| ClusterError::kube("machineconfigs".into(), e))?
            .iter()
        {
            match MachineConfig::of(mc) {
                Ok(typed) => readable.push(typed),
                Err(e) => unreadable.push((
                    mc.metadata.name.clone().unwrap_or_default(),
                    serde_json::to_value(&mc.metadata.labels).unwrap_or(Value::Null),
                    e.to_string(),
                )),
            }
        }
        let pools = machine_config_pools(&self.client)
            .list(&every)
            .await
            .map_err(|e| ClusterError::kube("machineconfigpools".into(), e))?
            .iter()
            .map(pool_of)
            .collect::<Result<_, _>>()?;
        self.node_cache.caught_up().await.map_err(ClusterError::Stale)?;
        let nodes = self.node_cache.nodes();
        Ok(ApiView {
            controller_config: to_value(&cc),
            machine_configs: readable,
            unreadable,
            render_failures: Default::default(),
            pools,
            nodes,
        })
    }

    async fn nodes(&self, view: &mut ApiView) -> Result<bool, ClusterError> {
        let pools = machine_config_pools(&self.client);
        let nodes: Api<Node> = Api::all(self.client.clone());
        let mut changed = false;
        for index in 0..view.pools.len() {
            let pool = view.pools[index].clone();
            let selector = &pool.spec.node_selector;
            let members: Vec<usize> = (0..view.nodes.len())
                .filter(|&i| selects_labels(selector, view.nodes[i].metadata.labels.as_ref()))
                .collect();
            let name = pool.name().to_string();
            let max = max_unavailable(&pool.spec.max_unavailable, members.len());
            if let Err(e) = &max {
                self.note(format!("pool {name}: {e}"));
            }
            let pool_view = PoolView {
                name,
                paused: pool.spec.paused,
                max_unavailable: max.as_ref().copied().unwrap_or(0),
                target: pool.spec.configuration.name.clone(),
                current: pool.current().to_string(),
                render_failure: view.render_failures.get(pool.name()).cloned(),
                update_line_prefix: self.profile.traits().pool_update_line_prefix,
            };
            let views: Vec<NodeView> = members.iter().map(|&i| node_view(&view.nodes[i])).collect();
            // An invalid maxUnavailable (0 above) moves no node: upstream's sync fails there.
            for name in nodes_to_update(&pool_view, &views) {
                let patch = json!({"metadata": {"annotations": {DESIRED_CONFIG: pool_view.target}}});
                let written = nodes
                    .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map_err(|e| ClusterError::kube(format!("node {name}"), e))?;
                self.node_cache.wrote(&written);
                view.put_node(written);
                self.note(format!("node {name}: desiredConfig {}", pool_view.target));
                changed = true;
            }
            let views: Vec<NodeView> = members.iter().map(|&i| node_view(&view.nodes[i])).collect();
            let mut status = pool_status(&pool_view, &views, pool.metadata.generation.unwrap_or(0));
            // The paused-pool signal is the node controller's, which an unconfigured pool skips.
            if !pool_view.target.is_empty() {
                match self.profile.traits().paused_pool_signal {
                    PausedPoolSignal::PendingFileGauge => self.pending_file_metrics(view, &pool_view),
                    PausedPoolSignal::CertExpirys => {
                        let certificates = ControllerConfigStatus::of(&view.controller_config)
                            .map(|s| s.controller_certificates)
                            .unwrap_or_default();
                        status.cert_expirys = Some(cert_expirys(&certificates))
                    }
                }
            }
            if pool.status.as_ref() != Some(&status) {
                let written = pools
                    .patch_status(
                        &pool_view.name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": status})),
                    )
                    .await
                    .map_err(|e| {
                        ClusterError::kube(format!("machineconfigpool {} status", pool_view.name), e)
                    })?;
                view.pools[index] = pool_of(&written)?;
                changed = true;
            }
        }
        Ok(changed)
    }

    /// 4.14+ template controller (`updateControllerConfigCerts`): every certificate of the
    /// ControllerConfig's bundles in `status.controllerCertificates`.
    async fn controller_certificates(&self, view: &mut ApiView, dates: bool) -> Result<bool, ClusterError> {
        let spec = ControllerConfigSpec::of(&view.controller_config)
            .map_err(|e| ClusterError::Fixture(format!("controllerconfig {CONTROLLER_CONFIG}: {e}")))?;
        let mut bundles = Vec::new();
        for (field, bundle_file) in [
            ("kubeAPIServerServingCAData", "KubeAPIServerServingCAData"),
            ("cloudProviderCAData", "CloudProviderCAData"),
            ("rootCAData", "RootCAData"),
            ("additionalTrustBundle", "AdditionalTrustBundle"),
        ] {
            if let Some(encoded) = spec.other.get(field).and_then(Value::as_str) {
                bundles.push((encoded.to_string(), bundle_file.to_string()));
            }
        }
        for registry in spec.registry_bundles() {
            bundles.push((registry.data.clone(), registry.file.clone()));
        }
        let inputs = (bundles, dates);
        let certificates = {
            let mut memo = self.certificates.lock().unwrap_or_else(|p| p.into_inner());
            match memo.as_ref() {
                Some((seen, entries)) if *seen == inputs => entries.clone(),
                _ => {
                    let entries: Vec<ControllerCertificate> = inputs
                        .0
                        .iter()
                        .flat_map(|(encoded, file)| certificate_entries(Some(encoded), file, dates))
                        .collect();
                    *memo = Some((inputs, entries.clone()));
                    entries
                }
            }
        };
        // A status that does not read as one is written again.
        if ControllerConfigStatus::of(&view.controller_config)
            .is_ok_and(|s| s.controller_certificates == certificates)
        {
            return Ok(false);
        }
        let written = controller_configs(&self.client)
            .patch_status(
                CONTROLLER_CONFIG,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"controllerCertificates": certificates}})),
            )
            .await
            .map_err(|e| ClusterError::kube(format!("controllerconfig {CONTROLLER_CONFIG} status"), e))?;
        view.controller_config = to_value(&written);
        Ok(true)
    }

    /// 4.11–4.12 `setPendingFileMetrics`: a paused pool whose next config changes kubelet-ca.crt
    /// sets the gauge to the expiry of the newest kube-apiserver-to-kubelet signer in the config
    /// its nodes still run; an unpaused pool's gauge is 0.
    fn pending_file_metrics(&self, view: &ApiView, pool: &PoolView) {
        if !pool.paused {
            self.metrics.set_paused_pool_kubelet_ca(&pool.name, 0.0);
            return;
        }
        if pool.target == pool.current || pool.current.is_empty() {
            return;
        }
        let (Some(current), Some(target)) = (
            view.machine_config(&pool.current),
            view.machine_config(&pool.target),
        ) else {
            return;
        };
        let (current, target) = (&current.spec, &target.spec);
        if !changed_files(current, target)
            .iter()
            .any(|p| p == KUBELET_CA_PATH)
        {
            return;
        }
        let bundle = current
            .file(KUBELET_CA_PATH)
            .map(|f| String::from_utf8_lossy(&f.data()).into_owned())
            .unwrap_or_default();
        let Some(longest) = parse_certs(&bundle)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| {
                c.common_name
                    .starts_with("openshift-kube-apiserver-operator_kube-apiserver-to-kubelet-signer@")
                    || c.common_name.starts_with("kube-apiserver-to-kubelet-signer")
            })
            .max_by_key(|c| c.not_after)
        else {
            return;
        };
        let value = longest.not_after.unix_timestamp() as f64;
        if self.metrics.paused_pool_kubelet_ca(&pool.name) != Some(value) {
            self.note(format!(
                "Kubelet CA is stuck in paused pool {}. Setting metric to expiry date of {} ({})",
                pool.name,
                rfc3339(longest.not_after),
                longest.subject
            ));
        }
        self.metrics.set_paused_pool_kubelet_ca(&pool.name, value);
    }

    async fn drain(&self, view: &mut ApiView) -> Result<bool, ClusterError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let mut changed = false;
        for index in 0..view.nodes.len() {
            let node = &view.nodes[index];
            let a = node.metadata.annotations.as_ref();
            let get = |k: &str| a.and_then(|a| a.get(k)).map(String::as_str);
            let Some((applied, cordon)) = drain_answer(get(DESIRED_DRAIN), get(LAST_APPLIED_DRAIN)) else {
                continue;
            };
            let name = node.metadata.name.clone().unwrap_or_default();
            let patch = json!({"metadata": {"annotations": {LAST_APPLIED_DRAIN: applied}}, "spec": {"unschedulable": cordon}});
            let written = nodes
                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .map_err(|e| ClusterError::kube(format!("node {name}"), e))?;
            self.node_cache.wrote(&written);
            view.nodes[index] = Arc::new(written);
            self.note(format!("node {name}: {applied}"));
            changed = true;
        }
        Ok(changed)
    }
}
