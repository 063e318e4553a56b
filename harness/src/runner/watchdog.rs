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
        let watch = crate::wait::Watch::new();
        let run = watch.scope(step(world, ctx));
        tokio::pin!(run);
        // The limit counts from the step's start or the last answer one of its waits had: a
        // wait whose looks answer goes on under its own bound (in paced time, which a busy host
        // stretches in wall time), so the net is for what never answers, not for a slow host.
        loop {
            let quiet_since = watch.progress().answered;
            tokio::select! {
                () = &mut run => return,
                () = tokio::time::sleep_until((quiet_since + limit).into()) => {
                    let progress = watch.progress();
                    if progress.answered == quiet_since {
                        panic!("{}", stopped(limit, &progress));
                    }
                }
            }
        }
    })
}

/// Why a step was stopped at the limit, with what its waits last said.
fn stopped(limit: Duration, progress: &crate::wait::Progress) -> String {
    let head = format!(
        "the step did not end within the step limit of {} (--step-limit): nothing it awaited \
         answered for that long, and it was stopped there",
        show(limit)
    );
    let seen = progress
        .last_seen
        .as_deref()
        .map(|s| format!("; its wait's last answered look saw: {s}"))
        .unwrap_or_default();
    match (progress.waiting, progress.looking) {
        (Some((deadline, began)), Some(look)) => format!(
            "{head}. It was waiting (for up to {} of paced time, since {:.0?} ago) and one look \
             of that wait, begun {:.0?} ago, never answered: a request or read with no answer{seen}",
            show(deadline),
            began.elapsed(),
            look.elapsed()
        ),
        _ => format!(
            "{head}. Every wait of a step has its own bound, so something awaited here outside \
             them never answered; the nodes' journals below or in the failed scenario's folder \
             show what the agents were doing{seen}"
        ),
    }
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

    /// A wait that lasts three times the limit, its looks answering all along (as a wait on a
    /// busy host does, its paced deadline stretched in wall time): not the net's to stop.
    #[given("a wait that goes on past the limit, its looks answering")]
    async fn long_wait(world: &mut HangWorld) {
        let began = std::time::Instant::now();
        crate::wait::eventually_wall(Duration::from_secs(5), || async {
            if began.elapsed() >= Duration::from_millis(600) {
                Ok(())
            } else {
                Err("not yet".to_string())
            }
        })
        .await
        .unwrap();
        world.ran_after = true;
    }

    /// A wait whose first look answers and whose second never does.
    #[given("a wait whose second look never answers")]
    async fn look_never_answers(_: &mut HangWorld) {
        let looks = std::sync::atomic::AtomicU32::new(0);
        let _ = crate::wait::eventually_wall(Duration::from_secs(60), || async {
            if looks.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                return Err::<(), _>("pool worker has no certExpirys".to_string());
            }
            std::future::pending().await
        })
        .await;
    }

    #[then("the step before it ran")]
    async fn ran(world: &mut HangWorld) {
        assert!(world.ran_after);
    }

    const FEATURE: &str = "Feature: hangs\n\
        \n  Scenario: one step never ends\n    Given a step that never ends\n    Then the step before it ran\n\
        \n  Scenario: steps within the limit\n    Given a step that ends\n    Then the step before it ran\n\
        \n  Scenario: a wait that answers\n    Given a wait that goes on past the limit, its looks answering\n    Then the step before it ran\n\
        \n  Scenario: a look that never answers\n    Given a wait whose second look never answers\n";

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
        // A wait under its own bound whose looks answer runs past the limit and ends on its own.
        let answering = steps(2);
        assert!(
            answering.iter().all(|s| s["result"]["status"] == "passed"),
            "{answering:?}"
        );
        // A look that never answers is stopped, and the failure says that and what the wait
        // saw last.
        let silent = steps(3);
        assert_eq!(silent[0]["result"]["status"], "failed", "{silent:?}");
        let message = silent[0]["result"]["error_message"].as_str().unwrap_or("");
        for said in [
            "did not end within the step limit of 200ms",
            "one look of that wait",
            "never answered",
            "last answered look saw: pool worker has no certExpirys",
        ] {
            assert!(message.contains(said), "{said:?} not in {message}");
        }
    }
}
