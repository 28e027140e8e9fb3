//! The namespace calls: mkdir, rmdir, unlink, rename, link, symlink,
//! readlink, chdir, fchdir, getcwd. Each checks its arguments, resolves the
//! parent directories, takes their locks (the `i_rwsem` analogue; a
//! cross-directory rename first takes the superblock's rename lock), looks
//! the last component up under them, and hands the rest to the VFS
//! operation ([`vfs_ops`](crate::vfs_ops)): permission checks, the file
//! system call and the cache updates.

use super::{Process, Task};
use crate::cred::{self, MAY_EXEC, MAY_READ, MAY_WRITE};
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::fs::{
    RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_WHITEOUT, S_IFLNK, S_IFMT, S_IFREG, S_ISGID, S_ISUID,
};
use crate::namei::{self, DIRECTORY, EMPTY, FOLLOW, LastType, Parent};
use crate::primitive::sync::{lock, lock_unmodelled};
use crate::task_work;
use crate::uapi::*;
use crate::vfs_ops::inode::inode_permission;
use crate::vfs_ops::inode::{attr_of, mode_is_dir, perm_of};
use crate::vfs_ops::rename::RenameSide;

impl Process {
    /// Resolves the parent of `path` relative to `dirfd`.
    fn parent_of(&self, dirfd: i32, path: &[u8]) -> Result<Parent, Errno> {
        let path = namei::getname(path)?;
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        let start = self.start(dirfd, path)?;
        self.task.nd().lookup_parent(start.into_owned(), path)
    }

    /// `filename_create`: resolves the parent of a name to be created,
    /// locks it, and checks the name is a plain one (`EEXIST` for `.`,
    /// `..`, `/`), not taken (`EEXIST`) and, unless a directory is being
    /// made, has no trailing slash (`ENOENT`); then runs `f` with the
    /// directory, the name and its negative dentry, under the lock.
    fn with_new_name<R>(
        &self,
        dirfd: i32,
        path: &[u8],
        is_dir: bool,
        f: impl FnOnce(&DentryRef, &[u8], &DentryRef) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        let p = self.parent_of(dirfd, path)?;
        if p.kind != LastType::Norm {
            return Err(Errno::EEXIST);
        }
        let dir = &p.dir;
        let _g = lock(&dir.dir_lock);
        let d = self.task.nd().lookup_locked_dir(dir, &p.last)?;
        if !d.is_negative() {
            return Err(Errno::EEXIST);
        }
        if p.trailing && !is_dir {
            return Err(Errno::ENOENT);
        }
        f(dir, &p.last, &d)
    }

    /// `mkdir(path, mode)`: makes a directory at `path` (relative to the
    /// current directory); the same as [`mkdirat`](Self::mkdirat) with
    /// `AT_FDCWD`.
    ///
    /// # Errors
    ///
    /// Those of `mkdirat`.
    pub fn mkdir<P: AsRef<[u8]>>(&mut self, path: P, mode: u32) -> Result<(), Errno> {
        self.mkdirat(AT_FDCWD, path, mode)
    }

    /// `mkdirat(dirfd, path, mode)`: makes an empty directory at `path`,
    /// relative to the directory open at `dirfd`, with the permission bits
    /// and sticky bit of `mode` less the umask (or masked by the parent's
    /// default ACL, which it inherits). It belongs to the caller's fsuid
    /// and fsgid, or to the parent's group when the parent is set-group-ID
    /// (then it is set-group-ID too). A trailing slash is allowed.
    ///
    /// # Errors
    ///
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls) for the parent
    ///   directory;
    /// - `EEXIST`: the name exists (a dangling symlink included), or is
    ///   `.`, `..` or `/`;
    /// - `EACCES`: no write or search permission on the parent directory;
    /// - `ENOENT`: the parent directory was removed;
    /// - `ENOSPC`: the file system is out of inodes;
    /// - `EMLINK`: the parent has the most links a directory can have.
    pub fn mkdirat<P: AsRef<[u8]>>(&mut self, dirfd: i32, path: P, mode: u32) -> Result<(), Errno> {
        let _call = task_work::enter();
        self.with_new_name(dirfd, path.as_ref(), true, |dir, name, d| {
            self.task.ops().mkdir(dir, d, name, mode)
        })
    }

    /// `mknod(path, mode, dev)`: [`mknodat`](Self::mknodat) with
    /// `AT_FDCWD`.
    ///
    /// # Errors
    ///
    /// Those of `mknodat`.
    pub fn mknod<P: AsRef<[u8]>>(&mut self, path: P, mode: u32, dev: u64) -> Result<(), Errno> {
        self.mknodat(AT_FDCWD, path, mode, dev)
    }

    /// `mknodat(dirfd, path, mode, dev)`: makes a regular file (type 0 or
    /// `S_IFREG`), a FIFO, a socket, or a character or block device node
    /// for `dev` (a `dev_t` as [`makedev`](crate::stat::makedev) builds
    /// it), with the permission bits of `mode` less the umask. In Linux's
    /// order: `EINVAL` for a `dev` that does not fit the kernel's 32-bit
    /// encoding (glibc's check); the type (`EPERM` for a directory,
    /// `EINVAL` for an unknown one); then the path (`EEXIST` even for a
    /// dangling symlink, `ENOENT` for a trailing slash); the directory's
    /// permission; then `CAP_MKNOD` for a device (`EPERM`), except a
    /// character device 0/0 (a whiteout), which anyone may make.
    ///
    /// Device and socket nodes can be made and listed but open to `ENXIO`
    /// (`docs/semantics.md`, "Special files").
    ///
    /// # Errors
    ///
    /// - `EINVAL`: `dev` past 32 bits; an unknown file type;
    /// - `EPERM`: `S_IFDIR` (use [`mkdir`](Self::mkdir)); a device other
    ///   than 0/0 without `CAP_MKNOD`;
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls) for the parent
    ///   directory;
    /// - `EEXIST`: the name exists (a dangling symlink included), or is
    ///   `.`, `..` or `/`;
    /// - `EACCES`: no write or search permission on the parent directory;
    /// - `ENOENT`: the parent directory was removed;
    /// - `ENOENT` also: `path` ends in a slash;
    /// - `ENOSPC`: the file system is out of inodes.
    pub fn mknodat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        mode: u32,
        dev: u64,
    ) -> Result<(), Errno> {
        use crate::fs::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFMT, S_IFREG, S_IFSOCK};
        let _call = task_work::enter();
        if dev > u64::from(u32::MAX) {
            return Err(Errno::EINVAL);
        }
        // `may_mknod`.
        let ftype = mode & S_IFMT;
        match ftype {
            0 | S_IFREG | S_IFCHR | S_IFBLK | S_IFIFO | S_IFSOCK => {}
            S_IFDIR => return Err(Errno::EPERM),
            _ => return Err(Errno::EINVAL),
        }
        self.with_new_name(dirfd, path.as_ref(), false, |dir, name, d| {
            let ops = self.task.ops();
            match ftype {
                0 | S_IFREG => ops.create(dir, d, name, mode & 0o7777),
                S_IFCHR | S_IFBLK => ops.mknod(dir, d, name, mode, dev),
                _ => ops.mknod(dir, d, name, mode, 0),
            }
        })
    }

    /// `mkfifo(path, mode)`: `mknod(path, S_IFIFO | mode, 0)`.
    ///
    /// A FIFO carries bytes between the threads and processes of one
    /// VFS as a pipe does: a read-only open waits for a writer (with
    /// `O_NONBLOCK` it does not), a write-only open waits for a reader
    /// (with `O_NONBLOCK` and no reader it is `ENXIO`), a read-write open
    /// never waits.
    ///
    /// ```
    /// use uvfs::uapi::{O_NONBLOCK, O_RDONLY, O_WRONLY};
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    ///
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// p.mkfifo("/fifo", 0o644)?;
    /// assert_eq!(p.open("/fifo", O_WRONLY | O_NONBLOCK, 0), Err(Errno::ENXIO));
    /// let r = p.open("/fifo", O_RDONLY | O_NONBLOCK, 0)?;
    /// let w = p.open("/fifo", O_WRONLY | O_NONBLOCK, 0)?;
    /// p.write(w, b"ping")?;
    /// let mut buf = [0u8; 16];
    /// assert_eq!(p.read(r, &mut buf)?, 4);
    /// assert_eq!(p.read(r, &mut buf), Err(Errno::EAGAIN));
    /// p.close(w)?;
    /// assert_eq!(p.read(r, &mut buf)?, 0); // no writer left: end of file
    /// # Ok::<(), Errno>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`mknodat`](Self::mknodat) for a FIFO.
    pub fn mkfifo<P: AsRef<[u8]>>(&mut self, path: P, mode: u32) -> Result<(), Errno> {
        self.mkfifoat(AT_FDCWD, path, mode)
    }

    /// `mkfifoat(dirfd, path, mode)`: `mknodat(dirfd, path, mode |
    /// S_IFIFO, 0)`, as glibc makes it (type bits in `mode` make an
    /// unknown type: `EINVAL`).
    ///
    /// # Errors
    ///
    /// Those of [`mknodat`](Self::mknodat) for a FIFO.
    pub fn mkfifoat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        mode: u32,
    ) -> Result<(), Errno> {
        self.mknodat(dirfd, path, crate::fs::S_IFIFO | mode, 0)
    }

    /// `symlink(target, linkpath)`: [`symlinkat`](Self::symlinkat) with
    /// `AT_FDCWD`.
    ///
    /// # Errors
    ///
    /// Those of `symlinkat`.
    pub fn symlink<T: AsRef<[u8]>, P: AsRef<[u8]>>(
        &mut self,
        target: T,
        linkpath: P,
    ) -> Result<(), Errno> {
        self.symlinkat(target, AT_FDCWD, linkpath)
    }

    /// `symlinkat(target, newdirfd, linkpath)`: makes a symlink at
    /// `linkpath` (relative to `newdirfd`) holding `target`, which is
    /// stored as given and not looked at (it may dangle). Mode 0777, owned
    /// by the caller's fsuid and fsgid.
    ///
    /// # Errors
    ///
    /// - `ENOENT`: an empty `target` (before `linkpath`); `linkpath` ends
    ///   in a slash;
    /// - `ENAMETOOLONG`, `EINVAL`: `target` is `PATH_MAX` bytes or longer,
    ///   or holds a NUL byte (as for a path);
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls) for the parent
    ///   directory;
    /// - `EEXIST`: the name exists (a dangling symlink included), or is
    ///   `.`, `..` or `/`;
    /// - `EACCES`: no write or search permission on the parent directory;
    /// - `ENOENT`: the parent directory was removed;
    /// - `ENOSPC`: the file system is out of inodes or pages (a long
    ///   target takes a page).
    pub fn symlinkat<T: AsRef<[u8]>, P: AsRef<[u8]>>(
        &mut self,
        target: T,
        dirfd: i32,
        linkpath: P,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        let target = namei::getname(target.as_ref())?;
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        self.with_new_name(dirfd, linkpath.as_ref(), false, |dir, name, d| {
            self.task.ops().symlink(dir, d, name, target)
        })
    }

    /// `unlink(path)`: [`unlinkat`](Self::unlinkat) with `AT_FDCWD` and
    /// no flags.
    ///
    /// # Errors
    ///
    /// Those of `unlinkat` without `AT_REMOVEDIR`.
    pub fn unlink<P: AsRef<[u8]>>(&mut self, path: P) -> Result<(), Errno> {
        self.unlinkat(AT_FDCWD, path, 0)
    }

    /// `rmdir(path)`: [`unlinkat`](Self::unlinkat) with `AT_FDCWD` and
    /// `AT_REMOVEDIR`.
    ///
    /// # Errors
    ///
    /// Those of `unlinkat` with `AT_REMOVEDIR`.
    pub fn rmdir<P: AsRef<[u8]>>(&mut self, path: P) -> Result<(), Errno> {
        self.unlinkat(AT_FDCWD, path, AT_REMOVEDIR)
    }

    /// `unlinkat(dirfd, path, flags)`: removes the name `path` (relative
    /// to `dirfd`): a file's name with flags 0 (the file itself goes with
    /// its last name and last open), an empty directory with
    /// `AT_REMOVEDIR`. A symlink at the end is removed, not followed.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: another flag (before the path); `AT_REMOVEDIR` of a
    ///   path ending in `.`;
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls) for the parent
    ///   directory;
    /// - `ENOENT`: the name does not exist;
    /// - `EISDIR`: without `AT_REMOVEDIR`, the name is a directory, or the
    ///   path ends in `.`, `..` or `/` (Linux's answer; POSIX allows
    ///   `EPERM`);
    /// - `ENOTDIR`: without `AT_REMOVEDIR`, a trailing slash on a
    ///   non-directory; with it, the name is not a directory;
    /// - `ENOTEMPTY`: `AT_REMOVEDIR` of a directory with entries, or of a
    ///   path ending in `..`;
    /// - `EBUSY`: `AT_REMOVEDIR` of `/`; the name is a mountpoint;
    /// - `EACCES`: no write or search permission on the parent directory;
    /// - `EPERM`: the parent is sticky and the caller owns neither it nor
    ///   the file and lacks `CAP_FOWNER`.
    pub fn unlinkat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        flags: i32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !AT_REMOVEDIR != 0 {
            return Err(Errno::EINVAL);
        }
        let rmdir = flags & AT_REMOVEDIR != 0;
        let p = self.parent_of(dirfd, path.as_ref())?;
        match (p.kind, rmdir) {
            (LastType::Norm, _) => {}
            (LastType::DotDot, true) => return Err(Errno::ENOTEMPTY),
            (LastType::Dot, true) => return Err(Errno::EINVAL),
            (LastType::Root, true) => return Err(Errno::EBUSY),
            (_, false) => return Err(Errno::EISDIR),
        }
        let dir = &p.dir;
        let _g = lock(&dir.dir_lock);
        let d = self.task.nd().lookup_locked_last(&p)?;
        if d.is_negative() {
            return Err(Errno::ENOENT);
        }
        let victim = perm_of(&d)?;
        if !rmdir && p.trailing {
            return Err(if mode_is_dir(victim.mode) {
                Errno::EISDIR
            } else {
                Errno::ENOTDIR
            });
        }
        self.task.ops().remove(dir, &d, &p.last, rmdir)
    }

    /// `rename(old, new)`: [`renameat2`](Self::renameat2) with
    /// `AT_FDCWD` for both and no flags.
    ///
    /// Names (`mkdir`, `rmdir`, `unlink`, `rename`, `renameat2`, `link`,
    /// `symlink`, `readlink`, `chdir`, `getcwd`):
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// p.mkdir("/a", 0o755)?;
    /// p.mkdir("/a/b", 0o755)?;
    /// p.symlink("a/b", "/l")?;
    /// p.rename("/a/b", "/c")?;
    /// assert_eq!(p.stat("/l"), Err(Errno::ENOENT)); // the link now dangles
    /// p.chdir("/c")?;
    /// assert_eq!(p.getcwd()?, b"/c");
    /// assert_eq!(p.rmdir("/a/.."), Err(Errno::ENOTEMPTY));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// Those of `renameat2`.
    pub fn rename<P: AsRef<[u8]>, Q: AsRef<[u8]>>(&mut self, old: P, new: Q) -> Result<(), Errno> {
        self.renameat2(AT_FDCWD, old, AT_FDCWD, new, 0)
    }

    /// `renameat(olddirfd, old, newdirfd, new)`:
    /// [`renameat2`](Self::renameat2) with no flags.
    ///
    /// # Errors
    ///
    /// Those of `renameat2`.
    pub fn renameat<P: AsRef<[u8]>, Q: AsRef<[u8]>>(
        &mut self,
        od: i32,
        old: P,
        nd: i32,
        new: Q,
    ) -> Result<(), Errno> {
        self.renameat2(od, old, nd, new, 0)
    }

    /// `renameat2(olddirfd, old, newdirfd, new, flags)` with
    /// `RENAME_NOREPLACE`, `RENAME_EXCHANGE` and `RENAME_WHITEOUT` (the old
    /// name is left to a whiteout, a character device 0/0 owned by the
    /// caller; anyone may ask, as Linux needs no `CAP_MKNOD` for it since
    /// 5.8). `RENAME_EXCHANGE` with either of the others is `EINVAL`; a
    /// file system without whiteouts answers `EINVAL` too.
    ///
    /// Without flags it moves the name `old` (relative to `olddirfd`) to
    /// `new` (relative to `newdirfd`), replacing what `new` named in one
    /// step: a file replaces a file, a directory an empty directory. A
    /// symlink is moved, not followed. Renaming a name onto another name
    /// of the same file does nothing. `RENAME_NOREPLACE` refuses to
    /// replace; `RENAME_EXCHANGE` swaps the two names, which must both
    /// exist. Both must be on one mount.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: an unknown flag, or `RENAME_EXCHANGE` with another
    ///   (before the paths); moving a directory into its own subtree;
    ///   exchanging a directory with one of its ancestors;
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls) for both parent
    ///   directories;
    /// - `EXDEV`: the two parents are on different mounts;
    /// - `EBUSY`: `old` ends in `.`, `..` or `/`, or `new` does (without
    ///   `RENAME_NOREPLACE`); either name is a mountpoint;
    /// - `ENOENT`: `old` does not exist; `RENAME_EXCHANGE` and `new` does
    ///   not; the new parent was removed;
    /// - `EEXIST`: `RENAME_NOREPLACE` and `new` exists (or ends in `.`,
    ///   `..`, `/`);
    /// - `ENOTDIR`: a trailing slash on a name that is not (or whose
    ///   replacement is not) a directory; a directory onto a
    ///   non-directory;
    /// - `EISDIR`: a non-directory onto a directory;
    /// - `ENOTEMPTY`: a directory onto a non-empty directory, or onto one
    ///   of its own ancestors;
    /// - `EACCES`: no write or search permission on either parent; moving
    ///   a directory to another parent without write permission on it (its
    ///   `..` changes);
    /// - `EPERM`: a sticky parent whose entry the caller may not remove;
    /// - `EMLINK`: the new parent has the most links a directory can have;
    /// - `ENOSPC`: `RENAME_WHITEOUT` with the file system out of inodes.
    pub fn renameat2<P: AsRef<[u8]>, Q: AsRef<[u8]>>(
        &mut self,
        od: i32,
        old: P,
        nd: i32,
        new: Q,
        flags: u32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & RENAME_EXCHANGE != 0 && flags & (RENAME_NOREPLACE | RENAME_WHITEOUT) != 0 {
            return Err(Errno::EINVAL);
        }
        let op = self.parent_of(od, old.as_ref())?;
        let np = self.parent_of(nd, new.as_ref())?;
        if op.dir.sb().id != np.dir.sb().id {
            return Err(Errno::EXDEV);
        }
        if op.kind != LastType::Norm {
            return Err(Errno::EBUSY);
        }
        if np.kind != LastType::Norm {
            return Err(if flags & RENAME_NOREPLACE != 0 {
                Errno::EEXIST
            } else {
                Errno::EBUSY
            });
        }
        let (odir, ndir) = (&op.dir, &np.dir);
        let same = DentryRef::ptr_eq(odir, ndir);
        let _rl = (!same).then(|| lock_unmodelled(&odir.sb().rename_lock));
        let (first, second) = if odir.as_ptr() < ndir.as_ptr() {
            (odir, ndir)
        } else {
            (ndir, odir)
        };
        let _g1 = lock(&first.dir_lock);
        let _g2 = (!same).then(|| lock(&second.dir_lock));
        let walk = self.task.nd();
        let od_ = walk.lookup_locked_dir(odir, &op.last)?;
        if od_.is_negative() {
            return Err(Errno::ENOENT);
        }
        let oattr = attr_of(&od_)?;
        let odir_is = mode_is_dir(oattr.mode);
        // Both names are looked up before the trailing-slash rules (Linux's
        // `do_renameat2`): the target's ENOENT/EEXIST/ENAMETOOLONG first.
        let nd_ = walk.lookup_locked_dir(ndir, &np.last)?;
        let exchange = flags & RENAME_EXCHANGE != 0;
        if exchange && nd_.is_negative() {
            return Err(Errno::ENOENT);
        }
        if flags & RENAME_NOREPLACE != 0 && !nd_.is_negative() {
            return Err(Errno::EEXIST);
        }
        let nattr = if nd_.is_negative() {
            None
        } else {
            Some(attr_of(&nd_)?)
        };
        let ndir_is = nattr.is_some_and(|a| mode_is_dir(a.mode));
        // A trailing slash requires a directory: on the source always, on
        // the target only when it is the source that lands there (with
        // RENAME_EXCHANGE each slash constrains its own name).
        if !odir_is && (op.trailing || (np.trailing && !exchange)) {
            return Err(Errno::ENOTDIR);
        }
        if exchange && np.trailing && !ndir_is {
            return Err(Errno::ENOTDIR);
        }
        // Renaming a directory into its own subtree (the `lock_rename`
        // trap), or over one of its ancestors.
        if odir_is && is_ancestor(&od_, ndir) {
            return Err(Errno::EINVAL);
        }
        if let Some(_) = nattr.filter(|_| ndir_is)
            && is_ancestor(&nd_, odir)
        {
            return Err(if exchange {
                Errno::EINVAL
            } else {
                Errno::ENOTEMPTY
            });
        }
        self.task.ops().rename(
            &RenameSide {
                dir: odir,
                name: &op.last,
                dentry: &od_,
                attr: Some(oattr),
            },
            &RenameSide {
                dir: ndir,
                name: &np.last,
                dentry: &nd_,
                attr: nattr,
            },
            flags,
        )
    }

    /// `link(old, new)`: [`linkat`](Self::linkat) with `AT_FDCWD` for
    /// both and no flags (a symlink `old` is linked itself, not followed).
    ///
    /// # Errors
    ///
    /// Those of `linkat`.
    pub fn link<P: AsRef<[u8]>, Q: AsRef<[u8]>>(&mut self, old: P, new: Q) -> Result<(), Errno> {
        self.linkat(AT_FDCWD, old, AT_FDCWD, new, 0)
    }

    /// `linkat(olddirfd, old, newdirfd, new, flags)` with
    /// `AT_SYMLINK_FOLLOW` and `AT_EMPTY_PATH`. Since Linux 6.10 a walk
    /// from `olddirfd` under `AT_EMPTY_PATH` (the path empty or relative)
    /// is allowed when the fd was opened with the caller's very
    /// credentials (the same `struct cred`: a process that changed its ids
    /// since has new ones) or the caller holds `CAP_DAC_READ_SEARCH`;
    /// otherwise it is `ENOENT`, after the fd's own checks (`EBADF`,
    /// `ENOTDIR`). Then `fs.protected_hardlinks` (`may_linkat`).
    ///
    /// Gives the file `old` (relative to `olddirfd`; a symlink at the end
    /// is linked itself unless `AT_SYMLINK_FOLLOW`) the new name `new`
    /// (relative to `newdirfd`). With `AT_EMPTY_PATH` and an empty `old`,
    /// the file is the one open at `olddirfd`: this is how an `O_TMPFILE`
    /// file gets a name (`docs/semantics.md`, "linkat(AT_EMPTY_PATH)").
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// p.mkdir("/d", 0o755)?;
    /// // An unnamed file, written, then given a name once complete.
    /// let fd = p.open("/d", O_TMPFILE | O_WRONLY, 0o644)?;
    /// p.write(fd, b"all or nothing")?;
    /// p.linkat(fd, "", AT_FDCWD, "/d/ready", AT_EMPTY_PATH)?;
    /// assert_eq!(p.read_file("/d/ready")?, b"all or nothing");
    /// assert_eq!(p.linkat(fd, "", AT_FDCWD, "/d/ready", AT_EMPTY_PATH), Err(Errno::EEXIST));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// - `EINVAL`: another flag (before the paths);
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls) for `old` and for
    ///   the parent of `new`;
    /// - `ENOENT`: an empty `old` without `AT_EMPTY_PATH`; `AT_EMPTY_PATH`
    ///   from an fd opened with other credentials, by a caller without
    ///   `CAP_DAC_READ_SEARCH`; the file was unlinked (an `O_TMPFILE` file
    ///   made with `O_EXCL` cannot be linked either); `new` ends in a
    ///   slash; the new parent was removed;
    /// - `EEXIST`: `new` exists, or is `.`, `..` or `/`;
    /// - `EXDEV`: `old` and `new` are on different mounts;
    /// - `EPERM`: `old` is a directory; `fs.protected_hardlinks` refuses
    ///   the source;
    /// - `EACCES`: no write or search permission on the new parent;
    /// - `EMLINK`: the file has the most links it can have.
    pub fn linkat<P: AsRef<[u8]>, Q: AsRef<[u8]>>(
        &mut self,
        od: i32,
        old: P,
        nd: i32,
        new: Q,
        flags: i32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let mut lf = 0;
        if flags & AT_SYMLINK_FOLLOW != 0 {
            lf |= FOLLOW;
        }
        if flags & AT_EMPTY_PATH != 0 {
            lf |= EMPTY;
        }
        let old = namei::getname(old.as_ref())?;
        if old.is_empty() && lf & EMPTY == 0 {
            return Err(Errno::ENOENT);
        }
        let start = self.start(od, old)?;
        if lf & EMPTY != 0
            && od != AT_FDCWD
            && old.first() != Some(&b'/')
            && !self.task.cred.capable(cred::Cap::DacReadSearch)
        {
            let file = self.files.get(od).ok_or(Errno::EBADF)?;
            if file.cred_id() != Some(self.task.cred_id) {
                return Err(Errno::ENOENT);
            }
        }
        let src = self.task.nd().lookup(&start, old, lf)?;
        drop(start);
        self.with_new_name(nd, new.as_ref(), false, |dir, name, d| {
            // `do_linkat`: another mount is EXDEV before `may_linkat`.
            if src.sb().id != dir.sb().id {
                return Err(Errno::EXDEV);
            }
            self.may_linkat(&src)?;
            self.task.ops().link(&src, dir, d, name)
        })
    }

    /// Linux's `may_linkat` under `fs.protected_hardlinks`: when it is
    /// set, a caller that neither owns the source nor holds `CAP_FOWNER`
    /// may link only a "safe" source: a regular file, not set-user-ID, not
    /// set-group-ID with group execute, that it may both read and write
    /// (`EPERM` otherwise). Checked after the new name (`EEXIST`) and
    /// before the permission on the new directory.
    fn may_linkat(&self, src: &DentryRef) -> Result<(), Errno> {
        if self.task.vfs.sysctls().protected_hardlinks == 0 {
            return Ok(());
        }
        let a = attr_of(src)?;
        let cred = &self.task.cred;
        if cred::inode_owner_or_capable(cred, &a) {
            return Ok(());
        }
        let safe = a.mode & S_IFMT == S_IFREG
            && a.mode & S_ISUID == 0
            && a.mode & (S_ISGID | 0o010) != (S_ISGID | 0o010)
            && inode_permission(cred, src, &a, MAY_READ | MAY_WRITE).is_ok();
        if safe { Ok(()) } else { Err(Errno::EPERM) }
    }

    /// `readlink(path, buf)`: copies the target of the symlink at `path`
    /// into `buf`, cut to fit, with no NUL added, and returns the bytes
    /// copied (a result equal to `buf.len()` may mean it was cut).
    ///
    /// # Errors
    ///
    /// - `EINVAL`: an empty `buf` (before the path); `path` is not a
    ///   symlink;
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls).
    pub fn readlink<P: AsRef<[u8]>>(&mut self, path: P, buf: &mut [u8]) -> Result<usize, Errno> {
        self.readlinkat(AT_FDCWD, path, buf)
    }

    /// `readlinkat(dirfd, path, buf)`: [`readlink`](Self::readlink) of
    /// `path` relative to `dirfd`; an empty path reads the symlink `dirfd`
    /// itself refers to (an `O_PATH | O_NOFOLLOW` fd), with no flag needed.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: an empty `buf`; a non-empty `path` that is not a
    ///   symlink;
    /// - `ENOENT`: an empty `path` and `dirfd` is not a symlink (or is
    ///   `AT_FDCWD`);
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls).
    pub fn readlinkat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        buf: &mut [u8],
    ) -> Result<usize, Errno> {
        let _call = task_work::enter();
        if buf.is_empty() {
            return Err(Errno::EINVAL);
        }
        let path = path.as_ref();
        let lf = if path.is_empty() && dirfd != AT_FDCWD {
            EMPTY
        } else {
            0
        };
        let d = self.resolve(dirfd, path, lf)?;
        let a = attr_of(&d)?;
        if a.mode & crate::fs::S_IFMT != S_IFLNK {
            // Linux's do_readlinkat: an empty path naming a non-symlink is
            // ENOENT, any other non-symlink EINVAL (host: readlinkat on a
            // directory fd with "" is ENOENT).
            return Err(if path.is_empty() {
                Errno::ENOENT
            } else {
                Errno::EINVAL
            });
        }
        let t = d.sb().fs.readlink_node(d.node())?;
        let n = t.len().min(buf.len());
        buf[..n].copy_from_slice(&t[..n]);
        self.task.touch_atime(&d, 0);
        Ok(n)
    }

    /// `chdir(path)`: makes the directory at `path` the current
    /// directory, for this thread and the threads sharing its fs_struct
    /// (see [`unshare_fs`](Self::unshare_fs)).
    ///
    /// # Errors
    ///
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    /// - `ENOTDIR`: `path` is not a directory;
    /// - `EACCES`: no search permission on it.
    pub fn chdir<P: AsRef<[u8]>>(&mut self, path: P) -> Result<(), Errno> {
        let _call = task_work::enter();
        let d = self.resolve(AT_FDCWD, path.as_ref(), FOLLOW | DIRECTORY)?;
        self.task.set_cwd(d)
    }

    /// `fchdir(fd)`: [`chdir`](Self::chdir) to the directory open at
    /// `fd`, an `O_PATH` fd included.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open;
    /// - `ENOTDIR`: it is not a directory;
    /// - `EACCES`: no search permission on it.
    pub fn fchdir(&mut self, fd: i32) -> Result<(), Errno> {
        let _call = task_work::enter();
        let file = self.files.get(fd).ok_or(Errno::EBADF)?;
        let d = file.dentry().ok_or(Errno::ENOTDIR)?.clone();
        if !namei::is_dir(&d) {
            return Err(Errno::ENOTDIR);
        }
        self.task.set_cwd(d)
    }
}

impl Task {
    fn set_cwd(&self, d: DentryRef) -> Result<(), Errno> {
        inode_permission(&self.cred, &d, &attr_of(&d)?, MAY_EXEC)?;
        let old = std::mem::replace(&mut *lock_unmodelled(&self.fs.cwd), d);
        drop(old);
        Ok(())
    }
}

impl Process {
    /// `getcwd()`: the absolute path of the current directory; `ENOENT` if
    /// it was removed, `ENAMETOOLONG` if the path and its terminating NUL
    /// do not fit in `PATH_MAX` (4,096) bytes: Linux builds it in one
    /// page-sized buffer. A current directory outside the root (after a
    /// [`chroot`](Self::chroot)) comes back as `(unreachable)` followed by
    /// its path from the VFS's root, as the system call gives it (glibc's
    /// wrapper turns that into `ENOENT`; `docs/semantics.md`, "getcwd").
    /// Unlike the C call there is no buffer: the path comes back as a
    /// `Vec` without the NUL, so there is no `ERANGE`.
    ///
    /// # Errors
    ///
    /// - `ENOENT`: the current directory was removed;
    /// - `ENAMETOOLONG`: the path with its NUL is longer than 4,096 bytes.
    pub fn getcwd(&mut self) -> Result<Vec<u8>, Errno> {
        let _call = task_work::enter();
        let cwd = self.task.cwd();
        let nd = self.task.nd();
        let (mut path, reached) = d_path(&nd, &cwd, nd.root())?;
        if !reached {
            // A current directory outside the root (a chroot entered with
            // the cwd elsewhere, or fchdir to a directory opened before):
            // Linux's getcwd marks the path from the real root so.
            path.splice(0..0, b"(unreachable)".iter().copied());
        }
        if path.len() >= PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        Ok(path)
    }

    /// `chroot(path)`: walks that start at `/`, and `..` at the top, stop
    /// at `path` from now on, for every thread sharing this fs_struct. The
    /// current directory stays where it is (possibly outside). Checks as
    /// Linux: the lookup (`ENOENT`, `ENOTDIR`, …), then search permission
    /// on the directory (`EACCES`), then `CAP_SYS_CHROOT` (`EPERM`).
    /// Files opened before keep leading out (`docs/semantics.md`,
    /// "chroot").
    ///
    /// # Errors
    ///
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    /// - `ENOTDIR`: `path` is not a directory;
    /// - `EACCES`: no search permission on it;
    /// - `EPERM`: the caller's effective ids lack `CAP_SYS_CHROOT`.
    pub fn chroot<P: AsRef<[u8]>>(&mut self, path: P) -> Result<(), Errno> {
        let _call = task_work::enter();
        let d = self.resolve(AT_FDCWD, path.as_ref(), FOLLOW | DIRECTORY)?;
        inode_permission(&self.task.cred, &d, &attr_of(&d)?, MAY_EXEC)?;
        if !self.task.cred.capable(crate::cred::Cap::SysChroot) {
            return Err(Errno::EPERM);
        }
        let fs = &self.task.fs;
        let root = if DentryRef::ptr_eq(&d, self.task.vfs.root()) {
            None
        } else {
            Some(d)
        };
        let mut g = lock_unmodelled(&fs.root);
        fs.chrooted
            .store(root.is_some(), std::sync::atomic::Ordering::Release);
        let old = std::mem::replace(&mut *g, root);
        drop(g);
        drop(old);
        Ok(())
    }

    /// The absolute path of the file open at `fd` (`O_PATH` files
    /// included): what `readlink("/proc/self/fd/N")` names, for a file with
    /// a name. `EBADF` for no such fd; `ENOENT` if the file was removed
    /// (Linux's link then ends in " (deleted)") or has no name (a pipe, an
    /// `O_TMPFILE` file never linked). Not a Linux call.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open;
    /// - `ENOENT`: the file was removed or has no name (see above).
    pub fn fd_path(&mut self, fd: i32) -> Result<Vec<u8>, Errno> {
        let _call = task_work::enter();
        let file = self.files.get(fd).ok_or(Errno::EBADF)?;
        let d = file.dentry().ok_or(Errno::ENOENT)?.clone();
        let nd = self.task.nd();
        // Outside the root, the path from the real root (as /proc's links).
        d_path(&nd, &d, nd.root()).map(|(path, _)| path)
    }
}

/// Whether `anc` is `d` or one of its ancestors (within one file system).
fn is_ancestor(anc: &DentryRef, d: &DentryRef) -> bool {
    let mut cur = Some(d.clone());
    while let Some(c) = cur {
        if DentryRef::ptr_eq(&c, anc) {
            return true;
        }
        cur = c.parent();
    }
    false
}

/// The absolute path of `d` (`d_path`), crossing mounts upwards, and
/// whether it met `root` (else the path runs from the VFS's own root). Read
/// under the dentry cache's rename count: a path `d` really had, never
/// `ENOENT` for a directory on it that a rename is moving (`dcache::path`).
pub(super) fn d_path(
    nd: &namei::Nd<'_>,
    d: &DentryRef,
    root: &DentryRef,
) -> Result<(Vec<u8>, bool), Errno> {
    nd.d_path(d, root)
}
