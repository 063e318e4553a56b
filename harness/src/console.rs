//! Console output that never panics: `println!` panics when stdout is a closed pipe
//! (`mco-conformance steps | head`), and a panic mid-run would skip the cleanup of nodes and
//! containers. These print what they can and drop the rest.

use std::io::Write;

/// Write to stdout, ignoring a closed or failing stdout.
pub fn out(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_fmt(args);
    let _ = stdout.flush();
}

/// Write to stderr, ignoring a closed or failing stderr.
pub fn err(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `print!` that never panics.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => { $crate::console::out(format_args!($($arg)*)) };
}

/// `println!` that never panics.
#[macro_export]
macro_rules! sayln {
    () => { $crate::console::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::console::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprintln!` that never panics.
#[macro_export]
macro_rules! warnln {
    ($($arg:tt)*) => { $crate::console::err(format_args!("{}\n", format_args!($($arg)*))) };
}
