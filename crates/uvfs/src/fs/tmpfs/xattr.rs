//! Extended attributes of tmpfs inodes: Linux's `simple_xattrs`
//! (`fs/xattr.c`) behind shmem's handlers (`mm/shmem.c`).
//!
//! - Namespaces: `security.`, `trusted.` and `user.` are stored as they
//!   come (the VFS has decided who may touch which); a bare prefix is
//!   `EINVAL`; any other name is `EOPNOTSUPP`, `system.*` included but for
//!   the two POSIX ACL names, which the VFS turns into
//!   [`get_acl`](crate::fs::FileSystem::get_acl)/`set_acl` calls (Linux's
//!   `simple_set_acl` and the inode's cached ACLs: the ACLs live in the
//!   inode's state, parsed; symlinks hold none, `EOPNOTSUPP`).
//! - Set: `XATTR_CREATE` on an existing name is `EEXIST`, `XATTR_REPLACE`
//!   (and a removal) of a missing one `ENODATA`; a zero-length value is a
//!   value. A change stamps ctime.
//! - List: the ACL names first (access, then default) for the ACLs the
//!   inode has, as `simple_xattr_list` does; then the others in name order. Linux 6.18 keeps the names in a hash table and
//!   lists them in its order, which depends on a per-table random seed:
//!   the order is not something a program can rely on, and uvfs does not
//!   reproduce it.
//! - Not modelled: Linux charges xattr space against `nr_inodes`
//!   (`free_ispace`, 1 KiB per inode); here xattrs are not counted.

use super::Tmpfs;
use super::inode::{Kind, Locked, rd, wr};
use crate::acl::{AclType, PosixAcl};
use crate::errno::Errno;
use crate::fs::Node;
use crate::uapi::{XATTR_CREATE, XATTR_REPLACE};
use std::sync::Arc;

/// The namespaces shmem has handlers for.
const PREFIXES: [&[u8]; 3] = [b"security.", b"trusted.", b"user."];

/// `xattr_resolve_name`: `EINVAL` for a bare prefix, `EOPNOTSUPP` for a
/// namespace without a handler.
fn resolve(name: &[u8]) -> Result<(), Errno> {
    match PREFIXES.iter().find(|p| name.starts_with(p)) {
        Some(p) if name.len() == p.len() => Err(Errno::EINVAL),
        Some(_) => Ok(()),
        None => Err(Errno::EOPNOTSUPP),
    }
}

impl Tmpfs {
    pub(super) fn xattr_get(&self, n: Node<'_>, name: &[u8]) -> Result<Vec<u8>, Errno> {
        resolve(name)?;
        let i = self.node(n)?;
        let st = rd(&i);
        st.xattrs
            .as_ref()
            .and_then(|m| m.names.get(name))
            .map(|v| v.to_vec())
            .ok_or(Errno::ENODATA)
    }

    pub(super) fn xattr_set(
        &self,
        n: Node<'_>,
        name: &[u8],
        value: Option<&[u8]>,
        flags: i32,
    ) -> Result<(), Errno> {
        resolve(name)?;
        let i = self.node(n)?;
        let mut st = wr(&i);
        let x = &mut st.xattrs;
        let exists = x.as_ref().is_some_and(|m| m.names.contains_key(name));
        if exists && flags & XATTR_CREATE != 0 {
            return Err(Errno::EEXIST);
        }
        if !exists && (flags & XATTR_REPLACE != 0 || value.is_none()) {
            return Err(Errno::ENODATA);
        }
        match value {
            Some(v) => {
                x.get_or_insert_with(Default::default)
                    .names
                    .insert(name.into(), v.into());
            }
            None => {
                if let Some(m) = x.as_mut() {
                    m.names.remove(name);
                    if m.is_empty() {
                        *x = None;
                    }
                }
            }
        }
        st.set_ctime_current();
        Ok(())
    }

    pub(super) fn xattr_list(&self, n: Node<'_>) -> Result<Vec<Vec<u8>>, Errno> {
        let i = self.node(n)?;
        let mut names = Vec::new();
        let st = rd(&i);
        if let Some(m) = st.xattrs.as_ref() {
            if m.access.is_some() {
                names.push(AclType::Access.name().to_vec());
            }
            if m.default.is_some() {
                names.push(AclType::Default.name().to_vec());
            }
            names.extend(m.names.keys().map(|k| k.to_vec()));
        }
        Ok(names)
    }

    /// The inode's ACL of type `ty`; `EOPNOTSUPP` on a symlink (shmem's
    /// symlinks have no ACL operations).
    pub(super) fn acl_get(&self, n: Node<'_>, ty: AclType) -> Result<Option<Arc<PosixAcl>>, Errno> {
        let i = self.node(n)?;
        let st = rd(&i);
        if matches!(st.kind(), Kind::Symlink { .. }) {
            return Err(Errno::EOPNOTSUPP);
        }
        Ok(st.xattrs.as_ref().and_then(|a| match ty {
            AclType::Access => a.access.clone(),
            AclType::Default => a.default.clone(),
        }))
    }

    /// `simple_set_acl`: stores (or drops) the ACL and, for an access ACL,
    /// the mode the VFS computed; stamps ctime.
    pub(super) fn acl_set(
        &self,
        n: Node<'_>,
        ty: AclType,
        acl: Option<Arc<PosixAcl>>,
        mode: Option<u32>,
    ) -> Result<crate::fs::Attr, Errno> {
        let i = self.node(n)?;
        let mut st = wr(&i);
        if matches!(st.kind(), Kind::Symlink { .. }) {
            return Err(Errno::EOPNOTSUPP);
        }
        let set = st.xattrs.get_or_insert_with(Default::default);
        match ty {
            AclType::Access => set.access = acl,
            AclType::Default => set.default = acl,
        }
        let (flags, empty) = (set.acl_flags(), set.is_empty());
        st.set_acl(flags);
        if empty {
            st.xattrs = None;
        }
        if let Some(m) = mode {
            let mode = (st.mode() & crate::fs::S_IFMT) | (m & 0o7777);
            st.set_mode(mode);
        }
        st.set_ctime_current();
        Ok(self.attr(n.ino, &st))
    }
}
