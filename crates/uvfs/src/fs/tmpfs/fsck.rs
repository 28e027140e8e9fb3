//! The consistency check [`Tmpfs::fsck`], for tests: the tree, the link
//! counts and the space and inode counters agree.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::inode::{Inode, Kind, Locked, rd};
use super::{ROOT_INO, Tmpfs};
use crate::fs::{Ino, S_IFMT};

impl Tmpfs {
    /// Consistency check for tests: every entry names a live inode of the
    /// recorded type, link counts equal names (dirs: 2 + subdirectories),
    /// space and inode counters equal what the inodes hold, and (with
    /// `after_evict`) no inode with link count 0 remains.
    #[doc(hidden)]
    pub fn fsck(&self, after_evict: bool) -> Result<(), String> {
        let mut all: HashMap<Ino, Arc<Inode>> = HashMap::new();
        for s in self.shards.iter() {
            for (k, v) in s.read().unwrap().iter() {
                all.insert(*k, v.clone());
            }
        }
        let mut names: HashMap<Ino, u32> = HashMap::new();
        let mut subdirs: HashMap<Ino, u32> = HashMap::new();
        let (mut pages, mut inodes) = (0u64, 0u64);
        for (&ino, i) in &all {
            let st = rd(i);
            pages += st.pages_held();
            inodes += if st.is_dir() {
                1
            } else {
                u64::from(st.nlink().max(1))
            };
            if after_evict && st.nlink() == 0 {
                return Err(format!("orphan inode {ino} left after evict"));
            }
            if let Kind::Dir(d) = &st.kind {
                d.check().map_err(|e| format!("dir {ino}: {e}"))?;
                for slot in d.iter() {
                    let c = all
                        .get(&slot.ino())
                        .ok_or(format!("dir {ino}: dangling entry"))?;
                    if !Arc::ptr_eq(c, slot.inode()) {
                        return Err(format!("dir {ino}: entry holds another inode"));
                    }
                    let cs = rd(c);
                    if cs.mode() & S_IFMT != slot.ftype() || cs.nlink() == 0 {
                        return Err(format!("dir {ino}: bad entry {:?}", slot.name()));
                    }
                    *names.entry(slot.ino()).or_default() += 1;
                    if cs.is_dir() {
                        *subdirs.entry(ino).or_default() += 1;
                        if !c.parent().is_some_and(|p| Arc::ptr_eq(&p, i)) {
                            return Err(format!("dir {} has wrong parent", slot.ino()));
                        }
                    }
                }
            }
        }
        for (&ino, i) in &all {
            let st = rd(i);
            let n = names.get(&ino).copied().unwrap_or(0);
            if st.is_dir() {
                let want = if st.nlink() == 0 {
                    0
                } else {
                    2 + subdirs.get(&ino).copied().unwrap_or(0)
                };
                if st.nlink() != want || (ino != ROOT_INO && st.nlink() > 0 && n != 1) {
                    return Err(format!("dir {ino}: nlink {} names {n}", st.nlink()));
                }
            } else if st.nlink() != n {
                return Err(format!("inode {ino}: nlink {} names {n}", st.nlink()));
            }
        }
        if pages != self.used_pages.load(Ordering::Relaxed) {
            return Err(format!(
                "pages {pages} != counter {}",
                self.used_pages.load(Ordering::Relaxed)
            ));
        }
        if inodes != self.used_inodes.load(Ordering::Relaxed) {
            return Err(format!(
                "inodes {inodes} != counter {}",
                self.used_inodes.load(Ordering::Relaxed)
            ));
        }
        Ok(())
    }
}
