//! An in-memory tmpfs behind [`FileSystem`], following Linux 6.18's shmem
//! (`mm/shmem.c`) and its `simple_offset` directories (`fs/libfs.c`).
//!
//! # Layout
//!
//! - An inode table split into [`SHARDS`] shards (`RwLock<HashMap>` each,
//!   keyed by inode number), each inode behind its own `RwLock`: operations
//!   on different inodes never share a lock beyond a brief shard read.
//! - Directories: the entries in one vector sorted by offset (Linux's
//!   maple tree of `d_off` cookies), a hash table from name to entry, and
//!   the listing order as links between entries (see `dir`). Each entry
//!   holds a reference to its inode: lookups, unlink's and rename's
//!   victims are reached from the entry, not from the table. A directory
//!   holds its parent weakly (in the word a regular file uses for its page
//!   index): `..` and rename's ancestry walk go up through it. The file
//!   system holds its root, which the VFS's root inode takes from it.
//! - Regular files: sparse 4 KiB pages in a `BTreeMap<page index, Page>`;
//!   a page is either written data or an `fallocate`d, not yet written page
//!   (Linux's `!uptodate` folio: reads as zeros, counts as allocated, is a
//!   hole for `SEEK_DATA`).
//!   A file that was mapped (`mmap_file`) holds its data in a kernel
//!   memfd instead (`memfd`), which the program maps directly. A tmpfs
//!   built with a directory as its [`FileStore`] keeps every regular
//!   file's data in a file of that directory from its first write, and
//!   that directory's file system is the space limit.
//! - Symlinks: the target; targets of 128 bytes or more take a page (Linux
//!   stores shorter ones inline: `SHORT_SYMLINK_LEN`).
//!
//! # Locking
//!
//! Shard locks are leaves: never held while an inode lock is taken. An
//! operation on several inodes (link, unlink, rmdir, rename) write-locks all
//! of them in ascending inode-number order after peeking at the names, then
//! re-checks that the names still point where they did (retrying if not).
//! Cross-directory renames also hold a file-system-wide mutex (Linux's
//! `s_vfs_rename_mutex`), so the ancestry check (moving a directory into its
//! own subtree) sees a tree no other rename can change: directories' parent
//! links change only there. Every check precedes the first change, so a
//! failed rename changes nothing.
//!
//! # Linux 6.18 behaviour reproduced (checked on a 6.18 host's tmpfs)
//!
//! - Root inode 1, later inodes numbered upwards from 2.
//! - Directory listing order is newest first: a create, link or rename puts
//!   the entry at the head (Linux's `d_children` list). Each entry has a
//!   cookie (offset) allocated from a per-directory counter starting at 3;
//!   a rename to a new name allocates a new one, a rename over an existing
//!   name takes the replaced entry's offset, `RENAME_EXCHANGE` keeps both
//!   names' offsets but moves both entries to the head (target side first,
//!   so the source inode ends up first). `d_off` of an entry is the offset of
//!   the entry listed after it; `.` has 1, the last entry `i32::MAX`
//!   (end of directory). Resuming at cookie `p` continues, in listing order,
//!   from the entry with the largest offset `<= p` (2: from the head).
//!   **Deliberate divergence**: when no entry has an offset `<= p` (the
//!   entry the cookie named, the oldest one, was removed), Linux 6.18
//!   restarts from the head and repeats every entry (verified:
//!   create a..e, list up to `b` (cookie 3 = `a`), unlink `a`, resume at 3:
//!   Linux lists e d c b again); here that is the end of the directory, so an
//!   entry present throughout is never repeated under create/unlink.
//! - Sizes: directory 40 + 20 per entry, symlink = target length; blocks are
//!   8 per allocated page; `blksize` 4096.
//! - `nr_inodes`: the root counts, every inode counts once and every extra
//!   hard link of a non-directory counts once more (Linux's
//!   `shmem_reserve_inode` in `shmem_link`, given back by `shmem_unlink` while
//!   the link count stays above zero); the last count is given back at
//!   `evict`.
//! - Errors for unknown inode numbers: `ESTALE` (the inode was evicted).
//!
//! - Extended attributes in the `security.`, `trusted.` and `user.`
//!   namespaces, and POSIX ACLs (`system.posix_acl_access`/`_default`,
//!   `CONFIG_TMPFS_POSIX_ACL`; the rules are [`crate::acl`]'s and the
//!   VFS's, tmpfs stores them: see `xattr`).
//!
//! Not modelled: huge pages, quotas, seals.
//!
//! # Modules
//!
//! - this one: the [`Tmpfs`] type and its options, the inode table and its
//!   shards, space and inode accounting, and [`FileSystem`] as dispatch;
//! - `inode`: an inode's state and lock, the multi-inode lock helpers,
//!   attributes, eviction;
//! - `dir`: a directory's entries and their offsets (cookies), as a data
//!   structure;
//! - `names`: lookup, readdir, create, mkdir, symlink, `O_TMPFILE`, link,
//!   unlink, rmdir;
//! - `rename`: rename and its flags, the directory-loop check;
//! - `pages`: regular files' page maps (truncate, punch);
//! - `memfd`: a regular file's data moved to a kernel memfd (or a file
//!   of the [`FileStore`] directory) on its first
//!   `mmap_file`, and the operations on it;
//! - `io`: read, write, `fallocate`, `SEEK_DATA`/`SEEK_HOLE` through the
//!   inode;
//! - `xattr`: extended attributes (`simple_xattrs` and shmem's handlers);
//! - `fsck`: the consistency check used by tests.

use crate::primitive::sync::UnmodelledMutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{
    Attr, DirEntry, FileSystem, Found, FsLimits, Ino, InodeData, NewInode, Node, S_IFDIR, Seek,
    SetAttr, StatFs,
};
use crate::acl::{AclType, PosixAcl};
use crate::errno::Errno;

mod dir;
mod fsck;
mod inode;
mod io;
mod memfd;
mod names;
mod pageindex;
mod pages;
pub(crate) mod pool;
mod published;
mod racy;
mod rename;
mod table;
mod xattr;

use inode::Dir;
use inode::{Init, Inode, Kind, Locked, State, rd};
use pages::RegFile;
use table::Shard;

pub use memfd::{FileStore, holds_kernel_fd, kernel_fds_in, reserve_high_fds};

/// Page size: the unit of allocation and of `size_bytes`.
pub const PAGE_SIZE: u64 = 4096;
/// `MAX_LFS_FILESIZE` on 64-bit Linux: the largest file size.
pub const MAX_FILE_SIZE: u64 = i64::MAX as u64;
/// `NAME_MAX`.
pub const NAME_MAX: usize = 255;
/// The longest symlink target (`PAGE_SIZE - 1`).
pub const SYMLINK_MAX: usize = 4095;
/// Symlink targets shorter than this are stored in the inode (0 blocks).
pub const SHORT_SYMLINK_LEN: usize = 128;
/// The root directory's inode number (as on a fresh Linux tmpfs mount).
pub const ROOT_INO: Ino = 1;
/// Directory size with no entries (`BOGO_DIRENT_SIZE * 2`).
pub const EMPTY_DIR_SIZE: u64 = 40;
/// Directory size added per entry (`BOGO_DIRENT_SIZE`).
pub const DIRENT_SIZE: u64 = 20;
/// The end-of-directory cookie (`DIR_OFFSET_EOD`, `S32_MAX`).
pub const DIR_OFFSET_EOD: u64 = i32::MAX as u64;
/// `stx_attributes_mask` on a Linux 6.18 tmpfs (the host's reads
/// 0x203070): `STATX_ATTR_IMMUTABLE | APPEND | NODUMP | AUTOMOUNT |
/// MOUNT_ROOT | DAX`.
pub const STATX_ATTRIBUTES_MASK: u64 = 0x10 | 0x20 | 0x40 | 0x1000 | 0x2000 | 0x20_0000;
/// Number of shards of the inode table.
pub const SHARDS: usize = 64;

/// Mount options (`mount -t tmpfs -o size=...,nr_inodes=...,mode=...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmpfsOptions {
    /// Space limit in bytes, rounded up to whole pages; `None` or `Some(0)`:
    /// unlimited (as Linux's `size=0`).
    pub size_bytes: Option<u64>,
    /// Inode limit (the root counts); `None` or `Some(0)`: unlimited.
    pub nr_inodes: Option<u64>,
    /// The root directory's permission bits (default `0o1777`).
    pub mode: u32,
    /// The root directory's owner.
    pub uid: u32,
    /// The root directory's group.
    pub gid: u32,
}

impl Default for TmpfsOptions {
    fn default() -> Self {
        TmpfsOptions {
            size_bytes: None,
            nr_inodes: None,
            mode: 0o1777,
            uid: 0,
            gid: 0,
        }
    }
}

/// Inode numbers a thread takes at a time (Linux's `SHMEM_INO_BATCH`).
const INO_BATCH: u64 = 1024;

/// The next [`Tmpfs::id`].
static NEXT_TMPFS_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's run of inode numbers: the file system's id, the next
    /// number, the end of the run ([`Tmpfs::new_ino`]).
    static INO_RUN: std::cell::Cell<(u64, Ino, Ino)> = const { std::cell::Cell::new((0, 0, 0)) };
}

/// An in-memory tmpfs. See the [module docs](self).
pub struct Tmpfs {
    /// The inode table (`table`): used only when [`table`](Tmpfs::table).
    shards: Box<[Shard]>,
    /// Whether the inode table is kept (see `table`): with
    /// `FastPaths::tmpfs_borrow` off, in the disk-like mode and for every
    /// [`Tmpfs::new`]; not in a `VfsBuilder`'s pinned root.
    table: bool,
    /// The root directory, held here (as Linux's `sb->s_root` holds it):
    /// the VFS's root inode takes its object from this field, not from
    /// the table.
    root: Arc<Inode>,
    /// The next number no thread has taken (see [`Tmpfs::new_ino`]).
    next_ino: AtomicU64,
    /// This file system's id among every tmpfs the process made: tells a
    /// thread's run of numbers of this one from a run of another.
    id: u64,
    max_pages: Option<u64>,
    max_inodes: Option<u64>,
    used_pages: AtomicU64,
    used_inodes: AtomicU64,
    /// Inodes with no link left whose count is not given back yet (an
    /// unlinked open file, an `O_TMPFILE` one): what `fsck`'s walk of the
    /// tree cannot reach.
    orphans: AtomicU64,
    rename_lock: UnmodelledMutex<()>,
    /// Highest directory offset (`S32_MAX - 1`; lowered by tests).
    dir_offset_max: u64,
    /// [`FileStore::Dir`]: regular files' data in files of that directory,
    /// whose file system holds and limits the space (`max_pages` is
    /// `None`); `None` for memfds.
    store: Option<memfd::DirStore>,
    /// `FastPaths::tmpfs_borrow`: getattr and short writes work on the
    /// inode under its shard's read lock, without taking a reference (see
    /// [`with_inode`](Tmpfs::with_inode)).
    borrow: bool,
    /// `FastPaths::lockless_attrs`: every inode publishes its attributes
    /// for `stat` and the read path to read without its lock (see
    /// `published`).
    lockless: bool,
    /// `FastPaths::lockless_read`: regular files keep their pages in a
    /// lockless index too ([`pageindex`]), and reads copy from it without
    /// the inode's lock (see `io.rs`).
    lockless_read: bool,
    /// `FastPaths::light_overwrite`: an overwrite inside the size that
    /// stamps nothing goes without the inode's lock, under its attribute
    /// cell's claim (see `io.rs`).
    light_overwrite: bool,
    /// Tests: the table searches made with `FastPaths::tmpfs_borrow` on
    /// (`get` and `with_inode`), which the VFS's calls should not need.
    #[cfg(test)]
    searches: AtomicU64,
    /// Tests: the table's inserts and removals (a shard's write lock each).
    #[cfg(test)]
    table_writes: AtomicU64,
}

/// The size of one tmpfs inode as allocated (behind its `Arc`), pages and
/// directory entries apart.
pub fn inode_size() -> usize {
    std::mem::size_of::<Inode>() + 2 * std::mem::size_of::<usize>()
}

impl Tmpfs {
    /// Mounts a fresh tmpfs.
    pub fn new(opts: TmpfsOptions) -> Arc<Tmpfs> {
        Arc::new(Tmpfs::build(opts))
    }

    /// Mounts a fresh tmpfs whose regular files' data goes to `store`
    /// (see [`FileStore`]). With [`FileStore::Dir`] the directory's file
    /// system is the space limit and `opts.size_bytes` is not used; every
    /// regular file's data moves there at its first write, `fallocate` or
    /// mapping. Fails if a first file cannot be made in the directory (it
    /// must take `O_TMPFILE`, read and write).
    pub fn with_store(opts: TmpfsOptions, store: FileStore) -> Result<Arc<Tmpfs>, Errno> {
        let mut fs = Tmpfs::build(opts);
        if let FileStore::Dir(dir) = store {
            fs.store = Some(memfd::DirStore::new(dir)?);
            fs.max_pages = None;
        }
        Ok(Arc::new(fs))
    }

    /// Mounts a fresh tmpfs, with `FastPaths::tmpfs_borrow`,
    /// `FastPaths::lockless_attrs`, `FastPaths::lockless_read` and
    /// `FastPaths::light_overwrite` as given
    /// (the root file system a `VfsBuilder` makes; [`new`](Tmpfs::new)
    /// turns all on). Lockless reads need the published attributes.
    /// `table`: keep the inode table (always, with `borrow` off; see
    /// `table`).
    pub(crate) fn with_switches(
        opts: TmpfsOptions,
        borrow: bool,
        lockless: bool,
        read: bool,
        light: bool,
        table: bool,
    ) -> Arc<Tmpfs> {
        let mut fs = Tmpfs::build_with(opts, lockless, light && read && lockless);
        fs.borrow = borrow;
        fs.lockless_read = read && lockless;
        if borrow && !table {
            fs.table = false;
            fs.shards = Box::new([]);
        }
        Arc::new(fs)
    }

    /// The file system with its root directory, not yet shared.
    fn build(opts: TmpfsOptions) -> Tmpfs {
        Tmpfs::build_with(opts, true, true)
    }

    /// [`build`](Tmpfs::build) with `FastPaths::lockless_attrs` and
    /// `FastPaths::light_overwrite` as given (`light` only with
    /// `lockless_read` and `lockless_attrs` on).
    fn build_with(opts: TmpfsOptions, lockless: bool, light: bool) -> Tmpfs {
        let max_pages = opts
            .size_bytes
            .filter(|&b| b > 0)
            .map(|b| b.div_ceil(PAGE_SIZE));
        let max_inodes = opts.nr_inodes.filter(|&n| n > 0);
        let shards = table::new_shards();
        let (lockless_attrs, light_overwrite) = (lockless, light);
        let now = super::timekeeping::coarse_mg();
        let init = Init {
            mode: S_IFDIR | (opts.mode & 0o7777),
            uid: opts.uid,
            gid: opts.gid,
            nlink: 2,
            now,
            acl: 0,
            linkable: false,
        };
        let root = State::new(Kind::Dir(Box::new(Dir::new())));
        // The root has no parent: an empty `Weak` (`..` is itself).
        let (_, root) = Inode::new(
            ROOT_INO,
            std::sync::Weak::new(),
            &init,
            root,
            lockless_attrs,
            light_overwrite,
        );
        let root = Arc::new(root);
        shards[(ROOT_INO % SHARDS as u64) as usize]
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(ROOT_INO, root.clone());
        Tmpfs {
            shards,
            table: true,
            root,
            next_ino: AtomicU64::new(ROOT_INO + 1),
            id: NEXT_TMPFS_ID.fetch_add(1, Ordering::Relaxed),
            max_pages,
            max_inodes,
            used_pages: AtomicU64::new(0),
            used_inodes: AtomicU64::new(1),
            orphans: AtomicU64::new(0),
            rename_lock: UnmodelledMutex::new(()),
            dir_offset_max: DIR_OFFSET_EOD - 1,
            store: None,
            borrow: true,
            lockless,
            lockless_read: lockless,
            light_overwrite: light,
            #[cfg(test)]
            searches: AtomicU64::new(0),
            #[cfg(test)]
            table_writes: AtomicU64::new(0),
        }
    }

    /// A number for a new inode. Each thread takes a run of [`INO_BATCH`]
    /// numbers from the shared counter and hands them out one by one, as
    /// Linux's tmpfs does for its internal mounts (`shmem_reserve_inode`'s
    /// per-CPU batches; a mounted tmpfs takes one number at a time under its
    /// `stat_lock`). So a thread's new inodes have consecutive numbers, which
    /// the inode cache's buckets turn into neighbouring slots, and two
    /// threads making files at once neither share the counter's cache line
    /// per file nor each other's bucket lines. Numbers stay unique: a run is
    /// used only by its thread and only for this file system (its `id`,
    /// never reused); a thread that moves to another tmpfs drops the rest of
    /// its run, as a CPU's batch is dropped by nothing but use. One thread
    /// alone sees the numbers in order, as before.
    pub(crate) fn new_ino(&self) -> Ino {
        let take = |run: &std::cell::Cell<(u64, Ino, Ino)>| {
            let (id, next, end) = run.get();
            if id == self.id && next < end {
                run.set((id, next + 1, end));
                return next;
            }
            let start = self.next_ino.fetch_add(INO_BATCH, Ordering::Relaxed);
            run.set((self.id, start + 1, start + INO_BATCH));
            start
        };
        INO_RUN
            .try_with(take)
            .unwrap_or_else(|_| self.next_ino.fetch_add(1, Ordering::Relaxed))
    }

    /// A child reached through its directory entry's reference: itself,
    /// or with `FastPaths::tmpfs_borrow` off (the stock side) the table's
    /// reference to its number, as before the entries held their inodes
    /// (`ESTALE` once it is evicted).
    #[inline]
    fn stock(&self, c: Arc<Inode>) -> Result<Arc<Inode>, Errno> {
        if self.borrow { Ok(c) } else { self.get(c.ino) }
    }

    /// The inode `n` names: with `FastPaths::tmpfs_borrow` on, the object
    /// the VFS's cached inode holds (see [`FileSystem::inode_data`]),
    /// without a table search or a reference; otherwise (the stock side of
    /// the switch, or no object) inode `n.ino` from the table.
    #[inline]
    fn node<'a>(&self, n: Node<'a>) -> Result<Held<'a>, Errno> {
        match n.data {
            // SAFETY: the VFS hands tmpfs only the objects tmpfs made, in
            // `inode_data`, `lookup_node` and `create_node`: each an
            // `Arc<Inode>` through `data_of`.
            Some(d) if self.borrow => Ok(Held::Borrowed(unsafe { d.get::<Inode>() })),
            _ => self.get(n.ino).map(Held::Owned),
        }
    }

    /// A reference to the inode `n` names: the object's, cloned (no table
    /// search), or as [`node`](Tmpfs::node) finds it.
    fn owned(&self, n: Node<'_>) -> Result<Arc<Inode>, Errno> {
        match n.data {
            // SAFETY: as in `node`: the object is an `Arc<Inode>` the
            // cached inode holds for the call; the clone is a reference of
            // our own.
            Some(d) if self.borrow => Ok(unsafe { clone_arc(d) }),
            _ => self.get(n.ino),
        }
    }

    /// [`FileSystem::getattr_pinned`], for a caller that knows the file
    /// system is tmpfs (`stat` answered by the path cache): inlined there,
    /// the attributes stay in registers on their way into `Stat`. Through
    /// the trait's dynamic call they came back through memory, and the
    /// caller's wide loads of them waited for this function's narrower
    /// stores to reach the cache (a fifth of `fstatat`'s own time).
    #[inline(always)]
    pub(crate) fn getattr_pinned_inline(&self, n: Node<'_>) -> Option<Attr> {
        if !self.pinned_reads() {
            return None;
        }
        // SAFETY: the VFS hands tmpfs only the objects tmpfs made (each an
        // `Arc<Inode>` through `data_of`); with `pinned_reads` every such
        // reference tmpfs lets go is dropped after a grace period
        // (`drop_inode`), so the inode outlives the caller's pin.
        let i = unsafe { n.data?.get::<Inode>() };
        if i.ino != n.ino {
            return None;
        }
        if let Some(s) = i.snapshot() {
            i.mark_ctime_queried();
            return Some(inode::attr_of_snapshot(n.ino, &s));
        }
        self.getattr_pinned_locked(n.ino, i)
    }

    /// [`getattr_pinned_inline`](Self::getattr_pinned_inline) without a
    /// published snapshot (a device node, a time the cell cannot hold, a
    /// writer in its section): the read lock if it is free, as the short
    /// way by number took it under the shard's lock, but from the object.
    /// A memfd-backed file's size is the kernel's (a system call): the
    /// usual way. Out of line: the inlined stat keeps only the cell's read.
    #[inline(never)]
    fn getattr_pinned_locked(&self, ino: Ino, i: &Inode) -> Option<Attr> {
        let st = inode::try_rd(i)?;
        if matches!(st.kind(), Kind::Reg(RegFile::Memfd(_))) {
            return None;
        }
        st.mark_ctime_queried();
        Some(self.attr(ino, &st))
    }

    /// Whether the VFS may read inodes' attributes through objects it
    /// reached without a reference (`getattr_pinned`): both
    /// `FastPaths::tmpfs_borrow` and `FastPaths::lockless_attrs`. Then
    /// every reference to an inode the table or the cached inode gives up
    /// is dropped after a grace period ([`drop_inode`](Tmpfs::drop_inode)).
    #[inline]
    pub(crate) fn pinned_reads(&self) -> bool {
        self.borrow && self.lockless
    }

    /// Drops the table's or the cached inode's reference to an inode: after
    /// a grace period when [`pinned_reads`](Tmpfs::pinned_reads) (a reader
    /// pinned before the reference went may still be reading the inode;
    /// any reference taken from the table meanwhile is dropped later still,
    /// so the inode is freed once no such reader is left), else at once.
    fn drop_inode(&self, i: Arc<Inode>) {
        if !self.pinned_reads() {
            drop(i);
            return;
        }
        let p = std::ptr::NonNull::new(Arc::into_raw(i).cast_mut()).expect("an Arc's pointer");
        // SAFETY: `p` holds the reference `i` held, which no one reaches
        // through it again (the table and the cached inode let it go
        // before calling this); `Inode::free` drops exactly that reference.
        unsafe { crate::reclaim::defer_free(p) };
    }

    /// Enters a new inode in the table, with the attributes `init`;
    /// returns them (as `getattr` would) and the inode.
    fn insert_inode(
        &self,
        ino: Ino,
        parent: std::sync::Weak<Inode>,
        init: &Init,
        mut st: State,
        xattrs: Option<Box<inode::XattrSet>>,
    ) -> (Attr, Arc<Inode>) {
        st.xattrs = xattrs;
        let (attr, inode) = Inode::new(ino, parent, init, st, self.lockless, self.light_overwrite);
        let inode = Arc::new(inode);
        self.table_insert(&inode);
        (attr, inode)
    }

    /// Takes `n` from `counter` unless that would pass `max`.
    fn reserve(counter: &AtomicU64, max: Option<u64>, n: u64) -> bool {
        match max {
            None => {
                counter.fetch_add(n, Ordering::Relaxed);
                true
            }
            Some(max) => counter
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                    used.checked_add(n).filter(|&u| u <= max)
                })
                .is_ok(),
        }
    }

    /// Counts one more inode against `nr_inodes` (`ENOSPC` at the limit).
    fn reserve_inode(&self) -> Result<(), Errno> {
        if Self::reserve(&self.used_inodes, self.max_inodes, 1) {
            Ok(())
        } else {
            Err(Errno::ENOSPC)
        }
    }

    /// Gives one inode count back.
    fn release_inode(&self) {
        self.used_inodes.fetch_sub(1, Ordering::Relaxed);
    }

    /// An inode lost its last link (or was made without one), its count
    /// not given back yet: one more [`orphans`](Tmpfs::orphans).
    fn orphaned(&self) {
        self.orphans.fetch_add(1, Ordering::Relaxed);
    }

    /// An orphan got a link (`linkat` of an `O_TMPFILE` inode) or was
    /// given back.
    fn unorphaned(&self) {
        self.orphans.fetch_sub(1, Ordering::Relaxed);
    }

    /// Counts `n` more pages against the space limit; false at the limit.
    /// (With a directory store: `n` more ballast pages there.)
    fn reserve_pages(&self, n: u64) -> bool {
        if let Some(s) = &self.store
            && n > 0
            && !s.reserve(n)
        {
            return false;
        }
        Self::reserve(&self.used_pages, self.max_pages, n)
    }

    /// Counts up to `n` more pages against the space limit: as many as
    /// fit, returned.
    fn reserve_pages_up_to(&self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        if self.store.is_some() {
            return (0..n).take_while(|_| self.reserve_pages(1)).count() as u64;
        }
        let Some(max) = self.max_pages else {
            self.used_pages.fetch_add(n, Ordering::Relaxed);
            return n;
        };
        let mut got = 0;
        let _ = self
            .used_pages
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                got = max.saturating_sub(used).min(n);
                (got > 0).then_some(used + got)
            });
        got
    }

    /// Counts `n` more pages whatever the limit (pages a program already
    /// allocated through a mapping of a memfd-backed file).
    fn charge_pages(&self, n: u64) {
        if n > 0 {
            self.used_pages.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Gives `n` pages back.
    fn release_pages(&self, n: u64) {
        if n > 0 {
            self.used_pages.fetch_sub(n, Ordering::Relaxed);
            if let Some(s) = &self.store {
                s.release(n);
            }
        }
    }
}

impl Drop for Tmpfs {
    /// Frees the tree from the top without recursing: each directory's
    /// entries are taken out into a work list before its inode can go, so
    /// no inode's drop drops a subtree (a chain of 100,000 directories
    /// would otherwise recurse once per level and overflow the stack).
    /// Every directory with entries is linked, so reached from the root;
    /// the inodes left (the table's, an unlinked open file's) have none.
    fn drop(&mut self) {
        let mut work = vec![self.root.clone()];
        while let Some(i) = work.pop() {
            if let Some(Kind::Dir(d)) = inode::wr(&i).kind_mut_if_boxed() {
                d.take_inodes(&mut work);
            }
        }
    }
}

impl FileSystem for Tmpfs {
    fn root(&self) -> Ino {
        ROOT_INO
    }

    fn limits(&self) -> FsLimits {
        FsLimits {
            name_max: NAME_MAX,
            max_file_size: MAX_FILE_SIZE,
            dir_offset_eod: DIR_OFFSET_EOD,
            statx_attributes_mask: STATX_ATTRIBUTES_MASK,
            block_size: PAGE_SIZE as u32,
        }
    }

    fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Attr, Errno> {
        self.lookup_name(dir.into(), name)
            .map(|(a, i)| self.put_attr(a, i))
    }

    fn lookup_node(&self, dir: Node<'_>, name: &[u8]) -> Result<Found, Errno> {
        self.lookup_name(dir, name)
            .map(|(a, i)| (a, Some(data_of(i))))
    }

    fn inode_data(&self, ino: Ino) -> Option<InodeData> {
        if ino == ROOT_INO && self.borrow {
            // The root this file system holds: no table search.
            return Some(data_of(self.root.clone()));
        }
        self.get(ino).ok().map(data_of)
    }

    fn release_data(&self, _ino: Ino, data: InodeData) {
        // SAFETY: every `InodeData` tmpfs hands out is an `Arc<Inode>`
        // (`data_of`), and the VFS gives each back once.
        let i = unsafe { data.into_arc::<Inode>() };
        if self.has_table() {
            self.drop_inode(i);
        } else {
            // An object no cached inode took (so no reader without a
            // reference has it): at once, so that the last holder of an
            // inode whose name goes meanwhile sees it is the last
            // (`put`), which a reference waiting for a grace period hides.
            self.put(i);
        }
    }

    fn getattr(&self, ino: Ino) -> Result<Attr, Errno> {
        self.getattr_node(ino.into())
    }

    fn getattr_node(&self, n: Node<'_>) -> Result<Attr, Errno> {
        let ino = n.ino;
        // The cached inode's object: no table search, and the inode's lock
        // may be waited for (no shard lock is held).
        if n.data.is_some() && self.borrow {
            let i = self.node(n)?;
            // `FastPaths::lockless_attrs`: no lock at all.
            if let Some(s) = i.snapshot() {
                i.mark_ctime_queried();
                return Ok(inode::attr_of_snapshot(ino, &s));
            }
            let st = rd(&i);
            st.mark_ctime_queried();
            return Ok(self.attr(ino, &st));
        }
        // The short way: the state read under the shard's lock, if its
        // lock is free and the file's data is not in a memfd (whose size
        // is read from the kernel).
        if let Some(a) = self.with_inode(ino, |i| {
            if let Some(s) = i.snapshot() {
                i.mark_ctime_queried();
                return Some(inode::attr_of_snapshot(ino, &s));
            }
            let st = inode::try_rd(i)?;
            if matches!(st.kind(), Kind::Reg(RegFile::Memfd(_))) {
                return None;
            }
            st.mark_ctime_queried();
            Some(self.attr(ino, &st))
        }) {
            return Ok(a);
        }
        let i = self.get(ino)?;
        let st = rd(&i);
        // `fill_mg_cmtime`: the times are reported, so the next change
        // must show in them.
        st.mark_ctime_queried();
        Ok(self.attr(ino, &st))
    }

    fn getattr_pinned(&self, n: Node<'_>) -> Option<Attr> {
        self.getattr_pinned_inline(n)
    }

    fn setattr(&self, ino: Ino, set: &SetAttr) -> Result<Attr, Errno> {
        self.setattr_inode(ino.into(), set)
    }

    fn setattr_node(&self, n: Node<'_>, set: &SetAttr) -> Result<Attr, Errno> {
        self.setattr_inode(n, set)
    }

    fn create(&self, dir: Ino, name: &[u8], new: NewInode) -> Result<Attr, Errno> {
        self.create_node(dir.into(), name, new).map(|(a, d)| {
            if let Some(d) = d {
                self.release_data(a.ino, d);
            }
            a
        })
    }

    fn create_node(&self, dir: Node<'_>, name: &[u8], new: NewInode) -> Result<Found, Errno> {
        self.make_node(dir, name, new, Kind::Reg(RegFile::default()))
            .map(|(a, i)| (a, Some(data_of(i))))
    }

    fn mknod(&self, dir: Ino, name: &[u8], new: NewInode, rdev: u64) -> Result<Attr, Errno> {
        // `shmem_mknod`: every type but directories and symlinks, which
        // have their own calls.
        match new.mode & crate::fs::S_IFMT {
            crate::fs::S_IFREG => self.create(dir, name, new),
            crate::fs::S_IFIFO | crate::fs::S_IFSOCK => self
                .make_node(dir.into(), name, new, Kind::Special { rdev: 0 })
                .map(|(a, i)| self.put_attr(a, i)),
            crate::fs::S_IFCHR | crate::fs::S_IFBLK => self
                .make_node(dir.into(), name, new, Kind::Special { rdev })
                .map(|(a, i)| self.put_attr(a, i)),
            _ => Err(Errno::EINVAL),
        }
    }

    fn mknod_node(
        &self,
        dir: Node<'_>,
        name: &[u8],
        new: NewInode,
        rdev: u64,
    ) -> Result<Found, Errno> {
        // `shmem_mknod`: every type but directories and symlinks, which
        // have their own calls.
        let kind = match new.mode & crate::fs::S_IFMT {
            crate::fs::S_IFREG => Kind::Reg(RegFile::default()),
            crate::fs::S_IFIFO | crate::fs::S_IFSOCK => Kind::Special { rdev: 0 },
            crate::fs::S_IFCHR | crate::fs::S_IFBLK => Kind::Special { rdev },
            _ => return Err(Errno::EINVAL),
        };
        self.make_node(dir, name, new, kind)
            .map(|(a, i)| (a, Some(data_of(i))))
    }

    fn mkdir(&self, dir: Ino, name: &[u8], new: NewInode) -> Result<Attr, Errno> {
        self.make_node(dir.into(), name, new, Kind::Dir(Box::new(Dir::new())))
            .map(|(a, i)| self.put_attr(a, i))
    }

    fn mkdir_node(&self, dir: Node<'_>, name: &[u8], new: NewInode) -> Result<Found, Errno> {
        self.make_node(dir, name, new, Kind::Dir(Box::new(Dir::new())))
            .map(|(a, i)| (a, Some(data_of(i))))
    }

    fn symlink(&self, dir: Ino, name: &[u8], target: &[u8], new: NewInode) -> Result<Attr, Errno> {
        self.make_symlink(dir.into(), name, target, new)
            .map(|(a, i)| self.put_attr(a, i))
    }

    fn symlink_node(
        &self,
        dir: Node<'_>,
        name: &[u8],
        target: &[u8],
        new: NewInode,
    ) -> Result<Found, Errno> {
        self.make_symlink(dir, name, target, new)
            .map(|(a, i)| (a, Some(data_of(i))))
    }

    fn tmpfile(&self, dir: Ino, new: NewInode) -> Result<Attr, Errno> {
        // Without the table nothing holds the nameless inode but this
        // reference: it is given back at once.
        self.make_tmpfile(dir.into(), new)
            .map(|(a, i)| self.put_attr(a, i))
    }

    fn tmpfile_node(&self, dir: Node<'_>, new: NewInode) -> Result<Found, Errno> {
        self.make_tmpfile(dir, new)
            .map(|(a, i)| (a, Some(data_of(i))))
    }

    fn link(&self, ino: Ino, dir: Ino, name: &[u8]) -> Result<Attr, Errno> {
        self.link_name(ino.into(), dir.into(), name)
    }

    fn link_node(&self, n: Node<'_>, dir: Node<'_>, name: &[u8]) -> Result<Attr, Errno> {
        self.link_name(n, dir, name)
    }

    fn unlink(&self, dir: Ino, name: &[u8]) -> Result<(), Errno> {
        self.unlink_name(dir.into(), None, name)
    }

    fn unlink_node(&self, dir: Node<'_>, victim: Node<'_>, name: &[u8]) -> Result<(), Errno> {
        self.unlink_name(dir, Some(victim), name)
    }

    fn rmdir(&self, dir: Ino, name: &[u8]) -> Result<(), Errno> {
        self.rmdir_name(dir.into(), None, name)
    }

    fn rmdir_node(&self, dir: Node<'_>, victim: Node<'_>, name: &[u8]) -> Result<(), Errno> {
        self.rmdir_name(dir, Some(victim), name)
    }

    fn rename(
        &self,
        odir: Ino,
        oname: &[u8],
        ndir: Ino,
        nname: &[u8],
        flags: u32,
    ) -> Result<(), Errno> {
        self.rename_names(odir.into(), oname, ndir.into(), nname, flags, None)
            .map(|wo| {
                // No whiteout without one asked for; `put` all the same.
                if let Some((_, i)) = wo {
                    self.put(i);
                }
            })
    }

    fn rename_node(
        &self,
        odir: Node<'_>,
        oname: &[u8],
        ndir: Node<'_>,
        nname: &[u8],
        flags: u32,
        whiteout: Option<NewInode>,
    ) -> Result<Option<Found>, Errno> {
        let wo = self.rename_names(odir, oname, ndir, nname, flags, whiteout)?;
        Ok(wo.map(|(a, i)| (a, Some(data_of(i)))))
    }

    fn rename_whiteout(
        &self,
        odir: Ino,
        oname: &[u8],
        ndir: Ino,
        nname: &[u8],
        flags: u32,
        whiteout: NewInode,
    ) -> Result<Attr, Errno> {
        self.rename_names(
            odir.into(),
            oname,
            ndir.into(),
            nname,
            flags,
            Some(whiteout),
        )?
        .map(|(a, _)| a)
        .ok_or(Errno::EINVAL)
    }

    fn readlink(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        self.readlink_node(ino.into())
    }

    fn readlink_node(&self, n: Node<'_>) -> Result<Vec<u8>, Errno> {
        let i = self.node(n)?;
        let st = rd(&i);
        match st.kind() {
            Kind::Symlink { target, .. } => Ok(target.to_vec()),
            _ => Err(Errno::EINVAL),
        }
    }

    fn read(&self, ino: Ino, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.read_pages(ino.into(), off, buf)
    }

    // Inline: `do_read` calls it on the concrete type when the superblock
    // is tmpfs's (no dynamic call in a cached read's chain of loads).
    #[inline]
    fn read_node(&self, n: Node<'_>, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.read_pages(n, off, buf)
    }

    fn write(&self, ino: Ino, off: u64, data: &[u8]) -> Result<usize, Errno> {
        self.write_pages(ino.into(), off, data)
    }

    fn write_node(&self, n: Node<'_>, off: u64, data: &[u8]) -> Result<usize, Errno> {
        self.write_pages(n, off, data)
    }

    // Inline: `do_write` calls it on the concrete type, as `read_node`.
    #[inline]
    fn write_one_lock(
        &self,
        n: Node<'_>,
        off: Option<u64>,
        data: &[u8],
    ) -> Option<Result<(u64, usize, bool), Errno>> {
        self.write_alone(n, off, data)
    }

    fn fallocate(&self, ino: Ino, mode: u32, off: u64, len: u64) -> Result<(), Errno> {
        self.fallocate_pages(ino.into(), mode, off, len)
    }

    fn fallocate_node(&self, n: Node<'_>, mode: u32, off: u64, len: u64) -> Result<(), Errno> {
        self.fallocate_pages(n, mode, off, len)
    }

    fn seek_data_hole(&self, ino: Ino, off: u64, whence: Seek) -> Result<u64, Errno> {
        self.seek_pages(ino.into(), off, whence)
    }

    fn seek_data_hole_node(&self, n: Node<'_>, off: u64, whence: Seek) -> Result<u64, Errno> {
        self.seek_pages(n, off, whence)
    }

    fn readdir(
        &self,
        dir: Ino,
        cookie: u64,
        emit: &mut dyn FnMut(&DirEntry) -> bool,
    ) -> Result<(), Errno> {
        self.readdir_from(dir.into(), cookie, emit)
    }

    fn readdir_node(
        &self,
        dir: Node<'_>,
        cookie: u64,
        emit: &mut dyn FnMut(&DirEntry) -> bool,
    ) -> Result<(), Errno> {
        self.readdir_from(dir, cookie, emit)
    }

    fn statfs(&self) -> StatFs {
        let (blocks, bfree) = match (&self.store, self.max_pages) {
            // The directory's file system: the files' pages and the
            // ballast that stands for uvfs's own.
            (Some(s), _) => s.space(),
            (None, Some(m)) => (m, m.saturating_sub(self.used_pages.load(Ordering::Relaxed))),
            (None, None) => (0, 0),
        };
        let (files, ffree) = match self.max_inodes {
            Some(m) => (
                m,
                m.saturating_sub(self.used_inodes.load(Ordering::Relaxed)),
            ),
            None => (0, 0),
        };
        StatFs {
            bsize: PAGE_SIZE,
            blocks,
            bfree,
            files,
            ffree,
            namemax: NAME_MAX as u64,
        }
    }

    fn getxattr(&self, ino: Ino, name: &[u8]) -> Result<Vec<u8>, Errno> {
        self.xattr_get(ino.into(), name)
    }

    fn getxattr_node(&self, n: Node<'_>, name: &[u8]) -> Result<Vec<u8>, Errno> {
        self.xattr_get(n, name)
    }

    fn setxattr(
        &self,
        ino: Ino,
        name: &[u8],
        value: Option<&[u8]>,
        flags: i32,
    ) -> Result<(), Errno> {
        self.xattr_set(ino.into(), name, value, flags)
    }

    fn setxattr_node(
        &self,
        n: Node<'_>,
        name: &[u8],
        value: Option<&[u8]>,
        flags: i32,
    ) -> Result<(), Errno> {
        self.xattr_set(n, name, value, flags)
    }

    fn listxattr(&self, ino: Ino) -> Result<Vec<Vec<u8>>, Errno> {
        self.xattr_list(ino.into())
    }

    fn listxattr_node(&self, n: Node<'_>) -> Result<Vec<Vec<u8>>, Errno> {
        self.xattr_list(n)
    }

    fn get_acl(&self, ino: Ino, ty: AclType) -> Result<Option<Arc<PosixAcl>>, Errno> {
        self.acl_get(ino.into(), ty)
    }

    fn get_acl_node(&self, n: Node<'_>, ty: AclType) -> Result<Option<Arc<PosixAcl>>, Errno> {
        self.acl_get(n, ty)
    }

    fn set_acl(
        &self,
        ino: Ino,
        ty: AclType,
        acl: Option<Arc<PosixAcl>>,
        mode: Option<u32>,
    ) -> Result<Attr, Errno> {
        self.acl_set(ino.into(), ty, acl, mode)
    }

    fn set_acl_node(
        &self,
        n: Node<'_>,
        ty: AclType,
        acl: Option<Arc<PosixAcl>>,
        mode: Option<u32>,
    ) -> Result<Attr, Errno> {
        self.acl_set(n, ty, acl, mode)
    }

    fn get_seals(&self, ino: Ino) -> Result<u32, Errno> {
        self.get_seals_node(ino.into())
    }

    fn get_seals_node(&self, n: Node<'_>) -> Result<u32, Errno> {
        // shmem gives every inode `F_SEAL_SEAL` at creation; only
        // `memfd_create(MFD_ALLOW_SEALING)` clears it, and uvfs has no
        // memfd. A directory is no shmem file: `EINVAL`.
        let i = self.node(n)?;
        match rd(&i).kind() {
            inode::Kind::Reg(_) => Ok(crate::uapi::F_SEAL_SEAL),
            _ => Err(Errno::EINVAL),
        }
    }

    fn mmap_file(&self, ino: Ino, accmode: i32) -> Result<std::os::fd::OwnedFd, Errno> {
        self.mmap_file_node(ino.into(), accmode)
    }

    fn mmap_file_node(&self, n: Node<'_>, accmode: i32) -> Result<std::os::fd::OwnedFd, Errno> {
        let i = self.node(n)?;
        let mut st = inode::wr(&i);
        match st.kind_mut() {
            Kind::Reg(f) => f.memfd(self, i.file_index())?.reopen(accmode),
            _ => Err(Errno::ENODEV),
        }
    }

    fn evict(&self, ino: Ino) {
        self.evict_inode(ino, None);
    }

    fn evict_node(&self, ino: Ino, data: Option<InodeData>) {
        // SAFETY: every `InodeData` tmpfs hands out is an `Arc<Inode>`
        // (`data_of`), and the VFS gives each back once.
        let held = data.map(|d| unsafe { d.into_arc::<Inode>() });
        self.evict_inode(ino, held);
    }
}

impl crate::reclaim::Free for Inode {
    unsafe fn free(p: std::ptr::NonNull<Inode>) {
        // SAFETY: `p` came from `Arc::into_raw` in `Tmpfs::drop_inode`,
        // with the reference it held, released once here.
        drop(unsafe { Arc::from_raw(p.as_ptr()) });
    }
}

/// An inode as the cached inode's object (see [`FileSystem::inode_data`]).
fn data_of(i: Arc<Inode>) -> InodeData {
    InodeData::from_arc(i)
}

/// A new reference to the inode a borrowed object is.
///
/// # Safety
/// `d` is an object tmpfs made (`data_of`), held for the call.
unsafe fn clone_arc(d: super::DataRef<'_>) -> Arc<Inode> {
    // SAFETY: `d` points at an `Arc<Inode>`'s value (the caller's promise),
    // whose reference is held for the call: one more count and a new `Arc`
    // from the same pointer.
    unsafe {
        let p: *const Inode = d.get::<Inode>();
        Arc::increment_strong_count(p);
        Arc::from_raw(p)
    }
}

/// An inode reached through [`Tmpfs::node`]: borrowed from the VFS's cached
/// inode, or a reference taken from the table.
enum Held<'a> {
    Borrowed(&'a Inode),
    Owned(Arc<Inode>),
}

impl Held<'_> {
    /// A weak reference to the inode (a new directory's parent).
    fn downgrade(&self) -> std::sync::Weak<Inode> {
        match self {
            Held::Borrowed(i) => {
                let p: *const Inode = *i;
                // SAFETY: a borrowed inode is the VFS's object (`node`),
                // an `Arc<Inode>`'s value whose reference the cached inode
                // holds for the call; the `ManuallyDrop` borrows that
                // reference without giving it back.
                let a = std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(p) });
                Arc::downgrade(&a)
            }
            Held::Owned(i) => Arc::downgrade(i),
        }
    }
}

impl std::ops::Deref for Held<'_> {
    type Target = Inode;
    #[inline]
    fn deref(&self) -> &Inode {
        match self {
            Held::Borrowed(i) => i,
            Held::Owned(i) => i,
        }
    }
}

#[cfg(test)]
mod tests;
