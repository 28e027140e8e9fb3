//! Speculation-safe index masks, the user-space twin of the kernel's
//! `array_index_mask_nospec`: a mask computed without a conditional branch,
//! so a mispredicted bounds check cannot steer a speculative load outside
//! the array (Spectre v1).

/// All ones when `index < size`, zero otherwise, computed without a branch
/// the CPU could speculate past.
#[inline(always)]
pub fn index_mask(index: usize, size: usize) -> usize {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let mask: usize;
        // SAFETY: `cmp` + `sbb` read two registers and write one; no memory is
        // touched and only the flags are clobbered, which `asm!` assumes by
        // default. This is the sequence the kernel uses on x86-64: the carry
        // flag is set exactly when index < size (unsigned), and `sbb r, r`
        // turns it into 0 or all ones with a data dependency, not a branch.
        unsafe {
            core::arch::asm!(
                "cmp {index}, {size}",
                "sbb {mask}, {mask}",
                index = in(reg) index,
                size = in(reg) size,
                mask = lateout(reg) mask,
                options(pure, nomem, nostack),
            );
        }
        mask
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        // Generic form: the sign bit of `index | (size - 1 - index)` is clear
        // exactly when index < size (for sizes below 2^63).
        !((index | size.wrapping_sub(1).wrapping_sub(index)) as isize >> (usize::BITS - 1)) as usize
    }
}

/// `index` when it is below `size`, else 0, without a branch.
#[inline(always)]
pub fn clamp_index(index: usize, size: usize) -> usize {
    index & index_mask(index, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_matches_comparison() {
        let sizes = [0usize, 1, 2, 63, 64, 65, 1024, 1 << 20, usize::MAX >> 1];
        let idx = [
            0usize,
            1,
            2,
            62,
            63,
            64,
            65,
            1023,
            1024,
            1 << 20,
            u32::MAX as usize,
            usize::MAX,
        ];
        for &s in &sizes {
            for &i in &idx {
                let want = if i < s { usize::MAX } else { 0 };
                assert_eq!(index_mask(i, s), want, "index {i} size {s}");
                assert_eq!(clamp_index(i, s), if i < s { i } else { 0 });
            }
        }
    }
}
