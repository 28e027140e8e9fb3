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
//! ends the soak with an error. Files stay below [`MAX_FILE`] bytes and the
//! caches are limited, so a correct VFS reaches a steady memory size within
//! the warm-up.
//!
//! At the end every fd is closed, the namespace removed and
//! [`Vfs::check_consistency`](uvfs::Vfs) run, without dropping the caches:
//! every dentry reference must be accounted for, and no removed directory
//! may be left cached (rmdir prunes their children).

use crate::backend::{UvfsSys, remove_tree};
use crate::report::mean_sd;
use crate::workloads::Rng;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use uvfs::{Errno, FastPaths, Process, Vfs, uapi};

/// Subdirectories per task directory.
const DIRS: usize = 4;
/// File names per directory.
const FILES: usize = 16;
/// Largest file the workload makes (bytes).
const MAX_FILE: usize = 16 * 1024;
/// fds a task keeps open at most.
const MAX_OPEN: usize = 16;

/// `soak`'s settings.
#[derive(Clone, Debug)]
pub struct SoakConfig {
    /// Measured seconds after the warm-up.
    pub seconds: f64,
    /// Warm-up seconds (memory reaches its steady size).
    pub warmup: f64,
    /// Seconds between memory reports.
    pub interval: f64,
    /// Worker threads.
    pub tasks: usize,
    /// Fail if resident memory grows by more than this % from the end of
    /// the warm-up to the end of the run.
    pub max_growth_pct: Option<f64>,
    /// The fast paths.
    pub fastpaths: FastPaths,
    /// The RNG seed.
    pub seed: u64,
    /// Which of the 16 call kinds run (bit i: `step`'s case i); `u16::MAX`
    /// for all. For narrowing a failure down.
    pub mask: u16,
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
    /// Calls made, all tasks.
    pub ops: u64,
    /// Calls that failed with an expected errno.
    pub expected_errors: u64,
}

/// Resident bytes of this process (from /proc/self/statm).
pub fn rss_bytes() -> Result<u64, String> {
    let s = std::fs::read_to_string("/proc/self/statm").map_err(|e| format!("statm: {e}"))?;
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or("statm: no resident field")?;
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages * u64::try_from(page).unwrap_or(4096))
}

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

/// Runs the soak, printing a line per interval.
pub fn soak(cfg: &SoakConfig) -> Result<SoakReport, String> {
    if cfg.mask == 0 {
        return Err("--mask selects no call".into());
    }
    if cfg.tasks == 0 || !(cfg.seconds > 0.0 && cfg.interval > 0.0 && cfg.warmup >= 0.0) {
        return Err("--tasks >= 1, --seconds and --interval > 0, --warmup >= 0".into());
    }
    let vfs: Arc<Vfs> = Vfs::builder()
        .fastpaths(cfg.fastpaths)
        .dcache_limit(256)
        .icache_limit(256)
        .build();
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
    let measured_from = start + Duration::from_secs_f64(cfg.warmup);
    let end = measured_from + Duration::from_secs_f64(cfg.seconds);
    println!(
        "soak: {} tasks ({} processes), {} s warm-up, {} s measured, caches 256, files <= {} KiB",
        cfg.tasks,
        cfg.tasks.div_ceil(2),
        cfg.warmup,
        cfg.seconds,
        MAX_FILE / 1024
    );
    println!(
        "{:>8} {:>12} {:>12} {:>8} {:>8}",
        "seconds", "RSS KiB", "calls/s", "dcache", "icache"
    );
    let outcome = std::thread::scope(|s| {
        let handles: Vec<_> = procs
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let (stop, ops) = (&stop, &ops);
                let (tasks, mask) = (cfg.tasks, cfg.mask);
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
                    let r = (|| {
                        while !stop.load(Ordering::Relaxed) {
                            for _ in 0..64 {
                                t.step(mask)?;
                            }
                            ops.fetch_add(64, Ordering::Relaxed);
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
        let mut rss_base = None;
        let mut last = (Instant::now(), 0u64);
        let mut rates = Vec::new();
        let step = Duration::from_secs_f64(cfg.interval);
        let mut next = start + step;
        let sampled = (|| -> Result<(u64, u64), String> {
            while !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                let wake = if rss_base.is_none() {
                    next.min(measured_from)
                } else {
                    next
                }
                .min(end);
                if wake > now {
                    std::thread::sleep(wake - now);
                }
                let now = Instant::now();
                if rss_base.is_none() && now >= measured_from {
                    rss_base = Some(rss_bytes()?);
                }
                if now >= next || now >= end {
                    let n = ops.load(Ordering::Relaxed);
                    let rate = (n - last.1) as f64 / (now - last.0).as_secs_f64();
                    if now > measured_from {
                        rates.push(rate);
                    }
                    last = (now, n);
                    next += step;
                    println!(
                        "{:>8.1} {:>12} {:>12.0} {:>8} {:>8}",
                        (now - start).as_secs_f64(),
                        rss_bytes()? / 1024,
                        rate,
                        vfs.dcache_len(),
                        vfs.icache_len()
                    );
                }
                if now >= end {
                    break;
                }
            }
            let base = rss_base.map_or_else(rss_bytes, Ok)?;
            Ok((base, rss_bytes()?))
        })();
        stop.store(true, Ordering::Relaxed);
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
        let (m, sd) = mean_sd(&rates);
        if !rates.is_empty() {
            println!("calls/s over the measured time: {m:.0} (sd {sd:.0})");
        }
        if errors.is_empty() {
            sampled.map(|r| (r, total))
        } else {
            Err(errors.join("; "))
        }
    });
    let ((rss_base, rss_end), (calls, expected_errors)) = outcome?;
    let mut first = UvfsSys(first);
    remove_tree(&mut first, c"/soak").map_err(|e| format!("removing /soak: {e}"))?;
    drop(first);
    // No `drop_caches` first: rmdir prunes each removed directory's cached
    // children (`shrink_dcache_parent`), so with the namespace removed
    // nothing cached may keep a dead directory alive, and every dentry
    // left must be named or a negative entry in a live directory.
    vfs.check_consistency()
        .map_err(|e| format!("after the soak: {e}"))?;
    let left = vfs.dcache_len();
    let growth_pct = (rss_end as f64 / rss_base as f64 - 1.0) * 100.0;
    println!(
        "resident memory: {} KiB after the warm-up, {} KiB at the end ({growth_pct:+.1}%); {calls} calls, {expected_errors} expected errors; namespace removed, {left} dentries left, VFS consistent",
        rss_base / 1024,
        rss_end / 1024
    );
    let rep = SoakReport {
        rss_base,
        rss_end,
        growth_pct,
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
    Ok(rep)
}
