//! A state made real: every inode that was ever at a watched path a file of its own, each name a
//! hard link to it, the state's calls replayed on them in order, and the watched paths read back.

use super::{FileState, Op, Record, State};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

impl Record {
    /// Materialise `state` under `dir` (emptied first): every inode that was ever at a watched
    /// path is a real file, each name a hard link to it, and the state's calls replayed on them
    /// in order; then read back what is at each watched path.
    pub fn materialise(
        &self,
        state: &State,
        dir: &Path,
    ) -> std::io::Result<BTreeMap<String, Option<FileState>>> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        let inodes_dir = dir.join(".inodes");
        std::fs::create_dir_all(&inodes_dir)?;
        let at = |path: &str| -> PathBuf { dir.join("tree").join(path.trim_start_matches('/')) };
        let backing = |ino: usize| inodes_dir.join(ino.to_string());
        let mut owners: BTreeMap<usize, (u32, u32)> = BTreeMap::new();
        let mut real: HashMap<u64, usize> = HashMap::new();
        // The inodes as they were before the record, at their paths.
        for &ino in &self.reach {
            let inode = &self.inodes[ino];
            let file = backing(ino);
            let (contents, mode, owner) = match (&inode.initial, inode.created) {
                (Some(s), _) => (s.contents.as_slice(), s.mode, (s.uid, s.gid)),
                (None, true) => (
                    &[][..],
                    self.created_mode.get(&ino).copied().unwrap_or(0o644),
                    self.creator,
                ),
                (None, false) => (&[][..], 0o644, self.creator),
            };
            std::fs::write(&file, contents)?;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode))?;
            owners.insert(ino, owner);
            real.insert(std::fs::metadata(&file)?.ino(), ino);
            if !inode.created {
                link(&file, &at(&inode.origin))?;
            }
        }
        for &i in &state.kept {
            self.replay(&self.ops[i].op, &at, &backing, &mut owners, false)?;
        }
        for &i in &state.zeroed {
            self.replay(&self.ops[i].op, &at, &backing, &mut owners, true)?;
        }
        let mut out = BTreeMap::new();
        for path in &self.watched {
            let file = at(path);
            let state = match std::fs::symlink_metadata(&file) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e),
                Ok(meta) => {
                    let (uid, gid) = real
                        .get(&meta.ino())
                        .and_then(|ino| owners.get(ino))
                        .copied()
                        .unwrap_or(self.creator);
                    Some(FileState {
                        contents: std::fs::read(&file)?,
                        mode: meta.mode() & 0o7777,
                        uid,
                        gid,
                    })
                }
            };
            out.insert(path.clone(), state);
        }
        std::fs::remove_dir_all(dir)?;
        Ok(out)
    }

    fn replay(
        &self,
        op: &Op,
        at: &dyn Fn(&str) -> PathBuf,
        backing: &dyn Fn(usize) -> PathBuf,
        owners: &mut BTreeMap<usize, (u32, u32)>,
        zeroed: bool,
    ) -> std::io::Result<()> {
        use std::os::unix::fs::{FileExt, PermissionsExt};
        match op {
            Op::Create { path, ino } | Op::Link { path, ino } => link(&backing(*ino), &at(path))?,
            Op::Mkdir { path } => std::fs::create_dir_all(at(path))?,
            Op::Rename {
                from,
                to,
                ino,
                exchanged,
            } => {
                unlink(&at(from))?;
                link(&backing(*ino), &at(to))?;
                if let Some(other) = exchanged {
                    link(&backing(*other), &at(from))?;
                }
            }
            Op::Unlink { path } => unlink(&at(path))?,
            Op::Write { ino, offset, data } => {
                let file = std::fs::OpenOptions::new().write(true).open(backing(*ino))?;
                if zeroed {
                    file.write_all_at(&vec![0; data.len()], *offset)?;
                } else {
                    file.write_all_at(data, *offset)?;
                }
            }
            Op::Truncate { ino, size } => {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(backing(*ino))?
                    .set_len(*size)?;
            }
            Op::Chmod { ino, mode } => {
                std::fs::set_permissions(backing(*ino), std::fs::Permissions::from_mode(*mode & 0o7777))?
            }
            Op::Chown { ino, uid, gid } => {
                let owner = owners.entry(*ino).or_insert(self.creator);
                if let Some(uid) = uid {
                    owner.0 = *uid;
                }
                if let Some(gid) = gid {
                    owner.1 = *gid;
                }
            }
            Op::FsyncFile { .. } | Op::FsyncDir { .. } | Op::Sync | Op::Unmodelled { .. } => {}
        }
        Ok(())
    }
}

/// A name for `file` at `path` (replacing what was there), its directories made as needed.
fn link(file: &Path, path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    unlink(path)?;
    // An inode that never reached a watched path is not materialised: its name stays empty.
    if !file.exists() {
        return Ok(());
    }
    std::fs::hard_link(file, path)
}

fn unlink(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}
