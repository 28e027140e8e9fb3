//! The LRU of unused dentries and the shrinker (`prune_dcache_sb`): a
//! dentry joins the list at its first final put and stays on it while in
//! use; past the cache's limit the oldest unreferenced ones are killed.

use super::dput::kill;
use super::*;

impl DentryCache {
    /// Puts an unused dentry on the LRU (first final put).
    pub(super) fn lru_add(&self, d: NonNull<Dentry>) {
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
            let (_, tail) = self.lru.get();
            dr.lru.set((tail, ptr::null_mut()));
            if let Some(t) = NonNull::new(tail) {
                t.as_ref().lru.set_second(d.as_ptr());
            } else {
                self.lru.set_first(d.as_ptr());
            }
            self.lru.set_second(d.as_ptr());
        }
        self.lru_len.fetch_add(1, Ordering::Relaxed);
        drop(_g);
        self.shrink_to_limit();
    }

    /// # Safety
    /// The LRU lock is held and `d` is on the list.
    pub(super) unsafe fn lru_unlink(&self, d: NonNull<Dentry>) {
        // SAFETY: per the contract.
        unsafe {
            let dr = d.as_ref();
            if dr.flags.load(Ordering::Relaxed) & LRU == 0 {
                return;
            }
            let (prev, next) = dr.lru.get();
            match NonNull::new(prev) {
                Some(p) => p.as_ref().lru.set_second(next),
                None => self.lru.set_first(next),
            }
            match NonNull::new(next) {
                Some(n) => n.as_ref().lru.set_first(prev),
                None => self.lru.set_second(prev),
            }
            dr.lru.set((ptr::null_mut(), ptr::null_mut()));
            dr.flags.fetch_and(!(LRU | REFERENCED), Ordering::Relaxed);
            dr.count.fetch_and(!C_LRU, Ordering::Release);
        }
        self.lru_len.fetch_sub(1, Ordering::Relaxed);
    }

    pub(super) fn shrink_to_limit(&self) {
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
                let Some(d) = NonNull::new(unsafe { self.lru.get() }.0) else {
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
                        let (_, tail) = self.lru.get();
                        dr.lru.set((tail, ptr::null_mut()));
                        match NonNull::new(tail) {
                            Some(t) => t.as_ref().lru.set_second(d.as_ptr()),
                            None => self.lru.set_first(d.as_ptr()),
                        }
                        self.lru.set_second(d.as_ptr());
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
