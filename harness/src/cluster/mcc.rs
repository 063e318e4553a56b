//! The machine-config controller: template, render, node and drain controllers in one pass,
//! through the API server (MCO `pkg/controller/{template,render,node,drain}`).
//!
//! - template: `00-<role>` from ControllerConfig (`render::template_machine_config`);
//! - render: each pool's MachineConfigs merged into `rendered-<pool>-<hash>`, and the pool's
//!   `spec.configuration` pointed at it, paused or not;
//! - node: `desiredConfig` on the nodes `pools::nodes_to_update` names, and the pool status;
//! - drain: `lastAppliedDrain` answering `desiredDrain`, cordoning for `drain-…`.

use super::names::FIELD_MANAGER;
use super::operator::{CONTROLLER_CONFIG, controller_configs};
use super::pools::{NodeView, PoolView, drain_answer, nodes_to_update, pool_status};
use super::render::{
    CONTROLLER_VERSION, GENERATED_BY, Templates, merge_machine_configs, rendered_name,
    template_machine_config,
};
use super::{ClusterError, ClusterLog};
use crate::mco::{CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN, STATE};
use crate::pki::{Clock, SimClock};
use crate::profile::Profile;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

pub fn mco_api(client: &kube::Client, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("machineconfiguration.openshift.io", "v1", kind);
    Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
}

pub fn machine_configs(client: &kube::Client) -> Api<DynamicObject> {
    mco_api(client, "MachineConfig")
}

pub fn machine_config_pools(client: &kube::Client) -> Api<DynamicObject> {
    mco_api(client, "MachineConfigPool")
}

fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).expect("a DynamicObject serialises")
}

fn match_labels(selector: &Value) -> String {
    selector["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

pub struct MachineConfigController {
    client: kube::Client,
    templates: Arc<Templates>,
    profile: Profile,
    clock: SimClock,
    log: ClusterLog,
}

impl MachineConfigController {
    pub fn new(
        client: kube::Client,
        templates: Arc<Templates>,
        profile: Profile,
        clock: SimClock,
        log: ClusterLog,
    ) -> Self {
        MachineConfigController {
            client,
            templates,
            profile,
            clock,
            log,
        }
    }

    fn note(&self, line: String) {
        self.log
            .record(self.clock.now(), &format!("machine-config-controller: {line}"));
    }

    /// One pass of all four controllers; true if anything was written.
    pub async fn reconcile(&self) -> Result<bool, ClusterError> {
        let mut changed = self.template().await?;
        changed |= self.render().await?;
        changed |= self.nodes().await?;
        changed |= self.drain().await?;
        Ok(changed)
    }

    async fn template(&self) -> Result<bool, ClusterError> {
        let cc = controller_configs(&self.client)
            .get(CONTROLLER_CONFIG)
            .await
            .map_err(|e| ClusterError::kube(format!("controllerconfig {CONTROLLER_CONFIG}"), e))?;
        let api = machine_configs(&self.client);
        let mut changed = false;
        for role in &self.templates.roles {
            let desired = template_machine_config(&self.templates, self.profile, role, &cc.data["spec"]);
            let name = format!("00-{role}");
            let existing = api
                .get_opt(&name)
                .await
                .map_err(|e| ClusterError::kube(format!("machineconfig {name}"), e))?;
            if existing.is_some_and(|e| to_value(&e)["spec"] == desired["spec"]) {
                continue;
            }
            api.patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&desired),
            )
            .await
            .map_err(|e| ClusterError::kube(format!("machineconfig {name}"), e))?;
            self.note(format!("templated machineconfig {name}"));
            changed = true;
        }
        Ok(changed)
    }

    async fn render(&self) -> Result<bool, ClusterError> {
        let (mcs, pools) = (machine_configs(&self.client), machine_config_pools(&self.client));
        let mut changed = false;
        let pool_list = pools
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("machineconfigpools".into(), e))?;
        for pool in pool_list {
            let pool = to_value(&pool);
            let pool_name = pool["metadata"]["name"].as_str().unwrap_or("").to_string();
            let selector = match_labels(&pool["spec"]["machineConfigSelector"]);
            let selected = mcs
                .list(&ListParams::default().labels(&selector))
                .await
                .map_err(|e| ClusterError::kube(format!("machineconfigs for pool {pool_name}"), e))?;
            let sources: Vec<Value> = selected.iter().map(to_value).collect();
            if sources.is_empty() {
                continue;
            }
            let spec = merge_machine_configs(&sources);
            let name = rendered_name(&pool_name, &spec);
            if mcs
                .get_opt(&name)
                .await
                .map_err(|e| ClusterError::kube(format!("machineconfig {name}"), e))?
                .is_none()
            {
                let rendered = json!({
                    "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                    "metadata": {"name": name, "annotations": {GENERATED_BY: CONTROLLER_VERSION},
                        "ownerReferences": [{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
                            "name": pool_name, "uid": pool["metadata"]["uid"], "controller": true}]},
                    "spec": spec,
                });
                mcs.patch(
                    &name,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(&rendered),
                )
                .await
                .map_err(|e| ClusterError::kube(format!("machineconfig {name}"), e))?;
                self.note(format!("rendered {name} for pool {pool_name}"));
                changed = true;
            }
            if pool["spec"]["configuration"]["name"] != name {
                let source: Vec<Value> = sources
                    .iter()
                    .map(|s| json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": s["metadata"]["name"]}))
                    .collect();
                let patch = json!({"spec": {"configuration": {"name": name, "source": source}}});
                pools
                    .patch(&pool_name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map_err(|e| ClusterError::kube(format!("machineconfigpool {pool_name}"), e))?;
                self.note(format!("pool {pool_name} now targets {name}"));
                changed = true;
            }
        }
        Ok(changed)
    }

    async fn nodes(&self) -> Result<bool, ClusterError> {
        let pools = machine_config_pools(&self.client);
        let nodes: Api<Node> = Api::all(self.client.clone());
        let mut changed = false;
        let pool_list = pools
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("machineconfigpools".into(), e))?;
        for pool_object in pool_list {
            let pool = to_value(&pool_object);
            let view = PoolView {
                name: pool["metadata"]["name"].as_str().unwrap_or("").to_string(),
                paused: pool["spec"]["paused"].as_bool().unwrap_or(false),
                max_unavailable: pool["spec"]["maxUnavailable"].as_u64().unwrap_or(1) as usize,
                target: pool["spec"]["configuration"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                current: pool["status"]["configuration"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            };
            let members = nodes
                .list(&ListParams::default().labels(&match_labels(&pool["spec"]["nodeSelector"])))
                .await
                .map_err(|e| ClusterError::kube(format!("nodes of pool {}", view.name), e))?;
            let views: Vec<NodeView> = members
                .iter()
                .map(|n| {
                    let a: BTreeMap<String, String> = n.metadata.annotations.clone().unwrap_or_default();
                    let get = |k: &str| a.get(k).cloned().unwrap_or_default();
                    NodeView {
                        name: n.metadata.name.clone().unwrap_or_default(),
                        current: get(CURRENT_CONFIG),
                        desired: get(DESIRED_CONFIG),
                        state: get(STATE),
                    }
                })
                .collect();
            for name in nodes_to_update(&view, &views) {
                let patch = json!({"metadata": {"annotations": {DESIRED_CONFIG: view.target}}});
                nodes
                    .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map_err(|e| ClusterError::kube(format!("node {name}"), e))?;
                self.note(format!("node {name}: desiredConfig {}", view.target));
                changed = true;
            }
            let status = pool_status(
                &view,
                &views,
                pool["metadata"]["generation"].as_i64().unwrap_or(0),
            );
            if pool["status"] != status {
                pools
                    .patch_status(
                        &view.name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": status})),
                    )
                    .await
                    .map_err(|e| ClusterError::kube(format!("machineconfigpool {} status", view.name), e))?;
                changed = true;
            }
        }
        Ok(changed)
    }

    async fn drain(&self) -> Result<bool, ClusterError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let mut changed = false;
        for node in nodes
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("nodes".into(), e))?
        {
            let a = node.metadata.annotations.clone().unwrap_or_default();
            let Some((applied, cordon)) = drain_answer(
                a.get(DESIRED_DRAIN).map(String::as_str),
                a.get(LAST_APPLIED_DRAIN).map(String::as_str),
            ) else {
                continue;
            };
            let name = node.metadata.name.clone().unwrap_or_default();
            let patch = json!({"metadata": {"annotations": {LAST_APPLIED_DRAIN: applied}}, "spec": {"unschedulable": cordon}});
            nodes
                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .map_err(|e| ClusterError::kube(format!("node {name}"), e))?;
            self.note(format!("node {name}: {applied}"));
            changed = true;
        }
        Ok(changed)
    }
}
