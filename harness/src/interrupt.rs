//! A run's interruption (SIGINT or SIGTERM). The first signal asks the run to stop: every wait
//! of a running scenario ends at once in error, a scenario not yet started fails at its first
//! step, and each scenario is shut down as usual — agents stopped, containers and node roots
//! removed — so the reports are whole and say why. A second signal forces: the process exits
//! at once with what it holds left behind.
//!
//! Library code only asks (`interrupted`, `check`, `cancelled`); the binary installs the
//! signal handlers (`install`).

use std::sync::OnceLock;
use tokio_util::sync::CancellationToken;

static TOKEN: OnceLock<CancellationToken> = OnceLock::new();
static SIGNAL: OnceLock<&'static str> = OnceLock::new();

fn token() -> &'static CancellationToken {
    TOKEN.get_or_init(CancellationToken::new)
}

/// Ask the run to stop, naming the signal ("SIGINT"). Later calls change nothing.
pub fn interrupt(signal: &'static str) {
    let _ = SIGNAL.set(signal);
    token().cancel();
}

/// The signal that interrupted the run, if one did.
pub fn interrupted() -> Option<&'static str> {
    if token().is_cancelled() {
        Some(SIGNAL.get().copied().unwrap_or("an interrupt"))
    } else {
        None
    }
}

/// Why a wait or a step ends early, once the run is interrupted.
pub fn reason() -> String {
    format!(
        "the run was interrupted ({}): stopped",
        interrupted().unwrap_or("not yet")
    )
}

/// `Err` with the reason once the run is interrupted.
pub fn check() -> Result<(), String> {
    match interrupted() {
        Some(_) => Err(reason()),
        None => Ok(()),
    }
}

/// Resolves when the run is interrupted.
pub async fn cancelled() {
    token().cancelled().await
}

/// Route SIGINT and SIGTERM here: the first interrupts the run, the second exits the process
/// with 130 (SIGINT) or 143 (SIGTERM) at once. `on_first` says what happens next.
pub fn install(on_first: fn(&'static str), on_force: fn(&'static str)) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        let mut seen = 0;
        loop {
            let name = tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            };
            seen += 1;
            if seen == 1 {
                interrupt(name);
                on_first(name);
            } else {
                on_force(name);
                std::process::exit(exit_code(name));
            }
        }
    });
    Ok(())
}

/// The shell's exit status for a process ended by `signal`: 128 + its number.
pub fn exit_code(signal: &str) -> i32 {
    match signal {
        "SIGTERM" => 143,
        _ => 130,
    }
}
