//! Nodes: files, reboots and journals.

use super::oracle;
use super::params::{FileMode, NodePath};
use anyhow::{Context, ensure};
use cucumber::{given, then, when};
use harness::mco::KUBELET_CA_PATH;
use harness::wait::eventually;
use harness::world::ConformanceWorld;

/// Every node's `/etc/kubernetes/kubelet-ca.crt` holds, certificate for certificate and in
/// order, a named bundle: "kube-apiserver-client-ca" (what 4.16 writes), or "the initial bundle
/// with the kubelet signer's bundle merged in" (what 4.12 renders: release-4.12
/// `mergeCertWithCABundle`, computed here from the two ConfigMaps).
#[then(expr = "every node's kubelet-ca.crt equals {string}")]
async fn kubelet_ca_equals(world: &mut ConformanceWorld, source: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let expected = match source.as_str() {
        "kube-apiserver-client-ca" => oracle::certs(
            c.bundle("openshift-config-managed", "kube-apiserver-client-ca")
                .await?
                .as_bytes(),
        )?,
        "the initial bundle with the kubelet signer's bundle merged in" => {
            let initial = c
                .bundle("openshift-config", "initial-kube-apiserver-server-ca")
                .await?;
            let kubelet = c
                .bundle(
                    "openshift-kube-apiserver-operator",
                    "kube-apiserver-to-kubelet-client-ca",
                )
                .await?;
            oracle::merge_4_12(
                &oracle::certs(initial.as_bytes())?,
                &oracle::certs(kubelet.as_bytes())?,
            )
        }
        other => anyhow::bail!(
            "unknown bundle {other:?}: \"kube-apiserver-client-ca\" or \"the initial bundle with the kubelet signer's bundle merged in\""
        ),
    };
    for node in &c.nodes {
        let on_disk = node.read(KUBELET_CA_PATH).await?;
        let seen = oracle::certs(&on_disk)
            .with_context(|| format!("{}: {KUBELET_CA_PATH} cannot be read as a CA bundle", node.name()))?;
        if let Some(why) = oracle::bundle_difference(&seen, &expected) {
            anyhow::bail!("{}: kubelet-ca.crt is not {source}: {why}", node.name());
        }
    }
    Ok(())
}

/// Every node's file holds a ControllerConfig spec field as the 4.16 daemon writes it
/// (`writeToDisk`: the field's bytes, a newline appended when missing), e.g.
/// `/etc/kubernetes/kubelet-ca.crt` and `kubeAPIServerServingCAData`.
#[then(regex = r"^every node's (/\S+) holds the ControllerConfig's (\w+)$")]
async fn file_holds_controller_config(
    world: &mut ConformanceWorld,
    path: String,
    field: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let spec = c.controller_config_spec().await?;
    let expected = oracle::written_by_4_16(&oracle::spec_bytes(&spec, &field)?);
    for node in &c.nodes {
        let on_disk = node.read(&path).await?;
        ensure!(
            on_disk == expected,
            "{}: {path} does not hold spec.{field} ({} bytes, expected {}): {:?}",
            node.name(),
            on_disk.len(),
            expected.len(),
            String::from_utf8_lossy(&on_disk)
                .chars()
                .take(200)
                .collect::<String>()
        );
    }
    Ok(())
}

/// How many certificates every node's kubelet-ca.crt holds (their names on failure).
#[then(regex = r"^every node's kubelet-ca\.crt holds (\d+) certificates?$")]
async fn kubelet_ca_count(world: &mut ConformanceWorld, count: usize) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let names = oracle::names(&node.read(KUBELET_CA_PATH).await?)
            .with_context(|| format!("{}: {KUBELET_CA_PATH}", node.name()))?;
        ensure!(
            names.len() == count,
            "{}: kubelet-ca.crt holds {} certificates, expected {count}: {names:?}",
            node.name(),
            names.len()
        );
    }
    Ok(())
}

/// Every node has the boot id it had when the cluster started.
#[then("no node has rebooted")]
async fn no_reboot(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        ensure!(
            node.boot_id().await? == world.boot_id_at_start(node.name())?,
            "{} rebooted",
            node.name()
        );
    }
    Ok(())
}

/// A line containing the text appears in every node's journal since the cluster started (the
/// text runs to the last quote, so it may itself contain quotes). A line reaches the journal
/// after the process that logged it went on (journald on a real node, the node's init here,
/// read from a pipe), so the step waits for it up to the scenario's deadline, as anyone
/// following `journalctl` would; a journal that cannot be read fails the step at once.
#[then(regex = r#"^every node's journal shows "(.+)"$"#)]
async fn journal_shows(world: &mut ConformanceWorld, text: String) -> anyhow::Result<()> {
    journal_shows_from(world, &text, "since the cluster was up", |node| world.mark(node)).await
}

/// As `every node's journal shows "<text>"`, counting only lines since the last step that
/// restarted the agent (`the agent restarts on every node`) began: what the agent that started
/// then logged.
#[then(regex = r#"^every node's journal shows "(.+)" since the agent restarted$"#)]
async fn journal_shows_since_restart(world: &mut ConformanceWorld, text: String) -> anyhow::Result<()> {
    journal_shows_from(world, &text, "since the agent restarted", |node| {
        world
            .restart_marks
            .get(node)
            .copied()
            .with_context(|| format!("{node}: no step restarted its agent"))
    })
    .await
}

async fn journal_shows_from(
    world: &ConformanceWorld,
    text: &str,
    since: &str,
    mark_of: impl Fn(&str) -> anyhow::Result<harness::node::JournalMark>,
) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let mark = mark_of(node.name())?;
        let found = tokio::select! {
            found = node.wait_for_journal(mark, text, world.deadline) => found?,
            () = harness::interrupt::cancelled() => anyhow::bail!(harness::interrupt::reason()),
        };
        if found.is_none() {
            let lines = node.journal_since(mark).await?;
            anyhow::bail!(
                "{} journal has no line with {text:?} {since} within {:?}; last lines:\n{}",
                node.name(),
                world.deadline,
                lines[lines.len().saturating_sub(15)..].join("\n")
            );
        }
    }
    Ok(())
}

/// Lines containing the text appear in every node's journal since the cluster started, as many
/// as said: waited for until there are that many, then counted (more fails). A message MCO's
/// daemon logs with `logSystem` is two lines (its own log and, through `logger`, `root[…]`):
/// count what happened by a line only one writer makes (`Stopping kubelet.service`).
#[then(regex = r#"^every node's journal shows "(.+)" (once|twice|(\d+) times)$"#)]
async fn journal_shows_times(
    world: &mut ConformanceWorld,
    text: String,
    times: String,
    n: String,
) -> anyhow::Result<()> {
    let wanted = match times.as_str() {
        "once" => 1,
        "twice" => 2,
        _ => n
            .parse()
            .with_context(|| format!("{n:?} is not a number of times"))?,
    };
    journal_shows(world, text.clone()).await?;
    for node in &world.cluster()?.nodes {
        let mark = world.mark(node.name())?;
        let matching =
            |lines: Vec<String>| -> Vec<String> { lines.into_iter().filter(|l| l.contains(&text)).collect() };
        let found = tokio::select! {
            found = eventually(world.deadline, || async {
                let lines = matching(node.journal_since(mark).await.map_err(|e| e.to_string())?);
                if lines.len() >= wanted {
                    Ok(lines)
                } else {
                    Err(format!("{} lines with {text:?}, not {wanted}: {lines:?}", lines.len()))
                }
            }) => found,
            () = harness::interrupt::cancelled() => anyhow::bail!(harness::interrupt::reason()),
        };
        let lines = found.map_err(|e| anyhow::anyhow!("{} journal: {e}", node.name()))?;
        anyhow::ensure!(
            lines.len() == wanted,
            "{} journal has {} lines with {text:?}, not {wanted}:\n{}",
            node.name(),
            lines.len(),
            lines.join("\n")
        );
    }
    Ok(())
}

/// Every node's service manager says the unit is enabled (or disabled), as `systemctl
/// is-enabled` answers on the node.
#[then(regex = r"^every node's unit (\S+) is (enabled|disabled)$")]
async fn unit_enabled(world: &mut ConformanceWorld, unit: String, state: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let out = node.systemctl(&["is-enabled", &unit]).await?;
        anyhow::ensure!(
            out.stdout.trim() == state,
            "{}: systemctl is-enabled {unit} says {:?} (exit {}), not {state}",
            node.name(),
            out.stdout.trim(),
            out.exit_code
        );
    }
    Ok(())
}

/// Whether every node's `/etc/kubernetes/kubelet-ca.crt` lists the signer's current
/// certificate (as the API server holds it now).
#[then(regex = r"^every node's kubelet-ca\.crt (lists|lacks) the current (?P<signer>\S+)$")]
async fn kubelet_ca_lists(
    world: &mut ConformanceWorld,
    verdict: String,
    signer: String,
) -> anyhow::Result<()> {
    kubelet_ca_judged(world, verdict == "lists", &signer).await
}

/// The longest a failed ControllerConfig waits for its next try in upstream's certificate
/// writer: release-4.16 `handleControllerConfigErr` puts it back with `AddRateLimited` on a
/// queue built with client-go's `DefaultControllerRateLimiter`, whose per-item backoff doubles
/// from 5 ms and stops at 1000 s. Every event about the ControllerConfig goes through the same
/// limiter (`enqueueControllerConfig`), so no change to it brings the try sooner.
const CC_QUEUE_LONGEST_BACKOFF: std::time::Duration = std::time::Duration::from_secs(1000);

/// As `every node's kubelet-ca.crt lists the current <signer>`, for a node whose certificate
/// writer failed before (a 4.16 node with no role label): waited for up to the longest backoff
/// of upstream's rate-limited ControllerConfig queue, plus the sync bound, in wall time (the
/// queue's timer is the wall clock's), or until every node's writer has synced the
/// ControllerConfig as it is now (its `lastSyncedControllerConfigResourceVersion`), after which
/// the file is judged as it is. An agent that tries again sooner passes sooner.
#[then(
    regex = r"^on its certificate writer's next try every node's kubelet-ca\.crt lists the current (?P<signer>\S+)$"
)]
async fn kubelet_ca_lists_on_retry(world: &mut ConformanceWorld, signer: String) -> anyhow::Result<()> {
    let deadline = CC_QUEUE_LONGEST_BACKOFF + harness::scenario::SYNC_BOUND;
    let c = world.cluster()?;
    harness::wait::eventually_wall(deadline, || async {
        let Err(e) = kubelet_ca_judged(world, true, &signer).await else {
            return Ok(Ok(()));
        };
        // Every node's writer synced the ControllerConfig as it is now (it annotates the Node
        // with its resourceVersion once it wrote, release-4.16 certificate_writer.go:291-303):
        // no try is pending, the file is what it will be.
        let cc_rv = c
            .controller_config_resource_version()
            .await
            .map_err(|e| e.to_string())?;
        for node in &c.nodes {
            let synced = c
                .node_annotations(node.name())
                .await
                .map_err(|e| e.to_string())?
                .get(harness::mco::LAST_SYNCED_CONTROLLER_CONFIG)
                .cloned()
                .unwrap_or_default();
            if synced != cc_rv {
                return Err(format!(
                    "{e:#}; {} synced controllerconfig {synced:?}, not {cc_rv}",
                    node.name()
                ));
            }
        }
        Ok(Err(e))
    })
    .await
    .map_err(anyhow::Error::msg)?
}

async fn kubelet_ca_judged(world: &ConformanceWorld, lists_wanted: bool, signer: &str) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let (_, current) = c.named_certificate(signer).await?;
    for node in &c.nodes {
        let names = oracle::names(&node.read(KUBELET_CA_PATH).await?)
            .with_context(|| format!("{}: {KUBELET_CA_PATH}", node.name()))?;
        let lists = names.contains(&current.common_name);
        ensure!(
            lists == lists_wanted,
            "{}: kubelet-ca.crt {} {}: it holds {names:?}",
            node.name(),
            if lists { "lists" } else { "lacks" },
            current.common_name
        );
    }
    Ok(())
}

/// Whether every node's `/etc/kubernetes/kubelet-ca.crt` holds a certificate of the named
/// signer or target (by any name it goes by, as `lists the current <signer>` reads names) that
/// expired before the scenario's simulated now.
#[then(regex = r"^every node's kubelet-ca\.crt (lists|lacks) an expired (\S+)$")]
async fn kubelet_ca_expired(
    world: &mut ConformanceWorld,
    verdict: String,
    name: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let now = harness::pki::Clock::now(&c.clock).unix_timestamp();
    for node in &c.nodes {
        let certs = oracle::certs(&node.read(KUBELET_CA_PATH).await?)
            .with_context(|| format!("{}: {KUBELET_CA_PATH}", node.name()))?;
        let (named, expired) = expired_of(&certs, now, &name, |n| c.certificate_name(n))?;
        ensure!(
            expired.is_empty() == (verdict == "lacks"),
            "{}: kubelet-ca.crt {} an expired {}: expired ones of it {expired:?}; it holds {:?}",
            node.name(),
            if expired.is_empty() { "lacks" } else { "lists" },
            named.described(),
            certs.iter().map(|c| c.name.as_str()).collect::<Vec<_>>()
        );
    }
    Ok(())
}

/// What `written` names (`resolve`: `pki::names`), and the common names of the certificates
/// of `certs` that expired before `now` (unix seconds) and whose common name names the same
/// Secret: names are resolved whole, never matched as a part of another (`kubelet-signer`, the
/// installer's first csr-signer-signer, is not `kube-apiserver-to-kubelet-signer`).
fn expired_of<'a, E>(
    certs: &'a [oracle::Cert],
    now: i64,
    written: &str,
    resolve: impl Fn(&str) -> Result<harness::pki::CertificateName, E>,
) -> Result<(harness::pki::CertificateName, Vec<&'a str>), E> {
    let named = resolve(written)?;
    let expired = certs
        .iter()
        .filter(|c| c.not_after < now)
        .filter(|c| resolve(&c.name).is_ok_and(|n| n.namespace == named.namespace && n.name == named.name))
        .map(|c| c.name.as_str())
        .collect();
    Ok((named, expired))
}

/// What the write step puts in a file.
const WRITTEN: &[u8] = b"written by a step (mco-conformance)\n";

/// A step writes the file on every node (mode 0644), as `oc debug node/…` would.
#[when(regex = r"^the file (/\S+) is written on every node$")]
async fn write_file(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        node.write(&path, WRITTEN, 0o644).await?;
    }
    Ok(())
}

/// `systemctl reboot` on every node, then wait until each has booted again and its kubelet
/// and agent have started.
#[when("every node reboots")]
async fn reboot(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let before = node.boot_id().await?;
        let mark = node.journal_mark().await?;
        let out = node.systemctl(&["reboot"]).await?;
        ensure!(
            out.exit_code == 0,
            "{}: systemctl reboot: {}",
            node.name(),
            out.stderr
        );
        let node = node.as_ref();
        eventually(world.deadline, || async {
            let lines = node.journal_since(mark).await.map_err(|e| e.to_string())?;
            let booted = lines.iter().position(|l| l.starts_with("-- Boot "));
            let started = |unit: &str| {
                booted.is_some_and(|b| {
                    lines[b..]
                        .iter()
                        .any(|l| l.ends_with(&format!("Started {unit}.")))
                })
            };
            if node.boot_id().await.map_err(|e| e.to_string())? != before
                && started("kubelet.service")
                && started(harness::node::AGENT_UNIT)
            {
                Ok(())
            } else {
                Err(format!(
                    "{}: not booted again yet; journal since the reboot: {lines:?}",
                    node.name()
                ))
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// `systemctl restart machine-config-daemon.service` on every node, as deleting the daemon's
/// pod restarts it on a real cluster; the step ends when each node's service manager has
/// started it again.
#[when("the agent restarts on every node")]
async fn restart_agent(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let unit = harness::node::AGENT_UNIT;
    let c = world.cluster()?;
    let mut marks = std::collections::BTreeMap::new();
    for node in &c.nodes {
        let mark = node.journal_mark().await?;
        marks.insert(node.name().to_string(), mark);
        let out = node.systemctl(&["restart", unit]).await?;
        ensure!(
            out.exit_code == 0,
            "{}: systemctl restart {unit}: {}",
            node.name(),
            out.stderr.trim()
        );
        let node = node.as_ref();
        eventually(world.deadline, || async {
            let lines = node.journal_since(mark).await.map_err(|e| e.to_string())?;
            if lines.iter().any(|l| l.ends_with(&format!("Started {unit}."))) {
                Ok(())
            } else {
                Err(format!(
                    "{}: {unit} has not started again; journal since the restart: {lines:?}",
                    node.name()
                ))
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    world.restart_marks = marks;
    Ok(())
}

/// A file's owner and mode as the node's kernel reports them (`stat`), "root" being the owner
/// of the node's `/` (uid 0 in a container node; the user running the suite on an embedded
/// node, whose root is a directory of theirs).
#[then(expr = "every node's {path} is owned by root with mode {mode}")]
async fn owned_by_root(world: &mut ConformanceWorld, path: NodePath, mode: FileMode) -> anyhow::Result<()> {
    let (NodePath(path), FileMode(mode)) = (path, mode);
    for node in &world.cluster()?.nodes {
        let root = node
            .stat("/")
            .await?
            .with_context(|| format!("{}: no /", node.name()))?;
        let st = node
            .stat(&path)
            .await?
            .with_context(|| format!("{}: no {path}", node.name()))?;
        ensure!(
            (st.uid, st.gid, st.mode) == (root.uid, root.gid, mode),
            "{}: {path} is owned by {}:{} with mode {:04o}, expected root ({}:{}) with mode {mode:04o}",
            node.name(),
            st.uid,
            st.gid,
            st.mode,
            root.uid,
            root.gid
        );
    }
    Ok(())
}

/// A file's owner and mode as the node's kernel reports them (`stat`).
#[then(expr = "every node's {path} is owned by {int}:{int} with mode {mode}")]
async fn owner_and_mode(
    world: &mut ConformanceWorld,
    path: NodePath,
    uid: u32,
    gid: u32,
    mode: FileMode,
) -> anyhow::Result<()> {
    let (NodePath(path), FileMode(mode)) = (path, mode);
    for node in &world.cluster()?.nodes {
        let st = node
            .stat(&path)
            .await?
            .with_context(|| format!("{}: no {path}", node.name()))?;
        ensure!(
            (st.uid, st.gid, st.mode) == (uid, gid, mode),
            "{}: {path} is owned by {}:{} with mode {:04o}, expected {uid}:{gid} with mode {mode:04o}",
            node.name(),
            st.uid,
            st.gid,
            st.mode
        );
    }
    Ok(())
}

/// Every node has the file, and it is empty (0 bytes), as a template whose field is unset renders
/// it.
#[then(expr = "every node's {path} is empty")]
async fn file_is_empty(world: &mut ConformanceWorld, path: NodePath) -> anyhow::Result<()> {
    let NodePath(path) = path;
    for node in &world.cluster()?.nodes {
        let contents = node
            .read(&path)
            .await
            .with_context(|| format!("{}: reading {path}", node.name()))?;
        ensure!(
            contents.is_empty(),
            "{}: {path} holds {} byte(s), expected none: {:?}",
            node.name(),
            contents.len(),
            String::from_utf8_lossy(&contents[..contents.len().min(200)])
        );
    }
    Ok(())
}

/// Every node has the file, and it holds something (1 byte or more), as a template whose field
/// is set renders it.
#[then(expr = "every node's {path} is not empty")]
async fn file_is_not_empty(world: &mut ConformanceWorld, path: NodePath) -> anyhow::Result<()> {
    let NodePath(path) = path;
    for node in &world.cluster()?.nodes {
        let contents = node
            .read(&path)
            .await
            .with_context(|| format!("{}: reading {path}", node.name()))?;
        ensure!(!contents.is_empty(), "{}: {path} is empty", node.name());
    }
    Ok(())
}

/// The file a write step put on every node is still there, as written.
#[then(regex = r"^every node still has the file (/\S+) as written$")]
async fn still_has_written(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let contents = node.read(&path).await?;
        ensure!(
            contents == WRITTEN,
            "{}: {path} holds {:?}",
            node.name(),
            String::from_utf8_lossy(&contents)
        );
    }
    Ok(())
}

/// Note every node's file as it is now (its inode and contents), for a later step that asks
/// whether it was written again.
#[given(regex = r"^every node's (/\S+) is noted$")]
async fn file_noted(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    let mut noted = Vec::new();
    for node in &world.cluster()?.nodes {
        let stat = node
            .stat(&path)
            .await?
            .with_context(|| format!("{}: {path} does not exist, so it cannot be noted", node.name()))?;
        let contents = node.read(&path).await?;
        noted.push(((node.name().to_string(), path.clone()), (stat.inode, contents)));
    }
    world.noted.extend(noted);
    Ok(())
}

/// The inode and contents a "noted" step found for the file on this node.
fn noted<'w>(world: &'w ConformanceWorld, node: &str, path: &str) -> anyhow::Result<&'w (u64, Vec<u8>)> {
    world
        .noted
        .get(&(node.to_string(), path.to_string()))
        .with_context(|| {
            format!("{node}: {path} was not noted (add \"Given every node's {path} is noted\" first)")
        })
}

/// What a "noted" step found for the file on this node, and its inode and contents now.
async fn noted_and_now<'w>(
    world: &'w ConformanceWorld,
    node: &dyn harness::node::Node,
    path: &str,
) -> anyhow::Result<(&'w (u64, Vec<u8>), (u64, Vec<u8>))> {
    let noted = noted(world, node.name(), path)?;
    let now = node
        .stat(path)
        .await?
        .with_context(|| format!("{}: {path} is gone", node.name()))?;
    Ok((noted, (now.inode, node.read(path).await?)))
}

/// The file was written again since it was noted (a writer that replaces files, as MCO's
/// atomic writes do, leaves a new inode), with the contents it had: written, not changed.
#[then(regex = r"^every node's (/\S+) was written again with the same contents$")]
async fn file_written_again(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let ((inode, contents), (now, read)) = noted_and_now(world, node.as_ref(), &path).await?;
        ensure!(
            now != *inode,
            "{}: {path} was not written again: it is the same file (inode {inode}) as when it was noted",
            node.name()
        );
        ensure!(
            read == *contents,
            "{}: {path} was written with other contents: {:?}, noted {:?}",
            node.name(),
            String::from_utf8_lossy(&read),
            String::from_utf8_lossy(contents)
        );
    }
    Ok(())
}

/// The file is the very one that was noted: not replaced, not changed.
#[then(regex = r"^every node's (/\S+) was not written again$")]
async fn file_not_written_again(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let ((inode, contents), (now, read)) = noted_and_now(world, node.as_ref(), &path).await?;
        ensure!(
            now == *inode && read == *contents,
            "{}: {path} was written again (inode {now} now, {inode} when noted; contents {})",
            node.name(),
            if read == *contents { "the same" } else { "changed" }
        );
    }
    Ok(())
}

/// No node carries the annotation, with any value. Checked once, as it is: put it after a step
/// that waits for the agents to have acted.
#[then(regex = r"^no node has the annotation (\S+)$")]
async fn no_node_has_annotation(world: &mut ConformanceWorld, key: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let annotations = c.node_annotations(node.name()).await?;
        if let Some(value) = annotations.get(&key) {
            anyhow::bail!("{}: has {key}={value:?}", node.name());
        }
    }
    Ok(())
}

/// Every node carries the annotation, with any value. Waits until each does, since agents
/// annotate after they act.
#[then(regex = r"^every node has the annotation (\S+)$")]
async fn every_node_has_annotation(world: &mut ConformanceWorld, key: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        eventually(world.deadline, || async {
            let annotations = c.node_annotations(node.name()).await.map_err(|e| e.to_string())?;
            if annotations.contains_key(&key) {
                Ok(())
            } else {
                Err(format!(
                    "{}: no {key}; its annotations: {:?}",
                    node.name(),
                    annotations.keys().collect::<Vec<_>>()
                ))
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// Every node's annotation has the value: a quoted string, or "the ControllerConfig's
/// resourceVersion" (the one the cluster holds now). Waits until it does, since agents
/// annotate after they act.
#[then(regex = r#"^every node's annotation (\S+) is (?:"(.*)"|(the ControllerConfig's resourceVersion))$"#)]
async fn node_annotation_is(
    world: &mut ConformanceWorld,
    key: String,
    value: String,
    controller_config: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        eventually(world.deadline, || async {
            let expected = if controller_config.is_empty() {
                value.clone()
            } else {
                c.controller_config_resource_version()
                    .await
                    .map_err(|e| format!("reading the ControllerConfig: {e}"))?
            };
            let seen = c
                .node_annotations(node.name())
                .await
                .map_err(|e| e.to_string())?
                .get(&key)
                .cloned();
            if seen.as_deref() == Some(expected.as_str()) {
                Ok(())
            } else {
                Err(format!(
                    "{}: {key} is {seen:?}, expected {expected:?}",
                    node.name()
                ))
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::pki::{Catalogue, SIMULATION_EPOCH, Signer};

    /// `an expired kubelet-signer` names the installer's first csr-signer-signer (its CN) and so
    /// every csr-signer-signer, whatever its CN; an expired kube-apiserver-to-kubelet-signer,
    /// whose CN holds the text `kubelet-signer`, is not one.
    #[test]
    fn an_expired_certificate_is_named_whole_not_by_a_part_of_its_name() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/signers.yaml");
        let catalogue = Catalogue::load(&fixtures).unwrap();
        let day: time::Duration = time::Duration::days(1);
        let pem = |signer: Signer| signer.cert.pem;
        let bundle = [
            pem(Signer::issue_named("kube-apiserver-to-kubelet-signer", SIMULATION_EPOCH, day, 1).unwrap()),
            pem(Signer::issue(
                "openshift-kube-apiserver-operator",
                "kube-apiserver-to-kubelet-signer",
                SIMULATION_EPOCH,
                day,
                2,
            )
            .unwrap()),
            pem(Signer::issue_named("kube-apiserver-lb-signer", SIMULATION_EPOCH, day * 3650, 3).unwrap()),
        ]
        .concat();
        let certs = oracle::certs(bundle.as_bytes()).unwrap();
        let now = (SIMULATION_EPOCH + time::Duration::days(2)).unix_timestamp();
        let expired = |written: &str, certs: &[oracle::Cert]| -> Vec<String> {
            let (_, found) = expired_of(certs, now, written, |n| catalogue.resolve(n)).unwrap();
            found.into_iter().map(String::from).collect()
        };
        assert_eq!(expired("kubelet-signer", &certs), Vec::<String>::new());
        assert_eq!(expired("csr-signer-signer", &certs), Vec::<String>::new());
        assert_eq!(expired("kube-apiserver-to-kubelet-signer", &certs).len(), 2);
        // Not expired: not listed.
        assert_eq!(
            expired("loadbalancer-serving-signer", &certs),
            Vec::<String>::new()
        );
        assert_eq!(expired("kube-apiserver-lb-signer", &certs), Vec::<String>::new());

        let with_csr = [
            bundle,
            pem(Signer::issue_named("kubelet-signer", SIMULATION_EPOCH, day, 4).unwrap()),
            pem(Signer::issue(
                "openshift-kube-controller-manager-operator",
                "csr-signer-signer",
                SIMULATION_EPOCH,
                day,
                5,
            )
            .unwrap()),
        ]
        .concat();
        let certs = oracle::certs(with_csr.as_bytes()).unwrap();
        let csr_signers = expired("kubelet-signer", &certs);
        assert_eq!(csr_signers.len(), 2, "{csr_signers:?}");
        assert!(
            csr_signers.iter().all(|n| !n.contains("kube-apiserver")),
            "{csr_signers:?}"
        );
        assert_eq!(expired("csr-signer-signer", &certs), csr_signers);
        // A name no certificate goes by is refused, as every other step refuses it.
        assert!(expired_of(&certs, now, "signer", |n| catalogue.resolve(n)).is_err());
    }
}
