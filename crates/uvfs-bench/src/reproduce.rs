//! `reproduce`: runs each seed's experiment on uvfs (real path walk, dentry
//! and inode caches, tmpfs), fast path off and on, interleaved A B A B in
//! one process, with the host kernel's figure for the same loop beside it.
//! (Its HTML report, `--full` and `--out` are still to come.)

use std::ffi::CString;
use std::hint::black_box;
use std::time::{Duration, Instant};
use uvfs::{Errno, FastPaths, Process, Vfs, uapi};

/// One seed's experiment.
struct Row {
    seed: &'static str,
    test: &'static str,
    switch: Option<&'static str>,
    note: &'static str,
}

const ROWS: &[Row] = &[
    Row {
        seed: "000",
        test: "open1",
        switch: Some("close_sync"),
        note: "close(2) releases synchronously",
    },
    Row {
        seed: "001",
        test: "open1",
        switch: Some("typesafe_files"),
        note: "type-stable file objects",
    },
    Row {
        seed: "001",
        test: "openneg",
        switch: Some("badopen_immediate"),
        note: "failed open frees at once",
    },
    Row {
        seed: "003",
        test: "getfl",
        switch: Some("fget_masked"),
        note: "masked branch-free fd lookup",
    },
    Row {
        seed: "004",
        test: "dup100",
        switch: Some("alloc_fd_fast"),
        note: "alloc_fd: next_fd's word first",
    },
    Row {
        seed: "002",
        test: "fstree",
        switch: Some("icache_lockless"),
        note: "inode hash searched without its lock",
    },
];

/// Runs `op` repeatedly for `dur`, returning operations per second.
fn rate(dur: Duration, mut op: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    loop {
        for _ in 0..256 {
            op();
        }
        n += 256;
        let el = start.elapsed();
        if el >= dur {
            return n as f64 / el.as_secs_f64();
        }
    }
}

/// The file will-it-scale's open1 opens, and the missing one openneg tries.
const FILE: &str = "/tmp/willitscale.file";
const MISSING: &str = "/tmp/nonexistent";

/// fstree's shape per task: directories x files (seed 002: 1000 x 1000 per
/// thread on 20 threads; scaled to this machine), and the cache limits set
/// below one task's tree so every walk misses, as in the seed.
const FSTREE_DIRS: usize = 40;
const FSTREE_FILES: usize = 100;
const FSTREE_TASKS: usize = 2;
const FSTREE_CACHE: usize = FSTREE_DIRS * FSTREE_FILES / 4;

/// A VFS with the will-it-scale layout: `/tmp` and the file open1 opens.
fn wis_vfs(fast: FastPaths) -> Result<(std::sync::Arc<Vfs>, Process), Errno> {
    let vfs = Vfs::new(fast);
    let mut p = Process::new(&vfs)?;
    p.mkdir("/tmp", 0o1777)?;
    let fd = p.open(FILE, uapi::O_CREAT | uapi::O_RDWR, 0o600)?;
    p.close(fd)?;
    Ok((vfs, p))
}

/// One timed sample of `test` on uvfs with `fast`.
fn sample_uvfs(test: &str, fast: FastPaths, dur: Duration) -> Result<f64, Errno> {
    let (_vfs, mut p) = wis_vfs(fast)?;
    Ok(match test {
        "open1" => rate(dur, || {
            let fd = p.open(FILE, uapi::O_RDWR, 0).expect("open");
            p.close(black_box(fd)).expect("close");
        }),
        "openneg" => rate(dur, || {
            let r = p.open(MISSING, uapi::O_RDONLY, 0);
            assert_eq!(black_box(r), Err(Errno::ENOENT));
        }),
        "getfl" => {
            let fd = p.open(FILE, uapi::O_RDWR, 0)?;
            rate(dur, || {
                black_box(p.fcntl(black_box(fd), uapi::F_GETFL, 0).expect("fcntl"));
            })
        }
        "dup100" => {
            let fd = p.open(FILE, uapi::O_RDWR, 0)?;
            for _ in 0..100 {
                p.dup(fd)?;
            }
            p.close(70)?;
            rate(dur, || {
                let d = p.dup(black_box(fd)).expect("dup");
                p.close(d).expect("close");
            })
        }
        _ => unreachable!("unknown test {test}"),
    })
}

/// fstree on uvfs: a VFS whose caches hold a quarter of one task's tree,
/// with one tree per task.
fn fstree_vfs(fast: FastPaths) -> Result<std::sync::Arc<Vfs>, Errno> {
    let vfs = Vfs::builder()
        .fastpaths(fast)
        .dcache_limit(FSTREE_CACHE)
        .icache_limit(FSTREE_CACHE)
        .build();
    let mut p = Process::new(&vfs)?;
    for t in 0..FSTREE_TASKS {
        p.mkdir(format!("/t{t}"), 0o755)?;
        for d in 0..FSTREE_DIRS {
            p.mkdir(format!("/t{t}/d{d}"), 0o755)?;
            for f in 0..FSTREE_FILES {
                let fd = p.open(
                    format!("/t{t}/d{d}/f{f}"),
                    uapi::O_CREAT | uapi::O_WRONLY,
                    0o644,
                )?;
                p.close(fd)?;
            }
        }
    }
    Ok(vfs)
}

/// One fstree sample: every task walks its own tree, stat-ing each file,
/// over and over for `dur`; returns total stats per second.
fn sample_fstree(vfs: &std::sync::Arc<Vfs>, dur: Duration) -> f64 {
    let paths: Vec<Vec<String>> = (0..FSTREE_TASKS)
        .map(|t| {
            (0..FSTREE_DIRS)
                .flat_map(|d| (0..FSTREE_FILES).map(move |f| format!("/t{t}/d{d}/f{f}")))
                .collect()
        })
        .collect();
    let start = Instant::now();
    let total: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = paths
            .iter()
            .map(|mine| {
                s.spawn(move || {
                    let mut p = Process::new(vfs).expect("process");
                    let mut n = 0u64;
                    while start.elapsed() < dur {
                        for path in mine {
                            black_box(p.stat(path).expect("stat"));
                        }
                        n += mine.len() as u64;
                    }
                    n
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("fstree task")).sum()
    });
    total as f64 / start.elapsed().as_secs_f64()
}

/// fstree on the host: the same trees under `dir`, walked by the same
/// number of threads with stat(2).
fn sample_host_fstree(dir: &str, dur: Duration) -> f64 {
    let paths: Vec<Vec<CString>> = (0..FSTREE_TASKS)
        .map(|t| {
            let mut v = Vec::new();
            for d in 0..FSTREE_DIRS {
                std::fs::create_dir_all(format!("{dir}/t{t}/d{d}")).expect("host fstree dir");
                for f in 0..FSTREE_FILES {
                    let path = format!("{dir}/t{t}/d{d}/f{f}");
                    std::fs::write(&path, b"").expect("host fstree file");
                    v.push(CString::new(path).expect("path"));
                }
            }
            v
        })
        .collect();
    let start = Instant::now();
    let total: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = paths
            .iter()
            .map(|mine| {
                s.spawn(move || {
                    let mut n = 0u64;
                    // SAFETY: an all-zero `struct stat` is a valid value.
                    let mut st: libc::stat = unsafe { std::mem::zeroed() };
                    while start.elapsed() < dur {
                        for path in mine {
                            // SAFETY: a NUL-terminated path we own and a
                            // `stat` buffer on our stack.
                            let r = unsafe { libc::stat(path.as_ptr(), &mut st) };
                            assert_eq!(black_box(r), 0);
                        }
                        n += mine.len() as u64;
                    }
                    n
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("host fstree task"))
            .sum()
    });
    total as f64 / start.elapsed().as_secs_f64()
}

/// The host kernel running the same loop with real syscalls, on a tmpfs
/// directory (`/dev/shm`) for the path-based tests.
fn sample_host(test: &str, dir: &str, dur: Duration) -> f64 {
    let file = CString::new(format!("{dir}/file")).unwrap();
    let missing = CString::new(format!("{dir}/missing")).unwrap();
    // SAFETY: plain libc calls on NUL-terminated strings we own and on fds
    // this function opened; no memory is shared with the kernel.
    unsafe {
        let fd = libc::open(file.as_ptr(), libc::O_RDWR | libc::O_CREAT, 0o600);
        assert!(fd >= 0, "open {dir}/file: {}", Errno::last_os_error());
        let r = match test {
            "open1" => rate(dur, || {
                let f = libc::open(file.as_ptr(), libc::O_RDWR);
                assert!(f >= 0);
                libc::close(black_box(f));
            }),
            "openneg" => rate(dur, || {
                let f = libc::open(missing.as_ptr(), libc::O_RDONLY);
                assert!(black_box(f) < 0);
            }),
            "getfl" => rate(dur, || {
                black_box(libc::fcntl(black_box(fd), libc::F_GETFL));
            }),
            "dup100" => {
                let extra: Vec<i32> = (0..100).map(|_| libc::dup(fd)).collect();
                let r = rate(dur, || {
                    let d = libc::dup(black_box(fd));
                    libc::close(d);
                });
                for d in extra {
                    libc::close(d);
                }
                r
            }
            _ => unreachable!(),
        };
        libc::close(fd);
        r
    }
}

/// Mean and sample standard deviation.
fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

/// Runs one workload on uvfs (seeds preset) for `secs` seconds and prints
/// its rate: a clean target for `perf record` / `valgrind --tool=callgrind`.
pub fn profile_loop(test: &str, secs: f64) -> Result<(), String> {
    if !matches!(test, "open1" | "openneg" | "getfl" | "dup100" | "fstree") {
        return Err(format!(
            "loop knows open1, openneg, getfl, dup100 and fstree, not {test}"
        ));
    }
    let dur = Duration::from_secs_f64(secs);
    let ops = if test == "fstree" {
        let vfs = fstree_vfs(FastPaths::seeds()).map_err(|e| format!("fstree tree: {e}"))?;
        sample_fstree(&vfs, dur)
    } else {
        sample_uvfs(test, FastPaths::seeds(), dur).map_err(|e| format!("uvfs loop: {e}"))?
    };
    println!("{test}: {ops:.0} ops/s");
    Ok(())
}

/// `uvfs-bench reproduce [--quick]`: the table of the seeds' A/B figures.
/// `quick`: 4 rounds of 100 ms per side (smoke test); else 10 rounds of
/// 300 ms.
pub fn reproduce(quick: bool) {
    let (rounds, dur) = if quick {
        (4, Duration::from_millis(100))
    } else {
        (10, Duration::from_millis(300))
    };
    let dir = format!("/dev/shm/uvfs-bench-{}", std::process::id());
    std::fs::create_dir_all(&dir).expect("create a directory on /dev/shm for the host baseline");

    println!("uvfs seed reproduction, {rounds} rounds x {dur:?} per side, A/B interleaved");
    println!("uvfs: path walk + dentry/inode caches + tmpfs, files under /tmp of the VFS");
    println!("host baseline: real syscalls, files in {dir} (tmpfs)");
    println!(
        "fstree: {FSTREE_TASKS} tasks x {FSTREE_DIRS} dirs x {FSTREE_FILES} files, uvfs caches limited to {FSTREE_CACHE} entries; ops = stats\n"
    );
    println!(
        "{:<5} {:<8} {:<18} {:>14} {:>14} {:>9} {:>17} {:>13} {:>9}",
        "seed",
        "test",
        "switch",
        "A: off ops/s",
        "B: on ops/s",
        "change",
        "95% CI",
        "host ops/s",
        "B/host"
    );
    for row in ROWS {
        let Some(switch) = row.switch else {
            println!(
                "{:<5} {:<8} {:<18} not reproducible yet: {}",
                row.seed, row.test, "-", row.note
            );
            continue;
        };
        let off = FastPaths::seeds().with(switch, false);
        let on = FastPaths::seeds();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let host = if row.test == "fstree" {
            // Both trees are built once; the walks interleave.
            let va = fstree_vfs(off).expect("fstree tree");
            let vb = fstree_vfs(on).expect("fstree tree");
            let _ = sample_fstree(&vb, dur / 4);
            for _ in 0..rounds {
                a.push(sample_fstree(&va, dur));
                b.push(sample_fstree(&vb, dur));
            }
            sample_host_fstree(&dir, dur * 2)
        } else {
            // Warm-up, then interleave.
            let _ = sample_uvfs(row.test, on, dur / 4);
            for _ in 0..rounds {
                a.push(sample_uvfs(row.test, off, dur).expect("uvfs sample"));
                b.push(sample_uvfs(row.test, on, dur).expect("uvfs sample"));
            }
            sample_host(row.test, &dir, dur * 2)
        };
        let ((ma, sa), (mb, sb)) = (mean_sd(&a), mean_sd(&b));
        let change = (mb / ma - 1.0) * 100.0;
        // Normal-approximation CI of the difference of means, in % of A.
        let half = 1.96 * (sa * sa / a.len() as f64 + sb * sb / b.len() as f64).sqrt() / ma * 100.0;
        println!(
            "{:<5} {:<8} {:<18} {:>14.0} {:>14.0} {:>+8.1}% {:>+7.1}%..{:>+6.1}% {:>13.0} {:>8.1}x",
            row.seed,
            row.test,
            switch,
            ma,
            mb,
            change,
            change - half,
            change + half,
            host,
            mb / host
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("\nmemory per object (bytes):");
    for (what, bytes) in uvfs::object_sizes() {
        println!("  {bytes:>5}  {what}");
    }
}
