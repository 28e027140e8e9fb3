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
        drop(p);
        assert!(vfs.dcache_len() >= 1);
    }
}
