//! Container nodes: the node image's init as PID 1, the same `Node` trait as the
//! embedded backend, and the node's tools inside the container. Each test skips, saying why,
//! without a Docker engine or a static busybox.

use harness::node::container::MAX_STARTING;
use harness::node::control::READY_LINE;
use harness::node::image::{ImageError, docker_unavailable, ensure_node_image, find_busybox};
use harness::node::{JournalMark, Node};
use harness::profile::Profile;
use harness::scenario::{NodeBackend, Scenario, ScenarioOptions};
use std::process::Command;
use std::time::Duration;

/// The node image with this build's binaries, or why there can be none here.
fn node_image() -> Result<String, String> {
    if let Some(why) = docker_unavailable() {
        return Err(format!("no Docker engine ({why})"));
    }
    if find_busybox().is_err() {
        return Err(ImageError::NoBusybox.to_string());
    }
    // The harness's binaries, built beside this test by cargo: missing ones fail the test.
    let binaries = harness::node::image::harness_binaries().unwrap();
    Ok(ensure_node_image(&binaries).unwrap().reference)
}

macro_rules! image_or_skip {
    () => {
        match node_image() {
            Ok(image) => image,
            Err(why) => {
                fake_apiserver::testing::skip(&why);
                return;
            }
        }
    };
}

async fn scenario(backend: NodeBackend) -> Scenario {
    let mut options = ScenarioOptions::new(Profile::Ocp416);
    options.nodes = vec![("worker".into(), 1)];
    options.backend = backend;
    Scenario::start(options).await.unwrap()
}

/// The systemctl calls of the golden test, with a reboot last.
const SEQUENCE: &[&[&str]] = &[
    &["daemon-reload"],
    &["is-active", "kubelet"],
    &["restart", "crio.service"],
    &["reload", "crio"],
    &["stop", "kubelet"],
    &["is-active", "kubelet"],
    &["start", "kubelet"],
    &["start", "nope"],
    &["frobnicate"],
    &["is-enabled", "kubelet"],
    &["list-units", "--state=failed", "--no-legend"],
    &["reboot"],
];

/// What every node answers to `SEQUENCE`: exit code, stdout and stderr per call, then the
/// service manager's journal lines (timestamps and host cut off, the boot id replaced).
const GOLDEN_OUTPUT: &[(i32, &str, &str)] = &[
    (0, "", ""),
    (0, "active\n", ""),
    (0, "", ""),
    (0, "", ""),
    (0, "", ""),
    (3, "inactive\n", ""),
    (0, "", ""),
    (
        5,
        "",
        "Failed to start nope.service: Unit nope.service not found.\n",
    ),
    (1, "", "Unknown command verb 'frobnicate'.\n"),
    (0, "enabled\n", ""),
    (0, "", ""),
    (0, "", ""),
];
const GOLDEN_JOURNAL: &[&str] = &[
    "systemd[1]: Reloading.",
    "systemd[1]: Stopping crio.service...",
    "systemd[1]: Stopped crio.service.",
    "systemd[1]: Starting crio.service...",
    "systemd[1]: Started crio.service.",
    "systemd[1]: Reloading crio.service...",
    "systemd[1]: Reloaded crio.service.",
    "systemd[1]: Stopping kubelet.service...",
    "systemd[1]: Stopped kubelet.service.",
    "systemd[1]: Starting kubelet.service...",
    "systemd[1]: Started kubelet.service.",
    "systemd[1]: Stopping crio.service...",
    "systemd[1]: Stopped crio.service.",
    "systemd[1]: Stopping kubelet.service...",
    "systemd[1]: Stopped kubelet.service.",
    "systemd[1]: Stopping machine-config-daemon.service...",
    "systemd[1]: Stopped machine-config-daemon.service.",
    "-- Boot <id> --",
    "systemd[1]: Starting crio.service...",
    "systemd[1]: Started crio.service.",
    "systemd[1]: Starting kubelet.service...",
    "systemd[1]: Started kubelet.service.",
    "systemd[1]: Starting machine-config-daemon.service...",
    "systemd[1]: Started machine-config-daemon.service.",
];

async fn run_sequence(node: &dyn Node) -> (Vec<(i32, String, String)>, Vec<String>) {
    let mark = node.journal_mark().await.unwrap();
    let mut outputs = Vec::new();
    for args in SEQUENCE {
        let out = node.systemctl(args).await.unwrap();
        outputs.push((out.exit_code, out.stdout, out.stderr));
    }
    node.wait_for_journal(
        mark,
        "Started machine-config-daemon.service.",
        Duration::from_secs(20),
    )
    .await
    .unwrap()
    .expect("the node booted again");
    let lines = node
        .journal_since(mark)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|line| {
            if line.starts_with("-- Boot ") {
                return Some("-- Boot <id> --".to_string());
            }
            let message = line.split_once(&format!(" {} ", node.name()))?.1.to_string();
            message.starts_with("systemd[1]: ").then_some(message)
        })
        .collect();
    (outputs, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn systemctl_gives_the_same_outputs_and_journal_lines_on_both_backends() {
    let image = image_or_skip!();
    let golden_output: Vec<(i32, String, String)> = GOLDEN_OUTPUT
        .iter()
        .map(|(c, o, e)| (*c, o.to_string(), e.to_string()))
        .collect();
    for backend in [NodeBackend::Embedded, NodeBackend::Container { image }] {
        let s = scenario(backend.clone()).await;
        let node = s.nodes[0].as_ref();
        let before = node.boot_id().await.unwrap();
        let (outputs, journal) = run_sequence(node).await;
        assert_eq!(outputs, golden_output, "{backend:?}");
        assert_eq!(journal, GOLDEN_JOURNAL, "{backend:?}");
        assert_ne!(
            node.boot_id().await.unwrap(),
            before,
            "{backend:?}: a new boot id"
        );
        s.shutdown().await;
    }
}

fn docker_exec(container: &str, command: &[&str]) -> (i32, String, String) {
    let out = Command::new("docker")
        .args(["exec", container])
        .args(command)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inside_the_container_the_node_tools_and_the_kernel_agree_with_the_node_trait() {
    let image = image_or_skip!();
    let mut options = ScenarioOptions::new(Profile::Ocp412);
    options.nodes = vec![("worker".into(), 1)];
    options.backend = NodeBackend::Container { image: image.clone() };
    let s = Scenario::start(options).await.unwrap();
    let node = s.nodes[0].as_ref();
    let id = node.container_id().expect("a container node has a container");

    // Files: what the trait writes, the container's kernel shows, and the reverse.
    node.write("/etc/mco-conformance/probe", b"probe\n", 0o640)
        .await
        .unwrap();
    let (code, stat, err) = docker_exec(&id, &["stat", "-c", "%a %u %g %s", "/etc/mco-conformance/probe"]);
    assert_eq!(code, 0, "{err}");
    let st = node.stat("/etc/mco-conformance/probe").await.unwrap().unwrap();
    assert_eq!(
        stat.trim(),
        format!("{:o} {} {} {}", st.mode, st.uid, st.gid, st.size)
    );
    assert_eq!((st.mode, st.uid), (0o640, 0), "root's file, as the kernel says");
    let (code, _, err) = docker_exec(&id, &["sh", "-c", "echo from-the-shell > /etc/shell-file"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(node.read("/etc/shell-file").await.unwrap(), b"from-the-shell\n");
    assert!(node.stat("/nope").await.unwrap().is_none());
    assert!(node.read("/nope").await.is_err());

    // systemctl, journalctl and logger on the node's PATH, answered by PID 1.
    let (code, out, _) = docker_exec(&id, &["systemctl", "is-active", "kubelet"]);
    assert_eq!((code, out.as_str()), (0, "active\n"));
    let mark = node.journal_mark().await.unwrap();
    let (code, _, err) = docker_exec(&id, &["logger", "-t", "qe", "hello from logger"]);
    assert_eq!(code, 0, "{err}");
    let line = node
        .wait_for_journal(mark, "hello from logger", Duration::from_secs(5))
        .await
        .unwrap()
        .expect("logger's line in the journal");
    assert!(line.contains(" worker-0 qe["), "{line}");
    let (code, out, err) = docker_exec(&id, &["journalctl", "-u", "qe", "-o", "cat", "-n", "1"]);
    assert_eq!((code, out.as_str()), (0, "hello from logger\n"), "{err}");
    let (code, _, err) = docker_exec(&id, &["journalctl", "--frobnicate"]);
    assert_eq!(code, 1);
    assert!(err.contains("unsupported option"), "{err}");

    // update-ca-trust and ostree's `config set` are recorded in the journal; other ostree
    // commands fail, saying why.
    let mark = node.journal_mark().await.unwrap();
    let (code, _, err) = docker_exec(&id, &["update-ca-trust", "extract"]);
    assert_eq!(code, 0, "{err}");
    let fsync = [
        "ostree",
        "--repo=/sysroot/ostree/repo",
        "config",
        "set",
        "core.per-object-fsync",
        "true",
    ];
    let (code, _, err) = docker_exec(&id, &fsync);
    assert_eq!(code, 0, "{err}");
    let line = node
        .wait_for_journal(mark, "core.per-object-fsync", Duration::from_secs(5))
        .await
        .unwrap()
        .expect("ostree's line in the journal");
    assert!(line.ends_with(&format!("]: {}", fsync.join(" "))), "{line}");
    let (code, out, _) = docker_exec(&id, &["journalctl", "-u", "update-ca-trust", "-o", "cat"]);
    assert_eq!((code, out.as_str()), (0, "update-ca-trust extract\n"));
    let (code, _, err) = docker_exec(&id, &["ostree", "admin", "status"]);
    assert_eq!(code, 1);
    assert!(err.contains("no OSTree repository"), "{err}");

    // PID 1 is the init; the agent is its child, with the contract's environment.
    let (_, comm, _) = docker_exec(&id, &["cat", "/proc/1/comm"]);
    assert_eq!(comm.trim(), "mco-node-init");

    // /run is a tmpfs as systemd mounts it on RHCOS: nosuid, nodev, mode 0755, and not noexec
    // (Docker's own tmpfs mounts are): a script there runs.
    let (_, mounts, _) = docker_exec(&id, &["cat", "/proc/1/mounts"]);
    let run: Vec<&str> = mounts
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .find(|f| f.get(1) == Some(&"/run"))
        .unwrap_or_else(|| panic!("no mount on /run: {mounts}"))
        .into_iter()
        .collect();
    let options: Vec<&str> = run[3].split(',').collect();
    assert_eq!(run[2], "tmpfs", "{run:?}");
    assert!(
        options.contains(&"nosuid") && options.contains(&"nodev") && options.contains(&"mode=755"),
        "{run:?}"
    );
    assert!(!options.contains(&"noexec"), "{run:?}");
    let (code, out, err) = docker_exec(
        &id,
        &[
            "sh",
            "-c",
            "printf '#!/bin/sh\\necho ran\\n' > /run/probe && chmod +x /run/probe && /run/probe",
        ],
    );
    assert_eq!((code, out.as_str()), (0, "ran\n"), "{err}");
    let (_, now, _) = docker_exec(&id, &["cat", "/run/mco-conformance/now"]);
    assert_eq!(
        now.trim(),
        harness::pki::rfc3339(harness::pki::Clock::now(&s.clock))
    );
    let later = s.clock.advance(time::Duration::days(3));
    node.follow_clock(later).await.unwrap();
    let (_, now, _) = docker_exec(&id, &["cat", "/run/mco-conformance/now"]);
    assert_eq!(
        now.trim(),
        harness::pki::rfc3339(harness::pki::Clock::now(&s.clock)),
        "the node follows the scenario's clock"
    );
    let journal = node.journal_since(JournalMark(0)).await.unwrap().join("\n");
    assert!(
        journal.contains("machine-config-daemon["),
        "the agent logs into the journal: {journal}"
    );
    s.shutdown().await;
    let (code, _, _) = docker_exec(&id, &["true"]);
    assert_ne!(code, 0, "the container is gone after shutdown");
}

/// A vendor's agent image built FROM the node image: the init stays PID 1 and runs the image's
/// entrypoint and command as the agent service, and the report names the image and its id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_image_built_from_the_node_image_runs_as_the_agent_service() {
    let image = image_or_skip!();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tag = format!("mco-conformance-test-agent:{}", image.rsplit_once(':').unwrap().1);
    let dockerfile =
        format!("FROM {image}\nENTRYPOINT [\"/usr/bin/mco-reference-daemon\"]\nCMD [\"--from-the-image\"]\n");
    let mut build = Command::new("docker")
        .args(["build", "-q", "-t", &tag, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    build
        .stdin
        .take()
        .unwrap()
        .write_all(dockerfile.as_bytes())
        .unwrap();
    let built = build.wait_with_output().unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );

    let command = harness::node::image::agent_image_command(&tag).unwrap();
    assert_eq!(command, ["/usr/bin/mco-reference-daemon", "--from-the-image"]);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = harness::runner::RunConfig::new(
        vec![root.join("features/kubelet_restart.feature")],
        dir.path().to_path_buf(),
    );
    config.nodes = harness::runner::Nodes::Container;
    config.agent = harness::scenario::AgentKind::Image {
        image: tag.clone(),
        command,
    };
    let report = dir.path().join("report.yaml");
    config.report = Some(report.clone());
    let summary = harness::runner::run(&config).await.unwrap();
    assert_eq!(summary.failed, 0, "{summary:?}");
    assert!(summary.passed >= 4, "{summary:?}");
    let yaml: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(yaml["agent"]["kind"].as_str(), Some("image"));
    assert_eq!(yaml["agent"]["image"].as_str(), Some(tag.as_str()));
    assert_eq!(yaml["agent"]["sha256"].as_str().map(str::len), Some(64));
    assert_eq!(yaml["nodes"].as_str(), Some("container"), "{yaml:?}");
}

/// A missing agent image is named, not pulled from a registry.
/// An RFC 3339 time as Docker prints it (nanoseconds, `Z`).
fn docker_time(text: &str) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

/// The most intervals that hold one instant.
fn most_at_once(intervals: &[(time::OffsetDateTime, time::OffsetDateTime)]) -> usize {
    intervals
        .iter()
        .map(|(start, _)| intervals.iter().filter(|(s, e)| s <= start && start < e).count())
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_four_node_containers_start_at_once() {
    let image = image_or_skip!();
    let mut options = ScenarioOptions::new(Profile::Ocp416);
    options.nodes = vec![("worker".into(), 6)];
    options.backend = NodeBackend::Container { image };
    let s = Scenario::start(options).await.unwrap();
    // Each container from its process's start (Docker's `StartedAt`) to the init's ready line
    // (`docker logs -t`), both on the Docker engine's clock.
    let starting: Vec<_> = s
        .nodes
        .iter()
        .map(|node| {
            let id = node.container_id().unwrap();
            let out = Command::new("docker")
                .args(["inspect", "-f", "{{.State.StartedAt}}", &id])
                .output()
                .unwrap();
            let started = docker_time(&String::from_utf8_lossy(&out.stdout));
            let out = Command::new("docker").args(["logs", "-t", &id]).output().unwrap();
            let logs = String::from_utf8_lossy(&out.stdout);
            let ready = logs
                .lines()
                .find(|l| l.ends_with(READY_LINE))
                .and_then(|l| l.split(' ').next())
                .unwrap_or_else(|| panic!("{} printed its ready line: {logs}", node.name()));
            (started, docker_time(ready))
        })
        .collect();
    // The six start together, so without the limit all six would be starting at one instant.
    // (Fewer than four at once is fine: other tests' containers share the limit.)
    let most = most_at_once(&starting);
    assert!(
        most <= MAX_STARTING,
        "at most {MAX_STARTING} node containers start at once: {most} did ({starting:?})"
    );
    s.shutdown().await;
}

#[test]
fn overlapping_intervals_are_counted_at_their_busiest_instant() {
    let t = |ms: i64| time::OffsetDateTime::UNIX_EPOCH + time::Duration::milliseconds(ms);
    assert_eq!(most_at_once(&[]), 0);
    assert_eq!(
        most_at_once(&[(t(0), t(10)), (t(10), t(20))]),
        1,
        "one ends as the next starts"
    );
    assert_eq!(
        most_at_once(&[(t(0), t(10)), (t(5), t(20)), (t(6), t(7)), (t(15), t(30))]),
        3
    );
}

#[test]
fn a_missing_agent_image_is_an_error_naming_it() {
    if let Some(why) = docker_unavailable() {
        fake_apiserver::testing::skip(&format!("no Docker engine ({why})"));
        return;
    }
    let err = harness::node::image::agent_image_command("mco-conformance-no-such-image:0")
        .unwrap_err()
        .to_string();
    assert!(err.contains("mco-conformance-no-such-image:0"), "{err}");
}

/// A container node whose control socket is gone cannot be observed, and says so: every read a
/// step makes fails naming the node and the socket, so no negative check ("no node's journal
/// shows …") can pass having read nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_control_socket_is_gone_fails_every_observation_naming_it() {
    let image = image_or_skip!();
    let s = scenario(NodeBackend::Container { image }).await;
    let node = &s.nodes[0];
    let id = node.container_id().expect("a container node");
    let (code, _, err) = docker_exec(&id, &["rm", harness::node::control::CONTROL_SOCKET]);
    assert_eq!(code, 0, "{err}");
    let errors = [
        node.journal_mark().await.map(|_| ()).unwrap_err().to_string(),
        node.journal_since(JournalMark(0))
            .await
            .map(|_| ())
            .unwrap_err()
            .to_string(),
        node.boot_id().await.map(|_| ()).unwrap_err().to_string(),
        node.kubelet_endpoint().await.map(|_| ()).unwrap_err().to_string(),
        node.read("/etc/kubernetes/kubelet-ca.crt")
            .await
            .map(|_| ())
            .unwrap_err()
            .to_string(),
        node.stat("/").await.map(|_| ()).unwrap_err().to_string(),
    ];
    for e in &errors {
        assert!(e.contains("worker-0"), "names the node: {e}");
        assert!(e.contains("init.sock"), "names the socket: {e}");
    }
    // Moving the clock fails at once with the node's reason: its clock cannot follow, and the
    // step does not wait out its deadline for a heartbeat that cannot come.
    let started = std::time::Instant::now();
    let e = s
        .advance(time::Duration::minutes(1))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("worker-0") && e.contains("clock did not follow") && e.contains("init.sock"),
        "{e}"
    );
    assert!(
        started.elapsed() < s.options.deadline,
        "failed after {:?}, the step's deadline is {:?}",
        started.elapsed(),
        s.options.deadline
    );
    s.shutdown().await;
}

/// What the upstream machine-config-daemon asks of an RHCOS node, inside a container node:
/// this boot's id where the kernel keeps it, in the agent's own mount namespace,
/// new after a reboot (release-4.12/4.16 `getBootID`); `mount --rbind /run/secrets` onto itself
/// (release-4.12 start.go `bindPodMounts`); the `core` user with `runuser`, `usermod` and
/// `getent`; journald fields written by `logger --journald` and read back by `journalctl -o json`
/// with field matches (release-4.12 `storePendingState`/`getPendingState`); and `systemd-run`
/// as a transient unit (how upstream reboots).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_answers_what_upstreams_daemon_asks_of_rhcos() {
    let image = image_or_skip!();
    // After its checks the agent is the reference daemon, whose first run sets the Node's
    // annotations as any agent's must before a scenario starts.
    let script = "echo boot_id=$(cat /proc/sys/kernel/random/boot_id); \
        mkdir -p /run/secrets && mount --rbind /run/secrets /run/secrets && echo rbind-ok; \
        exec mco-reference-daemon";
    let mut options = ScenarioOptions::new(Profile::Ocp412);
    options.nodes = vec![("worker".into(), 1)];
    options.backend = NodeBackend::Container { image: image.clone() };
    options.agent = harness::scenario::AgentKind::Image {
        image: image.clone(),
        command: vec!["/bin/sh".into(), "-c".into(), script.into()],
    };
    let s = Scenario::start(options).await.unwrap();
    let node = s.nodes[0].as_ref();
    let id = node.container_id().expect("a container node has a container");
    let boot_id_line = |mark| async move {
        let line = node
            .wait_for_journal(mark, "boot_id=", Duration::from_secs(20))
            .await
            .unwrap()
            .expect("the agent printed its boot id");
        line.rsplit_once("boot_id=").unwrap().1.trim().to_string()
    };
    let first = boot_id_line(JournalMark(0)).await;
    let expected = harness::node::agent_service::uuid_form(&node.boot_id().await.unwrap());
    assert_eq!(first, expected, "the agent reads this boot's id");
    assert!(
        node.wait_for_journal(JournalMark(0), "rbind-ok", Duration::from_secs(5))
            .await
            .unwrap()
            .is_some(),
        "mount --rbind works for the agent: {:?}",
        node.journal_since(JournalMark(0)).await.unwrap()
    );

    // The core user, as RHCOS has it.
    let (code, out, err) = docker_exec(&id, &["runuser", "-u", "core", "--", "id", "-u"]);
    assert_eq!((code, out.trim()), (0, "1000"), "{err}");
    let (code, out, _) = docker_exec(&id, &["getent", "passwd", "core"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("core:x:1000:1000:"), "{out}");
    let (_, owner, _) = docker_exec(&id, &["stat", "-c", "%u %g %a", "/home/core"]);
    assert_eq!(owner.trim(), "1000 1000 700");
    let mark = node.journal_mark().await.unwrap();
    let (code, _, err) = docker_exec(&id, &["usermod", "-p", "$6$mco", "core"]);
    assert_eq!(code, 0, "{err}");
    let (_, shadow, _) = docker_exec(&id, &["cat", "/etc/shadow"]);
    assert!(shadow.contains("core:$6$mco:"), "{shadow}");
    assert!(
        node.wait_for_journal(mark, "change user 'core' password", Duration::from_secs(5))
            .await
            .unwrap()
            .is_some()
    );

    // The 4.12 daemon's pending state, written and read back as it does (it runs `logger` by
    // PATH; BusyBox's sh would run its own `logger` applet first, hence the full path here).
    let pending = "printf 'MESSAGE_ID=mco-pending\\nMESSAGE=rendered-worker-1\\nBOOT_ID=b0\\nPENDING=1' | /usr/bin/logger --journald";
    let (code, _, err) = docker_exec(&id, &["sh", "-c", pending]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = docker_exec(
        &id,
        &["journalctl", "-o", "json", "_UID=0", "MESSAGE_ID=mco-pending"],
    );
    assert_eq!(code, 0, "{err}");
    let entry: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&entry["MESSAGE"], &entry["BOOT_ID"], &entry["PENDING"]),
        (&"rendered-worker-1".into(), &"b0".into(), &"1".into())
    );

    // systemd-run: a transient unit, started and not waited for.
    let mark = node.journal_mark().await.unwrap();
    let (code, _, err) = docker_exec(
        &id,
        &[
            "systemd-run",
            "--unit",
            "probe",
            "--description",
            "a probe",
            "/bin/sh",
            "-c",
            "echo transient",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let ended = node
        .wait_for_journal(
            mark,
            "probe.service: Deactivated successfully.",
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    let lines = node.journal_since(mark).await.unwrap().join("\n");
    assert!(ended.is_some(), "{lines}");
    assert!(
        lines.contains("systemd[1]: Started probe.service - a probe."),
        "{lines}"
    );
    assert!(lines.contains(" probe["), "{lines}");

    // A reboot through systemd-run, as upstream does: a new boot id for the agent.
    let mark = node.journal_mark().await.unwrap();
    let (code, _, err) = docker_exec(
        &id,
        &[
            "systemd-run",
            "--unit",
            "machine-config-daemon-reboot",
            "/bin/sh",
            "-c",
            "systemctl reboot",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let second = boot_id_line(mark).await;
    assert_ne!(second, first, "a reboot is a new boot");
    assert_eq!(
        second,
        harness::node::agent_service::uuid_form(&node.boot_id().await.unwrap())
    );
    s.shutdown().await;
}
