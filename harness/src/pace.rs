//! The host's pace: time measured as the CPU the host gave the harness's own threads, so that
//! "late" does not move with how loaded the machine is.
//!
//! Every thread of this process that wants the CPU either runs or waits in the kernel's run
//! queue; Linux counts both per thread (`/proc/self/task/<tid>/schedstat`: time on the CPU,
//! time waiting on a run queue). Of the time the harness's threads wanted the CPU, the share
//! they got is how fast anything on the host runs now compared with an idle host: 1 on an idle
//! machine, about 2/9 with eight busy processes beside one thread on two cores. Paced time is
//! wall time weighted by that share, tick by tick: a prompt agent whose work took 40 s of wall
//! time on a host that ran everything at a fifth of its pace took 8 s of paced time, as it
//! would have on an idle host. An agent that sleeps on a timer gains only as much as the host is
//! slower: a 2-minute timer is 24 s of paced time at a fifth of the pace, still late, and no
//! timer longer than fifty times a bound passes it, since a tick counts at least `MIN_SHARE`.
//!
//! It measures the host, not any scenario: one sampler thread per process, started on first
//! use. Off Linux (no schedstat), paced time is wall time.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often the sampler reads the threads' counters.
const TICK: Duration = Duration::from_millis(100);

/// Below this much CPU wanted (run plus waited) by the harness's threads in a tick, the tick
/// says too little about the host: the share of the tick before stands.
const MIN_WANTED: Duration = Duration::from_millis(2);

/// The least share a tick is given: a host that gives the harness's threads less than this is
/// not measured more finely (paced time still advances, at a fiftieth of wall time).
pub const MIN_SHARE: f64 = 0.02;

/// Paced time, tick by tick, from the CPU the harness's threads got and waited for.
#[derive(Debug)]
pub struct Meter {
    /// The last tick's end.
    at: Instant,
    /// Paced time at `at`.
    paced: Duration,
    /// The share the last tick measured, applied from `at` until the next.
    share: f64,
}

impl Meter {
    pub fn new(at: Instant) -> Self {
        Meter {
            at,
            paced: Duration::ZERO,
            share: 1.0,
        }
    }

    /// A tick ending at `at` in which the harness's threads ran for `ran` and waited on a run
    /// queue for `waited`: the time since the last tick counts at the share they got.
    pub fn tick(&mut self, at: Instant, ran: Duration, waited: Duration) {
        let wanted = ran + waited;
        if wanted >= MIN_WANTED {
            self.share = (ran.as_secs_f64() / wanted.as_secs_f64()).clamp(MIN_SHARE, 1.0);
        }
        let wall = at.saturating_duration_since(self.at);
        self.paced += wall.mul_f64(self.share);
        self.at = self.at.max(at);
    }

    /// Paced time at `at`: the last tick's, and the time since it at the last share.
    pub fn paced_at(&self, at: Instant) -> Duration {
        self.paced + at.saturating_duration_since(self.at).mul_f64(self.share)
    }

    /// The share of the CPU the harness's threads got in the last tick that said something.
    pub fn share(&self) -> f64 {
        self.share
    }
}

/// A moment, in wall time and in paced time.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    wall: Instant,
    paced: Duration,
}

/// How long since a [`Mark`], both ways.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Elapsed {
    pub wall: Duration,
    pub paced: Duration,
}

impl Elapsed {
    /// The host's pace over the interval: paced over wall time (1 on an idle host).
    pub fn pace(&self) -> f64 {
        if self.wall.is_zero() {
            return 1.0;
        }
        self.paced.as_secs_f64() / self.wall.as_secs_f64()
    }
}

impl Mark {
    /// Now, on the process's meter.
    pub fn now() -> Mark {
        let wall = Instant::now();
        Mark {
            wall,
            paced: meter().lock().unwrap_or_else(|p| p.into_inner()).paced_at(wall),
        }
    }

    /// Since this mark, on the process's meter.
    pub fn elapsed(&self) -> Elapsed {
        let now = Mark::now();
        self.until(&now)
    }

    /// From this mark to `later`.
    pub fn until(&self, later: &Mark) -> Elapsed {
        Elapsed {
            wall: later.wall.saturating_duration_since(self.wall),
            paced: later.paced.saturating_sub(self.paced),
        }
    }
}

/// Wait until `span` of paced time has passed: a duration the model gives a real component (a
/// node's shutdown, say), which on a loaded host takes correspondingly more wall time, so what
/// runs beside it gets the CPU it would have had on an idle host. Never a wait for an event.
pub async fn sleep(span: Duration) {
    let start = Mark::now();
    loop {
        let paced = start.elapsed().paced;
        if paced >= span {
            return;
        }
        tokio::time::sleep((span - paced).min(TICK)).await;
    }
}

/// The process's meter, its sampler started on first use.
fn meter() -> &'static Mutex<Meter> {
    static METER: OnceLock<&'static Mutex<Meter>> = OnceLock::new();
    METER.get_or_init(|| {
        let meter: &'static Mutex<Meter> = Box::leak(Box::new(Mutex::new(Meter::new(Instant::now()))));
        if threads().is_some() {
            let spawned = std::thread::Builder::new()
                .name("mco-pace".into())
                .spawn(move || sample(meter));
            // Without a sampler the meter never ticks: paced time is wall time.
            drop(spawned);
        }
        meter
    })
}

/// Tick the meter every `TICK` from the threads' counters, for the process's life.
fn sample(meter: &'static Mutex<Meter>) {
    let mut last: HashMap<u32, (u64, u64)> = threads().unwrap_or_default();
    loop {
        std::thread::sleep(TICK);
        let Some(now) = threads() else { return };
        let (mut ran, mut waited) = (0u64, 0u64);
        for (tid, (cpu, delay)) in &now {
            // A thread born in this tick counts from its start; one gone since counts no more.
            let (cpu0, delay0) = last.get(tid).copied().unwrap_or((0, 0));
            ran += cpu.saturating_sub(cpu0);
            waited += delay.saturating_sub(delay0);
        }
        last = now;
        meter.lock().unwrap_or_else(|p| p.into_inner()).tick(
            Instant::now(),
            Duration::from_nanos(ran),
            Duration::from_nanos(waited),
        );
    }
}

/// Each thread of this process: nanoseconds on the CPU and waiting on a run queue; `None` where
/// the kernel does not say (not Linux, or no schedstat).
fn threads() -> Option<HashMap<u32, (u64, u64)>> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let Ok(entry) = entry else { continue };
        let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        // A thread may end between the listing and the read.
        let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        out.insert(tid, schedstat(&text)?);
    }
    (!out.is_empty()).then_some(out)
}

/// `/proc/<pid>/task/<tid>/schedstat`: "<ns on cpu> <ns waiting on a runqueue> <timeslices>".
fn schedstat(text: &str) -> Option<(u64, u64)> {
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    Some((fields.next()?.ok()?, fields.next()?.ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn an_idle_host_keeps_wall_time() {
        let t0 = Instant::now();
        let mut m = Meter::new(t0);
        for i in 1..=100 {
            m.tick(t0 + TICK * i, Duration::from_millis(30), Duration::ZERO);
        }
        assert_eq!(m.paced_at(t0 + 10 * S), 10 * S);
    }

    /// A host running everything at a fifth of its pace: 50 s of wall time are 10 s of paced
    /// time, so a prompt agent whose sync took 40 s there is not late, and a 2-minute timer is
    /// still 24 s, past a 10 s bound.
    #[test]
    fn a_stalled_host_counts_the_time_it_gave() {
        let t0 = Instant::now();
        let mut m = Meter::new(t0);
        let at = |m: &mut Meter, secs: u32| {
            for i in 1..=secs * 10 {
                m.tick(
                    t0 + TICK * i,
                    Duration::from_millis(20),
                    Duration::from_millis(80),
                );
            }
            m.paced_at(t0 + S * secs)
        };
        let prompt = at(&mut m, 40);
        assert!((prompt.as_secs_f64() - 8.0).abs() < 0.01, "{prompt:?}");
        let timer = at(&mut m, 120);
        assert!((timer.as_secs_f64() - 24.0).abs() < 0.01, "{timer:?}");
    }

    /// A quiet tick (the harness waiting on a sleeping agent) tells nothing about the host: the
    /// share measured before it stands, in both directions.
    #[test]
    fn a_quiet_tick_keeps_the_share_before_it() {
        let t0 = Instant::now();
        let mut m = Meter::new(t0);
        m.tick(t0 + TICK, Duration::from_millis(10), Duration::from_millis(40));
        assert!((m.share() - 0.2).abs() < 1e-9);
        m.tick(t0 + TICK * 2, Duration::from_micros(500), Duration::ZERO);
        assert!((m.share() - 0.2).abs() < 1e-9);
        m.tick(t0 + TICK * 3, Duration::from_millis(50), Duration::ZERO);
        assert_eq!(m.share(), 1.0);
    }

    #[test]
    fn the_share_has_a_floor() {
        let t0 = Instant::now();
        let mut m = Meter::new(t0);
        m.tick(t0 + S, Duration::ZERO, Duration::from_millis(900));
        assert_eq!(m.share(), MIN_SHARE);
        assert_eq!(m.paced_at(t0 + S), S.mul_f64(MIN_SHARE));
    }

    #[test]
    fn schedstat_reads_run_and_wait() {
        assert_eq!(
            schedstat("445997864 117513888 73\n"),
            Some((445997864, 117513888))
        );
        assert_eq!(schedstat("garbage"), None);
    }

    /// The meter reads this process's threads where the kernel counts them: a thread spinning
    /// shows in what it ran. The spinning thread is compared with itself: other test threads may
    /// end between the two reads, so the process's sum may fall.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_process_threads_are_read() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        let before = threads().expect("Linux counts each thread in schedstat");
        let me = before.get(&tid).expect("this thread is listed").0;
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(20) {
            std::hint::spin_loop();
        }
        let after = threads().expect("read once, read again");
        assert!(after.get(&tid).expect("this thread is still listed").0 > me);
    }
}
