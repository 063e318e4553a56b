//! What a power loss can leave of a sync, from strace's record of the agent's file system calls
//! (`strace -f -y -x -s <large>`: every file-changing call with the path behind each descriptor
//! and the bytes it wrote). A process kill loses nothing the kernel accepted; a power loss loses
//! what was not yet on disk. Which is which is said by an abstract persistence model, as ALICE
//! (Pillai et al., OSDI '14) and CrashMonkey (Mohan et al., OSDI '18) do: the calls are replayed
//! with each one not yet made durable either persisted or lost, within the model's rules, and
//! every state that results is materialised on a copy of the files and read back.
//!
//! What this module owns: reading the record into operations on inodes and names (`reader`,
//! over `strace_args`, strace's notation), the model (`states`, here), and materialising a
//! state (`materialise`). What it must not do: judge. The steps say whether a file read back is
//! whole.
//!
//! ## The model
//!
//! It is POSIX's promise and no more (no file system's extra ordering, such as ext4's flush of
//! a file's data before a rename over another, `auto_da_alloc`, which an agent cannot rely on):
//!
//! - the power goes after any call (every prefix of the record); nothing after it happened;
//! - a call before it is **durable** if a later call before the loss made it so: `fsync` of the
//!   file for its data, size, mode and owner (`fdatasync`: data and size only), `fsync` of a
//!   directory for the names created, renamed into or removed from it, `sync`/`syncfs` for all;
//! - of the calls not durable, **names** (create, rename, link, unlink, mkdir) persist in the
//!   order they were made: any prefix of them is kept (a journaling file system commits its
//!   metadata in order); so a rename not followed by an fsync of its directory may be lost or
//!   kept;
//! - each file's **data** (writes, truncations) persists in order too, independently of the
//!   names and of other files: any prefix of its writes is kept, and the first write lost may
//!   leave its extent zero-filled (the size persisted before the data, as on XFS after a crash);
//!   so a file renamed into place before its data was synced can be empty or zeros;
//! - each file's **mode and owner** changes persist as a prefix of their own.
//!
//! The starting point is durable (the node's files as they were before the sync, as after a
//! `sync` or a clean boot). A new file's mode before any chmod is the open's mode under the
//! umask 022 (systemd's default for services), its owner the agent's.
//!
//! Only what can reach a watched file is enumerated: the names at watched paths, and the
//! inodes that were ever at one (their data, mode, owner and names). Other files' calls are no
//! states of their own: they cannot change what a reader of the watched files sees.

mod materialise;
mod reader;
mod strace_args;

pub use reader::record;

use super::crash::FILE_CHANGING;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// A file as a reader finds it: contents, mode and owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileState {
    pub contents: Vec<u8>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

/// The system calls the record traces: the file-changing ones, `lseek` (where a write lands)
/// and `sync`/`syncfs` (what is durable).
pub fn recorded_syscalls() -> Vec<String> {
    FILE_CHANGING
        .iter()
        .copied()
        .chain(["lseek", "sync", "syncfs"])
        .map(String::from)
        .collect()
}

/// The umask a new file is created under (systemd's `UMask=` default for services).
const UMASK: u32 = 0o022;

/// How many states one record may need before the model gives up, saying so: each is
/// materialised, and a sync that leaves this much unsynced is not one to wait on.
pub const STATE_BOUND: usize = 20_000;

/// An inode the record touched.
#[derive(Debug, Clone)]
pub struct Inode {
    /// The path it was first seen at.
    pub origin: String,
    /// What it held before the record (a file that was there), or `None` for one the record
    /// created (empty, with `mode`) or whose contents are not known.
    pub initial: Option<FileState>,
    /// Created by the record.
    pub created: bool,
}

/// What one call did, on the model's objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Create {
        path: String,
        ino: usize,
    },
    Mkdir {
        path: String,
    },
    Link {
        path: String,
        ino: usize,
    },
    /// `ino` moved from `from` to `to`; `exchanged`: what was at `to` moved to `from`.
    Rename {
        from: String,
        to: String,
        ino: usize,
        exchanged: Option<usize>,
    },
    Unlink {
        path: String,
    },
    Write {
        ino: usize,
        offset: u64,
        data: Vec<u8>,
    },
    Truncate {
        ino: usize,
        size: u64,
    },
    Chmod {
        ino: usize,
        mode: u32,
    },
    Chown {
        ino: usize,
        uid: Option<u32>,
        gid: Option<u32>,
    },
    /// `fsync`/`fdatasync` of a file.
    FsyncFile {
        ino: usize,
        data_only: bool,
    },
    /// `fsync` of a directory.
    FsyncDir {
        path: String,
    },
    Sync,
    /// A call the model cannot replay, on these inodes or paths.
    Unmodelled {
        inos: Vec<usize>,
        paths: Vec<String>,
    },
}

impl Op {
    fn is_name(&self) -> bool {
        matches!(
            self,
            Op::Create { .. } | Op::Mkdir { .. } | Op::Link { .. } | Op::Rename { .. } | Op::Unlink { .. }
        )
    }

    fn data_of(&self) -> Option<usize> {
        match self {
            Op::Write { ino, .. } | Op::Truncate { ino, .. } => Some(*ino),
            _ => None,
        }
    }

    fn attr_of(&self) -> Option<usize> {
        match self {
            Op::Chmod { ino, .. } | Op::Chown { ino, .. } => Some(*ino),
            _ => None,
        }
    }

    /// The directory whose fsync makes this name change durable (the new name's).
    fn name_dir(&self) -> Option<&str> {
        let path = match self {
            Op::Create { path, .. } | Op::Mkdir { path } | Op::Link { path, .. } | Op::Unlink { path } => {
                path
            }
            Op::Rename { to, .. } => to,
            _ => return None,
        };
        Some(parent(path))
    }

    /// Whether `self`, made later, makes `earlier` durable.
    fn makes_durable(&self, earlier: &Op) -> bool {
        match self {
            Op::Sync => true,
            Op::FsyncFile { ino, data_only } => {
                earlier.data_of() == Some(*ino) || (!data_only && earlier.attr_of() == Some(*ino))
            }
            Op::FsyncDir { path } => earlier.name_dir() == Some(path.as_str()),
            _ => false,
        }
    }
}

/// One operation and strace's line for the call it came from.
#[derive(Debug, Clone)]
pub struct Traced {
    pub op: Op,
    pub line: String,
}

/// A record read into operations.
#[derive(Debug, Clone)]
pub struct Record {
    pub ops: Vec<Traced>,
    pub inodes: Vec<Inode>,
    /// The watched paths (as in the record: host paths).
    pub watched: Vec<String>,
    /// The agent's owner for the files it creates.
    pub creator: (u32, u32),
    /// Per op: whether it can change what is at a watched path.
    relevant: Vec<bool>,
    /// The inodes that were ever at a watched path: the only ones materialised.
    reach: BTreeSet<usize>,
    /// Mode each created inode starts with.
    created_mode: BTreeMap<usize, u32>,
}

/// One state a power loss can leave: the power went after the first `at` operations; of those
/// `kept` persisted (indices into `Record::ops`), the writes in `zeroed` left their extent
/// zero-filled, and every other relevant one was lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub at: usize,
    pub kept: Vec<usize>,
    pub zeroed: Vec<usize>,
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => ".",
    }
}

/// Every state a power loss can leave, each once, in the order of the crash points that first
/// reach it; an error past `bound`.
pub fn states(record: &Record, bound: usize) -> Result<Vec<State>, String> {
    let durable_at = durable_at(record);
    let mut seen: HashSet<(Vec<usize>, Vec<usize>)> = HashSet::new();
    let mut out = Vec::new();
    for at in 0..=record.ops.len() {
        if at > 0 && !record.relevant[at - 1] {
            continue;
        }
        for state in states_at(record, &durable_at, at, bound.saturating_sub(out.len()))? {
            if seen.insert((state.kept.clone(), state.zeroed.clone())) {
                out.push(state);
            }
        }
    }
    Ok(out)
}

/// Per operation, the first later one that makes it durable (`usize::MAX`: none).
fn durable_at(record: &Record) -> Vec<usize> {
    let ops = &record.ops;
    (0..ops.len())
        .map(|i| {
            ((i + 1)..ops.len())
                .find(|j| record.relevant[*j] && ops[*j].op.makes_durable(&ops[i].op))
                .unwrap_or(usize::MAX)
        })
        .collect()
}

/// The states a power loss right after the first `at` operations can leave (some may repeat
/// an earlier point's); an error if they are more than `bound`.
fn states_at(record: &Record, durable_at: &[usize], at: usize, bound: usize) -> Result<Vec<State>, String> {
    let ops = &record.ops;
    let mut kept_always = Vec::new();
    let mut names = Vec::new();
    let mut data: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut attrs: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in (0..at).filter(|i| record.relevant[*i]) {
        let op = &ops[i].op;
        // A sync changes no file: it is in no state's identity.
        if matches!(op, Op::FsyncFile { .. } | Op::FsyncDir { .. } | Op::Sync) {
            continue;
        }
        if durable_at[i] < at {
            kept_always.push(i);
        } else if op.is_name() {
            names.push(i);
        } else if let Some(ino) = op.data_of() {
            data.entry(ino).or_default().push(i);
        } else if let Some(ino) = op.attr_of() {
            attrs.entry(ino).or_default().push(i);
        }
    }
    // One dimension per group of ops that persist as a prefix; a choice is (kept, zeroed).
    type Choice = (Vec<usize>, Vec<usize>);
    let prefixes = |list: &[usize]| -> Vec<Choice> {
        (0..=list.len())
            .map(|n| (list[..n].to_vec(), Vec::new()))
            .collect()
    };
    let mut dims: Vec<Vec<Choice>> = vec![prefixes(&names)];
    for list in data.values() {
        let mut choices = prefixes(list);
        for (n, &i) in list.iter().enumerate() {
            if matches!(&ops[i].op, Op::Write { data, .. } if data.iter().any(|b| *b != 0)) {
                choices.push((list[..n].to_vec(), vec![i]));
            }
        }
        dims.push(choices);
    }
    for list in attrs.values() {
        dims.push(prefixes(list));
    }
    let total: usize = dims.iter().map(Vec::len).product();
    if total > bound {
        let after = at
            .checked_sub(1)
            .map(|i| format!("after `{}`", ops[i].line))
            .unwrap_or_else(|| "before the first call".into());
        return Err(format!(
            "a power loss {after} can leave {total} states, more than the {bound} left of the {STATE_BOUND} the model judges in one record: the sync leaves that much unsynced"
        ));
    }
    let mut out = Vec::with_capacity(total);
    let mut index = vec![0usize; dims.len()];
    loop {
        let mut kept = kept_always.clone();
        let mut zeroed = Vec::new();
        for (d, &k) in dims.iter().zip(&index) {
            kept.extend(&d[k].0);
            zeroed.extend(&d[k].1);
        }
        kept.sort_unstable();
        zeroed.sort_unstable();
        out.push(State { at, kept, zeroed });
        // The next choice, as a mixed-radix counter.
        let mut d = 0;
        while d < dims.len() {
            index[d] += 1;
            if index[d] < dims[d].len() {
                break;
            }
            index[d] = 0;
            d += 1;
        }
        if d == dims.len() {
            return Ok(out);
        }
    }
}

impl Record {
    /// The state with every call persisted: what the node had once the record ended.
    pub fn whole(&self) -> State {
        State {
            at: self.ops.len(),
            kept: (0..self.ops.len())
                .filter(|i| {
                    self.relevant[*i]
                        && !matches!(
                            self.ops[*i].op,
                            Op::FsyncFile { .. } | Op::FsyncDir { .. } | Op::Sync
                        )
                })
                .collect(),
            zeroed: Vec::new(),
        }
    }

    /// The relevant calls before the loss that did not persist (strace's lines), and those
    /// whose extent was left zero-filled.
    pub fn lost(&self, state: &State) -> (Vec<&str>, Vec<&str>) {
        let lost = (0..state.at)
            .filter(|i| {
                self.relevant[*i]
                    && !matches!(
                        self.ops[*i].op,
                        Op::FsyncFile { .. } | Op::FsyncDir { .. } | Op::Sync
                    )
                    && !state.kept.contains(i)
                    && !state.zeroed.contains(i)
            })
            .map(|i| self.ops[i].line.as_str())
            .collect();
        let zeroed = state.zeroed.iter().map(|i| self.ops[*i].line.as_str()).collect();
        (lost, zeroed)
    }

    /// How many calls the record replays, and how many of them can change a watched file.
    pub fn counts(&self) -> (usize, usize) {
        (self.ops.len(), self.relevant.iter().filter(|r| **r).count())
    }
}

#[cfg(test)]
mod tests;
