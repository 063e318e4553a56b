//! The process's panic hook while cucumber runs: silent for a step's panic (cucumber reports
//! it), heard for any other, and put back as it was found once the last run ends.

use std::sync::{Arc, Mutex};

/// cucumber's runner swaps the process's panic hook for a silent one while it runs (it reports
/// a step's panic itself) and puts back the hook it found when it ends. Two runs at once in one
/// process (tests at a time) interleave that: the second takes the first's silent hook, puts it
/// back last, and every later panic in the process, a test's failed assertion among them, says
/// nothing. The first run to start keeps the hook it found; the last to end puts it back.
///
/// While runs are under way the hook is silent only for a panic in a run's own future (a step's,
/// which cucumber reports): any other panic in the process, a test's assertion beside a run or a
/// task of its own, reaches the hook found before the runs, so it still says why. cucumber puts
/// its silent hook in place as its run starts; each scenario's Before hook puts this one back
/// ([`PanicHookGuard::reinstate`]).
pub(super) struct PanicHookGuard;

tokio::task_local! {
    /// Set while a run's cucumber future is polled: a panic there is a step's.
    pub(super) static IN_A_RUN: ();
}

/// Silent for a panic inside a run's future; `found` for any other.
fn silent_in_runs(found: Hook) -> Hook {
    Arc::new(move |info| {
        if IN_A_RUN.try_with(|_| ()).is_err() {
            found(info)
        }
    })
}

type Hook = Arc<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync>;

/// Runs under way, and the hook in place when the first of them started.
static RUNS_UNDER_WAY: Mutex<(usize, Option<Hook>)> = Mutex::new((0, None));

fn install(hook: Hook) {
    std::panic::set_hook(Box::new(move |info| hook(info)));
}

impl PanicHookGuard {
    pub(super) fn enter() -> Self {
        let mut runs = RUNS_UNDER_WAY.lock().unwrap_or_else(|p| p.into_inner());
        if runs.0 == 0 && !std::thread::panicking() {
            let found: Hook = Arc::from(std::panic::take_hook());
            install(silent_in_runs(found.clone()));
            runs.1 = Some(found);
        }
        runs.0 += 1;
        PanicHookGuard
    }

    /// Put back the hook of [`PanicHookGuard`]'s runs in place of cucumber's silent one.
    pub(super) fn reinstate() {
        let runs = RUNS_UNDER_WAY.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = &runs.1
            && !std::thread::panicking()
        {
            install(silent_in_runs(found.clone()));
        }
    }
}

impl Drop for PanicHookGuard {
    fn drop(&mut self) {
        let mut runs = RUNS_UNDER_WAY.lock().unwrap_or_else(|p| p.into_inner());
        runs.0 = runs.0.saturating_sub(1);
        if runs.0 == 0
            && !std::thread::panicking()
            && let Some(found) = runs.1.take()
        {
            install(found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The panic hook is the process's: a test of it runs alone in a process of its own (this
    /// test binary, run again for the one test). True in that process; in the parent, runs it
    /// and checks that it passed.
    fn alone_in_a_process(test: &str) -> bool {
        const CHILD: &str = "MCO_PANIC_HOOK_CHILD";
        if std::env::var_os(CHILD).is_some() {
            return true;
        }
        let name = format!("runner::panic_hook::tests::{test}");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name.as_str(), "--exact", "--test-threads=1", "--nocapture"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
        false
    }

    #[test]
    fn beside_a_run_a_panic_elsewhere_reaches_the_hook_and_a_steps_does_not() {
        if !alone_in_a_process("beside_a_run_a_panic_elsewhere_reaches_the_hook_and_a_steps_does_not") {
            return;
        }
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let calls = || CALLS.load(std::sync::atomic::Ordering::SeqCst);
        std::panic::set_hook(Box::new(|_| {
            CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
        let guard = PanicHookGuard::enter();
        // cucumber's start of a run, then a scenario's Before hook.
        let found_by_cucumber = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        PanicHookGuard::reinstate();
        // A step's panic, inside the run's future: cucumber reports it, the hook stays quiet.
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(IN_A_RUN.scope((), async {
            assert!(std::panic::catch_unwind(|| panic!("a step")).is_err());
        }));
        assert_eq!(calls(), 0, "a step's panic went to the hook");
        // Another test's assertion beside the run.
        assert!(std::panic::catch_unwind(|| panic!("beside the run")).is_err());
        assert_eq!(calls(), 1, "a panic beside the run said nothing");
        std::panic::set_hook(found_by_cucumber);
        drop(guard);
        assert!(std::panic::catch_unwind(|| panic!("after the run")).is_err());
        assert_eq!(calls(), 2, "the hook found before the run is back after it");
    }

    /// The hook cucumber would leave behind when two runs overlap.
    #[test]
    fn overlapping_runs_leave_the_hook_they_found() {
        if !alone_in_a_process("overlapping_runs_leave_the_hook_they_found") {
            return;
        }
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        std::panic::set_hook(Box::new(|_| {
            CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
        // What cucumber's runner does around each run, two runs overlapping.
        let a = PanicHookGuard::enter();
        let found_by_a = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let b = PanicHookGuard::enter();
        let found_by_b = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        std::panic::set_hook(found_by_a);
        drop(a);
        std::panic::set_hook(found_by_b);
        drop(b);
        assert!(std::panic::catch_unwind(|| panic!("after both runs")).is_err());
        assert_eq!(
            CALLS.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "the hook in place before the runs saw the panic after them"
        );
    }
}
