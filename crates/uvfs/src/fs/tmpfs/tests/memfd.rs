//! Files whose data moved to a kernel memfd (their first `mmap_file`):
//! every data operation gives what it gives on the page map (itself
//! checked against the host in `data.rs`), including the space limit and
//! the blocks; promotion keeps data, holes and preallocation; a mapping's
//! writes are the file's data; eviction gives the pages back.

use super::*;
use crate::fs::Seek;
use std::os::fd::AsRawFd;

#[derive(Clone, Copy, Debug)]
enum Op {
    Write(u64, usize, u8),
    Falloc(u32, u64, u64),
    Trunc(u64),
}

/// What a file looks like: size, blocks, its bytes up to `upto`, and
/// `SEEK_DATA`/`SEEK_HOLE` from a few offsets.
fn look(fs: &Tmpfs, f: Ino, upto: usize) -> String {
    let a = fs.getattr(f).unwrap();
    let mut buf = vec![0xeeu8; upto];
    let n = fs.read(f, 0, &mut buf).unwrap();
    buf.truncate(n);
    let mut s = format!("size {} blocks {} read {n} sum {}", a.size, a.blocks, {
        buf.iter()
            .enumerate()
            .map(|(i, &b)| (i as u64 + 1) * u64::from(b))
            .sum::<u64>()
    });
    for off in [
        0,
        1,
        4095,
        4096,
        8192,
        20000,
        40000,
        65535,
        1 << 20,
        i64::MAX as u64,
    ] {
        s += &format!(
            " [{off} {:?} {:?}]",
            fs.seek_data_hole(f, off, Seek::Data),
            fs.seek_data_hole(f, off, Seek::Hole)
        );
    }
    let st = fs.statfs();
    s + &format!(" bfree {}", st.bfree)
}

fn apply(fs: &Tmpfs, f: Ino, op: Op) -> String {
    let before = age(fs, f);
    let r = match op {
        Op::Write(off, len, b) => format!("{:?}", fs.write(f, off, &vec![b; len])),
        Op::Falloc(mode, off, len) => format!("{:?}", fs.fallocate(f, mode, off, len)),
        Op::Trunc(size) => format!(
            "{:?}",
            fs.setattr(
                f,
                &SetAttr {
                    size: Some(size),
                    ..SetAttr::default()
                },
            )
            .map(|a| a.size)
        ),
    };
    let a = fs.getattr(f).unwrap();
    format!("{r} stamped {} {}", a.mtime != old(), a.ctime != before)
}

const KEEP: u32 = FALLOC_FL_KEEP_SIZE;
const PUNCH: u32 = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;

/// The operations, on a page-map file and on a file promoted at step
/// `promote_at` (0: before the first), in two file systems alike.
fn same_as_page_map(limit: Option<u64>, promote_at: usize, ops: &[Op]) {
    let mk = || match limit {
        Some(l) => limited(l, 100),
        None => fs(),
    };
    let (pa, pb) = (mk(), mk());
    let (a, b) = (file(&pa, R, "f"), file(&pb, R, "f"));
    for (i, &op) in ops.iter().enumerate() {
        if i == promote_at {
            let before = look(&pb, b, 1 << 17);
            drop(pb.mmap_file(b, crate::uapi::O_RDWR).unwrap());
            assert_eq!(look(&pb, b, 1 << 17), before, "promotion changed the file");
        }
        assert_eq!(apply(&pb, b, op), apply(&pa, a, op), "step {i}: {op:?}");
        assert_eq!(
            look(&pb, b, 1 << 17),
            look(&pa, a, 1 << 17),
            "after step {i}: {op:?}"
        );
        ok(&pa);
        ok(&pb);
    }
}

const OPS: &[Op] = &[
    Op::Write(0, 11, b'h'),
    Op::Write(0, 0, b'z'),
    Op::Write(40000, 1, b'b'),
    Op::Falloc(KEEP, 16384, 8192),
    Op::Falloc(KEEP, 20480, 4096),
    Op::Falloc(KEEP, 45056, 8192),
    Op::Write(5000, 3000, b'w'),
    Op::Falloc(PUNCH, 100, 9000),
    Op::Falloc(PUNCH, 16384, 4096),
    Op::Falloc(0, 60000, 100),
    Op::Falloc(FALLOC_FL_PUNCH_HOLE, 0, 1),
    Op::Falloc(KEEP, 0, 0),
    Op::Falloc(0, i64::MAX as u64, 2),
    Op::Trunc(30000),
    Op::Trunc(30000),
    Op::Trunc(100_000),
    Op::Write(MAX_FILE_SIZE - 2, 5, b'm'),
    Op::Write(MAX_FILE_SIZE, 1, b'm'),
    Op::Trunc(3),
    Op::Write(70000, 20000, b'x'),
    Op::Trunc(0),
    Op::Trunc(0),
];

#[test]
fn promoted_file_behaves_as_the_page_map() {
    for at in [0, 3, 7, 14] {
        same_as_page_map(None, at, OPS);
    }
}

/// With a 16-page limit: short writes, `ENOSPC`, an `fallocate` that does
/// not fit leaving nothing allocated, the counter after truncation.
#[test]
fn promoted_file_under_the_space_limit() {
    let ops = &[
        Op::Write(0, 4096 * 10, b'a'),
        Op::Write(4096 * 12, 4096 * 10 + 5, b'b'),
        Op::Write(4096 * 30, 1, b'c'),
        Op::Write(100, 200, b'd'),
        Op::Falloc(PUNCH, 0, 4096 * 4),
        Op::Falloc(KEEP, 4096 * 40, 4096 * 6),
        Op::Falloc(0, 4096 * 40, 4096 * 4),
        Op::Falloc(KEEP, 0, 4096 * 17),
        Op::Falloc(0, 0, 4096 * 16),
        Op::Trunc(4096 * 2 + 1),
        Op::Write(4096 * 20, 4096 * 20, b'e'),
        Op::Falloc(KEEP, 0, 4096 * 3),
        Op::Trunc(0),
        Op::Falloc(0, 0, 4096 * 16),
        Op::Write(4096 * 15 + 4000, 200, b'f'),
    ];
    for at in [0, 2, 5, 10] {
        same_as_page_map(Some(16 * 4096), at, ops);
    }
}

/// A shared mapping's writes are the file's data and count as its blocks
/// (charged at the next operation, past the limit if need be); the file's
/// writes are in the mapping; eviction gives every page back.
#[test]
fn mapping_is_the_file() {
    let fs = limited(4 * 4096, 100);
    let f = file(&fs, R, "f");
    assert_eq!(fs.write(f, 0, b"hello"), Ok(5));
    fs.setattr(
        f,
        &SetAttr {
            size: Some(6 * 4096),
            ..SetAttr::default()
        },
    )
    .unwrap();
    let kfd = fs.mmap_file(f, crate::uapi::O_RDWR).unwrap();
    let len = 6 * 4096;
    // SAFETY: a fresh shared mapping of a kernel fd this test owns.
    let m = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            kfd.as_raw_fd(),
            0,
        )
    };
    assert_ne!(m, libc::MAP_FAILED);
    drop(kfd);
    // SAFETY: `m` maps `len` bytes of the file, which is `len` long.
    let s = unsafe { std::slice::from_raw_parts_mut(m.cast::<u8>(), len) };
    assert_eq!(&s[..5], b"hello");
    s[0] = b'H';
    for p in 1..6 {
        s[p * 4096] = p as u8;
    }
    let mut buf = [0u8; 5];
    assert_eq!(fs.read(f, 0, &mut buf), Ok(5));
    assert_eq!(&buf, b"Hello");
    assert_eq!(fs.write(f, 4096 * 5 + 1, b"w"), Ok(1));
    assert_eq!(s[4096 * 5 + 1], b'w');
    // Six pages through the mapping against a four-page limit: counted.
    assert_eq!(fs.getattr(f).unwrap().blocks, 48);
    assert_eq!(fs.statfs().bfree, 0);
    ok(&fs);
    // No room for a new page through uvfs now.
    assert_eq!(fs.write(f, 4096 * 6, b"x"), Err(Errno::ENOSPC));
    assert_eq!(fs.getattr(f).unwrap().size, 6 * 4096);
    // SAFETY: the mapping made above, unmapped once.
    assert_eq!(unsafe { libc::munmap(m, len) }, 0);
    fs.unlink(R, b"f").unwrap();
    fs.evict(f);
    assert_eq!(fs.statfs().bfree, 4);
    fs.fsck(true).unwrap();
}

/// Each access mode reopens the data with that mode; what cannot be
/// mapped is `ENODEV`.
#[test]
fn mmap_file_modes_and_types() {
    let fs = fs();
    let f = file(&fs, R, "f");
    fs.write(f, 0, b"data").unwrap();
    for (mode, want) in [
        (crate::uapi::O_RDONLY, libc::O_RDONLY),
        (crate::uapi::O_WRONLY, libc::O_WRONLY),
        (crate::uapi::O_RDWR, libc::O_RDWR),
    ] {
        let k = fs.mmap_file(f, mode).unwrap();
        // SAFETY: fcntl on a kernel fd this test owns.
        let fl = unsafe { libc::fcntl(k.as_raw_fd(), libc::F_GETFL) };
        // SAFETY: as above.
        let fd_fl = unsafe { libc::fcntl(k.as_raw_fd(), libc::F_GETFD) };
        assert_eq!((fl & libc::O_ACCMODE, fd_fl), (want, libc::FD_CLOEXEC));
    }
    let d = dir(&fs, R, "d");
    assert_eq!(
        fs.mmap_file(d, crate::uapi::O_RDONLY).err(),
        Some(Errno::ENODEV)
    );
    let l = fs.symlink(R, b"l", b"f", nf(0o777)).unwrap().ino;
    assert_eq!(
        fs.mmap_file(l, crate::uapi::O_RDONLY).err(),
        Some(Errno::ENODEV)
    );
    ok(&fs);
}
