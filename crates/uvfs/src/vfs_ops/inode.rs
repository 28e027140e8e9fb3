//! The inode helpers (fs/inode.c's side of the VFS): the cached inode for
//! a file system's answer, keeping the cached attributes in step with the
//! file system after a change, and `touch_atime`.

use crate::acl::AclType;
use crate::cred::{self, Cred};
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::fs::{Attr, HAS_ACCESS_ACL, InodeData, S_IFDIR, S_IFMT};
use crate::super_block::SuperBlock;
use crate::vfs::Vfs;
use std::ptr::NonNull;

/// The cached inode for `attr`, filled from `attr` on a miss, with its
/// cached attributes refreshed; one reference, as a raw pointer for a
/// dentry.
pub(crate) fn iget(
    vfs: &Vfs,
    sb: &SuperBlock,
    attr: &Attr,
) -> Result<NonNull<crate::icache::Inode>, Errno> {
    iget_found(vfs, sb, attr, None)
}

/// [`iget`] with the file system's object for the inode when its answer
/// carried one (`lookup_node`, `create_node`); on a miss without one the
/// file system is asked for it ([`FileSystem::inode_data`]), and one the
/// cache did not need (the inode was cached) goes back to it.
///
/// [`FileSystem::inode_data`]: crate::fs::FileSystem::inode_data
pub(crate) fn iget_found(
    vfs: &Vfs,
    sb: &SuperBlock,
    attr: &Attr,
    data: Option<InodeData>,
) -> Result<NonNull<crate::icache::Inode>, Errno> {
    let a = *attr;
    let data = std::cell::Cell::new(data);
    let filled = std::cell::Cell::new(false);
    let r = vfs.caches().icache.iget_with(sb.id, attr.ino, || {
        filled.set(true);
        let d = data.take().or_else(|| sb.fs.inode_data(a.ino));
        Ok((a, d))
    });
    if let Some(d) = data.take() {
        sb.fs.release_data(a.ino, d);
    }
    let r = r?;
    // A cached inode gets the fresh attributes; a just-filled one has them.
    if !filled.get() {
        r.set_attr(attr);
    }
    Ok(r.into_raw())
}

/// Stores `a` as the cached attributes of `d`'s inode (the inode cache's
/// copy and the walk's snapshot), after a change made through the file
/// system.
pub(crate) fn cache_attr(vfs: &Vfs, d: &DentryRef, a: Attr) {
    with_cached_inode(vfs, d, |r| r.set_attr(&a));
    d.set_perm(a.snap_mode(), a.uid, a.gid);
}

/// Runs `f` on the inode cache's handle of `d`'s inode (nothing for a
/// negative dentry), borrowing the dentry's reference.
pub(crate) fn with_cached_inode(
    vfs: &Vfs,
    d: &DentryRef,
    f: impl FnOnce(&crate::icache::InodeRef<'_>),
) {
    if let Some(i) = d.inode_ptr() {
        let icache = &vfs.caches().icache;
        // SAFETY: the dentry's reference is borrowed, not transferred: the
        // ManuallyDrop keeps it from being put.
        let r = std::mem::ManuallyDrop::new(unsafe { icache.from_raw(i) });
        f(&r);
    }
}

/// `touch_atime` under the default `relatime` mount option: sets atime to
/// now when the inode changed since its last access or atime is a day old.
/// Only atime changes (not ctime); a failure does not fail the access.
///
/// Inline: every cached read ends here, and most find nothing to do (the
/// check is two loads and, when the inode did not change, the coarse
/// clock); the update itself is [`touch_atime_now`], out of line.
#[inline]
pub(crate) fn touch_atime(vfs: &Vfs, d: &DentryRef) {
    if let Some(i) = d.inode()
        && i.atime_due(crate::fs::coarse_now_sec)
    {
        touch_atime_now(vfs, d);
    }
}

/// The update of [`touch_atime`], once it may be due. The cached flag
/// may only say a change was noted (`mark_changed` does not read the
/// times), so the inode's current times are cached first, which sets the
/// flag by Linux's `relatime_need_update` (`InodeRef::set_attr`), and the
/// cache is asked again: an atime still later than mtime and ctime (set
/// ahead by `utimensat`) stays, as on Linux.
#[cold]
#[inline(never)]
fn touch_atime_now(vfs: &Vfs, d: &DentryRef) {
    let Ok(a) = d.sb().fs.getattr_node(d.node()) else {
        return;
    };
    cache_attr(vfs, d, a);
    if !d
        .inode()
        .is_some_and(|i| i.atime_due(crate::fs::coarse_now_sec))
    {
        return;
    }
    let set = crate::fs::SetAttr {
        atime: Some(crate::fs::SetTime::Now),
        no_ctime: true,
        ..crate::fs::SetAttr::default()
    };
    if let Ok(a) = d.sb().fs.setattr_node(d.node(), &set) {
        cache_attr(vfs, d, a);
    }
}

/// Notes a change of `d`'s inode's data or status (mtime or ctime), for
/// `relatime`.
pub(crate) fn mark_changed(d: &DentryRef) {
    if let Some(i) = d.inode() {
        i.mark_changed();
    }
}

/// Re-reads an inode's attributes into the inode cache after its link
/// count changed, so the cache frees it at its last put once unlinked.
pub(crate) fn refresh(vfs: &Vfs, d: &DentryRef) {
    if d.is_negative() {
        return;
    }
    match d.sb().fs.getattr_node(d.node()) {
        Ok(a) => cache_attr(vfs, d, a),
        Err(_) => with_cached_inode(vfs, d, |r| r.set_unlinked()),
    }
}

/// The current attributes of a dentry's inode, from its file system.
pub(crate) fn attr_of(d: &DentryRef) -> Result<Attr, Errno> {
    if d.is_negative() {
        return Err(Errno::ENOENT);
    }
    d.sb().fs.getattr_node(d.node())
}

/// The permission attributes (type, mode bits, owner, group, inode number)
/// of a dentry's inode, from the in-core inode without asking the file
/// system: what Linux's permission checks read (`inode->i_mode`, `i_uid`,
/// `i_gid`). Every change of these goes through the VFS, which stores the
/// file system's answer in the inode ([`cache_attr`]), so they are current.
/// The other fields of the `Attr` are not filled (see `Snap::attr`).
pub(crate) fn perm_of(d: &DentryRef) -> Result<Attr, Errno> {
    d.inode_perm().map(|s| s.attr()).ok_or(Errno::ENOENT)
}

/// Linux's `generic_permission` for the inode of `d` with attributes
/// `attr` (see [`cred::permission`]): when `attr` says the inode has an
/// access ACL and the ACL can decide (the caller does not own it, its
/// group bits are not clear), the ACL is read from the file system and
/// decides ([`cred::permission_decided`]); otherwise the mode bits, with no
/// file-system call. The ACL is read through the inode's object
/// ([`DentryRef::node`]), not by number, when `attr` is `d`'s inode's.
pub(crate) fn inode_permission(
    cred: &Cred,
    d: &DentryRef,
    attr: &Attr,
    mask: u32,
) -> Result<(), Errno> {
    if attr.acl & HAS_ACCESS_ACL == 0 || attr.uid == cred.fsuid || attr.mode & 0o070 == 0 {
        return cred::permission(cred, attr, mask);
    }
    let (fs, n) = (&d.sb().fs, d.node());
    let acl = if n.ino == attr.ino {
        fs.get_acl_node(n, AclType::Access)
    } else {
        fs.get_acl(attr.ino, AclType::Access)
    };
    let acl = acl.ok().flatten();
    let m = mask & (cred::MAY_READ | cred::MAY_WRITE | cred::MAY_EXEC);
    let in_group = |g| cred.in_group_p(g);
    let decided = acl.as_deref().and_then(|a| {
        crate::acl::acl_decides(cred.fsuid, &in_group, (attr.uid, attr.gid, attr.mode), a, m)
    });
    cred::permission_decided(cred, attr, decided, mask)
}

/// Whether `mode` is a directory's.
pub(crate) fn mode_is_dir(mode: u32) -> bool {
    mode & S_IFMT == S_IFDIR
}
