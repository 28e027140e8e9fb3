//! poll(2) and ioctl(FIONREAD) (Linux's `do_sys_poll`/`do_pollfd` in
//! `fs/select.c`, and `FIONREAD` in `do_vfs_ioctl` and `pipe_ioctl`).
//!
//! Each entry's fd is looked up as `fdget` does: a negative fd is skipped
//! (`revents` 0), a closed fd or an `O_PATH` fd is `POLLNVAL`. Otherwise
//! the file's readiness (see [`crate::select`]) is masked with the events
//! asked for plus `POLLERR` and `POLLHUP`, which are always reported. The
//! result is the number of entries with a non-zero `revents`. A blocking
//! poll registers its [`Waiter`] on every FIFO of the set in its first
//! scan, sleeps until one changes or the time runs out, and scans again;
//! after the time runs out it scans once more, as Linux does.

use super::Process;
use crate::errno::Errno;
use crate::file_table::{FMODE_PATH, File};
use crate::fs::{S_IFMT, S_IFREG};
use crate::pipe::FifoFile;
use crate::select::{DEFAULT_POLLMASK, PollFd, Waiter};
use crate::task_work;
use crate::uapi::{POLLERR, POLLHUP, POLLNVAL};
use crate::vfs_ops::inode::attr_of;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A file's readiness (`vfs_poll`), registering `waiter` where the file
/// can change.
fn file_poll(file: &File, waiter: Option<&Arc<Waiter>>) -> i16 {
    match FifoFile::of(file) {
        Some(fifo) => fifo.poll(waiter),
        None => DEFAULT_POLLMASK,
    }
}

impl Process {
    /// `poll(fds, nfds, timeout)`: fills each entry's `revents` and
    /// returns how many are non-zero. `timeout_ms` negative waits without
    /// limit, 0 not at all. `EINVAL` when there are more entries than
    /// RLIMIT_NOFILE allows. The wait sleeps through the handle's
    /// [`Sleep`](crate::Sleep) hook: interrupted, the call fails with
    /// `EINTR` (with `SA_RESTART` too, as Linux's poll). The LD_PRELOAD
    /// shim waits in the kernel's poll instead, with
    /// [`poll_register`](Self::poll_register).
    ///
    /// Each entry is judged as Linux's `do_pollfd` does: a negative fd is
    /// skipped, a closed or `O_PATH` fd gives `POLLNVAL` (not an error),
    /// regular files and directories are always ready for reading and
    /// writing, and FIFOs as `docs/semantics.md` ("poll, FIONREAD")
    /// describes. There is no `ppoll` signal mask (uvfs has no signals of
    /// its own).
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{FastPaths, PollFd, Process, Vfs};
    /// # fn main() -> Result<(), uvfs::Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// p.mkfifo("/fifo", 0o644)?;
    /// let r = p.open("/fifo", O_RDONLY | O_NONBLOCK, 0)?;
    /// let w = p.open("/fifo", O_WRONLY, 0)?;
    /// let mut fds = [PollFd { fd: r, events: POLLIN, revents: 0 }];
    /// assert_eq!(p.poll(&mut fds, 0)?, 0);
    /// p.write(w, b"x")?;
    /// assert_eq!(p.poll(&mut fds, -1)?, 1);
    /// assert_eq!(fds[0].revents, POLLIN);
    /// p.close(w)?;
    /// p.read(r, &mut [0u8; 1])?;
    /// assert_eq!(p.poll(&mut fds, -1)?, 1);
    /// assert_eq!(fds[0].revents, POLLHUP);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// - `EINVAL`: more entries than the soft `RLIMIT_NOFILE`;
    /// - `EINTR`: the wait was interrupted by the sleep hook.
    pub fn poll(&mut self, fds: &mut [PollFd], timeout_ms: i32) -> Result<usize, Errno> {
        let _call = task_work::enter();
        self.poll_nfds_ok(fds.len())?;
        if timeout_ms == 0 {
            return Ok(self.poll_scan(fds, None));
        }
        let deadline = u64::try_from(timeout_ms)
            .ok()
            .and_then(|ms| Instant::now().checked_add(Duration::from_millis(ms)));
        let hook = self.task.sleep.0.clone();
        let waiter = match &hook {
            Some(h) => h.waiter(),
            None => Waiter::new(),
        };
        loop {
            let n = self.poll_scan(fds, Some(&waiter));
            if n > 0 {
                return Ok(n);
            }
            let woken = match &hook {
                None => waiter.wait_until(deadline),
                // Interrupted: EINTR, whatever SA_RESTART says (Linux's
                // poll never restarts after a handler).
                Some(h) => h.sleep_until(&waiter, deadline).map_err(|_| Errno::EINTR)?,
            };
            if !woken {
                return Ok(self.poll_scan(fds, None));
            }
        }
    }

    /// One scan of a poll without waiting: fills each entry's `revents`
    /// as [`poll`](Self::poll) does and returns how many are non-zero,
    /// after registering `waiter` on every file of the set that can
    /// change, so that any later change of one of them wakes it. For a
    /// caller that waits by other means (the LD_PRELOAD shim waits in the
    /// kernel's poll for an eventfd that `waiter`'s callback writes).
    pub fn poll_register(&mut self, fds: &mut [PollFd], waiter: &Arc<Waiter>) -> usize {
        let _call = task_work::enter();
        self.poll_scan(fds, Some(waiter))
    }

    /// Whether `n` entries are allowed (`EINVAL` past RLIMIT_NOFILE).
    fn poll_nfds_ok(&self, n: usize) -> Result<(), Errno> {
        if n as u64 > self.getrlimit_nofile().0 {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    fn poll_scan(&mut self, fds: &mut [PollFd], waiter: Option<&Arc<Waiter>>) -> usize {
        let mut n = 0;
        for e in fds.iter_mut() {
            e.revents = if e.fd < 0 {
                0
            } else {
                match self.files.fdget(e.fd, FMODE_PATH) {
                    None => POLLNVAL,
                    Some(f) => file_poll(&f, waiter) & (e.events | POLLERR | POLLHUP),
                }
            };
            if e.revents != 0 {
                n += 1;
            }
        }
        n
    }

    /// `ioctl(fd, FIONREAD, &n)`: the bytes a read would find. A FIFO: the
    /// bytes its pipe holds. A regular file: its size less the file
    /// position, truncated to an `int` as Linux stores it (negative past
    /// the end). Anything else (a directory): `ENOTTY`. `EBADF` for a
    /// closed or `O_PATH` fd.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open, or is `O_PATH`;
    /// - `ENOTTY`: neither a FIFO nor a regular file.
    pub fn ioctl_fionread(&mut self, fd: i32) -> Result<i32, Errno> {
        let _call = task_work::enter();
        let file = self.files.fdget(fd, FMODE_PATH).ok_or(Errno::EBADF)?;
        if let Some(fifo) = FifoFile::of(&file) {
            return Ok(i32::try_from(fifo.nread()).unwrap_or(i32::MAX));
        }
        let Some(d) = file.dentry() else {
            return Err(Errno::ENOTTY);
        };
        let a = attr_of(d)?;
        if a.mode & S_IFMT != S_IFREG {
            return Err(Errno::ENOTTY);
        }
        // `put_user` of a 64-bit difference into an `int`: the low bits.
        Ok((a.size as i64).wrapping_sub(file.pos_unlocked() as i64) as i32)
    }
}
