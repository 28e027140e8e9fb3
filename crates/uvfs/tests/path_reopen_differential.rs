//! Differential test of `Process::reopen` against the host kernel's
//! `open("/proc/self/fd/N", flags)`.
//!
//! For every case — a target (regular files of several modes and owners,
//! a directory, a symlink held by an `O_PATH | O_NOFOLLOW` fd, a file
//! unlinked while its `O_PATH` fd is open), a flag set and a caller (root,
//! or uid/gid 1000) — a fresh tree is built on the host's tmpfs and in a
//! fresh uvfs, an `O_PATH` fd is opened on the target as root, and the
//! caller reopens it. The result (0 or errno) and the target's size after
//! the call (`O_TRUNC`) must match.
//!
//! The host caller runs in a forked child (the credentials change), which
//! only makes system calls. Skips (passes with a message) unless root.
#![cfg(target_os = "linux")]

mod support;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use support::host::{TempDir, fork_child};
use uvfs::cred::Cred;
use uvfs::uapi::*;
use uvfs::{FastPaths, Process, Vfs};

const USER: u32 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// `f`: 0644, root's, 5 bytes.
    RootFile,
    /// `w`: 0600, the user's, 5 bytes.
    UserFile,
    /// `r`: 0400, root's, 5 bytes.
    ReadOnlyFile,
    /// `x`: 0202, root's, 5 bytes: writable by others, not readable.
    OtherWritable,
    /// `d`: a directory, 0755.
    Dir,
    /// `l`: a symlink to `f`, held by `O_PATH | O_NOFOLLOW`.
    Symlink,
    /// `u`: 0644, root's, unlinked after its `O_PATH` fd was opened.
    Unlinked,
}

const TARGETS: [Target; 7] = [
    Target::RootFile,
    Target::UserFile,
    Target::ReadOnlyFile,
    Target::OtherWritable,
    Target::Dir,
    Target::Symlink,
    Target::Unlinked,
];

const FLAGS: [(&str, i32); 12] = [
    ("O_RDONLY", O_RDONLY),
    ("O_WRONLY", O_WRONLY),
    ("O_RDWR", O_RDWR),
    ("O_WRONLY|O_TRUNC", O_WRONLY | O_TRUNC),
    ("O_RDONLY|O_TRUNC", O_RDONLY | O_TRUNC),
    ("O_DIRECTORY", O_RDONLY | O_DIRECTORY),
    ("O_NOFOLLOW", O_RDONLY | O_NOFOLLOW),
    ("O_CREAT", O_RDWR | O_CREAT),
    ("O_CREAT|O_EXCL", O_RDWR | O_CREAT | O_EXCL),
    ("O_PATH", O_PATH),
    ("O_APPEND", O_WRONLY | O_APPEND),
    ("O_NOATIME", O_RDONLY | O_NOATIME),
];

/// (name, mode, uid) of the target's object; the symlink's is `f`'s link.
fn spec(t: Target) -> (&'static str, u32, u32) {
    match t {
        Target::RootFile => ("f", 0o644, 0),
        Target::UserFile => ("w", 0o600, USER),
        Target::ReadOnlyFile => ("r", 0o400, 0),
        Target::OtherWritable => ("x", 0o202, 0),
        Target::Dir => ("d", 0o755, 0),
        Target::Symlink => ("l", 0o777, 0),
        Target::Unlinked => ("u", 0o644, 0),
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The host's answer: (0 or errno, size after).
fn host_case(t: Target, flags: i32, user: bool) -> (i32, u64) {
    let dir = TempDir::new("reopen");
    let base = dir.path();
    std::fs::set_permissions(base, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (name, mode, uid) = spec(t);
    let p = base.join(name);
    match t {
        Target::Dir => std::fs::create_dir(&p).unwrap(),
        Target::Symlink => {
            std::fs::write(base.join("f"), b"hello").unwrap();
            std::os::unix::fs::symlink("f", &p).unwrap();
        }
        _ => std::fs::write(&p, b"hello").unwrap(),
    }
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    if t != Target::Symlink {
        // SAFETY: `c` is a NUL-terminated path.
        assert_eq!(unsafe { libc::chmod(c.as_ptr(), mode) }, 0);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::chown(c.as_ptr(), uid, uid) }, 0);
    }
    let pflags = O_PATH | if t == Target::Symlink { O_NOFOLLOW } else { 0 };
    // SAFETY: `c` is a NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), pflags) };
    assert!(fd >= 0, "host O_PATH open of {name}: {}", errno());
    if t == Target::Unlinked {
        std::fs::remove_file(&p).unwrap();
    }
    let magic = CString::new(format!("/proc/self/fd/{fd}")).unwrap();
    // SAFETY: the child makes system calls only; `magic` was built before
    // the fork.
    let (r, status) = unsafe {
        fork_child(|| {
            if user
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setresgid(USER, USER, USER) != 0
                    || libc::setresuid(USER, USER, USER) != 0)
            {
                return -1;
            }
            let r = libc::open(magic.as_ptr(), flags, 0o644);
            if r < 0 { *libc::__errno_location() } else { 0 }
        })
    };
    assert_eq!(status, 0, "host child status");
    let r = r.expect("host child reported");
    assert_ne!(r, -1, "host child could not change its credentials");
    // SAFETY: `struct stat` is plain integers; all zeros is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open; `st` is writable; empty path with AT_EMPTY_PATH.
    let s = unsafe { libc::fstatat(fd, c"".as_ptr(), &mut st, libc::AT_EMPTY_PATH) };
    assert_eq!(s, 0);
    // SAFETY: closing our own fd.
    unsafe { libc::close(fd) };
    let size = if t == Target::Symlink {
        std::fs::metadata(base.join("f")).unwrap().len()
    } else {
        st.st_size as u64
    };
    (r, size)
}

/// uvfs's answer to the same case.
fn uvfs_case(t: Target, flags: i32, user: bool) -> (i32, u64) {
    let vfs = Vfs::new(FastPaths::seeds());
    let mut p = Process::new(&vfs).unwrap();
    p.umask(0);
    let (name, mode, uid) = spec(t);
    let path = format!("/{name}");
    let write = |p: &mut Process, path: &str| {
        let fd = p.open(path, O_CREAT | O_WRONLY, 0o644).unwrap();
        assert_eq!(p.write(fd, b"hello").unwrap(), 5);
        p.close(fd).unwrap();
    };
    match t {
        Target::Dir => p.mkdir(&path, 0o755).unwrap(),
        Target::Symlink => {
            write(&mut p, "/f");
            p.symlink("f", &path).unwrap();
        }
        _ => write(&mut p, &path),
    }
    if t != Target::Symlink {
        p.chmod(&path, mode).unwrap();
        p.chown(&path, uid, uid).unwrap();
    }
    let pflags = O_PATH | if t == Target::Symlink { O_NOFOLLOW } else { 0 };
    let fd = p.open(&path, pflags, 0).unwrap();
    if t == Target::Unlinked {
        p.unlink(&path).unwrap();
    }
    if user {
        p.set_cred(Cred::user(USER, USER, Vec::new()));
    }
    let r = match p.reopen(fd, flags) {
        Ok(nfd) => {
            p.close(nfd).unwrap();
            0
        }
        Err(e) => e.raw(),
    };
    p.set_cred(Cred::root());
    let size = if t == Target::Symlink {
        p.stat("/f").unwrap().st_size as u64
    } else {
        p.fstatat(fd, "", AT_EMPTY_PATH).unwrap().st_size as u64
    };
    (r, size)
}

#[test]
fn reopen_matches_proc_self_fd() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the host side needs root (credentials change in a child)");
        return;
    }
    let mut diffs = Vec::new();
    let mut n = 0;
    for t in TARGETS {
        for (fname, flags) in FLAGS {
            for user in [false, true] {
                let host = host_case(t, flags, user);
                let ours = uvfs_case(t, flags, user);
                n += 1;
                if host != ours {
                    diffs.push(format!(
                        "{t:?} {fname} user={user}: host {host:?}, uvfs {ours:?}"
                    ));
                }
            }
        }
    }
    assert!(
        diffs.is_empty(),
        "{} of {n} cases differ:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    assert_eq!(n, TARGETS.len() * FLAGS.len() * 2);
}

#[test]
fn reopen_of_a_closed_fd_is_ebadf() {
    let vfs = Vfs::new(FastPaths::seeds());
    let mut p = Process::new(&vfs).unwrap();
    assert_eq!(p.reopen(7, O_RDONLY), Err(uvfs::Errno::EBADF));
    let fd = p.open("/", O_PATH, 0).unwrap();
    assert_eq!(p.reopen(fd, O_TMPFILE | O_RDWR), Err(uvfs::Errno::EINVAL));
    // A directory reopened for reading lists itself.
    let d = p.reopen(fd, O_RDONLY | O_DIRECTORY).unwrap();
    assert!(p.readdir(d).any(|e| e.unwrap().name == b"."));
}
