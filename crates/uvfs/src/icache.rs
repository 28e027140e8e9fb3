//! The inode cache (`inode_hashtable` and `iget_locked`): in-memory inodes
//! keyed by (superblock, inode number), with a size limit and LRU eviction
//! of unused inodes, in front of a [`FileSystem`](crate::fs::FileSystem).
//! A node keeps what the VFS reads without asking the file system (the
//! permission attributes, the `relatime` state, the link count that decides
//! eviction) and the file system's object; the attributes themselves are
//! held once, by the file system, which `stat` asks.
//!
//! Seed 002's fast path is the lookup: with `lockless` on, `iget` searches
//! its hash chain without the hash lock and takes the lock only to insert
//! (searching again under it); with it off (stock), the first search takes
//! the lock too, so a miss takes it twice.
//!
//! Lockless search without a reclamation scheme: inode objects are
//! type-stable (slabs owned by the cache and freed only with it), so a
//! reader may always dereference a node it reached. Chains end in a "nulls"
//! marker that encodes the bucket (the kernel's `hlist_nulls`): a reader
//! carried into another chain by a node that was freed and reused ends at
//! the wrong marker and restarts. A hit is confirmed under the node's own
//! lock (key equal, not being freed). A lockless miss is never trusted on
//! its own: the insert path searches again under the hash lock.
//!
//! Inodes being created (`I_NEW`, filled from the file system outside any
//! lock) are waited for; inodes being freed (`I_FREEING`) are waited out and
//! the search restarts, never with the hash lock held.

use crate::errno::Errno;
use crate::fs::{Attr, DataRef, Found, Ino, InodeData};
use crate::locks::FileLockContext;
use crate::primitive::hint::retry_wait;
use crate::primitive::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use crate::primitive::sync::{Condvar, Mutex, lock, wait};
use std::collections::VecDeque;
use std::ptr::{self, NonNull};

const I_NEW: u16 = 1;
const I_FREEING: u16 = 2;
const I_FREE: u16 = 4;

/// Nodes per slab.
const SLAB: usize = if cfg!(loom) { 2 } else { 64 };

#[derive(Debug)]
struct State {
    /// References (Linux's `i_count` is 32 bits too). With `flags` at 16
    /// bits the state is 24 bytes, which keeps the node at two cache lines.
    count: u32,
    flags: u16,
    /// Linked into its bucket's chain.
    hashed: bool,
    /// Has an entry on the LRU list.
    on_lru: bool,
    /// Bumped at every free, so LRU entries of an earlier life are ignored.
    generation: u64,
    /// The link count, for the last put to free an unlinked inode (the
    /// only attribute besides the permission ones below that the cache
    /// needs: the attributes themselves stay with the file system, which
    /// `stat` asks, so they are not held twice).
    nlink: u32,
    /// Threads waiting on `cv` for this node (`I_NEW` or `I_FREEING` to
    /// clear). Notifiers wake only when it is non-zero: std's condvar makes
    /// a futex syscall on every `notify_all`, waiters or not, which on the
    /// miss path of a cache-busting walk cost more than the hash lock.
    waiters: u32,
}

/// An in-memory inode.
///
/// Cache-line aligned, for the reason [`Dentry`](crate::dcache::Dentry)
/// is: nodes sit side by side in slabs, and their counts and locks are
/// written by tasks working on different files.
#[derive(Debug)]
#[repr(align(64))]
pub struct Inode {
    next: AtomicPtr<Inode>,
    sb: AtomicU64,
    ino: AtomicU64,
    state: Mutex<State>,
    cv: Condvar,
    /// The permission-relevant attributes, readable without the state lock
    /// (Linux's `i_mode`, `i_uid`, `i_gid`): set with the attributes at
    /// fill and by [`InodeRef::set_attr`].
    mode: AtomicU32,
    uid: AtomicU32,
    gid: AtomicU32,
    /// `relatime` state: 1 when data or status changed since atime was
    /// last set (the next access must update it), and atime's seconds.
    atime_stale: AtomicU32,
    atime_sec: AtomicU64,
    /// Serializes a VFS read-modify-write of the inode (append, truncate,
    /// set-ID removal on write): the `inode_lock` of the write path.
    pub(crate) io_lock: Mutex<()>,
    /// The advisory locks (Linux's `i_flctx`): made at the inode's first
    /// lock request and published once; kept with the inode object (nodes
    /// are type-stable, and a context is empty once no file of the inode is
    /// open, so the next inode in this node inherits an empty one) and
    /// freed with the cache.
    flctx: AtomicPtr<FileLockContext>,
    /// The regular-file opens leases are judged by (`i_writecount`,
    /// `i_readcount`): zero again once no file of the inode is open.
    pub(crate) opens: crate::locks::OpenCounts,
    /// A FIFO's pipe while it is open (`i_pipe`): see [`crate::pipe`].
    pub(crate) pipe: crate::pipe::InodePipe,
    /// The file system's object for the inode ([`InodeData`]'s pointer,
    /// null if it gave none): stored while the node is `I_NEW` (before
    /// the waiters are let go under the state lock) and taken out at
    /// eviction (count zero, `I_FREEING`), so it is fixed while any
    /// reference is held, and read without locks by its holders.
    data: AtomicPtr<()>,
}

impl Drop for Inode {
    fn drop(&mut self) {
        let p = self.flctx.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: a non-null pointer came from `Box::into_raw` in
            // `lock_context_or_create`, was published once and is freed only
            // here, with the node.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl Inode {
    fn empty() -> Inode {
        Inode {
            next: AtomicPtr::new(ptr::null_mut()),
            sb: AtomicU64::new(u64::MAX),
            ino: AtomicU64::new(u64::MAX),
            state: Mutex::new(State {
                count: 0,
                flags: I_FREE,
                hashed: false,
                on_lru: false,
                generation: 0,
                nlink: 0,
                waiters: 0,
            }),
            cv: Condvar::new(),
            mode: AtomicU32::new(0),
            uid: AtomicU32::new(0),
            gid: AtomicU32::new(0),
            atime_stale: AtomicU32::new(0),
            atime_sec: AtomicU64::new(0),
            io_lock: Mutex::new(()),
            flctx: AtomicPtr::new(ptr::null_mut()),
            opens: crate::locks::OpenCounts::default(),
            pipe: crate::pipe::InodePipe::default(),
            data: AtomicPtr::new(ptr::null_mut()),
        }
    }
}

/// The end-of-chain marker of bucket `b`: an odd address (nodes are
/// aligned), so it can never be a node.
fn nulls(b: usize) -> *mut Inode {
    ptr::without_provenance_mut((b << 1) | 1)
}

fn is_nulls(p: *mut Inode) -> bool {
    p.addr() & 1 == 1
}

/// What a bucket's head holds, with the null of a bucket never written
/// read as its nulls marker: the table starts zeroed (fresh pages, resident
/// only once a bucket on them is written), and only a head can be null —
/// a node's `next` is set from [`head`] when it is linked, so it is a
/// node or a marker.
#[inline]
fn head(bucket: &AtomicPtr<Inode>, b: usize, order: Ordering) -> *mut Inode {
    let p = bucket.load(order);
    if p.is_null() { nulls(b) } else { p }
}

enum Find {
    Hit(NonNull<Inode>),
    Miss,
    Retry,
    Freeing(NonNull<Inode>),
}

type EvictFn = Box<dyn Fn(u64, Ino, Option<InodeData>) + Send + Sync>;

/// The inode cache.
pub struct InodeCache {
    buckets: Box<[AtomicPtr<Inode>]>,
    hash_lock: Mutex<()>,
    lru: Mutex<VecDeque<(NonNull<Inode>, u64)>>,
    hashed: AtomicUsize,
    limit: usize,
    lockless: bool,
    free: Mutex<Vec<NonNull<Inode>>>,
    slabs: Mutex<Vec<Box<[Inode]>>>,
    evict: EvictFn,
}

// SAFETY: the raw node pointers point into slabs the cache owns; nodes are
// shared only through atomics and their own mutex.
unsafe impl Send for InodeCache {}
// SAFETY: as above.
unsafe impl Sync for InodeCache {}

/// A counted reference to a cached inode (`ihold`/`iput`).
pub struct InodeRef<'c> {
    cache: &'c InodeCache,
    node: NonNull<Inode>,
}

// SAFETY: the node is shared through atomics and its mutex; the cache is Sync.
unsafe impl Send for InodeRef<'_> {}
// SAFETY: as above.
unsafe impl Sync for InodeRef<'_> {}

/// The bucket of (`sb`, `ino`) among `n` (a power of two).
///
/// The number itself picks the bucket, offset per superblock by a scrambled
/// superblock id: a file system hands out numbers in runs (tmpfs: a run per
/// thread, as Linux's `shmem_reserve_inode` batches), so the inodes made one
/// after another share bucket cache lines (8 buckets a line) instead of each
/// touching a cold line of the table, and the numbers of one superblock never
/// collide until they wrap the table. Linux hashes its inode table (`hash()`
/// in fs/inode.c), but its tmpfs never inserts new inodes there at all.
pub(crate) fn bucket_of(sb: u64, ino: Ino, n: usize) -> usize {
    (ino ^ sb.rotate_left(32).wrapping_mul(0x9e37_79b9_7f4a_7c15)) as usize & (n - 1)
}

impl InodeCache {
    /// A cache holding at most `limit` inodes when none is in use (inodes in
    /// use are never evicted), with `buckets` hash chains (rounded up to a
    /// power of two). `lockless` selects seed 002's search. `evict` is called
    /// for every inode dropped from the cache, with its superblock id and
    /// number, so the file system can free an unlinked one; until it returns,
    /// an `iget` of that inode waits rather than filling a new copy. It also
    /// gets the file system's object the node held ([`iget_with`](Self::iget_with)).
    pub fn new(
        limit: usize,
        buckets: usize,
        lockless: bool,
        evict: impl Fn(u64, Ino, Option<InodeData>) + Send + Sync + 'static,
    ) -> InodeCache {
        let n = buckets.max(1).next_power_of_two();
        InodeCache {
            buckets: crate::primitive::sync::null_ptrs(n),
            hash_lock: Mutex::new(()),
            lru: Mutex::new(VecDeque::new()),
            hashed: AtomicUsize::new(0),
            limit,
            lockless,
            free: Mutex::new(Vec::new()),
            slabs: Mutex::new(Vec::new()),
            evict: Box::new(evict),
        }
    }

    /// Inodes currently hashed (cached, in use or not).
    pub fn len(&self) -> usize {
        self.hashed.load(Ordering::Relaxed)
    }

    /// Whether the cache holds no inode.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Inode objects ever carved (the cache's memory is this times
    /// `size_of::<Inode>()`).
    pub fn objects(&self) -> usize {
        lock(&self.slabs).len() * SLAB
    }

    fn bucket(&self, sb: u64, ino: Ino) -> usize {
        bucket_of(sb, ino, self.buckets.len())
    }

    /// `iget_locked` + fill: the cached inode for (`sb`, `ino`), or a new
    /// one filled by `fill` (called once, outside every lock, while other
    /// callers for the same inode wait). A `fill` error is returned and
    /// nothing is cached.
    pub fn iget(
        &self,
        sb: u64,
        ino: Ino,
        fill: impl FnOnce() -> Result<Attr, Errno>,
    ) -> Result<InodeRef<'_>, Errno> {
        self.iget_with(sb, ino, || fill().map(|a| (a, None)))
    }

    /// [`iget`](Self::iget) whose `fill` also gives the file system's
    /// object for the inode, which the node keeps until it is evicted
    /// (then handed to the eviction callback). A `fill` error must come
    /// with no object.
    pub fn iget_with(
        &self,
        sb: u64,
        ino: Ino,
        fill: impl FnOnce() -> Result<Found, Errno>,
    ) -> Result<InodeRef<'_>, Errno> {
        let b = self.bucket(sb, ino);
        let mut fill = Some(fill);
        loop {
            let found = if self.lockless {
                self.find(b, sb, ino)
            } else {
                let _g = lock(&self.hash_lock);
                self.find(b, sb, ino)
            };
            match found {
                Find::Hit(n) => match self.wait_new(n) {
                    Some(r) => return Ok(r),
                    None => continue,
                },
                Find::Freeing(n) => {
                    self.wait_freed(n);
                    continue;
                }
                Find::Retry => {
                    // A lockless walk that strayed restarts from a bucket
                    // head it may still see stale for a while (see
                    // `retry_wait`: a yield under loom, nothing otherwise).
                    retry_wait();
                    continue;
                }
                Find::Miss => {}
            }
            let new = self.alloc_node()?;
            let g = lock(&self.hash_lock);
            // Search again under the lock: another thread may have inserted
            // the inode since our (lockless or locked) miss.
            match self.find(b, sb, ino) {
                Find::Hit(n) => {
                    drop(g);
                    self.free_node(new);
                    match self.wait_new(n) {
                        Some(r) => return Ok(r),
                        None => continue,
                    }
                }
                Find::Freeing(n) => {
                    drop(g);
                    self.free_node(new);
                    self.wait_freed(n);
                    continue;
                }
                Find::Retry => {
                    drop(g);
                    self.free_node(new);
                    continue;
                }
                Find::Miss => {}
            }
            // Key and state are set under the hash lock, right before the
            // insert, so a stale reader that reaches this node can only see
            // it as the new inode it is about to become.
            // SAFETY: nodes live as long as the cache.
            let node = unsafe { new.as_ref() };
            {
                let mut st = lock(&node.state);
                node.sb.store(sb, Ordering::Relaxed);
                node.ino.store(ino, Ordering::Relaxed);
                st.count = 1;
                st.flags = I_NEW;
                st.hashed = true;
            }
            // Release, not relaxed, although the head store below publishes
            // the node: a stale reader still standing on this node from an
            // earlier life (it was freed and reused meanwhile) reads `next`
            // without passing through that head, then follows it to the old
            // first node. Only this edge orders that node's insert (under the
            // hash lock, before ours) with the reader; without it the reader
            // may see a node it has no happens-before edge to in its initial
            // state, `next` null, and crash (found by the loom model
            // `lockless_search_vs_evict_and_reuse`).
            node.next.store(
                head(&self.buckets[b], b, Ordering::Relaxed),
                Ordering::Release,
            );
            self.buckets[b].store(new.as_ptr(), Ordering::Release);
            self.hashed.fetch_add(1, Ordering::Relaxed);
            drop(g);
            let r = InodeRef {
                cache: self,
                node: new,
            };
            let filled = (fill.take().expect("fill runs once"))();
            if filled.is_err() {
                // `iget_failed`: unhash while still `I_NEW`, so no waiter can
                // see a ready inode without attributes; waiters then see it
                // unhashed and retry; the node is freed at its last put, with
                // no evict call.
                self.unhash(new, b);
            }
            let result = filled.map(|(attr, data)| {
                // Before `I_NEW` clears under the state lock below: a
                // waiter that then takes its reference sees the object.
                if let Some(d) = data {
                    node.data.store(d.into_raw(), Ordering::Release);
                }
                attr
            });
            let mut st = lock(&node.state);
            st.flags &= !I_NEW;
            let result = result.map(|attr| {
                node.set_perm(&attr);
                st.nlink = attr.nlink;
            });
            let wake = st.waiters > 0;
            drop(st);
            if wake {
                node.cv.notify_all();
            }
            result?;
            self.shrink();
            return Ok(r);
        }
    }

    /// The cached inode for (`sb`, `ino`) if there is one (`ilookup`).
    pub fn ilookup(&self, sb: u64, ino: Ino) -> Option<InodeRef<'_>> {
        let b = self.bucket(sb, ino);
        loop {
            let found = {
                let _g = lock(&self.hash_lock);
                self.find(b, sb, ino)
            };
            match found {
                Find::Hit(n) => match self.wait_new(n) {
                    Some(r) => return Some(r),
                    None => continue,
                },
                Find::Freeing(n) => self.wait_freed(n),
                Find::Retry => continue,
                Find::Miss => return None,
            }
        }
    }

    /// Searches bucket `b`, taking a reference on a hit.
    fn find(&self, b: usize, sb: u64, ino: Ino) -> Find {
        let mut p = head(&self.buckets[b], b, Ordering::Acquire);
        loop {
            if is_nulls(p) {
                return if p.addr() >> 1 == b {
                    Find::Miss
                } else {
                    Find::Retry
                };
            }
            // SAFETY: a chain only ever links nodes of this cache's slabs,
            // which live as long as the cache (type-stable), so the address
            // is a valid node even if it was freed or reused meanwhile.
            let node = unsafe { &*p };
            if node.ino.load(Ordering::Acquire) == ino && node.sb.load(Ordering::Acquire) == sb {
                let mut st = lock(&node.state);
                let same = node.ino.load(Ordering::Relaxed) == ino
                    && node.sb.load(Ordering::Relaxed) == sb
                    && st.hashed;
                if !same {
                    // Freed or reused under us: the walk may have strayed.
                    return Find::Retry;
                }
                // SAFETY: `p` is a node pointer (not nulls).
                let n = unsafe { NonNull::new_unchecked(p) };
                if st.flags & I_FREEING != 0 {
                    return Find::Freeing(n);
                }
                st.count += 1;
                return Find::Hit(n);
            }
            p = node.next.load(Ordering::Acquire);
        }
    }

    /// Waits until a referenced inode is no longer `I_NEW`; `None` (the
    /// reference dropped) if its fill failed.
    fn wait_new(&self, n: NonNull<Inode>) -> Option<InodeRef<'_>> {
        let r = InodeRef {
            cache: self,
            node: n,
        };
        // SAFETY: nodes live as long as the cache.
        let node = unsafe { n.as_ref() };
        let mut st = lock(&node.state);
        while st.flags & I_NEW != 0 {
            st.waiters += 1;
            st = wait(&node.cv, st);
            st.waiters -= 1;
        }
        let ok = st.hashed;
        drop(st);
        ok.then_some(r)
    }

    /// Waits until an inode being freed is gone.
    fn wait_freed(&self, n: NonNull<Inode>) {
        // SAFETY: nodes live as long as the cache.
        let node = unsafe { n.as_ref() };
        let mut st = lock(&node.state);
        while st.flags & I_FREEING != 0 {
            st.waiters += 1;
            st = wait(&node.cv, st);
            st.waiters -= 1;
        }
    }

    fn alloc_node(&self) -> Result<NonNull<Inode>, Errno> {
        if let Some(n) = lock(&self.free).pop() {
            return Ok(n);
        }
        let mut v: Vec<Inode> = Vec::new();
        v.try_reserve_exact(SLAB).map_err(|_| Errno::ENOMEM)?;
        v.extend((0..SLAB).map(|_| Inode::empty()));
        let mut slab = v.into_boxed_slice();
        let mut ptrs: Vec<NonNull<Inode>> = slab.iter_mut().map(NonNull::from).collect();
        let first = ptrs.pop().ok_or(Errno::ENOMEM)?;
        lock(&self.slabs).push(slab);
        lock(&self.free).append(&mut ptrs);
        Ok(first)
    }

    /// Returns an unhashed node with no references to the free list.
    fn free_node(&self, n: NonNull<Inode>) {
        // SAFETY: nodes live as long as the cache.
        let node = unsafe { n.as_ref() };
        let wake = {
            let mut st = lock(&node.state);
            st.flags = I_FREE;
            st.count = 0;
            st.hashed = false;
            st.on_lru = false;
            st.nlink = 0;
            st.generation += 1;
            st.waiters > 0
        };
        if wake {
            node.cv.notify_all();
        }
        lock(&self.free).push(n);
    }

    /// Unlinks a node from bucket `b` (its own `next` is kept, so readers
    /// standing on it can go on).
    fn unhash(&self, n: NonNull<Inode>, b: usize) {
        let _g = lock(&self.hash_lock);
        // SAFETY: nodes live as long as the cache.
        let node = unsafe { n.as_ref() };
        let mut prev = &self.buckets[b];
        loop {
            let p = prev.load(Ordering::Relaxed);
            if p.is_null() || is_nulls(p) {
                return; // not hashed (already removed)
            }
            if p == n.as_ptr() {
                prev.store(node.next.load(Ordering::Relaxed), Ordering::Release);
                break;
            }
            // SAFETY: chain nodes are valid (type-stable) and, under the hash
            // lock, hashed.
            prev = unsafe { &(*p).next };
        }
        lock(&node.state).hashed = false;
        self.hashed.fetch_sub(1, Ordering::Relaxed);
    }

    /// Evicts a node whose count is zero and which we marked `I_FREEING`.
    fn evict_node(&self, n: NonNull<Inode>) {
        // SAFETY: nodes live as long as the cache.
        let node = unsafe { n.as_ref() };
        let (sb, ino) = (
            node.sb.load(Ordering::Relaxed),
            node.ino.load(Ordering::Relaxed),
        );
        // The file system first, then the unhash (Linux's `evict()`:
        // `->evict_inode`, then `remove_inode_hash`). While the callback
        // runs the inode stays hashed and `I_FREEING`, so an `iget` of the
        // same number waits for it. Unhashed first, a racing `iget` would
        // miss, insert and fill a second in-memory copy from a file system
        // that is still tearing the first down (for an unlinked inode:
        // freeing it), which then drops the inode under that copy. Found by
        // the loom models in icache/loom_tests.rs (the unlinked last put,
        // and LRU eviction, each racing an iget).
        (self.evict)(sb, ino, node.take_data());
        self.unhash(n, self.bucket(sb, ino));
        self.free_node(n);
    }

    fn iput(&self, n: NonNull<Inode>) {
        // SAFETY: nodes live as long as the cache.
        let node = unsafe { n.as_ref() };
        let mut st = lock(&node.state);
        st.count -= 1;
        if st.count > 0 {
            return;
        }
        if !st.hashed {
            // A failed fill's last reference.
            drop(st);
            self.free_node(n);
            return;
        }
        if st.nlink == 0 {
            st.flags |= I_FREEING;
            drop(st);
            self.evict_node(n);
            return;
        }
        if !st.on_lru {
            st.on_lru = true;
            let generation = st.generation;
            drop(st);
            lock(&self.lru).push_back((n, generation));
        } else {
            drop(st);
        }
        self.shrink();
    }

    /// Evicts unused inodes, oldest first, until at most `limit` are cached
    /// or none is unused.
    pub fn shrink(&self) {
        self.shrink_to(self.limit);
    }

    /// Evicts unused inodes, oldest first, until at most `target` are cached
    /// or none is unused (`prune_icache_sb`; `shrink_to(0)` is what
    /// `drop_caches` does).
    pub fn shrink_to(&self, target: usize) {
        while self.hashed.load(Ordering::Relaxed) > target {
            let Some((n, generation)) = lock(&self.lru).pop_front() else {
                return;
            };
            // SAFETY: nodes live as long as the cache.
            let node = unsafe { n.as_ref() };
            let mut st = lock(&node.state);
            if st.generation != generation {
                continue; // an entry from an earlier life of the node
            }
            st.on_lru = false;
            if st.count != 0 || st.flags != 0 || !st.hashed {
                continue; // in use again: re-listed at its next last put
            }
            st.flags = I_FREEING;
            drop(st);
            self.evict_node(n);
        }
    }
}

impl Drop for InodeCache {
    fn drop(&mut self) {
        // No reference can outlive the cache (they borrow it), so every
        // cached inode is unused: tell the file system about each.
        for b in 0..self.buckets.len() {
            let mut p = head(&self.buckets[b], b, Ordering::Acquire);
            while !is_nulls(p) {
                // SAFETY: slabs are still alive; no other thread can reach
                // a cache being dropped.
                let node = unsafe { &*p };
                (self.evict)(
                    node.sb.load(Ordering::Relaxed),
                    node.ino.load(Ordering::Relaxed),
                    node.take_data(),
                );
                p = node.next.load(Ordering::Acquire);
            }
        }
    }
}

impl std::fmt::Debug for InodeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InodeCache")
            .field("len", &self.len())
            .field("limit", &self.limit)
            .field("lockless", &self.lockless)
            .finish_non_exhaustive()
    }
}

impl InodeRef<'_> {
    fn node(&self) -> &Inode {
        // SAFETY: nodes live as long as the cache we borrow.
        unsafe { self.node.as_ref() }
    }

    /// The inode number.
    pub fn ino(&self) -> Ino {
        self.node().ino.load(Ordering::Relaxed)
    }

    /// The superblock id.
    pub fn sb(&self) -> u64 {
        self.node().sb.load(Ordering::Relaxed)
    }

    /// The cached link count.
    pub fn nlink(&self) -> u32 {
        lock(&self.node().state).nlink
    }

    /// Takes what the cache keeps of the attributes (permissions, the
    /// `relatime` state, the link count) from `attr`, after a change made
    /// through the file system.
    ///
    /// A link count of zero stays zero: `attr` may be older than the
    /// unlink that took the last name (a truncate, chmod or second name's
    /// unlink that read its answer before it and stores it after), and a
    /// stale count kept an unlinked inode cached, unused, after its last
    /// put, where Linux frees it (its `i_nlink` lives in the inode, so no
    /// answer can be stale). Only a link gives a nameless inode a name
    /// back ([`set_linked`](Self::set_linked)); a stale zero over a live
    /// count is harmless: the eviction it brings early asks the file
    /// system, which frees only what has no name.
    pub fn set_attr(&self, attr: &Attr) {
        let mut st = lock(&self.node().state);
        self.node().set_perm(attr);
        if st.nlink != 0 {
            st.nlink = attr.nlink;
        }
    }

    /// [`set_attr`](Self::set_attr) for the answer of a link, the one
    /// call that can give an inode without a name (an `O_TMPFILE` file)
    /// its first one: the count is taken even from zero. The caller holds
    /// the new name's directory locked, so no unlink of that name can
    /// store its zero before this.
    pub fn set_linked(&self, attr: &Attr) {
        let mut st = lock(&self.node().state);
        self.node().set_perm(attr);
        st.nlink = attr.nlink;
    }

    /// Marks the inode as having no name left (its file system no longer
    /// knows it), so its last put frees it.
    pub fn set_unlinked(&self) {
        lock(&self.node().state).nlink = 0;
    }

    /// The file system's object for the inode, if it gave one.
    pub fn data(&self) -> Option<DataRef<'_>> {
        self.node().data()
    }

    /// The permission attributes (mode, uid, gid), read without locks.
    /// The mode word carries [`Attr::acl`](crate::fs::Attr::acl) above its
    /// 16 bits (bit 24 up: an access ACL, a default ACL).
    pub fn perm(&self) -> (u32, u32, u32) {
        self.node().perm()
    }

    /// References held (for tests).
    pub fn count(&self) -> usize {
        lock(&self.node().state).count as usize
    }

    /// Whether two references are to the same in-memory inode.
    pub fn ptr_eq(a: &InodeRef<'_>, b: &InodeRef<'_>) -> bool {
        a.node == b.node
    }
}

impl Clone for InodeRef<'_> {
    fn clone(&self) -> Self {
        lock(&self.node().state).count += 1;
        InodeRef {
            cache: self.cache,
            node: self.node,
        }
    }
}

impl Drop for InodeRef<'_> {
    fn drop(&mut self) {
        self.cache.iput(self.node);
    }
}

impl std::fmt::Debug for InodeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InodeRef")
            .field("sb", &self.sb())
            .field("ino", &self.ino())
            .finish()
    }
}

impl Inode {
    /// The file system's object for the inode (see the field), borrowed
    /// for as long as the caller's reference to the node.
    #[inline]
    pub(crate) fn data(&self) -> Option<DataRef<'_>> {
        let p = ptr::NonNull::new(self.data.load(Ordering::Acquire))?;
        // SAFETY: a non-null slot holds an `InodeData`'s pointer, stored
        // before the node was handed out and taken out only at eviction,
        // when no reference (such as the one `&self` stands for) is left.
        Some(unsafe { DataRef::new(p) })
    }

    /// The raw pointer of the file system's object, for a caller holding
    /// no reference on the node (`Dentry::node_pinned`), which must check
    /// the node is still the one it meant before using it.
    #[inline]
    pub(crate) fn data_ptr(&self) -> Option<NonNull<()>> {
        ptr::NonNull::new(self.data.load(Ordering::Acquire))
    }

    /// Takes the file system's object out of an unused node.
    fn take_data(&self) -> Option<InodeData> {
        let p = ptr::NonNull::new(self.data.swap(ptr::null_mut(), Ordering::Acquire))?;
        // SAFETY: the slot held an `InodeData`'s pointer and its reference,
        // which the swap moved to us alone.
        Some(unsafe { InodeData::from_raw(p) })
    }

    fn set_perm(&self, a: &Attr) {
        self.mode.store(a.snap_mode(), Ordering::Relaxed);
        self.uid.store(a.uid, Ordering::Relaxed);
        self.gid.store(a.gid, Ordering::Relaxed);
        let stale = a.atime <= a.mtime || a.atime <= a.ctime;
        self.atime_stale.store(u32::from(stale), Ordering::Relaxed);
        self.atime_sec.store(a.atime.sec as u64, Ordering::Relaxed);
    }

    /// Notes that the inode's data or status changed (mtime or ctime moved
    /// past atime), so the next access updates atime.
    pub(crate) fn mark_changed(&self) {
        if self.atime_stale.load(Ordering::Relaxed) == 0 {
            self.atime_stale.store(1, Ordering::Relaxed);
        }
    }

    /// Linux's `relatime_need_update`: an access must update atime when
    /// mtime or ctime is not older than it, or it is a day old. `now_sec`
    /// is asked for only when the first rule does not decide (a clock read
    /// is a sizeable part of a cached 4 KiB read).
    pub(crate) fn atime_due(&self, now_sec: impl FnOnce() -> i64) -> bool {
        self.atime_stale.load(Ordering::Relaxed) != 0
            || now_sec().saturating_sub(self.atime_sec.load(Ordering::Relaxed) as i64)
                >= 24 * 60 * 60
    }

    /// The permission attributes (mode, uid, gid) without locks.
    pub(crate) fn perm(&self) -> (u32, u32, u32) {
        (
            self.mode.load(Ordering::Relaxed),
            self.uid.load(Ordering::Relaxed),
            self.gid.load(Ordering::Relaxed),
        )
    }

    /// The inode's lock context, if a lock was ever requested on it
    /// (`locks_inode_context`).
    #[inline]
    pub(crate) fn lock_context(&self) -> Option<&FileLockContext> {
        // SeqCst (a plain load on x86): an open's look for leases pairs
        // with the setter's publication (see `locks/lease.rs`).
        let p = self.flctx.load(Ordering::SeqCst);
        // SAFETY: a published context lives as long as the node.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// The lock context, made and published now if there is none
    /// (`locks_get_lock_context`); `ENOLCK` if it cannot be allocated.
    pub(crate) fn lock_context_or_create(&self) -> Result<&FileLockContext, Errno> {
        if let Some(c) = self.lock_context() {
            return Ok(c);
        }
        let fresh = crate::reclaim::try_box(FileLockContext::new()).ok_or(Errno::ENOLCK)?;
        let fresh = Box::into_raw(fresh);
        match self.flctx.compare_exchange(
            ptr::null_mut(),
            fresh,
            Ordering::SeqCst,
            Ordering::Acquire,
        ) {
            // SAFETY: just published; it lives as long as the node.
            Ok(_) => Ok(unsafe { &*fresh }),
            Err(won) => {
                // SAFETY: ours, never published.
                drop(unsafe { Box::from_raw(fresh) });
                // SAFETY: the winner's context lives as long as the node.
                Ok(unsafe { &*won })
            }
        }
    }
}

impl<'c> InodeRef<'c> {
    /// Gives up the handle without dropping its reference (for the dentry
    /// cache, which keeps inode references in its own objects).
    pub(crate) fn into_raw(self) -> NonNull<Inode> {
        std::mem::ManuallyDrop::new(self).node
    }
}

impl InodeCache {
    /// Takes back a reference given up by [`InodeRef::into_raw`].
    ///
    /// # Safety
    /// `n` came from `into_raw` on a reference of this cache, and the caller
    /// transfers that reference.
    #[allow(clippy::wrong_self_convention)]
    pub(crate) unsafe fn from_raw(&self, n: NonNull<Inode>) -> InodeRef<'_> {
        InodeRef {
            cache: self,
            node: n,
        }
    }
}

/// Loom models of the lockless search, insert, eviction and reuse.
#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(all(test, not(loom), not(shuttle)))]
mod size_tests {
    /// Two cache lines at most: the attributes are
    /// the file system's (only the permission ones and the link count are
    /// kept here) and a FIFO's pipe slot is a pointer, made at first use.
    #[test]
    fn node_fits_two_cache_lines() {
        assert_eq!(std::mem::align_of::<super::Inode>(), 64);
        assert!(
            std::mem::size_of::<super::Inode>() <= 128,
            "{} bytes",
            std::mem::size_of::<super::Inode>()
        );
    }
}
