//! `mco-node-init`: PID 1 of a container node (see `harness::node::init`).

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = match harness::node::init::InitConfig::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mco-node-init: {e}");
            return ExitCode::from(2);
        }
    };
    match harness::node::init::run(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mco-node-init: {e}");
            ExitCode::FAILURE
        }
    }
}
