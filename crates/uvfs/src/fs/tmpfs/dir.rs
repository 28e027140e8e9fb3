//! Directories: the entries of one directory by offset, by name and in
//! listing order (the stable `d_off` cookies of Linux's `simple_offset`
//! directories in `fs/libfs.c`), name lookup, and readdir.

use std::mem::ManuallyDrop;

use hashbrown::HashTable;

use super::{DIR_OFFSET_EOD, NAME_MAX};
use crate::errno::Errno;
use crate::fs::Ino;

/// What a directory entry holds: a reference to the inode it names, which
/// knows its number. tmpfs's entries hold `Arc<Inode>` (the impl is in
/// `inode.rs`, so this module does not depend on the inode's type and the
/// inode's `Kind` can hold a [`Dir`] without an import circle).
pub(super) trait Target {
    /// The number of the inode this reference names.
    fn ino(&self) -> Ino;
}

/// Cookie meaning "first real entry" (`DIR_OFFSET_FIRST`).
pub(super) const DIR_OFFSET_FIRST: u64 = 2;
/// Lowest offset given to an entry (`DIR_OFFSET_MIN`).
pub(super) const DIR_OFFSET_MIN: u64 = 3;
/// Readdir snapshots this many entries per lock hold.
pub(super) const READDIR_BATCH: usize = 128;

/// No entry (in the listing links and `head`): offsets start at
/// [`DIR_OFFSET_MIN`].
const NONE: u32 = 0;

/// Removed entries kept in place (see [`Dir`]) before a compaction is
/// considered at all.
const MIN_TOMBS: u32 = 64;

/// Names of at most this many bytes are stored in the entry itself.
const INLINE: usize = 16;

/// An entry's name: inline when it is at most [`INLINE`] bytes, else a
/// heap copy; which one is told by the entry's `name_len`.
union NameRepr {
    inline: [u8; INLINE],
    heap: ManuallyDrop<Box<[u8]>>,
}

/// A directory entry as stored: in [`Dir`]'s vector of entries, at its
/// offset's place, linked to its neighbours in the listing. 40 bytes; a
/// name of at most 16 bytes costs no allocation. A name length of 0 marks
/// a removed entry not yet compacted away (a name is never empty).
///
/// The entry holds its inode (a reference, in the word where the inode's
/// number was): a lookup, a create's or a rename's victim is reached from
/// the entry, not searched for in the inode table. Hard links are several
/// entries holding one inode. A removed entry holds none.
pub(super) struct Slot<T> {
    name: NameRepr,
    inode: Option<T>,
    /// The cookie (`d_off` of the entry listed before it); below
    /// `DIR_OFFSET_EOD`, so it fits 32 bits.
    offset: u32,
    /// The offsets of the entries listed just before (newer) and just
    /// after (older) this one, or [`NONE`].
    prev: u32,
    next: u32,
    /// The file type (the mode's `S_IFMT` bits, below 2^16).
    ftype: u16,
    /// The name's length (at most `NAME_MAX`, 255); 0: removed.
    name_len: u8,
}

impl<T: Target> Slot<T> {
    fn new(name: &[u8], inode: T, ftype: u32, offset: u32, next: u32) -> Slot<T> {
        debug_assert!(!name.is_empty() && name.len() <= NAME_MAX);
        let name_len = u8::try_from(name.len()).expect("a name is at most NAME_MAX bytes");
        let repr = if name.len() <= INLINE {
            let mut b = [0; INLINE];
            b[..name.len()].copy_from_slice(name);
            NameRepr { inline: b }
        } else {
            NameRepr {
                heap: ManuallyDrop::new(name.into()),
            }
        };
        Slot {
            name: repr,
            inode: Some(inode),
            offset,
            prev: NONE,
            next,
            ftype: u16::try_from(ftype).expect("a file type fits 16 bits"),
            name_len,
        }
    }

    /// The name (empty for a removed entry).
    pub(super) fn name(&self) -> &[u8] {
        let n = usize::from(self.name_len);
        if n == 0 {
            &[]
        } else if n <= INLINE {
            // SAFETY: `new` stores a name of at most INLINE bytes inline,
            // and `name_len` changes only to 0 (`clear_name`).
            unsafe { &self.name.inline[..n] }
        } else {
            // SAFETY: `new` stores a longer name as the heap box, alive
            // until `clear_name` sets `name_len` to 0.
            unsafe { &self.name.heap }
        }
    }

    /// The inode this entry names (a live entry always holds one).
    pub(super) fn inode(&self) -> &T {
        self.inode.as_ref().expect("a live entry holds its inode")
    }

    /// The number of the inode this entry names.
    pub(super) fn ino(&self) -> Ino {
        self.inode().ino()
    }

    /// The file type (`S_IFMT` bits).
    pub(super) fn ftype(&self) -> u32 {
        u32::from(self.ftype)
    }

    /// The entry's offset (its readdir cookie).
    pub(super) fn offset(&self) -> u64 {
        u64::from(self.offset)
    }

    fn is_removed(&self) -> bool {
        self.name_len == 0
    }

    /// Frees the name and marks the entry removed; the inode it held.
    fn clear(&mut self) -> Option<T> {
        self.free_name();
        self.inode.take()
    }
}

impl<T> Slot<T> {
    /// Frees the name (if on the heap) and marks the entry removed.
    fn free_name(&mut self) {
        if usize::from(self.name_len) > INLINE {
            // SAFETY: a name this long is the heap box (`new`), dropped
            // only here, and `name_len` is 0 from now on, so never again.
            unsafe { ManuallyDrop::drop(&mut self.name.heap) };
        }
        self.name_len = 0;
    }
}

impl<T> Drop for Slot<T> {
    fn drop(&mut self) {
        self.free_name();
    }
}

/// What [`Dir::remove`] took out.
pub(super) struct Removed<T> {
    offset: u32,
    /// The entry's reference to its inode.
    pub(super) inode: T,
}

impl<T> Removed<T> {
    /// The removed entry's offset.
    pub(super) fn offset(&self) -> u64 {
        u64::from(self.offset)
    }
}

/// A directory's entries, in one vector sorted by offset (Linux keeps one
/// tree of offsets, the maple tree of `simple_offset`), with a hash table
/// from name to the entry's index (holding the index and 32 bits of the
/// name's hash: the name itself is stored once, in the entry), and the
/// listing order (newest first) as links between the entries (Linux's
/// `d_children` list). Offsets are allocated upwards, so a new entry is
/// normally pushed at the end and the listing order is the reverse of the
/// vector's; a rename over a name or an exchange (which keep an offset but
/// move the entry to the head) and offsets reused after the allocator wraps
/// are where the links differ from that order.
///
/// A removed entry stays in the vector as a tombstone (empty name) unless
/// it is the last (a create and unlink in a loop push and pop); the vector
/// is compacted, and the table's indices rebuilt, when tombstones
/// outnumber both [`MIN_TOMBS`] and the live entries. Per entry: the
/// vector's 40 bytes (times its spare capacity), the table's 8 bytes and
/// control byte (times its), and for a name of more than 16 bytes its
/// allocation, against three ordered maps' nodes and a shared name before.
pub(super) struct Dir<T> {
    entries: Vec<Slot<T>>,
    by_name: HashTable<(u32, u32)>,
    live: u32,
    tombs: u32,
    /// The first entry listed (the newest), or [`NONE`].
    head: u32,
    next_offset: u64,
}

/// The hash of a name (FxHash-style, a word at a time: the dentry cache's
/// component hash, seeded per process), folded to the 32 bits the table
/// stores. A caller that searches a name and then inserts or removes it
/// computes it once and passes it to the `_hashed` forms.
pub(super) fn name_hash32(name: &[u8]) -> u32 {
    static SEED: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u8(0);
        h.finish() as usize
    });
    let (_, h) =
        crate::dcache::hash::hash_component(std::ptr::without_provenance::<u8>(seed), name);
    (h >> 32) as u32 ^ h as u32
}

/// The table's 64-bit hash of a stored 32-bit one (spread over the high
/// bits, which hashbrown's tag bytes use, and the low ones, its bucket).
fn spread(h: u32) -> u64 {
    u64::from(h).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(h)
}

impl<T> Default for Dir<T> {
    fn default() -> Dir<T> {
        Dir {
            entries: Vec::new(),
            by_name: HashTable::new(),
            live: 0,
            tombs: 0,
            head: NONE,
            next_offset: 0,
        }
    }
}

impl<T: Target> Dir<T> {
    pub(super) fn new() -> Dir<T> {
        Dir {
            next_offset: DIR_OFFSET_MIN,
            ..Dir::default()
        }
    }

    /// The index of the (live) entry named `name`, whose
    /// [`name_hash32`] is `h`.
    fn find_name(&self, name: &[u8], h: u32) -> Option<usize> {
        self.by_name
            .find(spread(h), |&(i, hh)| {
                hh == h && self.entries[i as usize].name() == name
            })
            .map(|&(i, _)| i as usize)
    }

    /// The index of the entry (live or removed) at `offset`, or where one
    /// would go.
    fn find_offset(&self, offset: u32) -> Result<usize, usize> {
        // The common cases first: the newest entry, or past it (a new
        // offset): no search over a large directory's cold lines.
        if let Some(l) = self.entries.last() {
            if l.offset == offset {
                return Ok(self.entries.len() - 1);
            }
            if l.offset < offset {
                return Err(self.entries.len());
            }
        }
        self.entries.binary_search_by_key(&offset, |e| e.offset)
    }

    /// The index of the live entry at `offset`, which the caller knows is
    /// linked.
    fn at(&self, offset: u32) -> usize {
        let i = self
            .find_offset(offset)
            .expect("a linked offset has an entry");
        debug_assert!(!self.entries[i].is_removed());
        i
    }

    /// As [`at`](Self::at), trying index `hint` first (a neighbour in the
    /// listing is usually the next slot up or down).
    fn at_near(&self, offset: u32, hint: Option<usize>) -> usize {
        match hint {
            Some(h) if self.entries.get(h).is_some_and(|e| e.offset == offset) => h,
            _ => self.at(offset),
        }
    }

    /// Moves every entry's inode into `out`, leaving the directory empty
    /// as new: for a caller freeing a tree without recursing (`Tmpfs`'s
    /// drop), which frees each inode only once its entries are out.
    pub(super) fn take_inodes(&mut self, out: &mut Vec<T>) {
        out.extend(self.entries.iter_mut().filter_map(|s| s.inode.take()));
        *self = Dir::new();
    }

    pub(super) fn get(&self, name: &[u8]) -> Option<&Slot<T>> {
        self.get_hashed(name, name_hash32(name))
    }

    /// [`get`](Self::get) of a name whose [`name_hash32`] is `h`.
    pub(super) fn get_hashed(&self, name: &[u8], h: u32) -> Option<&Slot<T>> {
        debug_assert_eq!(h, name_hash32(name));
        self.find_name(name, h).map(|i| &self.entries[i])
    }

    pub(super) fn len(&self) -> u64 {
        u64::from(self.live)
    }

    /// Allocates a free offset cyclically in `[DIR_OFFSET_MIN, max]`
    /// (Linux's `mtree_alloc_cyclic`); `ENOSPC` when all are taken.
    pub(super) fn alloc_offset(&mut self, max: u64) -> Result<u64, Errno> {
        self.alloc_offset_besides(max, None)
    }

    /// [`alloc_offset`](Self::alloc_offset) with `taken` counted as used
    /// too: a second offset allocated before the first is inserted (a
    /// rename's whiteout and the new name, in one directory).
    pub(super) fn alloc_offset_besides(
        &mut self,
        max: u64,
        taken: Option<u64>,
    ) -> Result<u64, Errno> {
        let max = max.min(DIR_OFFSET_EOD - 1);
        if max < DIR_OFFSET_MIN {
            return Err(Errno::ENOSPC);
        }
        let mut start = self.next_offset;
        if !(DIR_OFFSET_MIN..=max).contains(&start) {
            start = DIR_OFFSET_MIN;
        }
        for _ in 0..2 {
            // The smallest offset >= start that no live entry and not
            // `taken` holds.
            let mut c = start;
            let mut i = match self.find_offset(c as u32) {
                Ok(i) | Err(i) => i,
            };
            while c <= max {
                if Some(c) == taken {
                    c += 1;
                    continue;
                }
                while let Some(e) = self.entries.get(i)
                    && (e.is_removed() || u64::from(e.offset) < c)
                {
                    i += 1;
                }
                match self.entries.get(i) {
                    Some(e) if u64::from(e.offset) == c => {
                        c += 1;
                        i += 1;
                    }
                    _ => break,
                }
            }
            if c <= max {
                self.next_offset = c.saturating_add(1);
                return Ok(c);
            }
            start = DIR_OFFSET_MIN;
        }
        Err(Errno::ENOSPC)
    }

    /// Inserts at the head of the listing with the given offset (free: from
    /// [`alloc_offset`](Self::alloc_offset) or a removed entry's).
    pub(super) fn insert(&mut self, name: &[u8], inode: T, ftype: u32, offset: u64) {
        self.insert_hashed(name, name_hash32(name), inode, ftype, offset);
    }

    /// [`insert`](Self::insert) of a name whose [`name_hash32`] is `h`.
    pub(super) fn insert_hashed(&mut self, name: &[u8], h: u32, inode: T, ftype: u32, offset: u64) {
        debug_assert!(!name.is_empty());
        debug_assert_eq!(h, name_hash32(name));
        let offset = u32::try_from(offset).expect("offsets are below DIR_OFFSET_EOD");
        let slot = Slot::new(name, inode, ftype, offset, self.head);
        let i = match self.find_offset(offset) {
            Ok(i) => {
                debug_assert!(self.entries[i].is_removed(), "offset {offset} taken");
                self.entries[i] = slot;
                self.tombs -= 1;
                i
            }
            Err(i) if i == self.entries.len() => {
                self.entries.push(slot);
                i
            }
            Err(i) => {
                // An offset below the newest one (the allocator wrapped):
                // the entries above move up one place.
                self.entries.insert(i, slot);
                for (j, _) in self.by_name.iter_mut() {
                    if *j as usize >= i {
                        *j += 1;
                    }
                }
                i
            }
        };
        if self.head != NONE {
            let h = self.at(self.head);
            self.entries[h].prev = offset;
        }
        self.head = offset;
        let i = u32::try_from(i).expect("fewer than 2^32 entries");
        self.by_name
            .insert_unique(spread(h), (i, h), |&(_, hh)| spread(hh));
        self.live += 1;
    }

    pub(super) fn remove(&mut self, name: &[u8]) -> Option<Removed<T>> {
        self.remove_hashed(name, name_hash32(name))
    }

    /// [`remove`](Self::remove) of a name whose [`name_hash32`] is `h`.
    pub(super) fn remove_hashed(&mut self, name: &[u8], h: u32) -> Option<Removed<T>> {
        debug_assert_eq!(h, name_hash32(name));
        let entries = &self.entries;
        let (i, _) = self
            .by_name
            .find_entry(spread(h), |&(i, hh)| {
                hh == h && entries[i as usize].name() == name
            })
            .ok()?
            .remove()
            .0;
        let i = i as usize;
        let (prev, next) = (self.entries[i].prev, self.entries[i].next);
        // The usual neighbours: the newer entry one slot up, the older one
        // one slot down.
        if prev == NONE {
            self.head = next;
        } else {
            let p = self.at_near(prev, Some(i + 1));
            self.entries[p].next = next;
        }
        if next != NONE {
            let n = self.at_near(next, i.checked_sub(1));
            self.entries[n].prev = prev;
        }
        let e = &mut self.entries[i];
        let offset = e.offset;
        let inode = e.clear().expect("a live entry holds its inode");
        let removed = Removed { offset, inode };
        self.live -= 1;
        self.tombs += 1;
        if self.live == 0 {
            // Empty: give the memory of a large directory back, keep a
            // small one's (a create and unlink in an empty directory then
            // allocate nothing here).
            self.entries.clear();
            self.tombs = 0;
            if self.entries.capacity() > MIN_TOMBS as usize {
                self.entries = Vec::new();
                self.by_name = HashTable::new();
            } else {
                self.by_name.clear();
            }
        } else if i + 1 == self.entries.len() {
            while self.entries.last().is_some_and(Slot::is_removed) {
                self.entries.pop();
                self.tombs -= 1;
            }
        } else if self.tombs > MIN_TOMBS && self.tombs > self.live {
            self.compact();
        }
        Some(removed)
    }

    /// Drops the removed entries from the vector and rebuilds the table's
    /// indices (the links are offsets and stay).
    fn compact(&mut self) {
        self.entries.retain(|e| !e.is_removed());
        self.tombs = 0;
        if self.entries.capacity() > 4 * self.entries.len() {
            self.entries.shrink_to(2 * self.entries.len());
        }
        self.by_name.clear();
        self.by_name
            .shrink_to(self.entries.len(), |&(_, hh)| spread(hh));
        for (i, e) in self.entries.iter().enumerate() {
            let h = name_hash32(e.name());
            self.by_name
                .insert_unique(spread(h), (i as u32, h), |&(_, hh)| spread(hh));
        }
    }

    /// Points `name` at another inode and moves it to the head, keeping its
    /// offset (one side of `RENAME_EXCHANGE`); the entry's old reference.
    pub(super) fn replace_to_head(&mut self, name: &[u8], inode: T, ftype: u32) -> Option<T> {
        let slot = self.remove(name)?;
        self.insert(name, inode, ftype, slot.offset());
        Some(slot.inode)
    }

    /// The offset of the entry to resume at for cookie `pos`
    /// (`pos >= DIR_OFFSET_FIRST`); `None`: end of directory.
    pub(super) fn resume(&self, pos: u64) -> Option<u64> {
        if pos == DIR_OFFSET_FIRST {
            return (self.head != NONE).then_some(u64::from(self.head));
        }
        // Exactly the end-of-directory cookie: nothing more. Positions past
        // it (lseek allows up to i64::MAX; host) resume like any other, at
        // the largest offset <= pos; larger values are negative as loff_t
        // and unreachable on Linux.
        if pos == DIR_OFFSET_EOD || pos > i64::MAX as u64 {
            return None;
        }
        // Linux: the entry with the largest offset <= pos, then onwards in
        // list order. (None found: Linux restarts at the head; see the
        // module docs for why this ends instead.)
        let p = u32::try_from(pos).unwrap_or(u32::MAX);
        let end = self.entries.partition_point(|e| e.offset <= p);
        self.entries[..end]
            .iter()
            .rev()
            .find(|e| !e.is_removed() && u64::from(e.offset) >= DIR_OFFSET_MIN)
            .map(Slot::offset)
    }

    /// Up to `n` entries in listing order from the one at offset `from`
    /// (from [`resume`](Self::resume)), each with the cookie of the entry
    /// listed after it ([`DIR_OFFSET_EOD`] after the last).
    pub(super) fn list_from(&self, from: u64, n: usize) -> impl Iterator<Item = (&Slot<T>, u64)> {
        let mut cur = u32::try_from(from).map_or(NONE, |o| o);
        let mut i = if cur == NONE { 0 } else { self.at(cur) };
        std::iter::from_fn(move || {
            if cur == NONE {
                return None;
            }
            let e = &self.entries[i];
            cur = e.next;
            if cur != NONE {
                // The usual order: the next older entry is the one below.
                i = match i.checked_sub(1) {
                    Some(j) if self.entries[j].offset == cur => j,
                    _ => self.at(cur),
                };
            }
            let next = if cur == NONE {
                DIR_OFFSET_EOD
            } else {
                u64::from(cur)
            };
            Some((e, next))
        })
        .take(n)
    }

    pub(super) fn head_cookie(&self) -> u64 {
        if self.head == NONE {
            DIR_OFFSET_EOD
        } else {
            u64::from(self.head)
        }
    }

    /// The live entries, in offset order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Slot<T>> {
        self.entries.iter().filter(|e| !e.is_removed())
    }

    /// Checks the index's invariants (for `fsck`).
    pub(super) fn check(&self) -> Result<(), String> {
        if !self.entries.is_sorted_by(|a, b| a.offset < b.offset) {
            return Err("entries out of offset order".into());
        }
        let live = self.iter().count();
        let tombs = self.entries.len() - live;
        if live != self.live as usize || tombs != self.tombs as usize {
            return Err(format!(
                "counts: {live} live, {tombs} removed; recorded {} and {}",
                self.live, self.tombs
            ));
        }
        if self.by_name.len() != live {
            return Err(format!("{} names for {live} entries", self.by_name.len()));
        }
        for e in self.iter() {
            if self
                .find_name(e.name(), name_hash32(e.name()))
                .map(|i| self.entries[i].offset)
                != Some(e.offset)
            {
                return Err(format!("{:?} not found by name", e.name()));
            }
        }
        let mut n = 0;
        let mut prev = NONE;
        let mut cur = self.head;
        while cur != NONE {
            let i = self
                .find_offset(cur)
                .map_err(|_| format!("listing names a missing offset {cur}"))?;
            let e = &self.entries[i];
            if e.is_removed() || e.prev != prev {
                return Err(format!("listing broken at offset {cur}"));
            }
            n += 1;
            if n > live {
                return Err("listing loops".into());
            }
            prev = cur;
            cur = e.next;
        }
        if n != live {
            return Err(format!("listing has {n} of {live} entries"));
        }
        Ok(())
    }
}

/// Validates one path component (the VFS has done so already; this keeps
/// the tree sound whatever the caller passes).
pub(super) fn check_name(name: &[u8]) -> Result<(), Errno> {
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if name.is_empty() {
        return Err(Errno::ENOENT);
    }
    if name == b"." || name == b".." || name.iter().any(|&b| b == b'/' || b == 0) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// The reference: the listing as a vector (head first) of (name, ino,
    /// offset), offsets allocated as Linux's cyclic allocator does.
    struct Model {
        list: Vec<(Vec<u8>, Ino, u64)>,
        next_offset: u64,
    }

    impl Model {
        fn alloc(&mut self, max: u64, taken: Option<u64>) -> Option<u64> {
            let used = |o: u64| Some(o) == taken || self.list.iter().any(|e| e.2 == o);
            let start = if (DIR_OFFSET_MIN..=max).contains(&self.next_offset) {
                self.next_offset
            } else {
                DIR_OFFSET_MIN
            };
            let o = (start..=max)
                .chain(DIR_OFFSET_MIN..=max)
                .find(|&o| !used(o))?;
            self.next_offset = o + 1;
            Some(o)
        }

        fn resume(&self, pos: u64) -> Option<usize> {
            if pos == DIR_OFFSET_FIRST {
                return (!self.list.is_empty()).then_some(0);
            }
            if pos == DIR_OFFSET_EOD {
                return None;
            }
            let best = self.list.iter().map(|e| e.2).filter(|&o| o <= pos).max()?;
            self.list.iter().position(|e| e.2 == best)
        }
    }

    /// Random creates, unlinks, renames over a name and exchanges, with
    /// offsets wrapping in a small range and directories big enough for
    /// compaction: the index agrees with the reference on every lookup,
    /// the listing and every resume cookie.
    /// Names of 2 to 4 bytes (inline), and every third one of more than
    /// 16 (on the heap).
    fn name_of(k: u64) -> Vec<u8> {
        if k.is_multiple_of(3) {
            format!("a-name-longer-than-sixteen-bytes-{k}").into_bytes()
        } else {
            format!("n{k}").into_bytes()
        }
    }

    /// What the test's entries hold: an inode number behind a reference,
    /// as tmpfs's `Arc<Inode>`.
    struct TestInode(Ino);

    impl Target for Arc<TestInode> {
        fn ino(&self) -> Ino {
            self.0
        }
    }

    /// An inode numbered `ino` for the entries to hold.
    fn inode(ino: Ino) -> Arc<TestInode> {
        Arc::new(TestInode(ino))
    }

    #[test]
    fn slot_is_40_bytes() {
        assert_eq!(std::mem::size_of::<Slot<Arc<TestInode>>>(), 40);
    }

    #[test]
    fn index_matches_reference_listing() {
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        for (max, ops) in [(12, 3000), (300, 6000), (DIR_OFFSET_EOD - 1, 6000)] {
            let mut d = Dir::new();
            let mut m = Model {
                list: Vec::new(),
                next_offset: DIR_OFFSET_MIN,
            };
            let mut ino = 10;
            for step in 0..ops {
                // Grow to about 200 entries, then shrink, then grow again.
                let grow = (step / 1000) % 2 == 0;
                let name = name_of(next(400));
                match next(10) {
                    0..=4 if grow || next(4) == 0 => {
                        if m.list.iter().any(|e| e.0 == name) {
                            assert!(d.get(&name).is_some());
                            continue;
                        }
                        let want = m.alloc(max, None);
                        let got = d.alloc_offset(max).ok();
                        assert_eq!(got, want, "step {step}");
                        if let Some(o) = got {
                            ino += 1;
                            d.insert(&name, inode(ino), 0o100000, o);
                            m.list.insert(0, (name, ino, o));
                        }
                    }
                    0..=6 => {
                        let got = d.remove(&name).map(|s| s.offset());
                        let want = m
                            .list
                            .iter()
                            .position(|e| e.0 == name)
                            .map(|i| m.list.remove(i))
                            .map(|e| e.2);
                        assert_eq!(got, want, "step {step}");
                    }
                    7 => {
                        // A rename over `name` of a new inode: its offset.
                        let Some(i) = m.list.iter().position(|e| e.0 == name) else {
                            continue;
                        };
                        let o = m.list.remove(i).2;
                        let s = d.remove(&name).expect("present");
                        assert_eq!(s.offset(), o);
                        ino += 1;
                        d.insert(&name, inode(ino), 0o40000, o);
                        m.list.insert(0, (name, ino, o));
                    }
                    8 => {
                        // An exchange with another name.
                        let other = name_of(next(400));
                        let (Some(a), Some(b)) = (
                            m.list.iter().position(|e| e.0 == name),
                            m.list.iter().position(|e| e.0 == other),
                        ) else {
                            continue;
                        };
                        let (ia, ib) = (m.list[a].1, m.list[b].1);
                        for (n, new) in [(&other, ia), (&name, ib)] {
                            let i = m.list.iter().position(|e| &e.0 == n).unwrap();
                            let e = m.list.remove(i);
                            m.list.insert(0, (e.0, new, e.2));
                            d.replace_to_head(n, inode(new), 0o100000);
                        }
                    }
                    _ => {
                        // Two offsets at once (a whiteout's and a new name's).
                        let a = m.alloc(max, None);
                        let b = a.and_then(|a| m.alloc(max, Some(a)));
                        let ga = d.alloc_offset(max).ok();
                        let gb = ga.and_then(|a| d.alloc_offset_besides(max, Some(a)).ok());
                        assert_eq!((ga, gb), (a, b), "step {step}");
                    }
                }
                assert_eq!(d.len(), m.list.len() as u64);
                if step % 20 != 0 {
                    continue;
                }
                d.check().unwrap();
                for e in &m.list {
                    let s = d.get(&e.0).expect("listed name found");
                    assert_eq!((s.name(), s.ino(), s.offset()), (&e.0[..], e.1, e.2));
                }
                assert_eq!(
                    d.head_cookie(),
                    m.list.first().map_or(DIR_OFFSET_EOD, |e| e.2)
                );
                let around = m.list.iter().flat_map(|e| [e.2 - 1, e.2, e.2 + 1]);
                let cookies = around.chain([DIR_OFFSET_FIRST, DIR_OFFSET_EOD, i64::MAX as u64]);
                for pos in cookies {
                    let got: Vec<(Ino, u64, u64)> = d
                        .resume(pos)
                        .map(|o| {
                            d.list_from(o, usize::MAX)
                                .map(|(s, n)| (s.ino(), s.offset(), n))
                                .collect()
                        })
                        .unwrap_or_default();
                    let want: Vec<(Ino, u64, u64)> = m
                        .resume(pos)
                        .map(|i| {
                            (i..m.list.len())
                                .map(|j| {
                                    let n = m.list.get(j + 1).map_or(DIR_OFFSET_EOD, |e| e.2);
                                    (m.list[j].1, m.list[j].2, n)
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    assert_eq!(got, want, "step {step}, cookie {pos}");
                }
            }
        }
    }
}
