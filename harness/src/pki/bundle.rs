//! CA bundles: PEM concatenations of CA certificates.
//!
//! - `manage_ca_bundle` is library-go's `manageCABundleConfigMap` (`cabundle.go`, lines 84-124
//!   at d932feccfc56, 106-150 at f5bf38712dca): the current signer first, expired certificates
//!   dropped, duplicates (same bytes) removed, older signers kept until they expire. The
//!   library-go that 4.16's operators vendor then sorts the bundle by the certificates' raw
//!   bytes (`BundleOrder::ByRawBytes`); 4.12's keeps newest first.
//! - `append_to_ca_bundle` is KCM-O's `ManageCSRIntermediateCABundle` (targetconfigcontroller.go,
//!   release-4.12 :817-883, release-4.16 :796-868), which keeps `csr-signer-ca`: the existing
//!   bundle, then the current `kube-csr-signer`, expired ones dropped, duplicates removed, no
//!   sorting.
//! - `combine_bundles` is library-go's `CombineCABundleConfigMaps` (resourcesynccontroller
//!   `core.go`:17-67 at d932feccfc56), which KCM-O's `csr-controller-ca` and KAS-O's
//!   `kube-apiserver-client-ca` are: the inputs in order, expired ones dropped (:40),
//!   duplicates removed.
//! - Expired means `notAfter` is not after now (library-go `crypto/rotation.go`
//!   `FilterExpiredCerts`:10-20 keeps a certificate while `NotAfter.After(now)`).
//! - `merge_cert_with_ca_bundle` is MCO release-4.12's `mergeCertWithCABundle`
//!   (`pkg/operator/sync.go`): every certificate of the initial bundle whose subject names the
//!   given signer is replaced by the whole new bundle; the rest are kept in place.

use super::{ParsedCert, PkiError, parse_certs};
use time::OffsetDateTime;

/// The order library-go leaves a CA bundle in (a release's `Traits::bundle_order`).
pub use crate::profile::BundleOrder;

/// The bundle after publishing `current` at `now`, from the `existing` bundle text.
pub fn manage_ca_bundle(
    current_pem: &str,
    existing: &str,
    now: OffsetDateTime,
    order: BundleOrder,
) -> Result<String, PkiError> {
    let mut certs = unexpired_once(
        parse_certs(current_pem)?
            .into_iter()
            .chain(parse_certs(existing)?),
        now,
    );
    if order == BundleOrder::ByRawBytes {
        certs.sort_by(|a, b| a.der.cmp(&b.der));
    }
    Ok(join(&certs))
}

/// KCM-O's `csr-signer-ca` after publishing `current` at `now`: the `existing` bundle in its
/// order with `current` appended, expired certificates dropped, each certificate once.
pub fn append_to_ca_bundle(
    current_pem: &str,
    existing: &str,
    now: OffsetDateTime,
) -> Result<String, PkiError> {
    let certs = parse_certs(existing)?
        .into_iter()
        .chain(parse_certs(current_pem)?);
    Ok(join(&unexpired_once(certs, now)))
}

/// Several bundles as one at `now`, in the order given, each unexpired certificate once.
pub fn combine_bundles<'a>(
    bundles: impl IntoIterator<Item = &'a str>,
    now: OffsetDateTime,
) -> Result<String, PkiError> {
    let mut certs = Vec::new();
    for bundle in bundles {
        certs.extend(parse_certs(bundle)?);
    }
    Ok(join(&unexpired_once(certs, now)))
}

/// Whether a bundle drops the certificate at `now` (`FilterExpiredCerts`).
pub fn expired(not_after: OffsetDateTime, now: OffsetDateTime) -> bool {
    not_after <= now
}

/// The certificates in order, without expired ones and without repeats of the same bytes.
fn unexpired_once(certs: impl IntoIterator<Item = ParsedCert>, now: OffsetDateTime) -> Vec<ParsedCert> {
    let mut out: Vec<ParsedCert> = Vec::new();
    for cert in certs {
        if !expired(cert.not_after, now) && !out.iter().any(|c| c.der == cert.der) {
            out.push(cert);
        }
    }
    out
}

/// MCO 4.12's merge of the initial kube-apiserver server CA bundle with the
/// kube-apiserver-to-kubelet-client-ca bundle.
pub fn merge_cert_with_ca_bundle(
    initial: &str,
    new: &str,
    subject_contains: &str,
) -> Result<String, PkiError> {
    let replacement = parse_certs(new)?;
    let mut out: Vec<ParsedCert> = Vec::new();
    for cert in parse_certs(initial)? {
        if cert.subject.contains(subject_contains) {
            out.extend(replacement.iter().cloned());
        } else {
            out.push(cert);
        }
    }
    Ok(join(&out))
}

fn join(certs: &[ParsedCert]) -> String {
    certs.iter().map(|c| c.pem.as_str()).collect()
}

/// The common names in a bundle, in order.
pub fn subjects(bundle: &str) -> Result<Vec<String>, PkiError> {
    Ok(parse_certs(bundle)?.into_iter().map(|c| c.common_name).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::Signer;
    use time::Duration;
    use time::macros::datetime;

    const T0: OffsetDateTime = datetime!(2026-01-05 08:00 UTC);

    #[test]
    fn current_first_expired_dropped_duplicates_removed() {
        let old = Signer::issue("ns", "s", T0, Duration::days(10), 1).unwrap();
        let new = Signer::issue("ns", "s", T0 + Duration::days(8), Duration::days(10), 2).unwrap();
        let order = BundleOrder::NewestFirst;
        let bundle = manage_ca_bundle(&old.cert.pem, "", T0, order).unwrap();
        let bundle = manage_ca_bundle(&new.cert.pem, &bundle, T0 + Duration::days(8), order).unwrap();
        assert_eq!(
            subjects(&bundle).unwrap(),
            [new.cert.common_name.clone(), old.cert.common_name.clone()]
        );
        let again = manage_ca_bundle(&new.cert.pem, &bundle, T0 + Duration::days(9), order).unwrap();
        assert_eq!(again, bundle, "publishing the same signer twice changes nothing");
        let later = manage_ca_bundle(&new.cert.pem, &bundle, T0 + Duration::days(11), order).unwrap();
        assert_eq!(
            subjects(&later).unwrap(),
            std::slice::from_ref(&new.cert.common_name),
            "the old signer leaves once expired"
        );
    }

    #[test]
    fn the_4_16_order_is_by_raw_bytes_and_unions_keep_each_cert_once() {
        let a = Signer::issue("ns", "a", T0, Duration::days(10), 1).unwrap();
        let b = Signer::issue("ns", "b", T0, Duration::days(10), 2).unwrap();
        let one = manage_ca_bundle(&a.cert.pem, &b.cert.pem, T0, BundleOrder::ByRawBytes).unwrap();
        let other = manage_ca_bundle(&b.cert.pem, &a.cert.pem, T0, BundleOrder::ByRawBytes).unwrap();
        assert_eq!(
            one, other,
            "the same certificates give the same bundle whichever is current"
        );
        let union = combine_bundles([a.cert.pem.as_str(), one.as_str(), b.cert.pem.as_str()], T0).unwrap();
        assert_eq!(
            subjects(&union).unwrap(),
            [a.cert.common_name.clone(), b.cert.common_name.clone()]
        );
        let later = combine_bundles([union.as_str()], T0 + Duration::days(10)).unwrap();
        assert!(
            later.is_empty(),
            "a union drops what expired, whatever its inputs still hold"
        );
    }

    /// KCM-O's csr-signer-ca: oldest first, the current kube-csr-signer appended; a certificate
    /// leaves at its notAfter, not a second later.
    #[test]
    fn csr_signer_ca_appends_and_drops_at_not_after() {
        let signer = Signer::issue_named("kubelet-signer", T0, Duration::days(1), 1).unwrap();
        let first = signer
            .issue_intermediate("kube-csr-signer", T0, Duration::days(1), 2)
            .unwrap();
        let second = signer
            .issue_intermediate("kube-csr-signer", T0 + Duration::hours(19), Duration::hours(5), 3)
            .unwrap();
        let bundle = append_to_ca_bundle(&first.cert.pem, "", T0).unwrap();
        let bundle = append_to_ca_bundle(&second.cert.pem, &bundle, T0 + Duration::hours(19)).unwrap();
        assert_eq!(
            subjects(&bundle).unwrap(),
            [first.cert.common_name.clone(), second.cert.common_name.clone()]
        );
        let at_expiry = T0 + Duration::days(1);
        assert_eq!(
            append_to_ca_bundle(&second.cert.pem, &bundle, at_expiry).unwrap(),
            "",
            "both expire at hour 24"
        );
        assert_eq!(
            append_to_ca_bundle(&second.cert.pem, &bundle, at_expiry - Duration::SECOND).unwrap(),
            bundle
        );
    }

    #[test]
    fn the_4_12_merge_replaces_only_the_named_signer() {
        let root = Signer::issue_named("root-ca", T0, Duration::days(3650), 1).unwrap();
        let kubelet_v1 = Signer::issue(
            "openshift-kube-apiserver-operator",
            "kube-apiserver-to-kubelet-signer",
            T0,
            Duration::days(365),
            2,
        )
        .unwrap();
        let kubelet_v2 = Signer::issue(
            "openshift-kube-apiserver-operator",
            "kube-apiserver-to-kubelet-signer",
            T0 + Duration::days(293),
            Duration::days(365),
            3,
        )
        .unwrap();
        let initial = format!("{}{}", root.cert.pem, kubelet_v1.cert.pem);
        let new_bundle = format!("{}{}", kubelet_v2.cert.pem, kubelet_v1.cert.pem);
        let merged =
            merge_cert_with_ca_bundle(&initial, &new_bundle, "kube-apiserver-to-kubelet-signer").unwrap();
        assert_eq!(
            subjects(&merged).unwrap(),
            [
                root.cert.common_name.clone(),
                kubelet_v2.cert.common_name.clone(),
                kubelet_v1.cert.common_name.clone()
            ]
        );
    }
}
