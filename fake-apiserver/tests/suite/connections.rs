//! Connections as kube-apiserver's Go server keeps and ends them: one that sends no request,
//! half a request header, or nothing after its last answer is closed (`ReadHeaderTimeout`,
//! `IdleTimeout`; short ones here, set through the builder), while a request in flight, however
//! long, is not cut; and a client whose large body the server never reads still gets the
//! answer, because the server stops writing and reads what is left before it lets the
//! connection go (no reset that would take the answer with it).

use crate::common::{init_crypto, skip_external};
use crate::http_edges::{Tls, connect};
use fake_apiserver::{FakeApiServer, Identity, ServerHandle};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "conn-token";
/// The timeouts the server is started with here.
const READ_HEADER: Duration = Duration::from_millis(300);
const IDLE: Duration = Duration::from_millis(600);
/// Long enough for any close on a loaded machine.
const DEADLINE: Duration = Duration::from_secs(20);

const WHY: &str = "they speak raw HTTP over TLS with the fake's bearer token and set its timeouts";

async fn server() -> ServerHandle {
    init_crypto();
    FakeApiServer::builder()
        .token(TOKEN, Identity::new("conn", &["system:masters"]))
        .read_header_timeout(READ_HEADER)
        .idle_timeout(IDLE)
        .start()
        .await
        .unwrap()
}

/// Read until the server closes the connection; everything it sent. Panics if it is still
/// open at the deadline.
async fn until_closed(tls: &mut Tls) -> Vec<u8> {
    let mut all = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match tls.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => all.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await
    .expect("the server closes the connection");
    all
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n\r\n")
}

/// Read one Content-Length response; its head.
async fn one_answer(tls: &mut Tls) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let n = tls.read(&mut chunk).await.unwrap();
                assert!(n > 0, "closed inside an answer");
                buf.extend_from_slice(&chunk[..n]);
            }
            return head;
        }
        let n = tls.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before an answer");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test]
async fn a_connection_that_sends_no_request_or_half_a_header_is_closed() {
    if skip_external("read-header timeout", WHY) {
        return;
    }
    let server = server().await;
    for sent in ["", "GET /version HTTP/1.1\r\nHost: loc"] {
        let mut tls = connect(&server).await;
        let began = Instant::now();
        tls.write_all(sent.as_bytes()).await.unwrap();
        tls.flush().await.unwrap();
        let got = until_closed(&mut tls).await;
        assert!(got.is_empty(), "{sent:?}: no answer, only a close: {got:?}");
        assert!(
            began.elapsed() >= READ_HEADER,
            "{sent:?}: closed before the timeout"
        );
    }
}

#[tokio::test]
async fn an_idle_connection_is_closed_and_a_long_request_is_not_cut() {
    if skip_external("idle timeout", WHY) {
        return;
    }
    let server = server().await;
    let mut tls = connect(&server).await;
    // Three answers on one connection, then silence: closed once idle for IDLE.
    let mut idle_from = Instant::now();
    for _ in 0..3 {
        idle_from = Instant::now();
        tls.write_all(get("/version").as_bytes()).await.unwrap();
        assert!(one_answer(&mut tls).await.starts_with("HTTP/1.1 200"));
    }
    assert!(until_closed(&mut tls).await.is_empty());
    assert!(idle_from.elapsed() >= IDLE, "closed before the idle timeout");
    // The first bytes of a next request start the read-header timeout, not the idle one.
    let mut tls = connect(&server).await;
    tls.write_all(get("/version").as_bytes()).await.unwrap();
    one_answer(&mut tls).await;
    let began = Instant::now();
    tls.write_all(b"GET /vers").await.unwrap();
    assert!(until_closed(&mut tls).await.is_empty());
    assert!(began.elapsed() >= READ_HEADER);
    // A watch of 2 s, several idle timeouts long, runs to its own end: the chunked body ends.
    let mut tls = connect(&server).await;
    let began = Instant::now();
    tls.write_all(
        format!(
            "GET /api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=2 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let got = String::from_utf8_lossy(&until_closed(&mut tls).await).to_string();
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(got.ends_with("0\r\n\r\n"), "the watch ended by itself: {got:?}");
    assert!(began.elapsed() >= Duration::from_secs(2));
}

/// A request whose body no handler reads (a GET with a body; a POST over the body limit,
/// refused as 413 before it is read) is answered, and the client gets the answer, whatever the
/// body's size: past Go's 256 KiB the server closes the connection after the answer
/// (`Connection: close`), and reads what the client still sends before it lets go. A client
/// that is still writing when the socket is closed on unread bytes gets a reset instead, and
/// loses the answer (kube-rs: `client error (SendRequest)`); its next request must not suffer
/// either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_body_the_server_never_reads_does_not_cost_the_answer() {
    if skip_external("large unread bodies", WHY) {
        return;
    }
    init_crypto();
    let server = FakeApiServer::builder()
        .body_limit(512 * 1024)
        .start()
        .await
        .unwrap();
    let client = server.admin_client().await.unwrap();
    let cms = "/api/v1/namespaces/default/configmaps";
    for (method, code) in [("GET", 200), ("POST", 413)] {
        for size in [1024 * 1024, 4 * 1024 * 1024, 8 * 1024 * 1024] {
            for attempt in 0..10 {
                let req = http::Request::builder()
                    .method(method)
                    .uri(cms)
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(vec![b' '; size]))
                    .unwrap();
                let answer = tokio::time::timeout(DEADLINE, client.send(req))
                    .await
                    .expect("an answer in time")
                    .map(|r| r.status().as_u16());
                assert_eq!(
                    answer.map_err(|e| e.to_string()),
                    Ok(code),
                    "{method} with {size} bytes, attempt {attempt}"
                );
                let next = http::Request::get("/version")
                    .body(kube::client::Body::empty())
                    .unwrap();
                let next = tokio::time::timeout(DEADLINE, client.send(next))
                    .await
                    .expect("an answer in time")
                    .map(|r| r.status().as_u16());
                assert_eq!(next.map_err(|e| e.to_string()), Ok(200), "the next request");
            }
        }
    }
}

/// h2: a connection with no stream open is told GOAWAY and closed after the idle timeout.
#[tokio::test]
async fn an_idle_h2_connection_is_closed() {
    if skip_external("h2 idle timeout", WHY) {
        return;
    }
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let server = server().await;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(server.ca_pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(b"h2".as_slice()));
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    let began = Instant::now();
    let connection = tokio::spawn(connection);
    let req = http::Request::get("/version")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let answer = sender.send_request(req).await.unwrap();
    assert_eq!(answer.status(), 200);
    drop(answer);
    tokio::time::timeout(DEADLINE, connection)
        .await
        .expect("the server closes the idle h2 connection")
        .unwrap()
        .ok();
    assert!(began.elapsed() >= IDLE, "closed before the idle timeout");
}

/// A connection that never finishes its TLS handshake is closed after the read-header timeout
/// too (Go bounds the handshake by it when, as in kube-apiserver, no read or write timeout is
/// set).
#[tokio::test]
async fn a_connection_that_never_finishes_its_handshake_is_closed() {
    if skip_external("handshake timeout", WHY) {
        return;
    }
    let server = server().await;
    for sent in [&b""[..], &b"\x16\x03\x01\x02\x00\x01"[..]] {
        let mut tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        let began = Instant::now();
        tcp.write_all(sent).await.unwrap();
        let mut rest = Vec::new();
        // Well before the 10 s the handshake was once given, whatever the timeout set.
        tokio::time::timeout(Duration::from_secs(8), tcp.read_to_end(&mut rest))
            .await
            .expect("the server closes the connection")
            .ok();
        assert!(began.elapsed() >= READ_HEADER, "closed before the timeout");
    }
}
