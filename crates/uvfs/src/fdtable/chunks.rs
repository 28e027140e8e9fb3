//! The slot array and its growth (`fdtable` and `expand_files` of
//! `fs/file.c`): chunks of slots that never move, published before
//! `max_fds` covers them.

use super::bitmap::Bitmaps;
use super::slot::Slot;
use super::{FdTable, NR_OPEN_DEFAULT};
use crate::errno::Errno;
use crate::primitive::sync::atomic::Ordering;
use crate::uapi;

const BASE_SHIFT: u32 = NR_OPEN_DEFAULT.trailing_zeros();
/// Chunk pointers in a table: enough for 64 << 31 fds, far past `NR_OPEN`.
pub(super) const NR_CHUNKS: usize = 32;

/// The chunk holding `fd` and the offset in it: chunk 0 holds fds 0..64,
/// chunk k ≥ 1 holds 64<<(k-1) .. 64<<k. Branch-free.
#[inline(always)]
pub(super) fn chunk_of(fd: usize) -> (usize, usize) {
    let l = (fd | (NR_OPEN_DEFAULT - 1)).ilog2();
    let k = (l + 1 - BASE_SHIFT) as usize;
    let base = (1usize << l) & !(NR_OPEN_DEFAULT - 1);
    (k, fd - base)
}

/// `fd_slot_spread`'s rotation: the low three bits of an offset choose
/// one of eight cache lines (eight 8-byte slots to a 64-byte line).
pub(super) const SPREAD_SHIFT: u32 = 3;

/// Where offset `off` of a chunk of `1 << m` slots lives, for a rotation
/// `s` (0 or [`SPREAD_SHIFT`]): `off` rotated right by `s` within `m` bits,
/// so the low bits pick a stretch of `1 << (m - s)` slots (a cache line or
/// more) and offsets that differ only in them (consecutive fds) are never
/// on the same line; with `s` = 0, `off` itself. A permutation of
/// `0..1 << m`; branch-free.
#[inline(always)]
pub(super) fn spread_pos(off: usize, m: u32, s: u32) -> usize {
    ((off >> s) | (off << (m - s))) & ((1 << m) - 1)
}

/// Slots in chunk `k`.
pub(super) const fn chunk_len(k: usize) -> usize {
    if k == 0 {
        NR_OPEN_DEFAULT
    } else {
        NR_OPEN_DEFAULT << (k - 1)
    }
}

/// `Vec::try_reserve_exact` with its failure as `ENOMEM` (what Linux's
/// `expand_files` returns when it cannot allocate). Unit tests can make it
/// fail ([`alloc_fail`]).
pub(super) fn try_reserve<T>(v: &mut Vec<T>, n: usize) -> Result<(), Errno> {
    #[cfg(all(test, not(loom)))]
    if alloc_fail::now() {
        return Err(Errno::ENOMEM);
    }
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)
}

/// A test-only allocation-failure hook: `fail_nth(n)` makes the `n`th
/// following table allocation of this thread fail (1-based).
#[cfg(all(test, not(loom)))]
mod alloc_fail {
    use std::cell::Cell;

    // std's thread-local, not the facade's: a unit test's hook for its own
    // OS thread, not state any model is about (and loom builds leave it out).
    std::thread_local! {
        static COUNTDOWN: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn fail_nth(n: usize) {
        COUNTDOWN.with(|c| c.set(n));
    }

    pub(super) fn now() -> bool {
        COUNTDOWN.with(|c| match c.get() {
            0 => false,
            1 => {
                c.set(0);
                true
            }
            n => {
                c.set(n - 1);
                false
            }
        })
    }

    /// Whether the requested failure is still pending (not reached).
    pub(super) fn pending() -> bool {
        COUNTDOWN.with(|c| c.get() != 0)
    }
}

impl FdTable {
    /// The slot for `fd`.
    #[inline(always)]
    pub(super) fn slot(&self, fd: usize) -> &Slot {
        if fd < NR_OPEN_DEFAULT {
            // The first chunk (fds 0..63, what almost every call touches):
            // no chunk search, and a rotation within its six bits.
            let off = spread_pos(fd, BASE_SHIFT, self.spread);
            let chunk = self.chunks[0].load(Ordering::Acquire);
            #[cfg(loom)]
            assert!(!chunk.is_null(), "chunk 0 not published");
            debug_assert!(!chunk.is_null());
            // SAFETY: chunk 0 (64 slots) is published by `FdTable::new`,
            // before the table is shared, and lives as long as the table;
            // `off` < 64 (`spread_pos` permutes 0..64).
            return unsafe { &*chunk.add(off) };
        }
        let (k, off) = chunk_of(fd);
        // log2 of chunk k's length: 6 for chunks 0 and 1, then k + 5.
        let m = (k as u32 + BASE_SHIFT - 1).max(BASE_SHIFT);
        let off = spread_pos(off, m, self.spread);
        let chunk = self.chunks[k & (NR_CHUNKS - 1)].load(Ordering::Acquire);
        // Under loom a publication-order bug must fail the model, not crash it.
        #[cfg(loom)]
        assert!(
            !chunk.is_null() && off < chunk_len(k),
            "chunk {k} not published"
        );
        debug_assert!(!chunk.is_null() && off < chunk_len(k));
        // SAFETY: every caller passes an fd below a `max_fds` it loaded with
        // acquire (or read under the lock); chunks are published before
        // `max_fds` covers them and live as long as the table, and `off` is
        // within chunk `k` by construction of `chunk_of` and `spread_pos`
        // (a permutation of the chunk's offsets).
        unsafe { &*chunk.add(off) }
    }

    /// Slots currently allocated (`fdt->max_fds`).
    pub fn max_fds(&self) -> usize {
        self.max_fds.load(Ordering::Acquire)
    }

    /// Grows the table so that `nr` is a valid index (`expand_files`).
    /// All-or-nothing, as Linux's `expand_fdtable` (which allocates the new
    /// table first and keeps the old one on failure): every chunk and the
    /// bitmaps are allocated, fallibly, before anything changes, so an
    /// allocation failure returns `ENOMEM` with the table as it was, even
    /// when the growth spans several chunks.
    pub(super) fn expand_locked(&self, g: &mut Bitmaps, nr: usize) -> Result<(), Errno> {
        if nr < g.max_fds && g.max_fds != 0 {
            return Ok(());
        }
        if nr as u64 >= uapi::NR_OPEN {
            return Err(Errno::EMFILE);
        }
        let first = if g.max_fds == 0 {
            0
        } else {
            chunk_of(g.max_fds).0
        };
        let last = chunk_of(nr).0;
        let mut fresh: Vec<Vec<Slot>> = Vec::new();
        try_reserve(&mut fresh, last + 1 - first)?;
        for k in first..=last {
            let len = chunk_len(k);
            let mut chunk: Vec<Slot> = Vec::new();
            try_reserve(&mut chunk, len)?;
            chunk.extend((0..len).map(|_| Slot::new()));
            fresh.push(chunk);
        }
        let new_max = NR_OPEN_DEFAULT << last;
        g.grow(new_max)?;
        for (k, chunk) in (first..).zip(fresh) {
            // The capacity is exact: no reallocation here.
            let raw = Box::into_raw(chunk.into_boxed_slice()).cast::<Slot>();
            self.chunks[k].store(raw, Ordering::Release);
        }
        self.max_fds.store(new_max, Ordering::Release);
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::fastpaths::FastPaths;

    #[test]
    fn spread_is_a_permutation_that_separates_neighbours() {
        for k in 0..8 {
            let len = chunk_len(k);
            let m = len.trailing_zeros();
            assert_eq!(m, (k as u32 + BASE_SHIFT - 1).max(BASE_SHIFT));
            let mut seen = vec![false; len];
            for off in 0..len {
                assert_eq!(spread_pos(off, m, 0), off, "chunk {k}, identity off");
                let p = spread_pos(off, m, SPREAD_SHIFT);
                assert!(p < len && !seen[p], "chunk {k}: {off} -> {p}");
                seen[p] = true;
                // Eight slots of 8 bytes to a 64-byte line: the next eight
                // offsets are each on another line than this one.
                for d in 1..8 {
                    if off + d < len {
                        let q = spread_pos(off + d, m, SPREAD_SHIFT);
                        assert_ne!(p / 8, q / 8, "chunk {k}: {off} and {}", off + d);
                    }
                }
            }
        }
    }

    #[test]
    fn chunk_math() {
        assert_eq!(chunk_of(0), (0, 0));
        assert_eq!(chunk_of(63), (0, 63));
        assert_eq!(chunk_of(64), (1, 0));
        assert_eq!(chunk_of(127), (1, 63));
        assert_eq!(chunk_of(128), (2, 0));
        assert_eq!(chunk_of(255), (2, 127));
        assert_eq!(chunk_of(1 << 20), (15, 0));
        for fd in 0..5000usize {
            let (k, off) = chunk_of(fd);
            assert!(off < chunk_len(k), "fd {fd}");
            let start: usize = (0..k).map(chunk_len).sum();
            assert_eq!(start + off, fd);
        }
    }

    /// The table's observable state: size, open fds, close-on-exec bits.
    fn snapshot(t: &FdTable) -> (usize, Vec<u32>, Vec<bool>) {
        let open = t.open_fds();
        let cloexec = open.iter().map(|&fd| t.get_cloexec(fd as i32)).collect();
        (t.max_fds(), open, cloexec)
    }

    #[test]
    fn growth_failing_to_allocate_is_enomem_and_changes_nothing() {
        // Heap-allocated files (not the type-stable pool): `alloc_heap`.
        let fast = FastPaths {
            typesafe_files: false,
            ..FastPaths::seeds()
        };
        let t = FdTable::new(&fast).unwrap();
        // Fill the first chunk (64 fds), one of them close-on-exec.
        let mut fds = Vec::new();
        for i in 0..NR_OPEN_DEFAULT {
            let r = t.alloc_fd(0, 1 << 20, i == 7).unwrap();
            fds.push(
                r.install(crate::file_table::alloc_heap(crate::uapi::O_RDONLY, 0).unwrap())
                    .unwrap(),
            );
        }
        let before = snapshot(&t);
        assert_eq!(before.0, NR_OPEN_DEFAULT);
        // alloc_fd must grow to chunk 1: its chunk array, the chunk, then
        // the bitmaps are allocated. Fail each in turn.
        for n in 1..=3 {
            alloc_fail::fail_nth(n);
            assert_eq!(
                t.alloc_fd(0, 1 << 20, false).map(|r| r.fd()).err(),
                Some(Errno::ENOMEM),
                "allocation {n}"
            );
            assert!(!alloc_fail::pending(), "allocation {n} was reached");
            assert_eq!(snapshot(&t), before, "allocation {n}: state changed");
        }
        // dup2 to a far fd: a growth over many chunks; fail the last
        // allocation (the bitmaps) and one in the middle.
        let far = 5000;
        let chunks = chunk_of(far).0; // chunks 1..=chunks are added
        for n in [2, chunks / 2 + 1, chunks + 1, chunks + 2] {
            alloc_fail::fail_nth(n);
            assert_eq!(
                t.dup2(0, far as i32, 1 << 20),
                Err(Errno::ENOMEM),
                "dup2, allocation {n}"
            );
            assert!(!alloc_fail::pending(), "dup2: allocation {n} was reached");
            assert_eq!(snapshot(&t), before, "dup2, allocation {n}: state changed");
        }
        // Without the failure both succeed, and the table is usable.
        assert_eq!(t.dup2(0, far as i32, 1 << 20), Ok(far as u32));
        assert!(t.max_fds() > far);
        let r = t.alloc_fd(0, 1 << 20, false).unwrap();
        assert_eq!(r.fd() as usize, NR_OPEN_DEFAULT);
        drop(r);
        t.close_range(0, u32::MAX);
        assert!(t.open_fds().is_empty());
    }
}
