//! Every combination of the fast-path switches gives the same observable
//! results on the same sequence of namespace calls: a seeded sequence of
//! opens (all flag kinds), reads, writes, seeks, dups, closes, renames,
//! links, symlinks, unlinks, mkdirs, rmdirs, stats and directory listings is
//! run under each of the 2^n `FastPaths` values, with small caches so the
//! inode cache's two search paths (seed 002) and eviction are exercised, and
//! every return value, errno, stat field (times excepted) and listing is
//! compared with the stock run's.

mod support;
use support::rng::Rng;
use uvfs::uapi::*;
use uvfs::{FastPaths, Process, Vfs};

const STEPS: usize = 600;

fn name(rng: &mut Rng) -> String {
    let n = rng.below(8);
    match rng.below(4) {
        0 => format!("/d{}/f{n}", rng.below(3)),
        1 => format!("/d{}", rng.below(3)),
        2 => format!("f{n}"),
        _ => format!("/d{}/s{}/f{n}", rng.below(3), rng.below(2)),
    }
}

fn run(fast: FastPaths, seed: u64) -> Vec<String> {
    let vfs = Vfs::builder()
        .fastpaths(fast)
        .dcache_limit(8)
        .icache_limit(8)
        .build();
    let mut p = Process::new(&vfs).unwrap();
    let mut rng = Rng::new(seed);
    let mut fds: Vec<i32> = Vec::new();
    let mut log = Vec::new();
    for step in 0..STEPS {
        let a = name(&mut rng);
        let b = name(&mut rng);
        let fd = if fds.is_empty() {
            99
        } else {
            fds[rng.below(fds.len())]
        };
        let entry = match rng.below(16) {
            0 | 1 => {
                let flags = [
                    O_CREAT | O_RDWR,
                    O_RDONLY,
                    O_CREAT | O_EXCL | O_WRONLY,
                    O_RDWR | O_TRUNC,
                    O_WRONLY | O_APPEND,
                    O_RDONLY | O_DIRECTORY,
                    O_PATH,
                    O_CREAT | O_RDWR | O_CLOEXEC,
                ][rng.below(8)];
                let r = p.open(&a, flags, 0o644);
                if let Ok(fd) = r {
                    fds.push(fd);
                }
                format!("open {a} {flags:#o} -> {r:?}")
            }
            2 => {
                let buf = vec![b'a' + rng.below(26) as u8; rng.below(300)];
                format!("write {fd} {} -> {:?}", buf.len(), p.write(fd, &buf))
            }
            3 => {
                let mut buf = vec![0u8; rng.below(400)];
                let r = p.read(fd, &mut buf);
                let got = r.map(|n| buf[..n].to_vec());
                format!("read {fd} -> {got:?}")
            }
            4 => {
                let whence = rng.below(5) as i32;
                let off = rng.below(500) as i64 - 100;
                format!(
                    "lseek {fd} {off} {whence} -> {:?}",
                    p.lseek(fd, off, whence)
                )
            }
            5 => {
                let r = p.dup(fd);
                if let Ok(d) = r {
                    fds.push(d);
                }
                format!("dup {fd} -> {r:?}")
            }
            6 => {
                let r = p.close(fd);
                fds.retain(|&x| x != fd);
                format!("close {fd} -> {r:?}")
            }
            7 => format!("rename {a} {b} -> {:?}", p.rename(&a, &b)),
            8 => format!("link {a} {b} -> {:?}", p.link(&a, &b)),
            9 => format!("symlink {b} {a} -> {:?}", p.symlink(&b, &a)),
            10 => format!("unlink {a} -> {:?}", p.unlink(&a)),
            11 => format!("mkdir {a} -> {:?}", p.mkdir(&a, 0o755)),
            12 => format!("rmdir {a} -> {:?}", p.rmdir(&a)),
            13 => {
                let r = p
                    .lstat(&a)
                    .map(|s| (s.st_ino, s.st_mode, s.st_nlink, s.st_size, s.st_blocks));
                format!("lstat {a} -> {r:?}")
            }
            14 => {
                let r = p
                    .fstat(fd)
                    .map(|s| (s.st_ino, s.st_mode, s.st_nlink, s.st_size));
                format!("fstat {fd} -> {r:?}")
            }
            _ => {
                let r = p.open(&a, O_RDONLY | O_DIRECTORY, 0).map(|dfd| {
                    let names: Vec<_> = p
                        .readdir(dfd)
                        .map(|e| e.map(|e| (e.name, e.d_ino, e.d_off)))
                        .collect();
                    p.close(dfd).unwrap();
                    names
                });
                format!("list {a} -> {r:?}")
            }
        };
        log.push(format!("{step}: {entry}"));
    }
    for fd in fds {
        let _ = p.close(fd);
    }
    drop(p);
    vfs.check_consistency()
        .unwrap_or_else(|e| panic!("{fast}: {e}"));
    log
}

#[test]
fn every_fast_path_combination_is_observably_identical_on_the_namespace() {
    let combos: Vec<FastPaths> = FastPaths::all_combinations().collect();
    assert_eq!(combos.len(), 106);
    for seed in [1u64, 0xfeed, 777] {
        let reference = run(combos[0], seed);
        let distinct_errors = reference.iter().filter(|l| l.contains("Err(")).count();
        let successes = reference.iter().filter(|l| l.contains("Ok(")).count();
        assert!(
            distinct_errors > 50 && successes > 50,
            "the sequence exercises both outcomes"
        );
        for &fast in &combos[1..] {
            let log = run(fast, seed);
            if let Some(i) = (0..STEPS).find(|&i| log[i] != reference[i]) {
                panic!(
                    "seed {seed}: `{fast}` differs from `{}` at {}:\n  {}\n  {}",
                    combos[0], i, reference[i], log[i]
                );
            }
        }
    }
}
