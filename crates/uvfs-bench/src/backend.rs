//! Backends: the system-call surface the workloads run on.
//!
//! [`Sys`] is the handful of Linux calls will-it-scale's file tests make,
//! plus the `stat`, `rename` and directory listing that fstree and
//! blogbench need.
//! [`HostSys`] makes them for real through libc (as will-it-scale's C code
//! does); [`UvfsSys`] makes them on a `uvfs::Process`. The workloads are
//! generic over `Sys`, so each backend's loop is compiled on its own with no
//! dynamic dispatch between the loop and the call. Flags, modes and errors
//! are Linux's numbers on both sides (`uvfs::uapi` equals libc's values;
//! checked at compile time below).
//!
//! Work directories: [`HostDir`] is a fresh `mkdtemp` directory on the host
//! (tmpfs, `/dev/shm` by default); on uvfs the same path string is created
//! inside the VFS ([`uvfs_workdir`]). Both report what was left in them
//! before they are removed, so a run proves its tests clean up.

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use uvfs::{Errno, Process, Stat, Vfs, uapi};

// The workloads pass uvfs's constants to both backends.
const _: () = {
    assert!(uapi::O_RDONLY == libc::O_RDONLY);
    assert!(uapi::O_RDWR == libc::O_RDWR);
    assert!(uapi::O_CREAT == libc::O_CREAT);
    assert!(uapi::O_EXCL == libc::O_EXCL);
    assert!(uapi::O_DIRECTORY == libc::O_DIRECTORY);
    assert!(uapi::O_WRONLY == libc::O_WRONLY);
    assert!(uapi::O_TRUNC == libc::O_TRUNC);
    assert!(uapi::O_APPEND == libc::O_APPEND);
    assert!(uapi::SEEK_SET == libc::SEEK_SET);
    assert!(uapi::SEEK_CUR == libc::SEEK_CUR);
    assert!(uapi::SEEK_END == libc::SEEK_END);
};

/// The system calls the workloads make. Paths are NUL-terminated (the host
/// passes them to the kernel as they are; uvfs takes the bytes before the
/// NUL).
pub trait Sys {
    /// `open(2)`.
    fn open(&mut self, path: &CStr, flags: i32, mode: u32) -> Result<i32, Errno>;
    /// `close(2)`.
    fn close(&mut self, fd: i32) -> Result<(), Errno>;
    /// `dup(2)`.
    fn dup(&mut self, fd: i32) -> Result<i32, Errno>;
    /// fcntl(2) with an integer argument.
    fn fcntl(&mut self, fd: i32, cmd: i32, arg: u64) -> Result<i32, Errno>;
    /// `read(2)`.
    fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, Errno>;
    /// `write(2)`.
    fn write(&mut self, fd: i32, buf: &[u8]) -> Result<usize, Errno>;
    /// `pread64(2)`.
    fn pread(&mut self, fd: i32, buf: &mut [u8], off: i64) -> Result<usize, Errno>;
    /// `lseek(2)`.
    fn lseek(&mut self, fd: i32, off: i64, whence: i32) -> Result<i64, Errno>;
    /// `unlink(2)`.
    fn unlink(&mut self, path: &CStr) -> Result<(), Errno>;
    /// `mkdir(2)`.
    fn mkdir(&mut self, path: &CStr, mode: u32) -> Result<(), Errno>;
    /// `rmdir(2)`.
    fn rmdir(&mut self, path: &CStr) -> Result<(), Errno>;
    /// `stat(2)` (following symlinks), as uvfs's [`Stat`] on both sides.
    fn stat(&mut self, path: &CStr) -> Result<Stat, Errno>;
    /// `rename(2)`.
    fn rename(&mut self, old: &CStr, new: &CStr) -> Result<(), Errno>;
    /// The names in directory `path`, without `.` and `..` (open with
    /// `O_RDONLY | O_DIRECTORY`, `getdents64` until the end, close): for
    /// cleanups, never in a timed loop.
    fn list_dir(&mut self, path: &CStr) -> Result<Vec<CString>, Errno>;
}

/// Whether a directory entry's name is `.` or `..`.
fn is_dot(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

/// The host kernel, through libc.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostSys;

/// A libc result: `-1` means "see errno".
fn host<T: PartialEq + From<i8>>(r: T) -> Result<T, Errno> {
    if r == T::from(-1) {
        Err(Errno::last_os_error())
    } else {
        Ok(r)
    }
}

impl Sys for HostSys {
    #[inline]
    fn open(&mut self, path: &CStr, flags: i32, mode: u32) -> Result<i32, Errno> {
        // SAFETY: `path` is NUL-terminated and outlives the call.
        host(unsafe { libc::open(path.as_ptr(), flags, mode) })
    }
    #[inline]
    fn close(&mut self, fd: i32) -> Result<(), Errno> {
        // SAFETY: closing a descriptor number has no memory effects here.
        host(unsafe { libc::close(fd) }).map(drop)
    }
    #[inline]
    fn dup(&mut self, fd: i32) -> Result<i32, Errno> {
        // SAFETY: no pointers are passed.
        host(unsafe { libc::dup(fd) })
    }
    #[inline]
    fn fcntl(&mut self, fd: i32, cmd: i32, arg: u64) -> Result<i32, Errno> {
        // SAFETY: only integer commands reach here (the lab never passes a
        // pointer argument), so no memory is shared with the kernel.
        host(unsafe { libc::fcntl(fd, cmd, arg) })
    }
    #[inline]
    fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
        // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
        host(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }).map(|n| n as usize)
    }
    #[inline]
    fn write(&mut self, fd: i32, buf: &[u8]) -> Result<usize, Errno> {
        // SAFETY: the kernel reads at most `buf.len()` bytes from `buf`.
        host(unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) }).map(|n| n as usize)
    }
    #[inline]
    fn pread(&mut self, fd: i32, buf: &mut [u8], off: i64) -> Result<usize, Errno> {
        // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
        host(unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), off) })
            .map(|n| n as usize)
    }
    #[inline]
    fn lseek(&mut self, fd: i32, off: i64, whence: i32) -> Result<i64, Errno> {
        // SAFETY: no pointers are passed.
        host(unsafe { libc::lseek(fd, off, whence) })
    }
    #[inline]
    fn unlink(&mut self, path: &CStr) -> Result<(), Errno> {
        // SAFETY: `path` is NUL-terminated and outlives the call.
        host(unsafe { libc::unlink(path.as_ptr()) }).map(drop)
    }
    #[inline]
    fn mkdir(&mut self, path: &CStr, mode: u32) -> Result<(), Errno> {
        // SAFETY: `path` is NUL-terminated and outlives the call.
        host(unsafe { libc::mkdir(path.as_ptr(), mode) }).map(drop)
    }
    #[inline]
    fn rmdir(&mut self, path: &CStr) -> Result<(), Errno> {
        // SAFETY: `path` is NUL-terminated and outlives the call.
        host(unsafe { libc::rmdir(path.as_ptr()) }).map(drop)
    }
    #[inline]
    fn stat(&mut self, path: &CStr) -> Result<Stat, Errno> {
        // SAFETY: an all-zero `struct stat` is a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `path` is NUL-terminated and `st` is a writable `struct
        // stat` on our stack.
        host(unsafe { libc::stat(path.as_ptr(), &mut st) })?;
        Ok(Stat {
            st_dev: st.st_dev,
            st_ino: st.st_ino,
            st_nlink: st.st_nlink,
            st_mode: st.st_mode,
            st_uid: st.st_uid,
            st_gid: st.st_gid,
            st_rdev: st.st_rdev,
            st_size: st.st_size,
            st_blksize: st.st_blksize,
            st_blocks: st.st_blocks,
            st_atime: st.st_atime,
            st_atime_nsec: st.st_atime_nsec,
            st_mtime: st.st_mtime,
            st_mtime_nsec: st.st_mtime_nsec,
            st_ctime: st.st_ctime,
            st_ctime_nsec: st.st_ctime_nsec,
        })
    }
    #[inline]
    fn rename(&mut self, old: &CStr, new: &CStr) -> Result<(), Errno> {
        // SAFETY: both paths are NUL-terminated and outlive the call.
        host(unsafe { libc::rename(old.as_ptr(), new.as_ptr()) }).map(drop)
    }
    fn list_dir(&mut self, path: &CStr) -> Result<Vec<CString>, Errno> {
        let fd = self.open(path, uapi::O_RDONLY | uapi::O_DIRECTORY, 0)?;
        // SAFETY: `fd` is a directory fd we own; on success the stream owns
        // it and `closedir` closes it.
        let dir = unsafe { libc::fdopendir(fd) };
        if dir.is_null() {
            let e = Errno::last_os_error();
            self.close(fd)?;
            return Err(e);
        }
        let mut names = Vec::new();
        let result = loop {
            // SAFETY: errno is thread-local; 0 tells the end from an error.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: `dir` is an open stream only this function uses.
            let ent = unsafe { libc::readdir(dir) };
            if ent.is_null() {
                let e = Errno::last_os_error();
                break if e.raw() == 0 { Ok(()) } else { Err(e) };
            }
            // SAFETY: `d_name` of the entry `readdir` returned is a
            // NUL-terminated name, valid until the next `readdir`.
            let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
            if !is_dot(name.to_bytes()) {
                names.push(name.to_owned());
            }
        };
        // SAFETY: closes the stream (and `fd`) once; `dir` is not used after.
        host(unsafe { libc::closedir(dir) })?;
        result.map(|()| names)
    }
}

/// One task (or the harness) on uvfs: a process or a thread of one.
pub struct UvfsSys(pub Process);

impl Sys for UvfsSys {
    #[inline]
    fn open(&mut self, path: &CStr, flags: i32, mode: u32) -> Result<i32, Errno> {
        self.0.open(path.to_bytes(), flags, mode)
    }
    #[inline]
    fn close(&mut self, fd: i32) -> Result<(), Errno> {
        self.0.close(fd)
    }
    #[inline]
    fn dup(&mut self, fd: i32) -> Result<i32, Errno> {
        self.0.dup(fd)
    }
    #[inline]
    fn fcntl(&mut self, fd: i32, cmd: i32, arg: u64) -> Result<i32, Errno> {
        self.0.fcntl(fd, cmd, arg)
    }
    #[inline]
    fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
        self.0.read(fd, buf)
    }
    #[inline]
    fn write(&mut self, fd: i32, buf: &[u8]) -> Result<usize, Errno> {
        self.0.write(fd, buf)
    }
    #[inline]
    fn pread(&mut self, fd: i32, buf: &mut [u8], off: i64) -> Result<usize, Errno> {
        self.0.pread(fd, buf, off)
    }
    #[inline]
    fn lseek(&mut self, fd: i32, off: i64, whence: i32) -> Result<i64, Errno> {
        self.0.lseek(fd, off, whence)
    }
    #[inline]
    fn unlink(&mut self, path: &CStr) -> Result<(), Errno> {
        self.0.unlink(path.to_bytes())
    }
    #[inline]
    fn mkdir(&mut self, path: &CStr, mode: u32) -> Result<(), Errno> {
        self.0.mkdir(path.to_bytes(), mode)
    }
    #[inline]
    fn rmdir(&mut self, path: &CStr) -> Result<(), Errno> {
        self.0.rmdir(path.to_bytes())
    }
    #[inline]
    fn stat(&mut self, path: &CStr) -> Result<Stat, Errno> {
        self.0.stat(path.to_bytes())
    }
    #[inline]
    fn rename(&mut self, old: &CStr, new: &CStr) -> Result<(), Errno> {
        self.0.rename(old.to_bytes(), new.to_bytes())
    }
    fn list_dir(&mut self, path: &CStr) -> Result<Vec<CString>, Errno> {
        let fd = self
            .0
            .open(path.to_bytes(), uapi::O_RDONLY | uapi::O_DIRECTORY, 0)?;
        let names: Result<Vec<CString>, Errno> = self
            .0
            .readdir(fd)
            .filter(|e| !e.as_ref().is_ok_and(|e| is_dot(&e.name)))
            .map(|e| e.map(|e| cpath(e.name)))
            .collect();
        self.0.close(fd)?;
        names
    }
}

/// Removes `path` and everything under it (directories listed with
/// [`Sys::list_dir`], files unlinked, directories removed bottom-up).
pub fn remove_tree<S: Sys>(sys: &mut S, path: &CStr) -> Result<(), Errno> {
    match sys.unlink(path) {
        Err(Errno::EISDIR) => {}
        r => return r,
    }
    let mut full = path.to_bytes().to_vec();
    full.push(b'/');
    let base = full.len();
    for name in sys.list_dir(path)? {
        full.truncate(base);
        full.extend_from_slice(name.to_bytes());
        remove_tree(sys, &cpath(full.clone()))?;
    }
    sys.rmdir(path)
}

/// A path as a C string (paths here come from UTF-8 format strings, never
/// with an interior NUL).
pub fn cpath(s: impl Into<Vec<u8>>) -> CString {
    CString::new(s).expect("a path without NUL bytes")
}

/// A fresh directory on the host, `DIR/uvfs-bench.XXXXXX`.
#[derive(Debug)]
pub struct HostDir {
    path: PathBuf,
}

impl HostDir {
    /// Creates the directory under `parent` (which must exist).
    pub fn create(parent: &Path) -> Result<HostDir, String> {
        let template = format!("{}/uvfs-bench.XXXXXX", parent.display());
        let mut buf = cpath(template).into_bytes_with_nul();
        // SAFETY: `buf` is a writable NUL-terminated template that mkdtemp
        // rewrites in place, within its length.
        let r = unsafe { libc::mkdtemp(buf.as_mut_ptr().cast()) };
        if r.is_null() {
            return Err(format!(
                "cannot create a work directory in {}: {}",
                parent.display(),
                Errno::last_os_error()
            ));
        }
        buf.pop();
        let path = PathBuf::from(String::from_utf8(buf).expect("a UTF-8 template stays UTF-8"));
        Ok(HostDir { path })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lists what is left in the directory, then removes it (and, if
    /// anything was left, its contents). Returns the leftovers' names.
    pub fn remove(self) -> Vec<String> {
        let left: Vec<String> = std::fs::read_dir(&self.path)
            .map(|it| {
                it.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if left.is_empty() {
            let _ = std::fs::remove_dir(&self.path);
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
        left
    }
}

/// The uvfs twin of [`HostDir`]: the path `DIR/uvfs-bench.PID` created
/// (with its parents) inside the VFS, so a uvfs run walks paths of the same
/// shape as the host run.
pub fn uvfs_workdir(p: &mut Process, parent: &Path) -> Result<String, Errno> {
    let mut at = String::new();
    for comp in parent
        .to_string_lossy()
        .split('/')
        .filter(|c| !c.is_empty())
    {
        at.push('/');
        at.push_str(comp);
        match p.mkdir(&at, 0o1777) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e),
        }
    }
    let dir = format!("{at}/uvfs-bench.{:06}", std::process::id() % 1_000_000);
    p.mkdir(&dir, 0o700)?;
    Ok(dir)
}

/// Lists what is left in the uvfs directory `dir`, then removes it (with
/// whatever was left, one level deep). Returns the leftovers' names.
pub fn uvfs_remove_workdir(p: &mut Process, dir: &str) -> Result<Vec<String>, Errno> {
    let fd = p.open(dir, uapi::O_RDONLY | uapi::O_DIRECTORY, 0)?;
    let names: Vec<String> = p
        .readdir(fd)
        .filter_map(Result::ok)
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .filter(|n| n != "." && n != "..")
        .collect();
    p.close(fd)?;
    for n in &names {
        let path = format!("{dir}/{n}");
        if p.unlink(&path) == Err(Errno::EISDIR) {
            let _ = uvfs_remove_workdir(p, &path);
        }
    }
    p.rmdir(dir)?;
    Ok(names)
}

/// A fresh VFS for one uvfs run.
pub fn uvfs_vfs(fast: uvfs::FastPaths) -> Arc<Vfs> {
    uvfs_vfs_with_caches(fast, None)
}

/// A fresh VFS whose dentry and inode caches each keep at most `limit`
/// unused entries (`None`: the builder's default, 1 Mi), so a walk over
/// more names than that misses as on a disk file system (fstree).
pub fn uvfs_vfs_with_caches(fast: uvfs::FastPaths, limit: Option<usize>) -> Arc<Vfs> {
    let b = Vfs::builder().fastpaths(fast);
    match limit {
        Some(n) => b.dcache_limit(n).icache_limit(n).build(),
        None => b.build(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvfs_workdir_reports_leftovers() {
        let vfs = uvfs_vfs(uvfs::FastPaths::seeds());
        let mut p = Process::new(&vfs).unwrap();
        let dir = uvfs_workdir(&mut p, Path::new("/dev/shm")).unwrap();
        assert!(dir.starts_with("/dev/shm/uvfs-bench."));
        let fd = p
            .open(format!("{dir}/stray"), uapi::O_CREAT | uapi::O_RDWR, 0o600)
            .unwrap();
        p.close(fd).unwrap();
        p.mkdir(format!("{dir}/sub"), 0o700).unwrap();
        let mut left = uvfs_remove_workdir(&mut p, &dir).unwrap();
        left.sort();
        assert_eq!(left, ["stray", "sub"]);
        assert_eq!(p.stat(&dir).unwrap_err(), Errno::ENOENT);
        // An empty one leaves nothing to report.
        let dir = uvfs_workdir(&mut p, Path::new("/dev/shm")).unwrap();
        assert!(uvfs_remove_workdir(&mut p, &dir).unwrap().is_empty());
    }

    #[test]
    fn host_dir_reports_leftovers_and_is_removed() {
        let d = HostDir::create(&std::env::temp_dir()).unwrap();
        let path = d.path().to_path_buf();
        assert!(path.is_dir());
        std::fs::write(path.join("stray"), b"x").unwrap();
        assert_eq!(d.remove(), ["stray"]);
        assert!(!path.exists());
        let d = HostDir::create(&std::env::temp_dir()).unwrap();
        let path = d.path().to_path_buf();
        assert!(d.remove().is_empty());
        assert!(!path.exists());
    }

    #[test]
    fn cache_limits_bound_the_caches() {
        let vfs = uvfs_vfs_with_caches(uvfs::FastPaths::seeds(), Some(16));
        let mut p = Process::new(&vfs).unwrap();
        p.mkdir("/t", 0o755).unwrap();
        for f in 0..200 {
            let fd = p
                .open(format!("/t/f{f}"), uapi::O_CREAT | uapi::O_WRONLY, 0o644)
                .unwrap();
            p.close(fd).unwrap();
        }
        for f in 0..200 {
            p.stat(format!("/t/f{f}")).unwrap();
        }
        assert!(vfs.dcache_len() < 100, "{}", vfs.dcache_len());
        assert!(vfs.icache_len() < 100, "{}", vfs.icache_len());
    }

    #[test]
    fn both_backends_agree_on_errors() {
        let vfs = uvfs_vfs(uvfs::FastPaths::seeds());
        let mut u = UvfsSys(Process::new(&vfs).unwrap());
        let missing = cpath("/nonexistent-uvfs-bench/x");
        assert_eq!(u.open(&missing, uapi::O_RDONLY, 0), Err(Errno::ENOENT));
        assert_eq!(
            HostSys.open(&missing, uapi::O_RDONLY, 0),
            Err(Errno::ENOENT)
        );
        assert_eq!(u.close(1000), Err(Errno::EBADF));
        assert_eq!(HostSys.close(100_000), Err(Errno::EBADF));

        // The calls fstree and blogbench make, step by step, under a fresh
        // directory on each side.
        // (tmpfs, as uvfs is: directory sizes are tmpfs's.)
        let shm = Path::new("/dev/shm");
        let parent = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let host_parent = HostDir::create(&parent).unwrap();
        let host_base = host_parent.path().to_string_lossy().into_owned();
        let on_host = calls(&mut HostSys, &host_base);
        assert!(host_parent.remove().is_empty());
        let on_uvfs = calls(&mut u, "");
        assert_eq!(on_host.len(), on_uvfs.len());
        for (i, (h, v)) in on_host.iter().zip(&on_uvfs).enumerate() {
            assert_eq!(h, v, "step {i}: host {h:?}, uvfs {v:?}");
        }
    }

    /// One sequence of calls and what each returned (an `Ok` rendered as
    /// text, so the two backends' answers compare).
    fn calls<S: Sys>(sys: &mut S, base: &str) -> Vec<Result<String, Errno>> {
        let p = |s: &str| cpath(format!("{base}/t{s}"));
        let ok = |r: Result<(), Errno>| r.map(|()| String::new());
        let stat = |sys: &mut S, s: &str| {
            sys.stat(&p(s))
                .map(|st| format!("{:o} {} {}", st.st_mode, st.st_size, st.st_nlink))
        };
        let list = |sys: &mut S, s: &str| {
            sys.list_dir(&p(s)).map(|mut v| {
                v.sort();
                format!("{v:?}")
            })
        };
        let mut out = vec![ok(sys.mkdir(&p(""), 0o755)), ok(sys.mkdir(&p("/d"), 0o755))];
        let fd = sys
            .open(
                &p("/f"),
                uapi::O_CREAT | uapi::O_WRONLY | uapi::O_EXCL,
                0o600,
            )
            .unwrap();
        out.push(sys.write(fd, b"abc").map(|n| n.to_string()));
        out.push(ok(sys.close(fd)));
        out.push(stat(sys, "/missing"));
        out.push(stat(sys, "/f/x"));
        out.push(stat(sys, "/f"));
        out.push(stat(sys, "/d"));
        out.push(ok(sys.rename(&p("/missing"), &p("/x"))));
        out.push(ok(sys.rename(&p("/f"), &p("/d"))));
        out.push(ok(sys.mkdir(&p("/d2"), 0o755)));
        out.push(ok(sys.mkdir(&p("/d/e"), 0o755)));
        out.push(ok(sys.rename(&p("/d2"), &p("/d"))));
        out.push(ok(sys.rename(&p("/d"), &p("/d/e/sub"))));
        out.push(ok(sys.rename(&p("/d"), &p("/f"))));
        out.push(ok(sys.rename(&p("/f"), &p("/g"))));
        out.push(stat(sys, "/f"));
        // A rename over an existing file replaces it.
        let fd = sys
            .open(&p("/h"), uapi::O_CREAT | uapi::O_WRONLY, 0o600)
            .unwrap();
        out.push(ok(sys.close(fd)));
        out.push(ok(sys.rename(&p("/h"), &p("/g"))));
        out.push(stat(sys, "/h"));
        out.push(stat(sys, "/g"));
        // O_APPEND writes at the end; the position follows.
        let fd = sys
            .open(&p("/g"), uapi::O_WRONLY | uapi::O_APPEND, 0)
            .unwrap();
        out.push(sys.lseek(fd, 0, uapi::SEEK_SET).map(|n| n.to_string()));
        out.push(sys.write(fd, b"de").map(|n| n.to_string()));
        out.push(sys.lseek(fd, 0, uapi::SEEK_CUR).map(|n| n.to_string()));
        out.push(ok(sys.close(fd)));
        out.push(ok(sys
            .open(&p("/g"), uapi::O_WRONLY | uapi::O_TRUNC, 0)
            .and_then(|fd| sys.close(fd))));
        out.push(stat(sys, "/g"));
        out.push(list(sys, "/g"));
        out.push(list(sys, "/missing"));
        out.push(list(sys, ""));
        out.push(ok(remove_tree(sys, &p("/d"))));
        out.push(list(sys, ""));
        out.push(ok(remove_tree(sys, &p("/missing"))));
        out.push(ok(remove_tree(sys, &p(""))));
        out.push(stat(sys, ""));
        out
    }
}
