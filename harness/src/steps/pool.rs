//! Pools: rendered configs, pausing, the paused-pool metric and alert, certExpirys.

use super::params::PoolName;
use anyhow::{Context, ensure};
use cucumber::{given, then, when};
use harness::mco::pool::CertExpiry;
use harness::pki::Clock;
use harness::prometheus::{PAUSED_POOL_KUBELET_CA, Severity, sample, scrape};
use harness::world::ConformanceWorld;

/// How many `rendered-<pool>-<hash>` configs exist, leaving out any the controller made and
/// replaced before the cluster was up (no node ran it and the pool did not target it then: an
/// upstream controller that starts on a loaded host can render a new pool twice on its way up).
#[then(expr = "the {pool} pool has {int} rendered config(s)")]
async fn rendered_configs(world: &mut ConformanceWorld, pool: PoolName, count: usize) -> anyhow::Result<()> {
    let c = world.cluster()?;
    c.require_pool(&pool).await?;
    let mut names = c.rendered_configs(&pool).await?;
    names.retain(|n| !world.replaced_before_start.contains(n));
    ensure!(
        names.len() == count,
        "{} rendered configs for pool {pool}: {names:?}",
        names.len()
    );
    Ok(())
}

/// The pool's newest rendered config (the one its `spec.configuration` names, which the
/// controller sets to each config it renders) lists the file among its Ignition files, or not.
#[then(regex = r"^the newest rendered config of the (?P<pool>\w+) pool (has|lacks) the file (/\S+)$")]
async fn newest_rendered_has_file(
    world: &mut ConformanceWorld,
    pool: String,
    has: String,
    path: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    c.require_pool(&pool).await?;
    let spec = c.pool_spec(&pool).await?;
    let name = Some(spec.configuration.name.as_str())
        .filter(|n| !n.is_empty())
        .with_context(|| format!("pool {pool} names no rendered config in spec.configuration"))?;
    let config = c.machine_config_spec(name).await?;
    let paths: Vec<&str> = config
        .config
        .storage
        .files
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    ensure!(
        paths.contains(&path.as_str()) == (has == "has"),
        "{name}, the newest rendered config of pool {pool}, {} {path}; its files: {paths:?}",
        if has == "has" { "lacks" } else { "has" }
    );
    Ok(())
}

/// The pool's `spec.paused` is true before anything else happens.
#[given(regex = r"^the (?P<pool>\w+) pool is paused$")]
async fn pool_is_paused(world: &mut ConformanceWorld, pool: String) -> anyhow::Result<()> {
    world.cluster()?.require_pool(&pool).await?;
    world.cluster()?.set_paused(&pool, true).await?;
    Ok(())
}

/// A new MachineConfigPool whose `machineConfigSelector` matches the one label given
/// (`key=value`), for the nodes labelled `node-role.kubernetes.io/<name>`, as a custom pool's
/// manifest reads (`oc create -f infra.mcp.yaml`); the step ends when the cluster side has
/// settled and the nodes have followed.
#[when(regex = r"^a pool named (\w+) is created that selects the MachineConfigs labelled (\S+)$")]
async fn pool_created(world: &mut ConformanceWorld, pool: String, label: String) -> anyhow::Result<()> {
    let (key, value) = label
        .split_once('=')
        .filter(|(key, _)| !key.is_empty())
        .with_context(|| format!("{label:?} is not a label as key=value"))?;
    let selector = serde_json::json!({"matchLabels": {key: value}});
    world.cluster()?.create_pool(&pool, selector).await?;
    Ok(())
}

/// A new MachineConfigPool whose `machineConfigSelector` is empty (`{}`, which as a label
/// selector selects everything), for the nodes labelled `node-role.kubernetes.io/<name>`; the
/// step ends when the cluster side has settled and the nodes have followed.
#[when(regex = r"^a pool named (\w+) is created whose machineConfigSelector is empty$")]
async fn pool_created_selecting_all(world: &mut ConformanceWorld, pool: String) -> anyhow::Result<()> {
    world.cluster()?.create_pool(&pool, serde_json::json!({})).await?;
    Ok(())
}

/// The pool's `spec.maxUnavailable`: a number of nodes, or a percentage of the pool's nodes
/// (`10%`), as `oc patch mcp/worker --type merge -p '{"spec":{"maxUnavailable":…}}'` sets it.
#[given(regex = r"^the (?P<pool>\w+) pool's maxUnavailable is (\d+%?)$")]
async fn pool_max_unavailable(
    world: &mut ConformanceWorld,
    pool: String,
    value: String,
) -> anyhow::Result<()> {
    world.cluster()?.require_pool(&pool).await?;
    world.cluster()?.set_max_unavailable(&pool, &value).await?;
    Ok(())
}

/// How many of the pool's nodes were updating at once over the scenario (a new
/// `desiredConfig` not yet their `currentConfig`), from every change a Node watch showed, in
/// order: no more than the number given, and at least one node updated at all.
#[then(expr = "the {pool} pool updated at most {int} node(s) at once")]
async fn updated_at_most_at_once(
    world: &mut ConformanceWorld,
    pool: PoolName,
    max: usize,
) -> anyhow::Result<()> {
    let most = world.cluster()?.most_updating_at_once(&pool).await?;
    ensure!(
        most >= 1,
        "no node of the {pool} pool was given a new desiredConfig during the scenario"
    );
    ensure!(
        most <= max,
        "{most} nodes of the {pool} pool were updating at once (desiredConfig ≠ currentConfig); at most {max} may be"
    );
    Ok(())
}

/// Pause or unpause the pool (`spec.paused`); the step ends when the cluster and the nodes
/// have followed (an unpaused pool's nodes run its newest rendered config).
#[when(regex = r"^the (?P<pool>\w+) pool is (paused|unpaused)$")]
async fn pool_pauses(world: &mut ConformanceWorld, pool: String, what: String) -> anyhow::Result<()> {
    world.cluster()?.require_pool(&pool).await?;
    world.cluster()?.set_paused(&pool, what == "paused").await?;
    Ok(())
}

/// The gauge `machine_config_controller_paused_pool_kubelet_ca{pool}` on the machine-config
/// controller's `/metrics` page (fetched over HTTP): 0, or the NotAfter in unix seconds of the
/// signer's certificate when the cluster started (the one the paused pool's nodes still trust).
#[then(
    regex = r"^the controller's paused-pool kubelet CA metric for the (?P<pool>\w+) pool is (0|the expiry of the (?P<signer>\S+) the cluster started with)$"
)]
async fn paused_pool_metric(
    world: &mut ConformanceWorld,
    pool: String,
    what: String,
    signer: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    c.require_pool(&pool).await?;
    let page = scrape(c.metrics_addr).await.map_err(anyhow::Error::msg)?;
    let expected = if what == "0" {
        0.0
    } else {
        let name = c.certificate_name(&signer)?;
        let at_start = world.signers_at_start.get(&name.name).with_context(|| {
            format!(
                "no certificate of {} was recorded when the cluster started",
                name.described()
            )
        })?;
        at_start.not_after.unix_timestamp() as f64
    };
    let seen = sample(&page, PAUSED_POOL_KUBELET_CA, ("pool", &pool));
    ensure!(
        seen == Some(expected),
        "{PAUSED_POOL_KUBELET_CA}{{pool={pool:?}}} is {seen:?}, expected {expected}; the page:\n{page}"
    );
    Ok(())
}

/// The controller's `/metrics` page has no `machine_config_controller_paused_pool_kubelet_ca`
/// (4.13 removed the gauge with its alert).
#[then("the controller's metrics have no paused-pool kubelet CA gauge")]
async fn no_paused_pool_metric(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let page = scrape(world.cluster()?.metrics_addr)
        .await
        .map_err(anyhow::Error::msg)?;
    ensure!(
        !page.contains(PAUSED_POOL_KUBELET_CA),
        "the page has {PAUSED_POOL_KUBELET_CA}:\n{page}"
    );
    Ok(())
}

/// A rule of the alert `MachineConfigControllerPausedPoolKubeletCA` for the pool, evaluated at
/// the scenario's simulated now over what a Prometheus scraping the controller at every clock
/// stop recorded: warning when the gauge is above 0, critical when under 14 days remain, each
/// `for: 60m` (inactive, pending, then firing).
#[then(
    regex = r"^the (warning|critical) alert MachineConfigControllerPausedPoolKubeletCA for the (?P<pool>\w+) pool is (inactive|pending|firing)$"
)]
async fn paused_pool_alert(
    world: &mut ConformanceWorld,
    severity: String,
    pool: String,
    expected: String,
) -> anyhow::Result<()> {
    let severity = if severity == "warning" {
        Severity::Warning
    } else {
        Severity::Critical
    };
    let c = world.cluster()?;
    let state = c.paused_pool_alert(severity, &pool);
    ensure!(
        state.to_string() == expected,
        "the {severity:?} rule for pool {pool} is {state} at {}, expected {expected}",
        harness::pki::rfc3339(c.clock.now())
    );
    Ok(())
}

/// The pool's `status.certExpirys` (4.14+) lists the signer's current certificate: with its
/// notAfter as `expiry` (4.16), or with no `expiry` at all (4.14, whose `CertExpiry` is
/// `{bundle, subject}`: release-4.14 types.go:338-346); waited for up to the deadline.
#[then(
    regex = r"^the (?P<pool>\w+) pool's certExpirys list the current (?P<signer>\S+) (with its expiry|without an expiry)$"
)]
async fn cert_expirys(
    world: &mut ConformanceWorld,
    pool: String,
    signer: String,
    expiry: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    c.require_pool(&pool).await?;
    let (_, current) = c.named_certificate(&signer).await?;
    let dated = expiry == "with its expiry";
    let not_after = harness::pki::rfc3339(current.not_after);
    // Waited for, as `oc wait` would: the node controller copies the ControllerConfig's
    // certificates into the pool's status on its own schedule (upstream's at its next sync of
    // the pool, after the template controller wrote the ControllerConfig's status).
    let judge = || async {
        let status = c.pool_status(&pool).await.map_err(|e| e.to_string())?;
        let listed = status.cert_expirys.unwrap_or_default();
        let names_it = |e: &CertExpiry| e.subject.contains(&current.common_name);
        let found = listed.iter().any(|e| {
            names_it(e)
                && if dated {
                    e.expiry.as_deref() == Some(not_after.as_str())
                } else {
                    e.expiry.is_none()
                }
        });
        if found {
            return Ok(());
        }
        Err(if dated {
            format!(
                "pool {pool} certExpirys has no {} expiring {not_after}: {listed:?}",
                current.common_name
            )
        } else {
            format!(
                "pool {pool} certExpirys has no {} without an expiry: {listed:?}",
                current.common_name
            )
        })
    };
    harness::wait::eventually(c.options.deadline, judge)
        .await
        .map_err(anyhow::Error::msg)
}

/// Every node still runs (`currentConfig` and `desiredConfig`) the rendered config it ran when
/// the cluster was up, whatever its pool now targets.
#[then("every node runs the rendered config it started with")]
async fn runs_config_at_start(world: &mut ConformanceWorld) -> anyhow::Result<()> {
    let c = world.cluster()?;
    for node in &c.nodes {
        let a = c.node_annotations(node.name()).await?;
        let at_start = world.config_at_start(node.name())?;
        let (current, desired) = (
            a.get(harness::mco::CURRENT_CONFIG).cloned().unwrap_or_default(),
            a.get(harness::mco::DESIRED_CONFIG).cloned().unwrap_or_default(),
        );
        ensure!(
            current == at_start && desired == at_start,
            "{}: currentConfig {current}, desiredConfig {desired}; it started on {at_start}",
            node.name()
        );
    }
    Ok(())
}

/// One of the pool's `status.conditions` (`Updated`, `Updating`, `NodeDegraded`,
/// `RenderDegraded`, `Degraded`) has the status, and, where the step gives one, a message that
/// begins with the text; waited for up to the deadline.
#[then(
    regex = r#"^the (?P<pool>\w+) pool's (\w+) condition is (True|False)(?: with a message that begins "(.*)")?$"#
)]
async fn pool_condition(
    world: &mut ConformanceWorld,
    pool: String,
    type_: String,
    status: String,
    message: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    c.require_pool(&pool).await?;
    // Waited for, as `oc wait --for=condition=…` would: a controller sets pool conditions on
    // its own schedule (upstream's node controller after its render controller).
    let judge = || async {
        let pool_status = c.pool_status(&pool).await.map_err(|e| e.to_string())?;
        let Some(condition) = pool_status.condition(&type_) else {
            return Err(format!(
                "pool {pool} has no {type_} condition: {:?}",
                pool_status.conditions
            ));
        };
        if condition.status != status {
            return Err(format!(
                "pool {pool}'s {type_} condition is {}, not {status}: {condition:?}",
                condition.status
            ));
        }
        if !condition.message.starts_with(&message) {
            return Err(format!(
                "pool {pool}'s {type_} message does not begin {message:?}: {:?}",
                condition.message
            ));
        }
        Ok(())
    };
    harness::wait::eventually(c.options.deadline, judge)
        .await
        .map_err(anyhow::Error::msg)
}

/// The pool's status has no condition of that type at all, as a pool the node controller never
/// synced has none but what its render controller wrote (judged at once).
#[then(regex = r"^the (?P<pool>\w+) pool has no (\w+) condition$")]
async fn pool_lacks_condition(
    world: &mut ConformanceWorld,
    pool: String,
    type_: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    c.require_pool(&pool).await?;
    let pool_status = c.pool_status(&pool).await?;
    ensure!(
        pool_status.condition(&type_).is_none(),
        "pool {pool} has a {type_} condition: {:?}",
        pool_status.condition(&type_)
    );
    Ok(())
}

/// The rendered config as a step says the node controller names it in a pool's `Updated` and
/// `Updating` messages: "by name" (release-4.12 node/status.go:84-99) or "as MachineConfig and
/// its name" (`getPoolUpdateLine`, release-4.14 status.go:153-158, release-4.16 :326-331).
fn update_line(naming: &str, rendered: &str) -> String {
    if naming.starts_with("as") {
        format!("MachineConfig {rendered}")
    } else {
        rendered.to_string()
    }
}

/// `Updated`/`Updating` as one showing of the pool had them, for messages.
fn shown(change: &harness::scenario::pool_history::PoolChange) -> String {
    format!(
        "Updated={} {:?}, Updating={} {:?}, {}/{} updated, target {}",
        change.updated.status,
        change.updated.message,
        change.updating.status,
        change.updating.message,
        change.updated_machines,
        change.machines,
        change.target
    )
}

/// A rollout as `oc get mcp -w` shows it (release-4.12/4.16 node/status.go calculateStatus):
/// since the steps began, the pool showed `Updating` True ("All nodes are updating to" its
/// newest rendered config) with `Updated` False, and it comes to show `Updated` True ("All
/// nodes are updated with" it) with `Updating` False, every machine updated and the config
/// reached: waited for, as the node controller writes the pool's status on its own schedule
/// (upstream's after the last node is done). The messages name the config by its name
/// (4.12), or as "MachineConfig" and its name (from 4.14).
#[then(
    regex = r"^the (?P<pool>\w+) pool went from Updating to Updated on its newest rendered config, named (by name|as MachineConfig and its name)$"
)]
async fn pool_went_updating_to_updated(
    world: &mut ConformanceWorld,
    pool: String,
    naming: String,
) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let judge = || async {
        let target = c
            .pool_spec(&pool)
            .await
            .map_err(|e| e.to_string())?
            .configuration
            .name;
        if target.is_empty() {
            return Err(format!(
                "pool {pool} names no rendered config in spec.configuration"
            ));
        }
        let line = update_line(&naming, &target);
        let changes = c
            .pool_changes_since_start(&pool)
            .await
            .map_err(|e| e.to_string())?;
        let history = changes.iter().map(shown).collect::<Vec<_>>().join("\n  ");
        let updating = format!("All nodes are updating to {line}");
        if !changes.iter().any(|s| {
            s.target == target
                && s.updating.status == "True"
                && s.updating.message == updating
                && s.updated.status == "False"
        }) {
            return Err(format!(
                "pool {pool} never showed Updating True with {updating:?} and Updated False; it showed:\n  {history}"
            ));
        }
        let updated = format!("All nodes are updated with {line}");
        match changes.last() {
            Some(now)
                if now.updated.status == "True"
                    && now.updated.message == updated
                    && now.updating.status == "False"
                    && now.reached == target
                    && now.updated_machines == now.machines =>
            {
                Ok(())
            }
            _ => Err(format!(
                "pool {pool} does not show Updated True with {updated:?}, Updating False, every machine updated and {target} reached; it showed:\n  {history}"
            )),
        }
    };
    harness::wait::eventually(c.options.deadline, judge)
        .await
        .map_err(anyhow::Error::msg)
}

/// Nothing made the pool update (release-4.14/4.16: a rotation renders no config): every time
/// the pool changed since the steps began it showed `Updated` True and `Updating` False.
#[then(regex = r"^the (?P<pool>\w+) pool stayed Updated throughout$")]
async fn pool_stayed_updated(world: &mut ConformanceWorld, pool: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    let changes = c.pool_changes_since_start(&pool).await?;
    let history = changes.iter().map(shown).collect::<Vec<_>>().join("\n  ");
    ensure!(
        !changes.is_empty(),
        "the pool watch showed nothing of pool {pool}"
    );
    ensure!(
        changes
            .iter()
            .all(|s| s.updated.status == "True" && s.updating.status == "False"),
        "pool {pool} left Updated; it showed:\n  {history}"
    );
    Ok(())
}

/// A paused pool with a newer rendered config (release-4.12 node/status.go:96-98): `Updated`
/// False, and `Updating` False with "Pool is paused; will not update to" that config; waited
/// for, as the controller writes it on its own schedule. The config is named as in
/// `pool_went_updating_to_updated`.
#[then(
    regex = r"^the (?P<pool>\w+) pool says it is paused and will not update to its newest rendered config, named (by name|as MachineConfig and its name)$"
)]
async fn pool_says_paused(world: &mut ConformanceWorld, pool: String, naming: String) -> anyhow::Result<()> {
    let c = world.cluster()?;
    c.require_pool(&pool).await?;
    let judge = || async {
        let target = c
            .pool_spec(&pool)
            .await
            .map_err(|e| e.to_string())?
            .configuration
            .name;
        let expected = format!(
            "Pool is paused; will not update to {}",
            update_line(&naming, &target)
        );
        let status = c.pool_status(&pool).await.map_err(|e| e.to_string())?;
        let (updated, updating) = (status.condition("Updated"), status.condition("Updating"));
        match (updated, updating) {
            (Some(u), Some(g)) if u.status == "False" && g.status == "False" && g.message == expected => {
                Ok(())
            }
            _ => Err(format!(
                "pool {pool}: Updated {updated:?}, Updating {updating:?}; expected Updated False and Updating False with {expected:?}"
            )),
        }
    };
    harness::wait::eventually(c.options.deadline, judge)
        .await
        .map_err(anyhow::Error::msg)
}
