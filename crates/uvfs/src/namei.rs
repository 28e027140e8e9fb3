//! Path walk (`fs/namei.c`): resolves a path to a dentry over the dentry
//! cache, asking the file system only on a miss.
//!
//! Two walks, as in Linux:
//! - the **lockless walk** (`LOOKUP_RCU`): under an epoch pin, no lock and
//!   no reference is taken on any directory passed through; each step reads
//!   the child's sequence count and checks the parent's is unchanged, and
//!   only the final dentry gets a reference, after which its count is
//!   re-checked (`legitimize`). It handles the common case: every component
//!   cached, no symlink to follow, no `..`, no mount to cross, no permission
//!   denied. Anything else, or any sign of a concurrent change, and it gives
//!   up;
//! - the **locked walk** (ref-walk) then starts over from the beginning: it
//!   holds a reference on the current directory, searches the cache under
//!   the bucket lock, and on a miss takes the directory's lock and asks the
//!   file system (`lookup_slow`), caching the answer, positive or negative.
//!   It implements everything: symlinks (40 in one walk, then `ELOOP`), `.`
//!   and `..` (stopping at the root, crossing mounts upwards), mounts,
//!   trailing slashes, and the errors in Linux's order (`EACCES` for a
//!   directory that may not be searched, `ENOTDIR`, `ENOENT`,
//!   `ENAMETOOLONG`).

use crate::cred::{Cred, MAY_EXEC, permission};
use crate::dcache::{Dentry, DentryRef};
use crate::errno::Errno;
use crate::fs::S_ISVTX;
use crate::path_cache::{Key, Pinned};
use crate::primitive::sync::lock;
use crate::reclaim;
use crate::vfs::Vfs;
use crate::vfs_ops::inode::inode_permission;
use crate::vfs_ops::inode::{iget_found, touch_atime};
use std::ptr::NonNull;

mod cached;

/// Follow a symlink in the last component.
pub(crate) const FOLLOW: u32 = 1;
/// The last component must be a directory.
pub(crate) const DIRECTORY: u32 = 2;
/// An empty path names the start directory (`AT_EMPTY_PATH`).
pub(crate) const EMPTY: u32 = 4;

/// Symlinks one walk may follow (`MAXSYMLINKS`).
pub const MAXSYMLINKS: u32 = 40;
/// The longest path, with its terminating NUL (`PATH_MAX`).
pub const PATH_MAX: usize = 4096;

/// The kind of a path's last component (`LAST_NORM` …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LastType {
    Norm,
    Dot,
    DotDot,
    Root,
}

/// What [`Nd::lookup_parent`] returns: the directory holding the last
/// component, the component, and whether slashes followed it.
#[derive(Debug)]
pub(crate) struct Parent {
    pub(crate) dir: DentryRef,
    pub(crate) last: LastName,
    pub(crate) kind: LastType,
    pub(crate) trailing: bool,
    /// Symlinks followed to get here.
    pub(crate) links: u32,
    /// The last component's dentry-cache hash under `dir`, if the walk
    /// computed it (the lockless walk does), for
    /// [`Nd::lookup_locked_last`].
    pub(crate) hash: Option<u64>,
}

/// A path's last component, as [`Parent`] carries it: in place when it
/// is short (nearly every name), on the heap otherwise. A create or an
/// unlink copied it into a `Vec` of its own, a malloc and a free per call.
pub(crate) enum LastName {
    /// The first `len` bytes of the array.
    Inline {
        len: u8,
        buf: [u8; LastName::INLINE],
    },
    /// A longer name.
    Heap(Vec<u8>),
}

impl LastName {
    /// The longest name kept in place (the enum stays 48 bytes).
    const INLINE: usize = 46;

    /// A copy of `name`.
    #[inline]
    pub(crate) fn new(name: &[u8]) -> LastName {
        match u8::try_from(name.len()) {
            Ok(len) if name.len() <= Self::INLINE => {
                let mut buf = [0u8; Self::INLINE];
                buf[..name.len()].copy_from_slice(name);
                LastName::Inline { len, buf }
            }
            _ => LastName::Heap(name.to_vec()),
        }
    }
}

impl std::ops::Deref for LastName {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            LastName::Inline { len, buf } => &buf[..usize::from(*len)],
            LastName::Heap(v) => v,
        }
    }
}

impl std::fmt::Debug for LastName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}

/// Checks a user path the way `getname` does: `ENAMETOOLONG` at
/// `PATH_MAX` bytes or more, `EINVAL` for an embedded NUL (a C string
/// cannot carry one; uvfs refuses rather than truncating).
pub(crate) fn getname(path: &[u8]) -> Result<&[u8], Errno> {
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if has_nul(path) {
        return Err(Errno::EINVAL);
    }
    Ok(path)
}

/// Whether `b` holds a NUL byte: a word at a time (paths are a few dozen
/// bytes; `memchr` spends most of that in its byte-wise tail).
#[inline]
fn has_nul(b: &[u8]) -> bool {
    let zero = |w: u64| crate::dcache::zero_bytes(w) != 0;
    if b.len() < 8 {
        return b.contains(&0);
    }
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        if c.first_chunk::<8>()
            .is_some_and(|w| zero(u64::from_le_bytes(*w)))
        {
            return true;
        }
    }
    // The last 8 bytes, overlapping the chunks, cover the remainder.
    !chunks.remainder().is_empty()
        && b[b.len() - 8..]
            .first_chunk::<8>()
            .is_some_and(|w| zero(u64::from_le_bytes(*w)))
}

fn trim_slashes(p: &[u8]) -> &[u8] {
    let n = p.iter().take_while(|&&c| c == b'/').count();
    &p[n..]
}

fn kind_of(name: &[u8]) -> LastType {
    match name {
        b"." => LastType::Dot,
        b".." => LastType::DotDot,
        _ => LastType::Norm,
    }
}

/// Whether a positive dentry is a directory (by its lockless snapshot; the
/// type of an inode never changes).
pub(crate) fn is_dir(d: &Dentry) -> bool {
    d.snap().is_some_and(|s| s.is_dir())
}

fn is_symlink(d: &Dentry) -> bool {
    d.snap().is_some_and(|s| s.is_symlink())
}

/// A walk's context: the VFS, the caller's credentials, its root and cwd.
pub(crate) struct Nd<'a> {
    vfs: &'a Vfs,
    cred: &'a Cred,
    root: DentryCow<'a>,
    host: Option<HostMount<'a>>,
}

/// A dentry a caller borrows (the VFS's root, which the VFS holds) or
/// holds a reference of its own to (a chroot's root; the cwd or a
/// directory fd's dentry, which may change under the caller): a walk's
/// root, and where a walk starts.
pub(crate) enum DentryCow<'a> {
    /// Borrowed.
    Ref(&'a DentryRef),
    /// A reference of the caller's own.
    Own(DentryRef),
}

impl DentryCow<'_> {
    /// The dentry, with a reference.
    pub(crate) fn into_owned(self) -> DentryRef {
        match self {
            DentryCow::Ref(d) => d.clone(),
            DentryCow::Own(d) => d,
        }
    }
}

impl std::ops::Deref for DentryCow<'_> {
    type Target = DentryRef;
    fn deref(&self) -> &DentryRef {
        match self {
            DentryCow::Ref(d) => d,
            DentryCow::Own(d) => d,
        }
    }
}

/// Where the caller's own namespace has this VFS mounted (see
/// [`crate::Process::set_host_mount`]): a symlink's absolute target is a
/// path of that namespace. One under `prefix` goes on inside this VFS with
/// the prefix taken off; any other leaves it: the walk fails with `EXDEV`
/// and leaves in `escaped` the host path it reached, the target followed by
/// what was left of the path.
#[derive(Clone, Copy)]
pub(crate) struct HostMount<'a> {
    pub(crate) prefix: &'a [u8],
    pub(crate) escaped: &'a EscapeSlot,
}

/// A thread handle's escape (see [`HostMount`]): the host path its last
/// walk left the VFS for, if any. An atomic pointer rather than a
/// `RefCell` so that a `Process` stays `Sync`; only the handle's own thread
/// uses it (a walk sets it, the caller takes it), so it is not a protocol
/// between threads: std's atomic, not the model's.
#[derive(Default)]
pub(crate) struct EscapeSlot(std::sync::atomic::AtomicPtr<Vec<u8>>);

impl EscapeSlot {
    /// Replaces the escape with `v`.
    fn set(&self, v: Option<Vec<u8>>) {
        let new = v.map_or(std::ptr::null_mut(), |v| Box::into_raw(Box::new(v)));
        let old = self.0.swap(new, std::sync::atomic::Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: every non-null pointer in the slot came from
            // `Box::into_raw` above, and the swap took it out: it is ours.
            drop(unsafe { Box::from_raw(old) });
        }
    }

    /// Takes the escape out.
    pub(crate) fn take(&self) -> Option<Vec<u8>> {
        if self.0.load(std::sync::atomic::Ordering::Relaxed).is_null() {
            return None;
        }
        let old = self
            .0
            .swap(std::ptr::null_mut(), std::sync::atomic::Ordering::AcqRel);
        // SAFETY: as in `set`: a pointer from `Box::into_raw`, taken out of
        // the slot by the swap.
        (!old.is_null()).then(|| *unsafe { Box::from_raw(old) })
    }

    /// Empties the slot (a walk starts).
    pub(crate) fn clear(&self) {
        if !self.0.load(std::sync::atomic::Ordering::Relaxed).is_null() {
            self.set(None);
        }
    }
}

impl Drop for EscapeSlot {
    fn drop(&mut self) {
        self.clear();
    }
}

impl Clone for EscapeSlot {
    /// A copy of a handle starts with no escape of its own.
    fn clone(&self) -> Self {
        EscapeSlot::default()
    }
}

impl std::fmt::Debug for EscapeSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EscapeSlot")
    }
}

struct Walk {
    cur: DentryRef,
    links: u32,
}

/// What [`Nd::lookup_ino`] found: the caller's answer, read without a
/// reference (from a path-cache hit, or with `FastPaths::stat_noref_walk`
/// at the end of the lockless walk), or the dentry.
pub(crate) enum Found<R> {
    /// What the caller's function returned.
    Attr(R),
    /// The dentry `path` resolves to.
    Dentry(DentryRef),
}

/// How a lockless walk ended: its answer (by default the dentry found,
/// referenced), and the dentry it read the answer from with that dentry's
/// sequence count (what the path cache remembers).
struct RcuEnd<T = DentryRef> {
    result: Result<T, Errno>,
    dentry: NonNull<Dentry>,
    seq: u32,
}

impl<'a> Nd<'a> {
    /// A walk whose `/` and whose `..` stop are `root` (a chroot's).
    pub(crate) fn with_root(vfs: &'a Vfs, cred: &'a Cred, root: DentryCow<'a>) -> Nd<'a> {
        Nd {
            vfs,
            cred,
            root,
            host: None,
        }
    }

    /// The walk's root directory.
    pub(crate) fn root(&self) -> &DentryRef {
        &self.root
    }

    /// The same walk for a caller whose namespace mounts this VFS at
    /// `host.prefix`.
    pub(crate) fn with_host(mut self, host: Option<HostMount<'a>>) -> Nd<'a> {
        self.host = host;
        self
    }

    /// A symlink's `target` as this walk follows it: unchanged, or, for a
    /// caller with a host mount and an absolute target, the target inside
    /// this VFS (the prefix taken off), or `EXDEV` with the target left as
    /// the escape (a path of the caller's namespace outside this VFS).
    pub(crate) fn link_target(&self, target: Vec<u8>) -> Result<Vec<u8>, Errno> {
        let Some(h) = self.host else {
            return Ok(target);
        };
        if target.first() != Some(&b'/') {
            return Ok(target);
        }
        // Lexically, as the walk would meet the components: the prefix is
        // normalized (absolute, no trailing slash), the target may repeat
        // slashes.
        let mut rest: &[u8] = &target;
        let mut inside = true;
        for comp in h.prefix.split(|&c| c == b'/').filter(|c| !c.is_empty()) {
            rest = trim_slashes(rest);
            let end = rest.iter().position(|&c| c == b'/').unwrap_or(rest.len());
            if &rest[..end] != comp {
                inside = false;
                break;
            }
            rest = &rest[end..];
        }
        if inside {
            let mut t = Vec::with_capacity(rest.len() + 1);
            t.push(b'/');
            t.extend_from_slice(trim_slashes(rest));
            return Ok(t);
        }
        h.escaped.set(Some(target));
        Err(Errno::EXDEV)
    }

    /// After a step failed: if the walk escaped, what was left of the path
    /// (`rest`, or a trailing slash) goes after the escape.
    fn escape_rest(&self, rest: &[u8]) {
        let Some(h) = self.host else { return };
        if rest.is_empty() {
            return;
        }
        if let Some(mut p) = h.escaped.take() {
            if p.last() != Some(&b'/') {
                p.push(b'/');
            }
            p.extend_from_slice(trim_slashes(rest));
            h.escaped.set(Some(p));
        }
    }

    /// Resolves `path` from `start` (used for relative paths) to a positive
    /// dentry.
    pub(crate) fn lookup(
        &self,
        start: &DentryRef,
        path: &[u8],
        flags: u32,
    ) -> Result<DentryRef, Errno> {
        if path.is_empty() {
            return if flags & EMPTY != 0 {
                Ok(start.clone())
            } else {
                Err(Errno::ENOENT)
            };
        }
        if let Some(pc) = self.vfs.path_cache() {
            return self.lookup_cached(pc, start, path, flags);
        }
        if let Some(r) = self.lookup_rcu(start, path, flags) {
            return r.result;
        }
        self.lookup_locked(start, path, flags)
    }

    /// The locked walk of [`lookup`](Self::lookup) (a non-empty path).
    fn lookup_locked(
        &self,
        start: &DentryRef,
        path: &[u8],
        flags: u32,
    ) -> Result<DentryRef, Errno> {
        let mut w = Walk {
            cur: start.clone(),
            links: 0,
        };
        let (kind, last, trailing) = self.link_path_walk(&mut w, path)?;
        self.walk_last(&mut w, kind, last, trailing, flags, true)?;
        Ok(w.cur)
    }

    /// As [`lookup`](Self::lookup) for a caller that needs only the inode
    /// `path` resolves to (stat, `FastPaths::stat_noref`): on a path-cache
    /// hit, `f` runs on the answer's dentry and inode number without a
    /// reference taken (see [`PathCache::find_ino`]) and its answer is
    /// returned; on a miss with `FastPaths::stat_noref_walk`, `walk_f` (the
    /// same function: two closures, so that each call site has its own
    /// and the hit's is inlined) runs at the end of the lockless walk (see
    /// [`fill_cached_ino`](Self::fill_cached_ino)); otherwise (a miss, `f` declining, no path cache) the
    /// lookup goes on as `lookup` does, with the key already built, and
    /// returns the dentry.
    pub(crate) fn lookup_ino<R>(
        &self,
        start: &DentryRef,
        path: &[u8],
        flags: u32,
        f: impl FnOnce(&Dentry, crate::fs::Ino, Option<Pinned>) -> Option<R>,
        walk_f: impl FnOnce(&Dentry, crate::fs::Ino) -> Option<R>,
    ) -> Result<Found<R>, Errno> {
        let Some(pc) = self.vfs.path_cache() else {
            return self.lookup(start, path, flags).map(Found::Dentry);
        };
        if path.is_empty() {
            return self.lookup(start, path, flags).map(Found::Dentry);
        }
        let mut key = Key::empty();
        if !self.key(&mut key, start, path, flags) {
            return self.lookup(start, path, flags).map(Found::Dentry);
        }
        if let Some(r) = pc.find_ino(&self.vfs.caches().dcache, &key, f) {
            return r.map(Found::Attr);
        }
        if self.vfs.fastpaths().stat_noref_walk {
            return match self.fill_cached_ino(pc, &key, start, path, flags, walk_f) {
                Some(r) => r.map(Found::Attr),
                None => self.lookup_locked(start, path, flags).map(Found::Dentry),
            };
        }
        match self.fill_cached(pc, &key, start, path, flags) {
            Some(r) => r.map(Found::Dentry),
            None => self.lookup_locked(start, path, flags).map(Found::Dentry),
        }
    }

    /// Resolves all but the last component of `path` (`ENOENT` for an
    /// empty path).
    pub(crate) fn lookup_parent(&self, start: DentryRef, path: &[u8]) -> Result<Parent, Errno> {
        self.lookup_parent_counted(start, path, 0)
    }

    /// As [`lookup_parent`](Self::lookup_parent), continuing a walk that has
    /// followed `links` symlinks already (the limit covers the whole open,
    /// trailing links included).
    pub(crate) fn lookup_parent_counted(
        &self,
        start: DentryRef,
        path: &[u8],
        links: u32,
    ) -> Result<Parent, Errno> {
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        let fast = self.vfs.fastpaths();
        if fast.path_cache_parent
            && fast.rcu_parent
            && let Some(pc) = self.vfs.path_cache()
            && let Some(p) = self.lookup_parent_cached(pc, &start, path, links)
        {
            return Ok(p);
        }
        if fast.rcu_parent
            && let Some(p) = self.lookup_parent_rcu(&start, path, links)
        {
            return Ok(p);
        }
        let mut w = Walk { cur: start, links };
        let (kind, last, trailing) = self.link_path_walk(&mut w, path)?;
        let last = LastName::new(last);
        Ok(Parent {
            dir: w.cur,
            last,
            kind,
            trailing,
            links: w.links,
            hash: None,
        })
    }

    /// Search permission on a directory (`may_lookup`).
    fn may_lookup(&self, dir: &DentryRef) -> Result<(), Errno> {
        match dir.snap() {
            Some(s) => inode_permission(self.cred, dir, &s.attr(), MAY_EXEC),
            None => Err(Errno::ENOENT),
        }
    }

    /// Walks every component but the last (`link_path_walk`); returns the
    /// last component, its kind and whether slashes followed it.
    fn link_path_walk<'p>(
        &self,
        w: &mut Walk,
        path: &'p [u8],
    ) -> Result<(LastType, &'p [u8], bool), Errno> {
        let mut rest = path;
        if rest.first() == Some(&b'/') {
            w.cur = self.root.clone();
            rest = trim_slashes(rest);
            if rest.is_empty() {
                return Ok((LastType::Root, b"/", false));
            }
        } else if !is_dir(&w.cur) {
            return Err(Errno::ENOTDIR);
        }
        loop {
            self.may_lookup(&w.cur)?;
            let end = rest.iter().position(|&c| c == b'/').unwrap_or(rest.len());
            let name = &rest[..end];
            let after = trim_slashes(&rest[end..]);
            if after.is_empty() {
                return Ok((kind_of(name), name, end < rest.len()));
            }
            if let Err(e) = self.step(w, name, true, false) {
                self.escape_rest(after);
                return Err(e);
            }
            if !is_dir(&w.cur) {
                return Err(Errno::ENOTDIR);
            }
            rest = after;
        }
    }

    /// Resolves the last component into `w.cur`; `ends_path`: it is the
    /// last component of the whole path (not of a symlink's target met
    /// midway), so a symlink there is a trailing one.
    fn walk_last(
        &self,
        w: &mut Walk,
        kind: LastType,
        name: &[u8],
        trailing: bool,
        flags: u32,
        ends_path: bool,
    ) -> Result<(), Errno> {
        let flags = if trailing {
            flags | FOLLOW | DIRECTORY
        } else {
            flags
        };
        match kind {
            LastType::Root => {}
            _ => {
                if let Err(e) = self.step(w, name, flags & FOLLOW != 0, ends_path) {
                    if trailing {
                        self.escape_rest(b"/");
                    }
                    return Err(e);
                }
            }
        }
        if flags & DIRECTORY != 0 && !is_dir(&w.cur) {
            return Err(Errno::ENOTDIR);
        }
        Ok(())
    }

    /// One component: `.`, `..`, or a name (following a symlink if
    /// `follow`; `ends_path`: a symlink here would be a trailing one).
    fn step(&self, w: &mut Walk, name: &[u8], follow: bool, ends_path: bool) -> Result<(), Errno> {
        match name {
            b"." => Ok(()),
            b".." => {
                w.cur = self.dotdot(&w.cur);
                Ok(())
            }
            _ => {
                let child = self.lookup_one(&w.cur, name)?;
                let child = self.follow_mounts(child);
                if follow && is_symlink(&child) {
                    self.follow_link(w, &child, ends_path)
                } else {
                    w.cur = child;
                    Ok(())
                }
            }
        }
    }

    /// Follows the symlink `link` found in `w.cur`, leaving its target in
    /// `w.cur`; `trailing`: it ends the path (`fs.protected_symlinks`
    /// applies, after the link count).
    fn follow_link(&self, w: &mut Walk, link: &DentryRef, trailing: bool) -> Result<(), Errno> {
        w.links += 1;
        if w.links > MAXSYMLINKS {
            return Err(Errno::ELOOP);
        }
        if trailing {
            self.may_follow_link(&w.cur, link)?;
        }
        let target = link.sb().fs.readlink_node(link.node())?;
        // Following a link is an access to it (`pick_link`).
        touch_atime(self.vfs, link);
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        let target = self.link_target(target)?;
        let (kind, last, slash) = self.link_path_walk(w, &target)?;
        self.walk_last(w, kind, last, slash, FOLLOW, trailing)
    }

    /// Linux's `may_follow_link` for a trailing symlink `link` in `dir`
    /// under `fs.protected_symlinks`: `EACCES` when the directory is
    /// sticky and world-writable and neither the follower (its fsuid) nor
    /// the directory's owner owns the link. No capability overrides it.
    pub(crate) fn may_follow_link(&self, dir: &DentryRef, link: &DentryRef) -> Result<(), Errno> {
        if self.vfs.sysctls().protected_symlinks == 0 {
            return Ok(());
        }
        let (Some(ds), Some(ls)) = (dir.snap(), link.snap()) else {
            return Ok(());
        };
        let (d, l) = (ds.attr(), ls.attr());
        if l.uid == self.cred.fsuid
            || d.mode & (S_ISVTX | 0o002) != (S_ISVTX | 0o002)
            || d.uid == l.uid
        {
            return Ok(());
        }
        Err(Errno::EACCES)
    }

    /// `..`: the parent, staying at the root, crossing a mount upwards.
    pub(crate) fn dotdot(&self, cur: &DentryRef) -> DentryRef {
        let mut d = cur.clone();
        loop {
            if DentryRef::ptr_eq(&d, &self.root) {
                return d;
            }
            if let Some(p) = d.parent() {
                return self.follow_mounts(p);
            }
            match self.vfs.mountpoint_of(&d) {
                Some(mp) => d = mp,
                None => return d,
            }
        }
    }

    /// The absolute path of `d` and whether the walk up met `root`
    /// ([`DentryCache::d_path`](crate::dcache::DentryCache::d_path), mounts
    /// crossed upwards through the mount table).
    pub(crate) fn d_path(&self, d: &DentryRef, root: &DentryRef) -> Result<(Vec<u8>, bool), Errno> {
        self.vfs
            .caches()
            .dcache
            .d_path(d, root, |top| self.vfs.mountpoint_of(top))
    }

    /// Descends into whatever is mounted on `d`.
    pub(crate) fn follow_mounts(&self, mut d: DentryRef) -> DentryRef {
        while let Some(r) = self.vfs.mounted_root(&d) {
            d = r;
        }
        d
    }

    /// Looks up one name in `dir` (`lookup_fast`, then `lookup_slow`);
    /// `ENOENT` for a negative entry.
    pub(crate) fn lookup_one(&self, dir: &DentryRef, name: &[u8]) -> Result<DentryRef, Errno> {
        let d = self.lookup_cached_or_fs(dir, name)?;
        if d.is_negative() {
            return Err(Errno::ENOENT);
        }
        Ok(d)
    }

    /// The dentry for `name` in `dir`, positive or negative, from the cache
    /// or the file system. Errors other than "no such name" come from the
    /// file system.
    pub(crate) fn lookup_cached_or_fs(
        &self,
        dir: &DentryRef,
        name: &[u8],
    ) -> Result<DentryRef, Errno> {
        if let Some(d) = self.vfs.caches().dcache.lookup_locked(dir, name) {
            return Ok(d);
        }
        let _g = lock(&dir.dir_lock);
        self.lookup_locked_dir(dir, name)
    }

    /// As [`lookup_cached_or_fs`](Self::lookup_cached_or_fs) with
    /// `dir.dir_lock` already held by the caller.
    pub(crate) fn lookup_locked_dir(
        &self,
        dir: &DentryRef,
        name: &[u8],
    ) -> Result<DentryRef, Errno> {
        self.lookup_locked_dir_hashed(dir, name, None)
    }

    /// [`lookup_locked_dir`](Self::lookup_locked_dir) of `p`'s last
    /// component in `p.dir`, with the hash the walk computed for it (no
    /// second hash of the name). The caller holds `p.dir.dir_lock`.
    pub(crate) fn lookup_locked_last(&self, p: &Parent) -> Result<DentryRef, Errno> {
        self.lookup_locked_dir_hashed(&p.dir, &p.last, p.hash)
    }

    /// [`lookup_locked_dir`](Self::lookup_locked_dir) with `name`'s
    /// dentry-cache hash under `dir`, if known.
    fn lookup_locked_dir_hashed(
        &self,
        dir: &DentryRef,
        name: &[u8],
        hash: Option<u64>,
    ) -> Result<DentryRef, Errno> {
        // A removed directory has no entries (IS_DEADDIR): ENOENT before the
        // cache (its rmdir pruned its cached children, `prune_dead_dir`; a
        // child allocated by a lookup that raced the removal is never
        // hashed) and before the file system's NAME_MAX check.
        if dir.is_dead_dir() {
            return Err(Errno::ENOENT);
        }
        let dc = &self.vfs.caches().dcache;
        let found = match hash {
            Some(h) => dc.search_locked_hashed(dir, name, h),
            None => dc.search_locked(dir, name),
        };
        let dying = match found {
            crate::dcache::Search::Hit(d) => return Ok(d),
            crate::dcache::Search::Dying => true,
            crate::dcache::Search::Miss => false,
        };
        // The file system's own name limit (`ENAMETOOLONG`), before it is
        // asked and before anything is cached under the name.
        if name.len() > dir.sb().limits.name_max {
            return Err(Errno::ENAMETOOLONG);
        }
        // A complete directory (every positive entry cached, see
        // `Dentry::is_complete`) need not ask the file system about a
        // well-formed name the cache lacks, unless the name's dentry is
        // dying (its killer may not have cleared the mark yet): the search
        // above, under the bucket lock, told that too, so the mark read
        // after it reflects any eviction that has unhashed the name.
        if !dying
            && !name.is_empty()
            && name != b"."
            && name != b".."
            && !name.contains(&b'/')
            && dir.is_complete()
        {
            return Ok(dc.d_alloc(dir, name));
        }
        match dir.sb().fs.lookup_node(dir.node(), name) {
            Ok((attr, data)) => {
                let inode = iget_found(self.vfs, dir.sb(), &attr, data)?;
                Ok(dc.d_alloc_positive(dir, name, inode, &attr))
            }
            Err(Errno::ENOENT) => Ok(dc.d_alloc(dir, name)),
            Err(e) => Err(e),
        }
    }

    /// [`lookup_parent_counted`](Self::lookup_parent_counted) by the
    /// lockless walk (`FastPaths::rcu_parent`; Linux's `path_parentat`
    /// in RCU mode): every component but the last is looked up without
    /// locks or references, and one reference is taken, on the directory
    /// holding the last component, after checking that nothing the walk
    /// read changed. `None` to fall back to the walk with references: a
    /// component missing from the cache or negative, `..`, a symlink, a
    /// mountpoint, a non-directory, a search permission denied or
    /// decided by an ACL, a path of slashes alone, or a change met on the
    /// way. So an answer is always one the walk with references gives,
    /// and every error comes from that walk.
    fn lookup_parent_rcu(&self, start: &DentryRef, path: &[u8], links: u32) -> Option<Parent> {
        let dc = &self.vfs.caches().dcache;
        let _pin = reclaim::pin_with(dc.cheap_pin());
        let mut rest = path;
        let mut cur: NonNull<Dentry> = start.as_ptr();
        if rest.first() == Some(&b'/') {
            cur = self.root.as_ptr();
            rest = trim_slashes(rest);
        }
        if rest.is_empty() {
            return None;
        }
        // SAFETY: pinned, and `cur` is referenced by the caller or the VFS.
        let mut seq = unsafe { cur.as_ref() }.read_seq()?;
        // SAFETY: as above.
        let mut snap = unsafe { cur.as_ref() }.snap()?;
        let check_search = !self.cred.capable(crate::cred::Cap::DacReadSearch);
        loop {
            if !snap.is_dir() {
                return None;
            }
            // `may_lookup` on every directory, the last one's included,
            // as the walk with references does.
            if check_search && !self.may_search_rcu(&snap) {
                return None;
            }
            let (end, hash) = crate::dcache::hash_component(cur.as_ptr(), rest);
            let name = &rest[..end];
            let after = trim_slashes(&rest[end..]);
            if after.is_empty() {
                let dir = DentryRef::legitimize(cur, seq)?;
                return Some(Parent {
                    dir,
                    last: LastName::new(name),
                    kind: kind_of(name),
                    trailing: end < rest.len(),
                    links,
                    // Salted with `cur`, which `dir` is.
                    hash: Some(hash),
                });
            }
            match name {
                b"." => {}
                b".." => return None,
                _ => {
                    let child = dc.lookup_rcu_hashed(cur, name, hash)?;
                    // SAFETY: pinned.
                    if !unsafe { cur.as_ref() }.seq_valid(seq) {
                        return None;
                    }
                    cur = child.dentry;
                    seq = child.seq;
                    // SAFETY: pinned; reached through the cache.
                    let d = unsafe { cur.as_ref() };
                    if !d.mounted_ptr().is_null() {
                        return None;
                    }
                    snap = d.snap()?;
                    if snap.is_symlink() {
                        return None;
                    }
                }
            }
            rest = after;
        }
    }

    /// Whether the lockless walks may go on through the directory whose
    /// snapshot is `snap` (`may_lookup` for a caller without
    /// `CAP_DAC_READ_SEARCH`): search permission by its mode and owners.
    /// A directory with an access ACL answers no: the walk with
    /// references reads the ACL.
    #[inline]
    fn may_search_rcu(&self, snap: &crate::dcache::Snap) -> bool {
        let a = snap.attr();
        a.acl & crate::fs::HAS_ACCESS_ACL == 0 && permission(self.cred, &a, MAY_EXEC).is_ok()
    }

    /// The lockless walk; `None` to fall back to the locked walk.
    fn lookup_rcu(&self, start: &DentryRef, path: &[u8], flags: u32) -> Option<RcuEnd> {
        self.lookup_rcu_then(start, path, flags, |cur, seq| {
            DentryRef::legitimize(cur, seq)
        })
    }

    /// The lockless walk, ended by `found` on the positive dentry the path
    /// resolves to and the sequence count the walk found it at, while the
    /// walk is still pinned: a reference taken (`lookup_rcu`), or what a
    /// caller reads from it without one. `None` (from the walk or from
    /// `found`) to fall back to the locked walk.
    #[inline]
    fn lookup_rcu_then<T>(
        &self,
        start: &DentryRef,
        path: &[u8],
        flags: u32,
        found: impl FnOnce(NonNull<Dentry>, u32) -> Option<T>,
    ) -> Option<RcuEnd<T>> {
        let dc = &self.vfs.caches().dcache;
        let _pin = reclaim::pin_with(dc.cheap_pin());
        let mut rest = path;
        let mut cur: NonNull<Dentry> = start.as_ptr();
        if rest.first() == Some(&b'/') {
            cur = self.root.as_ptr();
            rest = trim_slashes(rest);
        }
        // SAFETY: pinned, and `cur` is referenced by the caller or the VFS.
        let mut seq = unsafe { cur.as_ref() }.read_seq()?;
        // SAFETY: as above.
        let mut snap = unsafe { cur.as_ref() }.snap()?;
        // The answer, with the dentry it was read from and its count.
        let ended = |cur: NonNull<Dentry>, seq: u32, result| RcuEnd {
            result,
            dentry: cur,
            seq,
        };
        if rest.is_empty() {
            // "/" alone.
            return found(cur, seq).map(|r| ended(cur, seq, Ok(r)));
        }
        if !snap.is_dir() {
            return None;
        }
        // Root searches every directory (`CAP_DAC_READ_SEARCH`).
        let check_search = !self.cred.capable(crate::cred::Cap::DacReadSearch);
        loop {
            // A directory with an access ACL is left to the walk with
            // references (which reads the ACL): it is never memoized.
            if check_search && !self.may_search_rcu(&snap) {
                return None;
            }
            let (end, hash) = crate::dcache::hash_component(cur.as_ptr(), rest);
            let name = &rest[..end];
            let after = trim_slashes(&rest[end..]);
            let last = after.is_empty();
            let trailing = end < rest.len();
            match name {
                b"." => {}
                b".." => return None,
                _ => {
                    // A name longer than the file system allows is never
                    // cached (`lookup_locked_dir` refuses it first): it
                    // misses here, and the locked walk reports it.
                    let child = dc.lookup_rcu_hashed(cur, name, hash)?;
                    // SAFETY: pinned.
                    if !unsafe { cur.as_ref() }.seq_valid(seq) {
                        return None;
                    }
                    cur = child.dentry;
                    seq = child.seq;
                    // SAFETY: pinned; reached through the cache.
                    let d = unsafe { cur.as_ref() };
                    if !d.mounted_ptr().is_null() {
                        return None;
                    }
                    match d.snap() {
                        None => {
                            return d
                                .seq_valid(seq)
                                .then(|| ended(cur, seq, Err(Errno::ENOENT)));
                        }
                        Some(s) => {
                            if s.is_symlink() && (!last || trailing || flags & FOLLOW != 0) {
                                return None;
                            }
                            snap = s;
                        }
                    }
                }
            }
            if last {
                if (flags & DIRECTORY != 0 || trailing) && !snap.is_dir() {
                    // SAFETY: pinned.
                    return unsafe { cur.as_ref() }
                        .seq_valid(seq)
                        .then(|| ended(cur, seq, Err(Errno::ENOTDIR)));
                }
                return found(cur, seq).map(|r| ended(cur, seq, Ok(r)));
            }
            if !snap.is_dir() {
                // SAFETY: pinned.
                return unsafe { cur.as_ref() }
                    .seq_valid(seq)
                    .then(|| ended(cur, seq, Err(Errno::ENOTDIR)));
            }
            rest = after;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{LastName, has_nul};

    #[test]
    fn last_name_holds_every_length() {
        for len in 0..=255usize {
            let name: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let l = LastName::new(&name);
            assert_eq!(&*l, &name[..], "{len}");
            assert_eq!(
                matches!(l, LastName::Inline { .. }),
                len <= LastName::INLINE,
                "{len}"
            );
        }
        assert_eq!(std::mem::size_of::<LastName>(), 48);
    }

    #[test]
    fn has_nul_matches_contains() {
        for len in 0..40 {
            let base: Vec<u8> = (0..len).map(|i| b"/ab\x01\x80\xff."[i % 7]).collect();
            assert!(!has_nul(&base), "{base:?}");
            for at in 0..len {
                let mut v = base.clone();
                v[at] = 0;
                assert!(has_nul(&v), "{v:?}");
            }
        }
    }
}
