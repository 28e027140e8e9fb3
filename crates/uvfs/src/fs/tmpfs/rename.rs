//! rename(2) and renameat2's `RENAME_NOREPLACE` / `RENAME_EXCHANGE` /
//! `RENAME_WHITEOUT` (Linux's `shmem_rename2`, `shmem_whiteout` and
//! `simple_offset_rename*`), with the check that a directory is not moved
//! into its own subtree.
//!
//! A whiteout is made as `shmem_whiteout` makes it: once every check has
//! passed (after the target's `ENOTEMPTY`), a character device 0/0 with
//! the caller's ownership takes the old name, with an offset (cookie)
//! allocated before the new name's, and one place behind the moved entry
//! in the listing (Linux allocates its dentry, then moves the source to
//! the head of its new parent's children). It costs an inode
//! (`ENOSPC`); a failure changes nothing.
//!
//! [`Tmpfs::rename_names`] locks every inode involved (in inode order, the
//! two directories, the source and any target) and re-checks the names;
//! a [`Rename`] then runs the checks, all of them before the first change,
//! and the changes.

use std::sync::Arc;

use super::dir::{DIR_OFFSET_MIN, check_name};
use super::inode::Slot;
use super::inode::{Guards, Inode, Kind, Locked, WrGuard, find, lock_all};
use super::names::new_state;
use super::{ROOT_INO, Tmpfs};
use crate::errno::Errno;
use crate::fs::timekeeping::coarse_mg;
use crate::fs::{
    Attr, Ino, NewInode, Node, RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_WHITEOUT, S_IFCHR, S_IFMT,
};

impl Tmpfs {
    /// rename(2) / renameat2: `oname` in `odir` becomes `nname` in `ndir`;
    /// with `RENAME_WHITEOUT` in `flags` (and only then) `whiteout` is the
    /// whiteout left at `oname`, whose attributes are returned.
    pub(super) fn rename_names(
        &self,
        odir_node: Node<'_>,
        oname: &[u8],
        ndir_node: Node<'_>,
        nname: &[u8],
        flags: u32,
        whiteout: Option<NewInode>,
    ) -> Result<Option<(Attr, Arc<Inode>)>, Errno> {
        let (odir, ndir) = (odir_node.ino, ndir_node.ino);
        let known = RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT;
        if flags & !known != 0
            || flags & RENAME_EXCHANGE != 0 && flags & (RENAME_NOREPLACE | RENAME_WHITEOUT) != 0
            || (flags & RENAME_WHITEOUT != 0) != whiteout.is_some()
        {
            return Err(Errno::EINVAL);
        }
        check_name(oname)?;
        check_name(nname)?;
        let cross = odir != ndir;
        let _tree = cross.then(|| self.rename_lock.lock().unwrap_or_else(|e| e.into_inner()));
        loop {
            // The directories the VFS holds: no table search.
            let od = self.owned(odir_node)?;
            let nd = self.owned(ndir_node)?;
            // The children the entries hold (`FastPaths::tmpfs_borrow`
            // off: found in the table by number, as before).
            let src = self.peek(&od, oname)?.ok_or(Errno::ENOENT)?;
            let tgt = match self.peek(&nd, nname) {
                Ok(t) => t,
                Err(e) => {
                    self.put(src);
                    return Err(e);
                }
            };
            let (Ok(src), Ok(tgt)) = (self.stock(src), tgt.map(|c| self.stock(c)).transpose())
            else {
                // A child was evicted meanwhile: look again.
                continue;
            };
            let mut arcs = vec![od.clone(), nd.clone(), src.clone()];
            arcs.extend(tgt.clone());
            arcs.sort_unstable_by_key(|a| a.ino);
            arcs.dedup_by_key(|a| a.ino);
            let (src_ino, tgt_ino) = (src.ino, tgt.as_ref().map(|t| t.ino));
            let mut g = lock_all(&arcs);
            let now_src = find(&mut g, odir)
                .and_then(|s| s.dir().ok()?.get(oname))
                .map(Slot::ino);
            let now_tgt = find(&mut g, ndir)
                .and_then(|s| s.dir().ok()?.get(nname))
                .map(Slot::ino);
            if now_src != Some(src_ino) || now_tgt != tgt_ino {
                // A name went meanwhile, maybe its inode's last.
                drop(g);
                self.put_all(arcs.into_iter().chain([od, nd, src]).chain(tgt));
                continue;
            }
            let rename = Rename {
                fs: self,
                odir,
                od_arc: od,
                oname,
                ndir,
                nd_arc: nd,
                nname,
                flags,
                whiteout,
                src: src_ino,
                src_arc: src,
                tgt: tgt_ino,
                tgt_arc: tgt,
                src_dir: find(&mut g, src_ino).is_some_and(|s| s.is_dir()),
                tgt_dir: tgt_ino
                    .and_then(|t| find(&mut g, t))
                    .is_some_and(|s| s.is_dir()),
                replaced: std::cell::Cell::new(None),
            };
            let res = rename.apply(&mut g);
            // Every reference this call took, the replaced target's entry
            // reference with them, through `put`: once the locks are gone,
            // another caller may remove the source's new name or the
            // target's (or, for the replaced target, a racing lookup may
            // hold it), so any of them may be the inode's last; a plain
            // drop of the last would free the inode without giving it back.
            drop(g);
            let Rename {
                od_arc,
                nd_arc,
                src_arc,
                tgt_arc,
                replaced,
                ..
            } = rename;
            self.put_all(
                arcs.into_iter()
                    .chain([od_arc, nd_arc, src_arc])
                    .chain(tgt_arc)
                    .chain(replaced.into_inner()),
            );
            return res;
        }
    }

    /// Whether directory `anc` is `dir` or one of its ancestors, walking
    /// up through the directories' weak parents (a removed directory's
    /// walk goes on through its old parent while that is still there).
    /// Callers hold the rename mutex, so no directory moves meanwhile and
    /// every parent read is stable.
    fn is_ancestor_or_self(&self, anc: Ino, dir: &Arc<Inode>) -> bool {
        if !self.borrow {
            return self.is_ancestor_by_number(anc, dir.ino);
        }
        let mut cur = dir.clone();
        let found = loop {
            if cur.ino == anc {
                break true;
            }
            if cur.ino == ROOT_INO {
                break false;
            }
            let Some(p) = cur.parent() else { break false };
            // A removed directory's parent may lose its last other
            // reference meanwhile.
            self.put(std::mem::replace(&mut cur, p));
        };
        self.put(cur);
        found
    }

    /// [`is_ancestor_or_self`](Tmpfs::is_ancestor_or_self) with
    /// `FastPaths::tmpfs_borrow` off (the stock side): each parent found
    /// in the table by its number, as before the parents were weak
    /// references (a parent evicted from the table ends the walk).
    fn is_ancestor_by_number(&self, anc: Ino, mut ino: Ino) -> bool {
        loop {
            if ino == anc {
                return true;
            }
            if ino == ROOT_INO {
                return false;
            }
            let Ok(i) = self.get(ino) else { return false };
            let Some(p) = i.parent() else { return false };
            ino = p.ino;
        }
    }
}

/// One rename once every inode involved is locked and the names are known
/// to point at `src` / `tgt`. Its methods are the steps: the checks in
/// `do_renameat2`'s order, then the changes.
struct Rename<'a> {
    fs: &'a Tmpfs,
    odir: Ino,
    /// The old directory.
    od_arc: Arc<Inode>,
    oname: &'a [u8],
    ndir: Ino,
    /// The new directory (the old one's inode when they are one).
    nd_arc: Arc<Inode>,
    nname: &'a [u8],
    flags: u32,
    /// The whiteout to leave at `oname` (`RENAME_WHITEOUT`).
    whiteout: Option<NewInode>,
    /// The inode `oname` names.
    src: Ino,
    src_arc: Arc<Inode>,
    /// The inode `nname` names, if any.
    tgt: Option<Ino>,
    tgt_arc: Option<Arc<Inode>>,
    /// Whether the source is a directory.
    src_dir: bool,
    /// Whether there is a target and it is a directory.
    tgt_dir: bool,
    /// The reference the replaced target's entry held, for the caller to
    /// let go of ([`Tmpfs::put`]) once nothing is locked.
    replaced: std::cell::Cell<Option<Arc<Inode>>>,
}

/// The locked states of a rename's inodes, one per role.
struct Roles<'g, 'l> {
    /// The old directory.
    od: &'g mut WrGuard<'l>,
    /// The new directory when it is not the old one.
    nd: Option<&'g mut WrGuard<'l>>,
    src: &'g mut WrGuard<'l>,
    tgt: Option<&'g mut WrGuard<'l>>,
}

impl<'l> Roles<'_, 'l> {
    /// The new directory (the old one when the rename stays in it).
    fn ndir(&mut self) -> &mut WrGuard<'l> {
        match self.nd.as_deref_mut() {
            Some(n) => n,
            None => &mut *self.od,
        }
    }

    /// Adds `d` (±1) to the old directory's link count.
    fn od_nlink(&mut self, d: i32) {
        let n = self.od.nlink().wrapping_add_signed(d);
        self.od.set_nlink(n);
    }

    /// Adds `d` (±1) to the new directory's link count.
    fn nd_nlink(&mut self, d: i32) {
        let n = self.ndir().nlink().wrapping_add_signed(d);
        self.ndir().set_nlink(n);
    }
}

impl Rename<'_> {
    fn exchange(&self) -> bool {
        self.flags & RENAME_EXCHANGE != 0
    }

    fn cross(&self) -> bool {
        self.odir != self.ndir
    }

    /// The checks and changes of the rename, with every inode involved
    /// locked in `g`. Every check precedes the first change.
    fn apply(&self, g: &mut Guards<'_>) -> Result<Option<(Attr, Arc<Inode>)>, Errno> {
        self.check_flags()?;
        self.check_loops()?;
        if self.tgt == Some(self.src) {
            // vfs_rename: same inode (hard links, or the same name): no-op,
            // and no whiteout.
            return Ok(None);
        }
        self.check_types()?;
        let mut r = self.roles(g)?;
        self.check_locked(&mut r)?;
        let whiteout = if self.exchange() {
            self.swap(&mut r)?;
            None
        } else {
            self.replace(&mut r)?
        };
        // simple_rename_timestamp: each directory and the moved inode get
        // their own fresh ctime (a directory's mtime with it), once each.
        r.src.set_ctime_current();
        r.od.stamp_mc_current();
        if let Some(n) = r.nd.as_deref_mut() {
            n.stamp_mc_current();
        }
        Ok(whiteout)
    }

    /// `RENAME_EXCHANGE` needs a target, `RENAME_NOREPLACE` none.
    fn check_flags(&self) -> Result<(), Errno> {
        if self.exchange() && self.tgt.is_none() {
            return Err(Errno::ENOENT);
        }
        if self.flags & RENAME_NOREPLACE != 0 && self.tgt.is_some() {
            return Err(Errno::EEXIST);
        }
        Ok(())
    }

    /// No directory moves into its own subtree. The rename mutex is held
    /// when cross: ancestry is stable.
    fn check_loops(&self) -> Result<(), Errno> {
        let cross = self.cross();
        if cross && self.src_dir && self.fs.is_ancestor_or_self(self.src, &self.nd_arc) {
            return Err(Errno::EINVAL);
        }
        if let Some(t) = self.tgt
            && cross
            && self.tgt_dir
            && self.fs.is_ancestor_or_self(t, &self.od_arc)
        {
            return Err(if self.exchange() {
                Errno::EINVAL
            } else {
                Errno::ENOTEMPTY
            });
        }
        Ok(())
    }

    /// A replaced name keeps its kind: directory over directory,
    /// non-directory over non-directory.
    fn check_types(&self) -> Result<(), Errno> {
        if !self.exchange() && self.tgt.is_some() {
            if self.src_dir && !self.tgt_dir {
                return Err(Errno::ENOTDIR);
            }
            if !self.src_dir && self.tgt_dir {
                return Err(Errno::EISDIR);
            }
        }
        Ok(())
    }

    /// Splits the guards into the (distinct) roles.
    fn roles<'g, 'l>(&self, g: &'g mut Guards<'l>) -> Result<Roles<'g, 'l>, Errno> {
        let (mut od, mut nd, mut ss, mut ts) = (None, None, None, None);
        for (ino, s) in g.iter_mut() {
            if *ino == self.odir {
                od = Some(s);
            } else if *ino == self.ndir {
                nd = Some(s);
            } else if *ino == self.src {
                ss = Some(s);
            } else if Some(*ino) == self.tgt {
                ts = Some(s);
            }
        }
        let (Some(od), Some(src)) = (od, ss) else {
            return Err(Errno::ESTALE);
        };
        if self.cross() && nd.is_none() || self.tgt.is_some() && ts.is_none() {
            return Err(Errno::ESTALE);
        }
        Ok(Roles {
            od,
            nd,
            src,
            tgt: ts,
        })
    }

    /// The checks on the locked states: the new directory is still there,
    /// a replaced directory is empty, no parent's link count overflows.
    fn check_locked(&self, r: &mut Roles<'_, '_>) -> Result<(), Errno> {
        if r.ndir().nlink() == 0 {
            return Err(Errno::ENOENT);
        }
        if let Some(t) = r.tgt.as_deref()
            && !self.exchange()
            && matches!(t.kind(), Kind::Dir(d) if d.len() > 0)
        {
            return Err(Errno::ENOTEMPTY);
        }
        // Link-count overflow of a parent gaining a subdirectory.
        if self.cross() {
            let (src_dir, tgt_dir) = (self.src_dir, self.tgt_dir);
            let gains = if self.exchange() {
                src_dir && !tgt_dir
            } else {
                src_dir && self.tgt.is_none()
            };
            let ogains = self.exchange() && tgt_dir && !src_dir;
            if gains && r.ndir().nlink() == u32::MAX || ogains && r.od.nlink() == u32::MAX {
                return Err(Errno::EMLINK);
            }
        }
        Ok(())
    }

    /// `RENAME_EXCHANGE`: each name now names the other inode.
    fn swap(&self, r: &mut Roles<'_, '_>) -> Result<(), Errno> {
        let Some(tgt_ft) = r.tgt.as_deref().map(|t| t.mode() & S_IFMT) else {
            return Err(Errno::ESTALE);
        };
        let src_ft = r.src.mode() & S_IFMT;
        // Target side first, then the source: the source inode (now
        // under the new name) ends up at the head. Both names keep
        // their offsets.
        let Some(tgt_arc) = self.tgt_arc.clone() else {
            return Err(Errno::ESTALE);
        };
        // The references the entries held go: the other name holds each
        // inode now (and the inode table still does).
        drop(r.od.dir_mut()?.replace_to_head(self.oname, tgt_arc, tgt_ft));
        drop(
            r.ndir()
                .dir_mut()?
                .replace_to_head(self.nname, self.src_arc.clone(), src_ft),
        );
        let cross = self.cross();
        if cross && self.src_dir != self.tgt_dir {
            if self.src_dir {
                r.od_nlink(-1);
                r.nd_nlink(1);
            } else {
                r.nd_nlink(-1);
                r.od_nlink(1);
            }
        }
        // Each moved directory's parent, under its write lock and the
        // rename mutex (`Inode::set_parent`).
        if cross {
            if self.src_dir {
                self.src_arc.set_parent(&self.nd_arc);
            }
            if let (true, Some(a)) = (self.tgt_dir, &self.tgt_arc) {
                a.set_parent(&self.od_arc);
            }
        }
        if let Some(t) = r.tgt.as_deref_mut() {
            t.set_ctime_current();
        }
        Ok(())
    }

    /// A plain rename: `nname` names the source, in place of what it named
    /// (whose offset it takes) or with a new offset; with a whiteout, a
    /// new character device 0/0 takes `oname`, whose attributes are
    /// returned.
    fn replace(&self, r: &mut Roles<'_, '_>) -> Result<Option<(Attr, Arc<Inode>)>, Errno> {
        let src_ft = r.src.mode() & S_IFMT;
        let max = self.fs.dir_offset_max;
        // The steps that can fail first (the whiteout's inode and offset,
        // then the new name's offset), so a failure changes nothing.
        let wo_offset = match self.whiteout {
            Some(_) => {
                self.fs.reserve_inode()?;
                match r.od.dir_mut()?.alloc_offset(max) {
                    Ok(o) => Some(o),
                    Err(e) => {
                        self.fs.release_inode();
                        return Err(e);
                    }
                }
            }
            None => None,
        };
        let offset = if r.tgt.is_some() {
            None
        } else {
            let taken = wo_offset.filter(|_| !self.cross());
            match r.ndir().dir_mut()?.alloc_offset_besides(max, taken) {
                Ok(o) => Some(o),
                Err(e) => {
                    if wo_offset.is_some() {
                        self.fs.release_inode();
                    }
                    return Err(e);
                }
            }
        };
        r.od.dir_mut()?.remove(self.oname);
        let whiteout = match (self.whiteout.clone(), wo_offset) {
            (Some(new), Some(wo)) => {
                let kind = Kind::Special { rdev: 0 };
                let (_, init, st, xattrs) = new_state(
                    &*r.od,
                    NewInode {
                        mode: S_IFCHR | (new.mode & 0o7777),
                        ..new
                    },
                    kind,
                    coarse_mg(),
                );
                let ino = self.fs.new_ino();
                let (attr, i) =
                    self.fs
                        .insert_inode(ino, std::sync::Weak::new(), &init, st, xattrs);
                r.od.dir_mut()?.insert(self.oname, i.clone(), S_IFCHR, wo);
                Some((attr, i))
            }
            _ => None,
        };
        let offset = match (offset, r.tgt.take()) {
            (Some(o), _) => o,
            (None, Some(t)) => {
                let slot = r.ndir().dir_mut()?.remove(self.nname);
                let offset = slot.map_or(DIR_OFFSET_MIN, |s| {
                    let o = s.offset();
                    self.replaced.set(Some(s.inode));
                    o
                });
                if self.tgt_dir {
                    t.set_nlink(0);
                    self.fs.orphaned();
                    r.od_nlink(-1);
                } else {
                    let n = t.nlink();
                    if n > 1 {
                        self.fs.release_inode();
                    } else {
                        self.fs.orphaned();
                    }
                    t.set_nlink(n.saturating_sub(1));
                }
                t.set_ctime_current();
                offset
            }
            (None, None) => return Err(Errno::ESTALE),
        };
        r.ndir()
            .dir_mut()?
            .insert(self.nname, self.src_arc.clone(), src_ft, offset);
        let cross = self.cross();
        if self.src_dir && cross && self.tgt.is_none() {
            r.od_nlink(-1);
            r.nd_nlink(1);
        }
        if self.src_dir && cross {
            self.src_arc.set_parent(&self.nd_arc);
        }
        Ok(whiteout)
    }
}
