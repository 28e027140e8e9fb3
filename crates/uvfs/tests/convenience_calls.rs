//! The convenience layer's error paths and resource use: whole-file calls
//! fail as their system calls do and leave no fd behind, a directory
//! iterator closes its fd when dropped (even part way), a file handle
//! reports errno through `std::io::Error` and closes on drop.

mod support;

use std::io::{Read, Seek, SeekFrom, Write};
use support::vfs::{each, err};
use uvfs::convenience::{FileHandle, FileType};
use uvfs::uapi::*;
use uvfs::{Errno, Process};

/// The lowest free fd: what a leaked fd would move.
fn next_fd(p: &mut Process) -> i32 {
    let fd = p.open("/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.close(fd).unwrap();
    fd
}

#[test]
fn whole_file_errors_and_no_leaks() {
    each(|_, p| {
        let first = next_fd(p);
        p.mkdir("/d", 0o755).unwrap();
        assert_eq!(err(p.read_file("/d")), Errno::EISDIR);
        assert_eq!(err(p.read_file("/none")), Errno::ENOENT);
        assert_eq!(err(p.write_file("/none/f", b"x")), Errno::ENOENT);
        assert_eq!(err(p.write_file("/d", b"x")), Errno::EISDIR);
        assert_eq!(err(p.read_dir("/none").map(|_| ())), Errno::ENOENT);
        p.write_file("/f", &vec![7u8; 200_000]).unwrap();
        assert_eq!(p.read_file("/f").unwrap(), vec![7u8; 200_000]);
        assert_eq!(err(p.read_dir("/f").map(|_| ())), Errno::ENOTDIR);
        // Mode 0666 less the umask (022).
        assert_eq!(p.stat("/f").unwrap().st_mode & 0o777, 0o644);
        assert_eq!(next_fd(p), first, "an fd was left open");
    });
}

#[test]
fn read_dir_types_and_closing() {
    each(|_, p| {
        let first = next_fd(p);
        p.mkdir("/d", 0o755).unwrap();
        for i in 0..300 {
            p.write_file(format!("/d/f{i:03}"), b"").unwrap();
        }
        p.symlink("f000", "/d/l").unwrap();
        p.mknod("/d/s", 0o140644, 0).unwrap();
        let all: Vec<_> = p.read_dir("/d").unwrap().map(Result::unwrap).collect();
        assert_eq!(all.len(), 302);
        assert!(all.iter().all(|e| e.name != b"." && e.name != b".."));
        let ty = |n: &[u8]| all.iter().find(|e| e.name == n).unwrap().file_type;
        assert_eq!(
            (ty(b"f000"), ty(b"l"), ty(b"s")),
            (FileType::File, FileType::Symlink, FileType::Socket)
        );
        // Dropped part way: the fd goes all the same.
        let mut it = p.read_dir("/d").unwrap();
        assert!(it.next().is_some());
        drop(it);
        assert_eq!(next_fd(p), first, "the directory fd was left open");
    });
}

#[test]
fn file_handle_streams() {
    each(|_, p| {
        let first = next_fd(p);
        {
            let mut f = p.open_handle("/h", O_CREAT | O_RDWR, 0o600).unwrap();
            f.write_all(b"0123456789").unwrap();
            assert_eq!(f.seek(SeekFrom::End(-3)).unwrap(), 7);
            let mut s = String::new();
            f.read_to_string(&mut s).unwrap();
            assert_eq!(s, "789");
            assert_eq!(f.seek(SeekFrom::Current(-10)).unwrap(), 0);
            let e = f.seek(SeekFrom::Current(-1)).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
            let e = f.seek(SeekFrom::Start(u64::MAX)).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
            assert_eq!(f.metadata().unwrap().st_size, 10);
        }
        assert_eq!(next_fd(p), first, "drop did not close");
        // A read-only handle refuses writes with EBADF.
        let mut r = p.open_handle("/h", O_RDONLY, 0).unwrap();
        let e = r.write(b"x").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        r.close().unwrap();
        // An fd handed over and taken back.
        let fd = p.open("/h", O_RDONLY, 0).unwrap();
        let h = FileHandle::from_fd(p, fd);
        assert_eq!(h.into_fd(), fd);
        p.close(fd).unwrap();
        assert_eq!(next_fd(p), first);
    });
}
