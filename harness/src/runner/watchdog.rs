//! A step that never ends fails, naming itself, instead of hanging the run.
//!
//! Every wait of a step has its own bound (the agent timeout), but an await on something
//! without one — a peer that never answers, a process that never exits — would hold a
//! scenario, and with it the whole run, for as long as the process lives. So every step runs
//! under a wall-clock limit (`--step-limit`, generous: it is a safety net, not a verdict on
//! speed). At the limit the step's future is dropped and the step fails with a message that
//! says so; the scenario ends as any failed scenario does (its journals are kept, it is shut
//! down) and the run goes on.
//!
//! cucumber has no step timeout of its own, and its steps are plain function pointers, so the
//! limit is put in by registering every step of the World's inventory again, with the same
//! expression and source location (matching, ambiguity, undefined steps and the reports are
//! unchanged), over one guard function that finds the step's own function in the inventory
//! and runs it under `tokio::time::timeout`.

use cucumber::codegen::{StepConstructor as _, WorldInventory, inventory};
use cucumber::step::{Collection, Context};
use futures::future::LocalBoxFuture;
use std::time::Duration;

pub use crate::world::DEFAULT_STEP_LIMIT;

/// A World whose steps run under a limit.
pub trait Guarded: WorldInventory + std::fmt::Debug + 'static {
    /// The World's own steps, as its inventory registers them (made once).
    fn unguarded() -> &'static Collection<Self>;
    /// How long this scenario's steps may run.
    fn step_limit(&self) -> Duration;
}

impl Guarded for crate::world::ConformanceWorld {
    fn unguarded() -> &'static Collection<Self> {
        static STEPS: std::sync::OnceLock<Collection<crate::world::ConformanceWorld>> =
            std::sync::OnceLock::new();
        STEPS.get_or_init(<Self as cucumber::World>::collection)
    }

    fn step_limit(&self) -> std::time::Duration {
        self.step_limit
    }
}

/// Every step of `W`'s inventory, each running under `W::step_limit`.
pub fn guarded_steps<W: Guarded>() -> Collection<W> {
    let mut out = Collection::new();
    for given in inventory::iter::<W::Given> {
        let (loc, regex, _) = given.inner();
        out = out.given(Some(loc), regex(), guard::<W>);
    }
    for when in inventory::iter::<W::When> {
        let (loc, regex, _) = when.inner();
        out = out.when(Some(loc), regex(), guard::<W>);
    }
    for then in inventory::iter::<W::Then> {
        let (loc, regex, _) = then.inner();
        out = out.then(Some(loc), regex(), guard::<W>);
    }
    out
}

/// Run the step's own function (found as cucumber found this one: same expressions) under
/// the World's limit.
fn guard<W: Guarded>(world: &mut W, ctx: Context) -> LocalBoxFuture<'_, ()> {
    Box::pin(async move {
        let step = match W::unguarded().find(&ctx.step) {
            Ok(Some((step, ..))) => *step,
            // Unreachable while both collections come from the same inventory; said plainly
            // if they ever part.
            Ok(None) => panic!("no step definition matches {:?}", ctx.step.value),
            Err(e) => panic!("{e}"),
        };
        let limit = world.step_limit();
        if tokio::time::timeout(limit, step(world, ctx)).await.is_err() {
            panic!(
                "the step did not end within the step limit of {} (--step-limit): it was \
                 stopped there. Every wait of a step has its own bound, so something awaited \
                 here never answered; the nodes' journals below or in the failed scenario's \
                 folder show what the agents were doing",
                show(limit)
            );
        }
    })
}

/// `10m`, `90s`, `200ms`: as the flag is written.
pub fn show(d: Duration) -> String {
    match (d.subsec_millis(), d.as_secs()) {
        (0, s) if s > 0 && s % 60 == 0 => format!("{}m", s / 60),
        (0, s) => format!("{s}s"),
        _ => format!("{}ms", d.as_millis()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cucumber::{World as _, WriterExt as _, given, then};
    use std::sync::OnceLock;

    /// A World of its own: one step that never ends, one that ends.
    #[derive(Debug, Default, cucumber::World)]
    struct HangWorld {
        ran_after: bool,
    }

    impl Guarded for HangWorld {
        fn unguarded() -> &'static Collection<Self> {
            static STEPS: OnceLock<Collection<HangWorld>> = OnceLock::new();
            STEPS.get_or_init(HangWorld::collection)
        }
        fn step_limit(&self) -> Duration {
            Duration::from_millis(200)
        }
    }

    #[given("a step that never ends")]
    async fn never_ends(_: &mut HangWorld) {
        std::future::pending::<()>().await;
    }

    #[given("a step that ends")]
    async fn ends(world: &mut HangWorld) {
        world.ran_after = true;
    }

    #[then("the step before it ran")]
    async fn ran(world: &mut HangWorld) {
        assert!(world.ran_after);
    }

    const FEATURE: &str = "Feature: hangs\n\
        \n  Scenario: one step never ends\n    Given a step that never ends\n    Then the step before it ran\n\
        \n  Scenario: steps within the limit\n    Given a step that ends\n    Then the step before it ran\n";

    #[tokio::test]
    async fn a_step_past_the_limit_fails_naming_the_limit_and_the_run_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hang.feature");
        std::fs::write(&path, FEATURE).unwrap();
        let json = dir.path().join("out.json");
        let run = HangWorld::cucumber()
            .steps(guarded_steps::<HangWorld>())
            .with_writer(cucumber::writer::Json::new(std::fs::File::create(&json).unwrap()).normalized())
            .with_cli(cucumber::cli::Opts::<_, _, _, cucumber::cli::Empty>::default())
            .run(&path);
        // Both scenarios end, the hanging one at its limit; without the guard the run never
        // would.
        assert!(
            tokio::time::timeout(Duration::from_secs(10), run).await.is_ok(),
            "the run hung: the step limit did not stop the step"
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let scenarios = report[0]["elements"].as_array().unwrap();
        let steps = |i: usize| scenarios[i]["steps"].as_array().unwrap().clone();
        let hung = steps(0);
        assert_eq!(hung[0]["result"]["status"], "failed", "{hung:?}");
        let message = hung[0]["result"]["error_message"].as_str().unwrap_or("");
        assert!(
            message.contains("did not end within the step limit of 200ms"),
            "{message}"
        );
        // Matching is cucumber's own: the failure names the step's own definition.
        assert!(
            message.contains("Matched: harness/src/runner/watchdog.rs:"),
            "{message}"
        );
        // The scenario ended there: no later step of it passed.
        assert!(
            hung[1..].iter().all(|s| s["result"]["status"] != "passed"),
            "{hung:?}"
        );
        let fine = steps(1);
        assert!(fine.iter().all(|s| s["result"]["status"] == "passed"), "{fine:?}");
    }
}
