//! An unlinked inode never waits in the inode cache: once a file's last
//! name is gone and its last reference put, its tmpfs inode is freed at
//! once (Linux's `iput_final`: `generic_drop_inode` drops an inode with
//! no link left instead of caching it), however the other calls on the
//! file raced the unlink.
//!
//! The cache keeps a copy of the link count for that decision, and every
//! attribute change made through the file system (truncate, chmod,
//! utimes, a second name's unlink) stores the count its file system
//! returned. One of those answers can be older than the unlink: a
//! truncate that read "1 link" and stored it after the unlink's "0" left
//! the inode cached, unused, until the LRU or `drop_caches` reached it
//! (the soak saw the emptied tmpfs still holding 1 or 2 inodes).
//!
//! Unlinker threads each create a file (with a second name in another
//! directory, every other round), unlink its names, and go on; racer
//! threads truncate, chmod, utimes and stat the same paths, and hold an
//! open descriptor across the unlink now and then. At the end nothing
//! is named or open, and the file system must count its root alone
//! without a `drop_caches`. Under both presets; `UVFS_STRESS_SECS`
//! lengthens the run.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use support::stress::scaled;
use support::vfs::fasts;
use uvfs::fs::FileSystem;
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::uapi::*;
use uvfs::{Errno, Process, Vfs};

const UNLINKERS: usize = 2;
const RACERS: usize = 2;

fn ok_or_enoent<T>(what: &str, r: Result<T, Errno>) {
    match r {
        Ok(_) | Err(Errno::ENOENT) => {}
        Err(e) => panic!("{what}: {e:?}"),
    }
}

fn run(fast: uvfs::FastPaths) {
    let fs = Tmpfs::new(TmpfsOptions {
        mode: 0o777,
        nr_inodes: Some(1 << 16),
        ..TmpfsOptions::default()
    });
    let vfs: Arc<Vfs> = Vfs::builder().fastpaths(fast).build_with_root(fs.clone());
    {
        let mut p = Process::new(&vfs).unwrap();
        p.mkdir("/a", 0o777).unwrap();
        p.mkdir("/b", 0o777).unwrap();
    }
    let stop = AtomicBool::new(false);
    let rounds = std::sync::atomic::AtomicU64::new(0);
    let deadline = Instant::now() + Duration::from_millis(scaled(600));
    std::thread::scope(|s| {
        for u in 0..UNLINKERS {
            let vfs = &vfs;
            let (stop, rounds) = (&stop, &rounds);
            s.spawn(move || {
                let mut p = Process::new(vfs).unwrap();
                let (name, link) = (format!("/a/f{u}"), format!("/b/f{u}"));
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let fd = p.open(&name, O_CREAT | O_EXCL | O_WRONLY, 0o644).unwrap();
                    p.write(fd, b"x").unwrap();
                    p.close(fd).unwrap();
                    if i % 2 == 1 {
                        p.link(&name, &link).unwrap();
                        p.unlink(&link).unwrap();
                    }
                    p.unlink(&name).unwrap();
                    i += 1;
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for r in 0..RACERS {
            let vfs = &vfs;
            let stop = &stop;
            s.spawn(move || {
                let mut p = Process::new(vfs).unwrap();
                let mut i = r as u64;
                while !stop.load(Ordering::Relaxed) {
                    let u = (i as usize / 5) % UNLINKERS;
                    let path = if i.is_multiple_of(3) {
                        format!("/b/f{u}")
                    } else {
                        format!("/a/f{u}")
                    };
                    match i % 5 {
                        0 => ok_or_enoent("truncate", p.truncate(&path, 0)),
                        1 => ok_or_enoent("chmod", p.chmod(&path, 0o600)),
                        2 => ok_or_enoent("utimens", p.utimensat(AT_FDCWD, &path, None, 0)),
                        3 => ok_or_enoent("stat", p.stat(&path)),
                        _ => {
                            if let Ok(fd) = p.open(&path, O_RDWR, 0) {
                                ok_or_enoent("ftruncate", p.ftruncate(fd, 1));
                                ok_or_enoent("fchmod", p.fchmod(fd, 0o640));
                                p.close(fd).unwrap();
                            }
                        }
                    }
                    i += 1;
                }
            });
        }
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(
        rounds.load(Ordering::Relaxed) > 0,
        "no unlinker finished a round"
    );
    // Everything unlinked and closed: the root alone, no `drop_caches`.
    let st = fs.statfs();
    assert_eq!(
        st.files - st.ffree,
        3,
        "{fast:?}: the emptied tmpfs holds {} inodes besides /, /a and /b \
         ({} cached by the VFS)",
        st.files - st.ffree - 3,
        vfs.icache_len()
    );
    vfs.check_consistency().unwrap();
}

#[test]
fn unlinked_inodes_are_freed_at_their_last_put() {
    for fast in fasts() {
        run(fast);
    }
}
