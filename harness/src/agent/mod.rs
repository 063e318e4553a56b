//! The reference daemon: the default agent under test, honouring the agent contract of
//! DESIGN.md (a kube client from `KUBECONFIG`, `NODE_NAME`, the node root `MCO_NODE_ROOT`,
//! `systemctl`, `MCO_PROFILE`). What a release does differently is read from its row of
//! `crate::profile::Traits`; the certificate writer (`writer`) runs where the row says the
//! kubelet CA comes from it (4.14, 4.16), as that row's writer.
//!
//! # Layout
//! - `env`: what the agent contract gives an agent (`AgentEnv`), and how it reaches its node.
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
mod drain;
pub mod drift;
mod embedded;
mod env;
pub mod events;
mod faults;
pub mod first_run;
pub mod mutant;
mod node_loop;
mod node_writer;
pub mod own_node;
pub mod process;
mod reconcile;
mod update;
pub mod writer;

pub use embedded::ReferenceDaemon;
pub use env::{AgentEnv, AgentHost, PENDING_STATE_MESSAGE_ID, system_log_line, under_root};
pub use mutant::Mutant;

use tokio_util::sync::CancellationToken;

pub use crate::node::CommandOutput;

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
                node_loop::node_loop(&env, traits.update_files, stop.clone()),
                writer::run(&env, writer, stop.clone())
            );
        } else {
            node_loop::node_loop(&env, traits.update_files, stop.clone()).await;
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
