//! Path walk: `.` and `..` (at `/` and at a mount root), crossing mounts
//! (and `EXDEV`/`EBUSY` there), symlinks (absolute, relative, dangling, to
//! directories; 40 in one walk fine, 41 `ELOOP`, counted over the whole
//! walk; loops), trailing slashes, the empty path, `NAME_MAX` and
//! `PATH_MAX`, embedded NUL, and search permission on every directory
//! walked. Each case runs twice (cold cache: the locked walk; warm: the
//! lockless walk) where that matters. Expected values were checked on a
//! Linux 6.18 host's tmpfs ("Host:" comments). Every test runs under both
//! fast-path settings.

mod support;

use support::vfs::*;
use uvfs::Errno;
use uvfs::fs::RENAME_EXCHANGE;
use uvfs::fs::tmpfs::Tmpfs;
use uvfs::uapi::*;

fn ino(p: &mut uvfs::Process, path: &str) -> u64 {
    p.stat(path).unwrap().st_ino
}

#[test]
fn dot_and_dotdot() {
    each(|_, p| {
        p.mkdir("/d", 0o755).unwrap();
        p.mkdir("/d/e", 0o755).unwrap();
        put(p, "/d/e/f", b"");
        p.mkdir("/...", 0o755).unwrap();
        let root = ino(p, "/");
        let d = ino(p, "/d");
        let e = ino(p, "/d/e");
        for _ in 0..2 {
            // Host: ".." at "/" is "/".
            for path in [
                "/.",
                "/..",
                "/../..",
                "//..//.",
                "/d/..",
                "/d/e/../..",
                "/d/../d/..",
            ] {
                assert_eq!(ino(p, path), root, "{path}");
            }
            assert_eq!(ino(p, "/d/./e/../e/."), e);
            assert_eq!(ino(p, "/d/e/.."), d);
            assert_eq!(ino(p, "/../../d/e/f"), ino(p, "/d/e/f"));
            assert_ne!(ino(p, "/..."), root, "\"...\" is an ordinary name");
            // Host: "." and ".." after a file are ENOTDIR.
            assert_eq!(p.stat("/d/e/f/.").unwrap_err(), Errno::ENOTDIR);
            assert_eq!(p.stat("/d/e/f/..").unwrap_err(), Errno::ENOTDIR);
            assert_eq!(p.stat("/d/e/f/").unwrap_err(), Errno::ENOTDIR);
            // Relative to the cwd.
            p.chdir("/d/e").unwrap();
            assert_eq!(ino(p, "."), e);
            assert_eq!(ino(p, ".."), d);
            assert_eq!(ino(p, "../../../.."), root);
            p.chdir("/").unwrap();
            assert_eq!(ino(p, ".."), root);
        }
        // A directory's ".." follows a rename of it.
        p.mkdir("/x", 0o755).unwrap();
        p.rename("/d/e", "/x/e").unwrap();
        assert_eq!(ino(p, "/x/e/.."), ino(p, "/x"));
    });
}

#[test]
fn mount_crossing() {
    each(|_, p| {
        p.mkdir("/mnt", 0o755).unwrap();
        put(p, "/mnt/hidden", b"");
        let below = p.stat("/mnt").unwrap();
        p.mount(b"/mnt", Tmpfs::new(Default::default())).unwrap();
        let top = p.stat("/mnt").unwrap();
        // Host: the mounted root is inode 1 on its own device, empty (the
        // directory underneath is hidden); its ".." in getdents64 is itself.
        assert_eq!(top.st_ino, 1);
        assert_ne!(top.st_dev, below.st_dev);
        assert_eq!(top.st_mode, 0o041777, "a fresh tmpfs root is 1777");
        assert!(names(p, "/mnt").is_empty());
        assert_eq!(p.stat("/mnt/hidden").unwrap_err(), Errno::ENOENT);
        let fd = p.open("/mnt", O_RDONLY, 0).unwrap();
        let mut buf = [0u8; 256];
        let n = p.getdents64(fd, &mut buf).unwrap();
        let ents = uvfs::stat::parse_dirents64(&buf[..n]);
        assert_eq!((ents[1].name.as_slice(), ents[1].d_ino), (&b".."[..], 1));
        p.close(fd).unwrap();
        p.mkdir("/mnt/sub", 0o755).unwrap();
        put(p, "/mnt/sub/f", b"on mnt");
        let root = ino(p, "/");
        for _ in 0..2 {
            // Host: ".." at a mount root leaves the mount.
            assert_eq!(ino(p, "/mnt/.."), root);
            assert_eq!(ino(p, "/mnt/sub/../.."), root);
            assert_eq!(p.stat("/mnt/sub/../sub/f").unwrap().st_dev, top.st_dev);
            assert_eq!(get(p, "/mnt/sub/../../mnt/sub/f"), b"on mnt");
        }
        // A symlink into the mount, and a relative walk out of it.
        p.symlink("/mnt/sub", "/lnk").unwrap();
        assert_eq!(get(p, "/lnk/f"), b"on mnt");
        p.symlink("../../lnk/f", "/mnt/sub/back").unwrap();
        assert_eq!(get(p, "/mnt/sub/back"), b"on mnt");
        p.chdir("/mnt/sub").unwrap();
        assert_eq!(ino(p, "../.."), root);
        p.chdir("..").unwrap();
        p.chdir("..").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/");
        // An open dirfd on the mount root.
        let m = p.open("/mnt", O_RDONLY, 0).unwrap();
        assert_eq!(p.fstatat(m, "..", 0).unwrap().st_ino, root);
        assert_eq!(p.fstatat(m, "sub/f", 0).unwrap().st_size, 6);
        p.close(m).unwrap();
        // Host: mounting again on the same place stacks: the new mount
        // hides the first, getcwd goes through both.
        p.mount(b"/mnt", Tmpfs::new(Default::default())).unwrap();
        assert!(names(p, "/mnt").is_empty());
        assert_ne!(p.stat("/mnt").unwrap().st_dev, top.st_dev);
        p.mkdir("/mnt/s", 0o755).unwrap();
        p.chdir("/mnt/s").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/mnt/s");
        assert_eq!(ino(p, "../.."), root);
        p.chdir("/").unwrap();
        // Mounting on a file is ENOTDIR.
        put(p, "/file", b"");
        assert_eq!(
            p.mount(b"/file", Tmpfs::new(Default::default())),
            Err(Errno::ENOTDIR)
        );
        // Host: mount(2) without CAP_SYS_ADMIN is EPERM, before the path
        // is looked at; a missing directory is ENOENT.
        assert_eq!(
            p.mount(b"/nowhere", Tmpfs::new(Default::default())),
            Err(Errno::ENOENT)
        );
        p.set_cred(uvfs::cred::Cred::user(1000, 1000, vec![]));
        for path in [&b"/mnt"[..], b"/nowhere"] {
            assert_eq!(
                p.mount(path, Tmpfs::new(Default::default())),
                Err(Errno::EPERM)
            );
        }
    });
}

/// Host: rename and link across mounts EXDEV (files and directories);
/// the mountpoint itself: rename from or over it, rmdir and exchange
/// EBUSY, unlink EISDIR.
#[test]
fn mount_exdev_and_ebusy() {
    each(|_, p| {
        p.mkdir("/mnt", 0o755).unwrap();
        p.mount(b"/mnt", Tmpfs::new(Default::default())).unwrap();
        put(p, "/f", b"");
        p.mkdir("/dd", 0o755).unwrap();
        put(p, "/mnt/g", b"");
        assert_eq!(p.rename("/f", "/mnt/f"), Err(Errno::EXDEV));
        assert_eq!(p.rename("/dd", "/mnt/dd"), Err(Errno::EXDEV));
        assert_eq!(p.rename("/mnt/g", "/g"), Err(Errno::EXDEV));
        assert_eq!(p.rename("/mnt/g", "/f"), Err(Errno::EXDEV));
        assert_eq!(p.link("/f", "/mnt/f"), Err(Errno::EXDEV));
        assert_eq!(p.link("/mnt/g", "/g"), Err(Errno::EXDEV));
        assert_eq!(
            p.renameat2(AT_FDCWD, "/f", AT_FDCWD, "/mnt/g", RENAME_EXCHANGE),
            Err(Errno::EXDEV)
        );
        // Within the mount, fine; relative to a dirfd on it too.
        let m = p.open("/mnt", O_RDONLY, 0).unwrap();
        p.renameat(m, "g", m, "h").unwrap();
        p.linkat(m, "h", AT_FDCWD, "/mnt/h2", 0).unwrap();
        assert_eq!(p.stat("/mnt/h2").unwrap().st_nlink, 2);
        assert_eq!(p.renameat(m, "h", AT_FDCWD, "/h"), Err(Errno::EXDEV));
        p.close(m).unwrap();
        // The mountpoint.
        assert_eq!(p.rename("/mnt", "/x"), Err(Errno::EBUSY));
        assert_eq!(p.rename("/dd", "/mnt"), Err(Errno::EBUSY));
        assert_eq!(p.rmdir("/mnt"), Err(Errno::EBUSY));
        assert_eq!(p.unlink("/mnt"), Err(Errno::EISDIR));
        assert_eq!(
            p.renameat2(AT_FDCWD, "/dd", AT_FDCWD, "/mnt", RENAME_EXCHANGE),
            Err(Errno::EBUSY)
        );
        assert!(p.stat("/mnt/h").is_ok());
    });
}

#[test]
fn symlinks_kinds() {
    each(|_, p| {
        p.mkdir("/d", 0o755).unwrap();
        p.mkdir("/d/e", 0o755).unwrap();
        put(p, "/d/e/f", b"F");
        put(p, "/top", b"T");
        p.symlink("/d/e", "/abs").unwrap();
        p.symlink("e/f", "/d/rel").unwrap(); // relative to /d, not the cwd
        p.symlink("../top", "/d/up").unwrap();
        p.symlink("/", "/lroot").unwrap();
        p.symlink("/nowhere/x", "/dang").unwrap();
        p.symlink("abs", "/hop").unwrap(); // -> /abs -> /d/e
        p.chdir("/d/e").unwrap();
        for _ in 0..2 {
            assert_eq!(get(p, "/abs/f"), b"F");
            assert_eq!(get(p, "/d/rel"), b"F");
            assert_eq!(get(p, "/d/up"), b"T");
            assert_eq!(get(p, "/lroot/d/e/f"), b"F");
            assert_eq!(get(p, "/hop/f"), b"F");
            assert_eq!(
                get(p, "/hop/../e/f"),
                b"F",
                "\"..\" after a link is the target's parent"
            );
            assert_eq!(get(p, "../rel"), b"F");
            // Host: a dangling link: stat ENOENT, lstat fine, "dang/" ENOENT.
            assert_eq!(p.stat("/dang").unwrap_err(), Errno::ENOENT);
            assert_eq!(p.lstat("/dang").unwrap().st_mode, 0o120777);
            assert_eq!(p.lstat("/dang/").unwrap_err(), Errno::ENOENT);
            // Host: a trailing slash follows a link to a directory even for
            // lstat; a link to a file with a slash is ENOTDIR.
            assert_eq!(p.lstat("/abs/").unwrap().st_mode & 0o170000, 0o040000);
            assert_eq!(p.lstat("/d/rel/").unwrap_err(), Errno::ENOTDIR);
            assert_eq!(p.stat("/d/rel/.").unwrap_err(), Errno::ENOTDIR);
            // An intermediate link is always followed, also by lstat.
            assert_eq!(p.lstat("/abs/f").unwrap().st_mode, 0o100644);
        }
        // A link made later to a name that was missing resolves.
        p.symlink("/later", "/tolater").unwrap();
        assert_eq!(p.stat("/tolater").unwrap_err(), Errno::ENOENT);
        put(p, "/later", b"L");
        assert_eq!(get(p, "/tolater"), b"L");
        // And stops resolving when the target goes.
        p.unlink("/later").unwrap();
        assert_eq!(p.stat("/tolater").unwrap_err(), Errno::ENOENT);
    });
}

/// Host: a chain of 40 links resolves, 41 is ELOOP (stat, open and
/// O_CREAT alike; lstat of the 41st is fine); the count is for the whole
/// walk: 20 directory links then 20 file links resolve, 20 + 21 is ELOOP,
/// 21 + 19 and 19 + 21 resolve. A loop of two, a self-link and a path
/// through a self-link are ELOOP (mkdir under it too).
#[test]
fn symlink_limits_and_loops() {
    each(|_, p| {
        put(p, "/file", b"x");
        let mut prev = "/file".to_string();
        for i in 1..=41 {
            p.symlink(&prev, format!("/l{i}")).unwrap();
            prev = format!("/l{i}");
        }
        p.mkdir("/A0", 0o755).unwrap();
        put(p, "/A0/file", b"y");
        let mut prev = "A0".to_string();
        for i in 1..=21 {
            p.symlink(&prev, format!("/A{i}")).unwrap();
            prev = format!("A{i}");
        }
        let mut prev = "file".to_string();
        for i in 1..=21 {
            p.symlink(&prev, format!("/A0/B{i}")).unwrap();
            prev = format!("B{i}");
        }
        p.symlink("/loopb", "/loopa").unwrap();
        p.symlink("/loopa", "/loopb").unwrap();
        p.symlink("self", "/self").unwrap();
        for _ in 0..2 {
            assert_eq!(p.stat("/l40").unwrap().st_size, 1);
            assert_eq!(p.stat("/l41").unwrap_err(), Errno::ELOOP);
            assert!(p.lstat("/l41").is_ok());
            assert_eq!(p.open("/l41", O_RDONLY, 0), Err(Errno::ELOOP));
            assert_eq!(p.stat("/A20/B20").unwrap().st_size, 1);
            assert_eq!(p.stat("/A20/B21").unwrap_err(), Errno::ELOOP);
            assert_eq!(p.stat("/A21/B19").unwrap().st_size, 1);
            assert_eq!(p.stat("/A19/B21").unwrap().st_size, 1);
            assert!(p.stat("/A20/.").is_ok());
            for path in ["/loopa", "/loopb", "/self", "/self/x", "/loopa/x/y"] {
                assert_eq!(p.stat(path).unwrap_err(), Errno::ELOOP, "{path}");
            }
            assert_eq!(p.mkdir("/self/x", 0o755), Err(Errno::ELOOP));
            assert_eq!(p.chdir("/loopa"), Err(Errno::ELOOP));
            assert_eq!(p.access("/self", F_OK), Err(Errno::ELOOP));
            assert!(p.lstat("/self").is_ok());
        }
    });
}

#[test]
fn trailing_slashes() {
    each(|_, p| {
        put(p, "/f", b"");
        p.mkdir("/d", 0o755).unwrap();
        for _ in 0..2 {
            // Host: a file with a slash ENOTDIR; a directory with any number.
            assert_eq!(p.stat("/f/").unwrap_err(), Errno::ENOTDIR);
            assert_eq!(p.stat("/f//").unwrap_err(), Errno::ENOTDIR);
            assert_eq!(p.open("/f/", O_RDONLY, 0), Err(Errno::ENOTDIR));
            assert_eq!(p.access("/f/", F_OK), Err(Errno::ENOTDIR));
            assert_eq!(p.truncate("/f/", 0), Err(Errno::ENOTDIR));
            assert_eq!(p.chmod("/f/", 0o600), Err(Errno::ENOTDIR));
            for path in ["/d/", "/d//", "//d///", "/d/./", "///"] {
                assert!(p.stat(path).is_ok(), "{path}");
            }
            assert_eq!(p.stat("/missing/").unwrap_err(), Errno::ENOENT);
        }
    });
}

#[test]
fn empty_path_is_enoent() {
    each(|_, p| {
        let mut b = [0u8; 8];
        assert_eq!(p.stat("").unwrap_err(), Errno::ENOENT);
        assert_eq!(p.lstat("").unwrap_err(), Errno::ENOENT);
        assert_eq!(p.open("", O_RDONLY, 0), Err(Errno::ENOENT));
        assert_eq!(p.mkdir("", 0o755), Err(Errno::ENOENT));
        assert_eq!(p.rmdir(""), Err(Errno::ENOENT));
        assert_eq!(p.unlink(""), Err(Errno::ENOENT));
        assert_eq!(p.rename("", "/x"), Err(Errno::ENOENT));
        put(p, "/f", b"");
        assert_eq!(p.rename("/f", ""), Err(Errno::ENOENT));
        assert_eq!(p.link("/f", ""), Err(Errno::ENOENT));
        assert_eq!(p.symlink("/f", ""), Err(Errno::ENOENT));
        assert_eq!(p.readlink("", &mut b), Err(Errno::ENOENT));
        assert_eq!(p.chdir(""), Err(Errno::ENOENT));
        assert_eq!(p.access("", F_OK), Err(Errno::ENOENT));
        assert_eq!(p.chmod("", 0o755), Err(Errno::ENOENT));
        assert_eq!(p.chown("", 0, 0), Err(Errno::ENOENT));
        assert_eq!(p.truncate("", 0), Err(Errno::ENOENT));
        assert_eq!(
            p.statx(AT_FDCWD, "", 0, STATX_BASIC_STATS).unwrap_err(),
            Errno::ENOENT
        );
        assert_eq!(p.utimensat(AT_FDCWD, "", None, 0), Err(Errno::ENOENT));
    });
}

/// Host: a 255-byte name works, 256 is ENAMETOOLONG for lookup, create and
/// as an intermediate component; a 4095-byte path resolves (15 components
/// of 255 bytes and a 254-byte name), 4096 bytes is ENAMETOOLONG.
#[test]
fn name_and_path_limits() {
    each(|_, p| {
        let n255 = "a".repeat(255);
        let n256 = "a".repeat(256);
        p.mkdir(format!("/{n255}"), 0o755).unwrap();
        for _ in 0..2 {
            assert!(p.stat(format!("/{n255}")).is_ok());
            assert_eq!(p.stat(format!("/{n256}")).unwrap_err(), Errno::ENAMETOOLONG);
            assert_eq!(
                p.stat(format!("/{n256}/x")).unwrap_err(),
                Errno::ENAMETOOLONG
            );
            assert_eq!(
                p.stat(format!("/{n255}/{n256}")).unwrap_err(),
                Errno::ENAMETOOLONG
            );
        }
        assert_eq!(
            p.open(format!("/{n256}"), O_CREAT | O_WRONLY, 0o644),
            Err(Errno::ENAMETOOLONG)
        );
        assert_eq!(p.mkdir(format!("/{n256}"), 0o755), Err(Errno::ENAMETOOLONG));
        assert_eq!(p.symlink("x", format!("/{n256}")), Err(Errno::ENAMETOOLONG));
        assert_eq!(
            p.rename(format!("/{n255}"), format!("/{n256}")),
            Err(Errno::ENAMETOOLONG)
        );
        put(p, &format!("/{n255}/{}", "b".repeat(255)), b"deep");
        // 15 components of 255 bytes.
        let mut dir = String::new();
        for i in 0..15 {
            dir.push('/');
            dir.push_str(&((b'c' + i) as char).to_string().repeat(255));
            p.mkdir(&dir, 0o755).unwrap();
        }
        assert_eq!(dir.len(), 15 * 256);
        let ok = format!("{dir}/{}", "y".repeat(254));
        assert_eq!(ok.len(), 4095);
        put(p, &ok, b"4095");
        let too_long = format!("{dir}/{}", "z".repeat(255));
        assert_eq!(too_long.len(), 4096);
        for _ in 0..2 {
            assert_eq!(get(p, &ok), b"4095");
            assert_eq!(p.stat(&too_long).unwrap_err(), Errno::ENAMETOOLONG);
            assert_eq!(
                p.open(&too_long, O_CREAT | O_WRONLY, 0o644),
                Err(Errno::ENAMETOOLONG)
            );
            // Slashes count too.
            let slashes = format!("/{}", "/".repeat(4094));
            assert_eq!(slashes.len(), 4095);
            assert!(p.stat(&slashes).is_ok());
            assert_eq!(
                p.stat(format!("/{slashes}")).unwrap_err(),
                Errno::ENAMETOOLONG
            );
        }
        // A relative path has the same limit.
        p.chdir(&dir).unwrap();
        let rel = format!("{}{}", "./".repeat(2047), "y".repeat(254));
        assert!(rel.len() > 4095);
        assert_eq!(p.stat(&rel).unwrap_err(), Errno::ENAMETOOLONG);
        assert_eq!(get(p, &"y".repeat(254)), b"4095");
    });
}

#[test]
fn embedded_nul_is_einval() {
    each(|_, p| {
        put(p, "/f", b"");
        let mut b = [0u8; 8];
        assert_eq!(p.stat(b"/f\0/x").unwrap_err(), Errno::EINVAL);
        assert_eq!(p.open(b"/f\0", O_RDONLY, 0), Err(Errno::EINVAL));
        assert_eq!(p.open(b"/g\0", O_CREAT | O_RDWR, 0o644), Err(Errno::EINVAL));
        assert_eq!(p.mkdir(b"/d\0", 0o755), Err(Errno::EINVAL));
        assert_eq!(p.unlink(b"/f\0"), Err(Errno::EINVAL));
        assert_eq!(p.rename(b"/f\0", "/g"), Err(Errno::EINVAL));
        assert_eq!(p.symlink(b"/f\0x", "/l"), Err(Errno::EINVAL));
        assert_eq!(p.readlink(b"/l\0", &mut b), Err(Errno::EINVAL));
        assert_eq!(p.chdir(b"/\0"), Err(Errno::EINVAL));
        assert_eq!(names(p, "/"), ["f"]);
    });
}

/// Host (uid 1000, no groups): for a tree a/b/c/f, removing search
/// permission (mode 0700, root's) from any one of a, a/b, a/b/c makes
/// stat, open, O_CREAT and access of a/b/c/f EACCES, while that directory
/// itself still stats; a 0711 directory can be searched but not listed.
#[test]
fn search_permission_on_every_directory() {
    each(|_, p| {
        p.mkdir("/a", 0o755).unwrap();
        p.mkdir("/a/b", 0o755).unwrap();
        p.mkdir("/a/b/c", 0o777).unwrap();
        p.chmod("/a/b/c", 0o777).unwrap();
        put(p, "/a/b/c/f", b"x");
        p.chmod("/a/b/c/f", 0o666).unwrap();
        p.symlink("/a/b/c", "/lc").unwrap();
        for dir in ["/a", "/a/b", "/a/b/c"] {
            // Warm the cache as root so the lockless walk is tried too.
            p.set_cred(uvfs::cred::Cred::root());
            assert!(p.stat("/a/b/c/f").is_ok());
            p.chmod(dir, 0o700).unwrap();
            p.set_cred(user(1000, 1000));
            for _ in 0..2 {
                assert_eq!(p.stat("/a/b/c/f").unwrap_err(), Errno::EACCES, "{dir}");
                assert_eq!(
                    p.stat("/a/b/c/missing").unwrap_err(),
                    Errno::EACCES,
                    "{dir}"
                );
                assert_eq!(
                    p.stat("/lc/f").unwrap_err(),
                    Errno::EACCES,
                    "{dir} via a link"
                );
                assert_eq!(p.open("/a/b/c/f", O_RDONLY, 0), Err(Errno::EACCES));
                assert_eq!(
                    p.open("/a/b/c/g", O_CREAT | O_WRONLY, 0o644),
                    Err(Errno::EACCES)
                );
                assert_eq!(p.access("/a/b/c/f", F_OK), Err(Errno::EACCES));
                assert_eq!(p.unlink("/a/b/c/f"), Err(Errno::EACCES));
                assert_eq!(p.mkdir("/a/b/c/n", 0o755), Err(Errno::EACCES));
                assert_eq!(p.chdir("/a/b/c"), Err(Errno::EACCES));
                assert!(p.stat(dir).is_ok(), "{dir} itself");
            }
            p.set_cred(uvfs::cred::Cred::root());
            p.chmod(dir, 0o755).unwrap();
            p.set_cred(user(1000, 1000));
            assert!(p.stat("/a/b/c/f").is_ok(), "search restored on {dir}");
            assert!(p.stat("/lc/f").is_ok());
        }
        // Relative to a dirfd opened before the permission went away: only
        // the directories walked from the dirfd on count.
        p.set_cred(uvfs::cred::Cred::root());
        let b = p.open("/a/b", O_RDONLY, 0).unwrap();
        p.chmod("/a", 0o700).unwrap();
        p.set_cred(user(1000, 1000));
        assert!(p.fstatat(b, "c/f", 0).is_ok());
        assert_eq!(p.stat("/a/b/c/f").unwrap_err(), Errno::EACCES);
        p.close(b).unwrap();
        // Host: 0711: searchable, not listable.
        p.set_cred(uvfs::cred::Cred::root());
        p.chmod("/a", 0o711).unwrap();
        p.set_cred(user(1000, 1000));
        assert!(p.stat("/a/b/c/f").is_ok());
        assert_eq!(p.open("/a", O_RDONLY, 0), Err(Errno::EACCES));
        // Group class: a 0750 directory of group 100 is searchable by a
        // member, not by others.
        p.set_cred(uvfs::cred::Cred::root());
        p.chmod("/a", 0o750).unwrap();
        p.chown("/a", 0, 100).unwrap();
        p.set_cred(uvfs::cred::Cred::user(1000, 1000, vec![100]));
        assert!(p.stat("/a/b/c/f").is_ok());
        p.set_cred(user(1001, 1001));
        assert_eq!(p.stat("/a/b/c/f").unwrap_err(), Errno::EACCES);
        // Root is never refused search.
        p.set_cred(uvfs::cred::Cred::root());
        p.chmod("/a", 0).unwrap();
        assert!(p.stat("/a/b/c/f").is_ok());
    });
}
