//! The hash table of dentries, keyed by (parent, name): lookups (the
//! lockless one the walk uses, and the locked one), allocation of a new
//! child (`d_alloc`), instantiation, and the changes a name goes through
//! (`d_drop`, `d_move`, `d_exchange`).

use super::*;

impl DentryCache {
    /// A cache that keeps at most `limit` unused dentries beyond those in
    /// use, with about `limit` hash buckets.
    /// `cheap_pin` chooses the pins of the walks over it; `inline_names`
    /// whether short names live in the dentry ([`INLINE_NAME`]).
    pub(crate) fn new(limit: usize, cheap_pin: bool, inline_names: bool) -> DentryCache {
        let n = limit
            .clamp(if cfg!(loom) { 2 } else { 64 }, 1 << 22)
            .next_power_of_two();
        DentryCache {
            buckets: crate::primitive::sync::null_ptrs(n),
            locks: (0..n.min(MAX_LOCKS)).map(|_| Mutex::new(())).collect(),
            lru_lock: Mutex::new(()),
            lru: LruLinks::new(),
            lru_len: AtomicUsize::new(0),
            nr: AtomicUsize::new(0),
            limit,
            shutdown: AtomicBool::new(false),
            ns_gen: crossbeam_utils::CachePadded::new(AtomicU64::new(0)),
            cheap_pin,
            dir_gen: false,
            inline_max: if inline_names { INLINE_NAME } else { 0 },
            rename: crossbeam_utils::CachePadded::new(path::RenameSeq::new()),
            slab: slab::DentrySlab::new(),
        }
    }

    /// The cache with `FastPaths::path_cache_dir_gen` set to `on` (see
    /// [`ns_changed_at`](Self::ns_changed_at)).
    pub(crate) fn with_dir_gen(mut self, on: bool) -> DentryCache {
        self.dir_gen = on;
        self
    }

    /// Whether walks over this cache take the cheap pin (`cheap_pin`).
    #[inline]
    pub(crate) fn cheap_pin(&self) -> bool {
        self.cheap_pin
    }

    /// The namespace generation (see the field): read before a walk whose
    /// result is remembered, and again to trust a remembered one. SeqCst,
    /// so that a reader pinned before its load that still sees an old
    /// generation was pinned before any dentry death counted after it.
    #[inline]
    pub(crate) fn ns_gen(&self) -> u64 {
        self.ns_gen.load(Ordering::SeqCst)
    }

    /// Counts a namespace change, after it is visible (or a death, before
    /// the memory is retired).
    pub(crate) fn ns_changed(&self) {
        self.ns_gen.fetch_add(1, Ordering::SeqCst);
    }

    /// Counts a change made to one dentry inside a write section of its
    /// count (an unhash, a `d_delete`, a permission snapshot's change),
    /// after it is visible. `was_dir`: the dentry was a directory before
    /// the change.
    ///
    /// With `dir_gen` (`FastPaths::path_cache_dir_gen`) only a directory's
    /// change moves the generation. Why that is enough: a path-cache entry
    /// depends on the dentries its walk went *through*, and on the one it
    /// ended on. The walk goes on from a dentry only if it is a directory
    /// (`lookup_rcu_then` stops at a negative dentry with `ENOENT` and at
    /// a non-directory with `ENOTDIR` or its answer), so a non-directory or
    /// negative dentry is always an entry's last one; and every entry's
    /// answer is trusted only after its last dentry's count is checked
    /// against the one the entry recorded (`PathCache::find`,
    /// `find_ino`), which this change's write section has moved. So an
    /// unlink, chmod or chown of a file anywhere no longer empties the
    /// whole cache, only its own entries. A dentry's death still moves
    /// the generation before its memory is retired (`dput`), moves and
    /// mounts still do, and `write_end` bounds how far the 32-bit count
    /// can go without one (`SEQ_GEN_PERIOD`).
    #[inline]
    pub(crate) fn ns_changed_at(&self, was_dir: bool) {
        if was_dir || !self.dir_gen {
            self.ns_changed();
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

    /// Dentries ever carved from the slab (its memory is this times
    /// `size_of::<Dentry>()`, 128 bytes; kept until the cache goes).
    pub fn objects(&self) -> usize {
        self.slab.objects()
    }

    /// The size limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    pub(super) fn bucket(&self, hash: u64) -> usize {
        (hash as usize) & (self.buckets.len() - 1)
    }

    pub(super) fn bucket_lock(&self, b: usize) -> MutexGuard<'_, ()> {
        lock(&self.locks[b & (self.locks.len() - 1)])
    }

    /// A new root dentry for a superblock, with its inode (one reference
    /// handed over).
    pub(super) fn new_root(
        &self,
        sb: Arc<DentrySb>,
        inode: NonNull<Inode>,
        attr: &Attr,
    ) -> DentryRef {
        let d = self
            .slab
            .alloc(Dentry::new(sb, ptr::null_mut(), b"/", 0, self.inline_max));
        self.nr.fetch_add(1, Ordering::Relaxed);
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
    #[cfg(all(test, loom))]
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
        let key = hash_len(hash, name.len());
        // The name as the dentry holds it, if it holds it inline.
        let inline = (name.len() <= self.inline_max).then(|| inline_word(name));
        let mut p = self.buckets[self.bucket(hash)].load(Ordering::Acquire);
        while let Some(d) = NonNull::new(p) {
            // SAFETY: the caller is pinned; chain members are freed only
            // after a grace period.
            let dr = unsafe { d.as_ref() };
            if dr.hash_len.load(Ordering::Relaxed) == key
                && dr.parent.load(Ordering::Relaxed) == parent.as_ptr()
            {
                let seq = dr.read_seq()?;
                // The length read again inside the read section: what the
                // word is (bytes or a pointer) follows from it, so the two
                // must be of the same name (see `Dentry::with_name`).
                let same = dr.hash_len.load(Ordering::Relaxed) == key && {
                    let word = dr.name.load(Ordering::Acquire);
                    match inline {
                        Some(w) => word == w,
                        None => {
                            // A pointer only if nothing changed since the
                            // length was read: check before following it.
                            if !dr.seq_valid(seq) {
                                return None;
                            }
                            // SAFETY: the dentry's out-of-line name while
                            // the count stood still; names are reclaimed
                            // after a grace period, and we are pinned.
                            unsafe { &*name_ptr(word) }.with(|n| name_eq(n, name))
                        }
                    }
                };
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
        match self.search_locked(parent, name) {
            Search::Hit(d) => Some(d),
            Search::Dying | Search::Miss => None,
        }
    }

    /// Searches `parent`'s child `name` under the bucket lock, in one pass:
    /// a live match, referenced ([`Search::Hit`]); else whether a match was
    /// hashed but dying (`DEAD` set by a final put or the shrinker, not
    /// unhashed yet: the name may still exist), [`Search::Dying`]; else
    /// [`Search::Miss`]. Under the bucket lock, so a `Miss` comes after the
    /// unhash of any such dentry, and so after whatever its killer did
    /// before unhashing (see [`Dentry::is_complete`]).
    pub(crate) fn search_locked(&self, parent: &DentryRef, name: &[u8]) -> Search {
        self.search_locked_hashed(parent, name, name_hash(parent.0.as_ptr(), name))
    }

    /// [`search_locked`](Self::search_locked) of a name whose
    /// [`name_hash`] under `parent` the caller has (the parent walk
    /// computed it for the last component).
    pub(crate) fn search_locked_hashed(
        &self,
        parent: &DentryRef,
        name: &[u8],
        hash: u64,
    ) -> Search {
        debug_assert_eq!(hash, name_hash(parent.0.as_ptr(), name));
        let key = hash_len(hash, name.len());
        let b = self.bucket(hash);
        let _g = self.bucket_lock(b);
        let mut dying = false;
        let mut p = self.buckets[b].load(Ordering::Acquire);
        while let Some(d) = NonNull::new(p) {
            // SAFETY: hashed dentries are alive while the bucket lock is held
            // (unhashing takes it).
            let dr = unsafe { d.as_ref() };
            if dr.hash_len.load(Ordering::Relaxed) == key
                && dr.parent.load(Ordering::Relaxed) == parent.0.as_ptr()
                && dr.name_is_locked(key, name, self.inline_max)
            {
                if dr.get_not_dead() {
                    dr.flags.fetch_or(REFERENCED, Ordering::Relaxed);
                    return Search::Hit(DentryRef(d));
                }
                dying = true;
            }
            p = dr.next.load(Ordering::Acquire);
        }
        if dying { Search::Dying } else { Search::Miss }
    }

    /// A fresh, unhashed, unlisted child of `parent` named `name` holding a
    /// reference on `parent`, counted in the cache; and its hash.
    pub(super) fn new_child(&self, parent: &DentryRef, name: &[u8]) -> (NonNull<Dentry>, u64) {
        let hash = name_hash(parent.0.as_ptr(), name);
        let p = parent.clone();
        let d = self.slab.alloc(Dentry::new(
            parent.sb.clone(),
            p.0.as_ptr(),
            name,
            hash,
            self.inline_max,
        ));
        std::mem::forget(p); // the child's reference on its parent
        self.nr.fetch_add(1, Ordering::Relaxed);
        (d, hash)
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
    pub(super) fn attach(&self, parent: &Dentry, d: NonNull<Dentry>, hash: u64) {
        let mut kids = lock(&parent.children().kids);
        if kids.push(d) {
            self.hash_in(d, hash);
        }
    }

    pub(super) fn hash_in(&self, d: NonNull<Dentry>, hash: u64) {
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
    pub(super) fn unhash(&self, d: NonNull<Dentry>) {
        // SAFETY: the caller holds a reference or owns the dead dentry.
        let dr = unsafe { d.as_ref() };
        let b = self.bucket(dr.hash_len.load(Ordering::Relaxed));
        let _g = self.bucket_lock(b);
        self.unhash_locked(b, d);
    }

    /// [`unhash`](Self::unhash) that never moves the namespace generation,
    /// whatever the dentry is (the loom model's broken twin only).
    #[cfg(all(test, loom))]
    pub(super) fn unhash_without_generation(&self, d: NonNull<Dentry>) {
        // SAFETY: the caller holds a reference.
        let dr = unsafe { d.as_ref() };
        let b = self.bucket(dr.hash_len.load(Ordering::Relaxed));
        let _g = self.bucket_lock(b);
        let _ = self.unhash_locked_quiet(b, d);
    }

    /// [`unhash`](Self::unhash) with bucket `b`'s lock held (`b` is the
    /// dentry's bucket).
    fn unhash_locked(&self, b: usize, d: NonNull<Dentry>) {
        if let Some(was_dir) = self.unhash_locked_quiet(b, d) {
            self.ns_changed_at(was_dir);
        }
    }

    /// [`unhash_locked`](Self::unhash_locked) without counting the change:
    /// `Some(was_dir)` if the dentry was hashed (and is not now), for the
    /// caller to count it.
    #[inline]
    fn unhash_locked_quiet(&self, b: usize, d: NonNull<Dentry>) -> Option<bool> {
        // SAFETY: the caller holds a reference or owns the dead dentry.
        let dr = unsafe { d.as_ref() };
        if dr.flags.load(Ordering::Relaxed) & HASHED == 0 {
            return None;
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
        let was_dir = dr.mode_is_dir();
        dr.write_begin();
        dr.flags.fetch_and(!HASHED, Ordering::Release);
        dr.count.fetch_and(!C_HASHED, Ordering::Release);
        dr.write_end();
        Some(was_dir)
    }

    /// `d_drop`: unhashes a dentry the caller holds, so lookups miss it
    /// (unlink, rmdir, a rename's victim). Open files keep using it; it dies
    /// at its last put.
    pub(crate) fn d_drop(&self, d: &DentryRef) {
        self.unhash(d.0);
    }

    /// `d_delete` (`FastPaths::d_delete`): after the file system removed
    /// the name of `d`, a non-directory the caller holds under its
    /// parent's `dir_lock`, makes `d` negative in place, still hashed and
    /// now on its parent's child list, when the caller's reference is the
    /// only one (Linux's `dentry_unlink_inode`): the next create of the
    /// name finds it, and the inode reference `d` held is dropped here.
    /// Otherwise (an open file, a walker that took a reference) unhashes
    /// it as [`d_drop`](Self::d_drop) does, and the holders keep the
    /// positive, unhashed dentry. Returns whether `d` was made negative.
    ///
    /// The protocol (see docs/metadata-ops.md, "d_delete"): under the
    /// bucket lock (which the locked search takes before its reference),
    /// the write section opens first, then one compare-and-swap on the
    /// count word proves the caller's reference is the only one and puts
    /// the section's start before every later reference in the word's
    /// order: a `legitimize` whose increment follows the swap reads the
    /// opened section and fails its count check; one whose increment comes
    /// before it makes the swap fail, and the dentry is dropped instead.
    pub(crate) fn d_delete(&self, d: &DentryRef) -> bool {
        self.d_delete_checked(d, true)
    }

    /// [`d_delete`](Self::d_delete), with the sole-holder check made only
    /// if `check` (`false` only in the loom model that shows the check is
    /// needed).
    pub(super) fn d_delete_checked(&self, d: &DentryRef, check: bool) -> bool {
        let dr: &Dentry = d;
        debug_assert!(!d.is_negative(), "d_delete of a negative dentry");
        let Some(parent) = NonNull::new(dr.parent_ptr()) else {
            self.unhash(d.0);
            return false;
        };
        // Another holder now (an open file): no flip, no listing.
        if check && dr.count.load(Ordering::Relaxed) & REFS != 1 {
            self.unhash(d.0);
            return false;
        }
        // Every hashed negative dentry is on its parent's list: listed
        // first (lock order: the list, then the bucket). A listed positive
        // dentry is allowed, should the flip fail below. Listed or not is
        // ours to test: we hold `d` and its parent's `dir_lock`.
        if dr.slot.load(Ordering::Relaxed) == NO_SLOT {
            // SAFETY: `d` holds a reference on its parent.
            let mut kids = lock(&unsafe { parent.as_ref() }.children().kids);
            if !kids.push(d.0) {
                drop(kids);
                self.unhash(d.0);
                return false;
            }
        }
        let b = self.bucket(dr.hash_len.load(Ordering::Relaxed));
        let g = self.bucket_lock(b);
        if dr.flags.load(Ordering::Relaxed) & HASHED == 0 {
            return false;
        }
        dr.write_begin();
        let mut c = dr.count.load(Ordering::Relaxed);
        let sole = loop {
            if check && c & (REFS | DEAD) != 1 {
                break false;
            }
            // Release: a reference taken after this (its acquire reads
            // this value or a later one) sees the section open. Acquire:
            // we see what earlier holders did.
            match dr
                .count
                .compare_exchange(c, c, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break true,
                Err(seen) => c = seen,
            }
        };
        if !sole {
            dr.write_end();
            self.unhash_locked(b, d.0);
            return false;
        }
        // Only non-directories come here (unlink); read, not assumed.
        let was_dir = dr.mode_is_dir();
        dr.ino.store(0, Ordering::Relaxed);
        dr.mode.store(0, Ordering::Relaxed);
        dr.uid.store(0, Ordering::Relaxed);
        dr.gid.store(0, Ordering::Relaxed);
        // The inode's marks go with it: a negative dentry has none.
        dr.flags
            .fetch_and(!(NOLINK | DEADDIR | COMPLETE), Ordering::Relaxed);
        let inode = dr.inode.swap(ptr::null_mut(), Ordering::AcqRel);
        dr.write_end();
        drop(g);
        // The answer a path-cache entry gave for the name changed: the
        // count's write section above says it to every entry ending here
        // (no entry goes through a non-directory); without
        // `path_cache_dir_gen` the generation says it too.
        self.ns_changed_at(was_dir);
        if let Some(i) = NonNull::new(inode) {
            // SAFETY: the dentry held this reference, taken from this
            // cache; the swap above took it out, so it is dropped once.
            drop(unsafe { dr.sb.caches.icache.from_raw(i) });
        }
        true
    }

    /// Makes a negative dentry positive (`d_instantiate`), handing over one
    /// inode reference. The caller holds the parent's `dir_lock`.
    pub(crate) fn instantiate(&self, d: &DentryRef, inode: NonNull<Inode>, attr: &Attr) {
        // SAFETY: the caller holds a reference and serializes changes.
        unsafe { instantiate_raw(d, inode, attr) };
    }

    /// `d_move`: moves `d` (positive) to `new_parent`/`new_name`,
    /// rehashing it, inside one write section of the rename count (see
    /// `path`). The caller holds both parents' `dir_lock`s and references
    /// on everything.
    ///
    /// The moved dentry leaves its old parent's child list (if it was born
    /// negative, a created file) and joins none: it is positive, and
    /// `new_parent` cannot be a removed directory (the file system refused
    /// the rename into one).
    pub(crate) fn d_move(&self, d: &DentryRef, new_parent: &DentryRef, new_name: &[u8]) {
        // Made before the section (an out-of-line name allocates).
        let to = self.move_target(new_parent, new_name);
        let old_parent = {
            let _w = self.rename_write();
            self.move_locked(d, new_parent, to)
        };
        if let Some(p) = old_parent {
            dput(p);
        }
    }

    /// The hash and name word `d_move` gives a dentry moving to `name` in
    /// `parent`.
    fn move_target(&self, parent: &DentryRef, name: &[u8]) -> MoveTarget {
        MoveTarget {
            hash: name_hash(parent.0.as_ptr(), name),
            word: name_word(name, self.inline_max),
            len: name.len(),
        }
    }

    /// The move of `d_move` inside the caller's write section of the rename
    /// count; returns the old parent, whose reference the caller puts after
    /// the section.
    fn move_locked(
        &self,
        d: &DentryRef,
        new_parent: &DentryRef,
        to: MoveTarget,
    ) -> Option<NonNull<Dentry>> {
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
        d.write_begin();
        let np = new_parent.clone();
        let old_parent = d.parent.swap(np.0.as_ptr(), Ordering::AcqRel);
        std::mem::forget(np);
        // An inline name changes in place: readers read the length and
        // the word inside a read section of the count and retry or fall
        // back if this section overlapped (see `Dentry::with_name`). The
        // release publishes a new `Name` to a reader that loads the word
        // with an acquire.
        let old_hl = d.hash_len.load(Ordering::Relaxed);
        let old_word = d.name.swap(to.word, Ordering::AcqRel);
        d.hash_len
            .store(hash_len(to.hash, to.len), Ordering::Relaxed);
        d.write_end();
        self.hash_in(d.0, to.hash);
        // The move is complete and visible: a walk that reads the new
        // generation sees the new name (the unhash above counted too, but
        // before the dentry reached its new place).
        self.ns_changed();
        if hl_len(old_hl) > self.inline_max
            && let Some(n) = NonNull::new(name_ptr(old_word))
        {
            // SAFETY: the old name was out of line (its length says so)
            // and is unreachable now; pinned readers may still hold it,
            // so it goes after a grace period.
            unsafe { Name::defer_free(n) };
        }
        NonNull::new(old_parent)
    }

    /// `RENAME_EXCHANGE`: swaps the places of `a` (in `pa`) and `b` (in
    /// `pb`), keeping each's name slot; both moves in one write section of
    /// the rename count, so no `d_path` sees one done and not the other.
    pub(crate) fn d_exchange(
        &self,
        a: &DentryRef,
        a_name: &[u8],
        b: &DentryRef,
        b_name: &[u8],
        pa: &DentryRef,
        pb: &DentryRef,
    ) {
        let (to_a, to_b) = (self.move_target(pb, b_name), self.move_target(pa, a_name));
        let old = {
            let _w = self.rename_write();
            [self.move_locked(a, pb, to_a), self.move_locked(b, pa, to_b)]
        };
        for p in old.into_iter().flatten() {
            dput(p);
        }
    }
}

/// Where `d_move` puts a dentry: its new name's hash, name word and
/// length.
#[derive(Clone, Copy)]
struct MoveTarget {
    hash: u64,
    word: u64,
    len: usize,
}

/// What [`DentryCache::search_locked`] found.
pub(crate) enum Search {
    /// A live dentry, referenced.
    Hit(DentryRef),
    /// No live one; one hashed but dying.
    Dying,
    /// Neither.
    Miss,
}
