//! The dentry cache (`dcache`): names resolved to inodes, positive and
//! negative, in one hash table keyed by (parent dentry, name), with an LRU
//! and a size limit so a walk over more names than the cache holds misses
//! the way it does on a disk file system.
//!
//! # Lifetimes
//!
//! A dentry has a reference count; cached-but-unused dentries have count
//! zero and stay hashed. A child holds a reference on its parent and a
//! positive dentry one on its inode (in the [inode cache](crate::icache)),
//! so eviction works from the leaves up, as in Linux. The count has a `DEAD`
//! bit: a dentry being killed cannot be revived by a lockless lookup
//! (`lockref_get_not_dead`).
//!
//! # Children and removed directories
//!
//! A directory lists its child dentries that were made negative (Linux's
//! `d_children` lists every child), in a [`Children`] allocated at its
//! first such child: a vector of pointers under its own lock, each child
//! knowing its index (`slot`), so listing and unlisting cost O(1). When a
//! directory is removed (rmdir, or renamed over), [`DentryCache::
//! prune_dead_dir`] does what Linux's `shrink_dcache_parent` does for it:
//! its listed children are unhashed at once, and those nobody uses die
//! then; the list is marked dead, so a negative child made afterwards (a
//! lookup that raced the removal) is never hashed and dies at its last put.
//! So nothing cached keeps a removed directory, or its ancestors, alive.
//!
//! Only negative dentries need the list: a positive one leaves the hash
//! with its name (unlink, rmdir, a rename's victim or move), so a removed
//! directory, being empty, can only have negative children cached. (A
//! dentry made negative and then instantiated stays listed until it dies or
//! moves.) A dentry made by a lookup that found its name
//! ([`DentryCache::d_alloc_positive`]) or moved by a rename is not listed,
//! so the miss path of a walk over a tree larger than the cache (seed 002's
//! fstree: a positive dentry made, another evicted, per stat) takes no
//! list lock.
//!
//! Lock order: a directory's `dir_lock`, then a `Children` lock, then a
//! bucket lock. The LRU lock is never held with a `Children` lock, and no
//! `Children` lock is taken under a bucket lock.
//!
//! Dentry memory is reclaimed through the epoch scheme in [`reclaim`]
//! (Linux frees dentries after an RCU grace period too): a lockless walker
//! pins the epoch, so any dentry it reaches through a hash chain or a parent
//! pointer stays allocated while it looks at it.
//!
//! # Lockless lookup (the RCU walk)
//!
//! [`DentryCache::lookup_rcu`] searches a chain with no lock and no
//! reference, and returns the child with a snapshot of its sequence count
//! (`d_seq`). Every change a walker must not miss — instantiation, unhashing,
//! a rename's move — happens inside a write section of that count (odd while
//! in progress), so a walker that re-reads an unchanged, even count knows the
//! name, parent and inode it read belong together. A miss in a lockless
//! search is never trusted: the caller falls back to the locked walk, which
//! searches under the bucket lock.
//!
//! # LRU
//!
//! A dentry joins the LRU at its first final put and stays on it while in use
//! (Linux's lazy LRU): later final puts only set `REFERENCED`, so the hot
//! open/close path takes no global lock. The shrinker skips referenced
//! entries once (second chance), drops in-use ones from the list, and kills
//! the rest.

use crate::errno::Errno;
use crate::fs::{Attr, Ino, S_IFDIR, S_IFLNK, S_IFMT};
use crate::icache::Inode;
use crate::primitive::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Mutex, Ordering, lock};
use crate::reclaim;
use crate::vfs::SuperBlock;
use std::cell::UnsafeCell;
use std::fmt;
use std::ops::Deref;
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The count bit of a dentry being killed.
const DEAD: usize = 1 << (usize::BITS - 1);
/// Mirror of `HASHED` in the count word, so the final put's CAS proves the
/// dentry is still hashed.
const C_HASHED: usize = 1 << (usize::BITS - 2);
/// Mirror of `LRU` in the count word (see [`dput`]).
const C_LRU: usize = 1 << (usize::BITS - 3);
/// The reference count bits.
const REFS: usize = C_LRU - 1;

/// In the hash table.
const HASHED: u32 = 1;
/// On the LRU list.
const LRU: u32 = 2;
/// Used since the shrinker last looked.
const REFERENCED: u32 = 4;

/// An `O_TMPFILE | O_EXCL` file: may never be given a name.
const NOLINK: u32 = 8;
/// A removed directory (rmdir'ed or renamed over): `S_DEAD`.
const DEADDIR: u32 = 16;

/// The most bucket locks (each on its own cache lines).
const MAX_LOCKS: usize = 4096;

/// The `slot` of a dentry in no parent's [`Children`] list.
const NO_SLOT: u32 = u32::MAX;

/// A directory's negative child dentries (see the module's "Children and
/// removed directories"), so that a removed directory's cached children can
/// be found and pruned without a scan of the cache. Allocated at the first
/// listed child (or at the prune) and freed when the directory's dentry is
/// killed (it has no child then: each holds a reference on it).
///
/// Invariants, under `kids`: each listed dentry's `parent` is this
/// directory and its `slot` is its index in `list`; a listed dentry's
/// memory is live (`kill` unlists it before retiring it); every hashed
/// negative dentry is listed in its parent's `Children`; a dead list gains
/// no member. Whether a dentry is listed at all (`slot != NO_SLOT`)
/// changes only by operations on that dentry by a holder of it (`d_alloc`,
/// `d_move`, `kill`), never by another dentry's listing or unlisting (which
/// only renumbers `slot`): so the holder may test it without the lock.
struct Children {
    kids: Mutex<Kids>,
}

struct Kids {
    /// The directory was removed and pruned: no child joins the list or
    /// the hash any more.
    dead: bool,
    list: Vec<NonNull<Dentry>>,
}

impl Children {
    fn new() -> Children {
        Children {
            kids: Mutex::new(Kids {
                dead: false,
                list: Vec::new(),
            }),
        }
    }
}

impl Kids {
    /// Lists `d` (whose `parent` is this list's directory); `false` if the
    /// list is dead (or, in theory, full: `slot` is a `u32`).
    fn push(&mut self, d: NonNull<Dentry>) -> bool {
        if self.dead || self.list.len() >= NO_SLOT as usize {
            return false;
        }
        // SAFETY: the caller owns a reference to `d`.
        unsafe { d.as_ref() }
            .slot
            .store(self.list.len() as u32, Ordering::Relaxed);
        self.list.push(d);
        true
    }

    /// Unlists `d` if it is listed here (swap-remove: the last entry takes
    /// its index).
    fn remove(&mut self, d: &Dentry) {
        let at = d.slot.load(Ordering::Relaxed);
        if at == NO_SLOT {
            return;
        }
        let me = NonNull::from(d);
        let at = match self.list.get(at as usize) {
            Some(&x) if x == me => at as usize,
            _ => {
                // A wrong slot is a bug; never leave a stale pointer.
                debug_assert!(false, "dentry listed at the wrong slot");
                match self.list.iter().position(|&x| x == me) {
                    Some(i) => i,
                    None => return,
                }
            }
        };
        self.list.swap_remove(at);
        if let Some(&moved) = self.list.get(at) {
            // SAFETY: listed dentries are live (see `Children`).
            unsafe { moved.as_ref() }
                .slot
                .store(at as u32, Ordering::Relaxed);
        }
        d.slot.store(NO_SLOT, Ordering::Relaxed);
        // A directory that once had many cached children gives the memory
        // back as they go (amortized O(1)).
        if self.list.capacity() > 64 && self.list.len() < self.list.capacity() / 4 {
            self.list.shrink_to(self.list.capacity() / 2);
        }
    }
}

/// A name as stored: immutable, replaced whole (and the old one reclaimed
/// after a grace period) by a rename. The bytes sit in a [`primitive`
/// cell](crate::primitive::UnsafeCell) (a plain cell in normal builds) so
/// that under loom every lockless read of a name is checked to happen after
/// the name's creation: a walker that reaches a dentry or a name through a
/// pointer published without a release would be reported.
struct Name(crate::primitive::UnsafeCell<Box<[u8]>>);

impl Name {
    fn new(name: &[u8]) -> *mut Name {
        Box::into_raw(Box::new(Name(crate::primitive::UnsafeCell::new(
            name.into(),
        ))))
    }

    /// Runs `f` on the bytes.
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        // SAFETY: a name is never written after its creation.
        self.0.with(|b| f(unsafe { &*b }))
    }
}

/// A directory entry in memory (`struct dentry`).
///
/// Cache-line aligned: the count word is written by every open and close
/// of the file it names, and two dentries sharing a line (malloc packs
/// 120-byte boxes back to back) made two tasks opening their own files
/// slow each other down at random (open1, processes mode, 2 tasks: 1.0x or
/// 2.0x depending on where the allocator had put the two dentries).
/// 128 bytes: the child-list pointer and `slot` fill what was padding
/// (a unit test holds it to two lines).
#[repr(align(64))]
pub struct Dentry {
    count: AtomicUsize,
    seq: AtomicU32,
    flags: AtomicU32,
    /// The parent (holding a reference), or null for a superblock's root.
    parent: AtomicPtr<Dentry>,
    name: AtomicPtr<Name>,
    hash: AtomicU64,
    /// Next in the hash chain.
    next: AtomicPtr<Dentry>,
    /// The inode (one reference held), or null: a negative dentry.
    inode: AtomicPtr<Inode>,
    /// The inode's number and the attributes the walk reads without locks
    /// (type, permission bits, owner), copied at instantiation and kept in
    /// step by the VFS's chmod/chown.
    ino: AtomicU64,
    mode: AtomicU32,
    uid: AtomicU32,
    gid: AtomicU32,
    /// The root dentry of the file system mounted here, or null.
    mounted: AtomicPtr<Dentry>,
    /// Serializes changes to this directory's children (the `i_rwsem`
    /// analogue; directories have one dentry).
    pub(crate) dir_lock: Mutex<()>,
    /// LRU links, guarded by the cache's LRU lock.
    lru: UnsafeCell<(*mut Dentry, *mut Dentry)>,
    sb: Arc<SuperBlock>,
    /// This directory's [`Children`], or null until its first child.
    children: AtomicPtr<Children>,
    /// The index in the parent's [`Children`] list, or [`NO_SLOT`];
    /// written and read as an index only under that list's lock (see
    /// [`Children`] for the one unlocked test).
    slot: AtomicU32,
}

// SAFETY: shared state is atomics and mutexes; `lru` is only touched under
// the cache's LRU lock; `sb` is `Send + Sync`.
unsafe impl Send for Dentry {}
// SAFETY: as above.
unsafe impl Sync for Dentry {}

/// What a lockless child lookup found.
pub(crate) struct RcuChild {
    pub(crate) dentry: NonNull<Dentry>,
    pub(crate) seq: u32,
}

/// Attributes the walk needs, read without locks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Snap {
    pub(crate) ino: Ino,
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

impl Snap {
    pub(crate) fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }

    pub(crate) fn is_symlink(&self) -> bool {
        self.mode & S_IFMT == S_IFLNK
    }

    /// An `Attr` carrying the permission-relevant fields, for the checks in
    /// [`cred`](crate::cred).
    pub(crate) fn attr(&self) -> Attr {
        Attr {
            ino: self.ino,
            mode: self.mode,
            nlink: 1,
            uid: self.uid,
            gid: self.gid,
            size: 0,
            blocks: 0,
            blksize: 0,
            atime: Default::default(),
            mtime: Default::default(),
            ctime: Default::default(),
            btime: Default::default(),
        }
    }
}

impl Dentry {
    fn new(sb: Arc<SuperBlock>, parent: *mut Dentry, name: &[u8], hash: u64) -> Box<Dentry> {
        let name = Name::new(name);
        Box::new(Dentry {
            count: AtomicUsize::new(1),
            seq: AtomicU32::new(0),
            flags: AtomicU32::new(0),
            parent: AtomicPtr::new(parent),
            name: AtomicPtr::new(name),
            hash: AtomicU64::new(hash),
            next: AtomicPtr::new(ptr::null_mut()),
            inode: AtomicPtr::new(ptr::null_mut()),
            ino: AtomicU64::new(0),
            mode: AtomicU32::new(0),
            uid: AtomicU32::new(0),
            gid: AtomicU32::new(0),
            mounted: AtomicPtr::new(ptr::null_mut()),
            dir_lock: Mutex::new(()),
            lru: UnsafeCell::new((ptr::null_mut(), ptr::null_mut())),
            sb,
            children: AtomicPtr::new(ptr::null_mut()),
            slot: AtomicU32::new(NO_SLOT),
        })
    }

    /// This directory's child list, allocated on first use. The caller
    /// holds a reference (or a child's reference): the list lives until
    /// the dentry is killed.
    fn children(&self) -> &Children {
        if let Some(c) = self.children_if_any() {
            return c;
        }
        let new = Box::into_raw(Box::new(Children::new()));
        match self.children.compare_exchange(
            ptr::null_mut(),
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: just published; freed only by `kill`, which the
            // caller's reference holds off.
            Ok(_) => unsafe { &*new },
            Err(cur) => {
                // SAFETY: ours, never published.
                drop(unsafe { Box::from_raw(new) });
                // SAFETY: published by the winner; freed only by `kill`.
                unsafe { &*cur }
            }
        }
    }

    /// The child list if one was allocated (no child was ever listed
    /// otherwise). Same contract as [`children`](Self::children).
    fn children_if_any(&self) -> Option<&Children> {
        // SAFETY: freed only by `kill`, which the caller's reference holds
        // off; published with a release.
        NonNull::new(self.children.load(Ordering::Acquire)).map(|c| unsafe { &*c.as_ptr() })
    }

    /// The superblock this dentry belongs to.
    pub(crate) fn sb(&self) -> &Arc<SuperBlock> {
        &self.sb
    }

    /// Begins a change readers must not see half-done.
    fn write_begin(&self) {
        self.seq.fetch_add(1, Ordering::Relaxed);
        crate::primitive::fence(Ordering::Release);
    }

    fn write_end(&self) {
        self.seq.fetch_add(1, Ordering::Release);
    }

    /// The sequence count, waiting out a writer (spins are short: writers
    /// hold it for a few stores). `None` if a writer is active: the lockless
    /// walk gives up instead of waiting.
    #[inline]
    pub(crate) fn read_seq(&self) -> Option<u32> {
        let s = self.seq.load(Ordering::Acquire);
        (s & 1 == 0).then_some(s)
    }

    /// Whether the count is still `seq` (the reads since were consistent).
    #[inline]
    pub(crate) fn seq_valid(&self, seq: u32) -> bool {
        crate::primitive::fence(Ordering::Acquire);
        self.seq.load(Ordering::Relaxed) == seq
    }

    /// The lockless snapshot of the inode's walk attributes; `None` for a
    /// negative dentry. Validate with [`seq_valid`](Self::seq_valid).
    #[inline]
    pub(crate) fn snap(&self) -> Option<Snap> {
        if self.inode.load(Ordering::Acquire).is_null() {
            return None;
        }
        Some(Snap {
            ino: self.ino.load(Ordering::Relaxed),
            mode: self.mode.load(Ordering::Relaxed),
            uid: self.uid.load(Ordering::Relaxed),
            gid: self.gid.load(Ordering::Relaxed),
        })
    }

    /// Whether the dentry is negative (no inode).
    pub(crate) fn is_negative(&self) -> bool {
        self.inode.load(Ordering::Acquire).is_null()
    }

    /// The inode number (0 for a negative dentry).
    pub(crate) fn ino(&self) -> Ino {
        self.ino.load(Ordering::Relaxed)
    }

    /// Whether the dentry is still in the hash (not unlinked, removed or
    /// renamed over).
    pub(crate) fn is_hashed(&self) -> bool {
        self.flags.load(Ordering::Acquire) & HASHED != 0
    }

    /// The parent pointer (no reference); null at a superblock root.
    pub(crate) fn parent_ptr(&self) -> *mut Dentry {
        self.parent.load(Ordering::Acquire)
    }

    /// The root of the file system mounted on this dentry, if any.
    pub(crate) fn mounted_ptr(&self) -> *mut Dentry {
        self.mounted.load(Ordering::Acquire)
    }

    /// A copy of the name. The caller must keep the name from being replaced
    /// (hold a reference and the parent's `dir_lock`, or accept a racy copy
    /// under an epoch pin).
    pub(crate) fn name(&self) -> Vec<u8> {
        let _g = reclaim::pin();
        // SAFETY: names are freed only after a grace period, and we are
        // pinned.
        unsafe { &*self.name.load(Ordering::Acquire) }.with(<[u8]>::to_vec)
    }

    /// Updates the lockless copy of the permission attributes after a chmod
    /// or chown.
    pub(crate) fn set_perm(&self, mode: u32, uid: u32, gid: u32) {
        self.write_begin();
        self.mode.store(mode, Ordering::Relaxed);
        self.uid.store(uid, Ordering::Relaxed);
        self.gid.store(gid, Ordering::Relaxed);
        self.write_end();
    }

    /// Marks an unnamed (`O_TMPFILE | O_EXCL`) file as never linkable.
    pub(crate) fn set_unlinkable(&self) {
        self.flags.fetch_or(NOLINK, Ordering::Relaxed);
    }

    /// Marks a directory removed (`S_DEAD`): lookups in it fail.
    pub(crate) fn set_dead_dir(&self) {
        self.flags.fetch_or(DEADDIR, Ordering::Relaxed);
    }

    /// Whether this directory was removed.
    pub(crate) fn is_dead_dir(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & DEADDIR != 0
    }

    /// Whether `linkat` may not give this file a name.
    pub(crate) fn is_unlinkable(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & NOLINK != 0
    }

    /// Takes a reference unless the dentry is dead (`lockref_get_not_dead`).
    #[inline]
    fn get_not_dead(&self) -> bool {
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            if c & DEAD != 0 {
                return false;
            }
            match self
                .count
                .compare_exchange_weak(c, c + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => c = seen,
            }
        }
    }

    /// References held (for tests and checks).
    pub(crate) fn refs(&self) -> usize {
        self.count.load(Ordering::Relaxed) & REFS
    }
}

impl fmt::Debug for Dentry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dentry")
            .field("name", &String::from_utf8_lossy(&self.name()))
            .field("ino", &self.ino())
            .field("count", &self.refs())
            .finish_non_exhaustive()
    }
}

/// A counted reference to a dentry (`dget`/`dput`).
pub struct DentryRef(NonNull<Dentry>);

// SAFETY: a counted reference to a `Send + Sync` object, like `Arc`.
unsafe impl Send for DentryRef {}
// SAFETY: as above.
unsafe impl Sync for DentryRef {}

impl DentryRef {
    /// Takes a reference to a dentry reached locklessly, then checks that
    /// its sequence count is still `seq` (`legitimize`): `None` if it died or
    /// changed.
    pub(crate) fn legitimize(d: NonNull<Dentry>, seq: u32) -> Option<DentryRef> {
        // SAFETY: the caller is pinned and reached `d` through the cache, so
        // its memory is valid.
        let dr = unsafe { d.as_ref() };
        if !dr.get_not_dead() {
            return None;
        }
        let r = DentryRef(d);
        dr.seq_valid(seq).then_some(r)
    }

    /// The raw pointer, for identity and the lockless walk.
    pub(crate) fn as_ptr(&self) -> NonNull<Dentry> {
        self.0
    }

    /// Whether two references are to the same dentry.
    pub fn ptr_eq(a: &DentryRef, b: &DentryRef) -> bool {
        a.0 == b.0
    }

    /// A new reference to the parent, or `None` at a superblock root.
    /// The caller holds the parent's parent `dir_lock` or accepts a parent
    /// that a concurrent rename is replacing.
    pub(crate) fn parent(&self) -> Option<DentryRef> {
        let _g = reclaim::pin();
        loop {
            let p = NonNull::new(self.parent_ptr())?;
            // SAFETY: pinned, and `p` was our parent (holding a reference
            // from us) when loaded.
            if unsafe { p.as_ref() }.get_not_dead() {
                let r = DentryRef(p);
                if self.parent_ptr() == p.as_ptr() {
                    return Some(r);
                }
            }
        }
    }

    /// Locks the inode's I/O lock (see [`Inode::io_lock`]); a no-op guard
    /// for a negative dentry.
    pub(crate) fn lock_inode(&self) -> Option<crate::primitive::MutexGuard<'_, ()>> {
        let i = self.inode_ptr()?;
        // SAFETY: our dentry reference holds an inode reference, so the node
        // stays this inode for as long as the borrow of `self`.
        Some(lock(&unsafe { &*i.as_ptr() }.io_lock))
    }

    /// The inode's current permission attributes (from the inode, shared by
    /// every name of it), as a [`Snap`]; `None` for a negative dentry.
    pub(crate) fn inode_perm(&self) -> Option<Snap> {
        let i = self.inode_ptr()?;
        // SAFETY: our reference holds an inode reference.
        let (mode, uid, gid) = unsafe { i.as_ref() }.perm();
        Some(Snap {
            ino: self.ino(),
            mode,
            uid,
            gid,
        })
    }

    /// The in-core inode (the caller's reference keeps it), or `None` for a
    /// negative dentry.
    pub(crate) fn inode(&self) -> Option<&Inode> {
        // SAFETY: our reference holds an inode reference.
        self.inode_ptr().map(|i| unsafe { &*i.as_ptr() })
    }

    /// The referenced inode (the caller's dentry is positive).
    pub(crate) fn inode_ptr(&self) -> Option<NonNull<Inode>> {
        NonNull::new(self.inode.load(Ordering::Acquire))
    }
}

impl Deref for DentryRef {
    type Target = Dentry;
    #[inline]
    fn deref(&self) -> &Dentry {
        // SAFETY: we hold a reference.
        unsafe { self.0.as_ref() }
    }
}

impl Clone for DentryRef {
    fn clone(&self) -> DentryRef {
        self.count.fetch_add(1, Ordering::Relaxed);
        DentryRef(self.0)
    }
}

impl Drop for DentryRef {
    fn drop(&mut self) {
        dput(self.0);
    }
}

impl fmt::Debug for DentryRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

/// Drops one reference (`dput`).
///
/// The common final put of a cached dentry takes no lock and no epoch pin:
/// when the count word says "one reference, hashed, on the LRU", one CAS to
/// "no reference, hashed, on the LRU" both drops the reference and proves
/// the dentry stays cached (an unhash or an LRU removal changes the word and
/// fails the CAS), and nothing touches the dentry after it.
fn dput(d: NonNull<Dentry>) {
    // SAFETY: the caller owns a reference.
    let dr = unsafe { d.as_ref() };
    let mut c = dr.count.load(Ordering::Relaxed);
    loop {
        let last = c & REFS == 1;
        if last
            && (c & (C_HASHED | C_LRU) != C_HASHED | C_LRU
                || dr.sb.caches().dcache.shutdown.load(Ordering::Relaxed))
        {
            break;
        }
        if last && dr.flags.load(Ordering::Relaxed) & REFERENCED == 0 {
            // Still ours to touch: we hold the reference.
            dr.flags.fetch_or(REFERENCED, Ordering::Relaxed);
        }
        match dr
            .count
            .compare_exchange_weak(c, c - 1, Ordering::Release, Ordering::Relaxed)
        {
            Ok(_) => return,
            Err(seen) => c = seen,
        }
    }
    // The last reference to a dentry that must die or join the LRU. Once the
    // count is zero another thread may revive and kill the dentry; the pin
    // keeps its memory for the checks below.
    let _pin = reclaim::pin();
    let cache = &dr.sb.caches().dcache;
    loop {
        let c = dr.count.load(Ordering::Relaxed);
        debug_assert!(c & REFS >= 1, "dput of a dentry with no reference");
        let shutdown = cache.shutdown.load(Ordering::Acquire);
        if c & REFS > 1 || (c & C_LRU != 0 && c & C_HASHED != 0 && !shutdown) {
            if dr
                .count
                .compare_exchange_weak(c, c - 1, Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            continue;
        }
        if c & C_HASHED == 0 || shutdown {
            if dr
                .count
                .compare_exchange(c, (c - 1) | DEAD, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: the count went to DEAD from our reference: ours.
                unsafe { kill(d) };
                return;
            }
            continue;
        }
        // Hashed, not on the LRU yet: drop to zero, then list it.
        if dr
            .count
            .compare_exchange(c, c - 1, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        cache.lru_add(d);
        return;
    }
}

/// Frees a dead dentry: out of the hash and the LRU, its inode and parent
/// references dropped, memory reclaimed after a grace period.
///
/// # Safety
/// The count is `DEAD`, set by the caller, who owns the dentry.
unsafe fn kill(d: NonNull<Dentry>) {
    let mut next = Some(d);
    while let Some(d) = next.take() {
        // SAFETY: per the contract (and the loop: parents are killed only
        // after winning their own DEAD transition below).
        let dr = unsafe { d.as_ref() };
        let caches = dr.sb.caches().clone();
        let cache = &caches.dcache;
        if dr.flags.load(Ordering::Acquire) & HASHED != 0 {
            cache.unhash(d);
        }
        // Listed or not is decided by `C_LRU` in the count, not by the
        // `LRU` flag: `C_LRU` is set (under the LRU lock, before the flag
        // and the links) only by a CAS that refuses `DEAD`, so either our
        // `DEAD` saw it and the lock below waits for the listing to finish,
        // or nobody lists this dentry any more. The flag, read without the
        // lock, could say "not listed" while the shrinker held it off the
        // list for a moment.
        if dr.count.load(Ordering::Acquire) & C_LRU != 0 {
            let _g = lock(&cache.lru_lock);
            // SAFETY: under the LRU lock.
            unsafe { cache.lru_unlink(d) };
        }
        if let Some(i) = NonNull::new(dr.inode.swap(ptr::null_mut(), Ordering::AcqRel)) {
            // SAFETY: the dentry held this reference, taken from this cache.
            drop(unsafe { caches.icache.from_raw(i) });
        }
        cache.nr.fetch_sub(1, Ordering::Relaxed);
        let parent = dr.parent.swap(ptr::null_mut(), Ordering::AcqRel);
        // Off the parent's child list while our memory is still live (a
        // prune walks the list under its lock and looks at each member),
        // and before our reference on the parent goes. Listed or not is
        // ours to test without the lock: we own the dentry (see
        // `Children`); an unlisted one takes no lock.
        if let Some(p) = NonNull::new(parent)
            && dr.slot.load(Ordering::Relaxed) != NO_SLOT
        {
            // SAFETY: we still hold the reference on the parent.
            if let Some(ch) = unsafe { p.as_ref() }.children_if_any() {
                lock(&ch.kids).remove(dr);
            }
        }
        // Our own list is empty (every child held a reference on us and
        // unlisted itself before dropping it), and nobody else can reach
        // it: only holders of a reference on us do.
        if let Some(ch) = NonNull::new(dr.children.swap(ptr::null_mut(), Ordering::AcqRel)) {
            // SAFETY: allocated by `children` with `Box::new`, unreachable
            // now (see above).
            let ch = unsafe { Box::from_raw(ch.as_ptr()) };
            debug_assert!(lock(&ch.kids).list.is_empty(), "killed with children");
            drop(ch);
        }
        // The name stays in place (freed with the dentry, after the grace
        // period): a lockless walker may be standing on this dentry, having
        // reached it through a chain before the unhash, and reads the name
        // after checking the hash, parent and sequence count, none of which
        // killing changes in a write section. Nulling it here made that
        // walker dereference null (found by the loom model
        // `rename_over_victim_vs_step_new_name`: a SIGSEGV when the victim's
        // last reference was dropped under the walker).
        let name = dr.name.load(Ordering::Acquire);
        // SAFETY: the dentry is unreachable for new walkers (unhashed, no
        // references); pinned walkers may still read it, so both are freed
        // after a grace period.
        unsafe {
            if let Some(n) = NonNull::new(name) {
                reclaim::defer_drop_box(n);
            }
            reclaim::defer_drop_box(d);
        }
        // Drop the parent's reference; if it was the last and the parent
        // must die too, continue with it here instead of recursing.
        if let Some(p) = NonNull::new(parent) {
            next = dput_for_kill(p);
        }
    }
}

/// `dput` from `kill`: returns the parent when it must be killed too.
fn dput_for_kill(p: NonNull<Dentry>) -> Option<NonNull<Dentry>> {
    // SAFETY: the child held a reference.
    let pr = unsafe { p.as_ref() };
    let c = pr.count.load(Ordering::Relaxed);
    let shut = pr.sb.caches().dcache.shutdown.load(Ordering::Acquire);
    if c & REFS == 1
        && (c & C_HASHED == 0 || shut)
        && pr
            .count
            .compare_exchange(c, (c - 1) | DEAD, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        return Some(p);
    }
    dput(p);
    None
}

/// The dentry cache.
pub struct DentryCache {
    buckets: Box<[AtomicPtr<Dentry>]>,
    locks: Box<[crossbeam_utils::CachePadded<Mutex<()>>]>,
    lru_lock: Mutex<()>,
    /// LRU list ends (oldest at the head), under `lru_lock`.
    lru: UnsafeCell<(*mut Dentry, *mut Dentry)>,
    lru_len: AtomicUsize,
    /// Dentries alive (hashed or not).
    nr: AtomicUsize,
    limit: usize,
    /// Set when the VFS is dropped: final puts kill instead of caching.
    shutdown: AtomicBool,
}

// SAFETY: `lru` is only touched under `lru_lock`; the rest is atomics and
// mutexes.
unsafe impl Send for DentryCache {}
// SAFETY: as above.
unsafe impl Sync for DentryCache {}

/// Hashes a name under a parent (FxHash-style over 8-byte words).
///
/// Under loom the parent's address is left out: addresses differ from one
/// execution to the next (retired dentries are leaked there), and loom
/// needs every execution of a model to make the same choices, here which
/// chain a dentry joins. Names alone place dentries deterministically, and
/// a model can put dentries of different parents on one chain.
pub(crate) fn name_hash(parent: *const Dentry, name: &[u8]) -> u64 {
    let (len, hash) = hash_component(parent, name);
    debug_assert_eq!(len, name.len(), "a name holds no '/'");
    hash
}

/// The first path component of `path` (up to its first `/` or its end):
/// its length and its [`name_hash`] under `parent`, found in one pass a
/// word at a time, as Linux's `hash_name` does, instead of a byte scan for
/// the `/` followed by a second pass to hash.
///
/// Each 8-byte word is checked for a `/` with the zero-byte trick on the
/// word XOR `////////` (the lowest flagged byte is the first `/`; flags
/// above a true zero may be false, and only the lowest is used); whole
/// words before it are mixed in, then the last partial word, zero-padded,
/// with the length.
#[inline]
pub(crate) fn hash_component(parent: *const Dentry, path: &[u8]) -> (usize, u64) {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    const SLASHES: u64 = 0x0101_0101_0101_0101 * b'/' as u64;
    #[cfg(loom)]
    let _ = parent;
    #[cfg(loom)]
    let parent = ptr::null::<Dentry>();
    let mut h = (parent.addr() as u64).wrapping_mul(K);
    let mut i = 0;
    loop {
        let rest = &path[i..];
        let (w, valid) = match rest.first_chunk::<8>() {
            Some(c) => (u64::from_le_bytes(*c), 8),
            None => (load_partial(rest), rest.len()),
        };
        let slash = zero_bytes(w ^ SLASHES);
        let k = ((slash.trailing_zeros() / 8) as usize).min(valid);
        if k == 8 {
            h = (h.rotate_left(5) ^ w).wrapping_mul(K);
            i += 8;
            continue;
        }
        let tail = if k == 0 {
            0
        } else {
            w & (u64::MAX >> (64 - 8 * k))
        };
        let len = i + k;
        h = (h.rotate_left(5) ^ tail ^ len as u64).wrapping_mul(K);
        return (len, h ^ (h >> 29));
    }
}

/// The zero bytes of `w`, flagged by their high bits: the lowest flag is
/// the first zero byte (little-endian); flags above a true zero may be
/// false (a borrow), so only the lowest may be trusted.
#[inline]
pub(crate) fn zero_bytes(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    w.wrapping_sub(ONES) & !w & HIGHS
}

/// The bytes of `b` (fewer than 8) as a little-endian word, zero-padded,
/// read in 4-, 2- and 1-byte pieces (a byte copy into a stack buffer and a
/// word load from it stalls store-to-load forwarding).
#[inline]
fn load_partial(b: &[u8]) -> u64 {
    debug_assert!(b.len() < 8);
    let mut w = 0u64;
    let mut off = 0;
    if let Some(c) = b.first_chunk::<4>().filter(|_| b.len() & 4 != 0) {
        w = u64::from(u32::from_le_bytes(*c));
        off = 4;
    }
    if b.len() & 2 != 0
        && let Some(c) = b[off..].first_chunk::<2>()
    {
        w |= u64::from(u16::from_le_bytes(*c)) << (off * 8);
        off += 2;
    }
    if b.len() & 1 != 0
        && let Some(&c) = b.get(off)
    {
        w |= u64::from(c) << (off * 8);
    }
    w
}

/// `a == b` for names: word compares (names are short; a call to `bcmp`
/// costs more than the compare).
#[inline]
fn name_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return load_partial(a) == load_partial(b);
    }
    let word = |s: &[u8], at: usize| s[at..].first_chunk::<8>().map(|c| u64::from_le_bytes(*c));
    let mut at = 0;
    while at + 8 <= n {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    // The last 8 bytes, overlapping what was compared, cover the rest.
    n.is_multiple_of(8) || word(a, n - 8) == word(b, n - 8)
}

impl DentryCache {
    /// A cache that keeps at most `limit` unused dentries beyond those in
    /// use, with about `limit` hash buckets.
    pub(crate) fn new(limit: usize) -> DentryCache {
        let n = limit
            .clamp(if cfg!(loom) { 2 } else { 64 }, 1 << 22)
            .next_power_of_two();
        DentryCache {
            buckets: (0..n).map(|_| AtomicPtr::new(ptr::null_mut())).collect(),
            locks: (0..n.min(MAX_LOCKS))
                .map(|_| crossbeam_utils::CachePadded::new(Mutex::new(())))
                .collect(),
            lru_lock: Mutex::new(()),
            lru: UnsafeCell::new((ptr::null_mut(), ptr::null_mut())),
            lru_len: AtomicUsize::new(0),
            nr: AtomicUsize::new(0),
            limit,
            shutdown: AtomicBool::new(false),
        }
    }

    /// Dentries alive.
    pub fn len(&self) -> usize {
        self.nr.load(Ordering::Relaxed)
    }

    /// Whether no dentry is alive.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The size limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    fn bucket(&self, hash: u64) -> usize {
        (hash as usize) & (self.buckets.len() - 1)
    }

    fn bucket_lock(&self, b: usize) -> crate::primitive::MutexGuard<'_, ()> {
        lock(&self.locks[b & (self.locks.len() - 1)])
    }

    /// A new root dentry for a superblock, with its inode (one reference
    /// handed over).
    pub(crate) fn new_root(
        &self,
        sb: Arc<SuperBlock>,
        inode: NonNull<Inode>,
        attr: &Attr,
    ) -> DentryRef {
        let d = Dentry::new(sb, ptr::null_mut(), b"/", 0);
        self.nr.fetch_add(1, Ordering::Relaxed);
        let d = NonNull::from(Box::leak(d));
        // SAFETY: fresh and ours.
        unsafe { instantiate_raw(d.as_ref(), inode, attr) };
        DentryRef(d)
    }

    /// Searches `parent`'s child `name` without locks or references. The
    /// caller is pinned and validates the result's sequence count after
    /// reading what it needs. `None` means "not found here", which the
    /// caller must confirm under locks. (The walk uses
    /// [`lookup_rcu_hashed`](Self::lookup_rcu_hashed); the loom models call
    /// this.)
    #[cfg(loom)]
    #[inline]
    pub(crate) fn lookup_rcu(&self, parent: NonNull<Dentry>, name: &[u8]) -> Option<RcuChild> {
        self.lookup_rcu_hashed(parent, name, name_hash(parent.as_ptr(), name))
    }

    /// The lockless search of `parent`'s child `name`, with the name's hash
    /// already known (from [`hash_component`]): no locks, no references;
    /// the caller is pinned and validates the result's sequence count after
    /// reading what it needs. `None` means "not found here", which the
    /// caller must confirm under locks.
    #[inline]
    pub(crate) fn lookup_rcu_hashed(
        &self,
        parent: NonNull<Dentry>,
        name: &[u8],
        hash: u64,
    ) -> Option<RcuChild> {
        debug_assert_eq!(hash, name_hash(parent.as_ptr(), name));
        let mut p = self.buckets[self.bucket(hash)].load(Ordering::Acquire);
        while let Some(d) = NonNull::new(p) {
            // SAFETY: the caller is pinned; chain members are freed only
            // after a grace period.
            let dr = unsafe { d.as_ref() };
            if dr.hash.load(Ordering::Relaxed) == hash
                && dr.parent.load(Ordering::Relaxed) == parent.as_ptr()
            {
                let seq = dr.read_seq()?;
                // SAFETY: as above; names are reclaimed after a grace period.
                let same = unsafe { &*dr.name.load(Ordering::Acquire) }.with(|n| name_eq(n, name));
                if same && dr.parent.load(Ordering::Relaxed) == parent.as_ptr() && dr.seq_valid(seq)
                {
                    if dr.flags.load(Ordering::Relaxed) & HASHED == 0 {
                        return None;
                    }
                    return Some(RcuChild { dentry: d, seq });
                }
            }
            p = dr.next.load(Ordering::Acquire);
        }
        None
    }

    /// Searches `parent`'s child `name` under the bucket lock, taking a
    /// reference on a hit.
    pub(crate) fn lookup_locked(&self, parent: &DentryRef, name: &[u8]) -> Option<DentryRef> {
        let hash = name_hash(parent.0.as_ptr(), name);
        let b = self.bucket(hash);
        let _g = self.bucket_lock(b);
        let mut p = self.buckets[b].load(Ordering::Acquire);
        while let Some(d) = NonNull::new(p) {
            // SAFETY: hashed dentries are alive while the bucket lock is held
            // (unhashing takes it).
            let dr = unsafe { d.as_ref() };
            if dr.hash.load(Ordering::Relaxed) == hash
                && dr.parent.load(Ordering::Relaxed) == parent.0.as_ptr()
                // SAFETY: the name of a hashed dentry is only replaced under
                // this bucket lock (rehash) or its parent's dir lock.
                && unsafe { &*dr.name.load(Ordering::Acquire) }.with(|n| name_eq(n, name))
                && dr.get_not_dead()
            {
                dr.flags.fetch_or(REFERENCED, Ordering::Relaxed);
                return Some(DentryRef(d));
            }
            p = dr.next.load(Ordering::Acquire);
        }
        None
    }

    /// A fresh, unhashed, unlisted child of `parent` named `name` holding a
    /// reference on `parent`, counted in the cache; and its hash.
    fn new_child(&self, parent: &DentryRef, name: &[u8]) -> (NonNull<Dentry>, u64) {
        let hash = name_hash(parent.0.as_ptr(), name);
        let p = parent.clone();
        let d = Dentry::new(parent.sb.clone(), p.0.as_ptr(), name, hash);
        std::mem::forget(p); // the child's reference on its parent
        self.nr.fetch_add(1, Ordering::Relaxed);
        (NonNull::from(Box::leak(d)), hash)
    }

    /// Allocates a child dentry of `parent` named `name`, negative until
    /// [`instantiate`](Self::instantiate)d, and lists and hashes it (unless
    /// `parent` was removed and pruned: then it is neither, and dies at its
    /// last put). The caller holds `parent.dir_lock` and has checked the
    /// name is not cached.
    pub(crate) fn d_alloc(&self, parent: &DentryRef, name: &[u8]) -> DentryRef {
        let (d, hash) = self.new_child(parent, name);
        self.attach(parent, d, hash);
        let r = DentryRef(d);
        self.shrink_to_limit();
        r
    }

    /// A child dentry of `parent` for `name`, which the file system has
    /// just found, with its inode (one reference handed over): instantiated
    /// before it is hashed (no walker sees it negative), and not listed (a
    /// positive dentry leaves the hash with its name: see the module's
    /// "Children and removed directories"). The caller holds
    /// `parent.dir_lock` (so the name stays while this runs, and `parent`
    /// is not empty: it cannot be removed meanwhile) and has checked the
    /// name is not cached.
    pub(crate) fn d_alloc_positive(
        &self,
        parent: &DentryRef,
        name: &[u8],
        inode: NonNull<Inode>,
        attr: &Attr,
    ) -> DentryRef {
        let (d, hash) = self.new_child(parent, name);
        // SAFETY: fresh and ours; unreachable until `hash_in` publishes it
        // (with a release).
        unsafe { instantiate_raw(d.as_ref(), inode, attr) };
        self.hash_in(d, hash);
        let r = DentryRef(d);
        self.shrink_to_limit();
        r
    }

    /// Lists `d`, a new negative child of `parent`, on `parent`'s child
    /// list and hashes it, both under the list's lock: a prune of `parent`
    /// sees either the listed, hashed child or the dead list. A child of a
    /// pruned (removed) directory is neither listed nor hashed: lookups
    /// there fail anyway, and it dies at its last put.
    fn attach(&self, parent: &Dentry, d: NonNull<Dentry>, hash: u64) {
        let mut kids = lock(&parent.children().kids);
        if kids.push(d) {
            self.hash_in(d, hash);
        }
    }

    /// `shrink_dcache_parent` for a directory just removed (rmdir, or
    /// renamed over; the caller has dropped it from the hash, or is about
    /// to): unhashes every listed child and kills those nobody holds, and
    /// marks the child list dead so that no later child is hashed. Children
    /// in use (a lookup that raced the removal, an open unlinked file) die
    /// at their last put. A removed directory is empty, so its hashed
    /// children are negative (so listed) and have no children of their own:
    /// one level is all there is to prune. Cost: the number of listed
    /// children, not the cache.
    pub(crate) fn prune_dead_dir(&self, dir: &DentryRef) {
        let mut held = Vec::new();
        {
            let mut kids = lock(&dir.children().kids);
            kids.dead = true;
            for &c in &kids.list {
                // SAFETY: listed dentries are live under the list's lock.
                let cr = unsafe { c.as_ref() };
                // A dentry already dying (the shrinker's, or a final put's)
                // is unhashed by its killer, who unlists it after we let go.
                if cr.get_not_dead() {
                    held.push(DentryRef(c));
                    self.unhash(c);
                }
            }
        }
        // The final puts kill: the children are unhashed now. (Each takes
        // the list's lock to unlist itself, so not under it.)
        drop(held);
    }

    fn hash_in(&self, d: NonNull<Dentry>, hash: u64) {
        let b = self.bucket(hash);
        let _g = self.bucket_lock(b);
        // SAFETY: the caller owns a reference.
        let dr = unsafe { d.as_ref() };
        // Release: a walker that reaches this dentry through a stale
        // pointer (it was in another chain before a rename) and follows
        // `next` must see the head it points at initialized (the head's
        // insertion happened before, under this bucket lock).
        dr.next
            .store(self.buckets[b].load(Ordering::Relaxed), Ordering::Release);
        dr.flags.fetch_or(HASHED, Ordering::Release);
        dr.count.fetch_or(C_HASHED, Ordering::Release);
        self.buckets[b].store(d.as_ptr(), Ordering::Release);
    }

    /// Removes a dentry from the hash (`__d_drop`); its own `next` is kept
    /// so walkers standing on it can go on.
    fn unhash(&self, d: NonNull<Dentry>) {
        // SAFETY: the caller holds a reference or owns the dead dentry.
        let dr = unsafe { d.as_ref() };
        let b = self.bucket(dr.hash.load(Ordering::Relaxed));
        let _g = self.bucket_lock(b);
        if dr.flags.load(Ordering::Relaxed) & HASHED == 0 {
            return;
        }
        let mut prev = &self.buckets[b];
        loop {
            let p = prev.load(Ordering::Relaxed);
            let Some(pn) = NonNull::new(p) else {
                break;
            };
            if pn == d {
                prev.store(dr.next.load(Ordering::Relaxed), Ordering::Release);
                break;
            }
            // SAFETY: chain members are alive under the bucket lock.
            prev = unsafe { &pn.as_ref().next };
        }
        dr.write_begin();
        dr.flags.fetch_and(!HASHED, Ordering::Release);
        dr.count.fetch_and(!C_HASHED, Ordering::Release);
        dr.write_end();
    }

    /// `d_drop`: unhashes a dentry the caller holds, so lookups miss it
    /// (unlink, rmdir, a rename's victim). Open files keep using it; it dies
    /// at its last put.
    pub(crate) fn d_drop(&self, d: &DentryRef) {
        self.unhash(d.0);
    }

    /// Makes a negative dentry positive (`d_instantiate`), handing over one
    /// inode reference. The caller holds the parent's `dir_lock`.
    pub(crate) fn instantiate(&self, d: &DentryRef, inode: NonNull<Inode>, attr: &Attr) {
        // SAFETY: the caller holds a reference and serializes changes.
        unsafe { instantiate_raw(d, inode, attr) };
    }

    /// `d_move`: moves `d` (positive) to `new_parent`/`new_name`,
    /// rehashing it. The caller holds both parents' `dir_lock`s and
    /// references on everything.
    ///
    /// The moved dentry leaves its old parent's child list (if it was born
    /// negative, a created file) and joins none: it is positive, and
    /// `new_parent` cannot be a removed directory (the file system refused
    /// the rename into one).
    pub(crate) fn d_move(&self, d: &DentryRef, new_parent: &DentryRef, new_name: &[u8]) {
        debug_assert!(!d.is_negative(), "d_move of a negative dentry");
        self.unhash(d.0);
        // Off the old parent's list before the parent changes (the list's
        // invariant: members are its directory's children). Listed or not
        // is stable while the caller holds the dentry and the parents'
        // locks (see `Children`).
        if d.slot.load(Ordering::Relaxed) != NO_SLOT
            && let Some(op) = NonNull::new(d.parent_ptr())
        {
            // SAFETY: `d` holds a reference on its parent.
            if let Some(ch) = unsafe { op.as_ref() }.children_if_any() {
                lock(&ch.kids).remove(d);
            }
        }
        let hash = name_hash(new_parent.0.as_ptr(), new_name);
        d.write_begin();
        let np = new_parent.clone();
        let old_parent = d.parent.swap(np.0.as_ptr(), Ordering::AcqRel);
        std::mem::forget(np);
        let name = Name::new(new_name);
        let old_name = d.name.swap(name, Ordering::AcqRel);
        d.hash.store(hash, Ordering::Relaxed);
        d.write_end();
        self.hash_in(d.0, hash);
        if let Some(n) = NonNull::new(old_name) {
            // SAFETY: the old name is unreachable now; pinned readers may
            // still hold it, so it goes after a grace period.
            unsafe { reclaim::defer_drop_box(n) };
        }
        if let Some(p) = NonNull::new(old_parent) {
            dput(p);
        }
    }

    /// `RENAME_EXCHANGE`: swaps the places of `a` (in `pa`) and `b` (in
    /// `pb`), keeping each's name slot.
    pub(crate) fn d_exchange(
        &self,
        a: &DentryRef,
        a_name: &[u8],
        b: &DentryRef,
        b_name: &[u8],
        pa: &DentryRef,
        pb: &DentryRef,
    ) {
        self.d_move(a, pb, b_name);
        self.d_move(b, pa, a_name);
    }

    /// Puts an unused dentry on the LRU (first final put).
    fn lru_add(&self, d: NonNull<Dentry>) {
        let _g = lock(&self.lru_lock);
        // SAFETY: the caller is pinned; we re-check under the lock that the
        // dentry is unused, alive and hashed.
        let dr = unsafe { d.as_ref() };
        // The check and `C_LRU` in one CAS: between a separate check and a
        // `fetch_or`, a lockless walker could revive the dentry, unhash it
        // and drop it, killing it; `kill`, not seeing it listed, would free
        // it, and we would list a freed dentry (found by the loom model
        // `first_put_vs_revival_and_unlink`). A killer whose `DEAD` comes
        // after this CAS sees `C_LRU` and waits for our lock to unlist it.
        let mut c = dr.count.load(Ordering::Acquire);
        loop {
            if c & (REFS | DEAD | C_LRU) != 0 || c & C_HASHED == 0 {
                return;
            }
            match dr
                .count
                .compare_exchange(c, c | C_LRU, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(seen) => c = seen,
            }
        }
        dr.flags.fetch_or(LRU, Ordering::Relaxed);
        // SAFETY: under the LRU lock.
        unsafe {
            let (_, tail) = *self.lru.get();
            *dr.lru.get() = (tail, ptr::null_mut());
            if let Some(t) = NonNull::new(tail) {
                (*t.as_ref().lru.get()).1 = d.as_ptr();
            } else {
                (*self.lru.get()).0 = d.as_ptr();
            }
            (*self.lru.get()).1 = d.as_ptr();
        }
        self.lru_len.fetch_add(1, Ordering::Relaxed);
        drop(_g);
        self.shrink_to_limit();
    }

    /// # Safety
    /// The LRU lock is held and `d` is on the list.
    unsafe fn lru_unlink(&self, d: NonNull<Dentry>) {
        // SAFETY: per the contract.
        unsafe {
            let dr = d.as_ref();
            if dr.flags.load(Ordering::Relaxed) & LRU == 0 {
                return;
            }
            let (prev, next) = *dr.lru.get();
            match NonNull::new(prev) {
                Some(p) => (*p.as_ref().lru.get()).1 = next,
                None => (*self.lru.get()).0 = next,
            }
            match NonNull::new(next) {
                Some(n) => (*n.as_ref().lru.get()).0 = prev,
                None => (*self.lru.get()).1 = prev,
            }
            *dr.lru.get() = (ptr::null_mut(), ptr::null_mut());
            dr.flags.fetch_and(!(LRU | REFERENCED), Ordering::Relaxed);
            dr.count.fetch_and(!C_LRU, Ordering::Release);
        }
        self.lru_len.fetch_sub(1, Ordering::Relaxed);
    }

    fn shrink_to_limit(&self) {
        let over = self.nr.load(Ordering::Relaxed).saturating_sub(self.limit);
        if over > 0 {
            self.shrink(over.max(16));
        }
    }

    /// Kills up to `n` unused dentries, oldest first (`prune_dcache_sb`).
    /// Returns how many were killed.
    pub fn shrink(&self, n: usize) -> usize {
        let mut victims = Vec::new();
        {
            let _pin = reclaim::pin();
            let _g = lock(&self.lru_lock);
            let mut budget = self.lru_len.load(Ordering::Relaxed) * 2;
            while victims.len() < n && budget > 0 {
                budget -= 1;
                // SAFETY: under the LRU lock.
                let Some(d) = NonNull::new(unsafe { (*self.lru.get()).0 }) else {
                    break;
                };
                // SAFETY: LRU members are alive (kill unlinks them first).
                let dr = unsafe { d.as_ref() };
                // Read before unlinking: `lru_unlink` clears it.
                let referenced = dr.flags.load(Ordering::Relaxed) & REFERENCED != 0;
                // SAFETY: under the LRU lock.
                unsafe { self.lru_unlink(d) };
                if dr.count.load(Ordering::Acquire) & REFS != 0 {
                    continue; // in use: re-listed at its next final put
                }
                if referenced && budget > n {
                    // Second chance: back to the tail, unreferenced, unless
                    // it died since the check above (revived, unhashed and
                    // dropped by another thread): `C_LRU` goes in by a CAS
                    // refusing `DEAD`, as in `lru_add` (found by the loom
                    // model `second_chance_vs_unlink`: a dead dentry
                    // re-listed).
                    dr.flags.fetch_and(!REFERENCED, Ordering::Relaxed);
                    let mut c = dr.count.load(Ordering::Acquire);
                    let relisted = loop {
                        if c & DEAD != 0 {
                            break false;
                        }
                        match dr.count.compare_exchange(
                            c,
                            c | C_LRU,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => break true,
                            Err(seen) => c = seen,
                        }
                    };
                    if !relisted {
                        continue;
                    }
                    // SAFETY: under the LRU lock; re-append.
                    unsafe {
                        let (_, tail) = *self.lru.get();
                        *dr.lru.get() = (tail, ptr::null_mut());
                        match NonNull::new(tail) {
                            Some(t) => (*t.as_ref().lru.get()).1 = d.as_ptr(),
                            None => (*self.lru.get()).0 = d.as_ptr(),
                        }
                        (*self.lru.get()).1 = d.as_ptr();
                    }
                    dr.flags.fetch_or(LRU, Ordering::Relaxed);
                    self.lru_len.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let c = dr.count.load(Ordering::Acquire);
                if c & (REFS | DEAD) == 0
                    && dr
                        .count
                        .compare_exchange(c, c | DEAD, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                {
                    victims.push(d);
                }
            }
        }
        let killed = victims.len();
        for d in victims {
            // SAFETY: we set DEAD on each.
            unsafe { kill(d) };
        }
        killed
    }

    /// Drops every unused dentry and makes later final puts kill (the VFS
    /// is going away).
    pub(crate) fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
        while self.shrink(usize::MAX) > 0 {}
    }
}

/// One hashed dentry as [`DentryCache::hashed`] reports it.
#[derive(Debug)]
pub(crate) struct Seen {
    pub(crate) ptr: *const Dentry,
    pub(crate) parent: *const Dentry,
    pub(crate) parent_ino: Ino,
    pub(crate) name: Vec<u8>,
    pub(crate) ino: Option<Ino>,
    pub(crate) refs: usize,
    pub(crate) sb: u64,
}

impl DentryCache {
    /// Every hashed dentry (for consistency checks; only meaningful while
    /// nothing changes the cache).
    pub(crate) fn hashed(&self) -> Vec<Seen> {
        let _pin = reclaim::pin();
        let mut out = Vec::new();
        for b in 0..self.buckets.len() {
            let _g = self.bucket_lock(b);
            let mut p = self.buckets[b].load(Ordering::Acquire);
            while let Some(d) = NonNull::new(p) {
                // SAFETY: hashed dentries are alive under the bucket lock.
                let dr = unsafe { d.as_ref() };
                let parent = dr.parent_ptr();
                // SAFETY: a hashed dentry's parent is alive (it holds a
                // reference on it).
                let parent_ino = NonNull::new(parent).map_or(0, |pp| unsafe { pp.as_ref() }.ino());
                out.push(Seen {
                    ptr: d.as_ptr(),
                    parent,
                    parent_ino,
                    name: dr.name(),
                    ino: (!dr.is_negative()).then(|| dr.ino()),
                    refs: dr.refs(),
                    sb: dr.sb.id,
                });
                p = dr.next.load(Ordering::Acquire);
            }
        }
        out
    }
}

impl DentryCache {
    /// Checks the child lists against the hash (for consistency checks;
    /// only meaningful while nothing changes the cache, but safe at any
    /// time): each list's members are its directory's children at their
    /// slots, every hashed negative dentry is listed by its parent, and no
    /// pruned (removed) directory's list has a hashed member. (A positive
    /// dentry hashed under a removed directory would name what the file
    /// system no longer has: `check_consistency` sees that.)
    pub(crate) fn check_children(&self) -> Result<(), String> {
        use std::collections::{HashMap, HashSet};
        // Each hashed dentry's parent, with a reference so its list stays.
        type Hashed = Vec<(*mut Dentry, Vec<u8>, bool)>;
        let mut by_parent: HashMap<*mut Dentry, (DentryRef, Hashed)> = HashMap::new();
        {
            let _pin = reclaim::pin();
            for b in 0..self.buckets.len() {
                let _g = self.bucket_lock(b);
                let mut p = self.buckets[b].load(Ordering::Acquire);
                while let Some(d) = NonNull::new(p) {
                    // SAFETY: hashed dentries are alive under the bucket lock.
                    let dr = unsafe { d.as_ref() };
                    match NonNull::new(dr.parent_ptr()) {
                        None => return Err("a hashed dentry without a parent".into()),
                        Some(pp) => {
                            let me = (d.as_ptr(), dr.name(), dr.is_negative());
                            if let Some((_, kids)) = by_parent.get_mut(&pp.as_ptr()) {
                                kids.push(me);
                            // SAFETY: a hashed dentry's parent is alive (it
                            // holds a reference on it).
                            } else if unsafe { pp.as_ref() }.get_not_dead() {
                                by_parent.insert(pp.as_ptr(), (DentryRef(pp), vec![me]));
                            }
                        }
                    }
                    p = dr.next.load(Ordering::Acquire);
                }
            }
        }
        for (pp, (parent, hashed)) in by_parent {
            let name = String::from_utf8_lossy(&parent.name()).into_owned();
            let Some(ch) = parent.children_if_any() else {
                if let Some((_, cname, _)) = hashed.iter().find(|h| h.2) {
                    return Err(format!(
                        "negative {:?} in {name:?}, which has no child list",
                        String::from_utf8_lossy(cname)
                    ));
                }
                continue;
            };
            let kids = lock(&ch.kids);
            let mut listed = HashSet::new();
            for (i, &c) in kids.list.iter().enumerate() {
                // SAFETY: listed dentries are live under the list's lock.
                let cr = unsafe { c.as_ref() };
                if cr.slot.load(Ordering::Relaxed) as usize != i || cr.parent_ptr() != pp {
                    return Err(format!(
                        "directory {name:?}: a child listed at a wrong slot"
                    ));
                }
                listed.insert(c.as_ptr());
            }
            if let Some((_, cname, _)) = hashed.iter().find(|h| h.2 && !listed.contains(&h.0)) {
                return Err(format!(
                    "negative {:?} is not on the child list of {name:?}",
                    String::from_utf8_lossy(cname)
                ));
            }
            if kids.dead
                && let Some((_, cname, _)) = hashed.first()
            {
                return Err(format!(
                    "removed directory {name:?} has {:?} hashed",
                    String::from_utf8_lossy(cname)
                ));
            }
        }
        Ok(())
    }
}

impl Drop for DentryCache {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for DentryCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DentryCache")
            .field("len", &self.len())
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// # Safety
/// The caller owns `d` or holds a reference and serializes changes to it.
unsafe fn instantiate_raw(d: &Dentry, inode: NonNull<Inode>, attr: &Attr) {
    d.write_begin();
    d.ino.store(attr.ino, Ordering::Relaxed);
    d.mode.store(attr.mode, Ordering::Relaxed);
    d.uid.store(attr.uid, Ordering::Relaxed);
    d.gid.store(attr.gid, Ordering::Relaxed);
    d.inode.store(inode.as_ptr(), Ordering::Release);
    d.write_end();
}

/// Sets or clears the mount on a mountpoint dentry.
pub(crate) fn set_mounted(mountpoint: &DentryRef, root: Option<&DentryRef>) {
    mountpoint.write_begin();
    mountpoint.mounted.store(
        root.map_or(ptr::null_mut(), |r| r.0.as_ptr()),
        Ordering::Release,
    );
    mountpoint.write_end();
}

/// Converts an error for a name too long for any file system.
pub(crate) fn check_name_len(name: &[u8]) -> Result<(), Errno> {
    if name.len() > crate::fs::tmpfs::NAME_MAX {
        Err(Errno::ENAMETOOLONG)
    } else {
        Ok(())
    }
}

/// The dentry cache's operations for the loom models in
/// `tests/loom_dcache.rs`, which as integration tests see only `pub` items
/// (the cache's API is crate-private). Built only under `--cfg loom`.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_api {
    use super::*;
    use crate::fs::tmpfs::{Tmpfs, TmpfsOptions};
    use crate::fs::{S_IFREG, Timespec};
    use crate::vfs::Caches;

    pub use super::{Dentry, DentryRef};

    /// A dentry cache (with its inode cache) and one superblock whose root
    /// directory is inode 1.
    pub struct World {
        root: Option<DentryRef>,
        sb: Arc<SuperBlock>,
        caches: Arc<Caches>,
    }

    /// An inode reference on its way to [`World::instantiate`].
    pub struct NewInode(NonNull<Inode>, Attr);

    // SAFETY: a counted reference to an inode, which is `Send + Sync`.
    unsafe impl Send for NewInode {}

    /// What one lockless step (one component of `Nd::lookup_rcu`) found.
    #[derive(Debug)]
    pub enum Step {
        /// Gave up: the walk restarts in the locked walk.
        Fallback,
        /// A negative entry, its sequence count validated: `ENOENT`.
        Negative {
            /// The dentry's address.
            dentry: usize,
            /// The validated sequence count.
            seq: u32,
        },
        /// A positive entry, legitimized: a reference to it.
        Positive {
            /// The reference.
            dentry: DentryRef,
            /// The sequence count it was legitimized at.
            seq: u32,
            /// The inode number the walker read before legitimizing.
            ino: Ino,
        },
    }

    /// A dentry's state words (see [`World::state`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct State {
        /// References held.
        pub refs: usize,
        /// Being killed or killed.
        pub dead: bool,
        /// `HASHED` in the flags.
        pub hashed: bool,
        /// `C_HASHED` in the count.
        pub c_hashed: bool,
        /// `LRU` in the flags.
        pub lru: bool,
        /// `C_LRU` in the count.
        pub c_lru: bool,
        /// The sequence count.
        pub seq: u32,
        /// The inode number (0: negative).
        pub ino: Ino,
        /// Whether the inode pointer is set.
        pub has_inode: bool,
        /// On its parent's child list (`slot` set).
        pub listed: bool,
    }

    fn attr(ino: Ino, mode: u32) -> Attr {
        Attr {
            ino,
            mode,
            nlink: 1,
            uid: 0,
            gid: 0,
            size: 0,
            blocks: 0,
            blksize: 4096,
            atime: Timespec::default(),
            mtime: Timespec::default(),
            ctime: Timespec::default(),
            btime: Timespec::default(),
        }
    }

    impl World {
        /// A cache keeping `limit` unused dentries (and about `limit` hash
        /// chains, at least 2).
        pub fn new(limit: usize) -> World {
            let icache = crate::icache::InodeCache::new(16, 2, true, |_, _| {});
            let caches = Arc::new(Caches {
                dcache: DentryCache::new(limit),
                icache,
            });
            let fs = Tmpfs::new(TmpfsOptions::default());
            let sb = SuperBlock::for_model(1, caches.clone(), fs);
            let mut w = World {
                root: None,
                sb: sb.clone(),
                caches,
            };
            let NewInode(i, a) = w.inode(1, S_IFDIR | 0o755);
            w.root = Some(w.caches.dcache.new_root(sb, i, &a));
            w
        }

        fn dc(&self) -> &DentryCache {
            &self.caches.dcache
        }

        /// The root directory.
        pub fn root(&self) -> &DentryRef {
            self.root
                .as_ref()
                .expect("the root lives as long as the world")
        }

        /// A reference to inode `ino` with mode `mode` (cached or filled).
        pub fn inode(&self, ino: Ino, mode: u32) -> NewInode {
            let a = attr(ino, mode);
            let r = self
                .caches
                .icache
                .iget(self.sb.id, ino, || Ok(a))
                .expect("fills never fail here");
            NewInode(r.into_raw(), a)
        }

        /// `d_alloc`: a negative child `name` of `parent`, hashed.
        pub fn alloc(&self, parent: &DentryRef, name: &[u8]) -> DentryRef {
            self.dc().d_alloc(parent, name)
        }

        /// `d_alloc_positive`: the child `name` of `parent` a lookup found,
        /// inode `ino` (a directory if `dir`), instantiated before hashing
        /// and on no child list.
        pub fn add(&self, parent: &DentryRef, name: &[u8], ino: Ino, dir: bool) -> DentryRef {
            let mode = if dir {
                S_IFDIR | 0o755
            } else {
                S_IFREG | 0o644
            };
            let NewInode(i, a) = self.inode(ino, mode);
            self.dc().d_alloc_positive(parent, name, i, &a)
        }

        /// `d_instantiate`.
        pub fn instantiate(&self, d: &DentryRef, inode: NewInode) {
            self.dc().instantiate(d, inode.0, &inode.1);
        }

        /// A positive child: `name` in `parent` for inode `ino`, a directory
        /// if `dir`, else a regular file.
        pub fn create(&self, parent: &DentryRef, name: &[u8], ino: Ino, dir: bool) -> DentryRef {
            let d = self.alloc(parent, name);
            let mode = if dir {
                S_IFDIR | 0o755
            } else {
                S_IFREG | 0o644
            };
            self.instantiate(&d, self.inode(ino, mode));
            d
        }

        /// `d_drop` (unlink, rmdir, a rename's victim).
        pub fn d_drop(&self, d: &DentryRef) {
            self.dc().d_drop(d);
        }

        /// `d_move`: renames `d` to `name` in `parent`. The caller is the
        /// only thread changing either directory (the VFS holds their
        /// `dir_lock`s).
        pub fn d_move(&self, d: &DentryRef, parent: &DentryRef, name: &[u8]) {
            self.dc().d_move(d, parent, name);
        }

        /// The lockless chain search alone: the dentry's address and the
        /// sequence count it was found at.
        pub fn lookup_rcu(&self, parent: &DentryRef, name: &[u8]) -> Option<(usize, u32)> {
            let _pin = reclaim::pin();
            self.dc()
                .lookup_rcu(parent.as_ptr(), name)
                .map(|c| (c.dentry.as_ptr().expose_provenance(), c.seq))
        }

        /// One step of the lockless walk as `Nd::lookup_rcu` takes it for a
        /// last component: the parent's count read before the search
        /// (`parent` is the walk's current directory), the chain search, the
        /// parent's count validated, the child's inode snapshot, and then
        /// either the negative entry's count validated or the child
        /// legitimized.
        pub fn step(&self, parent: &DentryRef, name: &[u8]) -> Step {
            let _pin = reclaim::pin();
            let Some(pseq) = parent.read_seq() else {
                return Step::Fallback;
            };
            let Some(child) = self.dc().lookup_rcu(parent.as_ptr(), name) else {
                return Step::Fallback;
            };
            if !parent.seq_valid(pseq) {
                return Step::Fallback;
            }
            let seq = child.seq;
            // SAFETY: reached through the cache; dentries are never freed
            // under loom (and the walk is pinned otherwise).
            let d = unsafe { child.dentry.as_ref() };
            match d.snap() {
                None if d.seq_valid(seq) => Step::Negative {
                    dentry: child.dentry.as_ptr().expose_provenance(),
                    seq,
                },
                None => Step::Fallback,
                Some(s) => match DentryRef::legitimize(child.dentry, seq) {
                    Some(r) => Step::Positive {
                        dentry: r,
                        seq,
                        ino: s.ino,
                    },
                    None => Step::Fallback,
                },
            }
        }

        /// The locked search (`lookup_fast` of the ref-walk).
        pub fn lookup_locked(&self, parent: &DentryRef, name: &[u8]) -> Option<DentryRef> {
            self.dc().lookup_locked(parent, name)
        }

        /// The shrinker: kills up to `n` unused dentries.
        pub fn shrink(&self, n: usize) -> usize {
            self.dc().shrink(n)
        }

        /// Dentries alive.
        pub fn len(&self) -> usize {
            self.dc().len()
        }

        /// Whether no dentry is alive.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// Whether names `a` and `b` share a hash chain (any parents).
        pub fn same_chain(&self, a: &[u8], b: &[u8]) -> bool {
            let dc = self.dc();
            dc.bucket(name_hash(ptr::null(), a)) == dc.bucket(name_hash(ptr::null(), b))
        }

        /// The state words of the dentry at `addr`.
        ///
        /// # Safety
        /// `addr` is a dentry of this world (under loom none is ever freed).
        pub unsafe fn state(&self, addr: usize) -> State {
            // SAFETY: per the contract.
            let d = unsafe { &*ptr::with_exposed_provenance::<Dentry>(addr) };
            let c = d.count.load(Ordering::SeqCst);
            let f = d.flags.load(Ordering::SeqCst);
            State {
                refs: c & REFS,
                dead: c & DEAD != 0,
                hashed: f & HASHED != 0,
                c_hashed: c & C_HASHED != 0,
                lru: f & LRU != 0,
                c_lru: c & C_LRU != 0,
                seq: d.seq.load(Ordering::SeqCst),
                ino: d.ino.load(Ordering::SeqCst),
                has_inode: !d.inode.load(Ordering::SeqCst).is_null(),
                listed: d.slot.load(Ordering::SeqCst) != NO_SLOT,
            }
        }

        /// `shrink_dcache_parent` for a removed directory
        /// ([`DentryCache::prune_dead_dir`]); the model `d_drop`s it first,
        /// as rmdir does.
        pub fn prune(&self, dir: &DentryRef) {
            self.dc().prune_dead_dir(dir);
        }

        /// The inode number the dentry's inode pointer leads to (the inode
        /// itself, not the dentry's copy); `None` if negative.
        pub fn inode_ino(&self, d: &DentryRef) -> Option<Ino> {
            d.inode_ptr().map(|i| {
                // SAFETY: our dentry reference holds an inode reference of
                // this cache; the borrowed one is never dropped.
                std::mem::ManuallyDrop::new(unsafe { self.caches.icache.from_raw(i) }).ino()
            })
        }

        /// Checks the cache's structure while no other thread uses it: the
        /// LRU list is well linked, its length is `lru_len`, and each entry
        /// is alive with `LRU` and `C_LRU` set; each hash chain holds only
        /// live dentries of its bucket with `HASHED` and `C_HASHED` set, and
        /// every dentry with `C_LRU` or `C_HASHED` set is on the list or
        /// chain it says (among `known`, the addresses of all dentries the
        /// model made). Returns the LRU, oldest first.
        pub fn check(&self, known: &[usize]) -> Result<Vec<usize>, String> {
            let dc = self.dc();
            let mut lru = Vec::new();
            {
                let _g = lock(&dc.lru_lock);
                // SAFETY: under the LRU lock.
                let (head, tail) = unsafe { *dc.lru.get() };
                let mut prev = ptr::null_mut();
                let mut p = head;
                while let Some(d) = NonNull::new(p) {
                    if lru.len() > known.len() {
                        return Err("the LRU list loops".into());
                    }
                    // SAFETY: never freed under loom; under the LRU lock.
                    let (lp, ln) = unsafe { *d.as_ref().lru.get() };
                    // SAFETY: `d` is one of this world's dentries.
                    let s = unsafe { self.state(p.addr()) };
                    if lp != prev {
                        return Err(format!("LRU entry {p:?}: bad prev link"));
                    }
                    if s.dead || !s.lru || !s.c_lru {
                        return Err(format!("LRU entry {p:?} in state {s:?}"));
                    }
                    lru.push(p.addr());
                    prev = p;
                    p = ln;
                }
                if tail != prev {
                    return Err("the LRU tail is not the last entry".into());
                }
                if lru.len() != dc.lru_len.load(Ordering::SeqCst) {
                    return Err(format!(
                        "{} LRU entries, lru_len {}",
                        lru.len(),
                        dc.lru_len.load(Ordering::SeqCst)
                    ));
                }
            }
            let mut hashed = Vec::new();
            for b in 0..dc.buckets.len() {
                let _g = dc.bucket_lock(b);
                let mut p = dc.buckets[b].load(Ordering::SeqCst);
                while let Some(d) = NonNull::new(p) {
                    if hashed.len() > known.len() {
                        return Err("a hash chain loops".into());
                    }
                    // SAFETY: never freed under loom.
                    let dr = unsafe { d.as_ref() };
                    // SAFETY: one of this world's dentries.
                    let s = unsafe { self.state(p.addr()) };
                    if s.dead || !s.hashed || !s.c_hashed {
                        return Err(format!("hashed {p:?} in state {s:?}"));
                    }
                    if dc.bucket(dr.hash.load(Ordering::SeqCst)) != b {
                        return Err(format!("hashed {p:?} on the wrong chain"));
                    }
                    hashed.push(p.addr());
                    p = dr.next.load(Ordering::SeqCst);
                }
            }
            for &a in known {
                // SAFETY: the caller lists this world's dentries.
                let s = unsafe { self.state(a) };
                if s.c_lru != lru.contains(&a) || s.lru != s.c_lru {
                    return Err(format!("dentry {a:#x} in state {s:?}: LRU says {lru:?}"));
                }
                if s.c_hashed != hashed.contains(&a) || s.hashed != s.c_hashed {
                    return Err(format!("dentry {a:#x} in state {s:?}: hashed {hashed:?}"));
                }
            }
            self.check_children(known, &hashed)?;
            Ok(lru)
        }

        /// The child lists: each live dentry's list holds its children at
        /// their slots, none dead; a dead dentry's list is freed and it is
        /// on no list; every hashed negative dentry is on its parent's
        /// list; no hashed dentry's parent has a dead list; a listed dentry
        /// is on its parent's list. (Few loads: each is a loom branch, and
        /// a model has a budget.)
        fn check_children(&self, known: &[usize], hashed: &[usize]) -> Result<(), String> {
            // (dead, slot, parent, children, negative) of each known dentry.
            type Snap = (bool, u32, usize, *mut Children, bool);
            let snap: Vec<Snap> = known
                .iter()
                .map(|&a| {
                    // SAFETY: never freed under loom.
                    let d = unsafe { &*ptr::with_exposed_provenance::<Dentry>(a) };
                    (
                        d.count.load(Ordering::SeqCst) & DEAD != 0,
                        d.slot.load(Ordering::SeqCst),
                        d.parent.load(Ordering::SeqCst).addr(),
                        d.children.load(Ordering::SeqCst),
                        d.inode.load(Ordering::SeqCst).is_null(),
                    )
                })
                .collect();
            let of = |a: usize| known.iter().position(|&k| k == a);
            // Each known dentry's list as (index in `known`, slot) pairs.
            let mut lists: Vec<Option<(bool, Vec<usize>)>> = vec![None; known.len()];
            for (i, &(dead, slot, _, ch, _)) in snap.iter().enumerate() {
                if dead {
                    if !ch.is_null() || slot != NO_SLOT {
                        return Err(format!("dead {:#x}: list kept or still listed", known[i]));
                    }
                    continue;
                }
                let Some(ch) = NonNull::new(ch) else {
                    continue;
                };
                // SAFETY: a live dentry's list (never freed under loom).
                let kids = lock(&unsafe { ch.as_ref() }.kids);
                let mut members = Vec::new();
                for (at, &c) in kids.list.iter().enumerate() {
                    let Some(j) = of(c.as_ptr().addr()) else {
                        return Err(format!("{:#x} lists an unknown {c:?}", known[i]));
                    };
                    let (cdead, cslot, cparent, _, _) = snap[j];
                    if cdead || cslot as usize != at || cparent != known[i] {
                        return Err(format!(
                            "{:#x}'s child {c:?} at {at}: dead {cdead}, slot {cslot}",
                            known[i]
                        ));
                    }
                    members.push(j);
                }
                lists[i] = Some((kids.dead, members));
            }
            for &h in hashed {
                let Some(j) = of(h) else { continue };
                let Some(p) = of(snap[j].2) else { continue };
                let negative = snap[j].4;
                match &lists[p] {
                    Some((true, _)) => {
                        return Err(format!("hashed {h:#x} under a pruned directory"));
                    }
                    Some((false, m)) if !negative || m.contains(&j) => {}
                    None if !negative => {}
                    l => return Err(format!("negative {h:#x} not on its parent's list: {l:?}")),
                }
            }
            for (j, &(_, slot, _, _, _)) in snap.iter().enumerate() {
                let on = lists.iter().flatten().any(|(_, m)| m.contains(&j));
                if (slot != NO_SLOT) != on {
                    return Err(format!("dentry {:#x}: slot {slot}, listed {on}", known[j]));
                }
            }
            Ok(())
        }
    }

    /// A dentry's address, for identity checks and [`World::state`].
    pub fn addr(d: &DentryRef) -> usize {
        d.as_ptr().as_ptr().expose_provenance()
    }

    impl Drop for World {
        fn drop(&mut self) {
            drop(self.root.take());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Two cache lines at most: the child-list pointer and slot went into
    /// what was padding.
    #[test]
    fn dentry_fits_two_cache_lines() {
        assert_eq!(std::mem::align_of::<Dentry>(), 64);
        assert!(
            std::mem::size_of::<Dentry>() <= 128,
            "{} bytes",
            std::mem::size_of::<Dentry>()
        );
    }

    /// The straightforward definition [`hash_component`] must match: a
    /// byte scan for the `/`, then 8-byte chunks, then the zero-padded
    /// tail with the length.
    fn reference(parent: *const Dentry, path: &[u8]) -> (usize, u64) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let len = path.iter().position(|&c| c == b'/').unwrap_or(path.len());
        let name = &path[..len];
        let mut h = (parent.addr() as u64).wrapping_mul(K);
        let mut chunks = name.chunks_exact(8);
        for c in &mut chunks {
            h = (h.rotate_left(5) ^ u64::from_le_bytes(c.try_into().unwrap())).wrapping_mul(K);
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        h = (h.rotate_left(5) ^ u64::from_le_bytes(tail) ^ len as u64).wrapping_mul(K);
        (len, h ^ (h >> 29))
    }

    /// Paths of every length up to 40 over an alphabet rich in `/`, `.`,
    /// NUL-free high bytes and bytes one away from `/` (the zero-byte
    /// trick's borrow cases).
    #[test]
    fn component_hash_and_compare_match_the_reference() {
        let alphabet = [
            b'/',
            b'.',
            b'a',
            b'.' + 2,
            b'/' - 1,
            b'/' + 1,
            0xff,
            0x80,
            0x2e,
            b'z',
            1,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let parent = 0x1234_5678usize as *const Dentry;
        for _ in 0..20_000 {
            let len = (next() % 41) as usize;
            let path: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            assert_eq!(
                hash_component(parent, &path),
                reference(parent, &path),
                "{path:?}"
            );
            let other: Vec<u8> = if next() % 2 == 0 {
                let mut o = path.clone();
                if let Some(b) = o.get_mut((next() as usize) % len.max(1)) {
                    *b ^= 1 << (next() % 8);
                }
                o
            } else {
                path.clone()
            };
            assert_eq!(name_eq(&path, &other), path == other, "{path:?} {other:?}");
            assert_eq!(name_eq(&path, &path[..len / 2]), len == 0);
        }
        assert_eq!(
            name_hash(parent, b"willitscale.0"),
            reference(parent, b"willitscale.0").1
        );
    }
}
