//! Differential test of `uvfs::cred` against the host kernel.
//!
//! For every case the parent (root) prepares a fresh directory under
//! `/dev/shm` — `base/cN` with a chosen mode and owner, and usually a target
//! `base/cN/t` (file or directory) with a chosen mode and owner — and
//! stats them. A forked child then takes the case's credentials
//! (`setgroups`, `setresgid`, `setresuid`, with saved = effective), sets the
//! umask, performs one operation, writes its result (0 or errno) to a pipe
//! and `_exit`s. The parent compares the result with what the `cred`
//! functions predict for the same `Cred` and the `Attr`s built from the host
//! stat, and, where the operation changes or creates an inode, the host's
//! resulting mode, uid and gid with the predicted ones.
//!
//! The prediction for a path operation includes the path walk's search
//! check on `cN` ([`permission`] with `MAY_EXEC`; `base` and `/dev/shm` are
//! searchable by everyone), made with the same credentials as the
//! operation (for access(2), the overridden ones).
//!
//! The child runs after `fork` in a multi-threaded process, so it only
//! makes system calls: everything it needs (paths, group lists) is
//! prepared before the fork, and it does not allocate.
//!
//! Skips (passes with a message) unless run as root on Linux.
#![cfg(target_os = "linux")]

mod support;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use support::host::{TempDir, fork_child};
use uvfs::Errno;
use uvfs::cred::*;
use uvfs::fs::{Attr, S_IFDIR, S_IFMT, S_IFREG, Timespec};

/// The credentials a child takes.
#[derive(Clone, Copy, Debug)]
struct Ids {
    name: &'static str,
    ruid: u32,
    euid: u32,
    rgid: u32,
    egid: u32,
    groups: &'static [u32],
}

impl Ids {
    /// The `Cred` the kernel builds from these ids (fs ids follow the
    /// effective ones).
    fn cred(&self) -> Cred {
        Cred {
            uid: self.ruid,
            gid: self.rgid,
            euid: self.euid,
            egid: self.egid,
            fsuid: self.euid,
            fsgid: self.egid,
            groups: self.groups.to_vec(),
        }
    }
}

const fn ids(name: &'static str, uid: u32, gid: u32, groups: &'static [u32]) -> Ids {
    Ids {
        name,
        ruid: uid,
        euid: uid,
        rgid: gid,
        egid: gid,
        groups,
    }
}

/// Default owner of targets and their group.
const OWNER_UID: u32 = 1000;
const GRP: u32 = 2000;
const GRP2: u32 = 2001;
const OGRP: u32 = 3000;
const OTHER_UID: u32 = 1001;

const ROOT: Ids = ids("root", 0, 0, &[]);
/// The owner, outside the target's group.
const OWNER: Ids = ids("owner", OWNER_UID, OGRP, &[]);
/// The owner, in the target's group (and GRP2) by supplementary groups.
const OWNER_G: Ids = ids("owner+grp", OWNER_UID, OGRP, &[GRP, GRP2]);
/// A member of the target's group by its gid.
const MEMBER: Ids = ids("member", OTHER_UID, GRP, &[]);
/// A member of the target's group by a supplementary group.
const SUPP: Ids = ids("supp-member", OTHER_UID, OGRP, &[GRP]);
/// Neither owner nor member.
const OTHER: Ids = ids("other", OTHER_UID, OGRP, &[GRP2]);
/// Real user 1001, effective root.
const R_USER_E_ROOT: Ids = Ids {
    name: "ruid1001/euid0",
    ruid: OTHER_UID,
    euid: 0,
    rgid: OGRP,
    egid: 0,
    groups: &[],
};
/// Real root, effective user 1001 (permitted capabilities kept).
const R_ROOT_E_USER: Ids = Ids {
    name: "ruid0/euid1001",
    ruid: 0,
    euid: OTHER_UID,
    rgid: 0,
    egid: OGRP,
    groups: &[],
};
/// Real gid the target's group, effective gid another.
const R_GRP_E_OGRP: Ids = Ids {
    name: "rgid2000/egid3000",
    ruid: OTHER_UID,
    euid: OTHER_UID,
    rgid: GRP,
    egid: OGRP,
    groups: &[],
};

const PLAIN: [Ids; 5] = [ROOT, OWNER, MEMBER, SUPP, OTHER];

/// A file or directory the parent creates.
#[derive(Clone, Copy, Debug)]
struct Node {
    dir: bool,
    mode: u32,
    uid: u32,
    gid: u32,
}

const fn file(mode: u32) -> Node {
    Node {
        dir: false,
        mode,
        uid: OWNER_UID,
        gid: GRP,
    }
}

const fn dir(mode: u32, uid: u32, gid: u32) -> Node {
    Node {
        dir: true,
        mode,
        uid,
        gid,
    }
}

/// The default case directory: searchable and writable by nobody but root.
const DIR: Node = dir(0o755, 0, 0);

#[derive(Clone, Copy)]
enum Op {
    /// open(t, flags).
    Open(i32),
    /// fstatat(t): the walk's search permission only.
    Stat,
    /// faccessat(t, mode, AT_EACCESS if the flag).
    Access(i32, bool),
    /// unlink(t).
    Unlink,
    /// rmdir(t).
    Rmdir,
    /// open(cN/new, O_CREAT|O_EXCL|O_WRONLY, mode) under umask.
    Create(u32, u32),
    /// mkdir(cN/new, mode) under umask.
    Mkdir(u32, u32),
    /// chmod(t, mode).
    Chmod(u32),
    /// chown(t, uid, gid) (None: -1).
    Chown(Option<u32>, Option<u32>),
    /// utimensat(t, times) with these tv_nsec (None: NULL times).
    Utimens(Option<[i64; 2]>),
    /// open(t, O_WRONLY) then write one byte.
    Write,
    /// truncate(t, 0).
    Truncate,
}

/// Modes in octal, as the kernel's tools print them.
impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nsec = |n: i64| match n {
            UTIME_NOW => "NOW".to_string(),
            UTIME_OMIT => "OMIT".to_string(),
            n => n.to_string(),
        };
        let id = |x: Option<u32>| x.map_or("-1".to_string(), |v| v.to_string());
        match *self {
            Op::Open(fl) => write!(f, "open(flags {fl:#o})"),
            Op::Stat => write!(f, "stat"),
            Op::Access(m, ea) => write!(f, "faccessat(mode {m}, eaccess {ea})"),
            Op::Unlink => write!(f, "unlink"),
            Op::Rmdir => write!(f, "rmdir"),
            Op::Create(m, um) => write!(f, "create(mode {m:o}, umask {um:03o})"),
            Op::Mkdir(m, um) => write!(f, "mkdir(mode {m:o}, umask {um:03o})"),
            Op::Chmod(m) => write!(f, "chmod({m:o})"),
            Op::Chown(u, g) => write!(f, "chown({}, {})", id(u), id(g)),
            Op::Utimens(None) => write!(f, "utimensat(NULL)"),
            Op::Utimens(Some([a, m])) => write!(f, "utimensat([{}, {}])", nsec(a), nsec(m)),
            Op::Write => write!(f, "write"),
            Op::Truncate => write!(f, "truncate"),
        }
    }
}

#[derive(Clone, Debug)]
struct Case {
    ids: Ids,
    dir: Node,
    target: Option<Node>,
    op: Op,
}

fn case(ids: Ids, dir: Node, target: Option<Node>, op: Op) -> Case {
    Case {
        ids,
        dir,
        target,
        op,
    }
}

/// What the kernel or the model says: the result, and for operations that
/// change or create an inode (and succeed) its mode, uid and gid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Outcome {
    errno: i32,
    inode: Option<(u32, u32, u32)>,
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let fmodes = [
        0o000, 0o400, 0o040, 0o004, 0o600, 0o060, 0o006, 0o644, 0o604, 0o070, 0o700, 0o777, 0o100,
        0o010, 0o001,
    ];
    // open: the permission classes and root's overrides.
    for ids in PLAIN {
        for &m in &fmodes {
            for fl in [libc::O_RDONLY, libc::O_WRONLY, libc::O_RDWR] {
                v.push(case(ids, DIR, Some(file(m)), Op::Open(fl)));
            }
        }
    }
    // Directories: read (open O_DIRECTORY) and search (stat inside).
    let dmodes = [
        0o000, 0o100, 0o010, 0o001, 0o400, 0o040, 0o004, 0o700, 0o070, 0o007, 0o755, 0o666, 0o311,
    ];
    for ids in PLAIN {
        for &m in &dmodes {
            v.push(case(
                ids,
                DIR,
                Some(dir(m, OWNER_UID, GRP)),
                Op::Open(libc::O_RDONLY | libc::O_DIRECTORY),
            ));
            v.push(case(
                ids,
                dir(m, OWNER_UID, GRP),
                Some(file(0o644)),
                Op::Stat,
            ));
        }
    }
    // access(2)/faccessat(AT_EACCESS), including real != effective ids.
    let amodes = [
        libc::F_OK,
        libc::R_OK,
        libc::W_OK,
        libc::X_OK,
        libc::R_OK | libc::X_OK,
    ];
    let all = [
        ROOT,
        OWNER,
        MEMBER,
        SUPP,
        OTHER,
        R_USER_E_ROOT,
        R_ROOT_E_USER,
        R_GRP_E_OGRP,
    ];
    for ids in all {
        for m in [
            0o000, 0o600, 0o060, 0o006, 0o100, 0o010, 0o001, 0o750, 0o705,
        ] {
            for &am in &amodes {
                for ea in [false, true] {
                    v.push(case(ids, DIR, Some(file(m)), Op::Access(am, ea)));
                }
            }
        }
        for m in [0o000, 0o700, 0o070] {
            for ea in [false, true] {
                let d = dir(m, OWNER_UID, GRP);
                v.push(case(ids, DIR, Some(d), Op::Access(libc::X_OK, ea)));
                v.push(case(ids, DIR, Some(d), Op::Access(libc::R_OK, ea)));
                // The walk through a directory of this mode.
                v.push(case(ids, d, Some(file(0o644)), Op::Access(libc::F_OK, ea)));
            }
        }
        // open uses the effective ids.
        for m in [0o600, 0o060, 0o006] {
            v.push(case(ids, DIR, Some(file(m)), Op::Open(libc::O_RDONLY)));
        }
    }
    // unlink/rmdir: sticky and plain directories, different owners.
    for ids in [ROOT, OWNER, MEMBER, OTHER] {
        for dm in [0o1777, 0o1770, 0o777, 0o755, 0o1755, 0o1733, 0o1776] {
            for downer in [0, OTHER_UID] {
                for vowner in [OWNER_UID, OTHER_UID, 0] {
                    let d = dir(dm, downer, GRP);
                    let mut t = file(0o000);
                    t.uid = vowner;
                    v.push(case(ids, d, Some(t), Op::Unlink));
                }
                let d = dir(dm, downer, GRP);
                v.push(case(ids, d, Some(dir(0o755, OWNER_UID, GRP)), Op::Rmdir));
            }
        }
    }
    // create and mkdir: plain and set-group-ID directories, umasks.
    let parents = [
        dir(0o777, 0, 0),
        dir(0o2777, 0, GRP),
        dir(0o755, 0, 0),
        dir(0o733, 0, 0),
        dir(0o2770, 0, GRP),
        dir(0o1777, OTHER_UID, OGRP),
    ];
    for ids in [ROOT, OWNER, MEMBER, SUPP, OTHER] {
        for p in parents {
            for m in [0o644, 0o2755, 0o2745, 0o6777, 0o2770, 0o4711] {
                for um in [0o022, 0o010, 0] {
                    v.push(case(ids, p, None, Op::Create(m, um)));
                }
            }
            for m in [0o755, 0o2755, 0o1777, 0o7777] {
                for um in [0o022, 0] {
                    v.push(case(ids, p, None, Op::Mkdir(m, um)));
                }
            }
        }
    }
    // chmod.
    for ids in [ROOT, OWNER, OWNER_G, MEMBER, OTHER] {
        for t in [file(0o644), file(0o2755), dir(0o755, OWNER_UID, GRP)] {
            for m in [0o600, 0o2755, 0o4755, 0o6777, 0o1777, 0o2745, 0o000] {
                v.push(case(ids, DIR, Some(t), Op::Chmod(m)));
            }
        }
    }
    // chown.
    let owners = [
        (None, None),
        (Some(OWNER_UID), None),
        (Some(OTHER_UID), None),
        (None, Some(GRP)),
        (None, Some(OGRP)),
        (None, Some(GRP2)),
        (Some(0), Some(0)),
        (Some(OWNER_UID), Some(OGRP)),
        (Some(OWNER_UID), Some(GRP2)),
    ];
    for ids in [ROOT, OWNER, OWNER_G, MEMBER, OTHER] {
        let targets = [
            file(0o644),
            file(0o4755),
            file(0o2755),
            file(0o2745),
            file(0o6755),
            file(0o6745),
            dir(0o6755, OWNER_UID, GRP),
        ];
        for t in targets {
            for (u, g) in owners {
                v.push(case(ids, DIR, Some(t), Op::Chown(u, g)));
            }
        }
    }
    // utimensat.
    let now = UTIME_NOW;
    let omit = UTIME_OMIT;
    let times = [
        None,
        Some([now, now]),
        Some([omit, omit]),
        Some([now, omit]),
        Some([omit, now]),
        Some([123, 456]),
        Some([123, omit]),
    ];
    for ids in [ROOT, OWNER, MEMBER, OTHER] {
        for m in [0o644, 0o666, 0o664, 0o000] {
            for t in times {
                v.push(case(ids, DIR, Some(file(m)), Op::Utimens(t)));
            }
        }
        // Both omitted: 0 even where the path cannot be resolved.
        for t in [None, Some([omit, omit])] {
            v.push(case(
                ids,
                dir(0o700, 0, 0),
                Some(file(0o666)),
                Op::Utimens(t),
            ));
        }
    }
    // write and truncate: set-ID bit removal.
    for ids in [ROOT, OWNER, OWNER_G, MEMBER, SUPP, OTHER] {
        for m in [
            0o4777, 0o2777, 0o2767, 0o6777, 0o6767, 0o777, 0o2766, 0o4666, 0o644,
        ] {
            v.push(case(ids, DIR, Some(file(m)), Op::Write));
            v.push(case(ids, DIR, Some(file(m)), Op::Truncate));
        }
    }
    v
}

fn attr_of(st: &libc::stat) -> Attr {
    let ts = |s: i64, n: i64| Timespec {
        sec: s,
        nsec: n as u32,
    };
    Attr {
        ino: st.st_ino,
        mode: st.st_mode,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        blksize: st.st_blksize as u32,
        atime: ts(st.st_atime, st.st_atime_nsec),
        mtime: ts(st.st_mtime, st.st_mtime_nsec),
        ctime: ts(st.st_ctime, st.st_ctime_nsec),
        btime: Timespec::default(),
        rdev: 0,
        acl: 0,
    }
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("no NUL in paths")
}

fn host_stat(p: &Path) -> Option<libc::stat> {
    let c = cstr(p);
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a writable `stat`.
    let r = unsafe { libc::lstat(c.as_ptr(), &mut st) };
    (r == 0).then_some(st)
}

fn check(r: i32, what: &str) {
    assert!(r == 0, "{what}: {}", std::io::Error::last_os_error());
}

/// Creates `n` at `p` as root with its mode and owner (chown before chmod,
/// so that chown does not clear the set-ID bits).
fn make(p: &Path, n: &Node) {
    let c = cstr(p);
    if n.dir {
        // SAFETY: `c` is a NUL-terminated path.
        check(unsafe { libc::mkdir(c.as_ptr(), 0o700) }, "mkdir");
    } else {
        // SAFETY: `c` is a NUL-terminated path; the fd is closed below.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                0o600,
            )
        };
        assert!(fd >= 0, "create {p:?}: {}", std::io::Error::last_os_error());
        // SAFETY: `fd` is the descriptor just opened.
        unsafe { libc::close(fd) };
    }
    // SAFETY: `c` is a NUL-terminated path.
    check(unsafe { libc::chown(c.as_ptr(), n.uid, n.gid) }, "chown");
    // SAFETY: `c` is a NUL-terminated path.
    check(unsafe { libc::chmod(c.as_ptr(), n.mode) }, "chmod");
}

/// What the child needs, prepared before the fork.
struct Prepared {
    target: CString,
    newpath: CString,
    groups: Vec<libc::gid_t>,
}

/// The child's side: take the ids, run the op, return 0 or errno (or a
/// negative code if taking the ids failed). Only system calls: this runs
/// after fork in a multi-threaded process.
fn child(case: &Case, p: &Prepared) -> i32 {
    let ids = &case.ids;
    // SAFETY: `p.groups` is a live Vec of `gid_t`, its pointer valid for
    // `len` elements (or dangling but unread when empty).
    if unsafe { libc::setgroups(p.groups.len(), p.groups.as_ptr()) } != 0 {
        return -1;
    }
    // SAFETY: plain syscall on integers.
    if unsafe { libc::setresgid(ids.rgid, ids.egid, ids.egid) } != 0 {
        return -2;
    }
    // SAFETY: plain syscall on integers.
    if unsafe { libc::setresuid(ids.ruid, ids.euid, ids.euid) } != 0 {
        return -3;
    }
    let t = p.target.as_ptr();
    let errno = || -> i32 {
        // SAFETY: errno is thread-local and always readable.
        unsafe { *libc::__errno_location() }
    };
    let ret = |r: i32| if r < 0 { errno() } else { 0 };
    match case.op {
        Op::Open(fl) => {
            // SAFETY: `t` is a NUL-terminated path.
            let fd = unsafe { libc::open(t, fl | libc::O_CLOEXEC) };
            if fd < 0 {
                return errno();
            }
            // SAFETY: `fd` was just opened.
            unsafe { libc::close(fd) };
            0
        }
        Op::Stat => {
            // SAFETY: an all-zero `stat` is valid; `t` is a NUL-terminated path.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: as above, `st` is writable.
            ret(unsafe { libc::stat(t, &mut st) })
        }
        Op::Access(m, ea) => {
            let fl = if ea { libc::AT_EACCESS } else { 0 };
            // SAFETY: `t` is a NUL-terminated path.
            ret(unsafe { libc::faccessat(libc::AT_FDCWD, t, m, fl) })
        }
        // SAFETY: `t` is a NUL-terminated path.
        Op::Unlink => ret(unsafe { libc::unlink(t) }),
        // SAFETY: `t` is a NUL-terminated path.
        Op::Rmdir => ret(unsafe { libc::rmdir(t) }),
        Op::Create(m, um) => {
            // SAFETY: plain syscall; `newpath` is a NUL-terminated path.
            unsafe { libc::umask(um) };
            // SAFETY: as above.
            let fd = unsafe {
                libc::open(
                    p.newpath.as_ptr(),
                    libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                    m,
                )
            };
            if fd < 0 {
                return errno();
            }
            // SAFETY: `fd` was just opened.
            unsafe { libc::close(fd) };
            0
        }
        Op::Mkdir(m, um) => {
            // SAFETY: plain syscall; `newpath` is a NUL-terminated path.
            unsafe { libc::umask(um) };
            // SAFETY: as above.
            ret(unsafe { libc::mkdir(p.newpath.as_ptr(), m) })
        }
        // SAFETY: `t` is a NUL-terminated path.
        Op::Chmod(m) => ret(unsafe { libc::chmod(t, m) }),
        Op::Chown(u, g) => {
            let u = u.unwrap_or(u32::MAX);
            let g = g.unwrap_or(u32::MAX);
            // SAFETY: `t` is a NUL-terminated path.
            ret(unsafe { libc::chown(t, u, g) })
        }
        Op::Utimens(times) => {
            let ts = times.map(|[a, m]| {
                [
                    libc::timespec {
                        tv_sec: 1000,
                        tv_nsec: a,
                    },
                    libc::timespec {
                        tv_sec: 2000,
                        tv_nsec: m,
                    },
                ]
            });
            let ptr = ts.as_ref().map_or(std::ptr::null(), |a| a.as_ptr());
            // SAFETY: `t` is a NUL-terminated path; `ptr` is NULL or points
            // at two timespecs on this stack frame.
            ret(unsafe { libc::utimensat(libc::AT_FDCWD, t, ptr, 0) })
        }
        Op::Write => {
            // SAFETY: `t` is a NUL-terminated path.
            let fd = unsafe { libc::open(t, libc::O_WRONLY | libc::O_CLOEXEC) };
            if fd < 0 {
                return errno();
            }
            // SAFETY: `fd` is open; the buffer is one readable byte.
            let n = unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) };
            let r = if n < 0 { errno() } else { 0 };
            // SAFETY: `fd` was opened above.
            unsafe { libc::close(fd) };
            r
        }
        // SAFETY: `t` is a NUL-terminated path.
        Op::Truncate => ret(unsafe { libc::truncate(t, 0) }),
    }
}

/// Runs `case` in a forked child and returns the host's outcome.
fn run_host(case: &Case, p: &Prepared, newpath: &Path, target: &Path) -> Outcome {
    // SAFETY: the child only makes system calls (see `child`): everything
    // it needs is in `case` and `p`, prepared before the fork.
    let (r, status) = unsafe { fork_child(|| child(case, p)) };
    let Some(errno) = r else {
        panic!("child of {case:?} wrote no result (status {status:#x})");
    };
    assert!(
        errno >= 0,
        "child of {case:?} could not take its ids: step {errno}"
    );
    let inode = if errno != 0 {
        None
    } else {
        match case.op {
            Op::Create(..) | Op::Mkdir(..) => host_stat(newpath),
            Op::Chmod(_) | Op::Chown(..) | Op::Write | Op::Truncate => host_stat(target),
            _ => None,
        }
        .map(|st| (st.st_mode, st.st_uid, st.st_gid))
    };
    Outcome { errno, inode }
}

fn code(r: Result<(), Errno>) -> i32 {
    r.err().map_or(0, Errno::raw)
}

/// What `uvfs::cred` predicts.
fn predict(case: &Case, d: &Attr, t: Option<&Attr>) -> Outcome {
    let cred = case.ids.cred();
    let fail = |e: Errno| Outcome {
        errno: e.raw(),
        inode: None,
    };
    let ok = |inode: Option<(u32, u32, u32)>| Outcome { errno: 0, inode };
    let walk = |c: &Cred| permission(c, d, MAY_EXEC);
    let t = || *t.expect("operation needs a target");
    let acc = |fl: i32| match fl & libc::O_ACCMODE {
        libc::O_RDONLY => MAY_READ,
        libc::O_WRONLY => MAY_WRITE,
        _ => MAY_READ | MAY_WRITE,
    };
    if let Op::Utimens(times) = case.op
        && utimens_explicit(times).is_none()
    {
        return ok(None);
    }
    if let Op::Access(m, ea) = case.op {
        let c = cred.for_access(ea);
        let r = walk(&c).and_then(|()| permission(&c, &t(), m as u32));
        return Outcome {
            errno: code(r),
            inode: None,
        };
    }
    if let Err(e) = walk(&cred) {
        return fail(e);
    }
    match case.op {
        Op::Open(fl) => Outcome {
            errno: code(permission(&cred, &t(), acc(fl))),
            inode: None,
        },
        Op::Stat => ok(None),
        Op::Access(..) => unreachable!(),
        Op::Unlink | Op::Rmdir => Outcome {
            errno: code(may_delete(&cred, d, &t())),
            inode: None,
        },
        Op::Create(m, um) | Op::Mkdir(m, um) => {
            if let Err(e) = may_create(&cred, d) {
                return fail(e);
            }
            let ty = if matches!(case.op, Op::Mkdir(..)) {
                S_IFDIR
            } else {
                S_IFREG
            };
            let mode = prepare_mode(&cred, d, ty | m, um);
            ok(Some(inode_init_owner(&cred, d, mode)))
        }
        Op::Chmod(m) => match chmod_mode(&cred, &t(), m) {
            Ok(mode) => ok(Some((mode, t().uid, t().gid))),
            Err(e) => fail(e),
        },
        Op::Chown(u, g) => match chown_check(&cred, &t(), u, g) {
            Ok(e) => {
                let a = t();
                let mode = e.new_mode(&a).unwrap_or(a.mode);
                ok(Some((mode, e.uid.unwrap_or(a.uid), e.gid.unwrap_or(a.gid))))
            }
            Err(e) => fail(e),
        },
        Op::Utimens(times) => {
            let explicit = utimens_explicit(times).expect("handled above");
            Outcome {
                errno: code(utimes_check(&cred, &t(), explicit)),
                inode: None,
            }
        }
        Op::Write | Op::Truncate => {
            let a = t();
            if a.mode & S_IFMT != S_IFREG {
                unreachable!("write/truncate targets are regular files");
            }
            if let Err(e) = permission(&cred, &a, MAY_WRITE) {
                return fail(e);
            }
            let mode = remove_privs_on_write(&cred, &a).unwrap_or(a.mode);
            ok(Some((mode, a.uid, a.gid)))
        }
    }
}

fn name(e: i32) -> String {
    if e == 0 {
        "ok".into()
    } else {
        Errno::from_raw(e).name().unwrap_or("?").into()
    }
}

fn show(o: &Outcome) -> String {
    match o.inode {
        None => name(o.errno),
        Some((m, u, g)) => format!("{} mode {m:o} uid {u} gid {g}", name(o.errno)),
    }
}

#[test]
fn cred_matches_host_kernel() {
    // SAFETY: plain syscall.
    if unsafe { libc::geteuid() } != 0 {
        println!("cred_differential: skipped (needs root to switch credentials)");
        return;
    }
    let base = TempDir::new("cred");
    let base = base.path();
    check(
        // SAFETY: NUL-terminated path.
        unsafe { libc::chmod(cstr(base).as_ptr(), 0o755) },
        "chmod base",
    );
    let cases = cases();
    let mut mismatches = Vec::new();
    let mut per_op: std::collections::BTreeMap<&'static str, (usize, usize)> = Default::default();
    for (i, c) in cases.iter().enumerate() {
        let cdir = base.join(format!("c{i}"));
        make(&cdir, &c.dir);
        let target = cdir.join("t");
        if let Some(t) = &c.target {
            make(&target, t);
        }
        let newpath = cdir.join("new");
        let d = attr_of(&host_stat(&cdir).expect("stat dir"));
        let t = c
            .target
            .map(|_| attr_of(&host_stat(&target).expect("stat target")));
        let prep = Prepared {
            target: cstr(&target),
            newpath: cstr(&newpath),
            groups: c.ids.groups.to_vec(),
        };
        let want = predict(c, &d, t.as_ref());
        let got = run_host(c, &prep, &newpath, &target);
        let op = match c.op {
            Op::Open(_) => "open",
            Op::Stat => "stat",
            Op::Access(..) => "access",
            Op::Unlink => "unlink",
            Op::Rmdir => "rmdir",
            Op::Create(..) => "create",
            Op::Mkdir(..) => "mkdir",
            Op::Chmod(_) => "chmod",
            Op::Chown(..) => "chown",
            Op::Utimens(_) => "utimensat",
            Op::Write => "write",
            Op::Truncate => "truncate",
        };
        let e = per_op.entry(op).or_default();
        e.0 += 1;
        if got.errno != 0 {
            e.1 += 1;
        }
        if got != want {
            mismatches.push(format!(
                "case {i}: {} dir {:o} {}:{} target {:?} op {:?}: host {} / cred {}",
                c.ids.name,
                d.mode,
                d.uid,
                d.gid,
                t.map(|a| (format!("{:o}", a.mode), a.uid, a.gid)),
                c.op,
                show(&got),
                show(&want)
            ));
        }
        let _ = std::fs::remove_dir_all(&cdir);
    }
    println!("cred_differential: {} cases", cases.len());
    for (op, (n, failed)) in &per_op {
        println!("  {op:10} {n:5} cases, {failed:4} refused by the host");
    }
    for m in &mismatches {
        println!("MISMATCH {m}");
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ from the host kernel",
        mismatches.len(),
        cases.len()
    );
}
