//! A VFS instance: the fast-path configuration, the allocator of file
//! objects, and the namespace: superblocks (one per mounted file system),
//! the dentry and inode caches they share, and the mount table.
//!
//! Mounting takes a directory the caller has already resolved
//! ([`Process::mount`](crate::Process::mount) walks the path): the path
//! walk sits above this module and is never called from it.

use crate::dcache::{Caches, DentryCache, DentryRef};
use crate::errno::Errno;
use crate::fastpaths::FastPaths;
use crate::file_table::pool::FilePool;
use crate::fs::FileSystem;
use crate::fs::tmpfs::{Tmpfs, TmpfsOptions};
use crate::icache::InodeCache;
use crate::mount::Mounts;
use crate::path_cache::PathCache;
use crate::signal::{LeaseBreaks, LeaseNotify};
use crate::super_block::SuperBlocks;
use std::sync::Arc;
use std::time::Duration;

/// The `fs.protected_*` sysctls (Linux's `fs/namei.c`), fixed when a
/// [`Vfs`] is built. The default is the kernel's own (every one 0);
/// distributions commonly raise them at boot, and [`FsSysctls::host`]
/// reads the running kernel's.
///
/// - `protected_symlinks` (0 or 1): following a symlink that ends a path,
///   in a sticky world-writable directory, is `EACCES` unless the
///   follower owns the link or the directory's owner does (root
///   included: no capability overrides it).
/// - `protected_hardlinks` (0 or 1): `link` of a source the caller
///   neither owns nor has `CAP_FOWNER` for is `EPERM` unless it is a
///   regular file, not set-user-ID, not set-group-ID and group-executable,
///   that the caller may read and write.
/// - `protected_regular` and `protected_fifos` (0, 1 or 2): an `O_CREAT`
///   open of an existing regular file (a FIFO) in a sticky directory,
///   owned neither by the caller nor by the directory's owner, is `EACCES`
///   when the directory is world-writable (1), or also when it is only
///   group-writable (2). Other file types (a symlink opened with
///   `O_NOFOLLOW`) get the world-writable rule whatever the sysctls say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsSysctls {
    /// `fs.protected_symlinks`.
    pub protected_symlinks: u8,
    /// `fs.protected_hardlinks`.
    pub protected_hardlinks: u8,
    /// `fs.protected_regular`.
    pub protected_regular: u8,
    /// `fs.protected_fifos`.
    pub protected_fifos: u8,
}

impl FsSysctls {
    /// The running kernel's values, from `/proc/sys/fs` (a value that
    /// cannot be read is taken as 0).
    pub fn host() -> FsSysctls {
        let get = |name: &str| {
            std::fs::read_to_string(format!("/proc/sys/fs/{name}"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0)
        };
        FsSysctls {
            protected_symlinks: get("protected_symlinks"),
            protected_hardlinks: get("protected_hardlinks"),
            protected_regular: get("protected_regular"),
            protected_fifos: get("protected_fifos"),
        }
    }
}

/// How a [`Vfs`] is built.
#[derive(Clone)]
pub struct VfsBuilder {
    sysctls: FsSysctls,
    fast: FastPaths,
    dcache_limit: usize,
    icache_limit: usize,
    root: TmpfsOptions,
    tmpfs_table: Option<bool>,
    lease_break_time: Duration,
    lease_notify: Option<Arc<dyn LeaseNotify>>,
}

/// The default of [`VfsBuilder::dcache_limit`] and
/// [`VfsBuilder::icache_limit`] (under loom every atomic is modelled: the
/// tables stay tiny).
const DEFAULT_CACHE_LIMIT: usize = if cfg!(loom) { 4 } else { 1 << 20 };

impl std::fmt::Debug for VfsBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfsBuilder")
            .field("sysctls", &self.sysctls)
            .field("fast", &self.fast)
            .field("lease_break_time", &self.lease_break_time)
            .finish_non_exhaustive()
    }
}

impl VfsBuilder {
    /// The fast paths to run (default: [`FastPaths::seeds`]).
    pub fn fastpaths(mut self, fast: FastPaths) -> Self {
        self.fast = fast;
        self
    }

    /// The `fs.protected_*` sysctls (default: all 0, the kernel's own).
    pub fn sysctls(mut self, sysctls: FsSysctls) -> Self {
        self.sysctls = sysctls;
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

    /// Whether the root tmpfs keeps its inode table (by number). Default:
    /// only in the disk-like mode, where a cache limit was set below its
    /// default (seed 002's fstree experiment: evictable caches over a
    /// separate store), or with `FastPaths::tmpfs_borrow` off (the table
    /// is then the only way to an inode). Without it (the pinned mode, as
    /// Linux's tmpfs) a create and an unlink take no table lock, and an
    /// inode is reached through its directory entry or the VFS's cached
    /// inode; `false` has no effect with `tmpfs_borrow` off.
    pub fn tmpfs_table(mut self, keep: bool) -> Self {
        self.tmpfs_table = Some(keep);
        self
    }

    /// How long a lease break may take before the lease is downgraded or
    /// removed by force (`fs.lease-break-time`, default 45 s; zero: no
    /// limit, as Linux's 0).
    pub fn lease_break_time(mut self, t: Duration) -> Self {
        self.lease_break_time = t;
        self
    }

    /// The hook that sends a lease holder its signal when its lease is
    /// broken (default: a [`LeaseBreaks`] recorder, read with
    /// [`Vfs::take_lease_breaks`]).
    pub fn lease_notify(mut self, hook: Arc<dyn LeaseNotify>) -> Self {
        self.lease_notify = Some(hook);
        self
    }

    /// Builds the VFS with a fresh tmpfs as its root.
    pub fn build(self) -> Arc<Vfs> {
        let opts = self.root;
        let (borrow, lockless) = (self.fast.tmpfs_borrow, self.fast.lockless_attrs);
        let read = self.fast.lockless_read;
        // Light overwrites run inside the one-lock write.
        let light = self.fast.light_overwrite && self.fast.write_one_lock;
        let table = self.tmpfs_table.unwrap_or(
            self.dcache_limit < DEFAULT_CACHE_LIMIT || self.icache_limit < DEFAULT_CACHE_LIMIT,
        );
        Vfs::with_root(
            self,
            Tmpfs::with_switches(opts, borrow, lockless, read, light, table),
        )
    }

    /// Builds the VFS with `fs` as its root file system.
    pub fn build_with_root(self, fs: Arc<dyn FileSystem>) -> Arc<Vfs> {
        Vfs::with_root(self, fs)
    }
}

/// One VFS: what the kernel is to its processes.
///
/// A VFS holds the namespace (a tmpfs root unless built with another file
/// system), the dentry and inode caches and the fast paths; processes made
/// on it share all of that, as processes share a kernel.
///
/// ```
/// use uvfs::{FastPaths, Process, Vfs};
///
/// let vfs = Vfs::builder()
///     .fastpaths(FastPaths::stock())
///     .dcache_limit(1000)
///     .build();
/// let mut a = Process::new(&vfs).unwrap();
/// let mut b = Process::new(&vfs).unwrap();
/// a.mkdir("/shared", 0o755).unwrap();
/// // b sees what a made: one namespace.
/// assert!(b.stat("/shared").is_ok());
/// assert_eq!(vfs.fastpaths(), &FastPaths::stock());
/// ```
pub struct Vfs {
    fast: FastPaths,
    sysctls: FsSysctls,
    pool: &'static FilePool,
    caches: Arc<Caches>,
    /// Every superblock by id; the inode cache's eviction finds the file
    /// system of an inode here.
    sbs: Arc<SuperBlocks>,
    root: DentryRef,
    mounts: Mounts,
    /// The full-path cache, when `path_cache` is on.
    path_cache: Option<PathCache>,
    lease_break_time: Duration,
    lease_notify: Arc<dyn LeaseNotify>,
    /// The default notify hook's records, when it is the default.
    lease_breaks: Option<Arc<LeaseBreaks>>,
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
            sysctls: FsSysctls::default(),
            fast: FastPaths::seeds(),
            dcache_limit: DEFAULT_CACHE_LIMIT,
            icache_limit: DEFAULT_CACHE_LIMIT,
            root: TmpfsOptions {
                mode: 0o755,
                ..TmpfsOptions::default()
            },
            tmpfs_table: None,
            lease_break_time: Duration::from_secs(45),
            lease_notify: None,
        }
    }

    fn with_root(b: VfsBuilder, fs: Arc<dyn FileSystem>) -> Arc<Vfs> {
        let sbs = Arc::new(SuperBlocks::new());
        let table = sbs.clone();
        let icache = InodeCache::new(
            b.icache_limit,
            b.icache_limit
                .clamp(if cfg!(loom) { 2 } else { 64 }, 1 << 22),
            b.fast.icache_lockless,
            // `evict()` reaches the file system through the inode's
            // superblock: a lookup in an append-only table, no lock.
            // The node's file-system object goes back with the evict, as
            // Linux's `->evict_inode` frees what `i_private` holds.
            move |sb, ino, data| {
                if let Some(sb) = table.get(sb) {
                    sb.fs.evict_node(ino, data);
                }
            },
        );
        let caches = Arc::new(Caches {
            dcache: DentryCache::new(b.dcache_limit, b.fast.cheap_pin, b.fast.dentry_inline_name)
                .with_dir_gen(b.fast.path_cache_dir_gen),
            icache,
        });
        let root = new_sb(&caches, &sbs, fs).expect("the root file system has a root inode");
        let (lease_notify, lease_breaks) = match b.lease_notify {
            Some(h) => (h, None),
            None => {
                let rec = Arc::new(LeaseBreaks::default());
                (rec.clone() as Arc<dyn LeaseNotify>, Some(rec))
            }
        };
        Arc::new(Vfs {
            fast: b.fast,
            sysctls: b.sysctls,
            pool: FilePool::global(),
            caches,
            sbs,
            root,
            mounts: Mounts::default(),
            path_cache: b
                .fast
                .path_cache
                .then(|| PathCache::with_admission(b.fast.path_cache_admit)),
            lease_break_time: b.lease_break_time,
            lease_notify,
            lease_breaks,
        })
    }

    /// The fast paths this instance runs.
    pub fn fastpaths(&self) -> &FastPaths {
        &self.fast
    }

    /// The `fs.protected_*` sysctls this instance applies.
    pub fn sysctls(&self) -> &FsSysctls {
        &self.sysctls
    }

    /// `fs.lease-break-time` for this instance.
    pub fn lease_break_time(&self) -> Duration {
        self.lease_break_time
    }

    /// The lease-break hook.
    pub(crate) fn lease_notify(&self) -> &dyn LeaseNotify {
        &*self.lease_notify
    }

    /// The lease breaks recorded by the default hook since the last call
    /// (none when the builder was given a hook).
    pub fn take_lease_breaks(&self) -> Vec<crate::LeaseBreak> {
        self.lease_breaks
            .as_ref()
            .map(|r| r.take())
            .unwrap_or_default()
    }

    /// The type-stable file pool (used when `typesafe_files` is on).
    pub fn file_pool(&self) -> &'static FilePool {
        self.pool
    }

    /// The namespace root, `/`.
    pub(crate) fn root(&self) -> &DentryRef {
        &self.root
    }

    pub(crate) fn caches(&self) -> &Caches {
        &self.caches
    }

    /// The full-path cache, if this instance runs one.
    #[inline]
    pub(crate) fn path_cache(&self) -> Option<&PathCache> {
        self.path_cache.as_ref()
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
        // The roots are unhashed: their counts are checked apart below, so
        // that a reference leaked on `/` or on a mounted root (a cwd, say)
        // shows.
        let mut roots_seen = vec![(self.root.as_ptr().as_ptr(), self.root.refs())];
        self.mounts.for_each(|mp, root| {
            *extra.entry(mp.as_ptr().as_ptr()).or_default() += 1;
            *extra.entry(root.as_ptr().as_ptr()).or_default() += 1;
            roots_seen.push((root.as_ptr().as_ptr(), root.refs()));
        });
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
            self.sbs
                .get(d.sb)
                .ok_or("dentry of an unknown superblock")?;
        }
        // Each name as its directory's file system has it, asked through
        // the directory's node (its object, not its number).
        for (parent, kids) in self.caches.dcache.hashed_by_parent()? {
            let fs = &parent.sb().fs;
            for (name, want) in kids {
                let got = fs.lookup_node(parent.node(), &name).map(|(a, data)| {
                    if let Some(data) = data {
                        fs.release_data(a.ino, data);
                    }
                    a.ino
                });
                match (want, got) {
                    (Some(i), Ok(g)) if g == i => {}
                    (None, Err(crate::errno::Errno::ENOENT)) => {}
                    (want, got) => {
                        return Err(format!(
                            "dentry {:?} in dir ino {} says {want:?}, file system says {got:?}",
                            String::from_utf8_lossy(&name),
                            parent.ino(),
                        ));
                    }
                }
            }
        }
        let roots = roots_seen.len();
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
        let alive = self.caches.dcache.len();
        if alive != seen.len() + roots {
            return Err(format!(
                "{alive} dentries alive, {} hashed + {roots} roots: {} leaked",
                seen.len(),
                alive as isize - (seen.len() + roots) as isize
            ));
        }
        self.caches.dcache.check_children()?;
        // The root tmpfs's own check: its tree, links and counters (an
        // unlinked file still open is an orphan, not a leak).
        if let Some(t) = self.root.sb().tmpfs() {
            t.fsck(false).map_err(|e| format!("root tmpfs: {e}"))?;
        }
        Ok(())
    }

    /// Mounts `fs` on the directory `mp`, resolved by the caller
    /// (`do_new_mount`): `ENOTDIR` if it is not a directory, `EBUSY` if
    /// something is mounted on it already, `ENOMEM` past the most mounts
    /// the superblock table holds.
    pub(crate) fn mount(&self, mp: DentryRef, fs: Arc<dyn FileSystem>) -> Result<(), Errno> {
        if !mp.snap().is_some_and(|s| s.is_dir()) {
            return Err(Errno::ENOTDIR);
        }
        if !mp.mounted_ptr().is_null() {
            return Err(Errno::EBUSY);
        }
        let root = new_sb(&self.caches, &self.sbs, fs)?;
        self.mounts.add(mp, root)
    }

    /// The root of the file system mounted on `mp`, with a reference.
    pub(crate) fn mounted_root(&self, mp: &DentryRef) -> Option<DentryRef> {
        self.mounts.mounted_root(mp)
    }

    /// The directory the mounted root `root` sits on, with a reference;
    /// `None` for `/`.
    pub(crate) fn mountpoint_of(&self, root: &DentryRef) -> Option<DentryRef> {
        self.mounts.mountpoint_of(root)
    }
}

/// Creates a superblock for `fs` and its root dentry.
fn new_sb(
    caches: &Arc<Caches>,
    sbs: &SuperBlocks,
    fs: Arc<dyn FileSystem>,
) -> Result<DentryRef, Errno> {
    let sb = sbs.add(fs).ok_or(Errno::ENOMEM)?;
    let root_ino = sb.fs.root();
    // The root's attributes from its object (tmpfs: the root it holds),
    // not by number.
    let mut filled = None;
    let inode = caches.icache.iget_with(sb.id, root_ino, || {
        let data = sb.fs.inode_data(root_ino);
        let node = crate::fs::Node {
            ino: root_ino,
            data: data.as_ref().map(crate::fs::InodeData::borrow),
        };
        match sb.fs.getattr_node(node) {
            Ok(a) => {
                filled = Some(a);
                Ok((a, data))
            }
            Err(e) => {
                if let Some(d) = data {
                    sb.fs.release_data(root_ino, d);
                }
                Err(e)
            }
        }
    })?;
    let attr = match filled {
        Some(a) => a,
        // An inode the cache had already (not for a new superblock).
        None => sb.fs.getattr_node(crate::fs::Node {
            ino: root_ino,
            data: inode.data(),
        })?,
    };
    Ok(caches.new_root(sb, inode.into_raw(), &attr))
}

impl Drop for Vfs {
    fn drop(&mut self) {
        self.mounts.clear();
        self.caches.dcache.shutdown();
    }
}
