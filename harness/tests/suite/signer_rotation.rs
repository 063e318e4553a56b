//! The signer-rotation controller against the fake API server, stepped through simulated time
//! deadline by deadline. Expected days are derived by hand from the upstream rules in the
//! comments; the controller is checked against them.

use crate::common::Controllers;
use harness::Profile;
use harness::pki::{Clock, SIMULATION_EPOCH, parse_certs, subjects};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use time::{Duration, OffsetDateTime};

impl Controllers {
    /// Advance to `until`, stopping at every deadline the rules name and running the signer
    /// controller there.
    async fn advance_to(&self, until: OffsetDateTime) {
        loop {
            let next = self.signers.next_deadline().await.unwrap();
            let stop = next.map_or(until, |n| n.min(until));
            self.clock.advance(stop - self.clock.now());
            self.signers.reconcile().await.unwrap();
            if stop >= until {
                return;
            }
        }
    }

    async fn bundle_subjects(&self, ns: &str, name: &str) -> Vec<String> {
        subjects(&self.bundle(ns, name).await).unwrap()
    }

    async fn secret_cert(&self, ns: &str, name: &str) -> harness::pki::ParsedCert {
        let s = Api::<Secret>::namespaced(self.client.clone(), ns)
            .get(name)
            .await
            .unwrap();
        let pem = String::from_utf8(s.data.unwrap()["tls.crt"].0.clone()).unwrap();
        parse_certs(&pem).unwrap().remove(0)
    }
}

fn day(n: i64) -> OffsetDateTime {
    SIMULATION_EPOCH + Duration::days(n)
}

/// 4.12, fresh install. kube-apiserver-to-kubelet-signer is the installer's (365 d, notBefore
/// day 0, not backdated), so the 80 % rule replaces it just after day 292 (365 − 73).
/// kubelet-client (30 d, refresh 15 d) is re-issued every 15 days from day 0 (its signer is
/// older than 15 d/10 = 36 h from day 2 on): days 15, 30, …, 285, 300, each exactly 15 days
/// after the last, as library-go backdates each a second (crypto.go:1138 at f5bf38712dca) and
/// the rule compares strictly. The rotation at day 292 does not re-issue it (the old signer stays
/// in the bundle), so the first certificate from the new signer comes at day 300, 8 days after
/// the rotation. The old signer leaves the bundle at its notAfter, day 365.
#[tokio::test]
async fn the_kubelet_signer_rotates_after_day_292_and_the_client_cert_follows_at_day_300() {
    let f = Controllers::start(Profile::Ocp412, "fresh-install", true).await;
    let ns = "openshift-kube-apiserver-operator";
    let first = f.secret_cert(ns, "kube-apiserver-to-kubelet-signer").await;
    assert_eq!(
        f.bundle_subjects(ns, "kube-apiserver-to-kubelet-client-ca").await,
        std::slice::from_ref(&first.common_name)
    );

    f.advance_to(day(292)).await;
    assert_eq!(
        f.secret_cert(ns, "kube-apiserver-to-kubelet-signer")
            .await
            .common_name,
        first.common_name,
        "not before day 292"
    );

    f.advance_to(day(293)).await;
    let second = f.secret_cert(ns, "kube-apiserver-to-kubelet-signer").await;
    assert_ne!(second.common_name, first.common_name, "rotated by day 293");
    assert!(
        second.not_before >= day(292) && second.not_before < day(292) + Duration::minutes(1),
        "at the 80 % point, backdated a second: {}",
        second.not_before
    );
    assert_eq!(
        f.bundle_subjects(ns, "kube-apiserver-to-kubelet-client-ca").await,
        [second.common_name.clone(), first.common_name.clone()],
        "4.12: newest first, the old signer kept"
    );
    let client_cert = f.secret_cert("openshift-kube-apiserver", "kubelet-client").await;
    assert_eq!(
        client_cert.issuer, first.common_name,
        "the rotation alone does not re-issue the client cert"
    );

    f.advance_to(day(300) + Duration::hours(1)).await;
    let client_cert = f.secret_cert("openshift-kube-apiserver", "kubelet-client").await;
    assert_eq!(
        client_cert.issuer, second.common_name,
        "issued by the new signer by day 300"
    );
    assert_eq!(
        client_cert.not_before,
        day(300) - Duration::SECOND,
        "issued at day 300, backdated a second"
    );

    f.advance_to(day(366)).await;
    assert_eq!(
        f.bundle_subjects(ns, "kube-apiserver-to-kubelet-client-ca").await,
        std::slice::from_ref(&second.common_name),
        "the old signer left once expired"
    );
    let union = f
        .bundle_subjects("openshift-config-managed", "kube-apiserver-client-ca")
        .await;
    assert!(union.contains(&second.common_name) && !union.contains(&first.common_name));
}

/// MCO's e2e forces a rotation by nulling `certificate-not-after` with a JSON patch.
#[tokio::test]
async fn a_forced_rotation_replaces_the_signer_at_once() {
    let f = Controllers::start(Profile::Ocp416, "fresh-install", true).await;
    let ns = "openshift-kube-apiserver-operator";
    let before = f.secret_cert(ns, "kube-apiserver-to-kubelet-signer").await;
    f.clock.advance(Duration::days(10));
    f.force_kubelet_signer_rotation().await;
    let changes = f.signers.reconcile().await.unwrap();
    assert!(changes.iter().any(|c| c.starts_with("rotated signer openshift-kube-apiserver-operator/kube-apiserver-to-kubelet-signer (missing notAfter)")), "{changes:?}");
    let after = f.secret_cert(ns, "kube-apiserver-to-kubelet-signer").await;
    assert_eq!(
        after.not_before,
        day(10) - Duration::SECOND,
        "library-go backdates a signer it issues by a second"
    );
    let bundle = f.bundle_subjects(ns, "kube-apiserver-to-kubelet-client-ca").await;
    assert_eq!(bundle.len(), 2);
    assert!(bundle.contains(&before.common_name) && bundle.contains(&after.common_name));
    assert!(
        f.signers.reconcile().await.unwrap().is_empty(),
        "a second pass changes nothing"
    );
}

/// A cluster 250 days old carries the monthly signers' previous generations too.
#[tokio::test]
async fn an_aged_cluster_starts_with_the_bundles_it_would_have() {
    let f = Controllers::start(Profile::Ocp416, "signer-250-days-old", true).await;
    let kubelet = f
        .secret_cert(
            "openshift-kube-apiserver-operator",
            "kube-apiserver-to-kubelet-signer",
        )
        .await;
    assert_eq!(
        (kubelet.common_name.as_str(), kubelet.not_before),
        ("kube-apiserver-to-kubelet-signer", day(-250)),
        "as old as the cluster: the installer's own"
    );
    // csr-signer is 5 days old with a 15-day cadence and 30-day validity: the one before it
    // (issued day −20) is still valid, the one before that (day −35) expired on day −5.
    // KCM-O's csr-signer-ca lists them oldest first.
    let csr = f
        .bundle_subjects("openshift-kube-controller-manager-operator", "csr-signer-ca")
        .await;
    let current = f
        .secret_cert("openshift-kube-controller-manager-operator", "csr-signer")
        .await;
    assert_eq!(csr.len(), 2, "{csr:?}");
    assert!(csr.iter().all(|s| s.starts_with("kube-csr-signer_@")), "{csr:?}");
    assert_eq!(csr[1], current.common_name, "{csr:?}");
    f.advance_to(day(42) + Duration::hours(1)).await;
    let rotated = f
        .secret_cert(
            "openshift-kube-apiserver-operator",
            "kube-apiserver-to-kubelet-signer",
        )
        .await;
    assert!(
        rotated.not_before >= day(42) && rotated.not_before < day(42) + Duration::minutes(1),
        "day 292 of its life: {}",
        rotated.not_before
    );
}

/// The installer's kubelet-signer is KCM-O's first csr-signer-signer (bootstrap-hand-over: made
/// 850 s before the start, valid 24 h). Its 80 % point is 19.2 h after it was made; KCM-O's
/// first kube-csr-signer, issued by it at the start and capped at its notAfter, reaches its own
/// 80 % point 0.2 × 850 s − 0.2 s = 169.8 s later and is re-issued from the new signer; both
/// old certificates leave at 24 h − 850 s.
#[tokio::test]
async fn the_kubelet_signer_is_the_first_csr_signer_signer() {
    let f = Controllers::start(Profile::Ocp416, "bootstrap-hand-over", true).await;
    let ns = "openshift-kube-controller-manager-operator";
    let lead = Duration::seconds(850);
    let made = SIMULATION_EPOCH - lead;
    let kubelet_signer = f.secret_cert(ns, "csr-signer-signer").await;
    assert_eq!(
        (
            kubelet_signer.common_name.as_str(),
            kubelet_signer.not_before,
            kubelet_signer.not_after
        ),
        ("kubelet-signer", made, made + Duration::hours(24))
    );
    let first = f.secret_cert(ns, "csr-signer").await;
    assert!(
        first.common_name.starts_with("kube-csr-signer_@"),
        "{}",
        first.common_name
    );
    assert_eq!(
        (first.issuer.as_str(), first.not_before, first.not_after),
        (
            "kubelet-signer",
            SIMULATION_EPOCH - Duration::SECOND,
            kubelet_signer.not_after
        ),
        "capped at its issuer's notAfter"
    );

    let signer_due = made + Duration::hours(24) - Duration::hours(24) / 5;
    f.advance_to(signer_due).await;
    assert_eq!(
        f.secret_cert(ns, "csr-signer-signer").await.common_name,
        "kubelet-signer"
    );
    f.advance_to(signer_due + Duration::seconds(2)).await;
    let second_signer = f.secret_cert(ns, "csr-signer-signer").await;
    assert!(
        second_signer
            .common_name
            .starts_with("openshift-kube-controller-manager-operator_csr-signer-signer@"),
        "{}",
        second_signer.common_name
    );
    assert_eq!(
        second_signer.not_after - second_signer.not_before,
        Duration::days(60) + Duration::SECOND
    );
    assert_eq!(
        f.secret_cert(ns, "csr-signer").await.common_name,
        first.common_name,
        "its issuer is still in the bundle"
    );

    f.advance_to(signer_due + Duration::seconds(169)).await;
    assert_eq!(
        f.secret_cert(ns, "csr-signer").await.common_name,
        first.common_name
    );
    f.advance_to(signer_due + Duration::seconds(171)).await;
    let second = f.secret_cert(ns, "csr-signer").await;
    assert_eq!(second.issuer, second_signer.common_name);
    assert_eq!(
        second.not_after - second.not_before,
        Duration::days(30) + Duration::SECOND
    );
    assert_eq!(
        f.bundle_subjects(ns, "csr-signer-ca").await,
        [first.common_name.clone(), second.common_name.clone()]
    );

    f.advance_to(made + Duration::hours(24)).await;
    assert_eq!(
        f.bundle_subjects(ns, "csr-signer-ca").await,
        std::slice::from_ref(&second.common_name)
    );
    assert_eq!(
        f.bundle_subjects(ns, "csr-controller-signer-ca").await,
        std::slice::from_ref(&second_signer.common_name)
    );
    let union = f
        .bundle_subjects("openshift-config-managed", "kube-apiserver-client-ca")
        .await;
    assert!(
        union.contains(&second.common_name)
            && union.contains(&second_signer.common_name)
            && !union
                .iter()
                .any(|s| s == "kubelet-signer" || *s == first.common_name),
        "{union:?}"
    );
}
