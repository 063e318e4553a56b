//! Nodes joining the cluster: every node's start, at the scenario's start or later (a node
//! scaled into a pool), seeded with what the machine-config server serves a new node.

use super::{AgentKind, NodeBackend, Scenario, ScenarioError, ScenarioOptions, fixture_err};
use crate::agent::ReferenceDaemon;
use crate::cluster::server::Served;
use crate::node::agent_service::AgentProcess;
use crate::node::container::{ContainerNode, ContainerSpec};
use crate::node::kubelet::FakeKubelet;
use crate::node::light::{LightClients, LightKubelet};
use crate::node::seed::{NodeSeed, seed_node};
use crate::node::{AGENT_UNIT, CRIO_UNIT, EmbeddedNode, KUBELET_UNIT, Node, Service};
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
    /// The clients light nodes share (light nodes only).
    pub light: Option<&'a crate::node::light::LightClients>,
}

impl NodeStart<'_> {
    /// Start the node, seed it as its first boot leaves it (what the machine-config server
    /// served it, the kubeconfigs, its Node object), and boot it.
    pub async fn start(
        &self,
        name: &str,
        role: &str,
        served: &Served,
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
        match self.seed_and_boot(name, role, served, node.as_ref()).await {
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
        served: &Served,
        node: &dyn Node,
    ) -> Result<(), String> {
        let kubelet = self
            .server
            .identity(&format!("system:node:{name}"), &["system:nodes"])?;
        let seed = NodeSeed {
            role,
            api_url: self.server.url(),
            agent_ca_pem: self.agent_trust,
            bootstrap_ca_pem: &self.server.ca_pem(),
            agent: self.agent,
            kubelet: &kubelet,
            served,
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

impl Scenario {
    /// What the machine-config server serves a machine booting into `pool` now: upstream's
    /// when one runs (`--server-binary`), the reference's otherwise.
    pub async fn serve(&self, pool: &str) -> Result<Served, ScenarioError> {
        Ok(match &self.mcs {
            Some((running, _)) => running.serve(pool).await?,
            None => crate::cluster::server::serve(&self.admin, self.options.profile, pool).await?,
        })
    }

    /// A new node joins the pool, as a machine scaled into it does: it boots what the
    /// machine-config server serves now (see `cluster::server`), named `<role>-<n>` with the
    /// next free `n`; returns once its kubelet posts status and the cluster and every node
    /// have caught up.
    pub async fn join_node(&mut self, role: &str) -> Result<String, ScenarioError> {
        let prefix = format!("{role}-");
        let n = self
            .nodes
            .iter()
            .filter(|node| node.name().starts_with(&prefix))
            .count();
        let name = format!("{prefix}{n}");
        let served = self.serve(role).await?;
        let agent = agent_identity(&self.server)?;
        let start = NodeStart {
            options: &self.options,
            server: &self.server,
            admin: &self.admin,
            agent: &agent,
            clock: self.clock.clone(),
            agent_trust: &self.agent_trust,
            light: self.light.as_ref(),
        };
        let node = start.start(&name, role, &served).await?;
        self.nodes.push(node);
        self.await_kubelets().await?;
        self.settle().await?;
        self.await_first_sync().await?;
        Ok(name)
    }
}

/// A node of the scenario's backend with the kubelet and the agent as services, seeded by the
/// caller and then booted.
async fn start_node(
    name: &str,
    options: &ScenarioOptions,
    clock: SimClock,
    light: Option<&LightClients>,
) -> Result<Arc<dyn Node>, crate::node::NodeError> {
    let profile = options.profile;
    match &options.backend {
        NodeBackend::Light => light_node(name, options, clock, light),
        NodeBackend::Embedded => embedded_node(name, options, clock),
        NodeBackend::Container { image } => {
            let spec = ContainerSpec {
                image: image.clone(),
                agent: options.agent.container_command(),
            };
            Ok(Arc::new(
                ContainerNode::start(name, &spec, profile, &clock).await?,
            ))
        }
    }
}

/// A light node: the reference daemon in this process over the scenario's shared clients, beside
/// a kubelet that only reports.
fn light_node(
    name: &str,
    options: &ScenarioOptions,
    clock: SimClock,
    light: Option<&LightClients>,
) -> Result<Arc<dyn Node>, crate::node::NodeError> {
    let profile = options.profile;
    let (Some(light), AgentKind::Reference) = (light, &options.agent) else {
        return Err(crate::node::NodeError::Agent {
            node: name.into(),
            reason: "light nodes run the reference daemon in this process, with the scenario's shared clients (tag the scenario @light: a run with another agent then skips it)".into(),
        });
    };
    let node = EmbeddedNode::new(name, &[KUBELET_UNIT, CRIO_UNIT, AGENT_UNIT], clock)?;
    node.without_private_bus();
    node.set_service(
        KUBELET_UNIT,
        Arc::new(LightKubelet {
            client: light.kubelet.clone(),
        }),
    );
    node.set_service(
        AGENT_UNIT,
        Arc::new(ReferenceDaemon {
            profile,
            mutant: None,
            client: Some(light.agent.clone()),
        }),
    );
    Ok(Arc::new(node))
}

/// An embedded node: the fake kubelet (restarted when it exits) and the agent the options name.
fn embedded_node(
    name: &str,
    options: &ScenarioOptions,
    clock: SimClock,
) -> Result<Arc<dyn Node>, crate::node::NodeError> {
    let profile = options.profile;
    let node = EmbeddedNode::new(name, &[KUBELET_UNIT, CRIO_UNIT, AGENT_UNIT], clock)?;
    node.set_service(
        KUBELET_UNIT,
        Arc::new(crate::node::restart::RestartAlways(Arc::new(FakeKubelet))),
    );
    let agent: Arc<dyn Service> = match &options.agent {
        AgentKind::Reference => Arc::new(ReferenceDaemon {
            profile,
            mutant: None,
            client: None,
        }),
        AgentKind::Mutant(m) => Arc::new(ReferenceDaemon {
            profile,
            mutant: Some(*m),
            client: None,
        }),
        AgentKind::Binary {
            path,
            args,
            node_tools,
        } => Arc::new(AgentProcess {
            binary: path.clone(),
            args: args.clone(),
            profile,
            node_tools: node_tools.clone(),
        }),
        AgentKind::Image { image, .. } => {
            return Err(crate::node::NodeError::Agent {
                node: name.into(),
                reason: format!("the agent image {image} needs container nodes"),
            });
        }
    };
    node.set_service(AGENT_UNIT, agent);
    Ok(Arc::new(node))
}
