//! The VFS operations (Linux's `vfs_create`, `vfs_mkdir`, `vfs_unlink`,
//! `vfs_rename` … in fs/namei.c, `notify_change` in fs/attr.c, and the
//! inode helpers of fs/inode.c): the layer between the syscalls
//! ([`Process`](crate::Process)) and the file systems.
//!
//! A syscall checks its arguments, walks the path ([`namei`](crate::namei)),
//! locks the directories and looks the last component up under the lock;
//! then it makes one call here. Each operation here checks the caller's
//! permission on the objects it was handed (`may_create`, `may_delete`),
//! calls the file system, and brings the caches up to date: the new inode
//! into the inode cache and onto its dentry (`d_instantiate`), a removed
//! name out of the hash (`d_drop`) with a removed directory's cached
//! children (`shrink_dcache_parent`), a renamed dentry to its new place
//! (`d_move`, `d_exchange`), the changed inodes marked for `relatime`.
//! Nothing here walks a path.
//!
//! - [`inode`] holds the inode helpers (the cached inode of an attribute
//!   set, refreshing cached attributes, `touch_atime`);
//! - [`attr`] holds `notify_change`;
//! - [`create`] holds create, mkdir, symlink, link and `O_TMPFILE`;
//! - [`remove`] holds unlink and rmdir;
//! - [`rename`] holds rename and `RENAME_EXCHANGE`.

pub(crate) mod attr;
pub(crate) mod create;
pub(crate) mod inode;
pub(crate) mod remove;
pub(crate) mod rename;

use crate::cred::{self, Cred};
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::fs::Attr;
use crate::vfs::Vfs;

/// Who performs an operation and where: the VFS, the caller's credentials
/// and its umask (which `vfs_prepare_mode` applies to new inodes).
pub(crate) struct VfsOps<'a> {
    pub(crate) vfs: &'a Vfs,
    pub(crate) cred: &'a Cred,
    pub(crate) umask: u32,
}

impl VfsOps<'_> {
    /// `may_create`: no new name in a removed directory (`ENOENT`, even
    /// when the name is cached as negative), then write and search
    /// permission on it.
    pub(crate) fn may_create(&self, dir: &DentryRef, dattr: &Attr) -> Result<(), Errno> {
        if dir.is_dead_dir() {
            return Err(Errno::ENOENT);
        }
        inode::inode_permission(self.cred, dir, dattr, cred::MAY_WRITE | cred::MAY_EXEC)
    }
}
