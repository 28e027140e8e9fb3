//! tmpfs's directory entries hold their inodes (issue 16): what an entry's
//! reference must keep right. An unlinked file stays readable through its
//! open descriptor and keeps its inode count until the last close; hard
//! links in two directories are one inode; a rename over a directory frees
//! the replaced one and moves `..`; and with tiny caches (the disk-like
//! mode, where cached inodes are evicted) every file is found again, with
//! its data and links, after its cached inode went. Each test runs under
//! both `FastPaths::seeds()` and `FastPaths::stock()`, with tmpfs's inode
//! table and without it, with the dentry cache's and the file system's
//! consistency checked at the end.

mod support;

use std::sync::Arc;
use support::vfs::*;
use uvfs::fs::tmpfs::TmpfsOptions;
use uvfs::uapi::*;
use uvfs::{Errno, Process, Vfs};

/// A VFS whose tmpfs root holds at most `inodes` inodes (the root counts),
/// with caches of `limit` entries, and a root process on it, per preset,
/// with the tmpfs's inode table and without it (the pinned mode; with
/// `tmpfs_borrow` off the table stays).
fn each_with(inodes: u64, limit: usize, mut f: impl FnMut(&Arc<Vfs>, &mut Process)) {
    for (fast, table) in fasts().into_iter().flat_map(|f| [(f, true), (f, false)]) {
        let vfs = Vfs::builder()
            .fastpaths(fast)
            .dcache_limit(limit)
            .icache_limit(limit)
            .tmpfs_table(table)
            .root_options(TmpfsOptions {
                nr_inodes: Some(inodes),
                ..TmpfsOptions::default()
            })
            .build();
        let mut p = Process::new(&vfs).unwrap();
        f(&vfs, &mut p);
        drop(p);
        vfs.check_consistency().unwrap();
    }
}

/// Makes files `/fill{i}` until the inode limit says `ENOSPC`; how many.
fn fill(p: &mut Process) -> usize {
    (0..)
        .take_while(
            |i| match p.open(format!("/fill{i}"), O_CREAT | O_WRONLY, 0o644) {
                Ok(fd) => {
                    p.close(fd).unwrap();
                    true
                }
                Err(e) => {
                    assert_eq!(e, Errno::ENOSPC);
                    false
                }
            },
        )
        .count()
}

#[test]
fn unlinked_open_file_lives_until_its_last_close() {
    each_with(8, 1 << 20, |vfs, p| {
        let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
        p.write(fd, b"still here").unwrap();
        let fd2 = p.open("/f", O_RDONLY, 0).unwrap();
        p.unlink("/f").unwrap();
        assert_eq!(p.stat("/f").unwrap_err(), Errno::ENOENT);
        assert_eq!(p.fstat(fd).unwrap().st_nlink, 0);
        let made = fill(p);
        // The unlinked file still holds its inode.
        assert_eq!(made, 6);
        vfs.drop_caches();
        let mut buf = [0u8; 10];
        assert_eq!(p.pread(fd2, &mut buf, 0).unwrap(), 10);
        assert_eq!(&buf, b"still here");
        p.close(fd).unwrap();
        assert_eq!(
            err(p.open("/more", O_CREAT | O_WRONLY, 0o644)),
            Errno::ENOSPC
        );
        p.close(fd2).unwrap();
        // The last close gave the inode back.
        let fd = p.open("/more", O_CREAT | O_WRONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        assert_eq!(
            err(p.open("/more2", O_CREAT | O_WRONLY, 0o644)),
            Errno::ENOSPC
        );
    });
}

#[test]
fn hard_links_across_directories_are_one_inode() {
    each_with(16, 1 << 20, |vfs, p| {
        p.mkdir("/a", 0o755).unwrap();
        p.mkdir("/b", 0o755).unwrap();
        put(p, "/a/f", b"one");
        p.link("/a/f", "/b/g").unwrap();
        p.link("/b/g", "/b/h").unwrap();
        let (sa, sb) = (p.stat("/a/f").unwrap(), p.stat("/b/h").unwrap());
        assert_eq!((sa.st_ino, sa.st_nlink), (sb.st_ino, 3));
        put(p, "/b/g", b"two");
        vfs.drop_caches();
        assert_eq!(get(p, "/a/f"), b"two");
        p.unlink("/a/f").unwrap();
        p.rmdir("/a").unwrap();
        vfs.drop_caches();
        assert_eq!(get(p, "/b/h"), b"two");
        assert_eq!(p.stat("/b/g").unwrap().st_nlink, 2);
        // Root, /b, the file with two names (an extra link counts as an
        // inode): four counts of sixteen, all of the file's given back
        // with its names.
        assert_eq!(fill(p), 12);
        p.unlink("/b/g").unwrap();
        p.unlink("/b/h").unwrap();
        assert_eq!(fill(p) - 12, 2);
    });
}

#[test]
fn rename_over_a_directory_frees_it_and_moves_dotdot() {
    each_with(16, 1 << 20, |vfs, p| {
        p.mkdir("/a", 0o755).unwrap();
        p.mkdir("/b", 0o755).unwrap();
        p.mkdir("/a/x", 0o755).unwrap();
        put(p, "/a/x/f", b"data");
        p.mkdir("/b/y", 0o755).unwrap();
        let x = p.stat("/a/x").unwrap().st_ino;
        let held = p.open("/b/y", O_RDONLY | O_DIRECTORY, 0).unwrap();
        p.rename("/a/x", "/b/y").unwrap();
        assert_eq!(p.stat("/b/y").unwrap().st_ino, x);
        assert_eq!(p.stat("/a/x").unwrap_err(), Errno::ENOENT);
        assert_eq!(p.fstat(held).unwrap().st_nlink, 0);
        vfs.drop_caches();
        assert_eq!(get(p, "/b/y/f"), b"data");
        assert_eq!(
            p.stat("/b/y/..").unwrap().st_ino,
            p.stat("/b").unwrap().st_ino
        );
        let fd = p.open("/b/y", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let dotdot = p
            .readdir(fd)
            .map(|e| e.unwrap())
            .find(|e| e.name == b"..")
            .map(|e| e.d_ino);
        p.close(fd).unwrap();
        assert_eq!(dotdot, Some(p.stat("/b").unwrap().st_ino));
        assert_eq!(p.stat("/a").unwrap().st_nlink, 2);
        assert_eq!(p.stat("/b").unwrap().st_nlink, 3);
        // Root, /a, /b, x, f and the replaced y, still open: six.
        assert_eq!(fill(p), 10);
        p.close(held).unwrap();
        assert_eq!(fill(p) - 10, 1);
    });
}

#[test]
fn evicted_inodes_are_found_again_through_their_entries() {
    each_with(1 << 20, 16, |vfs, p| {
        const N: usize = 300;
        for d in 0..3 {
            p.mkdir(format!("/d{d}"), 0o755).unwrap();
            for i in 0..N {
                put(p, &format!("/d{d}/f{i}"), format!("{d}:{i}").as_bytes());
            }
        }
        for i in (0..N).step_by(7) {
            p.link(format!("/d0/f{i}"), format!("/d1/l{i}")).unwrap();
        }
        p.rename("/d2", "/d1/moved").unwrap();
        for round in 0..2 {
            vfs.drop_caches();
            for i in 0..N {
                assert_eq!(get(p, &format!("/d0/f{i}")), format!("0:{i}").as_bytes());
                assert_eq!(
                    get(p, &format!("/d1/moved/f{i}")),
                    format!("2:{i}").as_bytes(),
                    "round {round}"
                );
                if i % 7 == 0 {
                    let (a, b) = (
                        p.stat(format!("/d0/f{i}")).unwrap(),
                        p.stat(format!("/d1/l{i}")).unwrap(),
                    );
                    assert_eq!((a.st_ino, a.st_nlink), (b.st_ino, 2));
                }
            }
            assert!(
                vfs.icache_len() <= 16 + 16 + 8,
                "icache {}",
                vfs.icache_len()
            );
        }
        for i in 0..N {
            p.unlink(format!("/d0/f{i}")).unwrap();
        }
        vfs.drop_caches();
        assert_eq!(get(p, "/d1/l7"), b"0:7");
        assert_eq!(p.stat("/d1/l7").unwrap().st_nlink, 1);
    });
}
