//! File data: writes, reads, holes, truncation, size and space limits,
//! fallocate, SEEK_DATA/SEEK_HOLE, setattr.

use super::*;

// ---- data ----

#[test]
fn write_read_holes_truncate_host() {
    let fs = fs();
    let f = file(&fs, R, "f");
    // Host: one byte at 1 MiB -> size 1048577, blocks 8; truncate 10 -> 0.
    let mc = age(&fs, f);
    assert_eq!(fs.write(f, 1 << 20, b"x"), Ok(1));
    let a = fs.getattr(f).unwrap();
    assert_eq!((a.size, a.blocks), (1_048_577, 8));
    assert!(a.mtime > old() && a.ctime > mc && a.atime == old());
    let mut buf = [7u8; 8];
    assert_eq!(fs.read(f, (1 << 20) - 4, &mut buf), Ok(5));
    assert_eq!(buf[..5], [0, 0, 0, 0, b'x']);
    assert_eq!(fs.read(f, 1 << 20 | 1, &mut buf), Ok(0));
    assert_eq!(fs.read(f, u64::MAX, &mut buf), Ok(0));
    let a = fs
        .setattr(
            f,
            &SetAttr {
                size: Some(10),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((a.size, a.blocks), (10, 0));
    // Writes across pages, then truncation in mid-page zeroes the tail.
    let data: Vec<u8> = (0..10000u32).map(|i| i as u8).collect();
    assert_eq!(fs.write(f, 100, &data), Ok(10000));
    assert_eq!(fs.getattr(f).unwrap().blocks, 24);
    let mut back = vec![0u8; 10000];
    assert_eq!(fs.read(f, 100, &mut back), Ok(10000));
    assert_eq!(back, data);
    fs.setattr(
        f,
        &SetAttr {
            size: Some(5000),
            ..SetAttr::default()
        },
    )
    .unwrap();
    fs.setattr(
        f,
        &SetAttr {
            size: Some(9000),
            ..SetAttr::default()
        },
    )
    .unwrap();
    let mut back = vec![1u8; 4000];
    assert_eq!(fs.read(f, 5000, &mut back), Ok(4000));
    assert!(back.iter().all(|&b| b == 0));
    assert_eq!(fs.getattr(f).unwrap().blocks, 16);
    // Host: a zero-length write returns 0 and stamps nothing.
    let before = fs.getattr(f).unwrap();
    tick();
    assert_eq!(fs.write(f, u64::MAX, b""), Ok(0));
    assert_eq!(fs.getattr(f).unwrap(), before);
    let d = dir(&fs, R, "d");
    assert_eq!(fs.read(d, 0, &mut buf), Err(Errno::EISDIR));
    assert_eq!(fs.write(d, 0, b"x"), Err(Errno::EISDIR));
    ok(&fs);
}

#[test]
fn file_size_limits_host() {
    let fs = fs();
    let f = file(&fs, R, "f");
    // Host: pwrite at 2^63-4096 works; at/after MAX_LFS_FILESIZE the kernel
    // gives EFBIG (the VFS turns pos+len overflow into EINVAL first).
    assert_eq!(fs.write(f, MAX_FILE_SIZE - 4096, b"ab"), Ok(2));
    assert_eq!(fs.write(f, MAX_FILE_SIZE, b"a"), Err(Errno::EFBIG));
    assert_eq!(fs.write(f, u64::MAX, b"a"), Err(Errno::EFBIG));
    assert_eq!(fs.write(f, MAX_FILE_SIZE - 1, b"abcde"), Ok(1)); // clipped
    assert_eq!(fs.getattr(f).unwrap().size, MAX_FILE_SIZE);
    // Host: ftruncate to 2^63-1 works with 0 new blocks; beyond: EFBIG.
    let g = file(&fs, R, "g");
    let a = fs
        .setattr(
            g,
            &SetAttr {
                size: Some(MAX_FILE_SIZE),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((a.size, a.blocks), (MAX_FILE_SIZE, 0));
    assert_eq!(
        fs.setattr(
            g,
            &SetAttr {
                size: Some(MAX_FILE_SIZE + 1),
                ..SetAttr::default()
            }
        ),
        Err(Errno::EFBIG)
    );
    let d = dir(&fs, R, "d");
    assert_eq!(
        fs.setattr(
            d,
            &SetAttr {
                size: Some(0),
                ..SetAttr::default()
            }
        ),
        Err(Errno::EISDIR)
    );
    // Host: fallocate(2^63-4096, 4096) EFBIG; (2^63-4096, 4095) and
    // (2^63-2, 1) fine, one page.
    let h = file(&fs, R, "h");
    assert_eq!(
        fs.fallocate(h, 0, MAX_FILE_SIZE - 4095, 4096),
        Err(Errno::EFBIG)
    );
    assert_eq!(fs.fallocate(h, 0, u64::MAX, u64::MAX), Err(Errno::EFBIG));
    assert_eq!(fs.fallocate(h, 0, MAX_FILE_SIZE - 4095, 4095), Ok(()));
    let a = fs.getattr(h).unwrap();
    assert_eq!((a.size, a.blocks), (MAX_FILE_SIZE, 8));
    // Huge allocations on an unlimited mount: refused, not attempted.
    assert_eq!(fs.fallocate(h, 0, 0, 1 << 62), Err(Errno::ENOMEM));
    assert_eq!(fs.getattr(h).unwrap().blocks, 8);
    ok(&fs);
}

#[test]
fn enospc_partial_write_and_evict_host() {
    // Host (size=64k): write of 100000 bytes -> 65536; another page ->
    // ENOSPC; rewriting an allocated page works; space comes back when the
    // last open reference of an unlinked file goes.
    let fs = limited(64 * 1024, 0);
    let f = file(&fs, R, "f");
    assert_eq!(fs.write(f, 0, &vec![b'x'; 100_000]), Ok(65536));
    assert_eq!(
        (fs.getattr(f).unwrap().size, fs.getattr(f).unwrap().blocks),
        (65536, 128)
    );
    assert_eq!(fs.statfs().bfree, 0);
    let mc = age(&fs, f);
    assert_eq!(fs.write(f, 200_000, b"y"), Err(Errno::ENOSPC));
    let a = fs.getattr(f).unwrap();
    assert!(a.size == 65536 && a.mtime > old() && a.ctime > mc); // Host: ENOSPC still stamps.
    assert_eq!(fs.write(f, 5, &[b'z'; 10]), Ok(10));
    // A write straddling allocated and new pages stops at the first new one.
    fs.setattr(
        f,
        &SetAttr {
            size: Some(8192),
            ..SetAttr::default()
        },
    )
    .unwrap();
    assert_eq!(fs.statfs().bfree, 14);
    let g = file(&fs, R, "g");
    assert_eq!(fs.write(g, 0, &vec![1; 14 * 4096 + 100]), Ok(14 * 4096));
    assert_eq!(fs.write(f, 4000, &[2; 8000]), Ok(4192));
    fs.unlink(R, b"g").unwrap();
    assert_eq!(fs.statfs().bfree, 0); // still held: not evicted
    assert_eq!(fs.read(g, 0, &mut [0; 3]), Ok(3)); // unlinked, still readable
    assert_eq!(fs.write(g, 0, b"abc"), Ok(3)); // and writable
    fs.evict(g);
    assert_eq!(fs.statfs().bfree, 14);
    fs.fsck(true).unwrap();
}

/// A file of `n` bytes of a pattern that differs per page and per byte.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31) ^ ((i / 4096) as u8) ^ seed)
        .collect()
}

fn read_all(fs: &Tmpfs, f: Ino, off: u64, n: usize) -> Vec<u8> {
    let mut back = vec![0xa5u8; n];
    assert_eq!(fs.read(f, off, &mut back), Ok(n));
    back
}

#[test]
fn bulk_writes_whole_and_partial_pages() {
    // Whole pages over a hole (taken without zeroing), partial pages at
    // both ends, over an fallocated page, and into a large file (whose
    // pages come from the pool, reused slots holding older bytes).
    let fs = fs();
    let f = file(&fs, R, "f");
    let data = pattern(3 << 20, 1);
    // 3 MiB at an odd offset: a partial first and last page.
    assert_eq!(fs.write(f, 1000, &data), Ok(3 << 20));
    let a = fs.getattr(f).unwrap();
    assert_eq!((a.size, a.blocks), (1000 + (3 << 20), 769 * 8));
    assert_eq!(read_all(&fs, f, 0, 1000), vec![0; 1000]);
    assert_eq!(read_all(&fs, f, 1000, 3 << 20), data);
    // The file's pages go back (to the pool); a second large file reuses
    // them: bytes a partial write does not cover read as zeros.
    let g = file(&fs, R, "g");
    let big = pattern(1 << 20, 2);
    assert_eq!(fs.write(g, 0, &big), Ok(1 << 20));
    fs.setattr(
        f,
        &SetAttr {
            size: Some(0),
            ..SetAttr::default()
        },
    )
    .unwrap();
    // Pages past the end: a hole, then 10 bytes mid-page, then a page
    // fallocated and written whole, then one fallocated and written in part.
    assert_eq!(fs.write(g, (2 << 20) + 100, b"0123456789"), Ok(10));
    fs.fallocate(g, 0, 3 << 20, 8192).unwrap();
    let page = pattern(4096, 3);
    assert_eq!(fs.write(g, 3 << 20, &page), Ok(4096));
    assert_eq!(fs.write(g, (3 << 20) + 4096 + 5, b"abc"), Ok(3));
    assert_eq!(read_all(&fs, g, 0, 1 << 20), big);
    assert_eq!(read_all(&fs, g, 1 << 20, 1 << 20), vec![0; 1 << 20]);
    let mut want = vec![0u8; 4096];
    want[100..110].copy_from_slice(b"0123456789");
    assert_eq!(read_all(&fs, g, 2 << 20, 4096), want);
    assert_eq!(read_all(&fs, g, 3 << 20, 4096), page);
    let mut want = vec![0u8; 4096];
    want[5..8].copy_from_slice(b"abc");
    assert_eq!(read_all(&fs, g, (3 << 20) + 4096, 4096), want);
    // 256 data pages + the 10-byte page + the two fallocated ones.
    assert_eq!(fs.getattr(g).unwrap().blocks, 259 * 8);
    assert_eq!(
        fs.seek_data_hole(g, 2 << 20, Seek::Hole),
        Ok((2 << 20) + 4096)
    );
    // Overwriting part of a pool page keeps the rest.
    assert_eq!(fs.write(g, 4096 + 7, b"zz"), Ok(2));
    let mut want = big[4096..8192].to_vec();
    want[7..9].copy_from_slice(b"zz");
    assert_eq!(read_all(&fs, g, 4096, 4096), want);
    // Punching and truncating give the pool pages back whole.
    fs.fallocate(g, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1 << 19)
        .unwrap();
    assert_eq!(read_all(&fs, g, 0, 1 << 19), vec![0; 1 << 19]);
    assert_eq!(read_all(&fs, g, 1 << 19, 1 << 19), big[1 << 19..]);
    ok(&fs);
    // A mapping moves the pool pages' bytes into a memfd.
    let before = read_all(&fs, g, 0, (3 << 20) + 8192);
    drop(fs.mmap_file(g, crate::uapi::O_RDWR).unwrap());
    // Lockless readers find the page index gone and ask the lock.
    assert!(fs.get(g).unwrap().file_index().is_gone());
    assert_eq!(read_all(&fs, g, 0, (3 << 20) + 8192), before);
    assert_eq!(fs.getattr(g).unwrap().blocks, (259 - 128) * 8);
    fs.unlink(R, b"g").unwrap();
    fs.evict(g);
    fs.unlink(R, b"f").unwrap();
    fs.evict(f);
    assert_eq!(fs.statfs().bfree, fs.statfs().blocks);
    ok(&fs);
}

#[test]
fn bulk_write_straddling_the_space_limit_host() {
    // A write that needs more pages than fit writes the pages that fit,
    // in order, and stops at the first page it cannot allocate, even with
    // allocated pages after it; a write that can allocate none is ENOSPC
    // and changes no data. (Limit: 2 MiB + 3 pages, 515.) Host: a tmpfs
    // mounted with size=2109440, the same calls: every count and the bytes
    // as here.
    let fs = limited((2 << 20) + 3 * 4096, 0);
    let f = file(&fs, R, "f");
    let data = pattern(3 << 20, 4);
    assert_eq!(fs.write(f, 0, &data), Ok((2 << 20) + 3 * 4096));
    assert_eq!(fs.statfs().bfree, 0);
    assert_eq!(fs.write(f, 5 << 20, b"x"), Err(Errno::ENOSPC));
    assert_eq!(fs.getattr(f).unwrap().size, (2 << 20) + 3 * 4096);
    // Pages 2 and 4 punched: a write over pages 1..6 re-allocates both.
    let punch = |fs: &Tmpfs, page: u64| {
        fs.fallocate(
            f,
            FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
            page * 4096,
            4096,
        )
        .unwrap()
    };
    punch(&fs, 2);
    punch(&fs, 4);
    let over = pattern(5 * 4096, 5);
    assert_eq!(fs.write(f, 4096 + 10, &over), Ok(5 * 4096));
    assert_eq!(read_all(&fs, f, 4096 + 10, 5 * 4096), over);
    // Punched again, and one of the two free pages taken by another file.
    punch(&fs, 2);
    punch(&fs, 4);
    let g = file(&fs, R, "g");
    assert_eq!(fs.write(g, 0, b"g"), Ok(1));
    let mut before = vec![0u8; 6 * 4096];
    assert_eq!(fs.read(f, 0, &mut before), Ok(6 * 4096));
    // One page free, pages 2 and 4 missing: page 2 is written, the write
    // stops at page 4 (page 3, held, written before it).
    let more = pattern(4 * 4096, 6);
    assert_eq!(fs.write(f, 4096 + 10, &more), Ok(3 * 4096 - 10));
    assert_eq!(fs.statfs().bfree, 0);
    let mut want = before.clone();
    want[4096 + 10..4 * 4096].copy_from_slice(&more[..3 * 4096 - 10]);
    assert_eq!(read_all(&fs, f, 0, 6 * 4096), want);
    // Nothing free: a write whose first page is held writes up to the
    // missing page; one that starts on it is ENOSPC and writes nothing.
    assert_eq!(fs.write(f, 4 * 4096 - 4, &more), Ok(4));
    assert_eq!(fs.write(f, 4 * 4096, &more), Err(Errno::ENOSPC));
    want[4 * 4096 - 4..4 * 4096].copy_from_slice(&more[..4]);
    assert_eq!(read_all(&fs, f, 0, 6 * 4096), want);
    ok(&fs);
}

#[test]
fn inode_limit_host() {
    // Host (nr_inodes=5): root 1; a file 1; each extra hard link 1 more;
    // mkdir/symlink ENOSPC when out; unlink of an extra link gives one back.
    let fs = limited(64 * 1024, 5);
    let a = file(&fs, R, "a");
    assert_eq!(fs.statfs().ffree, 3);
    fs.link(a, R, b"a2").unwrap();
    fs.link(a, R, b"a3").unwrap();
    assert_eq!(fs.statfs().ffree, 1);
    fs.link(a, R, b"a4").unwrap();
    assert_eq!(fs.statfs().ffree, 0);
    assert_eq!(fs.link(a, R, b"a5"), Err(Errno::ENOSPC));
    assert_eq!(fs.mkdir(R, b"d", nf(0o755)), Err(Errno::ENOSPC));
    assert_eq!(fs.create(R, b"c", nf(0o644)), Err(Errno::ENOSPC));
    assert_eq!(fs.symlink(R, b"s", b"x", nf(0o777)), Err(Errno::ENOSPC));
    assert_eq!(fs.tmpfile(R, nf(0o600)), Err(Errno::ENOSPC));
    assert_eq!(fs.getattr(R).unwrap().size, 40 + 4 * 20); // nothing added
    fs.unlink(R, b"a3").unwrap();
    assert_eq!(fs.statfs().ffree, 1);
    dir(&fs, R, "d");
    assert_eq!(fs.statfs().ffree, 0);
    for n in ["a", "a2", "a4"] {
        fs.unlink(R, n.as_bytes()).unwrap();
    }
    assert_eq!(fs.statfs().ffree, 2); // one still held by the unlinked inode
    fs.evict(a);
    assert_eq!(fs.statfs().ffree, 3);
    // Rename over a multiply-linked target gives its extra count back.
    let x = file(&fs, R, "x");
    fs.link(x, R, b"x2").unwrap();
    file(&fs, R, "y");
    assert_eq!(fs.statfs().ffree, 0);
    fs.rename(R, b"y", R, b"x", 0).unwrap();
    assert_eq!(fs.statfs().ffree, 1);
    fs.fsck(false).unwrap();
}

#[test]
fn fallocate_modes_host() {
    let fs = limited(64 * 1024, 0);
    let f = file(&fs, R, "f");
    let mc = age(&fs, f);
    fs.fallocate(f, 0, 0, 8192).unwrap();
    let a = fs.getattr(f).unwrap();
    assert_eq!((a.size, a.blocks), (8192, 16));
    assert!(a.mtime > old() && a.ctime > mc); // Host: fallocate stamps.
    // Host: KEEP_SIZE to 20000 on an 8192-byte file -> 40 blocks.
    fs.fallocate(f, FALLOC_FL_KEEP_SIZE, 0, 20000).unwrap();
    let a = fs.getattr(f).unwrap();
    assert_eq!((a.size, a.blocks), (8192, 40));
    // Host: punching the first page -> 32 blocks.
    fs.fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096)
        .unwrap();
    assert_eq!(fs.getattr(f).unwrap().blocks, 32);
    // Host: EOPNOTSUPP for punch without keep, zero range; EINVAL len 0.
    assert_eq!(
        fs.fallocate(f, FALLOC_FL_PUNCH_HOLE, 0, 4096),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(fs.fallocate(f, 0x10, 0, 4096), Err(Errno::EOPNOTSUPP));
    assert_eq!(fs.fallocate(f, 0x1000, 0, 4096), Err(Errno::EOPNOTSUPP));
    assert_eq!(fs.fallocate(f, 0, 0, 0), Err(Errno::EINVAL));
    let d = dir(&fs, R, "d");
    assert_eq!(fs.fallocate(d, 0, 0, 1), Err(Errno::EISDIR));
    // Shrinking (even to the same size) drops the KEEP_SIZE pages beyond.
    fs.setattr(
        f,
        &SetAttr {
            size: Some(8192),
            ..SetAttr::default()
        },
    )
    .unwrap();
    assert_eq!(fs.getattr(f).unwrap().blocks, 8);
    // Host: an fallocate that does not fit changes nothing (ENOSPC).
    let before = (fs.getattr(f).unwrap(), fs.statfs());
    assert_eq!(fs.fallocate(f, 0, 0, 4096 * 20), Err(Errno::ENOSPC));
    assert_eq!(fs.fallocate(f, 0, 4096 * 30, 4096 * 16), Err(Errno::ENOSPC));
    assert_eq!((fs.getattr(f).unwrap(), fs.statfs()), before);
    fs.fallocate(f, 0, 4096 * 30, 4096 * 15).unwrap();
    assert_eq!(fs.statfs().bfree, 0);
    // Punching partial pages zeroes them and keeps them.
    let g = fs.tmpfile(R, nf(0o600)).unwrap().ino;
    fs.fallocate(
        f,
        FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
        4096 * 30,
        4096 * 15,
    )
    .unwrap();
    fs.write(g, 0, &[9; 8192]).unwrap();
    fs.fallocate(g, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 200)
        .unwrap();
    fs.fallocate(g, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4000, 200)
        .unwrap();
    let mut b = vec![0u8; 8192];
    fs.read(g, 0, &mut b).unwrap();
    for (i, &x) in b.iter().enumerate() {
        let zero = (100..300).contains(&i) || (4000..4200).contains(&i);
        assert_eq!(x, if zero { 0 } else { 9 }, "byte {i}");
    }
    assert_eq!(fs.getattr(g).unwrap().blocks, 16);
    fs.evict(g);
    fs.fsck(true).unwrap();
}

#[test]
fn seek_data_hole_host() {
    let fs = fs();
    let f = file(&fs, R, "f");
    // Host: fallocated, unwritten pages are holes for SEEK_DATA.
    fs.fallocate(f, 0, 0, 16384).unwrap();
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Data), Err(Errno::ENXIO));
    assert_eq!(fs.seek_data_hole(f, 5000, Seek::Data), Err(Errno::ENXIO));
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Hole), Ok(0));
    assert_eq!(fs.seek_data_hole(f, 5000, Seek::Hole), Ok(5000));
    fs.write(f, 5000, b"x").unwrap();
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Data), Ok(4096));
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Hole), Ok(0));
    assert_eq!(fs.seek_data_hole(f, 5000, Seek::Hole), Ok(8192));
    // Host: write 1 byte at 10000, extend to 20000.
    fs.setattr(
        f,
        &SetAttr {
            size: Some(0),
            ..SetAttr::default()
        },
    )
    .unwrap();
    fs.write(f, 10000, b"x").unwrap();
    fs.setattr(
        f,
        &SetAttr {
            size: Some(20000),
            ..SetAttr::default()
        },
    )
    .unwrap();
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Data), Ok(8192));
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Hole), Ok(0));
    assert_eq!(fs.seek_data_hole(f, 9000, Seek::Hole), Ok(12288));
    assert_eq!(fs.seek_data_hole(f, 12288, Seek::Hole), Ok(12288));
    assert_eq!(fs.seek_data_hole(f, 9000, Seek::Data), Ok(9000));
    assert_eq!(fs.seek_data_hole(f, 13000, Seek::Data), Err(Errno::ENXIO));
    for off in [20000, 30000, u64::MAX] {
        assert_eq!(fs.seek_data_hole(f, off, Seek::Data), Err(Errno::ENXIO));
        assert_eq!(fs.seek_data_hole(f, off, Seek::Hole), Err(Errno::ENXIO));
    }
    // Host: 10-byte file: SEEK_HOLE from 0 is the size; SEEK_DATA 5 is 5.
    fs.setattr(
        f,
        &SetAttr {
            size: Some(0),
            ..SetAttr::default()
        },
    )
    .unwrap();
    fs.write(f, 0, &[1; 10]).unwrap();
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Hole), Ok(10));
    assert_eq!(fs.seek_data_hole(f, 5, Seek::Data), Ok(5));
    assert_eq!(fs.seek_data_hole(R, 0, Seek::Data), Err(Errno::EINVAL));
}

#[test]
fn setattr_fields_and_times() {
    let fs = fs();
    let f = file(&fs, R, "f");
    let c0 = fs.getattr(f).unwrap().ctime;
    tick();
    // Host: chmod stamps ctime only; utimes sets a and m, stamps c.
    let a = fs
        .setattr(
            f,
            &SetAttr {
                mode: Some(0o4755),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!(a.mode, S_IFREG | 0o4755);
    assert!(a.ctime > c0 && a.mtime < a.ctime);
    let t5 = Timespec { sec: 5, nsec: 0 };
    let t7 = Timespec { sec: 7, nsec: 0 };
    let a = fs
        .setattr(
            f,
            &SetAttr {
                atime: Some(SetTime::At(t5)),
                mtime: Some(SetTime::At(t7)),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((a.atime, a.mtime), (t5, t7));
    let a = fs
        .setattr(
            f,
            &SetAttr {
                uid: Some(1),
                gid: Some(2),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((a.uid, a.gid, a.mtime), (1, 2, t7));
    let a = fs
        .setattr(
            f,
            &SetAttr {
                atime: Some(SetTime::Now),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!(a.atime, a.ctime);
    // Host: truncate(2) of an empty file to the same size stamps nothing
    // (no ATTR_MTIME is passed; shmem_setattr stamps a size change, and
    // shmem_truncate_range only runs for a file holding pages) ...
    tick();
    let before = fs.getattr(f).unwrap();
    let a = fs
        .setattr(
            f,
            &SetAttr {
                size: Some(0),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((a.mtime, a.ctime), (before.mtime, before.ctime));
    // ... while ftruncate to the same size passes ATTR_MTIME | ATTR_CTIME
    // (the VFS asks for mtime): both stamped.
    tick();
    let a = fs
        .setattr(
            f,
            &SetAttr {
                size: Some(0),
                mtime: Some(SetTime::Now),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert!(a.mtime > t7 && a.mtime == a.ctime);
    // A size change stamps both without being asked.
    tick();
    let a = fs
        .setattr(
            f,
            &SetAttr {
                size: Some(10),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert!(a.mtime > before.mtime && a.mtime == a.ctime);
    // Nothing to change: nothing stamped.
    let before = fs.getattr(f).unwrap();
    tick();
    assert_eq!(fs.setattr(f, &SetAttr::default()).unwrap(), before);
}

/// A time the attribute cell's packed words cannot hold (seconds past
/// 2^33) moves all four times out of the cell, into the inode's
/// out-of-line set, and back once every time fits again; the other
/// attributes stay in the cell, and an extended attribute removed
/// meanwhile leaves the far times in place.
#[test]
fn far_times_leave_the_cell_and_come_back() {
    let fs = fs();
    let f = file(&fs, R, "f");
    let far = Timespec {
        sec: 1 << 40,
        nsec: 123,
    };
    let before = Timespec {
        sec: -(1 << 40),
        nsec: 9,
    };
    let t7 = Timespec { sec: 7, nsec: 0 };
    let times = |a: Option<SetTime>, m: Option<SetTime>| SetAttr {
        atime: a,
        mtime: m,
        ..SetAttr::default()
    };
    let i = fs.get(f).unwrap();
    assert!(i.snapshot().is_some());
    let a = fs
        .setattr(f, &times(Some(SetTime::At(before)), Some(SetTime::At(far))))
        .unwrap();
    assert_eq!((a.atime, a.mtime), (before, far));
    assert!(i.snapshot().is_none(), "a far time is not in the cell");
    fs.setxattr(f, b"user.k", Some(b"v"), 0).unwrap();
    fs.setxattr(f, b"user.k", None, 0).unwrap();
    let a = fs.getattr(f).unwrap();
    assert_eq!(
        (a.atime, a.mtime, a.uid, a.mode),
        (before, far, 1000, S_IFREG | 0o644)
    );
    fs.write(f, 0, b"abc").unwrap();
    let a = fs.getattr(f).unwrap();
    assert_eq!((a.atime, a.size), (before, 3));
    assert!(a.mtime != far && a.mtime == a.ctime);
    // Only the atime is far now; once it fits, the cell holds every
    // time again and the out-of-line set goes.
    let a = fs.setattr(f, &times(Some(SetTime::At(t7)), None)).unwrap();
    assert_eq!(a.atime, t7);
    let s = i.snapshot().expect("every time fits again");
    assert_eq!((s.times[0], s.times[1], s.size), (t7, a.mtime, 3));
    assert!(inode::rd(&i).xattrs.is_none());
    ok(&fs);
}

/// An empty regular file holds no box for its kind (the inode in the
/// 128-byte class): a create, a zero-length write, a truncation to 0 and
/// a read make none; a truncation to a size or a write makes one, and the
/// file reads and reports the same either way.
#[test]
fn empty_file_holds_no_kind_box() {
    let fs = fs();
    let f = file(&fs, R, "f");
    let i = fs.get(f).unwrap();
    let boxed = || inode::rd(&i).is_boxed();
    assert!(!boxed());
    assert_eq!(fs.write(f, 0, b""), Ok(0));
    let trunc = |size| SetAttr {
        size: Some(size),
        ..SetAttr::default()
    };
    let a = fs.setattr(f, &trunc(0)).unwrap();
    assert_eq!((a.size, a.blocks), (0, 0));
    let mut buf = [7u8; 4];
    assert_eq!(fs.read(f, 0, &mut buf), Ok(0));
    assert!(!boxed(), "nothing changed the contents");
    let a = fs.setattr(f, &trunc(10)).unwrap();
    assert_eq!((a.size, a.blocks), (10, 0));
    assert!(boxed());
    assert_eq!(fs.read(f, 0, &mut buf), Ok(4));
    assert_eq!(buf, [0; 4]);
    let g = file(&fs, R, "g");
    let j = fs.get(g).unwrap();
    assert_eq!(fs.write(g, 0, b"abc"), Ok(3));
    assert!(inode::rd(&j).is_boxed());
    assert_eq!(fs.getattr(g).unwrap().size, 3);
    drop((i, j));
    ok(&fs);
}
