//! The running server: its builder, the accept loop, and the handle tests hold.
//!
//! `serve` takes a bound listener, the shared state and a shutdown token (mini-redis's
//! `server::run` shape), so callers choose the port. The handle mints client identities (as a
//! kubeconfig or a `kube::Client`), swaps the serving certificate, injects faults and shuts
//! the server down. Nothing here knows resource semantics; that is the store's.

use crate::auth::{Authenticator, CertAuth, Identity, Policy};
use crate::conn::{Activity, ConnIo, Held, Timeouts};
use crate::error::ApiError;
use crate::faults::Faults;
use crate::handle::ServerHandle;
use crate::pki::{CertificateAuthority, DEFAULT_SERVING_HOSTS, PkiError, ServingCert};
pub(crate) use crate::shared::Shared;
use crate::shared::read;
use crate::store::{Store, StoreConfig, Subresource};
use crate::tls::{TlsError, server_config};
use http_body_util::BodyExt as _;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// Default request body limit, kube-apiserver's own (3 MiB).
pub(crate) const DEFAULT_BODY_LIMIT: usize = 3 * 1024 * 1024;

/// How long a dropped connection may finish what it is doing after its GOAWAY.
const DROP_GRACE: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("binding {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Pki(#[from] PkiError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("client CA: {0}")]
    ClientCa(String),
    /// An initial object was refused; `index` is its position in the order given.
    #[error("object {index} ({what}): {error}")]
    Seed {
        index: usize,
        what: String,
        error: Box<ApiError>,
    },
}

/// Entry point: `FakeApiServer::builder()...start().await`.
pub struct FakeApiServer;

impl FakeApiServer {
    pub fn builder() -> FakeApiServerBuilder {
        FakeApiServerBuilder {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            serving: None,
            client_ca: None,
            extra_client_cas: Vec::new(),
            anonymous: false,
            tokens: HashMap::new(),
            store: StoreConfig::default(),
            body_limit: DEFAULT_BODY_LIMIT,
            // apiserver storage/cacher/cacher.go defaultBookmarkFrequency
            bookmark_interval: Duration::from_secs(60),
            timeouts: Timeouts::default(),
            policy: Policy::default(),
            log_requests: false,
            objects: Vec::new(),
        }
    }
}

/// Options for a server, all with working defaults.
pub struct FakeApiServerBuilder {
    bind: SocketAddr,
    serving: Option<ServingCert>,
    client_ca: Option<CertificateAuthority>,
    extra_client_cas: Vec<String>,
    anonymous: bool,
    tokens: HashMap<String, Identity>,
    store: StoreConfig,
    body_limit: usize,
    bookmark_interval: Duration,
    timeouts: Timeouts,
    policy: Policy,
    log_requests: bool,
    objects: Vec<Value>,
}

impl FakeApiServerBuilder {
    /// Listen on this port of 127.0.0.1 (0, the default, lets the OS choose).
    pub fn port(mut self, port: u16) -> Self {
        self.bind.set_port(port);
        self
    }

    /// Listen on this address (loopback only on shared machines).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = addr;
        self
    }

    /// The serving chain; by default a fresh CA and a certificate for `DEFAULT_SERVING_HOSTS`.
    pub fn serving_cert(mut self, cert: ServingCert) -> Self {
        self.serving = Some(cert);
        self
    }

    /// The CA client certificates are issued from; by default a fresh one.
    pub fn client_ca(mut self, ca: CertificateAuthority) -> Self {
        self.client_ca = Some(ca);
        self
    }

    /// Trust client certificates from another CA too (PEM).
    pub fn trust_client_ca(mut self, pem: String) -> Self {
        self.extra_client_cas.push(pem);
        self
    }

    /// Requests without credentials become `system:anonymous` instead of 401.
    pub fn anonymous(mut self, on: bool) -> Self {
        self.anonymous = on;
        self
    }

    /// Accept `Authorization: Bearer <token>` as `identity`.
    pub fn token(mut self, token: &str, identity: Identity) -> Self {
        self.tokens.insert(token.to_string(), identity);
        self
    }

    /// The most watch events kept per resource for replay (kube-apiserver's watch cache grows
    /// to 100 × 1024 while its events are under 75 s old, the default here); a watch from an
    /// older resourceVersion gets 410.
    pub fn history_limit(mut self, events: usize) -> Self {
        self.store.history_limit = events.max(1);
        self
    }

    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// How often an open watch that allows bookmarks may get one, besides the one 2 s before
    /// its deadline (kube-apiserver: every minute).
    pub fn bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every.max(Duration::from_millis(10));
        self
    }

    /// How long a connection has to deliver a request header: its first from the end of its
    /// TLS handshake (which the same bound limits), each later one from its first byte.
    /// kube-apiserver's (Go `ReadHeaderTimeout`): 32 s. Zero is none, as in Go.
    pub fn read_header_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.read_header = timeout;
        self
    }

    /// How long a connection may sit with no request in flight and no byte of a next one
    /// before it is closed (HTTP/1.1, and h2 with a GOAWAY). kube-apiserver's (Go
    /// `IdleTimeout`, for both): 90 s. Zero is none, as in Go.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.idle = timeout;
        self
    }

    pub fn authorizer(mut self, authorizer: Arc<dyn crate::auth::Authorizer>) -> Self {
        let selectors = self.policy.node_selectors;
        self.policy = Policy::new(authorizer);
        self.policy.node_selectors = selectors;
        self
    }

    /// Whether the Node authorizer limits a kubelet's reads of Nodes and Pods to its own
    /// (`AuthorizeNodeWithSelectors`, on in kube-apiserver 1.32 and later; the default). Off,
    /// as a 1.31 or older kube-apiserver does (OpenShift 4.12 runs 1.25, 4.16 runs 1.29).
    pub fn node_authorizer_selectors(mut self, on: bool) -> Self {
        self.policy.node_selectors = on;
        self
    }

    /// Print one line per request (method, path, code, duration) on stderr.
    pub fn log_requests(mut self, on: bool) -> Self {
        self.log_requests = on;
        self
    }

    /// An object to create before serving (CRDs are created before everything else). A
    /// custom resource's `status` is written through its status subresource.
    pub fn object(mut self, object: Value) -> Self {
        self.objects.push(object);
        self
    }

    pub async fn start(self) -> Result<ServerHandle, StartError> {
        let serving = match self.serving {
            Some(s) => s,
            None => ServingCert::generate("fake-apiserver-serving-ca", DEFAULT_SERVING_HOSTS)?,
        };
        let client_ca = match self.client_ca {
            Some(ca) => ca,
            None => CertificateAuthority::generate("fake-apiserver-client-ca")?,
        };
        let mut ca_pems = vec![client_ca.cert_pem.clone()];
        ca_pems.extend(self.extra_client_cas);
        let authenticator = Authenticator::new(&ca_pems, self.tokens.clone(), self.anonymous)
            .map_err(StartError::ClientCa)?;
        let tls = server_config(
            &serving.chain_pem,
            &serving.key_pem,
            authenticator.anchor_subjects(),
        )?;
        let listener = TcpListener::bind(self.bind)
            .await
            .map_err(|source| StartError::Bind {
                addr: self.bind,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: self.bind,
            source,
        })?;
        let shared = Arc::new(Shared {
            store: Store::new(self.store),
            policy: self.policy,
            faults: Faults::default(),
            body_limit: self.body_limit,
            bookmark_interval: self.bookmark_interval,
            timeouts: self.timeouts,
            log_requests: self.log_requests,
            addr,
            authenticator: RwLock::new(Arc::new(authenticator)),
            tls: RwLock::new(tls),
            serving: RwLock::new(serving),
            tokens: self.tokens,
            anonymous: self.anonymous,
            connections: RwLock::new(CancellationToken::new()),
            watches: RwLock::new(CancellationToken::new()),
        });
        seed(&shared.store, self.objects)?;
        let admin = client_ca.issue_client("system:admin", &["system:masters"])?;
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(serve(listener, shared.clone(), shutdown.clone()));
        Ok(ServerHandle {
            url: format!("https://{addr}"),
            shared,
            client_ca,
            admin,
            shutdown,
            task: Some(task),
        })
    }
}

/// Create the initial objects: CRDs first, then the rest in the order given.
fn seed(store: &Store, objects: Vec<Value>) -> Result<(), StartError> {
    let is_crd = |o: &Value| o["kind"] == "CustomResourceDefinition";
    let mut ordered: Vec<(usize, Value)> = objects.into_iter().enumerate().collect();
    ordered.sort_by_key(|(_, o)| !is_crd(o));
    for (index, object) in ordered {
        let what = format!(
            "{} {}",
            object["kind"].as_str().unwrap_or("<no kind>"),
            object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("<no name>")
        );
        let fail = |error: ApiError| StartError::Seed {
            index,
            what: what.clone(),
            error: Box::new(error),
        };
        let api_version = object["apiVersion"].as_str().unwrap_or("");
        let kind = object["kind"].as_str().unwrap_or("");
        let info = store
            .registry()
            .by_kind(api_version, kind)
            .cloned()
            .ok_or_else(|| {
                fail(ApiError::BadRequest(format!(
                    "no resource serves kind {kind:?} in {api_version:?}"
                )))
            })?;
        let ns = info.namespaced.then(|| {
            object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_string()
        });
        let created = store
            .create(&info, ns.as_deref(), object.clone(), false)
            .map_err(fail)?;
        if let Some(status) = object
            .get("status")
            .filter(|_| info.status_subresource && !info.builtin)
        {
            let mut with_status = created.value.clone();
            with_status["status"] = status.clone();
            store
                .update(
                    &info,
                    ns.as_deref(),
                    created.name(),
                    with_status,
                    Subresource::Status,
                    false,
                )
                .map_err(fail)?;
        }
    }
    Ok(())
}

/// Accept connections until `shutdown`; each gets TLS, its certificate judged once, and
/// HTTP/1.1 or h2 as ALPN chose.
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    loop {
        let tcp = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                // Out of descriptors or a reset before accept: nothing to wait on, so back off.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let shared = shared.clone();
        let dropped = read(&shared.connections);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let acceptor = TlsAcceptor::from(shared.tls_config());
            let timeouts = shared.timeouts;
            // Go bounds the handshake by the read-header timeout when no read or write
            // timeout is set, as kube-apiserver sets none.
            let bound = crate::conn::bound(timeouts.read_header).unwrap_or(Duration::MAX);
            let handshake = tokio::time::timeout(bound, acceptor.accept(tcp));
            let Ok(Ok(tls)) = handshake.await else { return };
            let cert = match tls.get_ref().1.peer_certificates() {
                Some(chain) => shared.authenticator().verify_chain(chain),
                None => CertAuth::None,
            };
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
            let cert = Arc::new(cert);
            let activity = Activity::new();
            let requests = activity.clone();
            let service = hyper::service::service_fn(move |req| {
                let in_flight = requests.begin();
                let answer = crate::http::serve(shared.clone(), cert.clone(), req);
                async move {
                    answer
                        .await
                        .map(|response| response.map(|body| Held::new(body, in_flight).boxed_unsync()))
                }
            });
            let builder = auto::Builder::new(TokioExecutor::new());
            let io = ConnIo::new(tls, activity.clone());
            let connection = builder.serve_connection(TokioIo::new(io), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                _ = shutdown.cancelled() => return,
                _ = dropped.cancelled() => {}
                // HTTP/1.1 closes at once (Go gives no answer to a header that timed out);
                // h2 says GOAWAY first.
                _ = activity.expired(timeouts, h2) => if !h2 { return },
            }
            // As a terminating kube-apiserver does: GOAWAY on HTTP/2, close after the current
            // response on HTTP/1.1, so clients send no new request on this connection and lose
            // none in flight; then a hard stop for whatever still lingers.
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(DROP_GRACE, connection).await;
        });
    }
}
