//! `mco-kubelet`: the fake kubelet as a process of its own, for container nodes (see
//! `harness::node::kubelet_process`).

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    match harness::node::kubelet_process::run_standalone().await {
        Ok(true) => ExitCode::SUCCESS,
        // Its start failed, and it said why in its own log line.
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("mco-kubelet: {e}");
            ExitCode::from(2)
        }
    }
}
