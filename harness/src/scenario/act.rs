//! What steps do to a running scenario's cluster: force a rotation, add or delete a
//! MachineConfig, label a Node, pause, widen or create a pool, hand over from the bootstrap node;
//! and which certificate a name a scenario wrote stands for. Each change waits until the cluster
//! and nodes have followed. The serving CA is `serving_ca`'s, the ControllerConfig
//! `controller_config`'s.

use super::*;
use crate::pki::{CertificateName, Role};

impl Scenario {
    /// MCO's e2e way to force a rotation: null `certificate-not-after` with a JSON patch, a
    /// minute after the last step (a rotation in the same second as the signer's issue would
    /// give the new signer the same name), then wait for the cluster and nodes to follow.
    pub async fn force_rotation(&self, namespace: &str, signer: &str) -> Result<(), ScenarioError> {
        self.advance(time::Duration::minutes(1)).await?;
        crate::cluster::force_rotation(&self.admin, namespace, signer).await?;
        self.advance(time::Duration::ZERO).await
    }

    /// Remove one `auth.openshift.io/<annotation>` from a signer's Secret with a JSON patch (the
    /// slide's way to force a rotation), a minute after the last step, then wait for the
    /// cluster and nodes to follow. Removing an annotation the Secret lacks is the API
    /// server's error.
    pub async fn remove_signer_annotation(
        &self,
        namespace: &str,
        signer: &str,
        annotation: &str,
    ) -> Result<(), ScenarioError> {
        self.advance(time::Duration::minutes(1)).await?;
        let path = format!(
            "/metadata/annotations/auth.openshift.io~1{}",
            annotation.replace('~', "~0").replace('/', "~1")
        );
        let patch: json_patch::Patch =
            serde_json::from_value(serde_json::json!([{"op": "remove", "path": path}]))
                .map_err(fixture_err)?;
        kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(self.admin.clone(), namespace)
            .patch(
                signer,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Json::<()>(patch),
            )
            .await
            .map_err(|e| ClusterError::kube(format!("secret {namespace}/{signer}"), e))?;
        self.advance(time::Duration::ZERO).await
    }

    /// Create a MachineConfig for `pool` with `spec` (named `99-<pool>-<n>`, the next free
    /// `n`), then wait until the cluster has rendered it and every node of the pool runs it.
    pub async fn add_machine_config(
        &self,
        pool: &str,
        spec: serde_json::Value,
    ) -> Result<String, ScenarioError> {
        let name = self.create_machine_config(pool, spec).await?;
        self.advance(time::Duration::ZERO).await?;
        Ok(name)
    }

    /// Create a MachineConfig for the pool and let the cluster side render it and give it to
    /// the pool's nodes, without waiting for the nodes to apply it (they may refuse it).
    pub async fn give_machine_config(
        &self,
        pool: &str,
        spec: serde_json::Value,
    ) -> Result<String, ScenarioError> {
        let name = self.create_machine_config(pool, spec).await?;
        self.settle().await?;
        Ok(name)
    }

    async fn create_machine_config(
        &self,
        pool: &str,
        spec: serde_json::Value,
    ) -> Result<String, ScenarioError> {
        let api = machine_configs(&self.admin);
        let prefix = format!("99-{pool}-");
        let n = self
            .added_machine_configs(pool)
            .await?
            .last()
            .map_or(0, |(n, _)| n + 1);
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
        Ok(name)
    }

    /// The MachineConfigs steps added for `pool` (`99-<pool>-<n>`), by `n`.
    async fn added_machine_configs(&self, pool: &str) -> Result<Vec<(u64, String)>, ScenarioError> {
        let existing = machine_configs(&self.admin)
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("machineconfigs".into(), e))?;
        let prefix = format!("99-{pool}-");
        let mut added: Vec<(u64, String)> = existing
            .iter()
            .filter_map(|m| {
                let name = m.metadata.name.clone()?;
                let n = name.strip_prefix(&prefix)?.parse().ok()?;
                Some((n, name))
            })
            .collect();
        added.sort();
        Ok(added)
    }

    /// Delete the MachineConfig a step added last for `pool`, then wait until the cluster has
    /// rendered the pool without it and every node of the pool runs that config. Returns its
    /// name; with none added it is an error naming the pool.
    pub async fn delete_newest_machine_config(&self, pool: &str) -> Result<String, ScenarioError> {
        let Some((_, name)) = self.added_machine_configs(pool).await?.pop() else {
            return Err(ClusterError::Missing(format!(
                "a MachineConfig added for the {pool} pool (no step has added one)"
            ))
            .into());
        };
        machine_configs(&self.admin)
            .delete(&name, &kube::api::DeleteParams::default())
            .await
            .map_err(|e| ClusterError::kube(format!("machineconfig {name}"), e))?;
        self.advance(time::Duration::ZERO).await?;
        Ok(name)
    }

    /// The `(namespace, name)` of the ConfigMap whose `ca-bundle.crt` carries the certificate a
    /// scenario named (a signer's `bundle`, or the one that collects a signer-kind target such
    /// as KCM-O's `csr-signer-ca`); a client certificate has none, and the error says whose
    /// bundle to ask for instead.
    pub fn signer_bundle(&self, written: &str) -> Result<(String, String), ScenarioError> {
        let name = self.certificate_name(written)?;
        let bundle = match name.role {
            Role::Signer => self.catalogue.signer(&name.name).map(|s| s.bundle.clone()),
            Role::Target { .. } => self.catalogue.target(&name.name).and_then(|t| t.bundle.clone()),
        };
        let bundle = bundle.ok_or_else(|| {
            fixture_err(format!(
                "{} is a client certificate, not a CA: it has no bundle; its signer's is \"the {} bundle\"",
                name.described(),
                name.issued_by.as_deref().unwrap_or_default()
            ))
        })?;
        let (namespace, bundle) = bundle.split_once('/').ok_or_else(|| {
            fixture_err(format!(
                "fixtures/signers.yaml: {}'s bundle {bundle:?} is not namespace/name",
                name.name
            ))
        })?;
        Ok((namespace.to_string(), bundle.to_string()))
    }

    /// The signer or target of the catalogue (`fixtures/signers.yaml`) a name a scenario wrote
    /// stands for: its Secret's name, a CN it was issued under (`kubelet-signer`,
    /// `kube-csr-signer`), or an operator's name for it (`pki::names`); an unknown name is an
    /// error that lists every accepted one.
    pub fn certificate_name(&self, written: &str) -> Result<CertificateName, ScenarioError> {
        self.catalogue.resolve(written).map_err(fixture_err)
    }

    /// Every signer of the catalogue: (name, the namespace of its Secret).
    pub fn catalogue_signers(&self) -> Vec<(String, String)> {
        self.catalogue
            .signers
            .iter()
            .map(|s| (s.name.clone(), s.namespace.clone()))
            .collect()
    }

    /// Every signer and target of the catalogue: (name, the namespace of its Secret), what a
    /// scenario's "has (not) rotated" compares with the start.
    pub fn catalogue_certificates(&self) -> Vec<(String, String)> {
        self.catalogue
            .targets
            .iter()
            .map(|t| (t.name.clone(), t.namespace.clone()))
            .chain(self.catalogue_signers())
            .collect()
    }

    /// Remove a Node's `node-role.kubernetes.io/<role>` labels.
    pub async fn remove_role_labels(&self, node: &str) -> Result<(), ScenarioError> {
        let api = Api::<NodeObject>::all(self.admin.clone());
        let object = api
            .get(node)
            .await
            .map_err(|e| ClusterError::kube(format!("node {node}"), e))?;
        let removed: serde_json::Map<String, serde_json::Value> = object
            .metadata
            .labels
            .unwrap_or_default()
            .into_keys()
            .filter(|k| k.starts_with("node-role.kubernetes.io/"))
            .map(|k| (k, serde_json::Value::Null))
            .collect();
        api.patch(
            node,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": removed}})),
        )
        .await
        .map_err(|e| ClusterError::kube(format!("node {node}"), e))?;
        Ok(())
    }

    /// Labels the Node `key=value` (a merge patch, as `oc label node … key=value` sends).
    pub async fn label_node(&self, node: &str, key: &str, value: &str) -> Result<(), ScenarioError> {
        Api::<NodeObject>::all(self.admin.clone())
            .patch(
                node,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {key: value}}})),
            )
            .await
            .map_err(|e| ClusterError::kube(format!("node {node}"), e))?;
        Ok(())
    }

    /// The bootstrap node hands over: `kube-system/bootstrap` appears, and from then on the 4.16
    /// operator takes the kubelet CA bundle from `kube-apiserver-client-ca`. Waits for the
    /// cluster and nodes to follow.
    pub async fn complete_bootstrap(&self) -> Result<(), ScenarioError> {
        let (ns, name) = crate::cluster::operator::BOOTSTRAP_CONFIGMAP;
        let object: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": ns}, "data": {"status": "complete"}
        }))
        .map_err(fixture_err)?;
        Api::<ConfigMap>::namespaced(self.admin.clone(), ns)
            .create(&kube::api::PostParams::default(), &object)
            .await
            .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))?;
        self.advance(time::Duration::ZERO).await
    }

    /// Pause or unpause a pool (`spec.paused`), then wait for the cluster and nodes to follow.
    pub async fn set_paused(&self, pool: &str, paused: bool) -> Result<(), ScenarioError> {
        self.patch_pool_spec(pool, serde_json::json!({"paused": paused}))
            .await
    }

    /// Set the pool's `spec.maxUnavailable` to `value`: a number of nodes (`100`) or a
    /// percentage of them (`10%`), as the field's IntOrString takes them.
    pub async fn set_max_unavailable(&self, pool: &str, value: &str) -> Result<(), ScenarioError> {
        let value = match value.parse::<u64>() {
            Ok(n) => serde_json::Value::from(n),
            Err(_) => serde_json::Value::from(value),
        };
        self.patch_pool_spec(pool, serde_json::json!({"maxUnavailable": value}))
            .await
    }

    /// A new MachineConfigPool `name` with this `machineConfigSelector`, for the nodes labelled
    /// `node-role.kubernetes.io/<name>` (as a custom pool's manifest reads); then wait for the
    /// cluster and nodes to follow.
    pub async fn create_pool(
        &self,
        name: &str,
        machine_config_selector: serde_json::Value,
    ) -> Result<(), ScenarioError> {
        let object: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": {"name": name},
            "spec": {
                "machineConfigSelector": machine_config_selector,
                "nodeSelector": {"matchLabels": {format!("node-role.kubernetes.io/{name}"): ""}},
            },
        }))
        .map_err(fixture_err)?;
        machine_config_pools(&self.admin)
            .create(&kube::api::PostParams::default(), &object)
            .await
            .map_err(|e| ClusterError::kube(format!("machineconfigpool {name}"), e))?;
        self.advance(time::Duration::ZERO).await
    }

    /// Merge `spec` into the pool's spec, then wait for the cluster and nodes to follow.
    async fn patch_pool_spec(&self, pool: &str, spec: serde_json::Value) -> Result<(), ScenarioError> {
        machine_config_pools(&self.admin)
            .patch(
                pool,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(serde_json::json!({"spec": spec})),
            )
            .await
            .map_err(|e| ClusterError::kube(format!("machineconfigpool {pool}"), e))?;
        self.advance(time::Duration::ZERO).await
    }
}
