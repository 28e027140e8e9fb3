use super::*;
use crate::fs::tmpfs::{Tmpfs, TmpfsOptions};
use crate::fs::{S_IFREG, Timespec};

pub use super::{Dentry, DentryRef};

/// A dentry cache (with its inode cache) and one superblock whose root
/// directory is inode 1.
pub struct World {
    root: Option<DentryRef>,
    sb: Arc<SuperBlock>,
    caches: Arc<Caches>,
    _sbs: crate::super_block::SuperBlocks,
}

/// An inode reference on its way to [`World::instantiate`].
pub struct NewInode(NonNull<Inode>, Attr);

// SAFETY: a counted reference to an inode, which is `Send + Sync`.
unsafe impl Send for NewInode {}

/// What one lockless step (one component of `Nd::lookup_rcu`) found.
#[derive(Debug)]
pub enum Step {
    /// Gave up: the walk restarts in the locked walk.
    Fallback,
    /// A negative entry, its sequence count validated: `ENOENT`.
    Negative {
        /// The dentry's address.
        dentry: usize,
        /// The validated sequence count.
        seq: u32,
    },
    /// A positive entry, legitimized: a reference to it.
    Positive {
        /// The reference.
        dentry: DentryRef,
        /// The sequence count it was legitimized at.
        seq: u32,
        /// The inode number the walker read before legitimizing.
        ino: Ino,
    },
}

/// A dentry's state words (see [`World::state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State {
    /// References held.
    pub refs: usize,
    /// Being killed or killed.
    pub dead: bool,
    /// `HASHED` in the flags.
    pub hashed: bool,
    /// `C_HASHED` in the count.
    pub c_hashed: bool,
    /// `LRU` in the flags.
    pub lru: bool,
    /// `C_LRU` in the count.
    pub c_lru: bool,
    /// The sequence count.
    pub seq: u32,
    /// The inode number (0: negative).
    pub ino: Ino,
    /// Whether the inode pointer is set.
    pub has_inode: bool,
    /// On its parent's child list (`slot` set).
    pub listed: bool,
}

fn attr(ino: Ino, mode: u32) -> Attr {
    Attr {
        ino,
        mode,
        nlink: 1,
        uid: 0,
        gid: 0,
        size: 0,
        blocks: 0,
        blksize: 4096,
        atime: Timespec::default(),
        mtime: Timespec::default(),
        ctime: Timespec::default(),
        btime: Timespec::default(),
        rdev: 0,
        acl: 0,
    }
}

impl World {
    /// A cache keeping `limit` unused dentries (and about `limit` hash
    /// chains, at least 2).
    pub fn new(limit: usize) -> World {
        World::with_inline_names(limit, true)
    }

    /// [`new`](Self::new), with names of at most
    /// [`INLINE_NAME`](super::INLINE_NAME) bytes held in the dentry (as
    /// `FastPaths::dentry_inline_name`) or not.
    pub fn with_inline_names(limit: usize, inline: bool) -> World {
        World::with_options(limit, inline, true)
    }

    /// [`with_inline_names`](Self::with_inline_names), with
    /// `FastPaths::path_cache_dir_gen` set to `dir_gen` (on in the
    /// others, as in `seeds`).
    pub fn with_options(limit: usize, inline: bool, dir_gen: bool) -> World {
        let icache = crate::icache::InodeCache::new(16, 2, true, |_, _, _| {});
        let caches = Arc::new(Caches {
            dcache: DentryCache::new(limit, false, inline).with_dir_gen(dir_gen),
            icache,
        });
        let fs = Tmpfs::new(TmpfsOptions::default());
        let sbs = crate::super_block::SuperBlocks::new();
        let sb = sbs.add(fs).expect("an empty table has room");
        let mut w = World {
            root: None,
            sb: sb.clone(),
            caches,
            _sbs: sbs,
        };
        let NewInode(i, a) = w.inode(1, S_IFDIR | 0o755);
        w.root = Some(w.caches.new_root(sb, i, &a));
        w
    }

    fn dc(&self) -> &DentryCache {
        &self.caches.dcache
    }

    /// The dentry cache (for the path cache's models).
    pub fn dcache(&self) -> &DentryCache {
        &self.caches.dcache
    }

    /// The root directory.
    pub fn root(&self) -> &DentryRef {
        self.root
            .as_ref()
            .expect("the root lives as long as the world")
    }

    /// A reference to inode `ino` with mode `mode` (cached or filled).
    pub fn inode(&self, ino: Ino, mode: u32) -> NewInode {
        let a = attr(ino, mode);
        let r = self
            .caches
            .icache
            .iget(self.sb.id, ino, || Ok(a))
            .expect("fills never fail here");
        NewInode(r.into_raw(), a)
    }

    /// `d_alloc`: a negative child `name` of `parent`, hashed.
    pub fn alloc(&self, parent: &DentryRef, name: &[u8]) -> DentryRef {
        self.dc().d_alloc(parent, name)
    }

    /// `d_alloc_positive`: the child `name` of `parent` a lookup found,
    /// inode `ino` (a directory if `dir`), instantiated before hashing
    /// and on no child list.
    pub fn add(&self, parent: &DentryRef, name: &[u8], ino: Ino, dir: bool) -> DentryRef {
        let mode = if dir {
            S_IFDIR | 0o755
        } else {
            S_IFREG | 0o644
        };
        let NewInode(i, a) = self.inode(ino, mode);
        self.dc().d_alloc_positive(parent, name, i, &a)
    }

    /// `d_instantiate`.
    pub fn instantiate(&self, d: &DentryRef, inode: NewInode) {
        self.dc().instantiate(d, inode.0, &inode.1);
    }

    /// A positive child: `name` in `parent` for inode `ino`, a directory
    /// if `dir`, else a regular file.
    pub fn create(&self, parent: &DentryRef, name: &[u8], ino: Ino, dir: bool) -> DentryRef {
        let d = self.alloc(parent, name);
        let mode = if dir {
            S_IFDIR | 0o755
        } else {
            S_IFREG | 0o644
        };
        self.instantiate(&d, self.inode(ino, mode));
        d
    }

    /// `d_drop` (unlink, rmdir, a rename's victim).
    pub fn d_drop(&self, d: &DentryRef) {
        self.dc().d_drop(d);
    }

    /// `d_drop` as if the dentry were not a directory: unhashed without
    /// moving the namespace generation (never correct for a directory:
    /// for the model that shows a directory's unhash must move it).
    pub fn d_drop_without_generation(&self, d: &DentryRef) {
        self.dc().unhash_without_generation(d.0);
    }

    /// `d_delete` (`FastPaths::d_delete`): unlink's end for a name the
    /// caller holds; `true` if `d` was made negative in place.
    pub fn d_delete(&self, d: &DentryRef) -> bool {
        self.dc().d_delete(d)
    }

    /// `d_delete` without the sole-holder check (for the model that shows
    /// the check is needed: never correct).
    pub fn d_delete_unchecked(&self, d: &DentryRef) -> bool {
        self.dc().d_delete_checked(d, false)
    }

    /// Drops an inode reference made by [`inode`](Self::inode) and not
    /// handed to a dentry.
    pub fn put_inode(&self, inode: NewInode) {
        // SAFETY: `inode` holds one reference of this cache, given up here.
        drop(unsafe { self.caches.icache.from_raw(inode.0) });
    }

    /// The references held on inode `ino` (none if it is not cached).
    pub fn inode_refs(&self, ino: Ino) -> usize {
        self.caches
            .icache
            .ilookup(self.sb.id, ino)
            .map_or(0, |r| r.count() - 1)
    }

    /// `d_move`: renames `d` to `name` in `parent`. The caller is the
    /// only thread changing either directory (the VFS holds their
    /// `dir_lock`s).
    pub fn d_move(&self, d: &DentryRef, parent: &DentryRef, name: &[u8]) {
        self.dc().d_move(d, parent, name);
    }

    /// `d_exchange`: swaps `a` (named `a_name` in `pa`) and `b` (named
    /// `b_name` in `pb`), as `RENAME_EXCHANGE` does.
    pub fn d_exchange(
        &self,
        (a, pa, a_name): (&DentryRef, &DentryRef, &[u8]),
        (b, pb, b_name): (&DentryRef, &DentryRef, &[u8]),
    ) {
        self.dc().d_exchange(a, a_name, b, b_name, pa, pb);
    }

    /// `d_path` of `d` up to this world's root (one superblock: no mount
    /// to cross), with `passes` lockless passes before the locked one.
    pub fn d_path(&self, d: &DentryRef, passes: u32) -> Result<Vec<u8>, crate::errno::Errno> {
        self.dc()
            .d_path_passes(d, self.root(), |_| None, passes)
            .map(|(p, reached)| {
                assert!(reached, "the walk up missed the root");
                p
            })
    }

    /// The walk of [`d_path`](Self::d_path) with no rename count (never
    /// correct: the model that must fail).
    pub fn d_path_unsynced(&self, d: &DentryRef) -> Result<Vec<u8>, crate::errno::Errno> {
        super::path::d_path_unsynced(d, self.root()).map(|(p, _)| p)
    }

    /// One step of the lockless walk as `Nd::lookup_rcu` takes it for a
    /// last component: the parent's count read before the search
    /// (`parent` is the walk's current directory), the chain search, the
    /// parent's count validated, the child's inode snapshot, and then
    /// either the negative entry's count validated or the child
    /// legitimized.
    pub fn step(&self, parent: &DentryRef, name: &[u8]) -> Step {
        let _pin = reclaim::pin();
        let Some(pseq) = parent.read_seq() else {
            return Step::Fallback;
        };
        let Some(child) = self.dc().lookup_rcu(parent.as_ptr(), name) else {
            return Step::Fallback;
        };
        if !parent.seq_valid(pseq) {
            return Step::Fallback;
        }
        let seq = child.seq;
        // SAFETY: reached through the cache; dentries are never freed
        // under loom (and the walk is pinned otherwise).
        let d = unsafe { child.dentry.as_ref() };
        match d.snap() {
            None if d.seq_valid(seq) => Step::Negative {
                dentry: child.dentry.as_ptr().expose_provenance(),
                seq,
            },
            None => Step::Fallback,
            Some(s) => match DentryRef::legitimize(child.dentry, seq) {
                Some(r) => Step::Positive {
                    dentry: r,
                    seq,
                    ino: s.ino,
                },
                None => Step::Fallback,
            },
        }
    }

    /// The dentry-cache side of `Nd::lookup_parent_rcu`
    /// (`FastPaths::rcu_parent`): from `start`, one lockless step per
    /// name of `dirs` without references (the directory's count read
    /// before the search and validated after it, the child's snapshot
    /// read), then the last directory reached legitimized at the count
    /// read when it was found: the directory a create or a removal of a
    /// name below `dirs` works in. `None`: the walk falls back.
    pub fn parent_walk(&self, start: &DentryRef, dirs: &[&[u8]]) -> Option<(DentryRef, u32)> {
        let _pin = reclaim::pin();
        let mut cur = start.as_ptr();
        // SAFETY: `start` is referenced.
        let mut seq = unsafe { cur.as_ref() }.read_seq()?;
        for name in dirs {
            let child = self.dc().lookup_rcu(cur, name)?;
            // SAFETY: reached through the cache; dentries are never freed
            // under loom.
            if !unsafe { cur.as_ref() }.seq_valid(seq) {
                return None;
            }
            cur = child.dentry;
            seq = child.seq;
            // SAFETY: as above.
            let snap = unsafe { cur.as_ref() }.snap()?;
            if !snap.is_dir() {
                return None;
            }
        }
        DentryRef::legitimize(cur, seq).map(|d| (d, seq))
    }

    /// The locked search (`lookup_fast` of the ref-walk).
    pub fn lookup_locked(&self, parent: &DentryRef, name: &[u8]) -> Option<DentryRef> {
        self.dc().lookup_locked(parent, name)
    }

    /// The shrinker: kills up to `n` unused dentries.
    pub fn shrink(&self, n: usize) -> usize {
        self.dc().shrink(n)
    }

    /// Dentries alive.
    pub fn len(&self) -> usize {
        self.dc().len()
    }

    /// Whether names `a` and `b` share a hash chain (any parents).
    pub fn same_chain(&self, a: &[u8], b: &[u8]) -> bool {
        let dc = self.dc();
        dc.bucket(name_hash(ptr::null::<Dentry>(), a))
            == dc.bucket(name_hash(ptr::null::<Dentry>(), b))
    }

    /// The state words of the dentry at `addr`.
    ///
    /// # Safety
    /// `addr` is a dentry of this world (under loom none is ever freed).
    pub unsafe fn state(&self, addr: usize) -> State {
        // SAFETY: per the contract.
        let d = unsafe { &*ptr::with_exposed_provenance::<Dentry>(addr) };
        let c = d.count.load(Ordering::SeqCst);
        let f = d.flags.load(Ordering::SeqCst);
        State {
            refs: c & REFS,
            dead: c & DEAD != 0,
            hashed: f & HASHED != 0,
            c_hashed: c & C_HASHED != 0,
            lru: f & LRU != 0,
            c_lru: c & C_LRU != 0,
            seq: d.seq.load(Ordering::SeqCst),
            ino: d.ino.load(Ordering::SeqCst),
            has_inode: !d.inode.load(Ordering::SeqCst).is_null(),
            listed: d.slot.load(Ordering::SeqCst) != NO_SLOT,
        }
    }

    /// `shrink_dcache_parent` for a removed directory
    /// ([`DentryCache::prune_dead_dir`]); the model `d_drop`s it first,
    /// as rmdir does.
    pub fn prune(&self, dir: &DentryRef) {
        self.dc().prune_dead_dir(dir);
    }

    /// The lockless walk's last step without a reference (as
    /// `Nd::fill_cached_ino` ends): `name` in `parent` found through the
    /// cache, pinned, with its count read and validated at the search.
    /// `None`: the walk falls back.
    pub fn find_pinned(&self, parent: &DentryRef, name: &[u8]) -> Option<(NonNull<Dentry>, u32)> {
        let _pin = reclaim::pin();
        let pseq = parent.read_seq()?;
        let child = self.dc().lookup_rcu(parent.as_ptr(), name)?;
        parent.seq_valid(pseq).then_some((child.dentry, child.seq))
    }

    /// `name` in the directory `parent` (pinned, no reference) found
    /// through the cache, unchecked (for a model's broken twin).
    pub fn step_from(&self, parent: NonNull<Dentry>, name: &[u8]) -> Option<NonNull<Dentry>> {
        let _pin = reclaim::pin();
        self.dc().lookup_rcu(parent, name).map(|c| c.dentry)
    }

    /// The inode `d` holds now, read as `Dentry::node_pinned` reads it:
    /// its address and the number it has when read (the model's stand-in
    /// for the file system's object the path cache records, whose number
    /// says whose it is: in-core inodes are type-stable, and a freed one's
    /// memory may come back as the next inode's). `None` if negative.
    pub fn inode_of(&self, d: NonNull<Dentry>) -> Option<(NonNull<()>, Ino)> {
        // SAFETY: dentries are never freed under loom.
        let i = NonNull::new(unsafe { d.as_ref() }.inode.load(Ordering::Acquire))?;
        // SAFETY: in-core inodes live as long as the cache; the borrowed
        // reference is never dropped, only its number read.
        let r = std::mem::ManuallyDrop::new(unsafe { self.caches.icache.from_raw(i) });
        Some((i.cast(), r.ino()))
    }

    /// The inode number the dentry's inode pointer leads to (the inode
    /// itself, not the dentry's copy); `None` if negative.
    pub fn inode_ino(&self, d: &DentryRef) -> Option<Ino> {
        d.inode_ptr().map(|i| {
            // SAFETY: our dentry reference holds an inode reference of
            // this cache; the borrowed one is never dropped.
            std::mem::ManuallyDrop::new(unsafe { self.caches.icache.from_raw(i) }).ino()
        })
    }

    /// Checks the cache's structure while no other thread uses it: the
    /// LRU list is well linked, its length is `lru_len`, and each entry
    /// is alive with `LRU` and `C_LRU` set; each hash chain holds only
    /// live dentries of its bucket with `HASHED` and `C_HASHED` set, and
    /// every dentry with `C_LRU` or `C_HASHED` set is on the list or
    /// chain it says (among `known`, the addresses of all dentries the
    /// model made). Returns the LRU, oldest first.
    pub fn check(&self, known: &[usize]) -> Result<Vec<usize>, String> {
        let dc = self.dc();
        let mut lru = Vec::new();
        {
            let _g = lock(&dc.lru_lock);
            // SAFETY: under the LRU lock.
            let (head, tail) = unsafe { dc.lru.get() };
            let mut prev = ptr::null_mut();
            let mut p = head;
            while let Some(d) = NonNull::new(p) {
                if lru.len() > known.len() {
                    return Err("the LRU list loops".into());
                }
                // SAFETY: never freed under loom; under the LRU lock.
                let (lp, ln) = unsafe { d.as_ref().lru.get() };
                // SAFETY: `d` is one of this world's dentries.
                let s = unsafe { self.state(p.addr()) };
                if lp != prev {
                    return Err(format!("LRU entry {p:?}: bad prev link"));
                }
                if s.dead || !s.lru || !s.c_lru {
                    return Err(format!("LRU entry {p:?} in state {s:?}"));
                }
                lru.push(p.addr());
                prev = p;
                p = ln;
            }
            if tail != prev {
                return Err("the LRU tail is not the last entry".into());
            }
            if lru.len() != dc.lru_len.load(Ordering::SeqCst) {
                return Err(format!(
                    "{} LRU entries, lru_len {}",
                    lru.len(),
                    dc.lru_len.load(Ordering::SeqCst)
                ));
            }
        }
        let mut hashed = Vec::new();
        for b in 0..dc.buckets.len() {
            let _g = dc.bucket_lock(b);
            let mut p = dc.buckets[b].load(Ordering::SeqCst);
            while let Some(d) = NonNull::new(p) {
                if hashed.len() > known.len() {
                    return Err("a hash chain loops".into());
                }
                // SAFETY: never freed under loom.
                let dr = unsafe { d.as_ref() };
                // SAFETY: one of this world's dentries.
                let s = unsafe { self.state(p.addr()) };
                if s.dead || !s.hashed || !s.c_hashed {
                    return Err(format!("hashed {p:?} in state {s:?}"));
                }
                if dc.bucket(dr.hash_len.load(Ordering::SeqCst)) != b {
                    return Err(format!("hashed {p:?} on the wrong chain"));
                }
                hashed.push(p.addr());
                p = dr.next.load(Ordering::SeqCst);
            }
        }
        for &a in known {
            // SAFETY: the caller lists this world's dentries.
            let s = unsafe { self.state(a) };
            if s.c_lru != lru.contains(&a) || s.lru != s.c_lru {
                return Err(format!("dentry {a:#x} in state {s:?}: LRU says {lru:?}"));
            }
            if s.c_hashed != hashed.contains(&a) || s.hashed != s.c_hashed {
                return Err(format!("dentry {a:#x} in state {s:?}: hashed {hashed:?}"));
            }
        }
        self.check_children(known, &hashed)?;
        Ok(lru)
    }

    /// The child lists: each live dentry's list holds its children at
    /// their slots, none dead; a dead dentry's list is freed and it is
    /// on no list; every hashed negative dentry is on its parent's
    /// list; no hashed dentry's parent has a dead list; a listed dentry
    /// is on its parent's list. (Few loads: each is a loom branch, and
    /// a model has a budget.)
    fn check_children(&self, known: &[usize], hashed: &[usize]) -> Result<(), String> {
        // (dead, slot, parent, children, negative) of each known dentry.
        type Snap = (bool, u32, usize, *mut Children, bool);
        let snap: Vec<Snap> = known
            .iter()
            .map(|&a| {
                // SAFETY: never freed under loom.
                let d = unsafe { &*ptr::with_exposed_provenance::<Dentry>(a) };
                (
                    d.count.load(Ordering::SeqCst) & DEAD != 0,
                    d.slot.load(Ordering::SeqCst),
                    d.parent.load(Ordering::SeqCst).addr(),
                    d.children.load(Ordering::SeqCst),
                    d.inode.load(Ordering::SeqCst).is_null(),
                )
            })
            .collect();
        let of = |a: usize| known.iter().position(|&k| k == a);
        // Each known dentry's list as (index in `known`, slot) pairs.
        let mut lists: Vec<Option<(bool, Vec<usize>)>> = vec![None; known.len()];
        for (i, &(dead, slot, _, ch, _)) in snap.iter().enumerate() {
            if dead {
                if !ch.is_null() || slot != NO_SLOT {
                    return Err(format!("dead {:#x}: list kept or still listed", known[i]));
                }
                continue;
            }
            let Some(ch) = NonNull::new(ch) else {
                continue;
            };
            // SAFETY: a live dentry's list (never freed under loom).
            let kids = lock(&unsafe { ch.as_ref() }.kids);
            let mut members = Vec::new();
            for (at, &c) in kids.list.iter().enumerate() {
                let Some(j) = of(c.as_ptr().addr()) else {
                    return Err(format!("{:#x} lists an unknown {c:?}", known[i]));
                };
                let (cdead, cslot, cparent, _, _) = snap[j];
                if cdead || cslot as usize != at || cparent != known[i] {
                    return Err(format!(
                        "{:#x}'s child {c:?} at {at}: dead {cdead}, slot {cslot}",
                        known[i]
                    ));
                }
                members.push(j);
            }
            lists[i] = Some((kids.dead, members));
        }
        for &h in hashed {
            let Some(j) = of(h) else { continue };
            let Some(p) = of(snap[j].2) else { continue };
            let negative = snap[j].4;
            match &lists[p] {
                Some((true, _)) => {
                    return Err(format!("hashed {h:#x} under a pruned directory"));
                }
                Some((false, m)) if !negative || m.contains(&j) => {}
                None if !negative => {}
                l => return Err(format!("negative {h:#x} not on its parent's list: {l:?}")),
            }
        }
        for (j, &(_, slot, _, _, _)) in snap.iter().enumerate() {
            let on = lists.iter().flatten().any(|(_, m)| m.contains(&j));
            if (slot != NO_SLOT) != on {
                return Err(format!("dentry {:#x}: slot {slot}, listed {on}", known[j]));
            }
        }
        Ok(())
    }
}

/// A dentry's address, for identity checks and [`World::state`].
pub fn addr(d: &DentryRef) -> usize {
    d.as_ptr().as_ptr().expose_provenance()
}

impl Drop for World {
    fn drop(&mut self) {
        drop(self.root.take());
    }
}
