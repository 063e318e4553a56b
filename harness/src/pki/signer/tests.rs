//! `signer`'s unit tests.

use super::*;
use time::macros::datetime;

const T0: OffsetDateTime = datetime!(2026-01-05 08:00 UTC);

fn annotated(not_before: OffsetDateTime, validity: Duration) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NOT_BEFORE.into(), rfc3339(not_before)),
        (NOT_AFTER.into(), rfc3339(not_before + validity)),
        (ISSUER.into(), "signer@1".into()),
    ])
}

/// kube-apiserver-to-kubelet-signer on 4.12: 365 d, refresh 8 × 365 d, so only the 80 %
/// rule fires: 365 − 365/5 = 292 days after notBefore.
#[test]
fn the_80_percent_rule_fires_after_day_292() {
    let policy = RotationPolicy {
        validity: Duration::days(365),
        refresh: Some(Duration::days(2920)),
        refresh_only_when_expired: false,
    };
    let a = annotated(T0, Duration::days(365));
    assert_eq!(
        signer_rotation(&a, T0 + Duration::days(292), &policy),
        None,
        "exactly at the point: not yet"
    );
    let reason = signer_rotation(&a, T0 + Duration::days(292) + Duration::seconds(1), &policy);
    assert_eq!(
        reason,
        Some(RotationReason::PastEightyPercent {
            at: T0 + Duration::days(292)
        })
    );
}

#[test]
fn deadlines_are_where_the_rules_first_fire() {
    let policy = RotationPolicy {
        validity: Duration::days(365),
        refresh: Some(Duration::days(2920)),
        refresh_only_when_expired: false,
    };
    let a = annotated(T0, Duration::days(365));
    let at = signer_deadline(&a, &policy).unwrap();
    assert_eq!(at, T0 + Duration::days(292) + Duration::SECOND);
    assert!(signer_rotation(&a, at - Duration::SECOND, &policy).is_none());
    assert!(signer_rotation(&a, at, &policy).is_some());
    let target = RotationPolicy {
        validity: Duration::days(30),
        refresh: Some(Duration::days(15)),
        refresh_only_when_expired: false,
    };
    let t = annotated(T0, Duration::days(30));
    assert_eq!(
        target_deadline(&t, &target, T0 + Duration::days(14)).unwrap(),
        T0 + Duration::days(15) + Duration::hours(12) + Duration::SECOND
    );
    assert_eq!(signer_deadline(&BTreeMap::new(), &policy), None);
}

#[test]
fn refresh_fires_before_80_percent_when_shorter() {
    // csr-signer: 30 d, refresh 15 d.
    let policy = RotationPolicy {
        validity: Duration::days(30),
        refresh: Some(Duration::days(15)),
        refresh_only_when_expired: false,
    };
    let a = annotated(T0, Duration::days(30));
    assert_eq!(signer_rotation(&a, T0 + Duration::days(15), &policy), None);
    assert!(matches!(
        signer_rotation(&a, T0 + Duration::days(15) + Duration::hours(1), &policy),
        Some(RotationReason::PastRefresh { .. })
    ));
}

#[test]
fn missing_malformed_expired_and_only_when_expired() {
    let policy = RotationPolicy {
        validity: Duration::days(1),
        refresh: None,
        refresh_only_when_expired: true,
    };
    let mut a = annotated(T0, Duration::days(1));
    assert_eq!(
        signer_rotation(&a, T0 + Duration::hours(23), &policy),
        None,
        "80 % ignored when only-when-expired"
    );
    assert!(matches!(
        signer_rotation(&a, T0 + Duration::days(2), &policy),
        Some(RotationReason::Expired { .. })
    ));
    a.remove(NOT_AFTER);
    assert_eq!(
        signer_rotation(&a, T0, &policy),
        Some(RotationReason::Missing),
        "a nulled not-after forces rotation"
    );
    a.insert(NOT_AFTER.into(), "yesterday".into());
    assert!(matches!(
        signer_rotation(&a, T0, &policy),
        Some(RotationReason::Malformed(_))
    ));
}

#[test]
fn targets_follow_their_issuer_into_and_out_of_the_bundle() {
    let policy = RotationPolicy {
        validity: Duration::days(30),
        refresh: Some(Duration::days(15)),
        refresh_only_when_expired: false,
    };
    let a = annotated(T0, Duration::days(30));
    let both = ["signer@1".to_string(), "signer@2".to_string()];
    let ctx = TargetContext {
        signer_not_before: T0,
        bundle_subjects: &both,
    };
    assert_eq!(target_rotation(&a, T0, &policy, &ctx), None);
    let only_new = ["signer@2".to_string()];
    let ctx = TargetContext {
        signer_not_before: T0,
        bundle_subjects: &only_new,
    };
    assert_eq!(
        target_rotation(&a, T0, &policy, &ctx),
        Some(RotationReason::IssuerGone {
            issuer: "signer@1".into()
        })
    );
}

/// kubelet-client (30 d, refresh 15 d) after kube-apiserver-to-kubelet-signer rotates: the
/// refresh waits until the new signer is 15 d / 10 = 36 h old.
#[test]
fn target_refresh_waits_for_the_signer_to_age() {
    let policy = RotationPolicy {
        validity: Duration::days(30),
        refresh: Some(Duration::days(15)),
        refresh_only_when_expired: false,
    };
    let issued = T0;
    let a = annotated(issued, Duration::days(30));
    let bundle = ["signer@1".to_string()];
    let new_signer = T0 + Duration::days(16);
    let ctx = TargetContext {
        signer_not_before: new_signer,
        bundle_subjects: &bundle,
    };
    assert_eq!(
        target_rotation(&a, new_signer + Duration::hours(36), &policy, &ctx),
        None
    );
    assert!(matches!(
        target_rotation(
            &a,
            new_signer + Duration::hours(36) + Duration::seconds(1),
            &policy,
            &ctx
        ),
        Some(RotationReason::PastRefresh { .. })
    ));
    let signer = Signer::issue("ns", "s", T0, Duration::days(20), 1).unwrap();
    assert_eq!(
        target_validity(&policy, &signer.cert, T0 + Duration::days(5)),
        Duration::days(15),
        "capped by the signer"
    );
}

#[test]
fn issued_certificates_carry_names_serials_and_times() {
    let signer = Signer::issue(
        "openshift-kube-apiserver-operator",
        "kube-apiserver-to-kubelet-signer",
        T0,
        Duration::days(365),
        7,
    )
    .unwrap();
    assert_eq!(
        signer.cert.common_name,
        format!(
            "openshift-kube-apiserver-operator_kube-apiserver-to-kubelet-signer@{}",
            T0.unix_timestamp()
        )
    );
    let client = signer
        .issue_client(
            "system:kube-apiserver",
            &["kube-master"],
            T0,
            Duration::days(30),
            8,
        )
        .unwrap();
    assert_eq!(client.issuer_common_name, signer.cert.common_name);
    let parsed = super::super::parse_certs(&client.pem).unwrap();
    assert_eq!(parsed[0].serial, 8);
    assert_eq!(parsed[0].not_after, T0 + Duration::days(30));
    assert_eq!(parsed[0].common_name, "system:kube-apiserver");
    assert_eq!(signer.cert.annotations()[ISSUER], signer.cert.common_name);
}
