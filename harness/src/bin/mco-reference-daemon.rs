//! `mco-reference-daemon`: the reference daemon as its own process, for any node. It takes the
//! agent contract's environment (`KUBECONFIG`, `NODE_NAME`, `MCO_NODE_ROOT`, `MCO_PROFILE`,
//! `systemctl` on `PATH`), logs to stdout, and stops on SIGTERM or SIGINT.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("mco-reference-daemon {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let env = match harness::agent::AgentEnv::from_contract().await {
        Ok(env) => env,
        Err(e) => {
            eprintln!("mco-reference-daemon: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = harness::agent::process::stop_on_signals();
    harness::agent::run(env, stop).await;
    ExitCode::SUCCESS
}
