//! A VFS instance: the fast-path configuration and the allocator of file
//! objects. Processes are created against one; the namespace (mounts,
//! caches) will live here too.

use crate::errno::Errno;
use crate::fastpaths::FastPaths;
use crate::file::{self, FileRef};
use crate::pool::FilePool;
use std::sync::Arc;

/// One VFS: what the kernel is to its processes.
#[derive(Debug)]
pub struct Vfs {
    fast: FastPaths,
    pool: &'static FilePool,
}

impl Vfs {
    /// A VFS running the given fast paths.
    pub fn new(fast: FastPaths) -> Arc<Vfs> {
        Arc::new(Vfs {
            fast,
            pool: FilePool::global(),
        })
    }

    /// The fast paths this instance runs.
    pub fn fastpaths(&self) -> &FastPaths {
        &self.fast
    }

    /// The type-stable file pool (used when `typesafe_files` is on).
    pub fn file_pool(&self) -> &'static FilePool {
        self.pool
    }

    /// `alloc_empty_file`: a fresh file object with one reference, from the
    /// pool or the heap according to `typesafe_files`.
    pub(crate) fn alloc_file(&self, flags: i32, mode: u32) -> Result<FileRef, Errno> {
        if self.fast.typesafe_files {
            self.pool.alloc(flags, mode)
        } else {
            file::alloc_heap(flags, mode)
        }
    }
}
