//! `vfs_rename`: the caller has locked both directories (and, across
//! directories, taken the superblock's rename lock), looked both names up
//! under the locks and made the checks on the names themselves (trailing
//! slashes, renaming a directory into itself); this checks permission,
//! calls the file system, and moves the dentries. With `RENAME_WHITEOUT`
//! the file system leaves a whiteout (a character device 0/0 owned by the
//! caller, which needs no `CAP_MKNOD`) at the old name, and a new dentry
//! names it there.

use super::VfsOps;
use super::inode::inode_permission;
use super::inode::{attr_of, iget_found, mark_changed, refresh};
use crate::cred::MAY_WRITE;
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::fs::{Attr, RENAME_EXCHANGE, RENAME_WHITEOUT, S_IFCHR};

/// One side of a rename: the directory, the name in it, its dentry under
/// the lock (negative for a free target) and the inode's attributes.
pub(crate) struct RenameSide<'a> {
    pub(crate) dir: &'a DentryRef,
    pub(crate) name: &'a [u8],
    pub(crate) dentry: &'a DentryRef,
    pub(crate) attr: Option<Attr>,
}

impl RenameSide<'_> {
    fn is_dir(&self) -> bool {
        self.attr.is_some_and(|a| super::inode::mode_is_dir(a.mode))
    }
}

impl VfsOps<'_> {
    /// `vfs_rename` of `old` (positive) to `new`, with `RENAME_NOREPLACE`,
    /// `RENAME_EXCHANGE` and `RENAME_WHITEOUT` in `flags`.
    pub(crate) fn rename(
        &self,
        old: &RenameSide<'_>,
        new: &RenameSide<'_>,
        flags: u32,
    ) -> Result<(), Errno> {
        let oattr = old.attr.ok_or(Errno::ENOENT)?;
        let (odir_is, ndir_is) = (old.is_dir(), new.is_dir());
        let exchange = flags & RENAME_EXCHANGE != 0;
        if new.attr.is_some_and(|a| a.ino == oattr.ino) {
            return Ok(()); // the same inode: nothing to do
        }
        self.may_delete(old.dir, old.dentry, odir_is)?;
        match new.attr {
            Some(_) if exchange => self.may_delete(new.dir, new.dentry, ndir_is)?,
            Some(_) => self.may_delete(new.dir, new.dentry, odir_is)?,
            None => self.may_create(new.dir, &super::inode::perm_of(new.dir)?)?,
        }
        if !DentryRef::ptr_eq(old.dir, new.dir) {
            // Moving a directory rewrites its `..`: write permission on it.
            if odir_is {
                inode_permission(self.cred, old.dentry, &oattr, MAY_WRITE)?;
            }
            if exchange && ndir_is {
                let (d, a) = match new.attr {
                    Some(a) => (new.dentry, a),
                    None => (old.dentry, oattr),
                };
                inode_permission(self.cred, d, &a, MAY_WRITE)?;
            }
        }
        if !old.dentry.mounted_ptr().is_null() || !new.dentry.mounted_ptr().is_null() {
            return Err(Errno::EBUSY);
        }
        let fs = &old.dir.sb().fs;
        let wo = if flags & RENAME_WHITEOUT != 0 {
            Some(self.new_inode(old.dir, &attr_of(old.dir)?, S_IFCHR)?)
        } else {
            None
        };
        let (od, nd) = (old.dir.node(), new.dir.node());
        let whiteout = fs.rename_node(od, old.name, nd, new.name, flags, wo)?;
        for d in [old.dir, new.dir, old.dentry, new.dentry] {
            mark_changed(d);
        }
        let dc = &self.vfs.caches().dcache;
        if exchange {
            dc.d_exchange(old.dentry, old.name, new.dentry, new.name, old.dir, new.dir);
        } else {
            if new.attr.is_some() {
                refresh(self.vfs, new.dentry);
                if ndir_is {
                    new.dentry.set_dead_dir();
                }
            }
            // The target's dentry, positive or negative, leaves the hash:
            // the moved dentry takes its name.
            dc.d_drop(new.dentry);
            if ndir_is {
                // A directory renamed over is removed: prune it as rmdir
                // does.
                dc.prune_dead_dir(new.dentry);
            }
            dc.d_move(old.dentry, new.dir, new.name);
            if let Some((attr, data)) = whiteout {
                // The old name is free in the cache now (its dentry moved):
                // a new one names the whiteout, as mknod's would.
                let d = dc.d_alloc(old.dir, old.name);
                let inode = iget_found(self.vfs, old.dir.sb(), &attr, data)?;
                dc.instantiate(&d, inode, &attr);
            }
        }
        Ok(())
    }
}
