//! open, openat, creat: `do_filp_open`'s path side — resolve the path
//! (creating the last component for `O_CREAT`), check the open against the
//! inode (`may_open`), truncate, and attach the dentry to the file.

use super::{Opening, Process, Task};
use crate::cred::{self, MAY_READ, MAY_WRITE};
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::file_table::{FMODE_CAN_ODIRECT, FMODE_COUNTED, FMODE_CREATED, FMODE_READ, FMODE_WRITE};
use crate::fs::{
    Attr, S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK, SetAttr, SetTime,
};
use crate::namei::{self, DIRECTORY, FOLLOW, LastType, MAXSYMLINKS};
use crate::primitive::sync::lock;
use crate::uapi::*;

use crate::vfs_ops::VfsOps;
use crate::vfs_ops::attr::notify_change;
use std::sync::atomic::Ordering;

impl Process {
    /// `open(path, flags, mode)`: opens (or, with `O_CREAT`, creates) the
    /// file at `path`, relative to the current directory, and returns the
    /// lowest free fd. The same as [`openat`](Self::openat) with
    /// `AT_FDCWD`; that call's documentation lists the flags and errors.
    ///
    /// Opening files (`open`, `openat`, `creat`, `O_TMPFILE`, `reopen`):
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// let fd = p.open("/f", O_WRONLY | O_CREAT | O_EXCL, 0o644)?;
    /// assert_eq!(fd, 0); // the lowest free fd
    /// assert_eq!(p.open("/f", O_CREAT | O_EXCL, 0o644), Err(Errno::EEXIST));
    /// let dir = p.open("/", O_PATH | O_DIRECTORY, 0)?;
    /// let again = p.openat(dir, "f", O_RDONLY, 0)?;
    /// assert_eq!(p.fstat(again)?.st_ino, p.fstat(fd)?.st_ino);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`openat`](Self::openat).
    pub fn open<P: AsRef<[u8]>>(&mut self, path: P, flags: i32, mode: u32) -> Result<i32, Errno> {
        self.openat(AT_FDCWD, path, flags, mode)
    }

    /// `creat(path, mode)`: [`open`](Self::open) with
    /// `O_CREAT | O_WRONLY | O_TRUNC`: creates the file, or empties an
    /// existing one, and opens it for writing.
    ///
    /// # Errors
    ///
    /// Those of [`openat`](Self::openat) for these flags.
    pub fn creat<P: AsRef<[u8]>>(&mut self, path: P, mode: u32) -> Result<i32, Errno> {
        self.openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode)
    }

    /// `openat(dirfd, path, flags, mode)`: opens the file at `path` and
    /// returns the lowest free fd. A relative `path` starts at the
    /// directory open at `dirfd` (`AT_FDCWD`: the current directory); an
    /// absolute one ignores `dirfd`.
    /// As in Linux, the fd is reserved before the path is looked at
    /// (`EMFILE` wins over `ENOENT`), and a failed open releases its file
    /// object through the failed-open path.
    ///
    /// `flags`: an access mode (`O_RDONLY`, `O_WRONLY`, `O_RDWR`; 3 opens
    /// for neither but is checked as read-write), and any of `O_CREAT`,
    /// `O_EXCL`, `O_TRUNC`, `O_APPEND`, `O_NONBLOCK`, `O_DIRECTORY`,
    /// `O_NOFOLLOW`, `O_CLOEXEC`, `O_NOATIME`, `O_DIRECT`, `O_PATH` (keeps
    /// only `O_DIRECTORY`, `O_NOFOLLOW` and `O_CLOEXEC` and opens for
    /// neither reading nor writing), `O_TMPFILE` (an unnamed regular file
    /// in the directory `path` names; see [`linkat`](Self::linkat) to name
    /// it) and the flags Linux accepts and ignores here (`O_SYNC`,
    /// `O_DSYNC`, `O_NOCTTY`, `O_LARGEFILE`, ...). Unknown bits are
    /// ignored, as by `open(2)`. `mode` is the new file's permission bits
    /// (less the umask, or masked by the directory's default ACL) and is
    /// read only with `O_CREAT` or `O_TMPFILE`.
    ///
    /// Differences from Linux: character and block devices and socket
    /// nodes open to `ENXIO` (there are no drivers), and a path with a NUL
    /// byte is `EINVAL` (`docs/semantics.md`, "Special files"; see the
    /// [common errors](crate::process#errors-common-to-the-calls)).
    ///
    /// # Errors
    ///
    /// The walk's [common errors](crate::process#errors-common-to-the-calls),
    /// then:
    ///
    /// - `EINVAL`: `O_CREAT` with `O_DIRECTORY`; `O_TMPFILE` read-only;
    ///   `O_DIRECT` on a directory or a FIFO;
    /// - `EMFILE`: no fd free below `RLIMIT_NOFILE`;
    /// - `ENOENT`: the file does not exist and `O_CREAT` was not given;
    /// - `EEXIST`: `O_CREAT | O_EXCL` and the name exists (a symlink
    ///   included, even a dangling one);
    /// - `EISDIR`: `O_CREAT` on a directory (`.`, `..`, `/`, a trailing
    ///   slash included), or opening a directory for writing or with
    ///   `O_TRUNC`;
    /// - `ENOTDIR`: `O_DIRECTORY` and the file is not a directory;
    /// - `ELOOP`: `O_NOFOLLOW` (without `O_PATH`) and `path` ends in a
    ///   symlink;
    /// - `EACCES`: the file's mode or ACL denies the access mode (or write
    ///   for `O_TRUNC`); creating without write and search permission on
    ///   the directory; an `O_CREAT` open of someone else's file in a
    ///   sticky directory under `fs.protected_regular`/`protected_fifos`;
    /// - `EPERM`: `O_NOATIME` by a caller that neither owns the file nor
    ///   has `CAP_FOWNER`;
    /// - `ENOSPC`: creating, and the file system is out of inodes (or the
    ///   directory out of entry offsets);
    /// - `ENXIO`: a device or socket node; a FIFO opened `O_WRONLY |
    ///   O_NONBLOCK` with no reader;
    /// - `EINTR`: a FIFO open waiting for its partner, or an open waiting
    ///   for a lease's holder, was interrupted ([`set_sleep`](Self::set_sleep));
    /// - `EWOULDBLOCK`: the open conflicts with a lease (a write open with
    ///   any lease, a read open with a write lease) and `O_NONBLOCK` was
    ///   given: the break has started, nothing was opened
    ///   (`docs/locks.md`, "Leases").
    pub fn openat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        flags: i32,
        mode: u32,
    ) -> Result<i32, Errno> {
        // `build_open_flags` runs before `getname`: a bad flag combination
        // is EINVAL even for an over-long path.
        super::check_open_flags(flags)?;
        let path = namei::getname(path.as_ref())?;
        self.open_inner(flags, |p, op| p.path_openat(dirfd, path, flags, mode, op))
    }

    fn path_openat(
        &self,
        dirfd: i32,
        path: &[u8],
        flags: i32,
        mode: u32,
        op: &mut Opening<'_>,
    ) -> Result<(), Errno> {
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        let start = self.start(dirfd, path)?;
        let t = &self.task;
        let nd = t.nd();
        // An O_PATH open keeps only these flags (`build_open_flags`): with
        // O_TMPFILE it opens the directory itself.
        let flags = if flags & O_PATH != 0 {
            flags & (O_DIRECTORY | O_NOFOLLOW | O_PATH | O_CLOEXEC)
        } else {
            flags
        };
        if flags & O_TMPFILE == O_TMPFILE {
            let follow = if flags & O_NOFOLLOW != 0 { 0 } else { FOLLOW };
            let dir = nd.lookup(&start, path, follow | DIRECTORY)?;
            return t.open_tmpfile(dir, flags, mode, op);
        }
        let (d, created) = if flags & O_CREAT != 0 && flags & O_PATH == 0 {
            t.open_create(start.into_owned(), path, flags, mode)?
        } else {
            let mut lf = 0;
            if flags & O_NOFOLLOW == 0 {
                lf |= FOLLOW;
            }
            if flags & O_DIRECTORY != 0 {
                lf |= DIRECTORY;
            }
            (nd.lookup(&start, path, lf)?, false)
        };
        t.do_open(d, flags, created, op)
    }
}

impl Task {
    /// The `O_CREAT` side of the last component (`open_last_lookups`):
    /// look the name up under the directory's lock and create it if it is
    /// missing; follow a symlink found there (creating its target if that
    /// is missing, as Linux does), up to the symlink limit.
    fn open_create(
        &self,
        start: DentryRef,
        path: &[u8],
        flags: i32,
        mode: u32,
    ) -> Result<(DentryRef, bool), Errno> {
        let nd = self.nd();
        let mut p = nd.lookup_parent(start, path)?;
        let mut links = p.links;
        loop {
            if p.kind != LastType::Norm {
                // ".", "..", "/": resolves to an existing directory; `do_open`
                // refuses O_EXCL first (nothing was created), then O_CREAT on
                // a directory.
                return Err(if flags & O_EXCL != 0 {
                    Errno::EEXIST
                } else {
                    Errno::EISDIR
                });
            }
            if p.trailing {
                return Err(Errno::EISDIR);
            }
            let dir = p.dir.clone();
            let g = lock(&dir.dir_lock);
            let d = nd.lookup_locked_last(&p)?;
            if d.is_negative() {
                self.ops().create(&dir, &d, &p.last, mode)?;
                drop(g);
                return Ok((d, true));
            }
            drop(g);
            if flags & O_EXCL != 0 {
                return Err(Errno::EEXIST);
            }
            let d = nd.follow_mounts(d);
            if d.snap().is_some_and(|s| s.mode & S_IFMT == S_IFLNK) && flags & O_NOFOLLOW == 0 {
                links += 1;
                if links > MAXSYMLINKS {
                    return Err(Errno::ELOOP);
                }
                nd.may_follow_link(&dir, &d)?;
                let target = d.sb().fs.readlink_node(d.node())?;
                crate::vfs_ops::inode::touch_atime(&self.vfs, &d);
                if target.is_empty() {
                    return Err(Errno::ENOENT);
                }
                let target = nd.link_target(target)?;
                p = nd.lookup_parent_counted(dir, &target, links)?;
                links = p.links;
                continue;
            }
            if !namei::is_dir(&d) {
                self.may_create_in_sticky(&dir, &d)?;
            }
            return Ok((d, false));
        }
    }

    /// `may_create_in_sticky`: an `O_CREAT` open of an existing file in a
    /// sticky directory, owned neither by the caller nor by the
    /// directory's owner, is `EACCES` when the directory is world-writable,
    /// or group-writable under level 2 of the sysctl; regular files and
    /// FIFOs only under `fs.protected_regular` / `fs.protected_fifos`,
    /// anything else (a symlink not followed) always. It comes before
    /// `O_NOFOLLOW`'s `ELOOP`, and binds root too.
    fn may_create_in_sticky(&self, dir: &DentryRef, d: &DentryRef) -> Result<(), Errno> {
        let (Some(ds), Some(is)) = (dir.inode_perm(), d.inode_perm()) else {
            return Ok(());
        };
        if ds.mode & crate::fs::S_ISVTX == 0 {
            return Ok(());
        }
        let sys = self.vfs.sysctls();
        let ftype = is.mode & S_IFMT;
        let level = match ftype {
            S_IFREG => Some(sys.protected_regular),
            S_IFIFO => Some(sys.protected_fifos),
            _ => None,
        };
        if level == Some(0) {
            return Ok(());
        }
        if is.uid == ds.uid || is.uid == self.cred.fsuid {
            return Ok(());
        }
        if ds.mode & 0o002 != 0 {
            return Err(Errno::EACCES);
        }
        if ds.mode & 0o020 != 0 && level.is_some_and(|l| l >= 2) {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// `do_open` + `may_open` + `handle_truncate`: checks the open against
    /// the inode and attaches the dentry.
    fn do_open(
        &self,
        d: DentryRef,
        flags: i32,
        created: bool,
        op: &mut Opening<'_>,
    ) -> Result<(), Errno> {
        // The in-core inode's mode and owner, as `may_open` reads them: no
        // call into the file system unless the open truncates.
        let attr = d.inode_perm().ok_or(Errno::ENOENT)?.attr();
        let ftype = attr.mode & S_IFMT;
        if flags & O_PATH != 0 {
            if ftype != S_IFREG && ftype != S_IFDIR {
                op.clear_atomic_pos();
            }
            op.set_path(d);
            return Ok(());
        }
        if flags & O_CREAT != 0 && ftype == S_IFDIR {
            return Err(Errno::EISDIR);
        }
        if flags & O_DIRECTORY != 0 && ftype != S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        if ftype == S_IFLNK {
            return Err(Errno::ELOOP);
        }
        let mut acc = match flags & O_ACCMODE {
            O_RDONLY => MAY_READ,
            O_WRONLY => MAY_WRITE,
            // Access mode 3 opens for neither, but is checked as read and
            // write (`ACC_MODE`): EISDIR on a directory, like O_RDWR.
            _ => MAY_READ | MAY_WRITE,
        };
        let mut trunc = flags & O_TRUNC != 0;
        if created {
            // A file this open created is not checked against its own mode
            // and is not truncated.
            acc = 0;
            trunc = false;
        } else if trunc {
            acc |= MAY_WRITE;
        }
        if ftype == S_IFDIR && acc & MAY_WRITE != 0 {
            return Err(Errno::EISDIR);
        }
        if acc != 0 {
            crate::vfs_ops::inode::inode_permission(&self.cred, &d, &attr, acc)?;
        }
        if flags & O_NOATIME != 0 && !cred::inode_owner_or_capable(&self.cred, &attr) {
            return Err(Errno::EPERM);
        }
        if ftype == S_IFREG {
            // `do_dentry_open`'s counts and `break_lease`, then
            // `handle_truncate`: a truncate that fails uncounts the open.
            let counted = self.count_open(&d, op, flags)?;
            if trunc && let Err(e) = self.open_truncate(&d, &attr) {
                if let Some(c) = counted {
                    c.undo(op.file());
                }
                return Err(e);
            }
            if counted.is_some() {
                op.add_mode(FMODE_COUNTED);
            }
        }
        // `do_dentry_open`: the file type's own open first (a FIFO's
        // rendezvous; `ENXIO` for a device with no driver and for a socket
        // node), then O_DIRECT needs FMODE_CAN_ODIRECT, which tmpfs gives
        // regular files only.
        match ftype {
            S_IFIFO => {
                let inode = d.inode().ok_or(Errno::ENOENT)?;
                let fmode = op.file().mode();
                // A task that does not wait declines a wait here too.
                let fifo = crate::pipe::fifo_open_or_decline(
                    &inode.pipe,
                    fmode & FMODE_READ != 0,
                    fmode & FMODE_WRITE != 0,
                    flags & O_NONBLOCK != 0,
                    self.lease_wait,
                    self.sleep_hook(),
                )?;
                if flags & O_DIRECT != 0 {
                    fifo.release(&inode.pipe);
                    return Err(Errno::EINVAL);
                }
                op.set_ops(std::sync::Arc::new(fifo));
            }
            S_IFCHR | S_IFBLK | S_IFSOCK => return Err(Errno::ENXIO),
            _ => {}
        }
        if flags & O_DIRECT != 0 && ftype == S_IFDIR {
            return Err(Errno::EINVAL);
        }
        if ftype != S_IFREG && ftype != S_IFDIR {
            op.clear_atomic_pos();
        }
        if created {
            op.add_mode(FMODE_CREATED);
        }
        if ftype == S_IFREG {
            // `shmem_file_open`.
            op.add_mode(FMODE_CAN_ODIRECT);
        }
        op.set_path(d);
        Ok(())
    }

    /// Counts a regular file's open in its inode (a writer, or a reader
    /// for an open for reading only; an open for neither is not counted)
    /// and breaks the leases it conflicts with (`break_lease`, by the
    /// access mode: anything but `O_RDONLY` breaks as a writer). Returns
    /// the inode and kind counted; a failed break uncounts.
    fn count_open<'d>(
        &self,
        d: &'d DentryRef,
        op: &Opening<'_>,
        flags: i32,
    ) -> Result<Option<Counted<'d>>, Errno> {
        let inode = d.inode().ok_or(Errno::ENOENT)?;
        let fmode = op.file().mode();
        let counted = (fmode & (FMODE_READ | FMODE_WRITE) != 0).then(|| {
            let write = fmode & FMODE_WRITE != 0;
            // `FastPaths::open_count_lazy`: a plain store into the file
            // (a pool object), else the inode's atomic count.
            let lazy = self.vfs.fastpaths().open_count_lazy
                && op
                    .file()
                    .count_lazy(std::ptr::from_ref(inode) as usize, write);
            if !lazy {
                inode.opens.get(write);
            }
            Counted { inode, write, lazy }
        });
        let r = self.break_leases(
            inode,
            flags & O_ACCMODE != O_RDONLY,
            flags & O_NONBLOCK != 0,
        );
        if let Err(e) = r {
            if let Some(c) = counted {
                c.undo(op.file());
            }
            return Err(e);
        }
        Ok(counted)
    }

    /// `break_lease` for an open or a truncate of `inode`: breaks the
    /// leases it conflicts with (all of them for a writer, write leases
    /// for a reader), the notices to the Vfs's hook, and waits for their
    /// holders unless `nonblock` or this task does not wait for breaks
    /// (`EWOULDBLOCK` then, the break started). Costs one load when the
    /// inode has no lease.
    #[inline]
    pub(super) fn break_leases(
        &self,
        inode: &crate::icache::Inode,
        want_write: bool,
        nonblock: bool,
    ) -> Result<(), Errno> {
        crate::locks::break_lease_if_any(
            inode.lock_context(),
            want_write,
            nonblock || !self.lease_wait,
            self.vfs.lease_break_time(),
            self.sleep_hook(),
            &|n| self.notify_lease_break(n),
        )
    }

    /// Hands a lease break's notice to the Vfs's hook, when a task of the
    /// owner's kind has its id (`send_sigio` finds no task otherwise).
    fn notify_lease_break(&self, n: crate::LeaseBreak) {
        if super::fcntl::owner_alive(n.kind, n.pid) {
            self.vfs.lease_notify().lease_break(n);
        }
    }

    /// An open's `O_TRUNC` of a regular file (`handle_truncate`).
    fn open_truncate(&self, d: &DentryRef, attr: &Attr) -> Result<(), Errno> {
        let mut set = SetAttr {
            size: Some(0),
            mtime: Some(SetTime::Now),
            ..SetAttr::default()
        };
        if let Some(m) = cred::remove_privs_on_write(&self.cred, attr) {
            set.mode = Some(m);
        }
        let _io = d.lock_inode();
        self.setattr(d, &set).map(|_| ())
    }

    /// `O_TMPFILE`: an unnamed regular file in `dir`, with an unhashed
    /// dentry; `linkat` with `AT_EMPTY_PATH` can give it a name unless
    /// `O_EXCL` was given.
    fn open_tmpfile(
        &self,
        dir: DentryRef,
        flags: i32,
        mode: u32,
        op: &mut Opening<'_>,
    ) -> Result<(), Errno> {
        let d = self.ops().tmpfile(&dir, mode, flags & O_EXCL != 0)?;
        // A regular file; not `FMODE_CREATED` (host: `F_CREATED_QUERY` is 0
        // on an `O_TMPFILE` fd). Counted as any open (a new inode has no
        // lease to break).
        op.add_mode(FMODE_CAN_ODIRECT);
        if let Some(inode) = d.inode() {
            let fmode = op.file().mode();
            if fmode & (FMODE_READ | FMODE_WRITE) != 0 {
                inode.opens.get(fmode & FMODE_WRITE != 0);
                op.add_mode(FMODE_COUNTED);
            }
        }
        op.set_path(d);
        Ok(())
    }

    /// The VFS operations, as this thread (its credentials and umask).
    pub(super) fn ops(&self) -> VfsOps<'_> {
        VfsOps {
            vfs: &self.vfs,
            cred: &self.cred,
            umask: self.fs.umask.load(Ordering::Relaxed),
        }
    }

    /// `notify_change` on `d`, as this process.
    pub(super) fn setattr(&self, d: &DentryRef, set: &SetAttr) -> Result<Attr, Errno> {
        notify_change(&self.vfs, d, set)
    }

    /// `touch_atime` under the default `relatime` mount option: sets atime
    /// to now when the inode changed since its last access or atime is a
    /// day old; never for an `O_NOATIME` file.
    #[inline]
    pub(super) fn touch_atime(&self, d: &DentryRef, file_flags: i32) {
        if file_flags & O_NOATIME == 0 {
            crate::vfs_ops::inode::touch_atime(&self.vfs, d);
        }
    }
}

impl Process {
    /// Opens the file `fd` refers to anew with `flags`, as
    /// `open("/proc/self/fd/<fd>", flags)` does on Linux: the path is the
    /// fd's own object (an `O_PATH` fd included, and a file unlinked since),
    /// reached without a walk, then checked as any open is (`may_open`:
    /// permission for the access mode, `EISDIR` for writing a directory,
    /// `ELOOP` for a symlink, `ENOTDIR` under `O_DIRECTORY`) and truncated
    /// for `O_TRUNC`. As through the magic link, `O_NOFOLLOW` is `ELOOP`,
    /// `O_CREAT | O_EXCL` is `EEXIST` and `O_CREAT` alone opens the
    /// existing file. Where the fd API and the path differ: `EBADF` if `fd`
    /// is not open (the path is `ENOENT`), `O_TMPFILE` is `EINVAL` (Linux
    /// would make a file in the directory), and `O_PATH | O_NOFOLLOW` gives
    /// the object (Linux gives the magic link itself, which has no
    /// counterpart here).
    ///
    /// This is how a file server holding `O_PATH` handles opens a file for
    /// a request (libfuse's passthrough_ll opens `/proc/self/fd/N`).
    ///
    /// # Errors
    ///
    /// - `EINVAL`: a bad flag combination (as for
    ///   [`openat`](Self::openat)), `O_TMPFILE`, `O_DIRECT` on a directory
    ///   or FIFO;
    /// - `EMFILE`: no fd free below `RLIMIT_NOFILE`;
    /// - `EBADF`: `fd` is not open, or its file has no dentry;
    /// - `EEXIST`: `O_CREAT | O_EXCL` without `O_PATH`;
    /// - `ELOOP`: `O_NOFOLLOW` without `O_PATH`, or the fd is a symlink's
    ///   `O_PATH` fd;
    /// - `EISDIR`, `ENOTDIR`, `EACCES`, `EPERM`, `ENXIO`, `EINTR`: as for
    ///   `openat`, from the checks of the open itself.
    pub fn reopen(&mut self, fd: i32, flags: i32) -> Result<i32, Errno> {
        super::check_open_flags(flags)?;
        if flags & O_TMPFILE == O_TMPFILE {
            return Err(Errno::EINVAL);
        }
        self.open_inner(flags, |p, op| {
            let d = p.files.get(fd).ok_or(Errno::EBADF)?;
            let d = d.dentry().cloned().ok_or(Errno::EBADF)?;
            if flags & O_PATH == 0 {
                if flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
                    return Err(Errno::EEXIST);
                }
                if flags & O_NOFOLLOW != 0 {
                    return Err(Errno::ELOOP);
                }
            }
            // The magic link jumps to the object itself: `O_CREAT` found it
            // existing, so the open goes on as one without it.
            p.task.do_open(d, flags & !(O_CREAT | O_EXCL), false, op)
        })
    }
}

/// How an open was counted for leases ([`Task::count_open`]).
#[derive(Clone, Copy)]
struct Counted<'d> {
    inode: &'d crate::icache::Inode,
    write: bool,
    /// In the file itself (`FastPaths::open_count_lazy`), not the inode.
    lazy: bool,
}

impl Counted<'_> {
    /// Uncounts the open of `file` (a failed open).
    fn undo(self, file: &crate::file_table::File) {
        if self.lazy {
            file.uncount_lazy();
        } else {
            self.inode.opens.put(self.write);
        }
    }
}
