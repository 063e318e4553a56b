//! `Restart=always` with `RestartSec=`, as kubelet.service has it: a main process that exits
//! on its own is started again after the delay, and systemd logs each step. A container node's
//! `kubelet.service` supervises `mco-kubelet` with it (`kubelet_process`); an embedded node's
//! runs the fake kubelet in process under `RestartAlways`.

use super::embedded::{Service, ServiceContext};
use crate::pki::Clock;
use std::sync::Arc;
use std::time::Duration;

/// How long after its main process exited the unit starts it again. kubelet.service says
/// `RestartSec=10`; a node here waits 100 ms (systemd's default), so a scenario that breaks the
/// kubelet does not spend ten seconds per try. No step judges the interval, only the restarts.
pub const RESTART_DELAY: Duration = Duration::from_millis(100);

/// What systemd logs when the unit's main process exited on its own (`how`: `code=exited,
/// status=1/FAILURE` or `code=killed, status=9/KILL`; `result`: `exit-code`, `signal`), then,
/// after `RESTART_DELAY`, its restart job (`restarts` counts them, from 1). False, with only the
/// exit logged, when the unit is stopped during the delay: there is nothing to start then.
pub async fn after_exit(ctx: &ServiceContext, how: &str, result: &str, restarts: u32) -> bool {
    let unit = &ctx.unit;
    let systemd = |message: &str| ctx.node.journal().systemd(ctx.node.clock().now(), message);
    systemd(&format!("{unit}: Main process exited, {how}"));
    systemd(&format!("{unit}: Failed with result '{result}'."));
    tokio::select! {
        _ = ctx.stop.cancelled() => return false,
        _ = tokio::time::sleep(RESTART_DELAY) => {}
    }
    systemd(&format!(
        "{unit}: Scheduled restart job, restart counter is at {restarts}."
    ));
    systemd(&format!("Stopped {unit}."));
    systemd(&format!("Starting {unit}..."));
    systemd(&format!("Started {unit}."));
    true
}

/// A service run in process whose unit has `Restart=always`: when its run ends without the
/// unit being stopped (the process it stands for exited 1), it runs again after `RESTART_DELAY`,
/// as a new process (a new pid in its journal lines).
pub struct RestartAlways(pub Arc<dyn Service>);

#[async_trait::async_trait]
impl Service for RestartAlways {
    async fn run(&self, ctx: ServiceContext) {
        let mut restarts = 0;
        let mut run = ctx.clone();
        loop {
            self.0.run(run.clone()).await;
            if ctx.stop.is_cancelled() {
                return;
            }
            restarts += 1;
            if !after_exit(&ctx, "code=exited, status=1/FAILURE", "exit-code", restarts).await {
                return;
            }
            run.pid = ctx.node.next_pid();
        }
    }

    async fn reload(&self, ctx: &ServiceContext) {
        self.0.reload(ctx).await;
    }

    async fn signal(&self, ctx: &ServiceContext, signal: &str) -> Result<(), String> {
        self.0.signal(ctx, signal).await
    }
}
