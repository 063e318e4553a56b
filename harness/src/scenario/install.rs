//! The cluster a scenario starts with: what it reads from `fixtures/`, the reference's cluster
//! side over it, the install, and what the bootstrap MCO renders when the scenario starts before
//! the bootstrap node hands over. `start` runs these stages in order.

use super::*;

/// What the scenario reads from `fixtures/`.
pub(super) struct Fixtures {
    pub catalogue: Arc<Catalogue>,
    pub state: StartingState,
    pub templates: Arc<Templates>,
}

impl Fixtures {
    pub(super) fn load(options: &ScenarioOptions) -> Result<Self, ScenarioError> {
        let catalogue =
            Arc::new(Catalogue::load(&options.fixtures.join("signers.yaml")).map_err(fixture_err)?);
        let states = StartingState::load_all(&options.fixtures.join("starting-states.yaml"), &catalogue)
            .map_err(fixture_err)?;
        let state = states
            .into_iter()
            .find(|s| s.name == options.starting_state)
            .ok_or_else(|| {
                fixture_err(format!(
                    "no starting state {:?} in fixtures/starting-states.yaml",
                    options.starting_state
                ))
            })?;
        let templates =
            Arc::new(Templates::load(&options.fixtures.join("templates.yaml")).map_err(fixture_err)?);
        Ok(Fixtures {
            catalogue,
            state,
            templates,
        })
    }
}

/// The reference's cluster side: the signer rotations, the operator, the machine-config
/// controller (unless an upstream one runs) and the node lifecycle, each on the scenario's clock.
pub(super) fn cluster_side(
    admin: &kube::Client,
    fixtures: &Fixtures,
    options: &ScenarioOptions,
    clock: &SimClock,
    log: &ClusterLog,
    stop: &CancellationToken,
) -> Arc<ClusterSide> {
    let profile = options.profile;
    let node_cache = crate::cluster::NodeCache::spawn(admin.clone(), stop.clone());
    let mcc = options.controller.is_none().then(|| {
        MachineConfigController::new(
            admin.clone(),
            fixtures.templates.clone(),
            profile,
            clock.clone(),
            log.clone(),
            node_cache.clone(),
        )
    });
    Arc::new(ClusterSide::new(
        crate::cluster::runner::Controllers {
            signers: SignerRotation::new(
                admin.clone(),
                fixtures.catalogue.clone(),
                profile,
                clock.clone(),
                log.clone(),
            ),
            operator: Operator::new(admin.clone(), profile, clock.clone(), log.clone()),
            mcc,
            lifecycle: NodeLifecycle::new(admin.clone(), clock.clone(), log.clone()),
        },
        log.clone(),
        clock.clone(),
        admin.clone(),
        node_cache,
    ))
}

/// Per pool, the rendered config the bootstrap MCO made and its spec.
pub(super) type BootstrapRenders = BTreeMap<String, (String, MachineConfigSpec)>;

/// Install the cluster (on a real kube-apiserver, after cleaning what the scenario before made)
/// and, when the scenario starts before the bootstrap node hands over, render what the bootstrap
/// MCO serves: upstream's own `bootstrap` when its controller runs, the reference's otherwise.
pub(super) async fn install_cluster(
    server: &endpoint::ApiServer,
    admin: &kube::Client,
    side: &ClusterSide,
    fixtures: &Fixtures,
    options: &ScenarioOptions,
    upgraded_ca: Option<&fake_apiserver::CertificateAuthority>,
) -> Result<BootstrapRenders, ScenarioError> {
    let profile = options.profile;
    if server.is_real() {
        // What the scenario before made goes first (it had the server to itself).
        crate::cluster::install::clean(admin, &options.fixtures).await?;
        crate::cluster::install::grant_daemon_rights(admin).await?;
    }
    install(
        admin,
        profile,
        &options.fixtures,
        &side.signers,
        &fixtures.state,
        &server.ca_pem(),
        &crate::cluster::install::History {
            bootstrap_complete: options.bootstrap_complete,
            upgraded_with_serving_ca: upgraded_ca.map(|ca| ca.cert_pem.clone()),
        },
    )
    .await?;
    Ok(match (&options.controller, options.bootstrap_complete) {
        (_, true) => BTreeMap::new(),
        (Some(upstream), false) => {
            let bundle = crate::cluster::kubelet_ca_bundle(profile, &side.operator.sources().await?)?;
            let dir = tempfile::tempdir().map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
            upstream
                .bootstrap_render(admin, &bundle, profile.payload_version(), dir.path())
                .await?
        }
        (None, false) => bootstrap_renders(admin, &fixtures.templates, profile, &side.operator).await?,
    })
}

/// What the bootstrap MCO renders for each pool (`pkg/operator/bootstrap.go`): the templates
/// over the installed ControllerConfig with the kubelet CA bundle of a cluster whose bootstrap
/// has not completed, merged and named as the render controller does. The in-cluster
/// controller must arrive at the same names (PR #3513), or nodes look for a config that does
/// not exist.
async fn bootstrap_renders(
    admin: &kube::Client,
    templates: &Templates,
    profile: Profile,
    operator: &crate::cluster::Operator,
) -> Result<BTreeMap<String, (String, MachineConfigSpec)>, ScenarioError> {
    let bundle = crate::cluster::kubelet_ca_bundle(profile, &operator.sources().await?)?;
    let cc = controller_configs(admin)
        .get("machine-config-controller")
        .await
        .map_err(|e| ClusterError::kube("controllerconfig".into(), e))?;
    let mut cc_spec = ControllerConfigSpec::of(&cc.data)
        .map_err(|e| fixture_err(format!("controllerconfig machine-config-controller: {e}")))?;
    cc_spec.other.insert(
        "kubeAPIServerServingCAData".into(),
        base64::engine::general_purpose::STANDARD.encode(bundle).into(),
    );
    let mut out = BTreeMap::new();
    for role in &templates.roles {
        let templated = crate::cluster::render::template_machine_config(templates, profile, role, &cc_spec);
        let templated = MachineConfig::from_json(&templated).map_err(fixture_err)?;
        let spec = crate::cluster::render::merge_machine_configs(&[templated]);
        out.insert(
            role.clone(),
            (crate::cluster::render::rendered_name(role, &spec), spec),
        );
    }
    Ok(out)
}
