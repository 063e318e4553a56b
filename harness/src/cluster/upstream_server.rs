//! An upstream machine-config-server as the scenario's (`--server-binary`): every node, at the
//! scenario's start and when one joins, boots the Ignition it serves over TLS, as a machine
//! scaled into a pool fetches `https://<api-int>:22623/config/<pool>`.
//!
//! The server runs unmodified: `<binary> start --apiserver-url … --kubeconfig … --secure-port
//! <port> --insecure-port <port> --cert … --key …`, then the user's arguments. It reads the
//! bootstrap token it puts in the served kubeconfig from the absolute path
//! `/etc/mcs/bootstrap-token` (release-4.12/4.14/4.16 cluster_server.go `bootstrapTokenDir`), the
//! node-bootstrapper's token Secret as its pod mounts it. The harness gives it one in a private
//! mount namespace (`unshare --user --map-root-user --mount`, a directory of the scenario's bound
//! over `/etc`), so nothing is written outside the scenario's directory and servers of
//! concurrent scenarios each see their own.
//!
//! What it serves is judged as served: the rendered config is the one the served
//! `node-annotations.json` names, the kubeconfig's CA is the served kubeconfig's. Only the
//! credential changes: the node gets a client certificate where upstream serves the token, the
//! harness's identities being certificates.

use super::ClusterError;
use super::server::Served;
use crate::mco::machine_config::{IgnitionConfig, MachineConfigSpec};
use crate::mco::{CURRENT_CONFIG, INITIAL_NODE_ANNOTATIONS};
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the server puts the node's kubeconfig (`defaultMachineKubeConfPath`).
pub const SERVED_KUBECONFIG: &str = "/etc/kubernetes/kubeconfig";
/// Where it puts the MachineConfig it serves, as JSON (server.go `machineConfigContentPath`).
pub const MACHINE_CONFIG_CONTENT: &str = "/etc/mcs-machine-config-content.json";
/// The Ignition version the node asks for: every release's server serves 3.2.0
/// (release-4.12 api.go `detectSpecVersionFromAcceptHeader`; 4.14 and 4.16 also 3.3 and 3.4).
const ACCEPT: &str = "application/vnd.coreos.ignition+json;version=3.2.0, */*;q=0.1";

/// How long the server may take at least to answer `/healthz`: it listens only once its
/// informers have synced.
pub const START_DEADLINE: std::time::Duration = std::time::Duration::from_secs(180);

/// The server a run names (`--server-binary`, `--server-arg`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamServer {
    pub binary: PathBuf,
    pub args: Vec<String>,
}

/// The server of one scenario, running until dropped.
pub struct RunningServer {
    /// Held for `kill_on_drop`; set once it answered.
    _child: Option<tokio::process::Child>,
    /// Its TLS port (upstream's 22623).
    pub addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    pub log: PathBuf,
}

/// What the server is given under a scenario's directory: its `/etc` (the bootstrap token and the
/// API server's CA at `mcs/bootstrap-token`), its serving certificate and key, the kubeconfig.
struct ServerFiles {
    etc: PathBuf,
    serving: fake_apiserver::ServingCert,
    cert: PathBuf,
    key: PathBuf,
    kubeconfig: PathBuf,
}

impl ServerFiles {
    fn write(dir: &Path, kubeconfig: &str, api_ca_pem: &str) -> Result<Self, String> {
        let write = |path: &Path, data: &str| {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::write(path, data).map_err(|e| format!("{}: {e}", path.display()))
        };
        let etc = dir.join("etc");
        let token = etc.join("mcs/bootstrap-token");
        write(&token.join("token"), "mco-conformance-bootstrap-token")?;
        write(&token.join("ca.crt"), api_ca_pem)?;
        let serving = fake_apiserver::ServingCert::generate("machine-config-server-ca", &["127.0.0.1"])
            .map_err(|e| format!("its serving certificate: {e}"))?;
        let files = ServerFiles {
            etc,
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
            kubeconfig: dir.join("machine-config-server.kubeconfig"),
            serving,
        };
        write(&files.cert, &files.serving.chain_pem)?;
        write(&files.key, &files.serving.key_pem)?;
        write(&files.kubeconfig, kubeconfig)?;
        Ok(files)
    }
}

impl UpstreamServer {
    /// `unshare`'s arguments: a private mount namespace whose `/etc` is the scenario's, then
    /// `<binary> start` on the given ports with the files, then the user's arguments.
    fn command(&self, files: &ServerFiles, api_url: &str, secure: u16, insecure: u16) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "--user".into(),
            "--map-root-user".into(),
            "--mount".into(),
            "--".into(),
            "/bin/sh".into(),
            "-c".into(),
            r#"mount --bind "$0" /etc && exec "$@""#.into(),
            files.etc.display().to_string(),
            self.binary.display().to_string(),
            "start".into(),
            format!("--apiserver-url={api_url}"),
            format!("--kubeconfig={}", files.kubeconfig.display()),
            format!("--secure-port={secure}"),
            format!("--insecure-port={insecure}"),
            format!("--cert={}", files.cert.display()),
            format!("--key={}", files.key.display()),
        ];
        args.extend(self.args.iter().cloned());
        args
    }

    /// Start it for one scenario, with `kubeconfig` (the cluster's) and the API server's URL
    /// and CA (the bootstrap token's `ca.crt`) written under `dir`; returns once it answers
    /// `/healthz`, which it does only after its informers have synced.
    pub async fn start(
        &self,
        kubeconfig: &str,
        api_url: &str,
        api_ca_pem: &str,
        dir: &Path,
        deadline: std::time::Duration,
    ) -> Result<RunningServer, ClusterError> {
        let fail = |what: String| ClusterError::Fixture(format!("{}: {what}", self.binary.display()));
        let files = ServerFiles::write(dir, kubeconfig, api_ca_pem).map_err(fail)?;
        let port = || {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| fail(format!("a port: {e}")))
        };
        // The ports are free when picked and the server binds them a moment later: another
        // process may take one in between. A server that exits saying so is started again on
        // other ports (an infrastructure race, not a verdict); any other exit fails at once.
        const TRIES: usize = 3;
        for attempt in 1..=TRIES {
            let (secure, insecure) = (port()?, port()?);
            let log = dir.join("machine-config-server.log");
            let file = std::fs::File::create(&log).map_err(|e| fail(format!("{}: {e}", log.display())))?;
            let err = file.try_clone().map_err(|e| fail(e.to_string()))?;
            let args = self.command(&files, api_url, secure.port(), insecure.port());
            let mut child = tokio::process::Command::new("unshare")
                .args(&args)
                .stdout(file)
                .stderr(err)
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| fail(format!("unshare: {e}")))?;
            let mut running = RunningServer {
                _child: None,
                addr: secure,
                tls: Arc::new(client_tls(&files.serving.ca_pem).map_err(fail)?),
                log,
            };
            let waited = tokio::select! {
                waited = crate::wait::eventually(deadline, || running.healthy()) => Some(waited),
                _ = child.wait() => None,
            };
            match waited {
                Some(Ok(())) => {
                    running._child = Some(child);
                    return Ok(running);
                }
                Some(Err(e)) => {
                    return Err(fail(format!(
                        "never became healthy: {e}\nits log:\n{}",
                        running.tail(20)
                    )));
                }
                None if running.tail(20).contains("address already in use") && attempt < TRIES => {}
                None => {
                    return Err(fail(format!(
                        "exited before it became healthy; its log:\n{}",
                        running.tail(20)
                    )));
                }
            }
        }
        unreachable!("the last try returns")
    }
}

impl RunningServer {
    /// The log's last lines, for a failure message.
    pub fn tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    async fn healthy(&self) -> Result<(), String> {
        self.get("/healthz", "*/*").await.map(|_| ())
    }

    /// What it serves a machine booting into `pool`.
    pub async fn serve(&self, pool: &str) -> Result<Served, ClusterError> {
        let body = self
            .get(&format!("/config/{pool}"), ACCEPT)
            .await
            .map_err(|e| ClusterError::Fixture(format!("{e}\nthe server's log:\n{}", self.tail(10))))?;
        served(&body).map_err(|e| ClusterError::Fixture(format!("what it served for {pool}: {e}")))
    }

    async fn get(&self, path: &str, accept: &str) -> Result<Vec<u8>, String> {
        const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
        let url = format!("https://{}{path}", self.addr);
        tokio::time::timeout(TIMEOUT, self.get_once(path, accept))
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {TIMEOUT:?}")))
            .map_err(|e| format!("GET {url}: {e}"))
    }

    async fn get_once(&self, path: &str, accept: &str) -> Result<Vec<u8>, String> {
        let tcp = tokio::net::TcpStream::connect(self.addr)
            .await
            .map_err(|e| e.to_string())?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let request = hyper::Request::get(path)
            .header("host", self.addr.to_string())
            .header("accept", accept)
            .header("user-agent", "Ignition/2.14.0")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
        }
        Ok(body.to_vec())
    }
}

/// A client that trusts the server's CA alone.
fn client_tls(ca_pem: &str) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots
            .add(cert.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
}

/// The served Ignition as the node boots it: the rendered config its `node-annotations.json`
/// names, its files and units, and its kubeconfig's CA.
fn served(body: &[u8]) -> Result<Served, String> {
    let config: IgnitionConfig = serde_json::from_slice(body).map_err(|e| format!("not Ignition: {e}"))?;
    let boot = MachineConfigSpec {
        config,
        ..Default::default()
    };
    let annotations = boot
        .file(INITIAL_NODE_ANNOTATIONS)
        .ok_or_else(|| format!("no {INITIAL_NODE_ANNOTATIONS}"))?
        .data();
    let annotations: serde_json::Value =
        serde_json::from_slice(&annotations).map_err(|e| format!("{INITIAL_NODE_ANNOTATIONS}: {e}"))?;
    let rendered = annotations[CURRENT_CONFIG]
        .as_str()
        .ok_or_else(|| format!("{INITIAL_NODE_ANNOTATIONS} names no {CURRENT_CONFIG}"))?
        .to_string();
    let kubeconfig = boot
        .file(SERVED_KUBECONFIG)
        .ok_or_else(|| format!("no {SERVED_KUBECONFIG}"))?
        .data();
    let kubeconfig_ca = kubeconfig_ca(&kubeconfig).map_err(|e| format!("{SERVED_KUBECONFIG}: {e}"))?;
    let content = boot
        .file(MACHINE_CONFIG_CONTENT)
        .ok_or_else(|| format!("no {MACHINE_CONFIG_CONTENT}"))?
        .data();
    let content: serde_json::Value =
        serde_json::from_slice(&content).map_err(|e| format!("{MACHINE_CONFIG_CONTENT}: {e}"))?;
    let config = MachineConfigSpec::of(&content).map_err(|e| format!("{MACHINE_CONFIG_CONTENT}: {e}"))?;
    Ok(Served {
        rendered,
        config,
        boot,
        kubeconfig_ca: Some(kubeconfig_ca),
    })
}

/// The first cluster's `certificate-authority-data` of a kubeconfig, decoded.
fn kubeconfig_ca(kubeconfig: &[u8]) -> Result<String, String> {
    let doc: serde_yaml::Value = serde_yaml::from_slice(kubeconfig).map_err(|e| e.to_string())?;
    let encoded = doc["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .ok_or("no clusters[0].cluster.certificate-authority-data")?;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| e.to_string())?;
    String::from_utf8(pem).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data(text: &str) -> String {
        format!(
            "data:;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    }

    #[test]
    fn the_served_config_is_read_from_what_was_served() {
        let kubeconfig = format!(
            "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    server: https://x\n  name: local\n",
            base64::engine::general_purpose::STANDARD.encode("CA PEM")
        );
        let body = json!({
            "ignition": {"version": "3.2.0"},
            "storage": {"files": [
                {"path": INITIAL_NODE_ANNOTATIONS, "contents": {"source": data(&json!({CURRENT_CONFIG: "rendered-worker-1"}).to_string())}},
                {"path": SERVED_KUBECONFIG, "contents": {"source": data(&kubeconfig)}},
                {"path": MACHINE_CONFIG_CONTENT, "contents": {"source": data(&json!({
                    "metadata": {"name": "rendered-worker-1"},
                    "spec": {"config": {"storage": {"files": [{"path": "/etc/a"}]}}},
                }).to_string())}},
            ]},
        });
        let served = served(body.to_string().as_bytes()).unwrap();
        assert_eq!(served.rendered, "rendered-worker-1");
        assert_eq!(served.kubeconfig_ca.as_deref(), Some("CA PEM"));
        assert_eq!(served.boot.files().len(), 3);
        assert_eq!(served.config.files()[0].path, "/etc/a");
    }

    #[test]
    fn a_served_config_without_the_node_annotations_is_refused_with_the_reason() {
        let err = served(br#"{"ignition": {"version": "3.2.0"}}"#).unwrap_err();
        assert!(err.contains(INITIAL_NODE_ANNOTATIONS), "{err}");
        assert!(served(b"<html>").unwrap_err().starts_with("not Ignition"));
    }
}
