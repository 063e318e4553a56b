//! Benchmarks of the fake API server as a kube-rs client sees it, over TLS on loopback:
//! start-to-ready time, GET latency on a kept-alive connection, watch delivery latency,
//! GET throughput with 1 and 16 clients, fan-out of one change to many watches, and the
//! memory that 10,000 ConfigMaps of 1 KiB cost.
//!
//! Run with `cargo bench -p fake-apiserver --bench apiserver`. It prints a Markdown table
//! (`| measurement | result | target |`), one row as soon as each measurement ends.
//! The default sizes finish in well under a minute in release on two cores.

use anyhow::{Context, Result, bail};
use fake_apiserver::{FakeApiServer, ServerHandle};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const NS: &str = "default";
const STARTS: usize = 20;
const GET_WARMUP: usize = 100;
const GETS: usize = 2_000;
const PATCHES: usize = 500;
const THROUGHPUT_FOR: Duration = Duration::from_secs(3);
const FAN_OUT: usize = 1_000;
const FAN_OUT_OPEN_CONCURRENCY: usize = 50;
const CONFIGMAPS: usize = 10_000;
const CREATE_CONCURRENCY: usize = 16;

/// Set in the child process that measures memory alone.
const MEMORY_CHILD: &str = "APISERVER_BENCH_MEMORY_CHILD";

/// The system allocator, counting the bytes live on the heap.
struct Counting;

static LIVE_HEAP: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator unchanged; the counter only observes.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { std::alloc::System.alloc(layout) };
        if !p.is_null() {
            LIVE_HEAP.fetch_add(layout.size(), std::sync::atomic::Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) };
        LIVE_HEAP.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { std::alloc::System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_HEAP.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
            LIVE_HEAP.fetch_add(new_size, std::sync::atomic::Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[tokio::main]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    if std::env::var_os(MEMORY_CHILD).is_some() {
        return memory_alone().await;
    }
    println!("| measurement | result | target |");
    println!("|---|---|---|");
    flush();

    start_to_ready().await?;
    let server = FakeApiServer::builder()
        .start()
        .await
        .context("starting the fake API server")?;
    let client = server.admin_client().await.context("admin client")?;
    get_latency(&client).await?;
    watch_delivery(&client).await?;
    throughput(&server).await?;
    fan_out(&client).await?;
    server.shutdown().await;
    memory_in_a_fresh_process()?;
    Ok(())
}

fn flush() {
    let _ = std::io::stdout().flush();
}

fn row(measurement: &str, result: &str, target: &str) {
    println!("| {measurement} | {result} | {target} |");
    flush();
}

/// Nearest-rank percentile `p` (0..=100) of `samples`, which need not be sorted.
fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn configmap(name: &str, ns: &str, data: serde_json::Value) -> Result<ConfigMap> {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns}, "data": data}))
        .context("building a ConfigMap")
}

async fn create_configmap(client: &kube::Client, name: &str) -> Result<Api<ConfigMap>> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    api.create(&PostParams::default(), &configmap(name, NS, json!({"v": "0"}))?)
        .await
        .with_context(|| format!("creating ConfigMap {name}"))?;
    Ok(api)
}

/// 1. From `start()` to the first successful GET /readyz, with a fresh server each time.
async fn start_to_ready() -> Result<()> {
    let mut samples = Vec::with_capacity(STARTS);
    for _ in 0..STARTS {
        let begun = Instant::now();
        let server = FakeApiServer::builder()
            .start()
            .await
            .context("starting the fake API server")?;
        let client = server.admin_client().await.context("admin client")?;
        let readyz = http::Request::get("/readyz")
            .body(Vec::new())
            .context("building GET /readyz")?;
        client.request_text(readyz).await.context("GET /readyz")?;
        samples.push(begun.elapsed());
        server.shutdown().await;
    }
    let result = format!(
        "p50 {} / p95 {} ({STARTS} starts)",
        ms(percentile(&samples, 50.0)),
        ms(percentile(&samples, 95.0))
    );
    row(
        "start to ready (start() + client + GET /readyz)",
        &result,
        "≤ 20 ms",
    );
    Ok(())
}

/// 2. Sequential GETs of one ConfigMap on a kept-alive connection.
async fn get_latency(client: &kube::Client) -> Result<()> {
    let api = create_configmap(client, "bench-get").await?;
    for _ in 0..GET_WARMUP {
        api.get("bench-get").await.context("warm-up GET")?;
    }
    let mut samples = Vec::with_capacity(GETS);
    for _ in 0..GETS {
        let begun = Instant::now();
        api.get("bench-get").await.context("GET")?;
        samples.push(begun.elapsed());
    }
    let result = format!(
        "p50 {} / p99 {} ({GETS} GETs)",
        us(percentile(&samples, 50.0)),
        us(percentile(&samples, 99.0))
    );
    row("GET one ConfigMap, kept-alive TLS", &result, "p50 ≤ 200 µs");
    Ok(())
}

/// A watch on one ConfigMap from the current resourceVersion, in its own task: every MODIFIED
/// event's `data[key]` goes to the returned channel with the instant it arrived.
async fn spawn_watcher(
    api: &Api<ConfigMap>,
    name: &str,
    version: &str,
    key: &'static str,
) -> Result<(
    mpsc::UnboundedReceiver<(String, Instant)>,
    tokio::task::JoinHandle<()>,
)> {
    let params = WatchParams::default().fields(&format!("metadata.name={name}"));
    let events = api.watch(&params, version).await.context("opening a watch")?;
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            let Ok(WatchEvent::Modified(cm)) = event else {
                continue;
            };
            let value = cm.data.and_then(|mut d| d.remove(key)).unwrap_or_default();
            if tx.send((value, Instant::now())).is_err() {
                return;
            }
        }
    });
    Ok((rx, task))
}

async fn list_version(api: &Api<ConfigMap>) -> Result<String> {
    let list = api
        .list(&ListParams::default().limit(1))
        .await
        .context("listing ConfigMaps")?;
    list.metadata
        .resource_version
        .context("a list without a resourceVersion")
}

async fn set_value(api: &Api<ConfigMap>, name: &str, key: &str, value: &str) -> Result<()> {
    let patch = Patch::Merge(json!({"data": {key: value}}));
    api.patch(name, &PatchParams::default(), &patch)
        .await
        .with_context(|| format!("patching ConfigMap {name}"))?;
    Ok(())
}

/// Wait until `rx` reports `want`, returning when it arrived.
async fn arrival(rx: &mut mpsc::UnboundedReceiver<(String, Instant)>, want: &str) -> Result<Instant> {
    let wait = async {
        while let Some((value, at)) = rx.recv().await {
            if value == want {
                return Ok(at);
            }
        }
        bail!("the watch ended before {want:?} arrived")
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .with_context(|| format!("no MODIFIED event for {want:?} within 10 s"))?
}

/// 3. From sending a merge PATCH to its MODIFIED event arriving at a watcher.
async fn watch_delivery(client: &kube::Client) -> Result<()> {
    let api = create_configmap(client, "bench-watch").await?;
    let version = list_version(&api).await?;
    let (mut rx, task) = spawn_watcher(&api, "bench-watch", &version, "v").await?;
    let mut samples = Vec::with_capacity(PATCHES);
    for i in 1..=PATCHES {
        let value = i.to_string();
        let begun = Instant::now();
        set_value(&api, "bench-watch", "v", &value).await?;
        samples.push(arrival(&mut rx, &value).await? - begun);
    }
    task.abort();
    let result = format!(
        "p50 {} / p99 {} ({PATCHES} patches)",
        us(percentile(&samples, 50.0)),
        us(percentile(&samples, 99.0))
    );
    row(
        "watch delivery (PATCH sent → MODIFIED seen)",
        &result,
        "p50 ≤ 1 ms",
    );
    Ok(())
}

/// GETs per second over `THROUGHPUT_FOR`, one task per client, each on its own connection.
async fn gets_per_second(clients: Vec<kube::Client>) -> Result<f64> {
    let apis: Vec<Api<ConfigMap>> = clients.into_iter().map(|c| Api::namespaced(c, NS)).collect();
    for api in &apis {
        api.get("bench-get").await.context("warm-up GET")?;
    }
    let begun = Instant::now();
    let deadline = begun + THROUGHPUT_FOR;
    let tasks: Vec<_> = apis
        .into_iter()
        .map(|api| {
            tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < deadline {
                    api.get("bench-get").await?;
                    done += 1;
                }
                Ok::<_, kube::Error>(done)
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.context("a GET task panicked")?.context("GET")?;
    }
    Ok(total as f64 / begun.elapsed().as_secs_f64())
}

/// 4. GET throughput with 1 client and with 16 clients, each with its own connection.
async fn throughput(server: &ServerHandle) -> Result<()> {
    for (n, target) in [(1, "—"), (16, "≥ 10,000 GETs/s")] {
        let mut clients = Vec::with_capacity(n);
        for i in 0..n {
            let identity = server
                .identity(&format!("bench-{i}"), &["system:masters"])
                .context("issuing a client identity")?;
            clients.push(server.client(&identity).await.context("kube client")?);
        }
        let rate = gets_per_second(clients).await?;
        let result = format!("{rate:.0} GETs/s ({} s)", THROUGHPUT_FOR.as_secs());
        row(&format!("GET throughput, {n} client(s)"), &result, target);
    }
    Ok(())
}

/// The soft limit on open files, from /proc/self/limits.
fn open_files_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// 5. One PATCH delivered to many watches of the same ConfigMap.
async fn fan_out(client: &kube::Client) -> Result<()> {
    // Each watch costs two descriptors here (client and server ends); keep 300 spare.
    let limit = open_files_limit().unwrap_or(1024);
    let count = FAN_OUT.min(limit.saturating_sub(300) / 2);
    if count == 0 {
        row(
            "fan-out",
            &format!("skipped: open-files limit {limit}"),
            "p99 ≤ 30 ms",
        );
        return Ok(());
    }
    let api = create_configmap(client, "bench-fan").await?;
    let version = list_version(&api).await?;
    let opened: Vec<_> = stream::iter(0..count)
        .map(|_| spawn_watcher(&api, "bench-fan", &version, "v"))
        .buffer_unordered(FAN_OUT_OPEN_CONCURRENCY)
        .try_collect()
        .await?;
    let (mut receivers, tasks): (Vec<_>, Vec<_>) = opened.into_iter().unzip();
    // A first change proves every watch is registered; the second one is timed.
    let mut latencies = Vec::with_capacity(count);
    for (round, value) in ["warm", "timed"].into_iter().enumerate() {
        let begun = Instant::now();
        set_value(&api, "bench-fan", "v", value).await?;
        let arrivals =
            futures::future::try_join_all(receivers.iter_mut().map(|rx| arrival(rx, value))).await?;
        if round == 1 {
            latencies = arrivals.into_iter().map(|at| at - begun).collect();
        }
    }
    tasks.iter().for_each(|t| t.abort());
    let note = if count < FAN_OUT {
        format!(" (only {count} watches: open-files limit {limit})")
    } else {
        String::new()
    };
    let result = format!(
        "p99 {} / max {} over {count} watches{note}",
        ms(percentile(&latencies, 99.0)),
        ms(percentile(&latencies, 100.0))
    );
    row("fan-out (one PATCH → every watcher)", &result, "p99 ≤ 30 ms");
    Ok(())
}

/// VmRSS of this process, in bytes.
fn rss_bytes() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS in /proc/self/status")?;
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .context("unparsable VmRSS")?;
    Ok(kib * 1024)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Measurement 6, memory, in a process of its own: run in this one after the others, the
/// ConfigMaps would fill heap memory those freed (in one malloc arena; not in another), and
/// the figure would depend on the order of the measurements and on which threads allocate.
fn memory_in_a_fresh_process() -> Result<()> {
    let exe = std::env::current_exe().context("this bench's own path")?;
    let status = std::process::Command::new(exe)
        .env(MEMORY_CHILD, "1")
        .status()
        .context("starting the memory measurement's process")?;
    if !status.success() {
        bail!("the memory measurement's process failed: {status}");
    }
    Ok(())
}

async fn memory_alone() -> Result<()> {
    let server = FakeApiServer::builder()
        .start()
        .await
        .context("starting the fake API server")?;
    let client = server.admin_client().await.context("admin client")?;
    memory(&client).await?;
    server.shutdown().await;
    Ok(())
}

/// RSS and live heap before and after creating 10,000 ConfigMaps of 1 KiB each.
async fn memory(client: &kube::Client) -> Result<()> {
    let ns = "bench-memory";
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).context("a Namespace")?;
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .context("creating the bench-memory namespace")?;
    let before = rss_bytes()?;
    let heap_before = LIVE_HEAP.load(std::sync::atomic::Ordering::Relaxed);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let payload = "x".repeat(1024);
    let begun = Instant::now();
    stream::iter(0..CONFIGMAPS)
        .map(|i| {
            let (api, payload) = (api.clone(), payload.clone());
            async move {
                let cm = configmap(&format!("cm-{i:05}"), ns, json!({ "payload": payload }))?;
                api.create(&PostParams::default(), &cm)
                    .await
                    .with_context(|| format!("creating ConfigMap cm-{i:05}"))
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|_| async { Ok(()) })
        .await?;
    let took = begun.elapsed();
    let after = rss_bytes()?;
    let heap_after = LIVE_HEAP.load(std::sync::atomic::Ordering::Relaxed);
    let result = format!(
        "{:.1} → {:.1} MiB, +{:.1} MiB for {CONFIGMAPS} × 1 KiB ({:.1} s), of which live heap \
         +{:.1} MiB; a fresh process with the server and its client",
        mib(before),
        mib(after),
        mib(after.saturating_sub(before)),
        took.as_secs_f64(),
        mib(heap_after.saturating_sub(heap_before) as u64),
    );
    row("memory (RSS)", &result, "≤ 100 MiB (server's share)");
    Ok(())
}
