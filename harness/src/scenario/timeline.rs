//! A scenario's timeline for the reports (`--html`, `--report`): what changed, when, in
//! simulated time. After the cluster starts and after every convergence (each clock stop, each
//! change step), the scenario looks at what a user can see — every signer's certificate, each
//! Node's annotations and boot id, each node's kubelet-ca.crt, each kubelet's TLS verdict on
//! the kube-apiserver's current kubelet client certificate (what `oc logs` needs), the
//! paused-pool alerts — and records what differs from the last look.
//!
//! Recording costs API reads and a TLS handshake per node at every stop, so it is on only when
//! a report that shows it is asked for (`ScenarioOptions::timeline`). What it cannot show: a
//! change that came and went between two looks.

use super::*;
use crate::prometheus::{AlertState, Severity};

pub use super::timeline_log::{Timeline, TimelineEvent};

/// The subjects' common names of a PEM bundle, in order.
fn bundle_names(pem: &[u8]) -> Vec<String> {
    crate::pki::subjects(&String::from_utf8_lossy(pem)).unwrap_or_default()
}

/// What one look at the cluster and the nodes read.
struct Look {
    signers: Vec<(String, IssuedCert)>,
    nodes: Vec<NodeObject>,
    /// Each node's kubelet-ca.crt.
    kubelet_cas: Vec<(String, Vec<u8>)>,
    /// Each node's kubelet's verdict: node, kind, value, sentence.
    verdicts: Vec<(String, &'static str, String, String)>,
}

/// A Node object's annotations and boot id, each a lane of that node's line: the config it
/// runs, its state and reason, the ControllerConfig it synced, its boots.
fn record_node(t: &mut Timeline, now: time::OffsetDateTime, node: &NodeObject) {
    let name = node.metadata.name.clone().unwrap_or_default();
    let annotations = node.metadata.annotations.clone().unwrap_or_default();
    let get = |k: &str| annotations.get(k).cloned().unwrap_or_default();
    let config = get(crate::mco::CURRENT_CONFIG);
    if !config.is_empty() {
        t.saw(now, &name, "config", config.clone(), format!("runs {config}"));
    }
    let state = get(crate::mco::STATE);
    if !state.is_empty() {
        let reason = get(crate::mco::REASON);
        let text = if reason.is_empty() {
            format!("state {state}")
        } else {
            format!("state {state}: {reason}")
        };
        t.saw(now, &name, "state", state, text);
    }
    let synced = get(crate::mco::LAST_SYNCED_CONTROLLER_CONFIG);
    if !synced.is_empty() {
        t.saw(
            now,
            &name,
            "controllerconfig",
            synced.clone(),
            format!("synced ControllerConfig resourceVersion {synced}"),
        );
    }
    let boot = node
        .status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.boot_id.clone())
        .unwrap_or_default();
    if !boot.is_empty() {
        let first = t.last_seen(&name, "reboot").is_none();
        let text = if first { "booted" } else { "rebooted" };
        t.saw(now, &name, "reboot", boot, text.to_string());
    }
}

impl Scenario {
    /// Look at the cluster and the nodes and record what changed since the last look.
    pub(super) async fn record_timeline(&self) {
        let Some(timeline) = &self.timeline else { return };
        let now = self.clock.now();
        let look = self.look().await;
        let mut t = timeline.lock().unwrap_or_else(|p| p.into_inner());
        t.started.get_or_insert(now);
        t.last_look = Some(now);
        for (name, cert) in look.signers {
            let fresh = t.saw(now, &name, "issued", cert.pem.clone(), cert.common_name.clone());
            if fresh && let Some(e) = t.events.last_mut() {
                e.not_before = Some(cert.not_before);
                e.not_after = Some(cert.not_after);
            }
        }
        for node in &look.nodes {
            record_node(&mut t, now, node);
        }
        for (name, bytes) in look.kubelet_cas {
            let names = bundle_names(&bytes);
            let value = String::from_utf8_lossy(&bytes).into_owned();
            let text = format!("kubelet-ca.crt holds {}: {}", names.len(), names.join(", "));
            t.saw(now, &name, "kubelet-ca", value, text);
        }
        for (name, kind, value, text) in look.verdicts {
            t.saw_as(now, &name, "kubelet-tls", kind, value, text);
        }
        drop(t);
        self.record_alerts(timeline, now);
    }

    /// What one look reads: the catalogue's signers, the Node objects, each node's
    /// kubelet-ca.crt and its kubelet's verdict. What cannot be read is left out of this look.
    async fn look(&self) -> Look {
        let mut signers = Vec::new();
        for (name, namespace) in self.catalogue_signers() {
            if let Ok(cert) = self.certificate(&namespace, &name).await {
                signers.push((name, cert));
            }
        }
        let nodes = Api::<NodeObject>::all(self.admin.clone())
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        let mut kubelet_cas = Vec::new();
        for node in &self.nodes {
            if let Ok(bytes) = node.read(crate::mco::KUBELET_CA_PATH).await {
                kubelet_cas.push((node.name().to_string(), bytes));
            }
        }
        let verdicts = self.kubelet_verdicts().await;
        Look {
            signers,
            nodes,
            kubelet_cas,
            verdicts,
        }
    }

    /// The paused-pool kubelet CA alert of each pool and severity, at the rule's own instants,
    /// not the look's: pending from when its expression began to hold, firing 60 minutes later
    /// (a pending spell between two looks shows too).
    fn record_alerts(&self, timeline: &std::sync::Mutex<Timeline>, now: time::OffsetDateTime) {
        let mut alerts = Vec::new();
        for pool in ["master", "worker"] {
            for severity in [Severity::Warning, Severity::Critical] {
                let (state, since) = self.paused_pool_alert_since(severity, pool);
                alerts.push((format!("{pool} {severity:?}"), state, since));
            }
        }
        let mut t = timeline.lock().unwrap_or_else(|p| p.into_inner());
        for (which, state, since) in alerts {
            let lane = format!("alert {which}");
            let was = t.last_seen(&lane, "alert").cloned();
            if state == AlertState::Inactive && was.is_none() {
                continue;
            }
            let text =
                |state: AlertState| format!("MachineConfigControllerPausedPoolKubeletCA ({which}) {state}");
            let pending_at = since.unwrap_or(now);
            let inactive = AlertState::Inactive.to_string();
            if state == AlertState::Firing && was.as_deref().is_none_or(|w| w == inactive) {
                let pending = AlertState::Pending;
                t.saw(pending_at, &lane, "alert", pending.to_string(), text(pending));
            }
            let at = match state {
                AlertState::Pending => pending_at,
                AlertState::Firing => pending_at + crate::prometheus::FOR,
                AlertState::Inactive => now,
            };
            t.saw(at.min(now), &lane, "alert", state.to_string(), text(state));
        }
    }

    /// Each node's kubelet's verdict on the kube-apiserver's current kubelet client certificate,
    /// as a timeline kind, a value that changes with the verdict or the certificate's issuer,
    /// and a sentence. Nothing when the certificate cannot be read (before install).
    async fn kubelet_verdicts(&self) -> Vec<(String, &'static str, String, String)> {
        use crate::node::kubelet::{ProbeError, probe};
        let Ok(client) = self
            .certificate("openshift-kube-apiserver", "kubelet-client")
            .await
        else {
            return Vec::new();
        };
        let issuer = &client.issuer_common_name;
        let mut out = Vec::new();
        for node in &self.nodes {
            let name = node.name().to_string();
            let Ok(addr) = self.kubelet_address(&name).await else {
                continue;
            };
            let (kind, value, text) = match probe(addr, &client.pem, &client.key_pem).await {
                Ok(()) => (
                    "kubelet-accepts",
                    format!("accepts {issuer}"),
                    format!(
                        "kubelet accepts the kube-apiserver's kubelet client certificate (issued by {issuer})"
                    ),
                ),
                Err(ProbeError::Rejected { reason, .. }) => (
                    "kubelet-refuses",
                    format!("refuses {issuer}"),
                    format!(
                        "kubelet refuses the kube-apiserver's kubelet client certificate (issued by {issuer}): {reason}"
                    ),
                ),
                Err(e) => (
                    "kubelet-down",
                    "down".to_string(),
                    format!("kubelet not answering: {e}"),
                ),
            };
            out.push((name, kind, value, text));
        }
        out
    }

    /// What the timeline recorded, if it was on: when it started and ended (simulated), and
    /// the events.
    pub fn timeline(&self) -> Option<(time::OffsetDateTime, time::OffsetDateTime, Vec<TimelineEvent>)> {
        let t = self.timeline.as_ref()?.lock().unwrap_or_else(|p| p.into_inner());
        let started = t.started?;
        // In time order: an alert's events carry the rule's instants, earlier than the look
        // that saw them.
        let mut events = t.events.clone();
        events.sort_by_key(|e| e.at);
        Some((started, t.last_look.unwrap_or(started), events))
    }
}
