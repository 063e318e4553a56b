//! Node events: what `oc get events` and `oc describe node` show about each node (core/v1
//! Events whose involved object is the Node, as the daemon's event recorder posts them).

use anyhow::Context;
use cucumber::then;
use harness::wait::eventually;
use harness::world::ConformanceWorld;
use k8s_openapi::api::core::v1::{Event, Node};
use kube::api::{Api, ListParams};

/// One event about a node: its type, reason, message and how many times it was raised (its
/// `count`: a recorder raises an event it raised before by counting it again).
pub(super) struct Shown {
    kind: String,
    pub(super) reason: String,
    pub(super) message: String,
    count: u32,
}

/// The events about one node now (the Node of this name with this uid: a Node of an earlier
/// cluster with the same name has another).
pub(super) async fn events_about(admin: &kube::Client, node: &str) -> Result<Vec<Shown>, String> {
    let uid = Api::<Node>::all(admin.clone())
        .get(node)
        .await
        .map_err(|e| format!("node {node}: {e}"))?
        .metadata
        .uid
        .unwrap_or_default();
    let events = Api::<Event>::all(admin.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing events: {e}"))?;
    Ok(events
        .items
        .into_iter()
        .filter(|e| {
            let o = &e.involved_object;
            o.kind.as_deref() == Some("Node")
                && o.name.as_deref() == Some(node)
                && o.uid.as_deref().is_none_or(|u| u == uid)
        })
        .map(|e| Shown {
            kind: e.type_.unwrap_or_default(),
            reason: e.reason.unwrap_or_default(),
            message: e.message.unwrap_or_default(),
            // An event with no count was raised once (events.k8s.io writes none).
            count: e.count.and_then(|c| u32::try_from(c).ok()).unwrap_or(1).max(1),
        })
        .collect())
}

pub(super) fn shown(events: &[Shown]) -> String {
    if events.is_empty() {
        return "none".to_string();
    }
    events
        .iter()
        .map(|e| match e.count {
            1 => format!("{} {}: {}", e.kind, e.reason, e.message),
            n => format!("{} {}: {} (x{n})", e.kind, e.reason, e.message),
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Every node has, among the events about it, the event of each row (`type`, `reason`,
/// `message`, with a header row), where `<config>` in a message stands for the pool's newest
/// rendered config (its `spec.configuration`) and `<node>` for the node's name. Waited for: the
/// daemon posts them as it goes, and upstream's recorder posts them in the background.
#[then(
    regex = r"^every node shows these Node events, where <config> is the (?P<pool>\w+) pool's newest rendered config:$"
)]
async fn node_shows_events(
    world: &mut ConformanceWorld,
    pool: String,
    step: &cucumber::gherkin::Step,
) -> anyhow::Result<()> {
    let table = step
        .table
        .as_ref()
        .context("the step needs a table: type | reason | message, with a header row")?;
    let header: Vec<&str> = table
        .rows
        .first()
        .map(|r| r.iter().map(String::as_str).collect())
        .unwrap_or_default();
    anyhow::ensure!(
        header == ["type", "reason", "message"],
        "the table's header must be | type | reason | message |, not {header:?}"
    );
    let rows: Vec<[&str; 3]> = table.rows[1..]
        .iter()
        .map(|r| [r[0].as_str(), r[1].as_str(), r[2].as_str()])
        .collect();
    let c = world.cluster()?;
    c.require_pool(&pool).await?;
    for node in &c.nodes {
        let name = node.name();
        eventually(world.deadline, || async {
            let config = c
                .pool_spec(&pool)
                .await
                .map_err(|e| e.to_string())?
                .configuration
                .name;
            if config.is_empty() {
                return Err(format!(
                    "pool {pool} names no rendered config in spec.configuration"
                ));
            }
            let events = events_about(&c.admin, name).await?;
            for [kind, reason, message] in &rows {
                let message = message.replace("<config>", &config).replace("<node>", name);
                if !events
                    .iter()
                    .any(|e| e.kind == *kind && e.reason == *reason && e.message == message)
                {
                    return Err(format!(
                        "{name}: no {kind} event {reason} saying {message:?}; the events about it:\n  {}",
                        shown(&events)
                    ));
                }
            }
            Ok(())
        })
        .await
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// No event about any node has this reason. Judged at once, as events are: put it after a step
/// that waits for the agents to have acted.
#[then(regex = r"^no node shows the Node event (\w+)$")]
async fn no_node_shows_event(world: &mut ConformanceWorld, reason: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let events = events_about(&c.admin, node.name())
            .await
            .map_err(anyhow::Error::msg)?;
        if events.iter().any(|e| e.reason == reason) {
            anyhow::bail!(
                "{}: an event {reason} is about it; the events about it:\n  {}",
                node.name(),
                shown(&events)
            );
        }
    }
    Ok(())
}

/// How many times the events about every node with this reason were raised, summed over their
/// `count`s (a daemon that starts again has a new recorder, so a new event). Waited for until
/// the sum reaches the number, then judged: more fails.
#[then(regex = r"^every node shows the Node event (\w+) (once|twice|(\d+) times)$")]
async fn node_shows_event_times(
    world: &mut ConformanceWorld,
    reason: String,
    times: String,
    n: String,
) -> anyhow::Result<()> {
    let wanted: u32 = match times.as_str() {
        "once" => 1,
        "twice" => 2,
        _ => n
            .parse()
            .with_context(|| format!("{n:?} is not a number of times"))?,
    };
    let c = world.cluster()?;
    for node in &c.nodes {
        let name = node.name();
        let (raised, events) = eventually(world.deadline, || async {
            let events = events_about(&c.admin, name).await?;
            let raised: u32 = events.iter().filter(|e| e.reason == reason).map(|e| e.count).sum();
            if raised >= wanted {
                Ok((raised, events))
            } else {
                Err(format!(
                    "{name}: the event {reason} raised {raised} time(s), not {wanted}; the events about it:\n  {}",
                    shown(&events)
                ))
            }
        })
        .await
        .map_err(anyhow::Error::msg)?;
        anyhow::ensure!(
            raised == wanted,
            "{name}: the event {reason} raised {raised} times, not {wanted}; the events about it:\n  {}",
            shown(&events)
        );
    }
    Ok(())
}
