//! The ControllerConfig `machine-config-controller` in a running scenario: publishing a change
//! to it and waiting until every node's agent synced it (or marked its node Degraded), and
//! reading its spec, resourceVersion and annotations. What the operator writes into it is the
//! cluster side's.

use super::*;

impl Scenario {
    /// Merge-patch ControllerConfig `machine-config-controller` (as the operator would write
    /// it), let the cluster side settle, and wait until every node's agent synced the result or
    /// marked its node Degraded (on 4.12, where no agent reads it, until the nodes converged).
    pub async fn publish_controller_config(&self, patch: serde_json::Value) -> Result<(), ScenarioError> {
        controller_configs(&self.admin)
            .patch(
                "machine-config-controller",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(patch),
            )
            .await
            .map_err(|e| ClusterError::kube("controllerconfig machine-config-controller".into(), e))?;
        self.controller_config_synced(super::pace::Mark::now()).await
    }

    /// After a change made at `started` that the operator turns into the ControllerConfig (or a
    /// change to it): let the cluster side settle, and wait until every node's agent synced the
    /// result or marked its node Degraded (on 4.12, where no agent reads it, until the nodes
    /// converged).
    pub async fn controller_config_synced(&self, started: super::pace::Mark) -> Result<(), ScenarioError> {
        self.settle().await?;
        if self.options.profile.traits().certificate_writer().is_none() {
            return self.converge().await;
        }
        // Ok(Some(lateness)): still unsynced past the sync bound, which no longer wait mends.
        let late = eventually(self.options.deadline, || async {
            let cc_rv = controller_configs(&self.admin)
                .get("machine-config-controller")
                .await
                .map_err(|e| e.to_string())?
                .metadata
                .resource_version
                .unwrap_or_default();
            for node in &self.nodes {
                let a = self
                    .node_annotations(node.name())
                    .await
                    .map_err(|e| e.to_string())?;
                let synced = a.get(LAST_SYNCED_CONTROLLER_CONFIG).cloned().unwrap_or_default();
                if synced != cc_rv && a.get(STATE).map(String::as_str) != Some(STATE_DEGRADED) {
                    let seen = format!(
                        "node {} synced controllerconfig {synced:?}, current is {cc_rv}",
                        node.name()
                    );
                    return match self.late_yet(
                        started.elapsed(),
                        "synced the new ControllerConfig",
                        Some(&seen),
                    ) {
                        Some(late) => Ok(Some(late)),
                        None => Err(seen),
                    };
                }
            }
            Ok(None)
        })
        .await
        .map_err(ScenarioError::NotConverged)?;
        if let Some(late) = late {
            return Err(ScenarioError::NotConverged(late));
        }
        self.in_time(started, "synced the new ControllerConfig")
    }

    /// The ControllerConfig's spec; one that does not read as a ControllerConfig's spec is an
    /// error.
    pub async fn controller_config_spec(&self) -> Result<ControllerConfigSpec, ScenarioError> {
        let cc = controller_configs(&self.admin)
            .get("machine-config-controller")
            .await
            .map_err(|e| ClusterError::kube("controllerconfig machine-config-controller".into(), e))?;
        ControllerConfigSpec::of(&cc.data)
            .map_err(|e| unreadable("controllerconfig machine-config-controller spec".into(), e))
    }

    /// The ControllerConfig's resourceVersion now.
    pub async fn controller_config_resource_version(&self) -> Result<String, ScenarioError> {
        let cc = controller_configs(&self.admin)
            .get("machine-config-controller")
            .await
            .map_err(|e| ClusterError::kube("controllerconfig machine-config-controller".into(), e))?;
        Ok(cc.metadata.resource_version.unwrap_or_default())
    }

    /// The annotations of the ControllerConfig `machine-config-controller`.
    pub async fn controller_config_annotations(
        &self,
    ) -> Result<std::collections::BTreeMap<String, String>, ScenarioError> {
        let cc = controller_configs(&self.admin)
            .get("machine-config-controller")
            .await
            .map_err(|e| ClusterError::kube("controllerconfig machine-config-controller".into(), e))?;
        Ok(cc.metadata.annotations.unwrap_or_default())
    }
}
