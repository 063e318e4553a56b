//! Benchmarks of whole scenarios: how long a fresh fake cluster with three embedded nodes takes
//! to be ready for a scenario's first step, and how long the features take on the wall clock,
//! the signer-rotation feature alone and every feature, each for both profiles. With a Docker
//! engine, the same for container nodes: a fresh cluster with one and three container nodes,
//! and every feature on container nodes with the node image built from scratch first.
//!
//! Run with `cargo bench -p harness --bench scenarios`. Cucumber's own output of the feature
//! runs scrolls by first; the Markdown table (`| measurement | result | target |`) comes last.

use anyhow::{Context, Result, bail};
use harness::Profile;
use harness::runner::{Nodes, RunConfig, run};
use harness::scenario::{NodeBackend, Scenario, ScenarioOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SET_UPS: usize = 15;
const FEATURE_RUNS: usize = 3;

#[tokio::main]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut rows = Vec::new();
    for profile in Profile::ALL {
        let times = set_up_times(profile, 3, NodeBackend::Embedded).await?;
        rows.push(row(
            &format!("fresh cluster with 3 embedded nodes, {profile}: start to ready, p50 / max"),
            &format!("{} / {}", ms(percentile(&times, 50)), ms(*times.last().unwrap())),
            "≤ 100 ms",
        ));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let features = root.join("features");
    let (best, scenarios) = feature_wall(&root, features.join("signer_rotation.feature")).await?;
    rows.push(row(
        "signer_rotation.feature, both profiles: wall, best of 3",
        &format!("{} ({scenarios} scenarios)", secs(best)),
        "≤ 3 s",
    ));
    let (best, scenarios) = feature_wall(&root, features).await?;
    rows.push(row(
        "every feature, both profiles, embedded nodes: wall, best of 3",
        &format!("{} ({scenarios} scenarios)", secs(best)),
        "≤ 10 s",
    ));
    match harness::node::image::docker_unavailable() {
        Some(why) => rows.push(row(
            "container nodes",
            &format!("not measured: no Docker engine ({why})"),
            "—",
        )),
        None => rows.extend(container_rows(&root).await?),
    }
    println!("\n| measurement | result | target |\n|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    Ok(())
}

/// From `Scenario::start` returning (API server up, cluster installed and settled, nodes seeded
/// and booted with kubelet and agent running) to the first step being able to act.
async fn set_up_times(profile: Profile, nodes: usize, backend: NodeBackend) -> Result<Vec<Duration>> {
    let mut times = Vec::new();
    for _ in 0..SET_UPS {
        let mut options = ScenarioOptions::new(profile);
        options.nodes = vec![("worker".into(), nodes)];
        options.backend = backend.clone();
        let started = Instant::now();
        let scenario = Scenario::start(options).await.context("starting a scenario")?;
        scenario.converge().await.context("a fresh cluster converges")?;
        times.push(started.elapsed());
        scenario.shutdown().await;
    }
    times.sort();
    Ok(times)
}

async fn feature_wall(root: &Path, path: PathBuf) -> Result<(Duration, usize)> {
    let mut best = Duration::MAX;
    let mut scenarios = 0;
    for _ in 0..FEATURE_RUNS {
        let config = RunConfig::new(vec![path.clone()], root.join("target").join("conformance-bench"));
        let started = Instant::now();
        let summary = run(&config).await.context("running the features")?;
        let took = started.elapsed();
        if summary.failed > 0 {
            bail!("{}: {}", path.display(), summary.line());
        }
        best = best.min(took);
        scenarios = summary.passed;
    }
    Ok((best, scenarios))
}

/// Container nodes: one node from `docker run` to Ready, and the whole suite on container nodes
/// with the node image built from scratch first.
async fn container_rows(root: &Path) -> Result<Vec<String>> {
    // The harness's binaries, built beside this one.
    let binaries = harness::node::image::harness_binaries()?;
    let image = harness::node::image::ensure_node_image(&binaries)?;
    let mut rows = Vec::new();
    for nodes in [1, 3] {
        let backend = NodeBackend::Container {
            image: image.reference.clone(),
        };
        let times = set_up_times(Profile::Ocp416, nodes, backend).await?;
        rows.push(row(
            &format!(
                "fresh cluster with {nodes} container node(s): start to every node Ready (API server, install, containers started, seeded, booted, kubelets posting Ready), p50 / max"
            ),
            &format!("{} / {}", ms(percentile(&times, 50)), ms(*times.last().unwrap())),
            if nodes == 1 { "≤ 1 s" } else { "—" },
        ));
    }
    // The image from scratch: without its content tag the next run builds and imports it again.
    let untag = std::process::Command::new("docker")
        .args(["rmi", &image.reference])
        .output()?;
    if !untag.status.success() {
        bail!(
            "docker rmi {}: {}",
            image.reference,
            String::from_utf8_lossy(&untag.stderr)
        );
    }
    let mut config = RunConfig::new(
        vec![root.join("features")],
        root.join("target").join("conformance-bench-container"),
    );
    config.nodes = Nodes::Container;
    let started = Instant::now();
    let summary = run(&config)
        .await
        .context("running the features on container nodes")?;
    let took = started.elapsed();
    if summary.failed > 0 || summary.passed == 0 {
        bail!("the features on container nodes: {}", summary.line());
    }
    rows.push(row(
        "every feature, both profiles, container nodes, node image built from scratch first: wall",
        &format!("{} ({} scenarios)", secs(took), summary.passed),
        "≤ 60 s",
    ));
    Ok(rows)
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn row(measurement: &str, result: &str, target: &str) -> String {
    format!("| {measurement} | {result} | {target} |")
}
