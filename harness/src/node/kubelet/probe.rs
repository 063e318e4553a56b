//! The kube-apiserver's side of the kubelet's handshake (`oc logs`): a TLS connection with a
//! kubelet client certificate and one request, whose answer says whether the kubelet accepted it.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
