//! The fake kubelet as a process of its own, as a container node runs it: `mco-kubelet` is the
//! same kubelet (`kubelet`), following the node's simulated clock through
//! `/run/mco-conformance/now` and logging on stdout; `KubeletProcess` is the unit behind
//! `kubelet.service` in the node's init, which restarts it when it dies, as systemd does for a
//! unit with `Restart=always` (`restart`), and signals it for `systemctl kill`.

use super::embedded::{EmbeddedNode, Service, ServiceContext};
use super::kubelet::FakeKubelet;
use super::{KUBELET_UNIT, NOW_FILE, Node};
use crate::pki::{Clock, SIMULATION_EPOCH, SimClock};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use time::OffsetDateTime;
use tokio::process::Command;

/// The kubelet's line when it serves (upstream `server.go`), which tells the supervisor its port.
const LISTEN_LINE: &str = "\"Starting to listen\"";

fn read_now(file: &Path) -> Option<OffsetDateTime> {
    let text = std::fs::read_to_string(file).ok()?;
    OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339).ok()
}

/// `mco-kubelet`: run the fake kubelet for `NODE_NAME` under `MCO_NODE_ROOT` (default `/`) until
/// SIGTERM, on the simulated now of the node's now file.
///
/// True when it ran until stopped; false when the kubelet's start failed (the process then
/// exits 1, as the real kubelet does after "command failed").
pub async fn run_standalone() -> Result<bool, String> {
    let name = std::env::var("NODE_NAME").map_err(|_| "NODE_NAME is not set")?;
    let root = PathBuf::from(std::env::var("MCO_NODE_ROOT").unwrap_or_else(|_| "/".into()));
    let now_file = root.join(NOW_FILE.trim_start_matches('/'));
    let clock = SimClock::starting_at(read_now(&now_file).unwrap_or(SIMULATION_EPOCH));
    let node = EmbeddedNode::for_process(&name, root, clock.clone());
    // Follow the now file: the node's init rewrites it whenever the scenario's clock moves.
    let dir = now_file
        .parent()
        .ok_or("the now file has no directory")?
        .to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (moved_tx, mut moved) = tokio::sync::mpsc::unbounded_channel();
    let watcher = super::dir_watch::watch_dirs(std::slice::from_ref(&dir), move |event| {
        if event.paths.iter().any(|p| p.ends_with("now")) {
            let _ = moved_tx.send(());
        }
    })?;
    let following = clock.clone();
    tokio::spawn(async move {
        while moved.recv().await.is_some() {
            // Forward only: the node's own rewrite of the same instant is no move.
            if let Some(now) = read_now(&now_file) {
                let by = now - following.now();
                if by.is_positive() {
                    following.advance(by);
                }
            }
        }
    });
    let ctx = ServiceContext {
        node,
        unit: KUBELET_UNIT.into(),
        pid: std::process::id(),
        stop: super::agent_service::stop_on_signals(),
        exited_successfully: Default::default(),
    };
    let stop = ctx.stop.clone();
    <FakeKubelet as Service>::run(&FakeKubelet, ctx).await;
    drop(watcher);
    Ok(stop.is_cancelled())
}

/// `kubelet.service` in a container node: `mco-kubelet` as a supervised process.
pub struct KubeletProcess {
    pub binary: PathBuf,
    /// The running process, for `systemctl kill`.
    pid: Mutex<Option<u32>>,
}

impl KubeletProcess {
    pub fn new(binary: PathBuf) -> Self {
        KubeletProcess {
            binary,
            pid: Mutex::new(None),
        }
    }

    fn set_pid(&self, pid: Option<u32>) {
        *self.pid.lock().unwrap_or_else(|p| p.into_inner()) = pid;
    }
}

/// How systemd describes a main process that ended: (`code=…, status=…`, the unit's result).
fn exit_description(status: std::process::ExitStatus) -> (String, &'static str) {
    match (status.signal(), status.code()) {
        (Some(signal), _) => {
            let name = match signal {
                1 => "HUP",
                2 => "INT",
                6 => "ABRT",
                9 => "KILL",
                11 => "SEGV",
                15 => "TERM",
                _ => "",
            };
            (format!("code=killed, status={signal}/{name}"), "signal")
        }
        (None, Some(code)) => (
            format!(
                "code=exited, status={code}/{}",
                if code == 0 { "SUCCESS" } else { "FAILURE" }
            ),
            "exit-code",
        ),
        (None, None) => ("code=dumped".into(), "core-dump"),
    }
}

#[async_trait::async_trait]
impl Service for KubeletProcess {
    async fn run(&self, ctx: ServiceContext) {
        let mut restarts = 0;
        loop {
            let child = Command::new(&self.binary)
                .env("NODE_NAME", ctx.node.name())
                .env("MCO_NODE_ROOT", ctx.node.root())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn();
            let mut child = match child {
                Ok(c) => c,
                Err(e) => return ctx.log(&format!("cannot start {}: {e}", self.binary.display())),
            };
            self.set_pid(child.id());
            // The kubelet's port, from its own "Starting to listen" line.
            let node = ctx.node.clone();
            let publish = move |line: &str| {
                if line.contains(LISTEN_LINE)
                    && let Some(port) = line
                        .rsplit_once("port=")
                        .and_then(|(_, p)| p.trim().parse::<u16>().ok())
                {
                    node.set_kubelet_endpoint(Some(SocketAddr::from((Ipv4Addr::LOCALHOST, port))));
                }
            };
            let output = super::output::OutputSync::default();
            let exited = super::agent_service::until_exit_or_stop(&ctx, &mut child, &publish, &output).await;
            self.set_pid(None);
            ctx.node.set_kubelet_endpoint(None);
            let status = match exited {
                // Stopped by the service manager: SIGTERM, as systemd stops a unit.
                None => {
                    if let Some(pid) = child.id() {
                        let _ = Command::new("kill")
                            .args(["-s", "TERM", &pid.to_string()])
                            .status()
                            .await;
                    }
                    if tokio::time::timeout(Duration::from_secs(5), child.wait())
                        .await
                        .is_err()
                    {
                        let _ = child.kill().await;
                    }
                    return;
                }
                Some(Ok(status)) => status,
                Some(Err(e)) => return ctx.log(&format!("waiting for {}: {e}", self.binary.display())),
            };
            let (how, result) = exit_description(status);
            restarts += 1;
            if !super::restart::after_exit(&ctx, &how, result, restarts).await {
                return;
            }
        }
    }

    async fn signal(&self, _ctx: &ServiceContext, signal: &str) -> Result<(), String> {
        let pid = (*self.pid.lock().unwrap_or_else(|p| p.into_inner())).ok_or("no main process to kill")?;
        let out = Command::new("kill")
            .args(["-s", signal, &pid.to_string()])
            .output()
            .await
            .map_err(|e| format!("kill: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_described_as_systemd_does() {
        let killed = std::process::ExitStatus::from_raw(9);
        assert_eq!(
            exit_description(killed),
            ("code=killed, status=9/KILL".to_string(), "signal")
        );
        let failed = std::process::ExitStatus::from_raw(1 << 8);
        assert_eq!(
            exit_description(failed),
            ("code=exited, status=1/FAILURE".to_string(), "exit-code")
        );
    }
}
