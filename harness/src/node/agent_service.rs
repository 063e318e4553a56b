//! The service that runs an agent binary on a node (DESIGN.md, "The agent under test"): the
//! contract's environment (`KUBECONFIG`, `NODE_NAME`, `MCO_NODE_ROOT`, `MCO_PROFILE`), its
//! output in the journal under the unit's name and pid, and `systemctl`, `journalctl` and
//! `logger` on its `PATH` (`mco-node-tools`), which ask this node's service manager and journal
//! over a control socket of their own (`MCO_NODE_SOCKET`). On an embedded node only agents that
//! honour `MCO_NODE_ROOT` belong; one that writes absolute paths needs a container node, where
//! the init runs this same service with `MCO_NODE_ROOT=/`. The agent's own side of the
//! contract is `crate::agent::process`.

use super::control::{self, NODE_SOCKET_ENV, Scope};
use super::output::{OutputSync, forward_output};
use super::seed::AGENT_KUBECONFIG;
use super::{Node, Service, ServiceContext};
use crate::mco::FIPS_PATH;
use crate::profile::Profile;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::UnixListener;
use tokio::process::Command;
/// The node tools' binary name (a bin of this crate): `systemctl`, `journalctl`, `logger`,
/// `systemd-run`, and the recorded `update-ca-trust` and `ostree`.
pub const NODE_TOOLS: &str = "mco-node-tools";
/// The names the node tools answer to on an agent's `PATH`.
pub const TOOL_NAMES: &[&str] = &[
    "systemctl",
    "journalctl",
    "logger",
    "systemd-run",
    "update-ca-trust",
    "ostree",
];
/// The node tools that act on the node's users (`/etc/passwd`, `/etc/shadow`, uid changes):
/// only in a container node's image, where `/etc` is the node's.
pub const IMAGE_TOOL_NAMES: &[&str] = &["runuser", "usermod", "getent"];

/// A stop signal for an agent process: cancelled on SIGTERM (how a service manager stops it)
/// or SIGINT.
pub fn stop_on_signals() -> tokio_util::sync::CancellationToken {
    let stop = tokio_util::sync::CancellationToken::new();
    let on_signal = stop.clone();
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
        else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        on_signal.cancel();
    });
    stop
}

/// An agent binary run as the agent service of a node.
#[derive(Clone)]
pub struct AgentProcess {
    pub binary: PathBuf,
    pub args: Vec<String>,
    pub profile: Profile,
    /// The `mco-node-tools` binary, put on the agent's `PATH` as `systemctl`, `journalctl` and
    /// `logger`.
    pub node_tools: PathBuf,
}

/// The node tools an agent finds on its `PATH`: a directory of links to `mco-node-tools`, and
/// the node served to them on a socket in it for as long as this lives.
struct NodeTools {
    /// Removed, links and socket, when the agent service ends.
    _dir: assert_fs::TempDir,
    socket: PathBuf,
    /// The directory, then the harness's own `PATH`.
    path: String,
    output: Arc<OutputSync>,
    _serving: tokio_util::sync::DropGuard,
}

impl NodeTools {
    fn serve(node_tools: &std::path::Path, ctx: &ServiceContext) -> Result<NodeTools, String> {
        let dir = assert_fs::TempDir::with_prefix_in("mco-tools-", crate::node::scratch_dir())
            .map_err(|e| format!("cannot make the node tools' directory: {e}"))?;
        let socket = dir.path().join("node.sock");
        for tool in TOOL_NAMES {
            std::os::unix::fs::symlink(node_tools, dir.path().join(tool))
                .map_err(|e| format!("cannot put {tool} on the agent's PATH: {e}"))?;
        }
        let listener =
            UnixListener::bind(&socket).map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
        let serving = ctx.stop.child_token();
        let output = Arc::new(OutputSync::default());
        tokio::spawn(control::serve(
            listener,
            ctx.node.clone(),
            Scope::Tools,
            serving.clone(),
            Some(output.clone()),
        ));
        let path = format!(
            "{}:{}",
            dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Ok(NodeTools {
            _dir: dir,
            socket,
            path,
            output,
            _serving: serving.drop_guard(),
        })
    }
}

impl AgentProcess {
    /// The agent's command line with the contract's environment, after a wrapper (a tracer,
    /// `crate::node::crash`) for one start when one is given.
    fn command(&self, ctx: &ServiceContext, tools: &NodeTools, wrapper: &[String]) -> Command {
        let root = ctx.node.root();
        let mut command = match wrapper.split_first() {
            Some((program, options)) => {
                let mut c = Command::new(program);
                c.args(options).arg(&self.binary);
                c
            }
            None => Command::new(&self.binary),
        };
        command
            .args(&self.args)
            .env("KUBECONFIG", root.join(AGENT_KUBECONFIG.trim_start_matches('/')))
            .env("NODE_NAME", ctx.node.name())
            .env("MCO_NODE_ROOT", root)
            .env("MCO_PROFILE", self.profile.as_str())
            .env("PATH", &tools.path)
            .env(NODE_SOCKET_ENV, &tools.socket)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            // A group of its own, so that stopping it reaches what it started.
            .process_group(0)
            .kill_on_drop(true);
        command
    }

    /// Start the agent; in a container node (`boot_id`) where it reads this boot's id.
    fn spawn(
        &self,
        ctx: &ServiceContext,
        tools: &NodeTools,
        wrapper: &[String],
        boot_id: Option<&str>,
    ) -> std::io::Result<tokio::process::Child> {
        let Some(id) = boot_id else {
            return self.command(ctx, tools, wrapper).spawn();
        };
        own_boot_id(self.command(ctx, tools, wrapper), id).or_else(|e| {
            ctx.log(&format!(
                "the agent reads the host's boot id, not this boot's ({BOOT_ID_PATH}): {e}; run the node with CAP_SYS_ADMIN"
            ));
            self.command(ctx, tools, wrapper).spawn()
        })
    }

    /// After the agent exited: the journal line, whoever wrapped this start looks at the node,
    /// and whether to start it again (a daemon that fails is restarted, as its DaemonSet pod
    /// is, after the pod's back-off).
    async fn after_exit(
        &self,
        ctx: &ServiceContext,
        child: &mut tokio::process::Child,
        exited: std::io::Result<std::process::ExitStatus>,
        launch: Option<super::crash::AgentLaunch>,
        restarts: u32,
    ) -> bool {
        let succeeded = exited.as_ref().is_ok_and(|s| s.success());
        if succeeded {
            ctx.exited_successfully
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let status = exited.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        ctx.log(&format!("{} exited: {status}", self.binary.display()));
        stop_group(child, STOP_GRACE).await;
        if let Some(launch) = launch {
            let _ = launch.ended.send(status);
            tokio::select! {
                _ = launch.resume => {}
                _ = ctx.stop.cancelled() => return false,
            }
        }
        !succeeded && pod_restart_back_off(ctx, restarts).await
    }
}

#[async_trait::async_trait]
impl Service for AgentProcess {
    async fn run(&self, ctx: ServiceContext) {
        let tools = match NodeTools::serve(&self.node_tools, &ctx) {
            Ok(tools) => tools,
            Err(e) => return ctx.log(&e),
        };
        // In a container node the agent reads this boot's id where the kernel keeps it.
        let boot_id = if ctx.node.root() == std::path::Path::new("/") {
            ctx.node.boot_id().await.ok()
        } else {
            None
        };
        let mut restarts = 0;
        loop {
            let launch = ctx.node.take_agent_launch();
            let wrapper = launch.as_ref().map(|l| l.wrapper.clone()).unwrap_or_default();
            let mut child = match self.spawn(&ctx, &tools, &wrapper, boot_id.as_deref()) {
                Ok(c) => c,
                Err(e) => return ctx.log(&format!("cannot start {}: {e}", self.binary.display())),
            };
            let Some(exited) = until_exit_or_stop(&ctx, &mut child, &|_| {}, &tools.output).await else {
                stop_group(&mut child, STOP_GRACE).await;
                return;
            };
            if !self.after_exit(&ctx, &mut child, exited, launch, restarts).await {
                return;
            }
            restarts += 1;
        }
    }

    fn runs_a_process(&self) -> bool {
        true
    }
}

/// How long a stopped agent has between SIGTERM and SIGKILL (systemd gives 90 s; an agent here
/// has no work worth waiting that long for).
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Stop a process that leads its own group, as systemd stops a unit: SIGTERM to the whole
/// group, SIGKILL to what is left of it after `grace` (or at once once the leader is gone, for
/// children it left behind), then reap the leader.
pub async fn stop_group(child: &mut tokio::process::Child, grace: std::time::Duration) {
    let Some(pid) = child.id().and_then(|p| libc::pid_t::try_from(p).ok()) else {
        // Already reaped.
        return;
    };
    // SAFETY: kill(2) with a negative pid signals the process group; no memory is touched.
    unsafe { libc::kill(-pid, libc::SIGTERM) };
    let _ = tokio::time::timeout(grace, child.wait()).await;
    // SAFETY: as above; ESRCH when the group is empty is fine.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let _ = child.start_kill();
    let _ = child.wait().await;
}

/// Where Linux keeps the current boot's id; the upstream daemon reads it (`getBootID`) to tell a
/// reboot from a failed one.
pub const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";
/// Where a container node keeps the simulated boot's id for the agent's mount namespace.
const BOOT_ID_FILE: &str = "/run/mco-conformance/boot_id";

/// Where a container node builds the agent's `/proc/sys` when the host kernel has no FIPS switch.
const PROC_SYS_STAND_IN: &str = "/run/mco-conformance/proc-sys";
const PROC_SYS: &str = "/proc/sys";

/// Spawn `command` in a mount namespace of its own (needs CAP_SYS_ADMIN, which a node container
/// has, as the daemon's privileged pod on a real node does) where `BOOT_ID_PATH` reads `id`:
/// a simulated reboot is a new boot to the agent, as a real one is. Where the host kernel has
/// no FIPS switch (`FIPS_PATH`; RHCOS's kernel always has one, many hosts' do not), the
/// agent's `/proc/sys` is the host's with `crypto/fips_enabled` added, reading "0" (FIPS off,
/// as on a node installed without it), so upstream's `checkFIPS` runs instead of being skipped.
/// The rest of the node's mounts are shared, so its files are the node's.
fn own_boot_id(mut command: Command, id: &str) -> std::io::Result<tokio::process::Child> {
    use std::ffi::CString;
    let cstr = |s: &str| CString::new(s).map_err(std::io::Error::other);
    let file = std::path::Path::new(BOOT_ID_FILE);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // The kernel's form: a UUID with dashes and a newline.
    std::fs::write(file, format!("{}\n", uuid_form(id)))?;
    let source = cstr(BOOT_ID_FILE)?;
    let target = cstr(BOOT_ID_PATH)?;
    let slash = cstr("/")?;
    // (source, target) binds that build the stand-in /proc/sys, then the stand-in over it.
    let mut proc_sys_binds: Vec<(CString, CString)> = Vec::new();
    if !std::path::Path::new(FIPS_PATH).exists() {
        let stand_in = std::path::Path::new(PROC_SYS_STAND_IN);
        for entry in std::fs::read_dir(PROC_SYS)? {
            let entry = entry?;
            let at = stand_in.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                std::fs::create_dir_all(&at)?;
            } else if !at.exists() {
                std::fs::write(&at, "")?;
            }
            proc_sys_binds.push((
                cstr(&entry.path().to_string_lossy())?,
                cstr(&at.to_string_lossy())?,
            ));
        }
        let fips = stand_in.join(FIPS_PATH.trim_start_matches(PROC_SYS).trim_start_matches('/'));
        if let Some(dir) = fips.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&fips, "0\n")?;
        proc_sys_binds.push((cstr(PROC_SYS_STAND_IN)?, cstr(PROC_SYS)?));
    }
    // SAFETY: between fork and exec the closure makes only async-signal-safe system calls
    // (unshare, mount) on strings allocated before the fork.
    unsafe {
        command.pre_exec(move || {
            let check = |rc: libc::c_int| {
                if rc == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            };
            let bind = |from: &CString, to: &CString| {
                check(libc::mount(
                    from.as_ptr(),
                    to.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))
            };
            check(libc::unshare(libc::CLONE_NEWNS))?;
            check(libc::mount(
                std::ptr::null(),
                slash.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            ))?;
            for (from, to) in &proc_sys_binds {
                bind(from, to)?;
            }
            bind(&source, &target)
        });
    }
    command.spawn()
}

/// A boot id as the kernel prints it: 8-4-4-4-12 hex digits (ids without dashes get them).
pub fn uuid_form(id: &str) -> String {
    let hex: String = id.chars().filter(char::is_ascii_hexdigit).collect();
    if hex.len() != 32 {
        return id.to_string();
    }
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Supervise a service's process: its output into the journal (and to `on_line`) until it
/// exits (`Some` with how) or the service is stopped (`None`).
pub(crate) async fn until_exit_or_stop(
    ctx: &ServiceContext,
    child: &mut tokio::process::Child,
    on_line: &(dyn Fn(&str) + Send + Sync),
    sync: &OutputSync,
) -> Option<std::io::Result<std::process::ExitStatus>> {
    let output = forward_output(ctx, child.stdout.take(), child.stderr.take(), on_line, sync);
    tokio::pin!(output);
    let mut output_done = false;
    loop {
        tokio::select! {
            _ = ctx.stop.cancelled() => return None,
            status = child.wait() => {
                // Its last words are still in the pipes, which close with the process (a child
                // of its own may hold them open longer: that is bounded).
                if !output_done {
                    let _ = tokio::time::timeout(OUTPUT_DRAIN, &mut output).await;
                }
                return Some(status);
            }
            () = &mut output, if !output_done => output_done = true,
        }
    }
}

/// How long the output of a process that exited is read for after its exit.
const OUTPUT_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Restart a daemon pod's failed container as the kubelet does the first time (at once,
/// kuberuntime `doBackOff`), saying so in the node's journal; false when the service stopped
/// meanwhile or the container failed before (`restarts` > 0): the kubelet's next restart waits
/// in `CrashLoopBackOff`, and the harness reports the unit failed instead, with its last words.
pub async fn pod_restart_back_off(ctx: &crate::node::ServiceContext, restarts: u32) -> bool {
    if ctx.stop.is_cancelled() {
        return false;
    }
    if restarts > 0 {
        ctx.log_as(
            "kubelet",
            "Back-off restarting failed container machine-config-daemon (CrashLoopBackOff)",
        );
        return false;
    }
    ctx.log_as(
        "kubelet",
        "Restarting failed container machine-config-daemon (restart count 1)",
    );
    true
}
