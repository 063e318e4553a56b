//! MachineConfigs a scenario adds, and how the nodes applied them.

use super::oracle::FORCE_FILE;
use anyhow::{bail, ensure};
use cucumber::{given, then, when};
use harness::wait::eventually;
use harness::world::ConformanceWorld;
use serde_json::{Value, json};

/// The contents every added file gets: a comment line, so the file is valid in the formats
/// upstream's daemon parses (`/etc/containers/registries.conf` is decoded as TOML on 4.12 and
/// 4.16 to decide on a drain: release-4.16 drain.go:187).
const CONTENTS: &str = "# written by mco-conformance\n";

/// `text` for a `data:,` URL: every byte but RFC 3986's unreserved ones percent-encoded.
/// Ignition's data URL parser (vincent-petithory/dataurl, which upstream's daemon uses) refuses
/// a bare `#` ("invalid data character").
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The spec of a MachineConfig changing one thing, from the step's words.
fn change_spec(change: &str) -> anyhow::Result<Value> {
    let ignition = |config: Value| {
        let mut c = json!({"ignition": {"version": "3.2.0"}});
        c.as_object_mut()
            .unwrap()
            .extend(config.as_object().unwrap().clone());
        json!({"config": c})
    };
    if let Some(file) = change.strip_prefix("the file ") {
        // "the file /etc/foo", or "the file /etc/foo with mode 0600"
        let (path, mode) = match file.split_once(" with mode ") {
            Some((path, mode)) => (
                path,
                u32::from_str_radix(mode, 8)
                    .ok()
                    .filter(|m| *m <= 0o7777)
                    .ok_or_else(|| anyhow::anyhow!("{mode:?} is not an octal file mode"))?,
            ),
            None => (file, 0o644),
        };
        ensure!(path.starts_with('/'), "{path:?} is not an absolute path");
        let source = format!("data:,{}", percent_encode(CONTENTS));
        return Ok(ignition(json!({"storage": {"files": [
            {"path": path, "mode": mode, "overwrite": true, "contents": {"source": source}}
        ]}})));
    }
    if let Some(unit) = change.strip_prefix("the unit ") {
        return Ok(ignition(json!({"systemd": {"units": [
            {"name": unit, "enabled": true, "contents": "[Unit]\nDescription=mco-conformance\n[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}
        ]}})));
    }
    if let Some(arg) = change.strip_prefix("the kernel argument ") {
        return Ok(json!({"kernelArguments": [arg]}));
    }
    if let Some(kernel) = change.strip_prefix("the kernel type ") {
        return Ok(json!({"kernelType": kernel}));
    }
    if let Some(extension) = change.strip_prefix("the extension ") {
        return Ok(json!({"extensions": [extension]}));
    }
    match change {
        "the OS image" => Ok(json!({
            "osImageURL": "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0000000000000000000000000000000000000000000000000000000000000001"
        })),
        "the SSH keys" => Ok(ignition(json!({"passwd": {"users": [
            {"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMcoConformanceExampleKey qe@example"]}
        ]}}))),
        other => bail!(
            "unknown change {other:?}: expected \"the file <path>\", \"the unit <name>\", \"the kernel argument <arg>\", \"the kernel type <type>\", \"the extension <name>\", \"the OS image\" or \"the SSH keys\""
        ),
    }
}

/// The spec of a MachineConfig changing everything the words list: one change, or several
/// joined by "and" ("the file /etc/a and the SSH keys"), merged into one MachineConfig.
fn changes_spec(changes: &str) -> anyhow::Result<Value> {
    let mut spec = json!({});
    for (i, change) in changes.split(" and the ").enumerate() {
        let change = if i == 0 {
            change.to_string()
        } else {
            format!("the {change}")
        };
        merge_spec(&mut spec, change_spec(&change)?);
    }
    Ok(spec)
}

/// Merge `more` into `spec`: objects key by key, lists one after the other (two files, two
/// kernel arguments), anything else replaced.
fn merge_spec(spec: &mut Value, more: Value) {
    match (spec, more) {
        (Value::Object(into), Value::Object(from)) => {
            for (key, value) in from {
                match into.get_mut(&key) {
                    Some(existing) => merge_spec(existing, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (Value::Array(into), Value::Array(from)) => into.extend(from),
        (slot, value) => *slot = value,
    }
}

/// A new MachineConfig for the pool that changes one thing ("the file /etc/foo", "the file
/// /etc/foo with mode 0600", "the unit foo.service", "the kernel argument nosmt", "the kernel
/// type realtime", "the extension usbguard", "the OS image", "the SSH keys"), or several at
/// once joined by "and" ("the file /etc/foo and the kernel argument nosmt"); the step ends when
/// every node of the pool runs the new rendered config.
#[when(regex = r"^a MachineConfig for the (?P<pool>\w+) pool changes (.+)$")]
async fn machine_config_changes(
    world: &mut ConformanceWorld,
    pool: String,
    change: String,
) -> anyhow::Result<()> {
    let spec = changes_spec(&change)?;
    world.cluster()?.require_pool(&pool).await?;
    world.history_mark = world.cluster()?.node_history.mark();
    world.cluster()?.add_machine_config(&pool, spec).await?;
    Ok(())
}

/// The MachineConfig a step added last for the pool is deleted; the step ends when every node
/// of the pool runs the config rendered without it.
#[when(regex = r"^the newest MachineConfig for the (?P<pool>\w+) pool is deleted$")]
async fn newest_machine_config_deleted(world: &mut ConformanceWorld, pool: String) -> anyhow::Result<()> {
    world.cluster()?.require_pool(&pool).await?;
    world.history_mark = world.cluster()?.node_history.mark();
    world.cluster()?.delete_newest_machine_config(&pool).await?;
    Ok(())
}

/// A new MachineConfig for the pool with `fips: true`, which a running node may not apply
/// (FIPS is chosen at install). The step ends once the cluster has rendered it and given it to
/// the pool's nodes; what they do with it is for the next steps.
#[when(regex = r"^a MachineConfig for the (?P<pool>\w+) pool turns FIPS on$")]
async fn machine_config_turns_fips_on(world: &mut ConformanceWorld, pool: String) -> anyhow::Result<()> {
    world.cluster()?.require_pool(&pool).await?;
    world.history_mark = world.cluster()?.node_history.mark();
    world
        .cluster()?
        .give_machine_config(&pool, json!({"fips": true}))
        .await?;
    Ok(())
}

/// A new MachineConfig for the pool whose config is not an Ignition config: `storage.files` is
/// a string where Ignition has a list (the CRD keeps `spec.config` open, so the API server
/// stores it). The step ends once the cluster side has settled; it renders nothing from it.
#[when(regex = r"^a MachineConfig for the (?P<pool>\w+) pool holds a config that is not Ignition$")]
async fn machine_config_not_ignition(world: &mut ConformanceWorld, pool: String) -> anyhow::Result<()> {
    world.cluster()?.require_pool(&pool).await?;
    world.history_mark = world.cluster()?.node_history.mark();
    world
        .cluster()?
        .give_machine_config(
            &pool,
            json!({"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": "not a list"}}}),
        )
        .await?;
    Ok(())
}

/// `/run/machine-config-daemon-force` on every node: the next update reboots, whatever changed.
/// Written on a running node, as an administrator does: once its agent's start check is over.
#[given("every node has the force file")]
async fn force_file(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    write_force_file(world).await
}

/// The event upstream's daemon posts once its start check passed and its config drift monitor
/// watches (`startConfigDriftMonitor` after `checkStateOnFirstRun`: release-4.12
/// daemon.go:524-533, :1105; release-4.14 :693-702, :1217; release-4.16 :778-802, :1492).
const DRIFT_MONITOR_STARTED: &str = "ConfigDriftMonitorStarted";

/// Waits until every node's agent watches its files against the config the node runs: it posted
/// `ConfigDriftMonitorStarted` naming that config ("Config Drift Monitor started, watching
/// against <config>", as upstream words it), or the node is Degraded (a start check that failed
/// says so; upstream's daemon then runs the check again on each retry, and keeps its monitor
/// while degraded by drift).
///
/// A hand-made change to a node's files means something only once that holds. Before the
/// daemon's start check, a force file makes the check skip validation and run an update to the
/// config the node is on, which reboots it (release-4.16 daemon.go:2122-2125), so a scenario's
/// force file would be spent before its When-step. Between an update's completion (the node's
/// `currentConfig` set, Done) and the monitor's start, an edited file is seen by nobody: upstream
/// starts watching after its first sync completes the update (release-4.14 daemon.go:693-702,
/// :1189-1218, a few milliseconds later), and the monitor does not check the files it begins
/// to watch. Should a node come back to a config it ran before, an earlier event naming it would
/// do too: that path back is left open. An agent that never says either fails the step, naming
/// the event.
pub async fn await_drift_watch(world: &ConformanceWorld, what: &str) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let name = node.name();
        eventually(world.deadline, || async {
            let annotations = c.node_annotations(name).await.map_err(|e| e.to_string())?;
            let state = annotations.get(harness::mco::STATE).map(String::as_str).unwrap_or("");
            if state == "Degraded" {
                return Ok(());
            }
            let current = annotations
                .get(harness::mco::CURRENT_CONFIG)
                .map(String::as_str)
                .unwrap_or("");
            let events = super::events::events_about(&c.admin, name).await?;
            let watching = format!("watching against {current}");
            if !current.is_empty()
                && events
                    .iter()
                    .any(|e| e.reason == DRIFT_MONITOR_STARTED && e.message.ends_with(&watching))
            {
                return Ok(());
            }
            Err(format!(
                "{name}: its agent has not said that it watches its files against {current:?}, the config it runs (no Node event {DRIFT_MONITOR_STARTED} \"… {watching}\", which upstream's daemon posts once its start check passed and after each update, and the node is {state:?}, not Degraded); {what} before that is seen by no drift check. The events about it:\n  {}",
                super::events::shown(&events)
            ))
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// `touch /run/machine-config-daemon-force` on every node, once every node's agent watches its
/// files against its config (`await_drift_watch`).
pub async fn write_force_file(world: &ConformanceWorld) -> anyhow::Result<()> {
    await_drift_watch(world, "a force file written").await?;
    let c = world.cluster()?;
    for node in &c.nodes {
        node.write(FORCE_FILE, b"", 0o644).await?;
    }
    Ok(())
}

/// How every node applied the change, from its journal and boot id: "no reboot" (and no
/// drain: the drain controller was never asked to drain it), "a crio reload", "a crio restart"
/// or "a reboot" (after a drain).
#[then(regex = r"^every node applied it with (no reboot|a crio reload|a crio restart|a reboot)$")]
async fn applied_with(world: &mut ConformanceWorld, action: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let lines = node.journal_since(world.mark(node.name())?).await?;
        let has = |text: &str| lines.iter().any(|l| l.contains(text));
        let rebooted = node.boot_id().await? != world.boot_id_at_start(node.name())?;
        let seen = match (
            rebooted,
            has("Reloading crio.service..."),
            has("Stopping crio.service..."),
        ) {
            (true, ..) => "a reboot",
            (false, true, false) => "a crio reload",
            (false, false, true) => "a crio restart",
            (false, false, false) => "no reboot",
            _ => "something else",
        };
        ensure!(
            seen == action,
            "{} applied the change with {seen}, expected {action}; its journal since the start:\n{}",
            node.name(),
            lines[lines.len().saturating_sub(25)..].join("\n")
        );
        // The drain as the Node shows it: the agent asks with desiredDrain=drain-<config>,
        // and the node is cordoned before it reboots.
        let changes = c.node_changes_since(node.name(), world.history_mark).await?;
        let asked = changes.iter().any(|ch| ch.desired_drain.starts_with("drain-"));
        let cordoned = changes.iter().any(|ch| ch.unschedulable);
        let seen: Vec<String> = changes
            .iter()
            .map(|ch| {
                format!(
                    "unschedulable={} desiredDrain={:?} lastAppliedDrain={:?}",
                    ch.unschedulable, ch.desired_drain, ch.last_applied_drain
                )
            })
            .collect();
        match action.as_str() {
            "no reboot" => ensure!(
                !asked && !cordoned,
                "{} was drained for a change that needs no reboot; the Node went through:\n{}",
                node.name(),
                seen.join("\n")
            ),
            "a reboot" => ensure!(
                asked && cordoned,
                "{} rebooted without a drain (desiredDrain=drain-… {}, cordoned {}); the Node went through:\n{}",
                node.name(),
                if asked { "asked" } else { "never asked" },
                if cordoned { "yes" } else { "never" },
                seen.join("\n")
            ),
            _ => {}
        }
    }
    Ok(())
}

/// Every node has the file, with the contents its MachineConfig gave it.
#[then(regex = r#"^every node has the file (/\S+)$"#)]
async fn has_file(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        let contents = node.read(&path).await?;
        ensure!(
            contents == CONTENTS.as_bytes(),
            "{}: {path} holds {:?}",
            node.name(),
            String::from_utf8_lossy(&contents)
        );
    }
    Ok(())
}

/// No node has the file (nothing at the path at all), as after a MachineConfig that gave it is
/// deleted. Judged at once: put it after a step that waits for the nodes to have followed.
#[then(regex = r"^every node lacks the file (/\S+)$")]
async fn lacks_file(world: &mut ConformanceWorld, path: String) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        if let Some(stat) = node.stat(&path).await? {
            anyhow::bail!(
                "{}: has {path} ({} bytes, mode {:04o})",
                node.name(),
                stat.size,
                stat.mode
            );
        }
    }
    Ok(())
}

/// No node has `/run/machine-config-daemon-force` (the daemon removes it as it acts on it).
#[then("no node has the force file")]
async fn no_force_file(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    for node in &world.cluster()?.nodes {
        ensure!(
            node.stat(FORCE_FILE).await?.is_none(),
            "{} still has {FORCE_FILE}",
            node.name()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two changes make one MachineConfig holding both: files listed one after the other, other
    /// fields side by side.
    #[test]
    fn changes_joined_by_and_merge_into_one_machine_config() {
        let spec = changes_spec(
            "the file /etc/kubernetes/kubelet-ca.crt and the file /etc/containers/registries.conf and the kernel argument nosmt",
        )
        .unwrap();
        let paths: Vec<&str> = spec["config"]["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                "/etc/kubernetes/kubelet-ca.crt",
                "/etc/containers/registries.conf"
            ]
        );
        assert_eq!(spec["config"]["ignition"]["version"], "3.2.0");
        assert_eq!(spec["kernelArguments"], json!(["nosmt"]));
        let err = changes_spec("the file /etc/a and the moon").unwrap_err();
        assert!(err.to_string().contains("unknown change \"the moon\""), "{err}");
    }
}

/// The file holds the SSH keys of the pool's newest rendered config as the daemon writes them
/// for `core` (every key of every user in `passwd.users`, each followed by a newline), read from
/// the rendered config itself. Waited for: the daemon writes them as it applies the config.
#[then(
    regex = r"^every node's (?P<path>/\S+) holds the SSH keys of the (?P<pool>\w+) pool's newest rendered config$"
)]
async fn holds_ssh_keys(world: &mut ConformanceWorld, path: String, pool: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    c.require_pool(&pool).await?;
    for node in &c.nodes {
        harness::wait::eventually(world.deadline, || async {
            let name = c
                .pool_spec(&pool)
                .await
                .map_err(|e| e.to_string())?
                .configuration
                .name;
            let spec = c.machine_config_spec(&name).await.map_err(|e| e.to_string())?;
            let users = spec
                .config
                .passwd
                .as_ref()
                .and_then(|p| p.get("users"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let expected: String = users
                .iter()
                .filter_map(|u| u.get("sshAuthorizedKeys").and_then(Value::as_array))
                .flatten()
                .filter_map(Value::as_str)
                .map(|k| format!("{k}\n"))
                .collect();
            if expected.is_empty() {
                return Err(format!(
                    "{name}, the newest rendered config of pool {pool}, has no SSH keys"
                ));
            }
            let seen = node
                .read(&path)
                .await
                .map_err(|e| format!("{}: {path}: {e}", node.name()))?;
            if seen != expected.as_bytes() {
                return Err(format!(
                    "{}: {path} holds {:?}, not the keys of {name}: {expected:?}",
                    node.name(),
                    String::from_utf8_lossy(&seen)
                ));
            }
            Ok(())
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}
