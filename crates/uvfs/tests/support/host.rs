//! Host-kernel fixtures of the differential tests: a scratch directory on
//! the host's tmpfs, a thread with a private mount namespace and a fresh
//! tmpfs (the sandbox of the path API's differential test), and forked
//! children that report one number back.

use std::path::{Path, PathBuf};

/// A scratch directory `uvfs-<tag>-<pid>` on the host's tmpfs (`/dev/shm`,
/// or the temporary directory where there is none): emptied if a previous
/// run left it, created, and removed with everything in it when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() {
            base.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("uvfs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The path as a string (the directories made here are UTF-8).
    pub fn as_str(&self) -> &str {
        self.0.to_str().expect("a UTF-8 path")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The size limit of the sandbox's tmpfs (`size=256m` in [`enter_sandbox`]);
/// a uvfs side that mirrors the sandbox gives its root tmpfs the same.
pub const SANDBOX_TMPFS_SIZE: u64 = 256 << 20;

/// How a sandbox thread is isolated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sandbox {
    /// Private mount namespace, fresh tmpfs on /dev/shm, chroot into it.
    Chroot,
    /// Only cwd/umask are private: a directory of the real /dev/shm.
    Plain,
}

fn must(what: &str, r: libc::c_int) {
    assert!(
        r == 0,
        "host sandbox: {what}: {}",
        std::io::Error::last_os_error()
    );
}

/// `unshare(CLONE_NEWNS | CLONE_FS)` for this thread, then every mount of
/// the new namespace made private, so nothing mounted later propagates
/// back to the host; false (nothing changed) without `CAP_SYS_ADMIN`.
/// Must run in a thread that does nothing else afterwards.
pub fn enter_private_namespace() -> bool {
    // SAFETY: unshare only changes this thread's own fs_struct and
    // namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNS | libc::CLONE_FS) } != 0 {
        return false;
    }
    // SAFETY: a NUL-terminated literal; the namespace is this thread's own.
    must("make / private", unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    });
    true
}

/// Sets up this thread's sandbox; returns the kind. Must run in a thread
/// that does nothing else afterwards (its fs_struct and namespace change).
///
/// With `CAP_SYS_ADMIN`: `unshare(CLONE_NEWNS | CLONE_FS)`, every mount made
/// private, a fresh tmpfs (`mode=755,size=256m,nr_inodes=0`) on `/dev/shm`,
/// chroot into it and chdir `/`. Without: `unshare(CLONE_FS)` only (cwd,
/// root and umask private to the thread).
pub fn enter_sandbox() -> Sandbox {
    if enter_private_namespace() {
        // SAFETY: string literals are NUL-terminated; the mount happens in
        // the private namespace just created.
        unsafe {
            must(
                "mount tmpfs",
                libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/dev/shm".as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    c"mode=755,size=256m,nr_inodes=0".as_ptr().cast(),
                ),
            );
            must("chroot", libc::chroot(c"/dev/shm".as_ptr()));
            must("chdir /", libc::chdir(c"/".as_ptr()));
        }
        Sandbox::Chroot
    } else {
        // SAFETY: as above, CLONE_FS alone (allowed unprivileged).
        must("unshare(CLONE_FS)", unsafe {
            libc::unshare(libc::CLONE_FS)
        });
        Sandbox::Plain
    }
}

/// Runs `f` in a new thread that first enters its sandbox
/// ([`enter_sandbox`]), and returns what `f` returned.
pub fn in_sandbox_thread<T: Send + 'static>(f: impl FnOnce(Sandbox) -> T + Send + 'static) -> T {
    std::thread::spawn(move || f(enter_sandbox()))
        .join()
        .expect("host thread panicked")
}

/// Runs `child` in a forked child process, which writes the number it
/// returns to a pipe and `_exit`s; returns that number (`None` if the child
/// wrote none) and the child's wait status.
///
/// # Safety
///
/// The test process has other threads, so after `fork` the child may only
/// make async-signal-safe calls: `child` must make system calls only (no
/// allocation, no locks), with everything it needs prepared before this
/// call.
pub unsafe fn fork_child(child: impl FnOnce() -> i32) -> (Option<i32>, i32) {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a writable array of two ints.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert!(r == 0, "pipe: {}", std::io::Error::last_os_error());
    // SAFETY: the child runs only `child`, which makes system calls only
    // (the caller's contract), and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let b = child().to_ne_bytes();
        // SAFETY: `fds[1]` is the pipe's write end; `b` is 4 readable bytes;
        // `_exit` ends the child without running the parent's destructors.
        unsafe {
            libc::write(fds[1], b.as_ptr().cast(), 4);
            libc::_exit(0);
        }
    }
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(fds[1]) };
    let mut b = [0u8; 4];
    // SAFETY: `fds[0]` is the read end; `b` is 4 writable bytes.
    let n = unsafe { libc::read(fds[0], b.as_mut_ptr().cast(), 4) };
    // SAFETY: closing the read end, then reaping the child.
    unsafe { libc::close(fds[0]) };
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is writable.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    ((n == 4).then(|| i32::from_ne_bytes(b)), status)
}
