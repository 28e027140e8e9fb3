//! A regular file's data moved into a kernel memfd (`memfd_create(2)`,
//! Linux's `mm/memfd.c` over shmem), so that a program can `mmap` it:
//! the file's first [`mmap_file`](crate::fs::FileSystem::mmap_file)
//! promotes it, and from then on every read, write, truncate,
//! `fallocate`, hole punch and `SEEK_DATA`/`SEEK_HOLE` on the inode is a
//! system call on the memfd (the kernel's own shmem, whose behaviour the
//! page map of [`pages`](super::pages) reproduces), under the inode's lock.
//! Size and blocks come from `fstat` of the memfd, so pages a program
//! dirties through a mapping count too.
//!
//! Space accounting: the file holds `charged` pages of the tmpfs's
//! counter, brought level with the memfd's blocks after each operation
//! ([`MemFile::settle`]; a write to a file system without a size limit
//! leaves that to the next `stat`). A write or `fallocate` through uvfs that may pass
//! the size limit goes page by page and stops at it (a short write,
//! `ENOSPC`), as Linux's tmpfs; a page a program faults in through a
//! shared mapping is counted at the file's next operation and is not
//! refused (Linux's tmpfs would `SIGBUS` the fault).
//!
//! **Files in a directory instead of memfds** ([`FileStore::Dir`]): a
//! tmpfs built with [`Tmpfs::with_store`] creates each file's kernel file
//! with `openat(dir, ".", O_TMPFILE)` in a directory its user supplies
//! (`uvfs mount` gives a private, detached kernel tmpfs mounted with
//! `size=`), and every regular file's data moves there at its first write,
//! `fallocate` or `mmap_file`. That directory's file system then holds
//! and limits the space: uvfs counts nothing for those files and lets the
//! kernel's answer stand (a short write, `ENOSPC`, a `SIGBUS` on a mapped
//! page that does not fit), so writes that never pass through uvfs (FUSE
//! passthrough, a program's mapping) are held to the same limit. The few
//! pages uvfs still holds itself (symlink targets of 128 bytes or more)
//! are mirrored by allocated pages of one *ballast* file in the same
//! directory, so the directory's limit counts them too and `statfs` is
//! the directory's `fstatfs`.
//!
//! All kernel calls are raw `syscall(2)`s, never libc's wrappers, so an
//! `LD_PRELOAD` shim around the library does not see them. The memfd sits
//! at a high fd number (`O_CLOEXEC`), away from the numbers the kernel
//! hands out to the program.

use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::{PAGE_SIZE, Tmpfs};
use crate::errno::Errno;
use crate::fs::{FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, Seek};
use crate::primitive::sync::{UnmodelledMutex, lock_unmodelled};

/// Kernel fds below this are kept in a bitmap (lock-free to ask about:
/// an `LD_PRELOAD` shim asks on every close of a high fd, from any thread,
/// a `fork` possibly in between); the rare ones above it in a locked list.
const BITMAP_FDS: i32 = 1 << 16;

/// The kernel fds this process's memfds sit at, one bit each.
static FD_BITS: [AtomicU64; BITMAP_FDS as usize / 64] =
    [const { AtomicU64::new(0) }; BITMAP_FDS as usize / 64];
/// Those at `BITMAP_FDS` or above, sorted, and how many there are.
/// Process-wide kernel state, not part of a file system's concurrency,
/// hence std's lock.
static FD_LIST: std::sync::Mutex<Vec<RawFd>> = std::sync::Mutex::new(Vec::new());
static FD_LIST_LEN: AtomicUsize = AtomicUsize::new(0);

fn fd_list() -> std::sync::MutexGuard<'static, Vec<RawFd>> {
    FD_LIST.lock().unwrap_or_else(|e| e.into_inner())
}

fn fd_bit(fd: RawFd) -> (&'static AtomicU64, u64) {
    (&FD_BITS[fd as usize / 64], 1 << (fd % 64))
}

fn register(fd: RawFd) {
    if (0..BITMAP_FDS).contains(&fd) {
        let (w, b) = fd_bit(fd);
        w.fetch_or(b, Ordering::Release);
        return;
    }
    let mut v = fd_list();
    if let Err(i) = v.binary_search(&fd) {
        v.insert(i, fd);
    }
    FD_LIST_LEN.store(v.len(), Ordering::Release);
}

fn unregister(fd: RawFd) {
    if (0..BITMAP_FDS).contains(&fd) {
        let (w, b) = fd_bit(fd);
        w.fetch_and(!b, Ordering::Release);
        return;
    }
    let mut v = fd_list();
    if let Ok(i) = v.binary_search(&fd) {
        v.remove(i);
    }
    FD_LIST_LEN.store(v.len(), Ordering::Release);
}

/// Whether kernel fd `fd` is one the library holds for a file's data (the
/// memfd of a file that was mapped, see [`FileSystem::mmap_file`](
/// crate::fs::FileSystem::mmap_file)). Such fds are close-on-exec and at
/// high numbers; the program never opened them, and closing or replacing
/// one would lose the file's data, so an interposer refuses to (`EBADF`,
/// as for an fd the program does not have). One atomic load below 65536.
pub fn holds_kernel_fd(fd: i32) -> bool {
    if fd < 0 {
        return false;
    }
    if fd < BITMAP_FDS {
        let (w, b) = fd_bit(fd);
        return w.load(Ordering::Acquire) & b != 0;
    }
    FD_LIST_LEN.load(Ordering::Acquire) != 0 && fd_list().binary_search(&fd).is_ok()
}

/// The kernel fds in `[first, last]` that [`holds_kernel_fd`] answers
/// true for, in ascending order.
pub fn kernel_fds_in(first: i32, last: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let (first, last) = (first.max(0), last);
    if first > last {
        return out;
    }
    let top = last.min(BITMAP_FDS - 1);
    if first <= top {
        let words = first as usize / 64..=top as usize / 64;
        for (wi, word) in FD_BITS
            .iter()
            .enumerate()
            .take(*words.end() + 1)
            .skip(*words.start())
        {
            let mut bits = word.load(Ordering::Acquire);
            while bits != 0 {
                let fd = (wi * 64) as i32 + bits.trailing_zeros() as i32;
                bits &= bits - 1;
                if (first..=top).contains(&fd) {
                    out.push(fd);
                }
            }
        }
    }
    if last >= BITMAP_FDS && FD_LIST_LEN.load(Ordering::Acquire) != 0 {
        out.extend(
            fd_list()
                .iter()
                .copied()
                .filter(|&f| (first..=last).contains(&f)),
        );
    }
    out
}

/// A regular file whose data lives in a memfd.
pub(super) struct MemFile {
    /// Always `Some` until dropped.
    fd: Option<OwnedFd>,
    /// Pages counted against the tmpfs's space limit for this file.
    charged: AtomicU64,
}

/// `Ok(r)` for a non-negative syscall result, else the thread's errno.
fn check(r: libc::c_long) -> Result<i64, Errno> {
    if r < 0 {
        Err(Errno::last_os_error())
    } else {
        Ok(r)
    }
}

/// As [`check`], retrying on `EINTR`.
fn retry(mut f: impl FnMut() -> libc::c_long) -> Result<i64, Errno> {
    loop {
        match check(f()) {
            Err(Errno::EINTR) => continue,
            r => return r,
        }
    }
}

/// Closes `fd` with a raw syscall (not libc's `close`, which a shim may
/// interpose).
fn close_raw(fd: OwnedFd) {
    let n = fd.into_raw_fd();
    // SAFETY: `n` was owned by `fd` and is closed exactly once; no pointers.
    unsafe { libc::syscall(libc::SYS_close, n) };
}

/// The lowest number [`move_high`] moves a kernel fd to: three quarters
/// of `RLIMIT_NOFILE`'s soft limit, at most 4096; `None` where the limit
/// cannot be read or is below 16 (the fd stays where it is).
fn high_floor() -> Option<libc::c_long> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable `struct rlimit`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_prlimit64,
            0,
            libc::RLIMIT_NOFILE,
            std::ptr::null::<libc::rlimit>(),
            &mut lim as *mut libc::rlimit,
        )
    };
    if r < 0 || lim.rlim_cur < 16 {
        return None;
    }
    Some((lim.rlim_cur / 4 * 3).min(4096) as libc::c_long)
}

/// Grows this process's fd table now to hold the numbers the memfds
/// take: an fd of `/` (`O_PATH`) moved where `move_high` moves every
/// memfd, then closed. For a server about to start its threads: Linux
/// grows a table that several threads share only after an RCU grace
/// period (the old table may still be read locklessly), which cost the
/// first memfd of a tree's server 5 to 16 ms; a process with one thread
/// grows it at once. Nothing happens where `/` cannot be opened or the
/// floor is unknown (the table then grows at the first memfd, as before).
pub fn reserve_high_fds() {
    // SAFETY: a static C string; no other pointers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            c"/".as_ptr(),
            libc::O_PATH | libc::O_CLOEXEC,
        )
    };
    if let Ok(n) = check(r) {
        // SAFETY: openat returned a new fd, owned by nobody else.
        close_raw(move_high(unsafe { OwnedFd::from_raw_fd(n as RawFd) }));
    }
}

/// Moves `fd` to a high number (`F_DUPFD_CLOEXEC` from three quarters of
/// `RLIMIT_NOFILE`'s soft limit, at most 4096) so it never takes a low
/// number the program expects; `fd` itself if the kernel refuses.
fn move_high(fd: OwnedFd) -> OwnedFd {
    let Some(min) = high_floor() else {
        return fd;
    };
    // SAFETY: fcntl on an fd this function owns; no pointers.
    let r = unsafe { libc::syscall(libc::SYS_fcntl, fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, min) };
    match check(r) {
        Ok(n) => {
            close_raw(fd);
            // SAFETY: `F_DUPFD_CLOEXEC` returned a new fd, owned by nobody
            // else.
            unsafe { OwnedFd::from_raw_fd(n as RawFd) }
        }
        Err(_) => fd,
    }
}

impl MemFile {
    /// An empty memfd (or a file in `fs`'s [`FileStore::Dir`]), to be
    /// filled by the caller, counted as holding `charged` pages (the pages
    /// it is to take over). With a directory store those pages are given
    /// back at once: the directory's file system counts them from here on.
    pub(super) fn new(fs: &Tmpfs, charged: u64) -> Result<MemFile, Errno> {
        let f = match &fs.store {
            Some(s) => MemFile::in_dir(s.raw_dir())?,
            None => MemFile::memfd()?,
        };
        if fs.store.is_some() {
            fs.release_pages(charged);
        } else {
            f.charged.store(charged, Ordering::Relaxed);
        }
        Ok(f)
    }

    /// A new memfd, charged nothing.
    fn memfd() -> Result<MemFile, Errno> {
        // SAFETY: a static C string; no other pointers.
        let r =
            unsafe { libc::syscall(libc::SYS_memfd_create, c"uvfs".as_ptr(), libc::MFD_CLOEXEC) };
        // SAFETY: memfd_create returned a new fd, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(check(r)? as RawFd) };
        Ok(MemFile::adopt(fd))
    }

    /// A new unnamed file (`O_TMPFILE`, mode 0600) in directory `dir`,
    /// charged nothing.
    fn in_dir(dir: RawFd) -> Result<MemFile, Errno> {
        // SAFETY: a static C string; no other pointers.
        let r = retry(|| unsafe {
            libc::syscall(
                libc::SYS_openat,
                dir,
                c".".as_ptr(),
                libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
                0o600,
            )
        })?;
        // SAFETY: openat returned a new fd, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(r as RawFd) };
        Ok(MemFile::adopt(fd))
    }

    /// Takes a new kernel file: moved high, registered.
    fn adopt(fd: OwnedFd) -> MemFile {
        let fd = move_high(fd);
        register(fd.as_raw_fd());
        MemFile {
            fd: Some(fd),
            charged: AtomicU64::new(0),
        }
    }

    /// Allocates the page at `pos` without writing it (`fallocate` with
    /// `KEEP_SIZE`): unwritten, a hole for `SEEK_DATA`; a second call on
    /// the same page makes it zeroed data, as on Linux.
    pub(super) fn preallocate(&self, pos: u64) -> Result<(), Errno> {
        let keep = libc::c_long::from(FALLOC_FL_KEEP_SIZE as i32);
        self.fallocate(keep, pos, PAGE_SIZE)
    }

    fn raw_fd(&self) -> RawFd {
        self.fd.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    fn raw(&self) -> libc::c_long {
        libc::c_long::from(self.raw_fd())
    }

    pub(super) fn pwrite_all(&self, mut data: &[u8], mut off: u64) -> Result<(), Errno> {
        while !data.is_empty() {
            let n = self.pwrite(data, off)?;
            data = &data[n..];
            off += n as u64;
        }
        Ok(())
    }

    /// Writes as much of `data` at `off` as the kernel takes: a short
    /// count when it stops part way, its error when at once.
    fn pwrite_short(&self, data: &[u8], off: u64) -> Result<usize, Errno> {
        let mut done = 0;
        while done < data.len() {
            match self.pwrite(&data[done..], off + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(done)
    }

    fn pwrite(&self, data: &[u8], off: u64) -> Result<usize, Errno> {
        // SAFETY: `data` is valid for reads of its length.
        retry(|| unsafe {
            libc::syscall(
                libc::SYS_pwrite64,
                self.raw(),
                data.as_ptr(),
                data.len(),
                off as libc::c_long,
            )
        })
        .map(|n| n as usize)
    }

    fn fallocate(&self, mode: libc::c_long, off: u64, len: u64) -> Result<(), Errno> {
        // SAFETY: no pointers.
        retry(|| unsafe {
            libc::syscall(
                libc::SYS_fallocate,
                self.raw(),
                mode,
                off as libc::c_long,
                len as libc::c_long,
            )
        })
        .map(drop)
    }

    pub(super) fn ftruncate(&self, size: u64) -> Result<(), Errno> {
        // SAFETY: no pointers.
        retry(|| unsafe { libc::syscall(libc::SYS_ftruncate, self.raw(), size as libc::c_long) })
            .map(drop)
    }

    /// The memfd's size and allocated pages.
    fn size_pages(&self) -> (u64, u64) {
        // SAFETY: an all-zero `struct stat` is a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a valid, writable `struct stat`.
        let r = unsafe { libc::syscall(libc::SYS_fstat, self.raw(), &mut st as *mut libc::stat) };
        if r < 0 {
            // Only a closed fd fails; report what is charged.
            return (0, self.charged.load(Ordering::Relaxed));
        }
        (
            st.st_size as u64,
            (st.st_blocks as u64).div_ceil(PAGE_SIZE / 512),
        )
    }

    /// Brings the pages charged level with the pages the memfd holds;
    /// returns its size and pages. (With a directory store nothing is
    /// charged: the directory's file system counts.)
    pub(super) fn settle(&self, fs: &Tmpfs) -> (u64, u64) {
        let (size, pages) = self.size_pages();
        if fs.store.is_some() {
            return (size, pages);
        }
        let old = self.charged.swap(pages, Ordering::Relaxed);
        if pages > old {
            fs.charge_pages(pages - old);
        } else {
            fs.release_pages(old - pages);
        }
        (size, pages)
    }

    /// Pages charged against the space limit.
    pub(super) fn pages_held(&self) -> u64 {
        self.charged.load(Ordering::Relaxed)
    }

    /// The file's size and 512-byte blocks, charging pages a mapping added.
    pub(super) fn size_blocks(&self, fs: &Tmpfs) -> (u64, u64) {
        let (size, pages) = self.settle(fs);
        (size, pages * (PAGE_SIZE / 512))
    }

    /// read(2) at `off`: as many bytes as the file has there.
    pub(super) fn read(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        if off > i64::MAX as u64 {
            return Ok(0);
        }
        let mut done = 0;
        while done < buf.len() {
            let rest = &mut buf[done..];
            // SAFETY: `rest` is valid for writes of its length.
            let n = retry(|| unsafe {
                libc::syscall(
                    libc::SYS_pread64,
                    self.raw(),
                    rest.as_mut_ptr(),
                    rest.len(),
                    (off + done as u64) as libc::c_long,
                )
            })? as usize;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }

    /// write(2) at `off` (the caller clipped `data` below the largest file
    /// size): a short count when the space limit is reached part way,
    /// `ENOSPC` when at once.
    pub(super) fn write(&self, fs: &Tmpfs, off: u64, data: &[u8]) -> Result<usize, Errno> {
        let first = off / PAGE_SIZE;
        let span = (off + data.len() as u64).div_ceil(PAGE_SIZE) - first;
        if fs.max_pages.is_none() {
            // No limit here: nothing to check, and the pages are counted
            // at the next `stat` (or eviction), which saves an `fstat` per
            // write. With a directory store the kernel's file system
            // limits: its short count or `ENOSPC` is the answer.
            return self.pwrite_short(data, off);
        }
        if fs.reserve_pages(span) {
            // Room for every page the write could add: one call.
            let r = self.pwrite_all(data, off);
            fs.release_pages(span);
            self.settle(fs);
            return r.map(|()| data.len());
        }
        // At the limit: page by page. Each page is allocated first
        // (`fallocate` with `KEEP_SIZE`, which leaves a written page as it
        // is and the size alone); a page that was new is charged, or
        // punched out again when it does not fit, and the write stops
        // there.
        self.settle(fs);
        let keep = libc::c_long::from(FALLOC_FL_KEEP_SIZE as i32);
        let punch = libc::c_long::from((FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) as i32);
        let mut done = 0usize;
        while done < data.len() {
            let pos = off + done as u64;
            let page = pos - pos % PAGE_SIZE;
            let chunk = (PAGE_SIZE - pos % PAGE_SIZE).min((data.len() - done) as u64) as usize;
            let (_, pages0) = self.size_pages();
            self.fallocate(keep, page, PAGE_SIZE)?;
            let (_, pages1) = self.size_pages();
            if pages1 > pages0 {
                if !fs.reserve_pages(pages1 - pages0) {
                    self.fallocate(punch, page, PAGE_SIZE)?;
                    break;
                }
                self.charged.fetch_add(pages1 - pages0, Ordering::Relaxed);
            }
            self.pwrite_all(&data[done..done + chunk], pos)?;
            done += chunk;
        }
        self.settle(fs);
        if done == 0 {
            return Err(Errno::ENOSPC);
        }
        Ok(done)
    }

    /// Sets the size, freeing pages past it; whether mtime and ctime are
    /// to be stamped (as [`Tmpfs::set_size`]).
    pub(super) fn set_size(&self, fs: &Tmpfs, size: u64) -> Result<bool, Errno> {
        let (old, pages) = self.size_pages();
        let truncates = size <= old && pages != 0;
        self.ftruncate(size)?;
        self.settle(fs);
        Ok(old != size || truncates)
    }

    /// Punches `[off, end)`.
    pub(super) fn punch(&self, fs: &Tmpfs, off: u64, end: u64) -> Result<(), Errno> {
        let mode = libc::c_long::from((FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) as i32);
        let r = self.fallocate(mode, off, end - off);
        self.settle(fs);
        r
    }

    /// Allocates `[off, end)` (`keep`: without extending the size); the
    /// caller has checked the mode and the range. `ENOSPC` with nothing
    /// new left allocated when the pages do not fit.
    pub(super) fn allocate(&self, fs: &Tmpfs, keep: bool, off: u64, end: u64) -> Result<(), Errno> {
        let (first, last) = (off / PAGE_SIZE, end.div_ceil(PAGE_SIZE));
        let span = last - first;
        let keep_mode = libc::c_long::from(FALLOC_FL_KEEP_SIZE as i32);
        let mode = if keep { keep_mode } else { 0 };
        if fs.store.is_some() {
            // The directory's file system decides, and undoes what it
            // allocated when the range does not fit (as shmem does).
            return self.fallocate(mode, off, end - off);
        }
        if fs.reserve_pages(span) {
            let r = self.fallocate(mode, off, end - off);
            fs.release_pages(span);
            self.settle(fs);
            return r;
        }
        // At the limit: page by page, undone if one does not fit.
        self.settle(fs);
        let mut new = Vec::new();
        for idx in first..last {
            let (_, pages0) = self.size_pages();
            self.fallocate(keep_mode, idx * PAGE_SIZE, PAGE_SIZE)?;
            let (_, pages1) = self.size_pages();
            if pages1 > pages0 {
                if !fs.reserve_pages(pages1 - pages0) {
                    let punch =
                        libc::c_long::from((FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) as i32);
                    new.push(idx);
                    for &i in &new {
                        self.fallocate(punch, i * PAGE_SIZE, PAGE_SIZE)?;
                    }
                    self.settle(fs);
                    return Err(Errno::ENOSPC);
                }
                self.charged.fetch_add(pages1 - pages0, Ordering::Relaxed);
                new.push(idx);
            }
        }
        if !keep && end > self.size_pages().0 {
            self.ftruncate(end)?;
        }
        self.settle(fs);
        Ok(())
    }

    /// `lseek` with `SEEK_DATA` / `SEEK_HOLE`: the kernel's answer.
    pub(super) fn seek(&self, off: u64, whence: Seek) -> Result<u64, Errno> {
        if off > i64::MAX as u64 {
            return Err(Errno::ENXIO);
        }
        let w = if whence == Seek::Data {
            libc::SEEK_DATA
        } else {
            libc::SEEK_HOLE
        };
        // SAFETY: no pointers.
        let r = unsafe { libc::syscall(libc::SYS_lseek, self.raw(), off as libc::c_long, w) };
        // Linux's `i64::MIN` answer (see `seek_pages`) is no error.
        if r == libc::c_long::MIN {
            return Ok(r as u64);
        }
        check(r).map(|n| n as u64)
    }

    /// A new kernel file on the memfd, opened with access mode `accmode`
    /// (`O_RDONLY`, `O_WRONLY` or `O_RDWR`), close-on-exec and at a high
    /// number: what a program maps.
    pub(super) fn reopen(&self, accmode: i32) -> Result<OwnedFd, Errno> {
        let path = format!("/proc/self/fd/{}\0", self.raw_fd());
        // SAFETY: `path` is NUL-terminated and alive across the call.
        let r = retry(|| unsafe {
            libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                path.as_ptr(),
                accmode | libc::O_CLOEXEC,
                0,
            )
        });
        let fd = match r {
            // SAFETY: openat returned a new fd, owned by nobody else.
            Ok(n) => unsafe { OwnedFd::from_raw_fd(n as RawFd) },
            // No `/proc`: a duplicate of the memfd itself (read and write).
            Err(Errno::ENOENT) if accmode == libc::O_RDWR => {
                // SAFETY: fcntl on an fd this file owns; no pointers.
                let n = check(unsafe {
                    libc::syscall(libc::SYS_fcntl, self.raw(), libc::F_DUPFD_CLOEXEC, 0)
                })?;
                // SAFETY: a new fd, owned by nobody else.
                unsafe { OwnedFd::from_raw_fd(n as RawFd) }
            }
            Err(e) => return Err(e),
        };
        Ok(move_high(fd))
    }
}

impl Drop for MemFile {
    fn drop(&mut self) {
        if let Some(fd) = self.fd.take() {
            unregister(fd.as_raw_fd());
            close_raw(fd);
        }
    }
}

/// Where a tmpfs keeps the data of regular files that leave its page maps.
#[derive(Debug, Default)]
pub enum FileStore {
    /// Kernel memfds, made when a file is first mapped; uvfs counts their
    /// pages against its own space limit (the default).
    #[default]
    Memfd,
    /// Unnamed files (`O_TMPFILE`) in this directory, made at each regular
    /// file's first write, `fallocate` or mapping: the directory's file
    /// system holds the data and is the space limit (see the module docs).
    Dir(OwnedFd),
}

/// A [`FileStore::Dir`] as a tmpfs holds it.
pub(super) struct DirStore {
    /// The directory (moved high and registered, as the files in it).
    dir: Option<OwnedFd>,
    /// A file in the directory with one allocated page for each page
    /// uvfs holds itself, and how many.
    ballast: UnmodelledMutex<(MemFile, u64)>,
}

impl DirStore {
    pub(super) fn new(dir: OwnedFd) -> Result<DirStore, Errno> {
        let dir = move_high(dir);
        let ballast = MemFile::in_dir(dir.as_raw_fd())?;
        register(dir.as_raw_fd());
        Ok(DirStore {
            dir: Some(dir),
            ballast: UnmodelledMutex::new((ballast, 0)),
        })
    }

    fn raw_dir(&self) -> RawFd {
        self.dir.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    /// Allocates `n` more ballast pages; false if the directory's file
    /// system has no room (nothing allocated then).
    pub(super) fn reserve(&self, n: u64) -> bool {
        let mut b = lock_unmodelled(&self.ballast);
        let keep = libc::c_long::from(FALLOC_FL_KEEP_SIZE as i32);
        if b.0.fallocate(keep, b.1 * PAGE_SIZE, n * PAGE_SIZE).is_err() {
            return false;
        }
        b.1 += n;
        true
    }

    /// Frees `n` ballast pages.
    pub(super) fn release(&self, n: u64) {
        let mut b = lock_unmodelled(&self.ballast);
        let n = n.min(b.1);
        b.1 -= n;
        let punch = libc::c_long::from((FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) as i32);
        let _ = b.0.fallocate(punch, b.1 * PAGE_SIZE, n * PAGE_SIZE);
    }

    /// The directory's file system's size and free space in pages
    /// (`fstatfs`); zeros if it cannot be read.
    pub(super) fn space(&self) -> (u64, u64) {
        // SAFETY: an all-zero `struct statfs` is a valid value.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a valid, writable `struct statfs`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_fstatfs,
                libc::c_long::from(self.raw_dir()),
                &mut st as *mut libc::statfs,
            )
        };
        if r < 0 {
            return (0, 0);
        }
        let bsize = st.f_bsize as u64;
        (
            st.f_blocks * bsize / PAGE_SIZE,
            st.f_bfree * bsize / PAGE_SIZE,
        )
    }
}

impl Drop for DirStore {
    fn drop(&mut self) {
        if let Some(fd) = self.dir.take() {
            unregister(fd.as_raw_fd());
            close_raw(fd);
        }
    }
}
