//! `mco-reference-daemon`: the reference daemon as its own process, for any node. It takes the
//! agent contract's environment (`KUBECONFIG`, `NODE_NAME`, `MCO_NODE_ROOT`, `MCO_PROFILE`,
//! `systemctl` on `PATH`), logs to stdout, and stops on SIGTERM or SIGINT.
//!
//! `--mutant NAME` runs it with one behaviour broken on purpose (`harness::agent::mutant`), for
//! the suite's self-test and for anyone who wants to see a scenario reject a known fault.
//! `mco-conformance reference-daemon` is the same program (`harness::agent::process::daemon_main`).

#[tokio::main]
async fn main() -> std::process::ExitCode {
    harness::agent::process::daemon_main(std::env::args().skip(1)).await
}
