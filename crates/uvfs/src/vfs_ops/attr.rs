//! `notify_change` (fs/attr.c): an attribute change the caller has
//! permission-checked, applied through the file system, then reflected in
//! the inode cache's copy and the walk's snapshot, so later permission
//! checks see it.

use super::inode::cache_attr;
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::fs::{Attr, SetAttr};
use crate::vfs::Vfs;

/// Applies `set` to `d`'s inode; returns the new attributes.
pub(crate) fn notify_change(vfs: &Vfs, d: &DentryRef, set: &SetAttr) -> Result<Attr, Errno> {
    let a = d.sb().fs.setattr_node(d.node(), set)?;
    cache_attr(vfs, d, a);
    Ok(a)
}
