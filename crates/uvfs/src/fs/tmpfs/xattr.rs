//! Extended attributes of tmpfs inodes: Linux's `simple_xattrs`
//! (`fs/xattr.c`) behind shmem's handlers (`mm/shmem.c`).
//!
//! - Namespaces: `security.`, `trusted.` and `user.` are stored as they
//!   come (the VFS has decided who may touch which); a bare prefix is
//!   `EINVAL`; any other name, `system.*` included (POSIX ACLs are not
//!   modelled), is `EOPNOTSUPP`.
//! - Set: `XATTR_CREATE` on an existing name is `EEXIST`, `XATTR_REPLACE`
//!   (and a removal) of a missing one `ENODATA`; a zero-length value is a
//!   value. A change stamps ctime.
//! - List: in name order. Linux 6.18 keeps the names in a hash table and
//!   lists them in its order, which depends on a per-table random seed:
//!   the order is not something a program can rely on, and uvfs does not
//!   reproduce it.
//! - Not modelled: Linux charges xattr space against `nr_inodes`
//!   (`free_ispace`, 1 KiB per inode); here xattrs are not counted.

use super::Tmpfs;
use super::inode::{rd, wr};
use crate::errno::Errno;
use crate::fs::Ino;
use crate::uapi::{XATTR_CREATE, XATTR_REPLACE};

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
    pub(super) fn xattr_get(&self, ino: Ino, name: &[u8]) -> Result<Vec<u8>, Errno> {
        resolve(name)?;
        let i = self.get(ino)?;
        let st = rd(&i);
        st.xattrs
            .as_ref()
            .and_then(|m| m.get(name))
            .map(|v| v.to_vec())
            .ok_or(Errno::ENODATA)
    }

    pub(super) fn xattr_set(
        &self,
        ino: Ino,
        name: &[u8],
        value: Option<&[u8]>,
        flags: i32,
    ) -> Result<(), Errno> {
        resolve(name)?;
        let i = self.get(ino)?;
        let mut st = wr(&i);
        let x = &mut st.xattrs;
        let exists = x.as_ref().is_some_and(|m| m.contains_key(name));
        if exists && flags & XATTR_CREATE != 0 {
            return Err(Errno::EEXIST);
        }
        if !exists && (flags & XATTR_REPLACE != 0 || value.is_none()) {
            return Err(Errno::ENODATA);
        }
        match value {
            Some(v) => {
                x.get_or_insert_with(Default::default)
                    .insert(name.into(), v.into());
            }
            None => {
                if let Some(m) = x.as_mut() {
                    m.remove(name);
                    if m.is_empty() {
                        *x = None;
                    }
                }
            }
        }
        st.set_ctime_current();
        Ok(())
    }

    pub(super) fn xattr_list(&self, ino: Ino) -> Result<Vec<Vec<u8>>, Errno> {
        let i = self.get(ino)?;
        let st = rd(&i);
        Ok(st
            .xattrs
            .as_ref()
            .map(|m| m.keys().map(|k| k.to_vec()).collect())
            .unwrap_or_default())
    }
}
