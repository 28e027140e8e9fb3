//! The caller's buffer of the pread and pwrite rows.
//!
//! Where the caller's 4 KiB buffer lies, relative to the file system's
//! own copy of the bytes, changes what a 4 KiB copy costs on the lab's
//! AMD EPYC: glibc's `memcpy` (the path of MemoryFS, whose file is a
//! `Vec`) ran from 16 M to 32 M copies per CPU-second as the buffer's
//! offset in its page moved (`peers-loop pwrite-4k` and `pread-4k`, a
//! sweep over 80 offsets, 2026-11-28 12:21 UTC, load 3.1; uvfs's own
//! copy stayed within 21 to 24 M). A buffer left to the allocator's
//! history therefore gave MemoryFS 17 M pwrites a second in `peers-loop`
//! (one buffer for the whole run) and 29 M in `peers` (a new handle, and
//! so a new `Vec`, each round). So both harnesses, on every system, use
//! [`IoBuf`]: each call takes the 4 KiB at the next of 256 offsets, 16
//! bytes apart, from the start of a page, so every figure is the mean
//! over the placements a 16-byte-aligned buffer can have.

/// 4 KiB windows at 256 page offsets, in turn.
pub(super) struct IoBuf {
    mem: Vec<u8>,
    /// The first page-aligned byte of `mem`.
    base: usize,
    /// The next window's offset from `base`.
    next: usize,
}

/// The windows' length.
const LEN: usize = super::IO;
/// The step between windows' offsets.
const STEP: usize = 16;
/// The page size the offsets wrap at.
const PAGE: usize = 4096;

impl IoBuf {
    /// A buffer whose every byte is `fill`.
    pub(super) fn new(fill: u8) -> IoBuf {
        let mem = vec![fill; LEN + 2 * PAGE];
        let base = (PAGE - mem.as_ptr() as usize % PAGE) % PAGE;
        IoBuf { mem, base, next: 0 }
    }

    fn advance(&mut self) -> usize {
        let at = self.base + self.next;
        self.next = (self.next + STEP) % PAGE;
        at
    }

    /// The next window, to write from.
    pub(super) fn next(&mut self) -> &[u8] {
        let at = self.advance();
        &self.mem[at..at + LEN]
    }

    /// The next window, to read into.
    pub(super) fn next_mut(&mut self) -> &mut [u8] {
        let at = self.advance();
        &mut self.mem[at..at + LEN]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_every_16_byte_page_offset_once_per_cycle() {
        let mut b = IoBuf::new(9);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..PAGE / STEP {
            let w = b.next();
            assert_eq!(w.len(), LEN);
            assert!(w.iter().all(|&x| x == 9));
            let off = w.as_ptr() as usize % PAGE;
            assert_eq!(off % STEP, 0);
            assert!(seen.insert(off), "offset {off} twice in one cycle");
        }
        assert_eq!(seen.len(), PAGE / STEP);
        // The cycle starts again at the page's start.
        assert_eq!(b.next_mut().as_ptr() as usize % PAGE, 0);
    }
}
