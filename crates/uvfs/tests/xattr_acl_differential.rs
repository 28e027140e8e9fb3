//! Differential test of POSIX ACLs against the host kernel's tmpfs
//! (`CONFIG_TMPFS_POSIX_ACL`): the same sequence of calls on the same tree
//! on both sides, each as root or, in a forked child on the host, as an
//! unprivileged user with given groups, under both fast-path presets:
//! `system.posix_acl_access`/`_default` set, read, listed and removed
//! (the binary values are built here: no setfacl), invalid values, the
//! mode an ACL sets, chmod rewriting an ACL, the owner-only and
//! `S_ISGID` rules, inheritance of a default ACL at create/mkdir/mknod
//! with and without a umask, and the access decisions an ACL makes (open,
//! access, search through a directory, create in one) for named users and
//! groups, with and without the mask — including the kernel's rule that a
//! mode with clear group bits leaves the decision to the mode. Results
//! (value or errno), values read, names listed (as a set) and modes must
//! agree. The unprivileged steps need root on the host; without it the
//! test says so and checks nothing.
#![cfg(target_os = "linux")]

mod support;

use std::ffi::CString;
use support::host::{TempDir, fork_child};
use support::vfs::fasts;
use uvfs::cred::Cred;
use uvfs::fs::S_IFIFO;
use uvfs::uapi::*;
use uvfs::{Errno, Process, Vfs};

const UO: u16 = 0x01;
const U: u16 = 0x02;
const GO: u16 = 0x04;
const G: u16 = 0x08;
const M: u16 = 0x10;
const O: u16 = 0x20;
const X: u32 = u32::MAX;

const ACCESS: &str = "system.posix_acl_access";
const DEFAULT: &str = "system.posix_acl_default";

/// An xattr value: the header (version `ver`) and the entries.
fn blob_v(ver: u32, entries: &[(u16, u16, u32)]) -> Vec<u8> {
    let mut v = ver.to_le_bytes().to_vec();
    for &(t, p, id) in entries {
        v.extend_from_slice(&t.to_le_bytes());
        v.extend_from_slice(&p.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
    }
    v
}

fn blob(entries: &[(u16, u16, u32)]) -> Vec<u8> {
    blob_v(2, entries)
}

/// Who makes a call: fs ids and supplementary groups.
#[derive(Clone, Copy, Debug)]
struct Who(u32, u32, &'static [u32]);

const ROOT: Who = Who(0, 0, &[]);
/// The owner of most of the tree.
const A: Who = Who(1000, 1000, &[]);
/// Named in the ACLs.
const B: Who = Who(1001, 1001, &[]);
/// In group 2000 (named in ACLs, the group of the set-group-ID files).
const C: Who = Who(1002, 1002, &[2000]);
/// In group 2001 only.
const D: Who = Who(1003, 1003, &[2001]);
/// In group 1000 (the owning group of `f`).
const E: Who = Who(1004, 1004, &[1000]);
/// In groups 1000 and 2000.
const F: Who = Who(1005, 1005, &[1000, 2000]);

#[derive(Clone, Debug)]
enum Op {
    Set(&'static str, &'static str, Vec<u8>, i32),
    LSet(&'static str, &'static str, Vec<u8>),
    Get(&'static str, &'static str, usize),
    LGet(&'static str, &'static str),
    Remove(&'static str, &'static str),
    List(&'static str),
    Chmod(&'static str, u32),
    /// `st_mode` (an error if the stat fails).
    Mode(&'static str),
    /// `stat` succeeds or not (search permission on the way).
    Stat(&'static str),
    Access(&'static str, i32),
    /// Open with the flags, then close.
    Open(&'static str, i32),
    /// `open(O_CREAT | O_EXCL | O_WRONLY)` under a umask.
    Create(&'static str, u32, u32),
    Mkdir(&'static str, u32, u32),
    /// A FIFO.
    Mknod(&'static str, u32, u32),
    /// `open(dir, O_TMPFILE | O_WRONLY)` under a umask: the file's mode.
    TmpfileMode(&'static str, u32, u32),
    /// The same: the length of the file's access ACL (or `-errno`).
    TmpfileAcl(&'static str, u32, u32),
    Chown(&'static str, u32, u32),
    /// `utimes(path, NULL)`: the owner, or write permission.
    Touch(&'static str),
    Truncate(&'static str, i64),
    Unlink(&'static str),
    /// `renameat2(from, to, RENAME_WHITEOUT)`: a whiteout (a character
    /// device 0/0, made as by mknod) takes `from`'s name.
    RenameWhiteout(&'static str, &'static str),
}
use Op::*;

/// The tree both sides build (as root): files (path, mode, uid, gid),
/// directories, and `l -> f`.
const FILES: [(&str, u32, u32, u32); 5] = [
    ("f", 0o640, 1000, 1000),
    ("g", 0o644, 0, 0),
    ("sf", 0o2770, 1000, 2000),
    ("sf2", 0o2770, 1000, 2000),
    ("h", 0o664, 0, 1000),
];
const DIRS: [(&str, u32, u32, u32); 7] = [
    ("d", 0o755, 1000, 1000),
    ("x", 0o777, 0, 0),
    ("d2", 0o777, 0, 0),
    ("d3", 0o777, 0, 0),
    ("plain", 0o777, 0, 0),
    ("d/sub", 0o755, 0, 0),
    ("sgd", 0o2777, 0, 2000),
];
const IN_D: &str = "d/in";

fn steps() -> Vec<(Who, Op)> {
    let named_f = blob(&[(UO, 6, X), (U, 6, 1001), (GO, 4, X), (M, 6, X), (O, 0, X)]);
    let base = blob(&[(UO, 6, X), (GO, 4, X), (O, 4, X)]);
    vec![
        // Round trips on a file.
        (ROOT, Get("f", ACCESS, 256)),
        (ROOT, List("f")),
        (
            ROOT,
            Set("f", ACCESS, blob(&[(UO, 7, 5), (GO, 5, 9), (O, 1, 3)]), 0),
        ),
        (ROOT, Mode("f")),
        (ROOT, Get("f", ACCESS, 256)),
        (ROOT, List("f")),
        (ROOT, Set("f", ACCESS, named_f.clone(), 0)),
        (ROOT, Mode("f")),
        (ROOT, Get("f", ACCESS, 256)),
        (ROOT, Get("f", ACCESS, 0)),
        (ROOT, Get("f", ACCESS, 4)),
        (ROOT, List("f")),
        (ROOT, Set("f", ACCESS, named_f.clone(), XATTR_CREATE)),
        (ROOT, Set("f", ACCESS, named_f.clone(), 4)),
        (ROOT, Set("nx", ACCESS, named_f.clone(), 0)),
        (ROOT, Get("nx", ACCESS, 256)),
        // Invalid values.
        (
            ROOT,
            Set(
                "f",
                ACCESS,
                blob_v(1, &[(UO, 6, X), (GO, 4, X), (O, 4, X)]),
                0,
            ),
        ),
        (ROOT, Set("f", ACCESS, [&base[..], &[0][..]].concat(), 0)),
        (ROOT, Set("f", ACCESS, vec![2, 0], 0)),
        (
            ROOT,
            Set("f", ACCESS, blob(&[(UO, 8, X), (GO, 4, X), (O, 4, X)]), 0),
        ),
        (
            ROOT,
            Set(
                "f",
                ACCESS,
                blob(&[(UO, 6, X), (U, 6, X), (GO, 4, X), (M, 6, X), (O, 0, X)]),
                0,
            ),
        ),
        (
            ROOT,
            Set(
                "f",
                ACCESS,
                blob(&[(UO, 6, X), (U, 6, 7), (GO, 4, X), (O, 0, X)]),
                0,
            ),
        ),
        (
            ROOT,
            Set("f", ACCESS, blob(&[(GO, 4, X), (UO, 6, X), (O, 4, X)]), 0),
        ),
        (ROOT, Set("f", ACCESS, blob(&[(UO, 6, X), (GO, 4, X)]), 0)),
        (
            ROOT,
            Set(
                "f",
                ACCESS,
                blob(&[(UO, 6, X), (UO, 6, X), (GO, 4, X), (O, 4, X)]),
                0,
            ),
        ),
        (
            ROOT,
            Set(
                "f",
                ACCESS,
                blob(&[(UO, 6, X), (GO, 4, X), (0x40, 4, X), (O, 4, X)]),
                0,
            ),
        ),
        (
            ROOT,
            Set(
                "f",
                ACCESS,
                blob(&[(UO, 6, X), (GO, 4, X), (O, 4, X), (O, 4, X)]),
                0,
            ),
        ),
        (
            ROOT,
            Set(
                "f",
                ACCESS,
                blob(&[(UO, 6, X), (GO, 4, X), (M, 4, X), (M, 4, X), (O, 4, X)]),
                0,
            ),
        ),
        (ROOT, Get("f", ACCESS, 256)),
        // Not checked by Linux: the order and uniqueness of named entries.
        (
            ROOT,
            Set(
                "g",
                ACCESS,
                blob(&[
                    (UO, 6, X),
                    (U, 4, 1002),
                    (U, 4, 1001),
                    (U, 6, 1001),
                    (GO, 4, X),
                    (M, 6, X),
                    (O, 4, X),
                ]),
                0,
            ),
        ),
        (ROOT, Get("g", ACCESS, 256)),
        (ROOT, Mode("g")),
        // A header alone, or an empty value, removes.
        (ROOT, Set("g", ACCESS, blob(&[]), 0)),
        (ROOT, Get("g", ACCESS, 256)),
        (ROOT, Mode("g")),
        (ROOT, Remove("g", ACCESS)),
        // Default ACLs: directories only.
        (ROOT, Set("g", DEFAULT, base.clone(), 0)),
        (ROOT, Set("g", DEFAULT, blob_v(3, &[]), 0)),
        (ROOT, Set("g", DEFAULT, Vec::new(), 0)),
        (ROOT, Remove("g", DEFAULT)),
        (ROOT, Get("g", DEFAULT, 256)),
        (ROOT, Set("g", "system.posix_acl_other", base.clone(), 0)),
        (ROOT, Set("g", "system.posix_acl_access2", base.clone(), 0)),
        // Symlinks hold none.
        (ROOT, LGet("l", ACCESS)),
        (ROOT, LSet("l", ACCESS, base.clone())),
        (ROOT, LSet("l", DEFAULT, base.clone())),
        (ROOT, Get("l", ACCESS, 256)),
        // Access decisions on f: u::rw, u:1001:rw, g::r, m::rw, o::---.
        (B, Open("f", O_RDWR)),
        (B, Access("f", W_OK)),
        (B, Access("f", X_OK)),
        (C, Open("f", O_RDONLY)),
        (E, Open("f", O_RDONLY)),
        (E, Open("f", O_WRONLY)),
        (A, Open("f", O_RDWR)),
        // chmod rewrites the mask and the owner/other entries.
        (ROOT, Chmod("f", 0o640)),
        (ROOT, Get("f", ACCESS, 256)),
        (B, Open("f", O_RDWR)),
        (B, Open("f", O_RDONLY)),
        // A mask of ---: the group bits are clear, the mode decides, and a
        // named user falls in the other class.
        (ROOT, Chmod("f", 0o604)),
        (ROOT, Get("f", ACCESS, 256)),
        (B, Open("f", O_RDONLY)),
        (B, Open("f", O_WRONLY)),
        (ROOT, Chmod("f", 0o660)),
        (ROOT, Mode("f")),
        (ROOT, Get("f", ACCESS, 256)),
        (B, Open("f", O_RDWR)),
        // Named groups on g: g::---, g:2000:rw, m::rw.
        (
            ROOT,
            Set(
                "g",
                ACCESS,
                blob(&[(UO, 6, X), (GO, 0, X), (G, 6, 2000), (M, 6, X), (O, 0, X)]),
                0,
            ),
        ),
        (ROOT, Mode("g")),
        (C, Open("g", O_RDWR)),
        (D, Open("g", O_RDONLY)),
        (B, Access("g", R_OK)),
        (
            ROOT,
            Set(
                "g",
                ACCESS,
                blob(&[(UO, 6, X), (GO, 4, X), (G, 2, 2000), (M, 6, X), (O, 4, X)]),
                0,
            ),
        ),
        (C, Open("g", O_RDONLY)),
        (C, Open("g", O_WRONLY)),
        (D, Open("g", O_RDONLY)),
        // Who may set: the owner (A owns f) or CAP_FOWNER.
        (B, Set("f", ACCESS, named_f.clone(), 0)),
        (B, Remove("f", ACCESS)),
        (B, Set("f", ACCESS, blob_v(1, &[]), 0)),
        (
            B,
            Set("f", ACCESS, blob(&[(GO, 4, X), (UO, 6, X), (O, 4, X)]), 0),
        ),
        (B, Set("f", DEFAULT, base.clone(), 0)),
        (B, Get("f", ACCESS, 256)),
        (A, Set("f", ACCESS, named_f.clone(), 0)),
        (A, Remove("f", DEFAULT)),
        (A, Remove("f", ACCESS)),
        (A, Remove("f", ACCESS)),
        (ROOT, Mode("f")),
        // S_ISGID goes when a non-member sets or removes an access ACL.
        (
            A,
            Set("sf", ACCESS, blob(&[(UO, 7, X), (GO, 7, X), (O, 0, X)]), 0),
        ),
        (ROOT, Mode("sf")),
        (A, Remove("sf2", ACCESS)),
        (ROOT, Mode("sf2")),
        (
            ROOT,
            Set("sf2", ACCESS, blob(&[(UO, 7, X), (GO, 5, X), (O, 0, X)]), 0),
        ),
        (ROOT, Mode("sf2")),
        // Search through a directory (d: u:1001:---), and the memoized
        // walks of both presets after each change.
        (C, Stat(IN_D)),
        (B, Stat(IN_D)),
        (
            A,
            Set(
                "d",
                ACCESS,
                blob(&[
                    (UO, 7, X),
                    (U, 0, 1001),
                    (U, 5, 1002),
                    (GO, 5, X),
                    (M, 5, X),
                    (O, 5, X),
                ]),
                0,
            ),
        ),
        (B, Stat(IN_D)),
        (B, Open(IN_D, O_RDONLY)),
        (C, Stat(IN_D)),
        (B, Stat("d/sub")),
        (
            A,
            Set(
                "d",
                ACCESS,
                blob(&[
                    (UO, 7, X),
                    (U, 5, 1001),
                    (U, 0, 1002),
                    (GO, 5, X),
                    (M, 5, X),
                    (O, 5, X),
                ]),
                0,
            ),
        ),
        (B, Stat(IN_D)),
        (C, Stat(IN_D)),
        (A, Chmod("d", 0o705)),
        (B, Stat(IN_D)),
        (C, Stat(IN_D)),
        (A, Remove("d", ACCESS)),
        (C, Stat(IN_D)),
        (ROOT, Mode("d")),
        // Create in a directory through its ACL (x: u:1001:rwx).
        (
            ROOT,
            Set(
                "x",
                ACCESS,
                blob(&[(UO, 7, X), (U, 7, 1001), (GO, 5, X), (M, 7, X), (O, 5, X)]),
                0,
            ),
        ),
        (B, Create("x/b", 0o644, 0o022)),
        (C, Create("x/c", 0o644, 0o022)),
        (B, Mkdir("x/bd", 0o755, 0o022)),
        // Inheritance: d2 has d:u::rwx, d:u:1001:r-x, d:g::r-x, d:m::rwx,
        // d:o::---; the umask is not applied.
        (
            ROOT,
            Set(
                "d2",
                DEFAULT,
                blob(&[(UO, 7, X), (U, 5, 1001), (GO, 5, X), (M, 7, X), (O, 0, X)]),
                0,
            ),
        ),
        (ROOT, List("d2")),
        (ROOT, Get("d2", DEFAULT, 256)),
        (ROOT, Get("d2", ACCESS, 256)),
        (ROOT, Create("d2/new", 0o666, 0o077)),
        (ROOT, Mode("d2/new")),
        (ROOT, Get("d2/new", ACCESS, 256)),
        (ROOT, List("d2/new")),
        (ROOT, Create("d2/x", 0o751, 0o022)),
        (ROOT, Mode("d2/x")),
        (ROOT, Get("d2/x", ACCESS, 256)),
        (ROOT, Mkdir("d2/sub", 0o777, 0o077)),
        (ROOT, Mode("d2/sub")),
        (ROOT, List("d2/sub")),
        (ROOT, Get("d2/sub", ACCESS, 256)),
        (ROOT, Get("d2/sub", DEFAULT, 256)),
        (ROOT, Create("d2/sub/deep", 0o640, 0o000)),
        (ROOT, Mode("d2/sub/deep")),
        (ROOT, Get("d2/sub/deep", ACCESS, 256)),
        (ROOT, Mknod("d2/fifo", 0o666, 0o077)),
        (ROOT, Mode("d2/fifo")),
        (ROOT, Get("d2/fifo", ACCESS, 256)),
        (B, Open("d2/new", O_RDONLY)),
        (B, Open("d2/new", O_WRONLY)),
        (C, Open("d2/new", O_RDONLY)),
        // A default ACL the mode can say: no access ACL, and no umask.
        (
            ROOT,
            Set("d3", DEFAULT, blob(&[(UO, 7, X), (GO, 5, X), (O, 5, X)]), 0),
        ),
        (ROOT, Create("d3/e", 0o666, 0o077)),
        (ROOT, Mode("d3/e")),
        (ROOT, Get("d3/e", ACCESS, 256)),
        (ROOT, Mkdir("d3/ed", 0o777, 0o077)),
        (ROOT, Mode("d3/ed")),
        (ROOT, List("d3/ed")),
        // No default ACL: the umask applies.
        (ROOT, Create("plain/p", 0o666, 0o027)),
        (ROOT, Mode("plain/p")),
        (ROOT, List("plain/p")),
        // Removing a default ACL: the owner only; an empty value removes.
        (B, Remove("d2", DEFAULT)),
        (ROOT, Set("d2", DEFAULT, Vec::new(), 0)),
        (ROOT, List("d2")),
        (ROOT, Create("d2/after", 0o666, 0o077)),
        (ROOT, Mode("d2/after")),
        // O_TMPFILE inherits too; without a default ACL the umask applies.
        (
            ROOT,
            Set(
                "d2",
                DEFAULT,
                blob(&[(UO, 7, X), (U, 7, 1001), (GO, 5, X), (M, 5, X), (O, 4, X)]),
                0,
            ),
        ),
        (ROOT, TmpfileMode("d2", 0o666, 0o077)),
        (ROOT, TmpfileAcl("d2", 0o666, 0o077)),
        (ROOT, TmpfileMode("plain", 0o666, 0o077)),
        (ROOT, TmpfileAcl("plain", 0o666, 0o077)),
        // A set-group-ID directory with a default ACL: the group and
        // S_ISGID are inherited, S_ISGID stripped for a non-member's file.
        (
            ROOT,
            Set(
                "sgd",
                DEFAULT,
                blob(&[(UO, 7, X), (U, 7, 1001), (GO, 7, X), (M, 7, X), (O, 5, X)]),
                0,
            ),
        ),
        (ROOT, Mkdir("sgd/s", 0o777, 0o077)),
        (ROOT, Mode("sgd/s")),
        (ROOT, List("sgd/s")),
        (B, Create("sgd/b", 0o2775, 0o022)),
        (ROOT, Mode("sgd/b")),
        (C, Create("sgd/c", 0o2775, 0o022)),
        (ROOT, Mode("sgd/c")),
        (ROOT, Get("sgd/c", ACCESS, 256)),
        // Write permission through the ACL: touch, truncate; unlink in a
        // directory (x: u:1001:rwx); chown makes B the owner entry.
        (
            ROOT,
            Set(
                "g",
                ACCESS,
                blob(&[(UO, 0, X), (U, 6, 1001), (GO, 4, X), (M, 6, X), (O, 0, X)]),
                0,
            ),
        ),
        (B, Touch("g")),
        (C, Touch("g")),
        (B, Truncate("g", 3)),
        (C, Truncate("g", 0)),
        (ROOT, Create("x/victim", 0o644, 0o022)),
        (C, Unlink("x/victim")),
        (B, Unlink("x/victim")),
        // Several matching groups: any one granting the whole request
        // (masked) grants; a matching group that grants nothing denies
        // even where other would grant; a named user comes before groups.
        (
            ROOT,
            Set(
                "h",
                ACCESS,
                blob(&[(UO, 6, X), (GO, 0, X), (G, 6, 2000), (M, 6, X), (O, 6, X)]),
                0,
            ),
        ),
        (F, Open("h", O_RDWR)),
        (E, Open("h", O_RDONLY)),
        (D, Open("h", O_RDWR)),
        (
            ROOT,
            Set(
                "h",
                ACCESS,
                blob(&[(UO, 6, X), (GO, 4, X), (G, 2, 2000), (M, 6, X), (O, 6, X)]),
                0,
            ),
        ),
        (F, Open("h", O_WRONLY)),
        (F, Open("h", O_RDONLY)),
        (F, Open("h", O_RDWR)),
        (
            ROOT,
            Set(
                "h",
                ACCESS,
                blob(&[(UO, 6, X), (U, 6, 1005), (GO, 4, X), (M, 4, X), (O, 0, X)]),
                0,
            ),
        ),
        (F, Open("h", O_WRONLY)),
        (F, Open("h", O_RDONLY)),
        (
            ROOT,
            Set(
                "h",
                ACCESS,
                blob(&[
                    (UO, 6, X),
                    (U, 0, 1005),
                    (GO, 6, X),
                    (G, 6, 2000),
                    (M, 6, X),
                    (O, 6, X),
                ]),
                0,
            ),
        ),
        (F, Open("h", O_RDONLY)),
        (E, Open("h", O_RDWR)),
        // RENAME_WHITEOUT: the whiteout is made as by mknod in the old
        // directory, default ACL included.
        (
            ROOT,
            Set(
                "d3",
                DEFAULT,
                blob(&[(UO, 7, X), (U, 6, 1001), (GO, 5, X), (M, 7, X), (O, 4, X)]),
                0,
            ),
        ),
        (ROOT, RenameWhiteout("d3/e", "plain/moved")),
        (ROOT, Mode("d3/e")),
        (ROOT, Get("d3/e", ACCESS, 256)),
        (ROOT, Mode("plain/moved")),
        (ROOT, Chown("g", 1001, 1001)),
        (B, Open("g", O_RDONLY)),
        (B, Access("g", W_OK)),
        (ROOT, Get("g", ACCESS, 256)),
        (ROOT, Mode("g")),
    ]
}

/// What a call returned: the result (`-errno` on failure) and the bytes
/// (a list as its sorted names).
type Outcome = (i64, Vec<Vec<u8>>);

/// An op made ready for the host: C strings built before any fork.
struct HostOp {
    who: Who,
    op: Op,
    path: CString,
    name: CString,
}

fn prepare(base: &str, steps: &[(Who, Op)]) -> Vec<HostOp> {
    steps
        .iter()
        .map(|(who, op)| {
            let (p, n) = match op {
                Set(p, n, ..) | LSet(p, n, _) | Get(p, n, _) | LGet(p, n) | Remove(p, n) => {
                    (*p, *n)
                }
                List(p) | Chmod(p, _) | Mode(p) | Stat(p) | Access(p, _) | Open(p, _) => (*p, ""),
                Create(p, ..) | Mkdir(p, ..) | Mknod(p, ..) => (*p, ""),
                TmpfileMode(p, ..) | TmpfileAcl(p, ..) | Chown(p, ..) | Touch(p) => (*p, ""),
                Truncate(p, _) | Unlink(p) => (*p, ""),
                RenameWhiteout(p, _) => (*p, ""),
            };
            // The second path travels as the name.
            let n = match op {
                RenameWhiteout(_, to) => format!("{base}/{to}"),
                _ => n.to_string(),
            };
            HostOp {
                who: *who,
                op: op.clone(),
                path: CString::new(format!("{base}/{p}")).unwrap(),
                name: CString::new(n).unwrap(),
            }
        })
        .collect()
}

fn neg_errno(r: i64) -> i64 {
    if r < 0 {
        // SAFETY: this thread's errno.
        -i64::from(unsafe { *libc::__errno_location() })
    } else {
        r
    }
}

/// One op on the host with system calls only (no allocation: it may run
/// in a forked child); `buf` receives what a get or list returns.
fn host_exec(h: &HostOp, buf: &mut [u8]) -> i64 {
    let (p, n) = (h.path.as_ptr(), h.name.as_ptr());
    let b = buf.as_mut_ptr();
    // SAFETY: valid C strings; `buf` holds at least the sizes passed; a
    // stat buffer is ours; fds opened here are closed here.
    unsafe {
        let r = match &h.op {
            Set(_, _, v, fl) => libc::setxattr(p, n, v.as_ptr().cast(), v.len(), *fl) as i64,
            LSet(_, _, v) => libc::lsetxattr(p, n, v.as_ptr().cast(), v.len(), 0) as i64,
            Get(_, _, z) => libc::getxattr(p, n, b.cast(), (*z).min(buf.len())) as i64,
            LGet(..) => libc::lgetxattr(p, n, b.cast(), buf.len()) as i64,
            Remove(..) => libc::removexattr(p, n) as i64,
            List(_) => libc::listxattr(p, b.cast(), buf.len()) as i64,
            Chmod(_, m) => libc::chmod(p, *m) as i64,
            Mode(_) | Stat(_) => {
                let mut st: libc::stat = std::mem::zeroed();
                let r = libc::stat(p, &mut st);
                if r == 0 && matches!(h.op, Mode(_)) {
                    return i64::from(st.st_mode);
                }
                r as i64
            }
            Access(_, m) => libc::access(p, *m) as i64,
            Open(_, fl) => {
                let fd = libc::open(p, *fl);
                if fd >= 0 {
                    libc::close(fd);
                    0
                } else {
                    -1
                }
            }
            Create(_, m, u) => {
                libc::umask(*u);
                let fd = libc::open(p, libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY, *m);
                if fd >= 0 {
                    libc::close(fd);
                    0
                } else {
                    -1
                }
            }
            Mkdir(_, m, u) => {
                libc::umask(*u);
                libc::mkdir(p, *m) as i64
            }
            Mknod(_, m, u) => {
                libc::umask(*u);
                libc::mknod(p, libc::S_IFIFO | *m, 0) as i64
            }
            TmpfileMode(_, m, u) | TmpfileAcl(_, m, u) => {
                libc::umask(*u);
                let fd = libc::open(p, libc::O_TMPFILE | libc::O_WRONLY, *m);
                if fd < 0 {
                    return neg_errno(-1);
                }
                let r = if matches!(h.op, TmpfileMode(..)) {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::fstat(fd, &mut st);
                    i64::from(st.st_mode)
                } else {
                    neg_errno(libc::fgetxattr(
                        fd,
                        c"system.posix_acl_access".as_ptr(),
                        b.cast(),
                        buf.len(),
                    ) as i64)
                };
                libc::close(fd);
                return r;
            }
            Chown(_, u, g) => libc::chown(p, *u, *g) as i64,
            Touch(_) => libc::utimes(p, std::ptr::null()) as i64,
            Truncate(_, n) => libc::truncate(p, *n) as i64,
            Unlink(_) => libc::unlink(p) as i64,
            RenameWhiteout(..) => libc::syscall(
                libc::SYS_renameat2,
                libc::AT_FDCWD,
                p,
                libc::AT_FDCWD,
                n,
                libc::RENAME_WHITEOUT,
            ),
        };
        neg_errno(r)
    }
}

/// Whether an op may change the umask or needs other credentials: it runs
/// in a forked child on the host.
fn in_child(h: &HostOp) -> bool {
    h.who.0 != 0
        || matches!(
            h.op,
            Create(..) | Mkdir(..) | Mknod(..) | TmpfileMode(..) | TmpfileAcl(..)
        )
}

fn outcome(op: &Op, r: i64, buf: &[u8]) -> Outcome {
    let has_data = matches!(op, Get(..) | LGet(..) | List(_));
    let data = if r > 0 && has_data {
        &buf[..r as usize]
    } else {
        &[][..]
    };
    match op {
        Get(_, _, z) if *z > 0 => (r, vec![data.to_vec()]),
        LGet(..) => (r, vec![data.to_vec()]),
        List(_) => {
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

fn host_side(t: &TempDir) -> Vec<Outcome> {
    let base = t.as_str();
    let c = |s: &str| CString::new(format!("{base}/{s}")).unwrap();
    for (n, m, u, g) in DIRS {
        std::fs::create_dir(format!("{base}/{n}")).unwrap();
        // SAFETY: valid C strings.
        unsafe {
            libc::chown(c(n).as_ptr(), u, g);
            libc::chmod(c(n).as_ptr(), m);
        }
    }
    for (n, m, u, g) in FILES.iter().copied().chain([(IN_D, 0o644, 0, 0)]) {
        std::fs::write(format!("{base}/{n}"), b"").unwrap();
        // SAFETY: valid C strings.
        unsafe {
            libc::chown(c(n).as_ptr(), u, g);
            libc::chmod(c(n).as_ptr(), m);
        }
    }
    std::os::unix::fs::symlink("f", format!("{base}/l")).unwrap();
    let mut buf = vec![0u8; 4096];
    prepare(base, &steps())
        .iter()
        .map(|h| {
            if !in_child(h) {
                let r = host_exec(h, &mut buf);
                return outcome(&h.op, r, &buf);
            }
            let mut cbuf = vec![0u8; 4096];
            let Who(uid, gid, groups) = h.who;
            // SAFETY: the child makes system calls only; `h`, `groups` and
            // `cbuf` are ready before the fork.
            let (r, status) = unsafe {
                fork_child(|| {
                    if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                        || libc::setresgid(gid, gid, gid) != 0
                        || libc::setresuid(uid, uid, uid) != 0
                    {
                        return i32::MIN;
                    }
                    host_exec(h, &mut cbuf) as i32
                })
            };
            let r = r.unwrap_or_else(|| panic!("child wrote nothing ({status:#x})"));
            assert_ne!(r, i32::MIN, "child could not become {:?}", h.who);
            (i64::from(r), Vec::new())
        })
        .collect()
}

fn uvfs_exec(p: &mut Process, op: &Op, buf: &mut [u8]) -> i64 {
    let ok = |r: Result<(), Errno>| r.map(|_| 0usize);
    let path = |s: &str| format!("/{s}");
    let r: Result<usize, Errno> = match op {
        Set(f, n, v, fl) => ok(p.setxattr(path(f), n.as_bytes(), v, *fl)),
        LSet(f, n, v) => ok(p.lsetxattr(path(f), n.as_bytes(), v, 0)),
        Get(f, n, z) => p.getxattr(path(f), n.as_bytes(), &mut buf[..*z]),
        LGet(f, n) => p.lgetxattr(path(f), n.as_bytes(), buf),
        Remove(f, n) => ok(p.removexattr(path(f), n.as_bytes())),
        List(f) => p.listxattr(path(f), buf),
        Chmod(f, m) => ok(p.chmod(path(f), *m)),
        Mode(f) => p.stat(path(f)).map(|st| st.st_mode as usize),
        Stat(f) => p.stat(path(f)).map(|_| 0),
        Access(f, m) => ok(p.access(path(f), *m)),
        Open(f, fl) => p
            .open(path(f), *fl, 0)
            .and_then(|fd| p.close(fd).map(|_| 0)),
        Create(f, m, u) => {
            let old = p.umask(*u);
            let r = p
                .open(path(f), O_CREAT | O_EXCL | O_WRONLY, *m)
                .and_then(|fd| p.close(fd).map(|_| 0));
            p.umask(old);
            r
        }
        Mkdir(f, m, u) => {
            let old = p.umask(*u);
            let r = ok(p.mkdir(path(f), *m));
            p.umask(old);
            r
        }
        Mknod(f, m, u) => {
            let old = p.umask(*u);
            let r = ok(p.mknod(path(f), S_IFIFO | *m, 0));
            p.umask(old);
            r
        }
        TmpfileMode(f, m, u) | TmpfileAcl(f, m, u) => {
            let old = p.umask(*u);
            let r = p.open(path(f), O_TMPFILE | O_WRONLY, *m).and_then(|fd| {
                let r = if matches!(op, TmpfileMode(..)) {
                    p.fstat(fd).map(|st| st.st_mode as usize)
                } else {
                    p.fgetxattr(fd, ACCESS.as_bytes(), buf)
                };
                p.close(fd)?;
                r
            });
            p.umask(old);
            r
        }
        Chown(f, u, g) => ok(p.chown(path(f), *u, *g)),
        Touch(f) => ok(p.utimensat(AT_FDCWD, path(f), None, 0)),
        Truncate(f, n) => ok(p.truncate(path(f), *n)),
        Unlink(f) => ok(p.unlink(path(f))),
        RenameWhiteout(f, t) => ok(p.renameat2(AT_FDCWD, path(f), AT_FDCWD, path(t), 4)),
    };
    match r {
        Ok(n) => n as i64,
        Err(e) => -i64::from(e.raw()),
    }
}

fn is_root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn posix_acls_match_the_host_tmpfs() {
    if !is_root() {
        eprintln!("skipped: the host side needs root (chown, other users)");
        return;
    }
    let t = TempDir::new("xattr-acl");
    let want = host_side(&t);
    let steps = steps();
    // The harness sees what the host did: the named ACL set on f is read
    // back, and B opened f for writing through it.
    assert_eq!(want[8].0, 44, "the host holds POSIX ACLs on tmpfs");
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        for (n, m, u, g) in DIRS {
            p.mkdir(format!("/{n}"), 0).unwrap();
            p.chown(format!("/{n}"), u, g).unwrap();
            p.chmod(format!("/{n}"), m).unwrap();
        }
        for (n, m, u, g) in FILES.iter().copied().chain([(IN_D, 0o644, 0, 0)]) {
            let fd = p.open(format!("/{n}"), O_CREAT | O_WRONLY, 0).unwrap();
            p.fchown(fd, u, g).unwrap();
            p.fchmod(fd, m).unwrap();
            p.close(fd).unwrap();
        }
        p.symlink("f", "/l").unwrap();
        let mut buf = vec![0u8; 4096];
        for (i, ((who, op), w)) in steps.iter().zip(&want).enumerate() {
            let Who(uid, gid, groups) = *who;
            p.set_cred(Cred::user(uid, gid, groups.to_vec()));
            let r = uvfs_exec(&mut p, op, &mut buf);
            let got = if who.0 == 0 {
                outcome(op, r, &buf)
            } else {
                (r, Vec::new())
            };
            assert_eq!(*w, got, "step {i}: {who:?} {op:?} ({fast})");
            p.set_cred(Cred::root());
        }
    }
}
