//! Nodes as steps see them (DESIGN.md, "The node, as steps see it"): one async trait over a
//! filesystem root, a journal, a service manager and a kubelet, with no host-path accessor (a
//! container's files are not on the host). Backends: `embedded` (a temp dir, services as tasks
//! in this process) and `container` (a container of the node image whose PID 1, `mco-node-init`,
//! runs an embedded node rooted at `/` and answers the harness over its control socket).
//!
//! # Layout
//! - `journal`: journald-format lines with simulated timestamps, marks and waiting.
//! - `services`: the service manager as a pure state machine behind `systemctl`.
//! - `embedded`: the embedded backend.
//! - `container`: the container backend; `init`: its PID 1; `control`: the socket protocol
//!   between them and the node's tools (`tools`: `systemctl`, `journalctl`, `logger`).
//! - `image`: the node image, built here with no registry.
//! - `kubelet`: the fake kubelet (client CA at simulated time) and the kube-apiserver's probe;
//!   `kubelet_process`: the same kubelet as a supervised process of its own (container nodes).
//! - `kubelet_status`: the kubelet's node status (Ready, heartbeats, its published port).
//! - `seed`: a node's files and Node object as a real one starts.
//! - `crash`: an agent killed at a chosen system call, under strace.
//! - `power_loss`: the states a power loss can leave of a recorded sync (a persistence model).

pub mod agent_service;
pub mod container;
pub mod control;
pub mod crash;
pub mod dir_watch;
pub mod embedded;
pub mod image;
pub mod init;
pub mod journal;
pub mod kubelet;
pub mod kubelet_bootstrap;
pub mod kubelet_process;
pub mod kubelet_status;
pub mod light;
pub mod output;
pub mod power_loss;
pub mod programs;
pub mod restart;
pub mod seed;
pub mod services;
pub mod systemd_bus;
pub mod tools;
pub mod users;

pub use embedded::{EmbeddedNode, Service, ServiceContext};

/// Raise this process's soft limit on open files to its hard limit, as Go programs do at start.
/// Every embedded node holds a few descriptors (its kubelet's listener, its clients'
/// connections and the server's ends of them), and the usual soft limit of 1,024 stops a
/// cluster at a few hundred nodes. Returns the limit now in force.
pub fn raise_open_file_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    limit.rlim_cur
}

/// Where a run keeps what it makes and removes: node roots, control sockets, agents' tool
/// directories. `MCO_CONFORMANCE_SCRATCH` names it; otherwise `/dev/shm` where there is one
/// (files, modes and renames are as real, and an agent's fsyncs cost nothing), else the
/// system's temp dir.
pub fn scratch_dir() -> std::path::PathBuf {
    if let Some(dir) = std::env::var_os("MCO_CONFORMANCE_SCRATCH").filter(|d| !d.is_empty()) {
        return dir.into();
    }
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}
pub use journal::{Journal, JournalMark};
pub use services::{Effect, Outcome, ServiceManager};

use std::net::SocketAddr;
use std::time::Duration;

/// What `stat` tells of a node path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// Permission bits (`0o644`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub inode: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("node {node}: {path}: {source}")]
    Io {
        node: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("node {node}: {path:?} is not an absolute path inside the node")]
    BadPath { node: String, path: String },
    /// The node cannot run the agent the run names (an agent image on an embedded node, another
    /// agent than the reference daemon on a light node).
    #[error("node {node}: cannot run the agent: {reason}")]
    Agent { node: String, reason: String },
    /// The node's clock did not follow the scenario's (a container node's control socket gone).
    #[error("node {node}: its clock did not follow the scenario's to {at}: {reason}")]
    Clock {
        node: String,
        at: String,
        reason: String,
    },
}

/// A node's task following the scenario's clock, ended with the node.
pub(crate) struct ClockFollower(tokio::task::AbortHandle);

impl ClockFollower {
    /// Follow `clock` in a task of its own from `applied`, the instant the caller has already
    /// applied: `apply` is called with every later instant, in order (moves made while it runs
    /// fold into the latest, which it applies next).
    pub(crate) fn spawn<F, Fut>(
        clock: &crate::pki::SimClock,
        applied: time::OffsetDateTime,
        mut apply: F,
    ) -> Self
    where
        F: FnMut(time::OffsetDateTime) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let mut moves = clock.subscribe();
        ClockFollower(
            tokio::spawn(async move {
                // A move between the caller's reading and this subscription is applied first.
                let mut now = *moves.borrow_and_update();
                if now != applied {
                    apply(now).await;
                }
                while moves.changed().await.is_ok() {
                    now = *moves.borrow_and_update();
                    apply(now).await;
                }
            })
            .abort_handle(),
        )
    }
}

impl Drop for ClockFollower {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The simulated now in RFC 3339 (DESIGN.md, "Time: two domains"), which the node backend
/// rewrites whenever the scenario's clock moves, for node parts in other processes.
pub const NOW_FILE: &str = "/run/mco-conformance/now";

/// The kubelet's last attempt to post its node status: `<RFC 3339 simulated time> ok`, or
/// `… failed: <error>`. The harness waits for it after moving the clock, so the node lifecycle
/// controller never judges a heartbeat that is about to come.
pub const HEARTBEAT_FILE: &str = "/run/mco-conformance/kubelet-heartbeat";

/// The units every node has (DESIGN.md): the kubelet, CRI-O, and the agent under test.
pub const KUBELET_UNIT: &str = "kubelet.service";
pub const CRIO_UNIT: &str = "crio.service";
pub const AGENT_UNIT: &str = "machine-config-daemon.service";

/// What a command run on the node printed and how it exited.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommandOutput {
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Outcome> for CommandOutput {
    fn from(o: Outcome) -> Self {
        CommandOutput {
            exit_code: o.exit_code,
            stdout: o.stdout,
            stderr: o.stderr,
        }
    }
}

/// Every observation can fail (a container node's control socket may be gone): a failed read
/// fails the step that made it, naming the node, what was read and why, so a negative check
/// never passes having read nothing.
#[async_trait::async_trait]
pub trait Node: Send + Sync {
    fn name(&self) -> &str;
    async fn read(&self, path: &str) -> Result<Vec<u8>, NodeError>;
    /// Write a file (creating parent directories) with `mode`.
    async fn write(&self, path: &str, contents: &[u8], mode: u32) -> Result<(), NodeError>;
    async fn remove(&self, path: &str) -> Result<(), NodeError>;
    /// Create a directory and its parents (mode 0755), as `mkdir -p` does.
    async fn create_dir(&self, path: &str) -> Result<(), NodeError>;
    /// Names in a directory, sorted.
    async fn list(&self, dir: &str) -> Result<Vec<String>, NodeError>;
    /// `None` when the path does not exist.
    async fn stat(&self, path: &str) -> Result<Option<FileStat>, NodeError>;
    async fn journal_mark(&self) -> Result<JournalMark, NodeError>;
    async fn journal_since(&self, mark: JournalMark) -> Result<Vec<String>, NodeError>;
    /// The first journal line after `mark` containing `needle`, or `None` after `deadline`.
    async fn wait_for_journal(
        &self,
        mark: JournalMark,
        needle: &str,
        deadline: Duration,
    ) -> Result<Option<String>, NodeError>;
    /// Run `systemctl` on the node.
    async fn systemctl(&self, args: &[&str]) -> Result<Outcome, NodeError>;
    /// Where the kubelet serves, once it does.
    async fn kubelet_endpoint(&self) -> Result<Option<SocketAddr>, NodeError>;
    /// The current boot id (changes with every reboot).
    async fn boot_id(&self) -> Result<String, NodeError>;
    /// First boot, once the node is seeded: the boot marker and the enabled units.
    async fn boot(&self) -> Result<(), NodeError>;
    /// Stop every service: the node goes away.
    async fn shutdown(&self);
    /// Wait until the node's clock has followed the scenario's to `now` (each node follows it
    /// in a task of its own); a node whose clock could not follow says why.
    async fn follow_clock(&self, now: time::OffsetDateTime) -> Result<(), NodeError>;
    /// The Docker container a container node runs in (for evidence and `docker exec`).
    fn container_id(&self) -> Option<String> {
        None
    }
    /// The embedded node behind this one, whose services run on this host (crash injection
    /// runs the agent under a tracer here: `crash`).
    fn as_embedded(&self) -> Option<&EmbeddedNode> {
        None
    }
    /// The container node behind this one (crash injection arms its agent's start over the
    /// init's control socket: `crash`).
    fn as_container(&self) -> Option<&container::ContainerNode> {
        None
    }
}
