//! Scenarios against an API server given by kubeconfig (`mco-conformance run --apiserver`):
//! one at a time, each after deleting what the one before made, with the
//! scenarios only the in-process API server can run skipped, saying why.
//!
//! In CI the server given is a fake API server this test starts (the whole kubeconfig path runs:
//! loading it, issuing the nodes' certificates from the given client CA, cleaning between
//! scenarios). `real_kube_apiserver` runs every feature against a real kube-apiserver when
//! `APISERVER_KUBECONFIG`, `APISERVER_CLIENT_CA` and `APISERVER_CLIENT_CA_KEY` name one
//! (`docs/real-apiserver.md`; opt-in, since nobody can build one in CI).

use harness::runner::{RunConfig, Summary, run};
use harness::scenario::{ClusterEndpoint, KubeconfigEndpoint};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every skip says why, and against a server given by kubeconfig the in-process scenarios are
/// among them with their reason.
fn in_process_skips(summary: &Summary) -> usize {
    summary
        .skipped
        .iter()
        .filter(|s| s.contains("@in-process-apiserver: it swaps the API server's serving certificate"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feature_runs_against_a_server_given_by_kubeconfig_one_scenario_at_a_time() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = fake_apiserver::FakeApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig(server.admin_identity())).unwrap();
    let (cert, key) = (dir.path().join("client-ca.crt"), dir.path().join("client-ca.key"));
    std::fs::write(&cert, &server.client_ca().cert_pem).unwrap();
    std::fs::write(&key, server.client_ca().key_pem()).unwrap();
    let endpoint = KubeconfigEndpoint::load(&kubeconfig, &cert, &key).expect("the kubeconfig loads");

    let mut config = RunConfig::new(
        vec![root().join("features/kubelet_restart.feature")],
        dir.path().join("reports"),
    );
    config.profiles = vec![harness::Profile::Ocp416];
    config.endpoint = ClusterEndpoint::Kubeconfig(Arc::new(endpoint));
    config.report = Some(dir.path().join("report.yaml"));
    let summary = run(&config).await.expect("the run itself works");
    assert_eq!(summary.failed, 0, "{summary:?}");
    assert!(summary.passed >= 5, "{summary:?}");
    // The Outline's 4.16 row and the x509 re-bootstrap swap the serving certificate.
    assert_eq!(in_process_skips(&summary), 2, "{:?}", summary.skipped);
    let report: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(dir.path().join("report.yaml")).unwrap()).unwrap();
    assert_eq!(report["apiServer"].as_str(), Some(server.url()), "{report:?}");

    // Each scenario cleaned up after the one before: the server holds the last scenario's
    // nodes only (every scenario of the feature starts one worker node).
    let admin = server.admin_client().await.unwrap();
    let nodes = Api::<Node>::all(admin)
        .list(&ListParams::default())
        .await
        .unwrap();
    let names: Vec<_> = nodes
        .items
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    assert_eq!(names, ["worker-0"], "{names:?}");
}

/// Every feature, embedded nodes, every profile, against a real kube-apiserver: every scenario
/// that runs there passes, and only the in-process ones (and those the in-process run skips
/// too) are skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_kube_apiserver() {
    let vars = [
        "APISERVER_KUBECONFIG",
        "APISERVER_CLIENT_CA",
        "APISERVER_CLIENT_CA_KEY",
    ];
    let Ok(values) = vars
        .iter()
        .map(|v| std::env::var(v).map_err(|_| *v))
        .collect::<Result<Vec<_>, _>>()
    else {
        eprintln!(
            "SKIP (opt-in): {} name a kube-apiserver's kubeconfig and the CA it trusts for client certificates (docs/real-apiserver.md)",
            vars.join(", ")
        );
        return;
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let endpoint = KubeconfigEndpoint::load(
        Path::new(&values[0]),
        Path::new(&values[1]),
        Path::new(&values[2]),
    )
    .expect("the kubeconfig loads");
    let dir = tempfile::tempdir().unwrap();
    let mut config = RunConfig::new(vec![root().join("features")], dir.path().join("reports"));
    config.endpoint = ClusterEndpoint::Kubeconfig(Arc::new(endpoint));
    let started = std::time::Instant::now();
    let summary = run(&config).await.expect("the run itself works");
    eprintln!(
        "against {}: {} passed, {} failed, {} skipped in {:?}",
        values[0],
        summary.passed,
        summary.failed,
        summary.skipped.len(),
        started.elapsed()
    );
    assert_eq!(summary.failed, 0, "{summary:?}");
    assert!(in_process_skips(&summary) > 0, "{:?}", summary.skipped);
    for skip in &summary.skipped {
        assert!(
            ["@container", "@in-process-apiserver", "@slow", "@scale"]
                .iter()
                .any(|tag| skip.contains(&format!(": {tag}:"))),
            "skipped for another reason: {skip}"
        );
    }
}
