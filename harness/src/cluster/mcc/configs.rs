//! The template and render passes: `00-<role>` from the ControllerConfig, and each pool's
//! MachineConfigs merged into `rendered-<pool>-<hash>` with the pool's `spec.configuration`
//! pointed at it (MCO `pkg/controller/template`, `pkg/controller/render`).

use super::view::{ApiView, selector_string, selects, selects_labels};
use super::{MachineConfigController, machine_config_of, pool_of};
use crate::cluster::ClusterError;
use crate::cluster::names::FIELD_MANAGER;
use crate::cluster::operator::CONTROLLER_CONFIG;
use crate::cluster::render::{
    CONTROLLER_VERSION, GENERATED_BY, merge_machine_configs, rendered_name, template_machine_config,
};
use crate::mco::McoObject;
use crate::mco::api::{machine_config_pools, machine_configs};
use crate::mco::controller_config::ControllerConfigSpec;
use crate::mco::machine_config::{MachineConfig, MachineConfigSpec};
use crate::mco::pool::MachineConfigPool;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

impl MachineConfigController {
    pub(super) async fn template(&self, view: &mut ApiView) -> Result<bool, ClusterError> {
        let api = machine_configs(&self.client);
        let mut changed = false;
        let cc_spec = ControllerConfigSpec::of(&view.controller_config)
            .map_err(|e| ClusterError::Fixture(format!("controllerconfig {CONTROLLER_CONFIG}: {e}")))?;
        for role in &self.templates.roles {
            let desired = template_machine_config(&self.templates, self.profile, role, &cc_spec);
            let name = format!("00-{role}");
            let desired_spec = MachineConfigSpec::of(&desired)
                .map_err(|e| ClusterError::Fixture(format!("templated machineconfig {name}: {e}")))?;
            if view.machine_config(&name).is_some_and(|e| e.spec == desired_spec) {
                continue;
            }
            let written = api
                .patch(
                    &name,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(&desired),
                )
                .await
                .map_err(|e| ClusterError::kube(format!("machineconfig {name}"), e))?;
            view.put_machine_config(machine_config_of(&written)?);
            self.note(format!("templated machineconfig {name}"));
            changed = true;
        }
        Ok(changed)
    }

    pub(super) async fn render(&self, view: &mut ApiView) -> Result<bool, ClusterError> {
        let mut changed = false;
        for index in 0..view.pools.len() {
            changed |= self.render_pool(view, index).await?;
        }
        Ok(changed)
    }

    /// One pool: the MachineConfigs it selects merged into a rendered config (written if new)
    /// and the pool pointed at it; or, where upstream's render controller renders nothing, why
    /// (a RenderDegraded message, or a note alone).
    async fn render_pool(&self, view: &mut ApiView, index: usize) -> Result<bool, ClusterError> {
        let pool = view.pools[index].clone();
        let pool_name = pool.name().to_string();
        let refused = match self.sources(view, &pool) {
            Ok(mut sources) => {
                sources.sort_by(|a, b| a.name().cmp(b.name()));
                let spec = merge_machine_configs(&sources);
                let name = rendered_name(&pool_name, &spec);
                match self.unreconcilable(view, &pool, &spec, &name) {
                    None => {
                        let written = self.write_rendered(view, &pool, spec, &name).await?;
                        let retargeted = self.retarget(view, index, &sources, &name).await?;
                        return Ok(written || retargeted);
                    }
                    Some(message) => Some(message),
                }
            }
            Err(message) => message,
        };
        if let Some(message) = refused {
            self.note(message.clone());
            view.render_failures.insert(pool_name, message);
        }
        Ok(false)
    }

    /// The MachineConfigs the pool's selector selects, or why upstream renders none: `None` for
    /// an empty selector (a `SelectingAll` note), else the RenderDegraded message.
    fn sources(
        &self,
        view: &ApiView,
        pool: &MachineConfigPool,
    ) -> Result<Vec<MachineConfig>, Option<String>> {
        let pool_name = pool.name();
        let selector = &pool.spec.machine_config_selector;
        // Upstream's render controller (release-4.12 and release-4.16 alike) will not render
        // a pool whose machineConfigSelector is the empty selector, which would select
        // every MachineConfig: a `SelectingAll` warning, and nothing else.
        if selector.as_object().is_some_and(|o| o.is_empty()) {
            self.note(format!(
                "pool {pool_name}: SelectingAll: This machineconfigpool is selecting all machineconfigs. A non-empty selector is required."
            ));
            return Err(None);
        }
        let sources: Vec<MachineConfig> = view
            .machine_configs
            .iter()
            .filter(|mc| selects_labels(selector, mc.metadata.labels.as_ref()))
            .cloned()
            .collect();
        // Upstream's render controller (release-4.12 and release-4.16 alike): a pool that
        // selects no MachineConfig goes to syncFailingStatus, RenderDegraded with the
        // selector as `labels.Selector` prints it, and nothing is rendered.
        if sources.is_empty() {
            return Err(Some(format!(
                "Failed to render configuration for pool {pool_name}: no MachineConfigs found matching selector {}",
                selector_string(selector)
            )));
        }
        // Upstream's render controller: merging fails on a config that does not parse as
        // Ignition, and syncFailingStatus sets RenderDegraded with this message; no rendered
        // config is made and the pool keeps its target (render_controller.go).
        if let Some((mc, _, error)) = view
            .unreadable
            .iter()
            .find(|(_, labels, _)| selects(selector, labels))
        {
            return Err(Some(format!(
                "Failed to render configuration for pool {pool_name}: could not generate rendered MachineConfig: parsing Ignition config failed: machineconfig {mc}: {error}"
            )));
        }
        Ok(sources)
    }

    /// From 4.16 a config no node could reconcile with the pool's current one is not rendered
    /// (render_controller.go:667-694; reconcile.go:125-131 for FIPS): the RenderDegraded
    /// message. Upstream appends each MachineConfig's own errors ("; component errors: …").
    fn unreconcilable(
        &self,
        view: &ApiView,
        pool: &MachineConfigPool,
        spec: &MachineConfigSpec,
        name: &str,
    ) -> Option<String> {
        let current = &pool.spec.configuration.name;
        let refused = self.profile.traits().render_checks_reconcilable
            && !current.is_empty()
            && current != name
            && view
                .machine_config(current)
                .is_some_and(|old| old.spec.fips != spec.fips);
        refused.then(|| format!(
            "Failed to render configuration for pool {}: could not generate rendered MachineConfig: render reconciliation error: new machineconfig {current:?} is not reconcilable against {name:?}: detected change to FIPS flag; refusing to modify FIPS on a running cluster",
            pool.name()
        ))
    }

    /// The rendered config, owned by its pool, unless it exists already.
    async fn write_rendered(
        &self,
        view: &mut ApiView,
        pool: &MachineConfigPool,
        spec: MachineConfigSpec,
        name: &str,
    ) -> Result<bool, ClusterError> {
        if view.machine_config(name).is_some() {
            return Ok(false);
        }
        let pool_name = pool.name();
        let rendered = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": name, "annotations": {GENERATED_BY: CONTROLLER_VERSION},
                "ownerReferences": [{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
                    "name": pool_name, "uid": pool.metadata.uid, "controller": true}]},
            "spec": spec,
        });
        let written = machine_configs(&self.client)
            .patch(
                name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&rendered),
            )
            .await
            .map_err(|e| ClusterError::kube(format!("machineconfig {name}"), e))?;
        view.put_machine_config(machine_config_of(&written)?);
        self.note(format!("rendered {name} for pool {pool_name}"));
        Ok(true)
    }

    /// The pool's `spec.configuration` pointed at the rendered config and its sources, unless
    /// it is there already.
    async fn retarget(
        &self,
        view: &mut ApiView,
        index: usize,
        sources: &[MachineConfig],
        name: &str,
    ) -> Result<bool, ClusterError> {
        let pool_name = view.pools[index].name().to_string();
        if view.pools[index].spec.configuration.name == name {
            return Ok(false);
        }
        let source: Vec<Value> = sources
            .iter()
            .map(|s| json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": s.name()}))
            .collect();
        let patch = json!({"spec": {"configuration": {"name": name, "source": source}}});
        let written = machine_config_pools(&self.client)
            .patch(&pool_name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map_err(|e| ClusterError::kube(format!("machineconfigpool {pool_name}"), e))?;
        view.pools[index] = pool_of(&written)?;
        self.note(format!("pool {pool_name} now targets {name}"));
        Ok(true)
    }
}
