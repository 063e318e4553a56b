//! What the steps of a certificate sync share: why one failed (`SyncError`), and how one writes
//! a file (upstream's `writeToDisk`). The writer's flow and its steps (`registry`, the
//! kubeconfig) use it; it knows none of them.

use crate::agent::AgentEnv;
use std::os::unix::fs::PermissionsExt;

/// Why a sync failed: the API (try again) or this node's state (also marks it Degraded).
pub(super) enum SyncError {
    Transient(String),
    Node(String),
}

impl From<String> for SyncError {
    fn from(e: String) -> Self {
        SyncError::Transient(e)
    }
}

/// `writeToDisk`: a trailing newline, the existing file's mode (0644 for a new one).
pub(super) fn write_to_disk(env: &AgentEnv, node_path: &str, mut data: Vec<u8>) -> std::io::Result<()> {
    if data.last() != Some(&b'\n') {
        data.push(b'\n');
    }
    let mode = std::fs::metadata(env.path(node_path))
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    env.faults().write_node_file(node_path, &data, mode)
}
