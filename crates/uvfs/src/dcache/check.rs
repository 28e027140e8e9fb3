//! Consistency checks of the cache for tests and the soak: every hashed
//! dentry as seen under the bucket locks, and the child lists against the
//! hash.

use super::*;
use std::collections::HashMap;

/// One hashed dentry as [`DentryCache::hashed`] reports it.
#[derive(Debug)]
pub(crate) struct Seen {
    pub(crate) ptr: *const Dentry,
    pub(crate) parent: *const Dentry,
    pub(crate) name: Vec<u8>,
    pub(crate) ino: Option<Ino>,
    pub(crate) refs: usize,
    pub(crate) sb: u64,
}

impl DentryCache {
    /// Every hashed dentry (for consistency checks; only meaningful while
    /// nothing changes the cache).
    pub(crate) fn hashed(&self) -> Vec<Seen> {
        let mut out = Vec::new();
        let walked: Result<(), std::convert::Infallible> = self.each_hashed(|d, dr| {
            out.push(Seen {
                ptr: d.as_ptr(),
                parent: dr.parent_ptr(),
                name: dr.name(),
                ino: (!dr.is_negative()).then(|| dr.ino()),
                refs: dr.refs(),
                sb: dr.sb().id,
            });
            Ok(())
        });
        let Ok(()) = walked;
        out
    }

    /// Calls `f` on every hashed dentry, pinned and under its bucket's
    /// lock; stops at `f`'s first error.
    fn each_hashed<E>(
        &self,
        mut f: impl FnMut(NonNull<Dentry>, &Dentry) -> Result<(), E>,
    ) -> Result<(), E> {
        let _pin = reclaim::pin();
        for b in 0..self.buckets.len() {
            let _g = self.bucket_lock(b);
            let mut p = self.buckets[b].load(Ordering::Acquire);
            while let Some(d) = NonNull::new(p) {
                // SAFETY: hashed dentries are alive under the bucket lock.
                let dr = unsafe { d.as_ref() };
                f(d, dr)?;
                p = dr.next.load(Ordering::Acquire);
            }
        }
        Ok(())
    }

    /// What `each` makes of every hashed dentry, grouped under the
    /// dentry's parent, with a reference to the parent (so its child list
    /// and node stay). `Err` for a hashed dentry without a parent; one
    /// under a parent already dead is `Err` with `dead_parent_fails`, left
    /// out otherwise.
    fn grouped_by_parent<T>(
        &self,
        dead_parent_fails: bool,
        mut each: impl FnMut(NonNull<Dentry>, &Dentry) -> T,
    ) -> Result<HashMap<*mut Dentry, (DentryRef, Vec<T>)>, String> {
        let mut by_parent: HashMap<*mut Dentry, (DentryRef, Vec<T>)> = HashMap::new();
        self.each_hashed(|d, dr| -> Result<(), String> {
            let Some(pp) = NonNull::new(dr.parent_ptr()) else {
                return Err("a hashed dentry without a parent".into());
            };
            let me = each(d, dr);
            if let Some((_, kids)) = by_parent.get_mut(&pp.as_ptr()) {
                kids.push(me);
            // SAFETY: a hashed dentry's parent is alive (it holds a
            // reference on it).
            } else if unsafe { pp.as_ref() }.get_not_dead() {
                by_parent.insert(pp.as_ptr(), (DentryRef(pp), vec![me]));
            } else if dead_parent_fails {
                return Err("a hashed dentry under a dead parent".into());
            }
            Ok(())
        })?;
        Ok(by_parent)
    }
}

/// Hashed dentries' names and inode numbers, grouped under their parent,
/// each parent with a reference ([`DentryCache::hashed_by_parent`]).
pub(crate) type ByParent = Vec<(DentryRef, Names)>;

/// Hashed dentries' names and inode numbers (`None`: negative).
pub(crate) type Names = Vec<(Vec<u8>, Option<Ino>)>;

impl DentryCache {
    /// Every hashed dentry's name and inode number (`None`: negative),
    /// grouped under its parent, which the caller gets a reference to (so
    /// it may ask the parent's file system through the parent's node:
    /// `Vfs::check_consistency`). Only meaningful while nothing changes
    /// the cache, but safe at any time; `Err` for a hashed dentry without
    /// a live parent.
    pub(crate) fn hashed_by_parent(&self) -> Result<ByParent, String> {
        let by_parent = self.grouped_by_parent(true, |_, dr| {
            (dr.name(), (!dr.is_negative()).then(|| dr.ino()))
        })?;
        Ok(by_parent.into_values().collect())
    }

    /// Checks the child lists against the hash (for consistency checks;
    /// only meaningful while nothing changes the cache, but safe at any
    /// time): each list's members are its directory's children at their
    /// slots, every hashed negative dentry is listed by its parent, and no
    /// pruned (removed) directory's list has a hashed member. (A positive
    /// dentry hashed under a removed directory would name what the file
    /// system no longer has: `check_consistency` sees that.)
    pub(crate) fn check_children(&self) -> Result<(), String> {
        use std::collections::HashSet;
        // Each hashed dentry under its parent, with a reference so its
        // list stays.
        let by_parent =
            self.grouped_by_parent(false, |d, dr| (d.as_ptr(), dr.name(), dr.is_negative()))?;
        for (pp, (parent, hashed)) in by_parent {
            let name = String::from_utf8_lossy(&parent.name()).into_owned();
            let Some(ch) = parent.children_if_any() else {
                if let Some((_, cname, _)) = hashed.iter().find(|h| h.2) {
                    return Err(format!(
                        "negative {:?} in {name:?}, which has no child list",
                        String::from_utf8_lossy(cname)
                    ));
                }
                continue;
            };
            let kids = lock(&ch.kids);
            let mut listed = HashSet::new();
            for (i, &c) in kids.list.iter().enumerate() {
                // SAFETY: listed dentries are live under the list's lock.
                let cr = unsafe { c.as_ref() };
                if cr.slot.load(Ordering::Relaxed) as usize != i || cr.parent_ptr() != pp {
                    return Err(format!(
                        "directory {name:?}: a child listed at a wrong slot"
                    ));
                }
                listed.insert(c.as_ptr());
            }
            if let Some((_, cname, _)) = hashed.iter().find(|h| h.2 && !listed.contains(&h.0)) {
                return Err(format!(
                    "negative {:?} is not on the child list of {name:?}",
                    String::from_utf8_lossy(cname)
                ));
            }
            if kids.dead
                && let Some((_, cname, _)) = hashed.first()
            {
                return Err(format!(
                    "removed directory {name:?} has {:?} hashed",
                    String::from_utf8_lossy(cname)
                ));
            }
        }
        Ok(())
    }
}
