//! `mco-node-systemctl`: the `systemctl` an agent process finds on its `PATH` on an embedded
//! node. It hands its arguments to the node's service manager over `MCO_SYSTEMCTL_SOCKET` and
//! exits as the service manager says.

fn main() -> std::process::ExitCode {
    let code = harness::agent::process::systemctl_shim_main(std::env::args().skip(1).collect());
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
}
