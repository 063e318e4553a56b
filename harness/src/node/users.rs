//! The node's users as RHCOS has them, and the user tools the upstream daemon calls: the `core`
//! user (uid and gid 1000, home `/home/core`) in `/etc/passwd`, `/etc/group` and `/etc/shadow`
//! (`image` writes them), `runuser -u USER -- COMMAND…` (release-4.16 `update.go`
//! `createSSHKeyDir`: `runuser -u core -- mkdir -m 0700 -p /home/core/.ssh`), `usermod -p HASH
//! USER` (`SetPasswordHash`) and `getent DATABASE [KEY…]`. They act on the node's `/etc`
//! (`MCO_NODE_ROOT`, default `/`), and record what PAM and shadow-utils record in the journal.

use std::path::{Path, PathBuf};

/// The node's `/etc/passwd`: root and RHCOS's `core`.
pub const PASSWD: &str =
    "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n";
/// The node's `/etc/group`.
pub const GROUP: &str = "root:x:0:\nwheel:x:10:core\nsudo:x:16:core\ncore:x:1000:core\n";
/// The node's `/etc/shadow` (no password set, as on a fresh RHCOS node).
pub const SHADOW: &str = "root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n";
/// The `core` user's id, group and home.
pub const CORE_UID: u32 = 1000;
pub const CORE_HOME: &str = "/home/core";

/// Writes a journal line from `ident` (the node tools send it over the control socket).
pub type Log<'a> = &'a dyn Fn(&str, &str) -> Result<(), String>;

/// The node's root as its tools see it.
pub fn node_root() -> PathBuf {
    PathBuf::from(std::env::var("MCO_NODE_ROOT").unwrap_or_else(|_| "/".into()))
}

fn etc(root: &Path, file: &str) -> PathBuf {
    root.join("etc").join(file)
}

/// A `name:x:uid:gid:…` entry of `/etc/passwd`: (uid, gid, home).
fn passwd_entry(root: &Path, name: &str) -> Option<(u32, u32, String)> {
    let text = std::fs::read_to_string(etc(root, "passwd")).ok()?;
    text.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.len() >= 7 && f[0] == name)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?, f[5].to_string())))?
    })
}

/// `runuser -u USER [--] COMMAND…`: the command as that user, its exit code returned.
pub fn runuser(root: &Path, args: &[String], log: Log) -> i32 {
    let mut user = None;
    let mut it = args.iter();
    let mut command = Vec::new();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "-u" | "--user" => user = it.next().cloned(),
            "--" => {
                command.extend(it.by_ref().cloned());
                break;
            }
            other if other.starts_with('-') => {
                eprintln!("runuser: unsupported option {other:?} (mco-conformance: -u USER -- COMMAND)");
                return 1;
            }
            _ => {
                command.push(arg.clone());
                command.extend(it.by_ref().cloned());
                break;
            }
        }
    }
    let Some(user) = user else {
        eprintln!("runuser: no user specified (-u USER)");
        return 1;
    };
    let Some((program, rest)) = command.split_first() else {
        eprintln!("runuser: no command specified");
        return 1;
    };
    let Some((uid, gid, home)) = passwd_entry(root, &user) else {
        eprintln!(
            "runuser: user {user} does not exist or the user entry does not contain all the required fields"
        );
        return 1;
    };
    let _ = log(
        "runuser",
        &format!("pam_unix(runuser:session): session opened for user {user}(uid={uid}) by (uid=0)"),
    );
    use std::os::unix::process::CommandExt;
    let status = std::process::Command::new(program)
        .args(rest)
        .uid(uid)
        .gid(gid)
        .env("HOME", &home)
        .env("USER", &user)
        .env("LOGNAME", &user)
        .status();
    let _ = log(
        "runuser",
        &format!("pam_unix(runuser:session): session closed for user {user}"),
    );
    match status {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("runuser: failed to execute {program}: {e}");
            126
        }
    }
}

/// `usermod -p HASH USER`: the hash into USER's `/etc/shadow` entry.
pub fn usermod(root: &Path, args: &[String], log: Log) -> i32 {
    let (hash, user) = match args {
        [flag, hash, user] if flag == "-p" || flag == "--password" => (hash, user),
        _ => {
            eprintln!("usermod: only `usermod -p HASH USER` is supported on this node (mco-conformance)");
            return 2;
        }
    };
    let path = etc(root, "shadow");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("usermod: cannot open {}: {e}", path.display());
            return 1;
        }
    };
    let mut found = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut f: Vec<&str> = line.split(':').collect();
            if f.len() >= 2 && f[0] == user {
                found = true;
                f[1] = hash;
            }
            f.join(":")
        })
        .collect();
    if !found {
        eprintln!("usermod: user '{user}' does not exist");
        return 6;
    }
    let updated = lines.join("\n") + "\n";
    let tmp = path.with_extension("mco-tmp");
    if let Err(e) = std::fs::write(&tmp, updated).and_then(|()| std::fs::rename(&tmp, &path)) {
        eprintln!("usermod: cannot write {}: {e}", path.display());
        return 1;
    }
    let _ = log("usermod", &format!("change user '{user}' password"));
    0
}

/// `getent passwd|group|shadow [KEY…]`: the entries by name (or numeric id); exit 2 when a
/// key has none.
pub fn getent(root: &Path, args: &[String]) -> i32 {
    let Some((database, keys)) = args.split_first() else {
        eprintln!("getent: wrong number of arguments");
        return 1;
    };
    if !["passwd", "group", "shadow"].contains(&database.as_str()) {
        eprintln!("Unknown database: {database}");
        return 1;
    }
    let text = std::fs::read_to_string(etc(root, database)).unwrap_or_default();
    let entries: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    if keys.is_empty() {
        for entry in entries {
            println!("{entry}");
        }
        return 0;
    }
    let mut code = 0;
    for key in keys {
        let hit = entries.iter().find(|line| {
            let f: Vec<&str> = line.split(':').collect();
            f[0] == key || (database != "shadow" && f.get(2) == Some(&key.as_str()))
        });
        match hit {
            Some(line) => println!("{line}"),
            None => code = 2,
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_hold_core_as_rhcos_does() {
        let core = PASSWD.lines().find(|l| l.starts_with("core:")).unwrap();
        let f: Vec<&str> = core.split(':').collect();
        assert_eq!((f[2], f[3], f[5]), ("1000", "1000", CORE_HOME));
        assert_eq!(CORE_UID.to_string(), f[2]);
        assert!(GROUP.lines().any(|l| l.starts_with("core:x:1000:")));
        assert!(SHADOW.lines().any(|l| l.starts_with("core:")));
    }

    #[test]
    fn usermod_sets_the_hash_and_logs_as_shadow_utils_does() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("etc")).unwrap();
        std::fs::write(root.path().join("etc/shadow"), SHADOW).unwrap();
        let logged = std::sync::Mutex::new(Vec::new());
        let log = |ident: &str, m: &str| {
            logged.lock().unwrap().push(format!("{ident}: {m}"));
            Ok(())
        };
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(usermod(root.path(), &a(&["-p", "$6$abc", "core"]), &log), 0);
        let shadow = std::fs::read_to_string(root.path().join("etc/shadow")).unwrap();
        assert!(shadow.contains("core:$6$abc:19000:"), "{shadow}");
        assert!(shadow.starts_with("root:*:"), "{shadow}");
        assert_eq!(*logged.lock().unwrap(), ["usermod: change user 'core' password"]);
        assert_eq!(usermod(root.path(), &a(&["-p", "x", "nobody"]), &log), 6);
        assert_eq!(usermod(root.path(), &a(&["-L", "core"]), &log), 2);
        assert_eq!(
            runuser(root.path(), &a(&["-u", "core", "--", "true"]), &log),
            1,
            "no passwd"
        );
    }

    #[test]
    fn getent_finds_by_name_or_id() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("etc")).unwrap();
        std::fs::write(root.path().join("etc/passwd"), PASSWD).unwrap();
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(getent(root.path(), &a(&["passwd", "core"])), 0);
        assert_eq!(getent(root.path(), &a(&["passwd", "1000"])), 0);
        assert_eq!(getent(root.path(), &a(&["passwd", "nobody"])), 2);
        assert_eq!(getent(root.path(), &a(&["hosts"])), 1);
        assert_eq!(
            passwd_entry(root.path(), "core"),
            Some((1000, 1000, CORE_HOME.into()))
        );
    }
}
