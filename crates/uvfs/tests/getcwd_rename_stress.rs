//! `getcwd` and an fd's path (`fd_path`, what `/proc/self/fd/N` names)
//! while renames move the directories above them: the answer is always a
//! path the directory really had, never `ENOENT` (a moving directory is
//! out of the hash for the instant of its move) and never a mix of two
//! paths (a name read before a rename, its parent after). Linux's
//! `d_path` reads under the cache-wide rename sequence count and retries,
//! then walks under its lock; uvfs's does the same (`dcache::path`).
//!
//! The tree: the directory M moves through `/p/m1` → `/p/m2` (same
//! directory) → `/q/m3_a_name_of_26_bytes_x` (across, and a name held
//! out of the dentry) → `/p/m1` (across back); inside it, `s` and `t` are
//! exchanged (`RENAME_EXCHANGE`) by a second mover standing in M, so the
//! leaf `s/leaf` (or `t/leaf`) changes its parent's name too. Two readers,
//! one whose current directory is the leaf (getcwd), one holding the leaf
//! open (fd_path), check every answer against the six real paths: a name
//! of M with the wrong parent (`/q/m1`, `/p/m3…`) is a mix. At the end the
//! leaf is removed, and both answer `ENOENT`. Under seeds and stock.
//!
//! `UVFS_STRESS_SECS` lengthens the run.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use uvfs::fs::RENAME_EXCHANGE;
use uvfs::uapi::{AT_FDCWD, O_DIRECTORY, O_RDONLY};
use uvfs::{Errno, FastPaths, Process, Vfs};

/// M's places, in the order it takes them.
const M: [&str; 3] = ["/p/m1", "/p/m2", "/q/m3_a_name_of_26_bytes_x"];

fn secs() -> f64 {
    std::env::var("UVFS_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

/// Every path the leaf has at some instant.
fn real_paths() -> Vec<String> {
    M.iter()
        .flat_map(|m| ["s", "t"].map(|s| format!("{m}/{s}/leaf")))
        .collect()
}

/// Checks one answer of `what` (getcwd or fd_path) and records it.
fn check(fast: FastPaths, what: &str, r: Result<Vec<u8>, Errno>, seen: &mut BTreeSet<String>) {
    let path = r.unwrap_or_else(|e| panic!("{fast}: {what} failed: {e:?}"));
    let path = String::from_utf8(path).unwrap();
    assert!(
        real_paths().contains(&path),
        "{fast}: {what} gave {path:?}, a path the leaf never had"
    );
    seen.insert(path);
}

fn run(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut setup = Process::new(&vfs).unwrap();
    for d in ["/p", "/q", M[0], "/p/m1/s", "/p/m1/t", "/p/m1/s/leaf"] {
        setup.mkdir(d, 0o755).unwrap();
    }
    let until = Instant::now() + Duration::from_secs_f64(secs());
    let mut counts = Vec::new();
    let mut seen = [BTreeSet::new(), BTreeSet::new()];
    // Every process set up before anything moves: the readers, one standing
    // in the leaf, one holding it open; the exchanger, standing in M.
    let mut cwd = setup.fork().unwrap();
    cwd.chdir("/p/m1/s/leaf").unwrap();
    let mut fdp = setup.fork().unwrap();
    let fd = fdp.open("/p/m1/s/leaf", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let mut exchanger = setup.fork().unwrap();
    exchanger.chdir(M[0]).unwrap();
    let mover = setup.fork().unwrap();
    std::thread::scope(|s| {
        let mut threads = Vec::new();
        // M's mover.
        let mut p = mover;
        threads.push(s.spawn(move || {
            let mut ops = 0u64;
            let mut at = 0;
            while !ops.is_multiple_of(M.len() as u64) || Instant::now() < until {
                let (old, new) = (M[at], M[(at + 1) % M.len()]);
                p.rename(old, new)
                    .unwrap_or_else(|e| panic!("{fast}: rename {old} {new}: {e:?}"));
                at = (at + 1) % M.len();
                ops += 1;
            }
            ops
        }));
        // The exchanger, standing in M wherever it goes.
        let mut p = exchanger;
        threads.push(s.spawn(move || {
            let mut ops = 0u64;
            while !ops.is_multiple_of(2) || Instant::now() < until {
                p.renameat2(AT_FDCWD, "s", AT_FDCWD, "t", RENAME_EXCHANGE)
                    .unwrap_or_else(|e| panic!("{fast}: exchange s t: {e:?}"));
                ops += 1;
            }
            ops
        }));
        for ((mut p, fd), seen) in [(cwd, None), (fdp, Some(fd))].into_iter().zip(&mut seen) {
            threads.push(s.spawn(move || {
                let mut ops = 0u64;
                for i in 0usize.. {
                    if i % 64 == 0 && Instant::now() >= until {
                        break;
                    }
                    match fd {
                        None => check(fast, "getcwd", p.getcwd(), seen),
                        Some(fd) => check(fast, "fd_path", p.fd_path(fd), seen),
                    }
                    ops += 1;
                }
                ops
            }));
        }
        counts = threads.into_iter().map(|t| t.join().unwrap()).collect();
    });
    assert!(counts.iter().all(|&n| n > 50), "{fast}: {counts:?}");
    // Both movers stopped at their starting places.
    assert!(setup.stat("/p/m1/s/leaf").is_ok(), "{fast}");
    // The leaf really removed: ENOENT for both, as on Linux.
    let mut cwd = setup.fork().unwrap();
    cwd.chdir("/p/m1/s/leaf").unwrap();
    let fd = cwd.open(".", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(cwd.getcwd().unwrap(), b"/p/m1/s/leaf");
    setup.rmdir("/p/m1/s/leaf").unwrap();
    assert_eq!(cwd.getcwd(), Err(Errno::ENOENT), "{fast}: removed cwd");
    assert_eq!(cwd.fd_path(fd), Err(Errno::ENOENT), "{fast}: removed fd");
    cwd.close(fd).unwrap();
    drop(cwd);
    drop(setup);
    vfs.check_consistency()
        .unwrap_or_else(|e| panic!("{fast}: {e}"));
    eprintln!(
        "{fast}: {counts:?} calls per thread; distinct paths seen: getcwd {}, fd_path {}",
        seen[0].len(),
        seen[1].len()
    );
}

#[test]
fn stress_getcwd_under_renames_seeds() {
    run(FastPaths::seeds());
}

#[test]
fn stress_getcwd_under_renames_stock() {
    run(FastPaths::stock());
}
