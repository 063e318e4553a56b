//! HTTP as kube-apiserver's Go server speaks it at the edges: a body no handler read is drained
//! (up to Go's 256 KiB) so a kept-alive connection stays usable, or the reply says
//! `Connection: close`; an Accept header naming nothing the server writes is 406; a malformed
//! resourceVersion is 400 on GET as on LIST; percent-encoded paths are decoded before routing;
//! a JSON patch that is an object is 400.

use crate::common::{TestCluster, cluster, init_crypto, send, skip_external};
use fake_apiserver::{FakeApiServer, Identity, ServerHandle};
use http_body_util::BodyExt;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const TOKEN: &str = "edge-token";

/// Why the raw-connection tests run against the fake only.
const RAW: &str =
    "they speak raw HTTP over TLS with a bearer token and the 1 KiB body limit the fake is started with";

/// A test namespace holding the ConfigMap `my-cm`, and the ConfigMaps' path.
async fn seeded() -> (TestCluster, String) {
    let c = cluster().await;
    let cms = c.path("v1", "configmaps");
    c.create(
        &cms,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "my-cm"}}),
    )
    .await;
    (c, cms)
}

async fn server(body_limit: usize) -> ServerHandle {
    init_crypto();
    FakeApiServer::builder()
        .body_limit(body_limit)
        .token(TOKEN, Identity::new("edge", &["system:masters"]))
        .object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "my-cm", "namespace": "default"}}))
        .start()
        .await
        .unwrap()
}

pub(crate) type Tls = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

/// A raw HTTP/1.1 connection over TLS, so a test controls what is sent and when.
pub(crate) async fn connect(server: &ServerHandle) -> Tls {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(server.ca_pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap()
}

struct RawReply {
    code: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl RawReply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Read one response (headers and a Content-Length body) within five seconds.
async fn read_reply(tls: &mut Tls) -> RawReply {
    tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = Vec::new();
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            let mut chunk = [0u8; 4096];
            let n = tls.read(&mut chunk).await.expect("reading the reply");
            assert!(n > 0, "the connection closed before a reply");
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let mut lines = head.split("\r\n");
        let code = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.parse().unwrap());
        let mut body = buf[head_end + 4..].to_vec();
        while body.len() < length {
            let mut chunk = [0u8; 4096];
            let n = tls.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the connection closed inside a reply");
            body.extend_from_slice(&chunk[..n]);
        }
        RawReply {
            code,
            headers,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        }
    })
    .await
    .expect("a reply within five seconds")
}

fn request(method: &str, path: &str, extra_headers: &[&str], body: &[u8]) -> Vec<u8> {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in extra_headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

#[tokio::test]
async fn a_body_no_handler_read_is_drained_and_the_connection_kept() {
    if skip_external("draining unread bodies", RAW) {
        return;
    }
    let server = server(1024).await;
    let mut tls = connect(&server).await;
    let bearer = format!("Authorization: Bearer {TOKEN}");
    // Refused before any handler reads a byte: no credentials (401), then a body declared over
    // the limit (413). Both bodies are on the wire; the next request must still be understood.
    let cases: [(&[&str], usize, u16); 2] = [(&[], 100, 401), (&[bearer.as_str()], 2048, 413)];
    for (headers, size, code) in cases {
        // Sent in two parts, the second after the first is flushed: the reply must wait for
        // the whole body rather than leave its tail to be read as the next request.
        let whole = request("POST", CMS, headers, &vec![b'x'; size]);
        let (first, second) = whole.split_at(whole.len() - size / 2);
        tls.write_all(first).await.unwrap();
        tls.flush().await.unwrap();
        tls.write_all(second).await.unwrap();
        let refused = read_reply(&mut tls).await;
        assert_eq!(refused.code, code, "{}", refused.body);
        assert_eq!(refused.header("connection"), None, "kept alive");
        tls.write_all(&request("GET", &format!("{CMS}/my-cm"), &[bearer.as_str()], b""))
            .await
            .unwrap();
        let next = read_reply(&mut tls).await;
        assert_eq!(
            (next.code, next.body["metadata"]["name"].as_str()),
            (200, Some("my-cm"))
        );
    }
}

#[tokio::test]
async fn a_body_held_back_behind_expect_continue_closes_the_connection() {
    if skip_external("Expect: 100-continue", RAW) {
        return;
    }
    let server = server(1024).await;
    let mut tls = connect(&server).await;
    let head = format!(
        "POST {CMS} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 20\r\nExpect: 100-continue\r\n\r\n"
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    let refused = read_reply(&mut tls).await;
    assert_eq!(refused.code, 401);
    assert_eq!(refused.header("connection"), Some("close"));
    let mut rest = Vec::new();
    let end = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut rest)).await;
    assert!(end.is_ok(), "the server closes the connection");
}

async fn send_accepting(client: &kube::Client, path: &str, accept: &str) -> (u16, Value) {
    let req = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(req).await.unwrap();
    let code = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn accept_headers_are_negotiated() {
    let (c, cms) = seeded().await;
    let client = &c.client;
    let served = "application/json, application/yaml, application/vnd.kubernetes.protobuf";
    let streamed = "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch";
    // A list offers the watch's streaming forms too; one object does not.
    let cases = [
        (cms.clone(), format!("{served}, {streamed}")),
        (format!("{cms}/my-cm"), served.to_string()),
    ];
    // `application/*` covers no served type for a real 1.36.
    for (path, offered) in cases {
        for accept in ["application/xml", "text/html, text/plain;q=0.5", "application/*"] {
            let (code, body) = send_accepting(client, &path, accept).await;
            assert_eq!(code, 406, "{accept}");
            assert_eq!(
                body,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": format!("406: Not Acceptable\n\nAvailable representations: {offered}"),
                    "reason": "NotAcceptable", "details": {}, "code": 406}),
                "{path}"
            );
        }
    }
    for accept in [
        "*/*",
        "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        "application/vnd.kubernetes.protobuf, application/json",
        "text/html, application/json;q=0.9",
    ] {
        assert_eq!(send_accepting(client, &cms, accept).await.0, 200, "{accept}");
    }
    c.cleanup().await;
}

#[tokio::test]
async fn a_malformed_resource_version_is_400_on_get_as_on_list() {
    let (c, cms) = seeded().await;
    let client = &c.client;
    let cases = [
        ("abc", "invalid syntax"),
        ("-1", "invalid syntax"),
        ("99999999999999999999999", "value out of range"),
    ];
    // A real 1.36 answers a GET with 500 InternalError here; the fake answers 400 as for a list,
    // never a 5xx for a client's mistake (fake-apiserver/README.md, "Errors").
    let real = c.server.is_none();
    for (rv, why) in cases {
        let get = format!("{cms}/my-cm?resourceVersion={rv}");
        if real {
            let r = send(client, "GET", &get, None, vec![]).await;
            assert_eq!(r.code, 500, "{get}: {}", r.body);
        }
        let paths = [format!("{cms}?resourceVersion={rv}")]
            .into_iter()
            .chain((!real).then_some(get));
        for path in paths {
            let r = send(client, "GET", &path, None, vec![]).await;
            assert_eq!(
                (r.code, r.body["reason"].as_str()),
                (400, Some("BadRequest")),
                "{path}"
            );
            assert_eq!(
                r.body["message"],
                format!(
                    "invalid resource version: resourceVersion: Invalid value: \"{rv}\": strconv.ParseUint: parsing \"{rv}\": {why}"
                ),
                "{path}"
            );
        }
    }
    for rv in ["", "0"] {
        let r = send(
            client,
            "GET",
            &format!("{cms}/my-cm?resourceVersion={rv}"),
            None,
            vec![],
        )
        .await;
        assert_eq!(r.code, 200, "resourceVersion={rv:?} means any");
    }
    c.cleanup().await;
}

#[tokio::test]
async fn percent_encoded_paths_are_decoded_before_routing() {
    let (c, cms) = seeded().await;
    let client = &c.client;
    let r = send(client, "GET", &format!("{cms}/my%2Dcm"), None, vec![]).await;
    assert_eq!(
        (r.code, r.body["metadata"]["name"].as_str()),
        (200, Some("my-cm"))
    );
    let r = send(
        client,
        "GET",
        &format!("/api/v1/namespaces/%74{}/config%6Daps", &c.ns[1..]),
        None,
        vec![],
    )
    .await;
    assert_eq!((r.code, r.body["kind"].as_str()), (200, Some("ConfigMapList")));
    let r = send(client, "GET", &format!("{cms}%2Fmy-cm"), None, vec![]).await;
    assert_eq!(r.code, 200, "%2F splits like /, as Go's URL.Path has it");
    c.cleanup().await;
}

#[tokio::test]
async fn a_json_patch_that_is_an_object_is_400() {
    let (c, cms) = seeded().await;
    let client = &c.client;
    let r = send(
        client,
        "PATCH",
        &format!("{cms}/my-cm"),
        Some("application/json-patch+json"),
        br#"{"op":"add","path":"/data","value":{}}"#.to_vec(),
    )
    .await;
    assert_eq!((r.code, r.body["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        r.body["message"],
        "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
    );
    c.cleanup().await;
}

#[tokio::test]
async fn yaml_is_answered_in_yaml_when_it_is_negotiated() {
    let (c, cms) = seeded().await;
    let client = &c.client;
    let fetch = |path: String, accept: &'static str| async move {
        let req = http::Request::get(&path)
            .header(http::header::ACCEPT, accept)
            .body(kube::client::Body::empty())
            .unwrap();
        let response = client.send(req).await.unwrap();
        let code = response.status().as_u16();
        let content_type = response.headers()[http::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_string();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (code, content_type, bytes)
    };
    for accept in [
        "application/yaml",
        "application/yaml, application/json",
        "application/json;q=0.5, application/yaml",
        "text/html, application/yaml;q=0.9, */*;q=0.8",
    ] {
        let (code, content_type, bytes) = fetch(format!("{cms}/my-cm"), accept).await;
        assert_eq!(
            (code, content_type.as_str()),
            (200, "application/yaml"),
            "{accept}"
        );
        assert!(
            serde_json::from_slice::<Value>(&bytes).is_err(),
            "not JSON: {accept}"
        );
        let object: Value = serde_yaml::from_slice(&bytes).unwrap();
        assert_eq!(object["metadata"]["name"], "my-cm", "{accept}");
    }
    let (code, content_type, bytes) = fetch(cms.clone(), "application/yaml").await;
    assert_eq!((code, content_type.as_str()), (200, "application/yaml"));
    let list: Value = serde_yaml::from_slice(&bytes).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    // An error is a Status, in YAML too.
    let (code, content_type, bytes) = fetch(format!("{cms}/missing"), "application/yaml").await;
    assert_eq!((code, content_type.as_str()), (404, "application/yaml"));
    let status: Value = serde_yaml::from_slice(&bytes).unwrap();
    assert_eq!(status["reason"], "NotFound");
    // No YAML stream: a watch is refused, naming the streaming forms, in YAML.
    let (code, content_type, bytes) = fetch(format!("{cms}?watch=true"), "application/yaml").await;
    assert_eq!((code, content_type.as_str()), (406, "application/yaml"));
    let status: Value = serde_yaml::from_slice(&bytes).unwrap();
    assert_eq!(
        status["message"],
        "406: Not Acceptable\n\nAvailable representations: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    );
    for accept in [
        "application/json, application/yaml",
        "*/*",
        "application/yaml;q=0.5, */*",
    ] {
        let (_, content_type, _) = fetch(format!("{cms}/my-cm"), accept).await;
        assert_eq!(content_type, "application/json", "{accept}");
    }
    c.cleanup().await;
}
