//! Differential test of extended attributes against the host kernel's
//! tmpfs: the same sequence of getxattr/setxattr/listxattr/removexattr
//! calls (and their l and f forms) on the same tree, as root and, in
//! forked children, as an unprivileged user, under both fast-path presets.
//! Results (value or errno), the values read and the names listed (as a
//! set: Linux lists in hash order) must agree.
#![cfg(target_os = "linux")]

mod support;

use std::ffi::CString;
use support::host::{TempDir, fork_child};
use support::vfs::{fasts, user};
use uvfs::uapi::*;
use uvfs::{Errno, Process, Vfs};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Get,
    Set,
    List,
    Remove,
}

/// One call: on a path (following symlinks or not) or on fd #i.
#[derive(Clone, Debug)]
struct Op {
    kind: Kind,
    path: &'static str,
    fd: Option<usize>,
    follow: bool,
    name: Vec<u8>,
    value: Vec<u8>,
    flags: i32,
    /// The caller's buffer size.
    buf: usize,
}

fn op(kind: Kind, path: &'static str, name: &str) -> Op {
    Op {
        kind,
        path,
        fd: None,
        follow: true,
        name: name.as_bytes().to_vec(),
        value: Vec::new(),
        flags: 0,
        buf: 1 << 17,
    }
}

fn get(path: &'static str, name: &str) -> Op {
    op(Kind::Get, path, name)
}

fn set(path: &'static str, name: &str, value: &[u8]) -> Op {
    Op {
        value: value.to_vec(),
        ..op(Kind::Set, path, name)
    }
}

fn list(path: &'static str) -> Op {
    op(Kind::List, path, "")
}

fn rm(path: &'static str, name: &str) -> Op {
    op(Kind::Remove, path, name)
}

impl Op {
    fn nofollow(mut self) -> Op {
        self.follow = false;
        self
    }

    fn fd(mut self, i: usize) -> Op {
        self.fd = Some(i);
        self
    }

    fn buf(mut self, n: usize) -> Op {
        self.buf = n;
        self
    }

    fn flags(mut self, f: i32) -> Op {
        self.flags = f;
        self
    }
}

/// The tree both sides build: `f` (0644), `p` (0600), `d` (0755), `w`
/// (0777), `s` (1777, owned by 1001), `own` (owned by 1000), `l -> f`;
/// fds: #0 `f` read-only, #1 `f` `O_PATH`, #2 `d`.
const FILES: [(&str, u32, u32); 3] = [("f", 0o644, 0), ("p", 0o600, 0), ("own", 0o644, 1000)];
const DIRS: [(&str, u32, u32); 3] = [("d", 0o755, 0), ("w", 0o777, 0), ("s", 0o1777, 1001)];

fn root_ops() -> Vec<Op> {
    let long = |n: usize| format!("user.{}", "n".repeat(n - 5));
    vec![
        get("f", "user.a"),
        set("f", "user.a", b"12"),
        get("f", "user.a"),
        get("f", "user.a").buf(0),
        get("f", "user.a").buf(1),
        get("f", "user.a").buf(2),
        set("f", "user.a", b"x").flags(XATTR_CREATE),
        set("f", "user.b", b"x").flags(XATTR_REPLACE),
        set("f", "user.b", b"x").flags(XATTR_CREATE | XATTR_REPLACE),
        set("f", "user.a", b"345").flags(XATTR_REPLACE),
        get("f", "user.a"),
        set("f", "user.a", b"x").flags(4),
        set("nx", "user.a", b"x").flags(4),
        set("f", "", b"x"),
        set("nx", "", b"x"),
        get("nx", ""),
        set("f", &long(255), b"255"),
        get("f", &long(255)),
        set("f", &long(256), b"x"),
        set("f", "user.big", &vec![7; XATTR_SIZE_MAX]),
        get("f", "user.big").buf(0),
        set("f", "user.big2", &vec![7; XATTR_SIZE_MAX + 1]),
        set("nx", "user.big2", &vec![7; XATTR_SIZE_MAX + 1]),
        set("f", "user.", b"x"),
        get("f", "user."),
        set("f", "foo.bar", b"x"),
        get("f", "foo.bar"),
        rm("f", "foo.bar"),
        set("f", "user.empty", b""),
        get("f", "user.empty"),
        get("f", "user.empty").buf(0),
        set("f", "trusted.t", b"tt"),
        set("f", "security.s", b"ss"),
        get("f", "security.s"),
        set("f", "user.zeta", b"z"),
        list("f"),
        list("f").buf(0),
        list("f").buf(10),
        rm("f", "user.a"),
        rm("f", "user.a"),
        rm("f", ""),
        get("f", "user.a"),
        list("f"),
        // Symlinks: followed, or the link itself.
        get("l", "user.zeta"),
        set("l", "user.x", b"v").nofollow(),
        get("l", "user.x").nofollow(),
        set("l", "trusted.x", b"v").nofollow(),
        list("l").nofollow(),
        list("l"),
        rm("l", "trusted.x").nofollow(),
        // Directories, fds.
        set("d", "user.dir", b"d"),
        list("d"),
        get("f", "user.zeta").fd(0),
        set("f", "user.viafd", b"fd").fd(0),
        list("f").fd(0),
        rm("f", "user.viafd").fd(0),
        get("f", "user.zeta").fd(1),
        list("f").fd(1),
        set("f", "user.q", b"q").fd(1),
        set("d", "user.fdd", b"x").fd(2),
        get("f", "user.zeta").fd(7),
        get("nx", "user.zeta"),
        list("nx"),
        set("p", "user.secret", b"s"),
        set("s", "user.sticky", b"s"),
        set("w", "user.w", b"w"),
    ]
}

fn user_ops() -> Vec<Op> {
    vec![
        get("f", "trusted.t"),
        set("f", "trusted.u", b"u"),
        set("f", "security.u", b"u"),
        rm("f", "security.s"),
        get("f", "security.s"),
        list("f"),
        list("f").buf(0),
        set("f", "user.u", b"u"),
        get("f", "user.zeta"),
        get("p", "user.secret"),
        set("own", "user.mine", b"m"),
        get("own", "user.mine"),
        rm("own", "user.mine"),
        set("s", "user.v", b"v"),
        set("s", "user.sticky", b"v"),
        get("s", "user.sticky"),
        set("w", "user.v", b"v"),
        rm("w", "user.w"),
        get("l", "user.x").nofollow(),
        set("l", "user.y", b"v").nofollow(),
        get("l", "trusted.x").nofollow(),
    ]
}

/// An op made ready for the host: C strings built before any fork.
struct HostOp {
    op: Op,
    path: CString,
    name: CString,
}

fn prepare(base: &str, ops: &[Op]) -> Vec<HostOp> {
    ops.iter()
        .map(|o| HostOp {
            op: o.clone(),
            path: CString::new(format!("{base}/{}", o.path)).unwrap(),
            name: CString::new(o.name.clone()).unwrap(),
        })
        .collect()
}

/// Runs one op on the host with system calls only: the value or
/// `-errno`; `buf` receives what a get or list returns.
fn host_exec(h: &HostOp, fds: &[i32; 3], buf: &mut [u8]) -> i64 {
    let o = &h.op;
    let (p, n) = (h.path.as_ptr(), h.name.as_ptr());
    let b = buf.as_mut_ptr().cast();
    let z = o.buf.min(buf.len());
    let v = o.value.as_ptr().cast();
    // SAFETY: valid C strings; `buf` holds `z` bytes, `value` its length.
    let r = unsafe {
        match (o.kind, o.fd, o.follow) {
            (Kind::Get, None, true) => libc::getxattr(p, n, b, z) as i64,
            (Kind::Get, None, false) => libc::lgetxattr(p, n, b, z) as i64,
            (Kind::Get, Some(i), _) => libc::fgetxattr(fd_of(fds, i), n, b, z) as i64,
            (Kind::Set, None, true) => libc::setxattr(p, n, v, o.value.len(), o.flags) as i64,
            (Kind::Set, None, false) => libc::lsetxattr(p, n, v, o.value.len(), o.flags) as i64,
            (Kind::Set, Some(i), _) => {
                libc::fsetxattr(fd_of(fds, i), n, v, o.value.len(), o.flags) as i64
            }
            (Kind::List, None, true) => libc::listxattr(p, b.cast(), z) as i64,
            (Kind::List, None, false) => libc::llistxattr(p, b.cast(), z) as i64,
            (Kind::List, Some(i), _) => libc::flistxattr(fd_of(fds, i), b.cast(), z) as i64,
            (Kind::Remove, None, true) => libc::removexattr(p, n) as i64,
            (Kind::Remove, None, false) => libc::lremovexattr(p, n) as i64,
            (Kind::Remove, Some(i), _) => libc::fremovexattr(fd_of(fds, i), n) as i64,
        }
    };
    if r < 0 {
        // SAFETY: this thread's errno.
        -i64::from(unsafe { *libc::__errno_location() })
    } else {
        r
    }
}

fn fd_of(fds: &[i32; 3], i: usize) -> i32 {
    fds.get(i).copied().unwrap_or(i as i32)
}

fn uvfs_exec(p: &mut Process, o: &Op, fds: &[i32; 3], buf: &mut [u8]) -> i64 {
    let path = format!("/{}", o.path);
    let n = &o.name[..];
    let z = o.buf.min(buf.len());
    let b = &mut buf[..z];
    let r: Result<usize, Errno> = match (o.kind, o.fd, o.follow) {
        (Kind::Get, None, true) => p.getxattr(&path, n, b),
        (Kind::Get, None, false) => p.lgetxattr(&path, n, b),
        (Kind::Get, Some(i), _) => p.fgetxattr(fd_of(fds, i), n, b),
        (Kind::Set, None, true) => p.setxattr(&path, n, &o.value, o.flags).map(|_| 0),
        (Kind::Set, None, false) => p.lsetxattr(&path, n, &o.value, o.flags).map(|_| 0),
        (Kind::Set, Some(i), _) => p.fsetxattr(fd_of(fds, i), n, &o.value, o.flags).map(|_| 0),
        (Kind::List, None, true) => p.listxattr(&path, b),
        (Kind::List, None, false) => p.llistxattr(&path, b),
        (Kind::List, Some(i), _) => p.flistxattr(fd_of(fds, i), b),
        (Kind::Remove, None, true) => p.removexattr(&path, n).map(|_| 0),
        (Kind::Remove, None, false) => p.lremovexattr(&path, n).map(|_| 0),
        (Kind::Remove, Some(i), _) => p.fremovexattr(fd_of(fds, i), n).map(|_| 0),
    };
    match r {
        Ok(n) => n as i64,
        Err(e) => -i64::from(e.raw()),
    }
}

/// What a call returned, comparable across the two sides: the result and
/// the bytes (a list as its sorted names).
fn outcome(o: &Op, r: i64, buf: &[u8]) -> Outcome {
    if r <= 0 || o.buf == 0 {
        return (r, Vec::new());
    }
    let data = &buf[..r as usize];
    match o.kind {
        Kind::Get => (r, vec![data.to_vec()]),
        Kind::List => {
            let mut v: Vec<Vec<u8>> = data
                .split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            v.sort();
            (r, v)
        }
        _ => (r, Vec::new()),
    }
}

/// A call's result and what it returned (see [`outcome`]).
type Outcome = (i64, Vec<Vec<u8>>);

fn host_side(t: &TempDir) -> (Vec<Outcome>, Vec<i64>) {
    let base = t.as_str();
    for (n, m, u) in FILES {
        let p = format!("{base}/{n}");
        std::fs::write(&p, b"").unwrap();
        let c = CString::new(p).unwrap();
        // SAFETY: valid C string.
        unsafe {
            libc::chmod(c.as_ptr(), m);
            libc::chown(c.as_ptr(), u, u);
        }
    }
    for (n, m, u) in DIRS {
        let p = format!("{base}/{n}");
        std::fs::create_dir(&p).unwrap();
        let c = CString::new(p).unwrap();
        // SAFETY: valid C string.
        unsafe {
            libc::chmod(c.as_ptr(), m);
            libc::chown(c.as_ptr(), u, u);
        }
    }
    std::os::unix::fs::symlink("f", format!("{base}/l")).unwrap();
    let c = |s: &str| CString::new(format!("{base}/{s}")).unwrap();
    // SAFETY: valid C strings; the fds are closed below.
    let fds = unsafe {
        [
            libc::open(c("f").as_ptr(), libc::O_RDONLY),
            libc::open(c("f").as_ptr(), libc::O_PATH),
            libc::open(c("d").as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY),
        ]
    };
    let mut buf = vec![0u8; 1 << 17];
    let root: Vec<_> = prepare(base, &root_ops())
        .iter()
        .map(|h| {
            let r = host_exec(h, &fds, &mut buf);
            outcome(&h.op, r, &buf)
        })
        .collect();
    let mut users = Vec::new();
    if is_root() {
        for h in prepare(base, &user_ops()) {
            let mut cbuf = vec![0u8; 1 << 17];
            // SAFETY: the child makes system calls only; `h` and `cbuf`
            // are ready before the fork.
            let (r, status) = unsafe {
                fork_child(|| {
                    if libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setresgid(1000, 1000, 1000) != 0
                        || libc::setresuid(1000, 1000, 1000) != 0
                    {
                        return i32::MIN;
                    }
                    host_exec(&h, &fds, &mut cbuf) as i32
                })
            };
            let r = r.unwrap_or_else(|| panic!("child wrote nothing ({status:#x})"));
            assert_ne!(r, i32::MIN, "child could not become user 1000");
            users.push(i64::from(r));
        }
    }
    for fd in fds {
        // SAFETY: our fds.
        unsafe { libc::close(fd) };
    }
    (root, users)
}

fn is_root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn xattrs_match_the_host_tmpfs() {
    let t = TempDir::new("xattr");
    let (want_root, want_user) = host_side(&t);
    let rops = root_ops();
    let uops = user_ops();
    // The harness sees what the host did: the value set by op 1, read by
    // op 2, and one result per unprivileged op.
    assert_eq!(want_root[2], (2, vec![b"12".to_vec()]));
    assert!(want_user.is_empty() || want_user.len() == uops.len());
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        for (n, m, u) in FILES {
            let fd = p.open(format!("/{n}"), O_CREAT | O_WRONLY, 0).unwrap();
            p.fchmod(fd, m).unwrap();
            p.fchown(fd, u, u).unwrap();
            p.close(fd).unwrap();
        }
        for (n, m, u) in DIRS {
            p.mkdir(format!("/{n}"), 0).unwrap();
            p.chmod(format!("/{n}"), m).unwrap();
            p.chown(format!("/{n}"), u, u).unwrap();
        }
        p.symlink("f", "/l").unwrap();
        let fds = [
            p.open("/f", O_RDONLY, 0).unwrap(),
            p.open("/f", O_PATH, 0).unwrap(),
            p.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap(),
        ];
        let mut buf = vec![0u8; 1 << 17];
        for (i, (o, w)) in rops.iter().zip(&want_root).enumerate() {
            let before = p.fstat(fds[0]).unwrap();
            let r = uvfs_exec(&mut p, o, &fds, &mut buf);
            let got = outcome(o, r, &buf);
            let short = |v: &Outcome| {
                (
                    v.0,
                    v.1.iter()
                        .map(|x| String::from_utf8_lossy(&x[..x.len().min(40)]).into_owned())
                        .collect::<Vec<_>>(),
                )
            };
            assert_eq!(short(w), short(&got), "root op {i}: {:?} ({fast})", o.kind);
            // A change stamps ctime only; a failure, a read, nothing.
            let after = p.fstat(fds[0]).unwrap();
            if o.path == "f" || o.path == "l" && o.follow {
                let changed = (after.st_ctime, after.st_ctime_nsec)
                    != (before.st_ctime, before.st_ctime_nsec);
                let expect = r == 0 && matches!(o.kind, Kind::Set | Kind::Remove);
                assert_eq!(changed, expect, "ctime after root op {i} ({fast})");
                assert_eq!(
                    (after.st_mtime, after.st_mtime_nsec),
                    (before.st_mtime, before.st_mtime_nsec),
                    "mtime after root op {i}"
                );
            }
            support::vfs::tick();
        }
        if want_user.is_empty() {
            eprintln!("skipped the unprivileged half: not root");
            continue;
        }
        p.set_cred(user(1000, 1000));
        for (i, (o, w)) in uops.iter().zip(&want_user).enumerate() {
            // The host's children ran one after the other on one tree, so
            // each saw its predecessors' changes, as these calls do.
            let r = uvfs_exec(&mut p, o, &fds, &mut buf);
            assert_eq!(*w, r, "user op {i}: {o:?} ({fast})");
        }
    }
}
