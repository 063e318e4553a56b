//! The node's own tools, one multi-call binary (`mco-node-tools`) installed as `systemctl`,
//! `journalctl` and `logger`: each hands its work to the node's service manager and journal
//! over the control socket (`MCO_NODE_SOCKET`, else the init's socket in a container node).
//!
//! Two more are recorded rather than carried out, each call a journal line under its own name:
//! `update-ca-trust` (DESIGN.md, "on PATH"; a node has no system trust store to extract), and
//! `ostree ... config set ...`, which the upstream daemon runs on control-plane nodes at start
//! (MCO `pkg/daemon/controlplane.go`) whatever the OS. Any other `ostree` command fails, saying
//! the node has no OSTree repository.

use super::control::{CONTROL_SOCKET, ControlClient, NODE_SOCKET_ENV, Request};
use crate::agent::CommandOutput;

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

/// What `journalctl` was asked for.
#[derive(Debug, Default, PartialEq, Eq)]
struct JournalQuery {
    units: Vec<String>,
    this_boot: bool,
    lines: Option<usize>,
    grep: Option<String>,
    message_only: bool,
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
            "-o" | "--output" => q.message_only = value(flag)? == "cat",
            "--no-pager" | "-q" | "--quiet" | "--no-hostname" | "-a" | "--all" => {}
            "--since" | "--until" => {
                value(flag)?;
            }
            other => return Err(format!("unsupported option {other:?}")),
        }
    }
    Ok(q)
}

/// The lines `q` selects from the whole journal.
fn select(journal: &[String], q: &JournalQuery) -> Vec<String> {
    let start = if q.this_boot {
        journal
            .iter()
            .rposition(|l| l.starts_with("-- Boot "))
            .map_or(0, |i| i + 1)
    } else {
        0
    };
    let ident_of = |line: &str| -> Option<String> {
        // `Feb 26 07:21:44 host ident[pid]: message`
        let rest = line.splitn(5, ' ').nth(4)?;
        Some(rest.split('[').next()?.to_string())
    };
    let mut lines: Vec<String> = journal[start..]
        .iter()
        .filter(|l| {
            q.units.is_empty()
                || ident_of(l)
                    .is_some_and(|ident| q.units.iter().any(|u| u.trim_end_matches(".service") == ident))
        })
        .filter(|l| q.grep.as_ref().is_none_or(|g| l.contains(g.as_str())))
        .cloned()
        .collect();
    if let Some(n) = q.lines {
        lines = lines.split_off(lines.len().saturating_sub(n));
    }
    if q.message_only {
        for line in &mut lines {
            if let Some((_, message)) = line.split_once("]: ") {
                *line = message.to_string();
            }
        }
    }
    lines
}

fn journalctl(args: &[String]) -> i32 {
    let q = match parse_journalctl(args) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("journalctl: {e}");
            return 1;
        }
    };
    match client().call_blocking::<Vec<String>>(&Request::JournalSince { mark: 0 }) {
        Ok(journal) => {
            for line in select(&journal, &q) {
                println!("{line}");
            }
            0
        }
        Err(e) => {
            eprintln!("journalctl: {e}");
            1
        }
    }
}

/// A journal line under the tool's name with its command line, and success.
fn record(tool: &str, args: &[String]) -> i32 {
    let request = Request::Log {
        ident: tool.to_string(),
        pid: std::process::id(),
        message: std::iter::once(tool)
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
    };
    match client().call_blocking::<serde_json::Value>(&request) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("{tool}: {e}");
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

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn journalctl_options_select_lines_as_journalctl_does() {
        let journal = args(&[
            "Jan 05 08:00:00 n systemd[1]: Started kubelet.service.",
            "-- Boot b1 --",
            "Jan 05 08:00:01 n kubelet[1000]: one",
            "Jan 05 08:00:01 n machine-config-daemon[1001]: two",
            "Jan 05 08:00:02 n kubelet[1000]: three",
        ]);
        let q = parse_journalctl(&args(&["-b", "-u", "kubelet.service", "--no-pager"])).unwrap();
        assert_eq!(
            select(&journal, &q),
            [
                "Jan 05 08:00:01 n kubelet[1000]: one",
                "Jan 05 08:00:02 n kubelet[1000]: three"
            ]
        );
        let q = parse_journalctl(&args(&["--unit=kubelet", "-n", "1", "-o", "cat"])).unwrap();
        assert_eq!(select(&journal, &q), ["three"]);
        let q = parse_journalctl(&args(&["-g", "two"])).unwrap();
        assert_eq!(select(&journal, &q).len(), 1);
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
    }
}
