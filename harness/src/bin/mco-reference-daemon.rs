//! `mco-reference-daemon`: the reference daemon as its own process, for any node. It takes the
//! agent contract's environment (`KUBECONFIG`, `NODE_NAME`, `MCO_NODE_ROOT`, `MCO_PROFILE`,
//! `systemctl` on `PATH`), logs to stdout, and stops on SIGTERM or SIGINT.

use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

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
    let stop = CancellationToken::new();
    let on_signal = stop.clone();
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
        else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        on_signal.cancel();
    });
    harness::agent::run(env, stop).await;
    ExitCode::SUCCESS
}
