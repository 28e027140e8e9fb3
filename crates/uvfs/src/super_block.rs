//! Superblocks (`struct super_block`, fs/super.c): one per mounted file
//! system, holding what the VFS learned of it at mount time (its limits,
//! its device number) and the lock cross-directory renames take; and the
//! table of a VFS's superblocks by id, through which the inode cache's
//! eviction reaches the file system that owns an inode.
//!
//! A superblock knows nothing of the dentry cache above it: dentries point
//! down at their superblock, never the other way round.

use crate::fs::{FileSystem, FsLimits};
use crate::primitive::sync::UnmodelledMutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// A mounted file system instance (`struct super_block`).
pub(crate) struct SuperBlock {
    /// The VFS-wide id (the inode cache's key is (id, inode number)).
    pub(crate) id: u64,
    /// `st_dev`: an anonymous device number, as tmpfs gets (major 0,
    /// minor 40 + id).
    pub(crate) dev: u64,
    pub(crate) fs: Arc<dyn FileSystem>,
    /// What the file system reported at mount (`s_maxbytes`, the name
    /// length, …): generic code reads limits here, never from a particular
    /// file system.
    pub(crate) limits: FsLimits,
    /// Serializes cross-directory renames (`s_vfs_rename_mutex`).
    pub(crate) rename_lock: UnmodelledMutex<()>,
    /// Whether `fs` is a [`Tmpfs`](crate::fs::tmpfs::Tmpfs), found once
    /// here: see [`tmpfs`](Self::tmpfs).
    is_tmpfs: bool,
}

impl SuperBlock {
    fn new(id: u64, fs: Arc<dyn FileSystem>) -> SuperBlock {
        let any: &dyn std::any::Any = &*fs;
        SuperBlock {
            id,
            dev: 40 + id,
            limits: fs.limits(),
            is_tmpfs: any.is::<crate::fs::tmpfs::Tmpfs>(),
            fs,
            rename_lock: UnmodelledMutex::new(()),
        }
    }

    /// The file system as tmpfs, if it is one: what a downcast of `fs`
    /// answers, without its dynamic call per use (the type id came back
    /// through memory from an indirect call, and the compare waited for
    /// it: a tenth of a stat answered by the path cache).
    #[inline]
    pub(crate) fn tmpfs(&self) -> Option<&crate::fs::tmpfs::Tmpfs> {
        if !self.is_tmpfs {
            return None;
        }
        // SAFETY: `is_tmpfs` is the type check of this same `fs`, made
        // when the superblock was built; `fs` is never replaced. So the
        // object behind the pointer is a `Tmpfs`, alive while `self` is.
        Some(unsafe { &*Arc::as_ptr(&self.fs).cast::<crate::fs::tmpfs::Tmpfs>() })
    }
}

impl std::fmt::Debug for SuperBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SuperBlock")
            .field("id", &self.id)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Chunks of the table: chunk `k` holds `FIRST << k` superblocks, so 40
/// chunks hold more mounts than any machine could make.
const CHUNKS: usize = 40;
const FIRST: u64 = 16;

type Chunk = Box<[OnceLock<Arc<SuperBlock>>]>;

/// A VFS's superblocks by id: append-only, read without a lock or a
/// shared write (an inode eviction looks its superblock up here on every
/// miss of a cache-busting walk, seed 002's workload), written only at
/// mount.
pub(crate) struct SuperBlocks {
    chunks: [OnceLock<Chunk>; CHUNKS],
    next: AtomicU64,
}

/// Chunk and index within it of superblock `id`.
/// (An id past the table's reach gives a chunk index past `CHUNKS`.)
fn slot(id: u64) -> (usize, usize) {
    let Some(n) = id.checked_add(FIRST) else {
        return (CHUNKS, 0);
    };
    let k = (63 - n.leading_zeros() as u64) - FIRST.trailing_zeros() as u64;
    (k as usize, (n - (FIRST << k)) as usize)
}

impl SuperBlocks {
    pub(crate) fn new() -> SuperBlocks {
        SuperBlocks {
            chunks: std::array::from_fn(|_| OnceLock::new()),
            next: AtomicU64::new(0),
        }
    }

    /// A new superblock for `fs`, with the next id; `None` once the table
    /// is full.
    pub(crate) fn add(&self, fs: Arc<dyn FileSystem>) -> Option<Arc<SuperBlock>> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (k, i) = slot(id);
        let chunk = self.chunks.get(k)?.get_or_init(|| {
            (0..FIRST << k)
                .map(|_| OnceLock::new())
                .collect::<Vec<_>>()
                .into_boxed_slice()
        });
        let sb = Arc::new(SuperBlock::new(id, fs));
        chunk[i].set(sb.clone()).ok()?;
        Some(sb)
    }

    /// The superblock with this id, if one was added.
    pub(crate) fn get(&self, id: u64) -> Option<&Arc<SuperBlock>> {
        let (k, i) = slot(id);
        self.chunks.get(k)?.get()?.get(i)?.get()
    }
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;
    use crate::fs::tmpfs::Tmpfs;

    #[test]
    fn slots_tile_the_ids() {
        let mut want = (0usize, 0usize);
        for id in 0..10_000u64 {
            assert_eq!(slot(id), want, "id {id}");
            want.1 += 1;
            if want.1 as u64 == FIRST << want.0 {
                want = (want.0 + 1, 0);
            }
        }
    }

    #[test]
    fn added_superblocks_are_found_by_id() {
        let t = SuperBlocks::new();
        let fs = Tmpfs::new(Default::default());
        let ids: Vec<u64> = (0..100).map(|_| t.add(fs.clone()).unwrap().id).collect();
        assert_eq!(ids, (0..100).collect::<Vec<_>>());
        for id in 0..100 {
            assert_eq!(t.get(id).map(|s| s.id), Some(id));
        }
        assert!(t.get(100).is_none());
        assert!(t.get(u64::MAX - FIRST).is_none());
        assert!(t.get(u64::MAX).is_none());
    }
}
