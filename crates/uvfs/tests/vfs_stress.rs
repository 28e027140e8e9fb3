//! Namespace stress: tasks create, write, read, rename (plain, `NOREPLACE`,
//! `EXCHANGE`), link, symlink, unlink, rmdir and stat in four shared
//! directories for a few seconds, under both presets, with dentry and inode
//! caches far smaller than the tree, so eviction races with everything.
//!
//! Checked during the run: every call returns success or an errno its
//! arguments can explain (never `EIO`, `ESTALE`, `EBADF` on an fd we hold,
//! …); a read of a file always sees whole records (writes are serialized
//! per inode). Checked at the end, with every process gone: the dentry
//! cache agrees with tmpfs and every dentry reference is accounted for
//! (`Vfs::check_consistency`), tmpfs's own invariants hold (`fsck`); then
//! after removing everything only the root is cached (rmdir pruned the
//! rest), and after dropping the caches tmpfs holds no inode but the root —
//! nothing leaked through the caches.
//!
//! Seeded; `UVFS_STRESS_SECS` lengthens the run.

mod support;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::rng::Rng;
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::fs::{FileSystem, RENAME_EXCHANGE, RENAME_NOREPLACE};
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Vfs};

const DIRS: u64 = 4;
const NAMES: u64 = 12;
const RECORD: usize = 32;

fn path(rng: &mut Rng) -> String {
    let d = rng.below_u64(DIRS);
    let n = rng.below_u64(NAMES);
    if rng.chance(25) {
        // One level deeper, inside a name that may or may not be a directory.
        format!("/s{d}/n{n}/n{}", rng.below_u64(4))
    } else {
        format!("/s{d}/n{n}")
    }
}

/// Errnos a namespace call on random names may legitimately return.
fn expected(e: Errno) -> bool {
    matches!(
        e,
        Errno::ENOENT
            | Errno::EEXIST
            | Errno::ENOTEMPTY
            | Errno::EISDIR
            | Errno::ENOTDIR
            | Errno::EINVAL
            | Errno::ELOOP
    )
}

fn ok_or_expected<T: std::fmt::Debug>(what: &str, r: Result<T, Errno>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) if expected(e) => None,
        Err(e) => panic!("{what}: unexpected {e:?}"),
    }
}

/// Calls each task makes at least (so that the run's count check holds on
/// a loaded machine: the seconds only lengthen it).
const MIN_OPS: u64 = 100;

fn task(p: &mut Process, seed: u64, until: Instant) -> u64 {
    let mut rng = Rng::new(seed);
    let mut held: Vec<i32> = Vec::new();
    let mut ops = 0;
    // At least MIN_OPS whatever the machine's load: the clock only
    // lengthens the run.
    while ops < MIN_OPS || Instant::now() < until {
        ops += 1;
        let a = path(&mut rng);
        let b = path(&mut rng);
        match rng.below_u64(12) {
            0 | 1 => {
                if let Some(fd) = ok_or_expected(
                    "open creat",
                    p.open(&a, O_CREAT | O_WRONLY | O_TRUNC, 0o644),
                ) {
                    let byte = b'a' + rng.below_u64(26) as u8;
                    assert_eq!(p.write(fd, &[byte; RECORD]), Ok(RECORD), "write {a}");
                    if rng.chance(50) && held.len() < 4 {
                        held.push(fd);
                    } else {
                        p.close(fd).expect("close");
                    }
                }
            }
            2 => {
                ok_or_expected("mkdir", p.mkdir(&a, 0o755));
            }
            3 => {
                ok_or_expected("rename", p.rename(&a, &b));
            }
            4 => {
                let flags = if rng.chance(50) {
                    RENAME_EXCHANGE
                } else {
                    RENAME_NOREPLACE
                };
                ok_or_expected("renameat2", p.renameat2(AT_FDCWD, &a, AT_FDCWD, &b, flags));
            }
            5 => {
                ok_or_expected("unlink", p.unlink(&a));
            }
            6 => {
                ok_or_expected("rmdir", p.rmdir(&a));
            }
            7 => match p.link(&a, &b) {
                // Hard links to directories are refused.
                Err(Errno::EPERM) => {}
                r => {
                    ok_or_expected("link", r);
                }
            },
            8 => {
                let target = format!("n{}", rng.below_u64(NAMES));
                ok_or_expected("symlink", p.symlink(target, &a));
            }
            9 => {
                // (A stat racing an unlink may see nlink 0, as on Linux.)
                if let Some(st) = ok_or_expected("stat", p.stat(&a)) {
                    assert!(
                        matches!(st.st_mode & 0o170000, 0o040000 | 0o100000),
                        "{st:?}"
                    );
                }
            }
            _ => {
                let fd = match held.pop() {
                    Some(fd) => fd,
                    None => match ok_or_expected("open read", p.open(&a, O_RDONLY, 0)) {
                        Some(fd) => fd,
                        None => continue,
                    },
                };
                let mut buf = [0u8; RECORD * 2];
                match p.pread(fd, &mut buf, 0) {
                    Ok(0) => {}
                    Ok(n) => {
                        assert_eq!(n, RECORD, "a whole record");
                        assert!(
                            buf[..n].iter().all(|&c| c == buf[0]),
                            "one record, not a mix"
                        );
                    }
                    // A held fd is write-only; a directory opened for read.
                    Err(Errno::EBADF) | Err(Errno::EISDIR) => {}
                    Err(e) => panic!("pread: unexpected {e:?}"),
                }
                let st = p.fstat(fd).expect("fstat of an fd we hold");
                assert!(
                    st.st_size == 0
                        || st.st_size == RECORD as i64
                        || st.st_mode & 0o170000 != 0o100000
                );
                p.close(fd).expect("close");
            }
        }
    }
    for fd in held {
        p.close(fd).expect("close held");
    }
    ops
}

/// Removes everything below `dir` (a directory path).
fn rm_rf(p: &mut Process, dir: &str) {
    let fd = p.open(dir, O_RDONLY | O_DIRECTORY, 0).expect("open dir");
    let mut names = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        let n = p.getdents64(fd, &mut buf).expect("getdents64");
        if n == 0 {
            break;
        }
        for e in uvfs::stat::parse_dirents64(&buf[..n]) {
            if e.name != b"." && e.name != b".." {
                names.push((String::from_utf8(e.name).expect("ascii names"), e.d_type));
            }
        }
    }
    p.close(fd).expect("close dir");
    for (name, t) in names {
        let full = format!("{dir}/{name}");
        if t == DT_DIR {
            rm_rf(p, &full);
            p.rmdir(&full).expect("rmdir");
        } else {
            p.unlink(&full).expect("unlink");
        }
    }
}

fn run(fast: FastPaths, seed: u64, secs: f64) {
    let fs = Tmpfs::new(TmpfsOptions {
        nr_inodes: Some(1 << 20),
        mode: 0o755,
        ..TmpfsOptions::default()
    });
    let vfs = Vfs::builder()
        .fastpaths(fast)
        .dcache_limit(48)
        .icache_limit(48)
        .build_with_root(fs.clone());
    let mut setup = Process::new(&vfs).unwrap();
    for d in 0..DIRS {
        setup.mkdir(format!("/s{d}"), 0o755).unwrap();
    }
    let until = Instant::now() + Duration::from_secs_f64(secs);
    // Two processes; the second has two threads sharing its fd table.
    let p1 = Process::new(&vfs).unwrap();
    let p2 = Process::new(&vfs).unwrap();
    let tasks = vec![p1.new_thread(), p1, p2.new_thread(), p2];
    let total: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = tasks
            .into_iter()
            .enumerate()
            .map(|(i, mut p)| s.spawn(move || task(&mut p, seed ^ (i as u64 * 0x9e37), until)))
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("task panicked"))
            .sum()
    });
    assert!(total > 100, "the tasks ran ({total} ops)");
    // No process may hold a reference during the check (setup's cwd is `/`).
    drop(setup);
    vfs.check_consistency()
        .unwrap_or_else(|e| panic!("{fast}: after the run: {e}"));
    fs.fsck(false)
        .unwrap_or_else(|e| panic!("{fast}: tmpfs: {e}"));
    // Remove everything: only the root may remain cached (rmdir prunes
    // each removed directory's negative entries), then drop the caches.
    let mut setup = Process::new(&vfs).unwrap();
    for d in 0..DIRS {
        rm_rf(&mut setup, &format!("/s{d}"));
        setup.rmdir(format!("/s{d}")).unwrap();
    }
    drop(setup);
    vfs.check_consistency()
        .unwrap_or_else(|e| panic!("{fast}: after removal, caches as left: {e}"));
    assert_eq!(vfs.dcache_len(), 1, "{fast}: dentries left after removal");
    vfs.drop_caches();
    vfs.check_consistency()
        .unwrap_or_else(|e| panic!("{fast}: after removal: {e}"));
    fs.fsck(true)
        .unwrap_or_else(|e| panic!("{fast}: tmpfs after removal: {e}"));
    let st = fs.statfs();
    assert_eq!(
        st.files - st.ffree,
        1,
        "{fast}: inodes leaked: {} in use",
        st.files - st.ffree
    );
    eprintln!("{fast}: {total} ops");
}

fn secs() -> f64 {
    std::env::var("UVFS_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.5)
}

#[test]
fn stress_namespace_seeds() {
    run(FastPaths::seeds(), 0x5eed_0001, secs());
}

#[test]
fn stress_namespace_stock() {
    run(FastPaths::stock(), 0x5eed_0002, secs());
}

#[test]
fn a_consistent_namespace_passes_the_check() {
    // The checker itself: a known-good small tree passes, and an extra
    // reference (a leaked dentry) is reported.
    let vfs = Vfs::new(FastPaths::seeds());
    let mut p = Process::new(&vfs).unwrap();
    p.mkdir("/a", 0o755).unwrap();
    let fd = p.open("/a/f", O_CREAT | O_RDWR, 0o644).unwrap();
    assert_eq!(p.stat("/a/missing"), Err(Errno::ENOENT));
    p.close(fd).unwrap();
    let keep = Arc::new(p);
    // A process that keeps /a as its cwd holds a reference: not quiescent.
    let mut q = Process::new(&vfs).unwrap();
    q.chdir("/a").unwrap();
    assert!(
        vfs.check_consistency().is_err(),
        "the cwd reference is not accounted for"
    );
    drop(q);
    drop(keep);
    vfs.check_consistency().unwrap();
}
