//! The one source of time (STYLE.md: "One clock"). `SimClock` is a scenario's simulated
//! clock: it moves only when told ("When 292 days pass" takes microseconds) and marks each
//! move on a watch channel, so its followers react without polling. The identities the API
//! server judges live in real time (DESIGN.md, "Time: two domains"), which is the system's.

use std::sync::Arc;
use time::{Duration, OffsetDateTime};
use tokio::sync::watch;

/// A source of "now" (the shape of rustls's `TimeProvider`).
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> OffsetDateTime;
}

/// A simulated clock shared by everything in one scenario. Its instant is a watch channel:
/// whoever follows the clock (a node's now file, a container node's own clock) subscribes and
/// follows in its own task, so moving the clock never waits on a follower and a follower's
/// failure is its own to report.
#[derive(Clone)]
pub struct SimClock {
    now: Arc<watch::Sender<OffsetDateTime>>,
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
            now: Arc::new(watch::channel(start).0),
        }
    }

    /// Move forward by `by` (never backwards: zero or a negative duration changes nothing and
    /// tells no follower). Returns the new time.
    pub fn advance(&self, by: Duration) -> OffsetDateTime {
        if by.is_positive() {
            self.now.send_modify(|now| *now += by);
        }
        self.now()
    }

    /// The clock's instant as a channel: it holds the time now and marks every move.
    pub fn subscribe(&self) -> watch::Receiver<OffsetDateTime> {
        self.now.subscribe()
    }
}

impl Clock for SimClock {
    fn now(&self) -> OffsetDateTime {
        *self.now.borrow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_moves_time_and_marks_the_move_for_followers() {
        let clock = SimClock::default();
        let mut follower = clock.subscribe();
        let later = clock.advance(Duration::days(292));
        assert_eq!(later - SIMULATION_EPOCH, Duration::days(292));
        assert_eq!(clock.now(), later);
        assert!(follower.has_changed().unwrap());
        assert_eq!(*follower.borrow_and_update(), later);
        clock.advance(Duration::days(-5));
        clock.advance(Duration::ZERO);
        assert_eq!(clock.now(), later, "time never goes back");
        assert!(!follower.has_changed().unwrap(), "no move, no mark");
    }
}
