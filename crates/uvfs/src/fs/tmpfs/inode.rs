//! Inodes: what one holds ([`State`], behind its own lock), the lock
//! helpers for operations on several inodes, attributes (`getattr`,
//! `setattr`) and eviction (Linux's `shmem_evict_inode`).

use std::collections::BTreeMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Weak};

use super::dir::{self, Target, check_name};
use super::pageindex::PageIndex;
use super::pages::{PageFile, RegFile};
use super::published::{AttrCell, PAGES_LIMIT, Snapshot, pack};
use super::{DIRENT_SIZE, EMPTY_DIR_SIZE, Held, MAX_FILE_SIZE, PAGE_SIZE, ROOT_INO, Tmpfs};
use crate::acl::PosixAcl;
use crate::errno::Errno;
use crate::fs::timekeeping::{coarse_mg, fine_mg};
use crate::fs::{Attr, Ino, Node, S_IFMT, S_IFREG, SetAttr, SetTime, Timespec};
use crate::primitive::sync::{SlimRwLock, SlimRwLockReadGuard, SlimRwLockWriteGuard};

/// One inode's extended attributes (`simple_xattrs`) and POSIX ACLs
/// (`i_acl`, `i_default_acl`), allocated on first use and kept in the
/// inode's [`State`] (under its lock, so an inode without any pays 8
/// bytes, not a mutex's 16); `xattr.rs` holds the operations on them.
pub(super) type Xattrs = Option<Box<XattrSet>>;

/// What [`Xattrs`] holds once allocated (dropped when empty again).
#[derive(Default)]
pub(super) struct XattrSet {
    /// The named attributes.
    pub(super) names: BTreeMap<Box<[u8]>, Box<[u8]>>,
    /// The access ACL ([`State::acl`] says whether there is one).
    pub(super) access: Option<Arc<PosixAcl>>,
    /// The default ACL.
    pub(super) default: Option<Arc<PosixAcl>>,
    /// The four times when one does not fit the attribute cell's packed
    /// word (before about 1697 or after 2242: [`AttrCell::far`]).
    pub(super) far_times: Option<[Timespec; 4]>,
}

impl XattrSet {
    /// A set holding only ACLs, or `None` if there are none.
    pub(super) fn with_acls(
        access: Option<Arc<PosixAcl>>,
        default: Option<Arc<PosixAcl>>,
    ) -> Option<Box<XattrSet>> {
        (access.is_some() || default.is_some()).then(|| {
            Box::new(XattrSet {
                names: BTreeMap::new(),
                access,
                default,
                far_times: None,
            })
        })
    }

    pub(super) fn is_empty(&self) -> bool {
        self.names.is_empty()
            && self.access.is_none()
            && self.default.is_none()
            && self.far_times.is_none()
    }

    /// The [`Attr::acl`] flags of these ACLs.
    pub(super) fn acl_flags(&self) -> u8 {
        let mut f = 0;
        if self.access.is_some() {
            f |= crate::fs::HAS_ACCESS_ACL;
        }
        if self.default.is_some() {
            f |= crate::fs::HAS_DEFAULT_ACL;
        }
        f
    }
}

/// What an inode is, with what only that type holds (boxed in [`State`],
/// none for an empty regular file). A directory's index is boxed: it is
/// the largest variant, and every written regular file's box would
/// otherwise carry its size (88 bytes against 32).
pub(super) enum Kind {
    Reg(RegFile),
    Dir(Box<Dir>),
    Symlink {
        target: Box<[u8]>,
        has_page: bool,
    },
    /// A FIFO, socket or device node (`init_special_inode`): no data, the
    /// type in the mode, and the device it names (0 for FIFOs and sockets).
    Special {
        rdev: u64,
    },
}

/// An inode's contents, behind its lock. Its attributes (mode, owner,
/// link count, times, ACL flags) live in the inode's [`AttrCell`], read
/// and written through the lock's guards ([`Locked`], [`WrGuard`]), and
/// so do its two flags, in spare bits of the cell's mode word (no word
/// of their own: the inode's malloc size class): whether it is an
/// `O_TMPFILE` inode never linked yet ([`Locked::linkable`]) and whether
/// it was given back ([`Locked::given_back`]).
///
/// Two words, so that the inode is a 128-byte malloc chunk: the kind
/// behind one optional box and the xattrs' pointer. An empty regular file
/// (no size, no page, no memfd: what a create makes) holds no box; its
/// first write, truncation to a size or `fallocate` makes one
/// ([`State::kind_mut`]).
pub(super) struct State {
    /// What the inode is, boxed; `None` for an empty regular file, which
    /// reads as [`EMPTY_REG`] ([`State::kind`]).
    kind: Option<Box<Kind>>,
    /// Extended attributes and ACLs (and times the cell cannot hold),
    /// `None` until the first is set.
    pub(super) xattrs: Xattrs,
}

/// What a regular file with no box reads as: size 0, no pages.
static EMPTY_REG: Kind = Kind::Reg(RegFile::Pages(PageFile {
    size: 0,
    pages: BTreeMap::new(),
}));

const ATIME: usize = 0;
const MTIME: usize = 1;
const CTIME: usize = 2;
const BTIME: usize = 3;

/// The attributes a new inode starts with.
pub(super) struct Init {
    pub(super) mode: u32,
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) nlink: u32,
    /// Every time of the inode.
    pub(super) now: Timespec,
    pub(super) acl: u8,
    /// An `O_TMPFILE` inode, not linked yet ([`Locked::linkable`]).
    pub(super) linkable: bool,
}

impl State {
    /// A state holding `kind` (no box for an empty regular file).
    pub(super) fn new(kind: Kind) -> State {
        let empty =
            matches!(&kind, Kind::Reg(RegFile::Pages(f)) if f.size == 0 && f.pages.is_empty());
        State {
            kind: (!empty).then(|| Box::new(kind)),
            xattrs: None,
        }
    }

    /// What the inode is.
    #[inline]
    pub(super) fn kind(&self) -> &Kind {
        self.kind.as_deref().unwrap_or(&EMPTY_REG)
    }

    /// What the inode is, to change: an empty regular file gets its box
    /// here (one allocation, the first time its contents change).
    #[inline]
    pub(super) fn kind_mut(&mut self) -> &mut Kind {
        self.kind
            .get_or_insert_with(|| Box::new(Kind::Reg(RegFile::default())))
    }

    /// What the inode is, to change, if it has a box: `None` for an empty
    /// regular file, which has nothing to change (no box made).
    #[inline]
    pub(super) fn kind_mut_if_boxed(&mut self) -> Option<&mut Kind> {
        self.kind.as_deref_mut()
    }

    /// Whether the kind has its box (tests: an empty file has none).
    #[cfg(test)]
    pub(super) fn is_boxed(&self) -> bool {
        self.kind.is_some()
    }

    pub(super) fn is_dir(&self) -> bool {
        matches!(self.kind(), Kind::Dir(_))
    }

    pub(super) fn dir(&self) -> Result<&Dir, Errno> {
        match self.kind() {
            Kind::Dir(d) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }

    pub(super) fn dir_mut(&mut self) -> Result<&mut Dir, Errno> {
        match self.kind_mut_if_boxed() {
            Some(Kind::Dir(d)) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }
    /// Pages this inode holds against the space limit.
    pub(super) fn pages_held(&self) -> u64 {
        match self.kind() {
            Kind::Reg(f) => f.pages_held(),
            Kind::Symlink { has_page, .. } => u64::from(*has_page),
            Kind::Dir(_) | Kind::Special { .. } => 0,
        }
    }

    /// The size and pages lockless readers get ([`Tmpfs::attr`]'s), or
    /// `None` where they must ask the lock: a file whose data is in a
    /// memfd (its size is the kernel's), a device node (its number is not
    /// in the cell), a page count the cell cannot hold.
    fn published_size(&self) -> Option<(u64, u32)> {
        let (size, pages) = match self.kind() {
            Kind::Reg(RegFile::Pages(f)) => (f.size, u32::try_from(f.pages.len()).ok()?),
            Kind::Reg(RegFile::Memfd(_)) | Kind::Special { .. } => return None,
            Kind::Dir(d) => (EMPTY_DIR_SIZE + DIRENT_SIZE * d.len(), 0),
            Kind::Symlink { target, has_page } => (target.len() as u64, u32::from(*has_page)),
        };
        (pages < PAGES_LIMIT).then_some((size, pages))
    }

    /// The times kept outside the cell ([`AttrCell::far`]).
    fn far_times(&self) -> [Timespec; 4] {
        self.xattrs
            .as_ref()
            .and_then(|x| x.far_times)
            .unwrap_or_default()
    }
}

impl Tmpfs {
    /// The attributes of inode `ino` from its published snapshot, read
    /// through `data`, the object a path-cache entry recorded
    /// (`FastPaths::path_cache_inode`), without `self`: the caller has
    /// the object, not the file system (which the recording checked reads
    /// pinned). `None` without a published snapshot (the caller goes the
    /// usual way, [`Tmpfs::getattr_pinned_inline`]).
    ///
    /// # Safety
    /// `data` is the object (`InodeData` of an `Arc<Inode>`) of a tmpfs
    /// inode with `pinned_reads`, read while the cached inode held it and
    /// validated since, and the caller is pinned (the object is freed only
    /// after a grace period).
    #[inline(always)]
    pub(crate) unsafe fn getattr_recorded(data: std::ptr::NonNull<()>, ino: Ino) -> Option<Attr> {
        // SAFETY: the caller's promise: an `Inode` made by tmpfs, alive
        // until the caller's pin ends.
        let i = unsafe { crate::fs::DataRef::new(data).get::<Inode>() };
        if i.ino != ino {
            return None;
        }
        let s = i.snapshot()?;
        i.mark_ctime_queried();
        Some(attr_of_snapshot(ino, &s))
    }
}

/// The attributes of inode `ino` from a lockless snapshot (as
/// [`Tmpfs::attr`] gives them under the lock).
#[inline(always)]
pub(super) fn attr_of_snapshot(ino: Ino, s: &Snapshot) -> Attr {
    Attr {
        ino,
        mode: s.mode,
        nlink: s.nlink,
        uid: s.uid,
        gid: s.gid,
        size: s.size,
        blocks: u64::from(s.pages) * (PAGE_SIZE / 512),
        blksize: PAGE_SIZE as u32,
        atime: s.times[ATIME],
        mtime: s.times[MTIME],
        ctime: s.times[CTIME],
        btime: s.times[BTIME],
        rdev: 0,
        acl: s.acl,
    }
}

/// The one word of an inode whose meaning its type decides (a type never
/// changes): a regular file's page index, every other inode's parent
/// (kept for a directory, none otherwise). A regular file has no use for
/// a parent and a directory none for pages, so one word serves both, as
/// Linux's `struct inode` shares `i_pipe`, `i_cdev` and `i_link` in one
/// union; it keeps the inode in its malloc size class.
union TypeWord {
    /// A directory's parent, as a `Weak<Inode>`'s raw pointer
    /// (`Weak::into_raw`): weak, so a tree is freed from the top and no
    /// cycle forms (the root's is empty, `Weak::new`, as is every other
    /// non-directory's). See [`Inode::parent`] for who may read and
    /// write it.
    parent: ManuallyDrop<AtomicPtr<Inode>>,
    /// `FastPaths::lockless_read`: a regular file's pages for readers
    /// without the lock (empty with the switch off).
    index: ManuallyDrop<PageIndex>,
}

/// A tmpfs directory: its entries hold their inodes.
pub(super) type Dir = dir::Dir<Arc<Inode>>;
/// A tmpfs directory entry.
pub(super) type Slot = dir::Slot<Arc<Inode>>;

impl Target for Arc<Inode> {
    fn ino(&self) -> Ino {
        self.ino
    }
}

/// One inode as the table holds it.
pub(super) struct Inode {
    pub(super) ino: Ino,
    /// The parent or the page index: see [`Inode::parent`] and
    /// [`Inode::index`], which read the type to pick.
    word: TypeWord,
    /// The state's lock: `parking_lot`'s, one word with no poison flag
    /// (std's flag and its padding took 8 bytes more, a malloc size class).
    pub(super) st: SlimRwLock<State>,
    /// The inode's attributes, their only home: written under the write
    /// lock ([`WrGuard`]), read under either lock ([`Locked`]) or, with
    /// `FastPaths::lockless_attrs`, without it under the cell's sequence
    /// count (with the size and page count, which the writer copies there
    /// from the state when it lets the lock go). It also holds the ctime's
    /// queried mark (Linux's `I_CTIME_QUERIED`).
    pub(super) attrs: AttrCell,
}

impl Inode {
    /// A new inode, not yet shared, with its attributes from `init` and
    /// its size from `st`; the attributes as `getattr` reports them.
    pub(super) fn new(
        ino: Ino,
        parent: Weak<Inode>,
        init: &Init,
        st: State,
        lockless: bool,
        light: bool,
    ) -> (Attr, Inode) {
        let word = if init.mode & S_IFMT == S_IFREG {
            TypeWord {
                index: ManuallyDrop::new(PageIndex::new()),
            }
        } else {
            TypeWord {
                parent: ManuallyDrop::new(AtomicPtr::new(Weak::into_raw(parent).cast_mut())),
            }
        };
        let mut i = Inode {
            ino,
            word,
            st: SlimRwLock::new(st),
            attrs: AttrCell::new(lockless, None),
        };
        if light {
            i.attrs.make_light();
        }
        i.attrs.set_linkable(init.linkable);
        let st = i.st.get_mut();
        let mut w = Writer {
            c: &i.attrs,
            st,
            open: false,
        };
        w.set_mode_acl(init.mode, init.acl);
        w.set_uid(init.uid);
        w.set_gid(init.gid);
        w.set_nlink(init.nlink);
        for k in [ATIME, MTIME, CTIME, BTIME] {
            w.set_time(k, init.now);
        }
        let a = attr_of(ino, &w);
        drop(w);
        (a, i)
    }

    /// Whether this is a regular file: its type bits, set before the
    /// inode is shared and kept by every change of the mode (a relaxed
    /// load of a word whose type bits never change).
    #[inline]
    fn is_reg(&self) -> bool {
        self.attrs.mode() & S_IFMT == S_IFREG
    }

    /// A regular file's page index; `None` for other types.
    #[inline]
    pub(super) fn index(&self) -> Option<&PageIndex> {
        // SAFETY: a regular file's word was made as its index (`new`) and
        // the type never changes.
        self.is_reg().then(|| unsafe { &*self.word.index })
    }

    /// The page index of a regular file, for a caller that found
    /// `Kind::Reg` in its state (so the inode is one).
    #[inline]
    pub(super) fn file_index(&self) -> &PageIndex {
        self.index()
            .expect("an inode whose state is a regular file's has a regular file's mode")
    }

    /// The parent word of a non-regular file; `None` for a regular file.
    #[inline]
    fn parent_word(&self) -> Option<&AtomicPtr<Inode>> {
        // SAFETY: every other type's word was made as a parent (`new`)
        // and the type never changes.
        (!self.is_reg()).then(|| unsafe { &*self.word.parent })
    }

    /// A directory's parent, if it is still there (`None` for the root,
    /// for other types, and for a removed directory whose old parent is
    /// gone).
    ///
    /// The caller holds this inode's lock (either side) or the file
    /// system's rename mutex: the parent is changed only by a rename that
    /// holds both ([`set_parent`](Inode::set_parent)), so the `Weak` read
    /// here is not dropped meanwhile.
    pub(super) fn parent(&self) -> Option<Arc<Inode>> {
        let p = self.parent_word()?.load(Ordering::Acquire);
        // SAFETY: the word holds a pointer from `Weak::into_raw` (`new`,
        // `set_parent`), whose weak count it owns and which no one drops
        // while the caller holds this inode's lock or the rename mutex
        // (above); the `ManuallyDrop` borrows that count without taking it.
        let w = ManuallyDrop::new(unsafe { Weak::from_raw(p) });
        w.upgrade()
    }

    /// Makes `parent` a directory's parent (a cross-directory rename).
    /// The caller holds both this inode's write lock and the rename mutex
    /// (see [`parent`](Inode::parent)); no-op for a regular file.
    pub(super) fn set_parent(&self, parent: &Arc<Inode>) {
        let Some(word) = self.parent_word() else {
            return;
        };
        let new = Weak::into_raw(Arc::downgrade(parent)).cast_mut();
        let old = word.swap(new, Ordering::AcqRel);
        // SAFETY: `old` came from `Weak::into_raw` and the word owned its
        // count, which it has given up by the swap; no reader holds it
        // (the caller's locks exclude them), so it is dropped once, here.
        drop(unsafe { Weak::from_raw(old) });
    }

    /// The inode's attributes without its lock, if published.
    #[inline(always)]
    pub(super) fn snapshot(&self) -> Option<Snapshot> {
        self.attrs.read()
    }

    /// The inode's mode and size without its lock, if published.
    #[inline]
    pub(super) fn size_snapshot(&self) -> Option<(u32, u64)> {
        self.attrs.read_size()
    }

    /// Marks the ctime reported by a lockless `stat` (`fill_mg_cmtime`).
    #[inline]
    pub(super) fn mark_ctime_queried(&self) {
        self.attrs.mark_queried();
    }
}

impl Drop for Inode {
    fn drop(&mut self) {
        if self.is_reg() {
            // SAFETY: a regular file's word is its index (`new`), dropped
            // here once, with the inode.
            unsafe { ManuallyDrop::drop(&mut self.word.index) };
        } else {
            // SAFETY: every other type's word is its parent (`new`), a
            // pointer from `Weak::into_raw` whose count the word owns,
            // given back here once, with the inode.
            drop(unsafe { Weak::from_raw(self.word.parent.load(Ordering::Relaxed)) });
        }
    }
}

/// An inode's attributes and state under its lock (read or write): what
/// both guards give.
pub(super) trait Locked {
    fn cell(&self) -> &AttrCell;
    fn state(&self) -> &State;

    fn mode(&self) -> u32 {
        self.cell().mode()
    }
    fn uid(&self) -> u32 {
        self.cell().uid()
    }
    fn gid(&self) -> u32 {
        self.cell().gid()
    }
    fn nlink(&self) -> u32 {
        self.cell().nlink()
    }
    /// [`Attr::acl`]'s flags.
    fn acl(&self) -> u8 {
        self.cell().acl()
    }
    /// An `O_TMPFILE` inode never linked yet (`I_LINKABLE`): what lets
    /// `linkat` give a name to an inode with no link.
    fn linkable(&self) -> bool {
        self.cell().linkable()
    }
    /// Whether the inode's pages and inode count were given back (its
    /// eviction with no link left: [`Tmpfs::evict_inode`]). Only the
    /// evict that sets it (under the inode's write lock) frees; a later
    /// one for the same inode (a node evicted and made again) does
    /// nothing. What decides, rather than which caller takes the inode out
    /// of the table, so the table is not needed for it.
    fn given_back(&self) -> bool {
        self.cell().given_back()
    }
    /// Time `k` (atime, mtime, ctime, btime).
    fn time(&self, k: usize) -> Timespec {
        if self.cell().far() {
            self.state().far_times()[k]
        } else {
            self.cell().time(k)
        }
    }
    fn atime(&self) -> Timespec {
        self.time(ATIME)
    }
    fn mtime(&self) -> Timespec {
        self.time(MTIME)
    }
    fn ctime(&self) -> Timespec {
        self.time(CTIME)
    }
    fn btime(&self) -> Timespec {
        self.time(BTIME)
    }

    /// Marks the ctime as reported (`getattr` does, for `stat`).
    fn mark_ctime_queried(&self) {
        self.cell().mark_queried();
    }

    /// Linux's `current_time` on a multigrain file system: the coarse
    /// clock (never below the floor), or the fine clock when the ctime was
    /// queried and the coarse time would not differ from it. What a change
    /// that may not stamp ctime (setattr without ctime, atime updates)
    /// uses.
    fn current_time(&self) -> Timespec {
        let now = coarse_mg();
        if self.cell().queried() && now <= self.ctime() {
            fine_mg()
        } else {
            now
        }
    }
}

/// The attributes of inode `ino` under its lock, size apart from a
/// regular file's (which [`Tmpfs::attr`] asks the memfd for).
fn attr_of(ino: Ino, l: &(impl Locked + ?Sized)) -> Attr {
    let st = l.state();
    let (size, blocks) = match st.kind() {
        Kind::Reg(RegFile::Pages(f)) => (f.size, f.pages.len() as u64 * (PAGE_SIZE / 512)),
        Kind::Reg(RegFile::Memfd(_)) => (0, 0),
        Kind::Dir(d) => (EMPTY_DIR_SIZE + DIRENT_SIZE * d.len(), 0),
        Kind::Symlink { target, has_page } => (
            target.len() as u64,
            if *has_page { PAGE_SIZE / 512 } else { 0 },
        ),
        Kind::Special { .. } => (0, 0),
    };
    let rdev = match st.kind() {
        Kind::Special { rdev } => *rdev,
        _ => 0,
    };
    Attr {
        ino,
        mode: l.mode(),
        nlink: l.nlink(),
        uid: l.uid(),
        gid: l.gid(),
        size,
        blocks,
        blksize: PAGE_SIZE as u32,
        atime: l.atime(),
        mtime: l.mtime(),
        ctime: l.ctime(),
        btime: l.btime(),
        rdev,
        acl: l.acl(),
    }
}

/// The writer's side of an inode's attributes: the cell and the state,
/// with the writer's section open from the first store to the drop (see
/// [`AttrCell::begin`]). The state is the locked one ([`WrGuard`]) or a
/// new inode's, not yet shared.
pub(super) struct Writer<'c, S: std::ops::DerefMut<Target = State>> {
    c: &'c AttrCell,
    st: S,
    /// Whether this writer's section is open.
    open: bool,
}

impl<S: std::ops::DerefMut<Target = State>> Locked for Writer<'_, S> {
    #[inline]
    fn cell(&self) -> &AttrCell {
        self.c
    }
    #[inline]
    fn state(&self) -> &State {
        &self.st
    }
}

impl<S: std::ops::DerefMut<Target = State>> Writer<'_, S> {
    /// Opens the section before the first store.
    #[inline]
    fn open(&mut self) {
        if !self.open {
            self.c.begin();
            self.open = true;
        }
    }

    /// Sets the mode and the ACL flags together.
    pub(super) fn set_mode_acl(&mut self, mode: u32, acl: u8) {
        if self.c.mode() != mode & 0xffff || self.c.acl() != acl {
            self.open();
            self.c.set_mode_acl(mode, acl);
        }
    }

    pub(super) fn set_mode(&mut self, mode: u32) {
        self.set_mode_acl(mode, self.c.acl());
    }

    pub(super) fn set_acl(&mut self, acl: u8) {
        self.set_mode_acl(self.c.mode(), acl);
    }

    /// The inode got its first name ([`Locked::linkable`] no more).
    pub(super) fn clear_linkable(&mut self) {
        self.c.set_linkable(false);
    }

    /// The inode's pages and inode count are given back
    /// ([`Locked::given_back`]).
    pub(super) fn set_given_back(&mut self) {
        self.c.set_given_back();
    }

    pub(super) fn set_uid(&mut self, v: u32) {
        if self.c.uid() != v {
            self.open();
            self.c.set_uid(v);
        }
    }

    pub(super) fn set_gid(&mut self, v: u32) {
        if self.c.gid() != v {
            self.open();
            self.c.set_gid(v);
        }
    }

    pub(super) fn set_nlink(&mut self, v: u32) {
        if self.c.nlink() != v {
            self.open();
            self.c.set_nlink(v);
        }
    }

    /// Sets time `k`: in its packed word when every time fits, else all
    /// four in the state's out-of-line set ([`XattrSet::far_times`]).
    fn set_time(&mut self, k: usize, t: Timespec) {
        if !self.c.far()
            && let Some(w) = pack(t)
        {
            if self.c.time_word(k) != w {
                self.open();
                self.c.set_time_word(k, w);
            }
            return;
        }
        let mut ts = [ATIME, MTIME, CTIME, BTIME].map(|j| self.time(j));
        ts[k] = t;
        self.open();
        let none = self.c.none();
        match ts.map(pack) {
            [Some(a), Some(m), Some(c), Some(b)] => {
                for (j, w) in [a, m, c, b].into_iter().enumerate() {
                    self.c.set_time_word(j, w);
                }
                let x = &mut self.st.xattrs;
                if let Some(set) = x.as_mut() {
                    set.far_times = None;
                    if set.is_empty() {
                        *x = None;
                    }
                }
                // The drop decides whether lockless readers may come back.
                self.c.set_flags(false, none);
            }
            _ => {
                self.st
                    .xattrs
                    .get_or_insert_with(Default::default)
                    .far_times = Some(ts);
                self.c.set_flags(true, true);
            }
        }
    }

    pub(super) fn set_atime(&mut self, t: Timespec) {
        self.set_time(ATIME, t);
    }

    pub(super) fn set_mtime(&mut self, t: Timespec) {
        self.set_time(MTIME, t);
    }

    /// Sets the ctime (`inode_set_ctime_to_ts`): a new value nobody has
    /// seen, so the queried mark goes.
    pub(super) fn set_ctime(&mut self, t: Timespec) {
        self.set_time(CTIME, t);
        self.c.clear_queried();
    }

    /// Linux's `inode_set_ctime_current` (multigrain): stamps ctime with the
    /// coarse clock, or the fine one when the ctime was queried and the
    /// coarse time is not after it (so the change shows to whoever saw the
    /// old value); returns the stamp.
    pub(super) fn set_ctime_current(&mut self) -> Timespec {
        let mut now = coarse_mg();
        if self.c.queried() && now <= self.ctime() {
            now = fine_mg();
        }
        self.set_ctime(now);
        now
    }

    /// A directory entry added or removed, or a rename through this
    /// directory: mtime and ctime to one fresh stamp
    /// (`inode_set_mtime_to_ts(dir, inode_set_ctime_current(dir))`).
    pub(super) fn stamp_mc_current(&mut self) -> Timespec {
        let now = self.set_ctime_current();
        self.set_mtime(now);
        now
    }

    /// `file_modified` / `file_update_time` on a multigrain file system
    /// (write, fallocate): nothing when the current time equals both mtime
    /// and ctime (`inode_needs_update_time`: a change in the same tick as
    /// the last, nobody having looked since), otherwise ctime stamped as
    /// [`Writer::set_ctime_current`] does and mtime set to it.
    pub(super) fn file_update_time(&mut self) {
        let now = self.current_time();
        if now == self.mtime() && now == self.ctime() {
            return;
        }
        self.stamp_mc_current();
    }

    /// Stamps mtime and ctime with `now` (computed on another inode).
    pub(super) fn stamp_mc(&mut self, now: Timespec) {
        self.set_mtime(now);
        self.set_ctime(now);
    }
}

impl<S: std::ops::DerefMut<Target = State>> std::ops::Deref for Writer<'_, S> {
    type Target = State;
    #[inline]
    fn deref(&self) -> &State {
        &self.st
    }
}

impl<S: std::ops::DerefMut<Target = State>> std::ops::DerefMut for Writer<'_, S> {
    #[inline]
    fn deref_mut(&mut self) -> &mut State {
        &mut self.st
    }
}

impl<S: std::ops::DerefMut<Target = State>> Drop for Writer<'_, S> {
    /// Copies the size and page count into the cell if they changed (and
    /// whether lockless readers may use it), then closes the section,
    /// before the lock goes: a change is visible to lockless readers once
    /// its call returns. An unchanged set stores nothing (an overwrite in
    /// the same clock tick as the last write), so readers on other CPUs
    /// keep their copy of the line.
    fn drop(&mut self) {
        if self.c.is_on() {
            let sp = self.st.published_size();
            let none = self.c.far() || sp.is_none();
            let stale = sp.is_some_and(|sp| sp != self.c.size_pages());
            if none != self.c.none() || stale {
                self.open();
                if let Some((size, pages)) = sp {
                    self.c.set_size_pages(size, pages);
                }
                self.c.set_flags(self.c.far(), none);
            }
        }
        if self.open {
            self.c.end();
        } else {
            // `FastPaths::light_overwrite`: the claim `wr` took.
            self.c.unclaim();
        }
    }
}

/// An inode's read lock: derefs to its state; its attributes through
/// [`Locked`].
pub(super) struct RdGuard<'a> {
    c: &'a AttrCell,
    g: SlimRwLockReadGuard<'a, State>,
}

impl Locked for RdGuard<'_> {
    #[inline]
    fn cell(&self) -> &AttrCell {
        self.c
    }
    #[inline]
    fn state(&self) -> &State {
        &self.g
    }
}

impl std::ops::Deref for RdGuard<'_> {
    type Target = State;
    #[inline]
    fn deref(&self) -> &State {
        &self.g
    }
}

/// Read-locks an inode.
pub(super) fn rd(i: &Inode) -> RdGuard<'_> {
    RdGuard {
        c: &i.attrs,
        g: i.st.read(),
    }
}

/// Read-locks an inode if no writer holds its lock.
pub(super) fn try_rd(i: &Inode) -> Option<RdGuard<'_>> {
    let g = i.st.try_read()?;
    Some(RdGuard { c: &i.attrs, g })
}

/// An inode's write lock: derefs to its state; its attributes through
/// [`Locked`] and [`Writer`]'s setters, which write the cell in a section
/// closed when the guard drops, before the lock goes.
pub(super) type WrGuard<'a> = Writer<'a, SlimRwLockWriteGuard<'a, State>>;

/// Write-locks directory `d` (number `dino`) and its child `c` (number
/// `cino`) in inode-number order, then checks under both locks that `name`
/// in `d` still leads to `cino`: the two guards if it does, `None` if the
/// name moved meanwhile.
fn wr_dir_and_child<'a>(
    d: &'a Inode,
    dino: Ino,
    c: &'a Inode,
    cino: Ino,
    name: &[u8],
    h: u32,
) -> Option<(WrGuard<'a>, WrGuard<'a>)> {
    let (ds, cs) = if dino < cino {
        let ds = wr(d);
        (ds, wr(c))
    } else {
        let cs = wr(c);
        (wr(d), cs)
    };
    let still = ds
        .dir()
        .ok()
        .and_then(|x| x.get_hashed(name, h))
        .map(Slot::ino);
    (still == Some(cino)).then_some((ds, cs))
}

/// Write-locks an inode.
pub(super) fn wr(i: &Inode) -> WrGuard<'_> {
    let st = i.st.write();
    // `FastPaths::light_overwrite`: no light writer runs while this guard
    // lives (let go by its drop).
    i.attrs.claim();
    Writer {
        c: &i.attrs,
        st,
        open: false,
    }
}

/// Write-locks an inode if no one holds its lock.
pub(super) fn try_wr(i: &Inode) -> Option<WrGuard<'_>> {
    let st = i.st.try_write()?;
    // As `wr`: a light writer holds the claim for one short copy only.
    i.attrs.claim();
    Some(Writer {
        c: &i.attrs,
        st,
        open: false,
    })
}

/// The write guards of a sorted, deduplicated set of inodes.
pub(super) type Guards<'a> = Vec<(Ino, WrGuard<'a>)>;

/// Write-locks `inodes`, which the caller has sorted by inode number.
pub(super) fn lock_all(inodes: &[Arc<Inode>]) -> Guards<'_> {
    inodes.iter().map(|i| (i.ino, wr(i))).collect()
}

/// The locked state of `ino` among `g`.
pub(super) fn find<'a, 'b>(g: &'a mut Guards<'b>, ino: Ino) -> Option<&'a mut WrGuard<'b>> {
    g.iter_mut().find(|(i, _)| *i == ino).map(|(_, s)| s)
}

impl Tmpfs {
    /// The attributes of inode `ino` under its lock `l`.
    pub(super) fn attr(&self, ino: Ino, l: &(impl Locked + ?Sized)) -> Attr {
        let mut a = attr_of(ino, l);
        if let Kind::Reg(f @ RegFile::Memfd(_)) = l.state().kind() {
            (a.size, a.blocks) = f.size_blocks(self);
        }
        a
    }

    /// Locks `dir` and its child `name` (in inode order), re-checking the
    /// name; `f` runs with both states, the child's number and the name's
    /// `name_hash32` (for its removal). `victim`, when the caller knows
    /// the child (the VFS holds its dentry), is used if the name still
    /// leads to it, so neither inode is searched for in the table.
    pub(super) fn with_dir_and_child<R>(
        &self,
        dir: Node<'_>,
        victim: Option<Node<'_>>,
        name: &[u8],
        f: impl FnOnce(&mut WrGuard<'_>, &mut WrGuard<'_>, Ino, u32) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        check_name(name)?;
        let d = self.node(dir)?;
        // The name's hash once, for every search here and `f`'s removal.
        let h = dir::name_hash32(name);
        let dino = dir.ino;
        // The victim the VFS holds, locked at once: the check of the name
        // under both locks is the only search of the directory when the
        // name still leads to it (nearly always: the VFS holds the
        // directory's lock). Otherwise the loop below decides, as if this
        // had not been tried.
        if let Some(v) = victim
            && v.ino != dino
            && let Ok(c) = self.node(v)
            && let Some((mut ds, mut cs)) = wr_dir_and_child(&d, dino, &c, v.ino, name, h)
        {
            return f(&mut ds, &mut cs, v.ino, h);
        }
        loop {
            // The victim the VFS holds, if the name still leads to it, else
            // the entry's own reference: no table search either way.
            let c = {
                let st = rd(&d);
                let slot = st.dir()?.get_hashed(name, h).ok_or(Errno::ENOENT)?;
                match victim {
                    Some(v) if v.ino == slot.ino() => self.node(v),
                    // `FastPaths::tmpfs_borrow` off: the table, as before.
                    _ if !self.borrow => self.get(slot.ino()).map(Held::Owned),
                    _ => Ok(Held::Owned(slot.inode().clone())),
                }
            };
            let Ok(c) = c else { continue };
            let child = c.ino;
            if child == dino {
                return Err(Errno::EINVAL);
            }
            let Some((mut ds, mut cs)) = wr_dir_and_child(&d, dino, &c, child, name, h) else {
                // The name went meanwhile, maybe its inode's last.
                self.put_held(c);
                continue;
            };
            let r = f(&mut ds, &mut cs, child, h);
            // Our reference after the locks: once they are gone the name
            // may go (if `f` kept it), this reference being the inode's
            // last.
            drop((ds, cs));
            self.put_held(c);
            return r;
        }
    }

    /// setattr: mode, owner, times and (regular files) size.
    pub(super) fn setattr_inode(&self, n: Node<'_>, set: &SetAttr) -> Result<Attr, Errno> {
        let ino = n.ino;
        let i = self.node(n)?;
        let mut st = wr(&i);
        if let Some(size) = set.size {
            match *st.kind() {
                Kind::Reg(_) => {}
                Kind::Dir(_) => return Err(Errno::EISDIR),
                Kind::Symlink { .. } | Kind::Special { .. } => return Err(Errno::EINVAL),
            }
            if size > MAX_FILE_SIZE {
                return Err(Errno::EFBIG);
            }
        }
        // `notify_change` then `setattr_copy_mgtime`: a "now" atime or
        // mtime takes the new ctime's stamp when ctime is set, else
        // `current_time`; the stamp is made last, once it is known whether
        // anything changed (a same-size truncate(2) stamps nothing).
        let mut any = set.mode.is_some()
            || set.uid.is_some()
            || set.gid.is_some()
            || set.atime.is_some()
            || set.mtime.is_some();
        if let Some(m) = set.mode {
            let mode = (st.mode() & S_IFMT) | (m & 0o7777);
            st.set_mode(mode);
            // `posix_acl_chmod`: the access ACL follows the new mode.
            if st.acl() & crate::fs::HAS_ACCESS_ACL != 0
                && let Some(acl) = st.xattrs.as_mut().and_then(|x| x.access.as_mut())
            {
                *acl = Arc::new(acl.chmod(mode));
            }
        }
        if let Some(u) = set.uid {
            st.set_uid(u);
        }
        if let Some(g) = set.gid {
            st.set_gid(g);
        }
        let (mut atime_now, mut mtime_now) = (false, false);
        match set.atime {
            Some(SetTime::At(t)) => st.set_atime(t),
            Some(SetTime::Now) => atime_now = true,
            None => {}
        }
        match set.mtime {
            Some(SetTime::At(t)) => st.set_mtime(t),
            Some(SetTime::Now) => mtime_now = true,
            None => {}
        }
        // An empty file truncated to 0 (`O_TRUNC` of a new file) has
        // nothing to change: no box made for it.
        if let Some(size) = set.size
            && (size != 0 || st.kind_mut_if_boxed().is_some())
            && let Kind::Reg(f) = st.kind_mut()
            && self.set_size(i.file_index(), f, size)?
        {
            if set.mtime.is_none() {
                mtime_now = true;
            }
            any = true;
        }
        let now = if any && !set.no_ctime {
            st.set_ctime_current()
        } else if atime_now || mtime_now {
            st.current_time()
        } else {
            Timespec::default()
        };
        if atime_now {
            st.set_atime(now);
        }
        if mtime_now {
            st.set_mtime(now);
        }
        Ok(self.attr(ino, &st))
    }

    /// Frees inode `ino` once it has no name left (the VFS calls this when
    /// the last reference goes): its pages and its inode count.
    pub(super) fn evict_inode(&self, ino: Ino, held: Option<Arc<Inode>>) {
        let i = match held {
            Some(i) => i,
            None => {
                let Ok(i) = self.get(ino) else { return };
                i
            }
        };
        let removed = self.evict_locked(ino, &i);
        // The cached inode's reference and the table's: the last of them
        // goes after a grace period if readers may hold the inode without
        // one (`drop_inode`). Both name one inode (the table maps `ino` to
        // it), so the table's is dropped now, while `i` still holds the
        // inode (never the last one), and one deferred free does for both.
        match removed {
            Some(r) if Arc::ptr_eq(&r, &i) => drop(r),
            Some(r) => self.drop_inode(r),
            None => {}
        }
        self.drop_inode(i);
    }

    /// The body of [`evict_inode`](Self::evict_inode): frees `i` if it has
    /// no name left; the table's reference, if this call took it out.
    fn evict_locked(&self, ino: Ino, i: &Inode) -> Option<Arc<Inode>> {
        let mut st = wr(i);
        if st.nlink() != 0 || ino == ROOT_INO || st.given_back() {
            return None;
        }
        // Only the caller that sets the flag frees (under the lock); the
        // table lets the inode go with it.
        let removed = self.table_remove(ino);
        debug_assert!(
            removed.is_some() || !self.has_table(),
            "an inode not given back is in the table"
        );
        self.give_back(i, &mut st);
        removed
    }

    /// Gives an inode with no link left back (its pages and its inode
    /// count), under its write lock `st`; only the caller that sets the
    /// flag does (an eviction, or without the table the last reference's
    /// [`put`](Tmpfs::put)).
    pub(super) fn give_back(&self, i: &Inode, st: &mut WrGuard<'_>) {
        st.set_given_back();
        self.unorphaned();
        self.release_pages(st.pages_held());
        match st.kind_mut_if_boxed() {
            Some(Kind::Reg(f)) => self.clear_file(i.file_index(), f),
            Some(Kind::Symlink { has_page, .. }) => *has_page = false,
            Some(Kind::Dir(_) | Kind::Special { .. }) | None => {}
        }
        self.release_inode();
    }
}

#[cfg(all(test, not(any(loom, shuttle))))]
mod size_tests {
    use super::Inode;

    /// What glibc's malloc hands out for a request of `n` bytes on a
    /// 64-bit machine: the request and the chunk's 8-byte size word,
    /// rounded up to 16, at least 32.
    fn malloc_chunk(n: usize) -> usize {
        ((n + 8).div_ceil(16) * 16).max(32)
    }

    /// The inode, behind its `Arc`'s two counts, stays a 120-byte request
    /// (a 128-byte malloc chunk): the page index shares the parent's word,
    /// the lock has no poison flag (`parking_lot`'s, one word), the
    /// linkable and given-back flags live in the attribute cell's mode
    /// word, and the state is two words (the kind behind one optional box,
    /// none for an empty regular file, and the xattrs' pointer). One byte
    /// more in the inode and it is the 144 class.
    #[test]
    fn inode_keeps_its_size_class() {
        assert!(std::mem::size_of::<Inode>() <= 104);
        assert_eq!(std::mem::size_of::<super::State>(), 16);
        assert_eq!(std::mem::size_of::<super::SlimRwLock<()>>(), 8);
        assert_eq!(super::super::inode_size(), 120);
        assert_eq!(malloc_chunk(super::super::inode_size()), 128);
        assert_eq!(
            malloc_chunk(super::super::inode_size() + 1),
            144,
            "one byte more"
        );
        assert_eq!(malloc_chunk(152), 160, "the class the inode left");
    }
}
