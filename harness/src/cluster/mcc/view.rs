//! What one pass of the machine-config controller works on: the API state read once, with the
//! pass's own writes applied; and the pure readings of it (label selectors, node annotations,
//! the ControllerConfig's certificates).

use crate::cluster::pools::NodeView;
use crate::mco::McoObject;
use crate::mco::controller_config::ControllerCertificate;
use crate::mco::machine_config::MachineConfig;
use crate::mco::pool::{CertExpiry, MachineConfigPool};
use crate::mco::{CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN, REASON, STATE};
use crate::pki::{parse_certs, rfc3339};
use k8s_openapi::api::core::v1::Node;
use serde_json::Value;

/// The API state one pass works on, with the pass's own writes applied.
pub(super) struct ApiView {
    pub(super) controller_config: Value,
    pub(super) machine_configs: Vec<MachineConfig>,
    /// MachineConfigs whose spec does not read as one: name, labels, why.
    pub(super) unreadable: Vec<(String, Value, String)>,
    /// Per pool, why its render failed this pass (its `RenderDegraded` message).
    pub(super) render_failures: std::collections::BTreeMap<String, String>,
    pub(super) pools: Vec<MachineConfigPool>,
    pub(super) nodes: Vec<std::sync::Arc<Node>>,
}

impl ApiView {
    pub(super) fn machine_config(&self, name: &str) -> Option<&MachineConfig> {
        self.machine_configs.iter().find(|mc| mc.name() == name)
    }

    pub(super) fn put_machine_config(&mut self, written: MachineConfig) {
        match self
            .machine_configs
            .iter_mut()
            .find(|mc| mc.name() == written.name())
        {
            Some(slot) => *slot = written,
            None => self.machine_configs.push(written),
        }
    }

    /// The nodes are in name order (as a list and `NodeCache::nodes` give them).
    pub(super) fn put_node(&mut self, written: Node) {
        if let Ok(slot) = self
            .nodes
            .binary_search_by(|n| n.metadata.name.cmp(&written.metadata.name))
        {
            self.nodes[slot] = std::sync::Arc::new(written);
        }
    }
}

/// `status.controllerCertificates` entries for one bundle (base64 in the spec), with
/// `notBefore`/`notAfter` where the release's entries carry them; subject and signer are the
/// whole names, `CN=…` (release-4.16 template_controller.go:503-507, `Subject.String()` and
/// `Issuer.String()`).
pub(super) fn certificate_entries(
    encoded: Option<&str>,
    bundle_file: &str,
    dates: bool,
) -> Vec<ControllerCertificate> {
    use base64::Engine;
    let Some(pem) = encoded
        .and_then(|e| base64::engine::general_purpose::STANDARD.decode(e).ok())
        .and_then(|b| String::from_utf8(b).ok())
    else {
        return Vec::new();
    };
    parse_certs(&pem)
        .unwrap_or_default()
        .into_iter()
        .map(|c| ControllerCertificate {
            not_before: dates.then(|| rfc3339(c.not_before)),
            not_after: dates.then(|| rfc3339(c.not_after)),
            subject: c.subject,
            signer: c.issuer_name,
            bundle_file: bundle_file.to_string(),
            other: Default::default(),
        })
        .collect()
}

/// 4.14+ pool `status.certExpirys` (`pkg/controller/node/status.go`): the ControllerConfig's
/// certificates from `KubeAPIServerServingCAData`, with their `notAfter` as `expiry` where the
/// entries have one (not on 4.14, whose entries carry no dates).
pub(super) fn cert_expirys(certificates: &[ControllerCertificate]) -> Vec<CertExpiry> {
    certificates
        .iter()
        .filter(|c| c.bundle_file == "KubeAPIServerServingCAData")
        .map(|c| CertExpiry {
            bundle: c.bundle_file.clone(),
            subject: c.subject.clone(),
            expiry: c.not_after.clone(),
            ..CertExpiry::default()
        })
        .collect()
}

/// Every Node annotation the controller's passes read: [`node_view`]'s and the drain
/// controller's. A change of any other annotation triggers no pass (`NodeCache`).
pub const NODE_ANNOTATIONS_READ: &[&str] = &[
    CURRENT_CONFIG,
    DESIRED_CONFIG,
    STATE,
    REASON,
    DESIRED_DRAIN,
    LAST_APPLIED_DRAIN,
];

pub(super) fn node_view(node: &Node) -> NodeView<'_> {
    let a = node.metadata.annotations.as_ref();
    let get = |k: &str| a.and_then(|a| a.get(k)).map_or("", String::as_str);
    NodeView {
        name: node.metadata.name.as_deref().unwrap_or_default(),
        current: get(CURRENT_CONFIG),
        desired: get(DESIRED_CONFIG),
        state: get(STATE),
        reason: get(REASON),
        ready: takes_work(node),
    }
}

/// Upstream's `checkNodeReady`: `Ready` True, `DiskPressure` and `NetworkUnavailable` False,
/// each where the Node has it, and `spec.unschedulable` unset.
fn takes_work(node: &Node) -> bool {
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let fine = conditions.iter().all(|c| match c.type_.as_str() {
        "Ready" => c.status == "True",
        "DiskPressure" | "NetworkUnavailable" => c.status == "False",
        _ => true,
    });
    fine && !node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false)
}

/// Whether a label selector holds for `labels`, as in Kubernetes: every `matchLabels` pair and
/// every `matchExpressions` entry (In, NotIn, Exists, DoesNotExist); an empty selector selects
/// everything and a missing one nothing.
pub(crate) fn selects(selector: &Value, labels: &Value) -> bool {
    selects_by(selector, |k| labels.get(k).and_then(Value::as_str))
}

/// [`selects`] for an object's own labels, read in place (a pass checks every Node against
/// every pool's selector: no copy of ten thousand label maps).
pub(super) fn selects_labels(
    selector: &Value,
    labels: Option<&std::collections::BTreeMap<String, String>>,
) -> bool {
    selects_by(selector, |k| labels.and_then(|l| l.get(k)).map(String::as_str))
}

/// A label selector as Kubernetes prints it (`metav1.LabelSelectorAsSelector`, then
/// `labels.Selector.String()`): one requirement per `matchLabels` pair and `matchExpressions`
/// entry, ordered by key, joined by commas — `k=v`, `k in (a,b)`, `k notin (a,b)` (values in
/// order), `k` (Exists), `!k` (DoesNotExist). An empty selector and a missing one print nothing.
pub(super) fn selector_string(selector: &Value) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    for (key, value) in selector["matchLabels"].as_object().into_iter().flatten() {
        requirements.push((key.clone(), format!("{key}={}", value.as_str().unwrap_or(""))));
    }
    for e in selector["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or("");
        let mut values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match e["operator"].as_str() {
            Some("In") => format!("{key} in ({})", values.join(",")),
            Some("NotIn") => format!("{key} notin ({})", values.join(",")),
            Some("Exists") => key.to_string(),
            Some("DoesNotExist") => format!("!{key}"),
            _ => continue,
        };
        requirements.push((key.to_string(), text));
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    requirements
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

fn selects_by<'a>(selector: &Value, label: impl Fn(&str) -> Option<&'a str>) -> bool {
    if !selector.is_object() {
        return false; // a nil selector selects nothing
    }
    let by_labels = selector["matchLabels"].as_object().is_none_or(|wanted| {
        wanted
            .iter()
            .all(|(k, v)| label(k).is_some_and(|have| v.as_str() == Some(have)))
    });
    let by_expressions = selector["matchExpressions"].as_array().is_none_or(|expressions| {
        expressions.iter().all(|e| {
            let key = e["key"].as_str().unwrap_or("");
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e["operator"].as_str() {
                Some("In") => label(key).is_some_and(|v| values.contains(&v)),
                Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
                Some("Exists") => label(key).is_some(),
                Some("DoesNotExist") => label(key).is_none(),
                _ => false,
            }
        })
    });
    by_labels && by_expressions
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// As `labels.Selector.String()` prints what `LabelSelectorAsSelector` made (apimachinery
    /// `labels/selector.go`: requirements sorted by key; `in`/`notin` values sorted on output).
    #[test]
    fn selectors_print_as_kubernetes_prints_them() {
        assert_eq!(
            selector_string(&json!({"matchLabels": {"machineconfiguration.openshift.io/role": "infra"}})),
            "machineconfiguration.openshift.io/role=infra"
        );
        assert_eq!(
            selector_string(&json!({
                "matchLabels": {"tier": "a"},
                "matchExpressions": [
                    {"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": ["worker", "infra"]},
                    {"key": "zone", "operator": "NotIn", "values": ["b", "a"]},
                    {"key": "gpu", "operator": "Exists"},
                    {"key": "arm", "operator": "DoesNotExist"},
                ]
            })),
            "!arm,gpu,machineconfiguration.openshift.io/role in (infra,worker),tier=a,zone notin (a,b)"
        );
        assert_eq!(selector_string(&json!({})), "");
        assert_eq!(selector_string(&Value::Null), "");
    }

    #[test]
    fn selectors_as_kubernetes_reads_them() {
        let labels = json!({"machineconfiguration.openshift.io/role": "worker", "tier": "a"});
        assert!(selects(
            &json!({"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}}),
            &labels
        ));
        assert!(!selects(
            &json!({"matchLabels": {"machineconfiguration.openshift.io/role": "master"}}),
            &labels
        ));
        assert!(selects(&json!({}), &labels), "empty selects everything");
        assert!(!selects(&Value::Null, &labels), "missing selects nothing");
        let expr = |op: &str, values: &[&str]| json!({"matchExpressions": [{"key": "tier", "operator": op, "values": values}]});
        assert!(selects(&expr("In", &["a", "b"]), &labels));
        assert!(!selects(&expr("NotIn", &["a"]), &labels));
        assert!(selects(&expr("Exists", &[]), &labels));
        assert!(!selects(&expr("DoesNotExist", &[]), &labels));
        assert!(
            !selects(&expr("Gt", &["1"]), &labels),
            "an operator it does not know selects nothing"
        );
        // Read in place, an object's labels give the same answers.
        let map: std::collections::BTreeMap<String, String> = serde_json::from_value(labels.clone()).unwrap();
        for selector in [
            json!({"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}}),
            json!({"matchLabels": {"tier": "b"}}),
            json!({}),
            Value::Null,
            expr("In", &["a", "b"]),
            expr("NotIn", &["a"]),
            expr("Exists", &[]),
            expr("DoesNotExist", &[]),
        ] {
            assert_eq!(
                selects_labels(&selector, Some(&map)),
                selects(&selector, &labels),
                "{selector}"
            );
        }
        assert!(selects_labels(&json!({}), None), "no labels: empty still selects");
        assert!(!selects_labels(&json!({"matchLabels": {"tier": "a"}}), None));
    }
}
