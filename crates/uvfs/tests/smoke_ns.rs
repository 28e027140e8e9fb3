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
