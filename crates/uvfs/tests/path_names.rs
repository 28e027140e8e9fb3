//! The namespace calls: mkdir, rmdir, unlink, unlinkat (`AT_REMOVEDIR`),
//! rename and renameat2 (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`; directory
//! over empty and non-empty directories, into its own subtree), link and
//! linkat (`EPERM` on directories, `AT_SYMLINK_FOLLOW`, `EXDEV`), symlink
//! and readlink, chdir, fchdir and getcwd (after the cwd is removed or
//! renamed, and across a mount). Errnos are those a Linux 6.18 host gives
//! on tmpfs ("Host:" comments). Every test runs under both fast-path
//! settings.

mod support;

use support::vfs::*;
use uvfs::Errno;
use uvfs::fs::tmpfs::Tmpfs;
use uvfs::fs::{RENAME_EXCHANGE, RENAME_NOREPLACE};
use uvfs::uapi::*;

const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

#[test]
fn mkdir_basics_and_errors() {
    each(|_, p| {
        p.mkdir("/d", 0o777).unwrap();
        let st = p.stat("/d").unwrap();
        assert_eq!((st.st_mode, st.st_nlink, st.st_size), (0o040755, 2, 40));
        assert_eq!(p.stat("/").unwrap().st_nlink, 3);
        // Host: a trailing slash is fine for a new directory.
        p.mkdir("/e/", 0o700).unwrap();
        assert_eq!(p.stat("/e").unwrap().st_mode, 0o040700);
        put(p, "/f", b"");
        p.symlink("/nowhere", "/dang").unwrap();
        // Host: all EEXIST: "/", ".", "d/..", a file, a dangling symlink
        // (with or without a slash), an existing directory with a slash.
        for path in [
            "/", ".", "/d/..", "/f", "/f/", "/dang", "/dang/", "/d", "/d/",
        ] {
            assert_eq!(p.mkdir(path, 0o755), Err(Errno::EEXIST), "{path}");
        }
        assert_eq!(p.stat("/nowhere").unwrap_err(), Errno::ENOENT);
        // Host: under a file ENOTDIR, in a missing directory ENOENT.
        assert_eq!(p.mkdir("/f/x", 0o755), Err(Errno::ENOTDIR));
        assert_eq!(p.mkdir("/nodir/x", 0o755), Err(Errno::ENOENT));
        assert_eq!(p.mkdir("", 0o755), Err(Errno::ENOENT));
        // The sticky bit is kept, the set-ID bits are not taken from mode.
        p.mkdir("/s", 0o1777).unwrap();
        assert_eq!(p.stat("/s").unwrap().st_mode, 0o041755);
        // mkdirat relative to a dirfd.
        let d = p.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
        p.mkdirat(d, "sub", 0o755).unwrap();
        assert_eq!(p.stat("/d").unwrap().st_nlink, 3);
        assert_eq!(p.mkdirat(d, "sub", 0o755), Err(Errno::EEXIST));
        p.close(d).unwrap();
        // Host: mkdir in a directory the user cannot write: EACCES.
        p.set_cred(user(1000, 1000));
        assert_eq!(p.mkdir("/nd", 0o755), Err(Errno::EACCES));
    });
}

#[test]
fn rmdir_basics_and_errors() {
    each(|_, p| {
        p.mkdir("/d", 0o755).unwrap();
        p.mkdir("/d/sub", 0o755).unwrap();
        put(p, "/f", b"");
        p.symlink("/d", "/ld").unwrap();
        // Host: ENOTEMPTY; ENOTDIR for a file, "file/", a symlink to a
        // directory with or without a slash; EINVAL for "d/." and ".";
        // ENOTEMPTY for "d/.."; EBUSY for "/".
        assert_eq!(p.rmdir("/d"), Err(Errno::ENOTEMPTY));
        assert_eq!(p.rmdir("/f"), Err(Errno::ENOTDIR));
        assert_eq!(p.rmdir("/f/"), Err(Errno::ENOTDIR));
        assert_eq!(p.rmdir("/ld"), Err(Errno::ENOTDIR));
        assert_eq!(p.rmdir("/ld/"), Err(Errno::ENOTDIR));
        assert_eq!(p.rmdir("/d/sub/."), Err(Errno::EINVAL));
        assert_eq!(p.rmdir("/d/sub/.."), Err(Errno::ENOTEMPTY));
        assert_eq!(p.rmdir("/"), Err(Errno::EBUSY));
        assert_eq!(p.rmdir("/missing"), Err(Errno::ENOENT));
        p.chdir("/d/sub").unwrap();
        assert_eq!(p.rmdir("."), Err(Errno::EINVAL));
        p.chdir("/").unwrap();
        // Host: "d/" is fine.
        p.rmdir("/d/sub/").unwrap();
        assert_eq!(p.stat("/d").unwrap().st_nlink, 2);
        assert_eq!(p.stat("/d/sub").unwrap_err(), Errno::ENOENT);
        // unlinkat(AT_REMOVEDIR) is rmdir, relative to a dirfd too.
        p.mkdir("/d/x", 0o755).unwrap();
        let d = p.open("/d", O_RDONLY, 0).unwrap();
        assert_eq!(p.unlinkat(d, "x", 0), Err(Errno::EISDIR));
        p.unlinkat(d, "x", AT_REMOVEDIR).unwrap();
        assert_eq!(p.unlinkat(d, "x", AT_REMOVEDIR), Err(Errno::ENOENT));
        p.close(d).unwrap();
        // Host: unlinkat with an unknown flag is EINVAL.
        assert_eq!(p.unlinkat(AT_FDCWD, "/f", 0x8), Err(Errno::EINVAL));
        p.rmdir("/d").unwrap();
        assert_eq!(p.stat("/").unwrap().st_nlink, 2);
    });
}

#[test]
fn unlink_basics_and_errors() {
    each(|_, p| {
        put(p, "/f", b"x");
        p.mkdir("/d", 0o755).unwrap();
        p.symlink("/f", "/lf").unwrap();
        p.symlink("/d", "/ld").unwrap();
        // Host: EISDIR for a directory, "d/", "d/.", "d/.." and "/";
        // ENOTDIR for "f/" and "ld/" (the symlink is not followed).
        assert_eq!(p.unlink("/d"), Err(Errno::EISDIR));
        assert_eq!(p.unlink("/d/"), Err(Errno::EISDIR));
        assert_eq!(p.unlink("/d/."), Err(Errno::EISDIR));
        assert_eq!(p.unlink("/d/.."), Err(Errno::EISDIR));
        assert_eq!(p.unlink("/"), Err(Errno::EISDIR));
        assert_eq!(p.unlink("/f/"), Err(Errno::ENOTDIR));
        assert_eq!(p.unlink("/ld/"), Err(Errno::ENOTDIR));
        assert_eq!(p.unlink("/missing"), Err(Errno::ENOENT));
        assert_eq!(p.unlink("/nodir/x"), Err(Errno::ENOENT));
        assert_eq!(p.unlink("/f/x"), Err(Errno::ENOTDIR));
        // A symlink is removed, not its target.
        p.unlink("/lf").unwrap();
        assert_eq!(get(p, "/f"), b"x");
        p.unlink("/ld").unwrap();
        assert!(p.stat("/d").is_ok());
        // A hard link: the other name stays.
        p.link("/f", "/f2").unwrap();
        p.unlink("/f").unwrap();
        assert_eq!(p.stat("/f2").unwrap().st_nlink, 1);
        assert_eq!(get(p, "/f2"), b"x");
        assert_eq!(names(p, "/"), ["d", "f2"]);
        // Host: as another user in a root-owned 0755 directory: EACCES; in
        // a sticky world-writable directory, someone else's file: EPERM.
        p.mkdir("/tmp", 0o777).unwrap();
        p.chmod("/tmp", 0o1777).unwrap();
        put(p, "/tmp/rootf", b"");
        p.chmod("/tmp/rootf", 0o666).unwrap();
        p.set_cred(user(1000, 1000));
        assert_eq!(p.unlink("/f2"), Err(Errno::EACCES));
        assert_eq!(p.unlink("/tmp/rootf"), Err(Errno::EPERM));
        assert_eq!(p.rename("/tmp/rootf", "/tmp/x"), Err(Errno::EPERM));
        put(p, "/tmp/mine", b"");
        p.unlink("/tmp/mine").unwrap();
    });
}

#[test]
fn rename_files() {
    each(|_, p| {
        put(p, "/a", b"A");
        put(p, "/b", b"B");
        let ino_a = p.stat("/a").unwrap().st_ino;
        p.rename("/a", "/c").unwrap();
        assert_eq!(p.stat("/a").unwrap_err(), Errno::ENOENT);
        assert_eq!(p.stat("/c").unwrap().st_ino, ino_a);
        // Over an existing file: replaced.
        p.rename("/c", "/b").unwrap();
        assert_eq!(get(p, "/b"), b"A");
        assert_eq!(names(p, "/"), ["b"]);
        // Host: onto itself, and between two links of one inode: nothing
        // happens, both names stay.
        p.rename("/b", "/b").unwrap();
        p.link("/b", "/b2").unwrap();
        p.rename("/b", "/b2").unwrap();
        assert_eq!(names(p, "/"), ["b", "b2"]);
        assert_eq!(p.stat("/b").unwrap().st_nlink, 2);
        // Across directories, relative to dirfds.
        p.mkdir("/x", 0o755).unwrap();
        p.mkdir("/y", 0o755).unwrap();
        let x = p.open("/x", O_RDONLY, 0).unwrap();
        let y = p.open("/y", O_RDONLY, 0).unwrap();
        p.renameat(AT_FDCWD, "/b2", x, "m").unwrap();
        p.renameat(x, "m", y, "n").unwrap();
        assert_eq!(names(p, "/y"), ["n"]);
        assert_eq!(p.stat("/y/n").unwrap().st_nlink, 2);
        // An open file follows its inode.
        let fd = p.open("/y/n", O_RDONLY, 0).unwrap();
        p.rename("/y/n", "/x/o").unwrap();
        assert_eq!(read_to_end(p, fd), b"A");
        p.close(fd).unwrap();
        p.close(x).unwrap();
        p.close(y).unwrap();
        // Host: errors: ENOENT (missing source, missing target directory),
        // ENOTDIR ("f" -> "g/", "f/" -> "g", under a file), EBUSY for
        // ".", ".." and "/" on either side.
        assert_eq!(p.rename("/missing", "/q"), Err(Errno::ENOENT));
        assert_eq!(p.rename("/b", "/nodir/q"), Err(Errno::ENOENT));
        assert_eq!(p.rename("/b", "/g/"), Err(Errno::ENOTDIR));
        assert_eq!(p.rename("/b/", "/g"), Err(Errno::ENOTDIR));
        assert_eq!(p.rename("/b", "/b/x"), Err(Errno::ENOTDIR));
        assert_eq!(p.rename("/b", "/x/.."), Err(Errno::EBUSY));
        assert_eq!(p.rename("/b", "/"), Err(Errno::EBUSY));
        assert_eq!(p.rename("/x/.", "/z"), Err(Errno::EBUSY));
        assert_eq!(p.rename("/x/..", "/z"), Err(Errno::EBUSY));
        assert_eq!(p.rename("", "/z"), Err(Errno::ENOENT));
        p.symlink("/x", "/lx").unwrap();
        assert_eq!(p.rename("/lx/", "/z"), Err(Errno::ENOTDIR));
        assert_eq!(names(p, "/"), ["b", "lx", "x", "y"]);
    });
}

#[test]
fn rename_directories() {
    each(|_, p| {
        p.mkdir("/a", 0o755).unwrap();
        p.mkdir("/b", 0o755).unwrap();
        p.mkdir("/a/s", 0o755).unwrap();
        put(p, "/a/s/file", b"in s");
        // Host: link counts follow the move; s/.. is the new parent.
        assert_eq!(
            (
                p.stat("/a").unwrap().st_nlink,
                p.stat("/b").unwrap().st_nlink
            ),
            (3, 2)
        );
        p.rename("/a/s", "/b/s").unwrap();
        assert_eq!(
            (
                p.stat("/a").unwrap().st_nlink,
                p.stat("/b").unwrap().st_nlink
            ),
            (2, 3)
        );
        assert_eq!(
            p.stat("/b/s/..").unwrap().st_ino,
            p.stat("/b").unwrap().st_ino
        );
        assert_eq!(get(p, "/b/s/file"), b"in s");
        let fd = p.open("/b/s", O_RDONLY, 0).unwrap();
        let mut buf = [0u8; 256];
        let n = p.getdents64(fd, &mut buf).unwrap();
        let ents = uvfs::stat::parse_dirents64(&buf[..n]);
        assert_eq!(ents[1].name, b"..");
        assert_eq!(ents[1].d_ino, p.stat("/b").unwrap().st_ino);
        p.close(fd).unwrap();
        // Host: a directory over a non-empty directory: ENOTEMPTY; over an
        // empty one: replaced (link counts 2 and 4 after a/t -> b/t).
        p.mkdir("/a/t", 0o755).unwrap();
        p.mkdir("/b/t", 0o755).unwrap();
        put(p, "/b/t/x", b"");
        assert_eq!(p.rename("/a/t", "/b/t"), Err(Errno::ENOTEMPTY));
        p.unlink("/b/t/x").unwrap();
        let t_ino = p.stat("/a/t").unwrap().st_ino;
        p.rename("/a/t", "/b/t").unwrap();
        assert_eq!(p.stat("/b/t").unwrap().st_ino, t_ino);
        assert_eq!(
            (
                p.stat("/a").unwrap().st_nlink,
                p.stat("/b").unwrap().st_nlink
            ),
            (2, 4)
        );
        // Host: directory over a file ENOTDIR; file over a directory EISDIR.
        put(p, "/f", b"");
        assert_eq!(p.rename("/b/t", "/f"), Err(Errno::ENOTDIR));
        assert_eq!(p.rename("/f", "/b/t"), Err(Errno::EISDIR));
        // Host: into its own subtree EINVAL (also onto its child); a
        // directory over its own ancestor ENOTEMPTY.
        p.mkdir("/b/t/deep", 0o755).unwrap();
        assert_eq!(p.rename("/b", "/b/t/deep/x"), Err(Errno::EINVAL));
        assert_eq!(p.rename("/b", "/b/t"), Err(Errno::EINVAL));
        assert_eq!(p.rename("/b/t/deep", "/b/t"), Err(Errno::ENOTEMPTY));
        assert_eq!(p.rename("/b/t", "/b"), Err(Errno::ENOTEMPTY));
        // Host: "d" -> "d/" and "d/" -> "e/" work.
        p.rename("/b", "/b/").unwrap();
        p.rename("/b/", "/c/").unwrap();
        assert_eq!(names(p, "/"), ["a", "c", "f"]);
        assert!(p.stat("/c/t/deep").is_ok());
        // A cwd inside a moved directory follows it.
        p.chdir("/c/t").unwrap();
        p.rename("/c", "/a/moved").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/a/moved/t");
        assert!(p.stat("deep").is_ok());
    });
}

#[test]
fn renameat2_flags() {
    each(|_, p| {
        put(p, "/f", b"F");
        put(p, "/g", b"G");
        p.mkdir("/d", 0o755).unwrap();
        put(p, "/d/y", b"");
        p.mkdir("/e", 0o755).unwrap();
        p.mkdir("/e/sub", 0o755).unwrap();
        let f = AT_FDCWD;
        // Host: NOREPLACE onto an existing name EEXIST; EXCHANGE with a
        // missing target ENOENT; both flags EINVAL; unknown flag EINVAL.
        assert_eq!(
            p.renameat2(f, "/f", f, "/g", RENAME_NOREPLACE),
            Err(Errno::EEXIST)
        );
        assert_eq!(
            p.renameat2(f, "/f", f, "/zz", RENAME_EXCHANGE),
            Err(Errno::ENOENT)
        );
        assert_eq!(
            p.renameat2(f, "/d", f, "/f", RENAME_EXCHANGE | RENAME_NOREPLACE),
            Err(Errno::EINVAL)
        );
        assert_eq!(p.renameat2(f, "/f", f, "/g", 8), Err(Errno::EINVAL));
        p.renameat2(f, "/f", f, "/h", RENAME_NOREPLACE).unwrap();
        assert_eq!(get(p, "/h"), b"F");
        // Exchange two files.
        p.renameat2(f, "/h", f, "/g", RENAME_EXCHANGE).unwrap();
        assert_eq!((get(p, "/h"), get(p, "/g")), (b"G".to_vec(), b"F".to_vec()));
        // Host: exchange two directories (contents swap sides).
        p.renameat2(f, "/d", f, "/e", RENAME_EXCHANGE).unwrap();
        assert_eq!(names(p, "/d"), ["sub"]);
        assert_eq!(names(p, "/e"), ["y"]);
        // Host: exchange a directory with a file works.
        let d_ino = p.stat("/d").unwrap().st_ino;
        p.renameat2(f, "/d", f, "/g", RENAME_EXCHANGE).unwrap();
        assert_eq!(p.stat("/g").unwrap().st_ino, d_ino);
        assert_eq!(p.stat("/g").unwrap().st_mode & S_IFMT, S_IFDIR);
        assert_eq!(get(p, "/d"), b"F");
        // Across directories: the subdirectory's ".." and link counts move.
        p.mkdir("/p", 0o755).unwrap();
        p.mkdir("/q", 0o755).unwrap();
        p.mkdir("/p/dir", 0o755).unwrap();
        put(p, "/q/file", b"");
        p.renameat2(f, "/p/dir", f, "/q/file", RENAME_EXCHANGE)
            .unwrap();
        assert_eq!(
            p.stat("/q/file/..").unwrap().st_ino,
            p.stat("/q").unwrap().st_ino
        );
        assert_eq!(
            (
                p.stat("/p").unwrap().st_nlink,
                p.stat("/q").unwrap().st_nlink
            ),
            (2, 3)
        );
        assert_eq!(p.stat("/p/dir").unwrap().st_mode & S_IFMT, 0o100000);
        // Host: exchanging a directory with its own descendant: EINVAL.
        assert_eq!(
            p.renameat2(f, "/g", f, "/g/sub", RENAME_EXCHANGE),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            p.renameat2(f, "/g/sub", f, "/g", RENAME_EXCHANGE),
            Err(Errno::EINVAL)
        );
        // Host: "ld/" (symlink to a directory) exchanged with a file: ENOTDIR.
        p.symlink("/g", "/ld").unwrap();
        assert_eq!(
            p.renameat2(f, "/ld/", f, "/h", RENAME_EXCHANGE),
            Err(Errno::ENOTDIR)
        );
    });
}

#[test]
fn link_and_linkat() {
    each(|_, p| {
        put(p, "/f", b"x");
        p.mkdir("/d", 0o755).unwrap();
        p.link("/f", "/d/f2").unwrap();
        let st = p.stat("/f").unwrap();
        assert_eq!(st.st_nlink, 2);
        assert_eq!(p.stat("/d/f2").unwrap().st_ino, st.st_ino);
        // Host: EPERM on a directory; EEXIST onto an existing name (also
        // "d/"); ENOENT for a missing source or "new/"; ENOTDIR under a file.
        assert_eq!(p.link("/d", "/dd"), Err(Errno::EPERM));
        assert_eq!(p.link("/f", "/f"), Err(Errno::EEXIST));
        assert_eq!(p.link("/f", "/d/"), Err(Errno::EEXIST));
        assert_eq!(p.link("/f", "/d"), Err(Errno::EEXIST));
        assert_eq!(p.link("/zz", "/zz2"), Err(Errno::ENOENT));
        assert_eq!(p.link("/f", "/nn/"), Err(Errno::ENOENT));
        assert_eq!(p.link("/f", "/f/x"), Err(Errno::ENOTDIR));
        assert_eq!(p.link("/f", "/nodir/x"), Err(Errno::ENOENT));
        // Host: link() does not follow a symlink; AT_SYMLINK_FOLLOW does;
        // following a dangling one is ENOENT.
        p.symlink("/f", "/lf").unwrap();
        p.link("/lf", "/lf2").unwrap();
        assert_eq!(p.lstat("/lf2").unwrap().st_mode & S_IFMT, S_IFLNK);
        assert_eq!(p.lstat("/lf").unwrap().st_nlink, 2);
        p.linkat(AT_FDCWD, "/lf", AT_FDCWD, "/lf3", AT_SYMLINK_FOLLOW)
            .unwrap();
        assert_eq!(p.lstat("/lf3").unwrap().st_ino, st.st_ino);
        assert_eq!(p.stat("/f").unwrap().st_nlink, 3);
        p.symlink("/nowhere", "/dang").unwrap();
        assert_eq!(
            p.linkat(AT_FDCWD, "/dang", AT_FDCWD, "/dang2", AT_SYMLINK_FOLLOW),
            Err(Errno::ENOENT)
        );
        p.link("/dang", "/dang3").unwrap();
        let mut b = [0u8; 32];
        assert_eq!(p.readlink("/dang3", &mut b), Ok(8));
        // Host: unknown flag EINVAL; AT_EMPTY_PATH on a directory fd EPERM
        // (AT_FDCWD too); an empty path without the flag ENOENT.
        assert_eq!(
            p.linkat(AT_FDCWD, "/f", AT_FDCWD, "/z", 0x8),
            Err(Errno::EINVAL)
        );
        let d = p.open("/d", O_RDONLY, 0).unwrap();
        assert_eq!(
            p.linkat(d, "", AT_FDCWD, "/z", AT_EMPTY_PATH),
            Err(Errno::EPERM)
        );
        assert_eq!(
            p.linkat(AT_FDCWD, "", AT_FDCWD, "/z", AT_EMPTY_PATH),
            Err(Errno::EPERM)
        );
        assert_eq!(
            p.linkat(AT_FDCWD, "", AT_FDCWD, "/z", 0),
            Err(Errno::ENOENT)
        );
        // Relative to dirfds; AT_EMPTY_PATH of a regular file's fd.
        p.linkat(d, "f2", AT_FDCWD, "/f4", 0).unwrap();
        let fd = p.open("/f", O_RDONLY, 0).unwrap();
        p.linkat(fd, "", d, "f5", AT_EMPTY_PATH).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_nlink, 5);
        p.close(fd).unwrap();
        p.close(d).unwrap();
        // Host: EXDEV across mounts.
        p.mkdir("/mnt", 0o755).unwrap();
        p.mount(b"/mnt", Tmpfs::new(Default::default())).unwrap();
        assert_eq!(p.link("/f", "/mnt/f"), Err(Errno::EXDEV));
        assert_eq!(p.stat("/mnt/f").unwrap_err(), Errno::ENOENT);
    });
}

#[test]
fn symlink_and_readlink() {
    each(|_, p| {
        p.mkdir("/d", 0o755).unwrap();
        for (target, name) in [
            ("rel/target", "/d/l1"),
            ("/abs/target", "/d/l2"),
            ("../..//./x/", "/d/l3"),
            ("nowhere", "/d/l4"),
        ] {
            p.symlink(target, name).unwrap();
            let mut b = [0u8; 64];
            let n = p.readlink(name, &mut b).unwrap();
            assert_eq!(&b[..n], target.as_bytes(), "stored verbatim");
            let st = p.lstat(name).unwrap();
            assert_eq!((st.st_mode, st.st_size), (0o120777, target.len() as i64));
        }
        // Host: readlink truncates to the buffer; an empty buffer, a
        // regular file and a directory are EINVAL.
        let mut b3 = [0u8; 3];
        assert_eq!(p.readlink("/d/l1", &mut b3), Ok(3));
        assert_eq!(&b3, b"rel");
        assert_eq!(p.readlink("/d/l1", &mut []), Err(Errno::EINVAL));
        put(p, "/f", b"");
        let mut b = [0u8; 64];
        assert_eq!(p.readlink("/f", &mut b), Err(Errno::EINVAL));
        assert_eq!(p.readlink("/d", &mut b), Err(Errno::EINVAL));
        assert_eq!(p.readlink("/missing", &mut b), Err(Errno::ENOENT));
        // readlink reads the last component, following earlier ones.
        p.symlink("/d", "/ld").unwrap();
        assert_eq!(p.readlink("/ld/l4", &mut b), Ok(7));
        assert_eq!(p.readlink("/ld", &mut b), Ok(2));
        // Host: symlink errors: empty target ENOENT, existing name EEXIST
        // (also "f/"), "new/" ENOENT, target of 4095 bytes fine and of 4096
        // ENAMETOOLONG.
        assert_eq!(p.symlink("", "/se"), Err(Errno::ENOENT));
        assert_eq!(p.symlink("x", "/f"), Err(Errno::EEXIST));
        assert_eq!(p.symlink("x", "/f/"), Err(Errno::EEXIST));
        assert_eq!(p.symlink("x", "/d/l1"), Err(Errno::EEXIST));
        assert_eq!(p.symlink("x", "/nl/"), Err(Errno::ENOENT));
        assert_eq!(p.stat("/nl").unwrap_err(), Errno::ENOENT);
        let long = "a".repeat(4095);
        p.symlink(&long, "/long").unwrap();
        let mut big = vec![0u8; 5000];
        assert_eq!(p.readlink("/long", &mut big), Ok(4095));
        assert_eq!(
            p.symlink("a".repeat(4096), "/long2"),
            Err(Errno::ENAMETOOLONG)
        );
        // symlinkat relative to a dirfd.
        let d = p.open("/d", O_RDONLY, 0).unwrap();
        p.symlinkat("t", d, "l5").unwrap();
        assert_eq!(p.readlinkat(d, "l5", &mut b), Ok(1));
        // Host: readlinkat(fd, "") on an O_PATH|O_NOFOLLOW fd of a symlink
        // reads it; on a directory fd, or AT_FDCWD, it is ENOENT.
        let l = p.open("/d/l2", O_PATH | O_NOFOLLOW, 0).unwrap();
        assert_eq!(p.readlinkat(l, "", &mut b), Ok(11));
        assert_eq!(p.readlinkat(AT_FDCWD, "", &mut b), Err(Errno::ENOENT));
        assert_eq!(p.readlinkat(d, "", &mut b), Err(Errno::ENOENT));
        p.close(l).unwrap();
        p.close(d).unwrap();
    });
}

#[test]
fn chdir_fchdir_getcwd() {
    each(|_, p| {
        assert_eq!(p.getcwd().unwrap(), b"/");
        p.mkdir("/a", 0o755).unwrap();
        p.mkdir("/a/b", 0o755).unwrap();
        put(p, "/a/f", b"");
        p.chdir("/a").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/a");
        p.chdir("b").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/a/b");
        p.chdir("..").unwrap();
        p.chdir("./b/../b/.").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/a/b");
        // Through a symlink: getcwd shows the real path.
        p.symlink("/a/b", "/lb").unwrap();
        p.chdir("/lb").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/a/b");
        // Host: chdir/fchdir to a file ENOTDIR; missing ENOENT; bad fd EBADF.
        assert_eq!(p.chdir("/a/f"), Err(Errno::ENOTDIR));
        assert_eq!(p.chdir("/missing"), Err(Errno::ENOENT));
        assert_eq!(p.chdir(""), Err(Errno::ENOENT));
        let f = p.open("/a/f", O_RDONLY, 0).unwrap();
        assert_eq!(p.fchdir(f), Err(Errno::ENOTDIR));
        assert_eq!(p.fchdir(999), Err(Errno::EBADF));
        p.close(f).unwrap();
        let d = p.open("/a", O_RDONLY, 0).unwrap();
        p.fchdir(d).unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/a");
        p.close(d).unwrap();
        // The cwd is per process: a fork copies it, a thread shares it.
        let mut child = p.fork().unwrap();
        let mut thread = p.new_thread();
        child.chdir("/").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/a");
        thread.chdir("b").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/a/b");
        drop(thread);
        drop(child);
        // Host: renamed cwd: getcwd shows the new path.
        p.rename("/a", "/z").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/z/b");
        // Host: after the cwd is removed: getcwd ENOENT, "." still stats,
        // creating in it ENOENT, ".." still works.
        p.rmdir("/z/b").unwrap();
        assert_eq!(p.getcwd(), Err(Errno::ENOENT));
        assert_eq!(p.stat(".").unwrap().st_nlink, 0);
        assert_eq!(p.open("new", O_CREAT | O_WRONLY, 0o644), Err(Errno::ENOENT));
        assert_eq!(p.mkdir("newd", 0o755), Err(Errno::ENOENT));
        p.chdir("..").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/z");
        // Host: chdir/fchdir into a directory without search permission
        // is EACCES.
        p.mkdir("/nx", 0o700).unwrap();
        let nx = p.open("/nx", O_RDONLY, 0).unwrap();
        p.set_cred(user(1000, 1000));
        assert_eq!(p.chdir("/nx"), Err(Errno::EACCES));
        assert_eq!(p.fchdir(nx), Err(Errno::EACCES));
        assert_eq!(p.getcwd().unwrap(), b"/z");
    });
}

#[test]
fn getcwd_across_mount() {
    each(|_, p| {
        p.mkdir("/mnt", 0o755).unwrap();
        p.mount(b"/mnt", Tmpfs::new(Default::default())).unwrap();
        p.mkdir("/mnt/sub", 0o755).unwrap();
        p.chdir("/mnt/sub").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/mnt/sub");
        p.chdir("..").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/mnt");
        p.chdir("..").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/");
        // A mount two levels down, and a mount on a mount.
        p.mkdir("/mnt/sub/deep", 0o755).unwrap();
        p.mount(b"/mnt/sub/deep", Tmpfs::new(Default::default()))
            .unwrap();
        p.mkdir("/mnt/sub/deep/x", 0o755).unwrap();
        p.chdir("/mnt/sub/deep/x").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/mnt/sub/deep/x");
        p.chdir("../../..").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/mnt");
    });
}

#[test]
fn fd_path_names_the_open_file() {
    each(|_, p| {
        p.mkdir("/a", 0o755).unwrap();
        p.mkdir("/a/b", 0o755).unwrap();
        let d = p.open("/a/b", O_RDONLY, 0).unwrap();
        let f = p.open("/a/f", O_CREAT | O_RDWR, 0o644).unwrap();
        let o = p.open("/a", O_PATH, 0).unwrap();
        // Host (readlink of /proc/self/fd/N, relative to the test
        // directory): a/b, a/f, a; after renaming a to z: z/b, z/f, z.
        assert_eq!(p.fd_path(d).unwrap(), b"/a/b");
        assert_eq!(p.fd_path(f).unwrap(), b"/a/f");
        assert_eq!(p.fd_path(o).unwrap(), b"/a");
        p.rename("/a", "/z").unwrap();
        assert_eq!(p.fd_path(d).unwrap(), b"/z/b");
        assert_eq!(p.fd_path(f).unwrap(), b"/z/f");
        assert_eq!(p.fd_path(o).unwrap(), b"/z");
        let root = p.open("/", O_RDONLY, 0).unwrap();
        assert_eq!(p.fd_path(root).unwrap(), b"/");
        // Host: removed, the link ends in " (deleted)": ENOENT here.
        p.unlink("/z/f").unwrap();
        p.rmdir("/z/b").unwrap();
        assert_eq!(p.fd_path(d), Err(Errno::ENOENT));
        assert_eq!(p.fd_path(f), Err(Errno::ENOENT));
        assert_eq!(p.fd_path(999), Err(Errno::EBADF));
        for fd in [d, f, o, root] {
            p.close(fd).unwrap();
        }
    });
}
