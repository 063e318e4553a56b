//! `mco-conformance-late-sync-agent`: an agent that starts the way upstream's 4.16 daemon does,
//! for the suite's own tests of `--nudge-first-sync` (`harness/tests/suite/nudge.rs`).
//!
//! Upstream's certificate writer drops the ControllerConfig events that come before the daemon
//! has its Node and requeues them a minute later (release-4.16 certificate_writer.go:30,
//! 113-116), so its first sync waits for a ControllerConfig change. This agent keeps the
//! part that matters to the nudge: it sets the Node's initial annotations, posts the
//! `ConfigDriftMonitorStarted` event upstream posts when its first run is over (release-4.16
//! daemon.go:1492) — unless started with `--no-event`, as an agent that posts none — and, on a
//! profile whose daemon writes certificates from the ControllerConfig, does nothing more until
//! the ControllerConfig changes; then it runs the reference daemon. Without a change it never
//! syncs, so a scenario passes only if something touches the ControllerConfig.

use futures::StreamExt;
use harness::cluster::operator::{CONTROLLER_CONFIG, controller_configs};
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use std::process::ExitCode;

const NAME: &str = "mco-conformance-late-sync-agent";

#[tokio::main]
async fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let post_event = !std::env::args().skip(1).any(|a| a == "--no-event");
    let env = match harness::agent::AgentEnv::from_contract().await {
        Ok(env) => env,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = harness::node::agent_service::stop_on_signals();
    let start = async {
        harness::agent::first_run::load_node_annotations(&env).await?;
        // Read before the event is posted, so a change made in answer to it is seen.
        let seen = controller_configs(&env.client)
            .get(CONTROLLER_CONFIG)
            .await
            .map_err(|e| format!("controllerconfig {CONTROLLER_CONFIG}: {e}"))?
            .metadata
            .resource_version;
        if post_event {
            first_run_done(&env.client, &env.node_name).await?;
        }
        if env.profile.traits().certificate_writer().is_some() {
            println!("waiting for a ControllerConfig change before the first sync");
            changed_since(&env.client, seen).await?;
        }
        Ok(())
    };
    let started: Result<(), String> = tokio::select! {
        started = start => started,
        () = stop.cancelled() => return ExitCode::SUCCESS,
    };
    if let Err(e) = started {
        eprintln!("{NAME}: {e}");
        return ExitCode::FAILURE;
    }
    println!("the ControllerConfig changed: starting the reference daemon");
    match harness::agent::run(env, stop).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// Post the Node event upstream posts once its config drift monitor starts.
async fn first_run_done(client: &kube::Client, node: &str) -> Result<(), String> {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default();
    let event: Event = serde_json::from_value(serde_json::json!({
        "metadata": {"generateName": format!("{node}."), "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": node},
        "reason": "ConfigDriftMonitorStarted",
        "message": "Config Drift Monitor started",
        "type": "Normal",
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        "source": {"component": "machineconfigdaemon", "host": node},
    }))
    .map_err(|e| format!("the event: {e}"))?;
    Api::<Event>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &event)
        .await
        .map(drop)
        .map_err(|e| format!("posting the ConfigDriftMonitorStarted event: {e}"))
}

/// Wait until the ControllerConfig's resourceVersion is other than `seen`.
async fn changed_since(client: &kube::Client, seen: Option<String>) -> Result<(), String> {
    let config = watcher::Config::default().fields(&format!("metadata.name={CONTROLLER_CONFIG}"));
    let mut events = std::pin::pin!(watcher::watcher(controller_configs(client), config));
    while let Some(event) = events.next().await {
        let object = match event {
            Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => o,
            Ok(_) => continue,
            Err(e) => {
                eprintln!("{NAME}: watching the ControllerConfig: {e}");
                continue;
            }
        };
        if object.metadata.resource_version != seen {
            return Ok(());
        }
    }
    Err("the ControllerConfig watch ended".to_string())
}
