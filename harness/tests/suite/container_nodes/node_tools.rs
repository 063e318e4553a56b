//! Inside a container node: what the `Node` trait writes the container's kernel shows (and the
//! reverse), the node's tools on its PATH answered by its init, PID 1, `/run` as RHCOS mounts
//! it, the node following the scenario's clock, and the container gone after shutdown.

use super::{docker_exec, node_image};
use harness::node::JournalMark;
use harness::profile::Profile;
use harness::scenario::{NodeBackend, Scenario, ScenarioOptions};
use std::time::Duration;

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
