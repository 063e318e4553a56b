//! Certificates for the API server's own identities, in wall time (DESIGN.md, "Time: two
//! domains"): the serving chain and the client certificates every API client presents.
//!
//! A `CertificateAuthority` keeps its certificate and key as PEM, so it can be cloned, written
//! to disk and handed to another process. Client certificates carry the user as CN and the
//! groups as O, as kube-apiserver reads them. Simulated-time signers are the harness's business,
//! not this module's.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use std::net::IpAddr;
use time::{Duration, OffsetDateTime};

/// How long identities issued from "now" stay valid: far beyond any simulated horizon.
pub const IDENTITY_VALIDITY: Duration = Duration::days(3650);

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("certificate generation failed: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("invalid host name {0:?} for a serving certificate")]
    BadHost(String),
}

/// A CA able to sign certificates.
#[derive(Clone)]
pub struct CertificateAuthority {
    pub cert_pem: String,
    key_pem: String,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority").finish_non_exhaustive()
    }
}

/// A client identity: a certificate for `user` in `groups`, and its key.
#[derive(Clone, Debug)]
pub struct ClientIdentity {
    pub user: String,
    pub groups: Vec<String>,
    pub cert_pem: String,
    pub key_pem: String,
}

/// A serving certificate chain (leaf first), its key, and the CA clients should trust.
#[derive(Clone, Debug)]
pub struct ServingCert {
    pub chain_pem: String,
    pub key_pem: String,
    pub ca_pem: String,
}

fn random_serial() -> SerialNumber {
    let mut bytes = *uuid::Uuid::new_v4().as_bytes();
    bytes[0] &= 0x7f; // positive
    SerialNumber::from_slice(&bytes)
}

fn subject(cn: &str, orgs: &[String]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for o in orgs {
        dn.push(DnType::OrganizationName, o.as_str());
    }
    dn.push(DnType::CommonName, cn);
    dn
}

impl CertificateAuthority {
    /// A new self-signed CA valid for ten years from now.
    pub fn generate(common_name: &str) -> Result<Self, PkiError> {
        let now = OffsetDateTime::now_utc();
        Self::generate_valid(common_name, now - Duration::hours(1), now + IDENTITY_VALIDITY)
    }

    pub fn generate_valid(
        common_name: &str,
        not_before: OffsetDateTime,
        not_after: OffsetDateTime,
    ) -> Result<Self, PkiError> {
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(common_name, &[]);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = not_before;
        params.not_after = not_after;
        params.serial_number = Some(random_serial());
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(CertificateAuthority {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Load a CA from its PEM certificate and PKCS#8 key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, PkiError> {
        let key = KeyPair::from_pem(key_pem)?;
        Issuer::from_ca_cert_pem(cert_pem, &key)?;
        Ok(CertificateAuthority {
            cert_pem: cert_pem.to_string(),
            key_pem: key_pem.to_string(),
        })
    }

    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    fn sign(&self, params: CertificateParams) -> Result<(String, String), PkiError> {
        let ca_key = KeyPair::from_pem(&self.key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(&self.cert_pem, ca_key)?;
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// A client certificate valid from an hour ago for ten years.
    pub fn issue_client(&self, user: &str, groups: &[&str]) -> Result<ClientIdentity, PkiError> {
        let now = OffsetDateTime::now_utc();
        self.issue_client_valid(user, groups, now - Duration::hours(1), now + IDENTITY_VALIDITY)
    }

    /// A client certificate with explicit validity (an expired one, for tests).
    pub fn issue_client_valid(
        &self,
        user: &str,
        groups: &[&str],
        not_before: OffsetDateTime,
        not_after: OffsetDateTime,
    ) -> Result<ClientIdentity, PkiError> {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(user, &groups);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.not_before = not_before;
        params.not_after = not_after;
        params.serial_number = Some(random_serial());
        let (cert_pem, key_pem) = self.sign(params)?;
        Ok(ClientIdentity {
            user: user.to_string(),
            groups,
            cert_pem,
            key_pem,
        })
    }

    /// This CA's certificate again, same subject and key, signed by `other`: presented as an
    /// intermediate, it lets a client that trusts only `other` verify what this CA issued, while
    /// a client that trusts neither still refuses it.
    pub fn cross_signed_by(&self, other: &CertificateAuthority) -> Result<String, PkiError> {
        let key = KeyPair::from_pem(&self.key_pem)?;
        let common_name = x509_parser::pem::parse_x509_pem(self.cert_pem.as_bytes())
            .ok()
            .and_then(|(_, block)| {
                let (_, cert) = x509_parser::parse_x509_certificate(&block.contents).ok()?;
                let cn = cert
                    .subject()
                    .iter_common_name()
                    .next()?
                    .as_str()
                    .ok()?
                    .to_string();
                Some(cn)
            })
            .ok_or(PkiError::Rcgen(rcgen::Error::CouldNotParseCertificate))?;
        // The same subject as `generate_valid` wrote, byte for byte: chains match names exactly.
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(&common_name, &[]);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::hours(1);
        params.not_after = now + IDENTITY_VALIDITY;
        params.serial_number = Some(random_serial());
        let other_key = KeyPair::from_pem(&other.key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(&other.cert_pem, other_key)?;
        Ok(params.signed_by(&key, &issuer)?.pem())
    }

    /// A client certificate for a certificate signing request (DER), as kube-controller-manager's
    /// `kubernetes.io/kube-apiserver-client-kubelet` signer issues one: the request's subject and
    /// key, client auth, valid from five minutes ago (its backdating) for `validity`.
    pub fn sign_request(&self, request_der: &[u8], validity: Duration) -> Result<String, PkiError> {
        let der = rustls_pki_types::CertificateSigningRequestDer::from(request_der.to_vec());
        let mut request = rcgen::CertificateSigningRequestParams::from_der(&der)?;
        let now = OffsetDateTime::now_utc();
        request.params.not_before = now - Duration::minutes(5);
        request.params.not_after = now + validity;
        request.params.serial_number = Some(random_serial());
        request.params.is_ca = IsCa::ExplicitNoCa;
        request.params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        request.params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::from_pem(&self.key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(&self.cert_pem, ca_key)?;
        Ok(request.signed_by(&issuer)?.pem())
    }

    /// A serving certificate for `hosts` (DNS names or IP addresses), signed by this CA.
    pub fn issue_serving(&self, hosts: &[&str]) -> Result<ServingCert, PkiError> {
        let now = OffsetDateTime::now_utc();
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(hosts.first().copied().unwrap_or("fake-apiserver"), &[]);
        params.subject_alt_names = hosts
            .iter()
            .map(|h| match h.parse::<IpAddr>() {
                Ok(ip) => Ok(SanType::IpAddress(ip)),
                Err(_) => h
                    .to_string()
                    .try_into()
                    .map(SanType::DnsName)
                    .map_err(|_| PkiError::BadHost(h.to_string())),
            })
            .collect::<Result<_, _>>()?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.not_before = now - Duration::hours(1);
        params.not_after = now + IDENTITY_VALIDITY;
        params.serial_number = Some(random_serial());
        let (leaf, key_pem) = self.sign(params)?;
        Ok(ServingCert {
            chain_pem: leaf,
            key_pem,
            ca_pem: self.cert_pem.clone(),
        })
    }
}

/// The names a serving certificate covers by default: loopback by IP and name, and the
/// OpenShift API names agents in the field connect to.
pub const DEFAULT_SERVING_HOSTS: &[&str] = &[
    "127.0.0.1",
    "::1",
    "localhost",
    "api-int.test.example",
    "api.test.example",
];

impl ServingCert {
    /// A fresh CA and a serving certificate from it for `hosts`.
    pub fn generate(ca_common_name: &str, hosts: &[&str]) -> Result<Self, PkiError> {
        CertificateAuthority::generate(ca_common_name)?.issue_serving(hosts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

    fn ders(pem: &str) -> Vec<CertificateDer<'static>> {
        CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<_, _>>()
            .expect("PEM certificates")
    }

    /// Whether a client trusting `roots` accepts `chain` (leaf first) for 127.0.0.1.
    fn accepts(roots: &[&str], chain: &str) -> bool {
        let roots: Vec<CertificateDer<'static>> = roots.iter().flat_map(|r| ders(r)).collect();
        let anchors: Vec<_> = roots
            .iter()
            .map(|d| webpki::anchor_from_trusted_cert(d).expect("anchor").to_owned())
            .collect();
        let chain = ders(chain);
        let leaf = webpki::EndEntityCert::try_from(&chain[0]).expect("leaf");
        leaf.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &anchors,
            &chain[1..],
            UnixTime::now(),
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )
        .and_then(|v| {
            let name = ServerName::try_from("127.0.0.1").expect("name");
            v.end_entity().verify_is_valid_for_subject_name(&name)
        })
        .is_ok()
    }

    #[test]
    fn a_cross_signed_ca_is_trusted_through_the_other_root_or_on_its_own_and_by_nobody_else() {
        let added = CertificateAuthority::generate("kube-apiserver-lb-signer").unwrap();
        let root = CertificateAuthority::generate("cluster trust").unwrap();
        let stranger = CertificateAuthority::generate("someone else").unwrap();
        let mut serving = added.issue_serving(DEFAULT_SERVING_HOSTS).unwrap();
        serving.chain_pem.push_str(&added.cross_signed_by(&root).unwrap());
        assert!(accepts(&[&root.cert_pem], &serving.chain_pem));
        assert!(accepts(&[&added.cert_pem], &serving.chain_pem));
        assert!(!accepts(&[&stranger.cert_pem], &serving.chain_pem));
    }

    #[test]
    fn a_signed_request_keeps_its_subject_and_key_and_serves_client_auth() {
        let ca = CertificateAuthority::generate("csr signer").unwrap();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name = subject("system:node:worker-0", &["system:nodes".into()]);
        let request = params.serialize_request(&key).unwrap();
        let pem = ca.sign_request(request.der(), Duration::days(1)).expect("signed");
        let der = ders(&pem).remove(0);
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let cn = cert
            .subject()
            .iter_common_name()
            .next()
            .unwrap()
            .as_str()
            .unwrap();
        assert_eq!(cn, "system:node:worker-0");
        assert_eq!(
            cert.public_key().subject_public_key.data.as_ref(),
            key.public_key_raw()
        );
        let identity =
            crate::auth::Authenticator::new(std::slice::from_ref(&ca.cert_pem), Default::default(), false)
                .unwrap()
                .verify_chain(&[der]);
        assert!(
            matches!(&identity, crate::auth::CertAuth::Valid(id) if id.user == "system:node:worker-0" && id.groups == ["system:nodes"]),
            "{identity:?}"
        );
    }
}
