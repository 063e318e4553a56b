//! Simulated time.

use super::params::Span;
use cucumber::when;
use harness::world::ConformanceWorld;

/// The longest one time step may move the clock: ten years, the longest validity in
/// `fixtures/signers.yaml`. A step beyond it is refused (split it into several) rather than
/// left to run for hours.
const LONGEST_STEP_DAYS: i64 = 3650;

/// How often (wall time) a long time step prints where it is: every 5 s, or every
/// `MCO_CONFORMANCE_PROGRESS_EVERY` seconds.
fn progress_every() -> std::time::Duration {
    let seconds = std::env::var("MCO_CONFORMANCE_PROGRESS_EVERY")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(5.0);
    std::time::Duration::from_secs_f64(seconds)
}

/// Move the scenario's clock, stopping at every certificate deadline on the way
/// ("When 292 days pass", "When 1 hour passes"); at most 3650 days in one step.
#[when(expr = "{duration} pass(es)")]
async fn time_passes(world: &mut ConformanceWorld, duration: Span) -> anyhow::Result<()> {
    let by = duration.span;
    anyhow::ensure!(
        by <= time::Duration::days(LONGEST_STEP_DAYS),
        "{duration} is more than one step may move the clock: at most {LONGEST_STEP_DAYS} days (10 years, the longest signer validity); split it into several steps"
    );
    let (progress, place, profile) = (world.progress, world.place.clone(), world.profile);
    let started = std::time::Instant::now();
    let every = progress_every();
    let mut last = started;
    world
        .cluster()?
        .advance_reporting(by, |now, stops| {
            if progress && last.elapsed() >= every {
                last = std::time::Instant::now();
                println!(
                    "  ... {profile} {place}: {duration} passing: simulated {}, {stops} stops so far, {:.0} s",
                    harness::pki::rfc3339(now),
                    started.elapsed().as_secs_f64()
                );
            }
        })
        .await?;
    Ok(())
}
