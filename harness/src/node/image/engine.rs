//! The Docker engine as the node backend asks it, through the `docker` command: an agent
//! image's command, image ids, the node containers a killed run left, whether an engine is
//! there at all.

use super::ImageError;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// `docker <args>`, with `stdin` piped in; its trimmed standard output, or an error naming the
/// command and what it said.
pub(super) fn docker(args: &[&str], stdin: Option<&[u8]>) -> Result<String, ImageError> {
    let command = args.join(" ");
    let failed = |message: String| ImageError::Docker {
        command: command.clone(),
        message,
    };
    let mut child = Command::new("docker")
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(bytes).map_err(|e| failed(e.to_string()))?;
    }
    let out = child.wait_with_output().map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        return Err(failed(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The command an agent image runs (its entrypoint, then its command), which a container node's
/// init runs as the agent service. The image must exist locally and name a command.
pub fn agent_image_command(image: &str) -> Result<Vec<String>, ImageError> {
    let json = docker(
        &[
            "image",
            "inspect",
            "--format",
            "{{json .Config.Entrypoint}} {{json .Config.Cmd}}",
            image,
        ],
        None,
    )?;
    let mut command = Vec::new();
    for part in json.split_whitespace() {
        let words: Option<Vec<String>> = serde_json::from_str(part).map_err(|e| ImageError::Docker {
            command: format!("image inspect {image}"),
            message: format!("unreadable entrypoint or command {part:?}: {e}"),
        })?;
        command.extend(words.unwrap_or_default());
    }
    if command.is_empty() {
        return Err(ImageError::Docker {
            command: format!("image inspect {image}"),
            message: "the image has no ENTRYPOINT or CMD: set the agent as its ENTRYPOINT".into(),
        });
    }
    Ok(command)
}

/// A local image's id (`sha256:…`).
pub fn image_id(image: &str) -> Result<String, ImageError> {
    docker(&["image", "inspect", "--format", "{{.Id}}", image], None)
}

/// Node containers a run left behind when it was killed outright (SIGKILL, a CI job's timeout),
/// which no signal handler sees: labelled `mco-conformance.node` by a process (label
/// `mco-conformance.pid`) that no longer runs here. Removed; their ids returned. Containers of
/// runs still going are left alone, and so are those made in another PID namespace (another
/// container sharing this Docker engine), whose processes cannot be seen from here.
pub fn remove_orphaned_nodes() -> Result<Vec<String>, ImageError> {
    let namespace = format!("label=mco-conformance.pidns={}", pid_namespace());
    let listed = docker(
        &[
            "ps",
            "-a",
            "--filter",
            "label=mco-conformance.node",
            "--filter",
            &namespace,
            "--format",
            "{{.ID}} {{.Label \"mco-conformance.pid\"}}",
        ],
        None,
    )?;
    let mut removed = Vec::new();
    for line in listed.lines() {
        let mut parts = line.split_whitespace();
        let (Some(id), Some(pid)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        docker(&["rm", "-f", id], None)?;
        removed.push(id.to_string());
    }
    Ok(removed)
}

/// This process's PID namespace (`pid:[4026531836]`), which node containers are labelled
/// with: a pid means something only in its own namespace.
pub fn pid_namespace() -> String {
    std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into())
}

/// Why no Docker engine can be used here, if none can (`docker version` against the daemon).
pub fn docker_unavailable() -> Option<String> {
    match docker(&["version", "--format", "{{.Server.Version}}"], None) {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    }
}
