//! Signers and the certificates they issue, in simulated time, and library-go's rules for
//! when each is replaced (`pkg/operator/certrotation/{signer,target}.go`, as recorded in
//! shared/notes/mco-source.md §5).
//!
//! A signer is a self-signed ECDSA P-256 CA named `<namespace>_<name>@<unix>`, stored as a
//! `kubernetes.io/tls` Secret with the `auth.openshift.io/certificate-*` annotations. The
//! decisions (`signer_rotation`, `target_rotation`) are pure functions of those annotations,
//! the time and the policy; issuing is separate.

use super::{PkiError, rfc3339};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose, SerialNumber,
};
use std::collections::BTreeMap;
use time::{Duration, OffsetDateTime};

pub const NOT_BEFORE: &str = "auth.openshift.io/certificate-not-before";
pub const NOT_AFTER: &str = "auth.openshift.io/certificate-not-after";
pub const ISSUER: &str = "auth.openshift.io/certificate-issuer";
pub const MANAGED_TYPE_LABEL: &str = "auth.openshift.io/managed-certificate-type";

/// An issued certificate: PEM and the facts the rules and messages need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedCert {
    pub pem: String,
    pub key_pem: String,
    pub common_name: String,
    pub issuer_common_name: String,
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
    pub serial: u64,
}

impl IssuedCert {
    /// The annotations library-go keeps on the Secret.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (NOT_BEFORE.to_string(), rfc3339(self.not_before)),
            (NOT_AFTER.to_string(), rfc3339(self.not_after)),
            (ISSUER.to_string(), self.issuer_common_name.clone()),
        ])
    }
}

/// How a certificate is refreshed (library-go `RotatedSigningCASecret` / `RotatedSelfSignedCertKeySecret`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RotationPolicy {
    pub validity: Duration,
    /// Replace after notBefore + refresh (unless `refresh_only_when_expired`).
    pub refresh: Option<Duration>,
    pub refresh_only_when_expired: bool,
}

/// Why a certificate must be replaced now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RotationReason {
    /// No annotations yet, or `certificate-not-after` removed (how MCO's e2e forces a rotation).
    Missing,
    Malformed(String),
    Expired {
        not_after: OffsetDateTime,
    },
    /// Past notAfter − validity/5.
    PastEightyPercent {
        at: OffsetDateTime,
    },
    /// Past notBefore + refresh.
    PastRefresh {
        at: OffsetDateTime,
    },
    /// A target whose issuer is no longer in the CA bundle.
    IssuerGone {
        issuer: String,
    },
}

impl std::fmt::Display for RotationReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RotationReason::Missing => write!(f, "missing notAfter"),
            RotationReason::Malformed(why) => write!(f, "bad expiry: {why}"),
            RotationReason::Expired { not_after } => write!(f, "already expired at {}", rfc3339(*not_after)),
            RotationReason::PastEightyPercent { at } => {
                write!(f, "past its latest possible time {}", rfc3339(*at))
            }
            RotationReason::PastRefresh { at } => write!(f, "past its refresh time {}", rfc3339(*at)),
            RotationReason::IssuerGone { issuer } => {
                write!(f, "issuer {issuer:?} no longer in the CA bundle")
            }
        }
    }
}

fn parse_time(
    annotations: &BTreeMap<String, String>,
    key: &str,
) -> Result<Option<OffsetDateTime>, RotationReason> {
    match annotations.get(key).map(String::as_str) {
        None | Some("") => Ok(None),
        Some(text) => OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
            .map(Some)
            .map_err(|e| RotationReason::Malformed(format!("{key}={text:?}: {e}"))),
    }
}

/// notBefore and notAfter from the annotations; `Missing` or `Malformed` when they are not
/// both there and valid.
fn validity_of(
    annotations: &BTreeMap<String, String>,
) -> Result<(OffsetDateTime, OffsetDateTime), RotationReason> {
    match (
        parse_time(annotations, NOT_BEFORE),
        parse_time(annotations, NOT_AFTER),
    ) {
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(Some(b)), Ok(Some(a))) => Ok((b, a)),
        _ => Err(RotationReason::Missing),
    }
}

/// The rules that depend on time alone, shared by signers and targets: expiry, then (unless
/// only-when-expired) the 80 % point, then the refresh point, which a target may only use once
/// `refresh_gate` (its signer's notBefore + refresh/10) has passed.
fn time_rotation(
    (not_before, not_after): (OffsetDateTime, OffsetDateTime),
    now: OffsetDateTime,
    policy: &RotationPolicy,
    refresh_gate: Option<OffsetDateTime>,
) -> Option<RotationReason> {
    if now > not_after {
        return Some(RotationReason::Expired { not_after });
    }
    if policy.refresh_only_when_expired {
        return None;
    }
    let latest = not_after - (not_after - not_before) / 5;
    if now > latest {
        return Some(RotationReason::PastEightyPercent { at: latest });
    }
    let refresh = policy.refresh?;
    (now > not_before + refresh && refresh_gate.is_none_or(|gate| now > gate)).then_some(
        RotationReason::PastRefresh {
            at: not_before + refresh,
        },
    )
}

/// The first instant `time_rotation` answers yes (rules compare strictly: one second past).
fn time_deadline(
    (not_before, not_after): (OffsetDateTime, OffsetDateTime),
    policy: &RotationPolicy,
    refresh_gate: Option<OffsetDateTime>,
) -> OffsetDateTime {
    let mut at = not_after;
    if !policy.refresh_only_when_expired {
        at = at.min(not_after - (not_after - not_before) / 5);
        if let Some(refresh) = policy.refresh {
            at = at.min((not_before + refresh).max(refresh_gate.unwrap_or(not_before)));
        }
    }
    at + Duration::SECOND
}

fn refresh_gate(policy: &RotationPolicy, signer_not_before: OffsetDateTime) -> Option<OffsetDateTime> {
    policy.refresh.map(|r| signer_not_before + r / 10)
}

/// library-go `needNewSigningCertKeyPair` (signer.go:135-161 at f5bf38712dca, :82-108 at
/// d932feccfc56): whether a signer must be replaced at `now`.
pub fn signer_rotation(
    annotations: &BTreeMap<String, String>,
    now: OffsetDateTime,
    policy: &RotationPolicy,
) -> Option<RotationReason> {
    match validity_of(annotations) {
        Err(reason) => Some(reason),
        Ok(validity) => time_rotation(validity, now, policy, None),
    }
}

/// The first instant at which `signer_rotation` would answer yes, or `None` when the
/// annotations already call for a rotation.
pub fn signer_deadline(
    annotations: &BTreeMap<String, String>,
    policy: &RotationPolicy,
) -> Option<OffsetDateTime> {
    validity_of(annotations)
        .ok()
        .map(|v| time_deadline(v, policy, None))
}

/// As `signer_deadline`, for a target and the signer that would re-issue it.
pub fn target_deadline(
    annotations: &BTreeMap<String, String>,
    policy: &RotationPolicy,
    signer_not_before: OffsetDateTime,
) -> Option<OffsetDateTime> {
    validity_of(annotations)
        .ok()
        .map(|v| time_deadline(v, policy, refresh_gate(policy, signer_not_before)))
}

/// What a target's rule needs to know about its signer and bundle.
#[derive(Debug, Clone)]
pub struct TargetContext<'a> {
    /// notBefore of the signer that would issue the new certificate.
    pub signer_not_before: OffsetDateTime,
    /// Common names in the signer's CA bundle.
    pub bundle_subjects: &'a [String],
}

/// library-go's target rule (`needNewTargetCertKeyPair` and `needNewTargetCertKeyPairForTime`,
/// target.go:149-220 at f5bf38712dca): missing or malformed annotations, expiry, the 80 % point
/// (no wait for the signer), then the refresh point, which counts only once the current signer
/// is `refresh / 10` old (:209-217); and a new certificate whenever its issuer has left the
/// signer's CA bundle (:154-165). A signer rotation alone does not re-issue the target: the old
/// signer stays in the bundle until it expires.
pub fn target_rotation(
    annotations: &BTreeMap<String, String>,
    now: OffsetDateTime,
    policy: &RotationPolicy,
    context: &TargetContext<'_>,
) -> Option<RotationReason> {
    let validity = match validity_of(annotations) {
        Err(reason) => return Some(reason),
        Ok(v) => v,
    };
    if let Some(reason) = time_rotation(
        validity,
        now,
        policy,
        refresh_gate(policy, context.signer_not_before),
    ) {
        return Some(reason);
    }
    let issuer = annotations.get(ISSUER).cloned().unwrap_or_default();
    (!context.bundle_subjects.contains(&issuer)).then_some(RotationReason::IssuerGone { issuer })
}

/// A target's validity, capped by what is left of its signer's (library-go target.go
/// `setTargetCertKeyPairSecret`, lines 233-237 at f5bf38712dca, 196-200 at d932feccfc56): a
/// target issued by a signer with less than `validity` left expires with it.
pub fn target_validity(policy: &RotationPolicy, signer: &IssuedCert, now: OffsetDateTime) -> Duration {
    policy.validity.min(signer.not_after - now)
}

fn dn(common_name: &str, orgs: &[&str]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for o in orgs {
        dn.push(DnType::OrganizationName, *o);
    }
    dn.push(DnType::CommonName, common_name);
    dn
}

/// How long library-go backdates what it issues: NotBefore is now − 1 s, NotAfter now +
/// validity (crypto.go `newSigningCertificateTemplateForDuration` and
/// `NewClientCertificateTemplateForDuration`, lines 1002-1003 and 1131-1132 at d932feccfc56,
/// 1009-1010 and 1138-1139 at f5bf38712dca). The installer does not backdate
/// (`pkg/asset/tls/tls.go SelfSignedCertificate`: NotBefore now).
pub const LIBRARY_GO_BACKDATE: Duration = Duration::SECOND;

/// A CA able to issue, in simulated time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    pub cert: IssuedCert,
}

/// A CA certificate's parameters: its name and validity window.
fn ca_params(
    common_name: &str,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
    serial: u64,
) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = dn(common_name, &[]);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = not_before;
    params.not_after = not_after;
    params.serial_number = Some(SerialNumber::from(serial));
    params.use_authority_key_identifier_extension = true;
    params
}

impl Signer {
    /// A signer as library-go's `RotatedSigningCASecret` makes it (signer.go
    /// `setSigningCertKeyPairSecret`, crypto.go `MakeSelfSignedCAConfigForDuration`): self-signed,
    /// named `<namespace>_<name>@<unix>` after `now`, valid from one second before `now` for
    /// `validity` after it.
    pub fn issue(
        namespace: &str,
        name: &str,
        now: OffsetDateTime,
        validity: Duration,
        serial: u64,
    ) -> Result<Self, PkiError> {
        let common_name = format!("{namespace}_{name}@{}", now.unix_timestamp());
        Self::self_signed(&common_name, now - LIBRARY_GO_BACKDATE, now + validity, serial)
    }

    /// A self-signed signer with an exact common name, valid from `now` (not backdated) for
    /// `validity`: the installer's signers (`kubelet-signer`, `admin-kubeconfig-signer`, …) and
    /// bootstrap CAs.
    pub fn issue_named(
        common_name: &str,
        now: OffsetDateTime,
        validity: Duration,
        serial: u64,
    ) -> Result<Self, PkiError> {
        Self::self_signed(common_name, now, now + validity, serial)
    }

    fn self_signed(
        common_name: &str,
        not_before: OffsetDateTime,
        not_after: OffsetDateTime,
        serial: u64,
    ) -> Result<Self, PkiError> {
        let key = KeyPair::generate()?;
        let cert = ca_params(common_name, not_before, not_after, serial).self_signed(&key)?;
        Ok(Signer {
            cert: IssuedCert {
                pem: cert.pem(),
                key_pem: key.serialize_pem(),
                common_name: common_name.to_string(),
                issuer_common_name: common_name.to_string(),
                not_before,
                not_after,
                serial,
            },
        })
    }

    /// A CA signed by this signer, as library-go's target `SignerRotation` makes one (target.go
    /// `SignerRotation.NewCertificate`, lines 332-335 at f5bf38712dca; crypto.go
    /// `MakeCAConfigForDuration`): named `<name>_@<unix>` after `now` (KCM-O's
    /// `kube-csr-signer_@…`), valid from one second before `now` for `validity` after it.
    pub fn issue_intermediate(
        &self,
        name: &str,
        now: OffsetDateTime,
        validity: Duration,
        serial: u64,
    ) -> Result<Signer, PkiError> {
        let common_name = format!("{name}_@{}", now.unix_timestamp());
        let (not_before, not_after) = (now - LIBRARY_GO_BACKDATE, now + validity);
        let params = ca_params(&common_name, not_before, not_after, serial);
        let issuer = Issuer::from_ca_cert_pem(&self.cert.pem, KeyPair::from_pem(&self.cert.key_pem)?)?;
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok(Signer {
            cert: IssuedCert {
                pem: cert.pem(),
                key_pem: key.serialize_pem(),
                common_name,
                issuer_common_name: self.cert.common_name.clone(),
                not_before,
                not_after,
                serial,
            },
        })
    }

    /// A client certificate (CN `common_name`, O `orgs`) from this signer, as library-go's
    /// `MakeClientCertificateForDuration` makes one: valid from one second before `now` for
    /// `validity` after it.
    pub fn issue_client(
        &self,
        common_name: &str,
        orgs: &[&str],
        now: OffsetDateTime,
        validity: Duration,
        serial: u64,
    ) -> Result<IssuedCert, PkiError> {
        let (not_before, not_after) = (now - LIBRARY_GO_BACKDATE, now + validity);
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(common_name, orgs);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.not_before = not_before;
        params.not_after = not_after;
        params.serial_number = Some(SerialNumber::from(serial));
        params.use_authority_key_identifier_extension = true;
        let issuer = Issuer::from_ca_cert_pem(&self.cert.pem, KeyPair::from_pem(&self.cert.key_pem)?)?;
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok(IssuedCert {
            pem: cert.pem(),
            key_pem: key.serialize_pem(),
            common_name: common_name.to_string(),
            issuer_common_name: self.cert.common_name.clone(),
            not_before,
            not_after,
            serial,
        })
    }
}

#[cfg(test)]
mod tests;
