//! The rename sequence count and the walk up to the root that reads names
//! under it (`d_path`).
//!
//! # The rename sequence count
//!
//! Linux keeps one `rename_lock` for the whole dentry cache: a sequence
//! count with a lock that serializes its writers (a seqlock). Every move of
//! a dentry (`d_move`, `d_exchange`) happens inside one write section, so
//! a reader that builds a path from many dentries' names and parents, and
//! finds the count even and unchanged afterwards, knows no rename touched
//! any of them meanwhile: the path is one the file really had. Each
//! dentry's own count (`Dentry::seq`) only keeps one dentry's fields
//! together; a path read across several dentries needs this one.
//!
//! uvfs has the same: [`RenameSeq`], one per [`DentryCache`] (which every
//! superblock of a VFS shares, as Linux's one hash), on a cache line of its
//! own so a rename does not disturb the lookups that read the cache's other
//! fields. Its writers are `d_move` and `d_exchange` (same directory or
//! across, so that a name change is covered as much as a parent change):
//! the lock, then the count made odd, the move (unhash, new parent and
//! name, rehash), the count made even, the unlock. A rename's old parent is
//! put after the section.
//!
//! Lock order: a superblock's `rename_lock` (cross-directory renames),
//! then the directories' `dir_lock`s, then (the file system's own locks are
//! all released before the caches are updated) this writer lock, then a
//! `Children` lock, then a bucket lock. The LRU lock may be taken under it
//! (a put by `d_path`'s locked pass); nothing takes this lock while holding
//! any of those.
//!
//! # `d_path`
//!
//! [`DentryCache::d_path`] walks from a dentry up to a root, collecting
//! names, crossing mounts through the caller's function. It first walks
//! without the lock, inside a read section, at most [`OPTIMISTIC_PASSES`]
//! times (an odd count, a writer in progress, counts as a failed pass
//! without waiting); then it takes the writer lock and walks once more,
//! with no rename possible (Linux's `read_seqbegin_or_lock`: one lockless
//! pass, then the lock). So a directory unhashed for the instant of its
//! move never makes the walk fail, and a walk that read some names before
//! a rename and some after never returns the mix. A dentry really unhashed
//! (unlinked, removed, renamed over) while the count stood still gives
//! `ENOENT`, as before. (Linux gets the first half differently: its
//! `__d_move` unhashes without marking the dentry unhashed, so its
//! `getcwd`'s `d_unlinked` check never sees a moving dentry; the result is
//! the same.)

use super::*;
use crate::errno::Errno;

/// Lockless passes of [`DentryCache::d_path`] before it takes the writer
/// lock.
pub(crate) const OPTIMISTIC_PASSES: u32 = 2;

/// The rename sequence count and its writers' lock (Linux's
/// `rename_lock`).
pub(super) struct RenameSeq {
    /// Odd while a move is in progress.
    seq: AtomicU32,
    /// Serializes the writers (two moves in different directories hold
    /// no common directory lock).
    lock: Mutex<()>,
}

/// A write section of the rename count: the writer lock held and the
/// count odd, until dropped.
pub(super) struct RenameWrite<'a> {
    seq: &'a AtomicU32,
    _lock: MutexGuard<'a, ()>,
}

impl Drop for RenameWrite<'_> {
    fn drop(&mut self) {
        // The section's stores happen before a reader's acquire load that
        // sees the even count. (The guard unlocks after this.)
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Release);
    }
}

impl RenameSeq {
    pub(super) fn new() -> RenameSeq {
        RenameSeq {
            seq: AtomicU32::new(0),
            lock: Mutex::new(()),
        }
    }

    /// Opens a write section: the lock, then the count odd before any of
    /// the section's stores (the release fence orders them after it, for a
    /// reader whose acquire fence follows a load of one of them).
    pub(super) fn write(&self) -> RenameWrite<'_> {
        let g = lock(&self.lock);
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        RenameWrite {
            seq: &self.seq,
            _lock: g,
        }
    }

    /// The count at the start of a read section; `None` while a writer is
    /// in progress.
    fn read_begin(&self) -> Option<u32> {
        let s = self.seq.load(Ordering::Acquire);
        (s & 1 == 0).then_some(s)
    }

    /// Whether the count is still `s`: no move began since `read_begin`.
    fn read_valid(&self, s: u32) -> bool {
        fence(Ordering::Acquire);
        self.seq.load(Ordering::Relaxed) == s
    }
}

impl DentryCache {
    /// Opens a write section of the rename count (see the module).
    pub(super) fn rename_write(&self) -> RenameWrite<'_> {
        self.rename.write()
    }

    /// The absolute path of `d` (`d_path`) and whether the walk met `root`
    /// (else it ran to the top: the path is from there). At a superblock's
    /// root, `up` gives the directory it is mounted on (with a reference),
    /// or `None` at the top. `ENOENT` if `d`, or a directory above it, is
    /// out of the hash while no rename is in progress (removed).
    pub(crate) fn d_path(
        &self,
        d: &DentryRef,
        root: &DentryRef,
        up: impl FnMut(&DentryRef) -> Option<DentryRef>,
    ) -> Result<(Vec<u8>, bool), Errno> {
        self.d_path_passes(d, root, up, OPTIMISTIC_PASSES)
    }

    /// [`d_path`](Self::d_path) with `passes` lockless passes before the
    /// locked one (the models choose 0 or 1).
    pub(crate) fn d_path_passes(
        &self,
        d: &DentryRef,
        root: &DentryRef,
        mut up: impl FnMut(&DentryRef) -> Option<DentryRef>,
        passes: u32,
    ) -> Result<(Vec<u8>, bool), Errno> {
        for _ in 0..passes {
            let Some(s) = self.rename.read_begin() else {
                continue;
            };
            let r = walk_up(d, root, &mut up);
            if self.rename.read_valid(s) {
                return r;
            }
        }
        let _g = lock(&self.rename.lock);
        walk_up(d, root, &mut up)
    }
}

/// One pass of `d_path` with no rename count (the loom twin that must
/// fail: how `d_path` walked before the count).
#[cfg(all(test, loom))]
pub(crate) fn d_path_unsynced(d: &DentryRef, root: &DentryRef) -> Result<(Vec<u8>, bool), Errno> {
    walk_up(d, root, &mut |_| None)
}

/// One pass of `d_path`: the names from `d` up to `root` or the top.
fn walk_up(
    d: &DentryRef,
    root: &DentryRef,
    up: &mut impl FnMut(&DentryRef) -> Option<DentryRef>,
) -> Result<(Vec<u8>, bool), Errno> {
    let mut parts: Vec<Vec<u8>> = Vec::new();
    let mut cur = d.clone();
    let mut reached = false;
    loop {
        if DentryRef::ptr_eq(&cur, root) {
            reached = true;
            break;
        }
        match cur.parent() {
            Some(p) => {
                // Out of the hash and not a root: removed, or (caught by the
                // count) moving.
                if !cur.is_hashed() {
                    return Err(Errno::ENOENT);
                }
                parts.push(cur.name());
                cur = p;
            }
            None => match up(&cur) {
                // At a mounted root: on to the directory it sits on,
                // whose name comes next.
                Some(mp) => cur = mp,
                None => break,
            },
        }
    }
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum::<usize>().max(1));
    for p in parts.iter().rev() {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    Ok((out, reached))
}
