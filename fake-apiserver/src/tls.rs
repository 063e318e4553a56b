//! The TLS side of the server: rustls with the ring provider, h2 and http/1.1 by ALPN.
//!
//! The handshake asks for a client certificate without requiring it and accepts any chain
//! whose handshake signature is genuine; whether the chain is trusted is decided afterwards at
//! wall time by `auth`, so that an untrusted certificate gets kube-apiserver's 401 `Status`
//! instead of a failed handshake. The whole `ServerConfig` is rebuilt when the serving
//! certificate or the client CAs change; new handshakes take the new one.

use rustls::DistinguishedName;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, ServerConfig, SignatureScheme};
use std::sync::Arc;

/// Ask for a client certificate, accept any, and verify only the handshake signature.
#[derive(Debug)]
struct AnyClientCert {
    hints: Vec<DistinguishedName>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("serving certificate: {0}")]
    Pem(String),
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server config for this serving chain (leaf first) and key, hinting these CA subjects.
pub(crate) fn server_config(
    chain_pem: &str,
    key_pem: &str,
    hint_subjects: Vec<Vec<u8>>,
) -> Result<Arc<ServerConfig>, TlsError> {
    use rustls::pki_types::pem::PemObject;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Pem(e.to_string()))?;
    if chain.is_empty() {
        return Err(TlsError::Pem("no certificate in the serving chain".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| TlsError::Pem(e.to_string()))?;
    let provider = provider();
    let verifier = Arc::new(AnyClientCert {
        hints: hint_subjects.into_iter().map(DistinguishedName::from).collect(),
        algorithms: provider.signature_verification_algorithms,
    });
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
