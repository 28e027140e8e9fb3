//! The placeholders' numbering (see "Numbering" in `state`): the cache of
//! closed placeholders, the mark below which every free number is cached
//! (`hole`), and the fd map's entries for them. The kernel is reached
//! only through [`Kernel`] (the shim's is raw syscalls, in `state`), so
//! this file is std only (atomics and the lock through the `sync` facade,
//! loom's under `--cfg loom`): `fuzz/fuzz_targets/preload_route.rs`
//! includes it as it is and drives it against a model kernel that hands
//! out the lowest free number, checking that every number the program gets
//! is the one Linux would give.
//!
//! ## The cache without a lock
//! The cache is one 64-bit word: a window of [`CACHE_MAX`] numbers (its
//! base a multiple of 8) with a bit per cached number, a flag set while a
//! flush closes numbers it took out, and a tag bumped by every change. A
//! uvfs open claims the lowest cached number with one compare-and-swap;
//! a uvfs close puts its number back with one. The lock is taken only to
//! open a fresh placeholder (after a flush) and by `uncache`.
//!
//! Why a claim gives Linux's number: it reads the word, then the mark,
//! then swaps the word from what it read. The swap succeeds only if the
//! word did not change in between (the tag makes a change and a change
//! back a change), so at the moment the mark was read the cache was
//! exactly that word, and its lowest number lay below the mark: it was the
//! lowest free number then, and nobody else could take it before the swap.
//! A flush lowers the mark to its lowest number before it takes the
//! numbers out of the word (in one swap), so a number is always either in
//! the word or at or above the mark; the flag then tells every kernel call
//! that makes an fd to wait (on the lock) until the numbers are closed.

use crate::fdmap::FdMap;
use crate::sync::SpinLock;
use crate::sync::atomic::{AtomicU64, Ordering};

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
/// as this), and the width of its window: numbers from the window's base
/// (a multiple of 8, set by the first number cached into an empty cache,
/// 8 to 15 below it) to 23 above the base. A closed uvfs fd outside the
/// window is closed.
pub(crate) const CACHE_MAX: usize = 24;

/// The word's bits for the window's numbers.
const BITS: u64 = (1 << CACHE_MAX) - 1;
/// Set while a flush closes the numbers it took out of the word.
const FLUSHING: u64 = 1 << CACHE_MAX;
/// Where the window's base (divided by 8) sits, and its width: 17 bits,
/// every base below 1 Mi (the fd map's numbers).
const BASE_SHIFT: u32 = 25;
const BASE_MASK: u64 = (1 << 17) - 1;
/// The lowest number that cannot be a window's base.
const NUMBERS: i32 = 1 << 20;
/// One step of the tag (the word's top 22 bits).
const TAG_ONE: u64 = 1 << 42;

/// The window's first number.
fn base_of(w: u64) -> i32 {
    (((w >> BASE_SHIFT) & BASE_MASK) * 8) as i32
}

/// The lowest cached number of word `w`.
fn lowest_of(w: u64) -> Option<i32> {
    let b = w & BITS;
    (b != 0).then(|| base_of(w) + b.trailing_zeros() as i32)
}

/// The cached numbers of word `w`, lowest first.
fn numbers_of(w: u64) -> impl Iterator<Item = i32> {
    let base = base_of(w);
    (0..CACHE_MAX as i32)
        .filter(move |i| w & (1 << i) != 0)
        .map(move |i| base + i)
}

/// Word `w`'s bit for `k`, if `k` lies in its window.
fn bit_of(w: u64, k: i32) -> Option<u64> {
    let i = k.checked_sub(base_of(w))?;
    (0..CACHE_MAX as i32).contains(&i).then(|| 1 << i)
}

/// Asks for `a`'s cache line in the state a write needs (x86's
/// `prefetchw`): the load that precedes a compare-and-swap would otherwise
/// fetch the line shared, and the swap fetch it again, exclusive, from the
/// CPU that wrote it last.
#[inline(always)]
fn prefetch_for_write(a: &AtomicU64) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: a prefetch is a hint: it changes no register, flag or
    // memory the program sees and cannot fault, whatever the address (a
    // CPU without `prefetchw` runs its encoding as a no-op).
    unsafe {
        std::arch::asm!(
            "prefetchw [{0}]",
            in(reg) std::ptr::from_ref(a),
            options(nostack, preserves_flags, readonly)
        );
    }
    #[cfg(any(not(target_arch = "x86_64"), loom))]
    let _ = a;
}

/// The cache's word, the mark, and the lock of the slow path. On cache
/// lines of their own (128 bytes: the line and the one the hardware
/// prefetches with it): threads' opens and closes write the word, and
/// statics laid out beside it (the prefix, read by every path call) would
/// move with every write.
#[repr(C, align(128))]
pub(crate) struct Numbering {
    /// The cache (see the module's text): read without the lock by every
    /// kernel call that makes an fd (no number and no flush: nothing to
    /// flush).
    word: AtomicU64,
    /// The lowest fd number that may be free in the kernel without being
    /// cached (low 32 bits), with a generation (high 32 bits) bumped by
    /// every lowering so a raise based on a stale reading fails.
    hole: AtomicU64,
    /// Taken to open a fresh placeholder (so the mark is raised by one
    /// thread at a time), for a flush, and by `uncache`.
    lock: SpinLock<()>,
}

/// The mark's number (the low 31 bits of the hole word).
fn hole_of(h: u64) -> i32 {
    (h & HOLE_MASK) as i32
}

const HOLE_MASK: u64 = 0x7fff_ffff;
/// Set in the hole word while a fresh placeholder open is under way: a
/// close then bumps the generation even when its number is not below the
/// mark, so the raise (based on the kernel's answer before that close)
/// fails.
const RAISING: u64 = 1 << 31;
/// One step of the hole word's generation.
const GEN_ONE: u64 = 1 << 32;

impl Numbering {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Numbering {
        Numbering {
            word: AtomicU64::new(0),
            hole: AtomicU64::new(0),
            lock: SpinLock::new(()),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Numbering {
        Numbering {
            word: AtomicU64::new(0),
            hole: AtomicU64::new(0),
            lock: SpinLock::new(()),
        }
    }

    /// How many placeholders are cached, plus one while a flush closes the
    /// ones it took (lock-free; 0: nothing to flush).
    #[inline]
    pub(crate) fn cached(&self) -> usize {
        let w = self.word.load(Ordering::Acquire);
        (w & BITS).count_ones() as usize + usize::from(w & FLUSHING != 0)
    }

    /// The mark: the lowest number that may be free in the kernel without
    /// being cached.
    pub(crate) fn hole(&self) -> i32 {
        hole_of(self.hole.load(Ordering::Acquire))
    }

    /// Records that number `k` may now be free in the kernel (called after
    /// the number is freed: by an interposed kernel close, or the shim's
    /// own). Lock-free; a plain load when `k` is not below the mark and no
    /// fresh placeholder open is under way.
    pub(crate) fn hole_lower(&self, k: i32) {
        if k < 0 {
            return;
        }
        let mut h = self.hole.load(Ordering::Acquire);
        while k < hole_of(h) || h & RAISING != 0 {
            // A new generation (the raise under way fails), the mark at
            // most `k`, the flag kept (the raiser clears it).
            let low = u64::from(k.min(hole_of(h)) as u32);
            let new = ((h | (GEN_ONE - 1)).wrapping_add(1)) | (h & RAISING) | low;
            match self
                .hole
                .compare_exchange_weak(h, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(cur) => h = cur,
            }
        }
    }

    /// Starts a raise: sets the flag (every close from now on bumps the
    /// generation) and returns the word to raise from.
    fn raise_begin(&self) -> u64 {
        self.hole.fetch_or(RAISING, Ordering::AcqRel) | RAISING
    }

    /// Ends a raise: the mark to `to` (flag cleared) if the hole word is
    /// still `from` (no close since `raise_begin`, no other raise), else
    /// the mark kept and the flag cleared. `None`: the open failed.
    fn raise_end(&self, from: u64, to: Option<i32>) {
        if let Some(to) = to {
            let new = (from & !(HOLE_MASK | RAISING)) | u64::from(to as u32);
            if self
                .hole
                .compare_exchange(from, new, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
        self.hole.fetch_and(!RAISING, Ordering::AcqRel);
    }

    /// Changes the word to `f(w)` (its fields; the tag is bumped here),
    /// `f` seeing the word as it is just before the change; `None` from `f`
    /// leaves it. One compare-and-swap, again while another thread changed
    /// the word first; a plain store when `solo` (no other thread changes
    /// the word, and a signal handler never does: every change runs inside
    /// the shim's re-entry guard). The word `f` accepted, if any.
    #[inline]
    fn update(&self, solo: bool, mut f: impl FnMut(u64) -> Option<u64>) -> Option<u64> {
        if !solo {
            prefetch_for_write(&self.word);
        }
        let mut w = self.word.load(Ordering::Acquire);
        loop {
            let new = ((w | (TAG_ONE - 1)).wrapping_add(1)) | (f(w)? & (TAG_ONE - 1));
            if solo {
                self.word.store(new, Ordering::Release);
                return Some(w);
            }
            match self
                .word
                .compare_exchange_weak(w, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(w),
                Err(cur) => w = cur,
            }
        }
    }

    /// Takes the lowest cached number if it lies below the mark.
    #[inline]
    fn claim(&self, solo: bool) -> Option<i32> {
        let mut c = 0;
        self.update(solo, |w| {
            c = lowest_of(w)?;
            // The mark, read after the word: the swap checks the word did
            // not change since (see the module's text).
            (c < self.hole()).then(|| w & !(1 << (c - base_of(w))))
        })?;
        Some(c)
    }

    /// A new placeholder for an fd the program will see: the lowest cached
    /// number when it is the lowest free one, else (the cache flushed) a
    /// fresh one at the kernel's lowest free number. `max`: the cache's
    /// size (`UVFS_FD_CACHE`; 0, no cache and no lock); `solo`: no other
    /// thread uses the numbering (`State::solo`): no lock, no atomic
    /// read-modify-write on the cache.
    pub(crate) fn placeholder<K: Kernel>(
        &self,
        kern: &mut K,
        map: &FdMap,
        max: usize,
        solo: bool,
    ) -> Result<i32, K::Error> {
        if max == 0 {
            // No cache: the mark is only ever raised from a fresh open and
            // lowered by closes, both atomic.
            return self.fresh(kern);
        }
        if let Some(c) = self.claim(solo) {
            return Ok(c);
        }
        let _lock = self.lock.lock_unless(solo);
        if let Some(c) = self.claim(solo) {
            return Ok(c);
        }
        self.flush_locked(kern, map, solo);
        self.fresh(kern)
    }

    /// `/dev/null` opened afresh; the mark raised past it.
    fn fresh<K: Kernel>(&self, kern: &mut K) -> Result<i32, K::Error> {
        let h = self.raise_begin();
        let fd = kern.open_placeholder();
        // The kernel gave the lowest free number: everything below it is
        // taken (cached placeholders are open too), unless a close raced
        // in since the flag was set, which the failed exchange then keeps.
        self.raise_end(
            h,
            fd.as_ref().ok().map(|fd| fd.saturating_add(1).min(NUMBERS)),
        );
        fd
    }

    /// Forgets `k` and releases its placeholder: to the cache when there is
    /// room, `k` lies in the window and below the mark (else it could never
    /// be handed out before a flush), otherwise closed.
    pub(crate) fn release<K: Kernel>(
        &self,
        kern: &mut K,
        map: &FdMap,
        k: i32,
        max: usize,
        solo: bool,
    ) {
        if max > 0 && (0..NUMBERS).contains(&k) {
            let room = max.min(CACHE_MAX) as u32;
            // Stale before it is published: a claim's map entry comes after.
            map.set(k, -1);
            let cached = self.update(solo, |w| {
                if k >= self.hole() || (w & BITS).count_ones() >= room {
                    return None;
                }
                let w = if w & BITS == 0 {
                    // An empty window moves to the number: 8 to 15 below
                    // it, the rest above.
                    (w & FLUSHING) | ((k as u64 / 8).saturating_sub(1) << BASE_SHIFT)
                } else {
                    w
                };
                Some(w | bit_of(w, k)?)
            });
            if cached.is_some() {
                return;
            }
        }
        map.set(k, 0);
        kern.close_placeholder(k);
        self.hole_lower(k);
    }

    /// Removes `k` from the cache (its number is being reused in place);
    /// whether it was there. Under the lock, so never while a flush is
    /// closing the numbers it took out.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn uncache(&self, k: i32, solo: bool) -> bool {
        if self.cached() == 0 {
            return false;
        }
        let _lock = self.lock.lock_unless(solo);
        self.update(solo, |w| {
            let b = bit_of(w, k).filter(|b| w & b != 0)?;
            Some(w & !b)
        })
        .is_some()
    }

    /// Closes every cached placeholder: the kernel then sees exactly the
    /// free numbers the program does.
    pub(crate) fn flush<K: Kernel>(&self, kern: &mut K, map: &FdMap, solo: bool) {
        if self.cached() != 0 {
            let _lock = self.lock.lock_unless(solo);
            self.flush_locked(kern, map, solo);
        }
    }

    /// Closes every cached placeholder (the lock held, or `solo`): the mark
    /// lowered to the lowest, then the numbers taken out of the word in one
    /// swap that sets the flag, closed, and the flag cleared.
    fn flush_locked<K: Kernel>(&self, kern: &mut K, map: &FdMap, solo: bool) {
        let Some(old) = self.update(solo, |w| {
            // Before the numbers leave the word: a number is always cached
            // or at or above the mark. Only the lock's holder raises it.
            self.hole_lower(lowest_of(w)?);
            Some((w & !BITS) | FLUSHING)
        }) else {
            return;
        };
        for k in numbers_of(old) {
            map.set(k, 0);
            kern.close_placeholder(k);
        }
        self.update(solo, |w| Some(w & !FLUSHING));
    }

    /// Forgets every cached number without closing anything (see
    /// `state::forget_all_fds`).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn forget_cache(&self) {
        let _lock = self.lock.lock();
        self.update(false, |_| Some(0));
    }

    /// The cached numbers, lowest first (for checks).
    #[cfg_attr(not(any(fuzzing, test)), allow(dead_code))]
    pub(crate) fn cached_numbers(&self) -> Vec<i32> {
        numbers_of(self.word.load(Ordering::Acquire)).collect()
    }
}

/// The tests' and models' kernel: it hands out the lowest free number
/// from the set of open numbers behind `M` (a reference or an `Arc` of the
/// facade's `Mutex`), shared by threads.
#[cfg(test)]
#[derive(Clone)]
struct LowestFree<M>(M);

#[cfg(test)]
impl<M> Kernel for LowestFree<M>
where
    M: std::ops::Deref<Target = crate::sync::Mutex<std::collections::BTreeSet<i32>>>,
{
    type Error = ();
    fn open_placeholder(&mut self) -> Result<i32, ()> {
        let mut open = self.0.lock().unwrap();
        let k = (0..).find(|n| !open.contains(n)).ok_or(())?;
        open.insert(k);
        Ok(k)
    }
    fn close_placeholder(&mut self, k: i32) {
        assert!(
            self.0.lock().unwrap().remove(&k),
            "closed {k}, not open (closed twice?)"
        );
    }
}

#[cfg(all(test, loom))]
#[path = "numbering/loom_tests.rs"]
mod loom_tests;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{
        BITS, FLUSHING, Kernel, LowestFree, Numbering, RAISING, TAG_ONE, base_of, hole_of,
        lowest_of, numbers_of,
    };
    use crate::fdmap::FdMap;
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicI32, Ordering};

    #[test]
    fn the_word_and_the_mark_share_a_line_of_their_own() {
        assert_eq!(std::mem::size_of::<Numbering>(), 128);
        assert_eq!(std::mem::align_of::<Numbering>(), 128);
        assert_eq!(std::mem::offset_of!(Numbering, word), 0);
        assert_eq!(std::mem::offset_of!(Numbering, hole), 8);
    }

    #[test]
    fn the_word_packs_a_window_a_flag_and_a_tag() {
        let w = (5 << super::BASE_SHIFT) | 0b1010_0000 | FLUSHING | (3 * TAG_ONE);
        assert_eq!(base_of(w), 40);
        assert_eq!(lowest_of(w), Some(45));
        assert_eq!(numbers_of(w).collect::<Vec<_>>(), [45, 47]);
        assert_eq!(lowest_of(w & !BITS), None);
        // The highest base fits.
        let top = super::BASE_MASK << super::BASE_SHIFT;
        assert_eq!(base_of(top) + 8, super::NUMBERS);
        assert_eq!(top & (BITS | FLUSHING | !(TAG_ONE - 1)), 0);
    }

    #[test]
    fn claims_take_the_lowest_below_the_mark_and_the_window_moves() {
        let open = Mutex::new((0..3).collect::<BTreeSet<i32>>());
        let (n, map) = (Numbering::new(), FdMap::new());
        for solo in [false, true] {
            let mut k = LowestFree(&open);
            let got: Vec<i32> = (0..30)
                .map(|_| n.placeholder(&mut k, &map, 16, solo).unwrap())
                .collect();
            assert_eq!(got, (3..33).collect::<Vec<_>>());
            assert_eq!(n.hole(), 33);
            // Closed in an order that is not the numbers': 31 opens the
            // window at 16 (16..39); 5 and 4 lie outside it and are closed,
            // which lowers the mark to 4; 20 and 28 then lie above the mark
            // and are closed too.
            for c in [31, 30, 32, 5, 4, 20, 28] {
                n.release(&mut k, &map, c, 16, solo);
            }
            assert_eq!(n.cached_numbers(), [30, 31, 32]);
            assert_eq!(n.hole(), 4);
            // The mark (4) is below every cached number: the kernel's.
            assert_eq!(n.placeholder(&mut k, &map, 16, solo), Ok(4));
            assert_eq!(n.cached(), 0, "flushed");
            assert_eq!(n.hole(), 5);
            for want in [5, 20, 28, 30, 31, 32, 33] {
                assert_eq!(n.placeholder(&mut k, &map, 16, solo), Ok(want));
            }
            // Closed highest first: 33 opens the window at 24; 24..33 are
            // cached, 23 and below lie outside it.
            for c in (3..34).rev() {
                n.release(&mut k, &map, c, 16, solo);
            }
            assert_eq!(n.cached_numbers(), (24..34).collect::<Vec<_>>());
            assert_eq!(n.hole(), 3);
            assert!(n.uncache(24, solo));
            assert!(!n.uncache(24, solo));
            n.flush(&mut k, &map, solo);
            assert_eq!(n.cached(), 0);
            // 24 was taken back (reused in place): still open.
            assert_eq!(*open.lock().unwrap(), [0, 1, 2, 24].into());
            k.close_placeholder(24);
            n.hole_lower(24);
            assert!(!n.uncache(3, solo));
        }
    }

    #[test]
    fn hole_mark_lowers_and_raises_only_from_a_fresh_reading() {
        let n = Numbering::new();
        let raise = |to| {
            let h = n.raise_begin();
            n.raise_end(h, Some(to));
        };
        raise(10);
        assert_eq!(n.hole(), 10);
        // A close between the reading and the raise wins: the raise based
        // on the stale reading fails, even when the lowering left the same
        // number.
        let h1 = n.raise_begin();
        n.hole_lower(4);
        n.raise_end(h1, Some(12));
        assert_eq!(n.hole(), 4);
        raise(7);
        let h3 = n.hole.load(Ordering::Acquire);
        assert_eq!(h3 & RAISING, 0);
        n.hole_lower(7); // not below the mark: no change, no new generation
        assert_eq!(n.hole.load(Ordering::Acquire), h3);
        n.hole_lower(-1);
        assert_eq!(n.hole.load(Ordering::Acquire), h3);
        // While a raise is under way, a close above the mark still makes
        // it fail (the kernel's answer predates the close).
        let h4 = n.raise_begin();
        n.hole_lower(8);
        n.raise_end(h4, Some(9));
        assert_eq!(n.hole(), 7);
        assert_eq!(n.hole.load(Ordering::Acquire) & RAISING, 0);
        // A failed open clears the flag.
        let h5 = n.raise_begin();
        n.raise_end(h5, None);
        assert_eq!(n.hole.load(Ordering::Acquire) & RAISING, 0);
        assert_eq!(hole_of(n.hole.load(Ordering::Acquire)), 7);
    }

    /// Stress: threads open and close uvfs fds and kernel fds through the
    /// numbering (kernel fds after a flush, as the shim does) on a shared
    /// model kernel. Every number must have one owner at a time (a claim
    /// marks it, a release unmarks it: a second owner finds the mark), and
    /// at the end the kernel must hold exactly the cached numbers.
    #[test]
    fn stress_no_number_has_two_owners_or_is_lost() {
        const THREADS: usize = 4;
        const ROUNDS: usize = 1_000_000;
        let open = Mutex::new((0..3).collect::<BTreeSet<i32>>());
        let (n, map) = (Numbering::new(), FdMap::new());
        let owner: Vec<AtomicI32> = (0..64).map(|_| AtomicI32::new(-1)).collect();
        let start = std::sync::Barrier::new(THREADS);
        std::thread::scope(|s| {
            for t in 0..THREADS as i32 {
                let (n, map, owner, open, start) = (&n, &map, &owner, &open, &start);
                s.spawn(move || {
                    let mut k = LowestFree(open);
                    start.wait();
                    let mut held = Vec::new();
                    for r in 0..ROUNDS {
                        if t == 0 && r % 7 == 0 {
                            // A kernel fd: flush, open, close.
                            n.flush(&mut k, map, false);
                            let fd = k.open_placeholder().unwrap();
                            let was = owner[fd as usize].swap(t, Ordering::AcqRel);
                            assert_eq!(was, -1, "kernel fd {fd} already owned by {was}");
                            owner[fd as usize].store(-1, Ordering::Release);
                            k.close_placeholder(fd);
                            n.hole_lower(fd);
                            continue;
                        }
                        let fd = n.placeholder(&mut k, map, 16, false).unwrap();
                        let was = owner[fd as usize].swap(t, Ordering::AcqRel);
                        assert_eq!(was, -1, "{fd} handed to {t} while {was} held it");
                        map.set(fd, 1);
                        held.push(fd);
                        if held.len() > r % 3 {
                            let fd = held.remove(0);
                            owner[fd as usize].store(-1, Ordering::Release);
                            n.release(&mut k, map, fd, 16, false);
                        }
                    }
                    for fd in held {
                        owner[fd as usize].store(-1, Ordering::Release);
                        n.release(&mut k, map, fd, 16, false);
                    }
                });
            }
        });
        let cached: BTreeSet<i32> = n.cached_numbers().into_iter().collect();
        let kernel: BTreeSet<i32> = open
            .lock()
            .unwrap()
            .iter()
            .copied()
            .filter(|&k| k > 2)
            .collect();
        assert_eq!(
            kernel, cached,
            "every open placeholder is cached, none lost"
        );
        assert!(
            (0..n.hole()).all(|k| open.lock().unwrap().contains(&k)),
            "a number below the mark is free"
        );
    }
}
