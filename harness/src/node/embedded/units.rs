//! The embedded node's units at work: what `systemctl` decided carried out (services
//! started, stopped, reloaded, signalled), the enabled units at boot, systemd's private bus,
//! and the reboot.

use super::{EmbeddedNode, Running, ServiceContext, lock, new_boot_id, write_now_file};
use crate::node::services::{Effect, Outcome};
use crate::node::{AGENT_UNIT, NOW_FILE};
use crate::pki::Clock;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long, in the host's paced time, a reboot takes from `systemctl reboot` to the SIGTERM an
/// agent running as a process gets: systemd stopping the node's units first. On a real node
/// that is seconds; a quarter of a second here, since what it is for (a request the agent sent
/// on its way, such as upstream's Reboot event) takes milliseconds, and every reboot of a
/// scenario pays it.
pub const SHUTDOWN_BEFORE_AGENT: Duration = Duration::from_millis(250);

impl EmbeddedNode {
    /// systemd's private bus for this boot, at `<root>/run/systemd/private`, answered from this
    /// node's service manager (`systemd_bus`). A socket that cannot be made is said in the
    /// journal.
    pub(super) fn start_private_bus(&self) {
        if let Some(old) = lock(&self.inner.bus).take() {
            old.cancel();
        }
        if !self.inner.private_bus.load(Ordering::Relaxed) {
            return;
        }
        let path = self
            .inner
            .root
            .join(crate::node::systemd_bus::PRIVATE_BUS.trim_start_matches('/'));
        let listener = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                let _ = std::fs::remove_file(&path);
                std::os::unix::net::UnixListener::bind(&path)
            })
            .and_then(|l| {
                l.set_nonblocking(true)?;
                tokio::net::UnixListener::from_std(l)
            });
        let listener = match listener {
            Ok(l) => l,
            Err(e) => {
                let now = self.inner.clock.now();
                self.inner
                    .journal
                    .systemd(now, &format!("Failed to listen on {}: {e}", path.display()));
                return;
            }
        };
        let node = Arc::downgrade(&self.inner);
        let units: crate::node::systemd_bus::UnitFiles = Arc::new(move || {
            node.upgrade()
                .map(|inner| lock(&inner.manager).unit_files())
                .unwrap_or_default()
        });
        let stop = tokio_util::sync::CancellationToken::new();
        *lock(&self.inner.bus) = Some(stop.clone());
        tokio::spawn(crate::node::systemd_bus::serve(listener, units, stop));
    }

    /// Start the enabled units, as systemd does at boot (only starts, so no await).
    pub(super) fn start_enabled(&self) {
        self.start_private_bus();
        let outcome = lock(&self.inner.manager).boot();
        let now = self.inner.clock.now();
        for line in &outcome.journal {
            self.inner.journal.systemd(now, line);
        }
        for effect in outcome.effects {
            if let Effect::Start(unit) = effect {
                self.start_service(&unit);
            }
        }
    }

    /// Carry out the effects of a command; what could not be done, as systemctl would say it.
    pub(super) async fn carry_out(&self, outcome: Outcome) -> Vec<String> {
        let mut failures = Vec::new();
        let now = self.inner.clock.now();
        for line in &outcome.journal {
            self.inner.journal.systemd(now, line);
        }
        for effect in outcome.effects {
            match effect {
                Effect::Start(unit) => self.start_service(&unit),
                Effect::Stop(unit) => self.stop_service(&unit).await,
                Effect::Reload(unit) => {
                    let running = lock(&self.inner.running).get(&unit).map(|r| r.ctx.clone());
                    let service = lock(&self.inner.services).get(&unit).cloned();
                    if let (Some(ctx), Some(service)) = (running, service) {
                        service.reload(&ctx).await;
                    }
                }
                Effect::Kill(unit, signal) => {
                    let running = lock(&self.inner.running).get(&unit).map(|r| r.ctx.clone());
                    let service = lock(&self.inner.services).get(&unit).cloned();
                    if let (Some(ctx), Some(service)) = (running, service)
                        && let Err(e) = service.signal(&ctx, &signal).await
                    {
                        failures.push(format!("Failed to kill unit {unit}: {e}\n"));
                    }
                }
                Effect::Reboot => {
                    let node = self.clone();
                    tokio::spawn(async move { node.reboot().await });
                }
            }
        }
        failures
    }

    pub(super) fn start_service(&self, unit: &str) {
        let Some(service) = lock(&self.inner.services).get(unit).cloned() else {
            return;
        };
        let stop = CancellationToken::new();
        let ctx = ServiceContext {
            node: self.clone(),
            unit: unit.to_string(),
            pid: self.inner.next_pid.fetch_add(1, Ordering::Relaxed),
            stop: stop.clone(),
            exited_successfully: Arc::default(),
        };
        let run_ctx = ctx.clone();
        let run_ctx_exit = ctx.exited_successfully.clone();
        let node = self.clone();
        let (unit_name, stopped) = (unit.to_string(), stop.clone());
        let task = tokio::spawn(async move {
            service.run(run_ctx).await;
            // Ended without being asked to: its main process exited, and systemd says so.
            if !stopped.is_cancelled() {
                let success = run_ctx_exit.load(Ordering::Relaxed);
                let lines = lock(&node.inner.manager).main_process_exited(&unit_name, success);
                let now = node.inner.clock.now();
                for line in lines {
                    node.inner.journal.systemd(now, &line);
                }
            }
        });
        lock(&self.inner.running).insert(unit.to_string(), Running { stop, task, ctx });
    }

    pub(super) async fn stop_service(&self, unit: &str) {
        let Some(running) = lock(&self.inner.running).remove(unit) else {
            return;
        };
        running.stop.cancel();
        // A service that stops itself (the agent running `systemctl stop` on its own unit)
        // cannot wait for itself.
        if tokio::task::try_id() != Some(running.task.id()) {
            let abort = running.task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(10), running.task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }

    pub(super) async fn reboot(&self) {
        // Every active unit stops, whether a program runs behind it or not (CRI-O's unit). The
        // agent goes last: on a real node it is a pod's container, which systemd's shutdown
        // reaches only when it sends SIGTERM to the processes that remain, after it stopped
        // the units (the kubelet, CRI-O, …), seconds after `systemctl reboot` returned; an
        // agent that is a process here gets that time too (`SHUTDOWN_BEFORE_AGENT`), so what
        // it sent on its way (upstream's Reboot event goes through client-go's asynchronous
        // recorder, release-4.14 update.go:2048-2078) is not cut off by a faster shutdown than
        // a real node's.
        let (mut active, agent): (Vec<String>, Vec<String>) = lock(&self.inner.manager)
            .active()
            .into_iter()
            .partition(|unit| unit != AGENT_UNIT);
        let agent_is_a_process = lock(&self.inner.services)
            .get(AGENT_UNIT)
            .is_some_and(|s| s.runs_a_process());
        active.extend(agent);
        let now = self.inner.clock.now();
        for unit in &active {
            if unit == AGENT_UNIT && agent_is_a_process {
                crate::pace::sleep(SHUTDOWN_BEFORE_AGENT).await;
            }
            self.inner.journal.systemd(now, &format!("Stopping {unit}..."));
            self.stop_service(unit).await;
            self.inner.journal.systemd(now, &format!("Stopped {unit}."));
        }
        // What is in /run goes, the directory stays: on a container node it is the tmpfs the
        // init mounted there, as systemd mounts one on a real node.
        let run = self.inner.root.join("run");
        if let Ok(entries) = std::fs::read_dir(&run) {
            for entry in entries.flatten() {
                let path = entry.path();
                let _ = match entry.file_type() {
                    Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
                    _ => std::fs::remove_file(&path),
                };
            }
        }
        let _ = std::fs::create_dir_all(&run);
        write_now_file(&self.inner.root.join(NOW_FILE.trim_start_matches('/')), now);
        let id = new_boot_id();
        *lock(&self.inner.boot_id) = id.clone();
        self.inner.journal.boot(&id);
        self.start_enabled();
    }
}
