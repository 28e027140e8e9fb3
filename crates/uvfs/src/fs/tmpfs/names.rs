//! Creating inodes and adding or removing names (Linux's `shmem_mknod`,
//! `shmem_symlink`, `shmem_tmpfile`, `shmem_link`, `shmem_unlink` and
//! `simple_rmdir`), with the link counts and inode counts they change.
//! Rename has its own module. Also the lookup of a name and the listing
//! of a directory (`simple_lookup`, `offset_readdir`).

use std::sync::Arc;

use super::dir::{DIR_OFFSET_FIRST, READDIR_BATCH, check_name, name_hash32};
use super::inode::{Init, Inode, Kind, Locked, State, XattrSet, lock_all, rd, wr};
use super::pages::RegFile;
use super::{DIR_OFFSET_EOD, SHORT_SYMLINK_LEN, SYMLINK_MAX, Tmpfs};
use crate::errno::Errno;
use crate::fs::timekeeping::coarse_mg;
use crate::fs::{
    Attr, DirEntry, Ino, NewInode, Node, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG, S_ISGID, Timespec,
};

/// The state of a new inode of `kind` named in the directory whose state
/// is `ds`, with its file type: the owner of `new`, the group of a
/// set-group-ID directory (which a new directory inherits as its own
/// set-group-ID bit), one link (two for a directory), every time `now`
/// (`shmem_get_inode`'s `inode_init_owner`); and the ACLs it inherits
/// (`simple_acl_create`; none for a symlink).
pub(super) fn new_state(
    ds: &(impl Locked + ?Sized),
    new: NewInode,
    kind: Kind,
    now: Timespec,
) -> (u32, Init, State, Option<Box<XattrSet>>) {
    let is_dir = matches!(kind, Kind::Dir(_));
    let ftype = match &kind {
        Kind::Reg(_) => S_IFREG,
        Kind::Dir(_) => S_IFDIR,
        Kind::Symlink { .. } => S_IFLNK,
        Kind::Special { .. } => new.mode & S_IFMT,
    };
    let mut mode = ftype | (new.mode & 0o7777);
    let acls = if ftype == S_IFLNK {
        mode = S_IFLNK | 0o777;
        None
    } else {
        XattrSet::with_acls(new.acl, if is_dir { new.default_acl } else { None })
    };
    let mut gid = new.gid;
    if ds.mode() & S_ISGID != 0 {
        gid = ds.gid();
        if is_dir {
            mode |= S_ISGID;
        }
    }
    let init = Init {
        mode,
        uid: new.uid,
        gid,
        nlink: if is_dir { 2 } else { 1 },
        now,
        acl: acls.as_ref().map_or(0, |x| x.acl_flags()),
        linkable: false,
    };
    let st = State::new(kind);
    (ftype, init, st, acls)
}

impl Tmpfs {
    /// The common part of create, mkdir and symlink: a new inode named
    /// `name` in `dir`.
    pub(super) fn make_node(
        &self,
        dir_node: Node<'_>,
        name: &[u8],
        new: NewInode,
        kind: Kind,
    ) -> Result<(Attr, Arc<Inode>), Errno> {
        check_name(name)?;
        let d = self.node(dir_node)?;
        // The name's hash once, for the search and the insertion.
        let h = name_hash32(name);
        let mut ds = wr(&d);
        if ds.dir()?.get_hashed(name, h).is_some() {
            return Err(Errno::EEXIST);
        }
        if ds.nlink() == 0 {
            return Err(Errno::ENOENT);
        }
        let is_dir = matches!(kind, Kind::Dir(_));
        if is_dir && ds.nlink() == u32::MAX {
            return Err(Errno::EMLINK);
        }
        self.reserve_inode()?;
        let wants_page = matches!(&kind, Kind::Symlink { has_page: true, .. });
        if wants_page && !self.reserve_pages(1) {
            self.release_inode();
            return Err(Errno::ENOSPC);
        }
        let offset = match ds.dir_mut()?.alloc_offset(self.dir_offset_max) {
            Ok(o) => o,
            Err(e) => {
                self.release_pages(u64::from(wants_page));
                self.release_inode();
                return Err(e);
            }
        };
        let ino = self.new_ino();
        // `simple_inode_init_ts`: a new inode nobody has queried, so the
        // coarse clock; the directory's stamp is its own
        // (`inode_set_ctime_current(dir)`), as in `shmem_mknod`.
        let (ftype, init, st, xattrs) = new_state(&ds, new, kind, coarse_mg());
        // A directory's parent: its directory, weakly.
        let parent = if is_dir {
            d.downgrade()
        } else {
            std::sync::Weak::new()
        };
        let (attr, i) = self.insert_inode(ino, parent, &init, st, xattrs);
        ds.dir_mut()?
            .insert_hashed(name, h, i.clone(), ftype, offset);
        if is_dir {
            let n = ds.nlink() + 1;
            ds.set_nlink(n);
        }
        ds.stamp_mc_current();
        Ok((attr, i))
    }

    /// symlink(2): a new symlink `name` in `dir` pointing at `target`.
    pub(super) fn make_symlink(
        &self,
        dir: Node<'_>,
        name: &[u8],
        target: &[u8],
        new: NewInode,
    ) -> Result<(Attr, Arc<Inode>), Errno> {
        check_name(name)?;
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        if target.contains(&0) {
            return Err(Errno::EINVAL);
        }
        {
            let d = self.node(dir)?;
            let ds = rd(&d);
            if ds.dir()?.get(name).is_some() {
                return Err(Errno::EEXIST);
            }
        }
        if target.len() > SYMLINK_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let kind = Kind::Symlink {
            target: target.into(),
            has_page: target.len() >= SHORT_SYMLINK_LEN,
        };
        self.make_node(dir, name, new, kind)
    }

    /// `O_TMPFILE`: a new regular file with no name (link count 0) that
    /// `link` may name once.
    pub(super) fn make_tmpfile(
        &self,
        dir_node: Node<'_>,
        new: NewInode,
    ) -> Result<(Attr, Arc<Inode>), Errno> {
        let d = self.node(dir_node)?;
        let ds = rd(&d);
        ds.dir()?;
        // Host: O_TMPFILE in a removed directory succeeds (`vfs_tmpfile`
        // has no IS_DEADDIR check, and the file gets no name there).
        self.reserve_inode()?;
        let gid = if ds.mode() & S_ISGID != 0 {
            ds.gid()
        } else {
            new.gid
        };
        drop(ds);
        let ino = self.new_ino();
        let init = Init {
            mode: S_IFREG | (new.mode & 0o7777),
            uid: new.uid,
            gid,
            nlink: 0,
            now: coarse_mg(),
            acl: if new.acl.is_some() {
                crate::fs::HAS_ACCESS_ACL
            } else {
                0
            },
            linkable: true,
        };
        let st = State::new(Kind::Reg(RegFile::default()));
        let xattrs = XattrSet::with_acls(new.acl, None);
        self.orphaned();
        Ok(self.insert_inode(ino, std::sync::Weak::new(), &init, st, xattrs))
    }

    /// link(2): another name for a non-directory (or the first one for an
    /// `O_TMPFILE` inode); an extra link counts as one more inode.
    pub(super) fn link_name(
        &self,
        n: Node<'_>,
        dir_node: Node<'_>,
        name: &[u8],
    ) -> Result<Attr, Errno> {
        check_name(name)?;
        let (ino, dir) = (n.ino, dir_node.ino);
        let d = self.owned(dir_node)?;
        let i = self.owned(n)?;
        if ino == dir {
            // A directory cannot be hard-linked (and a non-directory is
            // no directory to link into).
            return Err(if rd(&i).is_dir() {
                Errno::EPERM
            } else {
                Errno::ENOTDIR
            });
        }
        let mut arcs = [d, i];
        arcs.sort_by_key(|x| x.ino);
        let mut g = lock_all(&arcs);
        let (a, b) = g.split_at_mut(1);
        let (ds, is) = if a[0].0 == dir {
            (&mut a[0].1, &mut b[0].1)
        } else {
            (&mut b[0].1, &mut a[0].1)
        };
        if ds.dir()?.get(name).is_some() {
            return Err(Errno::EEXIST);
        }
        let nlink = is.nlink();
        if ds.nlink() == 0 {
            return Err(Errno::ENOENT);
        }
        if is.is_dir() {
            return Err(Errno::EPERM);
        }
        if nlink == 0 && !is.linkable() {
            return Err(Errno::ENOENT);
        }
        if nlink == u32::MAX {
            return Err(Errno::EMLINK);
        }
        if nlink > 0 {
            self.reserve_inode()?;
        }
        let offset = match ds.dir_mut()?.alloc_offset(self.dir_offset_max) {
            Ok(o) => o,
            Err(e) => {
                if nlink > 0 {
                    self.release_inode();
                }
                return Err(e);
            }
        };
        let ftype = is.mode() & S_IFMT;
        let held = arcs.iter().find(|a| a.ino == ino).cloned();
        ds.dir_mut()?.insert(
            name,
            held.expect("the linked inode is locked"),
            ftype,
            offset,
        );
        if nlink == 0 {
            // An `O_TMPFILE` inode's first name.
            self.unorphaned();
        }
        // shmem_link: the inode's fresh ctime, copied to the directory.
        is.set_nlink(nlink + 1);
        is.clear_linkable();
        let now = is.set_ctime_current();
        ds.stamp_mc(now);
        Ok(self.attr(ino, &*is))
    }

    /// unlink(2): removes a non-directory's name; the inode stays until
    /// evicted.
    pub(super) fn unlink_name(
        &self,
        dir: Node<'_>,
        victim: Option<Node<'_>>,
        name: &[u8],
    ) -> Result<(), Errno> {
        let removed = self.with_dir_and_child(dir, victim, name, |ds, cs, _, h| {
            if cs.is_dir() {
                return Err(Errno::EISDIR);
            }
            let removed = ds.dir_mut()?.remove_hashed(name, h);
            let nlink = cs.nlink();
            if nlink > 1 {
                self.release_inode();
            } else {
                self.orphaned();
            }
            cs.set_nlink(nlink.saturating_sub(1));
            // shmem_unlink: the victim's fresh ctime, copied to the
            // directory's ctime and mtime.
            let now = cs.set_ctime_current();
            ds.stamp_mc(now);
            Ok(removed)
        })?;
        // The entry's reference, once the locks and every other reference
        // of this call are gone: maybe the last one.
        if let Some(r) = removed {
            self.put(r.inode);
        }
        Ok(())
    }

    /// rmdir(2): removes an empty directory's name.
    pub(super) fn rmdir_name(
        &self,
        dir: Node<'_>,
        victim: Option<Node<'_>>,
        name: &[u8],
    ) -> Result<(), Errno> {
        let removed = self.with_dir_and_child(dir, victim, name, |ds, cs, _, h| {
            if cs.dir()?.len() > 0 {
                return Err(Errno::ENOTEMPTY);
            }
            let removed = ds.dir_mut()?.remove_hashed(name, h);
            cs.set_nlink(0);
            self.orphaned();
            let n = ds.nlink().saturating_sub(1);
            ds.set_nlink(n);
            let now = cs.set_ctime_current();
            ds.stamp_mc(now);
            Ok(removed)
        })?;
        if let Some(r) = removed {
            self.put(r.inode);
        }
        Ok(())
    }
}

impl Tmpfs {
    /// Peeks at `name` in `dir`: the child the entry holds.
    pub(super) fn peek(&self, dir: &Inode, name: &[u8]) -> Result<Option<Arc<Inode>>, Errno> {
        Ok(rd(dir).dir()?.get(name).map(|s| s.inode().clone()))
    }

    /// Looks `name` up in `dir` (a name whose inode is gone meanwhile is
    /// looked up again).
    pub(super) fn lookup_name(
        &self,
        dir: Node<'_>,
        name: &[u8],
    ) -> Result<(Attr, Arc<Inode>), Errno> {
        check_name(name)?;
        let d = self.node(dir)?;
        loop {
            // The entry's own reference: no table search.
            let c = self.peek(&d, name)?.ok_or(Errno::ENOENT)?;
            // `FastPaths::tmpfs_borrow` off: the table, as before.
            let Ok(c) = self.stock(c) else { continue };
            // The entry may go away between the two locks: look again then.
            let st = rd(&c);
            if st.nlink() > 0 {
                let a = self.attr(c.ino, &st);
                drop(st);
                return Ok((a, c));
            }
            drop(st);
            self.put(c);
        }
    }

    /// Lists `dir` from `cookie`: `.` and `..`, then the entries newest
    /// first, each with the cookie to resume after it.
    pub(super) fn readdir_from(
        &self,
        dir_node: Node<'_>,
        cookie: u64,
        emit: &mut dyn FnMut(&DirEntry) -> bool,
    ) -> Result<(), Errno> {
        let dir = dir_node.ino;
        let d = self.node(dir_node)?;
        let mut pos = cookie;
        // `.` and `..` (dir_emit_dots).
        {
            let st = rd(&d);
            let dd = st.dir()?;
            if st.nlink() == 0 {
                // IS_DEADDIR: iterate_dir fails with ENOENT.
                return Err(Errno::ENOENT);
            }
            if pos == 0 {
                let e = DirEntry {
                    ino: dir,
                    file_type: S_IFDIR,
                    name: b".".to_vec(),
                    pos: 0,
                    next: 1,
                };
                if !emit(&e) {
                    return Ok(());
                }
                pos = 1;
            }
            if pos == 1 {
                // The parent's number through its weak reference, under
                // this directory's lock (the root has none: itself).
                let parent = d.parent().map_or(dir, |p| p.ino);
                let e = DirEntry {
                    ino: parent,
                    file_type: S_IFDIR,
                    name: b"..".to_vec(),
                    pos: 1,
                    next: dd.head_cookie(),
                };
                if !emit(&e) {
                    return Ok(());
                }
                pos = DIR_OFFSET_FIRST;
            }
        }
        // Entries, a batch per lock hold so `emit` runs unlocked; each
        // batch resumes as a caller holding the cookie would. The batch is
        // copied out as records and one buffer of names, and handed to
        // `emit` through one reused entry: no allocation per entry.
        let mut recs: Vec<BatchRec> = Vec::with_capacity(READDIR_BATCH);
        let mut names: Vec<u8> = Vec::new();
        let mut e = DirEntry {
            ino: 0,
            file_type: 0,
            name: Vec::new(),
            pos: 0,
            next: 0,
        };
        loop {
            recs.clear();
            names.clear();
            {
                let st = rd(&d);
                let dd = st.dir()?;
                let Some(from) = dd.resume(pos) else {
                    return Ok(());
                };
                for (slot, next) in dd.list_from(from, READDIR_BATCH) {
                    names.extend_from_slice(slot.name());
                    recs.push(BatchRec {
                        ino: slot.ino(),
                        file_type: slot.ftype(),
                        pos: slot.offset(),
                        next,
                        name_end: names.len(),
                    });
                }
            }
            let Some(last) = recs.last() else {
                return Ok(());
            };
            let (last_next, full) = (last.next, recs.len() == READDIR_BATCH);
            let mut start = 0;
            for r in &recs {
                e.ino = r.ino;
                e.file_type = r.file_type;
                e.pos = r.pos;
                e.next = r.next;
                e.name.clear();
                e.name.extend_from_slice(&names[start..r.name_end]);
                start = r.name_end;
                if !emit(&e) {
                    return Ok(());
                }
            }
            if !full || last_next >= DIR_OFFSET_EOD {
                return Ok(());
            }
            pos = last_next;
        }
    }
}

/// One entry of a readdir batch, its name in the batch's buffer of names
/// (ending at `name_end`, starting where the previous one ended).
struct BatchRec {
    ino: Ino,
    file_type: u32,
    pos: u64,
    next: u64,
    name_end: usize,
}
