//! The fake kubelet: what decides whether the kube-apiserver can still reach a node (`oc logs`,
//! `exec`, `attach`), and so the ground truth the scenarios check.
//!
//! It serves HTTPS on loopback (port 0) and requires a client certificate, verified against its
//! clientCAFile `/etc/kubernetes/kubelet-ca.crt` at the **simulated** instant. It reloads the
//! bundle when the file changes and logs what the real kubelet's watch logs (`CaFileWatch`). A
//! rejected client certificate is logged with the evidence (simulated time, validity, issuer).
//! `probe` is the kube-apiserver's side of that handshake.

use super::embedded::{Service, ServiceContext};
use crate::mco::KUBELET_CA_PATH;
use crate::pki::{Clock, SimClock, VerifyError, verify_client_der};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};
use std::net::SocketAddr;
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
/// `WATCH_GONE_LOG` and is watched again. A load logs `CA_RELOAD_LOG` only when the content
/// changed; an empty or missing file is an error that keeps the bundle it had. Line numbers are
/// those of the seeds' 4.12 node log where it shows the line.
struct CaFileWatch {
    bundle: Bundle,
    watched: Option<u64>,
}

impl CaFileWatch {
    fn inode(ctx: &ServiceContext) -> Option<u64> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(Self::path(ctx)).ok().map(|m| m.ino())
    }

    fn path(ctx: &ServiceContext) -> std::path::PathBuf {
        ctx.node.root().join(KUBELET_CA_PATH.trim_start_matches('/'))
    }

    /// The first load, at start: logged whatever it holds.
    fn start(ctx: &ServiceContext, bundle: Bundle) -> Self {
        let text = std::fs::read_to_string(Self::path(ctx)).unwrap_or_default();
        *bundle.write().unwrap_or_else(|p| p.into_inner()) = text;
        ctx.log(&format!("I0000 dynamic_cafile_content.go:119] {CA_RELOAD_LOG}"));
        CaFileWatch {
            bundle,
            watched: Self::inode(ctx),
        }
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
        let name = format!("client-ca-bundle::{KUBELET_CA_PATH}");
        let text = match std::fs::read_to_string(Self::path(ctx)) {
            Ok(text) if text.is_empty() => {
                return ctx.log(&format!(
                    "E0000 dynamic_cafile_content.go] {name} failed with : missing content for CA bundle \"{name}\""
                ));
            }
            Ok(text) => text,
            Err(e) => {
                // As Go words the error.
                let why = match e.kind() {
                    std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
                    _ => e.to_string(),
                };
                return ctx.log(&format!(
                    "E0000 dynamic_cafile_content.go] {name} failed with : open {KUBELET_CA_PATH}: {why}"
                ));
            }
        };
        let mut current = self.bundle.write().unwrap_or_else(|p| p.into_inner());
        if *current != text {
            *current = text;
            ctx.log(&format!("I0000 dynamic_cafile_content.go:119] {CA_RELOAD_LOG}"));
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
                    return ctx.log(&format!(
                        "E0000 run.go:74] \"command failed\" err=\"failed to run Kubelet: {e}\""
                    ));
                }
            }
        }
        let bundle: Bundle = Arc::default();
        let mut ca_file = CaFileWatch::start(&ctx, bundle.clone());
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
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = Arc::new(SimTimeVerifier {
            bundle: bundle.clone(),
            clock: ctx.node.clock().clone(),
            algorithms: provider.signature_verification_algorithms,
            rejections: rejections_tx,
        });
        let serving =
            match fake_apiserver::ServingCert::generate("kubelet-serving-ca", &["127.0.0.1", "localhost"]) {
                Ok(s) => s,
                Err(e) => return ctx.log(&format!("E0000 serving certificate: {e}")),
            };
        let config = server_config(provider, verifier, &serving);
        let config = match config {
            Ok(c) => c,
            Err(e) => return ctx.log(&format!("E0000 TLS configuration: {e}")),
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
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
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
                    let acceptor = acceptor.clone();
                    tokio::spawn(async move {
                        let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                        let mut head = vec![0u8; 4096];
                        let _ = tls.read(&mut head).await;
                        let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n").await;
                        let _ = tls.shutdown().await;
                    });
                }
            }
        }
        ctx.node.set_kubelet_endpoint(None);
        drop(watcher);
    }
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

/// The kube-apiserver trusts the kubelet's serving certificate here: scenarios judge the
/// kubelet's verdict on the client certificate, not the other way round.
#[derive(Debug)]
struct AnyServerCert(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyServerCert {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("kubelet at {addr} rejected the client certificate: {reason}")]
    Rejected { addr: SocketAddr, reason: String },
    /// Nothing accepts connections there: a kubelet that is down (mid-restart, mid-reboot) has
    /// not judged any certificate.
    #[error("kubelet at {addr} is not serving: {reason}")]
    NotServing { addr: SocketAddr, reason: String },
    #[error("client certificate unusable: {0}")]
    Certificate(String),
}

/// How long one probe may take: a kubelet that accepted the connection and then went away
/// (restarted mid-handshake) must not hold the step past its deadline.
pub const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What the kube-apiserver does for `oc logs`: a TLS connection to the kubelet with its
/// kubelet client certificate, and one request. `Ok` when the kubelet answered; a kubelet that
/// does not answer within `PROBE_TIMEOUT` is not serving.
pub async fn probe(addr: SocketAddr, client_cert_pem: &str, client_key_pem: &str) -> Result<(), ProbeError> {
    tokio::time::timeout(PROBE_TIMEOUT, probe_once(addr, client_cert_pem, client_key_pem))
        .await
        .unwrap_or_else(|_| {
            Err(ProbeError::NotServing {
                addr,
                reason: format!("no answer within {PROBE_TIMEOUT:?}"),
            })
        })
}

async fn probe_once(addr: SocketAddr, client_cert_pem: &str, client_key_pem: &str) -> Result<(), ProbeError> {
    use rustls::pki_types::pem::PemObject;
    let bad = |e: String| ProbeError::Certificate(e);
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(client_cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| bad(e.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(client_key_pem.as_bytes()).map_err(|e| bad(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServerCert(algorithms)))
        .with_client_auth_cert(chain, key)
        .map_err(|e| bad(e.to_string()))?;
    let rejected = |reason: String| ProbeError::Rejected { addr, reason };
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| ProbeError::NotServing {
            addr,
            reason: e.to_string(),
        })?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = ServerName::try_from("localhost").expect("a valid DNS name");
    let mut tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| rejected(e.to_string()))?;
    // With TLS 1.3 the server judges the client certificate after the client's Finished: the
    // verdict arrives with the first read.
    tls.write_all(
        b"GET /containerLogs/openshift-machine-config-operator/probe/probe HTTP/1.1\r\nHost: kubelet\r\n\r\n",
    )
    .await
    .map_err(|e| rejected(e.to_string()))?;
    let mut response = Vec::new();
    tls.read_to_end(&mut response)
        .await
        .map_err(|e| rejected(e.to_string()))?;
    if response.starts_with(b"HTTP/1.1 200") {
        Ok(())
    } else {
        Err(rejected(format!(
            "unexpected answer {:?}",
            String::from_utf8_lossy(&response)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{EmbeddedNode, KUBELET_UNIT, Node};
    use crate::pki::Signer;
    use std::time::Duration;

    const WAIT: Duration = Duration::from_secs(10);

    /// A kubelet that is down is "not serving", not a rejection of the certificate.
    #[tokio::test]
    async fn a_kubelet_that_is_down_is_not_serving() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let signer = Signer::issue(
            "ns",
            "s",
            crate::pki::SIMULATION_EPOCH,
            time::Duration::days(1),
            1,
        )
        .unwrap();
        let client = signer
            .issue_client(
                "system:kube-apiserver",
                &[],
                crate::pki::SIMULATION_EPOCH,
                time::Duration::days(1),
                2,
            )
            .unwrap();
        let err = probe(addr, &client.pem, &client.key_pem).await.unwrap_err();
        assert!(matches!(err, ProbeError::NotServing { .. }), "{err}");
        assert!(err.to_string().contains("is not serving"), "{err}");
    }

    async fn kubelet_node() -> EmbeddedNode {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let node = EmbeddedNode::new("node-1", &[KUBELET_UNIT], SimClock::default()).unwrap();
        // A kubeconfig of its own, as every seeded node has (without one the kubelet would
        // bootstrap first); it names no server, so the kubelet posts no status here.
        node.write(
            crate::node::seed::KUBELET_KUBECONFIG,
            b"apiVersion: v1\nkind: Config\n",
            0o600,
        )
        .await
        .unwrap();
        node.set_service(KUBELET_UNIT, Arc::new(FakeKubelet));
        node
    }

    async fn endpoint(node: &EmbeddedNode) -> SocketAddr {
        let mark = crate::node::JournalMark(0);
        node.wait_for_journal(mark, "Starting to listen", WAIT)
            .await
            .unwrap()
            .expect("the kubelet listens");
        node.kubelet_endpoint().await.unwrap().expect("published")
    }

    /// Replace the file as agents do: a new file renamed over the old one.
    fn replace_atomically(node: &EmbeddedNode, contents: &str) {
        let path = node.root().join("etc/kubernetes/kubelet-ca.crt");
        let tmp = node.root().join("etc/kubernetes/.kubelet-ca.crt.tmp");
        std::fs::write(&tmp, contents).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }

    #[tokio::test]
    async fn accepts_reloads_and_rejects_at_simulated_time() {
        let node = kubelet_node().await;
        let now = node.clock().now();
        let old = Signer::issue(
            "ns",
            "kube-apiserver-to-kubelet-signer",
            now,
            time::Duration::days(365),
            1,
        )
        .unwrap();
        let new = Signer::issue(
            "ns",
            "kube-apiserver-to-kubelet-signer",
            now + time::Duration::SECOND,
            time::Duration::days(365),
            2,
        )
        .unwrap();
        node.write(KUBELET_CA_PATH, old.cert.pem.as_bytes(), 0o644)
            .await
            .unwrap();
        node.boot().await;
        let addr = endpoint(&node).await;
        let client = old
            .issue_client(
                "system:kube-apiserver",
                &["kube-master"],
                now,
                time::Duration::days(30),
                3,
            )
            .unwrap();
        probe(addr, &client.pem, &client.key_pem)
            .await
            .expect("trusted signer: accepted");

        let mark = node.journal_mark().await.unwrap();
        replace_atomically(&node, &new.cert.pem);
        let reload = node
            .wait_for_journal(mark, CA_RELOAD_LOG, WAIT)
            .await
            .unwrap()
            .expect("reloaded after the rename");
        assert!(reload.contains("node-1 kubelet["), "{reload}");
        let err = probe(addr, &client.pem, &client.key_pem).await.unwrap_err();
        assert!(matches!(err, ProbeError::Rejected { .. }), "{err}");
        let logged = node
            .wait_for_journal(mark, "Unable to authenticate the request", WAIT)
            .await
            .unwrap()
            .expect("the rejection logged");
        assert!(logged.contains("is not in the CA bundle"), "{logged}");

        let mark = node.journal_mark().await.unwrap();
        replace_atomically(&node, &format!("{}{}", new.cert.pem, old.cert.pem));
        node.wait_for_journal(mark, CA_RELOAD_LOG, WAIT)
            .await
            .unwrap()
            .expect("reloaded again");
        probe(addr, &client.pem, &client.key_pem)
            .await
            .expect("both signers: accepted again");
        node.clock().advance(time::Duration::days(31));
        let mark = node.journal_mark().await.unwrap();
        assert!(
            probe(addr, &client.pem, &client.key_pem).await.is_err(),
            "expired at simulated time"
        );
        let logged = node
            .wait_for_journal(mark, "Unable to authenticate", WAIT)
            .await
            .unwrap()
            .expect("the rejection logged");
        assert!(logged.contains("(sim), not valid after"), "{logged}");
        node.shutdown().await;
    }

    /// What the watch on the file itself reports, from the inode it watched and the one there now.
    #[test]
    fn a_new_inode_is_a_replaced_file_and_the_same_one_a_write() {
        let table = [
            (Some(7), Some(7), Some(FileEvent::Written)),
            (Some(7), Some(8), Some(FileEvent::Replaced)),
            (Some(7), None, Some(FileEvent::Replaced)),
            (None, Some(8), None),
            (None, None, None),
        ];
        for (watched, now, expected) in table {
            assert_eq!(file_event(watched, now), expected, "{watched:?} -> {now:?}");
        }
    }

    /// The seeds' 4.12 node log: a kubelet-ca.crt renamed over the old one makes the kubelet log
    /// that its watch is gone, then that it loaded the new bundle; a write in place only the
    /// load; an emptied file an error, keeping the bundle it had.
    #[tokio::test]
    async fn a_rename_and_a_write_in_place_log_what_the_kubelet_logs() {
        let node = kubelet_node().await;
        let now = node.clock().now();
        let issue = |serial| Signer::issue("ns", "signer", now, time::Duration::days(365), serial).unwrap();
        let (first, second, third) = (issue(1), issue(2), issue(3));
        node.write(KUBELET_CA_PATH, first.cert.pem.as_bytes(), 0o644)
            .await
            .unwrap();
        node.boot().await;
        let addr = endpoint(&node).await;
        let relevant = |lines: Vec<String>| -> Vec<String> {
            lines
                .into_iter()
                .filter(|l| l.contains("dynamic_cafile_content.go"))
                .map(|l| l.split_once("] ").map(|(_, m)| m.to_string()).unwrap_or(l))
                .collect()
        };

        let mark = node.journal_mark().await.unwrap();
        replace_atomically(&node, &second.cert.pem);
        node.wait_for_journal(mark, CA_RELOAD_LOG, WAIT)
            .await
            .unwrap()
            .expect("reloaded");
        let lines = relevant(node.journal_since(mark).await.unwrap());
        assert_eq!(
            lines,
            [
                format!(
                    "{WATCH_GONE_LOG} err=\"can't remove non-existent inotify watch for: {KUBELET_CA_PATH}\""
                ),
                CA_RELOAD_LOG.to_string()
            ],
            "after a rename"
        );

        // In place: the same inode, written again.
        let mark = node.journal_mark().await.unwrap();
        let path = node.root().join("etc/kubernetes/kubelet-ca.crt");
        std::fs::write(&path, &third.cert.pem).unwrap();
        node.wait_for_journal(mark, CA_RELOAD_LOG, WAIT)
            .await
            .unwrap()
            .expect("reloaded");
        let lines = relevant(node.journal_since(mark).await.unwrap());
        assert!(
            !lines.is_empty() && lines.iter().all(|l| l == CA_RELOAD_LOG),
            "after a write in place: {lines:?}"
        );

        // Emptied in place: an error, and the bundle it had still verifies.
        let mark = node.journal_mark().await.unwrap();
        std::fs::write(&path, "").unwrap();
        let error = node
            .wait_for_journal(mark, "missing content for CA bundle", WAIT)
            .await
            .unwrap()
            .expect("the empty file is an error");
        assert!(
            error.contains("client-ca-bundle::/etc/kubernetes/kubelet-ca.crt failed with"),
            "{error}"
        );
        let client = third
            .issue_client(
                "system:kube-apiserver",
                &["kube-master"],
                now,
                time::Duration::days(30),
                4,
            )
            .unwrap();
        probe(addr, &client.pem, &client.key_pem)
            .await
            .expect("the bundle it had is kept");
        node.shutdown().await;
    }
}
