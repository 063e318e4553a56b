//! Interrupting a run: the first SIGINT stops it cleanly on both node kinds — its scenarios end,
//! agents are stopped, containers and node roots removed, the reports written whole and marked
//! interrupted, exit status 130 — and a second SIGINT exits at once. What the run leaves behind
//! is looked for where it would be: processes carrying this test's mark in their environment,
//! the run's scratch directory (`MCO_CONFORMANCE_SCRATCH`), containers labelled with the run's
//! process id, and the report directory.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_mco-conformance");
const MARK_ENV: &str = "MCO_INTERRUPT_TEST_MARK";

/// Each thread of a process with its state and the kernel function it waits in
/// (`/proc/<pid>/task/<tid>/stat` and `wchan`).
fn waiting_in(pid: u32) -> String {
    let mut threads = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let read = |file: &str| std::fs::read_to_string(task.path().join(file)).unwrap_or_default();
        let stat = read("stat");
        // After the command name in parentheses: the state letter.
        let state = stat.rsplit_once(") ").map(|(_, rest)| &rest[..1]).unwrap_or("?");
        let name = read("comm");
        threads.push(format!(
            "  {} {} {state} {}",
            task.file_name().to_string_lossy(),
            name.trim(),
            read("wchan")
        ));
    }
    threads.join("\n")
}

/// Processes (pid, command line) whose environment holds `MARK_ENV=mark`, other than this one.
fn marked_processes(mark: &str) -> Vec<(u32, String)> {
    let wanted = format!("{MARK_ENV}={mark}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes()) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            // A zombie has no command line: it is gone but for its parent's reaping.
            if !cmdline.is_empty() {
                found.push((pid, cmdline));
            }
        }
    }
    found
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Wait until `ready` holds, for at most `within`; `false` if it never did.
fn wait_for(within: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < within {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    ready()
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
}

struct Run {
    child: Child,
    nodes: &'static str,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    scratch: tempfile::TempDir,
    reports: tempfile::TempDir,
    mark: String,
}

/// Read a pipe to its end into `into`, as it comes.
fn collect(mut pipe: impl Read + Send + 'static, into: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut chunk) {
            if n == 0 {
                break;
            }
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
}

impl Run {
    /// A run of the kubelet-restart feature on `nodes` with the reference daemon as a process
    /// on every node, two scenarios at a time.
    fn start(nodes: &'static str) -> Run {
        let scratch = tempfile::tempdir().unwrap();
        let reports = tempfile::tempdir().unwrap();
        // One mark per run: two runs of one kind at once (the tests run in parallel) must not
        // take each other's processes for their own, nor kill them in `clean_up`.
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mark = format!("{}-{nodes}-{n}", std::process::id());
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let mut child = Command::new(BIN)
            .current_dir(root)
            .args([
                "run",
                "--profile",
                "ocp-4.16",
                "--nodes",
                nodes,
                "--concurrency",
                "2",
            ])
            .args(["--tags", "@kubelet-restart", "--agent-timeout", "60s"])
            .arg("--agent-binary")
            .arg(env!("CARGO_BIN_EXE_mco-reference-daemon"))
            .arg("--report-dir")
            .arg(reports.path())
            .arg("--report")
            .arg(reports.path().join("report.yaml"))
            .env("MCO_CONFORMANCE_SCRATCH", scratch.path())
            .env(MARK_ENV, &mark)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (stdout, stderr) = (Arc::default(), Arc::default());
        collect(child.stdout.take().unwrap(), Arc::clone(&stdout));
        collect(child.stderr.take().unwrap(), Arc::clone(&stderr));
        Run {
            child,
            nodes,
            stdout,
            stderr,
            scratch,
            reports,
            mark,
        }
    }

    fn output(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            self.stdout.lock().unwrap(),
            self.stderr.lock().unwrap()
        )
    }

    /// Wait until a node of the run is up with its agent running: an agent process (embedded
    /// nodes), or a node container (container nodes), and a node's directory in the scratch
    /// directory.
    fn wait_until_busy(&mut self) {
        let busy = wait_for(Duration::from_secs(180), || {
            let agent = if self.nodes == "container" {
                !containers_of(self.child.id()).is_empty()
            } else {
                marked_processes(&self.mark)
                    .iter()
                    .any(|(_, cmd)| cmd.contains("mco-reference-daemon"))
            };
            agent && !entries(self.scratch.path()).is_empty()
        });
        if !busy {
            // What each process of the run was doing, to tell a hang from a slow start.
            let processes = std::iter::once((self.child.id(), "the run".to_string()))
                .chain(marked_processes(&self.mark))
                .map(|(pid, cmd)| format!("{pid} {cmd}\n{}", waiting_in(pid)))
                .collect::<Vec<_>>()
                .join("\n");
            let scratch = entries(self.scratch.path());
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.clean_up();
            panic!(
                "the run never had a node with a running agent:\n{}\nscratch: {scratch:?}\nprocesses:\n{processes}",
                self.output()
            );
        }
    }

    /// Wait for the run to exit (at most `within`); its status code.
    fn finish(&mut self, within: Duration) -> Option<i32> {
        let exited = wait_for(within, || matches!(self.child.try_wait(), Ok(Some(_))));
        if !exited {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.clean_up();
            panic!(
                "the run did not exit within {within:?} of the interrupt:\n{}",
                self.output()
            );
        }
        let code = self.child.wait().unwrap().code();
        // The pipes close with the process; their readers finish right after.
        std::thread::sleep(Duration::from_millis(100));
        code
    }

    /// Kill what a forced exit left: marked processes and containers labelled with the run's
    /// pid (the scratch directory goes with its TempDir).
    fn clean_up(&self) {
        for (pid, _) in marked_processes(&self.mark) {
            // SAFETY: kill(2) by pid; no memory is touched.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        for id in containers_of(self.child.id()) {
            let _ = Command::new("docker").args(["rm", "-f", &id]).output();
        }
    }
}

/// Containers (any state) labelled as made by the run with this process id.
fn containers_of(pid: u32) -> Vec<String> {
    let out = Command::new("docker")
        .args(["ps", "-aq", "--filter"])
        .arg(format!("label=mco-conformance.pid={pid}"))
        .output();
    match out {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Interrupt a busy run once and check it stopped cleanly.
fn interrupt_once(nodes: &'static str) {
    let mut run = Run::start(nodes);
    run.wait_until_busy();
    signal(&run.child, libc::SIGINT);
    let code = run.finish(Duration::from_secs(90));
    let leftovers = marked_processes(&run.mark);
    let containers = containers_of(run.child.id());
    run.clean_up();
    let context = run.output();
    assert_eq!(code, Some(130), "{context}");
    assert!(context.contains("SIGINT: stopping the run"), "{context}");
    assert!(context.contains("interrupted by SIGINT: "), "{context}");
    assert!(leftovers.is_empty(), "processes left: {leftovers:?}\n{context}");
    assert!(
        containers.is_empty(),
        "containers left: {containers:?}\n{context}"
    );
    let left = entries(run.scratch.path());
    assert!(
        left.is_empty(),
        "left in the scratch directory: {left:?}\n{context}"
    );
    // Every report is whole: none is empty, the conformance report says it was interrupted,
    // and the JUnit report is a complete document.
    let reports: Vec<PathBuf> = std::fs::read_dir(run.reports.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    for report in &reports {
        let len = std::fs::metadata(report).unwrap().len();
        assert!(len > 0, "{} is empty\n{context}", report.display());
    }
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(run.reports.path().join("report.yaml")).unwrap())
            .unwrap();
    assert_eq!(yaml["verdict"].as_str(), Some("interrupted"), "{yaml:?}");
    assert_eq!(
        yaml["summary"]["interruptedBy"].as_str(),
        Some("SIGINT"),
        "{yaml:?}"
    );
    let junit = std::fs::read_to_string(run.reports.path().join("ocp-4.16.junit.xml")).unwrap();
    assert!(junit.trim_end().ends_with("</testsuites>"), "{junit}");
    assert!(junit.contains("interrupted"), "{junit}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_stops_an_embedded_run_and_leaves_nothing() {
    tokio::task::spawn_blocking(|| interrupt_once("embedded"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_stops_a_container_run_and_leaves_nothing() {
    if let Some(why) = harness::node::image::docker_unavailable() {
        fake_apiserver::testing::skip(&format!("no Docker engine ({why})"));
        return;
    }
    if let Err(e) = harness::node::image::find_busybox() {
        fake_apiserver::testing::skip(&e.to_string());
        return;
    }
    tokio::task::spawn_blocking(|| interrupt_once("container"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_sigint_exits_at_once() {
    tokio::task::spawn_blocking(|| {
        let mut run = Run::start("embedded");
        run.wait_until_busy();
        signal(&run.child, libc::SIGINT);
        // The second once the first is taken (two at once may reach the handler as one).
        assert!(
            wait_for(Duration::from_secs(10), || run
                .output()
                .contains("SIGINT: stopping the run")),
            "{}",
            run.output()
        );
        signal(&run.child, libc::SIGINT);
        let code = run.finish(Duration::from_secs(10));
        run.clean_up();
        let context = run.output();
        assert_eq!(code, Some(130), "{context}");
        assert!(context.contains("SIGINT again: exiting at once"), "{context}");
    })
    .await
    .unwrap();
}

/// A run killed outright (SIGKILL: no handler runs) leaves its node containers; the next
/// container run removes them, and leaves those of runs still going and those of another PID
/// namespace.
#[tokio::test(flavor = "multi_thread")]
async fn the_next_run_removes_what_a_killed_run_left() {
    if let Some(why) = harness::node::image::docker_unavailable() {
        fake_apiserver::testing::skip(&format!("no Docker engine ({why})"));
        return;
    }
    let image = match harness::node::image::harness_binaries()
        .and_then(|binaries| harness::node::image::ensure_node_image(&binaries))
    {
        Ok(image) => image.reference,
        Err(e) => {
            fake_apiserver::testing::skip(&e.to_string());
            return;
        }
    };
    // A process that has ended: the pid a killed run had.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let here = harness::node::image::pid_namespace();
    let create = |pid: u32, namespace: &str| {
        let out = Command::new("docker")
            .args(["create", "--label", "mco-conformance.node=orphan-test"])
            .arg("--label")
            .arg(format!("mco-conformance.pid={pid}"))
            .arg("--label")
            .arg(format!("mco-conformance.pidns={namespace}"))
            .arg(&image)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let orphan = create(dead, &here);
    let alive = create(std::process::id(), &here);
    // A pid of another namespace (another container sharing the engine) says nothing here.
    let elsewhere = create(dead, "pid:[1]");
    let removed = tokio::task::spawn_blocking(harness::node::image::remove_orphaned_nodes)
        .await
        .unwrap()
        .unwrap();
    let exists = |id: &str| {
        Command::new("docker")
            .args(["inspect", "--format", "{{.Id}}", id])
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(
        removed.iter().any(|r| orphan.starts_with(r.as_str())),
        "{removed:?} {orphan}"
    );
    assert!(!exists(&orphan), "the killed run's container is gone");
    assert!(exists(&alive), "a running process's container stays");
    assert!(exists(&elsewhere), "another PID namespace's container stays");
    let _ = Command::new("docker")
        .args(["rm", "-f", &alive, &elsewhere])
        .output();
}

#[test]
fn a_hung_runs_threads_are_listed_with_their_state_and_wait() {
    let text = waiting_in(std::process::id());
    // SAFETY: gettid(2) takes nothing and cannot fail.
    let tid = unsafe { libc::gettid() };
    let ours = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&tid.to_string()))
        .unwrap_or_else(|| panic!("this test's thread {tid} is listed: {text}"));
    let fields: Vec<&str> = ours.split_whitespace().collect();
    assert!(fields.len() >= 3, "{ours}");
    assert_eq!(fields[2], "R", "running as it reads its own state: {ours}");
}
