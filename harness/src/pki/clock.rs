//! The one source of time (STYLE.md: "One clock"). `SimClock` is a scenario's simulated
//! clock: it moves only when told ("When 292 days pass" takes microseconds) and tells its
//! listeners when it does, so controllers can react without polling. `WallClock` is real time,
//! for the identities the API server judges (DESIGN.md, "Time: two domains").

use std::sync::{Arc, Mutex};
use time::{Duration, OffsetDateTime};

/// A source of "now" (the shape of rustls's `TimeProvider`).
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> OffsetDateTime;
}

/// Real time.
#[derive(Debug, Default, Clone, Copy)]
pub struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

type Listener = Box<dyn Fn(OffsetDateTime) + Send + Sync>;

/// A simulated clock shared by everything in one scenario.
#[derive(Clone)]
pub struct SimClock {
    inner: Arc<Inner>,
}

struct Inner {
    now: Mutex<OffsetDateTime>,
    listeners: Mutex<Vec<Listener>>,
}

impl std::fmt::Debug for SimClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SimClock({})", crate::pki::rfc3339(self.now()))
    }
}

/// Where every scenario's simulated time starts, so journals and derived days are stable.
pub const SIMULATION_EPOCH: OffsetDateTime = time::macros::datetime!(2026-01-05 08:00:00 UTC);

impl Default for SimClock {
    fn default() -> Self {
        SimClock::starting_at(SIMULATION_EPOCH)
    }
}

impl SimClock {
    pub fn starting_at(start: OffsetDateTime) -> Self {
        SimClock {
            inner: Arc::new(Inner {
                now: Mutex::new(start),
                listeners: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Move forward by `by` (never backwards: a negative duration is ignored) and tell every
    /// listener the new time. Returns the new time.
    pub fn advance(&self, by: Duration) -> OffsetDateTime {
        let now = {
            let mut now = self.inner.now.lock().unwrap_or_else(|p| p.into_inner());
            if by.is_positive() {
                *now += by;
            }
            *now
        };
        for listener in self
            .inner
            .listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            listener(now);
        }
        now
    }

    /// Call `listener` with the new time whenever the clock moves.
    pub fn on_advance(&self, listener: impl Fn(OffsetDateTime) + Send + Sync + 'static) {
        self.inner
            .listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Box::new(listener));
    }
}

impl Clock for SimClock {
    fn now(&self) -> OffsetDateTime {
        *self.inner.now.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, Ordering};

    #[test]
    fn advancing_moves_time_and_tells_listeners() {
        let clock = SimClock::default();
        let heard = Arc::new(AtomicI64::new(0));
        let h = heard.clone();
        clock.on_advance(move |t| h.store(t.unix_timestamp(), Ordering::SeqCst));
        let later = clock.advance(Duration::days(292));
        assert_eq!(later - SIMULATION_EPOCH, Duration::days(292));
        assert_eq!(clock.now(), later);
        assert_eq!(heard.load(Ordering::SeqCst), later.unix_timestamp());
        clock.advance(Duration::days(-5));
        assert_eq!(clock.now(), later, "time never goes back");
    }
}
