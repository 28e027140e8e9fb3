//! Name hashing and comparison a word at a time (Linux's `hash_name` and
//! `dentry_string_cmp` in their word-at-a-time form): the walk hashes a
//! component while it looks for its end, and compares names eight bytes at
//! a step.

/// Hashes a name under a parent (FxHash-style over 8-byte words).
///
/// Under loom the parent's address is left out: addresses differ from one
/// execution to the next (retired dentries are leaked there), and loom
/// needs every execution of a model to make the same choices, here which
/// chain a dentry joins. Names alone place dentries deterministically, and
/// a model can put dentries of different parents on one chain.
pub(crate) fn name_hash<T>(parent: *const T, name: &[u8]) -> u64 {
    let (len, hash) = hash_component(parent, name);
    debug_assert_eq!(len, name.len(), "a name holds no '/'");
    hash
}

/// The first path component of `path` (up to its first `/` or its end):
/// its length and its [`name_hash`] under `parent`, found in one pass a
/// word at a time, as Linux's `hash_name` does, instead of a byte scan for
/// the `/` followed by a second pass to hash.
///
/// Each 8-byte word is checked for a `/` with the zero-byte trick on the
/// word XOR `////////` (the lowest flagged byte is the first `/`; flags
/// above a true zero may be false, and only the lowest is used); whole
/// words before it are mixed in, then the last partial word, zero-padded,
/// with the length.
#[inline]
pub(crate) fn hash_component<T>(parent: *const T, path: &[u8]) -> (usize, u64) {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    const SLASHES: u64 = 0x0101_0101_0101_0101 * b'/' as u64;
    #[cfg(loom)]
    let _ = parent;
    #[cfg(loom)]
    let parent = std::ptr::null::<T>();
    let mut h = (parent.addr() as u64).wrapping_mul(K);
    let mut i = 0;
    loop {
        let rest = &path[i..];
        let (w, valid) = match rest.first_chunk::<8>() {
            Some(c) => (u64::from_le_bytes(*c), 8),
            None => (load_partial(rest), rest.len()),
        };
        let slash = zero_bytes(w ^ SLASHES);
        let k = ((slash.trailing_zeros() / 8) as usize).min(valid);
        if k == 8 {
            h = (h.rotate_left(5) ^ w).wrapping_mul(K);
            i += 8;
            continue;
        }
        let tail = if k == 0 {
            0
        } else {
            w & (u64::MAX >> (64 - 8 * k))
        };
        let len = i + k;
        h = (h.rotate_left(5) ^ tail ^ len as u64).wrapping_mul(K);
        return (len, h ^ (h >> 29));
    }
}

/// The zero bytes of `w`, flagged by their high bits: the lowest flag is
/// the first zero byte (little-endian); flags above a true zero may be
/// false (a borrow), so only the lowest may be trusted.
#[inline]
pub(crate) fn zero_bytes(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    w.wrapping_sub(ONES) & !w & HIGHS
}

/// The bytes of `b` (fewer than 8) as a little-endian word, zero-padded,
/// read in 4-, 2- and 1-byte pieces (a byte copy into a stack buffer and a
/// word load from it stalls store-to-load forwarding).
#[inline]
pub(super) fn load_partial(b: &[u8]) -> u64 {
    debug_assert!(b.len() < 8);
    let mut w = 0u64;
    let mut off = 0;
    if let Some(c) = b.first_chunk::<4>().filter(|_| b.len() & 4 != 0) {
        w = u64::from(u32::from_le_bytes(*c));
        off = 4;
    }
    if b.len() & 2 != 0
        && let Some(c) = b[off..].first_chunk::<2>()
    {
        w |= u64::from(u16::from_le_bytes(*c)) << (off * 8);
        off += 2;
    }
    if b.len() & 1 != 0
        && let Some(&c) = b.get(off)
    {
        w |= u64::from(c) << (off * 8);
    }
    w
}

/// `a == b` for names: word compares (names are short; a call to `bcmp`
/// costs more than the compare).
#[inline]
pub(super) fn name_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return load_partial(a) == load_partial(b);
    }
    let word = |s: &[u8], at: usize| s[at..].first_chunk::<8>().map(|c| u64::from_le_bytes(*c));
    let mut at = 0;
    while at + 8 <= n {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    // The last 8 bytes, overlapping what was compared, cover the rest.
    n.is_multiple_of(8) || word(a, n - 8) == word(b, n - 8)
}
