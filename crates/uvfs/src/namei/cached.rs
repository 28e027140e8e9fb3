//! The path walk's side of the full-path cache ([`path_cache`](crate::path_cache)):
//! a lookup answered by an entry, or walked locklessly and remembered
//! (`lookup_cached`, `fill_cached`, and their forms for stat that take no
//! reference), and a parent walk answered from the entry of the path's
//! directory part (`lookup_parent_cached`, `FastPaths::path_cache_parent`).

use super::{DIRECTORY, FOLLOW, LastName, LastType, Nd, Parent, kind_of};
use crate::dcache::{Dentry, DentryRef};
use crate::errno::Errno;
use crate::path_cache::{Key, Outcome, PathCache, Pinned};

impl Nd<'_> {
    /// `lookup` through the full-path cache: a valid entry answers; else
    /// the lockless walk answers and its answer is remembered. `None` to
    /// fall back to the locked walk (see [`path_cache`](crate::path_cache)
    /// for why an entry stays true).
    ///
    /// Returns the answer itself, falling back in here, rather than an
    /// `Option` for `lookup` to unwrap: unwrapping copied the 16-byte
    /// answer through the stack, loading it as one word just stored as two
    /// (its tag, its pointer), which the CPU cannot forward from the store
    /// buffer and so waits for.
    pub(super) fn lookup_cached(
        &self,
        pc: &PathCache,
        start: &DentryRef,
        path: &[u8],
        flags: u32,
    ) -> Result<DentryRef, Errno> {
        let mut key = Key::empty();
        if !self.key(&mut key, start, path, flags) {
            return match self.lookup_rcu(start, path, flags) {
                Some(e) => e.result,
                None => self.lookup_locked(start, path, flags),
            };
        }
        match pc.find(&self.vfs.caches().dcache, &key) {
            Some(Ok(d)) => Ok(d),
            Some(Err(e)) => Err(e),
            None => match self.fill_cached(pc, &key, start, path, flags) {
                Some(r) => r,
                None => self.lookup_locked(start, path, flags),
            },
        }
    }

    /// Fills `key` (an empty one) for a lookup of `path` from `start`;
    /// false if the lookup is not cacheable.
    #[inline]
    pub(super) fn key(&self, key: &mut Key, start: &DentryRef, path: &[u8], flags: u32) -> bool {
        let base = if path.first() == Some(&b'/') {
            self.root.as_ptr()
        } else {
            start.as_ptr()
        };
        key.fill(base, path, flags & (FOLLOW | DIRECTORY), self.cred)
    }

    /// After a path-cache miss on `key`: the lockless walk, its answer
    /// remembered; `None` to fall back to the locked walk.
    pub(super) fn fill_cached(
        &self,
        pc: &PathCache,
        key: &Key,
        start: &DentryRef,
        path: &[u8],
        flags: u32,
    ) -> Option<Result<DentryRef, Errno>> {
        let dc = &self.vfs.caches().dcache;
        // Read before the walk: a change the walk may have missed moves the
        // generation past what the entry records.
        let generation = dc.ns_gen();
        let end = self.lookup_rcu(start, path, flags)?;
        if let Some(outcome) = Outcome::of(&end.result) {
            // A positive answer holds its reference: its dentry is readable.
            if pc.admit(key, generation) {
                let pinned = end.result.as_ref().ok().and_then(|d| {
                    let p = self.pinned_of(d)?;
                    d.seq_valid(end.seq).then_some(p)
                });
                pc.put(key, generation, end.dentry, end.seq, outcome, pinned);
            }
        }
        Some(end.result)
    }

    /// What the path cache records of the way from `d` to its inode's
    /// attributes ([`Pinned`], `FastPaths::path_cache_inode`): its inode's
    /// object when the file system reads attributes through objects
    /// reached without a reference (tmpfs with `pinned_reads`), with the
    /// inode and device numbers. The caller checks `d`'s count after this
    /// read, so that the object is the inode's the entry's count names;
    /// `d` is pinned or referenced.
    #[inline]
    fn pinned_of(&self, d: &Dentry) -> Option<Pinned> {
        if !self.vfs.fastpaths().path_cache_inode {
            return None;
        }
        let sb = d.sb();
        if !sb.tmpfs()?.pinned_reads() {
            return None;
        }
        let n = d.node_pinned()?;
        Some(Pinned {
            data: n.data?.as_ptr(),
            ino: n.ino,
            dev: sb.dev,
        })
    }

    /// As [`fill_cached`](Self::fill_cached) for a caller that needs only
    /// the inode (`FastPaths::stat_noref_walk`): the lockless walk ends by
    /// running `f` on the dentry found and its inode number, both read at
    /// the count the walk found it at and that count validated, still
    /// pinned and without a reference (as [`PathCache::find_ino`] does on
    /// a hit); the path cache is filled as `fill_cached` fills it. `None`
    /// (the walk fell back, or `f` declined) to go on with the walk with
    /// references. Out of line: the hit path of [`lookup_ino`](Self::lookup_ino)
    /// stays small enough to be inlined into `stat`.
    #[inline(never)]
    pub(super) fn fill_cached_ino<R>(
        &self,
        pc: &PathCache,
        key: &Key,
        start: &DentryRef,
        path: &[u8],
        flags: u32,
        f: impl FnOnce(&Dentry, crate::fs::Ino) -> Option<R>,
    ) -> Option<Result<R, Errno>> {
        let dc = &self.vfs.caches().dcache;
        let generation = dc.ns_gen();
        let mut pinned = None;
        let end = self.lookup_rcu_then(start, path, flags, |cur, seq| {
            // SAFETY: the walk is pinned while this runs, and `cur` was
            // reached through the cache after the pin began: its memory
            // (and its superblock's, which it holds) is retired only after
            // a grace period.
            let d = unsafe { cur.as_ref() };
            let ino = d.ino();
            let p = self.pinned_of(d);
            // The inode number (and its object) read in the state the walk
            // found (a change of the inode, an unhash or a move is a write
            // section).
            if !d.seq_valid(seq) {
                return None;
            }
            pinned = p;
            f(d, ino)
        })?;
        if let Some(outcome) = Outcome::of(&end.result)
            && pc.admit(key, generation)
        {
            pc.put(key, generation, end.dentry, end.seq, outcome, pinned);
        }
        Some(end.result)
    }

    /// [`lookup_parent_counted`](Self::lookup_parent_counted) answered
    /// from the path cache (`FastPaths::path_cache_parent`): the path's
    /// directory part (all but the last component) is looked up as a
    /// lookup of that prefix with `FOLLOW | DIRECTORY` would be, through
    /// its entry or, on a miss, by the lockless walk that fills it; then
    /// search permission on that directory (`may_lookup`, as the parent
    /// walk checks it on every directory, the last one's included) and the
    /// last component's hash under it. A create, unlink or rename in a
    /// deep directory then costs one hash of the prefix and one probe, not
    /// a step per component.
    ///
    /// Only the plain case: a last component that is a name (not `.` or
    /// `..`), no slash after it, a directory part that is not empty. A
    /// symlink, `..` or mountpoint on the way is never in an entry (the
    /// lockless walk fills it), so the entry's directory is the one the
    /// parent walk would stop on; a directory the entry's walk could not
    /// search is never in one either. `None` (anything else, an error
    /// answer, a fall-back of the walk, an access ACL) to walk as before,
    /// which reports errors in Linux's order.
    pub(super) fn lookup_parent_cached(
        &self,
        pc: &PathCache,
        start: &DentryRef,
        path: &[u8],
        links: u32,
    ) -> Option<Parent> {
        if path.last() == Some(&b'/') {
            return None;
        }
        let slash = path.iter().rposition(|&c| c == b'/')?;
        let name = &path[slash + 1..];
        if !matches!(kind_of(name), LastType::Norm) {
            return None;
        }
        // The directory part without the slashes before the name.
        let mut end = slash;
        while end > 0 && path[end - 1] == b'/' {
            end -= 1;
        }
        if end == 0 {
            // A name in the root: the parent walk takes no step either.
            return None;
        }
        let prefix = &path[..end];
        let flags = FOLLOW | DIRECTORY;
        let mut key = Key::empty();
        if !self.key(&mut key, start, prefix, flags) {
            return None;
        }
        let dir = match pc.find(&self.vfs.caches().dcache, &key) {
            Some(r) => r.ok()?,
            None => self.fill_cached(pc, &key, start, prefix, flags)?.ok()?,
        };
        // `may_lookup` on the directory, as `lookup_parent_rcu` makes it.
        if !self.cred.capable(crate::cred::Cap::DacReadSearch) && !self.may_search_rcu(&dir.snap()?)
        {
            return None;
        }
        let (len, hash) = crate::dcache::hash_component(dir.as_ptr().as_ptr(), name);
        debug_assert_eq!(len, name.len());
        Some(Parent {
            dir,
            last: LastName::new(name),
            kind: LastType::Norm,
            trailing: false,
            links,
            // Salted with the directory's dentry, as the walk's is.
            hash: Some(hash),
        })
    }
}
