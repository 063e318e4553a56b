//! The operator turns source bundles into ControllerConfig's kubelet CA bundle, per profile,
//! after a fresh install and after a forced rotation (the two checks MCO's TestMCDRotatesCerts
//! makes on 4.16, and mco-source.md §1's merge on 4.12).

use base64::Engine;
use fake_apiserver::FakeApiServer;
use harness::Profile;
use harness::cluster::install::install;
use harness::cluster::operator::controller_configs;
use harness::cluster::{ClusterLog, Operator, SignerRotation};
use harness::pki::{Catalogue, SimClock, StartingState, subjects};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("fixtures")
}

struct Cluster {
    _server: fake_apiserver::ServerHandle,
    client: kube::Client,
    signers: SignerRotation,
    operator: Operator,
    clock: SimClock,
}

async fn cluster(profile: Profile, bootstrap_complete: bool) -> Cluster {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = FakeApiServer::builder().start().await.unwrap();
    let client = server.admin_client().await.unwrap();
    let catalogue = Arc::new(Catalogue::load(&fixtures().join("signers.yaml")).unwrap());
    let clock = SimClock::default();
    let log = ClusterLog::default();
    let signers = SignerRotation::new(client.clone(), catalogue, profile, clock.clone(), log.clone());
    install(
        &client,
        &fixtures(),
        &signers,
        &StartingState::default(),
        bootstrap_complete,
    )
    .await
    .unwrap();
    let operator = Operator::new(client.clone(), profile, clock.clone(), log);
    Cluster {
        _server: server,
        client,
        signers,
        operator,
        clock,
    }
}

impl Cluster {
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

    async fn configmap(&self, ns: &str, name: &str) -> String {
        let cm = Api::<ConfigMap>::namespaced(self.client.clone(), ns)
            .get(name)
            .await
            .unwrap();
        cm.data.unwrap()["ca-bundle.crt"].clone()
    }

    async fn force_rotation(&self) {
        harness::cluster::force_rotation(
            &self.client,
            "openshift-kube-apiserver-operator",
            "kube-apiserver-to-kubelet-signer",
        )
        .await
        .unwrap();
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
        c.configmap("openshift-config-managed", "kube-apiserver-client-ca")
            .await
    );
    c.force_rotation().await;
    assert!(c.operator.reconcile().await.unwrap());
    let after = c.cc_bundle().await;
    assert_eq!(
        after,
        c.configmap("openshift-config-managed", "kube-apiserver-client-ca")
            .await
    );
    assert_eq!(
        subjects(&after)
            .unwrap()
            .iter()
            .filter(|s| s.contains("kube-apiserver-to-kubelet-signer@"))
            .count(),
        2
    );
}

#[tokio::test]
async fn on_4_12_the_initial_bundle_gets_the_kubelet_signers_bundle_merged_in() {
    let c = cluster(Profile::Ocp412, true).await;
    c.operator.reconcile().await.unwrap();
    let initial = subjects(
        &c.configmap("openshift-config", "initial-kube-apiserver-server-ca")
            .await,
    )
    .unwrap();
    assert_eq!(
        initial.len(),
        4,
        "three serving CAs and the first kubelet signer: {initial:?}"
    );
    assert_eq!(
        subjects(&c.cc_bundle().await).unwrap(),
        initial,
        "before any rotation the merge changes nothing"
    );
    c.force_rotation().await;
    c.operator.reconcile().await.unwrap();
    let kubelet = subjects(
        &c.configmap(
            "openshift-kube-apiserver-operator",
            "kube-apiserver-to-kubelet-client-ca",
        )
        .await,
    )
    .unwrap();
    let mut expected = initial[..3].to_vec();
    expected.extend(kubelet);
    assert_eq!(
        subjects(&c.cc_bundle().await).unwrap(),
        expected,
        "serving CAs kept, the kubelet signer replaced by its whole bundle"
    );
}

#[tokio::test]
async fn on_4_16_before_bootstrap_completes_the_4_12_rule_holds() {
    let c = cluster(Profile::Ocp416, false).await;
    c.operator.reconcile().await.unwrap();
    let initial = c
        .configmap("openshift-config", "initial-kube-apiserver-server-ca")
        .await;
    assert_eq!(
        subjects(&c.cc_bundle().await).unwrap(),
        subjects(&initial).unwrap()
    );
}
