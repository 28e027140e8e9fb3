//! The mount table (fs/namespace.c's `struct mount` list of one
//! namespace): which file system's root is mounted on which directory.
//!
//! The walk reads a mountpoint's `mounted` pointer without a lock (set here
//! under the dentry's sequence count) and comes here, under the table's
//! lock, only to take a reference on the mounted root or, for `..` at a
//! mounted root, to find the mountpoint: both rare next to plain steps.
//! The table holds a reference on both ends of each mount.

use crate::dcache::{self, DentryRef};
use crate::errno::Errno;
use crate::primitive::sync::{UnmodelledMutex, lock_unmodelled};

/// One mount: `root` (a superblock's root dentry) is mounted on
/// `mountpoint` (a directory of the parent file system).
struct Mount {
    mountpoint: DentryRef,
    root: DentryRef,
}

/// The mounts of one namespace, in mount order.
#[derive(Default)]
pub(crate) struct Mounts {
    list: UnmodelledMutex<Vec<Mount>>,
}

impl Mounts {
    /// Mounts `root` on the directory `mp` (`EBUSY` if something is mounted
    /// there already: the walk resolves a mountpoint to what is mounted on
    /// it, so a second mount on one path stacks on the first's root).
    pub(crate) fn add(&self, mp: DentryRef, root: DentryRef) -> Result<(), Errno> {
        let mut list = lock_unmodelled(&self.list);
        if !mp.mounted_ptr().is_null() {
            return Err(Errno::EBUSY);
        }
        dcache::set_mounted(&mp, Some(&root));
        list.push(Mount {
            mountpoint: mp,
            root,
        });
        Ok(())
    }

    /// The root of the file system mounted on `mp`, with a reference.
    pub(crate) fn mounted_root(&self, mp: &DentryRef) -> Option<DentryRef> {
        if mp.mounted_ptr().is_null() {
            return None;
        }
        lock_unmodelled(&self.list)
            .iter()
            .find(|m| DentryRef::ptr_eq(&m.mountpoint, mp))
            .map(|m| m.root.clone())
    }

    /// The directory the root dentry `root` is mounted on (`mnt_mountpoint`),
    /// with a reference; `None` for the namespace root or a dentry that is
    /// no mounted root.
    pub(crate) fn mountpoint_of(&self, root: &DentryRef) -> Option<DentryRef> {
        lock_unmodelled(&self.list)
            .iter()
            .find(|m| DentryRef::ptr_eq(&m.root, root))
            .map(|m| m.mountpoint.clone())
    }

    /// Runs `f` on each (mountpoint, root) pair, under the table's lock.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&DentryRef, &DentryRef)) {
        for m in lock_unmodelled(&self.list).iter() {
            f(&m.mountpoint, &m.root);
        }
    }

    /// Unmounts everything, last mount first (the namespace is going away).
    pub(crate) fn clear(&self) {
        let list = std::mem::take(&mut *lock_unmodelled(&self.list));
        for m in list.into_iter().rev() {
            dcache::set_mounted(&m.mountpoint, None);
            drop(m);
        }
    }
}
