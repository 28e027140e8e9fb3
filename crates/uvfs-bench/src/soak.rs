//! `soak`: a long mixed workload on one uvfs VFS that prints resident
//! memory every interval, to show memory flattens (no leak) and nothing
//! goes wrong over time.
//!
//! Tasks are threads; task pairs share a `Process` (its fd table, as
//! threads of one process), and every other task is its own process made
//! with `fork` from the first, so both sharing patterns run. Each task
//! draws calls at random over a bounded namespace (its own directory of a
//! few subdirectories and files, plus a shared directory every task uses):
//! create/open, write at an offset, read, pread, truncate, rename (within
//! and across directories, over files), unlink, mkdir/rmdir, symlink and
//! readlink, link, stat, readdir, dup/dup2 and close. Errors the namespace
//! races make expected (ENOENT, EEXIST, ENOTEMPTY, ENOTDIR, EISDIR, …) are
//! counted; any other errno, or a read returning bytes a file cannot hold,
//! ends the soak with an error. Files stay below `MAX_FILE` bytes and the
//! caches are limited, so a correct VFS reaches a steady memory size within
//! the warm-up.
//!
//! At the end every fd is closed, the namespace removed and
//! [`Vfs::check_consistency`](uvfs::Vfs) run, without dropping the caches:
//! every dentry reference must be accounted for, and no removed directory
//! may be left cached (rmdir prunes their children).

use crate::backend::{UvfsSys, remove_tree};
use crate::memstat::{heap_bytes, rss_bytes};
use crate::workloads::Rng;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uvfs::fs::FileSystem;
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::{Errno, FastPaths, Process, Vfs, uapi};

/// Subdirectories per task directory.
const DIRS: usize = 4;
/// File names per directory.
const FILES: usize = 16;
/// Largest file the workload makes (bytes).
const MAX_FILE: usize = 16 * 1024;
/// fds a task keeps open at most.
const MAX_OPEN: usize = 16;

/// How long a soak's phases are, and how often it samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Span {
    /// In seconds: for watching a long soak on a quiet machine.
    Seconds {
        /// Warm-up seconds (memory reaches its steady size).
        warmup: f64,
        /// Measured seconds after the warm-up.
        measured: f64,
        /// Seconds between samples.
        interval: f64,
    },
    /// In calls, all tasks together: the phases hold the same work however
    /// fast or loaded the machine is (what the tests use).
    Calls {
        /// Calls before the baseline sample.
        warmup: u64,
        /// Calls measured after the warm-up.
        measured: u64,
        /// Calls between samples.
        interval: u64,
    },
}

/// `soak`'s settings.
#[derive(Clone, Debug)]
pub struct SoakConfig {
    /// The phases' lengths.
    pub span: Span,
    /// Worker threads.
    pub tasks: usize,
    /// Fail if resident memory grows by more than this % from the end of
    /// the warm-up to the end of the run (a two-point comparison: noisy;
    /// for watching a long run, not for tests).
    pub max_growth_pct: Option<f64>,
    /// Fail if resident memory trends up by more than this many bytes per
    /// 1000 calls over the measured samples: the least-squares slope of
    /// resident bytes against calls made, less three standard errors (so
    /// that the allocator's noise around a flat line is not a trend).
    pub max_slope: Option<f64>,
    /// Fail if the allocator's bytes in use ([`heap_bytes`]) trend up by
    /// more than this many bytes per 1000 calls: the lower edge of the
    /// three-sigma band of the [`robust_slope`] of their [`floor`] over
    /// the measured samples (the lowest of every 4). The heap count moves by the bytes allocated, not by pages,
    /// so its line is far steadier than the resident set's: this is the
    /// check that finds a small leak.
    pub max_heap_slope: Option<f64>,
    /// The fast paths.
    pub fastpaths: FastPaths,
    /// The RNG seed.
    pub seed: u64,
    /// Which of the 16 call kinds run (bit i: `step`'s case i); `u16::MAX`
    /// for all. For narrowing a failure down.
    pub mask: u16,
    /// Bytes to leak on purpose per 1000 calls (0: none): a fault injected
    /// to show the heap check finds a leak of that size.
    pub leak: usize,
}

/// One sample of the soak's state.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Calls made so far, all tasks.
    pub calls: u64,
    /// Seconds since the start.
    pub seconds: f64,
    /// Resident bytes.
    pub rss: u64,
    /// Bytes the allocator has handed out ([`heap_bytes`]).
    pub heap: u64,
    /// Dentries in the dentry cache.
    pub dentries: usize,
    /// Inodes in the inode cache.
    pub cached_inodes: usize,
    /// Inodes the tmpfs has allocated (its `statfs`).
    pub fs_inodes: u64,
    /// Pages the tmpfs has allocated.
    pub fs_pages: u64,
    /// File objects the file pool has ever carved.
    pub pool_objects: usize,
}

/// What a soak saw.
#[derive(Clone, Debug)]
pub struct SoakReport {
    /// Resident bytes at the end of the warm-up.
    pub rss_base: u64,
    /// Resident bytes at the end.
    pub rss_end: u64,
    /// Growth, % of `rss_base`.
    pub growth_pct: f64,
    /// Least-squares slope of resident bytes per 1000 calls over the
    /// measured samples, and its standard error (0, 0 with fewer than 3).
    pub slope: (f64, f64),
    /// The allocator's bytes in use: the [`robust_slope`] per 1000 calls
    /// of their [`floor`] over the measured samples, with its three-sigma
    /// band (slope, lower,
    /// upper; zeros with fewer than 3 samples).
    pub heap_slope: (f64, f64, f64),
    /// The samples from the end of the warm-up on.
    pub samples: Vec<Sample>,
    /// Calls made, all tasks.
    pub ops: u64,
    /// Calls that failed with an expected errno.
    pub expected_errors: u64,
}

/// Least-squares slope of `y` against `x` and its standard error; (0, 0)
/// with fewer than 3 points or no spread in `x`.
pub fn slope(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    if points.len() < 3 {
        return (0.0, 0.0);
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    if sxx == 0.0 {
        return (0.0, 0.0);
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    let a = my - b * mx;
    let ss: f64 = points
        .iter()
        .map(|p| {
            let r = p.1 - (a + b * p.0);
            r * r
        })
        .sum();
    (b, (ss / (n - 2.0) / sxx).sqrt())
}

/// Theil–Sen's robust slope of `y` against `x`: the median of the slopes
/// between every pair of points, with the pairwise slopes at the edges of
/// a three-sigma band around it (Sen's rank interval: the slopes ranked
/// (N ∓ 3·σ)/2 of the N pairs, σ² = n(n−1)(2n+5)/18, Kendall's τ under no
/// trend). Returns (slope, lower, upper); `None` with fewer than 3 points.
///
/// A sample caught in a transient does not move it: the heap jumps by a
/// few MiB for a sample or two when a task is preempted inside an epoch
/// and the others' retired objects wait for it, and least squares would
/// read those jumps as noise wide enough to hide a leak.
pub fn robust_slope(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = points.len();
    if n < 3 {
        return None;
    }
    let mut slopes: Vec<f64> = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .filter(|&(i, j)| points[j].0 != points[i].0)
        .map(|(i, j)| (points[j].1 - points[i].1) / (points[j].0 - points[i].0))
        .collect();
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let m = slopes.len();
    let median = if m % 2 == 1 {
        slopes[m / 2]
    } else {
        (slopes[m / 2 - 1] + slopes[m / 2]) / 2.0
    };
    let nf = n as f64;
    let c = 3.0 * (nf * (nf - 1.0) * (2.0 * nf + 5.0) / 18.0).sqrt();
    let rank = |r: f64| slopes[(r.round().max(0.0) as usize).min(m - 1)];
    let lower = rank((m as f64 - c) / 2.0);
    let upper = rank((m as f64 + c) / 2.0 - 1.0);
    Some((median, lower, upper))
}

/// Consecutive samples whose lowest heap reading stands for them in the
/// heap's trend ([`floor`]).
const HEAP_WINDOW: usize = 4;

/// The heap's floor: the lowest point of each run of `w` consecutive
/// points (a last, shorter run is dropped). The heap's transients only
/// ever go up (retired objects waiting for a preempted task's epoch, a
/// task's buffers in flight), so the floor is what a leak raises; on a
/// loaded machine a third of the samples can sit on a transient, more than
/// Theil-Sen alone tolerates (a 300-byte leak read with its band's lower
/// edge at -45 in CI; on the window floors, +248).
pub fn floor(points: &[(f64, f64)], w: usize) -> Vec<(f64, f64)> {
    points
        .chunks_exact(w.max(1))
        .filter_map(|c| c.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1)))
        .collect()
}

/// Upper bounds on the objects a correct VFS can hold at any moment of a
/// soak with `tasks` tasks: the namespace is bounded, so are the fds, the
/// caches' unused entries and the pool's free lists. A leak of one object
/// per few thousand calls crosses one within a short soak, whatever the
/// machine's speed.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    dentries: usize,
    cached_inodes: usize,
    fs_inodes: u64,
    fs_pages: u64,
    pool_objects: usize,
}

impl Bounds {
    fn new(tasks: usize) -> Bounds {
        // Names: per owner directory (each task's and the shared one) the
        // directory, its DIRS subdirectories, FILES names and a `sub` in
        // each; plus `/` and `/soak`.
        let names = (tasks + 1) * (1 + DIRS * (1 + FILES + 1)) + 2;
        // fds: each task's MAX_OPEN, a dup and a directory at a time.
        let fds = tasks * (MAX_OPEN + 2);
        // An inode is named or open (unlinked while open); an unlinked
        // one is freed at its last put (tests/icache_unlinked_stress.rs
        // in the library). The inode cache's limit is kept as slack for
        // the sample taken while a task is between those two steps.
        let inodes = names + fds + CACHE_LIMIT;
        Bounds {
            // Unused entries up to the limit, beyond every name (positive
            // or negative) and every open file's dentry.
            dentries: CACHE_LIMIT + names + fds,
            cached_inodes: inodes,
            fs_inodes: inodes as u64,
            // A file's pages, or a symlink's one.
            fs_pages: (inodes * (MAX_FILE / 4096 + 1)) as u64,
            // Open files, plus every thread's magazine (64) and a slab
            // (64) of free objects, doubled for the pool's batching.
            pool_objects: 2 * (fds + (tasks + 1) * 128) + 64,
        }
    }

    fn check(&self, s: &Sample) -> Result<(), String> {
        let over = |what: &str, v: u64, max: u64| {
            if v > max {
                Err(format!(
                    "{what}: {v} after {} calls, more than a correct VFS can hold ({max}): a leak",
                    s.calls
                ))
            } else {
                Ok(())
            }
        };
        over("dentries cached", s.dentries as u64, self.dentries as u64)?;
        over(
            "inodes cached",
            s.cached_inodes as u64,
            self.cached_inodes as u64,
        )?;
        over("tmpfs inodes", s.fs_inodes, self.fs_inodes)?;
        over("tmpfs pages", s.fs_pages, self.fs_pages)?;
        over(
            "file objects carved",
            s.pool_objects as u64,
            self.pool_objects as u64,
        )
    }
}

/// Unused dentries and inodes the soak's caches keep.
const CACHE_LIMIT: usize = 256;

/// Errnos the random namespace makes normal.
fn expected(e: Errno) -> bool {
    [
        Errno::ENOENT,
        Errno::EEXIST,
        Errno::ENOTEMPTY,
        Errno::ENOTDIR,
        Errno::EISDIR,
        Errno::EINVAL, // rename of a directory into itself, readlink of a non-link
        Errno::EMLINK,
        Errno::EBUSY,
        Errno::EXDEV,
        Errno::ELOOP, // symlinks pointing at each other
    ]
    .contains(&e)
}

/// One task's state.
struct Task {
    p: Process,
    rng: Rng,
    me: usize,
    tasks: usize,
    open: Vec<i32>,
    buf: Vec<u8>,
    ops: u64,
    errors: u64,
}

impl Task {
    /// A random path: one of this task's or another task's files or
    /// subdirectories, or the shared directory's.
    fn path(&mut self, dir_only: bool) -> String {
        let owner = if self.rng.below(4) == 0 {
            "shared".to_string()
        } else if self.rng.below(4) == 0 {
            format!("t{}", self.rng.below(self.tasks))
        } else {
            format!("t{}", self.me)
        };
        let d = self.rng.below(DIRS);
        if dir_only {
            format!("/soak/{owner}/d{d}")
        } else {
            format!("/soak/{owner}/d{d}/f{}", self.rng.below(FILES))
        }
    }

    fn fd(&mut self) -> Option<i32> {
        if self.open.is_empty() {
            None
        } else {
            Some(self.open[self.rng.below(self.open.len())])
        }
    }

    /// Tracks an outcome: `Ok` passes, an expected errno is counted, any
    /// other ends the soak.
    fn check<T>(&mut self, what: &str, r: Result<T, Errno>) -> Result<Option<T>, String> {
        self.ops += 1;
        match r {
            Ok(v) => Ok(Some(v)),
            Err(e) if expected(e) => {
                self.errors += 1;
                Ok(None)
            }
            Err(e) => Err(format!("task {}: {what}: unexpected {e}", self.me)),
        }
    }

    fn step(&mut self, mask: u16) -> Result<(), String> {
        let mut kind = self.rng.below(16);
        while mask & (1 << kind) == 0 {
            kind = self.rng.below(16);
        }
        match kind {
            0..=2 => {
                if self.open.len() >= MAX_OPEN {
                    let fd = self.open.swap_remove(self.rng.below(self.open.len()));
                    let r = self.p.close(fd);
                    self.check("close", r)?;
                    return Ok(());
                }
                let path = self.path(false);
                let flags = [
                    uapi::O_RDWR | uapi::O_CREAT,
                    uapi::O_RDONLY,
                    uapi::O_WRONLY | uapi::O_CREAT | uapi::O_TRUNC,
                    // (Not O_APPEND: pwrite then appends, as on Linux, and
                    // files would outgrow MAX_FILE.)
                    uapi::O_RDWR | uapi::O_CREAT | uapi::O_EXCL,
                ][self.rng.below(4)];
                let r = self.p.open(&path, flags, 0o644);
                if let Some(fd) = self.check("open", r)? {
                    self.open.push(fd);
                }
            }
            3 => {
                if let Some(fd) = self.fd() {
                    let len = 1 + self.rng.below(4096);
                    let off = self.rng.below(MAX_FILE - len) as i64;
                    let r = self.p.pwrite(fd, &self.buf[..len], off);
                    // EBADF: opened read-only; that is the table working.
                    if r != Err(Errno::EBADF) {
                        self.check("pwrite", r)?;
                    }
                }
            }
            4 => {
                if let Some(fd) = self.fd() {
                    let off = self.rng.below(MAX_FILE) as i64;
                    let mut b = [0u8; 4096];
                    let r = self.p.pread(fd, &mut b, off);
                    if r != Err(Errno::EBADF)
                        && let Some(n) = self.check("pread", r)?
                        && off as usize + n > MAX_FILE
                    {
                        return Err(format!("task {}: pread past any file's end", self.me));
                    }
                }
            }
            5 => {
                let path = self.path(false);
                let r = self.p.truncate(&path, self.rng.below(MAX_FILE) as i64);
                self.check("truncate", r)?;
            }
            6 => {
                let (a, b) = (self.path(false), self.path(false));
                let r = self.p.rename(&a, &b);
                self.check("rename", r)?;
            }
            7 => {
                let path = self.path(false);
                let r = self.p.unlink(&path);
                self.check("unlink", r)?;
            }
            8 => {
                let path = format!("{}/sub", self.path(true));
                let r = if self.rng.below(2) == 0 {
                    self.p.mkdir(&path, 0o755)
                } else {
                    self.p.rmdir(&path)
                };
                self.check("mkdir/rmdir", r)?;
            }
            9 => {
                let (target, path) = (self.path(false), self.path(false));
                let r = self.p.symlink(&target, &path);
                self.check("symlink", r)?;
                let mut b = [0u8; 256];
                let r = self.p.readlink(&path, &mut b);
                self.check("readlink", r)?;
            }
            10 => {
                let (a, b) = (self.path(false), self.path(false));
                let r = self.p.link(&a, &b);
                self.check("link", r)?;
            }
            11 | 12 => {
                let path = self.path(false);
                let r = self.p.stat(&path);
                if let Some(st) = self.check("stat", r)?
                    && st.st_size > MAX_FILE as i64
                    && st.st_mode & 0o170000 == 0o100000
                {
                    return Err(format!("task {}: {path} has {} bytes", self.me, st.st_size));
                }
            }
            13 => {
                let dir = self.path(true);
                let r = self.p.open(&dir, uapi::O_RDONLY | uapi::O_DIRECTORY, 0);
                if let Some(fd) = self.check("open dir", r)? {
                    let entries: Vec<_> = self.p.readdir(fd).collect();
                    for e in entries {
                        self.check("readdir", e)?;
                    }
                    let r = self.p.close(fd);
                    self.check("close dir", r)?;
                }
            }
            14 => {
                if let Some(fd) = self.fd() {
                    let r = self.p.dup(fd);
                    if let Some(d) = self.check("dup", r)? {
                        let r = self.p.close(d);
                        self.check("close dup", r)?;
                    }
                }
            }
            _ => {
                if let (Some(a), Some(b)) = (self.fd(), self.fd()) {
                    // dup2 onto one of our own fds: it stays open (now on
                    // a's file), so the bookkeeping holds.
                    let r = self.p.dup2(a, b);
                    self.check("dup2", r)?;
                }
            }
        }
        Ok(())
    }
}

/// Builds the namespace.
fn populate(p: &mut Process, tasks: usize) -> Result<(), Errno> {
    p.mkdir("/soak", 0o755)?;
    let owners = (0..tasks)
        .map(|t| format!("t{t}"))
        .chain(std::iter::once("shared".to_string()));
    for o in owners {
        p.mkdir(format!("/soak/{o}"), 0o755)?;
        for d in 0..DIRS {
            p.mkdir(format!("/soak/{o}/d{d}"), 0o755)?;
        }
    }
    Ok(())
}

/// Runs the soak, printing a line per sample.
pub fn soak(cfg: &SoakConfig) -> Result<SoakReport, String> {
    check(cfg)?;
    let fs = Tmpfs::new(TmpfsOptions {
        // Limits far beyond the namespace, so that `statfs` counts.
        size_bytes: Some(1 << 50),
        nr_inodes: Some(1 << 40),
        mode: 0o755,
        ..TmpfsOptions::default()
    });
    let vfs: Arc<Vfs> = Vfs::builder()
        .fastpaths(cfg.fastpaths)
        .dcache_limit(CACHE_LIMIT)
        .icache_limit(CACHE_LIMIT)
        .build_with_root(fs.clone());
    let bounds = Bounds::new(cfg.tasks);
    let mut first = Process::new(&vfs).map_err(|e| format!("process: {e}"))?;
    populate(&mut first, cfg.tasks).map_err(|e| format!("populate: {e}"))?;
    // Even tasks get a process of their own (a fork of the first); each odd
    // task is a thread of the task before it.
    let mut procs = Vec::with_capacity(cfg.tasks);
    for t in 0..cfg.tasks {
        let p = if t % 2 == 1 {
            procs
                .last()
                .map(|p: &Process| p.new_thread())
                .ok_or("no process to share")?
        } else {
            first.fork().map_err(|e| format!("fork: {e}"))?
        };
        procs.push(p);
    }
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let start = Instant::now();
    // The phases on one axis: seconds since the start, or calls made.
    let (warmup, end, interval, unit) = match cfg.span {
        Span::Seconds {
            warmup,
            measured,
            interval,
        } => (warmup, warmup + measured, interval, "s"),
        Span::Calls {
            warmup,
            measured,
            interval,
        } => (
            warmup as f64,
            (warmup + measured) as f64,
            interval as f64,
            "calls",
        ),
    };
    println!(
        "soak: {} tasks ({} processes), warm-up {warmup} {unit}, measured {} {unit}, a sample every {interval} {unit}, caches {CACHE_LIMIT}, files <= {} KiB",
        cfg.tasks,
        cfg.tasks.div_ceil(2),
        end - warmup,
        MAX_FILE / 1024
    );
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>10} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "seconds",
        "calls",
        "RSS KiB",
        "heap KiB",
        "calls/s",
        "dcache",
        "icache",
        "inodes",
        "pages",
        "files"
    );
    // One sample: read, checked against the bounds, printed, kept if
    // measured. Called by the sampling thread (seconds) or by the task
    // whose calls cross a sample's point (calls: the samples are then the
    // same whatever the machine's load).
    let state: Mutex<(Vec<Sample>, Option<Sample>)> = Mutex::new((Vec::new(), None));
    let record = |calls: u64, measured: bool| -> Result<(), String> {
        let mut g = state.lock().unwrap_or_else(|e| e.into_inner());
        let st = fs.statfs();
        let smp = Sample {
            calls,
            seconds: start.elapsed().as_secs_f64(),
            rss: rss_bytes()?,
            heap: heap_bytes(),
            dentries: vfs.dcache_len(),
            cached_inodes: vfs.icache_len(),
            fs_inodes: st.files - st.ffree,
            fs_pages: st.blocks - st.bfree,
            pool_objects: vfs.file_pool().objects(),
        };
        bounds.check(&smp)?;
        let rate = g.1.map_or(0.0, |l| {
            smp.calls.saturating_sub(l.calls) as f64 / (smp.seconds - l.seconds).max(1e-9)
        });
        println!(
            "{:>8.1} {:>10} {:>10} {:>10} {:>10.0} {:>7} {:>7} {:>7} {:>7} {:>7}",
            smp.seconds,
            smp.calls,
            smp.rss / 1024,
            smp.heap / 1024,
            rate,
            smp.dentries,
            smp.cached_inodes,
            smp.fs_inodes,
            smp.fs_pages,
            smp.pool_objects
        );
        g.1 = Some(smp);
        if measured {
            g.0.push(smp);
        }
        Ok(())
    };
    // In calls: the points where samples are taken (from the end of the
    // warm-up on, measured), in order.
    let points: Vec<(u64, bool)> = match cfg.span {
        Span::Seconds { .. } => Vec::new(),
        Span::Calls {
            warmup,
            measured,
            interval,
        } => (1..)
            .map(|k| k * interval)
            .take_while(|&p| p < warmup)
            .map(|p| (p, false))
            .chain(
                (0..)
                    .map(|k| warmup + k * interval)
                    .take_while(|&p| p < warmup + measured)
                    .chain(std::iter::once(warmup + measured))
                    .map(|p| (p, true)),
            )
            .collect(),
    };
    let end_calls = points.last().map(|p| p.0);
    // A point at 0 (no warm-up) is crossed by no batch: taken now.
    for &(at, measured) in points.iter().take_while(|p| p.0 == 0) {
        record(at, measured)?;
    }
    let outcome = std::thread::scope(|s| {
        let handles: Vec<_> = procs
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let (stop, ops, record, points) = (&stop, &ops, &record, &points);
                let (tasks, mask, leak) = (cfg.tasks, cfg.mask, cfg.leak);
                let seed = cfg.seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                s.spawn(move || -> Result<(u64, u64), String> {
                    let mut t = Task {
                        p,
                        rng: Rng::new(seed),
                        me: i,
                        tasks,
                        open: Vec::new(),
                        buf: vec![0x5a; 4096],
                        ops: 0,
                        errors: 0,
                    };
                    let mut leak_owed = 0usize;
                    let r = (|| {
                        while !stop.load(Ordering::Relaxed) {
                            for _ in 0..64 {
                                t.step(mask)?;
                            }
                            // The injected leak, owed in thousandths of a
                            // byte and paid in blocks of 1 KiB (a small
                            // block per batch would cost the allocator's
                            // minimum chunk, not the bytes asked for).
                            leak_owed += leak * 64;
                            while leak_owed >= 1024 * 1000 {
                                std::mem::forget(std::hint::black_box(vec![0xa5u8; 1024]));
                                leak_owed -= 1024 * 1000;
                            }
                            let before = ops.fetch_add(64, Ordering::Relaxed);
                            let after = before + 64;
                            // The points this batch crossed (each is
                            // crossed by one batch alone).
                            let from = points.partition_point(|p| p.0 <= before);
                            let to = points.partition_point(|p| p.0 <= after);
                            for &(at, measured) in &points[from..to] {
                                record(at, measured)?;
                            }
                            if end_calls.is_some_and(|e| after >= e) {
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                        Ok(())
                    })();
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    for fd in std::mem::take(&mut t.open) {
                        // dup2 may have made two entries one fd.
                        match t.p.close(fd) {
                            Ok(()) | Err(Errno::EBADF) => {}
                            Err(e) => return Err(format!("task {i}: final close: {e}")),
                        }
                    }
                    r.map(|()| (t.ops, t.errors))
                })
            })
            .collect();
        // In seconds: this thread samples on the clock.
        let sampled = match cfg.span {
            // The tasks stop themselves at the last point.
            Span::Calls { .. } => Ok(()),
            Span::Seconds {
                warmup,
                measured,
                interval,
            } => (|| -> Result<(), String> {
                let end = warmup + measured;
                let mut next = interval;
                let mut base_taken = false;
                while !stop.load(Ordering::Relaxed) {
                    let target = if !base_taken && next > warmup {
                        warmup
                    } else {
                        next
                    }
                    .min(end);
                    let now = start.elapsed().as_secs_f64();
                    if now < target {
                        std::thread::sleep(Duration::from_secs_f64(target - now));
                        continue;
                    }
                    record(ops.load(Ordering::Relaxed), now >= warmup)?;
                    base_taken |= now >= warmup;
                    while next <= now {
                        next += interval;
                    }
                    if now >= end {
                        break;
                    }
                }
                Ok(())
            })(),
        };
        if matches!(cfg.span, Span::Seconds { .. }) {
            stop.store(true, Ordering::Relaxed);
        }
        let mut total = (0u64, 0u64);
        let mut errors = Vec::new();
        for h in handles {
            match h.join() {
                Ok(Ok((o, e))) => {
                    total.0 += o;
                    total.1 += e;
                }
                Ok(Err(e)) => errors.push(e),
                Err(_) => errors.push("a task panicked".into()),
            }
        }
        if let Err(e) = sampled {
            errors.insert(0, e);
        }
        if errors.is_empty() {
            Ok(total)
        } else {
            Err(errors.join("; "))
        }
    });
    let (calls, expected_errors) = outcome?;
    let measured = std::mem::take(&mut state.lock().unwrap_or_else(|e| e.into_inner()).0);
    let mut first = UvfsSys(first);
    remove_tree(&mut first, c"/soak").map_err(|e| format!("removing /soak: {e}"))?;
    drop(first);
    // No `drop_caches` first: rmdir prunes each removed directory's cached
    // children (`shrink_dcache_parent`), so with the namespace removed
    // nothing cached may keep a dead directory alive, and every dentry
    // left must be named or a negative entry in a live directory.
    vfs.check_consistency()
        .map_err(|e| format!("after the soak: {e}"))?;
    // Everything removed and closed: the file system holds its root alone.
    let st = fs.statfs();
    if st.files - st.ffree != 1 || st.blocks != st.bfree {
        return Err(format!(
            "after the soak: the emptied tmpfs still holds {} inodes and {} pages",
            st.files - st.ffree,
            st.blocks - st.bfree
        ));
    }
    let left = vfs.dcache_len();
    let (Some(base), Some(last)) = (measured.first(), measured.last()) else {
        return Err("no sample was taken".into());
    };
    let (rss_base, rss_end) = (base.rss, last.rss);
    let growth_pct = (rss_end as f64 / rss_base as f64 - 1.0) * 100.0;
    let line = |y: fn(&Sample) -> u64| -> Vec<(f64, f64)> {
        measured
            .iter()
            .map(|s| (s.calls as f64 / 1000.0, y(s) as f64))
            .collect()
    };
    let (b, se) = slope(&line(|s| s.rss));
    let (hb, hlo, hhi) =
        robust_slope(&floor(&line(|s| s.heap), HEAP_WINDOW)).unwrap_or((0.0, 0.0, 0.0));
    println!(
        "resident memory: {} KiB after the warm-up, {} KiB at the end ({growth_pct:+.1}%); trend {b:+.1} bytes per 1000 calls (standard error {se:.1}, {} samples); heap in use: {} KiB after the warm-up, {} KiB at the end, trend of its floor {hb:+.1} bytes per 1000 calls (Theil-Sen, three-sigma band {hlo:+.1} to {hhi:+.1}); {calls} calls, {expected_errors} expected errors; namespace removed, {left} dentries left, VFS consistent",
        rss_base / 1024,
        rss_end / 1024,
        measured.len(),
        base.heap / 1024,
        last.heap / 1024,
    );
    let rep = SoakReport {
        rss_base,
        rss_end,
        growth_pct,
        slope: (b, se),
        heap_slope: (hb, hlo, hhi),
        samples: measured,
        ops: calls,
        expected_errors,
    };
    if let Some(max) = cfg.max_growth_pct
        && growth_pct > max
    {
        return Err(format!(
            "resident memory grew {growth_pct:.1}% (> {max}%) after the warm-up"
        ));
    }
    if let Some(max) = cfg.max_slope
        && b - 3.0 * se > max
    {
        return Err(format!(
            "resident memory trends up: {b:.1} bytes per 1000 calls (standard error {se:.1}; more than {max} by over three standard errors)"
        ));
    }
    if let Some(max) = cfg.max_heap_slope
        && hlo > max
    {
        return Err(format!(
            "the heap in use trends up: {hb:.1} bytes per 1000 calls (Theil-Sen; its three-sigma band starts at {hlo:.1}, more than {max}): a leak"
        ));
    }
    Ok(rep)
}

/// The settings' checks (also made by the command line before anything
/// runs).
pub fn check(cfg: &SoakConfig) -> Result<(), String> {
    if cfg.mask == 0 {
        return Err("--mask selects no call".into());
    }
    if !(1..=MAX_TASKS).contains(&cfg.tasks) {
        return Err(format!(
            "--tasks must be from 1 to {MAX_TASKS} (each task is an OS thread)"
        ));
    }
    match cfg.span {
        Span::Seconds {
            warmup,
            measured,
            interval,
        } => {
            if !(measured.is_finite() && measured > 0.0) {
                return Err("--seconds must be a finite number > 0".into());
            }
            if !(interval.is_finite() && interval > 0.0) {
                return Err("--interval must be a finite number > 0".into());
            }
            if !(warmup.is_finite() && warmup >= 0.0) {
                return Err("--warmup must be a finite number >= 0".into());
            }
            if warmup + measured > MAX_SECONDS {
                return Err(format!(
                    "--warmup plus --seconds must be at most {MAX_SECONDS} (a week)"
                ));
            }
        }
        Span::Calls {
            measured, interval, ..
        } => {
            if measured == 0 || interval == 0 {
                return Err("--calls and --interval-calls must be at least 1".into());
            }
        }
    }
    if cfg.leak > MAX_LEAK {
        return Err(format!("--leak must be at most {MAX_LEAK}"));
    }
    for (what, v) in [
        ("--max-growth", cfg.max_growth_pct),
        ("--max-slope", cfg.max_slope),
        ("--max-heap-slope", cfg.max_heap_slope),
    ] {
        if let Some(v) = v
            && !(v.is_finite() && v >= 0.0)
        {
            return Err(format!("{what} must be a finite number >= 0"));
        }
    }
    Ok(())
}

/// Most tasks a soak runs (each is an OS thread; more than a few hundred
/// only measures the scheduler).
pub const MAX_TASKS: usize = 1024;
/// Most bytes `--leak` leaks per 1000 calls.
pub const MAX_LEAK: usize = 1 << 20;
/// Longest soak in seconds (a week).
pub const MAX_SECONDS: f64 = 7.0 * 86400.0;

#[cfg(test)]
mod tests {
    use super::{floor, robust_slope};

    /// A rising line with a third of its samples on transients: the
    /// floors keep the line's slope, and the band's lower edge stays above
    /// zero where the raw points' does not have to.
    #[test]
    fn the_floor_keeps_a_leak_under_many_transients() {
        let line: Vec<(f64, f64)> = (0..41)
            .map(|k| {
                let spike = if k % 3 == 1 { 4.0e6 } else { 0.0 };
                (k as f64 * 100.0, 2.0e6 + 300.0 * k as f64 * 100.0 + spike)
            })
            .collect();
        let fl = floor(&line, 4);
        assert_eq!(fl.len(), 10);
        let (b, lo, _) = robust_slope(&fl).unwrap();
        assert!((b - 300.0).abs() < 1e-6, "{b}");
        assert!(lo > 200.0, "{lo}");
        assert!(floor(&line[..3], 4).is_empty());
    }

    /// A line with a few samples caught in a transient: Theil-Sen reads the
    /// line's slope and its band holds it; a flat line with spikes reads
    /// flat, its band's lower edge under zero.
    #[test]
    fn robust_slope_ignores_transients() {
        let spiky = |k: usize| if k % 9 == 4 { 3.0e6 } else { 0.0 };
        let line: Vec<(f64, f64)> = (0..41)
            .map(|k| (k as f64 * 100.0, 2.0e6 + 50.0 * k as f64 * 100.0 + spiky(k)))
            .collect();
        let (b, lo, hi) = robust_slope(&line).unwrap();
        assert!((b - 50.0).abs() < 1e-6, "{b}");
        assert!(lo <= 50.0 && 50.0 <= hi, "{lo} {hi}");
        let flat: Vec<(f64, f64)> = (0..41)
            .map(|k| (k as f64 * 100.0, 2.0e6 + spiky(k) + (k % 3) as f64 * 1e4))
            .collect();
        let (b, lo, _) = robust_slope(&flat).unwrap();
        assert!(b.abs() < 20.0, "{b}");
        assert!(lo < 0.0, "{lo}");
        assert!(robust_slope(&flat[..2]).is_none());
        assert!(robust_slope(&[(1.0, 1.0); 5]).is_none());
    }
}
