use super::*;

#[test]
fn the_rust_source_place_and_cucumber_s_prefix_are_dropped() {
    assert_eq!(
        step_message(
            "Matched: harness/src/steps/node.rs:103:1\nStep panicked. Captured output: worker-0 rebooted\n"
        ),
        "worker-0 rebooted"
    );
    assert_eq!(
        step_message("Step doesn't match any function"),
        "Step doesn't match any function"
    );
}

fn script(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{text}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// An agent that answers `--version` gives its first line; one that takes it for a start,
/// leaving a child behind, gives nothing and leaves nothing: the probe's whole process group
/// is killed and reaped (it used to leave the agent's child running, one per run).
#[tokio::test]
async fn the_version_probe_reads_the_first_line_and_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let answers = script(dir.path(), "answers", "echo 'agent 1.2.3'\necho second\n");
    assert_eq!(agent_version(&answers).await.as_deref(), Some("agent 1.2.3"));
    let pids = dir.path().join("pids");
    let starts = script(
        dir.path(),
        "starts",
        &format!("sleep 300 &\necho $! > {}\nexec sleep 300\n", pids.display()),
    );
    assert_eq!(agent_version(&starts).await, None);
    let child: i32 = std::fs::read_to_string(&pids).unwrap().trim().parse().unwrap();
    // Reparented and killed: it ends as the kill lands, and its new parent reaps it later.
    let gone = ends_within(child, std::time::Duration::from_secs(10)).await;
    assert!(gone, "the probe's grandchild {child} still runs");
    // A flood is read up to its bound and no further.
    let floods = script(dir.path(), "floods", "yes 'agent 9.9.9'\n");
    assert_eq!(agent_version(&floods).await, None);
}

/// Whether `pid` ends (exits, whether or not its parent has reaped it yet) within `limit`.
/// The process is not this one's child, so nothing here can wait for it; a pidfd of it turns
/// readable when it exits (pidfd_open(2), Linux 5.3), whoever its parent is.
async fn ends_within(pid: i32, limit: std::time::Duration) -> bool {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: pidfd_open(2) takes a pid and flags, and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        // ESRCH: reaped already.
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    // SAFETY: `fd` was just opened by pidfd_open and nothing else owns it.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: the OwnedFd keeps its descriptor open, the same one, until the AsyncFd drops it.
    let pidfd =
        unsafe { tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) }
            .expect("a pidfd registers with the runtime");
    matches!(tokio::time::timeout(limit, pidfd.readable()).await, Ok(Ok(_)))
}

/// The wait tells a process that runs from one that ended and was not reaped yet.
#[tokio::test]
async fn a_pidfd_wait_sees_a_process_end_before_it_is_reaped() {
    let mut sleeper = std::process::Command::new("sleep").arg("300").spawn().unwrap();
    let pid = sleeper.id() as i32;
    assert!(!ends_within(pid, std::time::Duration::from_millis(50)).await);
    sleeper.kill().unwrap();
    assert!(ends_within(pid, std::time::Duration::from_secs(10)).await);
    sleeper.wait().unwrap();
    assert!(
        ends_within(pid, std::time::Duration::ZERO).await,
        "a reaped process has ended"
    );
}

/// A `@beyond-upstream` failure is listed apart for every agent and, for a vendor's agent
/// (here a mutant, judged as one), left out of the profile's results; the verdict is the
/// run's one rule (`Summary::verdict`), whatever the results file says.
#[tokio::test]
async fn beyond_upstream_failures_are_apart_for_other_agents_and_the_verdict_is_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let scenario = |name: &str, tags: &[&str], status: &str| {
        json!({"name": name, "line": 1,
               "tags": tags.iter().map(|t| json!({"name": t})).collect::<Vec<_>>(),
               "steps": [{"keyword": "Then ", "name": "x", "line": 2, "result": {"status": status, "error_message": "seen"}}]})
    };
    let document = json!([{"uri": "f.feature", "name": "F", "tags": [], "elements": [
        scenario("hardening", &["@beyond-upstream"], "failed"),
        scenario("plain", &[], "passed"),
    ]}]);
    std::fs::write(&json, document.to_string()).unwrap();
    let report = |agent: AgentKind, summary: Summary| {
        let json = json.clone();
        async move {
            let ctx = ReportContext {
                agent: &agent,
                nodes: Nodes::Embedded,
                api_server: "in-process".into(),
                summary: &summary,
                results: vec![(Profile::Ocp416, json)],
                command: String::new(),
                agent_timeout: std::time::Duration::from_secs(30),
            };
            let yaml: serde_yaml::Value =
                serde_yaml::from_str(&conformance_report(&ctx).await.unwrap()).unwrap();
            let listed: Vec<String> = yaml["results"][0]["features"][0]["scenarios"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap().to_string())
                .collect();
            (
                yaml["verdict"].as_str().unwrap().to_string(),
                yaml["beyondUpstream"]["scenarios"].as_sequence().unwrap().len(),
                listed,
            )
        }
    };
    let mutant = || AgentKind::Mutant(crate::agent::Mutant::WrongMode);
    let counted = |passed, failed, beyond_upstream_failed| Summary {
        passed,
        failed,
        beyond_upstream_failed,
        ..Summary::default()
    };
    // The runner counts the hardening failure apart for the vendor, toward the verdict for
    // the reference daemon; the report follows the count.
    assert_eq!(
        report(mutant(), counted(1, 0, 1)).await,
        ("passed".into(), 1, vec!["plain".into()])
    );
    assert_eq!(
        report(AgentKind::Reference, counted(1, 1, 0)).await,
        ("failed".into(), 1, vec!["hardening".into(), "plain".into()])
    );
    let stopped = Summary {
        interrupted: Some("SIGINT"),
        ..counted(1, 0, 1)
    };
    assert_eq!(report(mutant(), stopped).await.0, "interrupted");
}

/// An Outline row's entry carries its values, read from the feature file the results name,
/// so two rows of one name are told apart without their lines.
#[tokio::test]
async fn an_outline_row_is_reported_with_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let feature = dir.path().join("o.feature");
    std::fs::write(
        &feature,
        "Feature: f\n  Scenario Outline: logs\n    Then <line>\n\n    Examples:\n      | line |\n      | a    |\n      | b    |\n\n  Scenario: plain\n    Then x\n",
    )
    .unwrap();
    let json_path = dir.path().join("r.json");
    let scenario = |line: u64| {
        json!({"name": if line == 10 { "plain" } else { "logs" }, "line": line, "tags": [],
               "steps": [{"keyword": "Then ", "name": "x", "line": 3, "result": {"status": "passed"}}]})
    };
    let document = json!([{"uri": feature.display().to_string(), "name": "f", "tags": [],
                           "elements": [scenario(7), scenario(8), scenario(10)]}]);
    std::fs::write(&json_path, document.to_string()).unwrap();
    let summary = Summary {
        passed: 3,
        crash_counts: vec![super::super::CrashCounts {
            profile: Profile::Ocp416,
            file: "o.feature".into(),
            line: 10,
            crash_points: 1,
            crash_runs: 2,
            power_loss_states: 13,
        }],
        ..Summary::default()
    };
    let ctx = ReportContext {
        agent: &AgentKind::Reference,
        nodes: Nodes::Embedded,
        api_server: "in-process".into(),
        summary: &summary,
        results: vec![(Profile::Ocp416, json_path)],
        command: String::new(),
        agent_timeout: std::time::Duration::from_secs(30),
    };
    let yaml: serde_yaml::Value = serde_yaml::from_str(&conformance_report(&ctx).await.unwrap()).unwrap();
    let rows: Vec<Option<String>> = yaml["results"][0]["features"][0]["scenarios"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| s["row"]["line"].as_str().map(String::from))
        .collect();
    assert_eq!(rows, [Some("a".into()), Some("b".into()), None]);
    // A crash-consistency scenario's counts, on its own entry only.
    let crashes = &yaml["results"][0]["features"][0]["scenarios"][2]["crashes"];
    assert_eq!(crashes["crashPointsTried"].as_u64(), Some(1));
    assert_eq!(crashes["crashRuns"].as_u64(), Some(2));
    assert_eq!(crashes["powerLossStatesJudged"].as_u64(), Some(13));
    assert!(yaml["results"][0]["features"][0]["scenarios"][0]["crashes"].is_null());
}
