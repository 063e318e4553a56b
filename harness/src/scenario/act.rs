//! What steps do to a running scenario's cluster: force a rotation, add a MachineConfig, rotate
//! the API server's serving certificate. Each waits until the cluster and nodes have followed.

use super::*;
use crate::node::seed::AGENT_KUBECONFIG;
use crate::pki::{CertificateName, Role};

/// Which CA `Scenario::publish_serving_ca` adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServingCaChange {
    /// The CA the API server moves to on `rotate_api_serving_cert`.
    Next,
    /// A new serving signer with this common name (KAS-O names a rotated one
    /// `openshift-kube-apiserver-operator_<secret>@<unix>`; the installer's keep their own).
    Signer { common_name: String },
}

/// Polls of the operator's serving-CA wait a step goes through before it gives up.
const OPERATOR_WAIT_STOPS: usize = 100;

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

    /// Publish a new CA in `openshift-config-managed/kube-apiserver-server-ca` beside the
    /// current one, as the kube-apiserver operator does before it serves from it, then wait
    /// for the cluster and nodes to follow. Returns the CA added (PEM).
    pub async fn publish_serving_ca(&self, change: ServingCaChange) -> Result<String, ScenarioError> {
        let added = self.publish_serving_ca_now(change).await?;
        self.through_operator_wait().await?;
        Ok(added)
    }

    /// [`Scenario::publish_serving_ca`], ending once the cluster side reacted to the change
    /// without moving the clock: a 4.16 operator is then still waiting for the bundle to settle.
    pub async fn publish_serving_ca_now(&self, change: ServingCaChange) -> Result<String, ScenarioError> {
        let added = match change {
            ServingCaChange::Next => self
                .next_serving
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|n| n.ca_pem.clone())
                .ok_or_else(|| {
                    ScenarioError::ApiServer("the serving certificate was already rotated".into())
                })?,
            ServingCaChange::Signer { common_name } => {
                let ca = fake_apiserver::CertificateAuthority::generate(&common_name)
                    .map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
                let pem = ca.cert_pem.clone();
                self.added_serving
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(ca);
                self.agents_trust_on_restart(&pem).await?;
                pem
            }
        };
        let (ns, name) = crate::cluster::names::KUBE_APISERVER_SERVER_CA;
        let bundle = format!("{}{added}", self.bundle(ns, name).await?);
        self.write_serving_ca_bundle(&bundle).await?;
        Ok(added)
    }

    /// Add `ca_pem` to every node's agent kubeconfig, as the daemon pod's service-account
    /// `ca.crt` follows the serving CA bundle (a projected volume): a running agent keeps what
    /// it loaded at start, a restarted one trusts the new CA too.
    async fn agents_trust_on_restart(&self, ca_pem: &str) -> Result<(), ScenarioError> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        for node in &self.nodes {
            let Ok(text) = node.read(AGENT_KUBECONFIG).await else {
                continue; // light nodes' agents share a client and have no kubeconfig file
            };
            let mut doc: serde_yaml::Value = serde_yaml::from_slice(&text)
                .map_err(|e| ScenarioError::ApiServer(format!("{}: {AGENT_KUBECONFIG}: {e}", node.name())))?;
            let cluster = &mut doc["clusters"][0]["cluster"];
            let current = cluster["certificate-authority-data"]
                .as_str()
                .and_then(|d| b64.decode(d).ok())
                .unwrap_or_default();
            let mut bundle = String::from_utf8_lossy(&current).into_owned();
            if !bundle.ends_with('\n') && !bundle.is_empty() {
                bundle.push('\n');
            }
            bundle.push_str(ca_pem);
            cluster["certificate-authority-data"] = b64.encode(bundle).into();
            let yaml = serde_yaml::to_string(&doc).map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
            node.write(AGENT_KUBECONFIG, yaml.as_bytes(), 0o600)
                .await
                .map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
        }
        Ok(())
    }

    /// Take a CA (PEM, as `publish_serving_ca` returned it) out of
    /// `openshift-config-managed/kube-apiserver-server-ca`, as KAS-O drops an expired one, and wait
    /// for the cluster and nodes to follow.
    pub async fn remove_serving_ca(&self, pem: &str) -> Result<(), ScenarioError> {
        let (ns, name) = crate::cluster::names::KUBE_APISERVER_SERVER_CA;
        let bundle = self.bundle(ns, name).await?;
        if !bundle.contains(pem.trim()) {
            return Err(ScenarioError::ApiServer(format!(
                "{ns}/{name} does not hold the CA to remove"
            )));
        }
        self.write_serving_ca_bundle(&bundle.replacen(pem.trim(), "", 1).replace("\n\n", "\n"))
            .await?;
        self.through_operator_wait().await
    }

    async fn write_serving_ca_bundle(&self, bundle: &str) -> Result<(), ScenarioError> {
        let (ns, name) = crate::cluster::names::KUBE_APISERVER_SERVER_CA;
        let patch = serde_json::json!({"data": {"ca-bundle.crt": bundle}});
        Api::<ConfigMap>::namespaced(self.admin.clone(), ns)
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(patch),
            )
            .await
            .map_err(|e| ClusterError::kube(format!("configmap {ns}/{name}"), e))?;
        self.advance(time::Duration::ZERO).await
    }

    /// Move the clock through the 4.16 operator's wait for the serving CA bundle to settle (a
    /// minute after the last change, polling every 15 s), so the step ends once it has copied
    /// the bundle into kubeconfig-data and the nodes have caught up.
    async fn through_operator_wait(&self) -> Result<(), ScenarioError> {
        // Each stop is a poll or the wait's end; a bundle that changes at every poll (which no
        // step does) would wait forever, so the stops are bounded.
        for _ in 0..OPERATOR_WAIT_STOPS {
            let Some(at) = self.side.operator_deadline() else {
                return Ok(());
            };
            self.advance((at - self.clock.now()).max(time::Duration::ZERO))
                .await?;
        }
        Err(ScenarioError::NotConverged(format!(
            "the operator still waits for kube-apiserver-server-ca to settle after {OPERATOR_WAIT_STOPS} polls"
        )))
    }

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

    /// The CA the API server moves to on `rotate_api_serving_cert`, while it has not yet.
    pub fn next_serving_ca(&self) -> Option<String> {
        self.next_serving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|n| n.ca_pem.clone())
    }

    /// The CA an upgraded cluster's serving CA bundle held from the start beside the nodes' (see
    /// `ScenarioOptions::upgraded_with_serving_signer`), as PEM.
    pub fn upgraded_serving_ca(&self) -> Option<String> {
        self.options.upgraded_with_serving_signer.as_ref()?;
        let added = self.added_serving.lock().unwrap_or_else(|p| p.into_inner());
        added.first().map(|ca| ca.cert_pem.clone())
    }

    /// Replace the API server's serving certificate with one issued by a CA a step added by name
    /// (`pem`, as `publish_serving_ca` returned it) and drop every connection. Only clients whose
    /// kubeconfig lists that CA trust it, besides the cluster's own (see `Scenario::start`): the
    /// chain carries the CA cross-signed by a root only they trust.
    pub fn serve_from_added_ca(&self, pem: &str) -> Result<(), ScenarioError> {
        let added = self.added_serving.lock().unwrap_or_else(|p| p.into_inner());
        let ca = added
            .iter()
            .find(|ca| ca.cert_pem.trim() == pem.trim())
            .ok_or_else(|| {
                ScenarioError::ApiServer(
                    "the API server can serve only from a CA a step added by name (a signer), not from \"a new CA\""
                        .into(),
                )
            })?;
        let api_error = |e: fake_apiserver::pki::PkiError| ScenarioError::ApiServer(e.to_string());
        let mut serving = ca
            .issue_serving(fake_apiserver::DEFAULT_SERVING_HOSTS)
            .map_err(api_error)?;
        serving
            .chain_pem
            .push_str(&ca.cross_signed_by(&self.cluster_root).map_err(api_error)?);
        self.in_process_server()?
            .rotate_serving_cert(serving, true)
            .map_err(|e| ScenarioError::ApiServer(e.to_string()))
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
        self.in_process_server()?
            .rotate_serving_cert(next, true)
            .map_err(|e| ScenarioError::ApiServer(e.to_string()))
    }
}

impl Scenario {
    /// The scenario's own fake API server, which alone can swap its serving certificate.
    fn in_process_server(&self) -> Result<&fake_apiserver::ServerHandle, ScenarioError> {
        self.server.in_process().ok_or_else(|| {
            ScenarioError::ApiServer(format!(
                "this step needs the in-process API server: {} (tag the scenario @{})",
                super::endpoint::IN_PROCESS_REASON,
                super::endpoint::IN_PROCESS_TAG
            ))
        })
    }
}
