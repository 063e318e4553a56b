//! The suite tells the releases apart: the reference daemon run as an agent binary for one
//! release under the cluster of its neighbour fails exactly the scenarios where upstream's two
//! daemons differ, and passes every other one. The expected lists are written here from
//! `docs/ocp-4.14.md` (the release-4.14 source, section by section), not from a run.

use harness::Profile;
use harness::runner::{RunConfig, run};
use harness::scenario::AgentKind;
use serde_yaml::Value;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The reference daemon's binary, behaving as `agent`'s release whatever the cluster says
/// (`MCO_PROFILE` is the contract's variable naming the release).
fn daemon_for(agent: Profile, dir: &Path) -> PathBuf {
    let script = dir.join(format!("daemon-{agent}"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nMCO_PROFILE={agent} exec {} \"$@\"\n",
            env!("CARGO_BIN_EXE_mco-reference-daemon")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// Every feature on `cluster`'s profile with `agent`'s daemon: the failed scenarios, the
/// number passed and the number of `@mco-logs` ones failed
/// (`file: name`, one entry per Examples row; `@mco-logs` ones are counted apart for an agent
/// other than the reference, so they are returned as a count).
async fn failures(cluster: Profile, agent: Profile, dir: &Path) -> (BTreeSet<String>, usize, usize) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut config = RunConfig::new(
        vec![root.join("features")],
        dir.join(format!("{cluster}-{agent}")),
    );
    config.profiles = vec![cluster];
    config.agent = AgentKind::Binary {
        path: daemon_for(agent, dir),
        args: Vec::new(),
        node_tools: PathBuf::from(env!("CARGO_BIN_EXE_mco-node-tools")),
    };
    // A scenario the agent fails waits out this deadline; 5 s is the self-test's.
    config.agent_timeout = std::time::Duration::from_secs(5);
    config.quiet = true;
    let report = dir.join(format!("{cluster}-{agent}.yaml"));
    config.report = Some(report.clone());
    config.command = format!("profile skew {cluster} {agent}");
    let summary = run(&config).await.expect("the run itself works");
    let yaml: Value = serde_yaml::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let mut failed = BTreeSet::new();
    for profile in yaml["results"].as_sequence().into_iter().flatten() {
        for feature in profile["features"].as_sequence().into_iter().flatten() {
            let file = feature["file"].as_str().unwrap_or("");
            let file = file.rsplit('/').next().unwrap_or(file);
            for s in feature["scenarios"].as_sequence().into_iter().flatten() {
                if s["result"].as_str() == Some("failed") {
                    failed.insert(format!("{file}: {}", s["name"].as_str().unwrap_or("")));
                }
            }
        }
    }
    assert_eq!(failed.len(), summary.failed, "{failed:?}");
    // The run's closing recap names each of them, with the counted-apart ones too.
    assert_eq!(
        summary.failures.len(),
        summary.failed + summary.mco_logs_failed + summary.beyond_upstream_failed,
        "{:?}",
        summary.failures
    );
    for f in &failed {
        let (file, name) = f.split_once(": ").expect("file: scenario");
        assert!(
            summary
                .failures
                .iter()
                .any(|r| r.starts_with(&format!("{cluster}: {file}:")) && r.contains(&format!(": {name}: "))),
            "the recap misses {f}: {:?}",
            summary.failures
        );
    }
    (failed, summary.passed, summary.mco_logs_failed)
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// A 4.16 daemon on a 4.14 cluster: 4.16's post-config table (§5: the two directory lists, no
/// pull secret in "none") and its writer's skip of an /etc/docker/certs.d it cannot read, missing
/// or not (§1). The
/// serving-CA logic does not show: 4.14's operator never sets service-ca-rotate (§2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4_16_daemon_fails_on_4_14_exactly_where_release_4_14_differs() {
    let dir = tempfile::tempdir().unwrap();
    let (failed, passed, mco_logs) = failures(Profile::Ocp414, Profile::Ocp416, dir.path()).await;
    let expected = set(&[
        "reboot_policy.feature: A change to the file /etc/containers/registries.d/example.yaml is applied with a reboot",
        "reboot_policy.feature: A change to the file /etc/nmstate/openshift/worker-0.yml is applied with a reboot",
        "reboot_policy.feature: A change to the file /etc/mco/internal-registry-pull-secret.json is applied with no reboot",
        "reboot_policy.feature: A config that changes the file /etc/nmstate/openshift/worker-0.yml and the file /etc/containers/registries.d/example.yaml is applied with a reboot",
        "registry_trust.feature: On 4.14 without /etc/docker/certs.d the registry CA is written and the directory made",
        "registry_trust.feature: On 4.14 an /etc/docker/certs.d that cannot be read as a directory degrades the node",
    ]);
    assert_eq!(failed, expected);
    assert_eq!(mco_logs, 0);
    assert!(passed >= 50, "every other scenario passes: {passed}");
}

/// A 4.14 daemon on a 4.16 cluster: no kubeconfig block (§1: every serving-CA scenario), no
/// pull secret (§1, §12), 4.14's post-config table and its writer's making of a missing
/// /etc/docker/certs.d (and its error for one it cannot read as a directory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4_14_daemon_fails_on_4_16_exactly_where_release_4_16_adds() {
    let dir = tempfile::tempdir().unwrap();
    let (failed, passed, mco_logs) = failures(Profile::Ocp416, Profile::Ocp414, dir.path()).await;
    let expected = set(&[
        "kubelet_restart.feature: A new kube-apiserver serving CA and the kubelet's kubeconfig",
        "kubelet_restart.feature: On 4.16 each node records the ControllerConfig and the serving-CA rotation it synced",
        "kubelet_restart.feature: On 4.16 a rotated localhost serving signer restarts the kubelet",
        "kubelet_restart.feature: On 4.16 a rotated load-balancer serving signer restarts the kubelet",
        "kubelet_restart.feature: On 4.16 a new localhost-recovery serving signer does not restart the kubelet",
        "kubelet_restart.feature: On 4.16 the installer's kube-apiserver-localhost-signer does not restart the kubelet",
        "kubelet_restart.feature: On 4.16 the installer's kube-apiserver-lb-signer does not restart the kubelet",
        "kubelet_restart.feature: On 4.16 a serving CA that leaves the bundle restarts nothing",
        "kubelet_restart.feature: On 4.16 kubeconfig-data holding its bundle as base64 data is no change",
        "kubelet_restart.feature: On 4.16 kubeconfig-data holding its bundle as raw data is no change",
        "kubelet_restart.feature: On 4.16 an x509 error after a deferred serving CA re-bootstraps the kubelet",
        "kubelet_restart.feature: On 4.16 two serving CAs added 20 seconds apart restart each kubelet once, after the bundle settled",
        "kubelet_restart.feature: On 4.16 the operator's first kubeconfig-data after an upgrade reaches the kubeconfig without a kubelet restart",
        "reboot_policy.feature: A change to the file /etc/containers/registries.d/example.yaml is applied with a crio reload",
        "reboot_policy.feature: A change to the file /etc/nmstate/openshift/worker-0.yml is applied with no reboot",
        "reboot_policy.feature: A config that changes the file /etc/nmstate/openshift/worker-0.yml and the file /etc/containers/registries.d/example.yaml is applied with a crio reload",
        "registry_trust.feature: On 4.16 without /etc/docker/certs.d no registry CA is written",
        "registry_trust.feature: On 4.16 an /etc/docker/certs.d that cannot be read as a directory is passed over",
        "registry_trust.feature: On 4.16 the internal registry pull secret is merged with the role's mounted one",
        "registry_trust.feature: On 4.16 a node with no role label gets an error, not a silent skip",
        "registry_trust.feature: On 4.16 a node that loses its role label after the last sync goes Degraded too",
        "registry_trust.feature: On 4.16 a node whose role label comes back is Done again",
        "registry_trust.feature: On 4.16 a node with no role label misses a rotation until its label comes back",
        "registry_trust.feature: On 4.16 every node gets the cluster pull secret's hosts and the registry's default route in its internal registry pull secret",
        "scale_up.feature: A node that joins after a serving CA is added trusts it in its kubeconfig",
    ]);
    assert_eq!(failed, expected);
    // "On 4.16 a new serving CA restarts the kubelet with the CA in its kubeconfig", in
    // upstream's log lines.
    assert_eq!(mco_logs, 1);
    assert!(passed >= 50, "every other scenario passes: {passed}");
}
