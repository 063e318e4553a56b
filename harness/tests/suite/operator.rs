//! The operator turns source bundles into ControllerConfig's kubelet CA bundle, per profile,
//! after a fresh install and after a forced rotation (the two checks MCO's TestMCDRotatesCerts
//! makes on 4.16, and mco-source.md §1's merge on 4.12).

use crate::common::Controllers;
use base64::Engine;
use harness::Profile;
use harness::cluster::operator::controller_configs;
use harness::pki::subjects;

async fn cluster(profile: Profile, bootstrap_complete: bool) -> Controllers {
    Controllers::start(profile, "fresh-install", bootstrap_complete).await
}

impl Controllers {
    async fn cc_bundle(&self) -> String {
        let cc = controller_configs(&self.client)
            .get("machine-config-controller")
            .await
            .unwrap();
        let b64 = cc.data["spec"]["kubeAPIServerServingCAData"]
            .as_str()
            .unwrap()
            .to_string();
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap()
    }

    /// A forced rotation an hour in, and the signer controller's pass.
    async fn force_rotation_with_signer_pass(&self) {
        self.force_kubelet_signer_rotation().await;
        self.clock.advance(time::Duration::hours(1));
        self.signers.reconcile().await.unwrap();
    }
}

#[tokio::test]
async fn on_4_16_the_bundle_is_kube_apiserver_client_ca() {
    let c = cluster(Profile::Ocp416, true).await;
    assert!(c.operator.reconcile().await.unwrap());
    assert!(
        !c.operator.reconcile().await.unwrap(),
        "nothing to do the second time"
    );
    assert_eq!(
        c.cc_bundle().await,
        c.bundle("openshift-config-managed", "kube-apiserver-client-ca")
            .await
    );
    c.force_rotation_with_signer_pass().await;
    assert!(c.operator.reconcile().await.unwrap());
    let after = c.cc_bundle().await;
    assert_eq!(
        after,
        c.bundle("openshift-config-managed", "kube-apiserver-client-ca")
            .await
    );
    assert_eq!(
        subjects(&after)
            .unwrap()
            .iter()
            .filter(|s| s.contains("kube-apiserver-to-kubelet-signer"))
            .count(),
        2
    );
}

#[tokio::test]
async fn on_4_12_the_initial_bundle_gets_the_kubelet_signers_bundle_merged_in() {
    let c = cluster(Profile::Ocp412, true).await;
    c.operator.reconcile().await.unwrap();
    let initial = subjects(
        &c.bundle("openshift-config", "initial-kube-apiserver-server-ca")
            .await,
    )
    .unwrap();
    assert_eq!(
        initial.len(),
        5,
        "the installer's five client signers: {initial:?}"
    );
    assert!(
        initial[3].contains("kube-apiserver-to-kubelet-signer"),
        "in the installer's order, the kube-apiserver-to-kubelet signer fourth: {initial:?}"
    );
    assert_eq!(
        subjects(&c.cc_bundle().await).unwrap(),
        initial,
        "before any rotation the merge changes nothing"
    );
    c.force_rotation_with_signer_pass().await;
    c.operator.reconcile().await.unwrap();
    let kubelet = subjects(
        &c.bundle(
            "openshift-kube-apiserver-operator",
            "kube-apiserver-to-kubelet-client-ca",
        )
        .await,
    )
    .unwrap();
    let mut expected = initial[..3].to_vec();
    expected.extend(kubelet);
    expected.push(initial[4].clone());
    assert_eq!(
        subjects(&c.cc_bundle().await).unwrap(),
        expected,
        "the other signers kept in place, the kubelet signer replaced by its whole bundle where it stood"
    );
}

#[tokio::test]
async fn on_4_16_before_bootstrap_completes_the_4_12_rule_holds() {
    let c = cluster(Profile::Ocp416, false).await;
    c.operator.reconcile().await.unwrap();
    let initial = c
        .bundle("openshift-config", "initial-kube-apiserver-server-ca")
        .await;
    assert_eq!(
        subjects(&c.cc_bundle().await).unwrap(),
        subjects(&initial).unwrap()
    );
}
