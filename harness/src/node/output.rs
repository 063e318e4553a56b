//! A service process's output into the node's journal, and the order of what it says and what
//! it asks of the node. The process writes lines to a pipe and asks the node for things
//! (`systemctl restart kubelet`) through the node socket; the node's answer is journaled at
//! once while the process's lines may still sit in the pipe. `OutputSync` keeps the order the
//! process wrote in: before the node carries out a request of the process's tools, every byte
//! the process wrote to its pipes before asking is in the journal.

use super::embedded::ServiceContext;
use super::journal::{escape_output, split_records};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Mutex;
use std::time::Duration;
use tokio::net::unix::pipe;

/// The longest a request waits for the output before it to be read: a process whose pipes are
/// held by something else must not stall the node.
const CATCH_UP_BOUND: Duration = Duration::from_secs(2);

/// Shared by a service's output reader and the node socket that serves its tools.
#[derive(Default)]
pub struct OutputSync {
    /// Held while a chunk is read from a pipe and journaled, and while the pipes are checked.
    reading: tokio::sync::Mutex<()>,
    /// The open read ends of the process's pipes (removed, under `reading`, before they close).
    pipes: Mutex<Vec<RawFd>>,
    /// Told whenever a chunk was journaled.
    progressed: tokio::sync::Notify,
}

/// Bytes waiting in a pipe (`FIONREAD`); 0 when it cannot tell.
fn waiting(fd: RawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int to the pointer; `fd` is open while it is in `pipes`.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    if rc == 0 {
        usize::try_from(n).unwrap_or(0)
    } else {
        0
    }
}

impl OutputSync {
    /// Wait until every byte the process wrote to its pipes so far is journaled (what it wrote
    /// before its last complete line ends waits for the rest of that line).
    pub async fn caught_up(&self) {
        let deadline = tokio::time::Instant::now() + CATCH_UP_BOUND;
        loop {
            let progressed = self.progressed.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            {
                let _reading = self.reading.lock().await;
                let pipes = self.pipes.lock().unwrap_or_else(|p| p.into_inner());
                if pipes.iter().all(|fd| waiting(*fd) == 0) {
                    return;
                }
            }
            if tokio::time::timeout_at(deadline, progressed).await.is_err() {
                return;
            }
        }
    }
}

/// Every record a service's process prints (cut as journald cuts a stream) goes to the
/// journal under the service's name and pid, and to `on_line`, in the order `sync` keeps.
pub async fn forward_output(
    ctx: &ServiceContext,
    stdout: Option<tokio::process::ChildStdout>,
    stderr: Option<tokio::process::ChildStderr>,
    on_line: &(dyn Fn(&str) + Send + Sync),
    sync: &OutputSync,
) {
    let stdout = stdout.and_then(|s| s.into_owned_fd().ok());
    let stderr = stderr.and_then(|s| s.into_owned_fd().ok());
    let receivers: Vec<pipe::Receiver> = [stdout, stderr]
        .into_iter()
        .flatten()
        .filter_map(|fd| pipe::Receiver::from_owned_fd(fd).ok())
        .collect();
    sync.pipes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(receivers.iter().map(AsRawFd::as_raw_fd));
    let readers = receivers
        .into_iter()
        .map(|receiver| records(ctx, receiver, on_line, sync));
    futures::future::join_all(readers).await;
}

async fn records(
    ctx: &ServiceContext,
    receiver: pipe::Receiver,
    on_line: &(dyn Fn(&str) + Send + Sync),
    sync: &OutputSync,
) {
    let (mut pending, mut chunk) = (Vec::new(), vec![0u8; 8192]);
    let emit = |record: &[u8]| {
        let line = escape_output(record);
        ctx.log(&line);
        on_line(&line);
    };
    loop {
        if receiver.readable().await.is_err() {
            break;
        }
        let _reading = sync.reading.lock().await;
        match receiver.try_read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => {
                pending.extend_from_slice(&chunk[..read]);
                for record in split_records(&mut pending) {
                    emit(&record);
                }
                sync.progressed.notify_waiters();
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
    }
    if !pending.is_empty() {
        emit(&pending);
    }
    // Forget the pipe before it closes: its number may be reused.
    let _reading = sync.reading.lock().await;
    let fd = receiver.as_raw_fd();
    sync.pipes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|p| *p != fd);
    sync.progressed.notify_waiters();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{EmbeddedNode, JournalMark, Node};
    use crate::pki::SimClock;
    use tokio::io::AsyncWriteExt;

    /// What a process wrote before it asks the node for something is in the journal once
    /// `caught_up` returns, even with more output still coming: the order it acted in.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_waits_for_the_output_written_before_it() {
        let node = EmbeddedNode::new("node-1", &[], SimClock::default()).unwrap();
        let ctx = ServiceContext {
            node: node.clone(),
            unit: "agent.service".into(),
            pid: 7,
            stop: tokio_util::sync::CancellationToken::new(),
            exited_successfully: Default::default(),
        };
        // `cat` echoes what the test feeds it, so the test decides when output is written.
        let mut child = tokio::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let sync = std::sync::Arc::new(OutputSync::default());
        let reader = {
            let (ctx, sync) = (ctx.clone(), sync.clone());
            let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
            tokio::spawn(async move { forward_output(&ctx, stdout, stderr, &|_| {}, &sync).await })
        };
        for i in 0..50 {
            stdin
                .write_all(format!("said {i} before asking\n").as_bytes())
                .await
                .unwrap();
            stdin.flush().await.unwrap();
            // The line is in cat's output pipe once cat has copied it: wait for that, then
            // ask as a request would.
            while sync.pipes.lock().unwrap().iter().all(|fd| waiting(*fd) == 0)
                && !node
                    .journal_since(JournalMark(0))
                    .await
                    .unwrap()
                    .iter()
                    .any(|l| l.ends_with(&format!("said {i} before asking")))
            {
                tokio::task::yield_now().await;
            }
            sync.caught_up().await;
            let journal = node.journal_since(JournalMark(0)).await.unwrap();
            assert!(
                journal
                    .iter()
                    .any(|l| l.ends_with(&format!("said {i} before asking"))),
                "line {i} not journaled when the request went ahead: {journal:?}"
            );
        }
        drop(stdin);
        reader.await.unwrap();
        assert!(
            sync.pipes.lock().unwrap().is_empty(),
            "closed pipes are forgotten"
        );
    }
}
