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
//! `d_children` lists every child), in a `Children` allocated at its
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
//! with its name (unlink, rmdir, a rename's victim or move), or, when
//! unlink's caller holds it alone (`d_delete`, [`FastPaths::d_delete`](
//! crate::FastPaths::d_delete)), turns negative in place and joins the
//! list first; so a removed directory, being empty, can only have
//! negative children cached. (A dentry made negative and then
//! instantiated stays listed until it dies or moves.) A dentry made by a lookup that found its name
//! (`DentryCache::d_alloc_positive`) or moved by a rename is not listed,
//! so the miss path of a walk over a tree larger than the cache (seed 002's
//! fstree: a positive dentry made, another evicted, per stat) takes no
//! list lock.
//!
//! Lock order: a directory's `dir_lock`, then the rename count's writer
//! lock (`path`), then a `Children` lock, then a bucket lock. The LRU lock is never held with a `Children` lock, and no
//! `Children` lock is taken under a bucket lock.
//!
//! Dentry memory is reclaimed through the epoch scheme in `reclaim`
//! (Linux frees dentries after an RCU grace period too): a lockless walker
//! pins the epoch, so any dentry it reaches through a hash chain or a parent
//! pointer stays allocated while it looks at it. Dentries live in the
//! cache's slabs (`slab`, Linux's `dentry_cache`); a dead one's slot goes
//! back to the free list only when that grace period is over.
//!
//! # Lockless lookup (the RCU walk)
//!
//! `DentryCache::lookup_rcu` searches a chain with no lock and no
//! reference, and returns the child with a snapshot of its sequence count
//! (`d_seq`). Every change a walker must not miss — instantiation,
//! unhashing, a rename's move, unlink's turn to negative (`d_delete`) —
//! happens inside a write section of that count (odd while in progress),
//! so a walker that re-reads an unchanged, even count knows the name,
//! parent and inode it read belong together. A miss in a lockless
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
//!
//! # Files
//!
//! This file holds the types (the dentry, its reference, the cache) and
//! what every part uses; the parts are `table` (the hash table: lookups,
//! `d_alloc`, `d_drop`, `d_move`), `dput` (final put and kill),
//! `children` (child lists and the prune of removed directories),
//! `lru` (the LRU and the shrinker), `hash` (name hashing), `path` (the
//! rename sequence count and `d_path`), `slab` (the dentries' memory) and
//! `check` (consistency checks).

use crate::fs::{Attr, Ino, S_IFDIR, S_IFLNK, S_IFMT};
use crate::icache::Inode;
use crate::icache::InodeCache;
use crate::primitive::cell::UnsafeCell;
use crate::primitive::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
use crate::primitive::sync::{Mutex, MutexGuard, lock};
use crate::reclaim;
use crate::super_block::SuperBlock;
use std::fmt;
use std::ops::Deref;
use std::ptr::{self, NonNull};
use std::sync::Arc;

mod check;
mod children;
mod dput;
pub(crate) mod hash;
mod lru;
mod path;
mod slab;
mod table;

use dput::dput;
pub(crate) use hash::{hash_component, zero_bytes};
use hash::{load_partial, name_eq, name_hash};
pub(crate) use table::Search;

/// The caches every superblock of one VFS shares (Linux has one dentry hash
/// and one inode hash for the whole system). Field order matters: dentries
/// die before the inodes they hold.
pub(crate) struct Caches {
    pub(crate) dcache: DentryCache,
    pub(crate) icache: InodeCache,
}

/// A superblock as its dentries hold it: the superblock and the caches its
/// dentries and inodes live in, which a final put must reach (the kernel's
/// superblock carries its LRU lists, `s_dentry_lru` and `s_inode_lru`, for
/// the same reason). The superblock itself knows nothing of dentries.
pub(crate) struct DentrySb {
    sb: Arc<SuperBlock>,
    caches: Arc<Caches>,
}

impl Caches {
    /// A new root dentry for the superblock `sb`, with its inode (one
    /// reference handed over).
    pub(crate) fn new_root(
        self: &Arc<Self>,
        sb: Arc<SuperBlock>,
        inode: NonNull<Inode>,
        attr: &Attr,
    ) -> DentryRef {
        let dsb = Arc::new(DentrySb {
            sb,
            caches: self.clone(),
        });
        self.dcache.new_root(dsb, inode, attr)
    }
}

/// A pair of LRU links in a facade cell, so loom checks every access:
/// a dentry's (previous, next) on the list, or the cache's (head, tail).
/// Read and written only under the cache's LRU lock.
struct LruLinks(UnsafeCell<(*mut Dentry, *mut Dentry)>);

impl LruLinks {
    fn new() -> LruLinks {
        LruLinks(UnsafeCell::new((ptr::null_mut(), ptr::null_mut())))
    }

    /// # Safety
    /// The caller holds the LRU lock.
    unsafe fn get(&self) -> (*mut Dentry, *mut Dentry) {
        // SAFETY: the LRU lock orders every access (the contract).
        self.0.with(|p| unsafe { *p })
    }

    /// # Safety
    /// As for [`get`](Self::get).
    unsafe fn set(&self, v: (*mut Dentry, *mut Dentry)) {
        // SAFETY: as in `get`.
        self.0.with_mut(|p| unsafe { *p = v });
    }

    /// Sets the first link (previous, or head).
    ///
    /// # Safety
    /// As for [`get`](Self::get).
    unsafe fn set_first(&self, v: *mut Dentry) {
        // SAFETY: as in `get`.
        self.0.with_mut(|p| unsafe { (*p).0 = v });
    }

    /// Sets the second link (next, or tail).
    ///
    /// # Safety
    /// As for [`get`](Self::get).
    unsafe fn set_second(&self, v: *mut Dentry) {
        // SAFETY: as in `get`.
        self.0.with_mut(|p| unsafe { (*p).1 = v });
    }
}

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
/// A directory every positive entry of which is in the cache (Tsai et
/// al.'s directory completeness): a name the cache lacks is not in the
/// file system either. Set on a directory made by `mkdir` (empty) before
/// it is instantiated; cleared for good when a cached positive child is
/// evicted while its name still exists (`kill` of a hashed positive
/// dentry), before the child leaves the hash.
const COMPLETE: u32 = 32;

/// Every this many write sections of one dentry's count (a power of two),
/// the section's end moves the namespace generation (`write_end`), so a
/// path-cache entry never outlives a wrap of the count it recorded.
const SEQ_GEN_PERIOD: u32 = 1 << 20;

/// The most bucket locks. They sit side by side, eight to a cache line
/// (a `Mutex<()>` is 8 bytes): 32 KiB for the 4096. Each on its own
/// 128-byte pair of lines, as they were, they took 512 KiB, every byte
/// written when the cache was built: half of the shim's first uvfs call
/// went to those page faults (docs/preload-firstcall.md). Two threads
/// whose buckets' locks share a line (one chance in 512 for a random pair
/// of buckets) move it between their CPUs, as two on the same lock wait
/// for each other (one in 4096); the lookups take no bucket lock.
const MAX_LOCKS: usize = 4096;

/// The longest name a dentry holds in itself (Linux's `d_iname`): in its
/// `name` word, little-endian, zero-padded; a longer one is a [`Name`] the
/// word points at. Which of the two the word is follows from the length in
/// `hash_len` and the cache's `inline_max` (this, or 0 with
/// [`FastPaths::dentry_inline_name`](crate::FastPaths::dentry_inline_name)
/// off), read together under the sequence count (see
/// [`Dentry::with_name`]).
pub(crate) const INLINE_NAME: usize = 8;

/// Linux's `hash_len`: a name's hash (from [`name_hash`]) in the low 32
/// bits, its length in the high 32, so one compare checks both. The
/// bucket is taken from the low bits, which this keeps.
#[inline]
pub(crate) fn hash_len(hash: u64, len: usize) -> u64 {
    (hash & u64::from(u32::MAX)) | ((len as u64) << 32)
}

/// The length a [`hash_len`] word holds.
#[inline]
fn hl_len(hl: u64) -> usize {
    (hl >> 32) as usize
}

/// A name of at most [`INLINE_NAME`] bytes as a dentry's `name` word holds
/// it: little-endian, zero-padded (a name holds no NUL, so the length and
/// the word together give back the bytes).
#[inline]
fn inline_word(name: &[u8]) -> u64 {
    debug_assert!(name.len() <= INLINE_NAME);
    match name.first_chunk::<8>() {
        Some(c) => u64::from_le_bytes(*c),
        None => load_partial(name),
    }
}

/// The `name` word for `name` in a cache whose `inline_max` is
/// `inline_max`: the bytes, or the address of a new [`Name`] (which the
/// caller publishes with a release and retires when it is replaced).
fn name_word(name: &[u8], inline_max: usize) -> u64 {
    if name.len() <= inline_max {
        inline_word(name)
    } else {
        Name::new(name).expose_provenance() as u64
    }
}

/// The [`Name`] a `name` word of an out-of-line name points at.
#[inline]
fn name_ptr(word: u64) -> *mut Name {
    ptr::with_exposed_provenance_mut(word as usize)
}

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
/// `d_delete`, `d_move`, `kill`), never by another dentry's listing or
/// unlisting (which only renumbers `slot`): so the holder may test it
/// without the lock.
struct Children {
    kids: Mutex<Kids>,
}

struct Kids {
    /// The directory was removed and pruned: no child joins the list or
    /// the hash any more.
    dead: bool,
    list: Vec<NonNull<Dentry>>,
}

/// A name too long for the dentry's own word (see [`INLINE_NAME`]) as
/// stored: immutable, replaced whole (and the old one reclaimed after a
/// grace period) by a rename. One allocation: this header (the length)
/// with the bytes right after it (a box holding a boxed slice took two). The length sits in a
/// [`primitive` cell](crate::primitive::cell::UnsafeCell) (a plain cell in
/// normal builds) so that under loom every lockless read of a name is
/// checked to happen after the name's creation: a walker that reaches a
/// dentry or a name through a pointer published without a release would be
/// reported. (The bytes are written before the cell is made, and read only
/// after it is, inside its `with`.)
#[repr(C)]
struct Name {
    len: UnsafeCell<u32>,
}

impl Name {
    /// The layout of a name of `len` bytes, and the bytes' offset in it.
    fn layout(len: usize) -> (std::alloc::Layout, usize) {
        std::alloc::Layout::new::<Name>()
            .extend(std::alloc::Layout::array::<u8>(len).expect("name length"))
            .expect("name length")
    }

    /// A new name holding a copy of `name` (at most `u32::MAX` bytes; the
    /// VFS caps a component at 255).
    fn new(name: &[u8]) -> *mut Name {
        let len = u32::try_from(name.len()).expect("name length");
        let (layout, off) = Self::layout(name.len());
        // SAFETY: the layout has a non-zero size (it holds the header).
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: `p` is a fresh allocation of `layout`: the header at its
        // start (aligned for `Name`, as `layout` is) and `name.len()` bytes
        // at `off`, in bounds; the source is a distinct live slice.
        unsafe {
            ptr::copy_nonoverlapping(name.as_ptr(), p.add(off), name.len());
            p.cast::<Name>().write(Name {
                len: UnsafeCell::new(len),
            });
        }
        p.cast()
    }

    /// Runs `f` on the bytes.
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let (_, off) = Self::layout(0);
        // SAFETY: a name is never written after its creation; `self` is the
        // header of an allocation made by `new`, whose `len` bytes follow
        // at `off` (the offset `layout` gives for every length).
        self.len_with(|len| unsafe {
            f(std::slice::from_raw_parts(
                ptr::from_ref(self).cast::<u8>().add(off),
                len,
            ))
        })
    }

    /// Reads the length inside the cell's access check.
    #[inline]
    fn len_with<R>(&self, f: impl FnOnce(usize) -> R) -> R {
        // SAFETY: never written after creation.
        self.len.with(|l| f(unsafe { *l } as usize))
    }

    /// Frees a name after a grace period (see [`reclaim::defer_free`]).
    ///
    /// # Safety
    /// `p` came from `new`, is unreachable for new readers, and is not used
    /// by the caller again.
    unsafe fn defer_free(p: NonNull<Name>) {
        // SAFETY: the caller's contract is `defer_free`'s; a name's
        // `Free::free` is the right release for it.
        unsafe { reclaim::defer_free(p) };
    }
}

impl reclaim::Free for Name {
    #[cfg(loom)]
    fn loom_block(p: NonNull<Name>) -> Option<std::alloc::Layout> {
        // SAFETY: `p` is a live name (the retirement's contract), read
        // inside the execution that retires it.
        let len = unsafe { p.as_ref() }.len_with(|l| l);
        Some(Self::layout(len).0)
    }

    /// Frees a name made by [`new`](Name::new).
    ///
    /// # Safety
    /// `p` came from `new`, nobody reads it any more, and it is not used
    /// again.
    unsafe fn free(p: NonNull<Name>) {
        // SAFETY: the caller's contract: `p` is a live name nobody reads.
        let len = unsafe { p.as_ref() }.len_with(|l| l);
        let (layout, _) = Self::layout(len);
        // SAFETY: the header was written by `new` and is dropped once; the
        // allocation was made with this layout (the same length).
        unsafe {
            ptr::drop_in_place(p.as_ptr());
            std::alloc::dealloc(p.as_ptr().cast(), layout);
        }
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
/// (a unit test holds it to two lines). A name of at most 8 bytes
/// (`INLINE_NAME`) lives in the `name` word, so most files cost no
/// allocation beyond this one.
#[repr(align(64))]
pub struct Dentry {
    count: AtomicUsize,
    seq: AtomicU32,
    flags: AtomicU32,
    /// The parent (holding a reference), or null for a superblock's root.
    parent: AtomicPtr<Dentry>,
    /// The name's bytes (at most the cache's `inline_max` of them), or the
    /// exposed address of its [`Name`]; which one, the length in
    /// `hash_len` says. Changed only by a rename (`d_move`), inside a
    /// write section of `seq`, while the dentry is unhashed.
    name: AtomicU64,
    /// The name's [`hash_len`].
    hash_len: AtomicU64,
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
    lru: LruLinks,
    sb: Arc<DentrySb>,
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

/// A dead dentry's memory goes back to its cache's slab once its grace
/// period is over (see [`slab`]); the value is dropped after, since its
/// superblock reference may be what keeps the cache alive.
impl reclaim::Free for Dentry {
    unsafe fn free(p: NonNull<Dentry>) {
        // SAFETY: the contract: a live dentry nobody reads any more; moved
        // out once, and the slot is not read as a dentry again.
        let d = unsafe { p.as_ptr().read() };
        // SAFETY: the dentry came from its cache's slab (`new_child`,
        // `new_root`), which `d`'s superblock reference keeps alive; its
        // value is moved out, its grace period over.
        unsafe { d.sb.caches.dcache.slab.free(p) };
        drop(d);
    }
}

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
            mode: self.mode & 0xffff,
            acl: (self.mode >> crate::fs::ACL_SNAP_SHIFT) as u8,
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
            rdev: 0,
        }
    }
}

impl Dentry {
    fn new(
        sb: Arc<DentrySb>,
        parent: *mut Dentry,
        name: &[u8],
        hash: u64,
        inline_max: usize,
    ) -> Dentry {
        Dentry {
            count: AtomicUsize::new(1),
            seq: AtomicU32::new(0),
            flags: AtomicU32::new(0),
            parent: AtomicPtr::new(parent),
            name: AtomicU64::new(name_word(name, inline_max)),
            hash_len: AtomicU64::new(hash_len(hash, name.len())),
            next: AtomicPtr::new(ptr::null_mut()),
            inode: AtomicPtr::new(ptr::null_mut()),
            ino: AtomicU64::new(0),
            mode: AtomicU32::new(0),
            uid: AtomicU32::new(0),
            gid: AtomicU32::new(0),
            mounted: AtomicPtr::new(ptr::null_mut()),
            dir_lock: Mutex::new(()),
            lru: LruLinks::new(),
            sb,
            children: AtomicPtr::new(ptr::null_mut()),
            slot: AtomicU32::new(NO_SLOT),
        }
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
    pub(crate) fn sb(&self) -> &SuperBlock {
        &self.sb.sb
    }

    /// Begins a change readers must not see half-done.
    fn write_begin(&self) {
        self.seq.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Ends a change begun by [`write_begin`](Self::write_begin). Once
    /// every [`SEQ_GEN_PERIOD`] sections of one dentry, counts a namespace
    /// change too: a path-cache entry trusts the final dentry's 32-bit
    /// count where no generation moves (a create in place, and with
    /// `FastPaths::path_cache_dir_gen` a file's unlink, chmod or chown),
    /// and this keeps the count from wrapping back to an entry's value
    /// (2^31 sections) while the entry's generation is still current.
    fn write_end(&self) {
        let s = self.seq.fetch_add(1, Ordering::Release).wrapping_add(1);
        if s & (SEQ_GEN_PERIOD - 1) == 0 {
            self.sb.caches.dcache.ns_changed();
        }
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
        fence(Ordering::Acquire);
        self.seq.load(Ordering::Relaxed) == seq
    }

    /// The inode as [`DentryRef::node`] gives it, for a caller that holds
    /// no reference on the dentry but a reclaim pin (`stat` answered by the
    /// path cache): `None` for a negative dentry, an inode without a
    /// file-system object, or one the dentry let go meanwhile. The object
    /// is the one the inode held while the dentry still held the inode (the
    /// dentry's inode pointer is read again after the object's pointer); it
    /// may be evicted from then on, so only a file system that frees its
    /// objects after a grace period may read it
    /// ([`FileSystem::getattr_pinned`](crate::fs::FileSystem::getattr_pinned)).
    #[inline]
    pub(crate) fn node_pinned(&self) -> Option<crate::fs::Node<'_>> {
        let n = self.inode.load(Ordering::Acquire);
        // SAFETY: in-core inodes are type-stable: their memory lives as
        // long as the cache, which outlives every dentry (and this call,
        // made on a dentry the caller's pin keeps readable).
        let p = unsafe { NonNull::new(n)?.as_ref() }.data_ptr()?;
        // The object's load (acquire) is ordered before this one: if the
        // dentry still holds the same inode, it held it when the object
        // was read, so the object is that inode's, not a later life's.
        if self.inode.load(Ordering::Acquire) != n {
            return None;
        }
        Some(crate::fs::Node {
            ino: self.ino(),
            // SAFETY: `p` is the inode's `InodeData` pointer, read while
            // the dentry held the inode; its file system keeps the object
            // past the caller's pin if it reads it at all (the contract of
            // `getattr_pinned`, the only user).
            data: Some(unsafe { crate::fs::DataRef::new(p) }),
        })
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

    /// A copy of the name (one the dentry had at some instant during the
    /// call; the caller that must have the current one keeps renames out,
    /// holding the parent's `dir_lock`).
    pub(crate) fn name(&self) -> Vec<u8> {
        self.with_name(self.sb.caches.dcache.inline_max, <[u8]>::to_vec)
    }

    /// Runs `f` on the name, read without locks (Linux's
    /// `take_dentry_name_snapshot`): the length (in `hash_len`) and the
    /// `name` word are read inside one read section of the sequence count,
    /// retried while a writer is active or was meanwhile, so they belong
    /// to the same name; only then is an out-of-line name's pointer
    /// followed (the [`Name`] it points at is retired after a grace
    /// period, and we are pinned). `inline_max` is the cache's.
    fn with_name<R>(&self, inline_max: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        let _g = reclaim::pin();
        let (hl, word) = loop {
            if let Some(s) = self.read_seq() {
                let hl = self.hash_len.load(Ordering::Relaxed);
                let word = self.name.load(Ordering::Acquire);
                if self.seq_valid(s) {
                    break (hl, word);
                }
            }
            crate::primitive::hint::spin_loop();
        };
        let len = hl_len(hl);
        if len <= inline_max {
            return f(&word.to_le_bytes()[..len]);
        }
        // SAFETY: the word was this dentry's out-of-line name while the
        // count stood still (its length says so); names are freed only
        // after a grace period, and we are pinned.
        unsafe { &*name_ptr(word) }.with(f)
    }

    /// Whether the name is `name`, whose [`hash_len`] is `key`, for a
    /// caller holding the lock of the bucket this dentry is hashed on
    /// (a hashed dentry's name does not change: `d_move` renames it
    /// unhashed).
    fn name_is_locked(&self, key: u64, name: &[u8], inline_max: usize) -> bool {
        if self.hash_len.load(Ordering::Relaxed) != key {
            return false;
        }
        let word = self.name.load(Ordering::Acquire);
        if name.len() <= inline_max {
            return word == inline_word(name);
        }
        // SAFETY: the name of a hashed dentry, stable under the bucket
        // lock; an out-of-line one, as its length (equal to `name`'s)
        // says.
        unsafe { &*name_ptr(word) }.with(|n| name_eq(n, name))
    }

    /// Updates the lockless copy of the permission attributes after a chmod
    /// or chown.
    pub(crate) fn set_perm(&self, mode: u32, uid: u32, gid: u32) {
        // Most calls (a write's size and times) leave these alone: no
        // write section, no namespace change for the path cache.
        let old = self.mode.load(Ordering::Relaxed);
        if old == mode
            && self.uid.load(Ordering::Relaxed) == uid
            && self.gid.load(Ordering::Relaxed) == gid
        {
            return;
        }
        let was_dir = old & S_IFMT == S_IFDIR;
        self.write_begin();
        self.mode.store(mode, Ordering::Relaxed);
        self.uid.store(uid, Ordering::Relaxed);
        self.gid.store(gid, Ordering::Relaxed);
        self.write_end();
        // A directory's search permission is memoized in every entry whose
        // walk went through it; a file's mode and owners are in no entry
        // (the count just moved says it to the entries that end here).
        self.sb.caches.dcache.ns_changed_at(was_dir);
    }

    /// Whether the dentry names a directory now (its snapshot's type; no
    /// sequence check: for a writer under the locks that keep the type
    /// from changing, deciding what its change must count).
    fn mode_is_dir(&self) -> bool {
        self.mode.load(Ordering::Relaxed) & S_IFMT == S_IFDIR
    }

    /// Marks an unnamed (`O_TMPFILE | O_EXCL`) file as never linkable.
    pub(crate) fn set_unlinkable(&self) {
        self.flags.fetch_or(NOLINK, Ordering::Relaxed);
    }

    /// Marks a directory removed (`S_DEAD`): lookups in it fail.
    pub(crate) fn set_dead_dir(&self) {
        self.flags.fetch_or(DEADDIR, Ordering::Relaxed);
    }

    /// Marks a directory about to be made by `mkdir` complete (see
    /// [`COMPLETE`]); the caller holds the parent's `dir_lock`, so no
    /// child can be made in it yet.
    pub(crate) fn set_complete(&self) {
        self.flags.fetch_or(COMPLETE, Ordering::Relaxed);
    }

    /// Forgets that this directory is complete.
    pub(crate) fn clear_complete(&self) {
        if self.flags.load(Ordering::Relaxed) & COMPLETE != 0 {
            self.flags.fetch_and(!COMPLETE, Ordering::SeqCst);
        }
    }

    /// Whether every positive entry of this directory is cached: a miss
    /// in the cache is a miss in the file system. The caller holds the
    /// directory's `dir_lock` (no entry is being made) and has just missed
    /// in the cache under the bucket lock (an eviction that unhashed the
    /// name cleared the flag before).
    pub(crate) fn is_complete(&self) -> bool {
        self.flags.load(Ordering::Acquire) & COMPLETE != 0
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
    pub(crate) fn lock_inode(&self) -> Option<MutexGuard<'_, ()>> {
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

    /// The inode as the file system's `*_node` methods take it: its number
    /// and the file system's object the in-core inode holds (none for a
    /// negative dentry).
    #[inline]
    pub(crate) fn node(&self) -> crate::fs::Node<'_> {
        crate::fs::Node {
            ino: self.ino(),
            data: self.inode().and_then(|i| i.data()),
        }
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

/// The dentry cache.
pub struct DentryCache {
    buckets: Box<[AtomicPtr<Dentry>]>,
    locks: Box<[Mutex<()>]>,
    lru_lock: Mutex<()>,
    /// LRU list ends (oldest at the head), under `lru_lock`.
    lru: LruLinks,
    lru_len: AtomicUsize,
    /// Dentries alive (hashed or not).
    nr: AtomicUsize,
    limit: usize,
    /// Set when the VFS is dropped: final puts kill instead of caching.
    shutdown: AtomicBool,
    /// The namespace generation: bumped (after the change is visible) by
    /// every change that can alter what a lockless walk resolves — an
    /// unhash, a move, a change of a directory's permission snapshot, a
    /// mount — and by every dentry's death (before its memory is retired).
    /// The [path cache](crate::path_cache) trusts an entry only while the
    /// generation it recorded is current.
    ns_gen: crossbeam_utils::CachePadded<AtomicU64>,
    /// `cheap_pin`: the walk's and the path cache's pins are the cheap
    /// ones (see [`reclaim`](crate::reclaim)).
    cheap_pin: bool,
    /// [`FastPaths::path_cache_dir_gen`](crate::FastPaths::path_cache_dir_gen):
    /// a change confined to a non-directory (or negative) dentry, inside a
    /// write section of its count, does not move `ns_gen` (see
    /// [`ns_changed_at`](Self::ns_changed_at)).
    dir_gen: bool,
    /// The longest name a dentry holds in itself: [`INLINE_NAME`], or 0
    /// ([`FastPaths::dentry_inline_name`](crate::FastPaths::dentry_inline_name)
    /// off: every name a [`Name`] of its own, as before).
    inline_max: usize,
    /// The rename sequence count (Linux's `rename_lock`): every move is a
    /// write section of it, and `d_path` reads under it (see `path`).
    rename: crossbeam_utils::CachePadded<path::RenameSeq>,
    /// Where the dentries live (see [`slab`]).
    slab: slab::DentrySlab,
}

// SAFETY: `lru` is only touched under `lru_lock`; the rest is atomics and
// mutexes.
unsafe impl Send for DentryCache {}
// SAFETY: as above.
unsafe impl Sync for DentryCache {}

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
    d.mode.store(attr.snap_mode(), Ordering::Relaxed);
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
    mountpoint.sb.caches.dcache.ns_changed();
}

/// The dentry cache's operations as the loom models drive them.
#[cfg(all(test, loom))]
pub(crate) mod loom_api;
/// Loom models of `d_delete` (a dentry made negative in place) against
/// lockless and locked lookups.
#[cfg(all(test, loom))]
mod loom_ddelete;
/// Loom models of `d_path` (getcwd's walk up) against a rename of a
/// directory on the path.
#[cfg(all(test, loom))]
mod loom_dpath;
/// Loom models of the cache's lockless protocols.
#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(all(test, not(loom)))]
mod tests;
