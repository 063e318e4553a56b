//! The embedded node backend: a temp-dir root, services as tokio tasks in this process, the
//! pure `ServiceManager` behind `systemctl`, and a journal with simulated timestamps.
//!
//! A reboot runs apart from the caller (as `systemctl reboot` returns before the machine goes
//! down): every running service stops, `/run` is emptied, the boot id changes, the journal gets
//! `-- Boot <id> --`, and the enabled units start again. Files elsewhere stay.

use super::services::{Outcome, ServiceManager, unit_name};
use super::{ClockFollower, FileStat, Journal, JournalMark, NOW_FILE, Node, NodeError};
use crate::mco::FIPS_PATH;
use crate::pki::{Clock, SimClock};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use time::OffsetDateTime;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod service;
mod units;

pub use service::{Service, ServiceContext};

struct Running {
    stop: CancellationToken,
    task: JoinHandle<()>,
    ctx: ServiceContext,
}

struct Inner {
    name: String,
    root: PathBuf,
    _dir: Option<assert_fs::TempDir>,
    clock: SimClock,
    journal: Journal,
    manager: Mutex<ServiceManager>,
    services: Mutex<BTreeMap<String, Arc<dyn Service>>>,
    running: Mutex<BTreeMap<String, Running>>,
    boot_id: Mutex<String>,
    next_pid: AtomicU32,
    kubelet_endpoint: Mutex<Option<SocketAddr>>,
    /// The simulated now as this node has followed it (its now file written), for services
    /// that act when the clock moves (the kubelet's status).
    clock_moves: tokio::sync::watch::Receiver<OffsetDateTime>,
    _follower: ClockFollower,
    /// Stops this boot's systemd private bus.
    bus: Mutex<Option<tokio_util::sync::CancellationToken>>,
    /// Whether boots open the private bus (light nodes, whose daemon runs in this process and
    /// never dials it, do without the socket).
    private_bus: std::sync::atomic::AtomicBool,
    /// The unit directory's mtime at the last scan of it, and when that scan began.
    /// Per unit directory (`UNIT_DIRS`), its mtime and when the scan that saw it began.
    units_scanned: Mutex<[Option<(std::time::SystemTime, std::time::SystemTime)>; 2]>,
    /// How the agent service's next start is wrapped (`crate::node::crash`), once.
    agent_launch: Mutex<Option<super::crash::AgentLaunch>>,
    /// In a container node's init: this side of a launch armed over the control socket.
    remote_launch: Mutex<super::crash::RemoteLaunch>,
}

/// How long after the unit directory's last change a scan must have begun for the directory's
/// unchanged mtime to mean "nothing new": more than the coarse clock the kernel stamps files
/// with (a jiffy, at most 10 ms), so a file added during or after that scan moves the mtime.
const UNIT_DIR_SLACK: std::time::Duration = std::time::Duration::from_millis(100);

/// Where systemd reads unit files, under the node root: the admin's, then the OS's.
const UNIT_DIRS: [&str; 2] = ["etc/systemd/system", "usr/lib/systemd/system"];

/// A handle to an embedded node; clones share the node.
#[derive(Clone)]
pub struct EmbeddedNode {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `/run/mco-conformance/now` (DESIGN.md, "Time: two domains"): the simulated now in RFC 3339
/// for out-of-process node parts, rewritten whenever the clock moves. A node that is gone, or
/// rebooting with `/run` emptied, gets it at the next move or boot.
fn write_now_file(path: &Path, now: OffsetDateTime) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(path, format!("{}\n", crate::pki::rfc3339(now)));
}

fn new_boot_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl EmbeddedNode {
    /// Unit files written since the last look are units now, as systemd reads them. The
    /// directory is read again only when its mtime moved since a scan that began well after
    /// its last change ([`UNIT_DIR_SLACK`]): the convergence check asks every node's service
    /// manager every second, and ten thousand directory reads a second were 7 % of a
    /// 10,000-node rotation.
    ///
    /// Both unit directories count: `/etc/systemd/system` (what agents and Ignition write) and
    /// `/usr/lib/systemd/system` (the units the OS ships, laid down when the node is seeded).
    fn discover_written_units(&self) {
        for (index, dir) in UNIT_DIRS.iter().enumerate() {
            self.discover_units_in(index, dir);
        }
    }

    fn discover_units_in(&self, index: usize, dir: &str) {
        let dir = self.inner.root.join(dir);
        let mtime = std::fs::metadata(&dir).and_then(|m| m.modified()).ok();
        let mut all_scanned = lock(&self.inner.units_scanned);
        let scanned = &mut all_scanned[index];
        if let (Some(now), Some((then, began))) = (mtime, *scanned)
            && now == then
            && began.duration_since(then).is_ok_and(|d| d >= UNIT_DIR_SLACK)
        {
            return;
        }
        let began = std::time::SystemTime::now();
        let written = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.'));
        {
            let mut manager = lock(&self.inner.manager);
            for unit in written {
                manager.discover(&unit);
            }
        }
        *scanned = mtime.map(|m| (m, began));
    }

    /// A node named `name` with its root in a fresh directory under `node::scratch_dir()`, the
    /// given units, not yet booted.
    pub fn new(name: &str, units: &[&str], clock: SimClock) -> Result<Self, NodeError> {
        let dir = assert_fs::TempDir::with_prefix_in("mco-node-", super::scratch_dir()).map_err(|e| {
            NodeError::Io {
                node: name.into(),
                path: "<temp dir>".into(),
                source: std::io::Error::other(e.to_string()),
            }
        })?;
        let root = dir.path().to_path_buf();
        // The kernel's FIPS switch, off, as on a node installed without FIPS (a container
        // node's agent sees the same through `agent::process`).
        let fips = root.join(FIPS_PATH.trim_start_matches('/'));
        if let Some(parent) = fips.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        std::fs::write(&fips, "0\n").map_err(|source| NodeError::Io {
            node: name.into(),
            path: FIPS_PATH.into(),
            source,
        })?;
        Ok(Self::with_root(
            name,
            root,
            Some(dir),
            units,
            clock,
            Journal::new(name),
        ))
    }

    /// A node whose root is `root` as it stands (in a container node's init: `/`), not yet
    /// booted. Nothing under `root` is removed when the node goes.
    pub fn at_root(name: &str, root: PathBuf, units: &[&str], clock: SimClock) -> Self {
        Self::with_root(name, root, None, units, clock, Journal::new(name))
    }

    /// The view of the node a part in a process of its own has (the kubelet in a container
    /// node): the node's root and clock, its log lines on stdout for the service manager.
    pub fn for_process(name: &str, root: PathBuf, clock: SimClock) -> Self {
        Self::with_root(name, root, None, &[], clock, Journal::to_stdout(name))
    }

    fn with_root(
        name: &str,
        root: PathBuf,
        dir: Option<assert_fs::TempDir>,
        units: &[&str],
        clock: SimClock,
        journal: Journal,
    ) -> Self {
        // The node follows the clock in a task of its own that keeps only the channel and the
        // root, not the node: a dropped node is not kept alive by its clock, and the task ends
        // with the node.
        let start = clock.now();
        let (moved, clock_moves) = tokio::sync::watch::channel(start);
        let now_file = root.join(NOW_FILE.trim_start_matches('/'));
        write_now_file(&now_file, start);
        let follower = ClockFollower::spawn(&clock, start, move |now| {
            write_now_file(&now_file, now);
            moved.send_replace(now);
            std::future::ready(())
        });
        EmbeddedNode {
            inner: Arc::new(Inner {
                name: name.to_string(),
                root,
                _dir: dir,
                journal,
                clock,
                clock_moves,
                _follower: follower,
                manager: Mutex::new(ServiceManager::new(units)),
                services: Mutex::new(BTreeMap::new()),
                running: Mutex::new(BTreeMap::new()),
                boot_id: Mutex::new(new_boot_id()),
                next_pid: AtomicU32::new(1000),
                kubelet_endpoint: Mutex::new(None),
                bus: Mutex::new(None),
                private_bus: std::sync::atomic::AtomicBool::new(true),
                units_scanned: Mutex::new([None; 2]),
                agent_launch: Mutex::new(None),
                remote_launch: Mutex::new(Default::default()),
            }),
        }
    }

    /// The node's root on the host: `MCO_NODE_ROOT` for agents. Steps use the `Node` trait.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    pub fn clock(&self) -> &SimClock {
        &self.inner.clock
    }

    /// Changes whenever the simulated clock moves.
    pub fn clock_moves(&self) -> tokio::sync::watch::Receiver<OffsetDateTime> {
        self.inner.clock_moves.clone()
    }

    /// A pid for a new process of this node (a service started again, a program it runs).
    pub fn next_pid(&self) -> u32 {
        self.inner.next_pid.fetch_add(1, Ordering::Relaxed)
    }

    pub fn journal(&self) -> &Journal {
        &self.inner.journal
    }

    /// Attach the program behind a unit (units without one only change state).
    pub fn set_service(&self, unit: &str, service: Arc<dyn Service>) {
        lock(&self.inner.services).insert(unit_name(unit), service);
    }

    /// Wrap the agent service's next start (a process agent's: `AgentProcess`), once.
    pub fn arm_agent_launch(&self, launch: super::crash::AgentLaunch) {
        *lock(&self.inner.agent_launch) = Some(launch);
    }

    /// The wrapper for this start of the agent, if one was armed (taken: the next start runs
    /// the agent as it is).
    pub fn take_agent_launch(&self) -> Option<super::crash::AgentLaunch> {
        lock(&self.inner.agent_launch).take()
    }

    /// A container node's init: wrap the agent's next start in `wrapper` for a harness that
    /// asks over the control socket how it ended (`remote_launch_state`) and lets it restart
    /// (`end_remote_launch`).
    pub fn arm_remote_launch(&self, wrapper: Vec<String>) {
        let (launch, remote) = super::crash::RemoteLaunch::arm(wrapper);
        lock(&self.inner.remote_launch).resume();
        *lock(&self.inner.remote_launch) = remote;
        self.arm_agent_launch(launch);
    }

    /// How the armed launch stands, waiting up to `wait` for the wrapped agent to end.
    pub async fn remote_launch_state(&self, wait: std::time::Duration) -> super::crash::LaunchState {
        let mut ended = match lock(&self.inner.remote_launch).wait_on() {
            Ok(ended) => ended,
            Err(known) => return known,
        };
        let came = tokio::time::timeout(wait, &mut ended).await.ok();
        lock(&self.inner.remote_launch).waited(ended, came)
    }

    /// The armed launch over: no wrapper for the next start, and the agent's service manager
    /// may restart it.
    pub fn end_remote_launch(&self) {
        drop(self.take_agent_launch());
        lock(&self.inner.remote_launch).resume();
    }

    /// Published by the kubelet service once it listens.
    pub fn set_kubelet_endpoint(&self, addr: Option<SocketAddr>) {
        *lock(&self.inner.kubelet_endpoint) = addr;
    }

    /// First boot: the boot marker and the enabled units.
    pub async fn boot(&self) {
        self.inner.journal.boot(&lock(&self.inner.boot_id).clone());
        self.start_enabled();
    }

    /// Boot without systemd's private bus socket (from the next boot on).
    pub fn without_private_bus(&self) {
        self.inner.private_bus.store(false, Ordering::Relaxed);
    }

    /// Stop every service (the node goes away).
    pub async fn shutdown(&self) {
        if let Some(bus) = lock(&self.inner.bus).take() {
            bus.cancel();
        }
        let units: Vec<String> = lock(&self.inner.running).keys().cloned().collect();
        for unit in units {
            self.stop_service(&unit).await;
        }
    }

    fn host_path(&self, path: &str) -> Result<PathBuf, NodeError> {
        let p = Path::new(path);
        let bad = || NodeError::BadPath {
            node: self.inner.name.clone(),
            path: path.to_string(),
        };
        if !p.is_absolute() || p.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(bad());
        }
        Ok(self.inner.root.join(p.strip_prefix("/").map_err(|_| bad())?))
    }

    fn io(&self, path: &str, source: std::io::Error) -> NodeError {
        NodeError::Io {
            node: self.inner.name.clone(),
            path: path.to_string(),
            source,
        }
    }
}

#[async_trait::async_trait]
impl Node for EmbeddedNode {
    async fn follow_clock(&self, now: OffsetDateTime) -> Result<(), NodeError> {
        let mut moves = self.inner.clock_moves.clone();
        moves
            .wait_for(|followed| *followed >= now)
            .await
            .map(|_| ())
            .map_err(|_| NodeError::Clock {
                node: self.inner.name.clone(),
                at: crate::pki::rfc3339(now),
                reason: "its clock follower ended".into(),
            })
    }

    fn name(&self) -> &str {
        &self.inner.name
    }

    async fn read(&self, path: &str) -> Result<Vec<u8>, NodeError> {
        std::fs::read(self.host_path(path)?).map_err(|e| self.io(path, e))
    }

    async fn write(&self, path: &str, contents: &[u8], mode: u32) -> Result<(), NodeError> {
        let host = self.host_path(path)?;
        if let Some(parent) = host.parent() {
            std::fs::create_dir_all(parent).map_err(|e| self.io(path, e))?;
        }
        // Mode and contents through one open file: a service that acts on the file (and, say,
        // reboots the node, emptying /run) cannot make the second half fail.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&host)
            .map_err(|e| self.io(path, e))?;
        std::io::Write::write_all(&mut file, contents).map_err(|e| self.io(path, e))?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| self.io(path, e))
    }

    async fn create_dir(&self, path: &str) -> Result<(), NodeError> {
        let host = self.host_path(path)?;
        std::fs::create_dir_all(&host).map_err(|e| self.io(path, e))
    }

    async fn remove(&self, path: &str) -> Result<(), NodeError> {
        let host = self.host_path(path)?;
        let result = if host.is_dir() {
            std::fs::remove_dir_all(&host)
        } else {
            std::fs::remove_file(&host)
        };
        match result {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io(path, e)),
            _ => Ok(()),
        }
    }

    async fn list(&self, dir: &str) -> Result<Vec<String>, NodeError> {
        let mut names: Vec<String> = std::fs::read_dir(self.host_path(dir)?)
            .map_err(|e| self.io(dir, e))?
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        names.sort();
        Ok(names)
    }

    async fn stat(&self, path: &str) -> Result<Option<FileStat>, NodeError> {
        match std::fs::metadata(self.host_path(path)?) {
            Ok(m) => Ok(Some(FileStat {
                mode: m.mode() & 0o7777,
                uid: m.uid(),
                gid: m.gid(),
                size: m.len(),
                inode: m.ino(),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io(path, e)),
        }
    }

    async fn journal_mark(&self) -> Result<JournalMark, NodeError> {
        Ok(self.inner.journal.mark())
    }

    async fn journal_since(&self, mark: JournalMark) -> Result<Vec<String>, NodeError> {
        Ok(self.inner.journal.since(mark))
    }

    async fn wait_for_journal(
        &self,
        mark: JournalMark,
        needle: &str,
        deadline: Duration,
    ) -> Result<Option<String>, NodeError> {
        Ok(self.inner.journal.wait_for(mark, needle, deadline).await)
    }

    async fn systemctl(&self, args: &[&str]) -> Result<Outcome, NodeError> {
        self.discover_written_units();
        let mut outcome = lock(&self.inner.manager).systemctl(args);
        let failures = self.carry_out(outcome.clone()).await;
        if !failures.is_empty() {
            outcome.exit_code = 1;
            outcome.stderr.push_str(&failures.concat());
        }
        Ok(outcome)
    }

    async fn kubelet_endpoint(&self) -> Result<Option<SocketAddr>, NodeError> {
        Ok(*lock(&self.inner.kubelet_endpoint))
    }

    async fn boot_id(&self) -> Result<String, NodeError> {
        Ok(lock(&self.inner.boot_id).clone())
    }

    async fn boot(&self) -> Result<(), NodeError> {
        EmbeddedNode::boot(self).await;
        Ok(())
    }

    async fn shutdown(&self) {
        EmbeddedNode::shutdown(self).await
    }

    fn as_embedded(&self) -> Option<&EmbeddedNode> {
        Some(self)
    }
}

#[cfg(test)]
mod tests;
