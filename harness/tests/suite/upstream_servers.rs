//! Each release's upstream machine-config-server as the cluster's (`--server-binary`): every
//! node of every scenario, at the start and when one joins, boots the Ignition it serves.
//!
//! Opt-in, as the other upstream components are: `MCO_UPSTREAM_MCS_4_12`, `MCO_UPSTREAM_MCS_4_14`
//! and `MCO_UPSTREAM_MCS_4_16` name server binaries (`go build ./cmd/machine-config-server` in a
//! release branch's tree). Without them each test says `SKIP (opt-in)` and passes, in CI too,
//! where nobody can fetch the upstream source. With `MCO_UPSTREAM_MCC_4_xx` set as well, the
//! controllers' whole-suite tests (`upstream_controllers`) run the server beside the controller.
//!
//! The target is every scenario of the profile passing with the reference's cluster side and
//! daemon: what the server serves must be what the reference serves (`cluster::server`).

use harness::Profile;
use harness::cluster::upstream_server::UpstreamServer;
use std::path::Path;

/// The server a release's variable names, or `None` after saying why the test skips.
pub fn opt_in(release: &str) -> Option<UpstreamServer> {
    let var = format!("MCO_UPSTREAM_MCS_{}", release.replace('.', "_"));
    match std::env::var(&var) {
        Ok(binary) => Some(UpstreamServer {
            binary: binary.into(),
            args: Vec::new(),
        }),
        Err(_) => {
            eprintln!(
                "SKIP (opt-in): {var} names a machine-config-server built from release-{release} \
                 (docs: the upstream yardstick)"
            );
            None
        }
    }
}

async fn judge(release: &str, profile: Profile) {
    use harness::runner::{RunConfig, run};
    let Some(server) = opt_in(release) else {
        return;
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut config = RunConfig::new(vec![root.join("features")], dir.path().to_path_buf());
    config.profiles = vec![profile];
    config.quiet = true;
    config.server = Some(server);
    run(&config).await.expect("the run itself works");
    let outcomes = crate::common::scenario_outcomes(&dir.path().join(format!("{profile}.cucumber.json")));
    assert!(
        outcomes.keys().any(|s| s.starts_with("scale_up.feature: ")),
        "no scale-up scenario ran"
    );
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|(_, (passed, _, _))| !passed)
        .map(|(scenario, (_, _, why))| format!("{scenario}: {why}"))
        .collect();
    assert!(
        failed.is_empty(),
        "release-{release}'s machine-config-server:\n{}",
        failed.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_12s_server_serves_every_node_of_the_4_12_profile() {
    judge("4.12", Profile::Ocp412).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_14s_server_serves_every_node_of_the_4_14_profile() {
    judge("4.14", Profile::Ocp414).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_4_16s_server_serves_every_node_of_the_4_16_profile() {
    judge("4.16", Profile::Ocp416).await;
}
