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

use super::inode::Inode;
use super::{ROOT_INO, SHARDS, Tmpfs};
use crate::errno::Errno;
use crate::fs::Ino;
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

    /// Enters a new inode in the table (still filled without lookups by
    /// number: its references keep every inode until its eviction).
    pub(super) fn table_insert(&self, i: &Arc<Inode>) {
        self.shard(i.ino)
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(i.ino, i.clone());
    }

    /// Takes inode `ino` out of the table: the table's reference.
    pub(super) fn table_remove(&self, ino: Ino) -> Option<Arc<Inode>> {
        self.shard(ino)
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ino)
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
