//! The inode table: every inode by number, in [`SHARDS`] shards
//! (`RwLock<HashMap>` each). It is kept where something still reaches
//! inodes by number: with `FastPaths::tmpfs_borrow` off (the stock side),
//! in the disk-like mode (a `VfsBuilder` with small caches, seed 002's
//! fstree experiment) and in every tmpfs made by [`Tmpfs::new`] (the FUSE
//! server and the trait's callers speak in numbers). The root tmpfs of a
//! `VfsBuilder` with `tmpfs_borrow` on has none (Linux's tmpfs has no such
//! table either): an inode is reached through its directory entry, the
//! VFS's cached inode or the root, and a call by number answers `ESTALE`
//! (the root's number excepted).

use std::collections::HashMap;
use std::sync::Arc;
#[cfg(test)]
use std::sync::atomic::Ordering;

use super::inode::{Inode, Locked, wr};
use super::{Held, ROOT_INO, SHARDS, Tmpfs};
use crate::errno::Errno;
use crate::fs::{Attr, Ino};
use crate::primitive::sync::UnmodelledRwLock;

/// One shard of the inode table.
/// Each on its own cache lines, so threads working in different shards do
/// not bounce one line between them.
pub(super) type Shard =
    crossbeam_utils::CachePadded<UnmodelledRwLock<HashMap<Ino, Arc<Inode>, InoHash>>>;

/// Hashes an inode number with one multiply, folding the high half down so
/// the low bits (which pick the bucket) depend on every bit: inode numbers
/// in one shard share their low bits.
#[derive(Clone, Copy, Default)]
pub(super) struct InoHasher(u64);

impl std::hash::Hasher for InoHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        let h = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 32);
    }
}

type InoHash = std::hash::BuildHasherDefault<InoHasher>;

/// A table of [`SHARDS`] empty shards.
pub(super) fn new_shards() -> Box<[Shard]> {
    (0..SHARDS)
        .map(|_| crossbeam_utils::CachePadded::new(UnmodelledRwLock::new(HashMap::default())))
        .collect()
}

impl Tmpfs {
    /// The shard of the inode table that holds `ino`.
    fn shard(&self, ino: Ino) -> &Shard {
        &self.shards[(ino % SHARDS as u64) as usize]
    }

    /// Whether this tmpfs keeps its inode table (see the module docs).
    #[inline]
    pub(super) fn has_table(&self) -> bool {
        self.table
    }

    /// Inode `ino`; `ESTALE` once it is evicted. Without a table: the
    /// root, and `ESTALE` for every other number.
    pub(super) fn get(&self, ino: Ino) -> Result<Arc<Inode>, Errno> {
        if !self.table {
            return if ino == ROOT_INO {
                Ok(self.root.clone())
            } else {
                Err(Errno::ESTALE)
            };
        }
        #[cfg(test)]
        if self.borrow {
            self.searches.fetch_add(1, Ordering::Relaxed);
        }
        let map = self.shard(ino).read().unwrap_or_else(|e| e.into_inner());
        map.get(&ino).cloned().ok_or(Errno::ESTALE)
    }

    /// Runs `f` on inode `ino` under its shard's read lock, without taking
    /// a reference to the inode (two atomic read-modify-writes fewer than
    /// [`get`](Tmpfs::get)); `None` if the switch is off, there is no
    /// table, or the inode is not in the table (the caller then takes the
    /// [`get`](Tmpfs::get) path, which reports `ESTALE`).
    ///
    /// `f` must not wait for an inode's state lock (it may try one): a
    /// thread that holds one may wait for a shard's write lock (an insert
    /// or removal under a directory's lock), so waiting for it while
    /// holding a shard's read lock could deadlock. (A leaf lock, one whose
    /// holder waits for nothing, such as the page pool's, is safe.) It must
    /// not touch the inode table either (a second read lock of the same
    /// shard can wait behind a queued writer), and must be short: it
    /// delays the shard's writers.
    #[inline]
    pub(super) fn with_inode<R>(&self, ino: Ino, f: impl FnOnce(&Inode) -> Option<R>) -> Option<R> {
        if !self.borrow || !self.table {
            return None;
        }
        #[cfg(test)]
        self.searches.fetch_add(1, Ordering::Relaxed);
        let map = self.shard(ino).read().unwrap_or_else(|e| e.into_inner());
        f(map.get(&ino)?)
    }

    /// Enters a new inode in the table (nothing without one: no shard
    /// lock).
    pub(super) fn table_insert(&self, i: &Arc<Inode>) {
        if self.table {
            #[cfg(test)]
            self.table_writes.fetch_add(1, Ordering::Relaxed);
            self.shard(i.ino)
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(i.ino, i.clone());
        }
    }

    /// Takes inode `ino` out of the table: the table's reference (`None`
    /// without a table).
    pub(super) fn table_remove(&self, ino: Ino) -> Option<Arc<Inode>> {
        if !self.table {
            return None;
        }
        #[cfg(test)]
        self.table_writes.fetch_add(1, Ordering::Relaxed);
        self.shard(ino)
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ino)
    }

    /// Lets go of a reference to an inode that may have lost its last
    /// name: a removed entry's, or one taken from an entry before the name
    /// went (a lookup, an unlink or a rename that looks again). With the
    /// table a plain drop: the table holds every inode until its
    /// eviction. Without it this may be the last reference: then, if no
    /// eviction gave the inode back (no cached inode held it: a name
    /// removed by a caller with no object of it, such as tmpfs's callers
    /// by number; the VFS passes an unlink's victim and holds a rename's
    /// target, and their eviction gives them back), it is given back here
    /// and freed. Of several holders letting go at once exactly one gets
    /// the inode (`Arc::into_inner`), **provided every holder lets go
    /// through here**: a reference of tmpfs's own (taken from an entry,
    /// a parent, a new inode's, the walk of `fsck`) dropped plainly may be
    /// the last once the caller's locks are gone (another caller removes
    /// the name meanwhile and its `put` sees this one still held), and
    /// the inode is then freed without being given back: an orphan and an
    /// inode count leaked. Rename did so until 2026-11-29 (its references
    /// to the source and target dropped after the locks); the model
    /// `table::loom_tests` shows the rule and the twin that breaks it.
    /// Objects the VFS holds need not: the VFS holds them for the call,
    /// and its eviction gives an unlinked inode back under its lock.
    ///
    /// One way round this is left, outside the VFS: an eviction of a
    /// cached inode while its inode is still linked drops its reference
    /// after a grace period (`drop_inode`); if a caller by number removes
    /// the last name within that period, its `put` is not the last and
    /// the deferred drop is. The VFS never removes a name without holding
    /// an object of its inode, whose eviction gives it back.
    ///
    /// Freed at once, not after a grace period: a reader without a
    /// reference (`getattr_pinned`) reached the inode through a cached
    /// inode's object, whose reference is dropped after a grace period
    /// (`drop_inode`) and so outlives every such reader; while it waits,
    /// this is not the last reference.
    pub(super) fn put(&self, i: Arc<Inode>) {
        if self.table {
            drop(i);
            return;
        }
        let Some(inode) = Arc::into_inner(i) else {
            return;
        };
        let mut st = wr(&inode);
        if st.nlink() == 0 && !st.given_back() && inode.ino != ROOT_INO {
            self.give_back(&inode, &mut st);
        }
    }

    /// [`put`](Tmpfs::put) of the reference a call by number made or
    /// found, returning the attributes it answers with: the name may be
    /// gone meanwhile (another caller's unlink), its inode with it.
    pub(super) fn put_attr(&self, a: Attr, i: Arc<Inode>) -> Attr {
        self.put(i);
        a
    }

    /// [`put`](Tmpfs::put) of each of `refs`.
    pub(super) fn put_all(&self, refs: impl IntoIterator<Item = Arc<Inode>>) {
        refs.into_iter().for_each(|i| self.put(i));
    }

    /// [`put`](Tmpfs::put) of a reference of our own; nothing for one
    /// borrowed from the VFS.
    pub(super) fn put_held(&self, h: Held<'_>) {
        if let Held::Owned(i) = h {
            self.put(i);
        }
    }

    /// Every inode in the table (for `fsck`; empty without a table).
    pub(super) fn table_inodes(&self) -> Vec<Arc<Inode>> {
        if !self.table {
            return Vec::new();
        }
        let mut all = Vec::new();
        for s in self.shards.iter() {
            all.extend(
                s.read()
                    .unwrap_or_else(|e| e.into_inner())
                    .values()
                    .cloned(),
            );
        }
        all
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
