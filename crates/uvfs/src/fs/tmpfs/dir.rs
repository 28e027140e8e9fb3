//! Directories: the entries of one directory by name, in listing order and
//! by offset (the stable `d_off` cookies of Linux's `simple_offset`
//! directories in `fs/libfs.c`), name lookup, and readdir.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{DIR_OFFSET_EOD, NAME_MAX};
use crate::errno::Errno;
use crate::fs::Ino;

/// Cookie meaning "first real entry" (`DIR_OFFSET_FIRST`).
pub(super) const DIR_OFFSET_FIRST: u64 = 2;
/// Lowest offset given to an entry (`DIR_OFFSET_MIN`).
pub(super) const DIR_OFFSET_MIN: u64 = 3;
/// Readdir snapshots this many entries per lock hold.
pub(super) const READDIR_BATCH: usize = 128;

/// A directory entry as stored. Its name is one allocation shared with the
/// by-name index's key (a short name: one 32-byte heap chunk instead of
/// two).
#[derive(Clone)]
pub(super) struct Slot {
    pub(super) name: Arc<[u8]>,
    pub(super) ino: Ino,
    pub(super) ftype: u32,
    pub(super) offset: u64,
}

/// A directory's entries: by name, in listing order (by position sequence,
/// larger = nearer the head) and by offset (cookie).
#[derive(Default)]
pub(super) struct Dir {
    pub(super) names: BTreeMap<Arc<[u8]>, u64>,
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

    /// [`alloc_offset`](Self::alloc_offset) with `taken` counted as used
    /// too: a second offset allocated before the first is inserted (a
    /// rename's whiteout and the new name, in one directory).
    pub(super) fn alloc_offset_besides(
        &mut self,
        max: u64,
        taken: Option<u64>,
    ) -> Result<u64, Errno> {
        let Some(t) = taken.filter(|t| !self.offsets.contains_key(t)) else {
            return self.alloc_offset(max);
        };
        self.offsets.insert(t, u64::MAX);
        let r = self.alloc_offset(max);
        self.offsets.remove(&t);
        r
    }

    /// Inserts at the head of the listing with the given offset.
    pub(super) fn insert(&mut self, name: &[u8], ino: Ino, ftype: u32, offset: u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let name: Arc<[u8]> = name.into();
        self.names.insert(Arc::clone(&name), seq);
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
    pub(super) fn resume_seq(&self, pos: u64) -> Option<u64> {
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
    pub(super) fn next_cookie_after(&self, seq: u64) -> u64 {
        self.order
            .range(..seq)
            .next_back()
            .map_or(DIR_OFFSET_EOD, |(_, s)| s.offset)
    }

    pub(super) fn head_cookie(&self) -> u64 {
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
