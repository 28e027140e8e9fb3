//! The host side: the host kernel in a thread's private sandbox.

use super::*;

pub use crate::support::host::Sandbox;
use crate::support::host::in_sandbox_thread;

pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A libc return value: -1 is an error (errno); anything else, negative
/// ones included (lseek can return a negative offset), is a result.
pub fn ret(r: i64) -> R<i64> {
    if r == -1 { Err(errno()) } else { Ok(r) }
}

pub fn ret0(r: libc::c_int) -> R<()> {
    ret(r.into()).map(|_| ())
}

pub fn c(p: &[u8]) -> CString {
    CString::new(p).expect("generated paths have no NUL")
}

pub fn from_stat(s: &libc::stat) -> St {
    St {
        dev: s.st_dev,
        ino: s.st_ino,
        mode: s.st_mode,
        nlink: s.st_nlink,
        uid: s.st_uid,
        gid: s.st_gid,
        rdev: s.st_rdev,
        size: s.st_size,
        blocks: s.st_blocks,
        blksize: s.st_blksize,
        atime: Ts {
            sec: s.st_atime,
            nsec: s.st_atime_nsec,
        },
        mtime: Ts {
            sec: s.st_mtime,
            nsec: s.st_mtime_nsec,
        },
        ctime: Ts {
            sec: s.st_ctime,
            nsec: s.st_ctime_nsec,
        },
        statx: None,
    }
}

pub fn stx_ts(t: libc::statx_timestamp) -> Ts {
    Ts {
        sec: t.tv_sec,
        nsec: i64::from(t.tv_nsec),
    }
}

pub fn to_timespecs(t: &Option<[Ts; 2]>) -> Option<[libc::timespec; 2]> {
    t.map(|t| {
        t.map(|x| libc::timespec {
            tv_sec: x.sec,
            tv_nsec: x.nsec,
        })
    })
}

/// The host kernel, in this thread's private sandbox.
pub struct Host {
    pub fds: FdList,
    /// getdents64 fills the buffer as a local file system's one call does,
    /// with more calls while entries remain and fit: for a FUSE mount,
    /// whose one call returns at most one server reply (readdirplus
    /// entries are several times the size of a dirent64). Off for tmpfs.
    pub refill_dirents: bool,
}

impl Host {
    pub fn fd(&self, fd: Fd) -> i32 {
        self.fds.raw(fd)
    }

    pub fn stat_with(f: impl FnOnce(*mut libc::stat) -> libc::c_int) -> R<St> {
        // SAFETY: an all-zero `struct stat` is a valid value.
        let mut s: libc::stat = unsafe { std::mem::zeroed() };
        ret0(f(&mut s))?;
        Ok(from_stat(&s))
    }

    /// A raw syscall with up to five integer or pointer arguments.
    pub fn sys(nr: libc::c_long, args: [libc::c_long; 5]) -> R<i64> {
        // SAFETY: every caller passes integers, or pointers to live buffers
        // and NUL-terminated strings of the sizes the syscall expects.
        ret(unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], args[4]) })
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        for fd in self.fds.0.iter().flatten() {
            // SAFETY: the fd is one this backend opened and still owns.
            unsafe { libc::close(*fd) };
        }
    }
}

impl Backend for Host {
    fn fds(&mut self) -> &mut FdList {
        &mut self.fds
    }
    fn become_user(&mut self) {
        let groups: [libc::gid_t; 2] = USER_GROUPS;
        // Raw system calls, never glibc's wrappers: the kernel keeps
        // credentials per thread, and glibc would change every thread of
        // the test process. setresuid away from uid 0 drops every
        // capability (no SECBIT_KEEP_CAPS).
        // SAFETY: integer arguments and a live array of two gids.
        let r = unsafe {
            [
                libc::syscall(libc::SYS_setgroups, 2, groups.as_ptr()),
                libc::syscall(libc::SYS_setresgid, USER_GID, USER_GID, USER_GID),
                libc::syscall(libc::SYS_setresuid, USER_UID, USER_UID, USER_UID),
            ]
        };
        assert!(
            r.iter().all(|&x| x == 0),
            "become user {USER_UID}: {}",
            std::io::Error::last_os_error()
        );
    }
    fn eloop_retries(&self) -> usize {
        HOST_ELOOP_RETRIES
    }
    fn open(&mut self, path: &[u8], flags: i32, mode: u32) -> R<i32> {
        let p = c(path);
        // SAFETY: `p` is a live NUL-terminated string.
        ret(unsafe { libc::open(p.as_ptr(), flags, mode) }.into()).map(|n| n as i32)
    }
    fn openat(&mut self, dir: Fd, path: &[u8], flags: i32, mode: u32) -> R<i32> {
        let p = c(path);
        // SAFETY: as in `open`.
        ret(unsafe { libc::openat(self.fd(dir), p.as_ptr(), flags, mode) }.into()).map(|n| n as i32)
    }
    fn creat(&mut self, path: &[u8], mode: u32) -> R<i32> {
        let p = c(path);
        // SAFETY: as in `open`.
        ret(unsafe { libc::creat(p.as_ptr(), mode) }.into()).map(|n| n as i32)
    }
    fn close(&mut self, fd: Fd) -> R<()> {
        // SAFETY: closes an fd this backend owns, or an invalid number.
        ret0(unsafe { libc::close(self.fd(fd)) })
    }
    fn read(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize> {
        // SAFETY: `buf` is writable for its length.
        ret(unsafe { libc::read(self.fd(fd), buf.as_mut_ptr().cast(), buf.len()) } as i64)
            .map(|n| n as usize)
    }
    fn write(&mut self, fd: Fd, buf: &[u8]) -> R<usize> {
        // SAFETY: `buf` is readable for its length.
        ret(unsafe { libc::write(self.fd(fd), buf.as_ptr().cast(), buf.len()) } as i64)
            .map(|n| n as usize)
    }
    fn pread(&mut self, fd: Fd, buf: &mut [u8], off: i64) -> R<usize> {
        // SAFETY: as in `read`.
        ret(unsafe { libc::pread(self.fd(fd), buf.as_mut_ptr().cast(), buf.len(), off) } as i64)
            .map(|n| n as usize)
    }
    fn pwrite(&mut self, fd: Fd, buf: &[u8], off: i64) -> R<usize> {
        // SAFETY: as in `write`.
        ret(unsafe { libc::pwrite(self.fd(fd), buf.as_ptr().cast(), buf.len(), off) } as i64)
            .map(|n| n as usize)
    }
    fn readv(&mut self, fd: Fd, bufs: &mut [&mut [u8]]) -> R<usize> {
        let iov: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: every iovec points into a live, writable buffer.
        ret(unsafe { libc::readv(self.fd(fd), iov.as_ptr(), iov.len() as i32) } as i64)
            .map(|n| n as usize)
    }
    fn writev(&mut self, fd: Fd, bufs: &[&[u8]]) -> R<usize> {
        let iov: Vec<libc::iovec> = bufs
            .iter()
            .map(|b| libc::iovec {
                iov_base: b.as_ptr() as *mut _,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: every iovec points into a live buffer; writev only reads.
        ret(unsafe { libc::writev(self.fd(fd), iov.as_ptr(), iov.len() as i32) } as i64)
            .map(|n| n as usize)
    }
    fn lseek(&mut self, fd: Fd, off: i64, whence: i32) -> R<i64> {
        // SAFETY: integer arguments only.
        ret(unsafe { libc::lseek(self.fd(fd), off, whence) })
    }
    fn stat(&mut self, path: &[u8]) -> R<St> {
        let p = c(path);
        // SAFETY: `p` is a live string, `s` a writable stat.
        Host::stat_with(|s| unsafe { libc::stat(p.as_ptr(), s) })
    }
    fn lstat(&mut self, path: &[u8]) -> R<St> {
        let p = c(path);
        // SAFETY: as in `stat`.
        Host::stat_with(|s| unsafe { libc::lstat(p.as_ptr(), s) })
    }
    fn fstat(&mut self, fd: Fd) -> R<St> {
        let fd = self.fd(fd);
        // SAFETY: `s` is a writable stat.
        Host::stat_with(|s| unsafe { libc::fstat(fd, s) })
    }
    fn fstatat(&mut self, dir: Fd, path: &[u8], flags: i32) -> R<St> {
        let p = c(path);
        let d = self.fd(dir);
        // SAFETY: as in `stat`.
        Host::stat_with(|s| unsafe { libc::fstatat(d, p.as_ptr(), s, flags) })
    }
    fn statx(&mut self, dir: Fd, path: &[u8], flags: i32, mask: u32) -> R<St> {
        let p = c(path);
        // SAFETY: an all-zero `struct statx` is a valid value.
        let mut s: libc::statx = unsafe { std::mem::zeroed() };
        // SAFETY: `p` is a live string, `s` a writable statx.
        ret0(unsafe { libc::statx(self.fd(dir), p.as_ptr(), flags, mask, &mut s) })?;
        Ok(St {
            dev: (u64::from(s.stx_dev_major) << 32) | u64::from(s.stx_dev_minor),
            ino: s.stx_ino,
            mode: u32::from(s.stx_mode),
            nlink: u64::from(s.stx_nlink),
            uid: s.stx_uid,
            gid: s.stx_gid,
            rdev: (u64::from(s.stx_rdev_major) << 32) | u64::from(s.stx_rdev_minor),
            size: s.stx_size as i64,
            blocks: s.stx_blocks as i64,
            blksize: i64::from(s.stx_blksize),
            atime: stx_ts(s.stx_atime),
            mtime: stx_ts(s.stx_mtime),
            ctime: stx_ts(s.stx_ctime),
            statx: Some((s.stx_mask, s.stx_attributes, s.stx_attributes_mask)),
        })
    }
    fn truncate(&mut self, path: &[u8], len: i64) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::truncate(p.as_ptr(), len) })
    }
    fn ftruncate(&mut self, fd: Fd, len: i64) -> R<()> {
        // SAFETY: integer arguments only.
        ret0(unsafe { libc::ftruncate(self.fd(fd), len) })
    }
    fn fallocate(&mut self, fd: Fd, mode: i32, off: i64, len: i64) -> R<()> {
        // SAFETY: integer arguments only.
        ret0(unsafe { libc::fallocate(self.fd(fd), mode, off, len) })
    }
    fn mkdir(&mut self, path: &[u8], mode: u32) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::mkdir(p.as_ptr(), mode) })
    }
    fn mkdirat(&mut self, dir: Fd, path: &[u8], mode: u32) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::mkdirat(self.fd(dir), p.as_ptr(), mode) })
    }
    fn rmdir(&mut self, path: &[u8]) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::rmdir(p.as_ptr()) })
    }
    fn unlink(&mut self, path: &[u8]) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::unlink(p.as_ptr()) })
    }
    fn unlinkat(&mut self, dir: Fd, path: &[u8], flags: i32) -> R<()> {
        let p = c(path);
        // SAFETY: `p` is a live string.
        ret0(unsafe { libc::unlinkat(self.fd(dir), p.as_ptr(), flags) })
    }
    fn rename(&mut self, old: &[u8], new: &[u8]) -> R<()> {
        let (a, b) = (c(old), c(new));
        // SAFETY: live strings.
        ret0(unsafe { libc::rename(a.as_ptr(), b.as_ptr()) })
    }
    fn renameat(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8]) -> R<()> {
        let (a, b) = (c(old), c(new));
        // SAFETY: live strings.
        ret0(unsafe { libc::renameat(self.fd(od), a.as_ptr(), self.fd(nd), b.as_ptr()) })
    }
    fn renameat2(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8], flags: u32) -> R<()> {
        let (a, b) = (c(old), c(new));
        Host::sys(
            libc::SYS_renameat2,
            [
                self.fd(od).into(),
                a.as_ptr() as _,
                self.fd(nd).into(),
                b.as_ptr() as _,
                flags.into(),
            ],
        )
        .map(|_| ())
    }
    fn link(&mut self, old: &[u8], new: &[u8]) -> R<()> {
        let (a, b) = (c(old), c(new));
        // SAFETY: live strings.
        ret0(unsafe { libc::link(a.as_ptr(), b.as_ptr()) })
    }
    fn linkat(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8], flags: i32) -> R<()> {
        let (a, b) = (c(old), c(new));
        // SAFETY: live strings.
        ret0(unsafe { libc::linkat(self.fd(od), a.as_ptr(), self.fd(nd), b.as_ptr(), flags) })
    }
    fn symlink(&mut self, target: &[u8], path: &[u8]) -> R<()> {
        let (a, b) = (c(target), c(path));
        // SAFETY: live strings.
        ret0(unsafe { libc::symlink(a.as_ptr(), b.as_ptr()) })
    }
    fn symlinkat(&mut self, target: &[u8], dir: Fd, path: &[u8]) -> R<()> {
        let (a, b) = (c(target), c(path));
        // SAFETY: live strings.
        ret0(unsafe { libc::symlinkat(a.as_ptr(), self.fd(dir), b.as_ptr()) })
    }
    fn readlink(&mut self, path: &[u8], buf: &mut [u8]) -> R<usize> {
        let p = c(path);
        // SAFETY: live string, writable buffer of the given length.
        ret(unsafe { libc::readlink(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) } as i64)
            .map(|n| n as usize)
    }
    fn readlinkat(&mut self, dir: Fd, path: &[u8], buf: &mut [u8]) -> R<usize> {
        let p = c(path);
        // SAFETY: as in `readlink`.
        ret(unsafe {
            libc::readlinkat(self.fd(dir), p.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        } as i64)
        .map(|n| n as usize)
    }
    fn getdents64(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize> {
        let call = |buf: &mut [u8]| {
            Host::sys(
                libc::SYS_getdents64,
                [
                    self.fd(fd).into(),
                    buf.as_mut_ptr() as _,
                    buf.len() as _,
                    0,
                    0,
                ],
            )
            .map(|n| n as usize)
        };
        let mut got = call(buf)?;
        if self.refill_dirents {
            // Until the end (0) or an entry that does not fit (EINVAL once
            // something was returned; the position stays at that entry).
            while got > 0 && got < buf.len() {
                match call(&mut buf[got..]) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got += n,
                }
            }
        }
        Ok(got)
    }
    fn chdir(&mut self, path: &[u8]) -> R<()> {
        let p = c(path);
        // SAFETY: live string; the cwd is this thread's own (CLONE_FS).
        ret0(unsafe { libc::chdir(p.as_ptr()) })
    }
    fn fchdir(&mut self, fd: Fd) -> R<()> {
        // SAFETY: integer argument; the cwd is this thread's own.
        ret0(unsafe { libc::fchdir(self.fd(fd)) })
    }
    fn getcwd(&mut self) -> R<Vec<u8>> {
        let mut buf = vec![0u8; 4096];
        let n = Host::sys(
            libc::SYS_getcwd,
            [buf.as_mut_ptr() as _, buf.len() as _, 0, 0, 0],
        )? as usize;
        buf.truncate(n.saturating_sub(1));
        Ok(buf)
    }
    fn chmod(&mut self, path: &[u8], mode: u32) -> R<()> {
        let p = c(path);
        // SAFETY: live string.
        ret0(unsafe { libc::chmod(p.as_ptr(), mode) })
    }
    fn fchmod(&mut self, fd: Fd, mode: u32) -> R<()> {
        // SAFETY: integer arguments.
        ret0(unsafe { libc::fchmod(self.fd(fd), mode) })
    }
    fn fchmodat(&mut self, dir: Fd, path: &[u8], mode: u32, flags: i32) -> R<()> {
        let p = c(path);
        Host::sys(
            libc::SYS_fchmodat2,
            [
                self.fd(dir).into(),
                p.as_ptr() as _,
                mode.into(),
                flags.into(),
                0,
            ],
        )
        .map(|_| ())
    }
    fn chown(&mut self, path: &[u8], uid: u32, gid: u32) -> R<()> {
        let p = c(path);
        // SAFETY: live string.
        ret0(unsafe { libc::chown(p.as_ptr(), uid, gid) })
    }
    fn lchown(&mut self, path: &[u8], uid: u32, gid: u32) -> R<()> {
        let p = c(path);
        // SAFETY: live string.
        ret0(unsafe { libc::lchown(p.as_ptr(), uid, gid) })
    }
    fn fchown(&mut self, fd: Fd, uid: u32, gid: u32) -> R<()> {
        // SAFETY: integer arguments.
        ret0(unsafe { libc::fchown(self.fd(fd), uid, gid) })
    }
    fn fchownat(&mut self, dir: Fd, path: &[u8], uid: u32, gid: u32, flags: i32) -> R<()> {
        let p = c(path);
        // SAFETY: live string.
        ret0(unsafe { libc::fchownat(self.fd(dir), p.as_ptr(), uid, gid, flags) })
    }
    fn umask(&mut self, mask: u32) -> u32 {
        // SAFETY: integer argument; the umask is this thread's own.
        unsafe { libc::umask(mask) }
    }
    fn access(&mut self, path: &[u8], mode: i32) -> R<()> {
        let p = c(path);
        // SAFETY: live string.
        ret0(unsafe { libc::access(p.as_ptr(), mode) })
    }
    fn faccessat(&mut self, dir: Fd, path: &[u8], mode: i32, flags: i32) -> R<()> {
        let p = c(path);
        Host::sys(
            libc::SYS_faccessat2,
            [
                self.fd(dir).into(),
                p.as_ptr() as _,
                mode.into(),
                flags.into(),
                0,
            ],
        )
        .map(|_| ())
    }
    fn utimensat(&mut self, dir: Fd, path: &[u8], times: Option<[Ts; 2]>, flags: i32) -> R<()> {
        let p = c(path);
        let t = to_timespecs(&times);
        let tp = t.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
        // SAFETY: live string; `tp` is null or two live timespecs.
        ret0(unsafe { libc::utimensat(self.fd(dir), p.as_ptr(), tp, flags) })
    }
    /// glibc's futimens: `utimensat(fd, NULL, times, 0)`, except that a
    /// negative fd is EBADF without asking the kernel (which would take
    /// `AT_FDCWD` with a NULL path as EFAULT). futimens is a libc function,
    /// so the libc answer is the reference.
    fn futimens(&mut self, fd: Fd, times: Option<[Ts; 2]>) -> R<()> {
        let t = to_timespecs(&times);
        let tp = t.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
        // SAFETY: `tp` is null or two live timespecs.
        ret0(unsafe { libc::futimens(self.fd(fd), tp) })
    }
    fn fsync(&mut self, fd: Fd) -> R<()> {
        // SAFETY: integer argument.
        ret0(unsafe { libc::fsync(self.fd(fd)) })
    }
    fn fdatasync(&mut self, fd: Fd) -> R<()> {
        // SAFETY: integer argument.
        ret0(unsafe { libc::fdatasync(self.fd(fd)) })
    }
}

/// `mkdir -p top`, umask 022, chdir top; both sides do exactly this.
pub fn prepare(b: &mut dyn Backend, top: &[u8]) {
    b.umask(0o022);
    let mut p = Vec::new();
    for comp in top.split(|&c| c == b'/').filter(|c| !c.is_empty()) {
        p.push(b'/');
        p.extend_from_slice(comp);
        match b.mkdir(&p, 0o755) {
            Ok(()) | Err(17) => {}
            Err(e) => panic!("mkdir {}: {}", sp(&p), errno_name(e)),
        }
    }
    if let Err(e) = b.chdir(top) {
        panic!("chdir {}: {}", sp(top), errno_name(e));
    }
}

/// [`prepare`], then for [`Who::User`] the top directory is given to the
/// user and the backend becomes the user.
pub fn prepare_as(b: &mut dyn Backend, top: &[u8], who: Who) {
    prepare(b, top);
    if who == Who::User {
        if let Err(e) = b.chown(top, USER_UID, USER_GID) {
            panic!("chown {}: {}", sp(top), errno_name(e));
        }
        b.become_user();
    }
}

/// What a host run does: generate from a seed, or replay given ops.
pub enum HostJob {
    Generate(u64, usize),
    /// Generate up to `n` ops from a fuzzer's bytes.
    Bytes(Vec<u8>, usize),
    Replay(Vec<Op>),
}

/// Runs the host side in a thread of its own (see the module doc of
/// `path_differential.rs`).
pub fn host_run_in_thread(job: HostJob, top: Vec<u8>) -> (Vec<Op>, Log, Sandbox) {
    host_run_in_thread_as(job, top, Who::Root)
}

/// [`host_run_in_thread`] as `who`.
pub fn host_run_in_thread_as(job: HostJob, top: Vec<u8>, who: Who) -> (Vec<Op>, Log, Sandbox) {
    in_sandbox_thread(move |sandbox| {
        let mut host = Host {
            fds: FdList::default(),
            refill_dirents: false,
        };
        prepare_as(&mut host, &top, who);
        let root: &[u8] = match sandbox {
            Sandbox::Chroot => b"/",
            Sandbox::Plain => &top,
        };
        let (ops, log) = match job {
            HostJob::Generate(seed, n) => host_generate(&mut host, Rng::new(seed), &top, n, root),
            HostJob::Bytes(data, n) => {
                host_generate(&mut host, Rng::from_bytes(&data), &top, n, root)
            }
            HostJob::Replay(ops) => {
                let log = run(&mut host, &ops, root);
                (ops, log)
            }
        };
        drop(host);
        if sandbox == Sandbox::Plain {
            let _ = std::fs::remove_dir_all(String::from_utf8_lossy(&top).as_ref());
        }
        (ops, log, sandbox)
    })
}
