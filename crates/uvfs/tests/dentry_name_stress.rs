//! Names held in the dentry (`FastPaths::dentry_inline_name`: up to 8
//! bytes in the dentry's own word, changed in place by a rename inside
//! the dentry's sequence count; longer names, and every name with the
//! switch off, allocated on their own) racing the lookups and name copies
//! that read them without locks.
//!
//! A mover renames one directory, in `/d`, through a cycle of names that
//! takes every kind of change: inline to inline (`a` → `abcdefgh`, of
//! another length; `bcdefghi` → `b`), inline to out of line
//! (`abcdefgh` → a 20-byte name), out of line to out of line, and out of
//! line to inline; after each rename it checks that the new name finds the
//! directory and the old one finds nothing. Readers `stat` every name of
//! the cycle and the neighbours that never move (inline and out of line
//! ones, in the same directory): a cycle name is the moving directory or
//! `ENOENT`, a neighbour always itself. A walker chdir'ed into the moving
//! directory reads its own path (`getcwd`, which copies each dentry's name
//! without a lock, under the cache's rename count): always `/d/` and one of
//! the cycle's names whole, never a torn mix of two, never `ENOENT`. Under seeds, seeds without the path cache (so the
//! lockless walk does the lookups) and stock (names all out of line). At
//! the end the caches' structure is checked.
//!
//! `UVFS_STRESS_SECS` lengthens the run.

use std::time::{Duration, Instant};
use uvfs::fs::{S_IFDIR, S_IFMT};
use uvfs::{Errno, FastPaths, Process, Vfs};

/// The moving directory's names, in the order it takes them.
const CYCLE: [&str; 7] = [
    "a",
    "abcdefgh",
    "a_name_of_20_bytes_x",
    "another_long_name_of_27_b_y",
    "bcdefghi",
    "b",
    "b_long_name_again_21",
];

/// Names that never move, beside the moving one: inline (1 and 8 bytes,
/// differing from cycle names in one byte) and out of line.
const STILL: [&str; 4] = ["c", "abcdefgi", "a_name_of_20_bytes_z", "bcdefgh"];

fn secs() -> f64 {
    std::env::var("UVFS_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

fn run(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut setup = Process::new(&vfs).unwrap();
    setup.mkdir("/d", 0o755).unwrap();
    setup.mkdir(format!("/d/{}", CYCLE[0]), 0o755).unwrap();
    let moving = setup.stat(format!("/d/{}", CYCLE[0])).unwrap().st_ino;
    let still: Vec<u64> = STILL
        .iter()
        .map(|n| {
            let path = format!("/d/{n}");
            setup.write_file(&path, n.as_bytes()).unwrap();
            setup.stat(&path).unwrap().st_ino
        })
        .collect();
    let until = Instant::now() + Duration::from_secs_f64(secs());
    let mut counts = Vec::new();
    // In the moving directory before the mover starts.
    let mut cwd = setup.fork().unwrap();
    cwd.chdir(format!("/d/{}", CYCLE[0])).unwrap();
    std::thread::scope(|s| {
        let mut threads = Vec::new();
        let mut p = setup.fork().unwrap();
        threads.push(s.spawn(move || {
            let mut ops = 0u64;
            let mut at = 0;
            while !ops.is_multiple_of(16) || Instant::now() < until {
                let (old, new) = (CYCLE[at], CYCLE[(at + 1) % CYCLE.len()]);
                let (old, new) = (format!("/d/{old}"), format!("/d/{new}"));
                p.rename(&old, &new)
                    .unwrap_or_else(|e| panic!("{fast}: rename {old} {new}: {e:?}"));
                assert_eq!(p.stat(&new).unwrap().st_ino, moving, "{fast}: {new}");
                assert_eq!(
                    p.stat(&old).map(|_| ()),
                    Err(Errno::ENOENT),
                    "{fast}: {old} after the rename"
                );
                at = (at + 1) % CYCLE.len();
                ops += 1;
            }
            // Back to the first name, for the end's checks.
            if at != 0 {
                let old = format!("/d/{}", CYCLE[at]);
                p.rename(&old, format!("/d/{}", CYCLE[0])).unwrap();
            }
            ops
        }));
        for r in 0..2usize {
            let mut p = setup.fork().unwrap();
            let still = still.clone();
            threads.push(s.spawn(move || {
                let mut ops = 0u64;
                for i in 0usize.. {
                    if i % 64 == 0 && Instant::now() >= until {
                        break;
                    }
                    let k = (i + r) % (CYCLE.len() + STILL.len());
                    if let Some(n) = CYCLE.get(k) {
                        let path = format!("/d/{n}");
                        match p.stat(&path) {
                            Ok(st) => {
                                assert_eq!(st.st_ino, moving, "{fast}: {path}");
                                assert_eq!(st.st_mode & S_IFMT, S_IFDIR, "{fast}: {path}");
                            }
                            Err(e) => assert_eq!(e, Errno::ENOENT, "{fast}: {path}"),
                        }
                    } else {
                        let j = k - CYCLE.len();
                        let path = format!("/d/{}", STILL[j]);
                        let st = p
                            .stat(&path)
                            .unwrap_or_else(|e| panic!("{fast}: {path}: {e:?}"));
                        assert_eq!(st.st_ino, still[j], "{fast}: {path}");
                    }
                    ops += 1;
                }
                ops
            }));
        }
        let mut p = cwd;
        threads.push(s.spawn(move || {
            let mut ops = 0u64;
            for i in 0usize.. {
                if i % 64 == 0 && Instant::now() >= until {
                    break;
                }
                // Never ENOENT: the directory is out of the hash for the
                // instant of its move, but getcwd reads under the rename
                // count and retries (dcache::path).
                let path = p
                    .getcwd()
                    .unwrap_or_else(|e| panic!("{fast}: getcwd failed: {e:?}"));
                let path = String::from_utf8(path).unwrap();
                assert!(
                    path.strip_prefix("/d/").is_some_and(|n| CYCLE.contains(&n)),
                    "{fast}: getcwd gave {path:?}"
                );
                ops += 1;
            }
            ops
        }));
        counts = threads.into_iter().map(|t| t.join().unwrap()).collect();
    });
    assert!(counts.iter().all(|&n| n > 50), "{fast}: {counts:?}");
    assert_eq!(
        setup.stat(format!("/d/{}", CYCLE[0])).unwrap().st_ino,
        moving
    );
    for n in &CYCLE[1..] {
        assert_eq!(
            setup.stat(format!("/d/{n}")).map(|_| ()),
            Err(Errno::ENOENT)
        );
    }
    setup.chdir(format!("/d/{}", CYCLE[0])).unwrap();
    assert_eq!(
        setup.getcwd().unwrap(),
        format!("/d/{}", CYCLE[0]).as_bytes()
    );
    setup.chdir("/").unwrap();
    drop(setup);
    vfs.check_consistency()
        .unwrap_or_else(|e| panic!("{fast}: {e}"));
    eprintln!("{fast}: {counts:?} calls per thread");
}

#[test]
fn stress_dentry_names_seeds() {
    run(FastPaths::seeds());
}

#[test]
fn stress_dentry_names_walk() {
    run(FastPaths::seeds().with("path_cache", false));
}

#[test]
fn stress_dentry_names_stock() {
    run(FastPaths::stock());
}

/// Every length from 1 to 40 bytes (either side of the 8 a dentry holds),
/// renamed to every other kind, with the switch on and off: lookups, the
/// directory's own path (`getcwd`, the dentry's name copied) and the
/// listing all give the names back whole.
#[test]
fn names_of_every_length_survive_renames() {
    for on in [true, false] {
        let fast = FastPaths::seeds().with("dentry_inline_name", on);
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        // Lower case for the names made, upper case for the renames'
        // targets (so no target is a name that exists).
        let name = |len: usize, tag: u8| -> String {
            let base = if tag == 0 { b'a' } else { b'A' };
            (0..len)
                .map(|i| char::from(base + ((i as u8).wrapping_mul(7) ^ tag) % 26))
                .collect()
        };
        for len in 1..=40 {
            let a = format!("/{}", name(len, 0));
            p.mkdir(&a, 0o755).unwrap();
            let ino = p.stat(&a).unwrap().st_ino;
            p.chdir(&a).unwrap();
            assert_eq!(p.getcwd().unwrap(), a.as_bytes(), "{fast}");
            for to in [1, 7, 8, 9, 16, 33, len] {
                let b = format!("/{}", name(to, 1 + len as u8));
                p.rename(&a, &b).unwrap();
                assert_eq!(p.stat(&b).unwrap().st_ino, ino, "{fast}: {b}");
                assert_eq!(p.stat(&a).map(|_| ()), Err(Errno::ENOENT), "{fast}: {a}");
                assert_eq!(p.getcwd().unwrap(), b.as_bytes(), "{fast}: {a} -> {b}");
                p.rename(&b, &a).unwrap();
                assert_eq!(p.getcwd().unwrap(), a.as_bytes(), "{fast}: {b} -> {a}");
            }
            p.chdir("/").unwrap();
        }
        let mut listed: Vec<String> = p
            .read_dir("/")
            .unwrap()
            .map(|e| String::from_utf8(e.unwrap().name).unwrap())
            .collect();
        listed.sort();
        let mut want: Vec<String> = (1..=40).map(|l| name(l, 0)).collect();
        want.sort();
        assert_eq!(listed, want, "{fast}");
        for len in 1..=40 {
            p.rmdir(format!("/{}", name(len, 0))).unwrap();
        }
        drop(p);
        vfs.check_consistency()
            .unwrap_or_else(|e| panic!("{fast}: {e}"));
    }
}
