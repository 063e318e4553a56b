//! `mco-reference-daemon`: the reference daemon as its own process, for any node. It takes the
//! agent contract's environment (`KUBECONFIG`, `NODE_NAME`, `MCO_NODE_ROOT`, `MCO_PROFILE`,
//! `systemctl` on `PATH`), logs to stdout, and stops on SIGTERM or SIGINT.
//!
//! `--mutant NAME` runs it with one behaviour broken on purpose (`harness::agent::mutant`), for
//! the suite's self-test and for anyone who wants to see a scenario reject a known fault.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("mco-reference-daemon {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    // `--mutant NAME` picks a mutant; anything else (an image's CMD, say) is ignored, and said.
    let mut args = std::env::args().skip(1);
    let mut mutant = None;
    while let Some(arg) = args.next() {
        if arg != "--mutant" {
            eprintln!("mco-reference-daemon: ignoring argument {arg:?}");
            continue;
        }
        match args.next().map(|name| name.parse::<harness::agent::Mutant>()) {
            Some(Ok(m)) => mutant = Some(m),
            Some(Err(e)) => {
                eprintln!("mco-reference-daemon: {e}");
                return ExitCode::from(2);
            }
            None => {
                eprintln!("mco-reference-daemon: --mutant needs a name");
                return ExitCode::from(2);
            }
        }
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let env = match harness::agent::AgentEnv::from_contract().await {
        Ok(env) => harness::agent::AgentEnv { mutant, ..env },
        Err(e) => {
            eprintln!("mco-reference-daemon: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = harness::node::agent_service::stop_on_signals();
    match harness::agent::run(env, stop).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}
