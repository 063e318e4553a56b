//! A kubelet CA rotation across a large cluster, on each path: how long N embedded nodes take to
//! start (every node synced and its daemon booted), how long one forced rotation of kube-apiserver-to-kubelet-signer takes to reach every
//! node, and the process's peak memory.
//!
//! On 4.16 every node's certificate writer reacts to the one ControllerConfig update; on 4.12
//! the new bundle rolls out as a rendered config, `maxUnavailable` (here 10 %) of the pool at a
//! time. The rotation is timed from the forcing patch until the cluster and every node have
//! followed (the scenario's own convergence: each node synced, the pool updated); then, untimed,
//! every node's `/etc/kubernetes/kubelet-ca.crt` is read and must hold the new signer, and each
//! node's journal since the patch is read for the certificate writer's syncs (upstream's line
//! `Certificate was synced from controllerconfig resourceVersion N`): the work the rotation cost
//! every node, a figure a slow or busy machine does not move as it moves the times.
//!
//! Run with `cargo bench -p harness --bench scale`. `SCALE_NODES=100,1000` (the default) sets
//! the embedded clusters' sizes, `SCALE_LIGHT_NODES=1000,10000` the light ones' (light nodes
//! share their connections: `harness/src/node/light.rs`). Each case runs in a process of its
//! own (the bench re-runs itself), so each peak RSS is that case's alone. It prints a Markdown
//! table, and the growth from the smallest size to the largest of each kind.

use anyhow::{Context, Result, bail};
use harness::Profile;
use harness::scenario::{NodeBackend, Scenario, ScenarioOptions};
use std::time::{Duration, Instant};

const CHILD: &str = "SCALE_BENCH_CASE";
const SIGNER: &str = "kube-apiserver-to-kubelet-signer";

fn main() -> Result<()> {
    if let Ok(case) = std::env::var(CHILD) {
        let parts: Vec<&str> = case.split(':').collect();
        let [profile, nodes, kind] = parts[..] else {
            bail!("SCALE_BENCH_CASE is profile:nodes:kind, not {case:?}");
        };
        let profile: Profile = profile.parse().map_err(anyhow::Error::msg)?;
        let nodes: usize = nodes.parse().context("node count")?;
        let backend = match kind {
            "embedded" => NodeBackend::Embedded,
            "light" => NodeBackend::Light,
            other => bail!("unknown node kind {other:?}"),
        };
        let runtime = tokio::runtime::Runtime::new()?;
        return runtime.block_on(case_alone(profile, nodes, backend));
    }
    let sizes = |var: &str, default: &str| -> Result<Vec<usize>> {
        std::env::var(var)
            .unwrap_or_else(|_| default.into())
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                s.trim()
                    .parse()
                    .with_context(|| format!("{var} is a comma-separated list of counts"))
            })
            .collect()
    };
    let kinds = [
        ("embedded", sizes("SCALE_NODES", "100,1000")?),
        ("light", sizes("SCALE_LIGHT_NODES", "1000,10000")?),
    ];
    println!(
        "| profile | nodes | start (every node up and synced) | forced rotation reaches every node | writer syncs per node | peak RSS |"
    );
    println!("|---|---|---|---|---|---|");
    let mut results = Vec::new();
    for (kind, sizes) in &kinds {
        for profile in Profile::ALL {
            for &nodes in sizes {
                let exe = std::env::current_exe()?;
                let out = std::process::Command::new(exe)
                    .env(CHILD, format!("{profile}:{nodes}:{kind}"))
                    .output()
                    .context("running a case")?;
                if !out.status.success() {
                    bail!(
                        "{profile} with {nodes} {kind} nodes failed ({}):\n{}{}",
                        out.status,
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
                let fields: Vec<f64> = line.split_whitespace().filter_map(|f| f.parse().ok()).collect();
                let [start, rotation, syncs, rss] = fields[..] else {
                    bail!("{profile} with {nodes} {kind} nodes printed {line:?}");
                };
                println!(
                    "| {profile} | {nodes} {kind} | {start:.2} s | {rotation:.2} s | {syncs:.2} | {rss:.0} MiB |"
                );
                results.push((*kind, profile, nodes, start, rotation, rss));
            }
        }
    }
    println!();
    for (kind, sizes) in &kinds {
        let (Some(&small), Some(&large)) = (sizes.iter().min(), sizes.iter().max()) else {
            continue;
        };
        if large == small {
            continue;
        }
        for profile in Profile::ALL {
            let of = |n| {
                results
                    .iter()
                    .find(|r| r.0 == *kind && r.1 == profile && r.2 == n)
                    .copied()
            };
            if let (Some(a), Some(b)) = (of(small), of(large)) {
                println!(
                    "{profile}, {small} → {large} {kind} nodes (× {:.0}): start × {:.1}, rotation × {:.1}, peak RSS × {:.1}",
                    large as f64 / small as f64,
                    b.3 / a.3,
                    b.4 / a.4,
                    b.5 / a.5
                );
            }
        }
    }
    Ok(())
}

/// One case in this process: prints `start_s rotation_s syncs_per_node peak_rss_mib`.
async fn case_alone(profile: Profile, nodes: usize, backend: NodeBackend) -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    harness::node::raise_open_file_limit();
    let mut options = ScenarioOptions::new(profile);
    options.nodes = vec![("worker".into(), nodes)];
    options.backend = backend;
    options.deadline = Duration::from_secs(600);
    let started = Instant::now();
    let scenario = Scenario::start(options).await.context("starting the cluster")?;
    scenario.converge().await.context("the fresh cluster converges")?;
    booted(&scenario).await?;
    let start = started.elapsed();
    let outcome = rotate(&scenario, profile, nodes).await;
    scenario.shutdown().await;
    let (rotation, syncs) = outcome?;
    println!(
        "{:.3} {:.3} {:.3} {:.1}",
        start.as_secs_f64(),
        rotation.as_secs_f64(),
        syncs,
        peak_rss_mib()?
    );
    Ok(())
}

/// Wait until every node's daemon has finished booting: its first-run check of the files on
/// disk (upstream's line `Validated on-disk state`) comes after the node is synced, and ten
/// thousand of them still running would be counted as the rotation's time.
async fn booted(scenario: &Scenario) -> Result<()> {
    let waits = scenario.nodes.iter().map(|node| async move {
        let line = node
            .wait_for_journal(
                harness::node::JournalMark(0),
                "Validated on-disk state",
                Duration::from_secs(600),
            )
            .await?;
        line.with_context(|| format!("node {}: its daemon never validated its files", node.name()))
    });
    futures::future::try_join_all(waits).await?;
    Ok(())
}

/// The rotation's wall time, and the certificate writer's syncs per node during it.
async fn rotate(scenario: &Scenario, profile: Profile, nodes: usize) -> Result<(Duration, f64)> {
    // Where the bundle rolls out as a rendered config, at most 10% of the pool at a time.
    if matches!(
        profile.traits().kubelet_ca,
        harness::profile::KubeletCaSource::RenderedConfig
    ) {
        scenario.set_max_unavailable("worker", "10%").await?;
    }
    // As the step does: a minute after the last change, so the new signer gets a new name.
    scenario.advance(time::Duration::minutes(1)).await?;
    let name = scenario.certificate_name(SIGNER)?;
    let mut marks = Vec::with_capacity(nodes);
    for node in &scenario.nodes {
        marks.push(node.journal_mark().await?);
    }
    let began = Instant::now();
    harness::cluster::force_rotation(&scenario.admin, &name.namespace, &name.name).await?;
    scenario.advance(time::Duration::ZERO).await?;
    let took = began.elapsed();
    let signer = scenario.certificate(&name.namespace, &name.name).await?;
    let body = signer
        .pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<String>();
    let mut missing = Vec::new();
    for node in &scenario.nodes {
        let bundle = node.read("/etc/kubernetes/kubelet-ca.crt").await?;
        let bundle: String = String::from_utf8_lossy(&bundle)
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        if !bundle.contains(&body) {
            missing.push(node.name().to_string());
        }
    }
    if !missing.is_empty() {
        bail!(
            "{} of {nodes} nodes lack the new {SIGNER} in kubelet-ca.crt (first: {})",
            missing.len(),
            missing[0]
        );
    }
    let mut syncs = 0usize;
    for (node, mark) in scenario.nodes.iter().zip(marks) {
        syncs += node
            .journal_since(mark)
            .await?
            .iter()
            .filter(|line| line.contains("Certificate was synced from controllerconfig resourceVersion"))
            .count();
    }
    Ok((took, syncs as f64 / nodes as f64))
}

/// VmHWM: this process's peak resident set, in MiB.
fn peak_rss_mib() -> Result<f64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .context("no VmHWM in /proc/self/status")?;
    Ok(kib / 1024.0)
}
