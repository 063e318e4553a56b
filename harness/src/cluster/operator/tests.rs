use super::*;
use crate::cluster::names::{KUBE_APISERVER_SERVER_CA, KUBECONFIG_DATA};
use crate::mco::config_map_bytes;
use crate::pki::{SIMULATION_EPOCH, Signer, subjects};
use time::Duration;

fn signer(name: &str, days: i64, serial: u64) -> String {
    Signer::issue(
        "openshift-kube-apiserver-operator",
        name,
        SIMULATION_EPOCH + Duration::days(days),
        Duration::days(365),
        serial,
    )
    .unwrap()
    .cert
    .pem
}

#[test]
fn each_profile_picks_its_sources() {
    let serving = Signer::issue_named(
        "kube-apiserver-lb-signer",
        SIMULATION_EPOCH,
        Duration::days(3650),
        1,
    )
    .unwrap()
    .cert
    .pem;
    let (old, new) = (
        signer(KUBE_APISERVER_TO_KUBELET_SIGNER, 0, 2),
        signer(KUBE_APISERVER_TO_KUBELET_SIGNER, 292, 3),
    );
    let csr = signer("csr-signer", 0, 4);
    let sources = CaSources {
        initial: Some(format!("{serving}{old}")),
        kubelet_client_ca: Some(format!("{new}{old}")),
        client_ca: Some(format!("{csr}{new}{old}")),
        bootstrap_complete: true,
    };
    let names = |pem: &str| subjects(pem).unwrap();
    assert_eq!(
        names(&kubelet_ca_bundle(Profile::Ocp412, &sources).unwrap()),
        names(&format!("{serving}{new}{old}"))
    );
    assert_eq!(
        names(&kubelet_ca_bundle(Profile::Ocp416, &sources).unwrap()),
        names(&format!("{csr}{new}{old}"))
    );
    let bringing_up = CaSources {
        bootstrap_complete: false,
        ..sources.clone()
    };
    assert_eq!(
        kubelet_ca_bundle(Profile::Ocp416, &bringing_up).unwrap(),
        kubelet_ca_bundle(Profile::Ocp412, &bringing_up).unwrap(),
        "before bootstrap completes, 4.16 renders what the bootstrap did"
    );
    let no_new = CaSources {
        kubelet_client_ca: None,
        ..sources.clone()
    };
    assert_eq!(
        kubelet_ca_bundle(Profile::Ocp412, &no_new).unwrap(),
        format!("{serving}{old}")
    );
    let nothing = CaSources::default();
    assert!(
        kubelet_ca_bundle(Profile::Ocp412, &nothing)
            .unwrap_err()
            .to_string()
            .contains("initial-kube-apiserver-server-ca")
    );
}

/// Lets every request through and, once armed, holds the second read of
/// `kube-apiserver-server-ca` it sees until the test has changed that bundle: a pass that reads
/// the bundle twice then sees it before and after the change.
struct HoldSecondServerCaRead {
    armed: std::sync::atomic::AtomicBool,
    reads: std::sync::atomic::AtomicUsize,
    reached: tokio::sync::mpsc::UnboundedSender<()>,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl fake_apiserver::auth::Authorizer for HoldSecondServerCaRead {
    fn authorize(
        &self,
        who: &fake_apiserver::auth::Identity,
        request: &fake_apiserver::auth::RequestAttributes,
    ) -> Result<(), fake_apiserver::ApiError> {
        use std::sync::atomic::Ordering::SeqCst;
        let (ns, name) = KUBE_APISERVER_SERVER_CA;
        let server_ca_read = request.verb == "get"
            && request.resource == "configmaps"
            && request.namespace.as_deref() == Some(ns)
            && request.name.as_deref() == Some(name);
        if server_ca_read && self.armed.load(SeqCst) && self.reads.fetch_add(1, SeqCst) == 1 {
            let _ = self.reached.send(());
            // The server's other requests (the test's write) go on on the other workers.
            tokio::task::block_in_place(|| {
                let release = self.release.lock().unwrap_or_else(|p| p.into_inner());
                let _ = release.recv_timeout(std::time::Duration::from_secs(60));
            });
        }
        fake_apiserver::auth::AllowAuthenticated.authorize(who, request)
    }
}

/// The 4.16 operator copies a serving CA bundle change only after waiting for it to settle,
/// whenever in a pass the change lands (release-4.16 sync.go:985-1043 reads the bundle once,
/// then polls): a change written while a pass runs is not copied by that pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_serving_ca_change_during_a_pass_waits_to_settle_like_any_other() {
    use crate::cluster::install::{History, install};
    use crate::pki::{Catalogue, StartingState};
    use std::sync::atomic::Ordering::SeqCst;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (reached, mut reached_rx) = tokio::sync::mpsc::unbounded_channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    let hold = std::sync::Arc::new(HoldSecondServerCaRead {
        armed: false.into(),
        reads: 0.into(),
        reached,
        release: std::sync::Mutex::new(release_rx),
    });
    let server = fake_apiserver::FakeApiServer::builder()
        .authorizer(hold.clone())
        .start()
        .await
        .unwrap();
    let client = server.admin_client().await.unwrap();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let catalogue = std::sync::Arc::new(Catalogue::load(&fixtures.join("signers.yaml")).unwrap());
    let state = StartingState::load_all(&fixtures.join("starting-states.yaml"), &catalogue)
        .unwrap()
        .into_iter()
        .find(|s| s.name == "fresh-install")
        .unwrap();
    let (profile, clock, log) = (Profile::Ocp416, SimClock::default(), ClusterLog::default());
    let signers =
        crate::cluster::SignerRotation::new(client.clone(), catalogue, profile, clock.clone(), log.clone());
    let serving_ca = server.ca_pem();
    let history = History {
        bootstrap_complete: true,
        upgraded_with_serving_ca: None,
    };
    install(
        &client,
        profile,
        &fixtures,
        &signers,
        &state,
        &serving_ca,
        &history,
    )
    .await
    .unwrap();
    signers.reconcile().await.unwrap();
    // The operator as its service account (the authorizer sees no system:masters request).
    let operator_identity = server
        .client_ca()
        .issue_client(
            "system:serviceaccount:openshift-machine-config-operator:machine-config-operator",
            &["system:serviceaccounts"],
        )
        .unwrap();
    let operator_client = server.client(&operator_identity).await.unwrap();
    let operator = std::sync::Arc::new(Operator::new(operator_client, profile, clock.clone(), log));
    while operator.reconcile().await.unwrap() {}
    let configmaps = |ns| Api::<ConfigMap>::namespaced(client.clone(), ns);
    let copied = || async {
        let cm = configmaps(KUBECONFIG_DATA.0)
            .get(KUBECONFIG_DATA.1)
            .await
            .unwrap();
        String::from_utf8(config_map_bytes(&cm, CA_BUNDLE_KEY).unwrap()).unwrap()
    };
    assert_eq!(copied().await, serving_ca, "installed in step");

    // A pass begins; the bundle gains a CA while it runs (held at its second read, if any).
    hold.armed.store(true, SeqCst);
    let mut pass = tokio::spawn({
        let operator = operator.clone();
        async move { operator.reconcile().await }
    });
    let added = fake_apiserver::CertificateAuthority::generate("kube-apiserver-lb-signer")
        .unwrap()
        .cert_pem;
    let write = || async {
        let (ns, name) = KUBE_APISERVER_SERVER_CA;
        let patch = json!({"data": {CA_BUNDLE_KEY: format!("{serving_ca}{added}")}});
        configmaps(ns)
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap();
    };
    let passed = tokio::select! {
        _ = reached_rx.recv() => {
            write().await;
            release.send(()).unwrap();
            pass.await
        }
        // A pass that reads the bundle once: the change comes after it.
        done = &mut pass => {
            write().await;
            done
        }
    };
    passed.unwrap().unwrap();
    assert_eq!(
        copied().await,
        serving_ca,
        "the pass copied a change it did not wait on to settle"
    );
    // The next pass sees the change and starts the wait: a poll 15 s on, the copy a minute on.
    hold.armed.store(false, SeqCst);
    operator.reconcile().await.unwrap();
    assert_eq!(operator.deadline(), Some(clock.now() + SETTLE_POLL));
    for _ in 0..4 {
        clock.advance(SETTLE_POLL);
        operator.reconcile().await.unwrap();
    }
    assert_eq!(copied().await, format!("{serving_ca}{added}"));
    server.shutdown().await;
}
