//! The final put (`dput`) and the death of a dentry (`__dentry_kill`):
//! a dentry whose last reference goes either stays cached (on the LRU,
//! hashed, count zero) or dies, and its death puts its inode and its
//! parent, which may die in turn, from the leaves up.

use super::*;

/// Drops one reference (`dput`).
///
/// The common final put of a cached dentry takes no lock and no epoch pin:
/// when the count word says "one reference, hashed, on the LRU", one CAS to
/// "no reference, hashed, on the LRU" both drops the reference and proves
/// the dentry stays cached (an unhash or an LRU removal changes the word and
/// fails the CAS), and nothing touches the dentry after it.
pub(super) fn dput(d: NonNull<Dentry>) {
    // SAFETY: the caller owns a reference.
    let dr = unsafe { d.as_ref() };
    let mut c = dr.count.load(Ordering::Relaxed);
    loop {
        let last = c & REFS == 1;
        if last
            && (c & (C_HASHED | C_LRU) != C_HASHED | C_LRU
                || dr.sb.caches.dcache.shutdown.load(Ordering::Relaxed))
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
    let cache = &dr.sb.caches.dcache;
    let _pin = reclaim::pin_with(cache.cheap_pin());
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
pub(super) unsafe fn kill(d: NonNull<Dentry>) {
    let mut next = Some(d);
    while let Some(d) = next.take() {
        // SAFETY: per the contract (and the loop: parents are killed only
        // after winning their own DEAD transition below).
        let dr = unsafe { d.as_ref() };
        // Borrowed, not cloned (no count taken on the shared `Arc`): the
        // dentry, and with it its superblock's reference to the caches,
        // lives until `defer_free` below, after the last use.
        let caches = &dr.sb.caches;
        let cache = &caches.dcache;
        if dr.flags.load(Ordering::Acquire) & HASHED != 0 {
            // Evicted while its name exists: the parent is no longer
            // complete, from before the name leaves the hash (a lookup
            // that misses it then sees the flag cleared).
            if !dr.inode.load(Ordering::Acquire).is_null()
                && let Some(p) = NonNull::new(dr.parent.load(Ordering::Acquire))
            {
                // SAFETY: we hold the reference on the parent.
                unsafe { p.as_ref() }.clear_complete();
            }
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
        // An inline name needs nothing; an out-of-line one is retired.
        let name = if hl_len(dr.hash_len.load(Ordering::Relaxed)) > cache.inline_max {
            name_ptr(dr.name.load(Ordering::Acquire))
        } else {
            ptr::null_mut()
        };
        // A path cache entry may name this dentry: the generation moves
        // before the memory is retired, so a reader that still sees the
        // old generation was pinned before the retirement.
        cache.ns_changed();
        // SAFETY: the dentry is unreachable for new walkers (unhashed, no
        // references); pinned walkers may still read it, so both are freed
        // after a grace period (the dentry back to its cache's slab: see
        // `slab`).
        unsafe {
            if let Some(n) = NonNull::new(name) {
                Name::defer_free(n);
            }
            reclaim::defer_free(d);
        }
        // Drop the parent's reference; if it was the last and the parent
        // must die too, continue with it here instead of recursing.
        if let Some(p) = NonNull::new(parent) {
            next = dput_for_kill(p);
        }
    }
}

/// `dput` from `kill`: returns the parent when it must be killed too.
pub(super) fn dput_for_kill(p: NonNull<Dentry>) -> Option<NonNull<Dentry>> {
    // SAFETY: the child held a reference.
    let pr = unsafe { p.as_ref() };
    let c = pr.count.load(Ordering::Relaxed);
    let shut = pr.sb.caches.dcache.shutdown.load(Ordering::Acquire);
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
