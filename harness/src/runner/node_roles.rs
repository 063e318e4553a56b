//! A runner that is also the programs its embedded nodes start (`crate::node::programs`): the
//! reference daemon, when a scenario traces it, and the node tools on an agent's `PATH`. Both
//! `mco-conformance` and the `cargo test` conformance runner call [`serve_if_asked`] first, so
//! neither needs another binary of the crate built beside it for an embedded run.

use crate::node::agent_service::TOOL_NAMES;
use crate::node::programs::{REFERENCE_DAEMON_SUBCOMMAND, this_program_serves_node_roles};
use std::process::ExitCode;

/// When this process was started as a node program (under a node tool's name, or with
/// [`REFERENCE_DAEMON_SUBCOMMAND`] as its first argument), run as that program and give its exit
/// code. Otherwise say this program serves the node roles (`node::programs` then starts them
/// from it) and give `None`: the caller goes on as itself. Call it before any async runtime is
/// started: the daemon starts its own.
pub fn serve_if_asked() -> Option<ExitCode> {
    let mut args = std::env::args();
    let argv0 = args.next().unwrap_or_default();
    let name = std::path::Path::new(&argv0).file_name().and_then(|n| n.to_str());
    if name.is_some_and(|n| TOOL_NAMES.contains(&n)) {
        let code = crate::node::tools::main(&argv0, args.collect());
        return Some(ExitCode::from(u8::try_from(code).unwrap_or(1)));
    }
    let rest: Vec<String> = args.collect();
    if rest.first().map(String::as_str) == Some(REFERENCE_DAEMON_SUBCOMMAND) {
        let runtime = match tokio::runtime::Runtime::new() {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("mco-reference-daemon: cannot start the async runtime: {e}");
                return Some(ExitCode::FAILURE);
            }
        };
        return Some(runtime.block_on(crate::agent::process::daemon_main(rest.into_iter().skip(1))));
    }
    this_program_serves_node_roles();
    None
}
