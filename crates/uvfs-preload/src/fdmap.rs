//! The fd map: kernel fd number -> uvfs fd + 1 (0: not ours, -1: a cached
//! placeholder, closed as far as the program knows). std only, no syscall:
//! `fuzz/fuzz_targets/preload_route.rs` includes this file as it is and
//! checks it against a model.

use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

const CHUNK: usize = 1024;
const NCHUNKS: usize = 1024; // 1 Mi fds: Linux's default fs.nr_open

/// Kernel fd number → uvfs fd. Lock-free to read (every interposed fd call
/// on a kernel fd pays one lookup); written by the thread that owns the
/// number at that moment (it made the placeholder, or holds the cache's
/// lock), chunks published with a compare-exchange.
pub(crate) struct FdMap {
    chunks: [AtomicPtr<[AtomicI32; CHUNK]>; NCHUNKS],
    /// One past the highest number ever mapped (for close_range).
    pub(crate) hi: AtomicI32,
}

/// What an fd number is to the shim.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Fd {
    /// The kernel's (or nothing): pass through.
    Kernel,
    /// A cached placeholder the program closed: `EBADF`.
    Stale,
    /// A uvfs fd.
    Uvfs(i32),
}

/// Where number `i` of a chunk sits in it: consecutive numbers on
/// different cache lines (16 entries a line, 64 lines a chunk; `i` and
/// `i + 64` share one). Threads' fds are usually neighbours (3, 4, 5, 6),
/// and each open and close writes its own entry: side by side, every
/// thread's lookup missed on the line the others kept writing (a quarter
/// of `fd_call` in the 4-thread open1 loop's profile).
#[inline]
fn spread(i: usize) -> usize {
    (i % 64) * (CHUNK / 64) + i / 64
}

impl FdMap {
    /// An empty map (no chunk allocated).
    pub(crate) const fn new() -> FdMap {
        FdMap {
            chunks: [const { AtomicPtr::new(std::ptr::null_mut()) }; NCHUNKS],
            hi: AtomicI32::new(0),
        }
    }

    fn slot(&self, k: i32) -> Option<&AtomicI32> {
        let k = usize::try_from(k).ok()?;
        let c = self.chunks.get(k / CHUNK)?.load(Ordering::Acquire);
        // SAFETY: a published chunk is never freed (it lives as long as the
        // process) and was fully initialized before its Release store.
        unsafe { c.as_ref() }.map(|c| &c[spread(k % CHUNK)])
    }

    /// What `k` is (lock-free).
    #[inline]
    pub(crate) fn get(&self, k: i32) -> Fd {
        match self.slot(k).map(|s| s.load(Ordering::Acquire)) {
            None | Some(0) => Fd::Kernel,
            Some(-1) => Fd::Stale,
            Some(v) => Fd::Uvfs(v - 1),
        }
    }

    /// Sets `k`'s entry: 0 none, -1 stale, else uvfs fd + 1. A number
    /// outside `0..1 Mi` is never mapped (Linux's default `fs.nr_open`:
    /// the kernel hands out no such number).
    pub(crate) fn set(&self, k: i32, v: i32) {
        let Ok(ku) = usize::try_from(k) else { return };
        let Some(cp) = self.chunks.get(ku / CHUNK) else {
            return;
        };
        if cp.load(Ordering::Acquire).is_null() {
            if v == 0 {
                return;
            }
            let b = Box::into_raw(Box::new([const { AtomicI32::new(0) }; CHUNK]));
            if cp
                .compare_exchange(std::ptr::null_mut(), b, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // Another thread published this chunk first.
                // SAFETY: `b` was never published; this is its only owner.
                drop(unsafe { Box::from_raw(b) });
            }
        }
        if let Some(s) = self.slot(k) {
            s.store(v, Ordering::Release);
        }
        // A plain load first: the mark rarely moves, and the read-modify-write
        // is a locked instruction (a tenth of a dup under the shim).
        if v != 0 && self.hi.load(Ordering::Relaxed) <= k {
            self.hi.fetch_max(k + 1, Ordering::Relaxed);
        }
    }
}

impl Drop for FdMap {
    /// Frees the chunks (the process's map is a static and never dropped;
    /// a map of a test or the fuzz target is).
    fn drop(&mut self) {
        for c in &mut self.chunks {
            let p = std::mem::replace(c.get_mut(), std::ptr::null_mut());
            if !p.is_null() {
                // SAFETY: a published chunk came from `Box::into_raw` in
                // `set`, and `&mut self` means no reader holds a reference
                // into it.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CHUNK, Fd, FdMap, NCHUNKS};
    use std::sync::atomic::Ordering;

    #[test]
    fn spread_is_a_permutation_that_parts_neighbours() {
        let mut seen = vec![false; CHUNK];
        for i in 0..CHUNK {
            let p = super::spread(i);
            assert!(!std::mem::replace(&mut seen[p], true), "{i} -> {p} twice");
            if i > 0 {
                // 16 four-byte entries a 64-byte line.
                assert_ne!(p / 16, super::spread(i - 1) / 16, "{i}");
            }
        }
    }

    #[test]
    fn entries_across_chunks_and_out_of_range() {
        let m = FdMap::new();
        let last = (CHUNK * NCHUNKS - 1) as i32;
        for (k, v) in [(0, 1), (1023, 8), (1024, -1), (1025, 3), (last, 5)] {
            m.set(k, v);
        }
        assert_eq!(m.get(0), Fd::Uvfs(0));
        assert_eq!(m.get(1023), Fd::Uvfs(7));
        assert_eq!(m.get(1024), Fd::Stale);
        assert_eq!(m.get(1025), Fd::Uvfs(2));
        assert_eq!(m.get(last), Fd::Uvfs(4));
        assert_eq!(m.hi.load(Ordering::Relaxed), last + 1);
        // Never mapped, negative, or beyond the map: the kernel's.
        for k in [2, 1022, 1026, 5000, -1, -100, last + 1, i32::MAX] {
            assert_eq!(m.get(k), Fd::Kernel, "{k}");
        }
        m.set(last + 1, 9);
        m.set(-1, 9);
        assert_eq!(m.get(last + 1), Fd::Kernel);
        assert_eq!(m.get(-1), Fd::Kernel);
        // Clearing an entry of a chunk never allocated allocates nothing.
        m.set(70_000, 0);
        assert_eq!(m.get(70_000), Fd::Kernel);
        m.set(1023, 0);
        assert_eq!(m.get(1023), Fd::Kernel);
        // Dropped here: the chunks are freed (a leak shows under ASan).
    }
}
