//! Reading strace's record into the model's operations: names and inodes as the running system
//! had them, call by call (the path behind each descriptor, `-y`, says which inode a call acts on;
//! the offset each descriptor writes at is followed from its opens, writes and seeks).

use super::strace_args::{Arg, normalise, parse_call, str_arg};
use super::{FILE_CHANGING, FileState, Inode, Op, Record, Traced, UMASK};
use crate::node::crash::{Call, failed, is_device};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

mod calls;

/// Read strace's calls into operations. `initial` holds what each watched path (host path) held
/// before the record; `creator` is the owner of files the agent creates.
pub fn record(
    calls: &[Call],
    watched: &BTreeMap<String, Option<FileState>>,
    creator: (u32, u32),
) -> Result<Record, String> {
    let mut r = Reader {
        watched,
        names: HashMap::new(),
        gone: HashSet::new(),
        inodes: Vec::new(),
        volatile: Vec::new(),
        positions: HashMap::new(),
        last_fd: HashMap::new(),
        cwd: None,
        ops: Vec::new(),
        created_mode: BTreeMap::new(),
        ever_watched: BTreeSet::new(),
    };
    for path in watched.keys() {
        if let Some(ino) = r.resolve(path, false) {
            r.ever_watched.insert(ino);
        }
    }
    for call in calls {
        if call.killed || failed(&call.line) {
            continue;
        }
        r.call(call)?;
        r.note_watched();
    }
    let relevant = relevance(&r.ops, &r.ever_watched, watched);
    for (traced, relevant) in r.ops.iter().zip(&relevant) {
        if *relevant && matches!(traced.op, Op::Unmodelled { .. }) {
            return Err(format!(
                "the power-loss model cannot replay `{}`, which changes a watched file",
                traced.line
            ));
        }
    }
    for ino in &r.ever_watched {
        let inode = &r.inodes[*ino];
        if !inode.created && inode.initial.is_none() && !watched.contains_key(&inode.origin) {
            return Err(format!(
                "{} reached a watched path, but what it held before the sync is not known",
                inode.origin
            ));
        }
    }
    Ok(Record {
        ops: r.ops,
        inodes: r.inodes,
        watched: watched.keys().cloned().collect(),
        creator,
        relevant,
        reach: r.ever_watched,
        created_mode: r.created_mode,
    })
}

/// An op is relevant when it names a watched path (or a directory above one), or acts on an
/// inode that was ever at one; fsyncs and syncs always are (they only make others durable).
fn relevance(
    ops: &[Traced],
    inodes: &BTreeSet<usize>,
    watched: &BTreeMap<String, Option<FileState>>,
) -> Vec<bool> {
    let watched_path = |p: &str| watched.contains_key(p);
    let above_watched = |p: &str| {
        watched
            .keys()
            .any(|w| w.len() > p.len() && w.starts_with(p) && w.as_bytes()[p.len()] == b'/')
    };
    ops.iter()
        .map(|t| match &t.op {
            Op::Create { path, ino } | Op::Link { path, ino } => watched_path(path) || inodes.contains(ino),
            Op::Mkdir { path } => above_watched(path),
            Op::Rename {
                from,
                to,
                ino,
                exchanged,
            } => {
                watched_path(from)
                    || watched_path(to)
                    || inodes.contains(ino)
                    || exchanged.is_some_and(|e| inodes.contains(&e))
            }
            Op::Unlink { path } => watched_path(path),
            Op::Write { ino, .. }
            | Op::Truncate { ino, .. }
            | Op::Chmod { ino, .. }
            | Op::Chown { ino, .. }
            | Op::FsyncFile { ino, .. } => inodes.contains(ino),
            Op::FsyncDir { .. } | Op::Sync => true,
            Op::Unmodelled { inos, paths } => {
                inos.iter().any(|i| inodes.contains(i)) || paths.iter().any(|p| watched_path(p))
            }
        })
        .collect()
}

/// The record's reader: the names and inodes as the running system had them, call by call.
struct Reader<'a> {
    watched: &'a BTreeMap<String, Option<FileState>>,
    /// Path → inode, for every path the record has seen.
    names: HashMap<String, usize>,
    /// Paths known to have nothing.
    gone: HashSet<String>,
    inodes: Vec<Inode>,
    /// What each inode holds now (`None`: not known).
    volatile: Vec<Option<Vec<u8>>>,
    /// Per (descriptor, inode): the file offset and whether it appends.
    positions: HashMap<(u32, usize), (u64, bool)>,
    /// Per descriptor: the inode it was last opened on (for `(deleted)` paths).
    last_fd: HashMap<u32, usize>,
    /// The working directory, from `AT_FDCWD</…>` (for `rename("a", "b")`).
    cwd: Option<String>,
    ops: Vec<Traced>,
    created_mode: BTreeMap<usize, u32>,
    ever_watched: BTreeSet<usize>,
}

impl Reader<'_> {
    /// The inode at `path` now, if any: a path first seen is what was there before the record
    /// (a watched path's known contents; another path's, unknown, if `exists`).
    fn resolve(&mut self, path: &str, exists: bool) -> Option<usize> {
        if let Some(ino) = self.names.get(path) {
            return Some(*ino);
        }
        if self.gone.contains(path) {
            return None;
        }
        let initial = match self.watched.get(path) {
            Some(None) => return None,
            Some(Some(state)) => Some(state.clone()),
            None if exists => None,
            None => return None,
        };
        let ino = self.inodes.len();
        self.volatile.push(initial.as_ref().map(|s| s.contents.clone()));
        self.inodes.push(Inode {
            origin: path.to_string(),
            initial,
            created: false,
        });
        self.names.insert(path.to_string(), ino);
        Some(ino)
    }

    fn new_inode(&mut self, path: &str, mode: u32) -> usize {
        let ino = self.inodes.len();
        self.inodes.push(Inode {
            origin: path.to_string(),
            initial: None,
            created: true,
        });
        self.volatile.push(Some(Vec::new()));
        self.created_mode.insert(ino, mode & !UMASK & 0o7777);
        self.names.insert(path.to_string(), ino);
        self.gone.remove(path);
        ino
    }

    fn push(&mut self, op: Op, call: &Call) {
        self.ops.push(Traced {
            op,
            line: call.line.clone(),
        });
    }

    fn note_watched(&mut self) {
        for path in self.watched.keys() {
            if let Some(ino) = self.names.get(path) {
                self.ever_watched.insert(*ino);
            }
        }
    }

    /// A path argument made absolute: against its directory descriptor's path, or the cwd.
    fn absolute(&mut self, dirfd: Option<&Arg>, path: &[u8]) -> Result<String, String> {
        let path = String::from_utf8_lossy(path).into_owned();
        if let Some(a @ Arg::Fd { path: Some(dir), .. }) = dirfd
            && a.is_cwd()
        {
            self.cwd = Some(dir.clone());
        }
        if path.starts_with('/') {
            return Ok(normalise(&path));
        }
        let base = match dirfd {
            Some(Arg::Fd { path: Some(dir), .. }) => Some(dir.clone()),
            _ => self.cwd.clone(),
        };
        base.map(|b| normalise(&format!("{b}/{path}")))
            .ok_or_else(|| format!("a relative path {path:?} with no known directory"))
    }

    /// The inode behind a descriptor argument, or `None` for one that is not a file of ours.
    fn fd_inode(&mut self, arg: &Arg) -> Option<(u32, usize)> {
        let Arg::Fd { fd, path: Some(path) } = arg else {
            return None;
        };
        if path.ends_with(" (deleted)") {
            return self.last_fd.get(fd).map(|ino| (*fd, *ino));
        }
        if !path.starts_with('/') || is_device(path) {
            return None;
        }
        let path = path.clone();
        self.resolve(&path, true).map(|ino| (*fd, ino))
    }

    fn write_at(&mut self, ino: usize, offset: u64, data: Vec<u8>, call: &Call) {
        if let Some(Some(v)) = self.volatile.get_mut(ino) {
            let end = offset as usize + data.len();
            if v.len() < end {
                v.resize(end, 0);
            }
            v[offset as usize..end].copy_from_slice(&data);
        }
        self.push(Op::Write { ino, offset, data }, call);
    }

    fn truncate(&mut self, ino: usize, size: u64, call: &Call) {
        if let Some(Some(v)) = self.volatile.get_mut(ino) {
            v.resize(size as usize, 0);
        }
        self.push(Op::Truncate { ino, size }, call);
    }

    /// Where a write through `fd` lands, and the offset after it.
    fn advance(&mut self, fd: u32, ino: usize, len: u64) -> u64 {
        let size = self.volatile[ino].as_ref().map(|v| v.len() as u64).unwrap_or(0);
        let (pos, append) = self.positions.entry((fd, ino)).or_insert((0, false));
        let at = if *append { size } else { *pos };
        *pos = at + len;
        at
    }

    /// The bytes `len` long from `ino` at `fd`'s offset (a copy's source), advancing it.
    fn read_from(&mut self, fd: u32, ino: usize, len: u64) -> Option<Vec<u8>> {
        let (pos, _) = self.positions.entry((fd, ino)).or_insert((0, false));
        let start = *pos as usize;
        *pos += len;
        let v = self.volatile[ino].as_ref()?;
        v.get(start..start + len as usize).map(<[u8]>::to_vec)
    }

    /// One call of the record, as the model's operations (the file-changing ones in `calls`).
    fn call(&mut self, call: &Call) -> Result<(), String> {
        let Some(parsed) = parse_call(&call.line) else {
            return Ok(());
        };
        let args = &parsed.args;
        let ret = &parsed.result;
        let num = |a: &Arg| a.number();
        let bad = |what: &str| format!("cannot read {what} in `{}`", call.line);
        match call.syscall.as_str() {
            "open" | "openat" | "creat" => self.on_open(call, args, ret)?,
            "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" => self.on_write(call, args, ret)?,
            "lseek" => {
                if let (Some((fd, ino)), Some(at)) = (
                    args.first().and_then(|a| self.fd_inode(a)),
                    ret.as_ref().and_then(num),
                ) {
                    self.positions.entry((fd, ino)).or_insert((0, false)).0 = at;
                }
            }
            "ftruncate" => {
                let Some((_, ino)) = args.first().and_then(|a| self.fd_inode(a)) else {
                    return Ok(());
                };
                let size = args.get(1).and_then(num).ok_or_else(|| bad("the size"))?;
                self.truncate(ino, size, call);
            }
            "truncate" => {
                let Some(Arg::Str(path, _)) = args.first() else {
                    return Err(bad("the path"));
                };
                let path = self.absolute(None, path)?;
                let size = args.get(1).and_then(num).ok_or_else(|| bad("the size"))?;
                if let Some(ino) = self.resolve(&path, true) {
                    self.truncate(ino, size, call);
                }
            }
            "copy_file_range" | "sendfile" => self.on_copy(call, args, ret)?,
            "rename" | "renameat" | "renameat2" => self.on_rename(call, args)?,
            "link" | "linkat" => self.on_link(call, args)?,
            "unlink" | "unlinkat" | "rmdir" => {
                let path = if call.syscall == "unlinkat" {
                    self.absolute(args.first(), str_arg(args.get(1))?)?
                } else {
                    self.absolute(None, str_arg(args.first())?)?
                };
                self.names.remove(&path);
                self.gone.insert(path.clone());
                self.push(Op::Unlink { path }, call);
            }
            "mkdir" | "mkdirat" => {
                let path = if call.syscall == "mkdirat" {
                    self.absolute(args.first(), str_arg(args.get(1))?)?
                } else {
                    self.absolute(None, str_arg(args.first())?)?
                };
                self.push(Op::Mkdir { path }, call);
            }
            "chmod" | "fchmodat" | "fchmod" => self.on_chmod(call, args)?,
            "chown" | "lchown" | "fchown" | "fchownat" => self.on_chown(call, args)?,
            "fsync" | "fdatasync" => self.on_fsync(call, args)?,
            "sync" | "syncfs" => self.push(Op::Sync, call),
            // fallocate, symlink, openat2 …: not replayed; an error if a watched file needs it.
            other if FILE_CHANGING.contains(&other) => self.on_unmodelled(call, args)?,
            _ => {}
        }
        Ok(())
    }
}
