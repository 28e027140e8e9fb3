//! Resource limits: each failed call answers with Linux's errno and leaves
//! the state as it was — the fd table (open fds and their close-on-exec
//! bits), the directory listing, the file's attributes, tmpfs's counters —
//! and, once every process is gone, the caches agree with tmpfs with no
//! reference leaked (`check_consistency`, `fsck`).

use std::sync::Arc;
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::fs::{FileSystem, S_IFLNK, S_IFMT};
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Stat, Vfs};

fn setup(size_pages: Option<u64>, inodes: Option<u64>) -> (Arc<Tmpfs>, Arc<Vfs>, Process) {
    let fs = Tmpfs::new(TmpfsOptions {
        size_bytes: size_pages.map(|p| p * 4096),
        nr_inodes: inodes,
        mode: 0o755,
        ..TmpfsOptions::default()
    });
    let vfs = Vfs::builder()
        .fastpaths(FastPaths::seeds())
        .dcache_limit(16)
        .icache_limit(16)
        .build_with_root(fs.clone());
    let p = Process::new(&vfs).unwrap();
    (fs, vfs, p)
}

/// The names in directory `dir`, sorted, read with getdents64.
fn listing(p: &mut Process, dir: &str) -> Vec<Vec<u8>> {
    let fd = p.open(dir, O_RDONLY | O_DIRECTORY, 0).unwrap();
    let mut names = Vec::new();
    let mut buf = vec![0u8; 4096];
    loop {
        let n = p.getdents64(fd, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        let mut off = 0;
        while off < n {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            let name = &buf[off + 19..off + reclen];
            let end = name.iter().position(|&b| b == 0).unwrap();
            names.push(name[..end].to_vec());
            off += reclen;
        }
    }
    p.close(fd).unwrap();
    names.sort();
    names
}

/// What a failed call must not change about a file.
fn attrs(s: &Stat) -> (u64, u64, u32, i64, i64, i64, i64, i64, i64) {
    (
        s.st_ino,
        s.st_nlink,
        s.st_mode,
        s.st_size,
        s.st_blocks,
        s.st_mtime,
        s.st_mtime_nsec,
        s.st_ctime,
        s.st_ctime_nsec,
    )
}

/// The fd table as the process sees it: each open fd with its FD_CLOEXEC.
fn table(p: &mut Process) -> Vec<(u32, i32)> {
    let fds = p.fd_table().open_fds();
    fds.into_iter()
        .map(|fd| (fd, p.fcntl(fd as i32, F_GETFD, 0).unwrap()))
        .collect()
}

fn counters(fs: &Tmpfs) -> (u64, u64) {
    let s = fs.statfs();
    (s.bfree, s.ffree)
}

/// Every process gone: caches agree with tmpfs, nothing leaked.
fn quiesce(fs: &Tmpfs, vfs: &Vfs) {
    vfs.drop_caches();
    vfs.check_consistency().unwrap();
    fs.fsck(true).unwrap();
}

#[test]
fn emfile_at_rlimit_nofile_changes_nothing() {
    let (fs, vfs, mut p) = setup(None, None);
    p.setrlimit_nofile(8, 8).unwrap();
    let fd0 = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
    for i in 1..8 {
        let fl = if i % 2 == 0 { O_CLOEXEC } else { 0 };
        assert_eq!(p.open("/f", O_RDONLY | fl, 0), Ok(i));
    }
    // The listing is read by another process: this one has no fd to spare.
    let mut q = Process::new(&vfs).unwrap();
    let before = (table(&mut p), listing(&mut q, "/"), counters(&fs));
    let f_before = attrs(&p.stat("/f").unwrap());

    // An O_CREAT open allocates the fd first: nothing is created.
    assert_eq!(p.open("/new", O_CREAT | O_RDWR, 0o644), Err(Errno::EMFILE));
    assert_eq!(p.stat("/new"), Err(Errno::ENOENT));
    // O_TRUNC on the existing file: the fd fails first, the file keeps its data.
    p.write(fd0, b"data").unwrap();
    let f_before = (f_before.0, attrs(&p.stat("/f").unwrap()));
    assert_eq!(p.open("/f", O_TRUNC | O_WRONLY, 0), Err(Errno::EMFILE));
    assert_eq!(p.open(".", O_TMPFILE | O_RDWR, 0o600), Err(Errno::EMFILE));
    assert_eq!(p.dup(fd0), Err(Errno::EMFILE));
    assert_eq!(p.fcntl(fd0, F_DUPFD, 0), Err(Errno::EMFILE));
    assert_eq!(p.fcntl(fd0, F_DUPFD_CLOEXEC, 3), Err(Errno::EMFILE));
    // dup2 / F_DUPFD at or past the limit: EBADF / EINVAL, as Linux.
    assert_eq!(p.dup2(fd0, 8), Err(Errno::EBADF));
    assert_eq!(p.fcntl(fd0, F_DUPFD, 8), Err(Errno::EINVAL));

    let after = (table(&mut p), listing(&mut q, "/"), counters(&fs));
    assert_eq!(after, before, "fd table, listing or tmpfs counters changed");
    assert_eq!((f_before.0, attrs(&p.stat("/f").unwrap())), f_before);
    assert_eq!(p.fstat(fd0).unwrap().st_size, 4);

    // A freed slot is used again, lowest first.
    p.close(3).unwrap();
    assert_eq!(p.open("/new", O_CREAT | O_RDWR, 0o644), Ok(3));
    drop(p);
    drop(q);
    quiesce(&fs, &vfs);
}

#[test]
fn enospc_at_the_size_limit_writes_what_fits() {
    let (fs, vfs, mut p) = setup(Some(4), None);
    let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
    // 20000 bytes into a 4-page file system: the 16384 that fit.
    assert_eq!(p.write(fd, &[7u8; 20000]), Ok(16384));
    let before = (
        attrs(&p.fstat(fd).unwrap()),
        counters(&fs),
        p.lseek(fd, 0, SEEK_CUR).unwrap(),
    );
    assert_eq!(before.1.0, 0, "no block left");
    // fallocate changes nothing, timestamps included.
    assert_eq!(p.fallocate(fd, 0, 16384, 4096), Err(Errno::ENOSPC));
    assert_eq!(p.fallocate(fd, 0, 0, 1 << 20), Err(Errno::ENOSPC));
    let after = (
        attrs(&p.fstat(fd).unwrap()),
        counters(&fs),
        p.lseek(fd, 0, SEEK_CUR).unwrap(),
    );
    assert_eq!(after, before, "a failed fallocate changed the file");
    // write(2) updates mtime and ctime before it copies (Linux's
    // `shmem_file_write_iter` calls `file_update_time` first): everything
    // else stays.
    assert_eq!(p.write(fd, b"x"), Err(Errno::ENOSPC));
    assert_eq!(p.pwrite(fd, b"x", 1 << 20), Err(Errno::ENOSPC));
    let after = (
        attrs(&p.fstat(fd).unwrap()),
        counters(&fs),
        p.lseek(fd, 0, SEEK_CUR).unwrap(),
    );
    assert_eq!(
        (
            after.0.0, after.0.1, after.0.2, after.0.3, after.0.4, after.1, after.2
        ),
        (
            before.0.0, before.0.1, before.0.2, before.0.3, before.0.4, before.1, before.2
        ),
        "a failed write changed the file"
    );
    // Rewriting pages already held needs no new space.
    assert_eq!(p.pwrite(fd, &[9u8; 100], 0), Ok(100));
    // Another file: its create needs no page, its first write fails.
    let g = p.open("/g", O_CREAT | O_RDWR, 0o644).unwrap();
    assert_eq!(p.write(g, b"y"), Err(Errno::ENOSPC));
    assert_eq!(p.fstat(g).unwrap().st_size, 0);
    // Truncating frees the space.
    p.ftruncate(fd, 4096).unwrap();
    assert_eq!(p.write(g, &[1u8; 5000]), Ok(5000));
    p.close(fd).unwrap();
    p.close(g).unwrap();
    drop(p);
    quiesce(&fs, &vfs);
}

#[test]
fn enospc_at_the_inode_limit_leaves_no_dentry_or_inode() {
    // Four inodes: the root and three more.
    let (fs, vfs, mut p) = setup(None, Some(4));
    p.mkdir("/d", 0o755).unwrap();
    let fd = p.open("/d/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.symlink("f", "/d/s").unwrap();
    assert_eq!(counters(&fs).1, 0, "no inode left");
    let before = (
        listing(&mut p, "/"),
        listing(&mut p, "/d"),
        attrs(&p.stat("/d").unwrap()),
        counters(&fs),
        table(&mut p),
    );
    let dcache = vfs.dcache_len();
    assert_eq!(p.open("/d/g", O_CREAT | O_RDWR, 0o644), Err(Errno::ENOSPC));
    assert_eq!(
        p.open("/d/g", O_CREAT | O_EXCL | O_WRONLY, 0o644),
        Err(Errno::ENOSPC)
    );
    assert_eq!(p.mkdir("/d/e", 0o755), Err(Errno::ENOSPC));
    assert_eq!(p.symlink("f", "/d/t"), Err(Errno::ENOSPC));
    assert_eq!(p.open("/d", O_TMPFILE | O_RDWR, 0o600), Err(Errno::ENOSPC));
    // tmpfs counts a hard link as an inode (`shmem_link` reserves one).
    assert_eq!(p.link("/d/f", "/d/h"), Err(Errno::ENOSPC));
    let after = (
        listing(&mut p, "/"),
        listing(&mut p, "/d"),
        attrs(&p.stat("/d").unwrap()),
        counters(&fs),
        table(&mut p),
    );
    assert_eq!(after, before, "a failed create changed the tree");
    assert_eq!(p.stat("/d/g"), Err(Errno::ENOENT));
    assert_eq!(p.lstat("/d/t"), Err(Errno::ENOENT));
    // At most negative dentries were added for the failed names.
    assert!(vfs.dcache_len() <= dcache + 4);
    assert_eq!(p.lstat("/d/h"), Err(Errno::ENOENT));
    assert_eq!(p.stat("/d/f").unwrap().st_nlink, 1);
    // Freeing an inode lets a link, then (after it goes) a create through.
    p.unlink("/d/s").unwrap();
    p.link("/d/f", "/d/h").unwrap();
    assert_eq!(p.stat("/d/h").unwrap().st_nlink, 2);
    assert_eq!(p.open("/d/g", O_CREAT | O_RDWR, 0o644), Err(Errno::ENOSPC));
    p.unlink("/d/h").unwrap();
    let g = p.open("/d/g", O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(g).unwrap();
    p.close(fd).unwrap();
    drop(p);
    quiesce(&fs, &vfs);
    fs.fsck(true).unwrap();
}

#[test]
fn efbig_past_the_maximum_file_size() {
    let (fs, vfs, mut p) = setup(None, None);
    let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.write(fd, b"hello").unwrap();
    let before = (attrs(&p.fstat(fd).unwrap()), counters(&fs));
    // Past the largest offset: fallocate's end overflows, EFBIG.
    assert_eq!(p.fallocate(fd, 0, i64::MAX, 1), Err(Errno::EFBIG));
    assert_eq!(p.fallocate(fd, 0, i64::MAX - 10, 100), Err(Errno::EFBIG));
    // A write whose end overflows fails earlier (`rw_verify_area`): EINVAL.
    assert_eq!(p.pwrite(fd, b"x", i64::MAX), Err(Errno::EINVAL));
    let after = (attrs(&p.fstat(fd).unwrap()), counters(&fs));
    assert_eq!(after, before, "a failed call changed the file");
    // A file of the maximum size: an append starts at the limit, EFBIG,
    // before any timestamp changes.
    p.ftruncate(fd, i64::MAX).unwrap();
    let a = p.open("/f", O_WRONLY | O_APPEND, 0).unwrap();
    let before = (attrs(&p.fstat(fd).unwrap()), counters(&fs));
    assert_eq!(p.write(a, b"x"), Err(Errno::EFBIG));
    let after = (attrs(&p.fstat(fd).unwrap()), counters(&fs));
    assert_eq!(after, before, "a failed append changed the file");
    // The last byte is writable; a write running past it overflows.
    assert_eq!(p.pwrite(fd, b"xyz", i64::MAX - 1), Err(Errno::EINVAL));
    assert_eq!(p.pwrite(fd, b"x", i64::MAX - 1), Ok(1));
    assert_eq!(p.fstat(fd).unwrap().st_size, i64::MAX);
    let mut buf = [0u8; 8];
    assert_eq!(p.pread(fd, &mut buf, 0), Ok(8));
    assert_eq!(&buf[..5], b"hello");
    p.close(a).unwrap();
    p.close(fd).unwrap();
    drop(p);
    quiesce(&fs, &vfs);
}

#[test]
fn enametoolong_for_components_and_paths() {
    let (fs, vfs, mut p) = setup(None, None);
    p.mkdir("/d", 0o755).unwrap();
    let before = (
        listing(&mut p, "/"),
        listing(&mut p, "/d"),
        counters(&fs),
        table(&mut p),
    );
    let long = format!("/d/{}", "x".repeat(256));
    assert_eq!(
        p.open(&long, O_CREAT | O_RDWR, 0o644),
        Err(Errno::ENAMETOOLONG)
    );
    assert_eq!(p.mkdir(&long, 0o755), Err(Errno::ENAMETOOLONG));
    assert_eq!(p.symlink("d", &long), Err(Errno::ENAMETOOLONG));
    assert_eq!(p.rename("/d", &long), Err(Errno::ENAMETOOLONG));
    assert_eq!(p.stat(&long), Err(Errno::ENAMETOOLONG));
    // A path of PATH_MAX bytes (no room for the NUL) is too long, whatever
    // it names; one byte less is walked.
    let mut path = "/".repeat(4096 - 3);
    path.push_str("/d");
    assert_eq!(path.len(), 4095);
    assert!(p.stat(&path).is_ok());
    path.insert(0, '/');
    assert_eq!(path.len(), 4096);
    assert_eq!(p.stat(&path), Err(Errno::ENAMETOOLONG));
    let newp = format!("{}/n", "/".repeat(4094));
    assert_eq!(newp.len(), 4096);
    assert_eq!(
        p.open(&newp, O_CREAT | O_RDWR, 0o644),
        Err(Errno::ENAMETOOLONG)
    );
    assert_eq!(p.symlink(&newp, "/d/s"), Err(Errno::ENAMETOOLONG));
    let after = (
        listing(&mut p, "/"),
        listing(&mut p, "/d"),
        counters(&fs),
        table(&mut p),
    );
    assert_eq!(after, before);
    // 255 bytes is a valid name.
    let ok = format!("/d/{}", "y".repeat(255));
    let fd = p.open(&ok, O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    drop(p);
    quiesce(&fs, &vfs);
}

#[test]
fn eloop_past_forty_symlinks() {
    let (fs, vfs, mut p) = setup(None, None);
    p.mkdir("/d", 0o755).unwrap();
    let fd = p.open("/d/target", O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    // l1 -> l2 -> ... -> l40 -> target: forty links, resolvable.
    for i in 1..=40 {
        let to = if i == 40 {
            "target".to_string()
        } else {
            format!("l{}", i + 1)
        };
        p.symlink(&to, format!("/d/l{i}")).unwrap();
    }
    // l0 -> l1: forty-one.
    p.symlink("l1", "/d/l0").unwrap();
    p.symlink("self", "/d/self").unwrap();
    // A chain of 41 ending in a missing name: O_CREAT would create it.
    for i in 1..=40 {
        p.symlink(format!("m{}", i + 1), format!("/d/m{i}"))
            .unwrap();
    }
    p.symlink("m1", "/d/m0").unwrap();
    let target = p.stat("/d/target").unwrap();
    assert_eq!(p.stat("/d/l1").unwrap().st_ino, target.st_ino);
    let before = (listing(&mut p, "/d"), counters(&fs), table(&mut p));

    assert_eq!(p.stat("/d/l0"), Err(Errno::ELOOP));
    assert_eq!(p.open("/d/l0", O_RDONLY, 0), Err(Errno::ELOOP));
    assert_eq!(p.stat("/d/self"), Err(Errno::ELOOP));
    assert_eq!(p.stat("/d/self/x"), Err(Errno::ELOOP));
    assert_eq!(p.chdir("/d/l0"), Err(Errno::ELOOP));
    assert_eq!(p.truncate("/d/l0", 0), Err(Errno::ELOOP));
    // O_NOFOLLOW on a symlink: ELOOP too.
    assert_eq!(p.open("/d/l1", O_RDONLY | O_NOFOLLOW, 0), Err(Errno::ELOOP));
    // m1 is forty links from a missing m41: created; m0 is one too many.
    assert_eq!(p.open("/d/m0", O_CREAT | O_RDWR, 0o644), Err(Errno::ELOOP));
    let after = (listing(&mut p, "/d"), counters(&fs), table(&mut p));
    assert_eq!(after, before);
    assert_eq!(p.lstat("/d/m41"), Err(Errno::ENOENT));
    let fd = p.open("/d/m1", O_CREAT | O_RDWR, 0o644).unwrap();
    p.close(fd).unwrap();
    assert!(p.lstat("/d/m41").is_ok());
    // The links themselves are untouched.
    assert_eq!(p.lstat("/d/l0").unwrap().st_mode & S_IFMT, S_IFLNK);
    drop(p);
    quiesce(&fs, &vfs);
}
