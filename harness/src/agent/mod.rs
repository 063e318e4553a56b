//! The reference daemon: the default agent under test, honouring the agent contract of
//! DESIGN.md (a kube client from `KUBECONFIG`, `NODE_NAME`, the node root `MCO_NODE_ROOT`,
//! `systemctl`, `MCO_PROFILE`). What a release does differently is read from its row of
//! `crate::profile::Traits`; the certificate writer (`writer`) runs where the row says the
//! kubelet CA comes from it (4.14, 4.16), as that row's writer.
//!
//! # Layout
//! - `common`: MachineConfig diffs, post-config actions, atomic writes.
//! - `update`: the MachineConfig update flow every profile runs (MCD `update()`).
//! - `own_node`: the own Node as the node informer has it (upstream `dn.node`).
//! - `drift`: the config drift monitor and the on-disk validation.
//! - `events`: the daemon's Node events.
//! - `writer`: the ControllerConfig certificate writer.
//! - `embedded`: the daemon as a service of an embedded node, in this process.
//! - `process`: the daemon as its own process (`mco-reference-daemon`), from the contract's
//!   environment, and the service that runs any agent binary on an embedded node.

mod apply;
pub mod auxiliary;
pub mod common;
mod complete;
pub mod drift;
mod embedded;
pub mod events;
pub mod first_run;
pub mod mutant;
mod node_writer;
pub mod own_node;
pub mod process;
mod reconcile;
mod update;
pub mod writer;

pub use embedded::ReferenceDaemon;
pub use mutant::Mutant;

use crate::profile::{Profile, SystemLogQuoting};
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub use crate::node::CommandOutput;

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
    /// The one behaviour broken on purpose, for the suite's self-test (`mutant`); `None` for
    /// the reference daemon.
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

    /// Whether this daemon runs as `mutant`.
    pub fn mutant_is(&self, mutant: Mutant) -> bool {
        self.mutant == Some(mutant)
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

/// Run the daemon until `stop`, or until an error from its watches ends it (`auxiliary`).
pub async fn run(env: AgentEnv, stop: CancellationToken) -> Result<(), String> {
    let traits = env.profile.traits();
    env.log(&format!(
        "Starting MachineConfigDaemon (mco-conformance reference daemon, profile {})",
        env.profile
    ));
    // The node watch ends with this run, whatever ends it (a fatal error restarts the daemon).
    let watching = stop.child_token();
    let _watching = watching.clone().drop_guard();
    env.node.follow(&env, watching);
    let work = async {
        if let Some(writer) = traits.certificate_writer() {
            tokio::join!(
                update::node_loop(&env, traits.update_files, stop.clone()),
                writer::run(&env, writer, stop.clone())
            );
        } else {
            update::node_loop(&env, traits.update_files, stop.clone()).await;
        }
        // The loops end when stopped or once a reboot is asked for. Upstream's daemon, having
        // asked for the reboot, sleeps until the node's shutdown kills it ("wait to be killed
        // via SIGTERM from the kubelet shutting down", release-4.16 pkg/daemon/update.go
        // reboot()): it never exits on its own, so its unit is stopped, not ended, by the reboot.
        stop.cancelled().await;
    };
    tokio::select! {
        () = work => Ok(()),
        fatal = auxiliary::until_fatal(&env) => {
            env.log(&format!("Failed to run: {fatal}"));
            Err(fatal)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_paths_stay_under_the_root() {
        let root = std::path::Path::new("/srv/node");
        assert_eq!(
            under_root(root, "/etc/kubernetes/kubelet-ca.crt"),
            root.join("etc/kubernetes/kubelet-ca.crt")
        );
        assert_eq!(under_root(root, "/../../etc/passwd"), root.join("etc/passwd"));
        assert_eq!(under_root(root, "/etc/../../x"), root.join("x"));
        assert_eq!(
            under_root(root, "/etc/docker/certs.d/a/../b/ca.crt"),
            root.join("etc/docker/certs.d/b/ca.crt")
        );
    }
}
