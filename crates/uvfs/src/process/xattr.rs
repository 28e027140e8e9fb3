//! Extended attributes (Linux's `fs/xattr.c`): getxattr, setxattr,
//! listxattr, removexattr and their `l` (no symlink following) and `f`
//! (open fd; `O_PATH` fds are `EBADF`) forms.
//!
//! # Linux's order of checks
//!
//! 1. The arguments, before the path is looked at: for setxattr, flags
//!    other than `XATTR_CREATE`/`XATTR_REPLACE` (`EINVAL`); for every call
//!    with a name, an empty name or one of 256 bytes or more (`ERANGE`);
//!    a value over 64 KiB (`E2BIG`).
//! 2. The path (or fd).
//! 3. `xattr_permission`: `security.*` and `system.*` are left to the
//!    file system and the security module; `trusted.*` needs
//!    `CAP_SYS_ADMIN` (`EPERM` to change, `ENODATA` to read, as if
//!    absent); `user.*` only exists on regular files and directories
//!    (`EPERM` to change, `ENODATA` to read elsewhere), and in a sticky
//!    directory only its owner (or `CAP_FOWNER`) may change them; then
//!    the inode's read or write permission (`EACCES`). With no security
//!    module beyond capabilities, changing or removing `security.*` needs
//!    `CAP_SYS_ADMIN` (`EPERM`).
//! 4. The file system: `EOPNOTSUPP` for a namespace it does not hold,
//!    `EINVAL` for a bare prefix, `ENODATA`, `EEXIST`.
//! 5. The caller's buffer: a size of 0 asks for the length; a buffer too
//!    small is `ERANGE` (for a list, `E2BIG` when the buffer was already
//!    the 64 KiB the kernel fills at most).
//!
//! listxattr checks no permission and leaves `trusted.*` names out for
//! callers without `CAP_SYS_ADMIN`.

use super::{Process, Task};
use crate::acl::{AclType, PosixAcl};
use crate::cred::{self, Cap, MAY_READ, MAY_WRITE};
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::file_table::FMODE_PATH;
use crate::fs::{S_IFDIR, S_IFMT, S_IFREG, S_ISGID, S_ISVTX};
use crate::namei::{EMPTY, FOLLOW};
use crate::task_work;
use crate::uapi::*;
use crate::vfs_ops::inode::{attr_of, cache_attr, inode_permission, mark_changed};
use std::sync::Arc;

/// The name as the kernel copies it: up to a NUL; `ERANGE` if empty or
/// longer than `XATTR_NAME_MAX`.
fn import_name(name: &[u8]) -> Result<&[u8], Errno> {
    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
    if name.is_empty() || name.len() > XATTR_NAME_MAX {
        return Err(Errno::ERANGE);
    }
    Ok(name)
}

/// Where an xattr call finds its inode.
#[derive(Clone, Copy)]
enum Target<'a> {
    /// A path from a directory fd, with lookup flags.
    Path(i32, &'a [u8], u32),
    Fd(i32),
}

/// The lookup flags of a path form: following a final symlink or not.
fn follow(yes: bool) -> u32 {
    if yes { FOLLOW } else { 0 }
}

/// The lookup flags of the `*xattrat` calls' `AT_*` flags (`EINVAL` for
/// others).
fn at_flags(flags: i32) -> Result<u32, Errno> {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let mut lf = follow(flags & AT_SYMLINK_NOFOLLOW == 0);
    if flags & AT_EMPTY_PATH != 0 {
        lf |= EMPTY;
    }
    Ok(lf)
}

impl Process {
    fn xattr_target(&self, t: Target<'_>) -> Result<DentryRef, Errno> {
        match t {
            Target::Path(dirfd, p, lf) => self.resolve(dirfd, p, lf),
            Target::Fd(fd) => self.fd_dentry(fd, FMODE_PATH),
        }
    }

    fn do_getxattr(&self, t: Target<'_>, name: &[u8], buf: &mut [u8]) -> Result<usize, Errno> {
        let _call = task_work::enter();
        let name = import_name(name)?;
        let d = self.xattr_target(t)?;
        let v = if let Some(ty) = AclType::from_name(name) {
            // `do_get_acl`: no permission check; `ENODATA` without one.
            let acl = d.sb().fs.get_acl_node(d.node(), ty)?;
            acl.ok_or(Errno::ENODATA)?.to_xattr()
        } else {
            self.task.xattr_permission(&d, name, MAY_READ)?;
            d.sb().fs.getxattr_node(d.node(), name)?
        };
        if buf.is_empty() {
            return Ok(v.len());
        }
        let dst = buf.get_mut(..v.len()).ok_or(Errno::ERANGE)?;
        dst.copy_from_slice(&v);
        Ok(v.len())
    }

    fn do_setxattr(
        &self,
        t: Target<'_>,
        name: &[u8],
        value: Option<&[u8]>,
        flags: i32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !(XATTR_CREATE | XATTR_REPLACE) != 0 {
            return Err(Errno::EINVAL);
        }
        let name = import_name(name)?;
        if value.is_some_and(|v| v.len() > XATTR_SIZE_MAX) {
            return Err(Errno::E2BIG);
        }
        let d = self.xattr_target(t)?;
        if let Some(ty) = AclType::from_name(name) {
            // `do_set_acl`/`vfs_remove_acl`: the value is parsed first;
            // an empty one removes; the flags are not looked at.
            let acl = match value {
                Some(v) if !v.is_empty() => PosixAcl::from_xattr(v)?,
                _ => None,
            };
            let _g = d.lock_inode();
            self.task.set_posix_acl(self.vfs(), &d, ty, acl)?;
            mark_changed(&d);
            return Ok(());
        }
        let _g = d.lock_inode();
        self.task.xattr_permission(&d, name, MAY_WRITE)?;
        if name.starts_with(b"security.") && !self.task.cred.capable(Cap::SysAdmin) {
            return Err(Errno::EPERM);
        }
        let flags = if value.is_none() {
            XATTR_REPLACE
        } else {
            flags
        };
        d.sb().fs.setxattr_node(d.node(), name, value, flags)?;
        mark_changed(&d);
        Ok(())
    }

    fn do_listxattr(&self, t: Target<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
        let _call = task_work::enter();
        let d = self.xattr_target(t)?;
        let trusted = self.task.cred.capable(Cap::SysAdmin);
        let names = d.sb().fs.listxattr_node(d.node())?;
        let mut out = Vec::new();
        for n in names {
            if !trusted && n.starts_with(b"trusted.") {
                continue;
            }
            out.extend_from_slice(&n);
            out.push(0);
        }
        if buf.is_empty() {
            return Ok(out.len());
        }
        let size = buf.len().min(XATTR_LIST_MAX);
        if out.len() > size {
            return Err(if size == XATTR_LIST_MAX {
                Errno::E2BIG
            } else {
                Errno::ERANGE
            });
        }
        buf[..out.len()].copy_from_slice(&out);
        Ok(out.len())
    }

    /// `getxattr(path, name, buf)`: copies the value of the extended
    /// attribute `name` of the file at `path` (following symlinks) into
    /// `buf` and returns its length; with an empty `buf`, only the length.
    /// `system.posix_acl_access`/`_default` read the POSIX ACLs in the
    /// kernel's format. No permission is checked for ACLs
    /// (`docs/semantics.md`, "Extended attributes", "POSIX ACLs").
    ///
    /// # Errors
    ///
    /// In this order:
    ///
    /// - `ERANGE`: `name` is empty or longer than 255 bytes (it ends at a
    ///   NUL byte, as the kernel copies it), before the path;
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls); `EBADF` for the `f`
    ///   form's fd not open or
    ///   `O_PATH`;
    /// - `ENODATA`: no such attribute; also `trusted.*` without
    ///   `CAP_SYS_ADMIN` and `user.*` on a file that is neither regular nor
    ///   a directory (as if absent);
    /// - `EACCES`: no read permission on the file (`user.*`, `trusted.*`);
    /// - `EOPNOTSUPP`: a namespace the file system does not hold (tmpfs
    ///   holds `user.`, `trusted.`, `security.` and the POSIX ACLs);
    ///   `system.posix_acl_*` on a symlink;
    /// - `EINVAL`: a bare namespace prefix as the name;
    /// - `ERANGE`: `buf` is not empty but too small for the value.
    pub fn getxattr<P: AsRef<[u8]>>(
        &mut self,
        path: P,
        name: &[u8],
        buf: &mut [u8],
    ) -> Result<usize, Errno> {
        self.do_getxattr(Target::Path(AT_FDCWD, path.as_ref(), FOLLOW), name, buf)
    }

    /// `lgetxattr(path, name, buf)`: as [`getxattr`](Self::getxattr), on
    /// a symlink itself when `path` ends in one.
    ///
    /// # Errors
    ///
    /// Those of `getxattr`.
    pub fn lgetxattr<P: AsRef<[u8]>>(
        &mut self,
        path: P,
        name: &[u8],
        buf: &mut [u8],
    ) -> Result<usize, Errno> {
        self.do_getxattr(Target::Path(AT_FDCWD, path.as_ref(), 0), name, buf)
    }

    /// `fgetxattr(fd, name, buf)`: [`getxattr`](Self::getxattr) of the
    /// file open at `fd` (any access mode, not `O_PATH`).
    ///
    /// # Errors
    ///
    /// Those of `getxattr`, with `EBADF` for the fd in place of the walk's.
    pub fn fgetxattr(&mut self, fd: i32, name: &[u8], buf: &mut [u8]) -> Result<usize, Errno> {
        self.do_getxattr(Target::Fd(fd), name, buf)
    }

    /// `setxattr(path, name, value, flags)`: sets the extended attribute
    /// `name` of the file at `path` (following symlinks) to `value`;
    /// `flags` 0 creates or replaces, `XATTR_CREATE` only creates,
    /// `XATTR_REPLACE` only replaces. Stamps ctime. Setting
    /// `system.posix_acl_*` sets an ACL (and may change the mode); an
    /// empty value removes it.
    ///
    /// Extended attributes (`setxattr`, `getxattr`, `listxattr`,
    /// `removexattr`, their `l`, `f` and `*at` forms):
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// p.creat("/f", 0o644)?;
    /// p.setxattr("/f", b"user.origin", b"lab", XATTR_CREATE)?;
    /// let mut v = [0u8; 16];
    /// let n = p.getxattr("/f", b"user.origin", &mut v)?;
    /// assert_eq!(&v[..n], b"lab");
    /// assert_eq!(
    ///     p.setxattr("/f", b"user.origin", b"x", XATTR_CREATE),
    ///     Err(Errno::EEXIST)
    /// );
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// In this order:
    ///
    /// - `EINVAL`: `flags` other than `XATTR_CREATE`/`XATTR_REPLACE`;
    /// - `ERANGE`: `name` empty or longer than 255 bytes;
    /// - `E2BIG`: `value` longer than 64 KiB;
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls); `EBADF` for the `f`
    ///   form's fd not open or
    ///   `O_PATH`;
    /// - `EPERM`: `trusted.*` or `security.*` without `CAP_SYS_ADMIN`;
    ///   `user.*` on a file neither regular nor a directory, or in a
    ///   sticky directory the caller neither owns nor has `CAP_FOWNER`
    ///   for; a POSIX ACL on a file the caller does not own;
    /// - `EACCES`: no write permission on the file; a default ACL on a
    ///   non-directory;
    /// - `EOPNOTSUPP`: a namespace the file system does not hold; an ACL
    ///   on a symlink or of another version than 2;
    /// - `EINVAL`: a bare namespace prefix; an ACL value that is not valid;
    /// - `EEXIST`: `XATTR_CREATE` and the attribute exists;
    /// - `ENODATA`: `XATTR_REPLACE` (or a removal) and it does not.
    pub fn setxattr<P: AsRef<[u8]>>(
        &mut self,
        path: P,
        name: &[u8],
        value: &[u8],
        flags: i32,
    ) -> Result<(), Errno> {
        self.do_setxattr(
            Target::Path(AT_FDCWD, path.as_ref(), FOLLOW),
            name,
            Some(value),
            flags,
        )
    }

    /// `lsetxattr(path, name, value, flags)`: as
    /// [`setxattr`](Self::setxattr), on a symlink itself when `path` ends
    /// in one (where `user.*` is `EPERM`).
    ///
    /// # Errors
    ///
    /// Those of `setxattr`.
    pub fn lsetxattr<P: AsRef<[u8]>>(
        &mut self,
        path: P,
        name: &[u8],
        value: &[u8],
        flags: i32,
    ) -> Result<(), Errno> {
        self.do_setxattr(
            Target::Path(AT_FDCWD, path.as_ref(), 0),
            name,
            Some(value),
            flags,
        )
    }

    /// `fsetxattr(fd, name, value, flags)`: [`setxattr`](Self::setxattr)
    /// of the file open at `fd` (any access mode, not `O_PATH`).
    ///
    /// # Errors
    ///
    /// Those of `setxattr`, with `EBADF` for the fd in place of the walk's.
    pub fn fsetxattr(
        &mut self,
        fd: i32,
        name: &[u8],
        value: &[u8],
        flags: i32,
    ) -> Result<(), Errno> {
        self.do_setxattr(Target::Fd(fd), name, Some(value), flags)
    }

    /// `listxattr(path, buf)`: the names of the file's extended
    /// attributes, each followed by a NUL, ACLs first; with an empty `buf`,
    /// only the length. No permission is checked; `trusted.*` names are
    /// left out for callers without `CAP_SYS_ADMIN`. Difference from
    /// Linux: the names come in name order, where Linux's tmpfs gives a
    /// hash order (`docs/semantics.md`, "Known differences kept").
    ///
    /// # Errors
    ///
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls); `EBADF` for the `f`
    ///   form's fd not open or
    ///   `O_PATH`;
    /// - `ERANGE`: `buf` is not empty but too small for the list;
    /// - `E2BIG`: the list does not fit even in 64 KiB, the most the
    ///   kernel returns.
    pub fn listxattr<P: AsRef<[u8]>>(&mut self, path: P, buf: &mut [u8]) -> Result<usize, Errno> {
        self.do_listxattr(Target::Path(AT_FDCWD, path.as_ref(), FOLLOW), buf)
    }

    /// `llistxattr(path, buf)`: as [`listxattr`](Self::listxattr), on a
    /// symlink itself when `path` ends in one.
    ///
    /// # Errors
    ///
    /// Those of `listxattr`.
    pub fn llistxattr<P: AsRef<[u8]>>(&mut self, path: P, buf: &mut [u8]) -> Result<usize, Errno> {
        self.do_listxattr(Target::Path(AT_FDCWD, path.as_ref(), 0), buf)
    }

    /// `flistxattr(fd, buf)`: [`listxattr`](Self::listxattr) of the file
    /// open at `fd` (not `O_PATH`).
    ///
    /// # Errors
    ///
    /// Those of `listxattr`, with `EBADF` for the fd in place of the walk's.
    pub fn flistxattr(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
        self.do_listxattr(Target::Fd(fd), buf)
    }

    /// `removexattr(path, name)`: removes the extended attribute `name`
    /// (an ACL included; removing an absent ACL succeeds). Stamps ctime.
    ///
    /// # Errors
    ///
    /// Those of [`setxattr`](Self::setxattr) but `E2BIG` and the flags';
    /// `ENODATA` when there is no such attribute.
    pub fn removexattr<P: AsRef<[u8]>>(&mut self, path: P, name: &[u8]) -> Result<(), Errno> {
        self.do_setxattr(Target::Path(AT_FDCWD, path.as_ref(), FOLLOW), name, None, 0)
    }

    /// `lremovexattr(path, name)`: as [`removexattr`](Self::removexattr),
    /// on a symlink itself when `path` ends in one.
    ///
    /// # Errors
    ///
    /// Those of `removexattr`.
    pub fn lremovexattr<P: AsRef<[u8]>>(&mut self, path: P, name: &[u8]) -> Result<(), Errno> {
        self.do_setxattr(Target::Path(AT_FDCWD, path.as_ref(), 0), name, None, 0)
    }

    /// `fremovexattr(fd, name)`: [`removexattr`](Self::removexattr) of
    /// the file open at `fd` (not `O_PATH`).
    ///
    /// # Errors
    ///
    /// Those of `removexattr`, with `EBADF` for the fd in place of the
    /// walk's.
    pub fn fremovexattr(&mut self, fd: i32, name: &[u8]) -> Result<(), Errno> {
        self.do_setxattr(Target::Fd(fd), name, None, 0)
    }
}

/// The `*xattrat` calls (Linux 6.13): a path from `dirfd`, with
/// `AT_SYMLINK_NOFOLLOW` and `AT_EMPTY_PATH` (`EINVAL` for other flags,
/// checked first). The shim routes every xattr path call through these.
impl Process {
    /// `getxattrat(dirfd, path, flags, name, buf)` (Linux 6.13): [`getxattr`](Self::getxattr) of
    /// `path`
    /// relative to `dirfd`, with `AT_SYMLINK_NOFOLLOW` and `AT_EMPTY_PATH`.
    /// Linux passes the value and its flags in a `struct xattr_args`; here
    /// they are plain arguments.
    ///
    /// # Errors
    ///
    /// `EINVAL` for another `AT_*` flag (checked first), then those of
    /// `getxattr`.
    pub fn getxattrat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        flags: i32,
        name: &[u8],
        buf: &mut [u8],
    ) -> Result<usize, Errno> {
        let lf = at_flags(flags)?;
        self.do_getxattr(Target::Path(dirfd, path.as_ref(), lf), name, buf)
    }

    /// `setxattrat(dirfd, path, flags, name, value, xattr_flags)` (Linux 6.13):
    /// [`setxattr`](Self::setxattr) of `path`
    /// relative to `dirfd`, with `AT_SYMLINK_NOFOLLOW` and `AT_EMPTY_PATH`.
    /// Linux passes the value and its flags in a `struct xattr_args`; here
    /// they are plain arguments.
    ///
    /// # Errors
    ///
    /// `EINVAL` for another `AT_*` flag (checked first), then those of
    /// `setxattr`.
    pub fn setxattrat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        flags: i32,
        name: &[u8],
        value: &[u8],
        xattr_flags: i32,
    ) -> Result<(), Errno> {
        let lf = at_flags(flags)?;
        self.do_setxattr(
            Target::Path(dirfd, path.as_ref(), lf),
            name,
            Some(value),
            xattr_flags,
        )
    }

    /// `listxattrat(dirfd, path, flags, buf)` (Linux 6.13): [`listxattr`](Self::listxattr) of
    /// `path`
    /// relative to `dirfd`, with `AT_SYMLINK_NOFOLLOW` and `AT_EMPTY_PATH`.
    /// Linux passes the value and its flags in a `struct xattr_args`; here
    /// they are plain arguments.
    ///
    /// # Errors
    ///
    /// `EINVAL` for another `AT_*` flag (checked first), then those of
    /// `listxattr`.
    pub fn listxattrat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        flags: i32,
        buf: &mut [u8],
    ) -> Result<usize, Errno> {
        let lf = at_flags(flags)?;
        self.do_listxattr(Target::Path(dirfd, path.as_ref(), lf), buf)
    }

    /// `removexattrat(dirfd, path, flags, name)` (Linux 6.13): [`removexattr`](Self::removexattr)
    /// of `path`
    /// relative to `dirfd`, with `AT_SYMLINK_NOFOLLOW` and `AT_EMPTY_PATH`.
    /// Linux passes the value and its flags in a `struct xattr_args`; here
    /// they are plain arguments.
    ///
    /// # Errors
    ///
    /// `EINVAL` for another `AT_*` flag (checked first), then those of
    /// `removexattr`.
    pub fn removexattrat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        flags: i32,
        name: &[u8],
    ) -> Result<(), Errno> {
        let lf = at_flags(flags)?;
        self.do_setxattr(Target::Path(dirfd, path.as_ref(), lf), name, None, 0)
    }
}

impl Task {
    /// `set_posix_acl` and tmpfs's `simple_set_acl`: `EOPNOTSUPP` where
    /// the inode holds no ACLs (a symlink); a default ACL only on a
    /// directory (`EACCES` to set one elsewhere; removing one there
    /// succeeds and does nothing); only the owner or `CAP_FOWNER` (`EPERM`);
    /// then validity (`EINVAL`). An access ACL that the mode can express
    /// is not stored: only the mode changes (`posix_acl_update_mode`), and
    /// any access-ACL change drops `S_ISGID` when the caller is neither in
    /// the inode's group nor has `CAP_FSETID`. Removing an absent ACL
    /// succeeds.
    fn set_posix_acl(
        &self,
        vfs: &crate::vfs::Vfs,
        d: &DentryRef,
        ty: AclType,
        acl: Option<PosixAcl>,
    ) -> Result<(), Errno> {
        let fs = &d.sb().fs;
        fs.get_acl_node(d.node(), ty)?;
        let a = attr_of(d)?;
        if ty == AclType::Default && !a.is_dir() {
            return if acl.is_some() {
                Err(Errno::EACCES)
            } else {
                Ok(())
            };
        }
        if !cred::inode_owner_or_capable(&self.cred, &a) {
            return Err(Errno::EPERM);
        }
        if let Some(acl) = &acl {
            acl.valid()?;
        }
        let (acl, mode) = match ty {
            AclType::Default => (acl, None),
            AclType::Access => {
                let mut mode = a.mode;
                let acl = acl.filter(|acl| acl.equiv_mode(&mut mode));
                if !cred::in_group_or_capable(&self.cred, a.gid) {
                    mode &= !S_ISGID;
                }
                (acl, Some(mode))
            }
        };
        let new = fs.set_acl_node(d.node(), ty, acl.map(Arc::new), mode)?;
        cache_attr(vfs, d, new);
        Ok(())
    }

    /// Linux's `xattr_permission` (see the module docs).
    fn xattr_permission(&self, d: &DentryRef, name: &[u8], mask: u32) -> Result<(), Errno> {
        if name.starts_with(b"security.") || name.starts_with(b"system.") {
            return Ok(());
        }
        let write = mask & MAY_WRITE != 0;
        let hidden = if write { Errno::EPERM } else { Errno::ENODATA };
        if name.starts_with(b"trusted.") {
            return if self.cred.capable(Cap::SysAdmin) {
                Ok(())
            } else {
                Err(hidden)
            };
        }
        let a = attr_of(d)?;
        if name.starts_with(b"user.") {
            let ty = a.mode & S_IFMT;
            if ty != S_IFREG && ty != S_IFDIR {
                return Err(hidden);
            }
            if ty == S_IFDIR
                && a.mode & S_ISVTX != 0
                && write
                && !cred::inode_owner_or_capable(&self.cred, &a)
            {
                return Err(Errno::EPERM);
            }
        }
        inode_permission(&self.cred, d, &a, mask)
    }
}
