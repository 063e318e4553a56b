//! What the embedded node runs as a service (the fake kubelet, the agent), and what a running
//! service gets from its node: its unit, pid, stop signal and journal.

use super::EmbeddedNode;
use crate::pki::Clock;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A long-running service of the node (the fake kubelet, the agent).
#[async_trait::async_trait]
pub trait Service: Send + Sync {
    /// Run until `ctx.stop` is cancelled.
    async fn run(&self, ctx: ServiceContext);
    /// `systemctl reload`.
    async fn reload(&self, _ctx: &ServiceContext) {}
    /// `systemctl kill --signal=<signal>`: signal the service's process. A service that runs in
    /// this process has none to signal, and says so.
    async fn signal(&self, _ctx: &ServiceContext, _signal: &str) -> Result<(), String> {
        Err("it runs inside the node's service manager, with no process of its own to signal".into())
    }
    /// Whether it runs as a process of its own, which a stop reaches with SIGTERM wherever it
    /// is (an in-process service stops at its own next await).
    fn runs_a_process(&self) -> bool {
        false
    }
}

/// What a running service gets: its node, its pid and its stop signal.
#[derive(Clone)]
pub struct ServiceContext {
    pub node: EmbeddedNode,
    pub unit: String,
    pub pid: u32,
    pub stop: CancellationToken,
    /// Set by a service whose main process exited successfully (status 0): systemd then
    /// deactivates the unit rather than marking it failed.
    pub exited_successfully: Arc<std::sync::atomic::AtomicBool>,
}

impl ServiceContext {
    /// Log a line under the service's name and pid at simulated now.
    pub fn log(&self, message: &str) {
        let ident = self.unit.trim_end_matches(".service");
        self.node
            .inner
            .journal
            .log(self.node.inner.clock.now(), ident, self.pid, message);
    }

    /// A journald entry as another program of the node writes it (`logger --journald`: its tag
    /// and a pid of its own), with fields of the writer's own beside the ones every entry has.
    pub fn log_fields_as(
        &self,
        ident: &str,
        message: &str,
        fields: &std::collections::BTreeMap<String, String>,
    ) {
        let pid = self
            .node
            .inner
            .next_pid
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.node
            .inner
            .journal
            .log_fields(self.node.inner.clock.now(), ident, pid, message, fields);
    }

    /// Log a line as another program of the node would (`logger`: its tag and a pid of its own).
    pub fn log_as(&self, ident: &str, message: &str) {
        self.log_fields_as(ident, message, &std::collections::BTreeMap::new());
    }
}
