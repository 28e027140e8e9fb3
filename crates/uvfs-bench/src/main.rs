//! The uvfs lab, thin edition: `uvfs-bench reproduce [--quick]` runs each
//! seed's experiment at the layer uvfs has so far (fd table and file
//! lifecycle; no path walk or tmpfs yet), fast path off and on, interleaved
//! A B A B in one process, with the host kernel's figure for the nearest
//! will-it-scale loop beside it. The lab issue replaces this with the full
//! CLI (`run`, `list`, `compare`, JSON and HTML reports).

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
        switch: None,
        note: "inode cache: needs the namespace issue",
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

/// One timed sample of `test` on uvfs with `fast`.
fn sample_uvfs(test: &str, fast: FastPaths, dur: Duration) -> Result<f64, Errno> {
    let vfs = Vfs::new(fast);
    let mut p = Process::new(&vfs)?;
    Ok(match test {
        "open1" => rate(dur, || {
            let fd = p.open_with(uapi::O_RDWR, |_| Ok(())).expect("open");
            p.close(black_box(fd)).expect("close");
        }),
        "openneg" => rate(dur, || {
            let r = p.open_with(uapi::O_RDONLY, |_| Err(Errno::ENOENT));
            assert_eq!(black_box(r), Err(Errno::ENOENT));
        }),
        "getfl" => {
            let fd = p.open_with(uapi::O_RDWR, |_| Ok(()))?;
            rate(dur, || {
                black_box(p.fcntl(black_box(fd), uapi::F_GETFL, 0).expect("fcntl"));
            })
        }
        "dup100" => {
            let fd = p.open_with(uapi::O_RDWR, |_| Ok(()))?;
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

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: uvfs-bench reproduce [--quick]\n\n\
        Runs each seed's experiment on uvfs with the fast path off (A) and on (B),\n\
        interleaved A B A B in one process, and the host kernel's nearest loop.\n\
        --quick   4 rounds of 100 ms per side (smoke test); default 10 rounds of 300 ms.";
    let quick = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["reproduce"] => false,
        ["reproduce", "--quick"] => true,
        ["-h" | "--help"] | ["help"] => {
            println!("{usage}");
            return;
        }
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let (rounds, dur) = if quick {
        (4, Duration::from_millis(100))
    } else {
        (10, Duration::from_millis(300))
    };
    let dir = format!("/dev/shm/uvfs-bench-{}", std::process::id());
    std::fs::create_dir_all(&dir).expect("create a directory on /dev/shm for the host baseline");

    println!(
        "uvfs seed reproduction (fd table and file lifecycle layer), {rounds} rounds x {dur:?} per side"
    );
    println!("host baseline: real syscalls, files in {dir} (tmpfs)");
    println!(
        "note: uvfs 'open' is the fd + file-object lifecycle only; path walk and tmpfs arrive with the namespace issue\n"
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
        // Warm-up, then interleave.
        let _ = sample_uvfs(row.test, on, dur / 4);
        for _ in 0..rounds {
            a.push(sample_uvfs(row.test, off, dur).expect("uvfs sample"));
            b.push(sample_uvfs(row.test, on, dur).expect("uvfs sample"));
        }
        let host = sample_host(row.test, &dir, dur * 2);
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
}
