//! A node's journal: one line per service-manager action and per service log line, in
//! journald's short format with simulated timestamps
//! (`Feb 26 07:21:44 node-1 systemd[1]: Reloading.`), and `-- Boot <id> --` after a reboot.
//! Readers take a mark and read or wait for lines after it. Each line also keeps its journald
//! fields (`MESSAGE`, `SYSLOG_IDENTIFIER`, `_PID`, `_UID`, `_BOOT_ID`, `__REALTIME_TIMESTAMP`,
//! and any a writer adds, as `logger --journald` does), which `journalctl -o json` and field
//! matches (`MESSAGE_ID=…`) read: the upstream 4.12 daemon keeps its pending-reboot state there.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use time::OffsetDateTime;
use tokio::sync::watch;

/// A position in the journal: lines after it are "since the mark".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct JournalMark(pub usize);

/// One journal entry: the line `journalctl` prints in its short format, and its fields (none for
/// a boot marker, which is not an entry of its own in journald).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    pub line: String,
    pub fields: BTreeMap<String, String>,
}

impl Entry {
    /// What keeping the entry costs in memory, as the budget counts it: its line, and every
    /// field's name and value with what a map entry of two strings costs beside them (three
    /// words per string, a few for the map's node): a flood of short lines costs as much in
    /// fields as in text.
    pub fn cost(&self) -> usize {
        const STRING: usize = 3 * std::mem::size_of::<usize>();
        const FIELD: usize = 2 * STRING + 2 * std::mem::size_of::<usize>();
        STRING
            + self.line.len()
            + self
                .fields
                .iter()
                .map(|(k, v)| FIELD + k.len() + v.len())
                .sum::<usize>()
    }

    /// True for the `-- Boot <id> --` marker between boots.
    pub fn is_boot_marker(&self) -> bool {
        self.fields.is_empty() && self.line.starts_with("-- Boot ")
    }
}

#[derive(Clone)]
pub struct Journal {
    host: String,
    lines: Arc<Mutex<Vec<Entry>>>,
    /// The boot the entries written now belong to (`_BOOT_ID`).
    boot_id: Arc<Mutex<String>>,
    appended: Arc<watch::Sender<usize>>,
    /// A node part in a process of its own prints its messages on stdout, where its service
    /// manager puts them in the node's journal, instead of keeping them.
    to_stdout: bool,
    /// How many bytes the journal keeps (`Entry::cost`), and how many it has kept: a flood of output
    /// costs neither memory nor a report of gigabytes (journald caps its files likewise,
    /// `SystemMaxUse=`).
    budget: usize,
    kept: Arc<std::sync::atomic::AtomicUsize>,
}

/// What a node's journal keeps over a scenario, in bytes of memory (`Entry::cost`).
pub const JOURNAL_BUDGET: usize = 64 << 20;

/// journald's `LineMax=` default (48K): a stream line longer than this is cut into records of
/// this many bytes.
pub const LINE_MAX: usize = 48 * 1024;

/// Bytes of a process's output as journal text: UTF-8 as it is, every byte that is not valid
/// UTF-8 escaped as `\xNN`, so binary output is kept and shown rather than lost.
pub fn escape_output(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Cut a process's output into journal records as journald does: at newlines and NULs, and
/// every `LINE_MAX` bytes of a line without one. Returns the complete records and leaves what
/// follows the last delimiter in `pending` (flushed by the caller at end of stream).
pub fn split_records(pending: &mut Vec<u8>) -> Vec<Vec<u8>> {
    let mut records = Vec::new();
    loop {
        match pending.iter().position(|b| *b == b'\n' || *b == 0) {
            Some(at) if at <= LINE_MAX => {
                let mut record: Vec<u8> = pending.drain(..=at).collect();
                record.pop();
                records.push(record);
            }
            _ if pending.len() > LINE_MAX => records.push(pending.drain(..LINE_MAX).collect()),
            _ => return records,
        }
    }
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
            boot_id: Arc::new(Mutex::new(String::new())),
            appended: Arc::new(appended),
            to_stdout: false,
            budget: JOURNAL_BUDGET,
            kept: Arc::default(),
        }
    }

    /// A journal that keeps at most `budget` bytes (`Entry::cost`).
    pub fn with_budget(host: &str, budget: usize) -> Self {
        Journal {
            budget,
            ..Journal::new(host)
        }
    }

    /// A journal for a node part in its own process: messages go to stdout, one per line.
    pub fn to_stdout(host: &str) -> Self {
        Journal {
            to_stdout: true,
            ..Journal::new(host)
        }
    }

    fn push(&self, entry: Entry) {
        use std::sync::atomic::Ordering::Relaxed;
        let size = entry.cost();
        let before = self.kept.fetch_add(size, Relaxed);
        if before + size > self.budget {
            // Said once, when the budget runs out; the note itself is not counted.
            if before <= self.budget {
                self.kept.fetch_add(self.budget + 1, Relaxed);
                let message = format!(
                    "this node's journal reached its budget of {} bytes; later messages are not kept",
                    self.budget
                );
                let stamp = entry
                    .line
                    .split_once(&format!(" {} ", self.host))
                    .map_or("", |(stamp, _)| stamp);
                let mut fields = entry.fields.clone();
                fields.insert("MESSAGE".into(), message.clone());
                fields.insert("SYSLOG_IDENTIFIER".into(), "mco-conformance".into());
                fields.insert("_PID".into(), "1".into());
                let note = Entry {
                    line: format!("{stamp} {} mco-conformance[1]: {message}", self.host),
                    fields,
                };
                let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
                lines.push(note);
                self.appended.send_replace(lines.len());
            }
            return;
        }
        let len = {
            let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
            lines.push(entry);
            lines.len()
        };
        self.appended.send_replace(len);
    }

    /// A line from `ident[pid]` at simulated time `at`.
    pub fn log(&self, at: OffsetDateTime, ident: &str, pid: u32, message: &str) {
        self.log_fields(at, ident, pid, message, &BTreeMap::new());
    }

    /// A line from `ident[pid]` at simulated time `at`, with journald fields of the writer's
    /// own (`MESSAGE_ID`, …) beside the ones every entry has. Every node process runs as root.
    pub fn log_fields(
        &self,
        at: OffsetDateTime,
        ident: &str,
        pid: u32,
        message: &str,
        extra: &BTreeMap<String, String>,
    ) {
        if self.to_stdout {
            for part in message.lines() {
                println!("{part}");
            }
            return;
        }
        let boot_id = self.boot_id.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let micros = at.unix_timestamp_nanos() / 1_000;
        // An entry that is only fields (`logger --journald` with no MESSAGE) is still an entry.
        let parts: Vec<&str> = if message.is_empty() && !extra.is_empty() {
            vec![""]
        } else {
            message.lines().collect()
        };
        for part in parts {
            let mut fields = extra.clone();
            fields.insert("MESSAGE".into(), part.to_string());
            fields.insert("SYSLOG_IDENTIFIER".into(), ident.to_string());
            fields.insert("_PID".into(), pid.to_string());
            fields.insert("_UID".into(), "0".into());
            fields.insert("_HOSTNAME".into(), self.host.clone());
            fields.insert("_BOOT_ID".into(), boot_id.clone());
            fields.insert("__REALTIME_TIMESTAMP".into(), micros.to_string());
            self.push(Entry {
                line: format!("{} {} {ident}[{pid}]: {part}", short_timestamp(at), self.host),
                fields,
            });
        }
    }

    /// A line from systemd (PID 1).
    pub fn systemd(&self, at: OffsetDateTime, message: &str) {
        self.log(at, "systemd", 1, message);
    }

    /// The boot marker journalctl prints between boots.
    pub fn boot(&self, boot_id: &str) {
        *self.boot_id.lock().unwrap_or_else(|p| p.into_inner()) = boot_id.to_string();
        self.push(Entry {
            line: format!("-- Boot {boot_id} --"),
            fields: BTreeMap::new(),
        });
    }

    pub fn mark(&self) -> JournalMark {
        JournalMark(self.lines.lock().unwrap_or_else(|p| p.into_inner()).len())
    }

    pub fn since(&self, mark: JournalMark) -> Vec<String> {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines
            .get(mark.0..)
            .unwrap_or_default()
            .iter()
            .map(|e| e.line.clone())
            .collect()
    }

    /// The entries after `mark`, with their fields.
    pub fn entries_since(&self, mark: JournalMark) -> Vec<Entry> {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.get(mark.0..).map(<[Entry]>::to_vec).unwrap_or_default()
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

    /// Output is cut as journald cuts a stream: at newlines and NULs, and every LINE_MAX bytes
    /// of a line without one; the rest waits for more.
    #[test]
    fn output_is_cut_into_records_as_journald_does() {
        let mut pending = b"one\ntwo\0three".to_vec();
        assert_eq!(split_records(&mut pending), [b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(pending, b"three");
        let mut long = vec![b'a'; LINE_MAX * 2 + 10];
        long.push(b'\n');
        let records = split_records(&mut long);
        assert_eq!(
            records.iter().map(Vec::len).collect::<Vec<_>>(),
            [LINE_MAX, LINE_MAX, 10]
        );
        assert!(long.is_empty());
    }

    /// Bytes that are not UTF-8 are kept, escaped; UTF-8 stays as it is.
    #[test]
    fn binary_output_is_kept_escaped() {
        assert_eq!(escape_output(b"ok \xff\xfe caf\xc3\xa9"), "ok \\xff\\xfe café");
    }

    /// A journal keeps entries up to its budget, counted with their fields (a flood of short
    /// lines costs several times its text: counting the text alone let a 64 MiB budget hold
    /// about 600 MB), says once that it reached it, and keeps nothing after.
    #[test]
    fn a_flood_stops_at_the_budget_with_a_note() {
        let budget = 20_000;
        let j = Journal::with_budget("node-1", budget);
        let mark = j.mark();
        let at = datetime!(2026-02-26 07:21:44 UTC);
        for i in 0..1000 {
            j.log(at, "agent", 7, &format!("line {i}"));
        }
        let entries = j.entries_since(mark);
        let kept: Vec<&Entry> = entries.iter().filter(|e| e.line.contains("agent[7]")).collect();
        let cost: usize = kept.iter().map(|e| e.cost()).sum();
        let text: usize = kept.iter().map(|e| e.line.len()).sum();
        assert!(!kept.is_empty() && cost <= budget, "{cost} bytes kept");
        // Each entry's fields cost more than its text, and are counted.
        assert!(cost > 3 * text, "{cost} for {text} bytes of text");
        // What one entry costs is at least what its strings hold.
        let one = kept[0];
        let held: usize = one.line.capacity()
            + one
                .fields
                .iter()
                .map(|(k, v)| k.capacity() + v.capacity())
                .sum::<usize>();
        assert!(one.cost() >= held, "{} < {held}", one.cost());
        let lines = j.since(mark);
        let notes: Vec<&String> = lines.iter().filter(|l| l.contains("budget")).collect();
        assert_eq!(notes.len(), 1, "{lines:?}");
        assert_eq!(
            notes[0],
            "Feb 26 07:21:44 node-1 mco-conformance[1]: this node's journal reached its budget of 20000 bytes; later messages are not kept"
        );
    }

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

    #[test]
    fn entries_keep_journald_fields_and_the_boot_they_belong_to() {
        let j = Journal::new("node-1");
        j.boot("b1");
        let extra = BTreeMap::from([
            ("MESSAGE_ID".to_string(), "abc".to_string()),
            ("PENDING".to_string(), "1".to_string()),
        ]);
        j.log_fields(
            datetime!(2026-02-26 07:21:44 UTC),
            "logger",
            7,
            "rendered-worker-1",
            &extra,
        );
        j.boot("b2");
        let entries = j.entries_since(JournalMark(0));
        assert!(entries[0].is_boot_marker() && entries[2].is_boot_marker());
        let f = &entries[1].fields;
        assert_eq!(f["MESSAGE"], "rendered-worker-1");
        assert_eq!(f["MESSAGE_ID"], "abc");
        assert_eq!(f["PENDING"], "1");
        assert_eq!(f["_BOOT_ID"], "b1");
        assert_eq!(f["_UID"], "0");
        assert_eq!(f["SYSLOG_IDENTIFIER"], "logger");
        assert_eq!(f["__REALTIME_TIMESTAMP"], "1772090504000000");
        assert_eq!(
            entries[1].line,
            "Feb 26 07:21:44 node-1 logger[7]: rendered-worker-1"
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
