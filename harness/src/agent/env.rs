//! What the agent contract gives an agent (`AgentEnv`: its client, node, root, profile and
//! host) and the daemon's shared parts it carries, how the agent reaches its node
//! (`AgentHost`), and node paths under the root. It holds no flow of the daemon: what runs on
//! it (the update loop, the writer, the main loop) lives in the other files of `agent`.

use super::{Mutant, auxiliary, events, own_node};
use crate::node::CommandOutput;
use crate::profile::{Profile, SystemLogQuoting};
use std::path::PathBuf;
use std::sync::Arc;

/// How the agent reaches the node: its service manager and its log.
#[async_trait::async_trait]
pub trait AgentHost: Send + Sync {
    /// `systemctl <args>`; the error is what made it impossible to run.
    async fn systemctl(&self, args: &[&str]) -> Result<CommandOutput, String>;
    /// `update-ca-trust`, the node's (recorded: DESIGN.md, "on PATH"); the error is what made it
    /// impossible to run.
    async fn update_ca_trust(&self) -> Result<CommandOutput, String>;
    /// One line of the daemon's own log (the journal shows it as `machine-config-daemon[pid]`).
    fn log(&self, message: &str);
    /// A line upstream logs to the journal as well (`logSystem`: its own log, then `logger`
    /// with `line` on stdin, which the journal shows under logger's default tag, the user's
    /// name: `root[<logger pid>]`). `line` is `system_log_line`'s, with the pid left to the host.
    fn log_system(&self, message: &str, profile: Profile);
    /// A journald entry of `FIELD=value` lines as `logger --journald` writes it (the journal
    /// shows its `MESSAGE` under `logger[<pid>]`).
    fn log_journald(&self, fields: &[(&str, String)]);
}

/// What upstream's `logSystem` hands `logger`: `machine-config-daemon[<pid>]: <message>`,
/// the message as it is on 4.12 (release-4.12 update.go:2158-2173) and quoted with Go's `%q`
/// on 4.16 (release-4.16 update.go:2620-2640).
pub fn system_log_line(profile: Profile, pid: u32, message: &str) -> String {
    let message = match profile.traits().system_log {
        SystemLogQuoting::AsIs => message.to_string(),
        SystemLogQuoting::GoQuoted => {
            serde_json::to_string(message).unwrap_or_else(|_| format!("{message:?}"))
        }
    };
    format!("machine-config-daemon[{pid}]: {message}")
}

/// The journald MESSAGE_ID of the 4.12 daemon's pending-state entries (release-4.12
/// daemon.go `pendingStateMessageID`).
pub const PENDING_STATE_MESSAGE_ID: &str = "machine-config-daemon-pending-state";

/// Everything the agent contract gives an agent.
#[derive(Clone)]
pub struct AgentEnv {
    pub client: kube::Client,
    pub node_name: String,
    /// The node's filesystem root; every node path is under it.
    pub root: PathBuf,
    pub profile: Profile,
    pub host: Arc<dyn AgentHost>,
    /// The one behaviour broken on purpose, for the suite's self-test (`mutant`), laid over
    /// the daemon through its fault hooks (`faults`); `None` for the reference daemon.
    pub mutant: Option<Mutant>,
    /// The deferred kubelet restart and the errors the main loop judges (`auxiliary`).
    pub aux: Arc<auxiliary::Auxiliary>,
    /// The own Node as the daemon's node informer has it; `run` starts its watch.
    pub node: own_node::OwnNode,
    /// The Node events this daemon has posted (`events`).
    pub events: Arc<events::Recorder>,
}

impl AgentEnv {
    /// A node path under the root. `..` never climbs above the root (a path from a
    /// MachineConfig or a ControllerConfig is input from outside the node).
    pub fn path(&self, node_path: &str) -> PathBuf {
        under_root(&self.root, node_path)
    }

    pub fn log(&self, message: &str) {
        self.host.log(message);
    }

    /// A line upstream writes with `logSystem` (its log and the journal through `logger`).
    pub fn log_system(&self, message: &str) {
        self.host.log_system(message, self.profile);
    }

    /// The 4.12 daemon's pending state (release-4.12 update.go:2125-2138 `storePendingState`):
    /// a journald entry whose MESSAGE is the config, PENDING 1 before the post-config action and
    /// 0 once the node is Done on it (daemon.go:1626-1634), under upstream's MESSAGE_ID.
    pub fn store_pending_state(&self, config: &str, pending: bool) {
        let boot_id = std::fs::read_to_string(self.path("/proc/sys/kernel/random/boot_id"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        self.host.log_journald(&[
            ("MESSAGE_ID", PENDING_STATE_MESSAGE_ID.to_string()),
            ("MESSAGE", config.to_string()),
            ("BOOT_ID", boot_id),
            ("PENDING", if pending { "1" } else { "0" }.to_string()),
        ]);
    }

    /// Merge `annotations` into the own Node's, and fold the answer into [`AgentEnv::node`]:
    /// every write of the daemon's own Node goes through here, so its copy never lags them.
    pub async fn annotate_node(&self, annotations: serde_json::Value) -> Result<(), kube::Error> {
        use kube::api::{Api, Patch, PatchParams};
        let patch = serde_json::json!({"metadata": {"annotations": annotations}});
        let node = Api::<k8s_openapi::api::core::v1::Node>::all(self.client.clone())
            .patch(&self.node_name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        self.node.saw(node);
        Ok(())
    }
}

/// `node_path` under `root`, lexically: `..` never climbs above the root.
pub fn under_root(root: &std::path::Path, node_path: &str) -> PathBuf {
    let mut path = root.to_path_buf();
    let mut depth = 0usize;
    for component in std::path::Path::new(node_path).components() {
        match component {
            std::path::Component::Normal(part) => {
                path.push(part);
                depth += 1;
            }
            std::path::Component::ParentDir if depth > 0 => {
                path.pop();
                depth -= 1;
            }
            _ => {}
        }
    }
    path
}
