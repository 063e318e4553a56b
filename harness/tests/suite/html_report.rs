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
        "Feature: A rotation on the page\n\n  Scenario: A forced rotation reaches the node\n    Given a fresh cluster with 1 worker node\n    When the kube-apiserver-to-kubelet-signer is rotated by force\n    Then every node's kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer\n    When 2 days pass\n\n  Scenario: A misspelt step\n    Given a fresh cluster with 1 worker node\n    Then every nodes kubelet-ca.crt lists the current kube-apiserver-to-kubelet-signer\n",
    )
    .unwrap();
    let page = dir.path().join("run.html");
    let report = dir.path().join("report.yaml");
    let out = Command::new(BIN)
        .args(["run", "--profile", "ocp-4.16", "--report-dir"])
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
        dom.contains("1 passed, 1 failed, 0 skipped (1 undefined step(s))"),
        "{dom}"
    );
    // The undefined step, with where it is and the phrase it missed.
    assert!(dom.contains("rotation.feature:11: undefined step"), "{dom}");
    // The passing scenario's timeline: the signer issued twice (install, then the forced
    // rotation) with its validity windows, the node's kubelet-ca.crt changing after it.
    let svg_start = dom
        .find(r#"aria-label="timeline of A forced rotation reaches the node""#)
        .expect("its timeline");
    let svg = &dom[svg_start..dom[svg_start..].find("</svg>").unwrap() + svg_start];
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
    let scenario = &yaml["results"][0]["features"][0]["scenarios"][0];
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
