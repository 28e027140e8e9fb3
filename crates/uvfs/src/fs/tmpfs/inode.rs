//! Inodes: what one holds ([`State`], behind its own lock), the lock
//! helpers for operations on several inodes, attributes (`getattr`,
//! `setattr`) and eviction (Linux's `shmem_evict_inode`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::dir::{Dir, check_name};
use super::pageindex::PageIndex;
use super::pages::RegFile;
use super::published::{AttrCell, Snapshot};
use super::{DIRENT_SIZE, EMPTY_DIR_SIZE, Held, MAX_FILE_SIZE, PAGE_SIZE, ROOT_INO, Tmpfs};
use crate::acl::PosixAcl;
use crate::errno::Errno;
use crate::fs::timekeeping::{coarse_mg, fine_mg};
use crate::fs::{Attr, Ino, Node, S_IFMT, SetAttr, SetTime, Timespec};
use crate::primitive::sync::{
    UnmodelledRwLock, UnmodelledRwLockReadGuard, UnmodelledRwLockWriteGuard,
};

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
            })
        })
    }

    pub(super) fn is_empty(&self) -> bool {
        self.names.is_empty() && self.access.is_none() && self.default.is_none()
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

/// What an inode is, with what only that type holds. A directory's index
/// is boxed: it is the largest variant, and every regular file (most
/// inodes) would otherwise carry its size (88 bytes against 32).
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

/// An inode's attributes and contents, behind its lock.
pub(super) struct State {
    pub(super) mode: u32,
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) nlink: u32,
    /// atime, mtime, ctime, btime (read and set through the methods).
    pub(super) times: Times,
    /// An `O_TMPFILE` inode never linked yet (`I_LINKABLE`).
    pub(super) linkable: bool,
    /// The ctime was reported (`getattr`, under the read lock) since it was
    /// last set (Linux's `I_CTIME_QUERIED`): the next change must show,
    /// so it may need the fine clock ([`State::set_ctime_current`]).
    pub(super) ctime_queried: AtomicBool,
    /// Which POSIX ACLs the inode has ([`Attr::acl`]; the ACLs are in
    /// [`State::xattrs`], changed with this under the same lock): a byte
    /// of what was padding, so inodes without ACLs stay the size they were.
    pub(super) acl: u8,
    pub(super) kind: Kind,
    /// Extended attributes and ACLs, `None` until the first is set.
    pub(super) xattrs: Xattrs,
}

/// An inode's four timestamps, packed: the seconds together and the
/// nanoseconds together take 48 bytes where four `Timespec`s (each padded
/// to 16) take 64.
#[derive(Clone, Copy)]
pub(super) struct Times {
    sec: [i64; 4],
    nsec: [u32; 4],
}

const ATIME: usize = 0;
const MTIME: usize = 1;
const CTIME: usize = 2;
const BTIME: usize = 3;

impl Times {
    /// All four at `t` (a new inode).
    pub(super) fn all(t: Timespec) -> Times {
        Times {
            sec: [t.sec; 4],
            nsec: [t.nsec; 4],
        }
    }

    fn get(&self, i: usize) -> Timespec {
        Timespec {
            sec: self.sec[i],
            nsec: self.nsec[i],
        }
    }

    fn set(&mut self, i: usize, t: Timespec) {
        self.sec[i] = t.sec;
        self.nsec[i] = t.nsec;
    }
}

impl State {
    pub(super) fn atime(&self) -> Timespec {
        self.times.get(ATIME)
    }

    pub(super) fn mtime(&self) -> Timespec {
        self.times.get(MTIME)
    }

    pub(super) fn ctime(&self) -> Timespec {
        self.times.get(CTIME)
    }

    pub(super) fn btime(&self) -> Timespec {
        self.times.get(BTIME)
    }

    pub(super) fn set_atime(&mut self, t: Timespec) {
        self.times.set(ATIME, t);
    }

    pub(super) fn set_mtime(&mut self, t: Timespec) {
        self.times.set(MTIME, t);
    }

    /// Sets the ctime (`inode_set_ctime_to_ts`): a new value nobody has
    /// seen, so the queried mark goes.
    pub(super) fn set_ctime(&mut self, t: Timespec) {
        self.times.set(CTIME, t);
        *self.ctime_queried.get_mut() = false;
    }

    /// Marks the ctime as reported (`getattr` does, for `stat`); the read
    /// lock suffices.
    pub(super) fn mark_ctime_queried(&self) {
        if !self.ctime_queried.load(Ordering::Relaxed) {
            self.ctime_queried.store(true, Ordering::Relaxed);
        }
    }

    /// Linux's `current_time` on a multigrain file system: the coarse
    /// clock (never below the floor), or the fine clock when the ctime was
    /// queried and the coarse time would not differ from it. What a change
    /// that may not stamp ctime (setattr without ctime, atime updates)
    /// uses.
    pub(super) fn current_time(&self) -> Timespec {
        let now = coarse_mg();
        if self.ctime_queried.load(Ordering::Relaxed) && now <= self.ctime() {
            fine_mg()
        } else {
            now
        }
    }

    /// Linux's `inode_set_ctime_current` (multigrain): stamps ctime with the
    /// coarse clock, or the fine one when the ctime was queried and the
    /// coarse time is not after it (so the change shows to whoever saw the
    /// old value); returns the stamp.
    pub(super) fn set_ctime_current(&mut self) -> Timespec {
        let mut now = coarse_mg();
        if *self.ctime_queried.get_mut() && now <= self.ctime() {
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
    /// [`State::set_ctime_current`] does and mtime set to it. Whether it
    /// stamped.
    pub(super) fn file_update_time(&mut self) -> bool {
        let now = self.current_time();
        if now == self.mtime() && now == self.ctime() {
            return false;
        }
        self.stamp_mc_current();
        true
    }

    pub(super) fn is_dir(&self) -> bool {
        matches!(self.kind, Kind::Dir(_))
    }

    pub(super) fn dir(&self) -> Result<&Dir, Errno> {
        match &self.kind {
            Kind::Dir(d) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }

    pub(super) fn dir_mut(&mut self) -> Result<&mut Dir, Errno> {
        match &mut self.kind {
            Kind::Dir(d) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }

    /// Pages this inode holds against the space limit.
    pub(super) fn pages_held(&self) -> u64 {
        match &self.kind {
            Kind::Reg(f) => f.pages_held(),
            Kind::Symlink { has_page, .. } => u64::from(*has_page),
            Kind::Dir(_) | Kind::Special { .. } => 0,
        }
    }

    /// Stamps mtime and ctime with `now` (computed on another inode).
    pub(super) fn stamp_mc(&mut self, now: Timespec) {
        self.set_mtime(now);
        self.set_ctime(now);
    }

    /// The attributes for lockless readers ([`Tmpfs::attr`]'s, packed), or
    /// `None` where they must ask the lock: a file whose data is in a
    /// memfd (its size is the kernel's), a device node (its number is not
    /// published); the cell refuses what does not fit its words.
    pub(super) fn snapshot(&self) -> Option<Snapshot> {
        let (size, pages) = match &self.kind {
            Kind::Reg(RegFile::Pages(f)) => (f.size, u32::try_from(f.pages.len()).ok()?),
            Kind::Reg(RegFile::Memfd(_)) | Kind::Special { .. } => return None,
            Kind::Dir(d) => (EMPTY_DIR_SIZE + DIRENT_SIZE * d.len(), 0),
            Kind::Symlink { target, has_page } => (target.len() as u64, u32::from(*has_page)),
        };
        Some(Snapshot {
            mode: self.mode,
            uid: self.uid,
            gid: self.gid,
            nlink: self.nlink,
            size,
            pages,
            acl: self.acl,
            times: [self.atime(), self.mtime(), self.ctime(), self.btime()],
        })
    }
}

/// The attributes of inode `ino` from a lockless snapshot (as
/// [`Tmpfs::attr`] gives them from the state).
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

/// One inode as the table holds it.
pub(super) struct Inode {
    pub(super) ino: Ino,
    /// For a directory, its parent (the root: itself). Changed only under
    /// the rename mutex.
    pub(super) parent: AtomicU64,
    pub(super) st: UnmodelledRwLock<State>,
    /// `FastPaths::lockless_attrs`: the attributes as the last writer left
    /// them, for `stat` and the read path without the lock (see
    /// [`WrGuard`]); never published with the switch off. It also holds
    /// the lockless readers' half of [`State::ctime_queried`] (which they
    /// cannot reach): the next writer folds it into the state when it takes
    /// the lock ([`wr`]).
    pub(super) attrs: AttrCell,
    /// `FastPaths::lockless_read`: a regular file's pages for readers
    /// without the lock (empty with the switch off, and for other types).
    pub(super) index: PageIndex,
}

impl Inode {
    /// The inode's attributes without its lock, if published.
    #[inline]
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

/// Read-locks an inode (a poisoned lock is taken as it is).
pub(super) fn rd(i: &Inode) -> UnmodelledRwLockReadGuard<'_, State> {
    i.st.read().unwrap_or_else(|e| e.into_inner())
}

/// An inode's write lock: derefs to its state, and publishes the state's
/// attributes for lockless readers (`Inode::attrs`) when it drops, before
/// the lock goes, so a change is visible to them once its call returns.
pub(super) struct WrGuard<'a> {
    i: &'a Inode,
    g: UnmodelledRwLockWriteGuard<'a, State>,
    /// Cleared by [`unchanged`](WrGuard::unchanged): nothing to publish.
    publish: bool,
}

impl WrGuard<'_> {
    fn new<'a>(i: &'a Inode, mut g: UnmodelledRwLockWriteGuard<'a, State>) -> WrGuard<'a> {
        // A lockless stat's ctime mark joins the state's, where
        // `set_ctime_current` reads it and a new ctime clears it; the
        // publication of a new ctime clears the cell's.
        if i.attrs.queried() {
            *g.ctime_queried.get_mut() = true;
        }
        WrGuard {
            i,
            g,
            publish: true,
        }
    }

    /// Tells the guard its holder changed nothing that is published (an
    /// overwrite of held pages in the same clock tick as the last change:
    /// same size, pages and times), so the drop skips comparing the state
    /// with the last publication.
    pub(super) fn unchanged(&mut self) {
        self.publish = false;
    }
}

impl std::ops::Deref for WrGuard<'_> {
    type Target = State;
    #[inline]
    fn deref(&self) -> &State {
        &self.g
    }
}

impl std::ops::DerefMut for WrGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut State {
        &mut self.g
    }
}

impl Drop for WrGuard<'_> {
    fn drop(&mut self) {
        if self.publish && self.i.attrs.is_on() {
            self.i.attrs.publish(self.g.snapshot().as_ref());
        }
    }
}

/// Write-locks an inode (a poisoned lock is taken as it is).
pub(super) fn wr(i: &Inode) -> WrGuard<'_> {
    WrGuard::new(i, i.st.write().unwrap_or_else(|e| e.into_inner()))
}

/// Write-locks an inode if no one holds its lock.
pub(super) fn try_wr(i: &Inode) -> Option<WrGuard<'_>> {
    i.st.try_write().ok().map(|g| WrGuard::new(i, g))
}

/// The write guards of a sorted, deduplicated set of inodes.
pub(super) type Guards<'a> = Vec<(Ino, WrGuard<'a>)>;

/// Write-locks `inodes`, which the caller has sorted by inode number.
pub(super) fn lock_all(inodes: &[Arc<Inode>]) -> Guards<'_> {
    inodes.iter().map(|i| (i.ino, wr(i))).collect()
}

/// The locked state of `ino` among `g`.
pub(super) fn find<'a>(g: &'a mut Guards<'_>, ino: Ino) -> Option<&'a mut State> {
    g.iter_mut().find(|(i, _)| *i == ino).map(|(_, s)| &mut **s)
}

impl Tmpfs {
    /// The attributes of inode `ino` in state `st`.
    pub(super) fn attr(&self, ino: Ino, st: &State) -> Attr {
        let (size, blocks) = match &st.kind {
            Kind::Reg(f) => f.size_blocks(self),
            Kind::Dir(d) => (EMPTY_DIR_SIZE + DIRENT_SIZE * d.len(), 0),
            Kind::Symlink { target, has_page } => (
                target.len() as u64,
                if *has_page { PAGE_SIZE / 512 } else { 0 },
            ),
            Kind::Special { .. } => (0, 0),
        };
        let rdev = match &st.kind {
            Kind::Special { rdev } => *rdev,
            _ => 0,
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
            atime: st.atime(),
            mtime: st.mtime(),
            ctime: st.ctime(),
            btime: st.btime(),
            rdev,
            acl: st.acl,
        }
    }

    /// Locks `dir` and its child `name` (in inode order), re-checking the
    /// name; `f` runs with both states. `victim`, when the caller knows
    /// the child (the VFS holds its dentry), is used if the name still
    /// leads to it, so neither inode is searched for in the table.
    pub(super) fn with_dir_and_child<R>(
        &self,
        dir: Node<'_>,
        victim: Option<Node<'_>>,
        name: &[u8],
        f: impl FnOnce(&mut State, &mut State, Ino) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        check_name(name)?;
        let d = self.node(dir)?;
        let dino = dir.ino;
        loop {
            let child = rd(&d).dir()?.get(name).map(|s| s.ino);
            let child = child.ok_or(Errno::ENOENT)?;
            let c = match victim {
                Some(v) if v.ino == child => self.node(v),
                _ => self.get(child).map(Held::Owned),
            };
            let Ok(c) = c else { continue };
            if child == dino {
                return Err(Errno::EINVAL);
            }
            let (mut ds, mut cs) = if dino < child {
                let ds = wr(&d);
                (ds, wr(&c))
            } else {
                let cs = wr(&c);
                (wr(&d), cs)
            };
            let still = ds.dir().ok().and_then(|x| x.get(name)).map(|s| s.ino);
            if still != Some(child) {
                continue;
            }
            return f(&mut ds, &mut cs, child);
        }
    }

    /// setattr: mode, owner, times and (regular files) size.
    pub(super) fn setattr_inode(&self, n: Node<'_>, set: &SetAttr) -> Result<Attr, Errno> {
        let ino = n.ino;
        let i = self.node(n)?;
        let mut st = wr(&i);
        if let Some(size) = set.size {
            match st.kind {
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
            st.mode = (st.mode & S_IFMT) | (m & 0o7777);
            // `posix_acl_chmod`: the access ACL follows the new mode.
            if st.acl & crate::fs::HAS_ACCESS_ACL != 0 {
                let mode = st.mode;
                if let Some(acl) = st.xattrs.as_mut().and_then(|x| x.access.as_mut()) {
                    *acl = Arc::new(acl.chmod(mode));
                }
            }
        }
        if let Some(u) = set.uid {
            st.uid = u;
        }
        if let Some(g) = set.gid {
            st.gid = g;
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
        if let Some(size) = set.size
            && let Kind::Reg(f) = &mut st.kind
            && self.set_size(&i.index, f, size)?
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
        // The cached inode's reference and the table's, each possibly the
        // last: dropped after a grace period if readers may hold the inode
        // without one (`drop_inode`).
        self.drop_inode(i);
        if let Some(r) = removed {
            self.drop_inode(r);
        }
    }

    /// The body of [`evict_inode`](Self::evict_inode): frees `i` if it has
    /// no name left; the table's reference, if this call took it out.
    fn evict_locked(&self, ino: Ino, i: &Inode) -> Option<Arc<Inode>> {
        let mut st = wr(i);
        if st.nlink != 0 || ino == ROOT_INO {
            return None;
        }
        // Only the caller that takes the inode out of the table frees it.
        let removed = self
            .shard(ino)
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ino)?;
        self.release_pages(st.pages_held());
        match &mut st.kind {
            Kind::Reg(f) => self.clear_file(&i.index, f),
            Kind::Symlink { has_page, .. } => *has_page = false,
            Kind::Dir(_) | Kind::Special { .. } => {}
        }
        self.release_inode();
        Some(removed)
    }
}
