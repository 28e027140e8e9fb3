//! The uvfs side: a fresh `Vfs` whose root tmpfs has the host sandbox's
//! limits, behind the [`Backend`] trait.

use super::*;
use uvfs::fs::tmpfs::TmpfsOptions;
use uvfs::{FastPaths, Process, Vfs};

pub struct Uvfs {
    pub p: Process,
    pub fds: FdList,
}

impl Uvfs {
    pub fn new(fast: FastPaths) -> Uvfs {
        // The same limits as the host's tmpfs (see the module doc).
        // The host's fs.protected_* sysctls, which its side applies (the
        // user pass meets protected_hardlinks; machines differ).
        let vfs = Vfs::builder()
            .fastpaths(fast)
            .sysctls(uvfs::FsSysctls::host())
            .root_options(TmpfsOptions {
                size_bytes: Some(HOST_TMPFS_SIZE),
                nr_inodes: None,
                mode: 0o755,
                uid: 0,
                gid: 0,
            })
            .build();
        Uvfs {
            p: Process::new(&vfs).expect("Process::new"),
            fds: FdList::default(),
        }
    }
    fn fd(&self, fd: Fd) -> i32 {
        self.fds.raw(fd)
    }
}

fn e<T>(r: Result<T, uvfs::Errno>) -> R<T> {
    r.map_err(uvfs::Errno::raw)
}

fn st(s: uvfs::Stat) -> St {
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

fn ts(t: Option<[Ts; 2]>) -> Option<[uvfs::uapi::Timespec; 2]> {
    t.map(|t| {
        t.map(|x| uvfs::uapi::Timespec {
            tv_sec: x.sec,
            tv_nsec: x.nsec,
        })
    })
}

impl Backend for Uvfs {
    fn fds(&mut self) -> &mut FdList {
        &mut self.fds
    }
    fn become_user(&mut self) {
        self.p.set_cred(uvfs::cred::Cred::user(
            USER_UID,
            USER_GID,
            USER_GROUPS.to_vec(),
        ));
    }
    fn open(&mut self, path: &[u8], flags: i32, mode: u32) -> R<i32> {
        e(self.p.open(path, flags, mode))
    }
    fn openat(&mut self, dir: Fd, path: &[u8], flags: i32, mode: u32) -> R<i32> {
        let d = self.fd(dir);
        e(self.p.openat(d, path, flags, mode))
    }
    fn creat(&mut self, path: &[u8], mode: u32) -> R<i32> {
        e(self.p.creat(path, mode))
    }
    fn close(&mut self, fd: Fd) -> R<()> {
        let d = self.fd(fd);
        e(self.p.close(d))
    }
    fn read(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize> {
        let d = self.fd(fd);
        e(self.p.read(d, buf))
    }
    fn write(&mut self, fd: Fd, buf: &[u8]) -> R<usize> {
        let d = self.fd(fd);
        e(self.p.write(d, buf))
    }
    fn pread(&mut self, fd: Fd, buf: &mut [u8], off: i64) -> R<usize> {
        let d = self.fd(fd);
        e(self.p.pread(d, buf, off))
    }
    fn pwrite(&mut self, fd: Fd, buf: &[u8], off: i64) -> R<usize> {
        let d = self.fd(fd);
        e(self.p.pwrite(d, buf, off))
    }
    fn readv(&mut self, fd: Fd, bufs: &mut [&mut [u8]]) -> R<usize> {
        let d = self.fd(fd);
        e(self.p.readv(d, bufs))
    }
    fn writev(&mut self, fd: Fd, bufs: &[&[u8]]) -> R<usize> {
        let d = self.fd(fd);
        e(self.p.writev(d, bufs))
    }
    fn lseek(&mut self, fd: Fd, off: i64, whence: i32) -> R<i64> {
        let d = self.fd(fd);
        e(self.p.lseek(d, off, whence))
    }
    fn stat(&mut self, path: &[u8]) -> R<St> {
        e(self.p.stat(path)).map(st)
    }
    fn lstat(&mut self, path: &[u8]) -> R<St> {
        e(self.p.lstat(path)).map(st)
    }
    fn fstat(&mut self, fd: Fd) -> R<St> {
        let d = self.fd(fd);
        e(self.p.fstat(d)).map(st)
    }
    fn fstatat(&mut self, dir: Fd, path: &[u8], flags: i32) -> R<St> {
        let d = self.fd(dir);
        e(self.p.fstatat(d, path, flags)).map(st)
    }
    fn statx(&mut self, dir: Fd, path: &[u8], flags: i32, mask: u32) -> R<St> {
        let d = self.fd(dir);
        let s = e(self.p.statx(d, path, flags, mask))?;
        let t = |t: uvfs::stat::StatxTimestamp| Ts {
            sec: t.tv_sec,
            nsec: i64::from(t.tv_nsec),
        };
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
            atime: t(s.stx_atime),
            mtime: t(s.stx_mtime),
            ctime: t(s.stx_ctime),
            statx: Some((s.stx_mask, s.stx_attributes, s.stx_attributes_mask)),
        })
    }
    fn truncate(&mut self, path: &[u8], len: i64) -> R<()> {
        e(self.p.truncate(path, len))
    }
    fn ftruncate(&mut self, fd: Fd, len: i64) -> R<()> {
        let d = self.fd(fd);
        e(self.p.ftruncate(d, len))
    }
    fn fallocate(&mut self, fd: Fd, mode: i32, off: i64, len: i64) -> R<()> {
        let d = self.fd(fd);
        e(self.p.fallocate(d, mode, off, len))
    }
    fn mkdir(&mut self, path: &[u8], mode: u32) -> R<()> {
        e(self.p.mkdir(path, mode))
    }
    fn mkdirat(&mut self, dir: Fd, path: &[u8], mode: u32) -> R<()> {
        let d = self.fd(dir);
        e(self.p.mkdirat(d, path, mode))
    }
    fn rmdir(&mut self, path: &[u8]) -> R<()> {
        e(self.p.rmdir(path))
    }
    fn unlink(&mut self, path: &[u8]) -> R<()> {
        e(self.p.unlink(path))
    }
    fn unlinkat(&mut self, dir: Fd, path: &[u8], flags: i32) -> R<()> {
        let d = self.fd(dir);
        e(self.p.unlinkat(d, path, flags))
    }
    fn rename(&mut self, old: &[u8], new: &[u8]) -> R<()> {
        e(self.p.rename(old, new))
    }
    fn renameat(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8]) -> R<()> {
        let (a, b) = (self.fd(od), self.fd(nd));
        e(self.p.renameat(a, old, b, new))
    }
    fn renameat2(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8], flags: u32) -> R<()> {
        let (a, b) = (self.fd(od), self.fd(nd));
        e(self.p.renameat2(a, old, b, new, flags))
    }
    fn link(&mut self, old: &[u8], new: &[u8]) -> R<()> {
        e(self.p.link(old, new))
    }
    fn linkat(&mut self, od: Fd, old: &[u8], nd: Fd, new: &[u8], flags: i32) -> R<()> {
        let (a, b) = (self.fd(od), self.fd(nd));
        e(self.p.linkat(a, old, b, new, flags))
    }
    fn symlink(&mut self, target: &[u8], path: &[u8]) -> R<()> {
        e(self.p.symlink(target, path))
    }
    fn symlinkat(&mut self, target: &[u8], dir: Fd, path: &[u8]) -> R<()> {
        let d = self.fd(dir);
        e(self.p.symlinkat(target, d, path))
    }
    fn readlink(&mut self, path: &[u8], buf: &mut [u8]) -> R<usize> {
        e(self.p.readlink(path, buf))
    }
    fn readlinkat(&mut self, dir: Fd, path: &[u8], buf: &mut [u8]) -> R<usize> {
        let d = self.fd(dir);
        e(self.p.readlinkat(d, path, buf))
    }
    fn getdents64(&mut self, fd: Fd, buf: &mut [u8]) -> R<usize> {
        let d = self.fd(fd);
        e(self.p.getdents64(d, buf))
    }
    fn chdir(&mut self, path: &[u8]) -> R<()> {
        e(self.p.chdir(path))
    }
    fn fchdir(&mut self, fd: Fd) -> R<()> {
        let d = self.fd(fd);
        e(self.p.fchdir(d))
    }
    fn getcwd(&mut self) -> R<Vec<u8>> {
        e(self.p.getcwd())
    }
    fn chmod(&mut self, path: &[u8], mode: u32) -> R<()> {
        e(self.p.chmod(path, mode))
    }
    fn fchmod(&mut self, fd: Fd, mode: u32) -> R<()> {
        let d = self.fd(fd);
        e(self.p.fchmod(d, mode))
    }
    fn fchmodat(&mut self, dir: Fd, path: &[u8], mode: u32, flags: i32) -> R<()> {
        let d = self.fd(dir);
        e(self.p.fchmodat(d, path, mode, flags))
    }
    fn chown(&mut self, path: &[u8], uid: u32, gid: u32) -> R<()> {
        e(self.p.chown(path, uid, gid))
    }
    fn lchown(&mut self, path: &[u8], uid: u32, gid: u32) -> R<()> {
        e(self.p.lchown(path, uid, gid))
    }
    fn fchown(&mut self, fd: Fd, uid: u32, gid: u32) -> R<()> {
        let d = self.fd(fd);
        e(self.p.fchown(d, uid, gid))
    }
    fn fchownat(&mut self, dir: Fd, path: &[u8], uid: u32, gid: u32, flags: i32) -> R<()> {
        let d = self.fd(dir);
        e(self.p.fchownat(d, path, uid, gid, flags))
    }
    fn umask(&mut self, mask: u32) -> u32 {
        self.p.umask(mask)
    }
    fn access(&mut self, path: &[u8], mode: i32) -> R<()> {
        e(self.p.access(path, mode))
    }
    fn faccessat(&mut self, dir: Fd, path: &[u8], mode: i32, flags: i32) -> R<()> {
        let d = self.fd(dir);
        e(self.p.faccessat(d, path, mode, flags))
    }
    fn utimensat(&mut self, dir: Fd, path: &[u8], times: Option<[Ts; 2]>, flags: i32) -> R<()> {
        let d = self.fd(dir);
        e(self.p.utimensat(d, path, ts(times), flags))
    }
    fn futimens(&mut self, fd: Fd, times: Option<[Ts; 2]>) -> R<()> {
        let d = self.fd(fd);
        e(self.p.futimens(d, ts(times)))
    }
    fn fsync(&mut self, fd: Fd) -> R<()> {
        let d = self.fd(fd);
        e(self.p.fsync(d))
    }
    fn fdatasync(&mut self, fd: Fd) -> R<()> {
        let d = self.fd(fd);
        e(self.p.fdatasync(d))
    }
}

pub fn run_uvfs(fast: FastPaths, ops: &[Op], top: &[u8], root: &[u8]) -> Log {
    run_uvfs_as(fast, ops, top, root, Who::Root)
}

/// [`run_uvfs`] as `who`.
pub fn run_uvfs_as(fast: FastPaths, ops: &[Op], top: &[u8], root: &[u8], who: Who) -> Log {
    let mut u = Uvfs::new(fast);
    prepare_as(&mut u, top, who);
    run(&mut u, ops, root)
}
