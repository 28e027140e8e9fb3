//! Child lists and removed directories (`shrink_dcache_parent`): a
//! directory lists its children that were made negative, so that its rmdir
//! can prune them without scanning the cache (see the module's "Children
//! and removed directories").

use super::*;

impl Children {
    pub(super) fn new() -> Children {
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
    pub(super) fn push(&mut self, d: NonNull<Dentry>) -> bool {
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
    pub(super) fn remove(&mut self, d: &Dentry) {
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

impl DentryCache {
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
}
