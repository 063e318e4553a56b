//! `fake-apiserver [--port N] [--kubeconfig OUT] [FILE.yaml|DIR …]`: serve the fake API
//! server with the given manifests loaded, print `ready <url>` on stdout once it serves, and
//! log one line per request on stderr. A bad manifest exits 2 naming its file and document.

use clap::Parser;
use fake_apiserver::manifests::{self, Manifest};
use fake_apiserver::{FakeApiServer, StartError};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(version, about = "An in-memory Kubernetes API server over HTTPS")]
struct Args {
    /// Port on 127.0.0.1 (0: the OS chooses).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Write an admin (system:masters) kubeconfig here.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Let requests without credentials in as system:anonymous.
    #[arg(long)]
    anonymous: bool,
    /// The most watch events kept per resource for replay (kube-apiserver's watch cache bound).
    #[arg(long, default_value_t = 100 * 1024)]
    history: usize,
    /// Seconds a connection has to deliver a request header (kube-apiserver: 32).
    #[arg(long, default_value_t = 32)]
    read_header_timeout: u64,
    /// Seconds an idle connection is kept (kube-apiserver: 90).
    #[arg(long, default_value_t = 90)]
    idle_timeout: u64,
    /// Do not log requests.
    #[arg(long, short)]
    quiet: bool,
    /// Manifests to load (multi-document YAML; directories are read in name order).
    files: Vec<PathBuf>,
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("fake-apiserver: {message}");
    ExitCode::from(2)
}

#[tokio::main]
async fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let loaded: Vec<Manifest> = match manifests::load(&args.files) {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    let mut builder = FakeApiServer::builder()
        .port(args.port)
        .anonymous(args.anonymous)
        .history_limit(args.history)
        .read_header_timeout(std::time::Duration::from_secs(args.read_header_timeout))
        .idle_timeout(std::time::Duration::from_secs(args.idle_timeout))
        .log_requests(!args.quiet);
    for m in &loaded {
        builder = builder.object(m.object.clone());
    }
    let server = match builder.start().await {
        Ok(s) => s,
        Err(StartError::Seed { index, what, error }) => {
            let m = &loaded[index];
            return fail(format!(
                "{}: document {}: {what}: {error}",
                m.file.display(),
                m.document
            ));
        }
        Err(e) => return fail(e),
    };
    if let Some(path) = &args.kubeconfig
        && let Err(e) = std::fs::write(path, server.kubeconfig(server.admin_identity()))
    {
        return fail(format!("{}: {e}", path.display()));
    }
    println!("ready {}", server.url());
    let _ = std::io::stdout().flush();
    let _ = tokio::signal::ctrl_c().await;
    server.shutdown().await;
    ExitCode::SUCCESS
}
