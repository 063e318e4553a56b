//! The node's own tools, one multi-call binary (`mco-node-tools`) installed as `systemctl`,
//! `journalctl`, `logger` and `systemd-run`: each hands its work to the node's service manager
//! and journal over the control socket (`MCO_NODE_SOCKET`, else the init's socket in a container
//! node). `journalctl` reads journald fields (`-o json`, `FIELD=value` matches, `--list-boots`,
//! `-f`) and `logger --journald` writes them: the upstream 4.12 daemon keeps its pending-reboot
//! state there (release-4.12 `pkg/daemon/update.go`, `storePendingState`/`getPendingState`).
//!
//! In a container node's image they are also the RHCOS user tools the upstream daemon calls:
//! `runuser -u core -- …` (it creates `/home/core/.ssh` so), `usermod -p` (a password hash into
//! `/etc/shadow`) and `getent`, each acting on the node's `/etc` and recorded in the journal as
//! PAM or shadow-utils record them (`users`).
//!
//! Two more are recorded rather than carried out, each call a journal line under its own name:
//! `update-ca-trust` (DESIGN.md, "on PATH"; a node has no system trust store to extract), and
//! `ostree ... config set ...`, which the upstream daemon runs on control-plane nodes at start
//! (MCO `pkg/daemon/controlplane.go`) whatever the OS. Any other `ostree` command fails, saying
//! the node has no OSTree repository.

use super::CommandOutput;
use super::control::{CONTROL_SOCKET, ControlClient, NODE_SOCKET_ENV, Request};
use super::journal::Entry;
use super::users;

fn client() -> ControlClient {
    ControlClient::new(std::env::var(NODE_SOCKET_ENV).unwrap_or_else(|_| CONTROL_SOCKET.to_string()))
}

/// Run as the tool `argv0` names (its file name); exits with the tool's code.
pub fn main(argv0: &str, args: Vec<String>) -> i32 {
    let tool = std::path::Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("systemctl");
    match tool {
        "journalctl" => journalctl(&args),
        "logger" => logger(&args),
        "systemd-run" => systemd_run(&args),
        "runuser" => users::runuser(&users::node_root(), &args, &log_line),
        "usermod" => users::usermod(&users::node_root(), &args, &log_line),
        "getent" => users::getent(&users::node_root(), &args),
        "update-ca-trust" => record("update-ca-trust", &args),
        "ostree" if args.iter().any(|a| a == "config") && args.iter().any(|a| a == "set") => {
            record("ostree", &args)
        }
        "ostree" => {
            eprintln!(
                "ostree: this node has no OSTree repository; only `ostree config set` is recorded (mco-conformance)"
            );
            1
        }
        _ => systemctl(args),
    }
}

fn systemctl(args: Vec<String>) -> i32 {
    match client().call_blocking::<CommandOutput>(&Request::Systemctl { args }) {
        Ok(out) => {
            print!("{}", out.stdout);
            eprint!("{}", out.stderr);
            out.exit_code
        }
        Err(e) => {
            eprintln!("systemctl: {e}");
            1
        }
    }
}

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

fn journalctl(args: &[String]) -> i32 {
    use std::io::Write;
    let q = match parse_journalctl(args) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("journalctl: {e}");
            return 1;
        }
    };
    let journal = match client().call_blocking::<Vec<Entry>>(&Request::JournalEntries { mark: 0 }) {
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
        let waited = client().call_blocking::<Option<String>>(&Request::WaitJournal {
            mark,
            needle: String::new(),
            timeout_ms: 3_600_000,
        });
        if waited.is_err() {
            return 1;
        }
        let Ok(new) = client().call_blocking::<Vec<Entry>>(&Request::JournalEntries { mark }) else {
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

/// A journal line from `ident` with this process's pid.
fn log_line(ident: &str, message: &str) -> Result<(), String> {
    let request = Request::Log {
        ident: ident.to_string(),
        pid: std::process::id(),
        message: message.to_string(),
        fields: Default::default(),
    };
    client()
        .call_blocking::<serde_json::Value>(&request)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// A journal line under the tool's name with its command line, and success.
fn record(tool: &str, args: &[String]) -> i32 {
    let line = std::iter::once(tool)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    match log_line(tool, &line) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{tool}: {e}");
            1
        }
    }
}

/// `systemd-run [--unit NAME] [--description TEXT] [-p PROPERTY]… COMMAND…`: the command as a
/// transient unit of the node's service manager, started and not waited for (`--wait` is not
/// supported). How the upstream daemon reboots (`systemd-run --unit
/// machine-config-daemon-reboot … /bin/sh -c "systemctl reboot"`).
fn systemd_run(args: &[String]) -> i32 {
    let mut unit = String::new();
    let mut description = String::new();
    let mut it = args.iter();
    let mut command = Vec::new();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next().cloned());
        match flag {
            "-u" | "--unit" => unit = value().unwrap_or_default(),
            "--description" => description = value().unwrap_or_default(),
            "-p" | "--property" | "--service-type" | "--uid" | "--gid" | "-E" | "--setenv" => {
                value();
            }
            "-q" | "--quiet" | "--collect" | "-G" | "--no-block" | "-r" | "--remain-after-exit" => {}
            "--wait" | "-t" | "--pty" | "-P" | "--pipe" | "--scope" | "--user" => {
                eprintln!("systemd-run: {flag} is not supported on this node (mco-conformance)");
                return 1;
            }
            "--" => {
                command.extend(it.by_ref().cloned());
                break;
            }
            other if other.starts_with('-') => {
                eprintln!("systemd-run: unrecognized option '{other}'");
                return 1;
            }
            _ => {
                command.push(arg.clone());
                command.extend(it.by_ref().cloned());
                break;
            }
        }
    }
    if command.is_empty() {
        eprintln!("systemd-run: a command is needed");
        return 1;
    }
    let env = ["PATH", NODE_SOCKET_ENV, "MCO_NODE_ROOT"]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    match client().call_blocking::<serde_json::Value>(&Request::RunTransient {
        unit: unit.clone(),
        description,
        command,
        env,
    }) {
        Ok(_) => {
            if !unit.is_empty() {
                eprintln!("Running as unit: {}.service", unit.trim_end_matches(".service"));
            }
            0
        }
        Err(e) => {
            eprintln!("systemd-run: {e}");
            1
        }
    }
}

/// `logger --journald[=FILE]`: one entry of the `FIELD=value` lines on stdin (or in FILE);
/// `MESSAGE` is its text. Without `SYSLOG_IDENTIFIER` journald names the entry by its command.
fn logger_journald(file: Option<&str>) -> i32 {
    let text = match file {
        Some(path) => std::fs::read_to_string(path),
        None => std::io::read_to_string(std::io::stdin()),
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            eprintln!("logger: {}: {e}", file.unwrap_or("stdin"));
            return 1;
        }
    };
    let mut fields = std::collections::BTreeMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once('=') else {
            eprintln!("logger: invalid journald field {line:?}: FIELD=value");
            return 1;
        };
        fields.insert(name.to_string(), value.to_string());
    }
    let message = fields.remove("MESSAGE").unwrap_or_default();
    let ident = fields
        .remove("SYSLOG_IDENTIFIER")
        .unwrap_or_else(|| "logger".into());
    let request = Request::Log {
        ident,
        pid: std::process::id(),
        message,
        fields,
    };
    match client().call_blocking::<serde_json::Value>(&request) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("logger: {e}");
            1
        }
    }
}

fn logger(args: &[String]) -> i32 {
    let mut tag = "root".to_string();
    let mut words = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--journald" => return logger_journald(None),
            journald if journald.starts_with("--journald=") => {
                return logger_journald(journald.strip_prefix("--journald="));
            }
            "-h" | "--help" => {
                println!(
                    "Usage:\n logger [options] [<message>]\n\nOptions:\n -t, --tag <tag>      mark every line with this tag\n -p, --priority <prio> mark given message with this priority\n     --journald[=<file>]  write journald entry"
                );
                return 0;
            }
            "-t" | "--tag" => match it.next() {
                Some(t) => tag = t.clone(),
                None => {
                    eprintln!("logger: option {arg} needs a value");
                    return 1;
                }
            },
            "-p" | "--priority" => {
                it.next();
            }
            "-i" | "-s" | "--stderr" => {}
            "--" => words.extend(it.by_ref().cloned()),
            other => words.push(other.to_string()),
        }
    }
    let message = if words.is_empty() {
        std::io::read_to_string(std::io::stdin()).unwrap_or_default()
    } else {
        words.join(" ")
    };
    let request = Request::Log {
        ident: tag,
        pid: std::process::id(),
        message,
        fields: Default::default(),
    };
    match client().call_blocking::<serde_json::Value>(&request) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("logger: {e}");
            1
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
