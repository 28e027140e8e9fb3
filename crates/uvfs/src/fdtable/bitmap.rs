//! The fd bitmaps (`open_fds`, `close_on_exec`, `full_fds_bits`) and the
//! search for the lowest free fd (`find_next_fd` of `fs/file.c`): the writer
//! state that lives under the table's lock.

use super::NR_OPEN_DEFAULT;
use super::try_reserve;
use crate::errno::Errno;

pub(super) const WORD: usize = u64::BITS as usize;

pub(super) fn words(bits: usize) -> usize {
    bits.div_ceil(WORD)
}

/// First clear bit at or after `start` and below `size`, or `size`.
pub(super) fn find_next_zero_bit(map: &[u64], size: usize, start: usize) -> usize {
    find_next(map, size, start, true)
}

/// First set bit at or after `start` and below `size`, or `size`.
pub(super) fn find_next_bit(map: &[u64], size: usize, start: usize) -> usize {
    find_next(map, size, start, false)
}

fn find_next(map: &[u64], size: usize, start: usize, zero: bool) -> usize {
    if start >= size {
        return size;
    }
    let flip = if zero { !0u64 } else { 0 };
    let mut w = start / WORD;
    let mut word = (map[w] ^ flip) & (!0u64 << (start % WORD));
    loop {
        if word != 0 {
            return (w * WORD + word.trailing_zeros() as usize).min(size);
        }
        w += 1;
        if w * WORD >= size {
            return size;
        }
        word = map[w] ^ flip;
    }
}

pub(super) fn test_bit(map: &[u64], bit: usize) -> bool {
    map[bit / WORD] & (1 << (bit % WORD)) != 0
}

pub(super) fn set_bit(map: &mut [u64], bit: usize) {
    map[bit / WORD] |= 1 << (bit % WORD);
}

pub(super) fn clear_bit(map: &mut [u64], bit: usize) {
    map[bit / WORD] &= !(1 << (bit % WORD));
}

/// The writer side, under the table lock.
///
/// Sized to share one cache line with the lock word (see
/// [`SpinMutex`]): while the table has its first [`NR_OPEN_DEFAULT`] fds
/// (the common case, like Linux's `open_fds_init` and friends embedded in
/// `files_struct`), the three bitmaps are one word each, inline, so a
/// critical section of an allocation or a close moves that one line between
/// CPUs and nothing else of the table's writer state. Growth moves all three
/// into one heap block, `open_fds | close_on_exec | full_fds_bits`.
#[derive(Debug)]
pub(super) struct Bitmaps {
    pub(super) max_fds: usize,
    pub(super) next_fd: usize,
    /// `open_fds`, `close_on_exec`, `full_fds_bits` while `max_fds` is at
    /// most [`NR_OPEN_DEFAULT`].
    small: [u64; 3],
    /// The three bitmaps once grown: `words(max_fds)` words each for the
    /// first two, `words(words(max_fds))` for the last; empty before.
    big: Box<[u64]>,
}

/// The three bitmaps, borrowed.
pub(super) struct Maps<'a> {
    pub(super) open: &'a [u64],
    pub(super) cloexec: &'a [u64],
    pub(super) full: &'a [u64],
}

/// The three bitmaps, borrowed mutably.
pub(super) struct MapsMut<'a> {
    open: &'a mut [u64],
    cloexec: &'a mut [u64],
    full: &'a mut [u64],
}

impl Bitmaps {
    pub(super) fn empty() -> Bitmaps {
        Bitmaps {
            max_fds: 0,
            next_fd: 0,
            small: [0; 3],
            big: Box::new([]),
        }
    }

    #[inline(always)]
    pub(super) fn maps(&self) -> Maps<'_> {
        if self.big.is_empty() {
            let [open, cloexec, full] = &self.small;
            return Maps {
                open: std::slice::from_ref(open),
                cloexec: std::slice::from_ref(cloexec),
                full: std::slice::from_ref(full),
            };
        }
        let w = words(self.max_fds);
        let (open, rest) = self.big.split_at(w);
        let (cloexec, full) = rest.split_at(w);
        Maps {
            open,
            cloexec,
            full,
        }
    }

    #[inline(always)]
    pub(super) fn maps_mut(&mut self) -> MapsMut<'_> {
        if self.big.is_empty() {
            let [open, cloexec, full] = &mut self.small;
            return MapsMut {
                open: std::slice::from_mut(open),
                cloexec: std::slice::from_mut(cloexec),
                full: std::slice::from_mut(full),
            };
        }
        let w = words(self.max_fds);
        let (open, rest) = self.big.split_at_mut(w);
        let (cloexec, full) = rest.split_at_mut(w);
        MapsMut {
            open,
            cloexec,
            full,
        }
    }

    pub(super) fn open_fds(&self) -> &[u64] {
        self.maps().open
    }

    pub(super) fn close_on_exec(&self) -> &[u64] {
        self.maps().cloexec
    }

    pub(super) fn close_on_exec_mut(&mut self) -> &mut [u64] {
        self.maps_mut().cloexec
    }

    pub(super) fn is_open(&self, fd: usize) -> bool {
        fd < self.max_fds && test_bit(self.open_fds(), fd)
    }

    pub(super) fn set_open(&mut self, fd: usize) {
        let m = self.maps_mut();
        set_bit(m.open, fd);
        let w = fd / WORD;
        if m.open[w] == !0 {
            set_bit(m.full, w);
        }
    }

    /// `__clear_open_fd`: the seed clears `full_fds_bits` only when set, the
    /// stock path always writes it.
    pub(super) fn clear_open(&mut self, fd: usize, fast: bool) {
        let m = self.maps_mut();
        clear_bit(m.open, fd);
        let w = fd / WORD;
        if fast {
            if test_bit(m.full, w) {
                clear_bit(m.full, w);
            }
        } else {
            clear_bit(m.full, w);
        }
    }

    pub(super) fn put_unused(&mut self, fd: usize, fast: bool) {
        self.clear_open(fd, fast);
        if fd < self.next_fd {
            self.next_fd = fd;
        }
    }

    pub(super) fn set_cloexec(&mut self, fd: usize, on: bool) {
        let cloexec = self.close_on_exec_mut();
        if on {
            set_bit(cloexec, fd);
        } else if test_bit(cloexec, fd) {
            clear_bit(cloexec, fd);
        }
    }

    /// `find_next_fd`, for `start < max_fds`. With the seed, the open_fds
    /// word holding `start` is searched first and the second level is not
    /// touched when it has a free bit.
    pub(super) fn find_next_fd(&self, start: usize, fast: bool) -> usize {
        let maxfd = self.max_fds;
        let m = self.maps();
        let bitbit = start / WORD;
        if fast {
            let free = !m.open[bitbit] & (!0u64 << (start % WORD));
            if free != 0 {
                return bitbit * WORD + free.trailing_zeros() as usize;
            }
        }
        let bitbit = find_next_zero_bit(m.full, words(maxfd), bitbit) * WORD;
        if bitbit >= maxfd {
            return maxfd;
        }
        find_next_zero_bit(m.open, maxfd, start.max(bitbit))
    }

    /// Grows the bitmaps to cover `new_max` fds and sets `max_fds`;
    /// all-or-nothing.
    pub(super) fn grow(&mut self, new_max: usize) -> Result<(), Errno> {
        if new_max <= NR_OPEN_DEFAULT {
            self.max_fds = self.max_fds.max(new_max);
            return Ok(());
        }
        let (w, fw) = (words(new_max), words(words(new_max)));
        let mut big: Vec<u64> = Vec::new();
        try_reserve(&mut big, 2 * w + fw)?;
        let old = self.maps();
        for (map, len) in [(old.open, w), (old.cloexec, w), (old.full, fw)] {
            let keep = map.len().min(len);
            big.extend_from_slice(&map[..keep]);
            big.resize(big.len() + len - keep, 0);
        }
        self.big = big.into_boxed_slice();
        self.max_fds = new_max;
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn find_next_helpers() {
        let map = [!0u64, 0b1011, 0];
        assert_eq!(find_next_zero_bit(&map, 192, 0), 66);
        assert_eq!(find_next_zero_bit(&map, 66, 0), 66);
        assert_eq!(find_next_zero_bit(&map, 192, 67), 68);
        assert_eq!(find_next_bit(&map, 192, 64), 64);
        assert_eq!(find_next_bit(&map, 192, 66), 67);
        assert_eq!(find_next_bit(&map, 192, 68), 192);
        assert_eq!(find_next_bit(&map, 192, 500), 192);
    }
}
