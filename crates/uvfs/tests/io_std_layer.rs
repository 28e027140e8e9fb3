//! The convenience layer (`process/std_io.rs`): whole-file read and write,
//! `read_dir` by path with typed entries, and `OpenFile` as
//! `std::io::{Read, Write, Seek}`. Each is a few Linux calls, so what is
//! checked is that the right calls are made: errors keep their errno, fds
//! are closed (the lowest free fd comes back), and the data round-trips.

mod support;

use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use support::vfs::*;
use uvfs::cred::Cred;
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::uapi::*;
use uvfs::{Errno, FileType, Process, Vfs};

/// The lowest free fd: what the next open gets (every fd the layer opened
/// must be closed again).
fn next_fd(p: &mut Process) -> i32 {
    let fd = p.open("/", O_RDONLY, 0).unwrap();
    p.close(fd).unwrap();
    fd
}

#[test]
fn whole_file_read_and_write() {
    each(|_, p| {
        let free = next_fd(p);
        p.write_file("/a", b"one").unwrap();
        assert_eq!(p.read_file("/a").unwrap(), b"one");
        // Truncates, then writes: shorter contents replace longer ones.
        p.write_file("/a", b"1").unwrap();
        assert_eq!(p.read_file("/a").unwrap(), b"1");
        // Large files grow the buffer past the size hint.
        let big: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
        p.write_file("/big", &big).unwrap();
        assert_eq!(p.read_file("/big").unwrap(), big);
        // Mode 0666 less the umask.
        p.umask(0o027);
        p.write_file("/m", b"").unwrap();
        assert_eq!(p.stat("/m").unwrap().st_mode & 0o777, 0o640);
        // Errors keep their errno; nothing stays open.
        assert_eq!(err(p.read_file("/nope")), Errno::ENOENT);
        p.mkdir("/d", 0o755).unwrap();
        assert_eq!(err(p.read_file("/d")), Errno::EISDIR);
        assert_eq!(err(p.write_file("/d", b"x")), Errno::EISDIR);
        assert_eq!(err(p.write_file("/nodir/f", b"x")), Errno::ENOENT);
        p.chmod("/a", 0o600).unwrap();
        p.set_cred(user(1000, 1000));
        assert_eq!(err(p.read_file("/a")), Errno::EACCES);
        assert_eq!(err(p.write_file("/a", b"x")), Errno::EACCES);
        p.set_cred(Cred::root());
        assert_eq!(next_fd(p), free);
        let e = std::io::Error::from(err(p.read_file("/nope")));
        assert_eq!(e.kind(), ErrorKind::NotFound);
    });
}

#[test]
fn write_file_reports_enospc_and_keeps_what_fit() {
    let tmpfs = Tmpfs::new(TmpfsOptions {
        size_bytes: Some(64 * 1024),
        ..TmpfsOptions::default()
    });
    let vfs = Vfs::builder().build_with_root(tmpfs);
    let mut p = Process::new(&vfs).unwrap();
    let free = next_fd(&mut p);
    let data = vec![7u8; 100 * 1024];
    assert_eq!(err(p.write_file("/f", &data)), Errno::ENOSPC);
    let kept = p.read_file("/f").unwrap();
    assert_eq!(kept.len(), 64 * 1024);
    assert!(kept.iter().all(|&b| b == 7));
    assert_eq!(next_fd(&mut p), free);
}

#[test]
fn read_dir_by_path_has_typed_entries_and_no_dots() {
    each(|_, p| {
        let free = next_fd(p);
        p.mkdir("/d", 0o755).unwrap();
        p.mkdir("/d/sub", 0o755).unwrap();
        p.write_file("/d/f", b"x").unwrap();
        p.symlink("f", "/d/l").unwrap();
        let mut got: Vec<(String, FileType)> = p
            .read_dir("/d")
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.name_lossy().into_owned(), e.file_type())
            })
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("f".to_string(), FileType::File),
                ("l".to_string(), FileType::Symlink),
                ("sub".to_string(), FileType::Dir),
            ]
        );
        // Many entries: several getdents64 batches.
        for i in 0..2000 {
            p.write_file(format!("/d/sub/n{i:04}"), b"").unwrap();
        }
        let n = p.read_dir("/d/sub").unwrap().count();
        assert_eq!(n, 2000);
        // Dropped half-way: closed all the same.
        let first = p.read_dir("/d/sub").unwrap().next().unwrap().unwrap();
        assert_eq!(first.name_os().len(), 5);
        assert_eq!(next_fd(p), free);
        assert_eq!(err(p.read_dir("/d/f")), Errno::ENOTDIR);
        assert_eq!(err(p.read_dir("/none")), Errno::ENOENT);
        // The raw iterator on an fd still shows the dots.
        let fd = p.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let raw: Vec<Vec<u8>> = p.readdir(fd).map(|e| e.unwrap().name).collect();
        assert!(raw.iter().any(|n| n == b"."));
        p.close(fd).unwrap();
        assert_eq!(FileType::from_mode(0o040755), FileType::Dir);
        assert_eq!(FileType::from_mode(0o100644), FileType::File);
        assert_eq!(FileType::from_mode(0o120777), FileType::Symlink);
        assert_eq!(FileType::from_mode(0o010644), FileType::Fifo);
        assert_eq!(FileType::from_d_type(3), FileType::Unknown);
    });
}

/// The borrowed-name form of `readdir` (`ReadDir::next_ref`) gives the
/// entries the owning iterator gives, across several `getdents64`
/// batches, in the same order, with the same cookies, and an error once.
#[test]
fn readdir_next_ref_matches_the_owning_iterator() {
    each(|_, p| {
        p.mkdir("/big", 0o755).unwrap();
        // Long names, so that 3,000 entries take several 32 KiB batches.
        for i in 0..3000 {
            p.write_file(format!("/big/{i:04}-{}", "x".repeat(40)), b"")
                .unwrap();
        }
        let fd = p.open("/big", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let owned: Vec<uvfs::stat::Dirent64> = p.readdir(fd).map(|e| e.unwrap()).collect();
        assert_eq!(owned.len(), 3002);
        p.lseek(fd, 0, SEEK_SET).unwrap();
        let mut borrowed = Vec::new();
        let mut rd = p.readdir(fd);
        while let Some(e) = rd.next_ref() {
            borrowed.push(e.unwrap().to_dirent64());
        }
        assert!(rd.next_ref().is_none());
        drop(rd);
        assert_eq!(borrowed, owned);
        p.close(fd).unwrap();
        // An error comes once, then the end.
        let mut rd = p.readdir(fd);
        assert_eq!(rd.next_ref().map(|e| e.err()), Some(Some(Errno::EBADF)));
        assert!(rd.next_ref().is_none());
    });
}

#[test]
fn open_file_reads_writes_seeks_and_closes() -> std::io::Result<()> {
    let vfs = Vfs::new(uvfs::FastPaths::seeds());
    let mut p = Process::new(&vfs)?;
    let free = next_fd(&mut p);
    {
        let mut f = p.open_file("/f", O_RDWR | O_CREAT, 0o644)?;
        assert_eq!(f.fd(), free);
        f.write_all(b"hello world")?;
        assert_eq!(f.stream_position()?, 11);
        assert_eq!(f.seek(SeekFrom::End(-5))?, 6);
        let mut s = String::new();
        f.read_to_string(&mut s)?;
        assert_eq!(s, "world");
        // Before the start: EINVAL, as lseek(2).
        let e = f.seek(SeekFrom::End(-100)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(Errno::EINVAL.raw()));
        // Positional calls leave the position alone.
        let mut b = [0u8; 5];
        assert_eq!(f.read_at(&mut b, 0)?, 5);
        assert_eq!(&b, b"hello");
        assert_eq!(f.write_at(b"J", 0)?, 1);
        assert_eq!(f.stream_position()?, 11);
        f.set_len(3)?;
        assert_eq!(f.metadata()?.st_size, 3);
        f.sync_all()?;
        f.flush()?;
    }
    // Dropped: closed.
    assert_eq!(next_fd(&mut p), free);
    assert_eq!(p.read_file("/f")?, b"Jel");
    // close() reports; into_raw_fd keeps the fd open.
    let f = p.open_file("/f", O_RDONLY, 0)?;
    f.close()?;
    let f = p.open_file("/f", O_RDONLY, 0)?;
    let fd = f.into_raw_fd();
    assert_eq!(p.fstat(fd)?.st_size, 3);
    p.close(fd)?;
    // Writes on a read-only file fail with EBADF, through std::io.
    let mut f = p.open_file("/f", O_RDONLY, 0)?;
    let e = f.write(b"x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(Errno::EBADF.raw()));
    drop(f);
    // O_CLOEXEC is added, as std does.
    let fd = p.open_file("/f", O_RDONLY, 0)?.into_raw_fd();
    assert_eq!(p.fcntl(fd, F_GETFD, 0)?, FD_CLOEXEC);
    p.close(fd)?;
    assert_eq!(
        err(p.open_file("/nope", O_RDONLY, 0).map(|f| f.fd())),
        Errno::ENOENT
    );
    assert_eq!(next_fd(&mut p), free);
    Ok(())
}
