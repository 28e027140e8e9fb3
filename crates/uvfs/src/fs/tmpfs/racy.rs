//! Copies into and out of pages that another thread may be copying at the
//! same moment (`FastPaths::lockless_read`: a reader without the inode's
//! lock against a writer holding it).
//!
//! Linux copies a page cache page with a plain `memcpy` while another task
//! may write it (`copy_page_to_iter` in `filemap_read` takes no lock that a
//! writer takes): a read racing an overwrite may return some old and some
//! new bytes, and the kernel's memory model calls that fine. Rust's does
//! not: two unsynchronised accesses to the same byte, one a write, are a
//! data race unless both are atomic. What both sides need is a copy that
//! counts as a sequence of relaxed byte-sized atomic accesses (the
//! "byte-wise atomic memcpy" of C++'s P1478 and Rust's RFC 3301, not yet
//! in either language).
//!
//! On x86-64 the copies here are `rep movsb` and `rep stosb` in inline
//! assembly. The compiler knows nothing of what an `asm!` block does with
//! memory beyond what it may reach, so it cannot assume the bytes are
//! stable or split the accesses into something else; on the machine every
//! byte moved is a single-copy-atomic access, and x86's ordering is at
//! least what relaxed atomics promise. So the block does exactly what a
//! loop of `AtomicU8` relaxed loads and stores would (the semantics Rust
//! gives an `asm!` block is that of some sequence of operations Rust code
//! could perform, and this is one), at `memcpy`'s speed: with fast short
//! `rep movsb` (ERMS, FSRM) a 4 KiB copy runs as glibc's does. Elsewhere,
//! and under Miri, loom and shuttle, the copies are that loop.
//!
//! Every access to the bytes of a page that a lockless reader may reach
//! goes through these functions while the page is reachable: the reader's
//! copy out, the writer's copy in, and the zeroing of a truncated page's
//! tail or a punched range. A page is written plainly only before it is
//! published in the index, and read plainly only under the inode's lock
//! (where no writer runs).

/// Copies `n` bytes from `src` to `dst`, each byte as a relaxed atomic
/// load from `src` and a relaxed atomic store to `dst`.
///
/// # Safety
/// `src` is valid for reads and `dst` for writes of `n` bytes, and the
/// ranges do not overlap; every access to either range that may run at
/// the same time as this copy is atomic (another call here, or an atomic
/// type's access).
#[inline]
pub(super) unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) {
    #[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
    // SAFETY: `rep movsb` copies `rcx` bytes from `rsi` to `rdi` forwards
    // (the direction flag is clear at every `asm!` entry); the caller
    // vouches for the ranges. It touches no stack and no flags.
    unsafe {
        std::arch::asm!(
            "rep movsb",
            inout("rcx") n => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            options(nostack, preserves_flags),
        );
    }
    #[cfg(not(all(target_arch = "x86_64", not(any(miri, loom, shuttle)))))]
    for i in 0..n {
        use std::sync::atomic::{AtomicU8, Ordering};
        // SAFETY: in bounds (the caller's ranges); a byte is always
        // aligned for `AtomicU8`, and every concurrent access is atomic.
        unsafe {
            let v = AtomicU8::from_ptr(src.add(i).cast_mut()).load(Ordering::Relaxed);
            AtomicU8::from_ptr(dst.add(i)).store(v, Ordering::Relaxed);
        }
    }
}

/// Zeroes `n` bytes at `dst`, each as a relaxed atomic store.
///
/// # Safety
/// `dst` is valid for writes of `n` bytes; every access to the range that
/// may run at the same time is atomic (as for [`copy`]).
#[inline]
pub(super) unsafe fn zero(dst: *mut u8, n: usize) {
    #[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
    // SAFETY: `rep stosb` stores `al` into `rcx` bytes from `rdi` forwards
    // (the direction flag is clear at every `asm!` entry); the caller
    // vouches for the range. It touches no stack and no flags.
    unsafe {
        std::arch::asm!(
            "rep stosb",
            inout("rcx") n => _,
            inout("rdi") dst => _,
            in("al") 0u8,
            options(nostack, preserves_flags),
        );
    }
    #[cfg(not(all(target_arch = "x86_64", not(any(miri, loom, shuttle)))))]
    for i in 0..n {
        use std::sync::atomic::{AtomicU8, Ordering};
        // SAFETY: in bounds; every concurrent access is atomic.
        unsafe { AtomicU8::from_ptr(dst.add(i)).store(0, Ordering::Relaxed) };
    }
}

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    #[test]
    fn copies_and_zeroes_exactly_the_range() {
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
        for (at, n) in [(0, 0), (0, 300), (3, 17), (1, 298)] {
            let mut dst = vec![0xeeu8; 302];
            // SAFETY: both ranges in bounds, nothing else touches them.
            unsafe { super::copy(dst.as_mut_ptr().add(1 + at), src.as_ptr().add(at), n) };
            assert_eq!(dst[0], 0xee);
            assert_eq!(&dst[1 + at..1 + at + n], &src[at..at + n]);
            assert!(dst[1 + at + n..].iter().all(|&b| b == 0xee));
            // SAFETY: in bounds.
            unsafe { super::zero(dst.as_mut_ptr().add(1 + at), n) };
            assert!(dst[1 + at..1 + at + n].iter().all(|&b| b == 0));
            assert_eq!(dst[1 + at + n], 0xee);
        }
    }
}
