//! The certificate writer (MCO `pkg/daemon/certificate_writer.go`, release-4.14 and
//! release-4.16; what differs between them is the profile's [`CertificateWriter`] row): the
//! daemon watches ControllerConfig `machine-config-controller` and writes the CA files itself,
//! whatever the pool's `paused` says, with no new rendered config and no reboot. MachineConfig
//! updates leave those files alone (`skipCertificateWrite`).
//!
//! On every ControllerConfig event: if the node's `lastSyncedControllerConfigResourceVersion`
//! differs from the ControllerConfig's resourceVersion (or, on 4.16, `service-ca-rotate` is
//! "true"), write kubelet-ca.crt and the cloud CA (a trailing newline added, existing modes
//! kept, new files 0644); then annotate the node with the resourceVersion and log
//! `Certificate was synced from controllerconfig resourceVersion N` — on 4.16 every time, as
//! upstream does (its line 303), which is why the line repeats; on 4.14 only after a write.
//!
//! On 4.16, with `service-ca-rotate: "true"` that this node has not acted on, it compares
//! `kubeconfig-data`'s CA with `/etc/kubernetes/kubeconfig`'s: certificates the configmap adds
//! get `/etc/kubernetes/kubeconfig` rewritten, and unless every added one is a localhost or
//! load-balancer serving signer, the kubelet restarts: `systemctl stop kubelet`, the CA in
//! `/var/lib/kubelet/kubeconfig` rewritten, `daemon-reload`, `start`.
//!
//! # Layout
//! - `kubeconfig`: the serving CA from `kubeconfig-data` against the node's kubeconfig, and
//!   whether the kubelet restarts now.
//! - `registry`: the internal registry's pull secret and the image registry CAs.
//! - `step`: a sync step's error, and how it writes a file.

mod kubeconfig;
mod registry;
mod step;

pub use kubeconfig::{DEFERRED_SIGNERS, KubeconfigPlan, plan_kubeconfig};
pub use registry::{INTERNAL_REGISTRY_PULL_SECRET, MOUNTED_PULL_SECRETS, REGISTRY_CA_DIR};

use super::AgentEnv;
use crate::mco::api::{CONTROLLER_CONFIG, controller_configs};
use crate::mco::controller_config::ControllerConfigSpec;
use crate::mco::{
    KUBELET_CA_PATH, LAST_OBSERVED_SERVER_CA, LAST_SYNCED_CONTROLLER_CONFIG, REASON, SERVICE_CA_ROTATE,
    STATE, STATE_DEGRADED, STATE_DONE,
};
use crate::node::seed::{KUBELET_KUBECONFIG, NODE_KUBECONFIG};
use crate::profile::{CertificateWriter, WriterAnnotates};
use futures::StreamExt;
use kube::api::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};
use kubeconfig::{kubeconfig_ca, kubeconfig_data, with_kubeconfig_ca};
use registry::{first_role, pull_secret, sync_registry_cas};
use serde_json::{Value, json};
use step::{SyncError, write_to_disk};
use tokio_util::sync::CancellationToken;

pub use crate::mco::CLOUD_CA_PATH;

/// Files the certificate writer owns, and the ControllerConfig spec field each comes from.
pub const CERTIFICATE_FILES: &[(&str, &str)] = &[
    (KUBELET_CA_PATH, "kubeAPIServerServingCAData"),
    (CLOUD_CA_PATH, "cloudProviderCAData"),
];

/// Sync the ControllerConfig's certificates to the node until `stop`.
pub async fn run(env: &AgentEnv, writer: CertificateWriter, stop: CancellationToken) {
    let config = watcher::Config::default().fields(&format!("metadata.name={CONTROLLER_CONFIG}"));
    let mut events = watcher(controller_configs(&env.client), config)
        .default_backoff()
        .applied_objects()
        // Fused: `newest_ready` may see the end, and the loop's next poll must not panic.
        .fuse()
        .boxed();
    let mut progress = Progress {
        failed: None,
        retry_in: RETRY_BASE,
        degraded: None,
        synced_once: false,
    };
    let mut node_changes = env.node.changes();
    loop {
        let cc = tokio::select! {
            _ = stop.cancelled() => return,
            changed = node_changes.changed(), if writer.internal_registry_pull_secret => {
                let node = match changed {
                    Ok(()) => node_changes.borrow_and_update().clone(),
                    Err(_) => return,
                };
                progress.role_checked(env, node.as_deref()).await;
                continue;
            }
            _ = tokio::time::sleep(progress.retry_in), if progress.failed.is_some() => {
                progress.retry_in = (progress.retry_in * 2).clamp(RETRY_BASE, RETRY_MAX);
                progress.failed.take().expect("guarded by is_some")
            }
            event = events.next() => match event {
                Some(Ok(cc)) => {
                    // The newest ControllerConfig replaces a failed older one: never sync back.
                    progress.failed = None;
                    progress.retry_in = RETRY_BASE;
                    newest_ready(env, &mut events, cc)
                }
                Some(Err(e)) => {
                    report_watch_error(env, &e);
                    continue;
                }
                None => return,
            },
        };
        // A poller lists at start and then only on its timer.
        if !env.faults().before_sync(&stop, progress.synced_once).await {
            return;
        }
        let synced = tokio::select! {
            _ = stop.cancelled() => return,
            synced = sync(env, writer, &cc) => synced,
        };
        progress.synced(env, cc, synced).await;
    }
}

/// What the writer carries from one sync to the next.
struct Progress {
    /// A failed sync's ControllerConfig: tried again with the newest ControllerConfig, backing
    /// off as upstream's rate-limited ccQueue does (5 ms doubling), and at once when a newer one
    /// arrives.
    failed: Option<DynamicObject>,
    retry_in: std::time::Duration,
    /// The reason this writer marked the node Degraded with (upstream `updateErrorState`).
    degraded: Option<String>,
    synced_once: bool,
}

impl Progress {
    /// Upstream's Node worker checks the role on every sync of the Node (release-4.16
    /// daemon.go:759): see `first_role`.
    async fn role_checked(&mut self, env: &AgentEnv, node: Option<&k8s_openapi::api::core::v1::Node>) {
        match node.map(|node| first_role(env, node)) {
            Some(Err(reason)) => {
                mark_degraded(env, &reason).await;
                self.degraded = Some(reason);
            }
            // The role is back. Upstream's Node worker then passes the role check and finds the
            // node Degraded on the config it runs: it logs "current+desiredConfig is … but state
            // is Degraded" and runs the update again, which ends Done (release-4.16 daemon.go
            // prepUpdateFromCluster, update.go). A failed sync of the writer's is tried again
            // now instead.
            Some(Ok(_)) if self.degraded.is_some() => {
                if self.failed.is_some() {
                    self.retry_in = std::time::Duration::ZERO;
                } else if let Some(reason) = self.degraded.take() {
                    clear_own_degraded(env, &reason).await;
                }
            }
            _ => {}
        }
    }

    /// The end of a sync of `cc`: the node's Degraded cleared, or the sync to try again.
    async fn synced(&mut self, env: &AgentEnv, cc: DynamicObject, synced: Result<(), SyncError>) {
        match synced {
            Ok(()) => {
                self.synced_once = true;
                if let Some(reason) = self.degraded.take() {
                    clear_own_degraded(env, &reason).await;
                }
            }
            Err(SyncError::Transient(e)) => {
                env.log(&format!("Error syncing certificates from controllerconfig: {e}"));
                self.failed = Some(cc);
            }
            Err(SyncError::Node(reason)) => {
                env.log(&format!(
                    "Error syncing certificates from controllerconfig: {reason}"
                ));
                mark_degraded(env, &reason).await;
                self.degraded = Some(reason);
                self.failed = Some(cc);
            }
        }
    }
}

/// The newest of the ControllerConfig events already delivered: upstream's handlers only put
/// the key on `ccQueue`, whose worker reads the lister's copy when it gets to it, so events that
/// arrive before the worker does are one sync of the newest (client-go's workqueue holds a key
/// once). Two writes in quick succession (the operator's spec, then the controller's
/// `status.controllerCertificates`) so cost one sync where both arrived before the daemon got
/// to them (at 10,000 nodes the second still comes after: 2.00 syncs per node, the scale
/// bench's count). A watch error among
/// them is reported as any other; the end of the stream is left for the next `next()`.
fn newest_ready(
    env: &AgentEnv,
    events: &mut futures::stream::BoxStream<'static, Result<DynamicObject, watcher::Error>>,
    mut newest: DynamicObject,
) -> DynamicObject {
    use futures::FutureExt;
    while let Some(Some(event)) = events.next().now_or_never() {
        match event {
            Ok(cc) => newest = cc,
            Err(e) => report_watch_error(env, &e),
        }
    }
    newest
}

/// A failed ControllerConfig watch, in the daemon's log and as client-go's reflector says it.
fn report_watch_error(env: &AgentEnv, e: &watcher::Error) {
    env.log(&format!("controllerconfig watch: {e}"));
    env.aux.report(&format!(
        "Failed to watch *v1.ControllerConfig: {}",
        crate::agent::auxiliary::error_chain(e)
    ));
}

/// The ccQueue's backoff (client-go `DefaultControllerRateLimiter`: 5 ms doubling), capped here
/// at a second where upstream's stops at 1000 s, so a scenario's deadline is never spent
/// waiting; the step that waits for a retry allows upstream's 1000 s.
const RETRY_BASE: std::time::Duration = std::time::Duration::from_millis(5);
const RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// `systemctl` on the node; the error says what it answered.
pub(super) async fn systemctl(env: &AgentEnv, args: &[&str]) -> Result<(), String> {
    let out = env.host.systemctl(args).await?;
    if out.exit_code != 0 {
        return Err(format!(
            "systemctl {}: exit {}: {}",
            args.join(" "),
            out.exit_code,
            out.stderr.trim()
        ));
    }
    Ok(())
}

/// Whether the node's state and reason annotations are these (as the node informer has them).
async fn node_says(env: &AgentEnv, state: &str, reason: &str) -> bool {
    let Some(node) = env.node.get().await else {
        return false;
    };
    let a = node.metadata.annotations.as_ref();
    let get = |k: &str| a.and_then(|a| a.get(k)).map(String::as_str);
    get(STATE) == Some(state) && get(REASON) == Some(reason)
}

/// Degraded with `reason`, marked again whenever the node does not say so (someone else may
/// have changed its state since).
async fn mark_degraded(env: &AgentEnv, reason: &str) {
    if !node_says(env, STATE_DEGRADED, reason).await {
        env.log(&format!("Marking Degraded due to: {reason}"));
        set_state(env, STATE_DEGRADED, reason).await;
    }
}

/// Back to Done, but only from the Degraded this writer set: a Degraded from a failed update
/// or config drift is not the writer's to clear.
async fn clear_own_degraded(env: &AgentEnv, reason: &str) {
    if node_says(env, STATE_DEGRADED, reason).await {
        set_state(env, STATE_DONE, "").await;
    }
}

async fn set_state(env: &AgentEnv, state: &str, reason: &str) {
    let _ = env.annotate_node(json!({STATE: state, REASON: reason})).await;
}

async fn sync(env: &AgentEnv, writer: CertificateWriter, cc: &DynamicObject) -> Result<(), SyncError> {
    let serving_ca_rotation = env.profile.traits().serving_ca_rotation;
    // Upstream reads `dn.node`, the node informer's copy, and so does this writer.
    let node = env
        .node
        .get()
        .await
        .ok_or_else(|| format!("node {}: not seen yet", env.node_name))?;
    let annotations = node.metadata.annotations.clone().unwrap_or_default();
    let rv = cc.metadata.resource_version.clone().unwrap_or_default();
    let rotate = serving_ca_rotation
        && cc
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SERVICE_CA_ROTATE))
            .is_some_and(|v| v == "true");
    let rotate_value = cc
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SERVICE_CA_ROTATE))
        .cloned()
        .unwrap_or_default();
    let observed = annotations
        .get(LAST_OBSERVED_SERVER_CA)
        .cloned()
        .unwrap_or_default();
    let mut restart_kubelet = None;
    let changed = annotations.get(LAST_SYNCED_CONTROLLER_CONFIG) != Some(&rv);
    if changed || rotate {
        let spec = ControllerConfigSpec::of(&cc.data)
            .map_err(|e| SyncError::Node(format!("controllerconfig spec: {e}")))?;
        let mut path_to_data = certificate_files(env, writer, &spec, &node)?;
        if rotate && observed != "true" && env.faults().rotates_serving_ca() {
            restart_kubelet = plan_serving_ca(env, &mut path_to_data).await?;
        }
        if env.faults().annotates_before_writing() {
            annotate_synced(env, &rv, serving_ca_rotation, &observed, &rotate_value).await?;
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        let kubelet_ca_before = env.faults().kubelet_ca_before_writing();
        for (path, data) in path_to_data {
            write_to_disk(env, &path, data).map_err(|e| format!("{path}: {e}"))?;
        }
        env.faults().after_certificates_written(kubelet_ca_before).await?;
        // The restart comes before anything else that can fail: a retry compares against the
        // kubeconfig just written and would not restart again.
        if let Some(server_ca) = restart_kubelet {
            restart_kubelet_trusting(env, &server_ca).await?;
        }
        sync_registry_cas(env, &spec, writer.missing_registry_ca_dir)?;
    }
    let annotate = match writer.annotates {
        WriterAnnotates::EveryEvent => true,
        WriterAnnotates::WhenResourceVersionChanged => changed,
    };
    if annotate {
        if !env.faults().annotates_before_writing() {
            annotate_synced(env, &rv, serving_ca_rotation, &observed, &rotate_value).await?;
        }
        env.log(&format!(
            "Certificate was synced from controllerconfig resourceVersion {rv}"
        ));
    }
    Ok(())
}

/// The certificate files a sync writes, with their data from the ControllerConfig, and the
/// internal registry pull secret where the release writes it.
fn certificate_files(
    env: &AgentEnv,
    writer: CertificateWriter,
    spec: &ControllerConfigSpec,
    node: &k8s_openapi::api::core::v1::Node,
) -> Result<Vec<(String, Vec<u8>)>, SyncError> {
    let mut path_to_data: Vec<(String, Vec<u8>)> = Vec::new();
    for (path, field) in CERTIFICATE_FILES {
        if !env.faults().syncs_field(field) {
            continue;
        }
        let data = spec
            .data(field)
            .map_err(|e| SyncError::Node(format!("controllerconfig spec.{field}: {e}")))?;
        path_to_data.push((path.to_string(), data));
    }
    if writer.internal_registry_pull_secret
        && let Some(secret) = pull_secret(env, spec, node)?
    {
        path_to_data.push((INTERNAL_REGISTRY_PULL_SECRET.to_string(), secret));
    }
    Ok(path_to_data)
}

/// The kubeconfig half of a serving-CA rotation: the node kubeconfig to write when
/// `kubeconfig-data` brings CAs it lacks (added to `path_to_data`), and the CA to restart the
/// kubelet with, unless the restart is deferred. As upstream, a ConfigMap that cannot be read
/// rules out the kubeconfig update and the restart, not the rest of the sync.
async fn plan_serving_ca(
    env: &AgentEnv,
    path_to_data: &mut Vec<(String, Vec<u8>)>,
) -> Result<Option<String>, SyncError> {
    let server_ca = match kubeconfig_data(env).await {
        Err(e) => {
            env.log(&format!(
                "cannot read the kube-apiserver serving CA for the kubeconfigs: {e}"
            ));
            return Ok(None);
        }
        Ok(server_ca) => server_ca,
    };
    let on_disk = kubeconfig_ca(&env.path(NODE_KUBECONFIG))?;
    let plan = plan_kubeconfig(&on_disk, &server_ca);
    for line in &plan.log {
        env.log_system(line);
    }
    // Upstream sets deferKubeletRestart whenever it reads kubeconfig-data: true unless an added
    // CA is one it does not skip.
    env.aux.set_deferred(plan.defer_restart);
    if !plan.rewrite {
        return Ok(None);
    }
    let updated = with_kubeconfig_ca(&env.path(NODE_KUBECONFIG), &server_ca)?;
    path_to_data.push((NODE_KUBECONFIG.to_string(), updated));
    let defer = env.faults().defers_kubelet_restart(plan.defer_restart);
    Ok((!defer && !on_disk.trim().is_empty()).then_some(server_ca))
}

/// Stop the kubelet, give its kubeconfig `server_ca`, and start it again.
async fn restart_kubelet_trusting(env: &AgentEnv, server_ca: &str) -> Result<(), SyncError> {
    env.log_system("restarting kubelet due to server-ca rotation");
    systemctl(env, &["stop", "kubelet"]).await?;
    let updated = with_kubeconfig_ca(&env.path(KUBELET_KUBECONFIG), server_ca)?;
    write_to_disk(env, KUBELET_KUBECONFIG, updated).map_err(|e| format!("{KUBELET_KUBECONFIG}: {e}"))?;
    systemctl(env, &["daemon-reload"]).await?;
    systemctl(env, &["start", "kubelet"]).await?;
    Ok(())
}

/// The node annotations that tell the ControllerConfig was synced.
async fn annotate_synced(
    env: &AgentEnv,
    rv: &str,
    serving_ca_rotation: bool,
    observed: &str,
    rotate_value: &str,
) -> Result<(), SyncError> {
    let Some(rv) = env.faults().synced_resource_version(rv) else {
        return Ok(());
    };
    let mut set = serde_json::Map::new();
    set.insert(LAST_SYNCED_CONTROLLER_CONFIG.into(), json!(rv));
    if serving_ca_rotation && observed != rotate_value {
        set.insert(LAST_OBSERVED_SERVER_CA.into(), json!(rotate_value));
    }
    env.annotate_node(Value::Object(set))
        .await
        .map_err(|e| format!("node {}: {e}", env.node_name))?;
    Ok(())
}
