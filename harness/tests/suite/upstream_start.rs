//! What the upstream machine-config-daemon asks of the cluster before it reaches its
//! certificate path, asked of a fresh scenario's cluster the way that daemon asks it
//! (MCO main: `cmd/machine-config-daemon/start.go`, `pkg/daemon`, library-go's feature-gate
//! reader): with the credentials of the node's own kubeconfigs, through streaming lists for
//! every informer it starts, server-side apply of its MachineConfigNode's status, events as the
//! kubelet identity, and the drain handshake with the controller.

use futures::StreamExt;
use harness::Profile;
use harness::mco::{CURRENT_CONFIG, DESIRED_CONFIG, DESIRED_DRAIN, LAST_APPLIED_DRAIN};
use harness::node::Node;
use harness::node::seed::{KUBELET_KUBECONFIG, NODE_KUBECONFIG};
use harness::scenario::{Scenario, ScenarioOptions};
use k8s_openapi::api::core::v1::{Event, Node as NodeObject, Pod};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use std::time::Duration;

const MCO_NAMESPACE: &str = "openshift-machine-config-operator";

/// A client made from a kubeconfig as it lies on the node: the daemon loads
/// `/etc/kubernetes/kubeconfig` through its current context, and its node writer
/// `/var/lib/kubelet/kubeconfig`.
async fn client_from(node: &dyn Node, path: &str) -> kube::Client {
    let text = String::from_utf8(node.read(path).await.unwrap()).unwrap();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    assert!(
        kubeconfig.current_context.is_some(),
        "{path} names its current context"
    );
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    assert!(
        config.cluster_url.port().is_some(),
        "{path}'s server has an explicit port: {}",
        config.cluster_url
    );
    kube::Client::try_from(config).unwrap()
}

fn api(client: &kube::Client, group: &str, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1", kind);
    Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
}

/// The names a reflector's streaming list delivers before its initial-events-end bookmark.
async fn streaming_list<K>(api: Api<K>, fields: Option<&str>) -> Vec<String>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut config = watcher::Config::default().streaming_lists();
    if let Some(fields) = fields {
        config = config.fields(fields);
    }
    let mut events = std::pin::pin!(watcher(api, config));
    let mut names = Vec::new();
    let listing = async {
        while let Some(event) = events.next().await {
            match event.expect("the watch streams") {
                watcher::Event::InitApply(object) => {
                    names.push(object.meta().name.clone().unwrap_or_default())
                }
                watcher::Event::InitDone => return,
                _ => {}
            }
        }
        panic!("the stream ended before its initial events did");
    };
    tokio::time::timeout(Duration::from_secs(10), listing)
        .await
        .expect("the initial events end with a bookmark");
    names.sort();
    names
}

/// Set `desiredDrain` as the daemon does, and wait for the drain controller's `lastAppliedDrain`.
async fn request_drain(nodes: &Api<NodeObject>, name: &str, request: &str) -> NodeObject {
    let patch = json!({"metadata": {"annotations": {DESIRED_DRAIN: request}}});
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
    annotation_becomes(nodes, name, LAST_APPLIED_DRAIN, request).await
}

/// Wait, on a watch of the one node, until `annotation` reads `value`.
async fn annotation_becomes(
    nodes: &Api<NodeObject>,
    name: &str,
    annotation: &str,
    value: &str,
) -> NodeObject {
    let mut events = std::pin::pin!(watcher::watch_object(nodes.clone(), name));
    let waiting = async {
        while let Some(event) = events.next().await {
            if let Some(node) = event.expect("the watch streams")
                && node
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(annotation))
                    .map(String::as_str)
                    == Some(value)
            {
                return node;
            }
        }
        panic!("the watch ended");
    };
    tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .unwrap_or_else(|_| panic!("{annotation} never became {value:?} on {name}"))
}

async fn what_the_upstream_daemon_asks_at_start(profile: Profile) {
    let s = Scenario::start(ScenarioOptions::new(profile)).await.unwrap();
    let node = s.nodes[0].as_ref();
    let name = node.name().to_string();
    let agent = client_from(node, NODE_KUBECONFIG).await;
    let kubelet = client_from(node, KUBELET_KUBECONFIG).await;

    // Without --payload-version the daemon's payload version is `0.0.1-snapshot`: it reads
    // ClusterVersion's desired version, then waits for FeatureGate `cluster` to list the gates
    // of that version.
    let cluster_version = api(&agent, "config.openshift.io", "ClusterVersion")
        .get("version")
        .await
        .unwrap();
    let version = cluster_version.data["status"]["desired"]["version"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(version, profile.payload_version());
    let feature_gate = api(&agent, "config.openshift.io", "FeatureGate")
        .get("cluster")
        .await
        .unwrap();
    let gates = feature_gate.data["status"]["featureGates"]
        .as_array()
        .and_then(|entries| entries.iter().find(|e| e["version"] == version.as_str()))
        .unwrap_or_else(|| {
            panic!(
                "FeatureGate cluster lists gates for {version}: {:?}",
                feature_gate.data
            )
        });
    assert_eq!(gates["enabled"][0]["name"], "IrreconcilableMachineConfig");

    // Every informer the daemon starts syncs through a streaming list (client-go ≥ 1.35).
    let by_name = format!("metadata.name={name}");
    let nodes: Api<NodeObject> = Api::all(agent.clone());
    assert_eq!(
        streaming_list(nodes.clone(), Some(&by_name)).await,
        std::slice::from_ref(&name)
    );
    let kubelet_nodes: Api<NodeObject> = Api::all(kubelet.clone());
    assert_eq!(
        streaming_list(kubelet_nodes, Some(&by_name)).await,
        std::slice::from_ref(&name)
    );
    let mco = |kind| api(&agent, "machineconfiguration.openshift.io", kind);
    assert_eq!(
        streaming_list(mco("MachineConfigNode"), Some(&by_name)).await,
        std::slice::from_ref(&name)
    );
    assert_eq!(
        streaming_list(mco("ControllerConfig"), None).await,
        ["machine-config-controller"]
    );
    assert_eq!(
        streaming_list(mco("MachineConfigPool"), None).await,
        ["master", "worker"]
    );
    let configs = streaming_list(mco("MachineConfig"), None).await;
    for kind in ["PinnedImageSet", "InternalReleaseImage"] {
        assert_eq!(
            streaming_list(mco(kind), None).await,
            Vec::<String>::new(),
            "{kind}"
        );
    }
    assert_eq!(
        streaming_list(api(&agent, "operator.openshift.io", "MachineConfiguration"), None).await,
        ["cluster"]
    );
    assert_eq!(
        streaming_list(api(&agent, "config.openshift.io", "FeatureGate"), None).await,
        ["cluster"]
    );
    assert_eq!(
        streaming_list(api(&agent, "config.openshift.io", "ClusterVersion"), None).await,
        ["version"]
    );

    // Its first node sync: current and desired config present, the current MachineConfig
    // served, and the uncordon handshake already answered.
    let object = nodes.get(&name).await.unwrap();
    let annotations = object.metadata.annotations.clone().unwrap();
    let current = annotations[CURRENT_CONFIG].clone();
    assert_eq!(annotations[DESIRED_CONFIG], current);
    assert!(configs.contains(&current), "{current} is served: {configs:?}");
    let uncordon = format!("uncordon-{current}");
    assert_eq!(annotations[DESIRED_DRAIN], uncordon);
    assert_eq!(annotations[LAST_APPLIED_DRAIN], uncordon);

    // The update path's node disruption policies, once the operator's status caught up.
    let machine_configuration = api(&agent, "operator.openshift.io", "MachineConfiguration")
        .get("cluster")
        .await
        .unwrap();
    assert_eq!(
        machine_configuration.metadata.generation,
        machine_configuration.data["status"]["observedGeneration"].as_i64()
    );
    let policies = &machine_configuration.data["status"]["nodeDisruptionPolicyStatus"]["clusterPolicies"];
    assert!(
        policies["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "/var/lib/kubelet/config.json" && f["actions"][0]["type"] == "None"),
        "{policies}"
    );
    assert_eq!(policies["sshkey"]["actions"][0]["type"], "None");

    // With no POD_NAME it lists the pods of its namespace for its events' owner.
    let pods: Api<Pod> = Api::namespaced(agent.clone(), MCO_NAMESPACE);
    pods.list(&Default::default()).await.unwrap();

    // It applies its MachineConfigNode's status (fieldManager machine-config-operator, force).
    let status = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
        "metadata": {"name": name},
        "status": {"observedGeneration": 2, "configVersion": {"current": current, "desired": current},
            "conditions": [{"type": "Updated", "status": "True", "reason": "Updated",
                "message": format!("Node {name} Updated"), "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    });
    let applied = mco("MachineConfigNode")
        .patch_status(
            &name,
            &PatchParams::apply("machine-config-operator").force(),
            &Patch::Apply(&status),
        )
        .await
        .unwrap();
    assert_eq!(applied.data["status"]["conditions"][0]["type"], "Updated");
    assert_eq!(
        applied.data["spec"]["node"]["name"], name,
        "the operator's spec is kept"
    );

    // Its node writer records events with the kubelet's credentials, in the MCO namespace.
    let event: Event = serde_json::from_value(json!({
        "metadata": {"generateName": format!("{name}.")},
        "involvedObject": {"kind": "Node", "name": name, "uid": object.metadata.uid},
        "reason": "ConfigDriftMonitorStarted", "message": "Config Drift Monitor started",
        "type": "Normal", "source": {"component": "machineconfigdaemon", "host": name},
    }))
    .unwrap();
    Api::<Event>::namespaced(kubelet.clone(), MCO_NAMESPACE)
        .create(&PostParams::default(), &event)
        .await
        .unwrap();

    // A drain it asks for is answered by the drain controller: cordoned, then uncordoned.
    let drain = format!("drain-{current}");
    let drained = request_drain(&nodes, &name, &drain).await;
    assert_eq!(drained.spec.and_then(|s| s.unschedulable), Some(true), "cordoned");
    let uncordoned = request_drain(&nodes, &name, &uncordon).await;
    assert_ne!(
        uncordoned.spec.and_then(|s| s.unschedulable),
        Some(true),
        "uncordoned"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_4_16_cluster_answers_what_the_upstream_daemon_asks_at_start() {
    what_the_upstream_daemon_asks_at_start(Profile::Ocp416).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_4_12_cluster_answers_what_the_upstream_daemon_asks_at_start() {
    what_the_upstream_daemon_asks_at_start(Profile::Ocp412).await;
}
