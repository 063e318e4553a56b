//! kube clients over HTTP/2, as client-go talks to kube-apiserver: requests and watches as
//! streams multiplexed over a few TLS connections instead of an HTTP/1.1 connection each.
//!
//! kube-rs speaks HTTP/1.1 only, so every open watch holds a connection of its own (and a
//! descriptor at each end). Thousands of in-process agents watching that way run out of
//! descriptors long before memory. [`client_from_kubeconfig`] gives a `kube::Client` whose
//! requests go through a [`H2Pool`]: streams over as many connections as they need, at most
//! [`STREAMS_PER_CONNECTION`] each (below hyper's server default of 200 concurrent streams and
//! kube-apiserver's 250, so a stream never waits for room the server has not got).

use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kube::client::ConfigExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Streams one connection carries before the pool opens another.
pub const STREAMS_PER_CONNECTION: usize = 100;

/// The receive windows client-go's HTTP/2 transport (Go's `golang.org/x/net/http2`) announces:
/// 4 MiB a stream and 1 GiB for the connection (`transportDefaultStreamFlow`,
/// `transportDefaultConnFlow`). With hyper's defaults (2 MiB, 5 MiB) three watches whose events
/// wait unread would spend the connection's window and stall every response beside them; a
/// connection window far above what its streams can hold unread keeps each stream to its own.
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 1 << 30;

struct Connection {
    sender: SendRequest<kube::client::Body>,
    active: Arc<AtomicUsize>,
}

struct PoolInner {
    /// `host:port` to connect to.
    address: String,
    server_name: rustls::pki_types::ServerName<'static>,
    tls: Arc<rustls::ClientConfig>,
    connections: tokio::sync::Mutex<Vec<Connection>>,
}

/// HTTP/2 connections to one server with one identity, opened as the streams need them.
#[derive(Clone)]
pub struct H2Pool(Arc<PoolInner>);

impl H2Pool {
    /// A pool for `url` (`https://host:port`) with `tls` (its ALPN is set to h2 here).
    pub fn new(url: &http::Uri, mut tls: rustls::ClientConfig) -> Result<H2Pool, String> {
        let host = url.host().ok_or_else(|| format!("{url} names no host"))?;
        let port = url.port_u16().unwrap_or(443);
        let server_name = rustls::pki_types::ServerName::try_from(host.trim_matches(['[', ']']).to_string())
            .map_err(|e| format!("{host}: {e}"))?;
        tls.alpn_protocols = vec![b"h2".to_vec()];
        Ok(H2Pool(Arc::new(PoolInner {
            address: format!("{host}:{port}"),
            server_name,
            tls: Arc::new(tls),
            connections: tokio::sync::Mutex::new(Vec::new()),
        })))
    }

    /// How many connections are open now.
    pub async fn connections(&self) -> usize {
        let mut connections = self.0.connections.lock().await;
        connections.retain(|c| !c.sender.is_closed());
        connections.len()
    }

    /// A connection with room for one more stream, counted as taken.
    async fn checkout(&self) -> Result<(SendRequest<kube::client::Body>, ActiveStream), BoxError> {
        let mut connections = self.0.connections.lock().await;
        connections.retain(|c| !c.sender.is_closed());
        if let Some(c) = connections
            .iter()
            .find(|c| c.active.load(Ordering::Acquire) < STREAMS_PER_CONNECTION)
        {
            return Ok((c.sender.clone(), ActiveStream::take(&c.active)));
        }
        let connection = self.connect().await?;
        let taken = (connection.sender.clone(), ActiveStream::take(&connection.active));
        connections.push(connection);
        Ok(taken)
    }

    async fn connect(&self) -> Result<Connection, BoxError> {
        let tcp = tokio::net::TcpStream::connect(&self.0.address).await?;
        let _ = tcp.set_nodelay(true);
        let tls = tokio_rustls::TlsConnector::from(self.0.tls.clone())
            .connect(self.0.server_name.clone(), tcp)
            .await?;
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(format!("{} did not agree to HTTP/2 (ALPN)", self.0.address).into());
        }
        let (sender, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .handshake(TokioIo::new(tls))
            .await?;
        tokio::spawn(async move {
            // The connection's end closes its sender; the pool then drops it.
            let _ = connection.await;
        });
        Ok(Connection {
            sender,
            active: Arc::new(AtomicUsize::new(0)),
        })
    }
}

/// One stream's place on its connection, given back when the response (and its body, for a
/// watch its whole life) is dropped.
struct ActiveStream(Arc<AtomicUsize>);

impl ActiveStream {
    fn take(active: &Arc<AtomicUsize>) -> ActiveStream {
        active.fetch_add(1, Ordering::AcqRel);
        ActiveStream(active.clone())
    }
}

impl Drop for ActiveStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that holds its stream's place until dropped.
pub struct StreamBody {
    inner: Incoming,
    _active: ActiveStream,
}

impl hyper::body::Body for StreamBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl tower::Service<http::Request<kube::client::Body>> for H2Pool {
    type Response = http::Response<StreamBody>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let pool = self.clone();
        Box::pin(async move {
            let (mut sender, active) = pool.checkout().await?;
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            Ok(response.map(|inner| StreamBody {
                inner,
                _active: active,
            }))
        })
    }
}

/// A kube client for a kubeconfig whose requests are HTTP/2 streams over an [`H2Pool`]; also
/// returns the pool, which clones of the client share.
pub async fn client_from_kubeconfig(yaml: &str) -> Result<(kube::Client, H2Pool), String> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(yaml).map_err(|e| e.to_string())?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| e.to_string())?;
    let tls = config.rustls_client_config().map_err(|e| e.to_string())?;
    let pool = H2Pool::new(&config.cluster_url, tls)?;
    let service = tower::Layer::layer(&config.base_uri_layer(), pool.clone());
    Ok((kube::Client::new(service, config.default_namespace), pool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams, WatchEvent, WatchParams};

    /// A fake API server, an HTTP/2 pool's client for its `default` namespace, and a ConfigMap
    /// of that name made there.
    async fn with_config_map(
        name: &str,
    ) -> (fake_apiserver::ServerHandle, H2Pool, Api<ConfigMap>, ConfigMap) {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server = fake_apiserver::FakeApiServer::builder().start().await.unwrap();
        let kubeconfig = fake_apiserver::kubeconfig(server.url(), &server.ca_pem(), server.admin_identity());
        let (client, pool) = client_from_kubeconfig(&kubeconfig).await.unwrap();
        let api: Api<ConfigMap> = Api::namespaced(client, "default");
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
        let created = api.create(&PostParams::default(), &cm).await.unwrap();
        (server, pool, api, created)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watches_beyond_one_connection_s_streams_open_another_and_all_see_a_change() {
        let (server, pool, api, created) = with_config_map("c").await;
        let rv = created.metadata.resource_version.clone().unwrap();
        let watches = STREAMS_PER_CONNECTION + 20;
        let mut streams = Vec::new();
        for _ in 0..watches {
            streams.push(api.watch(&WatchParams::default(), &rv).await.unwrap().boxed());
        }
        assert_eq!(
            pool.connections().await,
            2,
            "{watches} watches need two connections"
        );
        let mut changed = created.clone();
        changed.data = Some([("k".to_string(), "v".to_string())].into());
        api.replace("c", &PostParams::default(), &changed).await.unwrap();
        for stream in &mut streams {
            let event = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next())
                .await
                .expect("the change within 10 s")
                .expect("an event")
                .unwrap();
            assert!(
                matches!(&event, WatchEvent::Modified(cm) if cm.data.as_ref().and_then(|d| d.get("k")).is_some()),
                "{event:?}"
            );
        }
        // Every stream's place comes back when its watch ends: later requests fit on the
        // connections there are.
        drop(streams);
        for _ in 0..10 {
            api.get("c").await.unwrap();
        }
        assert!(pool.connections().await <= 2);
        server.shutdown().await;
    }

    /// A watch whose events nobody reads yet (a reflector busy elsewhere) must not stop the
    /// requests beside it on the same connection. HTTP/2 gives a receiver a window per stream
    /// and one per connection; data a stream holds unread counts against both until read. With
    /// hyper's defaults (2 MiB per stream, 5 MiB per connection) three unread watches that each
    /// hold 2 MiB spend the connection's window and every other response on it stalls; Go's
    /// HTTP/2 client, which client-go uses, gives the connection 1 GiB for this reason.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watches_left_unread_do_not_stall_other_requests_on_their_connection() {
        let (server, pool, api, created) = with_config_map("big").await;
        let rv = created.metadata.resource_version.clone().unwrap();
        // Four watches, opened and then left unread.
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(api.watch(&WatchParams::default(), &rv).await.unwrap().boxed());
        }
        // Each change sends every watch 900 KiB: four changes are 3.6 MiB per watch, 14 MiB in
        // all, well past both of hyper's default windows.
        let mut current = created;
        for round in 0..4 {
            let mut changed = current.clone();
            changed.data = Some([("k".to_string(), format!("{round}").repeat(900 * 1024))].into());
            current = tokio::time::timeout(
                std::time::Duration::from_secs(30),
                api.replace("big", &PostParams::default(), &changed),
            )
            .await
            .expect("a write answered while watches are unread")
            .unwrap();
        }
        // The writes' own responses came back; so must a read of the object the watches carry.
        let read = tokio::time::timeout(std::time::Duration::from_secs(30), api.get("big"))
            .await
            .expect("a read answered within 30 s while four watches beside it were unread")
            .unwrap();
        assert_eq!(read.metadata.resource_version, current.metadata.resource_version);
        assert_eq!(pool.connections().await, 1, "every stream fits on one connection");
        // The held watches were not lost: each still delivers what was sent to it, in order.
        for stream in &mut held {
            for round in 0..4 {
                let event = tokio::time::timeout(std::time::Duration::from_secs(30), stream.next())
                    .await
                    .expect("the held event")
                    .expect("an event")
                    .unwrap();
                let WatchEvent::Modified(cm) = event else {
                    panic!("{event:?}")
                };
                let value = cm.data.and_then(|d| d.get("k").cloned()).unwrap_or_default();
                assert!(value.starts_with(&round.to_string()), "round {round}");
            }
        }
        server.shutdown().await;
    }
}
