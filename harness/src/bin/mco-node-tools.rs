//! `mco-node-tools`: a node's `systemctl`, `journalctl` and `logger` in one binary, chosen by
//! the name it is run as. Each asks the node's service manager and journal over the node's
//! control socket and exits as they answer.

fn main() -> std::process::ExitCode {
    let mut args = std::env::args();
    let argv0 = args.next().unwrap_or_default();
    let code = harness::node::tools::main(&argv0, args.collect());
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
}
