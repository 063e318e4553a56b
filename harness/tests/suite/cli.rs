//! The `mco-conformance` command line: bad input exits 2 naming the problem, `steps` lists the
//! phrases from the code, and a narrowed run ends with the summary line.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_mco-conformance");

#[test]
fn bad_features_and_profiles_exit_2_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.feature");
    std::fs::write(
        &bad,
        "Feature: bad\n  Scenario Outline: o\n    Given a fresh cluster with 1 worker node\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["run", "--profile", "ocp-4.16"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:2: Scenario Outline \"o\" has no Examples",
            bad.display()
        )),
        "{stderr}"
    );
    let out = Command::new(BIN)
        .args(["run", "--profile", "ocp-4.99"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown profile \"ocp-4.99\""));
}

#[test]
fn steps_lists_every_phrase_with_its_source() {
    let out = Command::new(BIN).arg("steps").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Given a fresh cluster with <n> worker node(s)"),
        "{text}"
    );
    assert!(text.contains("(harness/src/steps/signer.rs:"), "{text}");
}

#[test]
fn an_unmatched_step_fails_the_run_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let feature = dir.path().join("typo.feature");
    std::fs::write(
        &feature,
        "Feature: typo\n  Scenario: s\n    Given a fresh clutser with 1 worker node\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["run", "--profile", "ocp-4.16", "--report-dir"])
        .arg(dir.path().join("report"))
        .arg(&feature)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("typo.feature:3"), "{stdout}");
    assert_eq!(
        stdout.lines().last(),
        Some("0 passed, 1 failed, 0 skipped (1 undefined step(s))"),
        "{stdout}"
    );
}

/// Two feature files in one run: one JUnit document and one Cucumber JSON document per profile
/// at the paths asked for (the profile before the extension when the run covers both), each
/// covering both files.
#[test]
fn reports_go_where_asked_one_document_per_profile_over_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let features = dir.path().join("features");
    std::fs::create_dir(&features).unwrap();
    for name in ["one", "two"] {
        std::fs::write(
            features.join(format!("{name}.feature")),
            format!(
                "Feature: {name}\n  Scenario: {name} starts\n    Given a fresh cluster with 1 worker node\n    Then no node has rebooted\n"
            ),
        )
        .unwrap();
    }
    let (junit, json) = (
        dir.path().join("out/results.xml"),
        dir.path().join("out/results.json"),
    );
    let out = Command::new(BIN)
        .args(["run", "--report-dir"])
        .arg(dir.path().join("report"))
        .arg("--junit")
        .arg(&junit)
        .arg("--json")
        .arg(&json)
        .arg(&features)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let total = 2 * harness::profile::Profile::ALL.len();
    assert_eq!(
        stdout.lines().last(),
        Some(format!("{total} passed, 0 failed, 0 skipped").as_str())
    );
    for profile in harness::profile::Profile::ALL {
        let xml = std::fs::read_to_string(dir.path().join(format!("out/results.{profile}.xml"))).unwrap();
        assert_eq!(xml.matches("<?xml").count(), 1, "one XML document: {xml}");
        assert!(xml.contains("one starts") && xml.contains("two starts"), "{xml}");
        // A test case is named by its scenario, not its line: CI follows it from run to run.
        for name in ["one", "two"] {
            assert!(
                xml.contains(&format!(r#"<testcase name="Scenario: {name} starts" "#)),
                "{xml}"
            );
        }
        let text = std::fs::read_to_string(dir.path().join(format!("out/results.{profile}.json"))).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
        assert_eq!(doc.as_array().map(Vec::len), Some(2), "both features: {text}");
    }
}

#[test]
fn bad_agent_options_exit_2_naming_the_option() {
    let cases: &[(&[&str], &str)] = &[
        (&["--agent-arg", "-v"], "--agent-arg needs --agent-binary"),
        (
            &["--agent-binary", "/no/such/agent"],
            "--agent-binary /no/such/agent: no such file",
        ),
        (
            &["--agent-timeout", "soon"],
            "--agent-timeout \"soon\": invalid duration",
        ),
        (
            &["--agent-timeout", "0s"],
            "--agent-timeout \"0s\": must be positive",
        ),
        (
            &[
                "--apiserver",
                "/no/such/kubeconfig",
                "--apiserver-client-ca",
                "/no/such/ca.crt",
                "--apiserver-client-ca-key",
                "/no/such/ca.key",
            ],
            "--apiserver: /no/such/kubeconfig: ",
        ),
        (&["--apiserver", "/no/such/kubeconfig"], "--apiserver-client-ca"),
        (&["--step-limit", "0s"], "--step-limit \"0s\": must be positive"),
        (
            &["--agent-image", "example.com/agent:1"],
            "--agent-image needs container nodes",
        ),
    ];
    for (args, expected) in cases {
        let out = Command::new(BIN).arg("run").args(*args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// A step whose await never answers is stopped at `--step-limit` and fails, naming the limit,
/// and the run ends: here an API server (given by kubeconfig) that accepts connections and never
/// says a word, under a long agent timeout that the start's waits would otherwise spend.
#[test]
fn a_step_whose_await_never_answers_is_stopped_at_the_step_limit() {
    let dir = tempfile::tempdir().unwrap();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        // Every connection is held open, unanswered, for as long as the test lives.
        let mut held = Vec::new();
        for stream in silent.incoming() {
            held.push(stream);
        }
    });
    let serving = fake_apiserver::CertificateAuthority::generate("silent serving CA").unwrap();
    let clients = fake_apiserver::CertificateAuthority::generate("silent client CA").unwrap();
    let admin = clients.issue_client("admin", &["system:masters"]).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        fake_apiserver::kubeconfig(&url, &serving.cert_pem, &admin),
    )
    .unwrap();
    let (ca, ca_key) = (dir.path().join("client-ca.crt"), dir.path().join("client-ca.key"));
    std::fs::write(&ca, &clients.cert_pem).unwrap();
    std::fs::write(&ca_key, clients.key_pem()).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(BIN)
        .current_dir(root)
        .args(["run", "--profile", "ocp-4.16", "--agent-timeout", "60s"])
        .args(["--step-limit", "2s"])
        .arg("--apiserver")
        .arg(&kubeconfig)
        .arg("--apiserver-client-ca")
        .arg(&ca)
        .arg("--apiserver-client-ca-key")
        .arg(&ca_key)
        .arg("--report-dir")
        .arg(dir.path().join("reports"))
        .arg("features/kubelet_restart.feature:22")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("did not end within the step limit of 2s"),
        "{stdout}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(50),
        "stopped at the limit, not the agent timeout: {:?}",
        started.elapsed()
    );
}

/// A run with an agent binary writes the conformance report: the agent's sha256 and version,
/// the verdict, every scenario's result, and the command that reproduces it.
#[test]
fn a_run_with_an_agent_binary_writes_the_conformance_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.yaml");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Command::new(BIN)
        .current_dir(root)
        .args([
            "run",
            "--profile",
            "ocp-4.12",
            "--tags",
            "@kubelet-restart",
            "--agent-timeout",
            "45s",
        ])
        .arg("--report-dir")
        .arg(dir.path())
        .arg("--agent-binary")
        .arg(env!("CARGO_BIN_EXE_mco-reference-daemon"))
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(yaml["kind"].as_str(), Some("ConformanceReport"));
    assert_eq!(yaml["verdict"].as_str(), Some("passed"));
    assert_eq!(yaml["claimedProfiles"][0].as_str(), Some("ocp-4.12"));
    assert_eq!(
        yaml["agent"]["version"].as_str(),
        Some(concat!("mco-reference-daemon ", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(yaml["agent"]["sha256"].as_str().map(str::len), Some(64));
    let scenarios = yaml["results"][0]["features"][0]["scenarios"]
        .as_sequence()
        .unwrap();
    assert!(
        scenarios.len() >= 2 && scenarios.iter().all(|s| s["result"].as_str() == Some("passed")),
        "{scenarios:?}"
    );
    assert!(
        yaml["reproduce"].as_str().unwrap().contains("--agent-binary"),
        "{:?}",
        yaml["reproduce"]
    );
}

/// Without a Docker engine a container run runs nothing and counts every scenario it would
/// have run as skipped, saying why; never as passed.
#[test]
fn a_container_run_without_docker_skips_every_scenario_with_the_reason() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let run = |extra: &[&str]| {
        Command::new(BIN)
            .current_dir(root)
            .args(["run", "--nodes", "container", "--profile", "ocp-4.16"])
            .args(extra)
            .arg(root.join("features/signer_rotation.feature"))
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .output()
            .unwrap()
    };
    // Nothing can run: no silent green, the run is refused with the reason.
    let out = run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("nothing to run:") && stderr.contains(": no Docker engine ("),
        "{stderr}"
    );
    // Allowed, every scenario is listed skipped with the reason.
    let out = run(&["--allow-empty"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let skips: Vec<&str> = stdout.lines().filter(|l| l.starts_with("skipped: ")).collect();
    assert!(
        !skips.is_empty() && skips.iter().all(|l| l.contains(": no Docker engine (")),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some(format!("0 passed, 0 failed, {} skipped", skips.len()).as_str()),
        "{stdout}"
    );
}

/// `--agent-image` names an image for container nodes; anywhere else it is refused.
#[test]
fn an_agent_image_needs_container_nodes() {
    let out = Command::new(BIN)
        .args(["run", "--agent-image", "example/agent:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--agent-image needs container nodes (--nodes container)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `mco-conformance steps | head`: a reader that stops early closes the pipe, and the
/// command ends quietly instead of panicking on its next write. Here the reader is gone before
/// the first write (every write fails with EPIPE).
#[test]
fn a_closed_stdout_ends_the_output_without_a_panic() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(BIN)
        .arg("steps")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
}

/// `cargo run --bin mco-conformance -- run` builds that one binary: the scenarios that start the
/// reference daemon as a process (the crash features trace it with strace) and an
/// `--agent-binary`'s node tools must come from it, not from binaries it cannot count on beside
/// it (absent on a first run, older after an edit). Run here from a directory that holds
/// nothing else, and then once more with the program's file removed as soon as it started, as a
/// rebuild during a run replaces it.
#[test]
fn mco_conformance_alone_starts_the_node_processes_from_itself() {
    let strace = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("strace").is_file()));
    if !strace {
        assert!(
            !fake_apiserver::testing::in_ci(),
            "CI=true and no strace: .ci/run installs Debian's strace"
        );
        eprintln!("SKIP: no strace on PATH (apt-get install strace)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("mco-conformance");
    std::fs::copy(BIN, &alone).unwrap();
    let features = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../features");
    let out = Command::new(&alone)
        .args(["run", "--profile", "ocp-4.16", "--report-dir"])
        .arg(dir.path().join("reports"))
        .arg(features.join("crash_consistency.feature"))
        .arg(features.join("power_loss.feature"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let summary = stdout.lines().last().unwrap_or_default();
    let crash_summary = summary.to_string();
    let passed: u32 = summary
        .split(" passed")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no summary line: {stdout}"));
    assert!(passed >= 2, "{stdout}");
    assert!(summary.contains(" 0 failed"), "{stdout}");

    // An agent binary's node tools come from it too: the reference daemon as `--agent-binary`,
    // given a new serving CA on 4.16, logs through the node's `logger` and restarts the kubelet
    // with the node's `systemctl`, both the lone program under those names.
    let feature = dir.path().join("tools.feature");
    std::fs::write(
        &feature,
        "Feature: tools\n  Scenario: the agent's logger and systemctl are the node's\n    Given a fresh cluster with 1 worker node\n    When the kube-apiserver's serving CA bundle gains a new CA\n    Then every node's journal shows \"restarting kubelet due to server-ca rotation\" through logger\n    And every node's journal shows, in this order:\n      | restarting kubelet due to server-ca rotation |\n      | Stopping kubelet.service...                  |\n      | Started kubelet.service.                     |\n",
    )
    .unwrap();
    let out = Command::new(&alone)
        .args(["run", "--profile", "ocp-4.16", "--agent-binary"])
        .arg(env!("CARGO_BIN_EXE_mco-reference-daemon"))
        .arg("--report-dir")
        .arg(dir.path().join("tools-reports"))
        .arg(&feature)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");

    // Removed once started (spawn returns after the exec): the run goes on with the program it
    // started as.
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let program = gone.join("mco-conformance");
    std::fs::copy(BIN, &program).unwrap();
    let child = Command::new(&program)
        .args(["run", "--profile", "ocp-4.16", "--report-dir"])
        .arg(dir.path().join("gone-reports"))
        .arg(features.join("crash_consistency.feature"))
        .arg(features.join("power_loss.feature"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::remove_file(&program).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.lines().last(), Some(crash_summary.as_str()), "{stdout}");
}
