use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Vfs};

#[test]
fn smoke() {
    for fast in [FastPaths::seeds(), FastPaths::stock()] {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.mkdir("/tmp", 0o777).unwrap();
        let fd = p.open("/tmp/a", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(p.write(fd, b"hello").unwrap(), 5);
        assert_eq!(p.lseek(fd, 0, SEEK_SET).unwrap(), 0);
        let mut b = [0u8; 10];
        assert_eq!(p.read(fd, &mut b).unwrap(), 5);
        assert_eq!(&b[..5], b"hello");
        p.close(fd).unwrap();
        let st = p.stat("/tmp/a").unwrap();
        assert_eq!(st.st_size, 5);
        assert_eq!(st.st_mode, 0o100644);
        assert_eq!(p.open("/tmp/nope", O_RDONLY, 0), Err(Errno::ENOENT));
        assert_eq!(p.open("/tmp/nope", O_RDONLY, 0), Err(Errno::ENOENT));
        p.symlink("a", "/tmp/l").unwrap();
        assert_eq!(p.stat("/tmp/l").unwrap().st_size, 5);
        assert_eq!(p.lstat("/tmp/l").unwrap().st_mode & 0o170000, 0o120000);
        p.rename("/tmp/a", "/tmp/b").unwrap();
        assert_eq!(p.stat("/tmp/a"), Err(Errno::ENOENT));
        assert_eq!(p.stat("/tmp/b").unwrap().st_size, 5);
        p.chdir("/tmp").unwrap();
        assert_eq!(p.getcwd().unwrap(), b"/tmp");
        assert_eq!(p.stat("b").unwrap().st_size, 5);
        p.unlink("b").unwrap();
        assert_eq!(p.stat("b"), Err(Errno::ENOENT));
        p.chdir("/").unwrap();
        assert_eq!(p.rmdir("/tmp"), Err(Errno::ENOTEMPTY));
        p.unlink("/tmp/l").unwrap();
        p.rmdir("/tmp").unwrap();
        let fd = p.open("/", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let mut buf = [0u8; 4096];
        let n = p.getdents64(fd, &mut buf).unwrap();
        let names: Vec<_> = uvfs::stat::parse_dirents64(&buf[..n])
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, vec![b".".to_vec(), b"..".to_vec()]);
        p.close(fd).unwrap();
        // The same listing through the iterator, and its errors.
        p.mkdir("/d", 0o755).unwrap();
        for n in ["x", "y"] {
            let f = p
                .open(format!("/d/{n}"), O_CREAT | O_WRONLY, 0o644)
                .unwrap();
            p.close(f).unwrap();
        }
        let fd = p.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let names: Vec<_> = p.readdir(fd).map(|e| e.unwrap().name).collect();
        assert_eq!(names, [&b"."[..], b"..", b"y", b"x"]);
        assert_eq!(p.readdir(fd).count(), 0, "at the end");
        p.close(fd).unwrap();
        let f = p.open("/d/x", O_RDONLY, 0).unwrap();
        assert_eq!(p.readdir(f).next(), Some(Err(Errno::ENOTDIR)));
        assert_eq!(p.readdir(99).next(), Some(Err(Errno::EBADF)));
        drop(p);
        assert!(vfs.dcache_len() >= 1);
    }
}

/// Host (differential finding 32): the 40-link limit covers the whole open,
/// the O_CREAT path's trailing link included.
#[test]
fn o_creat_counts_trailing_links_against_the_walk() {
    let vfs = Vfs::new(FastPaths::seeds());
    let mut p = Process::new(&vfs).unwrap();
    for d in ["/l", "/a", "/a/e"] {
        p.mkdir(d, 0o755).unwrap();
    }
    p.symlink("../../l", "/a/e/f").unwrap();
    p.symlink("a", "/z40").unwrap();
    for i in (1..40).rev() {
        p.symlink(format!("z{}", i + 1), format!("/z{i}")).unwrap();
    }
    assert!(p.stat("/z1/e").is_ok());
    assert_eq!(p.open("/z1/e/f", O_RDONLY, 0), Err(Errno::ELOOP));
    assert_eq!(
        p.open("/z1/e/f", O_RDWR | O_CREAT, 0o644),
        Err(Errno::ELOOP)
    );
    // One link fewer on the way: the trailing link fits.
    assert_eq!(
        p.open("/z2/e/f", O_RDWR | O_CREAT, 0o644),
        Err(Errno::EISDIR)
    );
    // glibc: futimens with a negative fd is EBADF even with both UTIME_OMIT.
    let omit = Timespec {
        tv_sec: 0,
        tv_nsec: UTIME_OMIT,
    };
    assert_eq!(p.futimens(-2, Some([omit, omit])), Err(Errno::EBADF));
}

/// Host (differential finding 20): a second fallocate over pages an earlier
/// one allocated turns them into data for SEEK_DATA; fresh ones stay holes.
#[test]
fn fallocate_over_fallocated_pages_makes_data() {
    let vfs = Vfs::new(FastPaths::seeds());
    let mut p = Process::new(&vfs).unwrap();
    let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.fallocate(fd, 0, 1 << 20, 1 << 20).unwrap();
    assert_eq!(p.lseek(fd, 0, SEEK_DATA), Err(Errno::ENXIO));
    p.fallocate(fd, 0, 1 << 20, 8192).unwrap();
    assert_eq!(p.lseek(fd, 0, SEEK_DATA), Ok(1 << 20));
    assert_eq!(p.lseek(fd, 1 << 20, SEEK_HOLE), Ok((1 << 20) + 8192));
    let mut buf = [1u8; 16];
    assert_eq!(p.pread(fd, &mut buf, 1 << 20), Ok(16));
    assert_eq!(buf, [0; 16]);
    assert_eq!(p.fstat(fd).unwrap().st_blocks, (1 << 20) / 512);
}

/// Host (differential finding 17): a getdents64 whose buffer cannot hold
/// the next entry fails with EINVAL but moves the position to that entry.
#[test]
fn getdents_einval_moves_to_the_entry_tried() {
    let vfs = Vfs::new(FastPaths::seeds());
    let mut p = Process::new(&vfs).unwrap();
    p.mkdir("/d", 0o755).unwrap();
    for n in ["/d/a", "/d/b"] {
        let fd = p.open(n, O_CREAT | O_RDWR, 0o644).unwrap();
        p.close(fd).unwrap();
    }
    let fd = p.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(p.lseek(fd, 12288, SEEK_SET), Ok(12288));
    let mut small = [0u8; 10];
    assert_eq!(p.getdents64(fd, &mut small), Err(Errno::EINVAL));
    assert_eq!(
        p.lseek(fd, 0, SEEK_CUR),
        Ok(4),
        "b's cookie (created second)"
    );
    // At the start, '.' does not fit: the position stays 0.
    assert_eq!(p.lseek(fd, 0, SEEK_SET), Ok(0));
    assert_eq!(p.getdents64(fd, &mut small), Err(Errno::EINVAL));
    assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(0));
}
