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
use super::control::{NODE_SOCKET_ENV, Request, tools_client};
use super::users;

mod journalctl;
use journalctl::journalctl;

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
    match tools_client().call_blocking::<CommandOutput>(&Request::Systemctl { args }) {
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

/// A journal line from `ident` with this process's pid.
fn log_line(ident: &str, message: &str) -> Result<(), String> {
    let request = Request::Log {
        ident: ident.to_string(),
        pid: std::process::id(),
        message: message.to_string(),
        fields: Default::default(),
    };
    tools_client()
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
    match tools_client().call_blocking::<serde_json::Value>(&Request::RunTransient {
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
    match tools_client().call_blocking::<serde_json::Value>(&request) {
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
    match tools_client().call_blocking::<serde_json::Value>(&request) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("logger: {e}");
            1
        }
    }
}
