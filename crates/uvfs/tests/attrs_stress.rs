//! The attributes `stat` reads while writers change them
//! (`FastPaths::lockless_attrs`: without the inode's lock, under a
//! sequence count; its stock side: under the lock). Writer threads append
//! whole pages to one file and truncate it to whole pages, set a second
//! file's atime and mtime together, its owner and group together, and add
//! and remove hard links to it; reader threads `fstat` and `stat` both
//! files all the while, under both presets. Each attribute set a reader
//! gets must be one some writer left: a size a multiple of the page with
//! one page held per 4 KiB (no holes are ever made), atime equal to mtime,
//! uid equal to gid, a link count within bounds; a reader never sees the
//! ctime go back; and a change is seen once the call that made it has
//! returned (a writer tells the readers the last time it set, and the next
//! `stat` shows that time or a later one).
//!
//! Seeded by thread number; `UVFS_STRESS_SECS` lengthens the run.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};
use uvfs::stat::Stat;
use uvfs::uapi::*;
use uvfs::{FastPaths, Process, Vfs};

const PAGE: usize = 4096;
const MAX_PAGES: i64 = 16;
const LINKS: u32 = 4;

fn secs() -> f64 {
    std::env::var("UVFS_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

/// What every attribute set of the data file must satisfy.
fn check_data(st: &Stat) {
    assert_eq!(st.st_size % PAGE as i64, 0, "{st:?}");
    assert_eq!(
        st.st_blocks * 512,
        st.st_size,
        "size and blocks torn: {st:?}"
    );
    assert!(st.st_size <= MAX_PAGES * PAGE as i64, "{st:?}");
}

/// What every attribute set of the times file must satisfy; `told` is the
/// last time a writer finished setting before this `stat` began.
fn check_times(st: &Stat, told: i64) {
    assert_eq!(
        (st.st_atime, st.st_atime_nsec),
        (st.st_mtime, st.st_mtime_nsec),
        "atime and mtime torn: {st:?}"
    );
    assert_eq!(st.st_uid, st.st_gid, "owner and group torn: {st:?}");
    assert!((1..=u64::from(LINKS) + 1).contains(&st.st_nlink), "{st:?}");
    assert!(
        st.st_atime >= told,
        "a set time not seen after the call returned: {} < {told}",
        st.st_atime
    );
}

fn run(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut setup = Process::new(&vfs).unwrap();
    setup.write_file("/data", b"").unwrap();
    setup.write_file("/times", b"").unwrap();
    let told = AtomicI64::new(0);
    let until = Instant::now() + Duration::from_secs_f64(secs());
    let (mut reads, mut changes) = (0u64, 0u64);
    std::thread::scope(|s| {
        // Data: appends of one page (at most MAX_PAGES) and truncations
        // to a whole number of pages.
        // Every thread stops at the same time (so one that fails never
        // leaves the others waiting for it).
        let mut p = setup.fork().unwrap();
        let data = s.spawn(move || {
            let fd = p.open("/data", O_RDWR | O_APPEND, 0).unwrap();
            let page = [7u8; PAGE];
            let mut n = 0u64;
            for i in 0u64.. {
                if Instant::now() >= until {
                    break;
                }
                let size = p.fstat(fd).unwrap().st_size;
                if size < MAX_PAGES * PAGE as i64 && i % 3 != 0 {
                    assert_eq!(p.write(fd, &page).unwrap(), PAGE);
                } else {
                    let keep = (i * 7919) % (size as u64 / PAGE as u64 + 1);
                    p.ftruncate(fd, (keep * PAGE as u64) as i64).unwrap();
                }
                n += 1;
            }
            n
        });
        // Times, owner and links of the second file.
        let mut p = setup.fork().unwrap();
        let told_ = &told;
        let times = s.spawn(move || {
            let fd = p.open("/times", O_RDONLY, 0).unwrap();
            let mut n = 0u64;
            for k in 1i64.. {
                if Instant::now() >= until {
                    break;
                }
                let t = Timespec {
                    tv_sec: k,
                    tv_nsec: k * 13 % 1_000_000_000,
                };
                p.futimens(fd, Some([t, t])).unwrap();
                told_.store(k, Ordering::Release);
                p.fchown(fd, k as u32 % 50, k as u32 % 50).unwrap();
                let l = format!("/l{}", k as u32 % LINKS);
                if p.link("/times", &l).is_err() {
                    p.unlink(&l).unwrap();
                }
                n += 3;
            }
            n
        });
        // Readers: fstat and stat (the path cache's answer) of both.
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let mut p = setup.fork().unwrap();
                let told_ = &told;
                s.spawn(move || {
                    let df = p.open("/data", O_RDONLY, 0).unwrap();
                    let tf = p.open("/times", O_RDONLY, 0).unwrap();
                    let (mut last_ctime, mut n) = ((0, 0), 0u64);
                    while Instant::now() < until {
                        for _ in 0..64 {
                            let k = told_.load(Ordering::Acquire);
                            let st = if (n + r) % 2 == 0 {
                                p.fstat(tf).unwrap()
                            } else {
                                p.stat("/times").unwrap()
                            };
                            check_times(&st, k);
                            let c = (st.st_ctime, st.st_ctime_nsec);
                            assert!(c >= last_ctime, "ctime went back: {c:?} < {last_ctime:?}");
                            last_ctime = c;
                            let st = if n % 3 == 0 {
                                p.stat("/data").unwrap()
                            } else {
                                p.fstat(df).unwrap()
                            };
                            check_data(&st);
                            n += 2;
                        }
                    }
                    n
                })
            })
            .collect();
        for r in readers {
            reads += r.join().expect("reader panicked");
        }
        changes += data.join().expect("data writer panicked");
        changes += times.join().expect("times writer panicked");
    });
    assert!(
        reads > 100 && changes > 100,
        "{reads} reads, {changes} changes"
    );
    eprintln!("{fast}: {reads} reads, {changes} changes");
}

#[test]
fn stress_attrs_seeds() {
    run(FastPaths::seeds());
}

#[test]
fn stress_attrs_stock() {
    run(FastPaths::stock());
}
