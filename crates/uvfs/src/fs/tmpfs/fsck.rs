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
    ///
    /// The inodes are found by walking the tree from the root (the inode
    /// table, where there is one, must hold exactly those and the orphans);
    /// the inodes no entry reaches (unlinked open files, `O_TMPFILE`
    /// ones) are counted by [`orphans`](Tmpfs::orphans), which the table
    /// is checked against when there is one. Without a table, an orphan's
    /// pages cannot be reached: the page counter is checked exactly only
    /// when there is none.
    #[doc(hidden)]
    pub fn fsck(&self, after_evict: bool) -> Result<(), String> {
        let all = self.tree()?;
        let r = self.check_tree(&all, after_evict);
        // The references the walk took, through `put`: a caller that runs
        // this while names go may hold an inode's last.
        self.put_all(all.into_values());
        r
    }

    /// [`fsck`](Tmpfs::fsck)'s checks of the inodes the tree reaches.
    fn check_tree(&self, all: &HashMap<Ino, Arc<Inode>>, after_evict: bool) -> Result<(), String> {
        let orphans = self.orphans.load(Ordering::Relaxed);
        if after_evict && orphans != 0 {
            return Err(format!("{orphans} orphan inodes left after evict"));
        }
        let mut orphan_pages = 0u64;
        if self.has_table() {
            let mut in_table = 0usize;
            let mut table_orphans = 0u64;
            for i in self.table_inodes() {
                match all.get(&i.ino) {
                    Some(t) if Arc::ptr_eq(t, &i) => in_table += 1,
                    Some(_) => return Err(format!("inode {}: table and tree differ", i.ino)),
                    None => {
                        let st = rd(&i);
                        if st.nlink() != 0 {
                            return Err(format!("inode {}: linked, not in the tree", i.ino));
                        }
                        table_orphans += 1;
                        orphan_pages += st.pages_held();
                    }
                }
            }
            if in_table != all.len() {
                return Err(format!(
                    "{} inodes in the tree, {in_table} of them in the table",
                    all.len()
                ));
            }
            if table_orphans != orphans {
                return Err(format!(
                    "{table_orphans} orphans in the table, counter {orphans}"
                ));
            }
        }
        let mut names: HashMap<Ino, u32> = HashMap::new();
        let mut subdirs: HashMap<Ino, u32> = HashMap::new();
        let (mut pages, mut inodes) = (orphan_pages, orphans);
        for (&ino, i) in all {
            let st = rd(i);
            pages += st.pages_held();
            inodes += if st.is_dir() {
                1
            } else {
                u64::from(st.nlink().max(1))
            };
            if let Kind::Dir(d) = st.kind() {
                d.check().map_err(|e| format!("dir {ino}: {e}"))?;
                for slot in d.iter() {
                    let c = slot.inode();
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
        for (&ino, i) in all {
            let st = rd(i);
            let n = names.get(&ino).copied().unwrap_or(0);
            if st.is_dir() {
                let want = 2 + subdirs.get(&ino).copied().unwrap_or(0);
                if st.nlink() != want || (ino != ROOT_INO && n != 1) {
                    return Err(format!("dir {ino}: nlink {} names {n}", st.nlink()));
                }
            } else if st.nlink() != n {
                return Err(format!("inode {ino}: nlink {} names {n}", st.nlink()));
            }
        }
        let used_pages = self.used_pages.load(Ordering::Relaxed);
        let exact = self.has_table() || orphans == 0;
        if pages != used_pages && (exact || pages > used_pages) {
            return Err(format!("pages {pages} != counter {used_pages}"));
        }
        if inodes != self.used_inodes.load(Ordering::Relaxed) {
            return Err(format!(
                "inodes {inodes} != counter {}",
                self.used_inodes.load(Ordering::Relaxed)
            ));
        }
        Ok(())
    }

    /// Every inode the tree reaches from the root, once each, by number
    /// (an error if two entries hold different inodes of one number).
    fn tree(&self) -> Result<HashMap<Ino, Arc<Inode>>, String> {
        let mut all: HashMap<Ino, Arc<Inode>> = HashMap::new();
        all.insert(ROOT_INO, self.root.clone());
        let mut work = vec![self.root.clone()];
        while let Some(d) = work.pop() {
            let st = rd(&d);
            let Kind::Dir(dd) = st.kind() else { continue };
            for slot in dd.iter() {
                let c = slot.inode();
                match all.get(&c.ino) {
                    Some(x) if Arc::ptr_eq(x, c) => {}
                    Some(_) => return Err(format!("two inodes numbered {}", c.ino)),
                    None => {
                        all.insert(c.ino, c.clone());
                        if matches!(rd(c).kind(), Kind::Dir(_)) {
                            work.push(c.clone());
                        }
                    }
                }
            }
        }
        Ok(all)
    }
}
