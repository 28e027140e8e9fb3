//! Removing names (`vfs_unlink`, `vfs_rmdir`) and `may_delete`: the caller
//! holds the directory's lock and has found the victim (a positive
//! dentry).

use super::VfsOps;
use super::inode::{inode_permission, mark_changed, mode_is_dir, perm_of, refresh};
use crate::cred;
use crate::cred::{MAY_EXEC, MAY_WRITE};
use crate::dcache::DentryRef;
use crate::errno::Errno;

impl VfsOps<'_> {
    /// `may_delete`: write and search permission on the directory, the
    /// sticky bit, the type, and mountpoints (`EBUSY`).
    pub(crate) fn may_delete(
        &self,
        dir: &DentryRef,
        victim: &DentryRef,
        isdir: bool,
    ) -> Result<(), Errno> {
        let dattr = perm_of(dir)?;
        let vattr = perm_of(victim)?;
        // `cred::may_delete`, with the directory's ACL.
        inode_permission(self.cred, dir, &dattr, MAY_WRITE | MAY_EXEC)?;
        if cred::check_sticky(self.cred, &dattr, &vattr) {
            return Err(Errno::EPERM);
        }
        if isdir {
            if !mode_is_dir(vattr.mode) {
                return Err(Errno::ENOTDIR);
            }
        } else if mode_is_dir(vattr.mode) {
            return Err(Errno::EISDIR);
        }
        if !victim.mounted_ptr().is_null() {
            return Err(Errno::EBUSY);
        }
        Ok(())
    }

    /// `vfs_unlink` (`rmdir` false) or `vfs_rmdir` (true) of `d`, the
    /// entry `name` of `dir`.
    pub(crate) fn remove(
        &self,
        dir: &DentryRef,
        d: &DentryRef,
        name: &[u8],
        rmdir: bool,
    ) -> Result<(), Errno> {
        self.may_delete(dir, d, rmdir)?;
        if rmdir {
            dir.sb().fs.rmdir_node(dir.node(), d.node(), name)?;
            d.set_dead_dir();
        } else {
            dir.sb().fs.unlink_node(dir.node(), d.node(), name)?;
        }
        refresh(self.vfs, d);
        mark_changed(dir);
        mark_changed(d);
        let dc = &self.vfs.caches().dcache;
        if !rmdir && self.vfs.fastpaths().d_delete {
            // `d_delete`: the name's dentry stays hashed, negative, when
            // the caller holds the only reference; dropped otherwise.
            dc.d_delete(d);
        } else {
            dc.d_drop(d);
        }
        if rmdir {
            // `shrink_dcache_parent`: the removed directory's cached
            // (negative) children go now, not when the LRU reaches them.
            dc.prune_dead_dir(d);
        }
        Ok(())
    }
}
