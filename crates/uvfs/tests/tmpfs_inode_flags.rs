//! tmpfs keeps two flags of an inode in spare bits of its attribute
//! word's mode (whether an `O_TMPFILE` inode may still be linked, Linux's
//! `I_LINKABLE`, and whether its pages and inode count were given back):
//! `stat` must never show them, a change of the mode must keep them, and a
//! change of them must keep the mode.
//!
//! The first test walks one file through every change of its link count
//! (`O_TMPFILE`, `linkat`, `link`, `chmod`, `unlink`, the last close) and
//! checks each `stat`, `fstat` and `fstatat` exactly; expected results are
//! Linux's (a second `linkat` of an `O_TMPFILE` file whose names are gone
//! is ENOENT, as `vfs_link` clears `I_LINKABLE` at the first). The second
//! runs those changes while other threads `fchmod` and `stat` the same
//! file. Both under both fast-path settings.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::vfs::*;
use uvfs::fs::FileSystem;
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Stat, Vfs};

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;

/// Modes the tests set: every permission and set-ID bit on and off.
const MODES: [u32; 7] = [0o600, 0, 0o7777, 0o4755, 0o2711, 0o1777, 0o444];

fn limited(fast: FastPaths) -> (Arc<Vfs>, Arc<Tmpfs>) {
    let fs = Tmpfs::new(TmpfsOptions {
        nr_inodes: Some(64),
        mode: 0o755,
        ..TmpfsOptions::default()
    });
    let vfs = Vfs::builder().fastpaths(fast).build_with_root(fs.clone());
    (vfs, fs)
}

/// `st` is a regular file's with exactly `mode` and `nlink` links.
#[track_caller]
fn is_reg(st: &Stat, mode: u32, nlink: u64) {
    assert_eq!(st.st_mode, S_IFREG | mode, "{st:?}");
    assert_eq!(st.st_nlink, nlink, "{st:?}");
}

/// Every way to ask for the attributes of what `fd` holds.
#[track_caller]
fn fstats(p: &mut Process, fd: i32, mode: u32, nlink: u64) {
    is_reg(&p.fstat(fd).unwrap(), mode, nlink);
    is_reg(&p.fstatat(fd, "", AT_EMPTY_PATH).unwrap(), mode, nlink);
}

#[test]
fn stat_never_shows_the_flag_bits() {
    for fast in fasts() {
        let (vfs, fs) = limited(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.umask(0);
        p.mkdir("/d", 0o755).unwrap();
        let free = fs.statfs().ffree;
        for (k, &m) in MODES.iter().enumerate() {
            let m2 = MODES[(k + 3) % MODES.len()];
            let fd = p.open("/d", O_TMPFILE | O_RDWR, m).unwrap();
            fstats(&mut p, fd, m, 0);
            assert_eq!(fs.statfs().ffree, free - 1);
            p.linkat(fd, "", AT_FDCWD, "/d/a", AT_EMPTY_PATH).unwrap();
            fstats(&mut p, fd, m, 1);
            is_reg(&p.stat("/d/a").unwrap(), m, 1);
            p.link("/d/a", "/d/b").unwrap();
            is_reg(&p.stat("/d/b").unwrap(), m, 2);
            p.chmod("/d/b", m2).unwrap();
            fstats(&mut p, fd, m2, 2);
            is_reg(&p.stat("/d/a").unwrap(), m2, 2);
            p.unlink("/d/a").unwrap();
            is_reg(&p.stat("/d/b").unwrap(), m2, 1);
            p.unlink("/d/b").unwrap();
            fstats(&mut p, fd, m2, 0);
            // Linked once, so no longer linkable (`I_LINKABLE` cleared).
            assert_eq!(
                p.linkat(fd, "", AT_FDCWD, "/d/c", AT_EMPTY_PATH),
                Err(Errno::ENOENT)
            );
            p.fchmod(fd, m).unwrap();
            fstats(&mut p, fd, m, 0);
            p.close(fd).unwrap();
            assert_eq!(fs.statfs().ffree, free, "given back at the last close");
        }
        // O_EXCL: never linkable; the mode as given.
        let fd = p.open("/d", O_TMPFILE | O_RDWR | O_EXCL, 0o640).unwrap();
        assert_eq!(
            p.linkat(fd, "", AT_FDCWD, "/d/x", AT_EMPTY_PATH),
            Err(Errno::ENOENT)
        );
        fstats(&mut p, fd, 0o640, 0);
        p.close(fd).unwrap();
        // A file made with a name, its links changed and dropped while
        // open, and a directory.
        let fd = p.open("/d/f", O_CREAT | O_RDWR, 0o7755).unwrap();
        p.link("/d/f", "/d/g").unwrap();
        fstats(&mut p, fd, 0o7755, 2);
        p.unlink("/d/f").unwrap();
        p.unlink("/d/g").unwrap();
        fstats(&mut p, fd, 0o7755, 0);
        p.close(fd).unwrap();
        p.mkdir("/d/s", 0o1777).unwrap();
        let st = p.stat("/d/s").unwrap();
        assert_eq!((st.st_mode, st.st_nlink), (S_IFDIR | 0o1777, 2));
        p.rmdir("/d/s").unwrap();
        assert_eq!(fs.statfs().ffree, free);
        fs.fsck(true).unwrap();
    }
}

/// The file the linker has open, shared with the threads that change and
/// read its mode: its fd and the mode last set.
#[derive(Clone, Copy)]
struct Cur {
    fd: i32,
    mode: u32,
}

/// A mode a `stat` by name may show: the file's type, no bit above it,
/// and a permission set some thread set.
#[track_caller]
fn plausible(st: &Stat) {
    assert_eq!(st.st_mode & S_IFMT, S_IFREG, "{st:?}");
    assert_eq!(st.st_mode & !(S_IFMT | 0o7777), 0, "{st:?}");
    assert!(MODES.contains(&(st.st_mode & 0o7777)), "{st:?}");
    assert!(st.st_nlink <= 2, "{st:?}");
}

fn stress(fast: FastPaths) {
    let (vfs, fs) = limited(fast);
    let mut p = Process::new(&vfs).unwrap();
    p.umask(0);
    p.mkdir("/d", 0o755).unwrap();
    let free = fs.statfs().ffree;
    let cur: Mutex<Option<Cur>> = Mutex::new(None);
    let until =
        Instant::now() + Duration::from_secs_f64(support::stress::scaled(1000) as f64 / 1000.0);
    let mut chmodder = p.new_thread();
    let mut stater = p.new_thread();
    let (rounds, chmods, stats) = std::thread::scope(|s| {
        let cur_ = &cur;
        // fchmod through the linker's fd, each followed by an fstat that
        // must show exactly that mode (no one else sets it meanwhile).
        let ch = s.spawn(move || {
            let mut n = 0u64;
            while Instant::now() < until {
                let mut g = cur_.lock().unwrap();
                let Some(c) = g.as_mut() else {
                    drop(g);
                    std::thread::yield_now();
                    continue;
                };
                let m = MODES[(n as usize * 5 + 1) % MODES.len()];
                chmodder.fchmod(c.fd, m).unwrap();
                let st = chmodder.fstat(c.fd).unwrap();
                assert_eq!(st.st_mode, S_IFREG | m, "a mode set was lost: {st:?}");
                assert!(st.st_nlink <= 2, "{st:?}");
                c.mode = m;
                n += 1;
            }
            n
        });
        // stat by the names the linker gives and takes, and fstat of
        // its fd.
        let st = s.spawn(move || {
            let mut n = 0u64;
            while Instant::now() < until {
                for name in ["/d/a", "/d/b"] {
                    match stater.stat(name) {
                        Ok(st) => plausible(&st),
                        Err(e) => assert_eq!(e, Errno::ENOENT),
                    }
                }
                let g = cur_.lock().unwrap();
                if let Some(c) = *g {
                    let st = stater.fstat(c.fd).unwrap();
                    plausible(&st);
                    assert_eq!(st.st_mode & 0o7777, c.mode, "{st:?}");
                }
                n += 1;
            }
            n
        });
        // The linker: each round an O_TMPFILE file linked (clearing its
        // linkable flag), linked again, unlinked twice, refused a third
        // link, and closed (given back), its mode checked at each step.
        let check = |p: &mut Process, fd: i32, nlink: u64| {
            // Held across the fstat: no chmod meanwhile.
            let g = cur_.lock().unwrap();
            let c = g.expect("the linker's file");
            let st = p.fstat(fd).unwrap();
            drop(g);
            assert_eq!(st.st_mode, S_IFREG | c.mode, "a mode was lost: {st:?}");
            assert_eq!(st.st_nlink, nlink, "{st:?}");
        };
        let mut rounds = 0u64;
        while Instant::now() < until || rounds == 0 {
            let fd = p.open("/d", O_TMPFILE | O_RDWR, 0o600).unwrap();
            *cur.lock().unwrap() = Some(Cur { fd, mode: 0o600 });
            p.linkat(fd, "", AT_FDCWD, "/d/a", AT_EMPTY_PATH)
                .expect("a chmod must not clear the linkable flag");
            check(&mut p, fd, 1);
            p.link("/d/a", "/d/b").unwrap();
            check(&mut p, fd, 2);
            p.unlink("/d/a").unwrap();
            p.unlink("/d/b").unwrap();
            check(&mut p, fd, 0);
            assert_eq!(
                p.linkat(fd, "", AT_FDCWD, "/d/c", AT_EMPTY_PATH),
                Err(Errno::ENOENT),
                "a chmod must not bring the linkable flag back"
            );
            check(&mut p, fd, 0);
            *cur.lock().unwrap() = None;
            // Given back at the last reference's drop: this close's, or
            // that of a stat by name still holding the inode (checked
            // once every thread is done).
            p.close(fd).unwrap();
            rounds += 1;
        }
        let chmods = ch.join().unwrap();
        let stats = st.join().unwrap();
        (rounds, chmods, stats)
    });
    eprintln!("{fast}: {rounds} files, {chmods} chmods, {stats} stat rounds");
    // An unused dentry left by a stat by name that ran beside the unlinks
    // may still hold one or two of the last files (seen under both
    // presets; a matter of the dentry cache, not of these flags): the
    // caches are dropped first, then each file must have been given back
    // exactly once.
    let left = fs.statfs().ffree;
    vfs.drop_caches();
    eprintln!(
        "ffree: {left} before drop_caches, {} after, {free} at the start",
        fs.statfs().ffree
    );
    assert_eq!(fs.statfs().ffree, free, "every file given back once");
    fs.fsck(true).unwrap();
}

#[test]
fn tmpfile_flags_under_concurrent_chmod_and_stat() {
    for fast in fasts() {
        stress(fast);
    }
}
