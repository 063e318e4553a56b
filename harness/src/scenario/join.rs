//! Nodes joining the cluster: every node's start, at the scenario's start or later (a node
//! scaled into a pool), seeded with what the machine-config server serves a new node.

use super::{Scenario, ScenarioError, ScenarioOptions, fixture_err, start_node, unreadable};
use crate::cluster::ClusterError;
use crate::cluster::mcc::{machine_config_pools, machine_configs};
use crate::cluster::operator::controller_configs;
use crate::mco::McoObject;
use crate::mco::controller_config::ControllerConfigSpec;
use crate::mco::machine_config::MachineConfigSpec;
use crate::mco::pool::MachineConfigPool;
use crate::node::Node;
use crate::node::seed::{NodeSeed, seed_node};
use crate::pki::SimClock;
use fake_apiserver::ClientIdentity;
use std::sync::Arc;

/// What every node's start shares.
pub(super) struct NodeStart<'a> {
    pub options: &'a ScenarioOptions,
    pub server: &'a super::endpoint::ApiServer,
    pub admin: &'a kube::Client,
    /// The agents' identity (the daemon's service account).
    pub agent: &'a ClientIdentity,
    pub clock: SimClock,
    /// The serving CAs the agents' kubeconfigs trust.
    pub agent_trust: &'a str,
    /// `/etc/kubernetes/kubelet-ca.crt` as the machine-config server serves it: the
    /// ControllerConfig's `kubeAPIServerServingCAData` (release-4.16 cluster_server.go:164
    /// `addDataAndMaybeAppendToIgnition`; on 4.12 the rendered config carries the same).
    pub kubelet_ca: &'a [u8],
    /// The clients light nodes share (light nodes only).
    pub light: Option<&'a crate::node::light::LightClients>,
}

impl NodeStart<'_> {
    /// Start the node, seed it as its first boot leaves it (the rendered config's files, the
    /// kubeconfigs, kubelet-ca.crt, its Node object), and boot it.
    pub async fn start(
        &self,
        name: &str,
        role: &str,
        rendered: &str,
        spec: &MachineConfigSpec,
    ) -> Result<Arc<dyn Node>, ScenarioError> {
        let failed = |message: String| ScenarioError::Node {
            node: name.to_string(),
            message,
        };
        let node = start_node(name, self.options, self.clock.clone(), self.light)
            .await
            .map_err(|e| failed(e.to_string()))?;
        // A node that started and then failed to seed or boot is shut down: its services would
        // otherwise run on, and keep its root, for as long as the process does.
        match self
            .seed_and_boot(name, role, rendered, spec, node.as_ref())
            .await
        {
            Ok(()) => Ok(node),
            Err(e) => {
                node.shutdown().await;
                Err(failed(e))
            }
        }
    }

    async fn seed_and_boot(
        &self,
        name: &str,
        role: &str,
        rendered: &str,
        spec: &MachineConfigSpec,
        node: &dyn Node,
    ) -> Result<(), String> {
        let kubelet = self
            .server
            .identity(&format!("system:node:{name}"), &["system:nodes"])?;
        let seed = NodeSeed {
            role,
            api_url: self.server.url(),
            agent_ca_pem: self.agent_trust,
            kubelet_ca_pem: &self.server.ca_pem(),
            agent: self.agent,
            kubelet: &kubelet,
            rendered,
            rendered_spec: spec,
            kubelet_ca: self.kubelet_ca,
        };
        seed_node(self.admin, node, &seed)
            .await
            .map_err(|e| e.to_string())?;
        node.boot().await.map_err(|e| e.to_string())
    }
}

/// The agents' identity: the daemon's service account.
pub(super) fn agent_identity(server: &super::endpoint::ApiServer) -> Result<ClientIdentity, ScenarioError> {
    server
        .identity(
            "system:serviceaccount:openshift-machine-config-operator:machine-config-daemon",
            &["system:serviceaccounts"],
        )
        .map_err(fixture_err)
}

/// The clients a scenario's light nodes share, over HTTP/2: the daemons' with their service
/// account (trusting the serving CAs the agents' kubeconfigs trust), the kubelets' with
/// cluster-wide rights.
pub(super) async fn light_clients(
    server: &super::endpoint::ApiServer,
    agent_trust: &str,
    agent: &ClientIdentity,
) -> Result<crate::node::light::LightClients, ScenarioError> {
    let client = |identity: &ClientIdentity, trust: &str| {
        let kubeconfig = fake_apiserver::kubeconfig(server.url(), trust, identity);
        async move {
            crate::h2_client::client_from_kubeconfig(&kubeconfig)
                .await
                .map(|(client, _)| client)
                .map_err(ScenarioError::ApiServer)
        }
    };
    Ok(crate::node::light::LightClients {
        agent: client(agent, agent_trust).await?,
        kubelet: client(server.admin_identity(), agent_trust).await?,
    })
}

/// The ControllerConfig's `kubeAPIServerServingCAData`, decoded.
pub(super) async fn served_kubelet_ca(admin: &kube::Client) -> Result<Vec<u8>, ScenarioError> {
    let cc = controller_configs(admin)
        .get("machine-config-controller")
        .await
        .map_err(|e| ClusterError::kube("controllerconfig".into(), e))?;
    ControllerConfigSpec::of(&cc.data)
        .map_err(|e| unreadable("controllerconfig machine-config-controller spec".into(), e))?
        .data("kubeAPIServerServingCAData")
        .map_err(fixture_err)
}

/// The pool's current rendered config (its `spec.configuration`), name and spec.
pub(super) async fn pool_config(
    admin: &kube::Client,
    role: &str,
) -> Result<(String, MachineConfigSpec), ScenarioError> {
    let pool = machine_config_pools(admin)
        .get(role)
        .await
        .map_err(|e| ClusterError::kube(format!("machineconfigpool {role}"), e))?;
    let rendered = MachineConfigPool::of(&pool)
        .map_err(|e| fixture_err(format!("machineconfigpool {role}: {e}")))?
        .spec
        .configuration
        .name;
    let mc = machine_configs(admin)
        .get(&rendered)
        .await
        .map_err(|e| ClusterError::kube(format!("machineconfig {rendered}"), e))?;
    let spec =
        MachineConfigSpec::of(&mc.data).map_err(|e| fixture_err(format!("machineconfig {rendered}: {e}")))?;
    Ok((rendered, spec))
}

impl Scenario {
    /// A new node joins the pool, as a machine scaled into it does: it boots what the
    /// machine-config server serves now (the pool's current rendered config, and on 4.16
    /// kubelet-ca.crt from the ControllerConfig beside it), named `<role>-<n>` with the next
    /// free `n`; returns once its kubelet posts status and the cluster and every node have
    /// caught up.
    pub async fn join_node(&mut self, role: &str) -> Result<String, ScenarioError> {
        let prefix = format!("{role}-");
        let n = self
            .nodes
            .iter()
            .filter(|node| node.name().starts_with(&prefix))
            .count();
        let name = format!("{prefix}{n}");
        let (rendered, spec) = pool_config(&self.admin, role).await?;
        let kubelet_ca = served_kubelet_ca(&self.admin).await?;
        let agent = agent_identity(&self.server)?;
        let start = NodeStart {
            options: &self.options,
            server: &self.server,
            admin: &self.admin,
            agent: &agent,
            clock: self.clock.clone(),
            agent_trust: &self.agent_trust,
            kubelet_ca: &kubelet_ca,
            light: self.light.as_ref(),
        };
        let node = start.start(&name, role, &rendered, &spec).await?;
        self.nodes.push(node);
        self.await_kubelets().await?;
        self.settle().await?;
        self.await_first_sync().await?;
        Ok(name)
    }
}
