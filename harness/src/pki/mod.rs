//! Certificates in simulated time: the clock, the signer catalogue, signers and the
//! certificates they issue, library-go's rotation rules, CA bundles, and verification at a
//! simulated instant. Pure: no kube, no tokio, no I/O but reading the catalogue.
//!
//! The API server's own identities live in wall time and are `fake_apiserver::pki`'s business
//! (DESIGN.md, "Time: two domains").

mod bundle;
mod catalogue;
mod clock;
pub mod duration;
mod go_pem;
mod names;
mod signer;
mod verify;

pub use bundle::{
    BundleOrder, append_to_ca_bundle, combine_bundles, expired, manage_ca_bundle, merge_cert_with_ca_bundle,
    subjects,
};
pub use catalogue::{
    Catalogue, CatalogueError, InstallerCert, PolicySpec, SignerSpec, StartingState, TargetKind, TargetSpec,
};
pub use clock::{Clock, SIMULATION_EPOCH, SimClock};
pub use duration::{DurationError, format_duration, parse_duration};
pub use go_pem::{GoPemError, go_ca_bundle};
pub use names::{CertificateName, CommonName, Role, UnknownName};
pub use signer::{
    ISSUER, IssuedCert, LIBRARY_GO_BACKDATE, MANAGED_TYPE_LABEL, NOT_AFTER, NOT_BEFORE, RotationPolicy,
    RotationReason, Signer, TargetContext, signer_deadline, signer_rotation, target_deadline,
    target_rotation, target_validity,
};
pub use verify::{VerifyError, verify_client_cert, verify_client_der};

use time::OffsetDateTime;
use x509_parser::prelude::{FromDer, X509Certificate};

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("certificate generation failed: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("not a PEM certificate bundle: {0}")]
    Pem(String),
    #[error("certificate {index} of the bundle does not parse: {why}")]
    Parse { index: usize, why: String },
}

/// RFC 3339 with seconds, as the `auth.openshift.io` annotations write times.
pub fn rfc3339(t: OffsetDateTime) -> String {
    t.replace_nanosecond(0)
        .unwrap_or(t)
        .format(&time::format_description::well_known::Rfc3339)
        .expect("RFC 3339 formats any UTC time")
}

/// One certificate of a bundle, with the fields the rules and messages use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCert {
    pub pem: String,
    pub der: Vec<u8>,
    pub common_name: String,
    /// The whole subject, as `CN=...` text (what MCO matches signer names against).
    pub subject: String,
    /// The issuer's common name (what library-go's rules and our messages name signers by).
    pub issuer: String,
    /// The whole issuer, as `CN=...` text like `subject` (what MCO's template controller writes
    /// as a certificate's `signer`: Go's `Issuer.String()`).
    pub issuer_name: String,
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
    pub serial: u64,
}

/// Every certificate in a PEM bundle, in order. Text outside PEM blocks is ignored.
pub fn parse_certs(bundle: &str) -> Result<Vec<ParsedCert>, PkiError> {
    use rustls_pki_types::pem::PemObject;
    let mut out = Vec::new();
    for (index, der) in rustls_pki_types::CertificateDer::pem_slice_iter(bundle.as_bytes()).enumerate() {
        let der = der.map_err(|e| PkiError::Pem(e.to_string()))?;
        let parse_err = |why: String| PkiError::Parse { index, why };
        let (_, cert) = X509Certificate::from_der(&der).map_err(|e| parse_err(e.to_string()))?;
        let cn = |name: &x509_parser::x509::X509Name<'_>| {
            name.iter_common_name()
                .next()
                .and_then(|c| c.as_str().ok())
                .unwrap_or("")
                .to_string()
        };
        let time = |t: x509_parser::time::ASN1Time| OffsetDateTime::from_unix_timestamp(t.timestamp());
        let serial = cert.tbs_certificate.serial.iter_u64_digits().next().unwrap_or(0);
        out.push(ParsedCert {
            pem: pem_of(&der),
            common_name: cn(cert.subject()),
            subject: cert.subject().to_string(),
            issuer: cn(cert.issuer()),
            issuer_name: cert.issuer().to_string(),
            not_before: time(cert.validity().not_before).map_err(|e| parse_err(e.to_string()))?,
            not_after: time(cert.validity().not_after).map_err(|e| parse_err(e.to_string()))?,
            serial,
            der: der.to_vec(),
        });
    }
    Ok(out)
}

fn pem_of(der: &[u8]) -> String {
    pem_encode("CERTIFICATE", der)
}

pub(crate) fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_round_trips_through_parse() {
        let signer = Signer::issue("ns", "s", SIMULATION_EPOCH, time::Duration::days(1), 42).unwrap();
        let parsed = parse_certs(&signer.cert.pem).unwrap();
        assert_eq!(parsed.len(), 1);
        assert_eq!(
            parsed[0].pem, signer.cert.pem,
            "re-encoding gives rcgen's PEM back"
        );
        assert_eq!(
            (parsed[0].serial, parsed[0].issuer.as_str()),
            (42, parsed[0].common_name.as_str())
        );
        assert!(parse_certs("not a bundle").unwrap().is_empty());
    }
}
