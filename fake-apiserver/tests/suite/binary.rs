//! The standalone `fake-apiserver` binary: loads manifests, writes an admin kubeconfig, prints
//! `ready <url>` once it serves, logs one line per request; a bad manifest exits 2 naming the
//! file and document.

use crate::common::skip_external;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Why these tests run against the fake only.
const FAKE_ONLY: &str = "they run the fake-apiserver binary itself";

const BIN: &str = env!("CARGO_BIN_EXE_fake-apiserver");

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("fixtures")
}

#[tokio::test]
async fn serves_the_fixtures_and_logs_requests() {
    if skip_external("serves_the_fixtures_and_logs_requests", FAKE_ONLY) {
        return;
    }
    crate::common::init_crypto();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Command::new(BIN)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg(fixtures().join("crds"))
        .arg(fixtures().join("cluster"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(20), stdout.next_line())
        .await
        .expect("ready in time")
        .unwrap()
        .unwrap();
    let url = ready
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("first line is `ready <url>`: {ready}"));
    assert!(url.starts_with("https://127.0.0.1:"));

    let client = fake_apiserver::client_from_kubeconfig(&std::fs::read_to_string(&kubeconfig).unwrap())
        .await
        .unwrap();
    let gvk = kube::api::GroupVersionKind::gvk("machineconfiguration.openshift.io", "v1", "ControllerConfig");
    let api: kube::Api<kube::api::DynamicObject> =
        kube::Api::all_with(client, &kube::api::ApiResource::from_gvk(&gvk));
    let cc = api
        .get("machine-config-controller")
        .await
        .expect("the fixture ControllerConfig is served");
    assert_eq!(cc.data["spec"]["clusterDNSIP"], "172.30.0.10");

    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), stderr.next_line())
        .await
        .expect("a log line")
        .unwrap()
        .unwrap();
    assert!(
        line.starts_with(
            "GET /apis/machineconfiguration.openshift.io/v1/controllerconfigs/machine-config-controller 200 "
        ),
        "{line}"
    );
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_bad_manifest_exits_2_naming_file_and_document() {
    if skip_external("a_bad_manifest_exits_2_naming_file_and_document", FAKE_ONLY) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine, namespace: default}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_Valid, namespace: default}\n").unwrap();
    let out = Command::new(BIN).arg(&bad).output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}: document 2: ConfigMap Not_Valid", bad.display())),
        "{stderr}"
    );
    assert!(stderr.contains("is invalid"), "{stderr}");

    std::fs::write(&bad, "apiVersion: v1\nkind: ConfigMap\n---\nkind: [unclosed\n").unwrap();
    let out = Command::new(BIN).arg(&bad).output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.yaml: document 2 (line"), "{stderr}");

    let out = Command::new(BIN)
        .arg(dir.path().join("missing.yaml"))
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.yaml"));
    assert!(out.stdout.is_empty(), "nothing printed as ready");
}
