//! Simulated time.

use cucumber::when;
use harness::world::ConformanceWorld;

/// Move the scenario's clock, stopping at every certificate deadline on the way
/// ("When 292 days pass", "When 1 hour passes").
#[when(regex = r"^(\d+ (?:days?|hours?|minutes?|seconds?)) pass(?:es)?$")]
async fn time_passes(world: &mut ConformanceWorld, duration: String) -> anyhow::Result<()> {
    let by = harness::pki::parse_duration(&duration)?;
    world.cluster()?.advance(by).await?;
    Ok(())
}
