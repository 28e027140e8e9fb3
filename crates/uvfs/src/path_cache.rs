//! The full-path cache (issue 16, after Tsai et al., "How to Get More Value
//! From Your File System Directory Cache", SOSP 2015): a lookup the
//! lockless walk resolved is remembered under a signature of everything
//! its answer depended on, so the next identical lookup costs one hash of
//! the path and one table probe, whatever the path's depth. Linux has no
//! such cache; its per-component walk (`namei`) is the stock side of the
//! `path_cache` switch.
//!
//! # What an entry says, and why it stays true
//!
//! The key is (the starting point: the root for an absolute path, else the
//! start directory; the path's bytes; the flags that change the answer,
//! `FOLLOW` and `DIRECTORY`; the credentials permission checks read:
//! fsuid, fsgid, supplementary groups). So the memoized search-permission
//! checks are per credential, as in the paper. The value is the dentry the
//! walk ended on, its sequence count then, and the outcome: that dentry
//! (positive), `ENOENT` (it is negative) or `ENOTDIR` (it is not a
//! directory where one was needed).
//!
//! Only the lockless walk fills the cache: its walks cross no symlink to
//! follow, no `..`, no mountpoint, no directory the caller may not search,
//! and touch no atime. So an entry's answer depends only on the hashed
//! dentries along the path, their names, parents and permission snapshots,
//! and the mounts on them. Every change to those is counted in the dentry
//! cache's namespace generation (`DentryCache::ns_gen`), after the change
//! is visible: an unhash (unlink, rmdir, a
//! rename's victim, a pruned child, an evicted dentry), a move (rename),
//! a chmod or chown that changes a permission snapshot, a mount; and every
//! dentry death before its memory is retired. The filler reads the
//! generation *before* its walk and stores it with the answer; a reader
//! trusts an entry only if the generation is still the same, then checks
//! the final dentry's sequence count (which a create in place of a
//! negative entry changes: creations do not move the generation) and, for
//! a positive answer, takes its reference as the lockless walk does
//! (`legitimize`). A change that completed before a lookup began has moved
//! the generation past every entry filled before it, so a lookup never
//! returns what a finished rename, unlink, chmod or mount replaced.
//!
//! Memory: the reader holds an epoch pin from before its generation load
//! to the reference; a dentry's death moves the generation before its
//! memory is retired, so a reader that still sees the entry's generation
//! was pinned before the retirement and the dentry's memory is valid.
//!
//! # The table
//!
//! A fixed array of slots (direct-mapped by the key's hash), each a
//! sequence lock over atomic words: a filler that finds the slot being
//! written skips its fill; a reader that sees a writer, or a key that
//! differs, misses and walks. Paths longer than [`MAX_PATH`] bytes and
//! credentials with more than [`MAX_GROUPS`] supplementary groups are not
//! cached (they walk). A fill overwrites whatever the slot held.
//!
//! Beside the slots, a small array of hints (four bytes per slot, 4 KiB,
//! which stays in the CPU's nearest caches) holds a few bits of the hash
//! of the key each slot was last filled with (its tag) and the low bits of
//! the generation that fill recorded. A probe reads the generation first,
//! and misses without reading the slot if the hint differs: a slot is four
//! cache lines, and a lookup of a path not seen lately (a stat of each of
//! 10,000 files) waited for the slot's first line only to find another
//! key there, and a lookup of a path seen before the namespace last
//! changed (each name of a small directory stat'ed again after an unlink)
//! read all four only to find the entry stale. The probe then asks for
//! the slot's line in the background, since the walk that follows the
//! miss fills it. The hints are no part of the protocol: a stale hint
//! that matches goes on to the full comparison under the slot's sequence
//! lock and the generation check, and one that differs is a miss, which
//! is always a correct answer (the walk answers).

use crate::cred::Cred;
use crate::dcache::{Dentry, DentryCache, DentryRef};
use crate::errno::Errno;
use crate::primitive::sync::atomic::{AtomicU64, Ordering, fence};
use crate::reclaim;
use std::ptr::NonNull;
// The tags are a hint that no answer depends on (see the module doc), so
// they are std's atomics, not the model's: loom need not explore them.
use std::sync::atomic::{AtomicU32, Ordering as HintOrdering};

/// The longest path cached, in bytes.
pub(crate) const MAX_PATH: usize = 128;
/// The most supplementary groups of a cached lookup's credentials.
pub(crate) const MAX_GROUPS: usize = 4;

const PATH_WORDS: usize = MAX_PATH / 8;
const GROUP_WORDS: usize = MAX_GROUPS / 2;
/// Base, (length, flags, group count), (fsuid, fsgid), groups, path.
const KEY_WORDS: usize = 3 + GROUP_WORDS + PATH_WORDS;

/// Slots in the table (a power of two).
const SLOTS: usize = if cfg!(any(loom, shuttle)) { 4 } else { 1024 };

/// How a cached lookup ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// On the dentry (a reference to it is the answer).
    Found = 0,
    /// `ENOENT`: the dentry is negative.
    NoEnt = 1,
    /// `ENOTDIR`: the dentry is not a directory where one was needed.
    NotDir = 2,
}

impl Outcome {
    /// How a walk's `result` is cached: `None` for an error the cache does
    /// not keep (only a found dentry, ENOENT and ENOTDIR are).
    pub(crate) fn of<T>(result: &Result<T, Errno>) -> Option<Outcome> {
        match result {
            Ok(_) => Some(Outcome::Found),
            Err(Errno::ENOENT) => Some(Outcome::NoEnt),
            Err(Errno::ENOTDIR) => Some(Outcome::NotDir),
            Err(_) => None,
        }
    }

    fn from_bits(b: u64) -> Option<Outcome> {
        match b {
            0 => Some(Outcome::Found),
            1 => Some(Outcome::NoEnt),
            2 => Some(Outcome::NotDir),
            _ => None,
        }
    }
}

/// A lookup's signature: the words compared, and their hash.
pub(crate) struct Key {
    words: [u64; KEY_WORDS],
    n: usize,
    hash: u64,
}

impl Key {
    /// The key of a lookup of `path` from `base` (the root for an absolute
    /// path, else the start) with `flags` (only the bits in `flag_mask`
    /// count) by `cred`; `None` if it is not cacheable (too long a path,
    /// too many groups).
    #[cfg(test)]
    pub(crate) fn new(base: NonNull<Dentry>, path: &[u8], flags: u32, cred: &Cred) -> Option<Key> {
        let mut key = Key::empty();
        key.fill(base, path, flags, cred).then_some(key)
    }

    /// A key to [`fill`](Self::fill).
    #[inline]
    pub(crate) fn empty() -> Key {
        Key {
            words: [0u64; KEY_WORDS],
            n: 0,
            hash: 0,
        }
    }

    /// Makes an [`empty`](Self::empty) key the key of a lookup (as
    /// [`new`](Self::new) describes); false if the lookup is not
    /// cacheable. Filled in place: a key returned by value (184 bytes)
    /// was copied with memmove, about a tenth of a stat answered by the
    /// cache.
    #[inline]
    pub(crate) fn fill(
        &mut self,
        base: NonNull<Dentry>,
        path: &[u8],
        flags: u32,
        cred: &Cred,
    ) -> bool {
        let ng = cred.groups.len();
        if path.len() > MAX_PATH || ng > MAX_GROUPS {
            return false;
        }
        let words = &mut self.words;
        let w0 = base.as_ptr() as usize as u64;
        let w1 = path.len() as u64 | u64::from(flags) << 16 | (ng as u64) << 48;
        let w2 = u64::from(cred.fsuid) | u64::from(cred.fsgid) << 32;
        let mut g = [0u64; GROUP_WORDS];
        for (i, x) in cred.groups.iter().enumerate() {
            g[i / 2] |= u64::from(*x) << (32 * (i % 2));
        }
        words[0] = w0;
        words[1] = w1;
        words[2] = w2;
        words[3..3 + GROUP_WORDS].copy_from_slice(&g);
        let at = 3 + ng.div_ceil(2);
        // The hash is taken from the words as they are made, in registers:
        // hashed from the stored key, each word was a load waiting on the
        // store just made (most of `fill`, a quarter of a cached stat). The
        // header (base, length and flags, ids, both group words, 0 when
        // unused) is hashed as five words whatever the group count.
        let mut h = fold(w0 ^ K0, w1 ^ K1)
            ^ fold(w2 ^ K0, g[0] ^ K2).rotate_left(23)
            ^ fold(g[1] ^ K0, path.len() as u64 ^ K3).rotate_left(46);
        let mut n = at;
        let mut pairs = path.chunks_exact(16);
        for c in &mut pairs {
            if let (Some(a), Some(b)) = (c.first_chunk::<8>(), c.last_chunk::<8>()) {
                let (a, b) = (u64::from_le_bytes(*a), u64::from_le_bytes(*b));
                words[n] = a;
                words[n + 1] = b;
                h = h.rotate_left(23) ^ fold(a ^ K0, b ^ K1);
            }
            n += 2;
        }
        let rest = pairs.remainder();
        if !rest.is_empty() {
            let (a, b) = if let Some(a) = rest.first_chunk::<8>() {
                let b = if rest.len() > 8 { tail_word(path) } else { 0 };
                (u64::from_le_bytes(*a), b)
            } else {
                (tail_word(path), 0)
            };
            words[n] = a;
            n += 1;
            if rest.len() > 8 {
                words[n] = b;
                n += 1;
            }
            h = h.rotate_left(23) ^ fold(a ^ K0, b ^ K1);
        }
        // Words equal up to `n` mean equal keys: word 1 holds the path's
        // length and the group count, which fix `n`.
        self.n = n;
        self.hash = fold(h ^ K1, K0);
        true
    }

    /// The key's tag (see the module doc): high bits of its hash (the low
    /// ones choose the slot), never 0, the tag of a slot never filled.
    #[inline]
    fn tag(&self) -> u16 {
        (self.hash >> 48) as u16 | 1
    }
}

/// The last `path.len() % 8` bytes of `path` (at least one) as a
/// little-endian word, zero above them: what the bytes copied into a
/// zeroed 8-byte buffer would read as. Read with whole-word loads, not a
/// variable-length copy into a buffer read back as one word: that copy
/// was a call to `memcpy`, and the word load after its narrower stores
/// waited for them to reach the cache (the processor does not forward
/// several stores into one load), some 15% of a stat answered by the
/// cache.
#[inline(always)]
fn tail_word(path: &[u8]) -> u64 {
    let r = path.len() % 8;
    debug_assert!(r != 0);
    if let Some(last) = path
        .len()
        .checked_sub(8)
        .and_then(|s| path[s..].first_chunk::<8>())
    {
        // The path's last eight bytes: the tail is their top `r` bytes.
        return u64::from_le_bytes(*last) >> (8 * (8 - r));
    }
    // A path of fewer than eight bytes: the tail is the whole path.
    let (mut w, mut i) = (0u64, 0);
    if let Some(b) = path.first_chunk::<4>() {
        w = u64::from(u32::from_le_bytes(*b));
        i = 4;
    }
    if let Some(b) = path[i..].first_chunk::<2>() {
        w |= u64::from(u16::from_le_bytes(*b)) << (8 * i);
        i += 2;
    }
    if let Some(b) = path.get(i) {
        w |= u64::from(*b) << (8 * i);
    }
    w
}

const K0: u64 = 0xa076_1d64_78bd_642f;
const K1: u64 = 0xe703_7ed1_a0b4_28db;
const K2: u64 = 0x8ebc_6af0_9c88_c6e3;
const K3: u64 = 0x5899_65cc_7537_4cc3;

/// One step of the key's hash ([`Key::fill`]): a folded 64x64->128-bit
/// multiply. Each pair of words gets one that does not depend on the
/// running hash, which only rotates and xors them in: the multiplies run
/// side by side, where a multiply per word on the running hash made one
/// dependency chain of about five cycles a word (some 40 cycles for a
/// three-component path, a tenth of an open answered by the cache).
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    p as u64 ^ (p >> 64) as u64
}

/// What a positive entry also records, with `FastPaths::path_cache_inode`:
/// how stat reaches the answer's attributes without leaving the slot for
/// anything but the dentry's count and the attribute cell (see
/// [`PathCache::find_ino`]). Recorded only when the file system reads
/// attributes through objects reached without a reference (tmpfs's
/// `pinned_reads`, fixed for its life), and only as read from the dentry
/// at the count the entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pinned {
    /// The file system's object of the dentry's inode (tmpfs's `Inode`).
    pub(crate) data: NonNull<()>,
    /// The inode number.
    pub(crate) ino: crate::fs::Ino,
    /// The dentry's superblock's device number.
    pub(crate) dev: u64,
}

/// What a slot held for a key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hit {
    /// The namespace generation the filler read before its walk.
    pub(crate) generation: u64,
    /// The dentry the walk ended on.
    pub(crate) dentry: NonNull<Dentry>,
    /// Its sequence count then.
    pub(crate) seq: u32,
    pub(crate) outcome: Outcome,
    /// The way to the inode's attributes, if the filler recorded it.
    pub(crate) pinned: Option<Pinned>,
}

/// One entry: a sequence lock (odd while written) over atomic words.
#[repr(align(64))]
struct Slot {
    seq: AtomicU64,
    generation: AtomicU64,
    dentry: AtomicU64,
    /// The dentry's sequence count (low half) and the outcome (high half).
    seq_outcome: AtomicU64,
    /// [`Pinned`]: the object's address (0: none recorded), the inode
    /// number, the device number. In the slot's first line, with the
    /// words above.
    pinned: [AtomicU64; 3],
    key: [AtomicU64; KEY_WORDS],
}

impl Slot {
    #[cfg(any(loom, shuttle))]
    fn new() -> Slot {
        Slot {
            seq: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            dentry: AtomicU64::new(0),
            seq_outcome: AtomicU64::new(0),
            pinned: std::array::from_fn(|_| AtomicU64::new(0)),
            key: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// A slot's hints, in one word read by the probe: what the slot holds,
/// and the last lookup that missed it without filling it.
#[repr(C, align(8))]
struct Hints {
    /// The tag of the key the slot was last filled with (0: never) in
    /// the high half and the low bits of the generation that fill
    /// recorded in the low half ([`hint`]): read before the slot (see the
    /// module doc).
    filled: AtomicU32,
    /// With admission on the second miss (`FastPaths::path_cache_admit`),
    /// the [`hint`] of the last key whose miss in this slot filled
    /// nothing: a later miss of that key under that generation fills the
    /// slot. 0: none.
    seen: AtomicU32,
}

/// The slots: zeroed memory from the allocator (see `with_admission`);
/// built one by one under loom and shuttle.
#[cfg(not(any(loom, shuttle)))]
type Slots = crate::primitive::sync::ZeroedSlice<Slot>;
#[cfg(any(loom, shuttle))]
type Slots = Box<[Slot]>;

/// The cache: one per [`Vfs`](crate::Vfs) built with `path_cache` on.
pub(crate) struct PathCache {
    slots: Slots,
    /// Per slot, its hints ([`Hints`]; 8 bytes a slot, 8 KiB).
    tags: Box<[Hints]>,
    /// `FastPaths::path_cache_admit`: a miss fills its slot only when the
    /// same key missed there before under the same generation
    /// ([`admit`](Self::admit)); off, every miss the walk answers fills.
    admit_second: bool,
}

impl std::fmt::Debug for PathCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PathCache")
            .field("slots", &self.slots.len())
            .finish()
    }
}

impl PathCache {
    /// A cache whose every answered miss fills its slot (the tests').
    #[cfg(test)]
    pub(crate) fn new() -> PathCache {
        PathCache::with_admission(false)
    }

    /// A cache that fills a slot on the second miss of a key under one
    /// generation if `admit_second` (`FastPaths::path_cache_admit`; see
    /// [`admit`](Self::admit)), else on every miss.
    pub(crate) fn with_admission(admit_second: bool) -> PathCache {
        // Zeroed memory from the allocator (fresh pages): a slot's page
        // becomes resident when a slot on it is first filled.
        #[cfg(not(any(loom, shuttle)))]
        // SAFETY: a `Slot` is std atomics only, for which all-zero is the
        // valid value `Slot::new` also builds.
        let slots = unsafe { crate::primitive::sync::ZeroedSlice::<Slot>::new(SLOTS) };
        #[cfg(any(loom, shuttle))]
        let slots = (0..SLOTS).map(|_| Slot::new()).collect();
        let tags = (0..SLOTS)
            .map(|_| Hints {
                filled: AtomicU32::new(0),
                seen: AtomicU32::new(0),
            })
            .collect();
        PathCache {
            slots,
            tags,
            admit_second,
        }
    }

    #[inline]
    fn index(key: &Key) -> usize {
        key.hash as usize & (SLOTS - 1)
    }

    /// What the slot of `key` holds for it, read consistently; `None` for
    /// another key or an entry filled under another generation than
    /// `generation` (by the hint, without reading the slot), another key
    /// by its words, an empty slot, or a slot being written. The caller
    /// still checks the generation and the dentry (see the module doc).
    #[inline]
    pub(crate) fn get(&self, key: &Key, generation: u64) -> Option<Hit> {
        let i = Self::index(key);
        let s = &self.slots[i];
        let h = &self.tags[i];
        let want = hint(key, generation);
        if h.filled.load(HintOrdering::Relaxed) != want {
            // The walk that follows a miss fills this slot if it is
            // admitted: its first line is fetched meanwhile. (A miss that
            // will not fill leaves the slot's lines where they are.)
            if !self.admit_second || h.seen.load(HintOrdering::Relaxed) == want {
                crate::primitive::hint::prefetch(s);
            }
            return None;
        }
        let q = s.seq.load(Ordering::Acquire);
        if q & 1 != 0 {
            return None;
        }
        for (a, w) in s.key.iter().zip(&key.words[..key.n]) {
            if a.load(Ordering::Relaxed) != *w {
                return None;
            }
        }
        let generation = s.generation.load(Ordering::Relaxed);
        let dentry = s.dentry.load(Ordering::Relaxed);
        let so = s.seq_outcome.load(Ordering::Relaxed);
        let pinned = [
            s.pinned[0].load(Ordering::Relaxed),
            s.pinned[1].load(Ordering::Relaxed),
            s.pinned[2].load(Ordering::Relaxed),
        ];
        fence(Ordering::Acquire);
        if s.seq.load(Ordering::Relaxed) != q {
            return None;
        }
        Some(Hit {
            generation,
            dentry: NonNull::new(dentry as usize as *mut Dentry)?,
            seq: so as u32,
            outcome: Outcome::from_bits(so >> 32)?,
            pinned: NonNull::new(pinned[0] as usize as *mut ()).map(|data| Pinned {
                data,
                ino: pinned[1],
                dev: pinned[2],
            }),
        })
    }

    /// The remembered answer to `key`, if it is still true (see the module
    /// doc): the generation unchanged since the fill, the final dentry's
    /// count unchanged, and for a positive answer a reference taken on it.
    #[inline]
    pub(crate) fn find(&self, dc: &DentryCache, key: &Key) -> Option<Result<DentryRef, Errno>> {
        // Pinned before the generation is read: a dentry whose death comes
        // after that read is retired after this pin.
        let _pin = reclaim::pin_with(dc.cheap_pin());
        let generation = dc.ns_gen();
        let h = self.get(key, generation)?;
        if h.generation != generation {
            return None;
        }
        // SAFETY: pinned before a generation load that found no death
        // since the entry was filled, when the dentry was alive.
        let d = unsafe { h.dentry.as_ref() };
        match h.outcome {
            Outcome::Found => DentryRef::legitimize(h.dentry, h.seq).map(Ok),
            Outcome::NoEnt => d.seq_valid(h.seq).then_some(Err(Errno::ENOENT)),
            Outcome::NotDir => d.seq_valid(h.seq).then_some(Err(Errno::ENOTDIR)),
        }
    }

    /// As [`find`](Self::find) for a caller that needs only the answer's
    /// inode (stat): no reference is taken on a positive answer. `f` gets
    /// the dentry, its inode number and what the entry recorded of the
    /// way to the inode's attributes ([`Pinned`]), all read before the
    /// entry's sequence count is checked again (so they are the answer's:
    /// with a `Pinned`, its own number, and the dentry is not read beyond
    /// its count), and runs pinned:
    /// the dentry's memory, its superblock with it, stays valid until `f`
    /// returns even if the dentry dies meanwhile, which `f` must allow for
    /// (its inode may be gone from the file system: `f` returns `None`). A
    /// `None` from `f`, or any doubt, is a miss.
    pub(crate) fn find_ino<R>(
        &self,
        dc: &DentryCache,
        key: &Key,
        f: impl FnOnce(&Dentry, crate::fs::Ino, Option<Pinned>) -> Option<R>,
    ) -> Option<Result<R, Errno>> {
        // Pinned before the generation is read, as in `find`.
        let _pin = reclaim::pin_with(dc.cheap_pin());
        let generation = dc.ns_gen();
        let h = self.get(key, generation)?;
        if h.generation != generation {
            return None;
        }
        // SAFETY: pinned before a generation load that found no death
        // since the entry was filled, when the dentry was alive: its
        // memory is retired only after the generation moves, and freed
        // only after this pin ends.
        let d = unsafe { h.dentry.as_ref() };
        let (ino, pinned) = match (h.outcome, h.pinned) {
            // The filler read the object from the dentry at the count the
            // entry records, and checked the count after: while the count
            // holds (checked below), the dentry holds that inode, which
            // holds that object (taken out only at eviction, when no
            // reference is left). A change of the dentry's inode after
            // the check gives the object up after this pin began: the
            // file system frees it only after a grace period
            // (`pinned_reads`), so it stays readable until `f` returns.
            (Outcome::Found, Some(p)) => (p.ino, Some(p)),
            (Outcome::Found, None) => {
                if d.is_negative() {
                    return None;
                }
                (d.ino(), None)
            }
            (Outcome::NoEnt, _) => return d.seq_valid(h.seq).then_some(Err(Errno::ENOENT)),
            (Outcome::NotDir, _) => return d.seq_valid(h.seq).then_some(Err(Errno::ENOTDIR)),
        };
        // The inode pointer and number were read in the state the entry
        // recorded: unchanged since (a change of either, an unhash or a
        // move is a write section). One call of `f`, so that it is inlined.
        if !d.seq_valid(h.seq) {
            return None;
        }
        f(d, ino, pinned).map(Ok)
    }

    /// Remembers that the lookup `key`, walked after reading generation
    /// `generation`, ended on `dentry` (at sequence count `seq`) with `outcome`,
    /// and for a positive answer the way to its inode's attributes, if
    /// `pinned` (read from `dentry` and then validated at `seq` by the
    /// caller). Skipped if another fill of the slot is in progress.
    pub(crate) fn put(
        &self,
        key: &Key,
        generation: u64,
        dentry: NonNull<Dentry>,
        seq: u32,
        outcome: Outcome,
        pinned: Option<Pinned>,
    ) {
        let i = Self::index(key);
        let s = &self.slots[i];
        let q = s.seq.load(Ordering::Relaxed);
        if q & 1 != 0
            || s.seq
                .compare_exchange(q, q + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        // The odd count is visible before any word changes.
        fence(Ordering::Release);
        s.generation.store(generation, Ordering::Relaxed);
        s.dentry
            .store(dentry.as_ptr() as usize as u64, Ordering::Relaxed);
        s.seq_outcome
            .store(u64::from(seq) | (outcome as u64) << 32, Ordering::Relaxed);
        let p = pinned.filter(|_| outcome == Outcome::Found);
        s.pinned[0].store(
            p.map_or(0, |p| p.data.as_ptr() as usize as u64),
            Ordering::Relaxed,
        );
        s.pinned[1].store(p.map_or(0, |p| p.ino), Ordering::Relaxed);
        s.pinned[2].store(p.map_or(0, |p| p.dev), Ordering::Relaxed);
        for (a, w) in s.key.iter().zip(&key.words[..key.n]) {
            a.store(*w, Ordering::Relaxed);
        }
        s.seq.store(q + 2, Ordering::Release);
        // After the slot: a reader that sees the tag and not yet the words
        // compares them and misses. (Two fills in a row may leave the
        // first one's tag: then the second key misses, the first compares
        // and misses.)
        self.tags[i]
            .filled
            .store(hint(key, generation), HintOrdering::Relaxed);
    }

    /// Whether the walk that answered a miss of `key` (under `generation`,
    /// read before that walk) fills its slot ([`put`](Self::put)). With
    /// admission on the second miss (`FastPaths::path_cache_admit`), only
    /// if the same key missed this slot under the same generation before
    /// (its hint is the slot's `seen`); else the miss is recorded there
    /// and nothing is filled. So a lookup made once (a pass over a
    /// directory's 10,000 names, each stat'ed once between two changes of
    /// the namespace) neither writes a slot's four lines nor evicts the
    /// entry a path looked up again and again holds; a path looked up
    /// twice is walked twice, then answered from the cache. Like the
    /// hints, no part of the protocol: a fill skipped is always correct.
    #[inline]
    pub(crate) fn admit(&self, key: &Key, generation: u64) -> bool {
        if !self.admit_second {
            return true;
        }
        let h = &self.tags[Self::index(key)];
        let want = hint(key, generation);
        if h.seen.load(HintOrdering::Relaxed) == want {
            return true;
        }
        h.seen.store(want, HintOrdering::Relaxed);
        false
    }
}

/// A slot's hint: the tag of the key it was filled with, and the low bits
/// of the generation that fill recorded. A probe under the generation it
/// read compares it before reading the slot: an entry of the same path
/// filled before the namespace last changed (a directory's names stat'ed
/// again after an unlink anywhere) is stale, and is now a miss found in
/// the tags, not after reading the slot's four lines. Equal low bits of
/// two generations only send the probe on to the full check.
#[inline]
fn hint(key: &Key, generation: u64) -> u32 {
    u32::from(key.tag()) << 16 | u32::from(generation as u16)
}

/// Loom models of the validation protocol.
#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn base(n: usize) -> NonNull<Dentry> {
        NonNull::new((n * 64) as *mut Dentry).unwrap()
    }

    #[test]
    fn keys_differ_in_every_part() {
        let c = Cred::user(1000, 1000, vec![5, 6]);
        let k = |b, p: &[u8], f, c: &Cred| Key::new(base(b), p, f, c).unwrap();
        let a = k(1, b"a/b/c", 1, &c);
        let diff = [
            k(2, b"a/b/c", 1, &c),
            k(1, b"a/b/d", 1, &c),
            k(1, b"a/b/c/", 1, &c),
            k(1, b"a/b/c", 3, &c),
            k(1, b"a/b/c", 1, &Cred::user(1001, 1000, vec![5, 6])),
            k(1, b"a/b/c", 1, &Cred::user(1000, 1001, vec![5, 6])),
            k(1, b"a/b/c", 1, &Cred::user(1000, 1000, vec![5])),
            k(1, b"a/b/c", 1, &Cred::user(1000, 1000, vec![5, 7])),
            k(1, b"a/b/c\0\0\0", 1, &c),
        ];
        for d in &diff {
            assert!(
                d.n != a.n || d.words[..d.n] != a.words[..a.n],
                "{:?}",
                &d.words[..d.n]
            );
        }
        assert!(Key::new(base(1), &[b'a'; MAX_PATH + 1], 0, &c).is_none());
        assert!(Key::new(base(1), &[b'a'; MAX_PATH], 0, &c).is_some());
        assert!(Key::new(base(1), b"x", 0, &Cred::user(1, 1, vec![1, 2, 3, 4, 5])).is_none());
    }

    #[test]
    fn tail_word_is_the_zero_padded_remainder() {
        let bytes: Vec<u8> = (1..=40u8).map(|b| b.wrapping_mul(37)).collect();
        for len in 1..=bytes.len() {
            let path = &bytes[..len];
            let rem = &path[len - len % 8..];
            if rem.is_empty() {
                continue;
            }
            let mut w = [0u8; 8];
            w[..rem.len()].copy_from_slice(rem);
            assert_eq!(tail_word(path), u64::from_le_bytes(w), "length {len}");
        }
    }

    #[test]
    fn path_words_are_the_zero_padded_chunks_and_hash_follows_words() {
        let bytes: Vec<u8> = (1..=50u8).map(|b| b.wrapping_mul(29) | 1).collect();
        for ng in 0..=MAX_GROUPS {
            let c = Cred::user(7, 8, (0..ng as u32).map(|g| 100 + g).collect());
            for len in 1..=bytes.len() {
                let path = &bytes[..len];
                let k = Key::new(base(1), path, 1, &c).unwrap();
                let at = 3 + ng.div_ceil(2);
                let want: Vec<u64> = path
                    .chunks(8)
                    .map(|ch| {
                        let mut w = [0u8; 8];
                        w[..ch.len()].copy_from_slice(ch);
                        u64::from_le_bytes(w)
                    })
                    .collect();
                assert_eq!(k.n, at + want.len(), "length {len}, {ng} groups");
                assert_eq!(&k.words[at..k.n], &want[..], "length {len}, {ng} groups");
                // The same lookup from a key that held another one first.
                let mut k2 = Key::empty();
                assert!(k2.fill(base(2), &bytes, 0, &Cred::root()));
                assert!(k2.fill(base(1), path, 1, &c));
                assert_eq!((k2.n, k2.hash), (k.n, k.hash));
                assert_eq!(k2.words[..k2.n], k.words[..k.n]);
            }
        }
    }

    #[test]
    fn put_then_get_and_overwrite() {
        let pc = PathCache::new();
        let c = Cred::root();
        let k1 = Key::new(base(1), b"x/y", 0, &c).unwrap();
        assert!(pc.get(&k1, 7).is_none());
        pc.put(&k1, 7, base(9), 4, Outcome::NoEnt, None);
        let h = pc.get(&k1, 7).unwrap();
        assert_eq!(
            (h.generation, h.dentry, h.seq, h.outcome),
            (7, base(9), 4, Outcome::NoEnt)
        );
        // A key landing in the same slot replaces it; the old one misses.
        let k2 = (0..)
            .map(|i| Key::new(base(2), format!("p{i}").as_bytes(), 0, &c).unwrap())
            .find(|k| k.hash as usize & (SLOTS - 1) == k1.hash as usize & (SLOTS - 1))
            .unwrap();
        pc.put(&k2, 8, base(10), 6, Outcome::Found, None);
        assert!(pc.get(&k1, 8).is_none());
        assert_eq!(pc.get(&k2, 8).unwrap().outcome, Outcome::Found);
    }

    #[test]
    fn a_later_generation_misses_in_the_hint() {
        let pc = PathCache::new();
        let c = Cred::root();
        let k = Key::new(base(1), b"d/f0000001", 0, &c).unwrap();
        pc.put(&k, 41, base(9), 2, Outcome::Found, None);
        assert_eq!(pc.get(&k, 41).unwrap().generation, 41);
        // The namespace changed since the fill: a miss without the slot.
        assert!(pc.get(&k, 42).is_none());
        // Low bits equal by wrap-around: the hint lets the probe through,
        // and the entry's own generation (41) is what the caller checks.
        assert_eq!(pc.get(&k, 41 + (1 << 16)).unwrap().generation, 41);
        // Refilled under the new generation, it answers under it.
        pc.put(&k, 42, base(9), 2, Outcome::Found, None);
        assert_eq!(pc.get(&k, 42).unwrap().generation, 42);
        assert!(pc.get(&k, 41).is_none());
    }

    #[test]
    fn put_records_the_inode_of_a_positive_answer_only() {
        let pc = PathCache::new();
        let c = Cred::root();
        let k = Key::new(base(1), b"a/b/c/f", 0, &c).unwrap();
        let p = Pinned {
            data: NonNull::new(0x4000 as *mut ()).unwrap(),
            ino: 77,
            dev: 41,
        };
        pc.put(&k, 5, base(9), 2, Outcome::Found, Some(p));
        assert_eq!(pc.get(&k, 5).unwrap().pinned, Some(p));
        // A refill without one (the switch off, another file system)
        // leaves none behind; a negative answer never records one.
        pc.put(&k, 5, base(9), 4, Outcome::Found, None);
        assert_eq!(pc.get(&k, 5).unwrap().pinned, None);
        pc.put(&k, 5, base(9), 6, Outcome::NoEnt, Some(p));
        assert_eq!(pc.get(&k, 5).unwrap().pinned, None);
    }

    /// Slots holding a recorded inode.
    fn recorded(vfs: &crate::Vfs) -> usize {
        let pc = vfs.path_cache().expect("the path cache is on");
        let slots = pc.slots.iter();
        slots
            .filter(|s| s.pinned[0].load(Ordering::Relaxed) != 0)
            .count()
    }

    #[test]
    fn a_stat_records_the_inode_with_the_switch_only() {
        for on in [true, false] {
            let mut fast = crate::FastPaths::seeds();
            fast.path_cache_inode = on;
            let vfs = crate::Vfs::new(fast);
            let mut p = crate::Process::new(&vfs).unwrap();
            for d in ["/a", "/a/b", "/a/b/c"] {
                p.mkdir(d, 0o755).unwrap();
            }
            p.write_file("/a/b/c/f", b"12345").unwrap();
            assert_eq!(recorded(&vfs), 0);
            let walked = p.stat("/a/b/c/f").unwrap();
            // Filled on the second miss (`path_cache_admit`, in seeds).
            assert_eq!(p.stat("/a/b/c/f").unwrap(), walked);
            assert_eq!(recorded(&vfs) > 0, on);
            // The hit (through the recorded inode when on) and the walk
            // agree, and both follow a change of the file.
            assert_eq!(p.stat("/a/b/c/f").unwrap(), walked);
            p.truncate("/a/b/c/f", 9).unwrap();
            p.chmod("/a/b/c/f", 0o600).unwrap();
            let st = p.stat("/a/b/c/f").unwrap();
            assert_eq!((st.st_size, st.st_mode & 0o7777), (9, 0o600));
            assert_eq!((st.st_ino, st.st_dev), (walked.st_ino, walked.st_dev));
            assert_eq!(recorded(&vfs) > 0, on);
        }
    }

    /// Slots filled (their hint set by a fill).
    fn filled(pc: &PathCache) -> usize {
        let tags = pc.tags.iter();
        tags.filter(|h| h.filled.load(HintOrdering::Relaxed) != 0)
            .count()
    }

    #[test]
    fn admission_fills_on_the_second_miss_and_keeps_the_entry() {
        let pc = PathCache::with_admission(true);
        let c = Cred::root();
        let k1 = Key::new(base(1), b"a/b", 0, &c).unwrap();
        let k2 = (0..)
            .map(|n| Key::new(base(2), format!("q{n}").as_bytes(), 0, &c).unwrap())
            .find(|k| PathCache::index(k) == PathCache::index(&k1))
            .unwrap();
        // First miss: recorded, not admitted; the second under the same
        // generation is.
        assert!(!pc.admit(&k1, 3));
        assert!(pc.admit(&k1, 3));
        pc.put(&k1, 3, base(9), 2, Outcome::Found, None);
        assert_eq!(pc.get(&k1, 3).unwrap().dentry, base(9));
        // Another key's single miss in the same slot fills nothing and
        // leaves the entry answering.
        assert!(!pc.admit(&k2, 3));
        assert_eq!(pc.get(&k1, 3).unwrap().dentry, base(9));
        // A miss under another generation than the recorded one is a
        // first miss again.
        assert!(!pc.admit(&k2, 4));
        assert!(pc.admit(&k2, 4));
        // Without admission every miss fills.
        let all = PathCache::new();
        assert!(all.admit(&k1, 3) && all.admit(&k2, 3));
    }

    #[test]
    fn a_path_stated_once_fills_no_slot_with_admission() {
        for admit in [true, false] {
            let mut fast = crate::FastPaths::seeds();
            fast.path_cache_admit = admit;
            let vfs = crate::Vfs::new(fast);
            let mut p = crate::Process::new(&vfs).unwrap();
            p.mkdir("/d", 0o755).unwrap();
            for i in 0..50 {
                p.write_file(format!("/d/f{i}"), b"x").unwrap();
            }
            let pc = vfs.path_cache().expect("the path cache is on");
            let before = filled(pc);
            let first: Vec<_> = (0..50)
                .map(|i| p.stat(format!("/d/f{i}")).unwrap())
                .collect();
            let once = filled(pc) - before;
            // 50 keys over 1024 slots: some may share one.
            assert_eq!(once == 0, admit, "admit {admit}: {once} slots filled");
            let again: Vec<_> = (0..50)
                .map(|i| p.stat(format!("/d/f{i}")).unwrap())
                .collect();
            assert_eq!(first, again);
            assert!(filled(pc) - before > 25, "admit {admit}");
        }
    }

    #[test]
    fn a_matching_tag_is_only_a_hint() {
        let pc = PathCache::new();
        let c = Cred::root();
        let k1 = Key::new(base(1), b"a/b", 0, &c).unwrap();
        let i = PathCache::index(&k1);
        let k2 = (0..)
            .map(|n| Key::new(base(2), format!("q{n}").as_bytes(), 0, &c).unwrap())
            .find(|k| PathCache::index(k) == i && k.tag() != k1.tag())
            .unwrap();
        pc.put(&k1, 3, base(9), 2, Outcome::Found, None);
        assert_eq!(pc.tags[i].filled.load(HintOrdering::Relaxed), hint(&k1, 3));
        // A tag left by another fill (or equal by chance): the slot's words
        // still decide, and they name another key.
        pc.tags[i].filled.store(hint(&k2, 3), HintOrdering::Relaxed);
        assert!(pc.get(&k2, 3).is_none());
        // A tag that differs is a miss, without reading the slot.
        assert!(pc.get(&k1, 3).is_none());
        pc.tags[i].filled.store(hint(&k1, 3), HintOrdering::Relaxed);
        assert_eq!(pc.get(&k1, 3).unwrap().dentry, base(9));
    }
    /// `FastPaths::path_cache_dir_gen`: a file's unlink (in place, or
    /// unhashed while open), chmod and chown leave the namespace
    /// generation (and so every other entry) alone; a directory's chmod
    /// and removal move it; the answers for the changed file follow the
    /// change either way.
    #[test]
    fn only_a_directorys_change_moves_the_generation_with_dir_gen() {
        use crate::uapi::{O_CREAT, O_RDWR};
        for on in [true, false] {
            let mut fast = crate::FastPaths::seeds();
            fast.path_cache_dir_gen = on;
            let vfs = crate::Vfs::new(fast);
            let mut p = crate::Process::new(&vfs).unwrap();
            let dc = &vfs.caches().dcache;
            for d in ["/a", "/a/b", "/t"] {
                p.mkdir(d, 0o755).unwrap();
            }
            p.write_file("/a/b/f", b"1").unwrap();
            p.write_file("/t/x", b"2").unwrap();
            // Walked, filled on the second miss, answered by the third.
            for path in ["/a/b/f", "/t/x", "/a/b/f", "/t/x", "/a/b/f", "/t/x"] {
                p.stat(path).unwrap();
            }
            let g = dc.ns_gen();
            p.chmod("/t/x", 0o600).unwrap();
            assert_eq!(p.stat("/t/x").unwrap().st_mode & 0o7777, 0o600);
            p.chown("/t/x", 5, 6).unwrap();
            let st = p.stat("/t/x").unwrap();
            assert_eq!((st.st_uid, st.st_gid), (5, 6));
            p.unlink("/t/x").unwrap();
            assert_eq!(p.stat("/t/x"), Err(Errno::ENOENT));
            // Unlinked while open: unhashed, not made negative in place.
            let fd = p.open("/t/y", O_CREAT | O_RDWR, 0o644).unwrap();
            p.unlink("/t/y").unwrap();
            assert_eq!(p.stat("/t/y"), Err(Errno::ENOENT));
            assert_eq!(dc.ns_gen() == g, on, "file changes, dir_gen {on}");
            assert_eq!(p.stat("/a/b/f").unwrap().st_size, 1);
            // The open file's dentry dies at its close: a death always
            // counts (its memory is retired after it).
            p.close(fd).unwrap();
            let g = dc.ns_gen();
            p.chmod("/a", 0o700).unwrap();
            assert_ne!(dc.ns_gen(), g, "a directory's chmod, dir_gen {on}");
            let g = dc.ns_gen();
            p.rmdir("/t").unwrap();
            assert_ne!(dc.ns_gen(), g, "rmdir, dir_gen {on}");
            assert_eq!(p.stat("/t"), Err(Errno::ENOENT));
            assert_eq!(p.stat("/a/b/f").unwrap().st_size, 1);
        }
    }

    /// With `path_cache_dir_gen`, a dentry's count may move many times
    /// under one generation; once every `SEQ_GEN_PERIOD` write sections the
    /// generation moves anyway, so no entry outlives a wrap of the 32-bit
    /// count it recorded. Here: half a million chmods of one file.
    #[test]
    fn a_files_count_moves_the_generation_once_per_period() {
        let vfs = crate::Vfs::new(crate::FastPaths::seeds());
        let mut p = crate::Process::new(&vfs).unwrap();
        p.write_file("/f", b"").unwrap();
        let dc = &vfs.caches().dcache;
        let g = dc.ns_gen();
        // One write section per chmod that changes the mode: 2^19 + 1 of
        // them take the count past a multiple of 2^20 from any start.
        for i in 0..(1u32 << 19) + 1 {
            p.chmod("/f", if i % 2 == 0 { 0o600 } else { 0o644 })
                .unwrap();
        }
        assert_ne!(dc.ns_gen(), g);
    }
}
