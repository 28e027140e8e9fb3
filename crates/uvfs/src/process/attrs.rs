//! Attributes: the stat family (stat, lstat, fstat, fstatat, statx),
//! truncate, chmod, chown, utimensat, access, umask. The VFS checks
//! permissions (with [`cred`](crate::cred)), the file system applies the
//! change and stamps ctime.

use super::{Process, Task};
use crate::cred::{self, MAY_EXEC, MAY_READ, MAY_WRITE};
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::fs::{S_IFDIR, S_IFLNK, S_IFMT, S_IFREG, SetAttr, SetTime, Timespec as FsTime};
use crate::namei::{EMPTY, FOLLOW};
use crate::stat::{Stat, Statx};
use crate::task_work;
use crate::uapi::*;
use crate::vfs_ops::inode::attr_of;
use crate::vfs_ops::inode::inode_permission;
use std::sync::atomic::Ordering;

/// Whether `times` is `[UTIME_OMIT, UTIME_OMIT]`: Linux's utimensat then
/// returns 0 before looking at the flags, the path or the fd (host: a
/// missing file is no error).
fn both_omit(times: Option<[Timespec; 2]>) -> bool {
    times.is_some_and(|t| t[0].tv_nsec == UTIME_OMIT && t[1].tv_nsec == UTIME_OMIT)
}

fn lookup_flags(flags: i32) -> u32 {
    let mut lf = 0;
    if flags & AT_SYMLINK_NOFOLLOW == 0 {
        lf |= FOLLOW;
    }
    if flags & AT_EMPTY_PATH != 0 {
        lf |= EMPTY;
    }
    lf
}

impl Process {
    /// The dentry of an fd: `EBADF` if not open, or if its file has a
    /// `mask` mode bit (`FMODE_PATH` for the calls that use `fdget`).
    pub(super) fn fd_dentry(&self, fd: i32, mask: u32) -> Result<DentryRef, Errno> {
        let file = self.files.get_mask(fd, mask).ok_or(Errno::EBADF)?;
        file.dentry().cloned().ok_or(Errno::EBADF)
    }

    /// `stat(path)`: the attributes of the file at `path`, following a
    /// symlink at the end. The same as [`fstatat`](Self::fstatat) with
    /// `AT_FDCWD` and no flags. No permission on the file itself is
    /// needed, only search permission on the way.
    ///
    /// # Errors
    ///
    /// The walk's [common errors](crate::process#errors-common-to-the-calls) only.
    ///
    /// Attributes (the `stat` family and `statx`, `chmod`, `chown`,
    /// `utimensat`, `access`, `umask`, `truncate`):
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// let fd = p.creat("/f", 0o4755)?;
    /// p.fchown(fd, 1000, 1000)?; // chown clears set-user-ID, as on Linux
    /// let st = p.stat("/f")?;
    /// assert_eq!((st.st_mode & 0o7777, st.st_uid), (0o755, 1000));
    /// p.chmod("/f", 0o600)?;
    /// p.set_cred(uvfs::cred::Cred::user(2000, 2000, vec![]));
    /// assert_eq!(p.access("/f", R_OK), Err(Errno::EACCES));
    /// # Ok(())
    /// # }
    /// ```
    pub fn stat<P: AsRef<[u8]>>(&mut self, path: P) -> Result<Stat, Errno> {
        self.fstatat(AT_FDCWD, path, 0)
    }

    /// `lstat(path)`: as [`stat`](Self::stat), but a symlink at the end
    /// is described itself (`S_IFLNK`, its target's length as size).
    ///
    /// # Errors
    ///
    /// The walk's [common errors](crate::process#errors-common-to-the-calls) only.
    pub fn lstat<P: AsRef<[u8]>>(&mut self, path: P) -> Result<Stat, Errno> {
        self.fstatat(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW)
    }

    /// `fstat(fd)`: the attributes of the file open at `fd`, an `O_PATH`
    /// fd included.
    ///
    /// # Errors
    ///
    /// `EBADF`: `fd` is not open, or its file has no dentry (one made by
    /// [`open_with`](Self::open_with)).
    pub fn fstat(&mut self, fd: i32) -> Result<Stat, Errno> {
        let _call = task_work::enter();
        let d = self.fd_dentry(fd, 0)?;
        stat_of(&d)
    }

    /// `fstatat(dirfd, path, flags)` (`newfstatat`): [`stat`](Self::stat)
    /// of `path` relative to the directory open at `dirfd` (`AT_FDCWD`:
    /// the current directory). `flags`: `AT_SYMLINK_NOFOLLOW` (as
    /// [`lstat`](Self::lstat)), `AT_EMPTY_PATH` (an empty `path` means the
    /// file `dirfd` itself refers to, which may be any file, `O_PATH`
    /// included: then it is [`fstat`](Self::fstat)), `AT_NO_AUTOMOUNT`
    /// (accepted; there are no automounts).
    ///
    /// ```
    /// use uvfs::fs::{S_IFDIR, S_IFMT};
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// p.mkdir("/d", 0o755)?;
    /// p.write_file("/d/f", b"12345")?;
    /// p.symlink("f", "/d/l")?;
    /// let d = p.open("/d", O_PATH | O_DIRECTORY, 0)?;
    /// assert_eq!(p.fstatat(d, "f", 0)?.st_size, 5);
    /// // The link itself: its size is its target's length.
    /// assert_eq!(p.fstatat(d, "l", AT_SYMLINK_NOFOLLOW)?.st_size, 1);
    /// // An empty path names the fd's own file, with AT_EMPTY_PATH only.
    /// assert_eq!(p.fstatat(d, "", AT_EMPTY_PATH)?.st_mode & S_IFMT, S_IFDIR);
    /// assert_eq!(p.fstatat(d, "", 0), Err(Errno::ENOENT));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// - `EINVAL`: another flag (before the path is looked at);
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    ///   `EBADF` for a `dirfd` that is not open, also with `AT_EMPTY_PATH`
    ///   and an empty path.
    pub fn fstatat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        flags: i32,
    ) -> Result<Stat, Errno> {
        let _call = task_work::enter();
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT) != 0 {
            return Err(Errno::EINVAL);
        }
        let lf = lookup_flags(flags);
        if self.vfs().fastpaths().stat_noref {
            // A path-cache hit: the attributes without a dentry reference.
            // An inode gone meanwhile (`ESTALE`) makes it a miss: the
            // lookup goes on and returns the dentry.
            // Two closures, not the function twice: each call site gets a
            // type of its own, which the compiler inlines (the function
            // item's `FnOnce` shim was left out of line, a call per stat).
            #[allow(clippy::redundant_closure)]
            let found = self.resolve_ino(
                dirfd,
                path.as_ref(),
                lf,
                |d, ino, p| stat_hit(d, ino, p),
                |d, ino| stat_pinned(d, ino),
            )?;
            return match found {
                crate::namei::Found::Attr(st) => Ok(st),
                crate::namei::Found::Dentry(d) => stat_of(&d),
            };
        }
        let d = self.resolve(dirfd, path.as_ref(), lf)?;
        stat_of(&d)
    }

    /// `statx(dirfd, path, flags, mask)`: the extended attributes of
    /// `path`, resolved as [`fstatat`](Self::fstatat) resolves it, with
    /// `AT_SYMLINK_NOFOLLOW`, `AT_EMPTY_PATH`, `AT_NO_AUTOMOUNT` and one of
    /// the `AT_STATX_*_SYNC` values (all alike: nothing is remote). As
    /// Linux 6.18 fills it for tmpfs: the basic fields and the mount id
    /// always; mtime and ctime only when `mask` asks for either; the birth
    /// time when asked; `STATX_MNT_ID_UNIQUE` gives the unique mount id in
    /// place of the reusable one. `stx_mask` says what was filled; fields
    /// left out are zero.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: an unknown flag, `AT_STATX_FORCE_SYNC` with
    ///   `AT_STATX_DONT_SYNC`, or `STATX_RESERVED` in `mask` (before the
    ///   path);
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls).
    pub fn statx<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        flags: i32,
        mask: u32,
    ) -> Result<Statx, Errno> {
        let _call = task_work::enter();
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE)
            != 0
            || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE
            || mask & STATX_RESERVED != 0
        {
            return Err(Errno::EINVAL);
        }
        let d = self.resolve(dirfd, path.as_ref(), lookup_flags(flags))?;
        let a = attr_of(&d)?;
        let mount_root = d.parent_ptr().is_null();
        let mut sx = Statx::from_attr(&a, d.sb().dev, d.sb().id + 1, mount_root);
        // What Linux 6.18 reports for tmpfs (host): the basic fields but
        // mtime/ctime, and the mount id, always; mtime and ctime only when
        // either is asked for (multigrain timestamps: `fill_mg_cmtime`);
        // btime only when asked for. A time left out of the result mask is
        // left zero, as Linux leaves it.
        sx.stx_mask = STATX_BASIC_STATS & !(STATX_MTIME | STATX_CTIME) | STATX_MNT_ID;
        if mask & (STATX_MTIME | STATX_CTIME) != 0 {
            sx.stx_mask |= STATX_MTIME | STATX_CTIME;
        } else {
            sx.stx_mtime = Default::default();
            sx.stx_ctime = Default::default();
        }
        if mask & STATX_BTIME != 0 {
            sx.stx_mask |= STATX_BTIME;
        } else {
            sx.stx_btime = Default::default();
        }
        // A caller asking for the unique mount id gets it (a 64-bit number
        // from 2^31 up, never reused) in place of the reusable one
        // (`vfs_statx_path`).
        if mask & STATX_MNT_ID_UNIQUE != 0 {
            sx.stx_mask = (sx.stx_mask & !STATX_MNT_ID) | STATX_MNT_ID_UNIQUE;
            sx.stx_mnt_id = (1 << 31) + d.sb().id + 1;
        }
        // The attributes Linux can report there: append, immutable and
        // nodump (shmem), automount and dax (generic), mount root.
        sx.stx_attributes_mask = d.sb().limits.statx_attributes_mask;
        Ok(sx)
    }

    /// `truncate(path, len)`: sets the size of the regular file at `path`
    /// (following symlinks) to `len`, cutting it or extending it with
    /// zeros. Unlike [`ftruncate`](Self::ftruncate), mtime and ctime are
    /// stamped only if the size changes, as on Linux's tmpfs. Drops set-ID
    /// bits as a write does.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: a negative `len` (before the path); a file that is
    ///   neither regular nor a directory;
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    /// - `EISDIR`: a directory;
    /// - `EACCES`: no write permission on the file;
    /// - `EFBIG`: `len` past the file system's largest file size;
    /// - `EINTR`: waiting for a lease's holder to give up its lease (a
    ///   truncate breaks leases as a write open does) was interrupted.
    pub fn truncate<P: AsRef<[u8]>>(&mut self, path: P, len: i64) -> Result<(), Errno> {
        self.truncateat(AT_FDCWD, path, len, 0)
    }

    /// truncate(2) of `path` relative to `dirfd`, with `AT_SYMLINK_NOFOLLOW`
    /// and `AT_EMPTY_PATH` as the `*at` calls take them. Linux has no such
    /// call; it is here for servers that hold a file by an `O_PATH` fd and
    /// must apply truncate(2)'s rules (permission checked on the file, no
    /// open needed, mtime and ctime stamped only if the size changes,
    /// unlike ftruncate): a FUSE setattr of the size without a handle.
    ///
    /// # Errors
    ///
    /// Those of [`truncate`](Self::truncate), and `EINVAL` for another
    /// flag.
    pub fn truncateat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        len: i64,
        flags: i32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let len = u64::try_from(len).map_err(|_| Errno::EINVAL)?;
        let d = self.resolve(dirfd, path.as_ref(), lookup_flags(flags))?;
        let a = attr_of(&d)?;
        match a.mode & S_IFMT {
            S_IFDIR => return Err(Errno::EISDIR),
            S_IFREG => {}
            _ => return Err(Errno::EINVAL),
        }
        inode_permission(&self.task.cred, &d, &a, MAY_WRITE)?;
        // `vfs_truncate`: counted as a writer while it works, it breaks
        // every lease as an open for writing would, waiting.
        let inode = d.inode().ok_or(Errno::ENOENT)?;
        inode.opens.get(true);
        let r = self
            .task
            .break_leases(inode, true, false)
            .and_then(|()| self.task.do_truncate(&d, len, false));
        inode.opens.put(true);
        r
    }
}

impl Task {
    /// Applies a permission-checked attribute change and refreshes the
    /// walk's copy of the permission bits.
    fn apply(&self, d: &DentryRef, set: &SetAttr) -> Result<(), Errno> {
        self.setattr(d, set).map(|_| ())
    }

    fn do_chmod(&self, d: &DentryRef, mode: u32) -> Result<(), Errno> {
        let _g = d.lock_inode();
        let a = attr_of(d)?;
        let m = cred::chmod_mode(&self.cred, &a, mode)?;
        self.apply(
            d,
            &SetAttr {
                mode: Some(m & 0o7777),
                ..SetAttr::default()
            },
        )
    }
}

impl Process {
    /// `chmod(path, mode)`: sets the permission bits of the file at
    /// `path` (following symlinks) to `mode & 0o7777`. `S_ISGID` is dropped
    /// when the caller is neither in the file's group nor has
    /// `CAP_FSETID`, as on Linux; a POSIX access ACL is rewritten to match.
    /// Stamps ctime.
    ///
    /// # Errors
    ///
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    /// - `EPERM`: the caller neither owns the file (by fsuid) nor has
    ///   `CAP_FOWNER` (never `EACCES`: only ownership matters).
    pub fn chmod<P: AsRef<[u8]>>(&mut self, path: P, mode: u32) -> Result<(), Errno> {
        self.fchmodat(AT_FDCWD, path, mode, 0)
    }

    /// `fchmod(fd, mode)`: [`chmod`](Self::chmod) of the file open at
    /// `fd`, whatever its access mode.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open, or is `O_PATH` (as on Linux; use
    ///   [`fchmodat`](Self::fchmodat) with `AT_EMPTY_PATH` for one);
    /// - `EPERM`: as for `chmod`.
    pub fn fchmod(&mut self, fd: i32, mode: u32) -> Result<(), Errno> {
        let _call = task_work::enter();
        let d = self.fd_dentry(fd, crate::file_table::FMODE_PATH)?;
        self.task.do_chmod(&d, mode)
    }

    /// `fchmodat(dirfd, path, mode, flags)` (Linux's `fchmodat2`; plain
    /// `fchmodat` is this with `flags` 0): [`chmod`](Self::chmod) of `path`
    /// relative to `dirfd`, with `AT_SYMLINK_NOFOLLOW` and
    /// `AT_EMPTY_PATH`.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: another flag (before the path);
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    /// - `EOPNOTSUPP`: the file is a symlink (reached with
    ///   `AT_SYMLINK_NOFOLLOW`, or an `O_PATH` fd of one with
    ///   `AT_EMPTY_PATH`): a symlink's mode cannot change, as on Linux;
    /// - `EPERM`: as for `chmod`.
    pub fn fchmodat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        mode: u32,
        flags: i32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let d = self.resolve(dirfd, path.as_ref(), lookup_flags(flags))?;
        if d.snap().is_some_and(|s| s.mode & S_IFMT == S_IFLNK) {
            return Err(Errno::EOPNOTSUPP);
        }
        self.task.do_chmod(&d, mode)
    }
}

impl Task {
    fn do_chown(&self, d: &DentryRef, uid: u32, gid: u32) -> Result<(), Errno> {
        let _g = d.lock_inode();
        let a = attr_of(d)?;
        let eff = cred::chown_check(&self.cred, &a, Some(uid), Some(gid))?;
        let mut set = SetAttr {
            uid: eff.uid,
            gid: eff.gid,
            mode: eff.new_mode(&a).map(|m| m & 0o7777),
            ..SetAttr::default()
        };
        if set == SetAttr::default() {
            // chown(-1, -1) still stamps ctime: Linux's chown_common always
            // passes ATTR_CTIME (host: "c" for chown -1 -1). The file system
            // stamps ctime for any change, so set the mode to itself (under
            // the inode lock, so no chmod slips in between).
            set.mode = Some(a.mode & 0o7777);
        }
        self.apply(d, &set)
    }
}

impl Process {
    /// `chown(path, uid, gid)`: changes the owner and group of the file
    /// at `path` (following symlinks); `u32::MAX` (the C call's -1) leaves
    /// an id unchanged. On anything but a directory it also clears
    /// `S_ISUID`, and `S_ISGID` when group execute is set (or the caller
    /// is neither in the group nor has `CAP_FSETID`), root's chown
    /// included, as on Linux. Stamps ctime even when nothing changes.
    ///
    /// # Errors
    ///
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    /// - `EPERM`: a new owner without `CAP_CHOWN` (giving a file to oneself
    ///   when one owns it is no change); a new group without `CAP_CHOWN`
    ///   unless the caller owns the file and the group is its current one
    ///   or one the caller is in; clearing
    ///   set-ID bits of a file the caller neither owns nor has
    ///   `CAP_FOWNER` for (so even `chown(path, -1, -1)` can fail).
    pub fn chown<P: AsRef<[u8]>>(&mut self, path: P, uid: u32, gid: u32) -> Result<(), Errno> {
        self.fchownat(AT_FDCWD, path, uid, gid, 0)
    }

    /// `lchown(path, uid, gid)`: [`chown`](Self::chown) of a symlink
    /// itself when `path` ends in one.
    ///
    /// # Errors
    ///
    /// Those of `chown`.
    pub fn lchown<P: AsRef<[u8]>>(&mut self, path: P, uid: u32, gid: u32) -> Result<(), Errno> {
        self.fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW)
    }

    /// `fchown(fd, uid, gid)`: [`chown`](Self::chown) of the file open
    /// at `fd`, whatever its access mode.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open, or is `O_PATH` (use
    ///   [`fchownat`](Self::fchownat) with `AT_EMPTY_PATH`);
    /// - `EPERM`: as for `chown`.
    pub fn fchown(&mut self, fd: i32, uid: u32, gid: u32) -> Result<(), Errno> {
        let _call = task_work::enter();
        let d = self.fd_dentry(fd, crate::file_table::FMODE_PATH)?;
        self.task.do_chown(&d, uid, gid)
    }

    /// `fchownat(dirfd, path, uid, gid, flags)`: [`chown`](Self::chown)
    /// of `path` relative to `dirfd`, with `AT_SYMLINK_NOFOLLOW` (as
    /// [`lchown`](Self::lchown)) and `AT_EMPTY_PATH` (the fd's own file,
    /// `O_PATH` included).
    ///
    /// # Errors
    ///
    /// - `EINVAL`: another flag (before the path);
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    /// - `EPERM`: as for `chown`.
    pub fn fchownat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        uid: u32,
        gid: u32,
        flags: i32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let d = self.resolve(dirfd, path.as_ref(), lookup_flags(flags))?;
        self.task.do_chown(&d, uid, gid)
    }

    /// `umask(mask)`: sets the file-creation mask to `mask & 0o777` and
    /// returns the old one. The mask is shared by the threads of a process
    /// (until [`unshare_fs`](Self::unshare_fs)) and copied by
    /// [`fork`](Self::fork). It does not apply in a directory with a
    /// default ACL. Cannot fail.
    pub fn umask(&mut self, mask: u32) -> u32 {
        self.task.fs.umask.swap(mask & 0o777, Ordering::Relaxed)
    }

    /// `access(path, mode)`: whether the caller's real (not effective)
    /// uid and gid may read (`R_OK`), write (`W_OK`) or execute/search
    /// (`X_OK`) the file at `path`, or, with `F_OK` (0), whether it exists.
    /// The same as [`faccessat`](Self::faccessat) with `AT_FDCWD` and no
    /// flags.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: a bit other than `R_OK | W_OK | X_OK` in `mode`;
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls) (with the real ids'
    ///   search permission);
    /// - `EACCES`: an access asked for is denied.
    pub fn access<P: AsRef<[u8]>>(&mut self, path: P, mode: i32) -> Result<(), Errno> {
        self.faccessat(AT_FDCWD, path, mode, 0)
    }

    /// `faccessat(dirfd, path, mode, flags)` (Linux's `faccessat2`):
    /// [`access`](Self::access) of `path` relative to `dirfd`; checks with
    /// the real ids unless `AT_EACCESS` (then the effective ones); with
    /// `AT_SYMLINK_NOFOLLOW` a symlink at the end is checked itself, with
    /// `AT_EMPTY_PATH` the fd's own file.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: a bad `mode` bit, then another flag (both before the
    ///   path);
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    /// - `EACCES`: an access asked for is denied.
    pub fn faccessat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        mode: i32,
        flags: i32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if mode & !(R_OK | W_OK | X_OK) != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let cred = self.task.cred.for_access(flags & AT_EACCESS != 0);
        let path = crate::namei::getname(path.as_ref())?;
        let lf = lookup_flags(flags);
        if path.is_empty() && lf & EMPTY == 0 {
            return Err(Errno::ENOENT);
        }
        let start = self.start(dirfd, path)?;
        let vfs = &self.task.vfs;
        let nd = crate::namei::Nd::with_root(vfs, &cred, self.task.root())
            .with_host(self.task.host_mount());
        let d = nd.lookup(&start, path, lf)?;
        if mode == 0 {
            return Ok(());
        }
        let mut mask = 0;
        if mode & R_OK != 0 {
            mask |= MAY_READ;
        }
        if mode & W_OK != 0 {
            mask |= MAY_WRITE;
        }
        if mode & X_OK != 0 {
            mask |= MAY_EXEC;
        }
        inode_permission(&cred, &d, &attr_of(&d)?, mask)
    }

    /// `utimensat(dirfd, path, times, flags)`: sets the access and
    /// modification times (`times[0]`, `times[1]`) of `path` relative to
    /// `dirfd`, with `AT_SYMLINK_NOFOLLOW` and `AT_EMPTY_PATH`. `None`, or
    /// `UTIME_NOW` in a `tv_nsec`, means now; `UTIME_OMIT` leaves that time
    /// alone. Both `UTIME_OMIT` returns 0 at once, without looking at the
    /// flags or the path, as Linux does. Stamps ctime.
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// p.write_file("/f", b"")?;
    /// let when = Timespec { tv_sec: 1_000_000_000, tv_nsec: 0 };
    /// let keep = Timespec { tv_sec: 0, tv_nsec: UTIME_OMIT };
    /// p.utimensat(AT_FDCWD, "/f", Some([keep, when]), 0)?; // mtime only
    /// assert_eq!(p.stat("/f")?.st_mtime, 1_000_000_000);
    /// let bad = Timespec { tv_sec: 0, tv_nsec: 1_000_000_000 };
    /// assert_eq!(p.utimensat(AT_FDCWD, "/f", Some([bad, bad]), 0), Err(Errno::EINVAL));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// - `EINVAL`: another flag (before the path); a `tv_nsec` outside
    ///   0..1e9 that is neither `UTIME_NOW` nor `UTIME_OMIT` (after the
    ///   path, as Linux checks);
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    /// - `EPERM`: setting a time other than now (or omitted) on a file the
    ///   caller neither owns nor has `CAP_FOWNER` for;
    /// - `EACCES`: setting both to now on such a file without write
    ///   permission on it.
    pub fn utimensat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        times: Option<[Timespec; 2]>,
        flags: i32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if both_omit(times) {
            return Ok(());
        }
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let d = self.resolve(dirfd, path.as_ref(), lookup_flags(flags))?;
        // Linux validates the times in `vfs_utimes`, after the lookup.
        check_times(times)?;
        self.task.do_utimes(&d, times)
    }

    /// `futimens(fd, times)`: [`utimensat`](Self::utimensat) of the file
    /// open at `fd`, whatever its access mode.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is negative (glibc's check, before `times`), not
    ///   open, or `O_PATH`;
    /// - `EINVAL`, `EPERM`, `EACCES`: as for `utimensat`.
    pub fn futimens(&mut self, fd: i32, times: Option<[Timespec; 2]>) -> Result<(), Errno> {
        let _call = task_work::enter();
        // glibc's futimens refuses a negative fd before any syscall.
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        if both_omit(times) {
            return Ok(());
        }
        // `do_utimes_fd` uses `fdget`: O_PATH files are EBADF.
        let d = self.fd_dentry(fd, crate::file_table::FMODE_PATH)?;
        check_times(times)?;
        self.task.do_utimes(&d, times)
    }
}

impl Task {
    fn do_utimes(&self, d: &DentryRef, times: Option<[Timespec; 2]>) -> Result<(), Errno> {
        let nsecs = times.map(|t| [t[0].tv_nsec, t[1].tv_nsec]);
        let Some(explicit) = cred::utimens_explicit(nsecs) else {
            return Ok(()); // both UTIME_OMIT
        };
        let _g = d.lock_inode();
        let a = attr_of(d)?;
        // `cred::utimes_check`, with the ACL in the write check.
        if !cred::inode_owner_or_capable(&self.cred, &a) {
            if explicit {
                return Err(Errno::EPERM);
            }
            inode_permission(&self.cred, d, &a, MAY_WRITE)?;
        }
        let conv = |t: Timespec| match t.tv_nsec {
            UTIME_OMIT => None,
            UTIME_NOW => Some(SetTime::Now),
            n => Some(SetTime::At(FsTime {
                sec: t.tv_sec,
                nsec: n as u32,
            })),
        };
        let set = match times {
            None => SetAttr {
                atime: Some(SetTime::Now),
                mtime: Some(SetTime::Now),
                ..SetAttr::default()
            },
            Some([at, mt]) => SetAttr {
                atime: conv(at),
                mtime: conv(mt),
                ..SetAttr::default()
            },
        };
        self.setattr(d, &set).map(|_| ())
    }
}

fn stat_of(d: &DentryRef) -> Result<Stat, Errno> {
    Ok(Stat::from_attr(&attr_of(d)?, d.sb().dev))
}

fn check_times(times: Option<[Timespec; 2]>) -> Result<(), Errno> {
    if let Some(t) = times {
        for x in t {
            if x.tv_nsec != UTIME_NOW
                && x.tv_nsec != UTIME_OMIT
                && !(0..1_000_000_000).contains(&x.tv_nsec)
            {
                return Err(Errno::EINVAL);
            }
        }
    }
    Ok(())
}

/// [`stat_pinned`] on a path-cache hit: when the entry recorded the way
/// to the inode's attributes (`FastPaths::path_cache_inode`), straight
/// from the inode's object by it, the dentry and its superblock unread;
/// else, or without a published snapshot, as `stat_pinned`.
#[inline(always)]
fn stat_hit(
    d: &crate::dcache::Dentry,
    ino: crate::fs::Ino,
    pinned: Option<crate::path_cache::Pinned>,
) -> Option<Stat> {
    if let Some(p) = pinned
        // SAFETY: `p` is what the path cache recorded for this entry, which
        // `find_ino` validated: tmpfs's object of a live inode with
        // `pinned_reads`, readable until this pinned call returns.
        && let Some(a) = unsafe { crate::fs::tmpfs::Tmpfs::getattr_recorded(p.data, p.ino) }
    {
        return Some(Stat::from_attr(&a, p.dev));
    }
    stat_pinned(d, ino)
}

/// The attributes of inode `ino`, which `d` (pinned, maybe without a
/// reference) named: from the inode's own object when the file system can
/// read it pinned (tmpfs with `lockless_attrs`), else by number. `None` if
/// the inode is gone (the caller then walks with references).
#[inline(always)]
fn stat_pinned(d: &crate::dcache::Dentry, ino: crate::fs::Ino) -> Option<Stat> {
    let sb = d.sb();
    let fs = &*sb.fs;
    // Tmpfs's answer is inlined here (a type check in place of the dynamic
    // call, and no closures, which the compiler left out of line): the
    // attributes then reach `Stat` in registers, where through a call they
    // came back in memory and their copy into `Stat` waited for the
    // callee's narrower stores (the store-forwarding stall that was a
    // fifth of `fstatat`'s own time). The same function either way. The
    // type check is the superblock's, made once (`SuperBlock::tmpfs`).
    let node = d.node_pinned().filter(|n| n.ino == ino);
    if let Some(n) = node
        && let Some(t) = sb.tmpfs()
    {
        if let Some(a) = t.getattr_pinned_inline(n) {
            return Some(Stat::from_attr(&a, sb.dev));
        }
    } else if let Some(a) = node.and_then(|n| fs.getattr_pinned(n)) {
        return Some(Stat::from_attr(&a, sb.dev));
    }
    let a = fs.getattr(ino).ok()?;
    Some(Stat::from_attr(&a, sb.dev))
}
