//! What every node's journal shows since the cluster started or since the agent restarted, and
//! how many times. Only reads the journal; the steps that restart things are in `services`.

use anyhow::Context;
use cucumber::then;
use harness::wait::eventually;
use harness::world::ConformanceWorld;

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
