//! `--html`: the run as one self-contained page, rendered in a real browser (headless
//! Chromium, Debian's `chromium`): what a reader sees on it is asserted from the DOM the
//! browser built, and a screenshot is taken. Under CI=true a missing Chromium fails the test;
//! elsewhere it is skipped, saying why.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_mco-conformance");

/// The Chromium binary, if one is installed.
fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(name))
                    .find(|p| p.is_file())
            })
        })
}

fn headless(browser: &PathBuf, args: &[&str], page: &std::path::Path) -> std::process::Output {
    Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap()
}

/// The SVG timeline of one scenario on the page.
fn timeline_of<'a>(dom: &'a str, scenario: &str) -> &'a str {
    let start = dom
        .find(&format!(r#"aria-label="timeline of {scenario}""#))
        .unwrap_or_else(|| panic!("a timeline for {scenario}: {dom}"));
    &dom[start..dom[start..].find("</svg>").unwrap() + start]
}

#[test]
fn the_html_report_renders_a_rotation_in_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            !fake_apiserver::testing::in_ci(),
            "CI=true and no Chromium: .ci/run installs Debian's chromium"
        );
        eprintln!("SKIP: no chromium on PATH (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let feature = dir.path().join("rotation.feature");
    std::fs::write(
        &feature,
        "Feature: A rotation on the page\n\n  @ocp-4.16\n  Scenario: A forced rotation reaches the node\n    Given a fresh cluster with 1 worker node\n    When the kube-apiserver-to-kubelet-signer is rotated by force\n    Then every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer\n    When 2 days pass\n\n  @ocp-4.16\n  Scenario: A misspelt step\n    Given a fresh cluster with 1 worker node\n    Then every nodes kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer\n\n  @ocp-4.12\n  Scenario: A paused pool breaks oc logs\n    Given a fresh cluster with 1 worker node\n    And the worker pool is paused\n    When the kube-apiserver-to-kubelet-signer is rotated by force\n    And 361 hours pass\n    Then no kubelet accepts the kube-apiserver's kubelet client certificate\n",
    )
    .unwrap();
    let page = dir.path().join("run.html");
    let report = dir.path().join("report.yaml");
    let out = Command::new(BIN)
        .args(["run", "--report-dir"])
        .arg(dir.path().join("out"))
        .arg("--html")
        .arg(&page)
        .arg("--report")
        .arg(&report)
        .arg(&feature)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "one scenario fails: {stdout}");
    assert!(
        stdout.contains(&format!("HTML report: {}", page.display())),
        "{stdout}"
    );

    let dom = headless(&browser, &["--dump-dom"], &page);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains(r#"id="verdict">failed<"#), "the verdict: {dom}");
    assert!(
        dom.contains("2 passed, 1 failed, 0 skipped (1 undefined step(s))"),
        "{dom}"
    );
    // The undefined step, with where it is and the phrase it missed.
    assert!(dom.contains("rotation.feature:13: undefined step"), "{dom}");
    // The passing scenario's timeline: the signer issued twice (install, then the forced
    // rotation) with its validity windows, the node's kubelet-ca.crt changing after it.
    let svg = timeline_of(&dom, "A forced rotation reaches the node");
    assert!(
        svg.contains(">kube-apiserver-to-kubelet-signer</text>"),
        "a lane for the signer: {svg}"
    );
    let signer = r#"data-lane="kube-apiserver-to-kubelet-signer""#;
    assert_eq!(
        svg.matches(&format!(r#"class="event issued" {signer}"#)).count(),
        2,
        "{svg}"
    );
    assert_eq!(
        svg.matches(&format!(r#"class="validity" {signer}"#)).count(),
        2,
        "{svg}"
    );
    assert!(svg.contains(">worker-0</text>"), "a lane for the node: {svg}");
    assert!(
        svg.matches(r#"class="event kubelet-ca" data-lane="worker-0""#)
            .count()
            >= 2,
        "{svg}"
    );
    assert!(
        svg.contains(">day 2<"),
        "the axis reaches the two days that passed: {svg}"
    );
    // The kubelet's verdict on the kube-apiserver's kubelet client certificate: accepted, and
    // never refused (on 4.16 the bundle reaches the node with the rotation).
    assert!(
        svg.contains(r#"class="event kubelet-accepts" data-lane="worker-0""#),
        "{svg}"
    );
    assert!(!svg.contains("kubelet-refuses"), "{svg}");

    // On 4.12 a paused pool keeps the old bundle: the kube-apiserver's kubelet client
    // certificate is re-issued by the new signer 15 days after install (library-go's refresh,
    // 15 days), and from then the kubelet refuses it. The warning alert is pending from the
    // rotation a minute after install and fires 60 minutes later (`for: 60m`), at those instants
    // rather than at the next look.
    let svg = timeline_of(&dom, "A paused pool breaks oc logs");
    let accepts = svg
        .find(r#"class="event kubelet-accepts" data-lane="worker-0""#)
        .expect("the kubelet accepts first");
    let refuses = svg
        .find(r#"class="event kubelet-refuses" data-lane="worker-0""#)
        .expect("then refuses");
    assert!(accepts < refuses, "{svg}");
    assert!(
        svg[refuses..]
            .contains("<title>day 15 00:00: kubelet refuses the kube-apiserver's kubelet client certificate"),
        "{svg}"
    );
    assert!(
        svg.contains(
            "<title>day 0 00:01: MachineConfigControllerPausedPoolKubeletCA (worker Warning) pending</title>"
        ),
        "{svg}"
    );
    assert!(
        svg.contains(
            "<title>day 0 01:01: MachineConfigControllerPausedPoolKubeletCA (worker Warning) firing</title>"
        ),
        "{svg}"
    );
    // The failed scenario is open, with its step's status.
    assert!(dom.contains(r#"<details class="scenario fail""#), "{dom}");
    assert!(dom.contains(r#"<li class="undefined">"#), "{dom}");

    // The browser draws it: a screenshot of the page is a real image.
    let shot = dir.path().join("shot.png");
    let arg = format!("--screenshot={}", shot.display());
    let out = headless(&browser, &[&arg, "--window-size=1100,900"], &page);
    assert!(shot.is_file(), "{}", String::from_utf8_lossy(&out.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 10_000,
        "a page with content, not a blank: {} bytes",
        png.len()
    );

    // The YAML report carries the same events as data.
    let yaml: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let scenario = |name: &str| {
        yaml["results"]
            .as_sequence()
            .into_iter()
            .flatten()
            .flat_map(|r| {
                r["features"][0]["scenarios"]
                    .as_sequence()
                    .cloned()
                    .unwrap_or_default()
            })
            .find(|s| s["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("{name} in the report: {yaml:?}"))
    };
    let paused = scenario("A paused pool breaks oc logs");
    let kinds: Vec<&str> = paused["timeline"]["events"]
        .as_sequence()
        .expect("timeline events")
        .iter()
        .filter(|e| e["lane"].as_str() == Some("worker-0"))
        .filter_map(|e| e["kind"].as_str())
        .filter(|k| k.starts_with("kubelet-") && *k != "kubelet-ca")
        .collect();
    assert_eq!(kinds, ["kubelet-accepts", "kubelet-refuses"], "{paused:?}");
    let scenario = scenario("A forced rotation reaches the node");
    let events = scenario["timeline"]["events"]
        .as_sequence()
        .expect("timeline events");
    let issued = events
        .iter()
        .filter(|e| {
            e["lane"].as_str() == Some("kube-apiserver-to-kubelet-signer")
                && e["kind"].as_str() == Some("issued")
        })
        .count();
    assert_eq!(issued, 2, "{scenario:?}");
}
