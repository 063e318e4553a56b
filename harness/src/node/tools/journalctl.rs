//! `journalctl` on a node: the journald options the upstream daemon and a user reach for
//! (`-u`, `-b`, `-n`, `-g`, `-o short|cat|json`, `FIELD=value` matches, `--list-boots`, `-f`),
//! answered from the node's journal over the control socket.

use crate::node::control::Request;
use crate::node::control::tools_client;
use crate::node::journal::Entry;

/// How `journalctl` prints an entry (`-o`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Output {
    #[default]
    Short,
    Cat,
    Json,
}

/// What `journalctl` was asked for.
#[derive(Debug, Default, PartialEq, Eq)]
struct JournalQuery {
    units: Vec<String>,
    this_boot: bool,
    lines: Option<usize>,
    grep: Option<String>,
    output: Output,
    /// `FIELD=value` matches: entries match every field named, any value given for it.
    matches: Vec<(String, String)>,
    follow: bool,
    list_boots: bool,
}

fn parse_journalctl(args: &[String]) -> Result<JournalQuery, String> {
    let mut q = JournalQuery::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("option {name} needs a value"))
        };
        match flag {
            "-u" | "--unit" => q.units.push(value(flag)?),
            "-b" | "--boot" => q.this_boot = true,
            "-n" | "--lines" => {
                let v = value(flag)?;
                q.lines = Some(v.parse().map_err(|_| format!("bad line count {v:?}"))?);
            }
            "-g" | "--grep" => q.grep = Some(value(flag)?),
            "-o" | "--output" => {
                q.output = match value(flag)?.as_str() {
                    "short" => Output::Short,
                    "cat" => Output::Cat,
                    "json" => Output::Json,
                    other => return Err(format!("unsupported output mode {other:?}")),
                }
            }
            "-f" | "--follow" => q.follow = true,
            "--list-boots" => q.list_boots = true,
            "--no-pager" | "-q" | "--quiet" | "--no-hostname" | "-a" | "--all" => {}
            "--since" | "--until" => {
                value(flag)?;
            }
            "+" => return Err("disjunctions of matches (+) are not supported".into()),
            field if !field.starts_with('-') && field.contains('=') => {
                let (name, value) = arg.split_once('=').unwrap_or_default();
                if name.is_empty()
                    || !name
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                {
                    return Err(format!("invalid match {arg:?}: a field name is upper case"));
                }
                q.matches.push((name.to_string(), value.to_string()));
            }
            other => return Err(format!("unsupported option {other:?}")),
        }
    }
    Ok(q)
}

/// Whether `entry` is one `q` selects (by unit, matches and grep; not by boot or count).
fn matches(entry: &Entry, q: &JournalQuery) -> bool {
    if entry.is_boot_marker() {
        return q.units.is_empty() && q.matches.is_empty() && q.grep.is_none() && q.output == Output::Short;
    }
    let field = |name: &str| entry.fields.get(name).map(String::as_str);
    let unit_ok = q.units.is_empty()
        || field("SYSLOG_IDENTIFIER")
            .is_some_and(|ident| q.units.iter().any(|u| u.trim_end_matches(".service") == ident));
    let names: std::collections::BTreeSet<&str> = q.matches.iter().map(|(n, _)| n.as_str()).collect();
    let fields_ok = names.iter().all(|name| {
        q.matches
            .iter()
            .any(|(n, v)| n == name && field(name) == Some(v.as_str()))
    });
    let grep_ok = q
        .grep
        .as_ref()
        .is_none_or(|g| field("MESSAGE").is_some_and(|m| m.contains(g.as_str())));
    unit_ok && fields_ok && grep_ok
}

/// The entries `q` selects from the whole journal.
fn select(journal: &[Entry], q: &JournalQuery) -> Vec<Entry> {
    let start = if q.this_boot {
        journal
            .iter()
            .rposition(Entry::is_boot_marker)
            .map_or(0, |i| i + 1)
    } else {
        0
    };
    let mut selected: Vec<Entry> = journal[start..]
        .iter()
        .filter(|e| matches(e, q))
        .cloned()
        .collect();
    if let Some(n) = q.lines {
        selected = selected.split_off(selected.len().saturating_sub(n));
    }
    selected
}

/// An entry as `-o` prints it.
fn render(entry: &Entry, output: Output) -> String {
    match output {
        Output::Short => entry.line.clone(),
        Output::Cat => entry.fields.get("MESSAGE").cloned().unwrap_or_default(),
        Output::Json => serde_json::to_string(&entry.fields).unwrap_or_default(),
    }
}

/// `journalctl --list-boots`: one row per boot, oldest first, the current one 0.
fn list_boots(journal: &[Entry]) -> Vec<String> {
    let mut boots: Vec<(String, Option<i64>, Option<i64>)> = Vec::new();
    for entry in journal {
        if entry.is_boot_marker() {
            let id = entry
                .line
                .trim_start_matches("-- Boot ")
                .trim_end_matches(" --")
                .replace('-', "");
            boots.push((id, None, None));
        } else if let (Some(boot), Some(t)) = (
            boots.last_mut(),
            entry
                .fields
                .get("__REALTIME_TIMESTAMP")
                .and_then(|t| t.parse::<i64>().ok()),
        ) {
            boot.1.get_or_insert(t);
            boot.2 = Some(t);
        }
    }
    let when = |micros: Option<i64>| {
        micros
            .and_then(|m| time::OffsetDateTime::from_unix_timestamp(m / 1_000_000).ok())
            .map(|t| {
                format!(
                    "{} {}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
                    &t.weekday().to_string()[..3],
                    t.year(),
                    u8::from(t.month()),
                    t.day(),
                    t.hour(),
                    t.minute(),
                    t.second()
                )
            })
            .unwrap_or_else(|| "n/a".into())
    };
    let last = boots.len();
    let mut rows =
        vec!["IDX BOOT ID                          FIRST ENTRY                 LAST ENTRY".to_string()];
    for (i, (id, first, latest)) in boots.into_iter().enumerate() {
        let idx = i as i64 + 1 - last as i64;
        rows.push(format!("{idx:>3} {id} {} {}", when(first), when(latest)));
    }
    rows
}

pub(super) fn journalctl(args: &[String]) -> i32 {
    use std::io::Write;
    let q = match parse_journalctl(args) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("journalctl: {e}");
            return 1;
        }
    };
    let journal = match tools_client().call_blocking::<Vec<Entry>>(&Request::JournalEntries { mark: 0 }) {
        Ok(journal) => journal,
        Err(e) => {
            eprintln!("journalctl: {e}");
            return 1;
        }
    };
    let mut out = std::io::stdout().lock();
    let rows = if q.list_boots {
        list_boots(&journal)
    } else {
        select(&journal, &q).iter().map(|e| render(e, q.output)).collect()
    };
    for row in rows {
        if writeln!(out, "{row}").is_err() {
            return 0;
        }
    }
    if !q.follow || q.list_boots {
        return 0;
    }
    // `-f`: new entries as they come, until the reader goes away or the node does.
    let _ = out.flush();
    let mut mark = journal.len();
    loop {
        let waited = tools_client().call_blocking::<Option<String>>(&Request::WaitJournal {
            mark,
            needle: String::new(),
            timeout_ms: 3_600_000,
        });
        if waited.is_err() {
            return 1;
        }
        let Ok(new) = tools_client().call_blocking::<Vec<Entry>>(&Request::JournalEntries { mark }) else {
            return 1;
        };
        mark += new.len();
        for entry in new.iter().filter(|e| !e.is_boot_marker() && matches(e, &q)) {
            if writeln!(out, "{}", render(entry, q.output)).is_err() || out.flush().is_err() {
                return 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::journal::{Journal, JournalMark};
    use std::collections::BTreeMap;
    use time::macros::datetime;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn journal() -> Vec<Entry> {
        let j = Journal::new("n");
        j.systemd(datetime!(2026-01-05 08:00:00 UTC), "Started kubelet.service.");
        j.boot("b1");
        j.log(datetime!(2026-01-05 08:00:01 UTC), "kubelet", 1000, "one");
        j.log(
            datetime!(2026-01-05 08:00:01 UTC),
            "machine-config-daemon",
            1001,
            "two",
        );
        let pending = BTreeMap::from([
            ("MESSAGE_ID".to_string(), "9a4f".to_string()),
            ("BOOT_ID".to_string(), "b1".to_string()),
            ("PENDING".to_string(), "1".to_string()),
        ]);
        j.log_fields(
            datetime!(2026-01-05 08:00:02 UTC),
            "logger",
            1002,
            "rendered-worker-2",
            &pending,
        );
        j.log(datetime!(2026-01-05 08:00:02 UTC), "kubelet", 1000, "three");
        j.entries_since(JournalMark(0))
    }

    fn lines(q: &[&str]) -> Vec<String> {
        let q = parse_journalctl(&args(q)).unwrap();
        select(&journal(), &q)
            .iter()
            .map(|e| render(e, q.output))
            .collect()
    }

    #[test]
    fn journalctl_options_select_lines_as_journalctl_does() {
        assert_eq!(
            lines(&["-b", "-u", "kubelet.service", "--no-pager"]),
            [
                "Jan 05 08:00:01 n kubelet[1000]: one",
                "Jan 05 08:00:02 n kubelet[1000]: three"
            ]
        );
        assert_eq!(lines(&["--unit=kubelet", "-n", "1", "-o", "cat"]), ["three"]);
        assert_eq!(lines(&["-g", "two"]).len(), 1);
        assert!(
            parse_journalctl(&args(&["-n"]))
                .unwrap_err()
                .contains("needs a value")
        );
        assert!(
            parse_journalctl(&args(&["--frobnicate"]))
                .unwrap_err()
                .contains("unsupported")
        );
        assert!(parse_journalctl(&args(&["message_id=x"])).is_err());
    }

    #[test]
    fn field_matches_and_json_output_read_what_logger_journald_wrote() {
        // How the upstream 4.12 daemon reads its pending state.
        let out = lines(&["-o", "json", "_UID=0", "MESSAGE_ID=9a4f"]);
        assert_eq!(out.len(), 1, "{out:?}");
        let entry: serde_json::Value = serde_json::from_str(&out[0]).unwrap();
        assert_eq!(entry["MESSAGE"], "rendered-worker-2");
        assert_eq!(entry["BOOT_ID"], "b1");
        assert_eq!(entry["PENDING"], "1");
        assert_eq!(entry["_BOOT_ID"], "b1");
        // Two values of one field are either; two fields are both.
        assert_eq!(lines(&["MESSAGE_ID=x", "MESSAGE_ID=9a4f"]).len(), 1);
        assert!(lines(&["MESSAGE_ID=9a4f", "_PID=1"]).is_empty());
        // What the 4.12 daemon asks at start for logins: nothing, and no error.
        assert!(
            lines(&[
                "-b",
                "-o",
                "cat",
                "-u",
                "systemd-logind.service",
                "MESSAGE_ID=8d45"
            ])
            .is_empty()
        );
    }

    #[test]
    fn list_boots_numbers_the_current_boot_zero() {
        let rows = list_boots(&journal());
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(
            rows[1].starts_with("  0 b1 Mon 2026-01-05 08:00:01 UTC Mon 2026-01-05 08:00:02 UTC"),
            "{rows:?}"
        );
    }
}
