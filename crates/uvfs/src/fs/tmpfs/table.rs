//! The inode table's shards: each a hash table of the inodes themselves,
//! found by the number each holds (`Inode::ino`), so a slot is one
//! pointer and a control byte, not a copy of the number beside it.

use std::sync::Arc;

use hashbrown::HashTable;

use super::inode::Inode;
use crate::fs::Ino;

/// The hash of an inode number: one multiply, the high half folded down
/// so both ends (hashbrown's tag takes the top bits, the bucket the low
/// ones) depend on every bit (inode numbers in one shard share their low
/// bits).
#[inline]
fn hash(ino: Ino) -> u64 {
    let h = ino.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 32)
}

/// One shard's inodes by number.
#[derive(Default)]
pub(super) struct InoTable(HashTable<Arc<Inode>>);

impl InoTable {
    /// Inode `ino`, if the shard holds it.
    #[inline]
    pub(super) fn get(&self, ino: Ino) -> Option<&Arc<Inode>> {
        self.0.find(hash(ino), |i| i.ino == ino)
    }

    /// Adds `i`, whose number no inode of the shard has.
    pub(super) fn insert(&mut self, i: Arc<Inode>) {
        debug_assert!(self.get(i.ino).is_none(), "inode {} twice", i.ino);
        self.0.insert_unique(hash(i.ino), i, |i| hash(i.ino));
    }

    /// Takes inode `ino` out, if the shard holds it.
    pub(super) fn remove(&mut self, ino: Ino) -> Option<Arc<Inode>> {
        let e = self.0.find_entry(hash(ino), |i| i.ino == ino).ok()?;
        Some(e.remove().0)
    }

    /// Every inode of the shard.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Arc<Inode>> {
        self.0.iter()
    }
}

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::*;
    use crate::fs::tmpfs::inode::{Init, Kind, State};
    use crate::fs::tmpfs::pages::RegFile;
    use crate::fs::{S_IFREG, Timespec};

    fn inode(ino: Ino) -> Arc<Inode> {
        let init = Init {
            mode: S_IFREG | 0o644,
            uid: 0,
            gid: 0,
            nlink: 1,
            now: Timespec { sec: 1, nsec: 0 },
            acl: 0,
        };
        let st = State {
            linkable: false,
            kind: Kind::Reg(RegFile::default()),
            xattrs: None,
        };
        Arc::new(Inode::new(ino, 1, &init, st, true).1)
    }

    /// One shard's numbers (64 apart, as `Tmpfs::shard` spreads them),
    /// enough to grow the table several times: each found by its number,
    /// none found after its removal, the rest kept.
    #[test]
    fn finds_each_inode_by_its_number() {
        let n = |k: u64| k * 64 + 5;
        let mut t = InoTable::default();
        for k in 0..2000 {
            t.insert(inode(n(k)));
        }
        for k in 0..2000 {
            assert_eq!(t.get(n(k)).map(|i| i.ino), Some(n(k)));
        }
        assert!(t.get(3).is_none());
        assert!(t.get(n(2000)).is_none());
        for k in (0..2000).step_by(2) {
            assert_eq!(t.remove(n(k)).map(|i| i.ino), Some(n(k)));
        }
        assert!(t.remove(n(0)).is_none());
        for k in 0..2000 {
            assert_eq!(t.get(n(k)).is_some(), k % 2 == 1, "{k}");
        }
        let mut left: Vec<Ino> = t.iter().map(|i| i.ino).collect();
        left.sort_unstable();
        let want: Vec<Ino> = (0..2000).filter(|k| k % 2 == 1).map(n).collect();
        assert_eq!(left, want);
    }
}
