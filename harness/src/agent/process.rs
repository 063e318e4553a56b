//! Agents as processes, both sides of the agent contract (DESIGN.md, "The agent under test").
//!
//! - `AgentEnv::from_contract`: what a process agent is given (`KUBECONFIG`, `NODE_NAME`,
//!   `MCO_NODE_ROOT`, `MCO_PROFILE`, `systemctl` on `PATH`), read by `mco-reference-daemon`.
//! - `AgentProcess`: the service that runs an agent binary on an embedded node with that
//!   environment, its output in the journal under the unit's name and pid, and `systemctl` on
//!   its `PATH` as a shim (`mco-node-systemctl`) that asks this node's service manager over a
//!   Unix socket (`MCO_SYSTEMCTL_SOCKET`). Only agents that honour `MCO_NODE_ROOT` belong on an
//!   embedded node; one that writes absolute paths needs a container node.

use super::{AgentEnv, AgentHost, CommandOutput};
use crate::node::seed::AGENT_KUBECONFIG;
use crate::node::{Node, Service, ServiceContext};
use crate::profile::Profile;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::process::Command;

/// The socket the `systemctl` shim asks, in its environment.
pub const SYSTEMCTL_SOCKET_ENV: &str = "MCO_SYSTEMCTL_SOCKET";

/// The shim's binary name (a bin of this crate).
pub const SYSTEMCTL_SHIM: &str = "mco-node-systemctl";

/// The host of a process agent: `systemctl` from `PATH`, and its log on stdout (the node's
/// service manager puts it in the journal).
pub struct ProcessHost;

#[async_trait::async_trait]
impl AgentHost for ProcessHost {
    async fn systemctl(&self, args: &[&str]) -> Result<CommandOutput, String> {
        let out = Command::new("systemctl")
            .args(args)
            .output()
            .await
            .map_err(|e| format!("running systemctl: {e}"))?;
        Ok(CommandOutput {
            exit_code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    fn log(&self, message: &str) {
        println!("{message}");
    }
}

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

impl AgentEnv {
    /// The agent contract's environment; an error names the variable that is missing or wrong.
    pub async fn from_contract() -> Result<AgentEnv, String> {
        let var = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set"));
        let kubeconfig = var("KUBECONFIG")?;
        let yaml =
            std::fs::read_to_string(&kubeconfig).map_err(|e| format!("KUBECONFIG {kubeconfig}: {e}"))?;
        let client = fake_apiserver::client_from_kubeconfig(&yaml)
            .await
            .map_err(|e| format!("KUBECONFIG {kubeconfig}: {e}"))?;
        let profile = var("MCO_PROFILE")?
            .parse::<Profile>()
            .map_err(|e| format!("MCO_PROFILE: {e}"))?;
        Ok(AgentEnv {
            client,
            node_name: var("NODE_NAME")?,
            root: PathBuf::from(var("MCO_NODE_ROOT")?),
            profile,
            host: Arc::new(ProcessHost),
        })
    }
}

/// An agent binary run as the agent service of an embedded node.
pub struct AgentProcess {
    pub binary: PathBuf,
    pub args: Vec<String>,
    pub profile: Profile,
    /// The `mco-node-systemctl` binary, put on the agent's `PATH` as `systemctl`.
    pub systemctl_shim: PathBuf,
}

#[async_trait::async_trait]
impl Service for AgentProcess {
    async fn run(&self, ctx: ServiceContext) {
        let shim_dir = match assert_fs::TempDir::with_prefix("mco-shim-") {
            Ok(d) => d,
            Err(e) => return ctx.log(&format!("cannot make the systemctl shim directory: {e}")),
        };
        let socket = shim_dir.path().join("systemctl.sock");
        if let Err(e) = std::os::unix::fs::symlink(&self.systemctl_shim, shim_dir.path().join("systemctl")) {
            return ctx.log(&format!("cannot put systemctl on the agent's PATH: {e}"));
        }
        let listener = match UnixListener::bind(&socket) {
            Ok(l) => l,
            Err(e) => return ctx.log(&format!("cannot listen on {}: {e}", socket.display())),
        };
        let path = format!(
            "{}:{}",
            shim_dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let root = ctx.node.root().to_path_buf();
        let child = Command::new(&self.binary)
            .args(&self.args)
            .env("KUBECONFIG", root.join(AGENT_KUBECONFIG.trim_start_matches('/')))
            .env("NODE_NAME", ctx.node.name())
            .env("MCO_NODE_ROOT", &root)
            .env("MCO_PROFILE", self.profile.as_str())
            .env("PATH", path)
            .env(SYSTEMCTL_SOCKET_ENV, &socket)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => return ctx.log(&format!("cannot start {}: {e}", self.binary.display())),
        };
        let output = forward_output(&ctx, child.stdout.take(), child.stderr.take());
        tokio::pin!(output);
        let mut output_done = false;
        loop {
            tokio::select! {
                _ = ctx.stop.cancelled() => break,
                exited = child.wait() => {
                    let status = exited.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    ctx.log(&format!("{} exited: {status}", self.binary.display()));
                    break;
                }
                () = &mut output, if !output_done => output_done = true,
                accepted = listener.accept() => if let Ok((stream, _)) = accepted {
                    let node = ctx.node.clone();
                    tokio::spawn(answer_systemctl(node, stream));
                },
            }
        }
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

/// Every line the agent prints goes to the journal under the service's name and pid.
async fn forward_output(
    ctx: &ServiceContext,
    stdout: Option<tokio::process::ChildStdout>,
    stderr: Option<tokio::process::ChildStderr>,
) {
    async fn lines(ctx: &ServiceContext, stream: Option<impl tokio::io::AsyncRead + Unpin>) {
        let Some(stream) = stream else { return };
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            ctx.log(&line);
        }
    }
    tokio::join!(lines(ctx, stdout), lines(ctx, stderr));
}

/// One shim request: a JSON array of arguments in, a `CommandOutput` as JSON out.
async fn answer_systemctl(node: crate::node::EmbeddedNode, stream: tokio::net::UnixStream) {
    let (read, mut write) = stream.into_split();
    let mut request = String::new();
    if BufReader::new(read).read_line(&mut request).await.is_err() {
        return;
    }
    let output = match serde_json::from_str::<Vec<String>>(&request) {
        Ok(args) => {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            match node.systemctl(&args).await {
                Ok(outcome) => CommandOutput::from(outcome),
                Err(e) => CommandOutput {
                    exit_code: 1,
                    stderr: e.to_string(),
                    ..Default::default()
                },
            }
        }
        Err(e) => CommandOutput {
            exit_code: 1,
            stderr: format!("bad request from the systemctl shim: {e}"),
            ..Default::default()
        },
    };
    let mut reply = serde_json::to_string(&output).unwrap_or_default();
    reply.push('\n');
    let _ = write.write_all(reply.as_bytes()).await;
}

/// The shim's side: send the arguments to the node's service manager, print what it answers,
/// and exit with its code. Errors name the socket.
pub fn systemctl_shim_main(args: Vec<String>) -> i32 {
    use std::io::{BufRead, Write};
    let Ok(socket) = std::env::var(SYSTEMCTL_SOCKET_ENV) else {
        eprintln!("systemctl: {SYSTEMCTL_SOCKET_ENV} is not set: this shim runs only under mco-conformance");
        return 1;
    };
    let reply = (|| -> std::io::Result<String> {
        let mut stream = std::os::unix::net::UnixStream::connect(Path::new(&socket))?;
        let mut request = serde_json::to_string(&args)?;
        request.push('\n');
        stream.write_all(request.as_bytes())?;
        let mut reply = String::new();
        std::io::BufReader::new(stream).read_line(&mut reply)?;
        Ok(reply)
    })();
    match reply.map(|r| serde_json::from_str::<CommandOutput>(&r)) {
        Ok(Ok(out)) => {
            print!("{}", out.stdout);
            eprint!("{}", out.stderr);
            out.exit_code
        }
        Ok(Err(e)) => {
            eprintln!("systemctl: unreadable answer on {socket}: {e}");
            1
        }
        Err(e) => {
            eprintln!("systemctl: cannot reach the node's service manager at {socket}: {e}");
            1
        }
    }
}
