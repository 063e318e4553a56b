//! What steps read from a running scenario, through the API server as any client would: CA
//! bundles, certificates, rendered configs, where a kubelet serves and whether its node is Ready.

use super::*;

impl Scenario {
    pub fn node(&self, name: &str) -> Option<&dyn Node> {
        self.nodes.iter().find(|n| n.name() == name).map(|n| n.as_ref())
    }

    pub fn log_tail(&self, n: usize) -> String {
        let lines = self.log.lines();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    pub async fn bundle(&self, namespace: &str, name: &str) -> Result<String, ScenarioError> {
        let cm = Api::<ConfigMap>::namespaced(self.admin.clone(), namespace)
            .get(name)
            .await
            .map_err(|e| ClusterError::kube(format!("configmap {namespace}/{name}"), e))?;
        Ok(cm
            .data
            .unwrap_or_default()
            .get("ca-bundle.crt")
            .cloned()
            .unwrap_or_default())
    }

    /// A certificate Secret (`tls.crt`, `tls.key`) as an issued certificate.
    pub async fn certificate(&self, namespace: &str, name: &str) -> Result<IssuedCert, ScenarioError> {
        let secret = Api::<Secret>::namespaced(self.admin.clone(), namespace)
            .get(name)
            .await
            .map_err(|e| ClusterError::kube(format!("secret {namespace}/{name}"), e))?;
        let data = secret.data.unwrap_or_default();
        let text = |k: &str| {
            data.get(k)
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                .unwrap_or_default()
        };
        let parsed = parse_certs(&text("tls.crt"))
            .map_err(fixture_err)?
            .into_iter()
            .next()
            .ok_or_else(|| fixture_err(format!("secret {namespace}/{name} holds no certificate")))?;
        Ok(IssuedCert {
            pem: text("tls.crt"),
            key_pem: text("tls.key"),
            common_name: parsed.common_name,
            issuer_common_name: parsed.issuer,
            not_before: parsed.not_before,
            not_after: parsed.not_after,
            serial: parsed.serial,
        })
    }

    /// The certificate a scenario named (`certificate_name`) as its Secret holds it now.
    pub async fn named_certificate(
        &self,
        written: &str,
    ) -> Result<(crate::pki::CertificateName, IssuedCert), ScenarioError> {
        let name = self.certificate_name(written)?;
        let cert = self.certificate(&name.namespace, &name.name).await?;
        Ok((name, cert))
    }

    /// Names of a pool's rendered configs.
    pub async fn rendered_configs(&self, pool: &str) -> Result<Vec<String>, ScenarioError> {
        let prefix = format!("rendered-{pool}-");
        let all = machine_configs(&self.admin)
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("machineconfigs".into(), e))?;
        Ok(all
            .into_iter()
            .filter_map(|m| m.metadata.name)
            .filter(|n| n.starts_with(&prefix))
            .collect())
    }

    /// Where the kube-apiserver reaches a node's kubelet: the Node's InternalIP and
    /// `status.daemonEndpoints.kubeletEndpoint.Port`, as the kubelet published them.
    pub async fn kubelet_address(&self, node: &str) -> Result<std::net::SocketAddr, ScenarioError> {
        let status = self.node_status(node).await?;
        let ip = status
            .addresses
            .unwrap_or_default()
            .into_iter()
            .find(|a| a.type_ == "InternalIP")
            .and_then(|a| a.address.parse::<std::net::IpAddr>().ok());
        let port = status
            .daemon_endpoints
            .and_then(|d| d.kubelet_endpoint)
            .map(|e| e.port)
            .filter(|p| *p > 0);
        match (ip, port) {
            (Some(ip), Some(port)) => Ok(std::net::SocketAddr::new(ip, port as u16)),
            _ => Err(ScenarioError::Node {
                node: node.to_string(),
                message: "the kubelet has not published an InternalIP and port in the Node's status".into(),
            }),
        }
    }

    /// The Node's annotations (`machineconfiguration.openshift.io/state`, `reason`, …).
    pub async fn node_annotations(&self, node: &str) -> Result<BTreeMap<String, String>, ScenarioError> {
        Ok(self
            .node_object(node)
            .await?
            .metadata
            .annotations
            .unwrap_or_default())
    }

    /// The node's cordon and drain changes since `mark`, once the history has caught up with
    /// the Node as the API server holds it now.
    pub async fn node_changes_since(
        &self,
        node: &str,
        mark: usize,
    ) -> Result<Vec<node_history::NodeChange>, ScenarioError> {
        let now = self.node_object(node).await?;
        let rv: u64 = now
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok())
            .unwrap_or(0);
        eventually(self.options.deadline, || async {
            if self.node_history.caught_up(node, rv) {
                Ok(())
            } else {
                Err(format!(
                    "the Node watch has not shown {node} at resourceVersion {rv} yet"
                ))
            }
        })
        .await
        .map_err(ScenarioError::NotConverged)?;
        Ok(self.node_history.since(mark, node))
    }

    /// The cluster is up once its controller has written every pool's status for the nodes
    /// it has: each pool that targets a config shows `Updated` (its nodes booted on it). Waited
    /// for up to the deadline, so the pool history's first showing is the cluster as it came
    /// up, not a status written before the agents' first sync; a pool that does not get there
    /// (a step may judge why) is left as it is.
    pub(super) async fn pools_updated_at_start(&self) {
        let _ = eventually(self.options.deadline, || async {
            let pools = machine_config_pools(&self.admin)
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            for pool in &pools.items {
                let Ok(pool) =
                    serde_json::to_value(pool).and_then(serde_json::from_value::<MachineConfigPool>)
                else {
                    continue;
                };
                if pool.spec.configuration.name.is_empty() {
                    continue;
                }
                let updated = pool
                    .status
                    .as_ref()
                    .and_then(|s| s.condition("Updated"))
                    .is_some_and(|c| c.status == "True");
                if !updated {
                    return Err(format!("pool {} is not Updated yet", pool.name()));
                }
            }
            Ok(())
        })
        .await;
    }

    /// Wait until the pool watch has shown every pool as the API server holds it now.
    pub(super) async fn pools_shown_now(&self) -> Result<(), ScenarioError> {
        let pools = machine_config_pools(&self.admin)
            .list(&Default::default())
            .await
            .map_err(|e| ClusterError::kube("machineconfigpools".into(), e))?;
        let versions = versions(pools.items.iter().map(|p| &p.metadata));
        self.watch_shown("MachineConfigPool", &versions, |pool, rv| {
            self.pool_history.caught_up(pool, rv)
        })
        .await
    }

    /// Wait until a watch has shown every object of `versions` (name, resourceVersion) at that
    /// version or later.
    async fn watch_shown(
        &self,
        kind: &str,
        versions: &[(String, u64)],
        caught_up: impl Fn(&str, u64) -> bool,
    ) -> Result<(), ScenarioError> {
        eventually(self.options.deadline, || async {
            match versions.iter().find(|(name, rv)| !caught_up(name, *rv)) {
                None => Ok(()),
                Some((name, rv)) => Err(format!(
                    "the {kind} watch has not shown {name} at resourceVersion {rv} yet"
                )),
            }
        })
        .await
        .map_err(ScenarioError::NotConverged)
    }

    /// What the pool showed since the steps began, oldest first, once the watch has caught up
    /// with every pool as the API server holds it now.
    pub async fn pool_changes_since_start(
        &self,
        pool: &str,
    ) -> Result<Vec<pool_history::PoolChange>, ScenarioError> {
        self.require_pool(pool).await?;
        self.pools_shown_now().await?;
        Ok(self.pool_history.since_start(pool))
    }

    /// The most nodes of `pool` that were updating at once (`desiredConfig` ≠ `currentConfig`)
    /// over the scenario, once the Node watch has caught up with every Node as the API server
    /// holds it now. A pool's nodes are those labelled with its role, as the harness labels
    /// them (`node-role.kubernetes.io/<pool>`).
    pub async fn most_updating_at_once(&self, pool: &str) -> Result<usize, ScenarioError> {
        self.require_pool(pool).await?;
        let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(self.admin.clone())
            .list(&Default::default())
            .await
            .map_err(|e| ClusterError::kube("nodes".into(), e))?;
        let versions = versions(nodes.items.iter().map(|n| &n.metadata));
        self.watch_shown("Node", &versions, |node, rv| {
            self.node_history.caught_up(node, rv)
        })
        .await?;
        Ok(self.node_history.most_updating_at_once(pool))
    }

    /// The names of the cluster's MachineConfigPools.
    pub async fn pool_names(&self) -> Result<Vec<String>, ScenarioError> {
        let all = machine_config_pools(&self.admin)
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::kube("machineconfigpools".into(), e))?;
        Ok(all.into_iter().filter_map(|p| p.metadata.name).collect())
    }

    /// That the cluster has a MachineConfigPool named `pool`; else an error listing those it has
    /// (a misspelt pool would otherwise count zero rendered configs and pass).
    pub async fn require_pool(&self, pool: &str) -> Result<(), ScenarioError> {
        let names = self.pool_names().await?;
        if names.iter().any(|n| n == pool) {
            return Ok(());
        }
        Err(fixture_err(format!(
            "no MachineConfigPool {pool:?} in the cluster; pools: {}",
            names.join(", ")
        )))
    }

    /// A MachineConfigPool's spec; one that does not read as a pool's spec is an error.
    pub async fn pool_spec(&self, pool: &str) -> Result<MachineConfigPoolSpec, ScenarioError> {
        let object = self.pool_object(pool).await?;
        MachineConfigPool::spec_of(&object.data)
            .map_err(|e| unreadable(format!("machineconfigpool {pool} spec"), e))
    }

    /// A MachineConfigPool's status (zero values before the node controller first wrote one);
    /// one that does not read as a pool's status is an error.
    pub async fn pool_status(&self, pool: &str) -> Result<MachineConfigPoolStatus, ScenarioError> {
        let object = self.pool_object(pool).await?;
        MachineConfigPool::status_of(&object.data)
            .map_err(|e| unreadable(format!("machineconfigpool {pool} status"), e))
    }

    async fn pool_object(&self, pool: &str) -> Result<kube::api::DynamicObject, ScenarioError> {
        Ok(machine_config_pools(&self.admin)
            .get(pool)
            .await
            .map_err(|e| ClusterError::kube(format!("machineconfigpool {pool}"), e))?)
    }

    /// A MachineConfig's spec; one that does not read as a MachineConfig's spec is an error.
    pub async fn machine_config_spec(&self, name: &str) -> Result<MachineConfigSpec, ScenarioError> {
        let mc = machine_configs(&self.admin)
            .get(name)
            .await
            .map_err(|e| ClusterError::kube(format!("machineconfig {name}"), e))?;
        MachineConfigSpec::of(&mc.data).map_err(|e| unreadable(format!("machineconfig {name} spec"), e))
    }

    /// The Node's Ready condition as `(status, reason)`, if it has one.
    pub async fn node_ready(&self, node: &str) -> Result<Option<(String, String)>, ScenarioError> {
        Ok(self
            .node_status(node)
            .await?
            .conditions
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status, c.reason.unwrap_or_default())))
    }

    async fn node_status(&self, node: &str) -> Result<k8s_openapi::api::core::v1::NodeStatus, ScenarioError> {
        Ok(self.node_object(node).await?.status.unwrap_or_default())
    }

    /// A Node, read again when the connection drops (the API server drops every connection
    /// when its serving certificate rotates, and a pooled one may only find out on use).
    async fn node_object(&self, node: &str) -> Result<NodeObject, ScenarioError> {
        let api = Api::<NodeObject>::all(self.admin.clone());
        Ok(crate::cluster::retry_transient(|| async {
            api.get(node)
                .await
                .map_err(|e| ClusterError::kube(format!("node {node}"), e))
        })
        .await?)
    }
}

/// Each object's name and resourceVersion (0 when it has none that parses).
fn versions<'a>(objects: impl Iterator<Item = &'a kube::api::ObjectMeta>) -> Vec<(String, u64)> {
    objects
        .map(|m| {
            let rv = m.resource_version.as_deref().and_then(|rv| rv.parse().ok());
            (m.name.clone().unwrap_or_default(), rv.unwrap_or(0))
        })
        .collect()
}
