//! Unlink ending a name's dentry (`FastPaths::d_delete`: made negative in
//! place when the unlinker holds the only reference, dropped otherwise;
//! its stock side: always dropped), with the names shared by threads that
//! create, unlink, stat and open them all the while, under both presets.
//!
//! Owner threads each create and unlink their own names over and over (a
//! create writes the file's inode number into it) and check, after each
//! call returns, that the name says so: `stat` and `open` find the inode
//! just made after a create, `ENOENT` after an unlink (the path cache, the
//! lockless walk and the locked one must all agree). Reader threads `stat`
//! the owners' names and open them, holding each open file across the
//! owner's next unlink (so the dentry has another holder and must not go
//! negative): every file a reader opens holds its own inode number, and
//! `fstat` on it keeps answering with that number after the unlink. At the
//! end the caches' structure is checked and every name is gone.
//!
//! Plus two exact checks of the dentry cache's size: with the switch on,
//! an unlink keeps the dentry and the next create reuses it; with an open
//! file holding the dentry, or with the switch off, the dentry goes.
//!
//! Seeded by thread number; `UVFS_STRESS_SECS` lengthens the run.

use std::time::{Duration, Instant};
use uvfs::fs::{S_IFMT, S_IFREG};
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Vfs};

const OWNERS: usize = 2;
const READERS: usize = 2;
const NAMES: usize = 3;

fn secs() -> f64 {
    std::env::var("UVFS_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

fn name(owner: usize, k: usize) -> String {
    format!("/d/o{owner}_{k}")
}

/// Creates `path` (which must not exist), writes its inode number into it,
/// and returns the number.
fn create(p: &mut Process, path: &str) -> u64 {
    let fd = p
        .open(path, O_CREAT | O_EXCL | O_WRONLY, 0o644)
        .unwrap_or_else(|e| panic!("create {path}: {e:?}"));
    let ino = p.fstat(fd).unwrap().st_ino;
    assert_eq!(p.write(fd, &ino.to_le_bytes()).unwrap(), 8);
    p.close(fd).unwrap();
    ino
}

/// Reads the inode number a file holds (`None` if its creator has not
/// written it yet).
fn token(p: &mut Process, fd: i32) -> Option<u64> {
    let mut b = [0u8; 8];
    match p.pread(fd, &mut b, 0).unwrap() {
        8 => Some(u64::from_le_bytes(b)),
        0 => None,
        n => panic!("a file holding {n} bytes"),
    }
}

fn run(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut setup = Process::new(&vfs).unwrap();
    setup.mkdir("/d", 0o755).unwrap();
    let until = Instant::now() + Duration::from_secs_f64(secs());
    let mut counts = Vec::new();
    std::thread::scope(|s| {
        let mut threads = Vec::new();
        for o in 0..OWNERS {
            let mut p = setup.fork().unwrap();
            threads.push(s.spawn(move || {
                let mut inos = [None; NAMES];
                let mut ops = 0u64;
                for i in 0usize.. {
                    if i % 64 == 0 && Instant::now() >= until {
                        break;
                    }
                    let k = (i * 7 + o) % NAMES;
                    let path = name(o, k);
                    match inos[k] {
                        None => {
                            let ino = create(&mut p, &path);
                            assert_eq!(p.stat(&path).unwrap().st_ino, ino, "{fast}: stat {path}");
                            let fd = p.open(&path, O_RDONLY, 0).unwrap();
                            assert_eq!(p.fstat(fd).unwrap().st_ino, ino, "{fast}: open {path}");
                            p.close(fd).unwrap();
                            inos[k] = Some(ino);
                        }
                        Some(_) => {
                            p.unlink(&path).unwrap();
                            assert_eq!(
                                p.stat(&path).map(|st| st.st_ino),
                                Err(Errno::ENOENT),
                                "{fast}: stat {path} after unlink"
                            );
                            assert_eq!(
                                p.open(&path, O_RDONLY, 0),
                                Err(Errno::ENOENT),
                                "{fast}: open {path} after unlink"
                            );
                            assert_eq!(
                                p.unlink(&path),
                                Err(Errno::ENOENT),
                                "{fast}: unlink {path} twice"
                            );
                            inos[k] = None;
                        }
                    }
                    ops += 1;
                }
                for (k, ino) in inos.iter().enumerate() {
                    if ino.is_some() {
                        p.unlink(name(o, k)).unwrap();
                    }
                }
                ops
            }));
        }
        for r in 0..READERS {
            let mut p = setup.fork().unwrap();
            threads.push(s.spawn(move || {
                // An open file, held across a few more calls, and the inode
                // number it was opened at.
                let mut held: Option<(i32, u64)> = None;
                let mut ops = 0u64;
                for i in 0usize.. {
                    if i % 64 == 0 && Instant::now() >= until {
                        break;
                    }
                    let path = name((i + r) % OWNERS, (i / OWNERS + r) % NAMES);
                    match p.stat(&path) {
                        Ok(st) => assert_eq!(st.st_mode & S_IFMT, S_IFREG, "{fast}: {path}"),
                        Err(e) => assert_eq!(e, Errno::ENOENT, "{fast}: stat {path}"),
                    }
                    if let Some((fd, ino)) = held.take_if(|_| i % 3 == 0) {
                        // The name may be gone: the file is not.
                        let st = p.fstat(fd).unwrap();
                        assert_eq!(st.st_ino, ino, "{fast}: fstat after the name went");
                        assert!(st.st_nlink <= 1, "{fast}: {st:?}");
                        if let Some(t) = token(&mut p, fd) {
                            assert_eq!(t, ino, "{fast}: an open file of another inode");
                        }
                        p.close(fd).unwrap();
                    }
                    if held.is_none() {
                        match p.open(&path, O_RDONLY, 0) {
                            Ok(fd) => {
                                let ino = p.fstat(fd).unwrap().st_ino;
                                if let Some(t) = token(&mut p, fd) {
                                    assert_eq!(t, ino, "{fast}: {path} opened another inode");
                                }
                                held = Some((fd, ino));
                            }
                            Err(e) => assert_eq!(e, Errno::ENOENT, "{fast}: open {path}"),
                        }
                    }
                    ops += 1;
                }
                if let Some((fd, _)) = held {
                    p.close(fd).unwrap();
                }
                ops
            }));
        }
        counts = threads.into_iter().map(|t| t.join().unwrap()).collect();
    });
    assert!(counts.iter().all(|&n| n > 50), "{fast}: {counts:?}");
    for o in 0..OWNERS {
        for k in 0..NAMES {
            assert_eq!(setup.stat(name(o, k)).map(|_| ()), Err(Errno::ENOENT));
        }
    }
    setup.rmdir("/d").unwrap();
    drop(setup);
    vfs.check_consistency()
        .unwrap_or_else(|e| panic!("{fast}: {e}"));
    eprintln!("{fast}: {counts:?} calls per thread");
}

#[test]
fn stress_ddelete_seeds() {
    run(FastPaths::seeds());
}

#[test]
fn stress_ddelete_stock() {
    run(FastPaths::stock());
}

/// The dentries alive around an unlink and the next create of its name:
/// with `d_delete` on, the unlink keeps the dentry (negative) and the
/// create reuses it; with an open file holding it, or off, it goes.
#[test]
fn unlink_keeps_the_sole_holders_dentry() {
    for on in [true, false] {
        let fast = FastPaths::seeds().with("d_delete", on);
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.write_file("/f", b"x").unwrap();
        let before = vfs.dcache_len();
        p.unlink("/f").unwrap();
        assert_eq!(
            vfs.dcache_len(),
            before - usize::from(!on),
            "{fast}: unlink"
        );
        assert_eq!(p.stat("/f").map(|_| ()), Err(Errno::ENOENT));
        p.write_file("/f", b"y").unwrap();
        assert_eq!(vfs.dcache_len(), before, "{fast}: create again");
        assert_eq!(p.read_file("/f").unwrap(), b"y");
        // An open file holds the dentry: it is dropped, whatever the
        // switch, and the file stays readable by its fd.
        let fd = p.open("/f", O_RDONLY, 0).unwrap();
        p.unlink("/f").unwrap();
        assert_eq!(vfs.dcache_len(), before, "{fast}: unlink of an open file");
        assert_eq!(p.fstat(fd).unwrap().st_nlink, 0);
        let mut b = [0u8; 1];
        assert_eq!(p.pread(fd, &mut b, 0).unwrap(), 1);
        assert_eq!(&b, b"y");
        p.close(fd).unwrap();
        assert_eq!(vfs.dcache_len(), before - 1, "{fast}: the last close");
        assert_eq!(p.stat("/f").map(|_| ()), Err(Errno::ENOENT));
        drop(p);
        vfs.check_consistency()
            .unwrap_or_else(|e| panic!("{fast}: {e}"));
    }
}
