//! A VFS instance: the fast-path configuration, the allocator of file
//! objects, and the namespace: superblocks (one per mounted file system),
//! the dentry and inode caches they share, and the mount table.

use crate::dcache::{self, DentryCache, DentryRef};
use crate::errno::Errno;
use crate::fastpaths::FastPaths;
use crate::file::{self, FileRef};
use crate::fs::tmpfs::{Tmpfs, TmpfsOptions};
use crate::fs::{FileSystem, Ino};
use crate::icache::InodeCache;
use crate::pool::FilePool;
use crate::primitive::{PlainMutex as Mutex, PlainRwLock as RwLock};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The caches every superblock of one VFS shares (Linux has one dentry hash
/// and one inode hash for the whole system). Field order matters: dentries
/// die before the inodes they hold.
pub(crate) struct Caches {
    pub(crate) dcache: DentryCache,
    pub(crate) icache: InodeCache,
}

/// A mounted file system instance (`struct super_block`).
pub(crate) struct SuperBlock {
    pub(crate) id: u64,
    /// `st_dev`: an anonymous device number, as tmpfs gets.
    pub(crate) dev: u64,
    pub(crate) fs: Arc<dyn FileSystem>,
    caches: Arc<Caches>,
    /// Serializes cross-directory renames (`s_vfs_rename_mutex`).
    pub(crate) rename_lock: Mutex<()>,
    /// Where this file system is mounted: the mountpoint in the parent file
    /// system; `None` for the namespace root.
    pub(crate) mountpoint: Mutex<Option<DentryRef>>,
}

impl SuperBlock {
    pub(crate) fn caches(&self) -> &Arc<Caches> {
        &self.caches
    }
}

#[cfg(loom)]
impl SuperBlock {
    /// A superblock over `caches` with no mountpoint, for the loom models of
    /// the dentry cache ([`dcache::loom_api`]).
    pub(crate) fn for_model(
        id: u64,
        caches: Arc<Caches>,
        fs: Arc<dyn FileSystem>,
    ) -> Arc<SuperBlock> {
        Arc::new(SuperBlock {
            id,
            dev: 40 + id,
            fs,
            caches,
            rename_lock: Mutex::new(()),
            mountpoint: Mutex::new(None),
        })
    }
}

impl std::fmt::Debug for SuperBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SuperBlock")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// How a [`Vfs`] is built.
#[derive(Clone, Debug)]
pub struct VfsBuilder {
    fast: FastPaths,
    dcache_limit: usize,
    icache_limit: usize,
    root: TmpfsOptions,
}

impl VfsBuilder {
    /// The fast paths to run (default: [`FastPaths::seeds`]).
    pub fn fastpaths(mut self, fast: FastPaths) -> Self {
        self.fast = fast;
        self
    }

    /// Unused dentries kept beyond those in use (default 1 Mi).
    pub fn dcache_limit(mut self, n: usize) -> Self {
        self.dcache_limit = n;
        self
    }

    /// Unused inodes kept beyond those in use (default 1 Mi).
    pub fn icache_limit(mut self, n: usize) -> Self {
        self.icache_limit = n;
        self
    }

    /// Mount options of the root tmpfs (default: unlimited, mode 0755,
    /// owned by root).
    pub fn root_options(mut self, opts: TmpfsOptions) -> Self {
        self.root = opts;
        self
    }

    /// Builds the VFS with a fresh tmpfs as its root.
    pub fn build(self) -> Arc<Vfs> {
        let opts = self.root;
        Vfs::with_root(self, Tmpfs::new(opts))
    }

    /// Builds the VFS with `fs` as its root file system.
    pub fn build_with_root(self, fs: Arc<dyn FileSystem>) -> Arc<Vfs> {
        Vfs::with_root(self, fs)
    }
}

type FsRegistry = Arc<RwLock<HashMap<u64, Arc<dyn FileSystem>>>>;

/// One VFS: what the kernel is to its processes.
pub struct Vfs {
    fast: FastPaths,
    pool: &'static FilePool,
    caches: Arc<Caches>,
    registry: FsRegistry,
    next_sb: AtomicU64,
    root: DentryRef,
    /// Mounted roots by mountpoint address; the map holds references on
    /// both ends.
    mounts: Mutex<Vec<(DentryRef, DentryRef)>>,
}

impl std::fmt::Debug for Vfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vfs")
            .field("fast", &self.fast)
            .finish_non_exhaustive()
    }
}

impl Vfs {
    /// A VFS running the given fast paths, with a fresh tmpfs (mode 0755,
    /// root's) as `/` and default cache limits.
    pub fn new(fast: FastPaths) -> Arc<Vfs> {
        Vfs::builder().fastpaths(fast).build()
    }

    /// A builder with the defaults.
    pub fn builder() -> VfsBuilder {
        VfsBuilder {
            fast: FastPaths::seeds(),
            // Under loom every atomic is modelled: keep the tables tiny.
            dcache_limit: if cfg!(loom) { 4 } else { 1 << 20 },
            icache_limit: if cfg!(loom) { 4 } else { 1 << 20 },
            root: TmpfsOptions {
                mode: 0o755,
                ..TmpfsOptions::default()
            },
        }
    }

    fn with_root(b: VfsBuilder, fs: Arc<dyn FileSystem>) -> Arc<Vfs> {
        let registry: FsRegistry = Arc::default();
        let reg = registry.clone();
        let icache = InodeCache::new(
            b.icache_limit,
            b.icache_limit
                .clamp(if cfg!(loom) { 2 } else { 64 }, 1 << 22),
            b.fast.icache_lockless,
            move |sb, ino| {
                let fs = reg.read().ok().and_then(|m| m.get(&sb).cloned());
                if let Some(fs) = fs {
                    fs.evict(ino);
                }
            },
        );
        let caches = Arc::new(Caches {
            dcache: DentryCache::new(b.dcache_limit),
            icache,
        });
        let next_sb = AtomicU64::new(0);
        let root = new_sb(&caches, &registry, &next_sb, fs)
            .expect("the root file system has a root inode");
        Arc::new(Vfs {
            fast: b.fast,
            pool: FilePool::global(),
            caches,
            registry,
            next_sb,
            root,
            mounts: Mutex::new(Vec::new()),
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

    /// The namespace root, `/`.
    pub(crate) fn root(&self) -> &DentryRef {
        &self.root
    }

    pub(crate) fn caches(&self) -> &Caches {
        &self.caches
    }

    /// Dentries alive in the dentry cache.
    pub fn dcache_len(&self) -> usize {
        self.caches.dcache.len()
    }

    /// Inodes in the inode cache.
    pub fn icache_len(&self) -> usize {
        self.caches.icache.len()
    }

    /// Drops every unused dentry (and so the inodes only they held), as
    /// `echo 2 > /proc/sys/vm/drop_caches` does.
    pub fn drop_caches(&self) {
        while self.caches.dcache.shrink(usize::MAX) > 0 {}
        self.caches.icache.shrink_to(0);
    }

    /// Checks, while no process uses the VFS, that the dentry cache agrees
    /// with the file systems and that every reference is accounted for:
    /// each hashed positive dentry names the inode its file system has under
    /// that name, each negative one a name the file system does not have;
    /// each dentry's count equals its live children plus the references the
    /// VFS itself holds (the root, mounts); no unhashed dentry is alive
    /// beyond the superblock roots (none leaked: in particular no removed
    /// directory kept by cached children, which its rmdir prunes); and
    /// every hashed dentry is on its parent's child list, at its slot, and
    /// no removed directory has one. For tests.
    #[doc(hidden)]
    pub fn check_consistency(&self) -> Result<(), String> {
        use std::collections::HashMap;
        let seen = self.caches.dcache.hashed();
        let mut children: HashMap<*const crate::dcache::Dentry, usize> = HashMap::new();
        for d in &seen {
            *children.entry(d.parent).or_default() += 1;
        }
        let mut extra: HashMap<*const crate::dcache::Dentry, usize> = HashMap::new();
        *extra.entry(self.root.as_ptr().as_ptr()).or_default() += 1;
        let mounts = crate::primitive::std_lock(&self.mounts);
        for (mp, root) in mounts.iter() {
            *extra.entry(mp.as_ptr().as_ptr()).or_default() += 2;
            *extra.entry(root.as_ptr().as_ptr()).or_default() += 1;
        }
        let registry = self.registry.read().map_err(|_| "registry poisoned")?;
        for d in &seen {
            let want = children.get(&d.ptr).copied().unwrap_or(0)
                + extra.get(&d.ptr).copied().unwrap_or(0);
            let name = String::from_utf8_lossy(&d.name);
            if d.refs != want {
                return Err(format!(
                    "dentry {name:?} (ino {:?}) has {} references, expected {want}",
                    d.ino, d.refs
                ));
            }
            let fs = registry
                .get(&d.sb)
                .ok_or("dentry of an unknown superblock")?;
            match (d.ino, fs.lookup(d.parent_ino, &d.name)) {
                (Some(i), Ok(a)) if a.ino == i => {}
                (None, Err(crate::errno::Errno::ENOENT)) => {}
                (want, got) => {
                    return Err(format!(
                        "dentry {name:?} in dir ino {} says {want:?}, file system says {:?}",
                        d.parent_ino,
                        got.map(|a| a.ino)
                    ));
                }
            }
        }
        // The roots are unhashed: their counts are checked apart, so that a
        // reference leaked on `/` or on a mounted root (a cwd, say) shows.
        let mut roots_seen = vec![(self.root.as_ptr().as_ptr(), self.root.refs())];
        roots_seen.extend(
            mounts
                .iter()
                .map(|(_, root)| (root.as_ptr().as_ptr(), root.refs())),
        );
        for (ptr, refs) in roots_seen {
            let want = children.get(&ptr.cast_const()).copied().unwrap_or(0)
                + extra.get(&ptr.cast_const()).copied().unwrap_or(0);
            if refs != want {
                return Err(format!(
                    "a root dentry (ino {}) has {refs} references, expected {want}",
                    // SAFETY: the root is alive: the VFS or its mount holds it.
                    unsafe { &*ptr }.ino()
                ));
            }
        }
        // Roots: the namespace root and one per mount, unhashed but alive.
        let roots = 1 + mounts.len();
        let alive = self.caches.dcache.len();
        if alive != seen.len() + roots {
            return Err(format!(
                "{alive} dentries alive, {} hashed + {roots} roots: {} leaked",
                seen.len(),
                alive as isize - (seen.len() + roots) as isize
            ));
        }
        self.caches.dcache.check_children()
    }

    /// Mounts `fs` on the directory `path` (absolute, resolved as root from
    /// `/`); `ENOTDIR` if it is not a directory. A path that is already a
    /// mountpoint resolves to the root of what is mounted there, so the new
    /// mount stacks on top of it and hides it, as a second `mount -t tmpfs`
    /// on the same directory does on Linux. (`EBUSY` only if that root is
    /// somehow a mountpoint already, which the walk never returns.)
    pub fn mount(&self, path: &[u8], fs: Arc<dyn FileSystem>) -> Result<(), Errno> {
        let cred = crate::cred::Cred::root();
        let nd = crate::namei::Nd::new(self, &cred, &self.root, &self.root);
        let mp = nd.lookup(
            &self.root,
            path,
            crate::namei::FOLLOW | crate::namei::DIRECTORY,
        )?;
        let mut mounts = crate::primitive::std_lock(&self.mounts);
        if !mp.mounted_ptr().is_null() {
            return Err(Errno::EBUSY);
        }
        let root = new_sb(&self.caches, &self.registry, &self.next_sb, fs)?;
        *crate::primitive::std_lock(&root.sb().mountpoint) = Some(mp.clone());
        dcache::set_mounted(&mp, Some(&root));
        mounts.push((mp, root));
        Ok(())
    }

    /// The root of the file system mounted on `mp`, with a reference.
    pub(crate) fn mounted_root(&self, mp: &DentryRef) -> Option<DentryRef> {
        if mp.mounted_ptr().is_null() {
            return None;
        }
        let mounts = crate::primitive::std_lock(&self.mounts);
        mounts
            .iter()
            .find(|(m, _)| DentryRef::ptr_eq(m, mp))
            .map(|(_, r)| r.clone())
    }
}

/// Creates a superblock for `fs` and its root dentry.
fn new_sb(
    caches: &Arc<Caches>,
    registry: &FsRegistry,
    next: &AtomicU64,
    fs: Arc<dyn FileSystem>,
) -> Result<DentryRef, Errno> {
    let id = next.fetch_add(1, Ordering::Relaxed);
    registry
        .write()
        .map_err(|_| Errno::EIO)?
        .insert(id, fs.clone());
    let root_ino: Ino = fs.root();
    let attr = fs.getattr(root_ino)?;
    let sb = Arc::new(SuperBlock {
        id,
        dev: 40 + id, // major 0 (anonymous), minor 40 + id
        fs,
        caches: caches.clone(),
        rename_lock: Mutex::new(()),
        mountpoint: Mutex::new(None),
    });
    let inode = caches.icache.iget(id, root_ino, || Ok(attr))?;
    Ok(caches.dcache.new_root(sb, inode.into_raw(), &attr))
}

impl Drop for Vfs {
    fn drop(&mut self) {
        let mounts = std::mem::take(&mut *crate::primitive::std_lock(&self.mounts));
        for (mp, root) in mounts.into_iter().rev() {
            dcache::set_mounted(&mp, None);
            if let Ok(mut g) = root.sb().mountpoint.lock() {
                g.take();
            }
            drop((mp, root));
        }
        self.caches.dcache.shutdown();
    }
}
