//! Making names (`vfs_create`, `vfs_mkdir`, `vfs_symlink`, `vfs_link`,
//! `vfs_tmpfile`): the caller holds the directory's lock and has found the
//! name free (a negative dentry); these check permission, prepare the new
//! inode's mode and owner, call the file system, and instantiate the
//! dentry.

use super::VfsOps;
use super::inode::inode_permission;
use super::inode::{
    attr_of, iget, iget_found, mark_changed, mode_is_dir, perm_of, with_cached_inode,
};
use crate::acl::{AclType, PosixAcl};
use crate::cred::{self, Cap, MAY_EXEC, MAY_WRITE};
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::fs::{
    Attr, Found, HAS_DEFAULT_ACL, NewInode, S_IFBLK, S_IFCHR, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG,
};
use crate::primitive::sync::lock;
use std::sync::Arc;

impl VfsOps<'_> {
    /// The owner of a new inode in `dir` (attributes `dattr`), with `mode`
    /// as `vfs_prepare_mode` makes it (umask, set-group-ID inheritance; a
    /// symlink's mode is kept), and its ACLs (`posix_acl_create`): when
    /// the directory has a default ACL, the umask is not applied; the new
    /// inode's mode is masked by the ACL instead, which it gets as its
    /// access ACL (unless the mode says it all), and a directory gets it
    /// as its default ACL too.
    pub(super) fn new_inode(
        &self,
        dir: &DentryRef,
        dattr: &Attr,
        mode: u32,
    ) -> Result<NewInode, Errno> {
        let mut new = NewInode {
            mode,
            uid: self.cred.fsuid,
            gid: self.cred.fsgid,
            ..NewInode::default()
        };
        if mode & S_IFMT == S_IFLNK {
            return Ok(new);
        }
        let default = if dattr.acl & HAS_DEFAULT_ACL != 0 {
            dir.sb().fs.get_acl_node(dir.node(), AclType::Default)?
        } else {
            None
        };
        let Some(default) = default else {
            new.mode = cred::prepare_mode(self.cred, dattr, mode, self.umask);
            return Ok(new);
        };
        new.mode = cred::prepare_mode(self.cred, dattr, mode, 0);
        let mut acl = PosixAcl::clone(&default);
        if acl.create_masq(&mut new.mode) {
            new.acl = Some(Arc::new(acl));
        }
        if mode & S_IFMT == S_IFDIR {
            new.default_acl = Some(default);
        }
        Ok(new)
    }

    /// Checks `may_create` on `dir`, has `make` create the inode, and
    /// instantiates the negative dentry `d` with it.
    fn make_node(
        &self,
        dir: &DentryRef,
        d: &DentryRef,
        mode: u32,
        make: impl FnOnce(NewInode) -> Result<Found, Errno>,
    ) -> Result<(), Errno> {
        let dattr = perm_of(dir)?;
        self.may_create(dir, &dattr)?;
        let (attr, data) = make(self.new_inode(dir, &dattr, mode)?)?;
        let inode = iget_found(self.vfs, dir.sb(), &attr, data)?;
        self.vfs.caches().dcache.instantiate(d, inode, &attr);
        mark_changed(dir);
        Ok(())
    }

    /// `vfs_create`: a regular file `name` (`d`, negative) in `dir`.
    pub(crate) fn create(
        &self,
        dir: &DentryRef,
        d: &DentryRef,
        name: &[u8],
        mode: u32,
    ) -> Result<(), Errno> {
        self.make_node(dir, d, S_IFREG | (mode & 0o7777), |new| {
            dir.sb().fs.create_node(dir.node(), name, new)
        })
    }

    /// `vfs_mknod`: a FIFO, socket or device node (`mode` carries the
    /// type; `rdev` is the device, 0 for FIFOs and sockets). After
    /// `may_create`, a character or block device needs `CAP_MKNOD`
    /// (`EPERM`), except the whiteout, a character device 0/0; a file
    /// system without special files refuses with `EPERM` too.
    pub(crate) fn mknod(
        &self,
        dir: &DentryRef,
        d: &DentryRef,
        name: &[u8],
        mode: u32,
        rdev: u64,
    ) -> Result<(), Errno> {
        let ftype = mode & S_IFMT;
        let dattr = perm_of(dir)?;
        self.may_create(dir, &dattr)?;
        let whiteout = ftype == S_IFCHR && rdev == 0;
        if (ftype == S_IFCHR || ftype == S_IFBLK) && !whiteout && !self.cred.capable(Cap::Mknod) {
            return Err(Errno::EPERM);
        }
        let new = self.new_inode(dir, &dattr, ftype | (mode & 0o7777))?;
        let (attr, data) = dir.sb().fs.mknod_node(dir.node(), name, new, rdev)?;
        let inode = iget_found(self.vfs, dir.sb(), &attr, data)?;
        self.vfs.caches().dcache.instantiate(d, inode, &attr);
        mark_changed(dir);
        Ok(())
    }

    /// `vfs_mkdir`.
    pub(crate) fn mkdir(
        &self,
        dir: &DentryRef,
        d: &DentryRef,
        name: &[u8],
        mode: u32,
    ) -> Result<(), Errno> {
        // Empty, and every entry it will get is made through the cache:
        // complete from the start (with the path cache's switch, whose
        // negative-lookup shortcut this is).
        let complete = self.vfs.path_cache().is_some();
        if complete {
            d.set_complete();
        }
        let r = self.make_node(dir, d, S_IFDIR | (mode & 0o1777), |new| {
            dir.sb().fs.mkdir_node(dir.node(), name, new)
        });
        if r.is_err() && complete {
            d.clear_complete();
        }
        r
    }

    /// `vfs_symlink`.
    pub(crate) fn symlink(
        &self,
        dir: &DentryRef,
        d: &DentryRef,
        name: &[u8],
        target: &[u8],
    ) -> Result<(), Errno> {
        self.make_node(dir, d, S_IFLNK | 0o777, |new| {
            dir.sb().fs.symlink_node(dir.node(), name, target, new)
        })
    }

    /// `vfs_link`: a new name `name` (`d`, negative) in `dir` for `src`'s
    /// inode.
    pub(crate) fn link(
        &self,
        src: &DentryRef,
        dir: &DentryRef,
        d: &DentryRef,
        name: &[u8],
    ) -> Result<(), Errno> {
        if src.sb().id != dir.sb().id {
            return Err(Errno::EXDEV);
        }
        self.may_create(dir, &perm_of(dir)?)?;
        let sattr = attr_of(src)?;
        if mode_is_dir(sattr.mode) {
            return Err(Errno::EPERM);
        }
        if sattr.nlink == 0 && (src.is_unlinkable() || src.is_hashed()) {
            return Err(Errno::ENOENT);
        }
        let _io = src.lock_inode();
        let attr = dir.sb().fs.link_node(src.node(), dir.node(), name)?;
        mark_changed(dir);
        mark_changed(src);
        let inode = iget(self.vfs, dir.sb(), &attr)?;
        self.vfs.caches().dcache.instantiate(d, inode, &attr);
        // The count is taken even from zero (`set_attr` keeps a zero): a
        // link is what names an `O_TMPFILE` file. The caller holds `dir`
        // locked, so no unlink of the new name stores its zero first.
        with_cached_inode(self.vfs, d, |r| r.set_linked(&attr));
        Ok(())
    }

    /// `vfs_tmpfile`: an unnamed regular file in `dir`, on an unhashed
    /// dentry; `exclusive` (`O_EXCL`) forbids ever linking it.
    pub(crate) fn tmpfile(
        &self,
        dir: &DentryRef,
        mode: u32,
        exclusive: bool,
    ) -> Result<DentryRef, Errno> {
        let dattr = perm_of(dir)?;
        inode_permission(self.cred, dir, &dattr, MAY_WRITE | MAY_EXEC)?;
        let new = self.new_inode(dir, &dattr, S_IFREG | (mode & 0o7777))?;
        let (attr, data) = dir.sb().fs.tmpfile_node(dir.node(), new)?;
        let inode = iget_found(self.vfs, dir.sb(), &attr, data)?;
        let dc = &self.vfs.caches().dcache;
        let name = format!("#{}", attr.ino).into_bytes();
        let d = {
            let _g = lock(&dir.dir_lock);
            let d = dc.d_alloc(dir, &name);
            dc.instantiate(&d, inode, &attr);
            dc.d_drop(&d);
            d
        };
        if exclusive {
            d.set_unlinkable();
        }
        Ok(d)
    }
}
