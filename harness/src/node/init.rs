//! `mco-node-init`: PID 1 of a container node. It runs the node as the embedded backend does,
//! rooted at `/` (or `MCO_NODE_ROOT`): the service manager behind `systemctl`, the journal, the
//! fake kubelet as a supervised process (`mco-kubelet`, restarted when it dies) behind
//! `kubelet.service`, CRI-O's unit, and the agent under test as a process
//! (`machine-config-daemon.service`) with the contract's environment. It answers the harness
//! and the node's tools on its control socket, boots when the harness has seeded the node, and
//! follows the harness's simulated clock (`set-now`), writing `/run/mco-conformance/now`.
//!
//! Its environment:
//!
//! | variable | meaning |
//! |---|---|
//! | `NODE_NAME` | the node's name (required) |
//! | `MCO_PROFILE` | `ocp-4.12`, `ocp-4.14` or `ocp-4.16` (required) |
//! | `MCO_AGENT_COMMAND` | the agent's command line as a JSON array (default: the reference daemon) |
//! | `MCO_NOW` | the simulated now at start, RFC 3339 (default: the simulation epoch) |
//! | `MCO_NODE_ROOT` | the node's root (default `/`) |
//! | `MCO_NODE_TOOLS` | the node tools' binary (default `/usr/bin/mco-node-tools`) |
//! | `MCO_KUBELET` | the kubelet's binary (default `/usr/bin/mco-kubelet`) |

use super::agent_service::AgentProcess;
use super::control::{CONTROL_SOCKET, READY_LINE, Scope, serve};
use super::kubelet_process::KubeletProcess;
use super::{AGENT_UNIT, CRIO_UNIT, EmbeddedNode, KUBELET_UNIT};
use crate::pki::{SIMULATION_EPOCH, SimClock};
use crate::profile::Profile;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use time::OffsetDateTime;

/// The reference daemon inside the node image.
pub const REFERENCE_AGENT: &str = "/usr/bin/mco-reference-daemon";
/// The node tools inside the node image.
pub const NODE_TOOLS_PATH: &str = "/usr/bin/mco-node-tools";
/// The kubelet inside the node image.
pub const KUBELET_PATH: &str = "/usr/bin/mco-kubelet";

/// What the init is told by its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitConfig {
    pub name: String,
    pub profile: Profile,
    pub agent: Vec<String>,
    pub now: OffsetDateTime,
    pub root: PathBuf,
    pub node_tools: PathBuf,
    pub kubelet: PathBuf,
}

impl InitConfig {
    /// From the environment; an error names the variable.
    pub fn from_env() -> Result<Self, String> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let name = var("NODE_NAME").ok_or("NODE_NAME is not set")?;
        let profile = var("MCO_PROFILE")
            .ok_or("MCO_PROFILE is not set")?
            .parse::<Profile>()
            .map_err(|e| format!("MCO_PROFILE: {e}"))?;
        let agent = match var("MCO_AGENT_COMMAND") {
            None => vec![REFERENCE_AGENT.to_string()],
            Some(json) => match serde_json::from_str::<Vec<String>>(&json) {
                Ok(command) if !command.is_empty() => command,
                Ok(_) => return Err("MCO_AGENT_COMMAND is an empty command".into()),
                Err(e) => return Err(format!("MCO_AGENT_COMMAND is not a JSON array of strings: {e}")),
            },
        };
        let now = match var("MCO_NOW") {
            None => SIMULATION_EPOCH,
            Some(t) => OffsetDateTime::parse(&t, &time::format_description::well_known::Rfc3339)
                .map_err(|e| format!("MCO_NOW {t:?}: {e}"))?,
        };
        Ok(InitConfig {
            name,
            profile,
            agent,
            now,
            root: PathBuf::from(var("MCO_NODE_ROOT").unwrap_or_else(|| "/".into())),
            node_tools: PathBuf::from(var("MCO_NODE_TOOLS").unwrap_or_else(|| NODE_TOOLS_PATH.into())),
            kubelet: PathBuf::from(var("MCO_KUBELET").unwrap_or_else(|| KUBELET_PATH.into())),
        })
    }
}

/// Run the node until SIGTERM or a `shutdown` request.
pub async fn run(config: InitConfig) -> Result<(), String> {
    if config.root == std::path::Path::new("/") && std::process::id() == 1 {
        mount_run()?;
    }
    let clock = SimClock::starting_at(config.now);
    let node = EmbeddedNode::at_root(
        &config.name,
        config.root.clone(),
        &[KUBELET_UNIT, CRIO_UNIT, AGENT_UNIT],
        clock,
    );
    node.set_service(
        KUBELET_UNIT,
        Arc::new(KubeletProcess::new(config.kubelet.clone())),
    );
    let (binary, args) = config.agent.split_first().ok_or("no agent command")?;
    node.set_service(
        AGENT_UNIT,
        Arc::new(AgentProcess {
            binary: binary.into(),
            args: args.to_vec(),
            profile: config.profile,
            node_tools: config.node_tools.clone(),
        }),
    );
    // The image's files are all root's; RHCOS's core owns its home.
    let home = config.root.join(super::users::CORE_HOME.trim_start_matches('/'));
    if home.is_dir() {
        let core = Some(super::users::CORE_UID);
        let _ = std::os::unix::fs::chown(&home, core, core);
    }
    let socket = config.root.join(CONTROL_SOCKET.trim_start_matches('/'));
    let dir = socket.parent().ok_or("the control socket has no directory")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&socket);
    let listener =
        tokio::net::UnixListener::bind(&socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    // The harness may run as another user than the container's root.
    let _ = std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666));
    let stop = super::agent_service::stop_on_signals();
    println!("{READY_LINE}");
    serve(listener, node.clone(), Scope::Init, stop, None).await;
    node.shutdown().await;
    let _ = std::fs::remove_file(&socket);
    Ok(())
}

/// `/run` as systemd mounts it on every RHCOS node before anything else starts: a tmpfs,
/// `nosuid,nodev`, mode 0755 (executable, unlike Docker's own tmpfs mounts). Only PID 1 of a
/// node rooted at `/` (a container node) does this; an embedded node's `/run` is a directory
/// of its root. Besides being a real node's, it keeps what the node rewrites all the time (the
/// simulated now, the kubelet's heartbeat, the boot's files) out of the container's
/// fuse-overlayfs upper layer, where every new file cost an ext4 inode allocation: about a
/// tenth of the CPU of a container run.
fn mount_run() -> Result<(), String> {
    // SAFETY: static NUL-terminated strings.
    let rc = unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            c"/run".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=755".as_ptr().cast(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "mounting a tmpfs on /run: {} (a node container needs CAP_SYS_ADMIN, as the daemon's privileged pod has it)",
            std::io::Error::last_os_error()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_read_and_bad_values_are_named() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let config = InitConfig::from_vars(vars(&[
            ("NODE_NAME", "worker-0"),
            ("MCO_PROFILE", "ocp-4.16"),
            ("MCO_AGENT_COMMAND", r#"["/usr/bin/agent","--flag"]"#),
        ]))
        .unwrap();
        assert_eq!(config.agent, ["/usr/bin/agent", "--flag"]);
        assert_eq!(
            (config.now, config.root.as_os_str()),
            (SIMULATION_EPOCH, "/".as_ref())
        );
        let defaults =
            InitConfig::from_vars(vars(&[("NODE_NAME", "n"), ("MCO_PROFILE", "ocp-4.12")])).unwrap();
        assert_eq!(defaults.agent, [REFERENCE_AGENT]);
        for (pairs, named) in [
            (&[("MCO_PROFILE", "ocp-4.12")][..], "NODE_NAME"),
            (&[("NODE_NAME", "n"), ("MCO_PROFILE", "4.99")][..], "MCO_PROFILE"),
            (
                &[
                    ("NODE_NAME", "n"),
                    ("MCO_PROFILE", "ocp-4.12"),
                    ("MCO_AGENT_COMMAND", "agent"),
                ][..],
                "MCO_AGENT_COMMAND",
            ),
            (
                &[
                    ("NODE_NAME", "n"),
                    ("MCO_PROFILE", "ocp-4.12"),
                    ("MCO_NOW", "yesterday"),
                ][..],
                "MCO_NOW",
            ),
        ] {
            let pairs: &'static [(&'static str, &'static str)] = pairs;
            let err = InitConfig::from_vars(vars(pairs)).unwrap_err();
            assert!(err.contains(named), "{err}");
        }
    }
}
