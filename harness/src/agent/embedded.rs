//! The reference daemon as a service of an embedded node: the same inputs as the agent
//! contract (the kubeconfig at `AGENT_KUBECONFIG` under the node root, the node's
//! name and root, the profile), with `systemctl` and the log going to the node's service
//! manager and journal.

use super::{AgentEnv, AgentHost, CommandOutput};
use crate::node::seed::AGENT_KUBECONFIG;
use crate::node::{Node, Service, ServiceContext};
use crate::profile::Profile;
use std::sync::Arc;

pub struct ReferenceDaemon {
    pub profile: Profile,
    /// A fault switched on for the self-test; `None` is the reference daemon.
    pub mutant: Option<super::Mutant>,
    /// A client to use instead of one from the node's kubeconfig: light nodes' daemons share
    /// one (`crate::node::light`).
    pub client: Option<kube::Client>,
}

struct NodeHost(ServiceContext);

#[async_trait::async_trait]
impl AgentHost for NodeHost {
    async fn systemctl(&self, args: &[&str]) -> Result<CommandOutput, String> {
        self.0
            .node
            .systemctl(args)
            .await
            .map(CommandOutput::from)
            .map_err(|e| e.to_string())
    }

    /// What the node's recorded `update-ca-trust` does when run: one journal line under its
    /// own name and pid (`crate::node::tools`).
    async fn update_ca_trust(&self) -> Result<CommandOutput, String> {
        self.0.log_as("update-ca-trust", "update-ca-trust");
        Ok(CommandOutput {
            exit_code: 0,
            stdout: String::new(),
            stderr: String::new(),
        })
    }

    fn log(&self, message: &str) {
        self.0.log(message);
    }

    fn log_journald(&self, fields: &[(&str, String)]) {
        let message = fields
            .iter()
            .find(|(k, _)| *k == "MESSAGE")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let extra = fields
            .iter()
            .filter(|(k, _)| *k != "MESSAGE")
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        self.0.log_fields_as("logger", &message, &extra);
    }

    fn log_system(&self, message: &str, profile: Profile) {
        self.0.log(message);
        let line = super::system_log_line(profile, self.0.pid, message);
        self.0.log_as("root", &line);
    }
}

#[async_trait::async_trait]
impl Service for ReferenceDaemon {
    async fn run(&self, ctx: ServiceContext) {
        // A daemon that ends with an error is restarted, as its DaemonSet pod is.
        let mut restarts = 0;
        while self.run_once(&ctx).await.is_err() {
            if !crate::node::agent_service::pod_restart_back_off(&ctx, restarts).await {
                return;
            }
            restarts += 1;
        }
        // Ended without an error, as a process that exits with status 0: the service manager
        // deactivates its unit rather than failing it, as it does for `AgentProcess`.
        ctx.exited_successfully
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl ReferenceDaemon {
    async fn run_once(&self, ctx: &ServiceContext) -> Result<(), String> {
        let path = ctx.node.root().join(AGENT_KUBECONFIG.trim_start_matches('/'));
        let client = match (&self.client, std::fs::read_to_string(&path)) {
            (Some(shared), _) => Ok(shared.clone()),
            (None, Ok(yaml)) => fake_apiserver::client_from_kubeconfig(&yaml)
                .await
                .map_err(|e| e.to_string()),
            (None, Err(e)) => Err(e.to_string()),
        };
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                let e = format!("cannot build a client from {AGENT_KUBECONFIG}: {e}");
                ctx.log(&e);
                return Err(e);
            }
        };
        let env = AgentEnv {
            client,
            node_name: ctx.node.name().to_string(),
            root: ctx.node.root().to_path_buf(),
            profile: self.profile,
            host: Arc::new(NodeHost(ctx.clone())),
            mutant: self.mutant,
            aux: Default::default(),
            events: Default::default(),
            node: Default::default(),
        };
        super::run(env, ctx.stop.clone()).await
    }
}
