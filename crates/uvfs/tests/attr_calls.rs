//! Attributes: stat, lstat, fstat, fstatat (`AT_SYMLINK_NOFOLLOW`,
//! `AT_EMPTY_PATH`), statx (basic fields and its result mask), chmod,
//! fchmod, fchmodat, the chown family (set-ID bits), umask, access and
//! faccessat (`AT_EACCESS` with split real/effective ids), utimensat
//! (`UTIME_NOW`, `UTIME_OMIT`), and which of atime/mtime/ctime each call
//! stamps on tmpfs. Expected values were checked on a Linux 6.18 host's
//! tmpfs ("Host:" comments; "amc" lists the times that changed, "-" none).
//! Every test runs under both fast-path settings.

mod support;

use support::vfs::*;
use uvfs::cred::Cred;
use uvfs::fs::tmpfs::Tmpfs;
use uvfs::uapi::*;
use uvfs::{Errno, Process, Stat};

const S_IFMT: u32 = 0o170000;

fn ts(sec: i64, nsec: i64) -> Timespec {
    Timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

#[test]
fn stat_fields() {
    each(|_, p| {
        put(p, "/f", b"12345");
        p.mkdir("/d", 0o750).unwrap();
        p.symlink("f", "/lf").unwrap();
        let f = p.stat("/f").unwrap();
        assert_eq!(
            (f.st_mode, f.st_nlink, f.st_size, f.st_uid, f.st_gid),
            (0o100644, 1, 5, 0, 0)
        );
        assert_eq!((f.st_blocks, f.st_blksize, f.st_rdev), (8, 4096, 0));
        let d = p.stat("/d").unwrap();
        assert_eq!((d.st_mode, d.st_nlink, d.st_size), (0o040750, 2, 40));
        let root = p.stat("/").unwrap();
        // Host: a fresh tmpfs root is inode 1; 40 + 20 bytes per entry.
        assert_eq!((root.st_ino, root.st_size), (1, 40 + 3 * 20));
        assert_eq!(root.st_dev, f.st_dev);
        // stat follows, lstat does not; both agree on non-links.
        assert_eq!(p.stat("/lf").unwrap(), p.stat("/f").unwrap());
        let l = p.lstat("/lf").unwrap();
        assert_eq!(
            (l.st_mode, l.st_size, l.st_nlink, l.st_blocks),
            (0o120777, 1, 1, 0)
        );
        assert_ne!(l.st_ino, f.st_ino);
        assert_eq!(p.lstat("/f").unwrap(), f);
        // A new inode: all four times equal; a write moves mtime and ctime
        // past btime.
        let fd = p.open("/new", O_CREAT | O_WRONLY, 0o644).unwrap();
        let sx = p
            .statx(AT_FDCWD, "/new", 0, STATX_BASIC_STATS | STATX_BTIME)
            .unwrap();
        assert_eq!(sx.stx_btime, sx.stx_mtime);
        assert_eq!(sx.stx_btime, sx.stx_ctime);
        assert_eq!(sx.stx_btime, sx.stx_atime);
        tick();
        p.write(fd, b"x").unwrap();
        p.close(fd).unwrap();
        let sx2 = p
            .statx(AT_FDCWD, "/new", 0, STATX_BASIC_STATS | STATX_BTIME)
            .unwrap();
        assert_eq!(sx2.stx_btime, sx.stx_btime);
        let t = |x: uvfs::stat::StatxTimestamp| (x.tv_sec, x.tv_nsec);
        assert!(t(sx2.stx_mtime) > t(sx.stx_mtime));
        p.unlink("/new").unwrap();
        // fstat of read, write and O_PATH fds.
        for flags in [O_RDONLY, O_WRONLY, O_PATH] {
            let fd = p.open("/f", flags, 0).unwrap();
            assert_eq!(p.fstat(fd).unwrap(), p.stat("/f").unwrap());
            p.close(fd).unwrap();
        }
        assert_eq!(p.fstat(77).unwrap_err(), Errno::EBADF);
        // Errors.
        assert_eq!(p.stat("/missing").unwrap_err(), Errno::ENOENT);
        assert_eq!(p.stat("/f/x").unwrap_err(), Errno::ENOTDIR);
        assert_eq!(p.stat("").unwrap_err(), Errno::ENOENT);
        assert_eq!(p.lstat("/lf/").unwrap_err(), Errno::ENOTDIR);
    });
}

#[test]
fn fstatat_flags() {
    each(|_, p| {
        put(p, "/f", b"x");
        p.mkdir("/d", 0o755).unwrap();
        p.symlink("/f", "/d/l").unwrap();
        let f = p.open("/f", O_RDONLY, 0).unwrap();
        let d = p.open("/d", O_RDONLY, 0).unwrap();
        let fst = p.stat("/f").unwrap();
        assert_eq!(p.fstatat(d, "l", 0).unwrap(), fst);
        assert_eq!(
            p.fstatat(d, "l", AT_SYMLINK_NOFOLLOW).unwrap().st_mode,
            0o120777
        );
        // Host: AT_EMPTY_PATH: the fd's own inode; with AT_FDCWD the cwd.
        assert_eq!(p.fstatat(f, "", AT_EMPTY_PATH).unwrap(), fst);
        assert_eq!(
            p.fstatat(AT_FDCWD, "", AT_EMPTY_PATH).unwrap(),
            p.stat("/").unwrap()
        );
        // Host: without the flag an empty path is ENOENT; relative to a
        // file fd ENOTDIR; a bad fd EBADF unless the path is absolute.
        assert_eq!(p.fstatat(f, "", 0).unwrap_err(), Errno::ENOENT);
        assert_eq!(p.fstatat(f, "x", 0).unwrap_err(), Errno::ENOTDIR);
        assert_eq!(p.fstatat(12345, "x", 0).unwrap_err(), Errno::EBADF);
        assert_eq!(
            p.fstatat(12345, "", AT_EMPTY_PATH).unwrap_err(),
            Errno::EBADF
        );
        assert!(p.fstatat(12345, "/", 0).is_ok());
        // Host: an unknown flag is EINVAL.
        assert_eq!(p.fstatat(AT_FDCWD, "/f", 0x8).unwrap_err(), Errno::EINVAL);
        // AT_EMPTY_PATH on an O_PATH|O_NOFOLLOW fd of a symlink: the link.
        let l = p.open("/d/l", O_PATH | O_NOFOLLOW, 0).unwrap();
        assert_eq!(p.fstatat(l, "", AT_EMPTY_PATH).unwrap().st_mode, 0o120777);
        p.close(l).unwrap();
        p.close(f).unwrap();
        p.close(d).unwrap();
    });
}

#[test]
fn statx_basic_fields() {
    each(|_, p| {
        put(p, "/f", b"hello");
        let st = p.stat("/f").unwrap();
        let sx = p
            .statx(AT_FDCWD, "/f", 0, STATX_BASIC_STATS | STATX_BTIME)
            .unwrap();
        assert_eq!(sx.stx_ino, st.st_ino);
        assert_eq!(sx.stx_size as i64, st.st_size);
        assert_eq!(sx.stx_blocks as i64, st.st_blocks);
        assert_eq!(u32::from(sx.stx_mode), st.st_mode);
        assert_eq!(u64::from(sx.stx_nlink), st.st_nlink);
        assert_eq!((sx.stx_uid, sx.stx_gid), (st.st_uid, st.st_gid));
        assert_eq!(i64::from(sx.stx_blksize), st.st_blksize);
        assert_eq!(
            (sx.stx_mtime.tv_sec, i64::from(sx.stx_mtime.tv_nsec)),
            (st.st_mtime, st.st_mtime_nsec)
        );
        assert_eq!(
            (sx.stx_ctime.tv_sec, i64::from(sx.stx_ctime.tv_nsec)),
            (st.st_ctime, st.st_ctime_nsec)
        );
        assert_eq!(
            (sx.stx_atime.tv_sec, i64::from(sx.stx_atime.tv_nsec)),
            (st.st_atime, st.st_atime_nsec)
        );
        assert_eq!(
            u64::from(sx.stx_dev_major) << 8 | u64::from(sx.stx_dev_minor),
            st.st_dev
        );
        assert_eq!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT, 0);
        // Host: "/" and a mounted root carry STATX_ATTR_MOUNT_ROOT.
        let r = p.statx(AT_FDCWD, "/", 0, STATX_BASIC_STATS).unwrap();
        assert_ne!(r.stx_attributes & STATX_ATTR_MOUNT_ROOT, 0);
        p.mkdir("/mnt", 0o755).unwrap();
        p.mount(b"/mnt", Tmpfs::new(Default::default())).unwrap();
        let m = p.statx(AT_FDCWD, "/mnt", 0, STATX_BASIC_STATS).unwrap();
        assert_ne!(m.stx_attributes & STATX_ATTR_MOUNT_ROOT, 0);
        assert_ne!(m.stx_mnt_id, r.stx_mnt_id);
        assert_ne!(
            (m.stx_dev_major, m.stx_dev_minor),
            (r.stx_dev_major, r.stx_dev_minor)
        );
        // AT_SYMLINK_NOFOLLOW.
        p.symlink("/f", "/l").unwrap();
        let l = p
            .statx(AT_FDCWD, "/l", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS)
            .unwrap();
        assert_eq!(u32::from(l.stx_mode) & S_IFMT, 0o120000);
        assert_eq!(
            p.statx(AT_FDCWD, "/l", 0, STATX_BASIC_STATS)
                .unwrap()
                .stx_ino,
            st.st_ino
        );
        // Host: the reserved mask bit and both sync flags are EINVAL.
        assert_eq!(
            p.statx(AT_FDCWD, "/f", 0, STATX_RESERVED).unwrap_err(),
            Errno::EINVAL
        );
        assert_eq!(
            p.statx(AT_FDCWD, "/f", AT_STATX_SYNC_TYPE, STATX_BASIC_STATS)
                .unwrap_err(),
            Errno::EINVAL
        );
        assert_eq!(
            p.statx(AT_FDCWD, "/missing", 0, 0).unwrap_err(),
            Errno::ENOENT
        );
    });
}

/// Host (6.18 tmpfs, multigrain timestamps): the result mask always has
/// type, mode, nlink, uid, gid, atime, ino, size, blocks and the mount id
/// (0x173f); mtime and ctime only when one of them is asked for; btime only
/// when asked for. Requests 0 -> 0x173f, STATX_BASIC_STATS -> 0x17ff,
/// 0xfff -> 0x1fff, STATX_BTIME -> 0x1f3f, STATX_MTIME -> 0x17ff. The
/// attributes mask is 0x203070 (append, immutable, nodump, automount,
/// mount root, dax).
#[test]
fn statx_result_mask() {
    each(|_, p| {
        put(p, "/f", b"");
        for (req, want) in [
            (0, 0x173f),
            (STATX_TYPE, 0x173f),
            (STATX_ATIME, 0x173f),
            (STATX_BASIC_STATS, 0x17ff),
            (STATX_MTIME, 0x17ff),
            (STATX_CTIME, 0x17ff),
            (STATX_BTIME, 0x1f3f),
            (0xfff, 0x1fff),
        ] {
            let sx = p.statx(AT_FDCWD, "/f", 0, req).unwrap();
            assert_eq!(sx.stx_mask, want, "request {req:#x}");
            assert_eq!(sx.stx_attributes_mask, 0x203070, "request {req:#x}");
        }
    });
}

#[test]
fn chmod_family() {
    each(|_, p| {
        put(p, "/f", b"");
        p.symlink("/f", "/lf").unwrap();
        p.chmod("/f", 0o4751).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mode, 0o104751);
        // Through a symlink: the target changes.
        p.chmod("/lf", 0o600).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mode, 0o100600);
        assert_eq!(p.lstat("/lf").unwrap().st_mode, 0o120777);
        // Only the permission bits are taken.
        p.chmod("/f", 0o170644).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mode, 0o100644);
        let fd = p.open("/f", O_RDONLY, 0).unwrap();
        p.fchmod(fd, 0o640).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mode, 0o100640);
        // Host: fchmodat2 AT_EMPTY_PATH works on plain and O_PATH fds.
        p.fchmodat(fd, "", 0o604, AT_EMPTY_PATH).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mode, 0o100604);
        let o = p.open("/f", O_PATH, 0).unwrap();
        p.fchmodat(o, "", 0o644, AT_EMPTY_PATH).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mode, 0o100644);
        // fchmod itself on an O_PATH fd is EBADF.
        assert_eq!(p.fchmod(o, 0o600), Err(Errno::EBADF));
        // Host: fchmodat2 AT_SYMLINK_NOFOLLOW on a symlink EOPNOTSUPP, on a
        // file fine; an unknown flag EINVAL.
        assert_eq!(
            p.fchmodat(AT_FDCWD, "/lf", 0o600, AT_SYMLINK_NOFOLLOW),
            Err(Errno::EOPNOTSUPP)
        );
        p.fchmodat(AT_FDCWD, "/f", 0o600, AT_SYMLINK_NOFOLLOW)
            .unwrap();
        assert_eq!(p.fchmodat(AT_FDCWD, "/f", 0o600, 0x8), Err(Errno::EINVAL));
        assert_eq!(p.chmod("/missing", 0o600), Err(Errno::ENOENT));
        // Host: as a non-owner EPERM; the owner may; a non-member owner
        // loses S_ISGID when setting it.
        put(p, "/mine", b"");
        p.chown("/mine", 1000, 1000).unwrap();
        p.chown("/f", 0, 50).unwrap();
        p.set_cred(user(1000, 1000));
        assert_eq!(p.chmod("/f", 0o777), Err(Errno::EPERM));
        assert_eq!(p.fchmod(fd, 0o777), Err(Errno::EPERM));
        p.chmod("/mine", 0o4755).unwrap();
        assert_eq!(p.stat("/mine").unwrap().st_mode, 0o104755);
        p.set_cred(Cred::root());
        p.chown("/mine", 1000, 50).unwrap();
        p.set_cred(user(1000, 1000));
        p.chmod("/mine", 0o2755).unwrap();
        assert_eq!(p.stat("/mine").unwrap().st_mode, 0o100755);
        p.close(fd).unwrap();
        p.close(o).unwrap();
    });
}

#[test]
fn chown_family() {
    each(|_, p| {
        put(p, "/f", b"");
        p.symlink("/f", "/lf").unwrap();
        p.chown("/f", 1000, 2000).unwrap();
        let st = p.stat("/f").unwrap();
        assert_eq!((st.st_uid, st.st_gid), (1000, 2000));
        // -1 leaves an id alone.
        p.chown("/f", u32::MAX, 3000).unwrap();
        assert_eq!(
            (p.stat("/f").unwrap().st_uid, p.stat("/f").unwrap().st_gid),
            (1000, 3000)
        );
        p.chown("/f", 4000, u32::MAX).unwrap();
        assert_eq!(
            (p.stat("/f").unwrap().st_uid, p.stat("/f").unwrap().st_gid),
            (4000, 3000)
        );
        // chown follows symlinks, lchown and AT_SYMLINK_NOFOLLOW do not.
        p.lchown("/lf", 7, 8).unwrap();
        let l = p.lstat("/lf").unwrap();
        assert_eq!((l.st_uid, l.st_gid), (7, 8));
        assert_eq!(p.stat("/f").unwrap().st_uid, 4000);
        p.fchownat(AT_FDCWD, "/lf", 9, 9, AT_SYMLINK_NOFOLLOW)
            .unwrap();
        assert_eq!(p.lstat("/lf").unwrap().st_uid, 9);
        p.chown("/lf", 5, 5).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_uid, 5);
        let fd = p.open("/f", O_RDONLY, 0).unwrap();
        p.fchown(fd, 6, 6).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_uid, 6);
        p.fchownat(fd, "", 0, 0, AT_EMPTY_PATH).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_uid, 0);
        assert_eq!(p.fchownat(AT_FDCWD, "/f", 0, 0, 0x8), Err(Errno::EINVAL));
        // Host: chown by root clears S_ISUID, and S_ISGID with group exec,
        // even to the same owner and even with -1/-1.
        p.chmod("/f", 0o6755).unwrap();
        p.chown("/f", 1000, 1000).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mode, 0o100755);
        p.chmod("/f", 0o6755).unwrap();
        p.chown("/f", u32::MAX, u32::MAX).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mode, 0o100755);
        p.chmod("/f", 0o6755).unwrap();
        p.chown("/f", 1000, u32::MAX).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mode, 0o100755);
        // Directories keep their set-ID bits.
        p.mkdir("/d", 0o755).unwrap();
        p.chmod("/d", 0o2755).unwrap();
        p.chown("/d", 1, 1).unwrap();
        assert_eq!(p.stat("/d").unwrap().st_mode, 0o042755);
        // Host: a user may not give a file away or take a group it is not
        // in (EPERM), but may set its own uid and a group it is in.
        p.set_cred(user(1000, 1000));
        assert_eq!(p.chown("/f", 0, u32::MAX), Err(Errno::EPERM));
        assert_eq!(p.chown("/f", u32::MAX, 0), Err(Errno::EPERM));
        p.chown("/f", 1000, 1000).unwrap();
        p.chown("/f", u32::MAX, u32::MAX).unwrap();
        assert_eq!(p.chown("/d", 1000, 1000), Err(Errno::EPERM));
        p.close(fd).unwrap();
    });
}

#[test]
fn umask_applies() {
    each(|_, p| {
        assert_eq!(p.umask(0o027), 0o022);
        assert_eq!(p.umask(0o7777), 0o027, "only 0777 is kept");
        assert_eq!(p.umask(0o027), 0o777);
        let fd = p.creat("/f", 0o777).unwrap();
        p.close(fd).unwrap();
        p.mkdir("/d", 0o777).unwrap();
        p.symlink("x", "/l").unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mode, 0o100750);
        assert_eq!(p.stat("/d").unwrap().st_mode, 0o040750);
        assert_eq!(
            p.lstat("/l").unwrap().st_mode,
            0o120777,
            "symlinks ignore it"
        );
        let t = p.open("/d", O_TMPFILE | O_RDWR, 0o666).unwrap();
        assert_eq!(p.fstat(t).unwrap().st_mode, 0o100640);
        p.close(t).unwrap();
        // A fork inherits it; a thread shares it.
        let mut c = p.fork().unwrap();
        assert_eq!(c.umask(0), 0o027);
        assert_eq!(p.umask(0o027), 0o027);
        let mut t = p.new_thread();
        t.umask(0o077);
        assert_eq!(p.umask(0o022), 0o077);
        // unshare(CLONE_FS): a copy of the umask and cwd, no longer shared.
        t.unshare_fs();
        assert_eq!(t.umask(0o007), 0o022);
        assert_eq!(p.umask(0o022), 0o022);
        t.chdir("/d").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/");
        assert_eq!(t.getcwd().unwrap(), b"/d");
    });
}

#[test]
fn access_as_root_and_user() {
    each(|_, p| {
        put(p, "/none", b"");
        p.chmod("/none", 0).unwrap();
        put(p, "/noexec", b"");
        p.mkdir("/d0", 0).unwrap();
        // Host: root passes R and W whatever the mode, X needs an x bit on
        // files but not on directories.
        assert_eq!(p.access("/none", R_OK | W_OK), Ok(()));
        assert_eq!(p.access("/noexec", X_OK), Err(Errno::EACCES));
        assert_eq!(p.access("/d0", X_OK | R_OK | W_OK), Ok(()));
        p.chmod("/noexec", 0o744).unwrap();
        assert_eq!(p.access("/noexec", X_OK), Ok(()));
        assert_eq!(p.access("/missing", F_OK), Err(Errno::ENOENT));
        assert_eq!(p.access("/none", F_OK), Ok(()));
        // Host: bad mode or flag EINVAL.
        assert_eq!(p.access("/none", 8), Err(Errno::EINVAL));
        assert_eq!(
            p.faccessat(AT_FDCWD, "/none", F_OK, 0x8),
            Err(Errno::EINVAL)
        );
        // Host: a dangling symlink: F_OK ENOENT, with AT_SYMLINK_NOFOLLOW fine.
        p.symlink("/nowhere", "/dang").unwrap();
        assert_eq!(p.access("/dang", F_OK), Err(Errno::ENOENT));
        assert_eq!(
            p.faccessat(AT_FDCWD, "/dang", F_OK, AT_SYMLINK_NOFOLLOW),
            Ok(())
        );
        // AT_EMPTY_PATH with an fd.
        let fd = p.open("/noexec", O_PATH, 0).unwrap();
        assert_eq!(p.faccessat(fd, "", X_OK, AT_EMPTY_PATH), Ok(()));
        assert_eq!(p.faccessat(fd, "", X_OK, 0), Err(Errno::ENOENT));
        p.close(fd).unwrap();
        // A user: the class bits decide.
        put(p, "/ur", b"");
        p.chmod("/ur", 0o604).unwrap();
        p.set_cred(user(1000, 1000));
        assert_eq!(p.access("/ur", R_OK), Ok(()));
        assert_eq!(p.access("/ur", W_OK), Err(Errno::EACCES));
        assert_eq!(p.access("/ur", R_OK | W_OK), Err(Errno::EACCES));
        assert_eq!(p.access("/none", F_OK), Ok(()));
        assert_eq!(p.access("/d0", X_OK), Err(Errno::EACCES));
    });
}

/// Host (faccessat2 via syscall 439 after setresuid/setresgid):
/// - real 1000 / effective 0: W on a root 0600 file EACCES, with
///   AT_EACCESS fine; X on a 0644 file with AT_EACCESS (as root) EACCES; W
///   on the user's own 0600 file fine either way; F_OK on a file under a
///   root 0700 directory EACCES (the walk runs with the real ids too), with
///   AT_EACCESS fine.
/// - real 0 / effective 1000: W on the root 0600 file fine, with AT_EACCESS
///   EACCES; W on the user's own file with AT_EACCESS fine.
#[test]
fn faccessat_real_vs_effective() {
    each(|_, p| {
        put(p, "/rootonly", b"");
        p.chmod("/rootonly", 0o600).unwrap();
        put(p, "/u1000", b"");
        p.chown("/u1000", 1000, 1000).unwrap();
        p.chmod("/u1000", 0o600).unwrap();
        put(p, "/exe", b"");
        p.mkdir("/a", 0o700).unwrap();
        p.mkdir("/a/b", 0o755).unwrap();
        put(p, "/a/b/f", b"");
        let f = AT_FDCWD;
        p.set_cred(Cred {
            uid: 1000,
            gid: 1000,
            euid: 0,
            egid: 0,
            fsuid: 0,
            fsgid: 0,
            groups: vec![],
        });
        assert_eq!(p.faccessat(f, "/rootonly", W_OK, 0), Err(Errno::EACCES));
        assert_eq!(p.faccessat(f, "/rootonly", W_OK, AT_EACCESS), Ok(()));
        assert_eq!(p.faccessat(f, "/exe", X_OK, AT_EACCESS), Err(Errno::EACCES));
        assert_eq!(p.faccessat(f, "/u1000", W_OK, 0), Ok(()));
        assert_eq!(p.faccessat(f, "/u1000", W_OK, AT_EACCESS), Ok(()));
        assert_eq!(p.faccessat(f, "/a/b/f", F_OK, 0), Err(Errno::EACCES));
        assert_eq!(p.faccessat(f, "/a/b/f", F_OK, AT_EACCESS), Ok(()));
        // The process still acts with its effective ids elsewhere.
        let fd = p.open("/rootonly", O_WRONLY, 0).unwrap();
        p.close(fd).unwrap();
        p.set_cred(Cred {
            uid: 0,
            gid: 0,
            euid: 1000,
            egid: 1000,
            fsuid: 1000,
            fsgid: 1000,
            groups: vec![],
        });
        assert_eq!(p.faccessat(f, "/rootonly", W_OK, 0), Ok(()));
        assert_eq!(
            p.faccessat(f, "/rootonly", W_OK, AT_EACCESS),
            Err(Errno::EACCES)
        );
        assert_eq!(p.faccessat(f, "/u1000", W_OK, AT_EACCESS), Ok(()));
        assert_eq!(p.open("/rootonly", O_WRONLY, 0), Err(Errno::EACCES));
    });
}

#[test]
fn utimensat_now_omit_explicit() {
    each(|_, p| {
        put(p, "/f", b"");
        let now = (1 << 30) - 1;
        let omit = (1 << 30) - 2;
        p.utimensat(AT_FDCWD, "/f", Some([ts(100, 5), ts(200, 6)]), 0)
            .unwrap();
        let st = p.stat("/f").unwrap();
        assert_eq!(
            (st.st_atime, st.st_atime_nsec, st.st_mtime, st.st_mtime_nsec),
            (100, 5, 200, 6)
        );
        // Host: OMIT for atime, explicit mtime: "mc".
        let b = p.stat("/f").unwrap();
        tick();
        p.utimensat(AT_FDCWD, "/f", Some([ts(0, omit), ts(7, 8)]), 0)
            .unwrap();
        let a = p.stat("/f").unwrap();
        assert_eq!(changed(&b, &a), "mc");
        assert_eq!((a.st_atime, a.st_mtime, a.st_mtime_nsec), (100, 7, 8));
        // Host: NOW for atime, OMIT for mtime: "ac".
        tick();
        p.utimensat(AT_FDCWD, "/f", Some([ts(0, now), ts(0, omit)]), 0)
            .unwrap();
        let c = p.stat("/f").unwrap();
        assert_eq!(changed(&a, &c), "ac");
        assert_eq!(c.st_mtime, 7);
        // Host: both OMIT: nothing changes, not even ctime.
        tick();
        p.utimensat(AT_FDCWD, "/f", Some([ts(0, omit), ts(0, omit)]), 0)
            .unwrap();
        assert_eq!(changed(&c, &p.stat("/f").unwrap()), "-");
        // Host: None (utimes(NULL)): "amc", both to now.
        tick();
        p.utimensat(AT_FDCWD, "/f", None, 0).unwrap();
        let n = p.stat("/f").unwrap();
        assert_eq!(changed(&c, &n), "amc");
        assert_eq!((n.st_atime, n.st_atime_nsec), (n.st_mtime, n.st_mtime_nsec));
        // Host: nanoseconds out of range EINVAL (1e9 and -1); unknown flag EINVAL.
        assert_eq!(
            p.utimensat(AT_FDCWD, "/f", Some([ts(0, 1_000_000_000), ts(0, 0)]), 0),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            p.utimensat(AT_FDCWD, "/f", Some([ts(0, -1), ts(0, 0)]), 0),
            Err(Errno::EINVAL)
        );
        assert_eq!(p.utimensat(AT_FDCWD, "/f", None, 0x8), Err(Errno::EINVAL));
        // AT_SYMLINK_NOFOLLOW sets the link's own times (host: 5.000000006
        // and 7.000000008 on the link, target untouched).
        p.symlink("/f", "/lf").unwrap();
        let before = p.stat("/f").unwrap();
        p.utimensat(
            AT_FDCWD,
            "/lf",
            Some([ts(5, 6), ts(7, 8)]),
            AT_SYMLINK_NOFOLLOW,
        )
        .unwrap();
        let l = p.lstat("/lf").unwrap();
        assert_eq!(
            (l.st_atime, l.st_atime_nsec, l.st_mtime, l.st_mtime_nsec),
            (5, 6, 7, 8)
        );
        assert_eq!(p.stat("/f").unwrap(), before);
        // futimens.
        let fd = p.open("/f", O_RDONLY, 0).unwrap();
        p.futimens(fd, Some([ts(1, 1), ts(2, 2)])).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_mtime, 2);
        p.close(fd).unwrap();
    });
}

/// Host: utimensat with both times UTIME_OMIT returns 0 before looking at
/// the path at all: a missing file is not an error.
#[test]
fn utimensat_both_omit_skips_lookup() {
    each(|_, p| {
        let omit = (1 << 30) - 2;
        assert_eq!(
            p.utimensat(AT_FDCWD, "/missing", Some([ts(0, omit), ts(0, omit)]), 0),
            Ok(())
        );
        assert_eq!(
            p.utimensat(AT_FDCWD, "/missing", Some([ts(0, omit), ts(0, 0)]), 0),
            Err(Errno::ENOENT)
        );
    });
}

#[test]
fn utimensat_permissions() {
    each(|_, p| {
        put(p, "/w", b"");
        p.chmod("/w", 0o666).unwrap();
        put(p, "/r", b"");
        p.set_cred(user(1000, 1000));
        let now = (1 << 30) - 1;
        // Host: a non-owner with write access may set "now" but not
        // explicit times (EPERM); without write access "now" is EACCES.
        p.utimensat(AT_FDCWD, "/w", None, 0).unwrap();
        p.utimensat(AT_FDCWD, "/w", Some([ts(0, now), ts(0, now)]), 0)
            .unwrap();
        assert_eq!(
            p.utimensat(AT_FDCWD, "/w", Some([ts(1, 1), ts(1, 1)]), 0),
            Err(Errno::EPERM)
        );
        assert_eq!(p.utimensat(AT_FDCWD, "/r", None, 0), Err(Errno::EACCES));
        assert_eq!(
            p.utimensat(AT_FDCWD, "/r", Some([ts(1, 1), ts(1, 1)]), 0),
            Err(Errno::EPERM)
        );
    });
}

/// Which times `f` changes on `path` (stat without following if `nofollow`).
fn stamps(p: &mut Process, path: &str, f: impl FnOnce(&mut Process)) -> String {
    let st = |p: &mut Process| -> Stat { p.lstat(path).unwrap() };
    let a = st(p);
    tick();
    f(p);
    let b = st(p);
    changed(&a, &b)
}

/// Host: write "mc", empty write "-", chmod "c" (to the same mode too),
/// chown "c" (same owner, and -1/-1 too), ftruncate and truncate to the
/// same size "mc", fallocate (mode 0 extending or not, KEEP_SIZE,
/// PUNCH_HOLE) "mc", fsync "-", lseek "-".
#[test]
fn timestamps_of_file_calls() {
    each(|_, p| {
        let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
        p.write(fd, b"abcd").unwrap();
        assert_eq!(
            stamps(p, "/f", |p| {
                p.write(fd, b"x").unwrap();
            }),
            "mc"
        );
        assert_eq!(
            stamps(p, "/f", |p| {
                p.pwrite(fd, b"x", 0).unwrap();
            }),
            "mc"
        );
        assert_eq!(
            stamps(p, "/f", |p| {
                p.writev(fd, &[b"x"]).unwrap();
            }),
            "mc"
        );
        assert_eq!(
            stamps(p, "/f", |p| {
                p.write(fd, b"").unwrap();
            }),
            "-"
        );
        assert_eq!(stamps(p, "/f", |p| p.chmod("/f", 0o600).unwrap()), "c");
        assert_eq!(stamps(p, "/f", |p| p.chmod("/f", 0o600).unwrap()), "c");
        assert_eq!(stamps(p, "/f", |p| p.fchmod(fd, 0o644).unwrap()), "c");
        assert_eq!(stamps(p, "/f", |p| p.chown("/f", 0, 0).unwrap()), "c");
        assert_eq!(
            stamps(p, "/f", |p| p.chown("/f", u32::MAX, u32::MAX).unwrap()),
            "c"
        );
        assert_eq!(stamps(p, "/f", |p| p.ftruncate(fd, 6).unwrap()), "mc");
        assert_eq!(stamps(p, "/f", |p| p.truncate("/f", 6).unwrap()), "mc");
        assert_eq!(
            stamps(p, "/f", |p| p.fallocate(fd, 0, 0, 8192).unwrap()),
            "mc"
        );
        assert_eq!(
            stamps(p, "/f", |p| p.fallocate(fd, 0, 0, 100).unwrap()),
            "mc"
        );
        assert_eq!(
            stamps(p, "/f", |p| p.fallocate(fd, 1, 0, 20000).unwrap()),
            "mc"
        );
        assert_eq!(
            stamps(p, "/f", |p| p.fallocate(fd, 3, 0, 4096).unwrap()),
            "mc"
        );
        assert_eq!(stamps(p, "/f", |p| p.fsync(fd).unwrap()), "-");
        assert_eq!(
            stamps(p, "/f", |p| {
                p.lseek(fd, 0, SEEK_SET).unwrap();
            }),
            "-"
        );
        assert_eq!(
            stamps(p, "/f", |p| {
                p.stat("/f").unwrap();
            }),
            "-"
        );
        assert_eq!(stamps(p, "/f", |p| p.access("/f", R_OK).unwrap()), "-");
        // Host: open O_TRUNC, of an empty file too: "mc"; open without it "-".
        let reopen = |flags: i32| {
            move |p: &mut Process| {
                let fd = p.open("/f", flags, 0).unwrap();
                p.close(fd).unwrap();
            }
        };
        assert_eq!(stamps(p, "/f", reopen(O_WRONLY | O_TRUNC)), "mc");
        assert_eq!(stamps(p, "/f", reopen(O_WRONLY | O_TRUNC)), "mc");
        assert_eq!(stamps(p, "/f", reopen(O_RDWR)), "-");
        p.close(fd).unwrap();
    });
}

/// Host: create/mkdir/rmdir/symlink/link/unlink in a directory stamp its
/// "mc"; opening an existing name with O_CREAT "-"; link and unlink stamp
/// the inode's "c"; rename stamps the moved inode's "c" (file and
/// directory alike) and "mc" of both directories.
#[test]
fn timestamps_of_namespace_calls() {
    each(|_, p| {
        p.mkdir("/d", 0o755).unwrap();
        p.mkdir("/e", 0o755).unwrap();
        let creat = |p: &mut Process| {
            let fd = p.open("/d/x", O_CREAT | O_WRONLY, 0o644).unwrap();
            p.close(fd).unwrap();
        };
        assert_eq!(stamps(p, "/d", creat), "mc");
        assert_eq!(stamps(p, "/d", creat), "-");
        assert_eq!(stamps(p, "/d", |p| p.mkdir("/d/n", 0o755).unwrap()), "mc");
        assert_eq!(stamps(p, "/d", |p| p.rmdir("/d/n").unwrap()), "mc");
        assert_eq!(stamps(p, "/d", |p| p.symlink("t", "/d/l").unwrap()), "mc");
        assert_eq!(stamps(p, "/d/x", |p| p.link("/d/x", "/d/y").unwrap()), "c");
        assert_eq!(stamps(p, "/d", |p| p.link("/d/x", "/d/z").unwrap()), "mc");
        assert_eq!(stamps(p, "/d/x", |p| p.unlink("/d/z").unwrap()), "c");
        assert_eq!(stamps(p, "/d", |p| p.unlink("/d/y").unwrap()), "mc");
        // The parent's parent is untouched.
        assert_eq!(stamps(p, "/", |p| put(p, "/d/w", b"")), "-");
        // rename: the moved inode "c", both directories "mc".
        for (src, dst) in [("/d/x", "/e/x"), ("/e/x", "/e/x2")] {
            let (i0, d0, e0) = (
                p.stat(src).unwrap(),
                p.stat("/d").unwrap(),
                p.stat("/e").unwrap(),
            );
            tick();
            p.rename(src, dst).unwrap();
            let (i1, d1, e1) = (
                p.stat(dst).unwrap(),
                p.stat("/d").unwrap(),
                p.stat("/e").unwrap(),
            );
            assert_eq!(changed(&i0, &i1), "c");
            if src.starts_with("/d") {
                assert_eq!(
                    (changed(&d0, &d1), changed(&e0, &e1)),
                    ("mc".into(), "mc".into())
                );
            } else {
                assert_eq!(
                    (changed(&d0, &d1), changed(&e0, &e1)),
                    ("-".into(), "mc".into())
                );
            }
        }
        p.mkdir("/d/s", 0o755).unwrap();
        let (i0, d0, e0) = (
            p.stat("/d/s").unwrap(),
            p.stat("/d").unwrap(),
            p.stat("/e").unwrap(),
        );
        tick();
        p.rename("/d/s", "/e/s").unwrap();
        let (i1, d1, e1) = (
            p.stat("/e/s").unwrap(),
            p.stat("/d").unwrap(),
            p.stat("/e").unwrap(),
        );
        assert_eq!(
            (changed(&i0, &i1), changed(&d0, &d1), changed(&e0, &e1)),
            ("c".into(), "mc".into(), "mc".into())
        );
        // A replaced target's inode gets "c" (it lost a link).
        put(p, "/e/t", b"");
        let fd = p.open("/e/t", O_RDONLY, 0).unwrap();
        let t0 = p.fstat(fd).unwrap();
        tick();
        p.rename("/e/x2", "/e/t").unwrap();
        let t1 = p.fstat(fd).unwrap();
        assert_eq!((changed(&t0, &t1), t1.st_nlink), ("c".into(), 0));
        p.close(fd).unwrap();
    });
}

/// Host (relatime, the tmpfs default): a read stamps atime when atime is
/// not newer than mtime or ctime (the first read after a create or a
/// write, even of 0 bytes), a second read does not; getdents64 stamps the
/// directory's atime likewise; readlink the symlink's.
#[test]
fn timestamps_atime_relatime() {
    each(|_, p| {
        let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(
            stamps(p, "/f", |p| {
                p.pread(fd, &mut [0u8; 8], 0).unwrap();
            }),
            "a"
        );
        p.write(fd, b"abc").unwrap();
        assert_eq!(
            stamps(p, "/f", |p| {
                p.read(fd, &mut []).unwrap();
            }),
            "a"
        );
        assert_eq!(
            stamps(p, "/f", |p| {
                p.pread(fd, &mut [0u8; 8], 0).unwrap();
            }),
            "-"
        );
        p.mkdir("/d", 0o755).unwrap();
        assert_eq!(
            stamps(p, "/d", |p| {
                names(p, "/d");
            }),
            "a"
        );
        assert_eq!(
            stamps(p, "/d", |p| {
                names(p, "/d");
            }),
            "-"
        );
        p.symlink("t", "/l").unwrap();
        assert_eq!(
            stamps(p, "/l", |p| {
                p.readlink("/l", &mut [0u8; 8]).unwrap();
            }),
            "a"
        );
        // O_NOATIME suppresses it.
        p.write(fd, b"x").unwrap();
        let na = p.open("/f", O_RDONLY | O_NOATIME, 0).unwrap();
        assert_eq!(
            stamps(p, "/f", |p| {
                p.read(na, &mut [0u8; 8]).unwrap();
            }),
            "-"
        );
        p.close(na).unwrap();
        p.close(fd).unwrap();
    });
}

/// `truncateat` (a uvfs extension for servers holding files by `O_PATH`
/// fds) applies truncate(2)'s rules, not ftruncate's. Host (truncate(2) on
/// tmpfs): 0 -> 0 of an empty file stamps "-", ftruncate 0 -> 0 "mc",
/// 0 -> 5 "mc"; no write permission: EACCES; a directory: EISDIR.
#[test]
fn truncateat_is_truncate_not_ftruncate() {
    each(|_, p| {
        put(p, "/f", b"");
        let o = p.open("/f", O_PATH, 0).unwrap();
        let before = p.stat("/f").unwrap();
        tick();
        p.truncateat(o, "", 0, AT_EMPTY_PATH).unwrap();
        assert_eq!(changed(&before, &p.stat("/f").unwrap()), "-");
        let w = p.open("/f", O_WRONLY, 0).unwrap();
        p.ftruncate(w, 0).unwrap();
        assert_eq!(changed(&before, &p.stat("/f").unwrap()), "mc");
        let before = p.stat("/f").unwrap();
        tick();
        p.truncateat(o, "", 5, AT_EMPTY_PATH).unwrap();
        let after = p.stat("/f").unwrap();
        assert_eq!(
            (changed(&before, &after).as_str(), after.st_size),
            ("mc", 5)
        );
        // The same call as truncate(2) by path, and its errors.
        p.truncateat(AT_FDCWD, "/f", 2, 0).unwrap();
        assert_eq!(p.stat("/f").unwrap().st_size, 2);
        assert_eq!(err(p.truncateat(o, "", 1, 0x4000)), Errno::EINVAL);
        assert_eq!(err(p.truncateat(o, "", -1, AT_EMPTY_PATH)), Errno::EINVAL);
        assert_eq!(err(p.truncateat(o, "", 1, 0)), Errno::ENOENT);
        p.mkdir("/d", 0o755).unwrap();
        let od = p.open("/d", O_PATH, 0).unwrap();
        assert_eq!(err(p.truncateat(od, "", 0, AT_EMPTY_PATH)), Errno::EISDIR);
        p.chmod("/f", 0o444).unwrap();
        p.set_cred(user(1000, 1000));
        assert_eq!(err(p.truncateat(o, "", 0, AT_EMPTY_PATH)), Errno::EACCES);
        p.set_cred(Cred::root());
        for fd in [o, w, od] {
            p.close(fd).unwrap();
        }
    });
}
