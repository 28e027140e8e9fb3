//! The path cache's recorded way to the inode (`FastPaths::path_cache_inode`:
//! an entry of a positive answer also records the inode's object, and a
//! stat answered by the cache reads the attributes through it).
//!
//! A differential: a seeded sequence of changes to a file four components
//! deep and to the names around it — writes and truncates, chmod, chown,
//! hard links, unlink and re-create, a rename over it, renames of an
//! ancestor, and many other files made in a dentry cache small enough that
//! the file's dentry and inode are evicted and instantiated again — with
//! each path stat'ed three times after every change (the third answered by
//! the cache: `path_cache_admit` fills it on the second miss). Run with the switch on and off (everything else as `seeds`),
//! every answer but the times must be the same.
//!
//! A stress: a writer replaces the file over and over (by a rename over it,
//! or an unlink and a create), file `g` with size `g`, publishing `g` once
//! it is in place; stat threads read the published number before each
//! stat, and a stat that finds the file must see that size or a later
//! file's: an answer from a replaced inode (an entry whose recorded object
//! outlived its dentry's change) would show a smaller one. Under both
//! presets and with the switch alone off.
//! `UVFS_STRESS_SECS` lengthens it.

mod support;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::rng::Rng;
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Stat, Vfs};

const FILE: &str = "/a/b/c/f";

fn secs() -> f64 {
    std::env::var("UVFS_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

fn with_switch(on: bool) -> FastPaths {
    let mut f = FastPaths::seeds();
    f.path_cache_inode = on;
    f
}

/// A stat's answer without its times (two runs' clocks differ).
type Seen = Result<(u64, u64, u64, u32, u32, u32, i64, i64), Errno>;

fn seen(r: Result<Stat, Errno>) -> Seen {
    r.map(|s| {
        (
            s.st_dev,
            s.st_ino,
            s.st_nlink,
            s.st_mode,
            s.st_uid,
            s.st_gid,
            s.st_size,
            s.st_blocks,
        )
    })
}

fn write_len(p: &mut Process, path: &str, len: usize) {
    let fd = p.open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644).unwrap();
    assert_eq!(p.write(fd, &vec![7u8; len]).unwrap(), len);
    p.close(fd).unwrap();
}

/// The differential's run: every stat's answer, in order.
fn run_changes(on: bool, seed: u64) -> Vec<Seen> {
    let vfs = Vfs::builder()
        .fastpaths(with_switch(on))
        .dcache_limit(8)
        .icache_limit(8)
        .build();
    let mut p = Process::new(&vfs).unwrap();
    for d in ["/a", "/a/b", "/a/b/c", "/x", "/a/b/y"] {
        p.mkdir(d, 0o755).unwrap();
    }
    write_len(&mut p, FILE, 3);
    let paths = [FILE, "/a/b/c/g", "/a/b/c/h", "/a/b/y/f", "/x/f"];
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut made = 0;
    for _ in 0..600 {
        let path = rng.pick(&paths);
        let other = rng.pick(&paths);
        match rng.below(11) {
            0 | 1 => write_len(&mut p, path, rng.below(9000)),
            2 => out.push(seen(
                p.truncate(path, rng.below(100) as i64)
                    .map(|_| Stat::default()),
            )),
            3 => out.push(seen(
                p.chmod(path, 0o600 + rng.below(0o177) as u32)
                    .map(|_| Stat::default()),
            )),
            4 => out.push(seen(
                p.chown(path, rng.below(3) as u32, rng.below(3) as u32)
                    .map(|_| Stat::default()),
            )),
            5 => out.push(seen(p.link(path, other).map(|_| Stat::default()))),
            6 => out.push(seen(p.unlink(path).map(|_| Stat::default()))),
            7 => out.push(seen(p.rename(other, path).map(|_| Stat::default()))),
            8 => {
                // An ancestor renamed away and back.
                out.push(seen(p.rename("/a/b", "/x/b").map(|_| Stat::default())));
                out.push(seen(p.stat(FILE)));
                out.push(seen(p.rename("/x/b", "/a/b").map(|_| Stat::default())));
            }
            _ => {
                // Other files: the small caches evict the file's dentry
                // and inode, and the next stat instantiates them again.
                for _ in 0..12 {
                    made += 1;
                    write_len(&mut p, &format!("/x/n{made}"), 1);
                }
            }
        }
        for q in paths {
            out.push(seen(p.stat(q)));
            out.push(seen(p.stat(q)));
            out.push(seen(p.stat(q)));
        }
    }
    out
}

#[test]
fn recorded_inode_answers_as_the_walk_does() {
    for seed in 1..=4 {
        let on = run_changes(true, seed);
        let off = run_changes(false, seed);
        assert_eq!(on.len(), off.len());
        for (i, (a, b)) in on.iter().zip(&off).enumerate() {
            assert_eq!(a, b, "seed {seed}, answer {i}");
        }
        // The sequence met the file both present and gone.
        assert!(on.iter().any(|r| r.is_ok()) && on.iter().any(|r| r.is_err()));
    }
}

fn replace_vs_stat(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut p = Process::new(&vfs).unwrap();
    for d in ["/a", "/a/b", "/a/b/c"] {
        p.mkdir(d, 0o755).unwrap();
    }
    sized(&mut p, FILE, 1);
    let published = AtomicU64::new(1);
    let until = Instant::now() + Duration::from_secs_f64(secs());
    let mut found = 0u64;
    std::thread::scope(|s| {
        let mut w = p.fork().unwrap();
        let published = &published;
        s.spawn(move || {
            let mut g = 1u64;
            while !g.is_multiple_of(16) || Instant::now() < until {
                g += 1;
                if g.is_multiple_of(2) {
                    // Replaced by a rename over it (the victim unhashed).
                    sized(&mut w, "/a/b/c/t", g);
                    w.rename("/a/b/c/t", FILE).unwrap();
                } else {
                    // Unlinked (its dentry made negative in place with
                    // `d_delete`) and created again in the same dentry,
                    // empty until its size is set.
                    w.unlink(FILE).unwrap();
                    sized(&mut w, FILE, g);
                }
                published.store(g, Ordering::SeqCst);
            }
        });
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let mut r = p.fork().unwrap();
                s.spawn(move || {
                    let mut hits = 0u64;
                    while Instant::now() < until {
                        for _ in 0..64 {
                            // File `want` (size `want`) was in place before
                            // this stat began: the answer is it or a later
                            // file (size 0 until set, or larger), never an
                            // earlier one.
                            let want = published.load(Ordering::SeqCst);
                            match r.stat(FILE) {
                                Ok(st) => {
                                    hits += 1;
                                    let size = st.st_size as u64;
                                    assert!(
                                        size == 0 || size >= want,
                                        "a replaced file: size {size} after {want} was in place"
                                    );
                                }
                                Err(e) => assert_eq!(e, Errno::ENOENT),
                            }
                        }
                    }
                    hits
                })
            })
            .collect();
        for r in readers {
            found += r.join().unwrap();
        }
    });
    assert!(found > 0, "no stat found the file");
}

/// Creates or truncates `path` and sets its size to `size` (a hole).
fn sized(p: &mut Process, path: &str, size: u64) {
    let fd = p.open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644).unwrap();
    p.ftruncate(fd, size as i64).unwrap();
    p.close(fd).unwrap();
}

#[test]
fn replace_vs_stat_with_the_switch() {
    replace_vs_stat(with_switch(true));
}

#[test]
fn replace_vs_stat_without_the_switch() {
    replace_vs_stat(with_switch(false));
}

#[test]
fn replace_vs_stat_stock() {
    replace_vs_stat(FastPaths::stock());
}
