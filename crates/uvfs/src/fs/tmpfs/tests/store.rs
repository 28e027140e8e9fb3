//! A tmpfs whose files' data lives in a directory's files
//! ([`FileStore::Dir`]): here a private, detached kernel tmpfs mounted with
//! `size=64k` (16 pages), which is then the one space limit. The figures
//! expected are the kernel tmpfs's own (host: a `mount -t tmpfs -o
//! size=64k` gives the same short write, `ENOSPC`, blocks and `statfs`).
//! Needs `CAP_SYS_ADMIN` for `fsopen`; without it the tests say so and
//! check nothing else.

use super::*;
use std::os::fd::{FromRawFd, OwnedFd};

/// A detached kernel tmpfs mounted with `size=`, as a directory fd; `None`
/// (said on stderr) where `fsopen` is refused.
fn detached_tmpfs(size: &str) -> Option<OwnedFd> {
    let raw = |r: libc::c_long| -> Option<OwnedFd> {
        // SAFETY: a new fd from the kernel, owned by nobody else.
        (r >= 0).then(|| unsafe { OwnedFd::from_raw_fd(r as i32) })
    };
    // SAFETY: a static C string; no other pointers.
    let fsfd = raw(unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), 1) });
    let Some(fsfd) = fsfd else {
        eprintln!(
            "skipped: fsopen(tmpfs): {} (needs CAP_SYS_ADMIN)",
            std::io::Error::last_os_error()
        );
        return None;
    };
    use std::os::fd::AsRawFd;
    let size = std::ffi::CString::new(size).unwrap();
    // SAFETY: NUL-terminated strings alive across the calls.
    unsafe {
        assert_eq!(
            libc::syscall(
                libc::SYS_fsconfig,
                fsfd.as_raw_fd(),
                1,
                c"size".as_ptr(),
                size.as_ptr(),
                0
            ),
            0
        );
        assert_eq!(
            libc::syscall(
                libc::SYS_fsconfig,
                fsfd.as_raw_fd(),
                6,
                std::ptr::null::<u8>(),
                std::ptr::null::<u8>(),
                0
            ),
            0
        );
    }
    // SAFETY: no pointers.
    raw(unsafe { libc::syscall(libc::SYS_fsmount, fsfd.as_raw_fd(), 1, 0) })
}

fn backed(size: &str) -> Option<Arc<Tmpfs>> {
    let dir = detached_tmpfs(size)?;
    Some(Tmpfs::with_store(TmpfsOptions::default(), FileStore::Dir(dir)).unwrap())
}

fn space(fs: &Tmpfs) -> (u64, u64) {
    let s = fs.statfs();
    (s.blocks, s.bfree)
}

#[test]
fn the_directorys_file_system_is_the_limit() {
    let Some(fs) = backed("64k") else { return };
    assert_eq!(space(&fs), (16, 16));
    let a = file(&fs, R, "a");
    // Short write at the limit, then ENOSPC; the file holds what fit.
    assert_eq!(fs.write(a, 0, &[7u8; 100_000]), Ok(65536));
    assert_eq!(fs.write(a, 65536, &[7u8; 10]), Err(Errno::ENOSPC));
    let at = fs.getattr(a).unwrap();
    assert_eq!((at.size, at.blocks), (65536, 128));
    assert_eq!(space(&fs), (16, 0));
    // uvfs's own pages (a long symlink target) meet the same limit.
    let long = vec![b'x'; 200];
    assert_eq!(
        fs.symlink(R, b"l", &long, nf(S_IFLNK | 0o777)).err(),
        Some(Errno::ENOSPC)
    );
    // Freeing pages makes room for both kinds.
    fs.setattr(
        a,
        &SetAttr {
            size: Some(4096),
            ..SetAttr::default()
        },
    )
    .unwrap();
    assert_eq!(space(&fs), (16, 15));
    let l = fs.symlink(R, b"l", &long, nf(S_IFLNK | 0o777)).unwrap().ino;
    assert_eq!(space(&fs), (16, 14));
    let b = file(&fs, R, "b");
    assert_eq!(fs.write(b, 0, &[1u8; 100_000]), Ok(14 * 4096));
    // fallocate that does not fit: ENOSPC, nothing left allocated.
    fs.setattr(
        b,
        &SetAttr {
            size: Some(0),
            ..SetAttr::default()
        },
    )
    .unwrap();
    assert_eq!(space(&fs), (16, 14));
    assert_eq!(fs.fallocate(b, 0, 0, 15 * 4096), Err(Errno::ENOSPC));
    assert_eq!(space(&fs), (16, 14));
    assert_eq!(fs.getattr(b).unwrap().size, 0);
    fs.fallocate(b, 0, 0, 14 * 4096).unwrap();
    assert_eq!(space(&fs), (16, 0));
    // The symlink's page comes back when it is evicted.
    fs.unlink(R, b"l").unwrap();
    fs.evict(l);
    assert_eq!(space(&fs), (16, 1));
    fs.fsck(true).unwrap();
}

#[test]
fn data_moves_at_the_first_write_and_reads_back() {
    let Some(fs) = backed("1m") else { return };
    let a = file(&fs, R, "a");
    // An empty file holds nothing there; a truncate up holds nothing.
    fs.setattr(
        a,
        &SetAttr {
            size: Some(10_000),
            ..SetAttr::default()
        },
    )
    .unwrap();
    assert_eq!(space(&fs), (256, 256));
    assert_eq!(fs.write(a, 5000, b"hello"), Ok(5));
    assert_eq!(space(&fs), (256, 255));
    let mut buf = [0u8; 10];
    assert_eq!(fs.read(a, 4998, &mut buf), Ok(10));
    assert_eq!(&buf, b"\0\0hello\0\0\0");
    assert_eq!(fs.seek_data_hole(a, 0, crate::fs::Seek::Data), Ok(4096));
    // The mapping is the same file.
    let m = fs.mmap_file(a, libc::O_RDWR).unwrap();
    drop(m);
    let at = fs.getattr(a).unwrap();
    assert_eq!((at.size, at.blocks), (10_000, 8));
    fs.unlink(R, b"a").unwrap();
    fs.evict(a);
    assert_eq!(space(&fs), (256, 256));
    fs.fsck(true).unwrap();
}
