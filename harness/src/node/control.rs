//! A node's control socket: how everything outside a node's service manager reaches it.
//!
//! One request per connection, one JSON line each way. The same protocol serves:
//! - the node's own tools (`systemctl`, `journalctl`, `logger`: the `mco-node-tools`
//!   multi-call binary), inside a container node or beside an agent process on an embedded
//!   node;
//! - the harness, for a container node: every `Node` call is carried out by the node's init
//!   (`mco-node-init`, PID 1) inside the container, so files, modes and ownership are what the
//!   container's kernel says, as an agent there sees them. The socket sits in a directory the
//!   harness bind-mounts into the container.
//!
//! Requests that run a node's life (`set-now`, `boot`, `shutdown`) are answered only on the
//! init's socket (`Scope::Init`); an agent's tools get `Scope::Tools`.
//!
//! Here: the protocol and the client; `serve`: the serving side, on an embedded node.

use super::{FileStat, NodeError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

mod serve;
pub use serve::serve;

/// The directory of the init's socket inside a container node (not under `/run`, which a
/// reboot empties).
pub const CONTROL_DIR: &str = "/var/lib/mco-conformance/control";
/// The init's socket inside a container node; the node's tools ask it unless
/// `NODE_SOCKET_ENV` names another.
pub const CONTROL_SOCKET: &str = "/var/lib/mco-conformance/control/init.sock";
/// Set for an agent process: the socket its `systemctl`, `journalctl` and `logger` ask.
pub const NODE_SOCKET_ENV: &str = "MCO_NODE_SOCKET";
/// What the init prints once its socket answers.
pub const READY_LINE: &str = "mco-node-init: ready";

/// The client a node's own tools (`mco-node-tools`) use: the socket `NODE_SOCKET_ENV` names,
/// else the init's.
pub fn tools_client() -> ControlClient {
    ControlClient::new(std::env::var(NODE_SOCKET_ENV).unwrap_or_else(|_| CONTROL_SOCKET.to_string()))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Request {
    Systemctl {
        args: Vec<String>,
    },
    /// One journal line from `ident[pid]` (what `logger` sends), with the journald fields of
    /// the writer's own (`logger --journald`).
    Log {
        ident: String,
        pid: u32,
        message: String,
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        fields: std::collections::BTreeMap<String, String>,
    },
    /// Run a command as a transient unit of the node's service manager (`systemd-run`):
    /// started at once and not waited for, its output in the journal under the unit's name.
    /// `env` is what the command needs of its caller's environment (`PATH`, the node socket).
    RunTransient {
        unit: String,
        description: String,
        command: Vec<String>,
        #[serde(default)]
        env: Vec<(String, String)>,
    },
    JournalMark,
    JournalSince {
        mark: usize,
    },
    /// The journal's entries after `mark`, with their fields (`journalctl -o json`, matches).
    JournalEntries {
        mark: usize,
    },
    WaitJournal {
        mark: usize,
        needle: String,
        timeout_ms: u64,
    },
    Read {
        path: String,
    },
    Write {
        path: String,
        base64: String,
        mode: u32,
    },
    Remove {
        path: String,
    },
    CreateDir {
        path: String,
    },
    List {
        path: String,
    },
    Stat {
        path: String,
    },
    KubeletEndpoint,
    BootId,
    /// Move the node's simulated clock to this RFC 3339 instant (never backwards).
    SetNow {
        now: String,
    },
    /// Wrap the agent's next start in `wrapper` (a tracer), once (`crate::node::crash`).
    ArmAgentLaunch {
        wrapper: Vec<String>,
    },
    /// How the armed start stands (`LaunchState`), waiting up to `timeout_ms` for it to end.
    AgentLaunchState {
        timeout_ms: u64,
    },
    /// The armed start over: the agent's service manager may restart it.
    EndAgentLaunch,
    /// First boot: start the enabled units.
    Boot,
    /// Stop every service; the init exits.
    Shutdown,
}

/// A failed request, as the other side can rebuild it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlFailure {
    /// `not-found`, `bad-path`, `io` or `refused`.
    pub kind: String,
    pub message: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Reply {
    Ok(Value),
    Err(ControlFailure),
}

/// Which requests a socket answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The node's tools: service manager, journal, files.
    Tools,
    /// The init's socket: also the node's clock, boot and shutdown.
    Init,
}

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("cannot reach the node at {socket}: {source}")]
    Transport {
        socket: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the node at {socket} answered what cannot be read: {message}")]
    Protocol { socket: PathBuf, message: String },
    #[error("{}", .0.message)]
    Failed(ControlFailure),
}

/// `FileStat` on the wire.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct StatWire {
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    inode: u64,
}

impl From<FileStat> for StatWire {
    fn from(s: FileStat) -> Self {
        StatWire {
            mode: s.mode,
            uid: s.uid,
            gid: s.gid,
            size: s.size,
            inode: s.inode,
        }
    }
}

impl From<StatWire> for FileStat {
    fn from(s: StatWire) -> Self {
        FileStat {
            mode: s.mode,
            uid: s.uid,
            gid: s.gid,
            size: s.size,
            inode: s.inode,
        }
    }
}

/// A reply value; our own types always serialise, so a failure reads as null, not a panic.
fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The client side of a node's control socket.
#[derive(Debug, Clone)]
pub struct ControlClient {
    socket: PathBuf,
}

impl ControlClient {
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        ControlClient {
            socket: socket.into(),
        }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    fn decode<T: serde::de::DeserializeOwned>(&self, line: &str) -> Result<T, ControlError> {
        let protocol = |message: String| ControlError::Protocol {
            socket: self.socket.clone(),
            message,
        };
        match serde_json::from_str::<Reply>(line) {
            Ok(Reply::Ok(value)) => serde_json::from_value(value).map_err(|e| protocol(e.to_string())),
            Ok(Reply::Err(f)) => Err(ControlError::Failed(f)),
            Err(e) => Err(protocol(format!("{e}: {:?}", line.trim()))),
        }
    }

    fn transport(&self, source: std::io::Error) -> ControlError {
        ControlError::Transport {
            socket: self.socket.clone(),
            source,
        }
    }

    /// One request, from async code.
    pub async fn call<T: serde::de::DeserializeOwned>(&self, request: &Request) -> Result<T, ControlError> {
        let stream = tokio::net::UnixStream::connect(&self.socket)
            .await
            .map_err(|e| self.transport(e))?;
        let (read, mut write) = stream.into_split();
        let mut text =
            serde_json::to_string(request).map_err(|e| self.transport(std::io::Error::other(e)))?;
        text.push('\n');
        write
            .write_all(text.as_bytes())
            .await
            .map_err(|e| self.transport(e))?;
        let mut line = String::new();
        BufReader::new(read)
            .read_line(&mut line)
            .await
            .map_err(|e| self.transport(e))?;
        if line.is_empty() {
            return Err(self.transport(std::io::ErrorKind::UnexpectedEof.into()));
        }
        self.decode(&line)
    }

    /// One request, from a plain thread (the node's tools, clock listeners).
    pub fn call_blocking<T: serde::de::DeserializeOwned>(
        &self,
        request: &Request,
    ) -> Result<T, ControlError> {
        use std::io::{BufRead, Write};
        let mut stream =
            std::os::unix::net::UnixStream::connect(&self.socket).map_err(|e| self.transport(e))?;
        let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
        let mut text =
            serde_json::to_string(request).map_err(|e| self.transport(std::io::Error::other(e)))?;
        text.push('\n');
        stream.write_all(text.as_bytes()).map_err(|e| self.transport(e))?;
        let mut line = String::new();
        std::io::BufReader::new(stream)
            .read_line(&mut line)
            .map_err(|e| self.transport(e))?;
        if line.is_empty() {
            return Err(self.transport(std::io::ErrorKind::UnexpectedEof.into()));
        }
        self.decode(&line)
    }

    /// A `Node` error for `path` from a failed request.
    pub fn node_error(node: &str, path: &str, e: ControlError) -> NodeError {
        match e {
            ControlError::Failed(f) if f.kind == "bad-path" => NodeError::BadPath {
                node: node.into(),
                path: path.into(),
            },
            ControlError::Failed(f) if f.kind == "not-found" => NodeError::Io {
                node: node.into(),
                path: path.into(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, f.message),
            },
            other => NodeError::Io {
                node: node.into(),
                path: path.into(),
                source: std::io::Error::other(other.to_string()),
            },
        }
    }

    pub async fn stat(&self, path: &str) -> Result<Option<FileStat>, ControlError> {
        let wire: Option<StatWire> = self.call(&Request::Stat { path: path.into() }).await?;
        Ok(wire.map(FileStat::from))
    }
}
