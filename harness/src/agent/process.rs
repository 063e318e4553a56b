//! The agent's side of the agent contract (DESIGN.md, "The agent under test"):
//! `AgentEnv::from_contract` reads what a process agent is given (`KUBECONFIG`, `NODE_NAME`,
//! `MCO_NODE_ROOT`, `MCO_PROFILE`, `systemctl` on `PATH`), as `mco-reference-daemon` does. The
//! node's side, the service that runs an agent binary, is `crate::node::agent_service`.

use super::{AgentEnv, AgentHost, CommandOutput};
use crate::profile::Profile;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::process::Command;

/// The host of a process agent: `systemctl` from `PATH`, and its log on stdout (the node's
/// service manager puts it in the journal).
pub struct ProcessHost;

#[async_trait::async_trait]
impl AgentHost for ProcessHost {
    async fn systemctl(&self, args: &[&str]) -> Result<CommandOutput, String> {
        run("systemctl", args).await
    }

    async fn update_ca_trust(&self) -> Result<CommandOutput, String> {
        run("update-ca-trust", &[]).await
    }

    fn log(&self, message: &str) {
        println!("{message}");
    }

    /// As upstream: `logger --journald` from PATH (the node's), the fields on its stdin.
    fn log_journald(&self, fields: &[(&str, String)]) {
        let entry: String = fields.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        if let Err(e) = logger(&["--journald"], &entry) {
            println!("failed to log pending config: {e}");
        }
    }

    /// As upstream: `logger` from PATH (the node's), the line on its stdin.
    fn log_system(&self, message: &str, profile: Profile) {
        println!("{message}");
        let line = super::system_log_line(profile, std::process::id(), message);
        if let Err(e) = logger(&[], &line) {
            println!("failed to invoke logger: {e}");
        }
    }
}

/// Run the node's `logger` with `input` on its stdin; the error is what it said, or why it
/// could not run.
fn logger(args: &[&str], input: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = std::process::Command::new("logger")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    // Written and closed before the wait; the child is waited for whatever the write did.
    let written = child
        .stdin
        .take()
        .map_or(Ok(()), |mut stdin| stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    written.map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// `program` from `PATH` (the node's), waited for.
async fn run(program: &str, args: &[&str]) -> Result<CommandOutput, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .await
        .map_err(|e| format!("running {program}: {e}"))?;
    Ok(CommandOutput {
        exit_code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
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
            mutant: None,
            aux: Default::default(),
            events: Default::default(),
            node: Default::default(),
        })
    }
}

/// The reference daemon as a process: `mco-reference-daemon [--mutant NAME]`, and
/// `mco-conformance reference-daemon [--mutant NAME]`, which is the same program. `args` are
/// the arguments after the program's name (or the subcommand's). Exits 0 when stopped, 1 when
/// the daemon failed, 2 when its arguments or the agent contract's environment are wrong.
pub async fn daemon_main(args: impl IntoIterator<Item = String>) -> std::process::ExitCode {
    use std::process::ExitCode;
    // `--mutant NAME` picks a mutant; anything else (an image's CMD, say) is ignored, and said.
    let mut args = args.into_iter();
    let mut mutant = None;
    while let Some(arg) = args.next() {
        if arg == "--version" {
            println!("mco-reference-daemon {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        if arg != "--mutant" {
            eprintln!("mco-reference-daemon: ignoring argument {arg:?}");
            continue;
        }
        match args.next().map(|name| name.parse::<super::Mutant>()) {
            Some(Ok(m)) => mutant = Some(m),
            Some(Err(e)) => {
                eprintln!("mco-reference-daemon: {e}");
                return ExitCode::from(2);
            }
            None => {
                eprintln!("mco-reference-daemon: --mutant needs a name");
                return ExitCode::from(2);
            }
        }
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let env = match AgentEnv::from_contract().await {
        Ok(env) => AgentEnv { mutant, ..env },
        Err(e) => {
            eprintln!("mco-reference-daemon: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = crate::node::agent_service::stop_on_signals();
    match super::run(env, stop).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}
