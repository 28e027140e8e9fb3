//! An inode's attributes, their only home, as `stat` and the read path
//! read them without the inode's lock (`FastPaths::lockless_attrs`): words
//! the writers change under a sequence count, the way Linux's
//! `i_size_seqcount` lets a 32-bit reader load `i_size` (here for every
//! attribute `stat` reports). Under the inode's lock they are read
//! directly.
//!
//! The writers are serialized by the inode's write lock; each opens its
//! section at its first change and closes it when it lets the lock go
//! (see `inode::Writer`), so a reader sees either the attributes before a
//! change or after it, never a mix, and sees a change once the call that
//! made it has returned. Every word
//! is an atomic and the count follows the fence-based recipe of Boehm's
//! "Can seqlocks get along with programming language memory models?"
//! (2012): a reader that took any word of a write in progress also sees
//! that write's odd count and retries. A data structure only: it knows no
//! inode.

use crate::fs::Timespec;

/// What a reader gets: the attributes of one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Snapshot {
    pub(super) mode: u32,
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) nlink: u32,
    pub(super) size: u64,
    /// Pages held (8 blocks each), below [`PAGES_LIMIT`].
    pub(super) pages: u32,
    /// [`Attr::acl`](crate::fs::Attr::acl)'s flags.
    pub(super) acl: u8,
    /// atime, mtime, ctime, btime.
    pub(super) times: [Timespec; 4],
}

/// Set in the mode word when the last writer left no snapshot: the
/// reader asks the lock (a file whose data is in a memfd, a device node,
/// a time or a page count that does not fit the packed words).
const NONE: u32 = 1 << 31;
/// Pages a publication holds (24 bits); a file with more is not
/// published.
pub(super) const PAGES_LIMIT: u32 = 1 << 24;
/// Set in the mode word of a cell that is never published (the switch is
/// off): with [`NONE`], from the start.
const OFF: u32 = 1 << 29;
/// Set in the mode word when the times are kept outside the cell (one of
/// them does not fit its packed word): with [`NONE`].
const FAR: u32 = 1 << 30;
/// Set in the mode word of a cell whose count is also the writers' claim
/// (`FastPaths::light_overwrite`, see [`AttrCell::claim`]); never changes.
const LIGHT: u32 = 1 << 28;
/// Where the ACL flags sit in the mode word (the mode takes 16 bits).
const ACL_SHIFT: u32 = 16;
/// Set in the mode word of an `O_TMPFILE` inode never linked yet
/// (`I_LINKABLE`): the inode's state, kept here in a spare bit so the
/// inode needs no word of its own for it (its malloc size class). Written
/// only under the inode's write lock, never seen by `stat` (every read of
/// the mode masks it off), and no concern of lockless readers.
const LINKABLE: u32 = 1 << 24;
/// Set in the mode word once the inode's pages and inode count were
/// given back (`Tmpfs::evict_inode`); as [`LINKABLE`].
const GIVEN_BACK: u32 = 1 << 25;
/// The mode word's bits that are the inode's state, not its attributes:
/// kept by every store of the mode.
const STATE_BITS: u32 = LINKABLE | GIVEN_BACK;
/// How many times a reader retries a snapshot a writer keeps changing
/// before it asks the lock (which waits for the writer instead).
const TRIES: usize = 32;
/// Bits of a packed time's nanoseconds.
const NSEC_BITS: u32 = 30;
/// Packed times hold seconds in 34 signed bits (about 1697 to 2242).
const SEC_LIMIT: i64 = 1 << 33;

/// Packs a time into one word, if it fits.
pub(super) fn pack(t: Timespec) -> Option<u64> {
    ((-SEC_LIMIT..SEC_LIMIT).contains(&t.sec) && t.nsec < 1 << NSEC_BITS)
        .then(|| ((t.sec as u64) << NSEC_BITS) | u64::from(t.nsec))
}

fn unpack(w: u64) -> Timespec {
    Timespec {
        sec: (w as i64) >> NSEC_BITS,
        nsec: (w & ((1 << NSEC_BITS) - 1)) as u32,
    }
}

/// A publication's words, as the cell stores them.
#[derive(Clone, Copy)]
struct Words {
    /// The mode and the ACL flags above it.
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    pages: u32,
    size: u64,
    times: [u64; 4],
}

impl Words {
    /// The words of `snap`; `None` if there is none or it does not fit.
    fn of(snap: Option<&Snapshot>) -> Option<Words> {
        let s = snap?;
        let t = s.times;
        if s.pages >= PAGES_LIMIT {
            return None;
        }
        Some(Words {
            mode: (s.mode & 0xffff) | (u32::from(s.acl) << ACL_SHIFT),
            uid: s.uid,
            gid: s.gid,
            nlink: s.nlink,
            pages: s.pages,
            size: s.size,
            times: [pack(t[0])?, pack(t[1])?, pack(t[2])?, pack(t[3])?],
        })
    }
}

/// The cell, written once for two sets of atomics: std's for tmpfs (also
/// under loom, as the inode's lock is unmodelled, so the models that build
/// a whole VFS do not multiply their states with every inode's words) and
/// loom's for this cell's own models.
macro_rules! attr_cell {
    () => {
        /// The published attributes of one inode (64 bytes), with the readers'
        /// ctime mark beside them and, in the mode word, whether the cell is used
        /// at all.
        pub(crate) struct AttrCell {
            /// Even: stable; odd: a writer is between its first and last store.
            seq: AtomicU32,
            /// The mode, the ACL flags above it, [`NONE`] at the top.
            mode: AtomicU32,
            uid: AtomicU32,
            gid: AtomicU32,
            nlink: AtomicU32,
            /// The page count's low 16 bits and high 8.
            pages: AtomicU16,
            pages_hi: AtomicU8,
            /// Set (to 1) by a reader that reported the ctime
            /// ([`mark_queried`](Self::mark_queried)); cleared by the publication
            /// of a new ctime. Readers and the writer only store to it.
            queried: AtomicU8,
            size: AtomicU64,
            /// The four times, packed ([`pack`]).
            times: [AtomicU64; 4],
        }

        impl AttrCell {
            /// A cell holding `snap` (or nothing), not yet shared; `on` false: a
            /// cell that is never published ([`is_on`](Self::is_on)), whose words
            /// are read only under the inode's lock.
            pub(crate) fn new(on: bool, snap: Option<&Snapshot>) -> AttrCell {
                let c = AttrCell {
                    seq: AtomicU32::new(0),
                    mode: AtomicU32::new(if on { NONE } else { NONE | OFF }),
                    uid: AtomicU32::new(0),
                    gid: AtomicU32::new(0),
                    nlink: AtomicU32::new(0),
                    pages: AtomicU16::new(0),
                    pages_hi: AtomicU8::new(0),
                    queried: AtomicU8::new(0),
                    size: AtomicU64::new(0),
                    times: std::array::from_fn(|_| AtomicU64::new(0)),
                };
                if snap.is_some() {
                    c.store(Words::of(snap));
                }
                c
            }

            /// Whether lockless readers may use this cell (the mark never
            /// changes): with the switch off, writers skip the count.
            #[inline]
            pub(crate) fn is_on(&self) -> bool {
                self.mode.load(Ordering::Relaxed) & OFF == 0
            }

            /// Marks the ctime as reported (`fill_mg_cmtime`'s
            /// `I_CTIME_QUERIED`), by a lockless reader or one under the
            /// inode's lock: a plain store, the first time after each new
            /// ctime. A lockless mark made while a writer is between its
            /// lock and its new ctime may be cleared by that writer: that
            /// reader ran alongside the change, and Linux gives such a reader
            /// no guarantee either (its `inode_set_ctime_current` keeps the
            /// coarse time it took when a concurrent `stat` marks the old
            /// ctime).
            #[inline]
            pub(crate) fn mark_queried(&self) {
                if self.queried.load(Ordering::Relaxed) == 0 {
                    self.queried.store(1, Ordering::Relaxed);
                }
            }

            /// Whether the ctime was reported since it last changed.
            #[inline]
            pub(crate) fn queried(&self) -> bool {
                self.queried.load(Ordering::Relaxed) != 0
            }

            /// Clears the mark: a new ctime nobody has seen (the writer).
            #[inline]
            pub(crate) fn clear_queried(&self) {
                if self.queried() {
                    self.queried.store(0, Ordering::Relaxed);
                }
            }

            /// `FastPaths::light_overwrite`: whether this cell's count is
            /// also the writers' claim (set at creation, never changed).
            #[inline]
            pub(crate) fn is_light(&self) -> bool {
                self.mode.load(Ordering::Relaxed) & LIGHT != 0
            }

            /// Makes the count the writers' claim ([`is_light`](Self::is_light)),
            /// for a cell not yet shared and on.
            pub(crate) fn make_light(&self) {
                let m = self.mode.load(Ordering::Relaxed);
                if m & OFF == 0 {
                    self.mode.store(m | LIGHT, Ordering::Relaxed);
                }
            }

            /// A writer under the inode's write lock claims a light cell for
            /// as long as it holds the lock: the count made odd by a
            /// compare-and-swap from even, waiting while a light writer
            /// ([`try_claim`](Self::try_claim)) holds it, which takes no lock
            /// and holds it for one short copy. So a light writer runs wholly
            /// before or wholly after every locked writer. The acquire pairs
            /// with the last holder's release; the fence orders the odd count
            /// before this writer's stores, as [`begin`](Self::begin)'s does.
            /// Nothing for a cell that is not light.
            #[inline]
            pub(crate) fn claim(&self) {
                if !self.is_light() {
                    return;
                }
                let mut spins = 0u32;
                loop {
                    let s = self.seq.load(Ordering::Relaxed);
                    if s & 1 == 0
                        && self
                            .seq
                            .compare_exchange_weak(
                                s,
                                s.wrapping_add(1),
                                Ordering::Acquire,
                                Ordering::Relaxed,
                            )
                            .is_ok()
                    {
                        fence(Ordering::Release);
                        return;
                    }
                    crate::primitive::hint::spin_loop();
                    spins = spins.wrapping_add(1);
                    // A light writer preempted while it holds the count.
                    #[cfg(not(any(loom, shuttle)))]
                    if spins % 64 == 0 {
                        std::thread::yield_now();
                    }
                }
            }

            /// Lets a claim go when the writer changed nothing (it never
            /// opened a section): the count back to the even value it had,
            /// since no word changed (a reader that saw that value before
            /// keeps what it read). Nothing if not claimed.
            #[inline]
            pub(crate) fn unclaim(&self) {
                if self.is_light() {
                    let s = self.seq.load(Ordering::Relaxed);
                    if s & 1 != 0 {
                        self.seq.store(s.wrapping_sub(1), Ordering::Release);
                    }
                }
            }

            /// A light writer's claim (no lock held): the count made odd if
            /// it is even; `Some(even value)` to hand to
            /// [`release`](Self::release), `None` if a writer holds the cell
            /// (the caller then takes the lock). While it holds the claim no
            /// locked writer holds the inode's state, so the words, the page
            /// index and the pages stay as they are; it may write page bytes
            /// (through `racy`) but no word of the cell.
            #[inline]
            pub(crate) fn try_claim(&self) -> Option<u32> {
                let s = self.seq.load(Ordering::Relaxed);
                (s & 1 == 0
                    && self
                        .seq
                        .compare_exchange(
                            s,
                            s.wrapping_add(1),
                            Ordering::Acquire,
                            Ordering::Relaxed,
                        )
                        .is_ok())
                .then_some(s)
            }

            /// Under a light writer's claim ([`try_claim`](Self::try_claim)):
            /// whether an overwrite ending at `end` may go on without the
            /// inode's lock: the cell is published and its times are in it, the
            /// file is regular with no set-ID bit (nothing for the write to
            /// drop), `end` is within the size (the size stays), the ctime was
            /// not queried since it was set, and mtime and ctime both equal
            /// `now` (the coarse clock, packed): what `file_update_time` leaves
            /// as it is.
            #[inline]
            pub(crate) fn quiet_overwrite(&self, end: u64, now: u64) -> bool {
                let m = self.mode.load(Ordering::Relaxed);
                m & (NONE | FAR) == 0
                    && m & crate::fs::S_IFMT == crate::fs::S_IFREG
                    && m & (crate::fs::S_ISUID | crate::fs::S_ISGID) == 0
                    && end <= self.size.load(Ordering::Relaxed)
                    && !self.queried()
                    && self.times[1].load(Ordering::Relaxed) == now
                    && self.times[2].load(Ordering::Relaxed) == now
            }

            /// Ends a light writer's claim: the count back to `s`, its even
            /// value before ([`try_claim`](Self::try_claim)'s), with release:
            /// the next claimer sees the bytes written under this one.
            #[inline]
            pub(crate) fn release(&self, s: u32) {
                self.seq.store(s, Ordering::Release);
            }

            /// Opens a writer's section: the count made odd, ordered before
            /// every store that follows. Only one writer at a time: the caller
            /// holds the inode's write lock (or the cell is not shared yet).
            /// Nothing with the switch off.
            #[inline]
            pub(crate) fn begin(&self) {
                if self.is_on() {
                    let s = self.seq.load(Ordering::Relaxed);
                    if s & 1 != 0 {
                        // Claimed ([`claim`](Self::claim)): already odd, and
                        // the claim's fence orders it before what follows.
                        return;
                    }
                    self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
                    // A reader whose loads see any store of this section sees
                    // the odd count after its acquire fence.
                    fence(Ordering::Release);
                }
            }

            /// Closes the section [`begin`](Self::begin) opened: the count
            /// even again, after every store of the section.
            #[inline]
            pub(crate) fn end(&self) {
                if self.is_on() {
                    let s = self.seq.load(Ordering::Relaxed);
                    self.seq.store(s.wrapping_add(1), Ordering::Release);
                }
            }

            /// Publishes `snap` in one section (`None`: readers must ask the
            /// lock); a new ctime clears the readers' mark. What the models
            /// and tests use; tmpfs's writers store field by field
            /// (`inode::WrGuard`).
            #[cfg(test)]
            #[cfg_attr(any(loom, shuttle), allow(dead_code))]
            pub(crate) fn publish(&self, snap: Option<&Snapshot>) {
                let new = Words::of(snap);
                let new_ctime =
                    new.is_none_or(|w| self.times[2].load(Ordering::Relaxed) != w.times[2]);
                self.begin();
                self.store(new);
                self.end();
                if new_ctime {
                    self.clear_queried();
                }
            }

            /// The page count's two words (read by the writer, or by a reader
            /// whose count check covers them).
            fn pages(&self) -> u32 {
                u32::from(self.pages.load(Ordering::Relaxed))
                    | (u32::from(self.pages_hi.load(Ordering::Relaxed)) << 16)
            }

            /// Stores `w` (`None`: nothing published), in a section.
            fn store(&self, w: Option<Words>) {
                let off = self.mode.load(Ordering::Relaxed) & (OFF | LIGHT | STATE_BITS);
                let Some(w) = w else {
                    self.mode.store(NONE | off, Ordering::Relaxed);
                    return;
                };
                self.mode.store(w.mode | off, Ordering::Relaxed);
                self.uid.store(w.uid, Ordering::Relaxed);
                self.gid.store(w.gid, Ordering::Relaxed);
                self.nlink.store(w.nlink, Ordering::Relaxed);
                self.set_size_pages(w.size, w.pages);
                for (a, t) in self.times.iter().zip(w.times) {
                    a.store(t, Ordering::Relaxed);
                }
            }

            // What follows is read under the inode's lock (read or write: no
            // writer is in a section meanwhile, or the caller is that writer)
            // and written in a section.

            /// The mode's 16 bits.
            #[inline]
            pub(crate) fn mode(&self) -> u32 {
                self.mode.load(Ordering::Relaxed) & 0xffff
            }

            /// [`Attr::acl`](crate::fs::Attr::acl)'s flags.
            #[inline]
            pub(crate) fn acl(&self) -> u8 {
                ((self.mode.load(Ordering::Relaxed) >> ACL_SHIFT) & 0xff) as u8
            }

            #[inline]
            pub(crate) fn uid(&self) -> u32 {
                self.uid.load(Ordering::Relaxed)
            }

            #[inline]
            pub(crate) fn gid(&self) -> u32 {
                self.gid.load(Ordering::Relaxed)
            }

            #[inline]
            pub(crate) fn nlink(&self) -> u32 {
                self.nlink.load(Ordering::Relaxed)
            }

            /// Whether the inode is an `O_TMPFILE` one never linked yet
            /// ([`LINKABLE`]).
            #[inline]
            pub(crate) fn linkable(&self) -> bool {
                self.mode.load(Ordering::Relaxed) & LINKABLE != 0
            }

            /// Whether the inode was given back ([`GIVEN_BACK`]).
            #[inline]
            pub(crate) fn given_back(&self) -> bool {
                self.mode.load(Ordering::Relaxed) & GIVEN_BACK != 0
            }

            /// Sets or clears [`LINKABLE`] (under the inode's write lock, or
            /// before it is shared). No section: lockless readers mask the
            /// bit off, so it changes nothing they read.
            #[inline]
            pub(crate) fn set_linkable(&self, on: bool) {
                self.set_state_bit(LINKABLE, on);
            }

            /// Sets [`GIVEN_BACK`] (under the inode's write lock); never
            /// cleared.
            #[inline]
            pub(crate) fn set_given_back(&self) {
                self.set_state_bit(GIVEN_BACK, true);
            }

            /// A plain load and store of the mode word: every other store to
            /// it is made under the same write lock, and lockless readers
            /// only load it.
            #[inline]
            fn set_state_bit(&self, bit: u32, on: bool) {
                let w = self.mode.load(Ordering::Relaxed);
                let n = if on { w | bit } else { w & !bit };
                if n != w {
                    self.mode.store(n, Ordering::Relaxed);
                }
            }

            /// Whether the times are kept outside the cell (one does not fit
            /// its word): the words then hold nothing, and lockless readers
            /// ask the lock.
            #[inline]
            pub(crate) fn far(&self) -> bool {
                self.mode.load(Ordering::Relaxed) & FAR != 0
            }

            /// Whether lockless readers must ask the lock.
            #[inline]
            pub(crate) fn none(&self) -> bool {
                self.mode.load(Ordering::Relaxed) & NONE != 0
            }

            /// Time `k` (atime, mtime, ctime, btime), unless [`far`](Self::far).
            #[inline]
            pub(crate) fn time(&self, k: usize) -> Timespec {
                unpack(self.times[k].load(Ordering::Relaxed))
            }

            /// Time `k`'s packed word.
            #[inline]
            pub(crate) fn time_word(&self, k: usize) -> u64 {
                self.times[k].load(Ordering::Relaxed)
            }

            /// The published size and page count.
            #[inline]
            pub(crate) fn size_pages(&self) -> (u64, u32) {
                (self.size.load(Ordering::Relaxed), self.pages())
            }

            /// Sets the mode and the ACL flags (in a section).
            #[inline]
            pub(crate) fn set_mode_acl(&self, mode: u32, acl: u8) {
                let flags =
                    self.mode.load(Ordering::Relaxed) & (NONE | FAR | OFF | LIGHT | STATE_BITS);
                self.mode.store(
                    flags | (mode & 0xffff) | (u32::from(acl) << ACL_SHIFT),
                    Ordering::Relaxed,
                );
            }

            /// Sets where the times are ([`far`](Self::far)) and whether
            /// lockless readers must ask the lock (in a section; a cell that
            /// is off always sends them there).
            #[inline]
            pub(crate) fn set_flags(&self, far: bool, none: bool) {
                let w = self.mode.load(Ordering::Relaxed);
                let off = w & OFF;
                let mut f = off;
                if far {
                    f |= FAR;
                }
                if none || off != 0 {
                    f |= NONE;
                }
                self.mode
                    .store((w & !(NONE | FAR | OFF)) | f, Ordering::Relaxed);
            }

            #[inline]
            pub(crate) fn set_uid(&self, v: u32) {
                self.uid.store(v, Ordering::Relaxed);
            }

            #[inline]
            pub(crate) fn set_gid(&self, v: u32) {
                self.gid.store(v, Ordering::Relaxed);
            }

            #[inline]
            pub(crate) fn set_nlink(&self, v: u32) {
                self.nlink.store(v, Ordering::Relaxed);
            }

            /// Sets time `k`'s packed word ([`pack`]).
            #[inline]
            pub(crate) fn set_time_word(&self, k: usize, w: u64) {
                self.times[k].store(w, Ordering::Relaxed);
            }

            /// Sets the size and the page count (below 2^24).
            #[inline]
            pub(crate) fn set_size_pages(&self, size: u64, pages: u32) {
                self.size.store(size, Ordering::Relaxed);
                self.pages.store(pages as u16, Ordering::Relaxed);
                self.pages_hi.store((pages >> 16) as u8, Ordering::Relaxed);
            }

            /// The mode (without the ACL flags) and size the last writer
            /// published, as [`read`](Self::read) gives them but loading only
            /// those two words (the read path's size check).
            #[inline]
            pub(crate) fn read_size(&self) -> Option<(u32, u64)> {
                self.read_with(|mode| (mode & 0xffff, self.size.load(Ordering::Relaxed)))
            }

            /// The attributes the last writer published, or `None` when it left
            /// none or writers kept changing them (ask the lock then).
            #[inline(always)]
            pub(crate) fn read(&self) -> Option<Snapshot> {
                self.read_with(|mode| Snapshot {
                    mode: mode & 0xffff,
                    acl: ((mode >> ACL_SHIFT) & 0xff) as u8,
                    uid: self.uid.load(Ordering::Relaxed),
                    gid: self.gid.load(Ordering::Relaxed),
                    nlink: self.nlink.load(Ordering::Relaxed),
                    pages: self.pages(),
                    size: self.size.load(Ordering::Relaxed),
                    times: [
                        unpack(self.times[0].load(Ordering::Relaxed)),
                        unpack(self.times[1].load(Ordering::Relaxed)),
                        unpack(self.times[2].load(Ordering::Relaxed)),
                        unpack(self.times[3].load(Ordering::Relaxed)),
                    ],
                })
            }

            /// The readers' side of the sequence count: `load` (given the
            /// mode word) reads the words it needs, and its value is kept
            /// if no writer's section overlapped it and the last writer left
            /// the cell usable (`NONE` clear); else `None` after `TRIES`.
            /// Always inlined: out of line, `stat` got the snapshot back in
            /// memory and its wide loads of it waited for the narrower
            /// stores that wrote it (a store-forwarding stall, some 15 % of
            /// a stat answered by the path cache).
            #[inline(always)]
            fn read_with<T>(&self, load: impl Fn(u32) -> T) -> Option<T> {
                for _ in 0..TRIES {
                    let s1 = self.seq.load(Ordering::Acquire);
                    if s1 & 1 != 0 {
                        crate::primitive::hint::spin_loop();
                        continue;
                    }
                    let mode = self.mode.load(Ordering::Relaxed);
                    let v = load(mode);
                    // The loads above are ordered before the count's re-read: if
                    // any of them saw a later writer's store, so does this load.
                    fence(Ordering::Acquire);
                    if self.seq.load(Ordering::Relaxed) == s1 {
                        return (mode & NONE == 0).then_some(v);
                    }
                    crate::primitive::hint::retry_wait();
                }
                None
            }
        }
    };
}

/// The cell tmpfs uses: std's atomics in every build.
mod unmodelled {
    use super::{
        ACL_SHIFT, FAR, GIVEN_BACK, LIGHT, LINKABLE, NONE, OFF, STATE_BITS, Snapshot, TRIES, Words,
        unpack,
    };
    use crate::fs::Timespec;
    use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering, fence};
    attr_cell!();
}

/// The same cell on loom's atomics, for the models (which use only part
/// of it).
#[cfg(all(test, loom))]
#[allow(dead_code)]
mod modelled {
    use super::{
        ACL_SHIFT, FAR, GIVEN_BACK, LIGHT, LINKABLE, NONE, OFF, STATE_BITS, Snapshot, TRIES, Words,
        unpack,
    };
    use crate::fs::Timespec;
    use loom::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering, fence};
    attr_cell!();
}

pub(super) use unmodelled::AttrCell;

#[cfg(all(test, loom))]
mod loom_tests;

// Loom's and shuttle's atomics are bigger and live only inside a model.
#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::*;

    fn snap(k: u32) -> Snapshot {
        let t = Timespec {
            sec: i64::from(k) - 5,
            nsec: k * 7,
        };
        Snapshot {
            mode: 0o100644 | k,
            uid: k,
            gid: k + 1,
            nlink: k + 2,
            size: u64::from(k) << 33,
            pages: k + 3,
            acl: 3,
            times: [t; 4],
        }
    }

    #[test]
    fn round_trips_and_refuses_what_does_not_fit() {
        let c = AttrCell::new(true, None);
        assert_eq!(c.read(), None);
        for k in [0, 1, 77] {
            c.publish(Some(&snap(k)));
            assert_eq!(c.read(), Some(snap(k)));
        }
        let mut far = snap(2);
        far.times[3].sec = SEC_LIMIT;
        c.publish(Some(&far));
        assert_eq!(c.read(), None);
        far.times[3].sec = -SEC_LIMIT;
        c.publish(Some(&far));
        assert_eq!(c.read(), Some(far));
        far.pages = PAGES_LIMIT - 1;
        c.publish(Some(&far));
        assert_eq!(c.read(), Some(far));
        far.pages = PAGES_LIMIT;
        c.publish(Some(&far));
        assert_eq!(c.read(), None);
        c.publish(Some(&snap(9)));
        assert_eq!(c.read_size(), Some((snap(9).mode & 0xffff, snap(9).size)));
        c.publish(None);
        assert_eq!(c.read(), None);
        assert_eq!(c.read_size(), None);
    }

    #[test]
    fn the_ctime_mark_stays_apart_and_goes_with_a_publication() {
        let c = AttrCell::new(true, Some(&snap(4)));
        assert!(c.is_on() && !c.queried());
        c.mark_queried();
        assert!(c.queried());
        assert_eq!(c.read(), Some(snap(4)));
        // A change that leaves the ctime keeps the mark; a new ctime
        // clears it.
        let mut same_ctime = snap(4);
        same_ctime.size += 1;
        c.publish(Some(&same_ctime));
        assert!(c.queried());
        assert_eq!(c.read(), Some(same_ctime));
        c.publish(Some(&snap(5)));
        assert!(!c.queried());
        let off = AttrCell::new(false, None);
        assert!(!off.is_on());
        assert_eq!(off.read(), None);
    }

    /// The linkable and given-back bits are kept by every store of the
    /// mode word and shown by no read of the mode.
    #[test]
    fn the_state_bits_stay_and_never_show() {
        for on in [true, false] {
            let c = AttrCell::new(on, None);
            c.set_linkable(true);
            c.begin();
            c.set_mode_acl(0o107777, 3);
            c.set_flags(false, false);
            c.end();
            assert!(c.linkable() && !c.given_back());
            assert_eq!((c.mode(), c.acl()), (0o107777, 3));
            if on {
                c.publish(Some(&snap(6)));
                assert_eq!(c.read(), Some(snap(6)));
                assert_eq!(c.read_size().map(|m| m.0), Some(snap(6).mode & 0xffff));
                assert!(c.linkable(), "kept by a publication");
            }
            c.set_given_back();
            c.set_linkable(false);
            c.begin();
            c.set_mode_acl(0o100000, 0);
            c.set_flags(true, true);
            c.end();
            assert!(!c.linkable() && c.given_back());
            assert_eq!((c.mode(), c.acl(), c.far()), (0o100000, 0, true));
            assert_eq!(c.is_on(), on);
            c.set_flags(false, false);
            c.begin();
            c.set_mode_acl(0o100644, 0);
            c.end();
            assert_eq!(c.read().map(|s| s.mode), on.then_some(0o100644));
            assert!(c.given_back());
        }
    }

    #[test]
    fn the_cell_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<AttrCell>(), 64);
    }
}
