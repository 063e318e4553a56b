//! Real kubectl clients against the fake (or the server `APISERVER_KUBECONFIG` names): create a CRD and a ControllerConfig from the
//! fixtures, get -o yaml, patch (merge, json), label, annotate, get -w seeing an update, apply a
//! ConfigMap twice, delete; and kubectl 1.33's imperative creates, which send protobuf. Each
//! version found beside the machine's `kubectl` runs; a missing one is skipped with the reason
//! printed (a failure under `CI=true`).

use crate::common::{cluster, remove_crd};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const VERSIONS: &[&str] = &["1.27", "1.30", "1.33"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The folder of the real kubectl, where `kubectl.1.NN` stand.
fn kubectl_dir() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").ok_or("PATH is unset")?;
    let found = std::env::split_paths(&path)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .ok_or("no kubectl on PATH")?;
    let real = std::fs::canonicalize(&found).map_err(|e| format!("{}: {e}", found.display()))?;
    Ok(real.parent().unwrap().to_path_buf())
}

struct Kubectl {
    binary: PathBuf,
    kubeconfig: PathBuf,
}

impl Kubectl {
    /// Run and return stdout; panics with stderr on failure.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    async fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new(&self.binary)
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.kubeconfig.parent().unwrap()) // a fresh discovery cache per run
            .output()
            .await
            .expect("kubectl runs")
    }
}

#[tokio::test]
async fn kubectl_versions_drive_the_fake() {
    let dir = match kubectl_dir() {
        Ok(d) => d,
        Err(why) => {
            fake_apiserver::testing::skip(&format!("kubectl tests: {why}"));
            return;
        }
    };
    let mut ran = 0;
    for version in VERSIONS {
        let binary = dir.join(format!("kubectl.{version}"));
        if !binary.is_file() {
            fake_apiserver::testing::skip(&format!(
                "kubectl {version}: {} is not installed",
                binary.display()
            ));
            continue;
        }
        exercise(binary).await;
        println!("kubectl {version}: ok");
        ran += 1;
    }
    if ran == 0 {
        fake_apiserver::testing::skip(&format!(
            "kubectl tests: none of {VERSIONS:?} found in {}",
            dir.display()
        ));
    }
}

/// kubectl 1.31 and later sends the objects of `create namespace|configmap|secret|serviceaccount`
/// in protobuf, and asks for protobuf answers first; each object is read back and must hold
/// what was given, and what kubectl decoded from the answers must be what was stored.
#[tokio::test]
async fn kubectl_imperative_creates_send_protobuf() {
    let binary = match kubectl_dir() {
        Ok(dir) => dir.join("kubectl.1.33"),
        Err(why) => {
            fake_apiserver::testing::skip(&format!("kubectl 1.33 imperative creates: {why}"));
            return;
        }
    };
    if !binary.is_file() {
        fake_apiserver::testing::skip(&format!(
            "kubectl 1.33 imperative creates: {} is not installed",
            binary.display()
        ));
        return;
    }
    let c = cluster().await;
    let home = tempfile::tempdir().unwrap();
    let k = kubectl_for(&c, binary, home.path());
    let ns = format!("{}-pb", c.ns);
    // kubectl asks for protobuf first: it decodes the answer with the Go types and prints it.
    let printed: serde_json::Value =
        serde_json::from_str(&k.ok(&["create", "namespace", &ns, "-o", "json"]).await).unwrap();
    assert_eq!(printed["metadata"]["name"], ns.as_str());
    assert_eq!(printed["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(printed["status"]["phase"], "Active");
    // `-v=8` logs each request's headers: the ConfigMap must travel as protobuf.
    let out = k
        .run(&[
            "-n",
            &ns,
            "create",
            "configmap",
            "settings",
            "--from-literal=mode=fast",
            "--from-literal=motd=hello, world",
            "-v=8",
        ])
        .await;
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl create configmap failed: {log}");
    assert!(
        log.contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "kubectl 1.33 sent no protobuf body: {log}"
    );
    k.ok(&[
        "-n",
        &ns,
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=password=s3cr3t",
        "--type=example.com/basic",
    ])
    .await;
    k.ok(&["-n", &ns, "create", "serviceaccount", "robot"]).await;
    // An error answer, a Status in protobuf, read by kubectl.
    let again = k
        .run(&[
            "-n",
            &ns,
            "create",
            "configmap",
            "settings",
            "--from-literal=mode=slow",
        ])
        .await;
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains(r#"failed to create configmap: configmaps "settings" already exists"#),
        "{stderr}"
    );
    let printed: serde_json::Value = serde_json::from_str(
        &k.ok(&[
            "-n",
            &ns,
            "create",
            "configmap",
            "printed",
            "--from-literal=k=v",
            "-o",
            "json",
        ])
        .await,
    )
    .unwrap();
    let stored = Api::<ConfigMap>::namespaced(c.client.clone(), &ns)
        .get("printed")
        .await
        .unwrap();
    assert_eq!(printed["data"], json!({"k": "v"}));
    assert_eq!(printed["metadata"]["uid"], json!(stored.metadata.uid));
    assert_eq!(
        printed["metadata"]["resourceVersion"],
        json!(stored.metadata.resource_version)
    );
    assert_eq!(
        printed["metadata"]["creationTimestamp"],
        serde_json::to_value(stored.metadata.creation_timestamp).unwrap()
    );

    let namespace = Api::<Namespace>::all(c.client.clone()).get(&ns).await.unwrap();
    assert_eq!(namespace.metadata.name.as_deref(), Some(ns.as_str()));
    let cm = Api::<ConfigMap>::namespaced(c.client.clone(), &ns)
        .get("settings")
        .await
        .unwrap();
    let data = cm.data.unwrap();
    assert_eq!(
        (data["mode"].as_str(), data["motd"].as_str()),
        ("fast", "hello, world")
    );
    let secret = Api::<Secret>::namespaced(c.client.clone(), &ns)
        .get("creds")
        .await
        .unwrap();
    assert_eq!(secret.data.unwrap()["password"].0, b"s3cr3t");
    assert_eq!(secret.type_.as_deref(), Some("example.com/basic"));
    let robot = Api::<ServiceAccount>::namespaced(c.client.clone(), &ns)
        .get("robot")
        .await;
    assert!(robot.is_ok(), "{robot:?}");
    // And kubectl reads them back.
    let printed = k
        .ok(&[
            "-n",
            &ns,
            "get",
            "configmap",
            "settings",
            "-o",
            "jsonpath={.data.mode}",
        ])
        .await;
    assert_eq!(printed, "fast");
    k.ok(&["delete", "namespace", &ns, "--wait=false"]).await;
    c.cleanup().await;
}

/// kubectl `binary` with an admin kubeconfig for the cluster, and a fresh discovery cache.
fn kubectl_for(c: &crate::common::TestCluster, binary: PathBuf, home: &Path) -> Kubectl {
    let kubeconfig = home.join("kubeconfig");
    let config = match (&c.server, std::env::var("APISERVER_KUBECONFIG")) {
        (Some(server), _) => server.kubeconfig(server.admin_identity()),
        (None, Ok(path)) => std::fs::read_to_string(path).expect("APISERVER_KUBECONFIG is readable"),
        (None, Err(e)) => panic!("no fake and no kubeconfig: {e}"),
    };
    std::fs::write(&kubeconfig, config).unwrap();
    Kubectl { binary, kubeconfig }
}

async fn exercise(binary: PathBuf) {
    let c = cluster().await;
    let home = tempfile::tempdir().unwrap();
    let k = kubectl_for(&c, binary, home.path());
    let client = c.client.clone();
    // The CRD and the ControllerConfig are cluster-wide: start without them.
    remove_crd(&client, "controllerconfigs.machineconfiguration.openshift.io").await;
    let fixtures = repo().join("fixtures");
    let crd = fixtures.join("crds/controllerconfigs.machineconfiguration.openshift.io.yaml");
    let cc = fixtures.join("cluster/controllerconfig.yaml");
    let (crd, cc) = (crd.to_str().unwrap(), cc.to_str().unwrap());

    k.ok(&["create", "-f", crd]).await;
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/controllerconfigs.machineconfiguration.openshift.io",
        "--timeout=10s",
    ])
    .await;
    let created = k.ok(&["create", "-f", cc]).await;
    assert!(created.contains("machine-config-controller created"), "{created}");

    let yaml = k
        .ok(&[
            "get",
            "controllerconfig",
            "machine-config-controller",
            "-o",
            "yaml",
        ])
        .await;
    let got: serde_json::Value = serde_yaml::from_str(&yaml).unwrap();
    assert_eq!(got["spec"]["clusterDNSIP"], "172.30.0.10");
    assert!(got["metadata"]["resourceVersion"].is_string());

    let cc_api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk(
            "machineconfiguration.openshift.io",
            "v1",
            "ControllerConfig",
        )),
    );
    k.ok(&[
        "patch",
        "controllerconfig",
        "machine-config-controller",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"clusterDNSIP":"172.30.0.11"}}"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "controllerconfig",
        "machine-config-controller",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/spec/ipFamilies","value":"DualStack"}]"#,
    ])
    .await;
    k.ok(&[
        "label",
        "controllerconfig",
        "machine-config-controller",
        "tier=control",
    ])
    .await;
    k.ok(&[
        "annotate",
        "controllerconfig",
        "machine-config-controller",
        "step=1",
    ])
    .await;
    let now = cc_api.get("machine-config-controller").await.unwrap();
    assert_eq!(now.data["spec"]["clusterDNSIP"], "172.30.0.11");
    assert_eq!(now.data["spec"]["ipFamilies"], "DualStack");
    assert_eq!(now.metadata.labels.as_ref().unwrap()["tier"], "control");
    assert_eq!(now.metadata.annotations.as_ref().unwrap()["step"], "1");
    let printed = k.ok(&["get", "controllerconfig", "-l", "tier=control"]).await;
    assert!(
        printed.starts_with("NAME") && printed.contains("machine-config-controller"),
        "{printed}"
    );

    // get -w: the first line is the current state; an update from another client follows.
    let mut watch = Command::new(&k.binary)
        .args([
            "get",
            "controllerconfig",
            "machine-config-controller",
            "-w",
            "-v=6",
        ])
        .args(["-o", "jsonpath={.metadata.annotations.step}{\"\\n\"}"])
        .env("KUBECONFIG", &k.kubeconfig)
        .env("HOME", home.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    // kubectl's request log, line by line: to know when its watch is open, and to show what it
    // was doing if a line does not come.
    let (log_tx, mut log_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut stderr = BufReader::new(watch.stderr.take().unwrap()).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            let _ = log_tx.send(line);
        }
    });
    let mut log = Vec::new();
    let first = next_line(&mut lines).await;
    if first.is_none() {
        watch.kill().await.unwrap();
        panic!(
            "kubectl get -w printed nothing in time; its log:\n{}",
            drain(&mut log_rx, &mut log).join("\n")
        );
    }
    assert_eq!(first.as_deref(), Some("1"));
    // For one object, kubectl skips its watch's first event (the synthetic ADDED), so a change
    // made before the watch is open would be skipped too — as with a real kube-apiserver. Wait
    // for the watch's response before changing anything.
    let opened = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = log_rx.recv().await {
            let watching = line.contains("watch=true");
            log.push(line);
            if watching {
                return true;
            }
        }
        false
    })
    .await;
    assert!(
        matches!(opened, Ok(true)),
        "kubectl never opened its watch; its log:\n{}",
        log.join("\n")
    );
    cc_api
        .patch(
            "machine-config-controller",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"step": "2"}}})),
        )
        .await
        .unwrap();
    let second = next_line(&mut lines).await;
    assert_eq!(
        second.as_deref(),
        Some("2"),
        "kubectl's log:\n{}",
        drain(&mut log_rx, &mut log).join("\n")
    );
    watch.kill().await.unwrap();

    // apply twice, then a change.
    let cm_file = home.path().join("cm.yaml");
    let write_cm = |value: &str| {
        std::fs::write(&cm_file, format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe-cm\n  namespace: {}\ndata:\n  k: {value}\n", c.ns)).unwrap()
    };
    let cm_path = cm_file.to_str().unwrap();
    write_cm("v1");
    assert!(k.ok(&["apply", "-f", cm_path]).await.contains("created"));
    assert!(k.ok(&["apply", "-f", cm_path]).await.contains("unchanged"));
    write_cm("v2");
    assert!(k.ok(&["apply", "-f", cm_path]).await.contains("configured"));
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &c.ns);
    assert_eq!(cms.get("probe-cm").await.unwrap().data.unwrap()["k"], "v2");

    k.ok(&["delete", "-f", cc]).await;
    let gone = k
        .run(&["get", "controllerconfig", "machine-config-controller"])
        .await;
    assert!(!gone.status.success());
    let stderr = String::from_utf8_lossy(&gone.stderr);
    assert!(
        stderr.contains("NotFound") || stderr.contains("not found"),
        "{stderr}"
    );
    remove_crd(&client, "controllerconfigs.machineconfiguration.openshift.io").await;
    c.cleanup().await;
}

/// The next line kubectl prints, or `None` if none comes within the deadline.
async fn next_line(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> Option<String> {
    tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .ok()
        .and_then(|l| l.unwrap())
}

/// Everything kubectl has logged so far.
fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>, log: &mut Vec<String>) -> Vec<String> {
    while let Ok(line) = rx.try_recv() {
        log.push(line);
    }
    log.clone()
}
