//! open(2), openat(2), creat(2): every flag in scope (access modes,
//! `O_CREAT`, `O_EXCL`, `O_TRUNC`, `O_APPEND`, `O_DIRECTORY`, `O_NOFOLLOW`,
//! `O_CLOEXEC`, `O_PATH`, `O_TMPFILE` with `linkat(AT_EMPTY_PATH)`),
//! dirfd-relative opens and `AT_FDCWD`, and the errors (`EISDIR`,
//! `ENOTDIR`, `ELOOP`, `EEXIST`, `ENOENT`, `EACCES`, `EMFILE`, `EINVAL`),
//! each asserted as the errno a Linux 6.18 host gives on tmpfs ("Host:"
//! comments record what was checked there). Every test runs under both
//! fast-path settings.

mod support;

use support::vfs::*;
use uvfs::Errno;
use uvfs::uapi::*;

#[test]
fn access_modes() {
    each(|_, p| {
        put(p, "/f", b"data");
        let r = p.open("/f", O_RDONLY, 0).unwrap();
        let w = p.open("/f", O_WRONLY, 0).unwrap();
        let rw = p.open("/f", O_RDWR, 0).unwrap();
        let mut b = [0u8; 8];
        assert_eq!(p.read(r, &mut b), Ok(4));
        assert_eq!(p.write(r, b"x"), Err(Errno::EBADF));
        assert_eq!(p.read(w, &mut b), Err(Errno::EBADF));
        assert_eq!(p.write(w, b"D"), Ok(1));
        assert_eq!(p.read(rw, &mut b), Ok(4));
        assert_eq!(&b[..4], b"Data");
        assert_eq!(p.write(rw, b"!"), Ok(1));
        // Host: F_GETFL of O_RDWR|O_APPEND|O_CLOEXEC is 0o102002 (O_LARGEFILE
        // added, O_CLOEXEC not a status flag).
        let a = p.open("/f", O_RDWR | O_APPEND | O_CLOEXEC, 0).unwrap();
        assert_eq!(p.fcntl(a, F_GETFL, 0), Ok(0o102002));
        assert_eq!(p.fcntl(r, F_GETFL, 0), Ok(O_LARGEFILE));
        assert_eq!(p.fcntl(w, F_GETFL, 0), Ok(O_LARGEFILE | O_WRONLY));
        for fd in [r, w, rw, a] {
            p.close(fd).unwrap();
        }
        assert_eq!(get(p, "/f"), b"Data!");
    });
}

#[test]
fn creat_mode_umask_owner() {
    each(|_, p| {
        let fd = p.open("/a", O_CREAT | O_WRONLY, 0o777).unwrap();
        p.close(fd).unwrap();
        let st = p.stat("/a").unwrap();
        assert_eq!(st.st_mode, 0o100755, "umask 022 applied");
        assert_eq!(
            (st.st_uid, st.st_gid, st.st_nlink, st.st_size),
            (0, 0, 1, 0)
        );
        assert_eq!(p.umask(0o077), 0o022);
        let fd = p.creat("/b", 0o666).unwrap();
        assert_eq!(p.fcntl(fd, F_GETFL, 0), Ok(O_LARGEFILE | O_WRONLY));
        p.close(fd).unwrap();
        assert_eq!(p.stat("/b").unwrap().st_mode, 0o100600);
        // An existing file: mode argument ignored, contents kept.
        put(p, "/c", b"keep");
        p.umask(0);
        let fd = p.open("/c", O_CREAT | O_RDWR, 0o777).unwrap();
        p.close(fd).unwrap();
        assert_eq!(p.stat("/c").unwrap().st_mode, 0o100644 & !0o077);
        assert_eq!(get(p, "/c"), b"keep");
        // creat truncates an existing file.
        let fd = p.creat("/c", 0o600).unwrap();
        p.close(fd).unwrap();
        assert_eq!(p.stat("/c").unwrap().st_size, 0);
        // A non-root creator owns the file.
        p.mkdir("/pub", 0o777).unwrap();
        p.chmod("/pub", 0o777).unwrap();
        p.set_cred(user(1000, 100));
        let fd = p.open("/pub/u", O_CREAT | O_WRONLY, 0o640).unwrap();
        p.close(fd).unwrap();
        let st = p.stat("/pub/u").unwrap();
        assert_eq!((st.st_uid, st.st_gid, st.st_mode), (1000, 100, 0o100640));
    });
}

#[test]
fn excl() {
    each(|_, p| {
        put(p, "/f", b"x");
        p.mkdir("/d", 0o755).unwrap();
        p.symlink("/f", "/lf").unwrap();
        p.symlink("/nowhere", "/dangling").unwrap();
        assert_eq!(
            p.open("/f", O_CREAT | O_EXCL | O_WRONLY, 0o644),
            Err(Errno::EEXIST)
        );
        // Host: O_CREAT|O_EXCL on a directory is EEXIST (without O_EXCL, EISDIR).
        assert_eq!(
            p.open("/d", O_CREAT | O_EXCL | O_RDONLY, 0o644),
            Err(Errno::EEXIST)
        );
        assert_eq!(
            p.open("/lf", O_CREAT | O_EXCL | O_WRONLY, 0o644),
            Err(Errno::EEXIST)
        );
        // Host: O_CREAT|O_EXCL does not follow even a dangling symlink: EEXIST.
        assert_eq!(
            p.open("/dangling", O_CREAT | O_EXCL | O_WRONLY, 0o644),
            Err(Errno::EEXIST)
        );
        assert_eq!(p.stat("/nowhere").unwrap_err(), Errno::ENOENT);
        let fd = p.open("/new", O_CREAT | O_EXCL | O_WRONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        assert_eq!(
            p.open("/new", O_CREAT | O_EXCL | O_WRONLY, 0o644),
            Err(Errno::EEXIST)
        );
        // O_EXCL without O_CREAT is ignored for regular files.
        let fd = p.open("/f", O_EXCL | O_RDONLY, 0).unwrap();
        p.close(fd).unwrap();
    });
}

#[test]
fn creat_through_symlink() {
    each(|_, p| {
        // Host: O_CREAT through a dangling symlink creates its target.
        p.mkdir("/d", 0o755).unwrap();
        p.symlink("d/target", "/rel").unwrap();
        p.symlink("/d/abs", "/abs").unwrap();
        let fd = p.open("/rel", O_CREAT | O_WRONLY, 0o600).unwrap();
        p.write(fd, b"r").unwrap();
        p.close(fd).unwrap();
        let fd = p.open("/abs", O_CREAT | O_WRONLY, 0o600).unwrap();
        p.close(fd).unwrap();
        assert_eq!(names(p, "/d"), ["abs", "target"]);
        assert_eq!(get(p, "/d/target"), b"r");
        assert_eq!(p.lstat("/rel").unwrap().st_mode & 0o170000, 0o120000);
        // With O_NOFOLLOW the symlink itself is opened: ELOOP.
        assert_eq!(
            p.open("/rel", O_CREAT | O_NOFOLLOW | O_WRONLY, 0o600),
            Err(Errno::ELOOP)
        );
        // Host: a 41-link chain is ELOOP for O_CREAT too.
        let mut prev = "/d/target".to_string();
        for i in 1..=41 {
            let l = format!("/c{i}");
            p.symlink(&prev, &l).unwrap();
            prev = l;
        }
        let fd = p.open("/c40", O_CREAT | O_WRONLY, 0o600).unwrap();
        p.close(fd).unwrap();
        assert_eq!(p.open("/c41", O_CREAT | O_WRONLY, 0o600), Err(Errno::ELOOP));
        p.symlink("/self", "/self").unwrap();
        assert_eq!(
            p.open("/self", O_CREAT | O_WRONLY, 0o600),
            Err(Errno::ELOOP)
        );
    });
}

#[test]
fn trunc() {
    each(|_, p| {
        put(p, "/f", b"contents");
        let fd = p.open("/f", O_WRONLY | O_TRUNC, 0).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_size, 0);
        p.close(fd).unwrap();
        // Host: O_RDONLY|O_TRUNC truncates too.
        put(p, "/f", b"contents");
        let fd = p.open("/f", O_RDONLY | O_TRUNC, 0).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_size, 0);
        p.close(fd).unwrap();
        // Host: O_TRUNC on a directory is EISDIR, even O_RDONLY.
        p.mkdir("/d", 0o755).unwrap();
        assert_eq!(p.open("/d", O_RDONLY | O_TRUNC, 0), Err(Errno::EISDIR));
        // Host: O_PATH ignores O_TRUNC.
        put(p, "/g", b"kept");
        let fd = p.open("/g", O_PATH | O_TRUNC, 0).unwrap();
        p.close(fd).unwrap();
        assert_eq!(get(p, "/g"), b"kept");
        // O_TRUNC of a file this open creates: empty, no error.
        let fd = p.open("/h", O_CREAT | O_TRUNC | O_RDWR, 0o644).unwrap();
        p.close(fd).unwrap();
        assert_eq!(p.stat("/h").unwrap().st_size, 0);
    });
}

#[test]
fn append() {
    each(|_, p| {
        put(p, "/f", b"ab");
        let fd = p.open("/f", O_WRONLY | O_APPEND, 0).unwrap();
        assert_eq!(p.lseek(fd, 0, SEEK_SET), Ok(0));
        p.write(fd, b"cd").unwrap();
        assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(4));
        p.close(fd).unwrap();
        assert_eq!(get(p, "/f"), b"abcd");
        // O_APPEND can be set later with F_SETFL.
        let fd = p.open("/f", O_WRONLY, 0).unwrap();
        p.fcntl(fd, F_SETFL, O_APPEND as u64).unwrap();
        p.write(fd, b"e").unwrap();
        p.close(fd).unwrap();
        assert_eq!(get(p, "/f"), b"abcde");
    });
}

#[test]
fn directory_flag() {
    each(|_, p| {
        put(p, "/f", b"");
        p.mkdir("/d", 0o755).unwrap();
        p.symlink("/d", "/ld").unwrap();
        p.symlink("/f", "/lf").unwrap();
        assert_eq!(p.open("/f", O_DIRECTORY | O_RDONLY, 0), Err(Errno::ENOTDIR));
        assert_eq!(
            p.open("/lf", O_DIRECTORY | O_RDONLY, 0),
            Err(Errno::ENOTDIR)
        );
        let fd = p.open("/d", O_DIRECTORY | O_RDONLY, 0).unwrap();
        p.close(fd).unwrap();
        let fd = p.open("/ld", O_DIRECTORY | O_RDONLY, 0).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_ino, p.stat("/d").unwrap().st_ino);
        p.close(fd).unwrap();
        // Host: O_DIRECTORY|O_NOFOLLOW on a symlink to a directory: ENOTDIR.
        assert_eq!(
            p.open("/ld", O_DIRECTORY | O_NOFOLLOW, 0),
            Err(Errno::ENOTDIR)
        );
        // Host: O_DIRECTORY|O_CREAT is EINVAL, before any lookup.
        assert_eq!(
            p.open("/q", O_DIRECTORY | O_CREAT, 0o600),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            p.open("/d", O_DIRECTORY | O_CREAT, 0o600),
            Err(Errno::EINVAL)
        );
        assert_eq!(p.stat("/q").unwrap_err(), Errno::ENOENT);
        // Host: write access to a directory is EISDIR.
        assert_eq!(p.open("/d", O_WRONLY, 0), Err(Errno::EISDIR));
        assert_eq!(p.open("/d", O_RDWR, 0), Err(Errno::EISDIR));
        assert_eq!(p.open("/d", O_DIRECTORY | O_RDWR, 0), Err(Errno::EISDIR));
        // Host: O_CREAT on an existing directory (no O_EXCL) is EISDIR.
        assert_eq!(p.open("/d", O_CREAT | O_RDONLY, 0o644), Err(Errno::EISDIR));
        // A directory may be opened read-only without O_DIRECTORY.
        let fd = p.open("/d", O_RDONLY, 0).unwrap();
        p.close(fd).unwrap();
    });
}

#[test]
fn nofollow() {
    each(|_, p| {
        put(p, "/f", b"x");
        p.mkdir("/d", 0o755).unwrap();
        put(p, "/d/g", b"y");
        p.symlink("/f", "/lf").unwrap();
        p.symlink("/d", "/ld").unwrap();
        // Host: O_NOFOLLOW on a symlink is ELOOP.
        assert_eq!(p.open("/lf", O_RDONLY | O_NOFOLLOW, 0), Err(Errno::ELOOP));
        assert_eq!(p.open("/ld", O_RDONLY | O_NOFOLLOW, 0), Err(Errno::ELOOP));
        // Only the last component: symlinks before it are followed.
        let fd = p.open("/ld/g", O_RDONLY | O_NOFOLLOW, 0).unwrap();
        p.close(fd).unwrap();
        // Host: a trailing slash makes the walk follow even with O_NOFOLLOW.
        let fd = p.open("/ld/", O_RDONLY | O_NOFOLLOW, 0).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_mode & 0o170000, 0o040000);
        p.close(fd).unwrap();
        // Without O_NOFOLLOW the target opens.
        let fd = p.open("/lf", O_RDONLY, 0).unwrap();
        assert_eq!(read_to_end(p, fd), b"x");
        p.close(fd).unwrap();
    });
}

#[test]
fn cloexec() {
    each(|_, p| {
        put(p, "/f", b"");
        let a = p.open("/f", O_RDONLY | O_CLOEXEC, 0).unwrap();
        let b = p.open("/f", O_RDONLY, 0).unwrap();
        assert_eq!(p.fcntl(a, F_GETFD, 0), Ok(FD_CLOEXEC));
        assert_eq!(p.fcntl(b, F_GETFD, 0), Ok(0));
        let c = p.openat(AT_FDCWD, "/", O_PATH | O_CLOEXEC, 0).unwrap();
        assert_eq!(p.fcntl(c, F_GETFD, 0), Ok(FD_CLOEXEC));
        p.exec().unwrap();
        assert_eq!(p.fstat(a).unwrap_err(), Errno::EBADF);
        assert_eq!(p.fstat(c).unwrap_err(), Errno::EBADF);
        assert!(p.fstat(b).is_ok());
    });
}

#[test]
fn o_path() {
    each(|_, p| {
        put(p, "/f", b"secret");
        p.chmod("/f", 0o600).unwrap();
        p.mkdir("/d", 0o755).unwrap();
        put(p, "/d/in", b"in");
        p.symlink("/f", "/lf").unwrap();
        let fd = p.open("/f", O_PATH, 0).unwrap();
        // Host: F_GETFL of an O_PATH fd is O_PATH alone.
        assert_eq!(p.fcntl(fd, F_GETFL, 0), Ok(O_PATH));
        let mut b = [0u8; 4];
        assert_eq!(p.read(fd, &mut b), Err(Errno::EBADF));
        assert_eq!(p.write(fd, b"x"), Err(Errno::EBADF));
        assert_eq!(p.lseek(fd, 0, SEEK_SET), Err(Errno::EBADF));
        assert_eq!(p.fchmod(fd, 0o644), Err(Errno::EBADF));
        // Host: fsync of an O_PATH fd is EBADF.
        assert_eq!(p.fsync(fd), Err(Errno::EBADF));
        assert_eq!(p.fstat(fd).unwrap().st_size, 6);
        p.close(fd).unwrap();
        // O_PATH on a directory: a dirfd for openat and for fchdir.
        let dfd = p.open("/d", O_PATH | O_DIRECTORY, 0).unwrap();
        let fd = p.openat(dfd, "in", O_RDONLY, 0).unwrap();
        assert_eq!(read_to_end(p, fd), b"in");
        p.close(fd).unwrap();
        assert_eq!(p.getdents64(dfd, &mut [0u8; 512]), Err(Errno::EBADF));
        // Host: fchdir to an O_PATH directory fd works.
        p.fchdir(dfd).unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/d");
        p.chdir("/").unwrap();
        // O_PATH|O_NOFOLLOW opens the symlink itself; readlinkat reads it.
        let lfd = p.open("/lf", O_PATH | O_NOFOLLOW, 0).unwrap();
        assert_eq!(p.fstat(lfd).unwrap().st_mode & 0o170000, 0o120000);
        let mut t = [0u8; 16];
        assert_eq!(p.readlinkat(lfd, "", &mut t), Ok(2));
        assert_eq!(&t[..2], b"/f");
        // Host: O_PATH|O_CREAT does not create: ENOENT.
        assert_eq!(
            p.open("/missing", O_PATH | O_CREAT, 0o644),
            Err(Errno::ENOENT)
        );
        assert_eq!(p.stat("/missing").unwrap_err(), Errno::ENOENT);
        // Host: O_PATH needs no read permission on the file.
        p.set_cred(user(1000, 1000));
        assert_eq!(p.open("/f", O_RDONLY, 0), Err(Errno::EACCES));
        let fd = p.open("/f", O_PATH, 0).unwrap();
        p.close(fd).unwrap();
    });
}

#[test]
fn tmpfile() {
    each(|_, p| {
        p.mkdir("/d", 0o755).unwrap();
        let fd = p.open("/d", O_TMPFILE | O_RDWR, 0o600).unwrap();
        p.write(fd, b"tmp").unwrap();
        // Host: an O_TMPFILE inode has no link and mode 0100600.
        let st = p.fstat(fd).unwrap();
        assert_eq!((st.st_nlink, st.st_mode, st.st_size), (0, 0o100600, 3));
        assert!(names(p, "/d").is_empty());
        // Host: linkat(fd, "", AT_FDCWD, name, AT_EMPTY_PATH) names it.
        p.linkat(fd, "", AT_FDCWD, "/d/named", AT_EMPTY_PATH)
            .unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_nlink, 1);
        assert_eq!(p.stat("/d/named").unwrap().st_ino, st.st_ino);
        assert_eq!(get(p, "/d/named"), b"tmp");
        // Host: it may be linked again (nlink 2).
        p.linkat(fd, "", AT_FDCWD, "/d/named2", AT_EMPTY_PATH)
            .unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_nlink, 2);
        p.close(fd).unwrap();
        assert_eq!(names(p, "/d"), ["named", "named2"]);
        // Host: O_TMPFILE|O_EXCL can never be linked: ENOENT.
        let fd = p.open("/d", O_TMPFILE | O_RDWR | O_EXCL, 0o600).unwrap();
        assert_eq!(
            p.linkat(fd, "", AT_FDCWD, "/d/x", AT_EMPTY_PATH),
            Err(Errno::ENOENT)
        );
        p.close(fd).unwrap();
        assert_eq!(names(p, "/d"), ["named", "named2"]);
        // Host: O_TMPFILE needs write access (EINVAL), a directory
        // (ENOTDIR), an existing one (ENOENT). O_WRONLY is enough.
        assert_eq!(
            p.open("/d", O_TMPFILE | O_RDONLY, 0o600),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            p.open("/d/named", O_TMPFILE | O_RDWR, 0o600),
            Err(Errno::ENOTDIR)
        );
        assert_eq!(
            p.open("/nodir", O_TMPFILE | O_RDWR, 0o600),
            Err(Errno::ENOENT)
        );
        let fd = p.open("/d", O_TMPFILE | O_WRONLY, 0o600).unwrap();
        p.close(fd).unwrap();
        // An unnamed file that was never linked disappears at close.
        assert_eq!(names(p, "/d"), ["named", "named2"]);
        // Host: linkat(AT_EMPTY_PATH) of an unlinked regular file: ENOENT.
        let fd = p.open("/d/u", O_CREAT | O_RDWR, 0o600).unwrap();
        p.unlink("/d/u").unwrap();
        assert_eq!(
            p.linkat(fd, "", AT_FDCWD, "/d/u2", AT_EMPTY_PATH),
            Err(Errno::ENOENT)
        );
        p.close(fd).unwrap();
        // Host: O_TMPFILE in a directory the user may not write: EACCES.
        p.set_cred(user(1000, 1000));
        assert_eq!(p.open("/d", O_TMPFILE | O_RDWR, 0o600), Err(Errno::EACCES));
    });
}

#[test]
fn dirfd_relative() {
    each(|_, p| {
        p.mkdir("/d", 0o755).unwrap();
        p.mkdir("/d/e", 0o755).unwrap();
        put(p, "/d/e/f", b"def");
        put(p, "/top", b"top");
        let d = p.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let fd = p.openat(d, "e/f", O_RDONLY, 0).unwrap();
        assert_eq!(read_to_end(p, fd), b"def");
        p.close(fd).unwrap();
        let fd = p.openat(d, "../top", O_RDONLY, 0).unwrap();
        assert_eq!(read_to_end(p, fd), b"top");
        p.close(fd).unwrap();
        // Create relative to the dirfd.
        let fd = p.openat(d, "new", O_CREAT | O_WRONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        assert!(p.stat("/d/new").is_ok());
        // An absolute path ignores the dirfd, even a bad one (host: fstatat
        // with a bad fd and "/" succeeds).
        let fd = p.openat(9999, "/top", O_RDONLY, 0).unwrap();
        p.close(fd).unwrap();
        // Host: relative to a non-directory fd: ENOTDIR; to a closed fd: EBADF.
        let f = p.open("/top", O_RDONLY, 0).unwrap();
        assert_eq!(p.openat(f, "x", O_RDONLY, 0), Err(Errno::ENOTDIR));
        assert_eq!(p.openat(9999, "x", O_RDONLY, 0), Err(Errno::EBADF));
        // AT_FDCWD: relative to the current directory.
        p.chdir("/d/e").unwrap();
        let fd = p.openat(AT_FDCWD, "f", O_RDONLY, 0).unwrap();
        assert_eq!(read_to_end(p, fd), b"def");
        p.close(fd).unwrap();
        let fd = p.open("../../top", O_RDONLY, 0).unwrap();
        p.close(fd).unwrap();
        // The dirfd keeps naming its directory after a rename.
        p.chdir("/").unwrap();
        p.rename("/d", "/moved").unwrap();
        let fd = p.openat(d, "e/f", O_RDONLY, 0).unwrap();
        p.close(fd).unwrap();
        p.close(d).unwrap();
        p.close(f).unwrap();
    });
}

#[test]
fn errors_enoent_enotdir_eisdir() {
    each(|_, p| {
        put(p, "/f", b"");
        p.mkdir("/d", 0o755).unwrap();
        assert_eq!(p.open("/missing", O_RDONLY, 0), Err(Errno::ENOENT));
        assert_eq!(p.open("", O_RDONLY, 0), Err(Errno::ENOENT));
        assert_eq!(p.open("", O_CREAT | O_RDWR, 0o644), Err(Errno::ENOENT));
        // Host: O_CREAT in a missing directory: ENOENT; under a file: ENOTDIR.
        assert_eq!(
            p.open("/nodir/x", O_CREAT | O_WRONLY, 0o644),
            Err(Errno::ENOENT)
        );
        assert_eq!(
            p.open("/f/x", O_CREAT | O_WRONLY, 0o644),
            Err(Errno::ENOTDIR)
        );
        assert_eq!(p.open("/f/x", O_RDONLY, 0), Err(Errno::ENOTDIR));
        // Host: "file/" is ENOTDIR; with O_CREAT, a trailing slash is EISDIR
        // whatever the name is (file, directory, missing).
        assert_eq!(p.open("/f/", O_RDONLY, 0), Err(Errno::ENOTDIR));
        assert_eq!(p.open("/f/", O_CREAT | O_RDONLY, 0o644), Err(Errno::EISDIR));
        assert_eq!(p.open("/d/", O_CREAT | O_RDONLY, 0o644), Err(Errno::EISDIR));
        assert_eq!(
            p.open("/new/", O_CREAT | O_RDONLY, 0o644),
            Err(Errno::EISDIR)
        );
        assert_eq!(p.stat("/new").unwrap_err(), Errno::ENOENT);
        assert_eq!(p.open("/", O_CREAT | O_RDONLY, 0o644), Err(Errno::EISDIR));
        assert_eq!(
            p.open("/d/..", O_CREAT | O_RDONLY, 0o644),
            Err(Errno::EISDIR)
        );
        let fd = p.open("/d/", O_RDONLY, 0).unwrap();
        p.close(fd).unwrap();
        // Embedded NUL.
        assert_eq!(p.open(b"/f\0x", O_RDONLY, 0), Err(Errno::EINVAL));
    });
}

#[test]
fn errors_eacces() {
    each(|_, p| {
        put(p, "/rootonly", b"x");
        p.chmod("/rootonly", 0o600).unwrap();
        put(p, "/ro", b"x"); // 0644
        p.mkdir("/rodir", 0o555).unwrap();
        p.mkdir("/pub", 0o777).unwrap();
        p.chmod("/pub", 0o777).unwrap();
        put(p, "/rodir_existing", b"");
        p.set_cred(user(1000, 1000));
        // Host: each of these is EACCES for uid 1000.
        assert_eq!(p.open("/rootonly", O_RDONLY, 0), Err(Errno::EACCES));
        assert_eq!(p.open("/ro", O_WRONLY, 0), Err(Errno::EACCES));
        assert_eq!(p.open("/ro", O_RDWR, 0), Err(Errno::EACCES));
        assert_eq!(p.open("/ro", O_RDONLY | O_TRUNC, 0), Err(Errno::EACCES));
        assert_eq!(
            p.open("/rodir/x", O_CREAT | O_WRONLY, 0o644),
            Err(Errno::EACCES)
        );
        assert_eq!(
            p.open("/newfile", O_CREAT | O_WRONLY, 0o644),
            Err(Errno::EACCES)
        );
        // Host: O_NOATIME on a file the caller does not own: EACCES first
        // if not readable, else EPERM.
        assert_eq!(
            p.open("/rootonly", O_RDONLY | O_NOATIME, 0),
            Err(Errno::EACCES)
        );
        assert_eq!(p.open("/ro", O_RDONLY | O_NOATIME, 0), Err(Errno::EPERM));
        // O_CREAT of an existing file in an unwritable directory only
        // needs the file's own permission.
        let fd = p.open("/ro", O_CREAT | O_RDONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        // A file this open creates is not checked against its own mode.
        let fd = p.open("/pub/mine", O_CREAT | O_RDWR, 0o000).unwrap();
        assert_eq!(p.write(fd, b"ok"), Ok(2));
        p.close(fd).unwrap();
        assert_eq!(p.open("/pub/mine", O_RDONLY, 0), Err(Errno::EACCES));
        let fd = p
            .open("/pub/mine2", O_CREAT | O_RDONLY | O_NOATIME, 0o600)
            .unwrap();
        p.close(fd).unwrap();
    });
}

#[test]
fn errors_emfile() {
    each(|_, p| {
        // Host: with RLIMIT_NOFILE n, opens fail with EMFILE once fds
        // 0..n-1 are taken.
        p.setrlimit_nofile(4, 4).unwrap();
        let fds: Vec<i32> = (0..4).map(|_| p.open("/", O_RDONLY, 0).unwrap()).collect();
        assert_eq!(fds, [0, 1, 2, 3]);
        assert_eq!(p.open("/", O_RDONLY, 0), Err(Errno::EMFILE));
        // Host: EMFILE wins over ENOENT and EISDIR (the fd is reserved
        // before the walk), but not over the flag check's EINVAL.
        assert_eq!(p.open("/nonexistent", O_RDONLY, 0), Err(Errno::EMFILE));
        assert_eq!(p.open("/", O_WRONLY, 0), Err(Errno::EMFILE));
        assert_eq!(p.open("/", O_DIRECTORY | O_CREAT, 0), Err(Errno::EINVAL));
        assert_eq!(
            p.open("/new", O_CREAT | O_WRONLY, 0o644),
            Err(Errno::EMFILE)
        );
        assert_eq!(p.stat("/new").unwrap_err(), Errno::ENOENT);
        p.close(2).unwrap();
        assert_eq!(p.open("/", O_RDONLY, 0), Ok(2));
    });
}

#[test]
fn eloop() {
    each(|_, p| {
        put(p, "/f", b"x");
        p.symlink("/b", "/a").unwrap();
        p.symlink("/a", "/b").unwrap();
        // Host: a loop is ELOOP for open, with or without O_CREAT.
        assert_eq!(p.open("/a", O_RDONLY, 0), Err(Errno::ELOOP));
        assert_eq!(p.open("/a", O_CREAT | O_WRONLY, 0o644), Err(Errno::ELOOP));
        assert_eq!(p.open("/a/x", O_RDONLY, 0), Err(Errno::ELOOP));
        // O_PATH|O_NOFOLLOW still opens the link.
        let fd = p.open("/a", O_PATH | O_NOFOLLOW, 0).unwrap();
        p.close(fd).unwrap();
    });
}

#[test]
fn open_after_unlink_and_recreate() {
    each(|_, p| {
        put(p, "/f", b"one");
        let fd = p.open("/f", O_RDONLY, 0).unwrap();
        p.unlink("/f").unwrap();
        assert_eq!(p.open("/f", O_RDONLY, 0), Err(Errno::ENOENT));
        put(p, "/f", b"two");
        assert_eq!(read_to_end(p, fd), b"one");
        assert_eq!(get(p, "/f"), b"two");
        assert_ne!(p.fstat(fd).unwrap().st_ino, p.stat("/f").unwrap().st_ino);
        p.close(fd).unwrap();
    });
}
