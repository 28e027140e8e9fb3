//! The advisory-lock calls (the syscall halves of Linux's fs/locks.c):
//! `fcntl`'s record-lock commands ([`Process::fcntl_lock`]) and `flock(2)`;
//! the lock tables themselves are [`crate::locks`].

use super::Process;
use crate::errno::Errno;
use crate::file_table::{FMODE_PATH, FMODE_READ, FMODE_WRITE, File};
use crate::icache::Inode;
use crate::locks::{FileLockContext, Flock, LockStats, LockType, OFFSET_MAX, Owner, PosixRequest};
use crate::task_work;
use crate::uapi::*;

/// The inode a lock on `file` goes to. `ENOLCK` for a file with none (one
/// made by [`Process::open_with`], which has no dentry): uvfs's choice,
/// Linux has no such file.
fn inode(file: &File) -> Result<&Inode, Errno> {
    file.dentry().and_then(|d| d.inode()).ok_or(Errno::ENOLCK)
}

/// Who a record lock on `file` belongs to: the open file for the OFD
/// commands (whose `l_pid` must be 0: `EINVAL`), else the fd table
/// `table_owner` names, as Linux's POSIX locks belong to `current->files`.
fn lock_owner(ofd: bool, fl: &Flock, file: &File, table_owner: u64) -> Result<Owner, Errno> {
    if !ofd {
        return Ok(Owner::Files(table_owner));
    }
    if fl.l_pid != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(Owner::File(file.lock_key()))
}

/// The byte range `fl` names on `file` (`flock64_to_posix_lock`), as
/// `start..=end`: `EINVAL` for a bad `l_whence`, a start before 0, or a
/// negative length reaching before 0; `EOVERFLOW` when the start or the end
/// passes `OFFSET_MAX`.
fn range(file: &File, fl: &Flock) -> Result<(i64, i64), Errno> {
    let base = match i32::from(fl.l_whence) {
        SEEK_SET => 0,
        SEEK_CUR => file.pos_unlocked() as i64,
        SEEK_END => {
            let d = file.dentry().ok_or(Errno::ENOLCK)?;
            d.sb().fs.getattr_node(d.node())?.size as i64
        }
        _ => return Err(Errno::EINVAL),
    };
    if fl.l_start > OFFSET_MAX - base {
        return Err(Errno::EOVERFLOW);
    }
    let start = base + fl.l_start;
    if start < 0 {
        return Err(Errno::EINVAL);
    }
    match fl.l_len {
        0 => Ok((start, OFFSET_MAX)),
        len if len > 0 => {
            if len - 1 > OFFSET_MAX - start {
                return Err(Errno::EOVERFLOW);
            }
            Ok((start, start + (len - 1)))
        }
        // Negative: the `-len` bytes before `start`.
        len => {
            if start + len < 0 {
                return Err(Errno::EINVAL);
            }
            Ok((start + len, start - 1))
        }
    }
}

impl Process {
    /// This process's id (its tgid, shared by its threads; a fork gets a
    /// new one). uvfs numbers processes itself, from 1, in creation order;
    /// the numbers are what `F_GETLK` reports in `l_pid`, and have nothing
    /// to do with host pids.
    pub fn getpid(&self) -> i32 {
        self.task.shared.pid
    }

    /// `fcntl(fd, cmd, fl)` for the record-lock commands, whose argument is
    /// a `struct flock` (which [`fcntl`](Self::fcntl)'s integer cannot
    /// carry): `F_GETLK`, `F_SETLK`, `F_SETLKW` (POSIX locks, owned by the
    /// fd table) and `F_OFD_GETLK`, `F_OFD_SETLK`, `F_OFD_SETLKW` (owned by
    /// the open file); `EINVAL` for any other command.
    ///
    /// As on Linux: `EBADF` for a bad or `O_PATH` fd, and for a read lock
    /// on a file not open for reading or a write lock on one not open for
    /// writing; `EINVAL` for a bad `l_type` or `l_whence`, a range starting
    /// before 0, and (`F_OFD_*`) a non-zero `l_pid`; `EOVERFLOW` for a range
    /// past `OFFSET_MAX`; `EAGAIN` for a conflict (`F_SETLK`); `EDEADLK`
    /// when `F_SETLKW` would wait for an owner that waits for this one. The
    /// `GETLK` commands answer in `fl`: `l_type` `F_UNLCK` if nothing
    /// conflicts (the rest untouched), else the first conflicting lock, its
    /// range from `SEEK_SET` (`l_len` 0 for a lock to the end) and its
    /// holder's pid (-1 for an OFD lock). `F_OFD_GETLK` with `F_UNLCK`
    /// reports a lock of this open file overlapping the range (Linux 6.7).
    ///
    /// `F_SETLKW` sleeps until the lock is granted or a deadlock is found,
    /// or until the handle's [`Sleep`](crate::Sleep) hook interrupts it:
    /// `EINTR`, holding nothing (see [`crate::locks`], [`crate::signal`]).
    /// A lock set through an fd that another thread closed meanwhile is
    /// removed again and the call fails with `EBADF`, as on Linux.
    ///
    /// A POSIX lock belongs to the process's fd table: any close of any
    /// fd of the file releases it. An OFD
    /// lock belongs to the open file and goes at its last close. The
    /// semantics, with what differs from Linux, are in `docs/locks.md`.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open or is `O_PATH`; a read lock on a file not
    ///   open for reading, a write lock on one not open for writing; the
    ///   fd was closed while the lock was being set;
    /// - `EINVAL`: an unknown command; a bad `l_type` (for `F_GETLK`,
    ///   `F_UNLCK` too) or `l_whence`; a range starting before 0; a
    ///   non-zero `l_pid` with `F_OFD_*`;
    /// - `EOVERFLOW`: the range's start or end is past `OFFSET_MAX`;
    /// - `EAGAIN`: `F_SETLK`/`F_OFD_SETLK` and another owner's lock
    ///   conflicts;
    /// - `EDEADLK`: `F_SETLKW` would wait for an owner that waits for this
    ///   one;
    /// - `EINTR`: `F_SETLKW`/`F_OFD_SETLKW` interrupted by the sleep hook;
    /// - `ENOLCK`: the file has no inode (one made by
    ///   [`open_with`](Self::open_with): uvfs's answer, Linux has no such
    ///   file), or the lock table could not be allocated.
    ///
    /// Advisory locks (`fcntl` record and OFD locks, `flock`):
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// use uvfs::Flock;
    /// let fd = p.open("/f", O_RDWR | O_CREAT, 0o644)?;
    /// let mut whole = Flock { l_type: F_WRLCK as i16, l_whence: 0, l_start: 0, l_len: 0, l_pid: 0
    /// };
    /// p.fcntl_lock(fd, F_SETLK, &mut whole)?;
    /// // Another process sees the lock and who holds it.
    /// let mut q = Process::new(&vfs)?;
    /// let qfd = q.open("/f", O_RDWR, 0)?;
    /// let mut probe = Flock { l_type: F_RDLCK as i16, l_whence: 0, l_start: 0, l_len: 1, l_pid: 0
    /// };
    /// q.fcntl_lock(qfd, F_GETLK, &mut probe)?;
    /// assert_eq!((probe.l_type, probe.l_pid), (F_WRLCK as i16, p.getpid()));
    /// assert_eq!(q.fcntl_lock(qfd, F_SETLK, &mut probe), Err(Errno::EAGAIN));
    /// # Ok(())
    /// # }
    /// ```
    pub fn fcntl_lock(&mut self, fd: i32, cmd: i32, fl: &mut Flock) -> Result<i32, Errno> {
        let _call = task_work::enter();
        let table_owner = self.files.lock_owner();
        let pid = self.task.shared.pid;
        let (file, table) = self.files.fdget_pinned(fd, 0).ok_or(Errno::EBADF)?;
        if file.mode() & FMODE_PATH != 0 {
            return Err(Errno::EBADF);
        }
        let inode = inode(&file)?;
        match cmd {
            F_GETLK | F_OFD_GETLK => {
                if cmd == F_GETLK && !matches!(i32::from(fl.l_type), F_RDLCK | F_WRLCK) {
                    return Err(Errno::EINVAL);
                }
                let (start, end) = range(&file, fl)?;
                let ty = LockType::from_raw(fl.l_type)?;
                let req = PosixRequest {
                    owner: lock_owner(cmd == F_OFD_GETLK, fl, &file, table_owner)?,
                    pid,
                    start,
                    end,
                    ty,
                };
                match inode.lock_context().and_then(|c| c.test(&req)) {
                    None => fl.l_type = F_UNLCK as i16,
                    Some(found) => {
                        fl.l_type = found.ty.raw();
                        fl.l_whence = SEEK_SET as i16;
                        fl.l_start = found.start;
                        fl.l_len = if found.end == OFFSET_MAX {
                            0
                        } else {
                            found.end - found.start + 1
                        };
                        fl.l_pid = found.pid;
                    }
                }
                Ok(0)
            }
            F_SETLK | F_SETLKW | F_OFD_SETLK | F_OFD_SETLKW => {
                let (start, end) = range(&file, fl)?;
                let ty = LockType::from_raw(fl.l_type)?;
                let need = match ty {
                    LockType::Read => FMODE_READ,
                    LockType::Write => FMODE_WRITE,
                    LockType::Unlock => 0,
                };
                if file.mode() & need != need {
                    return Err(Errno::EBADF);
                }
                let ofd = matches!(cmd, F_OFD_SETLK | F_OFD_SETLKW);
                let req = PosixRequest {
                    owner: lock_owner(ofd, fl, &file, table_owner)?,
                    pid,
                    start,
                    end,
                    ty,
                };
                let ctx: &FileLockContext = inode.lock_context_or_create()?;
                ctx.posix_lock_wait(
                    &req,
                    matches!(cmd, F_SETLKW | F_OFD_SETLKW),
                    self.task.sleep_hook(),
                )?;
                // A close of `fd` by another thread of the table may have
                // run its lock removal before this lock existed: if the fd
                // no longer holds the file, undo (see `remove_posix`).
                if !ofd && ty != LockType::Unlock && !table.holds(fd, &file) {
                    ctx.remove_posix(req.owner);
                    return Err(Errno::EBADF);
                }
                Ok(0)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// `flock(fd, op)`: `LOCK_SH`, `LOCK_EX` or `LOCK_UN`, with `LOCK_NB`
    /// not to wait. The lock belongs to the open file (shared by its dups
    /// and by forks), converts in place of an earlier one (removing it
    /// first, so a conversion that fails with `LOCK_NB` has dropped the old
    /// lock, as on Linux), and goes at the file's last close. Independent
    /// of record locks.
    ///
    /// As on Linux: an `op` with `LOCK_MAND` is ignored (0, the fd not even
    /// looked at); `EINVAL` for any other operation; `EBADF` for a bad or
    /// `O_PATH` fd, or a lock on a file open neither for reading nor for
    /// writing; `EWOULDBLOCK` on a conflict with `LOCK_NB`. Without it the
    /// call sleeps until the lock is granted, or fails with `EINTR` when
    /// the handle's [`Sleep`](crate::Sleep) hook interrupts it.
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// let a = p.open("/f", O_RDWR | O_CREAT, 0o644)?;
    /// let b = p.open("/f", O_RDONLY, 0)?; // another open file
    /// p.flock(a, LOCK_EX)?;
    /// // Owned by the open file, not the process: `b` conflicts with `a`.
    /// assert_eq!(p.flock(b, LOCK_SH | LOCK_NB), Err(Errno::EWOULDBLOCK));
    /// let dup = p.dup(a)?;
    /// p.flock(dup, LOCK_UN)?; // a dup shares (and here drops) `a`'s lock
    /// p.flock(b, LOCK_SH | LOCK_NB)?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// - `EINVAL`: an operation other than the three (before `fd`);
    /// - `EBADF`: `fd` is not open or is `O_PATH`; locking a file open
    ///   neither for reading nor for writing;
    /// - `EWOULDBLOCK`: `LOCK_NB` and another open file's lock conflicts;
    /// - `EINTR`: a wait interrupted by the sleep hook;
    /// - `ENOLCK`: as for [`fcntl_lock`](Self::fcntl_lock).
    pub fn flock(&mut self, fd: i32, op: i32) -> Result<(), Errno> {
        let _call = task_work::enter();
        if op & LOCK_MAND != 0 {
            return Ok(());
        }
        let ty = match op & !LOCK_NB {
            LOCK_SH => LockType::Read,
            LOCK_EX => LockType::Write,
            LOCK_UN => LockType::Unlock,
            _ => return Err(Errno::EINVAL),
        };
        let file = self.files.fdget(fd, FMODE_PATH).ok_or(Errno::EBADF)?;
        if ty != LockType::Unlock && file.mode() & (FMODE_READ | FMODE_WRITE) == 0 {
            return Err(Errno::EBADF);
        }
        let inode = inode(&file)?;
        let ctx = match ty {
            LockType::Unlock => match inode.lock_context() {
                Some(c) => c,
                None => return Ok(()),
            },
            _ => inode.lock_context_or_create()?,
        };
        ctx.flock_wait(
            file.lock_key(),
            ty,
            op & LOCK_NB == 0,
            self.task.sleep_hook(),
        )
    }

    /// What the lock table of the file at `fd` holds (all owners): for
    /// tests and consistency checks. Not a Linux call.
    ///
    /// # Errors
    ///
    /// `EBADF`: `fd` is not open.
    pub fn lock_stats(&mut self, fd: i32) -> Result<LockStats, Errno> {
        let file = self.files.get(fd).ok_or(Errno::EBADF)?;
        Ok(file
            .dentry()
            .and_then(|d| d.inode())
            .and_then(|i| i.lock_context())
            .map(FileLockContext::stats)
            .unwrap_or_default())
    }

    /// The opens of the inode of the file at `fd` that leases are judged
    /// by: `(writers, readers)` (Linux's `i_writecount`, `i_readcount`;
    /// regular files only), those counted in the inode and those counted
    /// in their files (`FastPaths::open_count_lazy`). For tests. `EBADF`
    /// if `fd` is not open.
    pub fn open_counts(&mut self, fd: i32) -> Result<(u32, u32), Errno> {
        let file = self.files.get(fd).ok_or(Errno::EBADF)?;
        let pool = self.task.vfs.file_pool();
        Ok(file.dentry().and_then(|d| d.inode()).map_or((0, 0), |i| {
            let (w, r) = i.opens.load();
            let (lw, lr) = pool.lazy_opens(std::ptr::from_ref(i) as usize);
            (w + lw, r + lr)
        }))
    }
}
