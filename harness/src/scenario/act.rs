//! What steps do to a running scenario's cluster: force a rotation, add a MachineConfig, rotate
//! the API server's serving certificate. Each waits until the cluster and nodes have followed.

use super::*;

impl Scenario {
    /// MCO's e2e way to force a rotation: null `certificate-not-after` with a JSON patch, a
    /// minute after the last step (a rotation in the same second as the signer's issue would
    /// give the new signer the same name), then wait for the cluster and nodes to follow.
    pub async fn force_rotation(&self, namespace: &str, signer: &str) -> Result<(), ScenarioError> {
        self.advance(time::Duration::minutes(1)).await?;
        crate::cluster::force_rotation(&self.admin, namespace, signer).await?;
        self.advance(time::Duration::ZERO).await
    }

    /// Create a MachineConfig for `pool` with `spec` (named `99-<pool>-<n>`, the next free
    /// `n`), then wait until the cluster has rendered it and every node of the pool runs it.
    pub async fn add_machine_config(
        &self,
        pool: &str,
        spec: serde_json::Value,
    ) -> Result<String, ScenarioError> {
        let api = machine_configs(&self.admin);
        let existing = api
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("machineconfigs".into(), e))?;
        let prefix = format!("99-{pool}-");
        let n = existing
            .iter()
            .filter(|m| m.metadata.name.as_deref().is_some_and(|n| n.starts_with(&prefix)))
            .count();
        let name = format!("{prefix}{n}");
        let object: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": pool}},
            "spec": spec,
        }))
        .map_err(fixture_err)?;
        api.create(&kube::api::PostParams::default(), &object)
            .await
            .map_err(|e| ClusterError::kube(format!("machineconfig {name}"), e))?;
        self.advance(time::Duration::ZERO).await?;
        Ok(name)
    }

    /// Replace the API server's serving certificate with one from a new CA and drop every
    /// connection, so each client handshakes again: the cluster side and the agents trust the
    /// new CA, the kubelets (whose kubeconfigs hold the old one) do not. Once per scenario.
    pub fn rotate_api_serving_cert(&self) -> Result<(), ScenarioError> {
        let next = self
            .next_serving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| ScenarioError::ApiServer("the serving certificate was already rotated".into()))?;
        self.server
            .rotate_serving_cert(next, true)
            .map_err(|e| ScenarioError::ApiServer(e.to_string()))
    }
}
