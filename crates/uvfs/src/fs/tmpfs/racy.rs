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
//! could perform, and this is one). A copy of 512 bytes or more, on a
//! processor with AVX2, moves its whole 128-byte blocks with 32-byte
//! vector loads and stores (with AVX-512F, its whole 256-byte blocks
//! first with 64-byte ones; with AVX-512BW, the whole copy with 64-byte
//! stores to aligned addresses and a masked head and tail), also in
//! inline assembly, and the rest with
//! `rep movsb`: each byte is still read and written once, and that is as
//! fast as glibc's `memcpy` (a 4 KiB `rep movsb` was not, on the lab's
//! AMD EPYC). Elsewhere, and under Miri, loom and shuttle, the copies are
//! that loop.
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
#[inline(always)]
pub(super) unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) {
    #[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
    if n >= WIDE_MIN
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx2")
    {
        // SAFETY: the processor has AVX-512F (implied by AVX-512BW),
        // AVX-512BW and AVX2 (checked above); `n >= WIDE_MIN >= 64`; the
        // caller vouches for the ranges and their concurrent accesses.
        unsafe { copy_zmm_aligned(dst, src, n) };
        return;
    }
    #[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
    let (dst, src, n) = if n >= WIDE_MIN && std::is_x86_feature_detected!("avx2") {
        let (dst, src, n) = if std::is_x86_feature_detected!("avx512f") {
            let wide = n & !(ZMM_BLOCK - 1);
            // SAFETY: the processor has AVX-512F and AVX2 (checked above);
            // `wide` (a nonzero multiple of `ZMM_BLOCK`, since `n >=
            // WIDE_MIN`) bytes from each start are within the caller's
            // ranges, which do not overlap, and every concurrent access to
            // them is atomic.
            unsafe { copy_zmm(dst, src, wide) };
            // SAFETY: `wide <= n`: still within the caller's ranges.
            unsafe { (dst.add(wide), src.add(wide), n - wide) }
        } else {
            (dst, src, n)
        };
        let wide = n & !(WIDE_BLOCK - 1);
        if wide != 0 {
            // SAFETY: the processor has AVX2 (checked above); `wide` bytes
            // from each start are within the caller's ranges, which do not
            // overlap, and every concurrent access to them is atomic.
            unsafe { copy_wide(dst, src, wide) };
        }
        // SAFETY: `wide <= n`: still within the caller's ranges.
        unsafe { (dst.add(wide), src.add(wide), n - wide) }
    } else {
        (dst, src, n)
    };
    // A `rep movsb` of no bytes still pays the instruction's start (a
    // page's copy ends with none left after the wide loop).
    #[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
    if n != 0 {
        // SAFETY: `rep movsb` copies `rcx` bytes from `rsi` to `rdi`
        // forwards (the direction flag is clear at every `asm!` entry);
        // the caller vouches for the ranges. It touches no stack and no
        // flags.
        unsafe {
            std::arch::asm!(
                "rep movsb",
                inout("rcx") n => _,
                inout("rdi") dst => _,
                inout("rsi") src => _,
                options(nostack, preserves_flags),
            );
        }
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

/// The block [`copy_wide`] moves per turn of its loop.
#[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
const WIDE_BLOCK: usize = 128;
/// The block [`copy_zmm`] moves per turn of its loop.
#[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
const ZMM_BLOCK: usize = 256;
/// The shortest copy [`copy`] gives to [`copy_wide`] (the rest of a
/// shorter one would be most of it).
#[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
const WIDE_MIN: usize = 512;

/// Copies `n` bytes (a multiple of [`WIDE_BLOCK`], not 0) with 32-byte
/// AVX loads and stores, four of each per turn. Measured on the lab's AMD
/// EPYC, a 4 KiB copy between a page and a buffer not aligned to 64 bytes
/// took about 45 ns with `rep movsb` and 25 to 38 ns this way, about
/// what glibc's `memcpy` does there. As with `rep movsb`, each byte is
/// read once and written once, and a byte is a single-copy-atomic access
/// whatever the width of the instruction that moves it, so the block is
/// again the same as a loop of relaxed byte-sized atomic loads and stores
/// (the module doc). `vzeroupper` at the end leaves the upper halves of
/// the vector registers clear, as code compiled without AVX expects.
///
/// # Safety
/// As [`copy`], with `n` a nonzero multiple of [`WIDE_BLOCK`]; and the
/// processor has AVX2.
#[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
#[target_feature(enable = "avx2")]
unsafe fn copy_wide(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n != 0 && n.is_multiple_of(WIDE_BLOCK));
    // SAFETY: the loop reads `n` bytes from `rsi` and writes `n` bytes to
    // `rdi`, 128 a turn, forwards, until `rcx` reaches 0 (a nonzero
    // multiple of 128: it ends there); the caller vouches for the ranges
    // and for AVX2. It touches no stack; the flags are declared clobbered
    // (no `preserves_flags`), and so are the vector registers it uses.
    unsafe {
        std::arch::asm!(
            "2:",
            "vmovdqu ymm0, [rsi]",
            "vmovdqu ymm1, [rsi + 32]",
            "vmovdqu ymm2, [rsi + 64]",
            "vmovdqu ymm3, [rsi + 96]",
            "vmovdqu [rdi], ymm0",
            "vmovdqu [rdi + 32], ymm1",
            "vmovdqu [rdi + 64], ymm2",
            "vmovdqu [rdi + 96], ymm3",
            "add rsi, 128",
            "add rdi, 128",
            "sub rcx, 128",
            "jnz 2b",
            "vzeroupper",
            inout("rcx") n => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            out("ymm0") _,
            out("ymm1") _,
            out("ymm2") _,
            out("ymm3") _,
            options(nostack),
        );
    }
}

/// Copies `n` bytes (a multiple of [`ZMM_BLOCK`], not 0) with 64-byte
/// AVX-512 loads and stores, four of each per turn: half the stores of
/// [`copy_wide`]. On the lab's AMD EPYC (Zen 5) a 4 KiB copy between a
/// page and a buffer at each of 256 offsets in turn took 20.8 ns from the
/// page and 18.9 ns into it, against 23.3 and 23.6 ns for `copy_wide` and
/// 29 to 46 ns for glibc's `memcpy` (a stand-alone loop, 2026-11-28
/// 12:31 UTC, load 4.6). The argument is `copy_wide`'s: each byte is read
/// once and written once, each a single-copy-atomic access. The
/// instructions are written out, with no `avx512f` target feature (stable
/// only after the workspace's Rust 1.88): the assembler takes them, and
/// the caller checked the processor. `clobber_abi("C")` declares every
/// vector register the calling convention lets a call change, all of
/// `zmm0`-`zmm3` included where the compiler itself uses AVX-512; the
/// function is never inlined into a caller (AVX2 target feature), so
/// that costs nothing. `vzeroupper` clears the upper halves, as for
/// `copy_wide`.
///
/// # Safety
/// As [`copy`], with `n` a nonzero multiple of [`ZMM_BLOCK`]; and the
/// processor has AVX-512F and AVX2.
#[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
#[target_feature(enable = "avx2")]
unsafe fn copy_zmm(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n != 0 && n.is_multiple_of(ZMM_BLOCK));
    // SAFETY: the loop reads `n` bytes from `rsi` and writes `n` bytes to
    // `rdi`, 256 a turn, forwards, until `rcx` reaches 0 (a nonzero
    // multiple of 256: it ends there); the caller vouches for the ranges
    // and for AVX-512F. It touches no stack; the flags and the vector
    // registers are declared clobbered (`clobber_abi`, no
    // `preserves_flags`).
    unsafe {
        std::arch::asm!(
            "2:",
            "vmovdqu64 zmm0, [rsi]",
            "vmovdqu64 zmm1, [rsi + 64]",
            "vmovdqu64 zmm2, [rsi + 128]",
            "vmovdqu64 zmm3, [rsi + 192]",
            "vmovdqu64 [rdi], zmm0",
            "vmovdqu64 [rdi + 64], zmm1",
            "vmovdqu64 [rdi + 128], zmm2",
            "vmovdqu64 [rdi + 192], zmm3",
            "add rsi, 256",
            "add rdi, 256",
            "sub rcx, 256",
            "jnz 2b",
            "vzeroupper",
            inout("rcx") n => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            clobber_abi("C"),
            options(nostack),
        );
    }
}

/// Copies `n` bytes (at least 64) with 64-byte AVX-512 loads and stores,
/// every store to a 64-byte-aligned address: the head up to the first
/// such address and the tail past the last whole 64 bytes are one masked
/// load and one masked store each (`vmovdqu8` under a byte mask, which
/// touches no byte outside the mask), the rest whole aligned 64-byte
/// stores, four a turn while 256 bytes are left, then one a turn. A
/// 64-byte store to an address not a multiple of 64 writes two cache
/// lines; [`copy_zmm`]'s are such stores whenever the destination is (a
/// read into a caller's buffer, three placements in four of the lab's
/// 16-byte-aligned ones). In a stand-alone loop on the lab's AMD EPYC
/// (Zen 5) a 4 KiB copy from a page into a buffer at each of 256
/// offsets in turn took a median of 38.5 ns this way against 43.7 ns for
/// `copy_zmm`'s loop (15 alternating rounds, 2026-11-29 13:23 UTC, load
/// 8.7). The argument is `copy_wide`'s: each byte of the range is read
/// once and written once (the head, the blocks and the tail do not
/// overlap, and the masks cover exactly the head's and the tail's
/// bytes), each a single-copy-atomic access. As for `copy_zmm`, the
/// instructions are written out with no AVX-512 target feature, and
/// `clobber_abi("C")` declares the registers (the mask register `k1`
/// among them) a call may change.
///
/// # Safety
/// As [`copy`], with `n >= 64`; and the processor has AVX-512F,
/// AVX-512BW and AVX2.
#[cfg(all(target_arch = "x86_64", not(any(miri, loom, shuttle))))]
#[target_feature(enable = "avx2")]
unsafe fn copy_zmm_aligned(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n >= 64);
    // SAFETY: with `h = (-dst) mod 64` (0 to 63), the head moves bytes
    // `0..h` (mask `~0 >> (64 - h)`, skipped when `h` is 0); then `rdi`
    // is a multiple of 64 and `rdx = n - h` bytes are left (`n >= 64 >
    // h`, so no underflow); whole 256-byte and then 64-byte blocks move
    // forwards while that many are left; the tail's `t = rdx < 64` bytes
    // move under mask `~0 >> (64 - t)` (skipped when 0). `neg cl` then
    // `shr rax, cl` shifts by `(64 - x) mod 64`, which is `64 - x` for
    // `x` in 1..=63. So exactly bytes `0..n` are read from `src` and
    // written to `dst`, each once, within the caller's ranges; the
    // aligned stores (`vmovdqa64`) get 64-byte-aligned addresses. It
    // touches no stack; every register it changes is an operand or in
    // `clobber_abi("C")`, and the flags are not preserved.
    unsafe {
        std::arch::asm!(
            "mov rcx, rdi",
            "neg rcx",
            "and rcx, 63",
            "jz 3f",
            "mov r8, rcx",
            "mov rax, -1",
            "neg cl",
            "shr rax, cl",
            "kmovq k1, rax",
            "vmovdqu8 zmm0{{k1}}{{z}}, [rsi]",
            "vmovdqu8 [rdi]{{k1}}, zmm0",
            "add rdi, r8",
            "add rsi, r8",
            "sub rdx, r8",
            "3:",
            "cmp rdx, 256",
            "jb 4f",
            "2:",
            "vmovdqu64 zmm0, [rsi]",
            "vmovdqu64 zmm1, [rsi + 64]",
            "vmovdqu64 zmm2, [rsi + 128]",
            "vmovdqu64 zmm3, [rsi + 192]",
            "vmovdqa64 [rdi], zmm0",
            "vmovdqa64 [rdi + 64], zmm1",
            "vmovdqa64 [rdi + 128], zmm2",
            "vmovdqa64 [rdi + 192], zmm3",
            "add rsi, 256",
            "add rdi, 256",
            "sub rdx, 256",
            "cmp rdx, 256",
            "jae 2b",
            "4:",
            "cmp rdx, 64",
            "jb 5f",
            "6:",
            "vmovdqu64 zmm0, [rsi]",
            "vmovdqa64 [rdi], zmm0",
            "add rsi, 64",
            "add rdi, 64",
            "sub rdx, 64",
            "cmp rdx, 64",
            "jae 6b",
            "5:",
            "test rdx, rdx",
            "jz 7f",
            "mov rcx, rdx",
            "mov rax, -1",
            "neg cl",
            "shr rax, cl",
            "kmovq k1, rax",
            "vmovdqu8 zmm0{{k1}}{{z}}, [rsi]",
            "vmovdqu8 [rdi]{{k1}}, zmm0",
            "7:",
            "vzeroupper",
            inout("rdx") n => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            clobber_abi("C"),
            options(nostack),
        );
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
    fn long_copies_move_every_byte_once() {
        // Lengths on each side of the wide loop's threshold and blocks, with
        // the destination at every offset in a 64-byte line (the aligned
        // copy's head takes 0 to 63 bytes, its tail 0 to 63) and the source
        // at several against it.
        let src: Vec<u8> = (0..9000u32).map(|i| (i * 13 + 5) as u8).collect();
        // (With AVX-512F alone, 256-byte blocks first: 768 and 4224 end
        // with one 128-byte block, 4095 with one and 127 bytes.)
        for n in [
            511, 512, 513, 575, 576, 640, 768, 4095, 4096, 4097, 4224, 8191,
        ] {
            for to in 0..64 {
                for from in [0, 1, 17, 63] {
                    let mut buf = vec![0xeeu8; n + 256];
                    // `to` bytes past the buffer's first 64-byte boundary.
                    let base = buf.as_ptr().align_offset(64);
                    let at = base + to;
                    // SAFETY: both ranges in bounds (`at + n < n + 256`),
                    // nothing else touches them.
                    unsafe { super::copy(buf.as_mut_ptr().add(at), src.as_ptr().add(from), n) };
                    let what = format!("n {n} to {to} from {from}");
                    assert!(buf[..at].iter().all(|&b| b == 0xee), "{what}");
                    assert_eq!(&buf[at..at + n], &src[from..from + n], "{what}");
                    assert!(buf[at + n..].iter().all(|&b| b == 0xee), "{what}");
                }
            }
        }
    }

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
