//! Pools and rendered configs.

use anyhow::ensure;
use cucumber::then;
use harness::world::ConformanceWorld;

/// How many `rendered-<pool>-<hash>` configs exist.
#[then(expr = "the {word} pool has {int} rendered config(s)")]
async fn rendered_configs(world: &mut ConformanceWorld, pool: String, count: usize) -> anyhow::Result<()> {
    let names = world.cluster()?.rendered_configs(&pool).await?;
    ensure!(
        names.len() == count,
        "{} rendered configs for pool {pool}: {names:?}",
        names.len()
    );
    Ok(())
}
