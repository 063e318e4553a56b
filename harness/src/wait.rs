//! The one way the harness waits for convergence (DESIGN.md: steps poll with a deadline and
//! report what they last saw when it passes). Used only where no single event says "done" —
//! convergence across several objects and processes.
//!
//! A deadline is in the host's paced time (`crate::pace`): on an idle host wall time, on a host
//! that gives the harness a fifth of its CPU five times as long in wall time (at most
//! `1 / pace::MIN_SHARE` times). A wait ends when the time the host gave the agents to act is
//! spent, not when a clock on a busy machine says so, so the verdict does not move with load.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often a probe runs at most: the first retries come sooner (1 ms, doubling up to this),
/// because most waits end within a few milliseconds.
pub const POLL: Duration = Duration::from_millis(20);

/// Run `probe` until it returns `Ok`; once `deadline` of paced time has passed, the last `Err`
/// observation, with the time waited. An interrupted run (`crate::interrupt`) ends the wait at
/// once in error. A probe that takes longer than the pause is given as long again before it runs
/// next, so a costly look (every Node of ten thousand) takes at most half the time of the
/// processes it waits for.
pub async fn eventually<T, F, Fut>(deadline: Duration, probe: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = crate::pace::Mark::now();
    eventually_on(deadline, || started.elapsed().paced, probe).await
}

/// `eventually` with a deadline in wall time, for a wait whose bound is a timer of the
/// component waited for (upstream's work-queue backoff runs on the wall clock): a busy host does
/// not stretch that timer, so neither does the wait.
pub async fn eventually_wall<T, F, Fut>(deadline: Duration, probe: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    eventually_on(deadline, || started.elapsed(), probe).await
}

/// `eventually` on a clock of the caller's: `spent` says how much of the deadline has passed.
async fn eventually_on<T, F, Fut>(
    deadline: Duration,
    spent: impl Fn() -> Duration,
    mut probe: F,
) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let wall = Instant::now();
    let mut pause = Duration::from_millis(1);
    let _waiting = Watch::waiting(deadline);
    loop {
        crate::interrupt::check()?;
        let probing = Instant::now();
        Watch::note(|w| w.looking = Some(probing));
        let answer = probe().await;
        Watch::note(|w| {
            w.looking = None;
            w.answered = Instant::now();
            if let Err(seen) = &answer {
                w.last_seen = Some(seen.clone());
            }
        });
        match answer {
            Ok(value) => return Ok(value),
            Err(seen) if spent() >= deadline => {
                let waited = wall.elapsed();
                let note = if waited >= deadline + deadline / 10 {
                    format!(" ({waited:.1?} of wall time on a busy host)")
                } else {
                    String::new()
                };
                return Err(format!(
                    "not reached within {deadline:?}{note}; last seen: {seen}"
                ));
            }
            Err(_) => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(pause.max(probing.elapsed())) => {}
            _ = crate::interrupt::cancelled() => {}
        }
        pause = (pause * 2).min(POLL);
    }
}

/// What the step running on this task is waiting for, as far as its waits say: kept so that the
/// step limit (`runner::watchdog`) can tell a wait that goes on under its own bound, its looks
/// answering, from an await that never answers, and say which it stopped.
#[derive(Debug, Clone)]
pub struct Progress {
    /// When the step began, or a look of one of its waits last answered.
    pub answered: Instant,
    /// The look under way, since when.
    pub looking: Option<Instant>,
    /// The wait under way: its deadline (paced) and when it began.
    pub waiting: Option<(Duration, Instant)>,
    /// What the last look that did not succeed saw.
    pub last_seen: Option<String>,
}

tokio::task_local! {
    static STEP: std::sync::Arc<std::sync::Mutex<Progress>>;
}

/// The progress of the step whose future runs under [`Watch::scope`]; waits outside any step
/// (a background task's) note nothing.
#[derive(Clone)]
pub struct Watch(std::sync::Arc<std::sync::Mutex<Progress>>);

/// Marks a wait as under way while it lives; a wait inside another's look gives the outer one
/// back when it ends.
struct Waiting(Option<(Duration, Instant)>, Option<Instant>);

impl Drop for Waiting {
    fn drop(&mut self) {
        let (waiting, looking) = (self.0, self.1);
        Watch::note(|w| {
            w.waiting = waiting;
            w.looking = looking;
        });
    }
}

impl Watch {
    pub fn new() -> Watch {
        Watch(std::sync::Arc::new(std::sync::Mutex::new(Progress {
            answered: Instant::now(),
            looking: None,
            waiting: None,
            last_seen: None,
        })))
    }

    /// Run `step` with its waits noting their progress here.
    pub async fn scope<F: Future>(&self, step: F) -> F::Output {
        STEP.scope(self.0.clone(), step).await
    }

    /// What the step's waits have said so far.
    pub fn progress(&self) -> Progress {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn note(change: impl FnOnce(&mut Progress)) {
        let _ = STEP.try_with(|p| change(&mut p.lock().unwrap_or_else(|e| e.into_inner())));
    }

    fn waiting(deadline: Duration) -> Waiting {
        // The outer wait's state is taken as plain values: a `Waiting` dropped inside `note`
        // would note again under the same lock.
        let mut outer = (None, None);
        Watch::note(|w| {
            outer = (w.waiting, w.looking);
            w.waiting = Some((deadline, Instant::now()));
        });
        Waiting(outer.0, outer.1)
    }
}

impl Default for Watch {
    fn default() -> Self {
        Watch::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn returns_the_value_or_the_last_observation() {
        let calls = AtomicU32::new(0);
        let got = eventually(Duration::from_secs(5), || async {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            if n >= 2 { Ok(n) } else { Err(format!("only {n}")) }
        })
        .await;
        assert_eq!(got, Ok(2));
        let never: Result<(), String> = eventually(Duration::from_millis(50), || async {
            Err("still 0 nodes".to_string())
        })
        .await;
        assert!(never.unwrap_err().ends_with("last seen: still 0 nodes"));
    }

    /// On a host at half its pace the wait lasts twice as long in wall time: the probe is still
    /// asked after the deadline's wall time has passed, and the wait ends once the paced clock
    /// reaches it.
    #[tokio::test]
    async fn a_deadline_is_spent_in_paced_time() {
        let wall = Instant::now();
        let half_pace = || wall.elapsed() / 2;
        let deadline = Duration::from_millis(100);
        let asked_after_deadline = AtomicU32::new(0);
        let never: Result<(), String> = eventually_on(deadline, half_pace, || async {
            if wall.elapsed() > deadline {
                asked_after_deadline.fetch_add(1, Ordering::SeqCst);
            }
            Err("not yet".to_string())
        })
        .await;
        assert!(never.unwrap_err().contains("last seen: not yet"));
        assert!(wall.elapsed() >= deadline * 2, "ended after {:?}", wall.elapsed());
        assert!(asked_after_deadline.load(Ordering::SeqCst) > 0);
    }
}
