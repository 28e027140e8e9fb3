//! Differential test of `renameat2(RENAME_WHITEOUT)` against the host
//! kernel's tmpfs: the flag rules (`EINVAL` with `RENAME_EXCHANGE`, allowed
//! with `RENAME_NOREPLACE`), the whiteout left at the old name (a
//! character device 0/0, mode 0, one link, owned by the caller, the group
//! of a set-group-ID directory), files and directories moved within and
//! across directories and over existing targets, the no-op on the same
//! inode, failures that leave no whiteout behind (`ENOENT`, `EEXIST`,
//! `ENOTEMPTY`, `ENOSPC` on a tmpfs out of inodes), the listing order and
//! directory sizes afterwards, and an unprivileged caller (no `CAP_MKNOD`
//! needed; a sticky directory's rule still applies). One script runs on
//! both sides and every outcome is compared.
#![cfg(target_os = "linux")]

mod support;

use std::ffi::CString;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use support::host::{TempDir, enter_private_namespace, fork_child};
use support::vfs::{fasts, user};
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::uapi::*;
use uvfs::{Errno, Process, Vfs};

const NOREPLACE: u32 = 1;
const EXCHANGE: u32 = 2;
const WHITEOUT: u32 = 4;

/// One step of the script; names are relative to the test's directory.
#[derive(Clone, Debug)]
enum Op {
    Touch(&'static str),
    Mkdir(&'static str, u32),
    Link(&'static str, &'static str),
    Rename(&'static str, &'static str, u32),
    /// Type, mode, rdev, links, size (and, with the bool, uid and gid).
    Lstat(&'static str, bool),
    /// The names of a directory in listing order, with their types.
    List(&'static str),
    /// Opens read-only and closes.
    Open(&'static str),
    Unlink(&'static str),
}

/// What a step gave, or its errno.
type Out = Result<String, i32>;

fn script() -> Vec<Op> {
    use Op::*;
    vec![
        Touch("a"),
        Touch("b"),
        Touch("x"),
        Mkdir("d", 0o755),
        Mkdir("e", 0o755),
        Mkdir("full", 0o755),
        Touch("full/f"),
        Mkdir("sub", 0o755),
        Touch("sub/s"),
        // The flag rules.
        Rename("a", "c", EXCHANGE | WHITEOUT),
        Rename("a", "x", EXCHANGE | WHITEOUT),
        Rename("a", "c", 8),
        Rename("a", "c", WHITEOUT | 8),
        // A file to a free name: the whiteout takes "a".
        Rename("a", "c", WHITEOUT),
        Lstat("a", true),
        Lstat("c", true),
        List("."),
        Open("a"),
        // With RENAME_NOREPLACE: allowed; an existing target is EEXIST
        // and leaves no whiteout.
        Rename("b", "n", WHITEOUT | NOREPLACE),
        Lstat("b", false),
        Rename("c", "x", WHITEOUT | NOREPLACE),
        Lstat("c", false),
        // Over an existing file: it is replaced, the whiteout stays.
        Rename("c", "x", WHITEOUT),
        Lstat("c", false),
        Lstat("x", false),
        // The same name, and a hard link to the same inode: nothing.
        Rename("x", "x", WHITEOUT),
        Lstat("x", false),
        Link("x", "h"),
        Rename("x", "h", WHITEOUT),
        Lstat("x", false),
        Lstat("h", false),
        // A missing source.
        Rename("nope", "y", WHITEOUT),
        Lstat("nope", false),
        // Whiteout over whiteout.
        Rename("a", "c", WHITEOUT),
        Lstat("a", false),
        Lstat("c", false),
        // Directories: moved, over an empty one, not over a full one.
        Rename("d", "d2", WHITEOUT),
        Lstat("d", false),
        Lstat("d2", false),
        Rename("d2", "e", WHITEOUT),
        Lstat("d2", false),
        Lstat("e", false),
        Rename("e", "full", WHITEOUT),
        Lstat("e", false),
        Rename("e", "c", WHITEOUT),
        Rename("n", "e", WHITEOUT),
        // Across directories: the whiteout stays in the old one.
        Rename("sub/s", "s2", WHITEOUT),
        Lstat("sub/s", false),
        Lstat("s2", false),
        Rename("s2", "sub/t", WHITEOUT),
        Lstat("s2", false),
        Lstat("sub/t", false),
        Lstat("sub", false),
        List("sub"),
        List("."),
        Lstat(".", false),
        // A whiteout is removed as any file is.
        Unlink("a"),
        Lstat("a", false),
        Rename("sub/nope", "sub/a", WHITEOUT),
        List("sub"),
    ]
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap()
}

fn type_name(mode: u32) -> &'static str {
    match mode & 0o170000 {
        0o100000 => "reg",
        0o040000 => "dir",
        0o020000 => "chr",
        0o120000 => "lnk",
        0o010000 => "fifo",
        _ => "other",
    }
}

fn describe(mode: u32, rdev: u64, nlink: u64, size: i64, owner: Option<(u32, u32)>) -> String {
    // A directory's size on tmpfs counts its entries (20 bytes each).
    let mut s = format!(
        "{} {:o} rdev {rdev} nlink {nlink} size {size}",
        type_name(mode),
        mode & 0o7777
    );
    if let Some((u, g)) = owner {
        s += &format!(" owner {u}:{g}");
    }
    s
}

/// Runs the script on the host in directory `dir`.
fn run_host(dir: &str, ops: &[Op]) -> Vec<Out> {
    let p = |n: &str| c(&format!("{dir}/{n}"));
    ops.iter()
        .map(|op| -> Out {
            let ok = |r: i64| {
                if r < 0 {
                    Err(errno())
                } else {
                    Ok(r.to_string())
                }
            };
            // SAFETY: every call in this match gets valid C strings and
            // plain integers.
            unsafe {
                match *op {
                    Op::Touch(n) => {
                        let fd = libc::open(p(n).as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o644);
                        if fd >= 0 {
                            libc::close(fd);
                        }
                        ok(fd.min(0).into())
                    }
                    Op::Mkdir(n, m) => ok(libc::mkdir(p(n).as_ptr(), m).into()),
                    Op::Link(a, b) => ok(libc::link(p(a).as_ptr(), p(b).as_ptr()).into()),
                    Op::Rename(a, b, f) => ok(libc::syscall(
                        libc::SYS_renameat2,
                        libc::AT_FDCWD,
                        p(a).as_ptr(),
                        libc::AT_FDCWD,
                        p(b).as_ptr(),
                        f,
                    )),
                    Op::Lstat(n, own) => std::fs::symlink_metadata(format!("{dir}/{n}"))
                        .map(|m| {
                            describe(
                                m.mode(),
                                m.rdev(),
                                m.nlink(),
                                m.size() as i64,
                                own.then(|| (m.uid(), m.gid())),
                            )
                        })
                        .map_err(|e| e.raw_os_error().unwrap()),
                    Op::List(n) => {
                        let mut out = Vec::new();
                        for e in std::fs::read_dir(format!("{dir}/{n}")).unwrap() {
                            let e = e.unwrap();
                            let t = e.file_type().unwrap();
                            let kind = if t.is_dir() {
                                "dir"
                            } else if t.is_char_device() {
                                "chr"
                            } else {
                                "reg"
                            };
                            out.push(format!("{}:{kind}", e.file_name().to_str().unwrap()));
                        }
                        Ok(out.join(" "))
                    }
                    Op::Open(n) => {
                        let fd = libc::open(p(n).as_ptr(), libc::O_RDONLY);
                        if fd >= 0 {
                            libc::close(fd);
                        }
                        ok(fd.min(0).into())
                    }
                    Op::Unlink(n) => ok(libc::unlink(p(n).as_ptr()).into()),
                }
            }
        })
        .collect()
}

/// Runs the script on uvfs in directory `dir` (absolute).
fn run_uvfs(p: &mut Process, dir: &str, ops: &[Op]) -> Vec<Out> {
    let path = |n: &str| format!("{dir}/{n}");
    let ok = |r: Result<(), Errno>| r.map(|()| "0".to_string()).map_err(Errno::raw);
    ops.iter()
        .map(|op| -> Out {
            match *op {
                Op::Touch(n) => ok(p
                    .open(path(n), O_CREAT | O_WRONLY, 0o644)
                    .and_then(|fd| p.close(fd))),
                Op::Mkdir(n, m) => ok(p.mkdir(path(n), m)),
                Op::Link(a, b) => ok(p.link(path(a), path(b))),
                Op::Rename(a, b, f) => ok(p.renameat2(AT_FDCWD, path(a), AT_FDCWD, path(b), f)),
                Op::Lstat(n, own) => p
                    .lstat(path(n))
                    .map(|s| {
                        describe(
                            s.st_mode,
                            s.st_rdev,
                            s.st_nlink,
                            s.st_size,
                            own.then_some((s.st_uid, s.st_gid)),
                        )
                    })
                    .map_err(Errno::raw),
                Op::List(n) => {
                    let fd = p.open(path(n), O_RDONLY | O_DIRECTORY, 0).unwrap();
                    let mut out = Vec::new();
                    let mut buf = vec![0u8; 8192];
                    loop {
                        let got = p.getdents64(fd, &mut buf).unwrap();
                        if got == 0 {
                            break;
                        }
                        for d in uvfs::stat::parse_dirents64(&buf[..got]) {
                            if d.name == b"." || d.name == b".." {
                                continue;
                            }
                            let kind = match d.d_type {
                                DT_DIR => "dir",
                                DT_CHR => "chr",
                                _ => "reg",
                            };
                            out.push(format!("{}:{kind}", String::from_utf8(d.name).unwrap()));
                        }
                    }
                    p.close(fd).unwrap();
                    Ok(out.join(" "))
                }
                Op::Open(n) => ok(p.open(path(n), O_RDONLY, 0).and_then(|fd| p.close(fd))),
                Op::Unlink(n) => ok(p.unlink(path(n))),
            }
        })
        .collect()
}

#[track_caller]
fn compare(what: &str, ops: &[Op], want: &[Out], got: &[Out]) {
    let mut diffs = Vec::new();
    for ((op, w), g) in ops.iter().zip(want).zip(got) {
        if w != g {
            diffs.push(format!("{op:?}: host {w:?}, uvfs {g:?}"));
        }
    }
    assert!(diffs.is_empty(), "{what}:\n{}", diffs.join("\n"));
}

#[test]
fn rename_whiteout_matches_the_host() {
    let t = TempDir::new("whiteout");
    let ops = script();
    // SAFETY: no arguments; umask is process-wide, and the host side and
    // the uvfs side both use 022 (the uvfs process sets its own).
    let old = unsafe { libc::umask(0o022) };
    let want = run_host(t.as_str(), &ops);
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    // SAFETY: as above.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.umask(0o022);
        p.mkdir("/w", 0o755).unwrap();
        if uid != 0 {
            // The host runs as this user: so does the uvfs process, in a
            // directory of its own.
            p.chown("/w", uid, gid).unwrap();
            p.set_cred(user(uid, gid));
        }
        let got = run_uvfs(&mut p, "/w", &ops);
        compare(&format!("{fast:?}"), &ops, &want, &got);
        drop(p);
        vfs.check_consistency().unwrap();
    }
}

/// A tmpfs out of inodes: the whiteout needs one (`ENOSPC`, nothing
/// changed), a plain rename does not.
#[test]
fn rename_whiteout_needs_an_inode() {
    use Op::*;
    let ops = vec![
        Touch("a"),
        Touch("b"),
        Touch("c"),
        Touch("d"),
        Rename("a", "x", WHITEOUT),
        Lstat("a", false),
        Lstat("x", false),
        List("."),
        Lstat(".", false),
        Rename("a", "x", 0),
        Rename("x", "b", WHITEOUT),
        Lstat("x", false),
        Unlink("b"),
        Rename("x", "b", WHITEOUT),
        Lstat("x", false),
        Lstat("b", false),
        List("."),
        Touch("e"),
    ];
    let t = TempDir::new("whiteout-enospc");
    let dir = t.as_str().to_string();
    let host_ops = ops.clone();
    let want = std::thread::spawn(move || {
        if !enter_private_namespace() {
            return None;
        }
        let (src, at) = (c("tmpfs"), c(&dir));
        // SAFETY: valid C strings; the mount is in this thread's private
        // namespace and goes with it.
        let r = unsafe {
            libc::mount(
                src.as_ptr(),
                at.as_ptr(),
                src.as_ptr(),
                0,
                c"mode=777,nr_inodes=4".as_ptr().cast(),
            )
        };
        assert_eq!(r, 0, "mount: {}", std::io::Error::last_os_error());
        // SAFETY: no arguments.
        unsafe { libc::umask(0o022) };
        Some(run_host(&dir, &host_ops))
    })
    .join()
    .unwrap();
    let Some(want) = want else {
        eprintln!("skipped: no CAP_SYS_ADMIN for a private tmpfs");
        return;
    };
    for fast in fasts() {
        let fs = Tmpfs::new(TmpfsOptions {
            nr_inodes: Some(4),
            mode: 0o777,
            ..TmpfsOptions::default()
        });
        let vfs = Vfs::builder().fastpaths(fast).build_with_root(fs);
        let mut p = Process::new(&vfs).unwrap();
        p.umask(0o022);
        let got = run_uvfs(&mut p, "", &ops);
        compare(&format!("{fast:?}"), &ops, &want, &got);
        drop(p);
        vfs.check_consistency().unwrap();
    }
}

/// Ids of the unprivileged caller.
const UID: u32 = 1000;
const SG_GID: u32 = 1234;

/// As uid/gid 1000 without capabilities: a whiteout needs no `CAP_MKNOD`
/// and is the caller's; in a set-group-ID directory it takes the
/// directory's group; a sticky directory still guards others' files.
#[test]
fn rename_whiteout_unprivileged() {
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to take another uid");
        return;
    }
    let renames = [
        ("pub/u", "pub/v"),
        ("sg/g", "sg/h"),
        ("sticky/r", "sticky/s"),
    ];
    let after = ["pub/u", "pub/v", "sg/g", "sg/h", "sticky/r", "sticky/s"];
    // The host.
    let t = TempDir::new("whiteout-user");
    let hp = |n: &str| format!("{}/{n}", t.as_str());
    let setup = |mk: &mut dyn FnMut(&str, u32, u32, u32, bool)| {
        mk("pub", 0o777, 0, 0, true);
        mk("sg", 0o2777, 0, SG_GID, true);
        mk("sticky", 0o1777, 0, 0, true);
        mk("pub/u", 0o644, UID, UID, false);
        mk("sg/g", 0o644, UID, UID, false);
        mk("sticky/r", 0o666, 0, 0, false);
    };
    setup(&mut |n, mode, uid, gid, dir| {
        let path = hp(n);
        if dir {
            std::fs::create_dir(&path).unwrap();
        } else {
            std::fs::write(&path, b"").unwrap();
        }
        std::os::unix::fs::chown(&path, Some(uid), Some(gid)).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(mode))
            .unwrap();
    });
    let mut want: Vec<Out> = Vec::new();
    for (a, b) in renames {
        let (a, b) = (c(&hp(a)), c(&hp(b)));
        // SAFETY: the child makes system calls only, on strings made
        // before the fork.
        let (r, _) = unsafe {
            fork_child(|| {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(UID) != 0
                    || libc::setuid(UID) != 0
                {
                    return -1;
                }
                let r = libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    WHITEOUT,
                );
                if r == 0 { 0 } else { *libc::__errno_location() }
            })
        };
        want.push(match r {
            Some(0) => Ok("0".into()),
            Some(e) if e > 0 => Err(e),
            other => panic!("child: {other:?}"),
        });
    }
    let ops: Vec<Op> = after.iter().map(|n| Op::Lstat(n, true)).collect();
    want.extend(run_host(t.as_str(), &ops));
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut root = Process::new(&vfs).unwrap();
        root.mkdir("/w", 0o755).unwrap();
        setup(&mut |n, mode, uid, gid, dir| {
            let path = format!("/w/{n}");
            if dir {
                root.mkdir(&path, mode).unwrap();
            } else {
                let fd = root.open(&path, O_CREAT | O_WRONLY, mode).unwrap();
                root.close(fd).unwrap();
            }
            root.chown(&path, uid, gid).unwrap();
            root.chmod(&path, mode).unwrap();
        });
        let mut u = root.fork().unwrap();
        u.set_cred(user(UID, UID));
        let mut got: Vec<Out> = renames
            .iter()
            .map(|(a, b)| {
                u.renameat2(
                    AT_FDCWD,
                    format!("/w/{a}"),
                    AT_FDCWD,
                    format!("/w/{b}"),
                    WHITEOUT,
                )
                .map(|()| "0".to_string())
                .map_err(Errno::raw)
            })
            .collect();
        got.extend(run_uvfs(&mut root, "/w", &ops));
        let mut all: Vec<Op> = renames
            .iter()
            .map(|&(a, b)| Op::Rename(a, b, WHITEOUT))
            .collect();
        all.extend(ops.iter().cloned());
        compare(&format!("{fast:?}"), &all, &want, &got);
        drop((u, root));
        vfs.check_consistency().unwrap();
    }
}
