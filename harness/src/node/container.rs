//! The container node backend: a container of the node image (`image`), started with
//! testcontainers on the host network (the node reaches the fake API server on 127.0.0.1, and
//! its kubelet serves there), PID 1 our init (`init`). Every `Node` call is carried out by the
//! init inside the container over the control socket, which sits in a host directory bind-mounted
//! at `CONTROL_DIR`: files, modes and ownership are what the container's kernel says, as the agent
//! there sees them, at the cost of a Unix-socket round trip (a `docker exec` costs tens of
//! milliseconds, and steps poll files).
//!
//! The scenario's clock reaches the node through `set-now` whenever it moves. At most
//! `MAX_STARTING` containers start at once.

use super::CommandOutput;
use super::control::{CONTROL_DIR, CONTROL_SOCKET, ControlClient, READY_LINE, Request};
use super::{ClockFollower, FileStat, JournalMark, Node, NodeError, Outcome};
use crate::pki::{Clock, SimClock, rfc3339};
use crate::profile::Profile;
use base64::Engine;
use std::net::SocketAddr;
use std::time::Duration;
use testcontainers::core::{Mount, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

/// Node containers starting at once, at most.
pub const MAX_STARTING: usize = 4;
static STARTING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_STARTING);

/// The init inside the node image.
pub const INIT_PATH: &str = "/usr/bin/mco-node-init";

/// What a container node runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    /// The image (`mco-conformance-node:sha-…`, or a vendor's image built FROM it).
    pub image: String,
    /// The agent's command line inside the container.
    pub agent: Vec<String>,
}

pub struct ContainerNode {
    name: String,
    id: String,
    control: ControlClient,
    container: tokio::sync::Mutex<Option<ContainerAsync<GenericImage>>>,
    /// The instant the node's own clock was last set to, or why it could not be.
    clock_set: tokio::sync::watch::Receiver<Result<time::OffsetDateTime, String>>,
    _follower: ClockFollower,
    /// The control directory, bind-mounted at `CONTROL_DIR` (the init's socket, shared files).
    control_dir: tempfile::TempDir,
}

fn start_error(name: &str, message: String) -> NodeError {
    NodeError::Io {
        node: name.into(),
        path: "<container>".into(),
        source: std::io::Error::other(message),
    }
}

impl ContainerNode {
    /// Start a node container and wait for its init to answer; the node is not booted yet
    /// (seed it, then `boot`). The node follows `clock` from now on.
    pub async fn start(
        name: &str,
        spec: &ContainerSpec,
        profile: Profile,
        clock: &SimClock,
    ) -> Result<Self, NodeError> {
        let dir = tempfile::Builder::new()
            .prefix("mco-control-")
            .tempdir_in(super::scratch_dir())
            .map_err(|e| start_error(name, format!("a control directory: {e}")))?;
        let (repository, tag) = spec
            .image
            .rsplit_once(':')
            .unwrap_or((spec.image.as_str(), "latest"));
        let agent = serde_json::to_string(&spec.agent).unwrap_or_default();
        let request = GenericImage::new(repository, tag)
            .with_entrypoint(INIT_PATH)
            .with_wait_for(WaitFor::message_on_stdout(READY_LINE))
            .with_network("host")
            // The daemon's pod is privileged on a real node: it mounts (release-4.12 binds
            // /run/secrets at start), and the init gives the agent this boot's id in a mount
            // namespace of its own. CAP_SYS_ADMIN is that much and no more.
            .with_cap_add("SYS_ADMIN")
            .with_mount(Mount::bind_mount(
                dir.path().to_string_lossy().into_owned(),
                CONTROL_DIR,
            ))
            // Who made it, so a forced exit's leftovers can be found and removed.
            .with_label("mco-conformance.node", name)
            .with_label("mco-conformance.pid", std::process::id().to_string())
            .with_label("mco-conformance.pidns", super::image::pid_namespace())
            .with_env_var("NODE_NAME", name)
            .with_env_var("MCO_PROFILE", profile.as_str())
            .with_env_var("MCO_AGENT_COMMAND", agent)
            .with_env_var("MCO_NOW", rfc3339(clock.now()))
            .with_startup_timeout(Duration::from_secs(60));
        let container = {
            let _slot = STARTING
                .acquire()
                .await
                .map_err(|e| start_error(name, e.to_string()))?;
            request
                .start()
                .await
                .map_err(|e| start_error(name, format!("starting {}: {e}", spec.image)))?
        };
        let socket = dir.path().join(
            std::path::Path::new(CONTROL_SOCKET)
                .file_name()
                .unwrap_or_default(),
        );
        let control = ControlClient::new(socket);
        // The node's clock follows the scenario's, set through the control socket in a task of
        // its own; a node that is gone refuses at once, and `follow_clock` says so.
        let start = clock.now();
        control
            .call::<serde_json::Value>(&Request::SetNow { now: rfc3339(start) })
            .await
            .map_err(|e| start_error(name, e.to_string()))?;
        let (set, clock_set) = tokio::sync::watch::channel(Ok(start));
        let follower = control.clone();
        let follower = ClockFollower::spawn(clock, start, move |now| {
            let (follower, set) = (follower.clone(), set.clone());
            async move {
                let result = follower
                    .call::<serde_json::Value>(&Request::SetNow { now: rfc3339(now) })
                    .await;
                set.send_modify(|set| *set = result.map(|_| now).map_err(|e| e.to_string()));
            }
        });
        Ok(ContainerNode {
            name: name.into(),
            id: container.id().to_string(),
            control,
            container: tokio::sync::Mutex::new(Some(container)),
            clock_set,
            _follower: follower,
            control_dir: dir,
        })
    }

    /// Wrap the agent's next start in `wrapper` (a tracer), once, over the init's socket.
    pub async fn arm_agent_launch(&self, wrapper: Vec<String>) -> Result<(), NodeError> {
        self.call::<serde_json::Value>("<agent launch>", Request::ArmAgentLaunch { wrapper })
            .await
            .map(drop)
    }

    /// How the armed start stands, waiting up to `wait` on the node for it to end.
    pub async fn agent_launch_state(&self, wait: Duration) -> Result<super::crash::LaunchState, NodeError> {
        let timeout_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        self.call("<agent launch>", Request::AgentLaunchState { timeout_ms })
            .await
    }

    /// The armed start over: its service manager may restart the agent.
    pub async fn end_agent_launch(&self) -> Result<(), NodeError> {
        self.call::<serde_json::Value>("<agent launch>", Request::EndAgentLaunch)
            .await
            .map(drop)
    }

    /// A directory this host and the node both see (the control directory's bind mount): its
    /// path here, and on the node.
    pub fn shared_dir(&self) -> (&std::path::Path, &'static str) {
        (self.control_dir.path(), CONTROL_DIR)
    }

    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        request: Request,
    ) -> Result<T, NodeError> {
        self.control
            .call(&request)
            .await
            .map_err(|e| ControlClient::node_error(&self.name, path, e))
    }
}

#[async_trait::async_trait]
impl Node for ContainerNode {
    fn as_container(&self) -> Option<&ContainerNode> {
        Some(self)
    }

    async fn follow_clock(&self, now: time::OffsetDateTime) -> Result<(), NodeError> {
        let error = |reason: String| NodeError::Clock {
            node: self.name.clone(),
            at: rfc3339(now),
            reason,
        };
        let mut set = self.clock_set.clone();
        let latest = set
            .wait_for(|set| set.as_ref().map_or(true, |at| *at >= now))
            .await
            .map_err(|_| error("its clock follower ended".into()))?
            .clone();
        latest.map(|_| ()).map_err(error)
    }

    fn name(&self) -> &str {
        &self.name
    }

    async fn read(&self, path: &str) -> Result<Vec<u8>, NodeError> {
        let text: String = self.call(path, Request::Read { path: path.into() }).await?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| {
                ControlClient::node_error(
                    &self.name,
                    path,
                    super::control::ControlError::Protocol {
                        socket: self.control.socket().to_path_buf(),
                        message: e.to_string(),
                    },
                )
            })
    }

    async fn write(&self, path: &str, contents: &[u8], mode: u32) -> Result<(), NodeError> {
        let request = Request::Write {
            path: path.into(),
            base64: base64::engine::general_purpose::STANDARD.encode(contents),
            mode,
        };
        self.call::<serde_json::Value>(path, request).await.map(drop)
    }

    async fn remove(&self, path: &str) -> Result<(), NodeError> {
        self.call::<serde_json::Value>(path, Request::Remove { path: path.into() })
            .await
            .map(drop)
    }

    async fn create_dir(&self, path: &str) -> Result<(), NodeError> {
        self.call::<serde_json::Value>(path, Request::CreateDir { path: path.into() })
            .await
            .map(drop)
    }

    async fn list(&self, dir: &str) -> Result<Vec<String>, NodeError> {
        self.call(dir, Request::List { path: dir.into() }).await
    }

    async fn stat(&self, path: &str) -> Result<Option<FileStat>, NodeError> {
        self.control
            .stat(path)
            .await
            .map_err(|e| ControlClient::node_error(&self.name, path, e))
    }

    async fn journal_mark(&self) -> Result<JournalMark, NodeError> {
        Ok(JournalMark(self.call("<journal>", Request::JournalMark).await?))
    }

    async fn journal_since(&self, mark: JournalMark) -> Result<Vec<String>, NodeError> {
        self.call("<journal>", Request::JournalSince { mark: mark.0 })
            .await
    }

    async fn wait_for_journal(
        &self,
        mark: JournalMark,
        needle: &str,
        deadline: Duration,
    ) -> Result<Option<String>, NodeError> {
        let request = Request::WaitJournal {
            mark: mark.0,
            needle: needle.into(),
            timeout_ms: u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
        };
        self.call("<journal>", request).await
    }

    async fn systemctl(&self, args: &[&str]) -> Result<Outcome, NodeError> {
        let request = Request::Systemctl {
            args: args.iter().map(|a| a.to_string()).collect(),
        };
        let out: CommandOutput = self.call("systemctl", request).await?;
        Ok(Outcome {
            exit_code: out.exit_code,
            stdout: out.stdout,
            stderr: out.stderr,
            ..Default::default()
        })
    }

    async fn kubelet_endpoint(&self) -> Result<Option<SocketAddr>, NodeError> {
        self.call("<kubelet>", Request::KubeletEndpoint).await
    }

    async fn boot_id(&self) -> Result<String, NodeError> {
        self.call("<boot id>", Request::BootId).await
    }

    async fn boot(&self) -> Result<(), NodeError> {
        self.call::<serde_json::Value>("<boot>", Request::Boot)
            .await
            .map(|_| ())
    }

    fn container_id(&self) -> Option<String> {
        Some(self.id.clone())
    }

    async fn shutdown(&self) {
        let _ = self
            .call::<serde_json::Value>("<shutdown>", Request::Shutdown)
            .await;
        if let Some(container) = self.container.lock().await.take() {
            let _ = container.rm().await;
        }
    }
}
