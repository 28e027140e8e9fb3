//! Directories: the entries of one directory by name, in listing order and
//! by offset (the stable `d_off` cookies of Linux's `simple_offset`
//! directories in `fs/libfs.c`), name lookup, and readdir.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::inode::{Inode, rd};
use super::{DIR_OFFSET_EOD, NAME_MAX, Tmpfs};
use crate::errno::Errno;
use crate::fs::{Attr, DirEntry, Ino, S_IFDIR};

/// Cookie meaning "first real entry" (`DIR_OFFSET_FIRST`).
const DIR_OFFSET_FIRST: u64 = 2;
/// Lowest offset given to an entry (`DIR_OFFSET_MIN`).
pub(super) const DIR_OFFSET_MIN: u64 = 3;
/// Readdir snapshots this many entries per lock hold.
const READDIR_BATCH: usize = 128;

/// A directory entry as stored.
#[derive(Clone)]
pub(super) struct Slot {
    pub(super) name: Box<[u8]>,
    pub(super) ino: Ino,
    pub(super) ftype: u32,
    pub(super) offset: u64,
}

/// A directory's entries: by name, in listing order (by position sequence,
/// larger = nearer the head) and by offset (cookie).
#[derive(Default)]
pub(super) struct Dir {
    pub(super) names: BTreeMap<Box<[u8]>, u64>,
    pub(super) order: BTreeMap<u64, Slot>,
    pub(super) offsets: BTreeMap<u64, u64>,
    next_offset: u64,
    next_seq: u64,
}

impl Dir {
    pub(super) fn new() -> Dir {
        Dir {
            next_offset: DIR_OFFSET_MIN,
            ..Dir::default()
        }
    }

    pub(super) fn get(&self, name: &[u8]) -> Option<&Slot> {
        self.names.get(name).and_then(|seq| self.order.get(seq))
    }

    pub(super) fn len(&self) -> u64 {
        self.names.len() as u64
    }

    /// Allocates a free offset cyclically in `[DIR_OFFSET_MIN, max]`
    /// (Linux's `mtree_alloc_cyclic`); `ENOSPC` when all are taken.
    pub(super) fn alloc_offset(&mut self, max: u64) -> Result<u64, Errno> {
        if max < DIR_OFFSET_MIN {
            return Err(Errno::ENOSPC);
        }
        let mut start = self.next_offset;
        if !(DIR_OFFSET_MIN..=max).contains(&start) {
            start = DIR_OFFSET_MIN;
        }
        for _ in 0..2 {
            let mut c = start;
            for &o in self.offsets.range(c..=max).map(|(o, _)| o) {
                if o != c {
                    break;
                }
                c += 1;
            }
            if c <= max {
                self.next_offset = c.saturating_add(1);
                return Ok(c);
            }
            start = DIR_OFFSET_MIN;
        }
        Err(Errno::ENOSPC)
    }

    /// Inserts at the head of the listing with the given offset.
    pub(super) fn insert(&mut self, name: &[u8], ino: Ino, ftype: u32, offset: u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let name: Box<[u8]> = name.into();
        self.names.insert(name.clone(), seq);
        self.offsets.insert(offset, seq);
        self.order.insert(
            seq,
            Slot {
                name,
                ino,
                ftype,
                offset,
            },
        );
    }

    pub(super) fn remove(&mut self, name: &[u8]) -> Option<Slot> {
        let seq = self.names.remove(name)?;
        let slot = self.order.remove(&seq)?;
        self.offsets.remove(&slot.offset);
        Some(slot)
    }

    /// Points `name` at another inode and moves it to the head, keeping its
    /// offset (one side of `RENAME_EXCHANGE`).
    pub(super) fn replace_to_head(&mut self, name: &[u8], ino: Ino, ftype: u32) {
        if let Some(slot) = self.remove(name) {
            self.insert(name, ino, ftype, slot.offset);
        }
    }

    /// The listing position (sequence) to resume at for cookie `pos`
    /// (`pos >= DIR_OFFSET_FIRST`); `None`: end of directory.
    fn resume_seq(&self, pos: u64) -> Option<u64> {
        if pos == DIR_OFFSET_FIRST {
            return self.order.keys().next_back().copied();
        }
        // Exactly the end-of-directory cookie: nothing more. Positions past
        // it (lseek allows up to i64::MAX; host) resume like any other, at
        // the largest offset <= pos; larger values are negative as loff_t
        // and unreachable on Linux.
        if pos == DIR_OFFSET_EOD || pos > i64::MAX as u64 {
            return None;
        }
        // Linux: the entry with the largest offset <= pos, then onwards in
        // list order. (None found: Linux restarts at the head; see the
        // module docs for why this ends instead.)
        self.offsets
            .range(DIR_OFFSET_MIN..=pos)
            .next_back()
            .map(|(_, &seq)| seq)
    }

    /// The cookie of the first entry listed strictly after position `seq`.
    fn next_cookie_after(&self, seq: u64) -> u64 {
        self.order
            .range(..seq)
            .next_back()
            .map_or(DIR_OFFSET_EOD, |(_, s)| s.offset)
    }

    fn head_cookie(&self) -> u64 {
        self.order
            .values()
            .next_back()
            .map_or(DIR_OFFSET_EOD, |s| s.offset)
    }
}

/// Validates one path component (the VFS has done so already; this keeps
/// the tree sound whatever the caller passes).
pub(super) fn check_name(name: &[u8]) -> Result<(), Errno> {
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if name.is_empty() {
        return Err(Errno::ENOENT);
    }
    if name == b"." || name == b".." || name.iter().any(|&b| b == b'/' || b == 0) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

impl Tmpfs {
    /// Peeks at `name` in `dir`: the directory and the child's number.
    pub(super) fn peek(&self, dir: Ino, name: &[u8]) -> Result<(Arc<Inode>, Option<Ino>), Errno> {
        let d = self.get(dir)?;
        let child = rd(&d).dir()?.get(name).map(|s| s.ino);
        Ok((d, child))
    }

    /// Looks `name` up in `dir` (a name whose inode is gone meanwhile is
    /// looked up again).
    pub(super) fn lookup_name(&self, dir: Ino, name: &[u8]) -> Result<Attr, Errno> {
        check_name(name)?;
        loop {
            let (_, child) = self.peek(dir, name)?;
            let child = child.ok_or(Errno::ENOENT)?;
            // The entry may go away between the two locks: retry then.
            if let Ok(c) = self.get(child) {
                let st = rd(&c);
                if st.nlink > 0 {
                    return Ok(Self::attr(child, &st));
                }
            }
        }
    }

    /// Lists `dir` from `cookie`: `.` and `..`, then the entries newest
    /// first, each with the cookie to resume after it.
    pub(super) fn readdir_from(
        &self,
        dir: Ino,
        cookie: u64,
        emit: &mut dyn FnMut(&DirEntry) -> bool,
    ) -> Result<(), Errno> {
        let d = self.get(dir)?;
        let mut pos = cookie;
        // `.` and `..` (dir_emit_dots).
        {
            let st = rd(&d);
            let dd = st.dir()?;
            if st.nlink == 0 {
                // IS_DEADDIR: iterate_dir fails with ENOENT.
                return Err(Errno::ENOENT);
            }
            if pos == 0 {
                let e = DirEntry {
                    ino: dir,
                    file_type: S_IFDIR,
                    name: b".".to_vec(),
                    pos: 0,
                    next: 1,
                };
                if !emit(&e) {
                    return Ok(());
                }
                pos = 1;
            }
            if pos == 1 {
                let parent = d.parent.load(Ordering::Acquire);
                let e = DirEntry {
                    ino: parent,
                    file_type: S_IFDIR,
                    name: b"..".to_vec(),
                    pos: 1,
                    next: dd.head_cookie(),
                };
                if !emit(&e) {
                    return Ok(());
                }
                pos = DIR_OFFSET_FIRST;
            }
        }
        // Entries, a batch per lock hold so `emit` runs unlocked.
        let mut seq = {
            let st = rd(&d);
            match st.dir()?.resume_seq(pos) {
                Some(s) => s,
                None => return Ok(()),
            }
        };
        loop {
            let batch: Vec<DirEntry> = {
                let st = rd(&d);
                let dd = st.dir()?;
                let mut out = Vec::new();
                for (&s, slot) in dd.order.range(..=seq).rev().take(READDIR_BATCH) {
                    out.push(DirEntry {
                        ino: slot.ino,
                        file_type: slot.ftype,
                        name: slot.name.to_vec(),
                        pos: slot.offset,
                        next: dd.next_cookie_after(s),
                    });
                }
                out
            };
            let Some(last) = batch.last() else {
                return Ok(());
            };
            let (last_next, full) = (last.next, batch.len() == READDIR_BATCH);
            for e in &batch {
                if !emit(e) {
                    return Ok(());
                }
            }
            if !full || last_next >= DIR_OFFSET_EOD {
                return Ok(());
            }
            // Resume exactly as a caller holding `last_next` would.
            let st = rd(&d);
            match st.dir()?.resume_seq(last_next) {
                Some(s) => seq = s,
                None => return Ok(()),
            }
        }
    }
}
