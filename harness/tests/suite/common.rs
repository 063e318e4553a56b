//! The cluster side at controller level, for tests that drive its controllers one pass at a
//! time: a fake API server, a simulated clock, and the signer, operator and machine-config
//! controllers over a cluster installed from `fixtures/` in a starting state; and the set-up
//! of a run of one feature with an agent binary.

use fake_apiserver::FakeApiServer;
use harness::Profile;
use harness::cluster::install::install;
use harness::cluster::render::Templates;
use harness::cluster::{ClusterLog, MachineConfigController, Operator, SignerRotation};
use harness::pki::{Catalogue, SimClock, StartingState};
use harness::scenario::default_fixtures;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use std::sync::Arc;

pub const KUBELET_SIGNER_NS: &str = "openshift-kube-apiserver-operator";
pub const KUBELET_SIGNER: &str = "kube-apiserver-to-kubelet-signer";

pub struct Controllers {
    /// Held so the API server runs as long as the controllers do.
    #[allow(dead_code)]
    pub server: fake_apiserver::ServerHandle,
    pub client: kube::Client,
    pub clock: SimClock,
    pub signers: SignerRotation,
    pub operator: Operator,
    pub mcc: MachineConfigController,
    /// Stops the machine-config controller's Node watch with the controllers.
    _stop: tokio_util::sync::DropGuard,
}

impl Controllers {
    /// A cluster installed in the named starting state; no controller has run yet.
    pub async fn start(profile: Profile, state: &str, bootstrap_complete: bool) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server = FakeApiServer::builder().start().await.unwrap();
        let client = server.admin_client().await.unwrap();
        let fixtures = default_fixtures();
        let catalogue = Arc::new(Catalogue::load(&fixtures.join("signers.yaml")).unwrap());
        let states = StartingState::load_all(&fixtures.join("starting-states.yaml"), &catalogue).unwrap();
        let state = states.into_iter().find(|s| s.name == state).unwrap();
        let templates = Arc::new(Templates::load(&fixtures.join("templates.yaml")).unwrap());
        let (clock, log) = (SimClock::default(), ClusterLog::default());
        let signers = SignerRotation::new(client.clone(), catalogue, profile, clock.clone(), log.clone());
        install(
            &client,
            profile,
            &fixtures,
            &signers,
            &state,
            &server.ca_pem(),
            &harness::cluster::install::History {
                bootstrap_complete,
                upgraded_with_serving_ca: None,
            },
        )
        .await
        .unwrap();
        let operator = Operator::new(client.clone(), profile, clock.clone(), log.clone());
        let stop = tokio_util::sync::CancellationToken::new();
        let nodes = harness::cluster::NodeCache::spawn(client.clone(), stop.clone());
        let mcc = MachineConfigController::new(client.clone(), templates, profile, clock.clone(), log, nodes);
        Controllers {
            server,
            client,
            clock,
            signers,
            operator,
            mcc,
            _stop: stop.drop_guard(),
        }
    }

    /// Run the whole cluster side until a pass changes nothing.
    pub async fn settle(&self) {
        for _ in 0..20 {
            let mut changed = !self.signers.reconcile().await.unwrap().is_empty();
            changed |= self.operator.reconcile().await.unwrap();
            changed |= self.mcc.reconcile().await.unwrap();
            if !changed {
                return;
            }
        }
        panic!("the cluster side did not settle in 20 passes");
    }

    /// A ConfigMap's `ca-bundle.crt`.
    pub async fn bundle(&self, ns: &str, name: &str) -> String {
        let cm = Api::<ConfigMap>::namespaced(self.client.clone(), ns)
            .get(name)
            .await
            .unwrap();
        cm.data.unwrap()["ca-bundle.crt"].clone()
    }

    /// MCO's e2e forced rotation of the kubelet signer.
    pub async fn force_kubelet_signer_rotation(&self) {
        harness::cluster::force_rotation(&self.client, KUBELET_SIGNER_NS, KUBELET_SIGNER)
            .await
            .unwrap();
    }
}

/// A quiet 4.16 run of one feature (its text written to `<dir>/<file>`, reports under
/// `<dir>/report`) with `agent` as the agent binary on embedded nodes.
pub fn one_feature_with_agent(
    dir: &std::path::Path,
    file: &str,
    feature: &str,
    agent: std::path::PathBuf,
    args: &[&str],
    timeout: std::time::Duration,
) -> harness::runner::RunConfig {
    let path = dir.join(file);
    std::fs::write(&path, feature).unwrap();
    let mut config = harness::runner::RunConfig::new(vec![path], dir.join("report"));
    config.profiles = vec![Profile::Ocp416];
    config.agent = harness::scenario::AgentKind::Binary {
        path: agent,
        args: args.iter().map(|a| a.to_string()).collect(),
        node_tools: std::path::PathBuf::from(env!("CARGO_BIN_EXE_mco-node-tools")),
    };
    config.agent_timeout = timeout;
    config.quiet = true;
    config
}

/// What a run's Cucumber JSON says per scenario, keyed `file.feature: scenario name` (an Outline's
/// rows under one key, failed if any row failed): whether it passed, whether its verdict is
/// reported apart (`@mco-logs`, `@beyond-upstream`), and the first failure's words.
pub fn scenario_outcomes(
    cucumber_json: &std::path::Path,
) -> std::collections::BTreeMap<String, (bool, bool, String)> {
    let mut out = std::collections::BTreeMap::new();
    for feature in harness::runner::report::read_results(cucumber_json).unwrap() {
        let file = std::path::Path::new(&feature.uri)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        for s in feature.scenarios {
            let apart = s.tags.iter().any(|t| t == "mco-logs" || t == "beyond-upstream");
            let why = s
                .failure
                .map(|f| format!("line {}: {}: {}", f.line, f.step, f.message))
                .unwrap_or_default();
            let entry = out
                .entry(format!("{file}: {}", s.name))
                .or_insert((true, apart, String::new()));
            if s.failed {
                entry.0 = false;
                entry.2 = why;
            }
        }
    }
    out
}
