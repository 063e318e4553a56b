//! The programs an embedded node starts as processes: the reference daemon (when a scenario
//! runs it under strace, as the crash features do) and the node tools an agent process finds
//! on its `PATH` as `systemctl`, `journalctl` and `logger`.
//!
//! `mco-conformance` and the `cargo test` conformance runner are all of them themselves
//! (`crate::runner::node_roles`): each answers to `reference-daemon` as its first argument and,
//! run under a tool's name, is that tool. So `cargo run --bin mco-conformance -- run`, which
//! builds that one binary, runs every embedded scenario with the code it was built from, never
//! with an older `mco-reference-daemon` left beside it. Any other program of this crate (a
//! libtest binary) starts the binaries `cargo build --bins` puts beside it, as `cargo test`
//! builds them.

use super::agent_service::NODE_TOOLS;
use super::image::ImageError;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// The first argument that makes a runner the reference daemon (`mco-conformance
/// reference-daemon [--mutant NAME]`).
pub const REFERENCE_DAEMON_SUBCOMMAND: &str = "reference-daemon";

static THIS_PROGRAM_SERVES: AtomicBool = AtomicBool::new(false);

/// Called by a program that answers to [`REFERENCE_DAEMON_SUBCOMMAND`] and to the node tools'
/// names (`crate::runner::node_roles::serve_if_asked` calls it): the node processes are then
/// started from it.
pub fn this_program_serves_node_roles() {
    THIS_PROGRAM_SERVES.store(true, Ordering::Relaxed);
}

/// A program and the arguments that come before any of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub path: PathBuf,
    pub args: Vec<String>,
}

/// The reference daemon as a process.
pub fn reference_daemon() -> Result<Program, ImageError> {
    if let Some(this) = serving_program()? {
        return Ok(Program {
            path: this,
            args: vec![REFERENCE_DAEMON_SUBCOMMAND.to_string()],
        });
    }
    Ok(Program {
        path: beside_this_program("mco-reference-daemon")?,
        args: Vec::new(),
    })
}

/// The node tools' binary (run under each tool's name).
pub fn node_tools() -> Result<PathBuf, ImageError> {
    match serving_program()? {
        Some(this) => Ok(this),
        None => beside_this_program(NODE_TOOLS),
    }
}

/// This program, when it serves the node roles itself: as `/proc/<pid>/exe`, which names the
/// program this process runs even after its file was replaced or removed (a rebuild during a
/// run), and which a child started through strace resolves as this process's, not its own.
fn serving_program() -> Result<Option<PathBuf>, ImageError> {
    if !THIS_PROGRAM_SERVES.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let own = PathBuf::from(format!("/proc/{}/exe", std::process::id()));
    if own.exists() {
        return Ok(Some(own));
    }
    std::env::current_exe()
        .map(Some)
        .map_err(|e| ImageError::Io(PathBuf::from("<this program>"), e))
}

/// `name` in this program's directory (a test's `deps/` counts as its parent, where cargo puts
/// the crate's binaries).
pub(crate) fn beside_this_program(name: &str) -> Result<PathBuf, ImageError> {
    let exe = std::env::current_exe().map_err(|e| ImageError::Io(PathBuf::from("<this program>"), e))?;
    let mut dir = exe.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(ImageError::MissingBinary(path))
    }
}
