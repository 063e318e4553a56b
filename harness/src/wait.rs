//! The one way the harness waits for convergence (DESIGN.md: steps poll with a deadline in
//! real time and report what they last saw when it passes). Used only where no single event
//! says "done" — convergence across several objects and processes.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often a probe runs at most: the first retries come sooner (1 ms, doubling up to this),
/// because most waits end within a few milliseconds.
pub const POLL: Duration = Duration::from_millis(20);

/// Run `probe` until it returns `Ok`; after `deadline`, the last `Err` observation, with the
/// time waited. An interrupted run (`crate::interrupt`) ends the wait at once in error. A probe
/// that takes longer than the pause is given as long again before it runs next, so a costly
/// look (every Node of ten thousand) takes at most half the time of the processes it waits for.
pub async fn eventually<T, F, Fut>(deadline: Duration, mut probe: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        crate::interrupt::check()?;
        let probing = Instant::now();
        match probe().await {
            Ok(value) => return Ok(value),
            Err(seen) if started.elapsed() >= deadline => {
                return Err(format!("not reached within {deadline:?}; last seen: {seen}"));
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
}
