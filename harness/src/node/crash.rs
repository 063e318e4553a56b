//! Crashing an agent at a chosen system call, with `strace` (the ptrace-based tracer every Linux
//! distribution ships): `strace -f -e inject=<syscall>:signal=SIGKILL:when=<k>` delivers SIGKILL
//! on entering the k-th call, so the call never runs and the whole process dies there, as an
//! agent killed by the OOM killer or a node's `kill -9` does. It needs no change to the agent and
//! works for any binary (Go, Rust, C, a shell script): the tracer follows its threads and the
//! programs it starts (`-f`).
//!
//! What this module owns: the agent's next start under a wrapper (`AgentLaunch`, which the node's
//! agent service honours once), strace's command lines, and reading its output back: the calls a
//! sync made, which of them change a file, and the call a crash run was killed at. What it must
//! not do: judge anything. The steps do that from what they read on the node.
//!
//! ## Where the crash points are, and why there
//!
//! strace counts calls for `when=` *per system call and per thread* ("accounting of syscalls that
//! are subject to injection is done per syscall and per tracee", strace(1)), and an agent's
//! runtime makes calls of the same names that change no file (a Go or tokio runtime's `write` to
//! its eventfd, a log line on stdout, a read-only `openat`). A global "N-th file-changing call"
//! cannot be said to strace, so the crash points are taken where strace's own accounting is
//! exact and nothing else interferes:
//!
//! - **calls that name a watched file** (a file the kubelet or CRI-O reads, or its directory),
//!   by path or through a descriptor (`-P <path>`, which strace matches against path arguments
//!   and against the path behind a descriptor argument, and which keeps every other call out of
//!   the count): `openat(…, O_TRUNC)`, `write`, `ftruncate`, `fsync`, `fchmod`, `fchown`,
//!   `unlink`, `chmod`, … on those files;
//! - **renames and links**, whose *destination* `-P` does not match (strace 6.1 matches their
//!   first path only), counted without `-P`: no runtime renames files, so their count is the
//!   agent's own.
//!
//! Under a process kill every call that returned is visible to a reader (the page cache is the
//! file), so the contents at a watched path change only at a call that names it or puts a file
//! in place there. A kill at any other call (a write to a temporary file, say) leaves the
//! watched files exactly as a kill at the next such call does: these crash points reach every
//! state a reader of the watched files can see after a kill. A power loss is another model
//! (`docs/crash-consistency.md`).

use std::path::{Path, PathBuf};

/// strace's `-s`: the bytes of a write printed whole (a CA bundle or kubeconfig is a few KiB).
pub const STRING_LIMIT: usize = 1 << 20;

/// The file-changing system calls (x86-64 and aarch64 names; strace ignores none it knows). A
/// call of one of these names changes a file unless its arguments say otherwise
/// (`changes_a_file`).
pub const FILE_CHANGING: &[&str] = &[
    "open",
    "openat",
    "openat2",
    "creat",
    "write",
    "pwrite64",
    "writev",
    "pwritev",
    "pwritev2",
    "ftruncate",
    "truncate",
    "fallocate",
    "fsync",
    "fdatasync",
    "sync_file_range",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "unlink",
    "unlinkat",
    "rmdir",
    "mkdir",
    "mkdirat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "copy_file_range",
    "sendfile",
];

/// The calls that put a file in place at their second path (`-P` matches only the first).
pub const PLACING: &[&str] = &[
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
];

/// The tracer; an error says how to get one.
pub fn strace() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("strace"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "crash injection needs strace on PATH (Debian/Ubuntu: apt-get install strace; Fedora/RHEL: dnf install strace)".to_string()
        })
}

/// How the agent's next start is wrapped, and how its end is told: the node's agent service
/// puts `wrapper` before the agent's command line once, and when that process ends it sends
/// how on `ended` and waits for `resume` before the service manager's restart, so a step can
/// look at the node at the instant of the crash.
pub struct AgentLaunch {
    pub wrapper: Vec<String>,
    pub ended: tokio::sync::oneshot::Sender<String>,
    pub resume: tokio::sync::oneshot::Receiver<()>,
}

/// What the harness learns of a launch it armed over a container node's control socket.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "launch", rename_all = "kebab-case")]
pub enum LaunchState {
    /// The wrapped agent runs still (or has not started yet).
    Waiting,
    /// It ended: how, as the service manager saw it; `None` when it ended otherwise (stopped
    /// by its service manager, or the launch was never taken).
    Ended { status: Option<String> },
}

/// The far ends of a launch armed over the control socket, which the node's init keeps until
/// the harness asks how the agent ended and lets its service manager restart it. How it ended
/// is kept once known, so a question the harness gave up on loses nothing.
#[derive(Default)]
pub struct RemoteLaunch {
    ended: Option<tokio::sync::oneshot::Receiver<String>>,
    outcome: Option<Option<String>>,
    resume: Option<tokio::sync::oneshot::Sender<()>>,
}

impl RemoteLaunch {
    /// A launch wrapped in `wrapper`, for the node's agent service, and this side of it.
    pub fn arm(wrapper: Vec<String>) -> (AgentLaunch, RemoteLaunch) {
        let (ended, ended_rx) = tokio::sync::oneshot::channel();
        let (resume_tx, resume) = tokio::sync::oneshot::channel();
        let launch = AgentLaunch {
            wrapper,
            ended,
            resume,
        };
        let remote = RemoteLaunch {
            ended: Some(ended_rx),
            outcome: None,
            resume: Some(resume_tx),
        };
        (launch, remote)
    }

    /// The receiver of the agent's end to wait on (one waiter at a time), or how it ended
    /// already (`None` there: nothing was armed).
    pub fn wait_on(&mut self) -> Result<tokio::sync::oneshot::Receiver<String>, LaunchState> {
        match (self.ended.take(), &self.outcome) {
            (Some(ended), _) => Ok(ended),
            (None, outcome) => Err(LaunchState::Ended {
                status: outcome.clone().flatten(),
            }),
        }
    }

    /// What came of a wait: the receiver back while the agent runs, its end kept once it came.
    pub fn waited(
        &mut self,
        ended: tokio::sync::oneshot::Receiver<String>,
        came: Option<Result<String, tokio::sync::oneshot::error::RecvError>>,
    ) -> LaunchState {
        match came {
            None => {
                self.ended = Some(ended);
                LaunchState::Waiting
            }
            Some(status) => {
                let status = status.ok();
                self.outcome = Some(status.clone());
                LaunchState::Ended { status }
            }
        }
    }

    /// Let the service manager restart the agent (it waits for this once a wrapped start ended).
    pub fn resume(&mut self) {
        if let Some(resume) = self.resume.take() {
            let _ = resume.send(());
        }
        self.ended = None;
    }
}

/// One strace run of the agent: which calls it traces and writes to `trace`, and which (if any)
/// it kills the agent at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRun {
    pub trace: PathBuf,
    /// `-P` paths (host paths): only calls naming one are traced and counted.
    pub paths: Vec<PathBuf>,
    /// The system calls traced.
    pub syscalls: Vec<String>,
    /// SIGKILL on entering the k-th call of this name (per thread, strace's accounting).
    pub kill_at: Option<(String, u32)>,
    /// Print the bytes each call wrote whole (`-x -s <large>`), as the power-loss model needs;
    /// otherwise the first 48.
    pub data: bool,
}

impl TraceRun {
    /// strace and its options, ending in `--`: the agent's own command line follows.
    pub fn wrapper(&self, strace: &Path) -> Vec<String> {
        let mut out = vec![
            strace.display().to_string(),
            "-f".into(),
            "-qq".into(),
            // Descriptors with the path behind them, which the report and `-P` both need.
            "-y".into(),
            "-e".into(),
            "signal=none".into(),
            "-s".into(),
            if self.data {
                STRING_LIMIT.to_string()
            } else {
                "48".into()
            },
            "-o".into(),
            self.trace.display().to_string(),
            "-e".into(),
            format!("trace={}", self.syscalls.join(",")),
        ];
        for p in &self.paths {
            out.push("-P".into());
            out.push(p.display().to_string());
        }
        if self.data {
            // Non-ASCII bytes as `\xNN` (octal escapes otherwise), so binary data reads back.
            out.insert(1, "-x".into());
        }
        if let Some((syscall, k)) = &self.kill_at {
            out.push("-e".into());
            out.push(format!("inject={syscall}:signal=SIGKILL:when={k}"));
        }
        out.push("--".into());
        out
    }
}

/// One system call as strace wrote it (an interrupted call's two halves joined).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub tid: u32,
    pub syscall: String,
    /// strace's line for it, without the thread id.
    pub line: String,
    /// The call never returned: the thread was killed in it.
    pub killed: bool,
}

/// Read strace's `-f` output: one `Call` per system call, in the order they began.
pub fn parse_trace(text: &str) -> Vec<Call> {
    let mut calls: Vec<Call> = Vec::new();
    // Per thread, the call it began and has not finished (`<unfinished ...>`).
    let mut open: std::collections::BTreeMap<u32, usize> = Default::default();
    for raw in text.lines() {
        let Some((tid, rest)) = raw.trim_start().split_once(' ') else {
            continue;
        };
        let Ok(tid) = tid.parse::<u32>() else {
            continue;
        };
        let rest = rest.trim_start();
        if rest.starts_with("+++") {
            continue;
        }
        if rest.starts_with("---") {
            continue;
        }
        if let Some(resumed) = rest.strip_prefix("<... ") {
            // `<... write resumed>) = 8`
            let tail = resumed.split_once("resumed>").map(|(_, t)| t).unwrap_or("");
            if let Some(i) = open.remove(&tid) {
                let head = calls[i]
                    .line
                    .trim_end_matches("<unfinished ...>")
                    .trim_end()
                    .to_string();
                calls[i].line = format!("{head}{tail}");
            }
            continue;
        }
        let Some(name) = rest.split_once('(').map(|(n, _)| n) else {
            continue;
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let unfinished = rest.ends_with("<unfinished ...>");
        calls.push(Call {
            tid,
            syscall: name.to_string(),
            line: rest.to_string(),
            killed: false,
        });
        if unfinished {
            open.insert(tid, calls.len() - 1);
        }
    }
    // A call that never returned: strace writes its result as `?` (the process died in it),
    // or leaves it unfinished when another thread's line came first.
    for i in open.into_values() {
        calls[i].killed = true;
    }
    for call in &mut calls {
        if call.line.trim_end().ends_with("= ?") {
            call.killed = true;
        }
    }
    calls
}

/// The call a run was killed at, as strace wrote it.
pub fn killed_call(calls: &[Call]) -> Option<&Call> {
    calls.iter().find(|c| c.killed)
}

/// Whether a call changes a file, from its arguments: an open that may write or create, a
/// write through a descriptor of a file (not a pipe, socket, eventfd or device), or any other
/// file-changing call.
pub fn changes_a_file(call: &Call) -> bool {
    let args = call.line.split_once('(').map(|(_, a)| a).unwrap_or("");
    match call.syscall.as_str() {
        "open" | "openat" | "openat2" => ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
            .iter()
            .any(|f| args.contains(f)),
        "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" | "ftruncate" | "fallocate" | "fsync"
        | "fdatasync" | "sync_file_range" | "fchmod" | "fchown" | "copy_file_range" | "sendfile" => {
            // `3</etc/kubernetes/kubelet-ca.crt>`: the first descriptor's path.
            descriptor_path(args).is_some_and(|p| p.starts_with('/') && !is_device(p))
        }
        name => FILE_CHANGING.contains(&name),
    }
}

/// A device or kernel file (`/dev/null`, a terminal, `/proc`, `/sys`); `/dev/shm` holds files.
pub(crate) fn is_device(path: &str) -> bool {
    (path.starts_with("/dev/") && !path.starts_with("/dev/shm/"))
        || path.starts_with("/proc/")
        || path.starts_with("/sys/")
}

/// Whether strace's line is of a call that failed (`= -1 ENOENT (…)`). The result follows the
/// call's closing parenthesis after padding (strace aligns short lines' results), and the bytes
/// a call wrote may hold `) = -1` themselves: the last `)` followed by `=` is the call's.
pub fn failed(line: &str) -> bool {
    line.char_indices()
        .rev()
        .filter(|(_, c)| *c == ')')
        .map(|(i, _)| line[i + 1..].trim_start())
        .find(|rest| rest.starts_with('='))
        .is_some_and(|rest| rest.trim_start_matches('=').trim_start().starts_with("-1 "))
}

/// The path behind the first descriptor argument (`-y` writes `3</path>`).
pub fn descriptor_path(args: &str) -> Option<&str> {
    let start = args.find('<')?;
    let end = args[start..].find('>')? + start;
    let digits = &args[..start];
    digits
        .chars()
        .all(|c| c.is_ascii_digit())
        .then(|| &args[start + 1..end])
}

/// Whether a renaming or linking call puts something at one of `paths` (its last quoted path).
pub fn places_at(call: &Call, paths: &[PathBuf]) -> bool {
    if !PLACING.contains(&call.syscall.as_str()) {
        return false;
    }
    let quoted: Vec<&str> = call.line.split('"').skip(1).step_by(2).collect();
    quoted
        .last()
        .is_some_and(|dest| paths.iter().any(|p| Path::new(dest) == p))
}

/// A crash point: kill at the k-th call of `syscall` (per thread, as strace counts), traced with
/// or without `-P`, and the call it stands for in the counting run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashPoint {
    pub syscall: String,
    pub nth: u32,
    /// Counted among the calls naming a watched path (`-P`), or among all calls of its name.
    pub path_filtered: bool,
    /// strace's line for the call in the counting run.
    pub counted: String,
}

/// The crash points of a counting run's calls: each call that changes a file is the `nth` of its
/// name on its thread. `path_filtered` says the run traced with `-P` (every call in it names a
/// watched path); otherwise only calls that put a file at one of `placed` count as points, and
/// every call of their name counts towards `nth`, as strace counts.
pub fn crash_points(calls: &[Call], path_filtered: bool, placed: &[PathBuf]) -> Vec<CrashPoint> {
    let mut seen: std::collections::BTreeMap<(u32, &str), u32> = Default::default();
    let mut out: Vec<CrashPoint> = Vec::new();
    for call in calls {
        let nth = seen.entry((call.tid, call.syscall.as_str())).or_insert(0);
        *nth += 1;
        // A call that failed changed nothing: a kill before it leaves what a kill before the
        // next one does (it still counts towards `nth`, as strace counts it).
        let failed = failed(&call.line);
        let point = !failed
            && if path_filtered {
                changes_a_file(call)
            } else {
                places_at(call, placed)
            };
        if !point {
            continue;
        }
        // Two threads' k-th calls of one name are one injection.
        if out
            .iter()
            .any(|p| p.syscall == call.syscall && p.nth == *nth && p.path_filtered == path_filtered)
        {
            continue;
        }
        out.push(CrashPoint {
            syscall: call.syscall.clone(),
            nth: *nth,
            path_filtered,
            counted: call.line.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The init keeps how a wrapped agent ended until the harness has it: a question that timed
    /// out leaves the launch waiting, and the answer is given again to a later one (a harness
    /// that gave up on a question loses nothing); resuming lets the service restart the agent.
    #[tokio::test]
    async fn a_remote_launch_keeps_how_the_agent_ended_for_a_later_question() {
        let (launch, mut remote) = RemoteLaunch::arm(vec!["strace".into()]);
        let mut ended = remote.wait_on().expect("armed");
        let came = tokio::time::timeout(std::time::Duration::from_millis(10), &mut ended)
            .await
            .ok();
        assert_eq!(remote.waited(ended, came), LaunchState::Waiting);
        launch.ended.send("signal: 9 (SIGKILL)".into()).unwrap();
        let mut ended = remote.wait_on().expect("still waited on");
        let came = tokio::time::timeout(std::time::Duration::from_secs(30), &mut ended)
            .await
            .ok();
        let state = remote.waited(ended, came);
        let killed = LaunchState::Ended {
            status: Some("signal: 9 (SIGKILL)".into()),
        };
        assert_eq!(state, killed);
        assert_eq!(remote.wait_on().unwrap_err(), killed);
        remote.resume();
        assert!(launch.resume.await.is_ok());
        // Nothing armed: the launch ended otherwise.
        assert_eq!(
            RemoteLaunch::default().wait_on().unwrap_err(),
            LaunchState::Ended { status: None }
        );
    }

    const COUNTED: &str = r#"4711 openat(AT_FDCWD</>, "/r/etc/kubernetes/.kubelet-ca.crt.1f", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 9</r/etc/kubernetes/.kubelet-ca.crt.1f>
4711 write(1<pipe:[1234]>, "Writing file\n", 13) = 13
4711 fchmod(9</r/etc/kubernetes/.kubelet-ca.crt.1f>, 0644) = 0
4712 write(5<anon_inode:[eventfd]>, "\1\0\0\0\0\0\0\0", 8) = 8
4711 write(9</r/etc/kubernetes/.kubelet-ca.crt.1f>, "-----BEGIN CERTIFICATE-----\nMIIDBz"..., 2201 <unfinished ...>
4712 rename("/r/tmp/x", "/r/tmp/y") = 0
4711 <... write resumed>) = 2201
4711 fsync(9</r/etc/kubernetes/.kubelet-ca.crt.1f>) = 0
4711 rename("/r/etc/kubernetes/.kubelet-ca.crt.1f", "/r/etc/kubernetes/kubelet-ca.crt") = 0
4713 rename("/r/etc/a.tmp", "/r/etc/kubernetes/kubeconfig") = 0
4711 mkdir("/r/etc/kubernetes", 0777) = -1 EEXIST (File exists)
4711 write(2</dev/shm/node/etc/f>, "x", 1) = 1
4711 write(2</dev/null>, "x", 1) = 1
"#;

    #[test]
    fn a_trace_reads_back_as_calls_with_interrupted_ones_joined() {
        let calls = parse_trace(COUNTED);
        assert_eq!(calls.len(), 12);
        assert_eq!(calls[4].syscall, "write");
        assert!(calls[4].line.ends_with("2201) = 2201"), "{}", calls[4].line);
        assert!(calls.iter().all(|c| !c.killed));
    }

    #[test]
    fn only_calls_that_change_a_file_count_as_changing() {
        let calls = parse_trace(COUNTED);
        let changing: Vec<&str> = calls
            .iter()
            .filter(|c| changes_a_file(c))
            .map(|c| c.syscall.as_str())
            .collect();
        assert_eq!(
            changing,
            [
                "openat", "fchmod", "write", "rename", "fsync", "rename", "rename", "mkdir", "write"
            ],
            "the pipe, eventfd and /dev/null writes change no file; a file under /dev/shm is one"
        );
        let read = Call {
            tid: 1,
            syscall: "openat".into(),
            line: r#"openat(AT_FDCWD</>, "/r/etc/kubernetes/kubeconfig", O_RDONLY|O_CLOEXEC) = 3"#.into(),
            killed: false,
        };
        assert!(!changes_a_file(&read));
    }

    #[test]
    fn renames_onto_a_watched_path_are_points_counted_per_thread() {
        let calls = parse_trace(COUNTED);
        let watched = [
            PathBuf::from("/r/etc/kubernetes/kubelet-ca.crt"),
            PathBuf::from("/r/etc/kubernetes/kubeconfig"),
        ];
        let points = crash_points(&calls, false, &watched);
        let got: Vec<(&str, u32)> = points.iter().map(|p| (p.syscall.as_str(), p.nth)).collect();
        // Thread 4711's first rename, and thread 4713's first (the same injection: one point).
        assert_eq!(got, [("rename", 1)]);
        let filtered = crash_points(&calls, true, &[]);
        let got: Vec<(&str, u32)> = filtered.iter().map(|p| (p.syscall.as_str(), p.nth)).collect();
        assert_eq!(
            got,
            [
                ("openat", 1),
                ("fchmod", 1),
                ("write", 2),
                ("rename", 1),
                ("fsync", 1),
                ("write", 3)
            ],
            "with -P every traced call counts towards its name's nth; the failed mkdir is no point"
        );
    }

    #[test]
    fn a_failed_call_is_told_by_its_result_whatever_the_padding_or_the_bytes() {
        assert!(failed(
            r#"mkdir("/r/etc", 0777)                   = -1 EEXIST (File exists)"#
        ));
        assert!(failed(
            r#"mkdir("/r/etc/kubernetes", 0777) = -1 EEXIST (File exists)"#
        ));
        assert!(!failed(r#"write(1<pipe:[7]>, "x) = -1 y", 9)    = 9"#));
        assert!(!failed(r#"fsync(3</r/etc>)        = 0"#));
        // An interrupted call's two halves joined as `parse_trace` joins them.
        let calls = parse_trace(
            "9 mkdir(\"/r/etc\", 0777 <unfinished ...>\n8 fsync(3</r/a>) = 0\n9 <... mkdir resumed>)            = -1 EEXIST (File exists)\n",
        );
        assert!(failed(&calls[0].line), "{}", calls[0].line);
    }

    #[test]
    fn the_killed_call_is_found_finished_or_not() {
        // As strace 6.1 leaves it when a thread is killed: no newline, no `+++` line.
        let killed = "900 openat(AT_FDCWD</>, \"/r/k\", O_WRONLY|O_TRUNC|O_CLOEXEC) = 3</r/k>\n\
                      900 write(3</r/k>, \"new\", 3)      = ?";
        let calls = parse_trace(killed);
        let call = killed_call(&calls).expect("a killed call");
        assert_eq!(call.line, "write(3</r/k>, \"new\", 3)      = ?");
        let unfinished = "900 rename(\"/r/a\", \"/r/k\" <unfinished ...>\n901 fsync(4</r/b>) = 0\n900 +++ killed by SIGKILL +++\n";
        let calls = parse_trace(unfinished);
        assert_eq!(killed_call(&calls).map(|c| c.syscall.as_str()), Some("rename"));
        assert!(killed_call(&parse_trace(COUNTED)).is_none());
    }

    #[test]
    fn the_wrapper_names_the_trace_the_paths_and_the_injection() {
        let run = TraceRun {
            trace: "/t/trace".into(),
            paths: vec!["/r/etc/kubernetes/kubelet-ca.crt".into()],
            syscalls: vec!["write".into()],
            kill_at: Some(("write".into(), 2)),
            data: false,
        };
        let args = run.wrapper(Path::new("/usr/bin/strace")).join(" ");
        assert_eq!(
            args,
            "/usr/bin/strace -f -qq -y -e signal=none -s 48 -o /t/trace -e trace=write -P /r/etc/kubernetes/kubelet-ca.crt -e inject=write:signal=SIGKILL:when=2 --"
        );
    }
}
