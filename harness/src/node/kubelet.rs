//! The fake kubelet: what decides whether the kube-apiserver can still reach a node (`oc logs`,
//! `exec`, `attach`), and so the ground truth the scenarios check.
//!
//! It serves HTTPS on loopback (port 0) and requires a client certificate, verified against its
//! clientCAFile `/etc/kubernetes/kubelet-ca.crt` at the **simulated** instant. It does not start
//! without a file it can load (it logs "command failed" and exits; kubelet.service starts it
//! again, `restart`). It reloads the bundle when the file changes and logs what the real
//! kubelet's watch logs (`CaFileWatch`); a file that holds no certificate Go reads whole (half
//! written, say) is then an error that leaves it verifying with the bundle it had (`reload`,
//! `pki::go_ca_bundle`). A
//! rejected client certificate is logged with the evidence (simulated time, validity, issuer).
//! `probe` is the kube-apiserver's side of that handshake.

use super::embedded::{Service, ServiceContext};
use crate::mco::KUBELET_CA_PATH;
use crate::pki::{Clock, SimClock, VerifyError, verify_client_der};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};
use std::sync::{Arc, RwLock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The line the kubelet logs whenever it loads a client CA bundle (upstream
/// `dynamic_cafile_content.go`).
pub const CA_RELOAD_LOG: &str =
    r#""Loaded a new CA Bundle and Verifier" name="client-ca-bundle::/etc/kubernetes/kubelet-ca.crt""#;

/// The line the kubelet logs when the file it watches was replaced (renamed over) or removed:
/// its watch went with the old inode, so removing it fails before the kubelet watches the new
/// one (upstream `dynamic_cafile_content.go` `handleWatchEvent`; the seeds' 4.12 node log shows
/// it right before `CA_RELOAD_LOG`).
pub const WATCH_GONE_LOG: &str =
    r#""Failed to remove file watch, it may have been deleted" file="/etc/kubernetes/kubelet-ca.crt""#;

/// The bundle the kubelet verifies with, shared with its verifier.
type Bundle = Arc<RwLock<String>>;

#[derive(Debug)]
struct SimTimeVerifier {
    bundle: Bundle,
    clock: SimClock,
    algorithms: WebPkiSupportedAlgorithms,
    rejections: tokio::sync::mpsc::UnboundedSender<VerifyError>,
}

impl ClientCertVerifier for SimTimeVerifier {
    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _wall_time: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let bundle = self.bundle.read().unwrap_or_else(|p| p.into_inner()).clone();
        match verify_client_der(end_entity, &bundle, self.clock.now()) {
            Ok(()) => Ok(ClientCertVerified::assertion()),
            Err(e) => {
                let error = match &e {
                    VerifyError::Expired { .. } => CertificateError::Expired,
                    VerifyError::NotYetValid { .. } => CertificateError::NotValidYet,
                    VerifyError::UnknownIssuer { .. } => CertificateError::UnknownIssuer,
                    VerifyError::Invalid(_) => CertificateError::BadEncoding,
                };
                let _ = self.rejections.send(e);
                Err(rustls::Error::InvalidCertificate(error))
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The kubelet service of a node.
pub struct FakeKubelet;

/// What happened to the watched file, as an inotify watch on the file itself tells it
/// (upstream watches `kubelet-ca.crt`, not its directory): written in place (the same inode), or
/// gone from under the watch (renamed over or removed: another inode, or none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileEvent {
    Written,
    Replaced,
}

/// The event the kubelet's watch reports for the file now at `now` (its inode, if any) when it
/// watched `watched`; `None` when it watched nothing (the file was missing, and the kubelet
/// watches it again once it is back).
fn file_event(watched: Option<u64>, now: Option<u64>) -> Option<FileEvent> {
    match watched {
        None => None,
        Some(w) if Some(w) == now => Some(FileEvent::Written),
        Some(_) => Some(FileEvent::Replaced),
    }
}

/// The kubelet's client CA file and its watch (upstream `DynamicFileCAContent`, Kubernetes
/// 1.25–1.29): every event reloads the file; a replaced or removed file first logs
/// `WATCH_GONE_LOG` and is watched again. What a reload does is `reload`'s. Line numbers are
/// those of the seeds' 4.12 node log where it shows the line.
struct CaFileWatch {
    bundle: Bundle,
    /// The file's bytes at the last load that took: upstream compares the new bytes with them.
    loaded: Option<Vec<u8>>,
    watched: Option<u64>,
}

/// What a reload of the client CA file does, by what the file holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reload {
    /// The same bytes as the last load: nothing.
    Unchanged,
    /// A new bundle, as PEM of the certificates Go reads from the file (`pki::go_ca_bundle`):
    /// it replaces the one the kubelet verifies with, and `CA_RELOAD_LOG` is logged.
    Loaded(String),
    /// The file could not be read, is empty or holds no certificate the kubelet reads whole: the
    /// kubelet keeps the bundle it had and logs the error as its work queue does (`key` is its
    /// queue's one item) before it retries.
    Failed(String),
}

/// The line the kubelet's command logs when its run fails (component-base `cli.Run`:
/// `klog.ErrorS(err, "command failed")`, the kubelet's `Run` having wrapped the error as
/// "failed to run Kubelet: …"), the error quoted as klog quotes a value.
pub fn command_failed(error: &str) -> String {
    let quoted = format!("failed to run Kubelet: {error}")
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    format!("E0000 run.go:74] \"command failed\" err=\"{quoted}\"")
}

/// Upstream `loadCABundle`: read, refuse an empty file, skip unchanged bytes, parse as
/// `newCABundleAndVerifier` does (`error loading CA bundle for …`).
fn reload(loaded: Option<&[u8]>, read: &std::io::Result<Vec<u8>>) -> Reload {
    let name = format!("client-ca-bundle::{KUBELET_CA_PATH}");
    let data = match read {
        Ok(data) => data.as_slice(),
        Err(e) => {
            // As Go words the error.
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
                _ => e.to_string(),
            };
            return Reload::Failed(format!("open {KUBELET_CA_PATH}: {why}"));
        }
    };
    if data.is_empty() {
        return Reload::Failed(format!("missing content for CA bundle \"{name}\""));
    }
    if loaded == Some(data) {
        return Reload::Unchanged;
    }
    match crate::pki::go_ca_bundle(data) {
        Ok(certs) => Reload::Loaded(
            certs
                .iter()
                .map(|der| crate::pki::pem_encode("CERTIFICATE", der))
                .collect(),
        ),
        Err(e) => Reload::Failed(format!("error loading CA bundle for \"{name}\": {e}")),
    }
}

impl CaFileWatch {
    fn inode(ctx: &ServiceContext) -> Option<u64> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(Self::path(ctx)).ok().map(|m| m.ino())
    }

    fn path(ctx: &ServiceContext) -> std::path::PathBuf {
        ctx.node.root().join(KUBELET_CA_PATH.trim_start_matches('/'))
    }

    /// The first load, at start. A file the kubelet cannot load is the error its start fails
    /// with: Kubernetes' `NewDynamicCAContentFromFile` loads the file once before it watches it
    /// and returns the load's error, which `BuildAuthn` and the kubelet's `run` pass up
    /// unwrapped until `Run` says "failed to run Kubelet: …".
    fn start(ctx: &ServiceContext, bundle: Bundle) -> Result<Self, String> {
        let watched = Self::inode(ctx);
        let read = std::fs::read(Self::path(ctx));
        let pem = match reload(None, &read) {
            Reload::Loaded(pem) => pem,
            Reload::Failed(why) => return Err(why),
            // Nothing was loaded before, so nothing is unchanged.
            Reload::Unchanged => String::new(),
        };
        *bundle.write().unwrap_or_else(|p| p.into_inner()) = pem;
        ctx.log(&format!("I0000 dynamic_cafile_content.go:119] {CA_RELOAD_LOG}"));
        Ok(CaFileWatch {
            bundle,
            loaded: read.ok(),
            watched,
        })
    }

    /// Something happened in the file's directory to `kubelet-ca.crt`.
    fn changed(&mut self, ctx: &ServiceContext) {
        let now = Self::inode(ctx);
        if file_event(self.watched, now) == Some(FileEvent::Replaced) {
            ctx.log(&format!(
                "I0000 dynamic_cafile_content.go:211] {WATCH_GONE_LOG} err=\"can't remove non-existent inotify watch for: {KUBELET_CA_PATH}\""
            ));
            if now.is_none() {
                ctx.log(&format!(
                    "E0000 dynamic_cafile_content.go] \"Failed to watch CA file, will retry later\" err=\"error adding watch for file {KUBELET_CA_PATH}: no such file or directory\""
                ));
            }
        }
        self.watched = now;
        let read = std::fs::read(Self::path(ctx));
        match reload(self.loaded.as_deref(), &read) {
            Reload::Unchanged => {}
            Reload::Loaded(pem) => {
                *self.bundle.write().unwrap_or_else(|p| p.into_inner()) = pem;
                self.loaded = read.ok();
                ctx.log(&format!("I0000 dynamic_cafile_content.go:119] {CA_RELOAD_LOG}"));
            }
            Reload::Failed(why) => ctx.log(&format!(
                "E0000 dynamic_cafile_content.go] key failed with : {why}"
            )),
        }
    }
}

#[async_trait::async_trait]
impl Service for FakeKubelet {
    async fn run(&self, ctx: ServiceContext) {
        // Without its kubeconfig the kubelet first bootstraps one; it serves nothing until then.
        tokio::select! {
            _ = ctx.stop.cancelled() => return,
            bootstrapped = super::kubelet_bootstrap::ensure_kubeconfig(&ctx) => {
                if let Err(e) = bootstrapped {
                    return ctx.log(&command_failed(&e.to_string()));
                }
            }
        }
        let bundle: Bundle = Arc::default();
        let mut ca_file = match CaFileWatch::start(&ctx, bundle.clone()) {
            Ok(watch) => watch,
            // The process exits 1 and kubelet.service (`Restart=always`) starts it again.
            Err(why) => return ctx.log(&command_failed(&why)),
        };
        // Watch the directory, and tell from the file's inode what a watch on the file saw.
        let (changed_tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
        let dir = ctx.node.root().join("etc/kubernetes");
        let _ = std::fs::create_dir_all(&dir);
        let watcher = super::dir_watch::watch_dirs(std::slice::from_ref(&dir), move |event| {
            if event.paths.iter().any(|p| p.ends_with("kubelet-ca.crt")) {
                let _ = changed_tx.send(());
            }
        });
        let watcher = match watcher {
            Ok(w) => w,
            Err(e) => return ctx.log(&format!("E0000 cannot watch {}: {e}", dir.display())),
        };
        let (rejections_tx, mut rejections) = tokio::sync::mpsc::unbounded_channel();
        let acceptor = match tls_acceptor(&ctx, bundle, rejections_tx) {
            Ok(a) => a,
            Err(line) => return ctx.log(&line),
        };
        let listener = match TcpListener::bind("127.0.0.1:0").await {
            Ok(l) => l,
            Err(e) => return ctx.log(&format!("E0000 listen: {e}")),
        };
        let addr = listener.local_addr().ok();
        ctx.node.set_kubelet_endpoint(addr);
        if let Some(addr) = addr {
            ctx.log(&format!(
                "I0000 server.go:163] \"Starting to listen\" address=\"127.0.0.1\" port={}",
                addr.port()
            ));
        }
        let status = super::kubelet_status::report(&ctx, addr.map_or(0, |a| a.port()));
        tokio::pin!(status);
        let mut status_ended = false;
        loop {
            tokio::select! {
                _ = ctx.stop.cancelled() => break,
                () = &mut status, if !status_ended => status_ended = true,
                Some(()) = changed.recv() => ca_file.changed(&ctx),
                Some(rejected) = rejections.recv() => ctx.log(&format!(
                    "E0000 authentication.go:73] \"Unable to authenticate the request\" err=\"verifying certificate: {rejected}\""
                )),
                accepted = listener.accept() => {
                    let Ok((tcp, _)) = accepted else { continue };
                    tokio::spawn(answer(acceptor.clone(), tcp));
                }
            }
        }
        ctx.node.set_kubelet_endpoint(None);
        drop(watcher);
    }
}

/// The kubelet's TLS side: its serving certificate, and client certificates verified against
/// `bundle` at the node's simulated instant, each rejection sent to `rejections`. An error is
/// the line the kubelet logs.
fn tls_acceptor(
    ctx: &ServiceContext,
    bundle: Bundle,
    rejections: tokio::sync::mpsc::UnboundedSender<VerifyError>,
) -> Result<tokio_rustls::TlsAcceptor, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(SimTimeVerifier {
        bundle,
        clock: ctx.node.clock().clone(),
        algorithms: provider.signature_verification_algorithms,
        rejections,
    });
    let serving = fake_apiserver::ServingCert::generate("kubelet-serving-ca", &["127.0.0.1", "localhost"])
        .map_err(|e| format!("E0000 serving certificate: {e}"))?;
    let config =
        server_config(provider, verifier, &serving).map_err(|e| format!("E0000 TLS configuration: {e}"))?;
    Ok(tokio_rustls::TlsAcceptor::from(config))
}

/// One connection: the TLS handshake (where a client certificate is judged), then `ok` to
/// whatever was asked.
async fn answer(acceptor: tokio_rustls::TlsAcceptor, tcp: tokio::net::TcpStream) {
    let Ok(mut tls) = acceptor.accept(tcp).await else {
        return;
    };
    let mut head = vec![0u8; 4096];
    let _ = tls.read(&mut head).await;
    let _ = tls
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
        .await;
    let _ = tls.shutdown().await;
}

fn server_config(
    provider: Arc<rustls::crypto::CryptoProvider>,
    verifier: Arc<SimTimeVerifier>,
    serving: &fake_apiserver::ServingCert,
) -> Result<Arc<rustls::ServerConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(serving.chain_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::from_pem_slice(serving.key_pem.as_bytes()).map_err(|e| e.to_string())?;
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(config))
}

mod probe;
pub use probe::{PROBE_TIMEOUT, ProbeError, probe};

#[cfg(test)]
mod tests;
