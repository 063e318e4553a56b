//! What upstream's machine-config-daemon asks of an RHCOS node, inside a container node: the
//! boot id, bind mounts, the `core` user, journald fields, transient units and a reboot
//! through one.

use super::{docker_exec, node_image};
use harness::node::JournalMark;
use harness::profile::Profile;
use harness::scenario::{NodeBackend, Scenario, ScenarioOptions};
use std::time::Duration;

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
