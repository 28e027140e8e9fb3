//! I/O on open files: read, write, pread, pwrite, readv, writev, lseek
//! (every whence, `SEEK_DATA`/`SEEK_HOLE` included), getdents64 (raw
//! records, resuming, `EINVAL` on a tiny buffer), ftruncate and truncate,
//! fallocate (mode 0, `KEEP_SIZE`, `PUNCH_HOLE | KEEP_SIZE`), fsync;
//! `O_APPEND` through several fds; a file unlinked while open (readable and
//! writable until its last close, then its tmpfs inode is freed: checked in
//! `statfs`'s free inodes); `ENOSPC` on a size- and inode-limited tmpfs
//! (short writes as Linux reports them); `EFBIG` and the offset-overflow
//! `EINVAL`s. Expected values were checked on a Linux 6.18 host's tmpfs
//! ("Host:" comments). Every test runs under both fast-path settings.

mod support;

use std::sync::Arc;
use support::vfs::*;
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::fs::{FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FileSystem};
use uvfs::stat::parse_dirents64;
use uvfs::uapi::*;
use uvfs::{Errno, Process, Vfs};

const MAX: i64 = i64::MAX;

#[test]
fn read_write_positions() {
    each(|_, p| {
        let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(p.write(fd, b"hello "), Ok(6));
        assert_eq!(p.write(fd, b"world"), Ok(5));
        assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(11));
        let mut b = [0u8; 32];
        assert_eq!(p.read(fd, &mut b), Ok(0), "at EOF");
        // pread/pwrite leave the position alone.
        assert_eq!(p.pread(fd, &mut b[..5], 6), Ok(5));
        assert_eq!(&b[..5], b"world");
        assert_eq!(p.pwrite(fd, b"W", 6), Ok(1));
        assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(11));
        assert_eq!(p.pread(fd, &mut b, 100), Ok(0));
        // A read shorter than asked at EOF.
        p.lseek(fd, 8, SEEK_SET).unwrap();
        assert_eq!(p.read(fd, &mut b), Ok(3));
        assert_eq!(&b[..3], b"rld");
        // Writing past the end leaves a hole that reads as zeros.
        assert_eq!(p.pwrite(fd, b"!", 20), Ok(1));
        assert_eq!(p.fstat(fd).unwrap().st_size, 21);
        assert_eq!(p.pread(fd, &mut b, 0), Ok(21));
        assert_eq!(&b[..21], b"hello World\0\0\0\0\0\0\0\0\0!");
        // Host: a negative offset is EINVAL.
        assert_eq!(p.pread(fd, &mut b, -1), Err(Errno::EINVAL));
        assert_eq!(p.pwrite(fd, b"x", -1), Err(Errno::EINVAL));
        // Zero-length calls.
        assert_eq!(p.write(fd, b""), Ok(0));
        assert_eq!(p.read(fd, &mut []), Ok(0));
        // Closed or bad fds.
        p.close(fd).unwrap();
        assert_eq!(p.read(fd, &mut b), Err(Errno::EBADF));
        assert_eq!(p.write(-1, b"x"), Err(Errno::EBADF));
        // Host: read on a directory is EISDIR.
        let d = p.open("/", O_RDONLY, 0).unwrap();
        assert_eq!(p.read(d, &mut b), Err(Errno::EISDIR));
        p.close(d).unwrap();
    });
}

#[test]
fn large_io_spans_pages() {
    each(|_, p| {
        let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let fd = p.open("/big", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(p.pwrite(fd, &data, 1000), Ok(data.len()));
        let mut back = vec![0u8; data.len() + 1000];
        assert_eq!(p.pread(fd, &mut back, 0), Ok(data.len() + 1000));
        assert!(back[..1000].iter().all(|&b| b == 0));
        assert_eq!(&back[1000..], &data[..]);
        let st = p.fstat(fd).unwrap();
        assert_eq!(st.st_size, 51_000);
        // 51000 bytes span pages 0..=12: 13 pages of 8 blocks.
        assert_eq!(st.st_blocks, 13 * 8);
        assert_eq!(st.st_blksize, 4096);
        p.close(fd).unwrap();
    });
}

/// Host: pos + count overflowing loff_t is EINVAL for reads and writes
/// (`rw_verify_area`): pread of 2 bytes at 2^63-2 and of 1 byte at 2^63-1
/// fail, 1 byte at 2^63-2 and 0 bytes at 2^63-1 succeed; pwrite of 1 byte
/// at 2^63-2 succeeds (size 2^63-1); write at file position 2^63-1 is
/// EINVAL, with O_APPEND too (the position is checked before appending).
#[test]
fn offset_overflow_is_einval() {
    each(|_, p| {
        let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
        p.write(fd, b"abc").unwrap();
        let mut b = [0u8; 2];
        assert_eq!(p.pread(fd, &mut b, MAX - 1), Err(Errno::EINVAL));
        assert_eq!(p.pread(fd, &mut b[..1], MAX - 1), Ok(0));
        assert_eq!(p.pread(fd, &mut b[..1], MAX), Err(Errno::EINVAL));
        assert_eq!(p.pread(fd, &mut [], MAX), Ok(0));
        assert_eq!(p.pwrite(fd, b"", MAX), Ok(0));
        assert_eq!(p.pwrite(fd, b"xy", MAX - 1), Err(Errno::EINVAL));
        assert_eq!(p.pwrite(fd, b"x", MAX), Err(Errno::EINVAL));
        assert_eq!(p.pwrite(fd, b"x", MAX - 1), Ok(1));
        assert_eq!(p.fstat(fd).unwrap().st_size, MAX);
        p.ftruncate(fd, 3).unwrap();
        assert_eq!(p.lseek(fd, MAX, SEEK_SET), Ok(MAX));
        assert_eq!(p.read(fd, &mut b[..1]), Err(Errno::EINVAL));
        assert_eq!(p.write(fd, b"x"), Err(Errno::EINVAL));
        assert_eq!(p.write(fd, b""), Ok(0));
        assert_eq!(p.readv(fd, &mut [&mut b[..1]]), Err(Errno::EINVAL));
        assert_eq!(p.writev(fd, &[b"x"]), Err(Errno::EINVAL));
        p.lseek(fd, MAX - 1, SEEK_SET).unwrap();
        assert_eq!(p.write(fd, b"x"), Ok(1));
        assert_eq!(p.fstat(fd).unwrap().st_size, MAX);
        p.ftruncate(fd, 3).unwrap();
        let a = p.open("/f", O_WRONLY | O_APPEND, 0).unwrap();
        p.lseek(a, MAX, SEEK_SET).unwrap();
        assert_eq!(p.write(a, b"x"), Err(Errno::EINVAL));
        assert_eq!(p.fstat(a).unwrap().st_size, 3);
        p.close(a).unwrap();
        p.close(fd).unwrap();
    });
}

#[test]
fn vectored() {
    each(|_, p| {
        let fd = p.open("/v", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(p.writev(fd, &[b"ab", b"", b"cde", b"f"]), Ok(6));
        assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(6));
        p.lseek(fd, 1, SEEK_SET).unwrap();
        let (mut x, mut y, mut z) = ([0u8; 2], [0u8; 0], [0u8; 10]);
        assert_eq!(p.readv(fd, &mut [&mut x, &mut y, &mut z]), Ok(5));
        assert_eq!(&x, b"bc");
        assert_eq!(&z[..3], b"def");
        assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(6));
        // UIO_MAXIOV buffers are fine, one more is EINVAL.
        let one = [b'z'; 1];
        let bufs: Vec<&[u8]> = (0..1024).map(|_| &one[..]).collect();
        assert_eq!(p.writev(fd, &bufs), Ok(1024));
        let bufs: Vec<&[u8]> = (0..1025).map(|_| &one[..]).collect();
        assert_eq!(p.writev(fd, &bufs), Err(Errno::EINVAL));
        let mut store = vec![[0u8; 1]; 1025];
        let mut bufs: Vec<&mut [u8]> = store.iter_mut().map(|b| &mut b[..]).collect();
        assert_eq!(p.readv(fd, &mut bufs), Err(Errno::EINVAL));
        assert_eq!(p.writev(fd, &[]), Ok(0));
        p.close(fd).unwrap();
    });
}

#[test]
fn lseek_whences() {
    each(|_, p| {
        let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
        p.write(fd, b"0123456789").unwrap();
        assert_eq!(p.lseek(fd, 3, SEEK_SET), Ok(3));
        assert_eq!(p.lseek(fd, 2, SEEK_CUR), Ok(5));
        assert_eq!(p.lseek(fd, -1, SEEK_CUR), Ok(4));
        assert_eq!(p.lseek(fd, 0, SEEK_END), Ok(10));
        assert_eq!(p.lseek(fd, -4, SEEK_END), Ok(6));
        assert_eq!(p.lseek(fd, 100, SEEK_END), Ok(110));
        // Host: negative results, unknown whence and overflow are EINVAL.
        assert_eq!(p.lseek(fd, -1, SEEK_SET), Err(Errno::EINVAL));
        assert_eq!(p.lseek(fd, -100_000, SEEK_END), Err(Errno::EINVAL));
        assert_eq!(p.lseek(fd, 0, 5), Err(Errno::EINVAL));
        assert_eq!(p.lseek(fd, MAX, SEEK_SET), Ok(MAX));
        assert_eq!(p.lseek(fd, 1, SEEK_CUR), Err(Errno::EINVAL));
        assert_eq!(
            p.lseek(fd, 0, SEEK_CUR),
            Ok(MAX),
            "a failed lseek moves nothing"
        );
        // Host: on a file with a hole [0, 8192) and data [8192, 8202):
        // DATA 0 -> 8192, HOLE 0 -> 0, HOLE 8192 -> 8202 (EOF),
        // DATA/HOLE at or past EOF and DATA at -1 -> ENXIO.
        p.ftruncate(fd, 0).unwrap();
        p.pwrite(fd, b"aaaaaaaaaa", 8192).unwrap();
        assert_eq!(p.lseek(fd, 0, SEEK_DATA), Ok(8192));
        assert_eq!(p.lseek(fd, 0, SEEK_HOLE), Ok(0));
        assert_eq!(p.lseek(fd, 8192, SEEK_HOLE), Ok(8202));
        assert_eq!(p.lseek(fd, 8195, SEEK_DATA), Ok(8195));
        assert_eq!(p.lseek(fd, 8202, SEEK_DATA), Err(Errno::ENXIO));
        assert_eq!(p.lseek(fd, 8202, SEEK_HOLE), Err(Errno::ENXIO));
        assert_eq!(p.lseek(fd, 9000, SEEK_HOLE), Err(Errno::ENXIO));
        assert_eq!(p.lseek(fd, -1, SEEK_DATA), Err(Errno::ENXIO));
        // Host: extended to 20000: DATA 8300 -> 8300, HOLE 8300 -> 12288,
        // DATA 12288 -> ENXIO.
        p.ftruncate(fd, 20000).unwrap();
        assert_eq!(p.lseek(fd, 8300, SEEK_DATA), Ok(8300));
        assert_eq!(p.lseek(fd, 8300, SEEK_HOLE), Ok(12288));
        assert_eq!(p.lseek(fd, 12288, SEEK_DATA), Err(Errno::ENXIO));
        // Host: fallocated (KEEP_SIZE), unwritten pages are holes.
        p.fallocate(fd, FALLOC_FL_KEEP_SIZE as i32, 0, 4096)
            .unwrap();
        assert_eq!(p.lseek(fd, 0, SEEK_DATA), Ok(8192));
        assert_eq!(p.lseek(fd, 0, SEEK_HOLE), Ok(0));
        assert_eq!(
            p.lseek(fd, 0, SEEK_CUR),
            Ok(0),
            "SEEK_HOLE moved the position"
        );
        p.close(fd).unwrap();
        // Host: on a directory, SEEK_END and SEEK_DATA are EINVAL.
        let d = p.open("/", O_RDONLY, 0).unwrap();
        assert_eq!(p.lseek(d, 0, SEEK_END), Err(Errno::EINVAL));
        assert_eq!(p.lseek(d, 0, SEEK_DATA), Err(Errno::EINVAL));
        assert_eq!(p.lseek(d, 0, SEEK_SET), Ok(0));
        assert_eq!(p.lseek(d, -1, SEEK_SET), Err(Errno::EINVAL));
        p.close(d).unwrap();
    });
}

/// Reads the whole directory with `bufsize`-byte calls, checking each
/// record's layout.
fn list_raw(p: &mut Process, fd: i32, bufsize: usize) -> Vec<uvfs::stat::Dirent64> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; bufsize];
    loop {
        let n = p.getdents64(fd, &mut buf).unwrap();
        if n == 0 {
            return out;
        }
        // Records are 8-byte aligned and tile the returned length.
        let mut at = 0;
        while at < n {
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            assert_eq!(reclen % 8, 0);
            assert!(reclen >= 24);
            at += reclen;
        }
        assert_eq!(at, n);
        out.extend(parse_dirents64(&buf[..n]));
    }
}

#[test]
fn getdents64_records_and_resume() {
    each(|_, p| {
        p.mkdir("/d", 0o755).unwrap();
        let mut want = Vec::new();
        for i in 0..60 {
            let name = format!("entry-{i}-{}", "x".repeat(i % 13));
            if i % 3 == 0 {
                p.mkdir(format!("/d/{name}"), 0o755).unwrap();
            } else if i % 3 == 1 {
                put(p, &format!("/d/{name}"), b"");
            } else {
                p.symlink("t", format!("/d/{name}")).unwrap();
            }
            want.push(name);
        }
        want.sort();
        let d_ino = p.stat("/d").unwrap().st_ino;
        let root_ino = p.stat("/").unwrap().st_ino;
        let fd = p.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let all = list_raw(p, fd, 65536);
        assert_eq!(all.len(), 62);
        assert_eq!((all[0].name.as_slice(), all[0].d_ino), (&b"."[..], d_ino));
        assert_eq!(
            (all[1].name.as_slice(), all[1].d_ino),
            (&b".."[..], root_ino)
        );
        assert_eq!(all[0].d_type, DT_DIR);
        for e in &all[2..] {
            let path = format!("/d/{}", String::from_utf8_lossy(&e.name));
            let st = p.lstat(&path).unwrap();
            assert_eq!(e.d_ino, st.st_ino);
            let t = match st.st_mode & 0o170000 {
                0o040000 => DT_DIR,
                0o100000 => DT_REG,
                0o120000 => DT_LNK,
                _ => unreachable!(),
            };
            assert_eq!(e.d_type, t);
        }
        let mut got: Vec<String> = all[2..]
            .iter()
            .map(|e| String::from_utf8(e.name.clone()).unwrap())
            .collect();
        got.sort();
        assert_eq!(got, want);
        // At the end: 0, again and again.
        assert_eq!(p.getdents64(fd, &mut [0u8; 1024]), Ok(0));
        assert_eq!(p.getdents64(fd, &mut [0u8; 1024]), Ok(0));
        // Small buffers list the same entries, in the same order.
        for size in [48usize, 64, 100, 333] {
            p.lseek(fd, 0, SEEK_SET).unwrap();
            let small = list_raw(p, fd, size);
            assert_eq!(small, all, "buffer of {size} bytes");
        }
        // d_off resumes right after its record.
        for (i, e) in all.iter().enumerate().take(all.len() - 1) {
            p.lseek(fd, e.d_off, SEEK_SET).unwrap();
            let rest = list_raw(p, fd, 4096);
            assert_eq!(rest, all[i + 1..], "resuming at d_off of entry {i}");
        }
        p.close(fd).unwrap();
    });
}

#[test]
fn getdents64_errors() {
    each(|_, p| {
        put(p, "/f", b"");
        let fd = p.open("/", O_RDONLY, 0).unwrap();
        // Host: a buffer that cannot hold the first record is EINVAL (1 and
        // 0 bytes); 24 bytes hold ".".
        assert_eq!(p.getdents64(fd, &mut [0u8; 1]), Err(Errno::EINVAL));
        assert_eq!(p.getdents64(fd, &mut []), Err(Errno::EINVAL));
        assert_eq!(p.getdents64(fd, &mut [0u8; 23]), Err(Errno::EINVAL));
        let mut b = [0u8; 24];
        assert_eq!(p.getdents64(fd, &mut b), Ok(24));
        assert_eq!(parse_dirents64(&b)[0].name, b".");
        p.close(fd).unwrap();
        // Host: getdents64 on a file is ENOTDIR.
        let f = p.open("/f", O_RDONLY, 0).unwrap();
        assert_eq!(p.getdents64(f, &mut [0u8; 1024]), Err(Errno::ENOTDIR));
        p.close(f).unwrap();
        assert_eq!(p.getdents64(f, &mut [0u8; 1024]), Err(Errno::EBADF));
        // Host: a directory removed while open lists nothing... it is
        // ENOENT (IS_DEADDIR) on Linux for a directory that was rmdir'ed.
        p.mkdir("/gone", 0o755).unwrap();
        let g = p.open("/gone", O_RDONLY, 0).unwrap();
        p.rmdir("/gone").unwrap();
        assert_eq!(p.getdents64(g, &mut [0u8; 1024]), Err(Errno::ENOENT));
        p.close(g).unwrap();
    });
}

#[test]
fn truncate_family() {
    each(|_, p| {
        put(p, "/f", b"0123456789");
        let fd = p.open("/f", O_RDWR, 0).unwrap();
        p.ftruncate(fd, 4).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_size, 4);
        p.ftruncate(fd, 8).unwrap();
        let mut b = [9u8; 8];
        assert_eq!(p.pread(fd, &mut b, 0), Ok(8));
        assert_eq!(&b, b"0123\0\0\0\0", "the cut tail reads back as zeros");
        p.truncate("/f", 2).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_size, 2);
        // The position is not moved by a truncate.
        p.lseek(fd, 6, SEEK_SET).unwrap();
        p.ftruncate(fd, 1).unwrap();
        assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(6));
        // Host: ftruncate/truncate to 2^63-1 works on tmpfs; -1 is EINVAL.
        p.ftruncate(fd, MAX).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_size, MAX);
        assert_eq!(p.ftruncate(fd, -1), Err(Errno::EINVAL));
        assert_eq!(p.truncate("/f", -1), Err(Errno::EINVAL));
        p.ftruncate(fd, 0).unwrap();
        p.close(fd).unwrap();
        // Host: ftruncate of a read-only fd or a directory fd is EINVAL;
        // truncate of a directory EISDIR.
        let r = p.open("/f", O_RDONLY, 0).unwrap();
        assert_eq!(p.ftruncate(r, 0), Err(Errno::EINVAL));
        p.close(r).unwrap();
        let d = p.open("/", O_RDONLY, 0).unwrap();
        assert_eq!(p.ftruncate(d, 0), Err(Errno::EINVAL));
        p.close(d).unwrap();
        assert_eq!(p.truncate("/", 0), Err(Errno::EISDIR));
        assert_eq!(p.truncate("/missing", 0), Err(Errno::ENOENT));
        // truncate follows symlinks.
        put(p, "/g", b"abc");
        p.symlink("/g", "/lg").unwrap();
        p.truncate("/lg", 1).unwrap();
        assert_eq!(p.stat("/g").unwrap().st_size, 1);
        // Host: truncate without write permission is EACCES.
        p.set_cred(user(1000, 1000));
        assert_eq!(p.truncate("/g", 0), Err(Errno::EACCES));
    });
}

#[test]
fn fallocate_modes() {
    each(|_, p| {
        let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
        // Mode 0 extends the size; blocks are allocated.
        p.fallocate(fd, 0, 0, 8192).unwrap();
        let st = p.fstat(fd).unwrap();
        assert_eq!((st.st_size, st.st_blocks), (8192, 16));
        // KEEP_SIZE allocates past the end without changing the size.
        // Host: fallocate(KEEP_SIZE, 0, 20000) leaves the size at 8192.
        p.fallocate(fd, FALLOC_FL_KEEP_SIZE as i32, 0, 20000)
            .unwrap();
        let st = p.fstat(fd).unwrap();
        assert_eq!((st.st_size, st.st_blocks), (8192, 5 * 8));
        // Data, then punch a hole through part of it.
        p.pwrite(fd, &[b'x'; 8192], 0).unwrap();
        let punch = (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) as i32;
        p.fallocate(fd, punch, 100, 4196).unwrap(); // [100, 4296)
        let mut b = vec![0u8; 8192];
        assert_eq!(p.pread(fd, &mut b, 0), Ok(8192));
        assert!(b[..100].iter().all(|&c| c == b'x'));
        assert!(b[100..4296].iter().all(|&c| c == 0));
        assert!(b[4296..].iter().all(|&c| c == b'x'));
        assert_eq!(p.fstat(fd).unwrap().st_size, 8192);
        // A whole-page punch frees the page.
        let before = p.fstat(fd).unwrap().st_blocks;
        p.fallocate(fd, punch, 8192, 8192).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_blocks, before - 16);
        // Host: errors: len 0 and negative offset EINVAL, PUNCH_HOLE
        // without KEEP_SIZE EOPNOTSUPP, past 2^63-1 EFBIG, read-only EBADF.
        assert_eq!(p.fallocate(fd, 0, 0, 0), Err(Errno::EINVAL));
        assert_eq!(p.fallocate(fd, 0, -1, 10), Err(Errno::EINVAL));
        assert_eq!(
            p.fallocate(fd, FALLOC_FL_PUNCH_HOLE as i32, 0, 10),
            Err(Errno::EOPNOTSUPP)
        );
        assert_eq!(p.fallocate(fd, 0, MAX - 10, 100), Err(Errno::EFBIG));
        p.close(fd).unwrap();
        let r = p.open("/f", O_RDONLY, 0).unwrap();
        assert_eq!(p.fallocate(r, 0, 0, 10), Err(Errno::EBADF));
        p.close(r).unwrap();
    });
}

#[test]
fn fsync_fdatasync() {
    each(|_, p| {
        put(p, "/f", b"x");
        // Host: fsync works on read-only fds and directories; O_PATH is EBADF.
        let r = p.open("/f", O_RDONLY, 0).unwrap();
        let d = p.open("/", O_RDONLY, 0).unwrap();
        let o = p.open("/f", O_PATH, 0).unwrap();
        assert_eq!(p.fsync(r), Ok(()));
        assert_eq!(p.fdatasync(r), Ok(()));
        assert_eq!(p.fsync(d), Ok(()));
        assert_eq!(p.fsync(o), Err(Errno::EBADF));
        assert_eq!(p.fdatasync(o), Err(Errno::EBADF));
        assert_eq!(p.fsync(1234), Err(Errno::EBADF));
    });
}

/// Host: fds a, b (O_APPEND) and c (plain): a writes "11", b "22", c "X"
/// at 0, a "33", then pwrite(a, "P", 0) appends: "X12233P", a's position
/// 6, b's 4.
#[test]
fn append_with_several_fds() {
    each(|_, p| {
        let a = p.open("/ap", O_CREAT | O_WRONLY | O_APPEND, 0o644).unwrap();
        let b = p.open("/ap", O_WRONLY | O_APPEND, 0).unwrap();
        let c = p.open("/ap", O_RDWR, 0).unwrap();
        p.write(a, b"11").unwrap();
        p.write(b, b"22").unwrap();
        p.write(c, b"X").unwrap();
        p.write(a, b"33").unwrap();
        assert_eq!(p.pwrite(a, b"P", 0), Ok(1));
        assert_eq!(get(p, "/ap"), b"X12233P");
        assert_eq!(p.lseek(a, 0, SEEK_CUR), Ok(6));
        assert_eq!(p.lseek(b, 0, SEEK_CUR), Ok(4));
        // A dup shares the position and the flag.
        let a2 = p.dup(a).unwrap();
        p.writev(a2, &[b"v", b"w"]).unwrap();
        assert_eq!(p.lseek(a, 0, SEEK_CUR), Ok(9));
        assert_eq!(get(p, "/ap"), b"X12233Pvw");
        // Another thread's handle on the same fds.
        let mut t = p.new_thread();
        t.write(b, b"T").unwrap();
        drop(t);
        assert_eq!(get(p, "/ap"), b"X12233PvwT");
    });
}

fn limited(fast: uvfs::FastPaths, opts: TmpfsOptions) -> (Arc<Vfs>, Arc<Tmpfs>) {
    let fs = Tmpfs::new(opts);
    let vfs = Vfs::builder().fastpaths(fast).build_with_root(fs.clone());
    (vfs, fs)
}

/// Host (mount -o nr_inodes=3): create a -> f_ffree 1; unlink while open
/// -> still 1, reads and writes work, nlink 0; close -> 2.
#[test]
fn unlinked_while_open_lives_until_last_close() {
    for fast in fasts() {
        let opts = TmpfsOptions {
            nr_inodes: Some(3),
            mode: 0o755,
            ..TmpfsOptions::default()
        };
        let (vfs, fs) = limited(fast, opts);
        let mut p = Process::new(&vfs).unwrap();
        let fd = p.open("/a", O_CREAT | O_RDWR, 0o644).unwrap();
        p.write(fd, b"hi").unwrap();
        assert_eq!(fs.statfs().ffree, 1);
        let fd2 = p.open("/a", O_RDONLY, 0).unwrap();
        p.unlink("/a").unwrap();
        assert_eq!(fs.statfs().ffree, 1, "still held by open files");
        assert_eq!(p.stat("/a").unwrap_err(), Errno::ENOENT);
        let mut b = [0u8; 8];
        assert_eq!(p.pread(fd, &mut b, 0), Ok(2));
        assert_eq!(p.pwrite(fd, b"more", 2), Ok(4));
        assert_eq!(p.fstat(fd).unwrap().st_nlink, 0);
        assert_eq!(p.fstat(fd).unwrap().st_size, 6);
        // Dropping the caches must not free it either.
        vfs.drop_caches();
        assert_eq!(p.pread(fd2, &mut b, 0), Ok(6));
        assert_eq!(&b[..6], b"himore");
        p.close(fd).unwrap();
        assert_eq!(fs.statfs().ffree, 1, "fd2 still open");
        assert_eq!(p.read(fd2, &mut b), Ok(6));
        // A dup and a fork child keep it too.
        let fd3 = p.dup(fd2).unwrap();
        let mut child = p.fork().unwrap();
        p.close(fd2).unwrap();
        p.close(fd3).unwrap();
        assert_eq!(fs.statfs().ffree, 1, "the fork child holds it");
        assert_eq!(child.pread(fd2, &mut b, 0), Ok(6));
        drop(child);
        assert_eq!(fs.statfs().ffree, 2, "freed at the last close");
        // The space it used is free again: two more inodes fit.
        let x = p.open("/x", O_CREAT | O_RDWR, 0o644).unwrap();
        let y = p.open("/y", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(p.open("/z", O_CREAT | O_RDWR, 0o644), Err(Errno::ENOSPC));
        p.close(x).unwrap();
        p.close(y).unwrap();
    }
}

#[test]
fn unlinked_while_open_frees_pages() {
    for fast in fasts() {
        let opts = TmpfsOptions {
            size_bytes: Some(16384),
            mode: 0o755,
            ..TmpfsOptions::default()
        };
        let (vfs, fs) = limited(fast, opts);
        let mut p = Process::new(&vfs).unwrap();
        let fd = p.open("/a", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(p.write(fd, &[1u8; 16384]), Ok(16384));
        assert_eq!(fs.statfs().bfree, 0);
        p.unlink("/a").unwrap();
        assert_eq!(fs.statfs().bfree, 0);
        let g = p.open("/b", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(p.write(g, b"x"), Err(Errno::ENOSPC));
        p.close(fd).unwrap();
        assert_eq!(fs.statfs().bfree, 4);
        assert_eq!(p.write(g, b"x"), Ok(1));
        p.close(g).unwrap();
    }
}

/// Host (mount -o size=8k,nr_inodes=4): write of 12 KiB -> 8192, the next
/// write ENOSPC; pwrite into an allocated page works; a pwrite crossing
/// into a new page writes up to the page end (2 of 10 bytes); after
/// ftruncate(0), writes of 5000 then 5000 -> 5000 and 3192; creating b and
/// c works (root + a + b + c = 4 inodes), then create, mkdir and symlink are
/// ENOSPC, and so is a hard link (it takes an inode count).
#[test]
fn enospc_size_and_inodes() {
    for fast in fasts() {
        let vfs = Vfs::builder()
            .fastpaths(fast)
            .root_options(TmpfsOptions {
                size_bytes: Some(8192),
                nr_inodes: Some(4),
                mode: 0o755,
                ..TmpfsOptions::default()
            })
            .build();
        let mut p = Process::new(&vfs).unwrap();
        let fd = p.open("/a", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(p.write(fd, &vec![b'x'; 12288]), Ok(8192));
        assert_eq!(p.write(fd, b"y"), Err(Errno::ENOSPC));
        assert_eq!(p.fstat(fd).unwrap().st_size, 8192);
        assert_eq!(p.lseek(fd, 0, SEEK_CUR), Ok(8192));
        assert_eq!(p.pwrite(fd, &[b'z'; 10], 100), Ok(10));
        assert_eq!(p.pwrite(fd, &[b'z'; 10], 8190), Ok(2));
        assert_eq!(p.fstat(fd).unwrap().st_size, 8192);
        // writev: a partial count when space runs out mid-vector.
        p.ftruncate(fd, 0).unwrap();
        p.lseek(fd, 0, SEEK_SET).unwrap();
        assert_eq!(p.writev(fd, &[&[1u8; 6000], &[2u8; 6000]]), Ok(8192));
        p.ftruncate(fd, 0).unwrap();
        p.lseek(fd, 0, SEEK_SET).unwrap();
        assert_eq!(p.write(fd, &[b'q'; 5000]), Ok(5000));
        assert_eq!(p.write(fd, &[b'q'; 5000]), Ok(3192));
        // Inodes.
        let b = p.open("/b", O_CREAT | O_RDWR, 0o644).unwrap();
        let c = p.open("/c", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(p.open("/d", O_CREAT | O_RDWR, 0o644), Err(Errno::ENOSPC));
        assert_eq!(p.mkdir("/e", 0o755), Err(Errno::ENOSPC));
        assert_eq!(p.symlink("x", "/e"), Err(Errno::ENOSPC));
        assert_eq!(p.link("/a", "/a2"), Err(Errno::ENOSPC));
        assert_eq!(p.open("/", O_TMPFILE | O_RDWR, 0o600), Err(Errno::ENOSPC));
        // Nothing half-made is left behind.
        assert_eq!(names(&mut p, "/"), ["a", "b", "c"]);
        assert_eq!(p.stat("/d").unwrap_err(), Errno::ENOENT);
        // Freeing one makes room for one.
        p.close(c).unwrap();
        p.unlink("/c").unwrap();
        p.mkdir("/e", 0o755).unwrap();
        assert_eq!(p.stat("/e").unwrap().st_mode, 0o040755);
        p.close(b).unwrap();
        p.close(fd).unwrap();
    }
}

#[test]
fn enospc_fallocate() {
    for fast in fasts() {
        let vfs = Vfs::builder()
            .fastpaths(fast)
            .root_options(TmpfsOptions {
                size_bytes: Some(8192),
                mode: 0o755,
                ..TmpfsOptions::default()
            })
            .build();
        let mut p = Process::new(&vfs).unwrap();
        let fd = p.open("/a", O_CREAT | O_RDWR, 0o644).unwrap();
        assert_eq!(p.fallocate(fd, 0, 0, 3 * 4096), Err(Errno::ENOSPC));
        assert_eq!(p.fstat(fd).unwrap().st_size, 0);
        p.fallocate(fd, 0, 0, 8192).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_size, 8192);
        // Allocated space is usable: writes into it do not fail.
        assert_eq!(p.pwrite(fd, &[7u8; 8192], 0), Ok(8192));
        p.close(fd).unwrap();
    }
}

/// fallocate drops set-ID bits as a write does (shmem_fallocate's
/// `file_modified`), for a caller without CAP_FSETID, and only when it
/// succeeds. Host (6.18 tmpfs, as uid 65534 on its own 07755 file):
/// allocate, KEEP_SIZE and PUNCH_HOLE -> 01755; EOPNOTSUPP, EINVAL and
/// ENOSPC leave 07755; root keeps 07755. The user pass of
/// path_differential found it.
#[test]
fn fallocate_drops_set_id_bits_like_a_write() {
    for (mode, off, len) in [(0, 4096, 4096), (1, 4096, 4096), (3, 4096, 4096)] {
        let vfs = uvfs::Vfs::new(uvfs::FastPaths::seeds());
        let mut p = uvfs::Process::new(&vfs).unwrap();
        let fd = p.open("/f", O_RDWR | O_CREAT, 0o644).unwrap();
        p.fchown(fd, 1000, 1000).unwrap();
        p.set_cred(uvfs::cred::Cred::user(1000, 1000, vec![]));
        p.write(fd, &[1u8; 8192]).unwrap();
        p.fchmod(fd, 0o7755).unwrap();
        assert_eq!(
            p.fallocate(fd, 0x40, 0, 1).unwrap_err(),
            uvfs::Errno::EOPNOTSUPP
        );
        assert_eq!(
            p.fallocate(fd, mode, 0, 0).unwrap_err(),
            uvfs::Errno::EINVAL
        );
        assert_eq!(p.fstat(fd).unwrap().st_mode & 0o7777, 0o7755);
        p.fallocate(fd, mode, off, len).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_mode & 0o7777, 0o1755, "mode {mode}");
        // Root (CAP_FSETID) keeps them.
        p.set_cred(uvfs::cred::Cred::root());
        p.fchmod(fd, 0o7755).unwrap();
        p.fallocate(fd, mode, off, len).unwrap();
        assert_eq!(p.fstat(fd).unwrap().st_mode & 0o7777, 0o7755);
    }
}
