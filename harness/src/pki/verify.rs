//! Verifying a client certificate against a CA bundle at a simulated instant, as the fake
//! kubelet does with its clientCAFile and as steps do when they check what `oc logs` would
//! see. Errors carry the evidence: the instant, the validity bounds, the issuer and the bundle.

use super::{PkiError, parse_certs, rfc3339};
use rustls_pki_types::{CertificateDer, UnixTime};
use time::OffsetDateTime;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("verified at {} (sim), not valid after {}", rfc3339(*at), rfc3339(*not_after))]
    Expired {
        at: OffsetDateTime,
        not_after: OffsetDateTime,
    },
    #[error("verified at {} (sim), not valid before {}", rfc3339(*at), rfc3339(*not_before))]
    NotYetValid {
        at: OffsetDateTime,
        not_before: OffsetDateTime,
    },
    #[error("issuer {issuer:?} is not in the CA bundle {bundle:?}")]
    UnknownIssuer { issuer: String, bundle: Vec<String> },
    #[error("{0}")]
    Invalid(String),
}

/// As `verify_client_cert`, for a certificate in DER (as a TLS handshake presents it).
pub fn verify_client_der(leaf_der: &[u8], bundle_pem: &str, at: OffsetDateTime) -> Result<(), VerifyError> {
    verify_client_cert(&super::pem_encode("CERTIFICATE", leaf_der), bundle_pem, at)
}

/// Verify `leaf_pem` (a client certificate) against `bundle_pem` at `at`.
pub fn verify_client_cert(leaf_pem: &str, bundle_pem: &str, at: OffsetDateTime) -> Result<(), VerifyError> {
    let bad = |e: PkiError| VerifyError::Invalid(e.to_string());
    let leaf = parse_certs(leaf_pem)
        .map_err(bad)?
        .into_iter()
        .next()
        .ok_or_else(|| VerifyError::Invalid("no client certificate".into()))?;
    let bundle = parse_certs(bundle_pem).map_err(bad)?;
    if at > leaf.not_after {
        return Err(VerifyError::Expired {
            at,
            not_after: leaf.not_after,
        });
    }
    if at < leaf.not_before {
        return Err(VerifyError::NotYetValid {
            at,
            not_before: leaf.not_before,
        });
    }
    let ders: Vec<CertificateDer<'_>> = bundle
        .iter()
        .map(|c| CertificateDer::from(c.der.as_slice()))
        .collect();
    let anchors: Vec<_> = ders
        .iter()
        .filter_map(|d| webpki::anchor_from_trusted_cert(d).ok())
        .collect();
    let leaf_der = CertificateDer::from(leaf.der.as_slice());
    let end_entity =
        webpki::EndEntityCert::try_from(&leaf_der).map_err(|e| VerifyError::Invalid(e.to_string()))?;
    let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(at.unix_timestamp().max(0) as u64));
    end_entity
        .verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &anchors,
            &[],
            time,
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .map(|_| ())
        .map_err(|e| match e {
            // A bundle certificate with the issuer's name but another key: Go's x509 calls
            // this "signed by unknown authority" too.
            webpki::Error::UnknownIssuer | webpki::Error::InvalidSignatureForPublicKey => {
                VerifyError::UnknownIssuer {
                    issuer: leaf.issuer.clone(),
                    bundle: bundle.iter().map(|c| c.common_name.clone()).collect(),
                }
            }
            other => VerifyError::Invalid(format!("{other:?}")),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::Signer;
    use time::Duration;
    use time::macros::datetime;

    const T0: OffsetDateTime = datetime!(2026-01-05 08:00 UTC);

    #[test]
    fn verdicts_at_simulated_times() {
        let signer = Signer::issue(
            "ns",
            "kube-apiserver-to-kubelet-signer",
            T0,
            Duration::days(365),
            1,
        )
        .unwrap();
        let client = signer
            .issue_client("system:kube-apiserver", &[], T0, Duration::days(30), 2)
            .unwrap();
        verify_client_cert(&client.pem, &signer.cert.pem, T0 + Duration::days(1)).unwrap();
        let late = verify_client_cert(&client.pem, &signer.cert.pem, T0 + Duration::days(31)).unwrap_err();
        assert_eq!(
            late.to_string(),
            "verified at 2026-02-05T08:00:00Z (sim), not valid after 2026-02-04T08:00:00Z"
        );
        assert!(matches!(
            verify_client_cert(&client.pem, &signer.cert.pem, T0 - Duration::days(1)),
            Err(VerifyError::NotYetValid { .. })
        ));
        let other = Signer::issue("ns", "other", T0, Duration::days(365), 3).unwrap();
        let err = verify_client_cert(&client.pem, &other.cert.pem, T0).unwrap_err();
        assert!(
            matches!(&err, VerifyError::UnknownIssuer { issuer, .. } if issuer == &signer.cert.common_name),
            "{err}"
        );
        // A bundle holding both signers accepts it.
        verify_client_cert(&client.pem, &format!("{}{}", other.cert.pem, signer.cert.pem), T0).unwrap();
    }
}
