//! `Scenario::start`: from `ScenarioOptions` to a running scenario, in stages, each a function
//! of its own: the API server and the trust around it ([`Trust`]), the fixtures, the cluster side
//! and its install with the bootstrap MCO's renders (those three are `install`'s), the upstream
//! controller and server when
//! asked for, the nodes (each node's own start is `join`'s), what runs in the background, and the
//! wait until every node has synced once. A start that fails leaves nothing running.

use super::install::{BootstrapRenders, Fixtures, cluster_side, install_cluster};
use super::*;

/// The certificates a scenario's clients trust, made before anything connects.
struct Trust {
    /// The serving CA a rotation of the API server's serving certificate moves to, made now so
    /// that the cluster side and the agents trust it from the start, as OpenShift's clients
    /// trust the whole serving CA bundle; only the kubelets' kubeconfigs hold just the current
    /// CA, as a node's do until something rewrites them.
    next_serving: fake_apiserver::ServingCert,
    /// What the agents trust: the current serving CA and the next.
    agents: String,
    /// An upgraded cluster's signer made in the cluster since install (named by the options).
    upgraded_ca: Option<fake_apiserver::CertificateAuthority>,
    /// The cluster's own clients (operators, controllers, the harness as `oc`) also trust every
    /// serving CA a step adds and then serves from, as OpenShift's operators read the serving CA
    /// bundle again: the API server presents such a CA cross-signed by this root, which only
    /// they trust, so nodes and agents still judge the CA on its own.
    cluster_root: fake_apiserver::CertificateAuthority,
    /// The admin kubeconfig: the agents' trust and the cluster root.
    admin_kubeconfig: String,
}

impl Trust {
    fn make(server: &endpoint::ApiServer, options: &ScenarioOptions) -> Result<Self, ScenarioError> {
        let api = |e: String| ScenarioError::ApiServer(e);
        let next_serving = fake_apiserver::ServingCert::generate(
            "fake-apiserver-serving-ca-2",
            fake_apiserver::DEFAULT_SERVING_HOSTS,
        )
        .map_err(|e| api(e.to_string()))?;
        let agents = format!("{}{}", server.ca_pem(), next_serving.ca_pem);
        let upgraded_ca = options
            .upgraded_with_serving_signer
            .as_deref()
            .map(fake_apiserver::CertificateAuthority::generate)
            .transpose()
            .map_err(|e| api(e.to_string()))?;
        let cluster_root = fake_apiserver::CertificateAuthority::generate("mco-conformance cluster trust")
            .map_err(|e| api(e.to_string()))?;
        let admin_trusted = format!("{agents}{}", cluster_root.cert_pem);
        let admin_kubeconfig =
            fake_apiserver::kubeconfig(server.url(), &admin_trusted, server.admin_identity());
        Ok(Trust {
            next_serving,
            agents,
            upgraded_ca,
            cluster_root,
            admin_kubeconfig,
        })
    }
}

/// The cluster's admin client. The cluster side and the observers read every node at once; with
/// thousands of light nodes, HTTP/1.1 would open a connection per read in flight (and keep it).
async fn admin_client(backend: &NodeBackend, kubeconfig: &str) -> Result<kube::Client, ScenarioError> {
    match backend {
        NodeBackend::Light => crate::h2_client::client_from_kubeconfig(kubeconfig)
            .await
            .map(|(client, _)| client)
            .map_err(ScenarioError::ApiServer),
        _ => fake_apiserver::client_from_kubeconfig(kubeconfig)
            .await
            .map_err(|e| ScenarioError::ApiServer(e.to_string())),
    }
}

/// An upstream component the scenario runs, and the directory of its files and log.
type Running<T> = Option<(T, tempfile::TempDir)>;

/// Start upstream's machine-config-controller, when one is asked for, and wait until it has acted
/// on what the API holds.
async fn start_upstream_controller(
    options: &ScenarioOptions,
    admin: &kube::Client,
    admin_kubeconfig: &str,
) -> Result<Running<crate::cluster::upstream::RunningController>, ScenarioError> {
    let Some(upstream) = &options.controller else {
        return Ok(None);
    };
    let dir = tempfile::tempdir().map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
    let running = upstream
        .start(
            admin,
            admin_kubeconfig,
            options.profile.payload_version(),
            dir.path(),
        )
        .await?;
    eventually(options.deadline, || crate::cluster::upstream::caught_up(admin))
        .await
        .map_err(|e| {
            ScenarioError::NotConverged(format!(
                "the upstream machine-config-controller: {e}\nits log:\n{}",
                running.tail(20)
            ))
        })?;
    Ok(Some((running, dir)))
}

/// Start upstream's machine-config-server, when one is asked for.
async fn start_upstream_server(
    options: &ScenarioOptions,
    server: &endpoint::ApiServer,
    admin_kubeconfig: &str,
) -> Result<Running<crate::cluster::upstream_server::RunningServer>, ScenarioError> {
    let Some(upstream) = &options.server else {
        return Ok(None);
    };
    let dir = tempfile::tempdir().map_err(|e| ScenarioError::ApiServer(e.to_string()))?;
    let running = upstream
        .start(
            admin_kubeconfig,
            server.url(),
            &server.ca_pem(),
            dir.path(),
            // Its informers sync before it listens; on a loaded host that takes longer than a
            // step's convergence, and no verdict rests on it.
            options
                .deadline
                .max(crate::cluster::upstream_server::START_DEADLINE),
        )
        .await?;
    Ok(Some((running, dir)))
}

/// Every node the options ask for, named `<role>-<i>`, with what the machine-config server
/// serves its pool.
async fn plan_nodes(
    options: &ScenarioOptions,
    admin: &kube::Client,
    bootstrap: &BootstrapRenders,
    mcs: &Running<crate::cluster::upstream_server::RunningServer>,
) -> Result<Vec<(String, String, crate::cluster::server::Served)>, ScenarioError> {
    let profile = options.profile;
    let mut planned = Vec::new();
    for (role, count) in &options.nodes {
        let served = match (bootstrap.get(role), mcs) {
            // Nodes boot with what the bootstrap MCO served, whatever the cluster renders.
            (Some((name, spec)), _) => {
                crate::cluster::server::serve_config(admin, profile, name.clone(), spec.clone()).await?
            }
            (None, Some((running, _))) => running.serve(role).await?,
            (None, None) => crate::cluster::server::serve(admin, profile, role).await?,
        };
        // An upgraded cluster's nodes were served at install, before kubeconfig-data existed:
        // their kubeconfigs trust the bootstrap token's CA, not what the server would build from
        // kubeconfig-data now.
        let served = if options.upgraded_with_serving_signer.is_some() {
            crate::cluster::server::Served {
                kubeconfig_ca: None,
                ..served
            }
        } else {
            served
        };
        for i in 0..*count {
            planned.push((format!("{role}-{i}"), role.clone(), served.clone()));
        }
    }
    Ok(planned)
}

/// Every planned node starts, is seeded and boots at once (container nodes take their turn at
/// the start limit); the nodes keep the order they were planned in. A node that fails to start
/// fails the scenario, and those that started are shut down, or their services would run on
/// (and keep their roots) for as long as the process does.
async fn start_nodes(
    start: &join::NodeStart<'_>,
    planned: &[(String, String, crate::cluster::server::Served)],
) -> Result<Vec<Arc<dyn Node>>, ScenarioError> {
    let starts: Vec<_> = planned
        .iter()
        .map(|(name, role, served)| start.start(name, role, served))
        .collect();
    let mut nodes = Vec::new();
    let mut failed = None;
    for started in futures::future::join_all(starts).await {
        match started {
            Ok(node) => nodes.push(node),
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    match failed {
        Some(e) => {
            for node in &nodes {
                node.shutdown().await;
            }
            Err(e)
        }
        None => Ok(nodes),
    }
}

/// Where the machine-config controller serves `/metrics`: the reference's, served from now on,
/// or upstream's own.
async fn metrics_endpoint(
    side: &ClusterSide,
    controller: &Running<crate::cluster::upstream::RunningController>,
    stop: &CancellationToken,
) -> Result<std::net::SocketAddr, ScenarioError> {
    match (&side.mcc, controller) {
        (Some(mcc), _) => mcc
            .metrics()
            .serve(stop.clone())
            .await
            .map_err(|e| ScenarioError::ApiServer(format!("serving the controller's metrics: {e}"))),
        (None, Some((running, _))) => Ok(running.metrics),
        (None, None) => Err(ScenarioError::ApiServer(
            "no machine-config controller runs".into(),
        )),
    }
}

/// What runs beside the steps until the scenario stops: the watches that keep the nodes' and
/// pools' history, the CSR approver, and the cluster side's own loop.
fn spawn_background(
    admin: &kube::Client,
    server: &endpoint::ApiServer,
    side: &Arc<ClusterSide>,
    clock: &SimClock,
    log: &ClusterLog,
    stop: &CancellationToken,
) -> (node_history::NodeHistory, pool_history::PoolHistory) {
    let node_history = node_history::NodeHistory::spawn(admin.clone(), stop.clone());
    let pool_history = pool_history::PoolHistory::spawn(admin.clone(), stop.clone());
    tokio::spawn(crate::cluster::csr::run(
        admin.clone(),
        server.client_ca().clone(),
        clock.clone(),
        log.clone(),
        stop.clone(),
    ));
    side.clone().spawn(stop.clone());
    (node_history, pool_history)
}

impl Scenario {
    /// The stages in order: the API server and the trust around it, the fixtures, the cluster
    /// side and its install (with the bootstrap render), the upstream controller and server when
    /// asked for, the nodes, the observers; then the wait until every node has synced once.
    pub async fn start(mut options: ScenarioOptions) -> Result<Self, ScenarioError> {
        crate::interrupt::check().map_err(ScenarioError::NotConverged)?;
        // Every wait grows with the nodes there are to wait for (see `SYNC_BOUND_PER_NODE`).
        let planned: usize = options.nodes.iter().map(|(_, n)| n).sum();
        options.deadline +=
            sync_bound::SYNC_BOUND_PER_NODE.saturating_mul(u32::try_from(planned).unwrap_or(u32::MAX));
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server =
            endpoint::ApiServer::start(&options.endpoint, options.profile.node_authorizer_selectors())
                .await
                .map_err(ScenarioError::ApiServer)?;
        let trust = Trust::make(&server, &options)?;
        let admin = admin_client(&options.backend, &trust.admin_kubeconfig).await?;
        let fixtures = Fixtures::load(&options)?;
        let (clock, log) = (SimClock::default(), ClusterLog::default());
        // Everything the scenario runs in the background stops with it; until the scenario is
        // made, a start that fails stops it on its way out.
        let stop = CancellationToken::new();
        let stop_on_failure = stop.clone().drop_guard();
        let side = cluster_side(&admin, &fixtures, &options, &clock, &log, &stop);
        let upgraded = trust.upgraded_ca.as_ref();
        let bootstrap = install_cluster(&server, &admin, &side, &fixtures, &options, upgraded).await?;
        side.settle().await?;
        let controller = start_upstream_controller(&options, &admin, &trust.admin_kubeconfig).await?;
        let mcs = start_upstream_server(&options, &server, &trust.admin_kubeconfig).await?;
        let agent = join::agent_identity(&server)?;
        let light = match options.backend {
            NodeBackend::Light => Some(join::light_clients(&server, &trust.agents, &agent).await?),
            _ => None,
        };
        let planned = plan_nodes(&options, &admin, &bootstrap, &mcs).await?;
        let start = join::NodeStart {
            options: &options,
            server: &server,
            admin: &admin,
            agent: &agent,
            clock: clock.clone(),
            agent_trust: &trust.agents,
            light: light.as_ref(),
        };
        let nodes = start_nodes(&start, &planned).await?;
        let (node_history, pool_history) = spawn_background(&admin, &server, &side, &clock, &log, &stop);
        let metrics_addr = metrics_endpoint(&side, &controller, &stop).await?;
        let timeline = options.timeline.then(Default::default);
        stop_on_failure.disarm();
        let scenario = Scenario {
            options,
            server,
            admin,
            clock,
            side,
            nodes,
            log,
            stop,
            next_serving: std::sync::Mutex::new(Some(trust.next_serving)),
            cluster_root: trust.cluster_root,
            added_serving: std::sync::Mutex::new(trust.upgraded_ca.into_iter().collect()),
            metrics_addr,
            bootstrap_rendered: bootstrap
                .into_iter()
                .map(|(pool, (name, _))| (pool, name))
                .collect(),
            prometheus: std::sync::Mutex::new(Default::default()),
            node_history,
            pool_history,
            slowest_sync_ms: std::sync::atomic::AtomicU64::new(0),
            catalogue: fixtures.catalogue,
            agent_trust: trust.agents,
            timeline,
            light,
            controller,
            mcs,
        };
        scenario.until_ready().await?;
        Ok(scenario)
    }

    /// Wait until every node has synced once and the observers have their first look; a
    /// scenario that never becomes ready is shut down, with the nodes' own words on why.
    async fn until_ready(&self) -> Result<(), ScenarioError> {
        let ready = async {
            self.await_kubelets().await?;
            self.await_first_sync().await?;
            self.scrape_metrics().await?;
            self.record_timeline().await;
            self.pools_updated_at_start().await;
            self.pools_shown_now().await?;
            self.pool_history.mark_started();
            Ok(())
        };
        if let Err(e) = ready.await {
            // The nodes' own words on why (an agent that never synced says so in its journal),
            // read before nothing of a scenario that never became ready may outlive it.
            let journals = self.journal_tails(20).await;
            self.shutdown().await;
            return Err(match journals {
                j if j.is_empty() => e,
                j => ScenarioError::NotConverged(format!("{e}\n{j}")),
            });
        }
        Ok(())
    }
}
