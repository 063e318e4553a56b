//! Watch fan-out as separate clients see it: one change to a ConfigMap, delivered to 1,000
//! and 10,000 open watches, timed from just before the write to the first byte of the event on
//! each connection.
//!
//! The clients must not be the limit (one kube-rs process holding 1,000 TLS connections and
//! decoding every event was; it hid the server). So the watches are raw TLS connections
//! (HTTP/1.1, rustls) spread over several processes (this binary, run again as a worker), each
//! reading bytes and noting when the first byte of each event arrives without decoding it: an
//! event ends at `}` + newline (JSON has no raw newline inside), so counting those is enough.
//! Timestamps are the system clock's, shared by every process on the machine. Two are kept per
//! event: when the kernel queued its first bytes on the client's socket (`SO_TIMESTAMPNS`, the
//! moment the server's send reached the client: on loopback the sender's own system call
//! delivers it), and when the client process read them (which adds the client's own turn on the
//! two cores it shares with the server). The first is the server's fan-out as a client on
//! another machine would see it, minus the network; the target is judged on it.
//!
//! Run with `cargo bench -p fake-apiserver --bench fanout`; it prints a Markdown table. The
//! fake runs in this process. With `APISERVER_KUBECONFIG` naming a kubeconfig (client
//! certificate and CA inline or as files), the same measurement runs against that server too
//! (a real kube-apiserver built as `docs/real-apiserver.md` says). `FANOUT_SIZES=1000,10000` (default),
//! `FANOUT_WORKERS=4`, `FANOUT_ROUNDS=5` change the shape, `FANOUT_CLIENT_NICE=19` (default)
//! the client processes' priority, and `FANOUT_PER_ROUND=1` prints each change's spread.
//!
//! The clients keep every connection open until all have reported: one that hung up after its
//! last event had the server tearing connections down while it still sent that event to the
//! others, which alone made the last change's p99 half as long again.

mod stamped;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use stamped::Stamped;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const NS: &str = "fanout";
const NAME: &str = "fanout";
const TARGET_P99_1000: Duration = Duration::from_millis(30);
/// How long opening one watch may take, stage by stage.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);
/// The client processes' nice value (`FANOUT_CLIENT_NICE` sets another; 0 is the server's).
const DEFAULT_CLIENT_NICE: libc::c_int = 19;
/// Connections a worker opens at once.
const OPEN_CONCURRENCY: usize = 64;

/// Where a worker connects, and as whom.
struct Endpoint {
    addr: std::net::SocketAddr,
    /// The name the serving certificate is checked against (an IP address or a DNS name).
    server_name: String,
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    if std::env::var_os("FANOUT_WORKER").is_some() {
        // One thread a worker: the workers together take the cores' share a client needs,
        // and no more.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        return runtime.block_on(worker());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(parent())
}

fn env_list(name: &str, default: &[usize]) -> Result<Vec<usize>> {
    match std::env::var(name) {
        Ok(v) => v
            .split(',')
            .map(|s| s.trim().parse::<usize>().with_context(|| format!("{name}={v}")))
            .collect(),
        Err(_) => Ok(default.to_vec()),
    }
}

fn client_nice() -> Result<libc::c_int> {
    match std::env::var("FANOUT_CLIENT_NICE") {
        Ok(nice) => nice.parse().context("FANOUT_CLIENT_NICE"),
        Err(_) => Ok(DEFAULT_CLIENT_NICE),
    }
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos()
}

async fn parent() -> Result<()> {
    let sizes = env_list("FANOUT_SIZES", &[1_000, 10_000])?;
    let workers = env_list("FANOUT_WORKERS", &[4])?[0].max(1);
    let rounds = env_list("FANOUT_ROUNDS", &[5])?[0].max(1);
    println!(
        "| watch fan-out (one change, separate client processes) | arrived p50 | arrived p99 | arrived max | read p50 | read p99 | target (arrived) |"
    );
    println!("|---|---|---|---|---|---|---|");
    flush();
    let server = fake_apiserver::FakeApiServer::builder()
        .log_requests(std::env::var_os("FANOUT_LOG").is_some())
        .start()
        .await
        .context("starting the fake API server")?;
    let admin = server.admin_identity();
    let endpoint = Endpoint {
        addr: server.addr(),
        server_name: server.addr().ip().to_string(),
        ca_pem: server.ca_pem(),
        cert_pem: admin.cert_pem.clone(),
        key_pem: admin.key_pem.clone(),
    };
    let client = server.admin_client().await?;
    for &n in &sizes {
        measure("fake API server", &client, &endpoint, n, workers, rounds).await?;
    }
    server.shutdown().await;
    if let Some(path) = std::env::var_os("APISERVER_KUBECONFIG") {
        let yaml = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
        let endpoint = endpoint_from_kubeconfig(&yaml, Path::new(&path))?;
        let client = fake_apiserver::client_from_kubeconfig(&yaml).await?;
        for &n in &sizes {
            measure(
                "kube-apiserver (APISERVER_KUBECONFIG)",
                &client,
                &endpoint,
                n,
                workers,
                rounds,
            )
            .await?;
        }
    }
    Ok(())
}

fn flush() {
    let _ = std::io::stdout().flush();
}

/// The server, CA and client certificate of a kubeconfig's first cluster and user.
fn endpoint_from_kubeconfig(yaml: &str, path: &Path) -> Result<Endpoint> {
    let doc: serde_yaml::Value = serde_yaml::from_str(yaml)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let field = |section: &str, inner: &str, key: &str| -> Result<Option<String>> {
        let value = &doc[section][0][inner];
        if let Some(data) = value[format!("{key}-data").as_str()].as_str() {
            let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim())?;
            return Ok(Some(String::from_utf8(bytes)?));
        }
        match value[key].as_str() {
            Some(file) => Ok(Some(
                std::fs::read_to_string(dir.join(file)).with_context(|| file.to_string())?,
            )),
            None => Ok(None),
        }
    };
    let server = doc["clusters"][0]["cluster"]["server"]
        .as_str()
        .context("kubeconfig: no clusters[0].cluster.server")?;
    let hostport = server
        .strip_prefix("https://")
        .context("kubeconfig: the server is not https://")?
        .trim_end_matches('/');
    let addr: std::net::SocketAddr = std::net::ToSocketAddrs::to_socket_addrs(hostport)?
        .next()
        .context("kubeconfig: the server does not resolve")?;
    let host = hostport.rsplit_once(':').map_or(hostport, |(h, _)| h);
    Ok(Endpoint {
        addr,
        server_name: host.trim_matches(['[', ']']).to_string(),
        ca_pem: field("clusters", "cluster", "certificate-authority")?.context("kubeconfig: no CA")?,
        cert_pem: field("users", "user", "client-certificate")?
            .context("kubeconfig: no client certificate")?,
        key_pem: field("users", "user", "client-key")?.context("kubeconfig: no client key")?,
    })
}

/// One size: `n` watches over `workers` processes, `rounds` changes after one to warm up.
async fn measure(
    target: &str,
    client: &kube::Client,
    endpoint: &Endpoint,
    n: usize,
    workers: usize,
    rounds: usize,
) -> Result<()> {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": NS}}))?;
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let _ = configmaps.delete(NAME, &DeleteParams::default()).await;
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": NAME},
        "data": {"round": "0"}
    }))?;
    let created = configmaps.create(&PostParams::default(), &cm).await?;
    let rv = created.metadata.resource_version.context("no resourceVersion")?;

    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("ca.pem"), &endpoint.ca_pem)?;
    std::fs::write(dir.path().join("cert.pem"), &endpoint.cert_pem)?;
    std::fs::write(dir.path().join("key.pem"), &endpoint.key_pem)?;
    let watch_path = format!(
        "/api/v1/namespaces/{NS}/configmaps?watch=1&fieldSelector=metadata.name%3D{NAME}&resourceVersion={rv}&timeoutSeconds=1800"
    );
    let total_rounds = rounds + 1;
    let mut children = Vec::new();
    for w in 0..workers {
        let conns = n / workers + usize::from(w < n % workers);
        let mut child = tokio::process::Command::new(std::env::current_exe()?)
            .env("FANOUT_WORKER", "1")
            .env("FANOUT_ADDR", endpoint.addr.to_string())
            .env("FANOUT_SERVER_NAME", &endpoint.server_name)
            .env("FANOUT_DIR", dir.path())
            .env("FANOUT_PATH", &watch_path)
            .env("FANOUT_CONNS", conns.to_string())
            .env("FANOUT_ROUNDS", total_rounds.to_string())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child.stdout.take().context("worker stdout")?;
        children.push((child, BufReader::new(stdout).lines()));
    }
    async fn expect_line(
        lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
        want: &str,
    ) -> Result<()> {
        match tokio::time::timeout(Duration::from_secs(300), lines.next_line()).await {
            Ok(Ok(Some(line))) if line == want => Ok(()),
            Ok(Ok(Some(line))) => bail!("worker said {line:?}, expected {want:?}"),
            Ok(Ok(None)) => bail!("worker ended before {want:?}"),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => bail!("no {want:?} from a worker in 300 s"),
        }
    }
    for (_, lines) in &mut children {
        expect_line(lines, "ready").await?;
    }
    let mut written = Vec::new();
    for round in 1..=total_rounds {
        written.push(now_nanos());
        configmaps
            .patch(
                NAME,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"data": {"round": round.to_string()}})),
            )
            .await?;
        for (_, lines) in &mut children {
            expect_line(lines, &format!("done {round}")).await?;
        }
    }
    // Each worker then prints every arrival: `a <round> <arrived unix nanos> <read unix nanos>`.
    let mut arrived: Vec<Duration> = Vec::with_capacity(n * rounds);
    let mut read: Vec<Duration> = Vec::with_capacity(n * rounds);
    let mut per_round = std::collections::BTreeMap::new();
    for (mut child, mut lines) in children {
        while let Some(line) = lines.next_line().await? {
            let mut parts = line.split_whitespace();
            let (Some("a"), Some(round), Some(at_socket), Some(at_read)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                bail!("worker said {line:?}");
            };
            let round: usize = round.parse()?;
            // The kernel's stamp is the wall clock's, as the write's and the read's are: it
            // must fall between them.
            let (socket_ns, read_ns) = (at_socket.parse::<u128>()?, at_read.parse::<u128>()?);
            if round == 0 || round > written.len() || socket_ns < written[round - 1] || socket_ns > read_ns {
                bail!("worker said {line:?}: the receive timestamp is not between the write and the read");
            }
            if round >= 2 {
                let since_write = |at: &str| -> Result<Duration> {
                    let nanos = at.parse::<u128>()?.saturating_sub(written[round - 1]);
                    Ok(Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)))
                };
                if std::env::var_os("FANOUT_PER_ROUND").is_some() {
                    per_round
                        .entry(round)
                        .or_insert_with(Vec::new)
                        .push(since_write(at_socket)?);
                }
                arrived.push(since_write(at_socket)?);
                read.push(since_write(at_read)?);
            }
        }
        let status = child.wait().await?;
        if !status.success() {
            bail!("a worker failed: {status}");
        }
    }
    if arrived.len() != n * rounds {
        bail!("{} arrivals, expected {}", arrived.len(), n * rounds);
    }
    arrived.sort();
    read.sort();
    for (round, mut all) in per_round {
        all.sort();
        eprintln!(
            "round {round}: first {:?} p50 {:?} p90 {:?} p99 {:?} max {:?}",
            all[0],
            all[all.len() / 2],
            all[all.len() * 9 / 10],
            all[all.len() * 99 / 100],
            all[all.len() - 1]
        );
    }
    let pct =
        |all: &[Duration], p: f64| all[((all.len() as f64 * p).ceil() as usize).clamp(1, all.len()) - 1];
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    let nice = client_nice()?;
    let target_text = if n == 1_000 {
        format!("p99 ≤ {}", ms(TARGET_P99_1000))
    } else {
        "close to linear from 1,000".to_string()
    };
    println!(
        "| {target}: {n} watches, {workers} client processes (nice {nice}), {rounds} changes | {} | {} | {} | {} | {} | {target_text} |",
        ms(pct(&arrived, 0.50)),
        ms(pct(&arrived, 0.99)),
        ms(*arrived.last().unwrap_or(&Duration::ZERO)),
        ms(pct(&read, 0.50)),
        ms(pct(&read, 0.99)),
    );
    flush();
    let _ = configmaps.delete(NAME, &DeleteParams::default()).await;
    Ok(())
}

/// A worker: open the watches, say `ready`, note each event's first byte on every connection,
/// say `done <round>` when every connection has seen that many events, then print them all.
async fn worker() -> Result<()> {
    let var = |k: &str| std::env::var(k).with_context(|| k.to_string());
    let addr: std::net::SocketAddr = var("FANOUT_ADDR")?.parse()?;
    let dir = PathBuf::from(var("FANOUT_DIR")?);
    let path = var("FANOUT_PATH")?;
    let conns: usize = var("FANOUT_CONNS")?.parse()?;
    let rounds: usize = var("FANOUT_ROUNDS")?.parse()?;
    // The clients stand in for daemons on other machines: at the server's own priority, four
    // of them take most of the two cores the server needs mid-fan-out. Niced, they run when the
    // server waits; the kernel's receive stamps do not depend on when they run.
    let nice = client_nice()?;
    // SAFETY: a plain system call on this process.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } != 0 {
        return Err(std::io::Error::last_os_error()).context("setpriority");
    }
    let config = tls_config(&dir)?;
    let server_name = rustls::pki_types::ServerName::try_from(var("FANOUT_SERVER_NAME")?)?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nUser-Agent: fanout-bench\r\n\r\n"
    );

    // Open every watch and read its response head.
    use futures::StreamExt;
    let connector = tokio_rustls::TlsConnector::from(config);
    let opened: Vec<Result<_>> = futures::stream::iter(0..conns)
        .map(|_| {
            let (connector, server_name, request) = (connector.clone(), server_name.clone(), request.clone());
            async move {
                let stage =
                    |what: &'static str| move |_| anyhow::anyhow!("{what}: no answer in {OPEN_TIMEOUT:?}");
                let tcp = tokio::time::timeout(OPEN_TIMEOUT, tokio::net::TcpStream::connect(addr))
                    .await
                    .map_err(stage("connect"))??;
                tcp.set_nodelay(true)?;
                let tcp = Stamped::new(tcp)?;
                let mut tls = tokio::time::timeout(OPEN_TIMEOUT, connector.connect(server_name, tcp))
                    .await
                    .map_err(stage("TLS handshake"))??;
                tls.write_all(request.as_bytes()).await?;
                // rustls may hold the request's records until flushed.
                tls.flush().await?;
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    let read = tokio::time::timeout(OPEN_TIMEOUT, tls.read(&mut byte))
                        .await
                        .map_err(stage("response head"))??;
                    if read == 0 {
                        bail!("the server closed the watch before answering");
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head);
                if !head.starts_with("HTTP/1.1 200") {
                    bail!("the watch was answered {}", head.lines().next().unwrap_or(""));
                }
                Ok(tls)
            }
        })
        .buffer_unordered(OPEN_CONCURRENCY)
        .collect()
        .await;
    let streams = opened.into_iter().collect::<Result<Vec<_>>>()?;
    println!("ready");
    flush();

    // Each connection notes the arrival of each event's first byte; a counter per round tells
    // when every connection has seen it.
    let seen: Arc<Vec<std::sync::atomic::AtomicUsize>> = Arc::new(
        (0..=rounds)
            .map(|_| std::sync::atomic::AtomicUsize::new(0))
            .collect(),
    );
    let notify = Arc::new(tokio::sync::Notify::new());
    let mut tasks = Vec::new();
    for mut tls in streams {
        let (seen, notify) = (seen.clone(), notify.clone());
        tasks.push(tokio::spawn(async move {
            let mut arrivals = Vec::with_capacity(rounds);
            let mut buf = vec![0u8; 16 * 1024];
            let (mut in_event, mut last) = (false, 0u8);
            while arrivals.len() < rounds {
                let read = tls.read(&mut buf).await?;
                let at = now_nanos();
                if read == 0 {
                    bail!("the watch ended after {} events", arrivals.len());
                }
                let Some(queued) = tls.get_ref().0.last_stamp else {
                    bail!("the kernel gave no receive timestamp (SO_TIMESTAMPNS)");
                };
                for &b in &buf[..read] {
                    if !in_event && b == b'{' {
                        in_event = true;
                        arrivals.push((queued, at));
                    } else if in_event && last == b'}' && b == b'\n' {
                        in_event = false;
                        let round = arrivals.len();
                        seen[round].fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        notify.notify_one();
                    }
                    last = b;
                }
            }
            // The connection stays open until every worker has reported: a client that hung
            // up after its last event would have the server closing connections while it still
            // sends that event to the others.
            Ok::<_, anyhow::Error>((arrivals, tls))
        }));
    }
    for round in 1..=rounds {
        while seen[round].load(std::sync::atomic::Ordering::SeqCst) < conns {
            // Woken by any connection's event (a permit is kept when no one waits, so none is
            // lost); the count says whether all have it.
            notify.notified().await;
        }
        println!("done {round}");
        flush();
    }
    let mut out = String::new();
    let mut open = Vec::with_capacity(tasks.len());
    for task in tasks {
        let (arrivals, tls) = task.await??;
        open.push(tls);
        for (i, (queued, at)) in arrivals.into_iter().enumerate() {
            out.push_str(&format!("a {} {queued} {at}\n", i + 1));
        }
    }
    print!("{out}");
    flush();
    Ok(())
}

fn tls_config(dir: &Path) -> Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read = |f: &str| std::fs::read(dir.join(f)).with_context(|| f.to_string());
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&read("ca.pem")?) {
        roots.add(cert?)?;
    }
    let chain = CertificateDer::pem_slice_iter(&read("cert.pem")?).collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_slice(&read("key.pem")?)?;
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
