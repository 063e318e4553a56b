//! A node's journal: one line per service-manager action and per service log line, in
//! journald's short format with simulated timestamps
//! (`Feb 26 07:21:44 node-1 systemd[1]: Reloading.`), and `-- Boot <id> --` after a reboot.
//! Readers take a mark and read or wait for lines after it.

use std::sync::{Arc, Mutex};
use time::OffsetDateTime;
use tokio::sync::watch;

/// A position in the journal: lines after it are "since the mark".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct JournalMark(pub usize);

#[derive(Clone)]
pub struct Journal {
    host: String,
    lines: Arc<Mutex<Vec<String>>>,
    appended: Arc<watch::Sender<usize>>,
    /// A node part in a process of its own prints its messages on stdout, where its service
    /// manager puts them in the node's journal, instead of keeping them.
    to_stdout: bool,
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `Feb 26 07:21:44`, journald's short timestamp.
pub fn short_timestamp(t: OffsetDateTime) -> String {
    format!(
        "{} {:02} {:02}:{:02}:{:02}",
        MONTHS[usize::from(u8::from(t.month())) - 1],
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

impl Journal {
    pub fn new(host: &str) -> Self {
        let (appended, _) = watch::channel(0);
        Journal {
            host: host.to_string(),
            lines: Arc::new(Mutex::new(Vec::new())),
            appended: Arc::new(appended),
            to_stdout: false,
        }
    }

    /// A journal for a node part in its own process: messages go to stdout, one per line.
    pub fn to_stdout(host: &str) -> Self {
        Journal {
            to_stdout: true,
            ..Journal::new(host)
        }
    }

    fn push(&self, line: String) {
        let len = {
            let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
            lines.push(line);
            lines.len()
        };
        self.appended.send_replace(len);
    }

    /// A line from `ident[pid]` at simulated time `at`.
    pub fn log(&self, at: OffsetDateTime, ident: &str, pid: u32, message: &str) {
        if self.to_stdout {
            for part in message.lines() {
                println!("{part}");
            }
            return;
        }
        for part in message.lines() {
            self.push(format!(
                "{} {} {ident}[{pid}]: {part}",
                short_timestamp(at),
                self.host
            ));
        }
    }

    /// A line from systemd (PID 1).
    pub fn systemd(&self, at: OffsetDateTime, message: &str) {
        self.log(at, "systemd", 1, message);
    }

    /// The boot marker journalctl prints between boots.
    pub fn boot(&self, boot_id: &str) {
        self.push(format!("-- Boot {boot_id} --"));
    }

    pub fn mark(&self) -> JournalMark {
        JournalMark(self.lines.lock().unwrap_or_else(|p| p.into_inner()).len())
    }

    pub fn since(&self, mark: JournalMark) -> Vec<String> {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.get(mark.0..).map(<[String]>::to_vec).unwrap_or_default()
    }

    /// Wait until a line after `mark` contains `needle`; `None` if `deadline` passes first.
    pub async fn wait_for(
        &self,
        mark: JournalMark,
        needle: &str,
        deadline: std::time::Duration,
    ) -> Option<String> {
        let mut rx = self.appended.subscribe();
        let search = async {
            loop {
                if let Some(line) = self.since(mark).into_iter().find(|l| l.contains(needle)) {
                    return line;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(deadline, search).await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn lines_are_journald_short_format() {
        let j = Journal::new("node-1");
        let mark = j.mark();
        j.systemd(datetime!(2026-02-26 07:21:44 UTC), "Reloading.");
        j.log(
            datetime!(2026-02-26 07:21:45 UTC),
            "machine-config-daemon",
            2345,
            "one\ntwo",
        );
        j.boot("abc");
        assert_eq!(
            j.since(mark),
            [
                "Feb 26 07:21:44 node-1 systemd[1]: Reloading.",
                "Feb 26 07:21:45 node-1 machine-config-daemon[2345]: one",
                "Feb 26 07:21:45 node-1 machine-config-daemon[2345]: two",
                "-- Boot abc --",
            ]
        );
    }

    #[tokio::test]
    async fn waiting_sees_lines_written_later() {
        let j = Journal::new("n");
        let mark = j.mark();
        let writer = j.clone();
        let waiter = tokio::spawn(async move {
            j.wait_for(mark, "Started kubelet", std::time::Duration::from_secs(5))
                .await
        });
        writer.systemd(datetime!(2026-01-01 00:00 UTC), "Started kubelet.service.");
        assert!(
            waiter
                .await
                .unwrap()
                .unwrap()
                .ends_with("Started kubelet.service.")
        );
        let j = Journal::new("n");
        assert!(
            j.wait_for(j.mark(), "never", std::time::Duration::from_millis(10))
                .await
                .is_none()
        );
    }
}
