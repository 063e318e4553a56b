//! The embedded node's unit tests: files, systemctl and the journal, the private bus, reboots.

use super::*;
use crate::node::{AGENT_UNIT, CRIO_UNIT, KUBELET_UNIT};

/// A service that logs when it starts and stops.
struct Chatty;

#[async_trait::async_trait]
impl Service for Chatty {
    async fn run(&self, ctx: ServiceContext) {
        ctx.log("up");
        ctx.stop.cancelled().await;
        ctx.log("down");
    }
}

async fn node() -> EmbeddedNode {
    let node = EmbeddedNode::new(
        "node-1",
        &[KUBELET_UNIT, CRIO_UNIT, AGENT_UNIT],
        SimClock::default(),
    )
    .unwrap();
    node.set_service(KUBELET_UNIT, Arc::new(Chatty));
    node.boot().await;
    node
}

#[tokio::test]
async fn files_with_modes_and_no_escape() {
    let n = node().await;
    n.write("/etc/kubernetes/kubelet-ca.crt", b"pem\n", 0o600)
        .await
        .unwrap();
    assert_eq!(n.read("/etc/kubernetes/kubelet-ca.crt").await.unwrap(), b"pem\n");
    let st = n.stat("/etc/kubernetes/kubelet-ca.crt").await.unwrap().unwrap();
    assert_eq!((st.mode, st.size), (0o600, 4));
    assert_eq!(n.list("/etc/kubernetes").await.unwrap(), ["kubelet-ca.crt"]);
    assert!(n.stat("/nope").await.unwrap().is_none());
    for bad in ["relative/path", "/etc/../../outside", "/.."] {
        assert!(
            matches!(n.read(bad).await, Err(NodeError::BadPath { .. })),
            "{bad}"
        );
    }
    n.remove("/etc/kubernetes/kubelet-ca.crt").await.unwrap();
    n.remove("/etc/kubernetes/kubelet-ca.crt").await.unwrap();
    // A node shut down and dropped leaves nothing in the scratch directory.
    let root = n.root().to_path_buf();
    n.shutdown().await;
    drop(n);
    assert!(!root.exists(), "{} is left behind", root.display());
}

#[tokio::test]
async fn systemctl_drives_services_and_the_journal() {
    let n = node().await;
    let mark = n.journal_mark().await.unwrap();
    let out = n.systemctl(&["restart", "kubelet"]).await.unwrap();
    assert_eq!(out.exit_code, 0);
    let lines = n.journal_since(mark).await.unwrap();
    let tail: Vec<&str> = lines.iter().map(|l| l.split_once("node-1 ").unwrap().1).collect();
    assert_eq!(tail[0], "systemd[1]: Stopping kubelet.service...");
    assert_eq!(tail[1], "systemd[1]: Stopped kubelet.service.");
    assert!(tail.contains(&"systemd[1]: Started kubelet.service."));
    assert!(
        n.wait_for_journal(mark, "kubelet[", Duration::from_secs(5))
            .await
            .unwrap()
            .expect("the kubelet's line")
            .ends_with(": up")
    );
    assert!(
        lines.iter().any(|l| l.contains("]: down")),
        "the old kubelet stopped: {lines:?}"
    );
    n.shutdown().await;
}

/// A unit file is a unit at the next systemctl call whether it was written at once after
/// the last look (the directory's mtime within the kernel's clock tick of that look) or
/// after looks that found the directory unchanged since long before them.
#[tokio::test]
async fn unit_files_written_between_calls_are_units() {
    let n = node().await;
    let is_known = |out: Outcome| out.exit_code != 5 && !out.stderr.contains("not found");
    assert!(!is_known(n.systemctl(&["start", "early.service"]).await.unwrap()));
    n.write("/etc/systemd/system/early.service", b"[Service]\n", 0o644)
        .await
        .unwrap();
    assert!(is_known(n.systemctl(&["start", "early.service"]).await.unwrap()));
    // Looks that find the directory unchanged since well before them: its mtime set a second
    // back (more than the slack), as if its last change were long past.
    let units = std::fs::File::open(n.root().join("etc/systemd/system")).unwrap();
    units
        .set_modified(std::time::SystemTime::now() - UNIT_DIR_SLACK * 10)
        .unwrap();
    n.systemctl(&["is-active", "early.service"]).await.unwrap();
    n.systemctl(&["is-active", "early.service"]).await.unwrap();
    n.write("/etc/systemd/system/late.service", b"[Service]\n", 0o644)
        .await
        .unwrap();
    assert!(is_known(n.systemctl(&["start", "late.service"]).await.unwrap()));
    n.shutdown().await;
}

#[tokio::test]
async fn systemds_private_bus_lists_unit_files_to_a_real_dbus_client_after_every_boot() {
    // dbus-send (Debian's dbus-bin) as the client: EXTERNAL auth, no Hello (--peer), as
    // go-systemd's NewSystemdConnectionContext talks to systemd.
    if std::process::Command::new("dbus-send")
        .arg("--help")
        .output()
        .is_err()
    {
        fake_apiserver::testing::skip("no dbus-send (apt-get install dbus-bin)");
        return;
    }
    let n = node().await;
    let ask = |member: &str| {
        let address = format!("unix:path={}", n.root().join("run/systemd/private").display());
        let member = format!("org.freedesktop.systemd1.Manager.{member}");
        async move {
            tokio::process::Command::new("dbus-send")
                .arg(format!("--peer={address}"))
                .args([
                    "--print-reply",
                    "--reply-timeout=5000",
                    "--dest=org.freedesktop.systemd1",
                ])
                .args(["/org/freedesktop/systemd1", &member])
                .output()
                .await
                .unwrap()
        }
    };
    for round in ["first boot", "after a reboot"] {
        let out = ask("ListUnitFiles").await;
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{round}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("string \"/etc/systemd/system/kubelet.service\"")
                && text.contains("string \"enabled\""),
            "{round}: {text}"
        );
        let out = ask("Frobnicate").await;
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("UnknownMethod"),
            "{round}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mark = n.journal_mark().await.unwrap();
        n.systemctl(&["reboot"]).await.unwrap();
        n.wait_for_journal(mark, "Started kubelet.service.", Duration::from_secs(5))
            .await
            .unwrap()
            .expect("booted again");
    }
    n.shutdown().await;
}

#[tokio::test]
async fn reboot_empties_run_keeps_files_and_changes_the_boot_id() {
    let n = node().await;
    n.write("/run/machine-config-daemon-force", b"", 0o644)
        .await
        .unwrap();
    n.write("/etc/kept", b"x", 0o644).await.unwrap();
    let (mark, before) = (n.journal_mark().await.unwrap(), n.boot_id().await.unwrap());
    n.systemctl(&["reboot"]).await.unwrap();
    let marker = n
        .wait_for_journal(mark, "-- Boot ", Duration::from_secs(5))
        .await
        .unwrap()
        .expect("a boot marker");
    n.wait_for_journal(mark, "Started kubelet.service.", Duration::from_secs(5))
        .await
        .unwrap()
        .expect("kubelet back");
    let after = n.boot_id().await.unwrap();
    assert_ne!(after, before);
    assert_eq!(marker, format!("-- Boot {after} --"));
    assert!(
        n.stat("/run/machine-config-daemon-force")
            .await
            .unwrap()
            .is_none(),
        "/run is emptied"
    );
    assert_eq!(n.read("/etc/kept").await.unwrap(), b"x");
    n.shutdown().await;
}

/// An agent that runs as a process of its own (as `AgentProcess` does): it notes the paced time
/// at which its stop reached it.
struct ProcessAgent(Arc<std::sync::Mutex<Option<crate::pace::Mark>>>);

#[async_trait::async_trait]
impl Service for ProcessAgent {
    async fn run(&self, ctx: ServiceContext) {
        ctx.stop.cancelled().await;
        *self.0.lock().unwrap() = Some(crate::pace::Mark::now());
    }

    fn runs_a_process(&self) -> bool {
        true
    }
}

/// A reboot stops the node's units first and an agent that is a process last, a moment of
/// paced time after `systemctl reboot`: as a real node's shutdown reaches a pod's container only
/// after its units, so what the agent sent just before is not cut off.
#[tokio::test]
async fn a_reboot_stops_an_agent_process_last_after_the_shutdown_s_pace() {
    let n = EmbeddedNode::new(
        "node-1",
        &[KUBELET_UNIT, CRIO_UNIT, AGENT_UNIT],
        SimClock::default(),
    )
    .unwrap();
    let stopped = Arc::new(std::sync::Mutex::new(None));
    n.set_service(KUBELET_UNIT, Arc::new(Chatty));
    n.set_service(AGENT_UNIT, Arc::new(ProcessAgent(stopped.clone())));
    n.boot().await;
    let mark = n.journal().mark();
    let asked = crate::pace::Mark::now();
    n.systemctl(&["reboot"]).await.unwrap();
    n.wait_for_journal(mark, "-- Boot ", Duration::from_secs(30))
        .await
        .unwrap()
        .expect("a boot marker");
    let lines = n.journal().since(mark);
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in {lines:#?}"))
    };
    assert!(
        at("Stopped kubelet.service.") < at("Stopping machine-config-daemon.service..."),
        "{lines:#?}"
    );
    let reached = stopped.lock().unwrap().take().expect("the agent was stopped");
    assert!(
        asked.until(&reached).paced >= super::units::SHUTDOWN_BEFORE_AGENT,
        "the agent was stopped {:?} (paced) after the reboot was asked for",
        asked.until(&reached).paced
    );
    n.shutdown().await;
}
