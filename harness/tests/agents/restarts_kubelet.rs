//! `mco-conformance-faulty-agent`: a deliberately wrong agent, for the suite's own tests. It is
//! the reference daemon plus one fault: every time `/etc/kubernetes/kubelet-ca.crt` changes it
//! runs `systemctl restart kubelet`, which no MCO release does (the kubelet reloads its
//! clientCAFile from disk). The scenarios that cover that behaviour must fail and say why
//! (`harness/tests/faulty_agent.rs`).

use harness::mco::KUBELET_CA_PATH;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let env = match harness::agent::AgentEnv::from_contract().await {
        Ok(env) => env,
        Err(e) => {
            eprintln!("mco-conformance-faulty-agent: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = harness::node::agent_service::stop_on_signals();
    let watched = env.path(KUBELET_CA_PATH);
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let target = watched.clone();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && !matches!(event.kind, notify::EventKind::Access(_))
            && event.paths.contains(&target)
        {
            let _ = tx.send(());
        }
    });
    let mut watcher = match watcher {
        Ok(w) => w,
        Err(e) => {
            eprintln!("mco-conformance-faulty-agent: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = watched.parent() {
        let _ = notify::Watcher::watch(&mut watcher, dir, notify::RecursiveMode::NonRecursive);
    }
    let host = env.host.clone();
    let fault = async move {
        while changes.recv().await.is_some() {
            while changes.try_recv().is_ok() {}
            println!("kubelet-ca.crt changed: restarting the kubelet (the deliberate fault)");
            let _ = host.systemctl(&["restart", "kubelet"]).await;
        }
    };
    tokio::select! {
        _ = harness::agent::run(env, stop.clone()) => {}
        _ = fault => {}
    }
    ExitCode::SUCCESS
}
