//! `Process::chroot` against the host kernel's `chroot(2)`: the same
//! calls in a sandbox thread on the host (its own fs_struct and a private
//! tmpfs; root needed) and on uvfs under every fast-path setting give the
//! same results and errno: `/` and `..` stop at the new root, absolute
//! symlinks resolve inside it, the current directory is left where it was
//! (`getcwd` then reads `(unreachable)…`), an fd opened before leads out
//! (`fchdir` and `..`), fork copies the root and `unshare(CLONE_FS)` keeps
//! it, and the checks come in Linux's order (lookup, search permission,
//! `CAP_SYS_CHROOT`).

mod support;

use std::ffi::CString;
use support::host::{Sandbox, in_sandbox_thread};
use support::vfs::{each, fasts};
use uvfs::cred::Cred;
use uvfs::uapi::*;
use uvfs::{Process, Vfs};

/// The calls the scenario makes, on the host or on uvfs. Errors are errno
/// numbers.
trait Sys {
    fn mkdir(&mut self, p: &str) -> Result<(), i32>;
    fn symlink(&mut self, target: &str, p: &str) -> Result<(), i32>;
    fn chmod(&mut self, p: &str, mode: u32) -> Result<(), i32>;
    fn open_dir(&mut self, p: &str) -> Result<i32, i32>;
    fn chdir(&mut self, p: &str) -> Result<(), i32>;
    fn fchdir(&mut self, fd: i32) -> Result<(), i32>;
    fn chroot(&mut self, p: &str) -> Result<(), i32>;
    /// The getcwd system call's answer (not glibc's, which turns an
    /// unreachable path into `ENOENT`).
    fn getcwd(&mut self) -> Result<String, i32>;
    fn ino(&mut self, p: &str) -> Result<u64, i32>;
    /// This thread (host) or process (uvfs) becomes uid/gid 1000.
    fn become_user(&mut self);
}

struct Host;

fn cs(p: &str) -> CString {
    CString::new(p).unwrap()
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap()
}

fn ok(r: i32) -> Result<(), i32> {
    if r == 0 { Ok(()) } else { Err(errno()) }
}

impl Sys for Host {
    fn mkdir(&mut self, p: &str) -> Result<(), i32> {
        // SAFETY: a NUL-terminated path.
        ok(unsafe { libc::mkdir(cs(p).as_ptr(), 0o755) })
    }
    fn symlink(&mut self, target: &str, p: &str) -> Result<(), i32> {
        // SAFETY: NUL-terminated paths.
        ok(unsafe { libc::symlink(cs(target).as_ptr(), cs(p).as_ptr()) })
    }
    fn chmod(&mut self, p: &str, mode: u32) -> Result<(), i32> {
        // SAFETY: a NUL-terminated path.
        ok(unsafe { libc::chmod(cs(p).as_ptr(), mode) })
    }
    fn open_dir(&mut self, p: &str) -> Result<i32, i32> {
        // SAFETY: a NUL-terminated path.
        let fd = unsafe { libc::open(cs(p).as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
        if fd < 0 { Err(errno()) } else { Ok(fd) }
    }
    fn chdir(&mut self, p: &str) -> Result<(), i32> {
        // SAFETY: a NUL-terminated path.
        ok(unsafe { libc::chdir(cs(p).as_ptr()) })
    }
    fn fchdir(&mut self, fd: i32) -> Result<(), i32> {
        // SAFETY: fchdir takes any number.
        ok(unsafe { libc::fchdir(fd) })
    }
    fn chroot(&mut self, p: &str) -> Result<(), i32> {
        // SAFETY: a NUL-terminated path; this thread's fs_struct is its own.
        ok(unsafe { libc::chroot(cs(p).as_ptr()) })
    }
    fn getcwd(&mut self) -> Result<String, i32> {
        let mut buf = [0u8; 4096];
        // SAFETY: the buffer is writable for its length.
        let n = unsafe { libc::syscall(libc::SYS_getcwd, buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            return Err(errno());
        }
        let s = String::from_utf8_lossy(&buf[..n as usize - 1]).into_owned();
        Ok(s)
    }
    fn ino(&mut self, p: &str) -> Result<u64, i32> {
        // SAFETY: an all-zero stat is valid; the path is NUL-terminated.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        ok(unsafe { libc::stat(cs(p).as_ptr(), &mut st) })?;
        Ok(st.st_ino)
    }
    fn become_user(&mut self) {
        // The raw system calls change this thread only (glibc's wrappers
        // would change every thread of the test process).
        // SAFETY: plain system calls on this thread's credentials.
        unsafe {
            assert_eq!(libc::syscall(libc::SYS_setresgid, 1000, 1000, 1000), 0);
            assert_eq!(libc::syscall(libc::SYS_setresuid, 1000, 1000, 1000), 0);
        }
    }
}

struct Uv(Process);

fn e<T>(r: Result<T, uvfs::Errno>) -> Result<T, i32> {
    r.map_err(|e| e.raw())
}

impl Sys for Uv {
    fn mkdir(&mut self, p: &str) -> Result<(), i32> {
        e(self.0.mkdir(p, 0o755))
    }
    fn symlink(&mut self, target: &str, p: &str) -> Result<(), i32> {
        e(self.0.symlink(target, p))
    }
    fn chmod(&mut self, p: &str, mode: u32) -> Result<(), i32> {
        e(self.0.chmod(p, mode))
    }
    fn open_dir(&mut self, p: &str) -> Result<i32, i32> {
        e(self.0.open(p, O_RDONLY | O_DIRECTORY, 0))
    }
    fn chdir(&mut self, p: &str) -> Result<(), i32> {
        e(self.0.chdir(p))
    }
    fn fchdir(&mut self, fd: i32) -> Result<(), i32> {
        e(self.0.fchdir(fd))
    }
    fn chroot(&mut self, p: &str) -> Result<(), i32> {
        e(self.0.chroot(p))
    }
    fn getcwd(&mut self) -> Result<String, i32> {
        e(self.0.getcwd()).map(|v| String::from_utf8(v).unwrap())
    }
    fn ino(&mut self, p: &str) -> Result<u64, i32> {
        e(self.0.stat(p)).map(|s| s.st_ino)
    }
    fn become_user(&mut self) {
        self.0.set_cred(Cred::user(1000, 1000, Vec::new()));
    }
}

/// An unreachable path names the directory from the real root, which on
/// the host is the sandbox's tmpfs mounted somewhere: keep the marker and
/// the last component.
fn cwd_of(s: &mut dyn Sys) -> String {
    match s.getcwd() {
        Ok(p) if p.starts_with("(unreachable)") => {
            format!("(unreachable).../{}", p.rsplit('/').next().unwrap_or(""))
        }
        r => format!("{r:?}"),
    }
}

/// `v` as the scenario logs it.
fn shown(v: impl std::fmt::Debug) -> String {
    format!("{v:?}")
}

/// The scenario; every line is compared.
fn scenario(s: &mut dyn Sys) -> Vec<String> {
    let mut out = Vec::new();
    let mut log = |what: &str, v: String| out.push(format!("{what}: {v}"));
    for d in ["/r", "/r/a", "/r/a/b", "/r/locked", "/out"] {
        s.mkdir(d).unwrap();
    }
    s.symlink("/a/b", "/r/abs").unwrap();
    s.symlink("../../..", "/r/a/b/up").unwrap();
    s.chmod("/r/locked", 0o700).unwrap();
    let out_fd = s.open_dir("/out").unwrap();
    s.chdir("/r/a").unwrap();
    let real_b = s.ino("/r/a/b").unwrap();
    log("chroot file-less path", shown(s.chroot("/r/missing")));
    // Before the chroot /r/abs names /a/b of the real root: missing.
    log(
        "chroot through an absolute link",
        shown(s.chroot("/r/abs/up")),
    );
    log("chroot /r", shown(s.chroot("/r")));
    log("cwd kept", cwd_of(s));
    let root = s.ino("/").unwrap();
    log("/.. is /", format!("{}", s.ino("/..") == Ok(root)));
    log(
        "../../.. from cwd is /",
        format!("{}", s.ino("../../..") == Ok(root)),
    );
    log("/abs is /a/b", format!("{}", s.ino("/abs") == Ok(real_b)));
    log(
        "/a/b/up stops at /",
        format!("{}", s.ino("/a/b/up") == Ok(root)),
    );
    log("/r hidden", shown(s.ino("/r")));
    log("/out hidden", shown(s.ino("/out")));
    // Out through the fd opened before: the cwd leaves the root, and `..`
    // from there climbs to the real root (the kernel's classic escape).
    s.fchdir(out_fd).unwrap();
    log("cwd outside", cwd_of(s));
    log("../r/abs from outside", shown(s.ino("../r/a").map(|_| ())));
    log(
        "/ still the new root",
        format!("{}", s.ino("/") == Ok(root)),
    );
    // A second chroot, relative to a cwd outside: allowed, nests nothing.
    log("chroot ../out", shown(s.chroot("../out")));
    log("cwd at the new root", cwd_of(s));
    log(
        "/ is out now",
        format!("{}", s.ino("/..").is_ok() && s.ino("/a").is_err()),
    );
    s.chdir("..").unwrap();
    log("cwd after .. at root", cwd_of(s));
    // Checks in Linux's order, as an unprivileged user.
    s.mkdir("/sub").unwrap();
    s.mkdir("/lockedsub").unwrap();
    s.chmod("/lockedsub", 0o700).unwrap();
    s.become_user();
    log("user chroot missing", shown(s.chroot("/nope")));
    log("user chroot no search", shown(s.chroot("/lockedsub/x")));
    log("user chroot locked dir", shown(s.chroot("/lockedsub")));
    log("user chroot", shown(s.chroot("/sub")));
    out
}

#[test]
fn chroot_matches_the_host() {
    let host = in_sandbox_thread(|sb| {
        if sb != Sandbox::Chroot {
            return None;
        }
        Some(scenario(&mut Host))
    });
    let Some(host) = host else {
        eprintln!("skipped: chroot(2) on the host needs root (CAP_SYS_ADMIN, CAP_SYS_CHROOT)");
        return;
    };
    assert!(host.iter().any(|l| l == "chroot /r: Ok(())"), "{host:#?}");
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut uv = Uv(Process::new(&vfs).unwrap());
        let got = scenario(&mut uv);
        assert_eq!(got, host, "fast paths {fast}");
    }
}

#[test]
fn fork_copies_the_root_and_threads_share_it() {
    each(|vfs, p| {
        let fast = vfs.fastpaths();
        p.mkdir("/r", 0o755).unwrap();
        p.mkdir("/r/in", 0o755).unwrap();
        let thread = p.new_thread();
        p.chroot("/r").unwrap();
        let mut t = thread;
        // A thread shares the fs_struct: its walks see the new root.
        assert!(t.stat("/in").is_ok(), "{fast}");
        assert!(t.stat("/r").is_err(), "{fast}");
        let mut child = p.fork().unwrap();
        assert!(child.stat("/in").is_ok(), "{fast}");
        // unshare(CLONE_FS) keeps the root; a chroot after it is the
        // thread's own.
        t.unshare_fs();
        t.chroot("/in").unwrap();
        assert!(t.stat("/in").is_err(), "{fast}");
        assert!(p.stat("/in").is_ok(), "{fast}");
        // `..` stops at the child's root too.
        assert!(child.stat("/../r").is_err(), "{fast}");
        drop(child);
        drop(t);
    });
}
