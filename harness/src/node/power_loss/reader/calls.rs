//! The calls that change files, one method each: what a call of strace's record does to the
//! names, inodes and bytes the reader follows, as operations of the model.

use super::Reader;
use crate::node::crash::{Call, is_device};
use crate::node::power_loss::Op;
use crate::node::power_loss::strace_args::{Arg, iov_bytes, normalise, str_arg};

impl Reader<'_> {
    /// `open`, `openat`, `creat`: a new inode for a created file, a truncation, the descriptor's offset.
    pub(super) fn on_open(&mut self, call: &Call, args: &[Arg], ret: &Option<Arg>) -> Result<(), String> {
        let num = |a: &Arg| a.number();
        let bad = |what: &str| format!("cannot read {what} in `{}`", call.line);
        let (dirfd, path, flags, mode) = match call.syscall.as_str() {
            "openat" => (args.first(), args.get(1), args.get(2), args.get(3)),
            "creat" => (None, args.first(), None, args.get(1)),
            _ => (None, args.first(), args.get(1), args.get(2)),
        };
        let flags = match (call.syscall.as_str(), flags) {
            ("creat", _) => "O_WRONLY|O_CREAT|O_TRUNC".to_string(),
            (_, Some(Arg::Other(f))) => f.clone(),
            _ => String::new(),
        };
        let Some(Arg::Str(path, _)) = path else {
            return Err(bad("the path"));
        };
        let path = self.absolute(dirfd, path)?;
        let writes = ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
            .iter()
            .any(|f| flags.contains(f));
        let Some(Arg::Fd { fd, .. }) = ret else {
            return Ok(());
        };
        if !writes || is_device(&path) {
            // A read-only descriptor still has an offset (a copy's source reads from it).
            if let Some(ino) = self.names.get(&path).copied() {
                self.positions.insert((*fd, ino), (0, false));
                self.last_fd.insert(*fd, ino);
            }
            return Ok(());
        }
        let existing = if flags.contains("O_EXCL") {
            None
        } else {
            self.resolve(&path, !flags.contains("O_CREAT"))
        };
        let ino = match existing {
            Some(ino) => ino,
            None => {
                let mode = mode.and_then(num).unwrap_or(0o666) as u32;
                let ino = self.new_inode(&path, mode);
                self.push(
                    Op::Create {
                        path: path.clone(),
                        ino,
                    },
                    call,
                );
                ino
            }
        };
        if flags.contains("O_TRUNC") && existing.is_some() {
            self.truncate(ino, 0, call);
        }
        self.positions.insert((*fd, ino), (0, flags.contains("O_APPEND")));
        self.last_fd.insert(*fd, ino);
        Ok(())
    }

    /// `write` and its vectored and positioned kin: the bytes, at the descriptor's offset or the one given.
    pub(super) fn on_write(&mut self, call: &Call, args: &[Arg], ret: &Option<Arg>) -> Result<(), String> {
        let num = |a: &Arg| a.number();
        let bad = |what: &str| format!("cannot read {what} in `{}`", call.line);
        let Some((fd, ino)) = args.first().and_then(|a| self.fd_inode(a)) else {
            return Ok(());
        };
        let written = ret.as_ref().and_then(num).ok_or_else(|| bad("the result"))? as usize;
        let mut data = match call.syscall.as_str() {
            "write" | "pwrite64" => match args.get(1) {
                Some(Arg::Str(bytes, false)) => bytes.clone(),
                _ => return Err(bad("the bytes written (truncated?)")),
            },
            _ => iov_bytes(args.get(1)).ok_or_else(|| bad("the bytes written (truncated?)"))?,
        };
        data.truncate(written);
        let offset = match call.syscall.as_str() {
            "pwrite64" => args.get(3).and_then(num).ok_or_else(|| bad("the offset"))?,
            "pwritev" | "pwritev2" => args.get(3).and_then(num).ok_or_else(|| bad("the offset"))?,
            _ => self.advance(fd, ino, written as u64),
        };
        self.write_at(ino, offset, data, call);
        Ok(())
    }

    /// `copy_file_range` and `sendfile` between offsets the record followed: the bytes copied; otherwise an unmodelled change of the destination.
    pub(super) fn on_copy(&mut self, call: &Call, args: &[Arg], ret: &Option<Arg>) -> Result<(), String> {
        let num = |a: &Arg| a.number();
        let bad = |what: &str| format!("cannot read {what} in `{}`", call.line);
        let (src, src_off, dst, dst_off) = if call.syscall == "sendfile" {
            (args.get(1), args.get(2), args.first(), None)
        } else {
            (args.first(), args.get(1), args.get(2), args.get(3))
        };
        let (Some(src), Some(dst)) = (
            src.and_then(|a| self.fd_inode(a)),
            dst.and_then(|a| self.fd_inode(a)),
        ) else {
            return Ok(());
        };
        let null = |a: Option<&Arg>| a.is_none_or(|a| matches!(a, Arg::Other(s) if s == "NULL"));
        let copied = ret.as_ref().and_then(num).ok_or_else(|| bad("the result"))?;
        let data = if null(src_off) && null(dst_off) {
            self.read_from(src.0, src.1, copied)
        } else {
            None
        };
        match data {
            Some(data) => {
                let offset = self.advance(dst.0, dst.1, copied);
                self.write_at(dst.1, offset, data, call);
            }
            None => self.push(
                Op::Unmodelled {
                    inos: vec![dst.1],
                    paths: Vec::new(),
                },
                call,
            ),
        }
        Ok(())
    }

    /// `rename`, `renameat`, `renameat2` (`RENAME_EXCHANGE` too): the inode moves to its new name.
    pub(super) fn on_rename(&mut self, call: &Call, args: &[Arg]) -> Result<(), String> {
        let (from, to) = if call.syscall == "rename" {
            (
                self.absolute(None, str_arg(args.first())?)?,
                self.absolute(None, str_arg(args.get(1))?)?,
            )
        } else {
            let from = self.absolute(args.first(), str_arg(args.get(1))?)?;
            (from, self.absolute(args.get(2), str_arg(args.get(3))?)?)
        };
        let exchange = args
            .get(4)
            .is_some_and(|a| matches!(a, Arg::Other(f) if f.contains("RENAME_EXCHANGE")));
        let Some(ino) = self.resolve(&from, true) else {
            return Err(format!(
                "`{}` renames {from}, which the record never saw made",
                call.line
            ));
        };
        let exchanged = if exchange { self.resolve(&to, true) } else { None };
        self.names.remove(&from);
        self.gone.insert(from.clone());
        if let Some(other) = exchanged {
            self.names.insert(from.clone(), other);
            self.gone.remove(&from);
        }
        self.names.insert(to.clone(), ino);
        self.gone.remove(&to);
        self.push(
            Op::Rename {
                from,
                to,
                ino,
                exchanged,
            },
            call,
        );
        Ok(())
    }

    /// `link`, `linkat`: a second name for the inode.
    pub(super) fn on_link(&mut self, call: &Call, args: &[Arg]) -> Result<(), String> {
        let (from, to) = if call.syscall == "link" {
            (
                self.absolute(None, str_arg(args.first())?)?,
                self.absolute(None, str_arg(args.get(1))?)?,
            )
        } else {
            let from = self.absolute(args.first(), str_arg(args.get(1))?)?;
            (from, self.absolute(args.get(2), str_arg(args.get(3))?)?)
        };
        if let Some(ino) = self.resolve(&from, true) {
            self.names.insert(to.clone(), ino);
            self.gone.remove(&to);
            self.push(Op::Link { path: to, ino }, call);
        }
        Ok(())
    }

    /// `chmod`, `fchmod`, `fchmodat`.
    pub(super) fn on_chmod(&mut self, call: &Call, args: &[Arg]) -> Result<(), String> {
        let num = |a: &Arg| a.number();
        let bad = |what: &str| format!("cannot read {what} in `{}`", call.line);
        let (ino, mode) = match call.syscall.as_str() {
            "fchmod" => (
                args.first().and_then(|a| self.fd_inode(a)).map(|x| x.1),
                args.get(1),
            ),
            "chmod" => {
                let path = self.absolute(None, str_arg(args.first())?)?;
                (self.resolve(&path, true), args.get(1))
            }
            _ => {
                let path = self.absolute(args.first(), str_arg(args.get(1))?)?;
                (self.resolve(&path, true), args.get(2))
            }
        };
        if let Some(ino) = ino {
            let mode = mode.and_then(num).ok_or_else(|| bad("the mode"))? as u32;
            self.push(Op::Chmod { ino, mode }, call);
        }
        Ok(())
    }

    /// `chown`, `lchown`, `fchown`, `fchownat` (-1 keeps an id).
    pub(super) fn on_chown(&mut self, call: &Call, args: &[Arg]) -> Result<(), String> {
        let (ino, rest) = match call.syscall.as_str() {
            "fchown" => (args.first().and_then(|a| self.fd_inode(a)).map(|x| x.1), 1),
            "fchownat" => {
                let path = self.absolute(args.first(), str_arg(args.get(1))?)?;
                (self.resolve(&path, true), 2)
            }
            _ => {
                let path = self.absolute(None, str_arg(args.first())?)?;
                (self.resolve(&path, true), 1)
            }
        };
        if let Some(ino) = ino {
            let id = |a: Option<&Arg>| a.and_then(|a| a.signed()).filter(|v| *v >= 0).map(|v| v as u32);
            let (uid, gid) = (id(args.get(rest)), id(args.get(rest + 1)));
            self.push(Op::Chown { ino, uid, gid }, call);
        }
        Ok(())
    }

    /// `fsync`, `fdatasync`: of a file (the inode behind the descriptor) or of a directory (the names in it).
    pub(super) fn on_fsync(&mut self, call: &Call, args: &[Arg]) -> Result<(), String> {
        let Some(Arg::Fd { path: Some(path), .. }) = args.first() else {
            return Ok(());
        };
        if !path.starts_with('/') || is_device(path) {
            return Ok(());
        }
        let path = path.clone();
        let data_only = call.syscall == "fdatasync";
        // A directory is a path the record never saw as a file: its fsync persists the
        // names in it.
        match self.names.get(&path).copied() {
            Some(ino) => self.push(Op::FsyncFile { ino, data_only }, call),
            None if self.watched.contains_key(&path) => {
                if let Some(ino) = self.resolve(&path, true) {
                    self.push(Op::FsyncFile { ino, data_only }, call);
                }
            }
            None => self.push(Op::FsyncDir { path }, call),
        }
        Ok(())
    }

    /// A call that changes files the model does not replay (`fallocate`, `symlink`, …): an error later if a watched file needs it.
    pub(super) fn on_unmodelled(&mut self, call: &Call, args: &[Arg]) -> Result<(), String> {
        let mut inos = Vec::new();
        let mut paths = Vec::new();
        for arg in args {
            match arg {
                Arg::Fd { .. } => inos.extend(self.fd_inode(arg).map(|x| x.1)),
                Arg::Str(p, _) => paths.push(normalise(&String::from_utf8_lossy(p))),
                _ => {}
            }
        }
        self.push(Op::Unmodelled { inos, paths }, call);
        Ok(())
    }
}
