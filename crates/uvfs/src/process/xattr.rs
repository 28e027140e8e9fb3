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
            let acl = d.sb().fs.get_acl(d.ino(), ty)?;
            acl.ok_or(Errno::ENODATA)?.to_xattr()
        } else {
            self.task.xattr_permission(&d, name, MAY_READ)?;
            d.sb().fs.getxattr(d.ino(), name)?
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
        d.sb().fs.setxattr(d.ino(), name, value, flags)?;
        mark_changed(&d);
        Ok(())
    }

    fn do_listxattr(&self, t: Target<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
        let _call = task_work::enter();
        let d = self.xattr_target(t)?;
        let trusted = self.task.cred.capable(Cap::SysAdmin);
        let names = d.sb().fs.listxattr(d.ino())?;
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

    /// `getxattr(path, name, buf)`: the value's length; with an empty
    /// `buf`, only the length.
    pub fn getxattr<P: AsRef<[u8]>>(
        &mut self,
        path: P,
        name: &[u8],
        buf: &mut [u8],
    ) -> Result<usize, Errno> {
        self.do_getxattr(Target::Path(AT_FDCWD, path.as_ref(), FOLLOW), name, buf)
    }

    /// `lgetxattr`: as [`getxattr`](Self::getxattr) on a symlink itself.
    pub fn lgetxattr<P: AsRef<[u8]>>(
        &mut self,
        path: P,
        name: &[u8],
        buf: &mut [u8],
    ) -> Result<usize, Errno> {
        self.do_getxattr(Target::Path(AT_FDCWD, path.as_ref(), 0), name, buf)
    }

    /// `fgetxattr(fd, name, buf)`.
    pub fn fgetxattr(&mut self, fd: i32, name: &[u8], buf: &mut [u8]) -> Result<usize, Errno> {
        self.do_getxattr(Target::Fd(fd), name, buf)
    }

    /// `setxattr(path, name, value, flags)` with `XATTR_CREATE`,
    /// `XATTR_REPLACE`.
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

    /// `lsetxattr`.
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

    /// `fsetxattr(fd, name, value, flags)`.
    pub fn fsetxattr(
        &mut self,
        fd: i32,
        name: &[u8],
        value: &[u8],
        flags: i32,
    ) -> Result<(), Errno> {
        self.do_setxattr(Target::Fd(fd), name, Some(value), flags)
    }

    /// `listxattr(path, buf)`: the names, each NUL-terminated; with an
    /// empty `buf`, only the length.
    pub fn listxattr<P: AsRef<[u8]>>(&mut self, path: P, buf: &mut [u8]) -> Result<usize, Errno> {
        self.do_listxattr(Target::Path(AT_FDCWD, path.as_ref(), FOLLOW), buf)
    }

    /// `llistxattr`.
    pub fn llistxattr<P: AsRef<[u8]>>(&mut self, path: P, buf: &mut [u8]) -> Result<usize, Errno> {
        self.do_listxattr(Target::Path(AT_FDCWD, path.as_ref(), 0), buf)
    }

    /// `flistxattr(fd, buf)`.
    pub fn flistxattr(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
        self.do_listxattr(Target::Fd(fd), buf)
    }

    /// `removexattr(path, name)`.
    pub fn removexattr<P: AsRef<[u8]>>(&mut self, path: P, name: &[u8]) -> Result<(), Errno> {
        self.do_setxattr(Target::Path(AT_FDCWD, path.as_ref(), FOLLOW), name, None, 0)
    }

    /// `lremovexattr`.
    pub fn lremovexattr<P: AsRef<[u8]>>(&mut self, path: P, name: &[u8]) -> Result<(), Errno> {
        self.do_setxattr(Target::Path(AT_FDCWD, path.as_ref(), 0), name, None, 0)
    }

    /// `fremovexattr(fd, name)`.
    pub fn fremovexattr(&mut self, fd: i32, name: &[u8]) -> Result<(), Errno> {
        self.do_setxattr(Target::Fd(fd), name, None, 0)
    }
}

/// The `*xattrat` calls (Linux 6.13): a path from `dirfd`, with
/// `AT_SYMLINK_NOFOLLOW` and `AT_EMPTY_PATH` (`EINVAL` for other flags,
/// checked first). The shim routes every xattr path call through these.
impl Process {
    /// `getxattrat(dirfd, path, flags, name, buf)`.
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

    /// `setxattrat(dirfd, path, flags, name, value, xattr_flags)`.
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

    /// `listxattrat(dirfd, path, flags, buf)`.
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

    /// `removexattrat(dirfd, path, flags, name)`.
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
        fs.get_acl(d.ino(), ty)?;
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
        let new = fs.set_acl(d.ino(), ty, acl.map(Arc::new), mode)?;
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
        inode_permission(&self.cred, d.sb(), &a, mask)
    }
}
