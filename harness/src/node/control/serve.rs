//! The serving side of a node's control socket (`super` has the protocol and the client): each
//! connection's one request carried out on an embedded node, in the node's init or beside an
//! agent process, and its one reply.

use super::{ControlFailure, Reply, Request, Scope, StatWire, to_json};
use crate::node::{CommandOutput, EmbeddedNode, JournalMark, Node, NodeError};
use base64::Engine;
use serde_json::Value;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

/// Serve `listener` for `node` until `stop` is cancelled (or, on the init's socket, until a
/// `shutdown` request, which cancels `stop` itself).
/// Serve node requests on `listener` until `stop`. With `output`, the requests come from a
/// service process's tools, and each is carried out once that process's output written before
/// it is in the journal (so the journal keeps the order the process acted in).
pub async fn serve(
    listener: UnixListener,
    node: EmbeddedNode,
    scope: Scope,
    stop: CancellationToken,
    output: Option<std::sync::Arc<crate::node::output::OutputSync>>,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => if let Ok((stream, _)) = accepted {
                let (node, stop, output) = (node.clone(), stop.clone(), output.clone());
                tokio::spawn(async move { answer(node, scope, stream, stop, output).await });
            },
        }
    }
}

async fn answer(
    node: EmbeddedNode,
    scope: Scope,
    stream: tokio::net::UnixStream,
    stop: CancellationToken,
    output: Option<std::sync::Arc<crate::node::output::OutputSync>>,
) {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    if BufReader::new(read).read_line(&mut line).await.is_err() {
        return;
    }
    if let Some(output) = &output {
        output.caught_up().await;
    }
    let reply = match serde_json::from_str::<Request>(&line) {
        Ok(request) => match carry_out(&node, scope, request, &stop).await {
            Ok(value) => Reply::Ok(value),
            Err(f) => Reply::Err(f),
        },
        Err(e) => Reply::Err(ControlFailure {
            kind: "refused".into(),
            message: format!("not a node request: {e}"),
        }),
    };
    let mut text = serde_json::to_string(&reply).unwrap_or_default();
    text.push('\n');
    let _ = write.write_all(text.as_bytes()).await;
}

async fn carry_out(
    node: &EmbeddedNode,
    scope: Scope,
    request: Request,
    stop: &CancellationToken,
) -> Result<Value, ControlFailure> {
    let node_err = |e: NodeError| failure(&e);
    let refused = |what: &str| ControlFailure {
        kind: "refused".into(),
        message: format!("{what} is answered only on the node's init socket"),
    };
    Ok(match request {
        Request::Systemctl { args } => {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            to_json(&CommandOutput::from(
                node.systemctl(&args).await.map_err(node_err)?,
            ))
        }
        Request::Log {
            ident,
            pid,
            message,
            fields,
        } => {
            node.journal().log_fields(
                crate::pki::Clock::now(node.clock()),
                &ident,
                pid,
                &message,
                &fields,
            );
            Value::Null
        }
        Request::RunTransient {
            unit,
            description,
            command,
            env,
        } => {
            run_transient(node, &unit, &description, &command, &env)?;
            Value::Null
        }
        journal @ (Request::JournalEntries { .. }
        | Request::JournalMark
        | Request::JournalSince { .. }
        | Request::WaitJournal { .. }) => journal_request(node, journal).await?,
        Request::KubeletEndpoint => to_json(&node.kubelet_endpoint().await.map_err(node_err)?),
        Request::BootId => to_json(&node.boot_id().await.map_err(node_err)?),
        Request::SetNow { now } if scope == Scope::Init => set_now(node, &now).await?,
        launch @ (Request::ArmAgentLaunch { .. }
        | Request::AgentLaunchState { .. }
        | Request::EndAgentLaunch)
            if scope == Scope::Init =>
        {
            launch_request(node, launch).await
        }
        Request::Boot if scope == Scope::Init => {
            node.boot().await;
            Value::Null
        }
        Request::Shutdown if scope == Scope::Init => {
            node.shutdown().await;
            stop.cancel();
            Value::Null
        }
        Request::SetNow { .. } => return Err(refused("set-now")),
        Request::ArmAgentLaunch { .. } | Request::AgentLaunchState { .. } | Request::EndAgentLaunch => {
            return Err(refused("an agent launch"));
        }
        Request::Boot => return Err(refused("boot")),
        Request::Shutdown => return Err(refused("shutdown")),
        files @ (Request::Read { .. }
        | Request::Write { .. }
        | Request::Remove { .. }
        | Request::CreateDir { .. }
        | Request::List { .. }
        | Request::Stat { .. }) => file_request(node, files).await?,
    })
}

/// A request about the agent's next start, which the harness arms for crash injection
/// (`crate::node::crash`): arm it, ask how it stands, end it.
async fn launch_request(node: &EmbeddedNode, request: Request) -> Value {
    match request {
        Request::ArmAgentLaunch { wrapper } => {
            node.arm_remote_launch(wrapper);
            Value::Null
        }
        Request::AgentLaunchState { timeout_ms } => {
            let wait = Duration::from_millis(timeout_ms.min(MAX_WAIT_MS));
            to_json(&node.remote_launch_state(wait).await)
        }
        Request::EndAgentLaunch => {
            node.end_remote_launch();
            Value::Null
        }
        // Only the three above are sent here (`carry_out`).
        _ => Value::Null,
    }
}

/// A request about the node's journal: a mark, the lines or entries since one, a wait for a line.
async fn journal_request(node: &EmbeddedNode, request: Request) -> Result<Value, ControlFailure> {
    let node_err = |e: NodeError| failure(&e);
    Ok(match request {
        Request::JournalEntries { mark } => to_json(&node.journal().entries_since(JournalMark(mark))),
        Request::JournalMark => to_json(&node.journal_mark().await.map_err(node_err)?.0),
        Request::JournalSince { mark } => {
            to_json(&node.journal_since(JournalMark(mark)).await.map_err(node_err)?)
        }
        Request::WaitJournal {
            mark,
            needle,
            timeout_ms,
        } => to_json(
            &node
                .wait_for_journal(JournalMark(mark), &needle, Duration::from_millis(timeout_ms))
                .await
                .map_err(node_err)?,
        ),
        other => {
            return Err(ControlFailure {
                kind: "refused".into(),
                message: format!("not a request about the journal: {other:?}"),
            });
        }
    })
}

/// A request about the node's files: read, write, remove, create a directory, list, stat.
async fn file_request(node: &EmbeddedNode, request: Request) -> Result<Value, ControlFailure> {
    let node_err = |e: NodeError| failure(&e);
    Ok(match request {
        Request::Read { path } => {
            let bytes = node.read(&path).await.map_err(node_err)?;
            to_json(&base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        Request::Write { path, base64, mode } => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(base64)
                .map_err(|e| ControlFailure {
                    kind: "refused".into(),
                    message: format!("contents of {path}: {e}"),
                })?;
            node.write(&path, &bytes, mode).await.map_err(node_err)?;
            Value::Null
        }
        Request::Remove { path } => {
            node.remove(&path).await.map_err(node_err)?;
            Value::Null
        }
        Request::CreateDir { path } => {
            node.create_dir(&path).await.map_err(node_err)?;
            Value::Null
        }
        Request::List { path } => to_json(&node.list(&path).await.map_err(node_err)?),
        Request::Stat { path } => to_json(&node.stat(&path).await.map_err(node_err)?.map(StatWire::from)),
        other => {
            return Err(ControlFailure {
                kind: "refused".into(),
                message: format!("not a request about files: {other:?}"),
            });
        }
    })
}

/// `set-now`: move the node's clock to `now` (RFC 3339), answered once the node follows.
async fn set_now(node: &EmbeddedNode, now: &str) -> Result<Value, ControlFailure> {
    let at =
        time::OffsetDateTime::parse(now, &time::format_description::well_known::Rfc3339).map_err(|e| {
            ControlFailure {
                kind: "refused".into(),
                message: format!("set-now {now:?}: {e}"),
            }
        })?;
    let clock = node.clock();
    clock.advance(at - crate::pki::Clock::now(clock));
    // Answered once the node follows: its now file holds the new instant.
    node.follow_clock(at).await.map_err(|e| failure(&e))?;
    Ok(Value::Null)
}

/// Start `command` as the transient unit `unit`, as systemd does for `systemd-run`: a journal
/// line that it started, its output under the unit's name, and one when it ends.
fn run_transient(
    node: &EmbeddedNode,
    unit: &str,
    description: &str,
    command: &[String],
    env: &[(String, String)],
) -> Result<(), ControlFailure> {
    let refused = |message: String| ControlFailure {
        kind: "refused".into(),
        message,
    };
    let (program, args) = command
        .split_first()
        .ok_or_else(|| refused("systemd-run: a command is needed".into()))?;
    let unit = if unit.is_empty() {
        format!("run-u{}", std::process::id())
    } else {
        unit.trim_end_matches(".service").to_string()
    };
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| refused(format!("systemd-run: {program}: {e}")))?;
    let journal = node.journal().clone();
    let clock = node.clock().clone();
    let now = move || crate::pki::Clock::now(&clock);
    let what = if description.is_empty() {
        format!("{unit}.service")
    } else {
        format!("{unit}.service - {description}")
    };
    journal.systemd(now(), &format!("Started {what}."));
    let pid = child.id().unwrap_or_default();
    tokio::spawn(async move {
        let lines = |stream: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>>| {
            let journal = journal.clone();
            let unit = unit.clone();
            let now = now.clone();
            async move {
                let Some(stream) = stream else { return };
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    journal.log(now(), &unit, pid, &line);
                }
            }
        };
        let stdout = child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>);
        let stderr = child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>);
        tokio::join!(lines(stdout), lines(stderr));
        let status = child.wait().await;
        let ended = match status {
            Ok(s) if s.success() => format!("{unit}.service: Deactivated successfully."),
            Ok(s) => format!("{unit}.service: Main process exited, status={s}"),
            Err(e) => format!("{unit}.service: {e}"),
        };
        journal.systemd(now(), &ended);
    });
    Ok(())
}

/// The longest a request waits on the node before it answers (the client gives up at 30 s).
const MAX_WAIT_MS: u64 = 10_000;

fn failure(e: &NodeError) -> ControlFailure {
    let kind = match e {
        NodeError::BadPath { .. } => "bad-path",
        NodeError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => "not-found",
        NodeError::Io { .. } => "io",
        NodeError::Clock { .. } => "clock",
        NodeError::Agent { .. } => "agent",
    };
    let message = match e {
        NodeError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    ControlFailure {
        kind: kind.into(),
        message,
    }
}
