//! An in-memory tmpfs behind [`FileSystem`], following Linux 6.18's shmem
//! (`mm/shmem.c`) and its `simple_offset` directories (`fs/libfs.c`).
//!
//! # Layout
//!
//! - An inode table split into [`SHARDS`] shards (`RwLock<HashMap>` each,
//!   keyed by inode number), each inode behind its own `RwLock`: operations
//!   on different inodes never share a lock beyond a brief shard read.
//! - Directories: `name -> entry` ([`BTreeMap`]), plus the entry order and
//!   the offset map (Linux's maple tree of `d_off` cookies).
//! - Regular files: sparse 4 KiB pages in a `BTreeMap<page index, Page>`;
//!   a page is either written data or an `fallocate`d, not yet written page
//!   (Linux's `!uptodate` folio: reads as zeros, counts as allocated, is a
//!   hole for `SEEK_DATA`).
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
//! Not modelled: xattrs/ACLs, huge pages, `RENAME_WHITEOUT` (rejected with
//! `EINVAL` since the trait has no device nodes), quotas, seals.

use crate::primitive::{
    PlainMutex as Mutex, PlainRwLock as RwLock, PlainRwLockReadGuard as RwLockReadGuard,
    PlainRwLockWriteGuard as RwLockWriteGuard,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{
    Attr, DirEntry, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FileSystem, FsLimits, Ino, NewInode,
    RENAME_EXCHANGE, RENAME_NOREPLACE, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG, S_ISGID, Seek, SetAttr,
    SetTime, StatFs, Timespec,
};
use crate::errno::Errno;

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

/// Cookie meaning "first real entry" (`DIR_OFFSET_FIRST`).
const DIR_OFFSET_FIRST: u64 = 2;
/// Lowest offset given to an entry (`DIR_OFFSET_MIN`).
const DIR_OFFSET_MIN: u64 = 3;
/// `fallocate` modes Linux's `vfs_fallocate` knows (`FALLOC_FL_SUPPORTED_MASK`
/// in 6.18: keep size, punch hole, no-hide-stale, collapse, zero, insert,
/// unshare, write zeroes); other bits are `EOPNOTSUPP` before anything else.
const FALLOC_KNOWN: u32 = 0xff;
/// Pages one `fallocate` may add: beyond this the call fails with `ENOMEM`
/// (what Linux reports when memory runs out) instead of exhausting memory
/// on bookkeeping (64 GiB per call).
const FALLOC_MAX_NEW_PAGES: u64 = 1 << 24;
/// Readdir snapshots this many entries per lock hold.
const READDIR_BATCH: usize = 128;

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

/// One page of a regular file.
enum Page {
    /// Allocated by `fallocate`, never written: reads as zeros, is a hole
    /// for `SEEK_DATA`/`SEEK_HOLE`.
    Falloc,
    /// Written data.
    Data(Box<[u8; PAGE_SIZE as usize]>),
    /// Zeros that count as data: a page `fallocate`d again after an earlier
    /// `fallocate` allocated it (Linux's `SGP_FALLOC` zeroes such a folio and
    /// marks it uptodate). Holds no memory until written.
    Zero,
}

fn zero_page() -> Box<[u8; PAGE_SIZE as usize]> {
    Box::new([0u8; PAGE_SIZE as usize])
}

/// A directory entry as stored.
#[derive(Clone)]
struct Slot {
    name: Box<[u8]>,
    ino: Ino,
    ftype: u32,
    offset: u64,
}

/// A directory's entries: by name, in listing order (by position sequence,
/// larger = nearer the head) and by offset (cookie).
#[derive(Default)]
struct Dir {
    names: BTreeMap<Box<[u8]>, u64>,
    order: BTreeMap<u64, Slot>,
    offsets: BTreeMap<u64, u64>,
    next_offset: u64,
    next_seq: u64,
}

impl Dir {
    fn new() -> Dir {
        Dir {
            next_offset: DIR_OFFSET_MIN,
            ..Dir::default()
        }
    }

    fn get(&self, name: &[u8]) -> Option<&Slot> {
        self.names.get(name).and_then(|seq| self.order.get(seq))
    }

    fn len(&self) -> u64 {
        self.names.len() as u64
    }

    /// Allocates a free offset cyclically in `[DIR_OFFSET_MIN, max]`
    /// (Linux's `mtree_alloc_cyclic`); `ENOSPC` when all are taken.
    fn alloc_offset(&mut self, max: u64) -> Result<u64, Errno> {
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
    fn insert(&mut self, name: &[u8], ino: Ino, ftype: u32, offset: u64) {
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

    fn remove(&mut self, name: &[u8]) -> Option<Slot> {
        let seq = self.names.remove(name)?;
        let slot = self.order.remove(&seq)?;
        self.offsets.remove(&slot.offset);
        Some(slot)
    }

    /// Points `name` at another inode and moves it to the head, keeping its
    /// offset (one side of `RENAME_EXCHANGE`).
    fn replace_to_head(&mut self, name: &[u8], ino: Ino, ftype: u32) {
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

/// A regular file's contents.
#[derive(Default)]
struct RegFile {
    size: u64,
    pages: BTreeMap<u64, Page>,
}

enum Kind {
    Reg(RegFile),
    Dir(Dir),
    Symlink { target: Box<[u8]>, has_page: bool },
}

struct State {
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    atime: Timespec,
    mtime: Timespec,
    ctime: Timespec,
    btime: Timespec,
    /// An `O_TMPFILE` inode never linked yet (`I_LINKABLE`).
    linkable: bool,
    kind: Kind,
}

impl State {
    fn is_dir(&self) -> bool {
        matches!(self.kind, Kind::Dir(_))
    }

    fn dir(&self) -> Result<&Dir, Errno> {
        match &self.kind {
            Kind::Dir(d) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn dir_mut(&mut self) -> Result<&mut Dir, Errno> {
        match &mut self.kind {
            Kind::Dir(d) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }

    /// Pages this inode holds against the space limit.
    fn pages_held(&self) -> u64 {
        match &self.kind {
            Kind::Reg(f) => f.pages.len() as u64,
            Kind::Symlink { has_page, .. } => u64::from(*has_page),
            Kind::Dir(_) => 0,
        }
    }

    fn stamp_mc(&mut self, now: Timespec) {
        self.mtime = now;
        self.ctime = now;
    }
}

struct Inode {
    ino: Ino,
    /// For a directory, its parent (the root: itself). Changed only under
    /// the rename mutex.
    parent: AtomicU64,
    st: RwLock<State>,
}

fn rd(i: &Inode) -> RwLockReadGuard<'_, State> {
    i.st.read().unwrap_or_else(|e| e.into_inner())
}

fn wr(i: &Inode) -> RwLockWriteGuard<'_, State> {
    i.st.write().unwrap_or_else(|e| e.into_inner())
}

/// The write guards of a sorted, deduplicated set of inodes.
type Guards<'a> = Vec<(Ino, RwLockWriteGuard<'a, State>)>;

fn lock_all(inodes: &[Arc<Inode>]) -> Guards<'_> {
    inodes.iter().map(|i| (i.ino, wr(i))).collect()
}

fn find<'a>(g: &'a mut Guards<'_>, ino: Ino) -> Option<&'a mut State> {
    g.iter_mut().find(|(i, _)| *i == ino).map(|(_, s)| &mut **s)
}

/// Validates one path component (the VFS has done so already; this keeps
/// the tree sound whatever the caller passes).
fn check_name(name: &[u8]) -> Result<(), Errno> {
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

/// One shard of the inode table.
/// Each on its own cache lines, so threads working in different shards do
/// not bounce one line between them.
type Shard = crossbeam_utils::CachePadded<RwLock<HashMap<Ino, Arc<Inode>, InoHash>>>;

/// Hashes an inode number with one multiply, folding the high half down so
/// the low bits (which pick the bucket) depend on every bit: inode numbers
/// in one shard share their low bits.
#[derive(Clone, Copy, Default)]
struct InoHasher(u64);

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

/// An in-memory tmpfs. See the [module docs](self).
pub struct Tmpfs {
    shards: Box<[Shard]>,
    next_ino: AtomicU64,
    max_pages: Option<u64>,
    max_inodes: Option<u64>,
    used_pages: AtomicU64,
    used_inodes: AtomicU64,
    rename_lock: Mutex<()>,
    /// Highest directory offset (`S32_MAX - 1`; lowered by tests).
    dir_offset_max: u64,
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

    fn build(opts: TmpfsOptions) -> Tmpfs {
        let max_pages = opts
            .size_bytes
            .filter(|&b| b > 0)
            .map(|b| b.div_ceil(PAGE_SIZE));
        let max_inodes = opts.nr_inodes.filter(|&n| n > 0);
        let shards = (0..SHARDS)
            .map(|_| crossbeam_utils::CachePadded::new(RwLock::new(HashMap::default())))
            .collect();
        let fs = Tmpfs {
            shards,
            next_ino: AtomicU64::new(ROOT_INO + 1),
            max_pages,
            max_inodes,
            used_pages: AtomicU64::new(0),
            used_inodes: AtomicU64::new(1),
            rename_lock: Mutex::new(()),
            dir_offset_max: DIR_OFFSET_EOD - 1,
        };
        let now = Timespec::now();
        let root = State {
            mode: S_IFDIR | (opts.mode & 0o7777),
            uid: opts.uid,
            gid: opts.gid,
            nlink: 2,
            atime: now,
            mtime: now,
            ctime: now,
            btime: now,
            linkable: false,
            kind: Kind::Dir(Dir::new()),
        };
        fs.insert_inode(ROOT_INO, ROOT_INO, root);
        fs
    }

    fn shard(&self, ino: Ino) -> &Shard {
        &self.shards[(ino % SHARDS as u64) as usize]
    }

    fn get(&self, ino: Ino) -> Result<Arc<Inode>, Errno> {
        let map = self.shard(ino).read().unwrap_or_else(|e| e.into_inner());
        map.get(&ino).cloned().ok_or(Errno::ESTALE)
    }

    fn insert_inode(&self, ino: Ino, parent: Ino, st: State) {
        let inode = Arc::new(Inode {
            ino,
            parent: AtomicU64::new(parent),
            st: RwLock::new(st),
        });
        self.shard(ino)
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(ino, inode);
    }

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

    fn reserve_inode(&self) -> Result<(), Errno> {
        if Self::reserve(&self.used_inodes, self.max_inodes, 1) {
            Ok(())
        } else {
            Err(Errno::ENOSPC)
        }
    }

    fn release_inode(&self) {
        self.used_inodes.fetch_sub(1, Ordering::Relaxed);
    }

    fn reserve_pages(&self, n: u64) -> bool {
        Self::reserve(&self.used_pages, self.max_pages, n)
    }

    fn release_pages(&self, n: u64) {
        if n > 0 {
            self.used_pages.fetch_sub(n, Ordering::Relaxed);
        }
    }

    fn attr(ino: Ino, st: &State) -> Attr {
        let (size, blocks) = match &st.kind {
            Kind::Reg(f) => (f.size, f.pages.len() as u64 * (PAGE_SIZE / 512)),
            Kind::Dir(d) => (EMPTY_DIR_SIZE + DIRENT_SIZE * d.len(), 0),
            Kind::Symlink { target, has_page } => (
                target.len() as u64,
                if *has_page { PAGE_SIZE / 512 } else { 0 },
            ),
        };
        Attr {
            ino,
            mode: st.mode,
            nlink: st.nlink,
            uid: st.uid,
            gid: st.gid,
            size,
            blocks,
            blksize: PAGE_SIZE as u32,
            atime: st.atime,
            mtime: st.mtime,
            ctime: st.ctime,
            btime: st.btime,
        }
    }

    /// The common part of create, mkdir and symlink: a new inode named
    /// `name` in `dir`.
    fn make_node(&self, dir: Ino, name: &[u8], new: NewInode, kind: Kind) -> Result<Attr, Errno> {
        check_name(name)?;
        let d = self.get(dir)?;
        let mut ds = wr(&d);
        if ds.dir()?.get(name).is_some() {
            return Err(Errno::EEXIST);
        }
        if ds.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        let is_dir = matches!(kind, Kind::Dir(_));
        if is_dir && ds.nlink == u32::MAX {
            return Err(Errno::EMLINK);
        }
        self.reserve_inode()?;
        let wants_page = matches!(&kind, Kind::Symlink { has_page: true, .. });
        if wants_page && !self.reserve_pages(1) {
            self.release_inode();
            return Err(Errno::ENOSPC);
        }
        let offset = match ds.dir_mut()?.alloc_offset(self.dir_offset_max) {
            Ok(o) => o,
            Err(e) => {
                self.release_pages(u64::from(wants_page));
                self.release_inode();
                return Err(e);
            }
        };
        let ftype = match &kind {
            Kind::Reg(_) => S_IFREG,
            Kind::Dir(_) => S_IFDIR,
            Kind::Symlink { .. } => S_IFLNK,
        };
        let mut mode = ftype | (new.mode & 0o7777);
        if ftype == S_IFLNK {
            mode = S_IFLNK | 0o777;
        }
        let mut gid = new.gid;
        if ds.mode & S_ISGID != 0 {
            gid = ds.gid;
            if is_dir {
                mode |= S_ISGID;
            }
        }
        let ino = self.next_ino.fetch_add(1, Ordering::Relaxed);
        let now = Timespec::now();
        let st = State {
            mode,
            uid: new.uid,
            gid,
            nlink: if is_dir { 2 } else { 1 },
            atime: now,
            mtime: now,
            ctime: now,
            btime: now,
            linkable: false,
            kind,
        };
        let attr = Self::attr(ino, &st);
        self.insert_inode(ino, dir, st);
        ds.dir_mut()?.insert(name, ino, ftype, offset);
        if is_dir {
            ds.nlink += 1;
        }
        ds.stamp_mc(now);
        Ok(attr)
    }

    /// Peeks at `name` in `dir`: the directory and the child's number.
    fn peek(&self, dir: Ino, name: &[u8]) -> Result<(Arc<Inode>, Option<Ino>), Errno> {
        let d = self.get(dir)?;
        let child = rd(&d).dir()?.get(name).map(|s| s.ino);
        Ok((d, child))
    }

    /// Locks `dir` and its child `name` (in inode order), re-checking the
    /// name; `f` runs with both states.
    fn with_dir_and_child<R>(
        &self,
        dir: Ino,
        name: &[u8],
        f: impl FnOnce(&mut State, &mut State, Ino) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        check_name(name)?;
        loop {
            let (d, child) = self.peek(dir, name)?;
            let child = child.ok_or(Errno::ENOENT)?;
            let Ok(c) = self.get(child) else { continue };
            if child == dir {
                return Err(Errno::EINVAL);
            }
            let mut arcs = [d, c];
            arcs.sort_by_key(|i| i.ino);
            let mut g = lock_all(&arcs);
            let still = find(&mut g, dir)
                .and_then(|s| s.dir().ok()?.get(name))
                .map(|s| s.ino);
            if still != Some(child) {
                continue;
            }
            let (a, b) = g.split_at_mut(1);
            let (ds, cs) = if a[0].0 == dir {
                (&mut *a[0].1, &mut *b[0].1)
            } else {
                (&mut *b[0].1, &mut *a[0].1)
            };
            return f(ds, cs, child);
        }
    }

    /// Whether directory `anc` is `ino` or one of its ancestors. Callers
    /// hold the rename mutex, so no directory moves meanwhile.
    fn is_ancestor_or_self(&self, anc: Ino, mut ino: Ino) -> bool {
        loop {
            if ino == anc {
                return true;
            }
            if ino == ROOT_INO {
                return false;
            }
            let Ok(i) = self.get(ino) else { return false };
            let p = i.parent.load(Ordering::Acquire);
            if p == ino {
                return false;
            }
            ino = p;
        }
    }

    /// Frees pages from `from` (a byte offset) to the end, zeroing the tail
    /// of a partial page (`shmem_truncate_range(from, -1)`).
    fn truncate_pages(&self, f: &mut RegFile, from: u64) {
        let first_whole = from.div_ceil(PAGE_SIZE);
        let gone = f.pages.split_off(&first_whole);
        self.release_pages(gone.len() as u64);
        if !from.is_multiple_of(PAGE_SIZE)
            && let Some(Page::Data(p)) = f.pages.get_mut(&(from / PAGE_SIZE))
        {
            p[(from % PAGE_SIZE) as usize..].fill(0);
        }
    }

    /// Punches `[off, end)`: whole pages freed, partial ones zeroed.
    fn punch(&self, f: &mut RegFile, off: u64, end: u64) {
        let first_whole = off.div_ceil(PAGE_SIZE);
        let end_whole = end / PAGE_SIZE;
        if first_whole < end_whole {
            let keys: Vec<u64> = f
                .pages
                .range(first_whole..end_whole)
                .map(|(&k, _)| k)
                .collect();
            for k in &keys {
                f.pages.remove(k);
            }
            self.release_pages(keys.len() as u64);
        }
        let mut zero = |idx: u64, from: u64, to: u64| {
            if let Some(Page::Data(p)) = f.pages.get_mut(&idx) {
                p[from as usize..to as usize].fill(0);
            }
        };
        let (si, so) = (off / PAGE_SIZE, off % PAGE_SIZE);
        let (ei, eo) = (end / PAGE_SIZE, end % PAGE_SIZE);
        if si == ei {
            zero(si, so, eo);
        } else {
            if so != 0 {
                zero(si, so, PAGE_SIZE);
            }
            if eo != 0 {
                zero(ei, 0, eo);
            }
        }
    }

    /// Consistency check for tests: every entry names a live inode of the
    /// recorded type, link counts equal names (dirs: 2 + subdirectories),
    /// space and inode counters equal what the inodes hold, and (with
    /// `after_evict`) no inode with link count 0 remains.
    #[doc(hidden)]
    pub fn fsck(&self, after_evict: bool) -> Result<(), String> {
        let mut all: HashMap<Ino, Arc<Inode>> = HashMap::new();
        for s in self.shards.iter() {
            for (k, v) in s.read().unwrap().iter() {
                all.insert(*k, v.clone());
            }
        }
        let mut names: HashMap<Ino, u32> = HashMap::new();
        let mut subdirs: HashMap<Ino, u32> = HashMap::new();
        let (mut pages, mut inodes) = (0u64, 0u64);
        for (&ino, i) in &all {
            let st = rd(i);
            pages += st.pages_held();
            inodes += if st.is_dir() {
                1
            } else {
                u64::from(st.nlink.max(1))
            };
            if after_evict && st.nlink == 0 {
                return Err(format!("orphan inode {ino} left after evict"));
            }
            if let Kind::Dir(d) = &st.kind {
                if d.names.len() != d.order.len() || d.order.len() != d.offsets.len() {
                    return Err(format!("dir {ino}: index sizes differ"));
                }
                for slot in d.order.values() {
                    let c = all
                        .get(&slot.ino)
                        .ok_or(format!("dir {ino}: dangling entry"))?;
                    let cs = rd(c);
                    if cs.mode & S_IFMT != slot.ftype || cs.nlink == 0 {
                        return Err(format!("dir {ino}: bad entry {:?}", slot.name));
                    }
                    *names.entry(slot.ino).or_default() += 1;
                    if cs.is_dir() {
                        *subdirs.entry(ino).or_default() += 1;
                        if c.parent.load(Ordering::Relaxed) != ino {
                            return Err(format!("dir {} has wrong parent", slot.ino));
                        }
                    }
                }
            }
        }
        for (&ino, i) in &all {
            let st = rd(i);
            let n = names.get(&ino).copied().unwrap_or(0);
            if st.is_dir() {
                let want = if st.nlink == 0 {
                    0
                } else {
                    2 + subdirs.get(&ino).copied().unwrap_or(0)
                };
                if st.nlink != want || (ino != ROOT_INO && st.nlink > 0 && n != 1) {
                    return Err(format!("dir {ino}: nlink {} names {n}", st.nlink));
                }
            } else if st.nlink != n {
                return Err(format!("inode {ino}: nlink {} names {n}", st.nlink));
            }
        }
        if pages != self.used_pages.load(Ordering::Relaxed) {
            return Err(format!(
                "pages {pages} != counter {}",
                self.used_pages.load(Ordering::Relaxed)
            ));
        }
        if inodes != self.used_inodes.load(Ordering::Relaxed) {
            return Err(format!(
                "inodes {inodes} != counter {}",
                self.used_inodes.load(Ordering::Relaxed)
            ));
        }
        Ok(())
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

    fn getattr(&self, ino: Ino) -> Result<Attr, Errno> {
        let i = self.get(ino)?;
        let st = rd(&i);
        Ok(Self::attr(ino, &st))
    }

    fn setattr(&self, ino: Ino, set: &SetAttr) -> Result<Attr, Errno> {
        let i = self.get(ino)?;
        let mut st = wr(&i);
        if let Some(size) = set.size {
            match st.kind {
                Kind::Reg(_) => {}
                Kind::Dir(_) => return Err(Errno::EISDIR),
                Kind::Symlink { .. } => return Err(Errno::EINVAL),
            }
            if size > MAX_FILE_SIZE {
                return Err(Errno::EFBIG);
            }
        }
        let now = Timespec::now();
        let mut any = set.mode.is_some()
            || set.uid.is_some()
            || set.gid.is_some()
            || set.atime.is_some()
            || set.mtime.is_some();
        if let Some(m) = set.mode {
            st.mode = (st.mode & S_IFMT) | (m & 0o7777);
        }
        if let Some(u) = set.uid {
            st.uid = u;
        }
        if let Some(g) = set.gid {
            st.gid = g;
        }
        let at = |t: SetTime| match t {
            SetTime::Now => now,
            SetTime::At(t) => t,
        };
        if let Some(t) = set.atime {
            st.atime = at(t);
        }
        if let Some(t) = set.mtime {
            st.mtime = at(t);
        }
        if let Some(size) = set.size
            && let Kind::Reg(f) = &mut st.kind
        {
            // Linux frees pages past the new size even when it equals
            // the old one (preallocated KEEP_SIZE pages).
            // `shmem_setattr` stamps mtime and ctime when the size
            // changes, and `shmem_truncate_range` (run when shrinking or
            // keeping the size of a file that holds pages) stamps them
            // too; ftruncate and O_TRUNC also ask for them explicitly
            // (`mtime`), truncate(2) does not. Host: truncate 0 -> 0 of
            // an empty file stamps nothing, 6 -> 6 stamps both.
            let truncates = size <= f.size && !f.pages.is_empty();
            if size <= f.size {
                self.truncate_pages(f, size);
            }
            let old = std::mem::replace(&mut f.size, size);
            if old != size || truncates {
                if set.mtime.is_none() {
                    st.mtime = now;
                }
                any = true;
            }
        }
        if any && !set.no_ctime {
            st.ctime = now;
        }
        Ok(Self::attr(ino, &st))
    }

    fn create(&self, dir: Ino, name: &[u8], new: NewInode) -> Result<Attr, Errno> {
        self.make_node(dir, name, new, Kind::Reg(RegFile::default()))
    }

    fn mkdir(&self, dir: Ino, name: &[u8], new: NewInode) -> Result<Attr, Errno> {
        self.make_node(dir, name, new, Kind::Dir(Dir::new()))
    }

    fn symlink(&self, dir: Ino, name: &[u8], target: &[u8], new: NewInode) -> Result<Attr, Errno> {
        check_name(name)?;
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        if target.contains(&0) {
            return Err(Errno::EINVAL);
        }
        {
            let d = self.get(dir)?;
            let ds = rd(&d);
            if ds.dir()?.get(name).is_some() {
                return Err(Errno::EEXIST);
            }
        }
        if target.len() > SYMLINK_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let kind = Kind::Symlink {
            target: target.into(),
            has_page: target.len() >= SHORT_SYMLINK_LEN,
        };
        self.make_node(dir, name, new, kind)
    }

    fn tmpfile(&self, dir: Ino, new: NewInode) -> Result<Attr, Errno> {
        let d = self.get(dir)?;
        let ds = rd(&d);
        ds.dir()?;
        // Host: O_TMPFILE in a removed directory succeeds (`vfs_tmpfile`
        // has no IS_DEADDIR check, and the file gets no name there).
        self.reserve_inode()?;
        let gid = if ds.mode & S_ISGID != 0 {
            ds.gid
        } else {
            new.gid
        };
        drop(ds);
        let ino = self.next_ino.fetch_add(1, Ordering::Relaxed);
        let now = Timespec::now();
        let st = State {
            mode: S_IFREG | (new.mode & 0o7777),
            uid: new.uid,
            gid,
            nlink: 0,
            atime: now,
            mtime: now,
            ctime: now,
            btime: now,
            linkable: true,
            kind: Kind::Reg(RegFile::default()),
        };
        let attr = Self::attr(ino, &st);
        self.insert_inode(ino, dir, st);
        Ok(attr)
    }

    fn link(&self, ino: Ino, dir: Ino, name: &[u8]) -> Result<Attr, Errno> {
        check_name(name)?;
        let d = self.get(dir)?;
        let i = self.get(ino)?;
        if ino == dir {
            // A directory cannot be hard-linked (and a non-directory is
            // no directory to link into).
            return Err(if rd(&i).is_dir() {
                Errno::EPERM
            } else {
                Errno::ENOTDIR
            });
        }
        let mut arcs = [d, i];
        arcs.sort_by_key(|x| x.ino);
        let mut g = lock_all(&arcs);
        let (a, b) = g.split_at_mut(1);
        let (ds, is) = if a[0].0 == dir {
            (&mut *a[0].1, &mut *b[0].1)
        } else {
            (&mut *b[0].1, &mut *a[0].1)
        };
        if ds.dir()?.get(name).is_some() {
            return Err(Errno::EEXIST);
        }
        if ds.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        if is.is_dir() {
            return Err(Errno::EPERM);
        }
        if is.nlink == 0 && !is.linkable {
            return Err(Errno::ENOENT);
        }
        if is.nlink == u32::MAX {
            return Err(Errno::EMLINK);
        }
        if is.nlink > 0 {
            self.reserve_inode()?;
        }
        let offset = match ds.dir_mut()?.alloc_offset(self.dir_offset_max) {
            Ok(o) => o,
            Err(e) => {
                if is.nlink > 0 {
                    self.release_inode();
                }
                return Err(e);
            }
        };
        let ftype = is.mode & S_IFMT;
        ds.dir_mut()?.insert(name, ino, ftype, offset);
        let now = Timespec::now();
        ds.stamp_mc(now);
        is.nlink += 1;
        is.linkable = false;
        is.ctime = now;
        Ok(Self::attr(ino, is))
    }

    fn unlink(&self, dir: Ino, name: &[u8]) -> Result<(), Errno> {
        self.with_dir_and_child(dir, name, |ds, cs, _| {
            if cs.is_dir() {
                return Err(Errno::EISDIR);
            }
            ds.dir_mut()?.remove(name);
            if cs.nlink > 1 {
                self.release_inode();
            }
            cs.nlink = cs.nlink.saturating_sub(1);
            let now = Timespec::now();
            ds.stamp_mc(now);
            cs.ctime = now;
            Ok(())
        })
    }

    fn rmdir(&self, dir: Ino, name: &[u8]) -> Result<(), Errno> {
        self.with_dir_and_child(dir, name, |ds, cs, _| {
            if cs.dir()?.len() > 0 {
                return Err(Errno::ENOTEMPTY);
            }
            ds.dir_mut()?.remove(name);
            cs.nlink = 0;
            ds.nlink = ds.nlink.saturating_sub(1);
            let now = Timespec::now();
            ds.stamp_mc(now);
            cs.ctime = now;
            Ok(())
        })
    }

    fn rename(
        &self,
        odir: Ino,
        oname: &[u8],
        ndir: Ino,
        nname: &[u8],
        flags: u32,
    ) -> Result<(), Errno> {
        if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE) != 0
            || flags & (RENAME_NOREPLACE | RENAME_EXCHANGE) == (RENAME_NOREPLACE | RENAME_EXCHANGE)
        {
            return Err(Errno::EINVAL);
        }
        let exchange = flags & RENAME_EXCHANGE != 0;
        check_name(oname)?;
        check_name(nname)?;
        let cross = odir != ndir;
        let _tree = cross.then(|| self.rename_lock.lock().unwrap_or_else(|e| e.into_inner()));
        loop {
            let (_, src) = self.peek(odir, oname)?;
            let src = src.ok_or(Errno::ENOENT)?;
            let (_, tgt) = self.peek(ndir, nname)?;
            let mut ids = vec![odir, ndir, src];
            ids.extend(tgt);
            ids.sort_unstable();
            ids.dedup();
            let Ok(arcs) = ids
                .iter()
                .map(|&i| self.get(i))
                .collect::<Result<Vec<_>, _>>()
            else {
                // A directory is gone (ESTALE) or a child was evicted
                // meanwhile: look again.
                self.get(odir)?;
                self.get(ndir)?;
                continue;
            };
            let mut g = lock_all(&arcs);
            let now_src = find(&mut g, odir)
                .and_then(|s| s.dir().ok()?.get(oname))
                .map(|s| s.ino);
            let now_tgt = find(&mut g, ndir)
                .and_then(|s| s.dir().ok()?.get(nname))
                .map(|s| s.ino);
            if now_src != Some(src) || now_tgt != tgt {
                continue;
            }
            let src_arc = arcs.iter().find(|a| a.ino == src).cloned();
            let tgt_arc = tgt.and_then(|t| arcs.iter().find(|a| a.ino == t).cloned());
            return self.rename_locked(
                &mut g,
                (odir, oname),
                (ndir, nname),
                (src, src_arc),
                (tgt, tgt_arc),
                exchange,
                flags,
            );
        }
    }

    fn readlink(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        let i = self.get(ino)?;
        let st = rd(&i);
        match &st.kind {
            Kind::Symlink { target, .. } => Ok(target.to_vec()),
            _ => Err(Errno::EINVAL),
        }
    }

    fn read(&self, ino: Ino, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let i = self.get(ino)?;
        let st = rd(&i);
        let f = match &st.kind {
            Kind::Reg(f) => f,
            Kind::Dir(_) => return Err(Errno::EISDIR),
            Kind::Symlink { .. } => return Err(Errno::EINVAL),
        };
        if off >= f.size {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(f.size - off) as usize;
        let mut done = 0usize;
        while done < n {
            let pos = off + done as u64;
            let (idx, po) = (pos / PAGE_SIZE, (pos % PAGE_SIZE) as usize);
            let chunk = (PAGE_SIZE as usize - po).min(n - done);
            let dst = &mut buf[done..done + chunk];
            match f.pages.get(&idx) {
                Some(Page::Data(p)) => dst.copy_from_slice(&p[po..po + chunk]),
                _ => dst.fill(0),
            }
            done += chunk;
        }
        Ok(n)
    }

    fn write(&self, ino: Ino, off: u64, data: &[u8]) -> Result<usize, Errno> {
        let i = self.get(ino)?;
        let mut st = wr(&i);
        match st.kind {
            Kind::Reg(_) => {}
            Kind::Dir(_) => return Err(Errno::EISDIR),
            Kind::Symlink { .. } => return Err(Errno::EINVAL),
        }
        // generic_write_checks: an empty write succeeds before any limit
        // and stamps nothing; then EFBIG at the limit, clipped below it.
        if data.is_empty() {
            return Ok(0);
        }
        if off >= MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let len = (data.len() as u64).min(MAX_FILE_SIZE - off) as usize;
        // file_update_time runs before the copy: even ENOSPC stamps
        // (checked on the host with a full size=8k mount).
        st.stamp_mc(Timespec::now());
        let Kind::Reg(f) = &mut st.kind else {
            return Err(Errno::EINVAL);
        };
        let mut done = 0usize;
        while done < len {
            let pos = off + done as u64;
            let (idx, po) = (pos / PAGE_SIZE, (pos % PAGE_SIZE) as usize);
            let chunk = (PAGE_SIZE as usize - po).min(len - done);
            let page = match f.pages.get_mut(&idx) {
                Some(p) => p,
                None => {
                    if !self.reserve_pages(1) {
                        break;
                    }
                    f.pages.entry(idx).or_insert(Page::Falloc)
                }
            };
            if let Page::Falloc | Page::Zero = page {
                *page = Page::Data(zero_page());
            }
            if let Page::Data(p) = page {
                p[po..po + chunk].copy_from_slice(&data[done..done + chunk]);
            }
            done += chunk;
        }
        if done == 0 {
            return Err(Errno::ENOSPC);
        }
        f.size = f.size.max(off + done as u64);
        Ok(done)
    }

    fn fallocate(&self, ino: Ino, mode: u32, off: u64, len: u64) -> Result<(), Errno> {
        // vfs_fallocate's order: EINVAL, EOPNOTSUPP, file type, EFBIG; then
        // shmem_fallocate's own EOPNOTSUPP for the modes it lacks.
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        let punch = mode & FALLOC_FL_PUNCH_HOLE != 0;
        let keep = mode & FALLOC_FL_KEEP_SIZE != 0;
        if mode & !FALLOC_KNOWN != 0 || (punch && !keep) {
            return Err(Errno::EOPNOTSUPP);
        }
        let i = self.get(ino)?;
        let mut st = wr(&i);
        match st.kind {
            Kind::Reg(_) => {}
            Kind::Dir(_) => return Err(Errno::EISDIR),
            Kind::Symlink { .. } => return Err(Errno::ENODEV),
        }
        let end = off
            .checked_add(len)
            .filter(|&e| e <= MAX_FILE_SIZE)
            .ok_or(Errno::EFBIG)?;
        if mode & !(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE) != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let Kind::Reg(f) = &mut st.kind else {
            return Err(Errno::EINVAL);
        };
        if punch {
            self.punch(f, off, end);
        } else {
            let (first, last) = (off / PAGE_SIZE, end.div_ceil(PAGE_SIZE));
            let span = last - first;
            if self.max_pages.is_some_and(|m| span > m) {
                return Err(Errno::ENOSPC);
            }
            let missing = span - f.pages.range(first..last).count() as u64;
            if !self.reserve_pages(missing) {
                return Err(Errno::ENOSPC);
            }
            if missing > FALLOC_MAX_NEW_PAGES {
                self.release_pages(missing);
                return Err(Errno::ENOMEM);
            }
            for idx in first..last {
                // Host: a page an earlier fallocate allocated becomes data
                // for SEEK_DATA (zeroed, uptodate); pages new to this call
                // stay unwritten.
                match f.pages.entry(idx) {
                    std::collections::btree_map::Entry::Vacant(v) => {
                        v.insert(Page::Falloc);
                    }
                    std::collections::btree_map::Entry::Occupied(mut o) => {
                        if let Page::Falloc = o.get() {
                            *o.get_mut() = Page::Zero;
                        }
                    }
                }
            }
            if !keep && end > f.size {
                f.size = end;
            }
        }
        st.stamp_mc(Timespec::now());
        Ok(())
    }

    fn seek_data_hole(&self, ino: Ino, off: u64, whence: Seek) -> Result<u64, Errno> {
        let i = self.get(ino)?;
        let st = rd(&i);
        let Kind::Reg(f) = &st.kind else {
            return Err(Errno::EINVAL);
        };
        if off >= f.size {
            return Err(Errno::ENXIO);
        }
        let idx = off / PAGE_SIZE;
        match whence {
            Seek::Data => {
                let found = f
                    .pages
                    .range(idx..)
                    .find(|(_, p)| matches!(p, Page::Data(_) | Page::Zero));
                match found {
                    Some((&k, _)) => {
                        let pos = off.max(k * PAGE_SIZE);
                        if pos >= f.size {
                            Err(Errno::ENXIO)
                        } else {
                            Ok(pos)
                        }
                    }
                    None => Err(Errno::ENXIO),
                }
            }
            Seek::Hole => {
                let mut next = idx;
                for (&k, p) in f.pages.range(idx..) {
                    if k != next || !matches!(p, Page::Data(_) | Page::Zero) {
                        break;
                    }
                    next = k + 1;
                }
                let pos = if next == idx {
                    off
                } else {
                    next.saturating_mul(PAGE_SIZE)
                };
                Ok(pos.min(f.size))
            }
        }
    }

    fn readdir(
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

    fn statfs(&self) -> StatFs {
        let (blocks, bfree) = match self.max_pages {
            Some(m) => (m, m.saturating_sub(self.used_pages.load(Ordering::Relaxed))),
            None => (0, 0),
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

    fn evict(&self, ino: Ino) {
        let Ok(i) = self.get(ino) else { return };
        let mut st = wr(&i);
        if st.nlink != 0 || ino == ROOT_INO {
            return;
        }
        // Only the caller that takes the inode out of the table frees it.
        let removed = self
            .shard(ino)
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ino);
        if removed.is_none() {
            return;
        }
        self.release_pages(st.pages_held());
        match &mut st.kind {
            Kind::Reg(f) => f.pages.clear(),
            Kind::Symlink { has_page, .. } => *has_page = false,
            Kind::Dir(_) => {}
        }
        self.release_inode();
    }
}

impl Tmpfs {
    /// The checks and changes of a rename once every inode involved is
    /// locked (`g`) and the names are known to point at `src` / `tgt`.
    #[allow(clippy::too_many_arguments)]
    fn rename_locked(
        &self,
        g: &mut Guards<'_>,
        (odir, oname): (Ino, &[u8]),
        (ndir, nname): (Ino, &[u8]),
        (src, src_arc): (Ino, Option<Arc<Inode>>),
        (tgt, tgt_arc): (Option<Ino>, Option<Arc<Inode>>),
        exchange: bool,
        flags: u32,
    ) -> Result<(), Errno> {
        let cross = odir != ndir;
        // do_renameat2's order.
        if exchange && tgt.is_none() {
            return Err(Errno::ENOENT);
        }
        if flags & RENAME_NOREPLACE != 0 && tgt.is_some() {
            return Err(Errno::EEXIST);
        }
        let src_dir = find(g, src).is_some_and(|s| s.is_dir());
        let tgt_dir = tgt.and_then(|t| find(g, t)).is_some_and(|s| s.is_dir());
        // The rename mutex is held when cross: ancestry is stable.
        if cross && src_dir && self.is_ancestor_or_self(src, ndir) {
            return Err(Errno::EINVAL);
        }
        if let Some(t) = tgt
            && cross
            && tgt_dir
            && self.is_ancestor_or_self(t, odir)
        {
            return Err(if exchange {
                Errno::EINVAL
            } else {
                Errno::ENOTEMPTY
            });
        }
        if tgt == Some(src) {
            // vfs_rename: same inode (hard links, or the same name): no-op.
            return Ok(());
        }
        if !exchange && tgt.is_some() {
            if src_dir && !tgt_dir {
                return Err(Errno::ENOTDIR);
            }
            if !src_dir && tgt_dir {
                return Err(Errno::EISDIR);
            }
        }
        // Split the guards into the (distinct) roles.
        let (mut od, mut nd, mut ss, mut ts) = (None, None, None, None);
        for (ino, s) in g.iter_mut() {
            let s = &mut **s;
            if *ino == odir {
                od = Some(s);
            } else if *ino == ndir {
                nd = Some(s);
            } else if *ino == src {
                ss = Some(s);
            } else if Some(*ino) == tgt {
                ts = Some(s);
            }
        }
        let (Some(od), Some(ss)) = (od, ss) else {
            return Err(Errno::ESTALE);
        };
        if cross && nd.is_none() || tgt.is_some() && ts.is_none() {
            return Err(Errno::ESTALE);
        }
        macro_rules! ndir_st {
            () => {
                match nd.as_deref_mut() {
                    Some(n) => n,
                    None => &mut *od,
                }
            };
        }
        if ndir_st!().nlink == 0 {
            return Err(Errno::ENOENT);
        }
        if let Some(t) = ts.as_deref()
            && !exchange
            && matches!(&t.kind, Kind::Dir(d) if d.len() > 0)
        {
            return Err(Errno::ENOTEMPTY);
        }
        // Link-count overflow of a parent gaining a subdirectory.
        if cross {
            let gains = if exchange {
                src_dir && !tgt_dir
            } else {
                src_dir && tgt.is_none()
            };
            let ogains = exchange && tgt_dir && !src_dir;
            if gains && ndir_st!().nlink == u32::MAX || ogains && od.nlink == u32::MAX {
                return Err(Errno::EMLINK);
            }
        }
        let src_ft = ss.mode & S_IFMT;
        let now = Timespec::now();
        if exchange {
            let Some(t) = ts else {
                return Err(Errno::ESTALE);
            };
            let tgt_ino = tgt.unwrap_or(src);
            let tgt_ft = t.mode & S_IFMT;
            // Target side first, then the source: the source inode (now
            // under the new name) ends up at the head. Both names keep
            // their offsets.
            od.dir_mut()?.replace_to_head(oname, tgt_ino, tgt_ft);
            ndir_st!().dir_mut()?.replace_to_head(nname, src, src_ft);
            if cross && src_dir != tgt_dir {
                if src_dir {
                    od.nlink -= 1;
                    ndir_st!().nlink += 1;
                } else {
                    ndir_st!().nlink -= 1;
                    od.nlink += 1;
                }
            }
            if cross {
                if let (true, Some(a)) = (src_dir, &src_arc) {
                    a.parent.store(ndir, Ordering::Release);
                }
                if let (true, Some(a)) = (tgt_dir, &tgt_arc) {
                    a.parent.store(odir, Ordering::Release);
                }
            }
            t.ctime = now;
        } else {
            // Allocate the new name's offset first: the only step that can
            // fail, so a failure changes nothing.
            let offset = match ts.as_deref() {
                Some(_) => None,
                None => Some(ndir_st!().dir_mut()?.alloc_offset(self.dir_offset_max)?),
            };
            od.dir_mut()?.remove(oname);
            let offset = match (offset, ts) {
                (Some(o), _) => o,
                (None, Some(t)) => {
                    let slot = ndir_st!().dir_mut()?.remove(nname);
                    if tgt_dir {
                        t.nlink = 0;
                        od.nlink -= 1;
                    } else {
                        if t.nlink > 1 {
                            self.release_inode();
                        }
                        t.nlink = t.nlink.saturating_sub(1);
                    }
                    t.ctime = now;
                    slot.map_or(DIR_OFFSET_MIN, |s| s.offset)
                }
                (None, None) => return Err(Errno::ESTALE),
            };
            ndir_st!().dir_mut()?.insert(nname, src, src_ft, offset);
            if src_dir && cross && tgt.is_none() {
                od.nlink -= 1;
                ndir_st!().nlink += 1;
            }
            if src_dir
                && cross
                && let Some(a) = &src_arc
            {
                a.parent.store(ndir, Ordering::Release);
            }
        }
        ss.ctime = now;
        od.stamp_mc(now);
        ndir_st!().stamp_mc(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
