//! The placeholders' numbering (see "Numbering" in `state`): the cache of
//! closed placeholders, the mark below which every free number is cached
//! (`hole`), and the fd map's entries for them. The kernel is reached
//! only through [`Kernel`] (the shim's is raw syscalls, in `state`), so
//! this file is std only: `fuzz/fuzz_targets/preload_route.rs` includes it
//! as it is and drives it against a model kernel that hands out the lowest
//! free number, checking that every number the program gets is the one
//! Linux would give.

use crate::fdmap::FdMap;
use crate::sync::SpinLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// What the numbering asks of the kernel.
pub(crate) trait Kernel {
    /// Why a placeholder could not be opened (`EMFILE`, `ENFILE`).
    type Error;
    /// Opens a new placeholder (`/dev/null`, close-on-exec): the kernel
    /// gives the lowest free number.
    fn open_placeholder(&mut self) -> Result<i32, Self::Error>;
    /// Closes placeholder `k` (the shim's own fd).
    fn close_placeholder(&mut self, k: i32);
}

/// The most placeholders the cache holds (`UVFS_FD_CACHE` above it counts
/// as this): the cache lives inline, beside its lock, so that taking the
/// lock and reading the lowest cached number touch the same cache line.
/// (A `Vec`'s buffer was a line of its own, which moved between CPUs on
/// every open and close when threads of different CPUs used uvfs.)
pub(crate) const CACHE_MAX: usize = 24;

/// Cached numbers, highest first (the lowest is popped), inline; the
/// count first (`repr(C)`), then the numbers, so a cache of a few numbers
/// sits on the lock's cache line.
#[repr(C)]
pub(crate) struct Cache {
    len: usize,
    v: [i32; CACHE_MAX],
}

impl Cache {
    const fn new() -> Cache {
        Cache {
            len: 0,
            v: [0; CACHE_MAX],
        }
    }

    /// The lowest number, removed.
    fn pop(&mut self) -> Option<i32> {
        let n = self.len.checked_sub(1)?;
        self.len = n;
        Some(self.v[n])
    }

    /// Inserts `k` where the order (highest first) puts it, if there is
    /// room; whether it was inserted.
    fn insert(&mut self, k: i32) -> bool {
        if self.len == CACHE_MAX {
            return false;
        }
        let i = self.partition_point(|&x| x > k);
        self.v.copy_within(i..self.len, i + 1);
        self.v[i] = k;
        self.len += 1;
        true
    }

    /// Removes `k`; whether it was there.
    fn remove(&mut self, k: i32) -> bool {
        let Some(i) = self.iter().position(|&x| x == k) else {
            return false;
        };
        self.v.copy_within(i + 1..self.len, i);
        self.len -= 1;
        true
    }

    /// Empties the cache.
    fn clear(&mut self) {
        self.len = 0;
    }
}

impl std::ops::Deref for Cache {
    type Target = [i32];
    fn deref(&self) -> &[i32] {
        &self.v[..self.len]
    }
}

/// The cache and the mark. On cache lines of their own (128 bytes: the
/// line and the one the hardware prefetches with it), the counters first
/// and the lock with the lowest cached numbers right after them: threads'
/// opens and closes write them under the lock, and statics laid out beside
/// them (the prefix, read by every path call) moved with every write.
#[repr(C, align(128))]
pub(crate) struct Numbering {
    /// How many placeholders are cached: read without the lock by every
    /// kernel call that makes an fd (0: nothing to flush).
    cached: AtomicUsize,
    /// The lowest fd number that may be free in the kernel without being
    /// cached (low 32 bits), with a generation (high 32 bits) bumped by
    /// every lowering so a raise based on a stale reading fails.
    hole: AtomicU64,
    /// Closed placeholders kept for reuse, highest first (the lowest is
    /// popped).
    pool: SpinLock<Cache>,
}

fn hole_of(h: u64) -> i32 {
    h as u32 as i32
}

impl Numbering {
    pub(crate) const fn new() -> Numbering {
        Numbering {
            cached: AtomicUsize::new(0),
            hole: AtomicU64::new(0),
            pool: SpinLock::new(Cache::new()),
        }
    }

    /// How many placeholders are cached (lock-free).
    #[inline]
    pub(crate) fn cached(&self) -> usize {
        self.cached.load(Ordering::Acquire)
    }

    /// The mark: the lowest number that may be free in the kernel without
    /// being cached.
    pub(crate) fn hole(&self) -> i32 {
        hole_of(self.hole.load(Ordering::Acquire))
    }

    /// Records that number `k` may now be free in the kernel (called after
    /// the number is freed: by an interposed kernel close, or the shim's
    /// own). Lock-free; a plain load when `k` is not below the mark.
    pub(crate) fn hole_lower(&self, k: i32) {
        if k < 0 {
            return;
        }
        let mut h = self.hole.load(Ordering::Acquire);
        while k < hole_of(h) {
            let new = (((h >> 32) + 1) << 32) | u64::from(k as u32);
            match self
                .hole
                .compare_exchange_weak(h, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(cur) => h = cur,
            }
        }
    }

    /// Raises the mark to `to` if it is still `from` (same generation).
    fn hole_raise(&self, from: u64, to: i32) {
        let new = (from & !0xffff_ffff) | u64::from(to as u32);
        let _ = self
            .hole
            .compare_exchange(from, new, Ordering::AcqRel, Ordering::Relaxed);
    }

    /// A new placeholder for an fd the program will see: the lowest cached
    /// number when it is the lowest free one, else (the cache flushed) a
    /// fresh one at the kernel's lowest free number. `max`: the cache's
    /// size (`UVFS_FD_CACHE`; 0, no cache and no lock); `solo`: the caller
    /// may skip the cache's lock (`State::solo`).
    pub(crate) fn placeholder<K: Kernel>(
        &self,
        kern: &mut K,
        map: &FdMap,
        max: usize,
        solo: bool,
    ) -> Result<i32, K::Error> {
        // The cache and the mark move together: under the cache's lock
        // (none without a cache: then the mark is only ever raised from a
        // fresh open and lowered by closes, both atomic).
        let mut pool = (max > 0).then(|| self.pool.lock_unless(solo));
        if let Some(pool) = pool.as_mut() {
            let h = self.hole.load(Ordering::Acquire);
            if let Some(&c) = pool.last() {
                if c < hole_of(h) {
                    let _ = pool.pop();
                    self.cached.store(pool.len(), Ordering::Release);
                    return Ok(c);
                }
                self.flush_locked(kern, map, pool);
            }
        }
        let h = self.hole.load(Ordering::Acquire);
        let fd = kern.open_placeholder()?;
        // The kernel gave the lowest free number: everything below it is
        // taken (the cache is empty), unless a close raced in since `h`
        // was read, which the failed exchange then keeps.
        self.hole_raise(h, fd.saturating_add(1));
        drop(pool);
        Ok(fd)
    }

    /// Forgets `k` and releases its placeholder: to the cache when there is
    /// room and `k` lies below the mark (else it could never be handed out
    /// before a flush), otherwise closed.
    pub(crate) fn release<K: Kernel>(
        &self,
        kern: &mut K,
        map: &FdMap,
        k: i32,
        max: usize,
        solo: bool,
    ) {
        if max > 0 {
            let mut pool = self.pool.lock_unless(solo);
            if pool.len() < max.min(CACHE_MAX) && k < self.hole() {
                map.set(k, -1);
                pool.insert(k);
                self.cached.store(pool.len(), Ordering::Release);
                return;
            }
        }
        map.set(k, 0);
        kern.close_placeholder(k);
        self.hole_lower(k);
    }

    /// Removes `k` from the cache (its number is being reused in place);
    /// whether it was there.
    pub(crate) fn uncache(&self, k: i32, solo: bool) -> bool {
        if self.cached() == 0 {
            return false;
        }
        let mut pool = self.pool.lock_unless(solo);
        let found = pool.remove(k);
        if found {
            self.cached.store(pool.len(), Ordering::Release);
        }
        found
    }

    /// Closes every cached placeholder: the kernel then sees exactly the
    /// free numbers the program does.
    pub(crate) fn flush<K: Kernel>(&self, kern: &mut K, map: &FdMap, solo: bool) {
        if self.cached() != 0 {
            self.flush_locked(kern, map, &mut self.pool.lock_unless(solo));
        }
    }

    /// Closes every placeholder of the (locked) cache.
    fn flush_locked<K: Kernel>(&self, kern: &mut K, map: &FdMap, pool: &mut Cache) {
        let Some(&lowest) = pool.last() else {
            return;
        };
        for &k in pool.iter() {
            map.set(k, 0);
            kern.close_placeholder(k);
        }
        pool.clear();
        self.cached.store(0, Ordering::Release);
        self.hole_lower(lowest);
    }

    /// Forgets every cached number without closing anything (see
    /// `state::forget_all_fds`).
    pub(crate) fn forget_cache(&self) {
        self.pool.lock().clear();
        self.cached.store(0, Ordering::Release);
    }

    /// The cached numbers, lowest first (for checks).
    #[cfg_attr(not(fuzzing), allow(dead_code))]
    pub(crate) fn cached_numbers(&self) -> Vec<i32> {
        self.pool.lock().iter().rev().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{CACHE_MAX, Cache, Numbering, hole_of};
    use std::sync::atomic::Ordering;

    #[test]
    fn the_lock_and_the_first_numbers_share_a_line() {
        assert_eq!(std::mem::size_of::<Numbering>(), 128);
        assert_eq!(std::mem::align_of::<Numbering>(), 128);
        let n = Numbering::new();
        let base = std::ptr::from_ref(&n).addr();
        let lock = std::ptr::from_ref(&n.pool).addr() - base;
        // The lock's flag at 16, the count at 24, numbers from 32: eight
        // of them on the first 64 bytes.
        assert_eq!(lock, 16);
        assert!(std::mem::offset_of!(Cache, v) + lock + 4 * 8 <= 64);
    }

    #[test]
    fn cache_keeps_numbers_highest_first_and_stops_at_its_size() {
        let mut c = Cache::new();
        for k in [7, 3, 9, 5] {
            assert!(c.insert(k));
        }
        assert_eq!(&*c, &[9, 7, 5, 3]);
        assert!(!c.remove(4));
        assert!(c.remove(7));
        assert_eq!(&*c, &[9, 5, 3]);
        assert_eq!(c.pop(), Some(3));
        assert_eq!(c.pop(), Some(5));
        assert_eq!(&*c, &[9]);
        c.clear();
        assert_eq!(c.pop(), None);
        for k in 0..CACHE_MAX as i32 {
            assert!(c.insert(k));
        }
        assert!(!c.insert(100));
        assert_eq!(c.len(), CACHE_MAX);
        assert_eq!(c.last(), Some(&0));
        assert_eq!(c.first(), Some(&(CACHE_MAX as i32 - 1)));
    }

    #[test]
    fn hole_mark_lowers_and_raises_only_from_a_fresh_reading() {
        let n = Numbering::new();
        let h = || n.hole.load(Ordering::Acquire);
        let h0 = h();
        n.hole_raise(h0, 10);
        assert_eq!(hole_of(h()), 10);
        // A close between the reading and the raise wins: the raise based
        // on the stale reading fails, even when the lowering left the same
        // number.
        let h1 = h();
        n.hole_lower(4);
        n.hole_raise(h1, 12);
        assert_eq!(hole_of(h()), 4);
        let h2 = h();
        n.hole_raise(h2, 7);
        let h3 = h();
        n.hole_lower(7); // not below the mark: no change, no new generation
        assert_eq!(h(), h3);
        n.hole_lower(-1);
        assert_eq!(h(), h3);
        n.hole_lower(2);
        n.hole_raise(h3, 9);
        assert_eq!(hole_of(h()), 2);
    }
}
