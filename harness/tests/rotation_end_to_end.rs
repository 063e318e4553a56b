//! A forced kube-apiserver-to-kubelet-signer rotation across the whole stack: the fake API
//! server, the reference cluster side running on watches, embedded nodes with fake kubelets and
//! the reference daemon, on each profile. What is checked is what a user observes: node files,
//! annotations, rendered configs, the journal, and the kubelet's TLS verdict.

use base64::Engine;
use fake_apiserver::FakeApiServer;
use harness::Profile;
use harness::agent::ReferenceDaemon;
use harness::cluster::install::install;
use harness::cluster::mcc::{machine_config_pools, machine_configs};
use harness::cluster::operator::controller_configs;
use harness::cluster::render::Templates;
use harness::cluster::{ClusterLog, ClusterSide, MachineConfigController, Operator, SignerRotation};
use harness::mco::{CURRENT_CONFIG, KUBELET_CA_PATH, LAST_SYNCED_CONTROLLER_CONFIG, STATE};
use harness::node::kubelet::{FakeKubelet, probe};
use harness::node::seed::{NodeSeed, seed_node};
use harness::node::{AGENT_UNIT, CRIO_UNIT, EmbeddedNode, KUBELET_UNIT, Node};
use harness::pki::{Catalogue, Clock, SimClock, StartingState, parse_certs};
use harness::wait::eventually;
use k8s_openapi::api::core::v1::{ConfigMap, Node as NodeObject, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(30);
const NODES: &[&str] = &["worker-0", "worker-1"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("fixtures")
}

struct World {
    _server: fake_apiserver::ServerHandle,
    admin: kube::Client,
    clock: SimClock,
    nodes: Vec<EmbeddedNode>,
    stop: CancellationToken,
    log: ClusterLog,
}

async fn world(profile: Profile) -> World {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = FakeApiServer::builder().start().await.unwrap();
    let admin = server.admin_client().await.unwrap();
    let catalogue = Arc::new(Catalogue::load(&fixtures().join("signers.yaml")).unwrap());
    let templates = Arc::new(Templates::load(&fixtures().join("templates.yaml")).unwrap());
    let (clock, log) = (SimClock::default(), ClusterLog::default());
    let side = Arc::new(ClusterSide {
        signers: SignerRotation::new(admin.clone(), catalogue, profile, clock.clone(), log.clone()),
        operator: Operator::new(admin.clone(), profile, clock.clone(), log.clone()),
        mcc: MachineConfigController::new(admin.clone(), templates, profile, clock.clone(), log.clone()),
        log: log.clone(),
        clock: clock.clone(),
    });
    install(
        &admin,
        &fixtures(),
        &side.signers,
        &StartingState::default(),
        true,
    )
    .await
    .unwrap();
    side.settle().await.unwrap();

    let pool = machine_config_pools(&admin).get("worker").await.unwrap();
    let rendered = pool.data["spec"]["configuration"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let spec = machine_configs(&admin).get(&rendered).await.unwrap().data["spec"].clone();
    let cc = controller_configs(&admin)
        .get("machine-config-controller")
        .await
        .unwrap();
    let bundle = base64::engine::general_purpose::STANDARD
        .decode(cc.data["spec"]["kubeAPIServerServingCAData"].as_str().unwrap())
        .unwrap();
    let agent = server
        .identity(
            "system:serviceaccount:openshift-machine-config-operator:machine-config-daemon",
            &["system:serviceaccounts"],
        )
        .unwrap();
    let mut nodes = Vec::new();
    for name in NODES {
        let node = EmbeddedNode::new(name, &[KUBELET_UNIT, CRIO_UNIT, AGENT_UNIT], clock.clone()).unwrap();
        let kubelet = server
            .identity(&format!("system:node:{name}"), &["system:nodes"])
            .unwrap();
        let seed = NodeSeed {
            role: "worker",
            api_url: server.url(),
            api_ca_pem: &server.ca_pem(),
            agent: &agent,
            kubelet: &kubelet,
            rendered: &rendered,
            rendered_spec: &spec,
            kubelet_ca: &bundle,
        };
        seed_node(&admin, &node, &seed).await.unwrap();
        node.set_service(KUBELET_UNIT, Arc::new(FakeKubelet));
        node.set_service(AGENT_UNIT, Arc::new(ReferenceDaemon { profile }));
        node.boot().await;
        nodes.push(node);
    }
    let stop = CancellationToken::new();
    side.clone().spawn(admin.clone(), stop.clone());
    World {
        _server: server,
        admin,
        clock,
        nodes,
        stop,
        log,
    }
}

impl World {
    async fn force_rotation(&self) {
        let secrets: Api<Secret> = Api::namespaced(self.admin.clone(), "openshift-kube-apiserver-operator");
        let force: json_patch::Patch = serde_json::from_value(json!([
            {"op": "replace", "path": "/metadata/annotations/auth.openshift.io~1certificate-not-after", "value": null}
        ]))
        .unwrap();
        secrets
            .patch(
                "kube-apiserver-to-kubelet-signer",
                &PatchParams::default(),
                &Patch::Json::<()>(force),
            )
            .await
            .unwrap();
        self.clock.advance(time::Duration::minutes(5));
    }

    async fn configmap(&self, ns: &str, name: &str) -> String {
        Api::<ConfigMap>::namespaced(self.admin.clone(), ns)
            .get(name)
            .await
            .unwrap()
            .data
            .unwrap()["ca-bundle.crt"]
            .clone()
    }

    async fn annotation(&self, node: &str, key: &str) -> String {
        let n = Api::<NodeObject>::all(self.admin.clone())
            .get(node)
            .await
            .unwrap();
        n.metadata
            .annotations
            .unwrap_or_default()
            .get(key)
            .cloned()
            .unwrap_or_default()
    }

    async fn rendered_count(&self) -> usize {
        let all = machine_configs(&self.admin)
            .list(&ListParams::default())
            .await
            .unwrap();
        all.into_iter()
            .filter(|m| {
                m.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("rendered-worker-"))
            })
            .count()
    }

    /// A kubelet client certificate from the current signer, as the kube-apiserver will hold
    /// once its certificate is re-issued.
    async fn client_from_current_signer(&self) -> (String, String) {
        let s = Api::<Secret>::namespaced(self.admin.clone(), "openshift-kube-apiserver-operator")
            .get("kube-apiserver-to-kubelet-signer")
            .await
            .unwrap();
        let data = s.data.unwrap();
        let text = |k: &str| String::from_utf8(data[k].0.clone()).unwrap();
        let parsed = parse_certs(&text("tls.crt")).unwrap().remove(0);
        let signer = harness::pki::Signer {
            cert: harness::pki::IssuedCert {
                pem: text("tls.crt"),
                key_pem: text("tls.key"),
                common_name: parsed.common_name.clone(),
                issuer_common_name: parsed.common_name,
                not_before: parsed.not_before,
                not_after: parsed.not_after,
                serial: parsed.serial,
            },
        };
        let client = signer
            .issue_client(
                "system:kube-apiserver",
                &["kube-master"],
                self.clock.now(),
                time::Duration::days(30),
                99,
            )
            .unwrap();
        (client.pem, client.key_pem)
    }

    async fn every_kubelet_accepts(&self, cert: &str, key: &str) {
        for node in &self.nodes {
            let addr = node.kubelet_endpoint().await.expect("kubelet serving");
            probe(addr, cert, key)
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", node.name()));
        }
    }

    async fn shutdown(self) {
        self.stop.cancel();
        for n in &self.nodes {
            n.shutdown().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_4_16_the_daemon_writes_the_client_ca_with_no_new_config_and_no_reboot() {
    let w = world(Profile::Ocp416).await;
    let marks: Vec<_> = futures::future::join_all(w.nodes.iter().map(|n| n.journal_mark())).await;
    let boots: Vec<_> = futures::future::join_all(w.nodes.iter().map(|n| n.boot_id())).await;
    w.force_rotation().await;
    let expected = eventually(DEADLINE, || async {
        let bundle = w
            .configmap("openshift-config-managed", "kube-apiserver-client-ca")
            .await;
        if parse_certs(&bundle)
            .unwrap()
            .iter()
            .filter(|c| c.common_name.contains("kube-apiserver-to-kubelet-signer@"))
            .count()
            == 2
        {
            Ok(bundle)
        } else {
            Err("kube-apiserver-client-ca has one kubelet signer".into())
        }
    })
    .await
    .unwrap();
    for (node, mark) in w.nodes.iter().zip(&marks) {
        let synced = eventually(DEADLINE, || async {
            let on_disk = String::from_utf8(node.read(KUBELET_CA_PATH).await.unwrap()).unwrap();
            if on_disk == expected {
                Ok(())
            } else {
                Err(format!(
                    "{} has {} bytes of kubelet-ca.crt",
                    node.name(),
                    on_disk.len()
                ))
            }
        })
        .await;
        synced.unwrap_or_else(|e| {
            panic!(
                "{e}\ncluster log:\n{}\njournal:\n{}",
                w.log.lines().join("\n"),
                node.journal().since(*mark).join("\n")
            )
        });
        let cc_rv = controller_configs(&w.admin)
            .get("machine-config-controller")
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
        let line = node
            .wait_for_journal(
                *mark,
                &format!("Certificate was synced from controllerconfig resourceVersion {cc_rv}"),
                DEADLINE,
            )
            .await;
        assert!(
            line.is_some_and(|l| l.contains("machine-config-daemon[")),
            "{}",
            node.journal().since(*mark).join("\n")
        );
        assert_eq!(
            w.annotation(node.name(), LAST_SYNCED_CONTROLLER_CONFIG).await,
            cc_rv
        );
        assert!(
            node.wait_for_journal(*mark, "Loaded a new CA Bundle and Verifier", DEADLINE)
                .await
                .is_some(),
            "the kubelet reloaded"
        );
    }
    assert_eq!(w.rendered_count().await, 1, "no new rendered config on 4.16");
    let after: Vec<_> = futures::future::join_all(w.nodes.iter().map(|n| n.boot_id())).await;
    assert_eq!(after, boots, "no node rebooted");
    let (cert, key) = w.client_from_current_signer().await;
    w.every_kubelet_accepts(&cert, &key).await;
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_4_12_the_bundle_arrives_through_a_new_rendered_config_without_reboot() {
    let w = world(Profile::Ocp412).await;
    let marks: Vec<_> = futures::future::join_all(w.nodes.iter().map(|n| n.journal_mark())).await;
    let before =
        machine_config_pools(&w.admin).get("worker").await.unwrap().data["spec"]["configuration"]["name"]
            .as_str()
            .unwrap()
            .to_string();
    w.force_rotation().await;
    let target = eventually(DEADLINE, || async {
        let t =
            machine_config_pools(&w.admin).get("worker").await.unwrap().data["spec"]["configuration"]["name"]
                .as_str()
                .unwrap()
                .to_string();
        if t != before {
            Ok(t)
        } else {
            Err(format!("pool still targets {t}"))
        }
    })
    .await
    .unwrap();
    for (node, mark) in w.nodes.iter().zip(&marks) {
        let done = eventually(DEADLINE, || async {
            let (current, state) = (
                w.annotation(node.name(), CURRENT_CONFIG).await,
                w.annotation(node.name(), STATE).await,
            );
            if current == target && state == "Done" {
                Ok(())
            } else {
                Err(format!("{}: currentConfig {current}, state {state}", node.name()))
            }
        })
        .await;
        done.unwrap_or_else(|e| {
            panic!(
                "{e}\ncluster log:\n{}\njournal:\n{}",
                w.log.lines().join("\n"),
                node.journal().since(*mark).join("\n")
            )
        });
        let journal = node.journal().since(*mark).join("\n");
        assert!(journal.contains(&format!(
            "Starting update from {before} to {target}: &{{osUpdate:false kargs:false fips:false passwd:false files:true units:false kernelType:false extensions:false}}"
        )), "{journal}");
        assert!(
            journal.contains("systemd[1]: Reloading."),
            "units enabled through systemctl: {journal}"
        );
        assert!(
            journal.contains(&format!("Node has Desired Config {target}, skipping reboot")),
            "{journal}"
        );
        assert!(!journal.contains("-- Boot "), "no reboot: {journal}");
        let on_disk = node.read(KUBELET_CA_PATH).await.unwrap();
        let rendered = machine_configs(&w.admin).get(&target).await.unwrap();
        assert_eq!(
            Some(on_disk),
            harness::cluster::render::file_contents(&rendered.data["spec"], KUBELET_CA_PATH)
        );
    }
    assert_eq!(w.rendered_count().await, 2, "one more rendered config on 4.12");
    let (cert, key) = w.client_from_current_signer().await;
    w.every_kubelet_accepts(&cert, &key).await;
    w.shutdown().await;
}
