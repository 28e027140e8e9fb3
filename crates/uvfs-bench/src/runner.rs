//! The runner: starts the tasks of one (test, backend, mode, tasks) run,
//! releases them together, samples their counters, stops them and cleans
//! up, as will-it-scale's `main.c` does.
//!
//! The counters live in a [`Control`] block in an anonymous shared mapping,
//! each task's on its own cache lines (`CachePadded`), so the same block
//! serves threads and `fork()`ed processes. The protocol: each task runs its
//! setup, bumps `ready`, spins until `go`; loops until `stop`, publishing its
//! iteration count after each iteration; runs its teardown and sets `done`.
//! The harness waits for all `ready`, sets `go`, waits the warm-up, then
//! takes one sample of the summed counters per interval. Beside its count,
//! each slot has a few extra counters a test may use (fstree's walks and
//! their time, blogbench's scores), read at the start and the end of the
//! measured time; the header has one word all tasks share (blogbench's
//! next blog id), set from the preparation before the tasks start.
//!
//! Modes: *processes* = every task has its own fd table (host: a `fork()`ed
//! OS process; uvfs: its own `Process` on the shared `Vfs`, on its own OS
//! thread); *threads* = one fd table shared by all tasks and the harness
//! (host: threads of this process; uvfs: `new_thread()` handles of one
//! `Process`, the harness keeping the first one as will-it-scale's main
//! thread stays in its process).

use crate::backend::{
    HostDir, HostSys, Sys, UvfsSys, uvfs_remove_workdir, uvfs_vfs_with_caches, uvfs_workdir,
};
use crate::workloads::{self, Counters, EXTRA, Env, Params, Test};
use crossbeam_utils::CachePadded;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use uvfs::{Errno, FastPaths, Process};

/// Where the tests run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The host kernel: real system calls through libc, on a tmpfs directory.
    Host,
    /// uvfs: the same calls on a `uvfs::Process`.
    Uvfs,
    /// Real system calls, as `host`, in a directory that must be named
    /// with `--dir` (a FUSE mount, say): the same tests through whatever
    /// serves that directory.
    Mount,
}

impl Backend {
    /// The name used in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Host => "host",
            Backend::Uvfs => "uvfs",
            Backend::Mount => "mount",
        }
    }
}

/// How tasks share the fd table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Each task its own process and fd table.
    Processes,
    /// All tasks threads of one process, sharing one fd table.
    Threads,
}

impl Mode {
    /// The name used in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Processes => "processes",
            Mode::Threads => "threads",
        }
    }
}

/// One run's parameters.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The test.
    pub test: Test,
    /// The backend.
    pub backend: Backend,
    /// The mode.
    pub mode: Mode,
    /// How many tasks.
    pub tasks: usize,
    /// Measured time after the warm-up.
    pub seconds: f64,
    /// Time the tasks run before the first sample starts.
    pub warmup: f64,
    /// Sample length (the measured time is split into samples of about this).
    pub interval: f64,
    /// The uvfs fast paths (ignored on the host).
    pub fastpaths: FastPaths,
    /// The directory the work directory is made in (on the host; on uvfs
    /// the same path inside the VFS).
    pub dir: PathBuf,
    /// The knobs of fstree and blogbench, and the uvfs cache limit.
    pub params: Params,
    /// 0: the clock alone ends each sample (a benchmark's runs). Otherwise
    /// each sample also lasts until the tasks together made at least this
    /// many operations in it, and the last until every task made this many
    /// over the measured time and the test's own counters
    /// ([`Test::extra_counters`]) moved: on a loaded machine a sample or a
    /// task is then never empty, so tests can check counts (they set 1).
    pub min_ops: u64,
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Summed operations per second, one per sample.
    pub samples: Vec<f64>,
    /// Each task's operations per second over the whole measured time.
    pub task_ops_per_sec: Vec<f64>,
    /// Each task's iterations over its whole loop, warm-up included.
    pub task_total_ops: Vec<u64>,
    /// Each task's extra counters (the test's: [`workloads::FSTREE_WALKS`],
    /// [`workloads::BLOGS_WRITTEN`], …), their growth over the measured
    /// time.
    pub task_extra: Vec<[u64; EXTRA]>,
    /// The work directory (removed by now).
    pub workdir: String,
    /// Names left in the work directory after the tests' cleanup (empty
    /// when the test cleaned up after itself).
    pub leftovers: Vec<String>,
}

/// The harness's part of the control block.
#[repr(C)]
struct Header {
    ready: AtomicUsize,
    go: AtomicBool,
    stop: AtomicBool,
    /// The word all tasks share ([`Counters::shared`]).
    shared: AtomicU64,
}

/// One task's part of the control block.
#[repr(C)]
struct Slot {
    count: AtomicU64,
    /// The errno that ended the task, 0 if none.
    err: AtomicI32,
    /// Where it ended: 1 setup, 2 loop, 3 teardown.
    stage: AtomicI32,
    done: AtomicBool,
    /// The test's extra counters ([`Counters::extra`]).
    extra: [AtomicU64; EXTRA],
}

/// The control block: a header and one slot per task, each on its own
/// cache lines, in an anonymous shared mapping (shared with forked tasks).
pub struct Control {
    base: *mut u8,
    len: usize,
    tasks: usize,
}

// SAFETY: the block holds only atomics, which any thread may access through
// shared references; the mapping lives until the `Control` is dropped.
unsafe impl Sync for Control {}
// SAFETY: as above; the pointer is not tied to the creating thread.
unsafe impl Send for Control {}

const HEADER: usize = size_of::<CachePadded<Header>>();
const SLOT: usize = size_of::<CachePadded<Slot>>();

impl Control {
    /// A zeroed block for `tasks` tasks (all-zero is the initial state).
    fn new(tasks: usize) -> Result<Control, String> {
        let len = HEADER + SLOT * tasks;
        // SAFETY: an anonymous shared mapping of `len` bytes; no existing
        // memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("mmap of the counters: {}", Errno::last_os_error()));
        }
        Ok(Control {
            base: p.cast(),
            len,
            tasks,
        })
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping is page-aligned, zero-filled (a valid
        // `Header`: atomics of 0/false) and at least HEADER bytes long.
        unsafe { &*self.base.cast::<CachePadded<Header>>() }
    }

    fn slot(&self, i: usize) -> &Slot {
        assert!(i < self.tasks);
        // SAFETY: slot `i` lies within the mapping (checked above), at a
        // multiple of the `CachePadded` alignment from a page-aligned base,
        // and zero-filled memory is a valid `Slot`.
        unsafe { &*self.base.add(HEADER + SLOT * i).cast::<CachePadded<Slot>>() }
    }

    fn counts(&self) -> Vec<u64> {
        (0..self.tasks)
            .map(|i| self.slot(i).count.load(Ordering::Relaxed))
            .collect()
    }

    fn extras(&self) -> Vec<[u64; EXTRA]> {
        (0..self.tasks)
            .map(|i| {
                let e = &self.slot(i).extra;
                std::array::from_fn(|k| e[k].load(Ordering::Relaxed))
            })
            .collect()
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `new` made; no reference into
        // it outlives `self`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// Binds the calling thread to the `i mod n`-th of the `n` CPUs it may
/// run on (its affinity mask, inherited from the harness): will-it-scale
/// binds task `i` to core `i mod n`, so two tasks on a 2-CPU machine never
/// share one while the other idles.
fn bind_to_cpu(i: usize) -> Result<(), Errno> {
    // SAFETY: `cpu_set_t` is plain bits; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: writes the calling thread's mask into `set`, `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Err(Errno::last_os_error());
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below CPU_SETSIZE, inside `set`.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    let Some(&cpu) = cpus.get(i % cpus.len().max(1)) else {
        return Err(Errno::EINVAL);
    };
    // SAFETY: `one` is an initialised set; `CPU_SET` stays inside it.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // SAFETY: reads `size` bytes of `one`; binds only the calling thread.
    if unsafe { libc::sched_setaffinity(0, size, &one) } != 0 {
        return Err(Errno::last_os_error());
    }
    Ok(())
}

/// One task's life: setup, start together, loop, teardown.
fn task<S: Sys>(sys: &mut S, ctl: &Control, i: usize, test: Test, env: &Env<'_>) {
    let h = ctl.header();
    let slot = ctl.slot(i);
    let fail = |stage: i32, e: Errno| {
        slot.err.store(e.raw(), Ordering::Relaxed);
        slot.stage.store(stage, Ordering::Relaxed);
    };
    let counters = Counters {
        count: &slot.count,
        extra: &slot.extra,
        shared: &h.shared,
        stop: &h.stop,
    };
    let setup = match env.params.pin {
        true => bind_to_cpu(i).and_then(|()| workloads::setup(test, sys, env, i)),
        false => workloads::setup(test, sys, env, i),
    };
    match setup {
        Err(e) => {
            fail(1, e);
            h.ready.fetch_add(1, Ordering::Release);
        }
        Ok(mut st) => {
            h.ready.fetch_add(1, Ordering::Release);
            while !h.go.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            if let Err(e) = workloads::run(sys, &mut st, &counters) {
                fail(2, e);
            }
            if let Err(e) = workloads::teardown(sys, st) {
                fail(3, e);
            }
        }
    }
    slot.done.store(true, Ordering::Release);
}

/// Samples, per-task ops/s, per-task total iterations, per-task extra
/// counters over the measured time.
type Sampled = (Vec<f64>, Vec<f64>, Vec<u64>, Vec<[u64; EXTRA]>);

/// The running tasks, to be stopped and joined.
enum Tasks<'s> {
    Threads(Vec<std::thread::ScopedJoinHandle<'s, ()>>),
    Children(Vec<libc::pid_t>),
}

/// Runs one configuration and returns its samples.
pub fn run(cfg: &RunConfig) -> Result<Measurement, String> {
    if cfg.tasks == 0 {
        return Err("--tasks must be at least 1".into());
    }
    if !(cfg.seconds > 0.0 && cfg.interval > 0.0 && cfg.warmup >= 0.0) {
        return Err("--seconds and --interval must be > 0, --warmup >= 0".into());
    }
    cfg.params.check()?;
    match cfg.backend {
        Backend::Host | Backend::Mount => {
            check_dir(&cfg.dir)?;
            run_host(cfg)
        }
        Backend::Uvfs => run_uvfs(cfg),
    }
}

/// Checks that `dir` can hold a work directory: it exists, is a directory
/// (after symlinks), and this process may create entries in it
/// (`access(W_OK | X_OK)`). The message names the directory and what is
/// wrong.
pub fn check_dir(dir: &std::path::Path) -> Result<(), String> {
    let meta = std::fs::metadata(dir).map_err(|e| format!("--dir {}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("--dir {}: not a directory", dir.display()));
    }
    let c = crate::backend::cpath(dir.as_os_str().as_encoded_bytes());
    // SAFETY: `c` is NUL-terminated and outlives the call.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(format!(
            "--dir {}: cannot create entries in it: {}",
            dir.display(),
            Errno::last_os_error()
        ));
    }
    Ok(())
}

fn run_host(cfg: &RunConfig) -> Result<Measurement, String> {
    let dir = HostDir::create(&cfg.dir)?;
    let workdir = dir.path().to_string_lossy().into_owned();
    let result = (|| -> Result<Sampled, String> {
        let mut sys = HostSys;
        let env = Env {
            workdir: &workdir,
            tasks: cfg.tasks,
            params: &cfg.params,
        };
        let prepared = workloads::prepare(cfg.test, &mut sys, &env)
            .map_err(|e| format!("{}: preparing in {workdir}: {e}", cfg.test.name()))?;
        let ctl = Control::new(cfg.tasks)?;
        ctl.header()
            .shared
            .store(prepared.shared, Ordering::Relaxed);
        let r = std::thread::scope(|s| {
            let tasks = match cfg.mode {
                Mode::Threads => Tasks::Threads(
                    (0..cfg.tasks)
                        .map(|i| {
                            let (ctl, env) = (&ctl, &env);
                            s.spawn(move || task(&mut HostSys, ctl, i, cfg.test, env))
                        })
                        .collect(),
                ),
                Mode::Processes => Tasks::Children(fork_tasks(&ctl, cfg.test, &env)?),
            };
            measure(cfg, &ctl, tasks)
        });
        let cleaned = workloads::cleanup(&mut sys, prepared);
        let sampled = r?;
        cleaned.map_err(|e| format!("{}: cleanup: {e}", cfg.test.name()))?;
        Ok(sampled)
    })();
    let leftovers = dir.remove();
    let (samples, task_ops_per_sec, task_total_ops, task_extra) = result?;
    Ok(Measurement {
        samples,
        task_ops_per_sec,
        task_total_ops,
        task_extra,
        workdir,
        leftovers,
    })
}

/// Forks one child per task; each runs [`task`] with real system calls and
/// `_exit`s. The child only makes system calls and touches the shared block
/// (and the allocator, which glibc keeps usable across fork).
fn fork_tasks(ctl: &Control, test: Test, env: &Env<'_>) -> Result<Vec<libc::pid_t>, String> {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let mut pids = Vec::with_capacity(ctl.tasks);
    for i in 0..ctl.tasks {
        // SAFETY: fork(); the child below runs only the task (system calls
        // and atomics) and leaves with `_exit`, never returning into the
        // parent's stack frames or running its destructors.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = Errno::last_os_error();
            ctl.header().stop.store(true, Ordering::Relaxed);
            ctl.header().go.store(true, Ordering::Release);
            reap(&pids);
            return Err(format!("fork: {e}"));
        }
        if pid == 0 {
            // SAFETY: asks for SIGKILL if the harness dies, so no task
            // outlives it; no memory is passed.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
            let ok = std::panic::catch_unwind(|| task(&mut HostSys, ctl, i, test, env)).is_ok();
            // SAFETY: ends the child at once, as the C harness would.
            unsafe { libc::_exit(if ok { 0 } else { 101 }) };
        }
        pids.push(pid);
    }
    Ok(pids)
}

/// Waits for the children; returns how many did not exit with status 0.
fn reap(pids: &[libc::pid_t]) -> usize {
    let mut bad = 0;
    for &pid in pids {
        let mut status = 0;
        loop {
            // SAFETY: waits for our own child, writing its status into a
            // local.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            if r == pid {
                break;
            }
            if Errno::last_os_error() != Errno::EINTR {
                status = -1;
                break;
            }
        }
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            bad += 1;
        }
    }
    bad
}

fn run_uvfs(cfg: &RunConfig) -> Result<Measurement, String> {
    let vfs = uvfs_vfs_with_caches(cfg.fastpaths, cfg.params.uvfs_cache_limit(cfg.test));
    let ctx = |what: &str, e: Errno| format!("{} on uvfs: {what}: {e}", cfg.test.name());
    let mut main = Process::new(&vfs).map_err(|e| ctx("new process", e))?;
    let workdir = uvfs_workdir(&mut main, &cfg.dir).map_err(|e| ctx("work directory", e))?;
    // The harness's handle: for threads mode the tasks are threads of it.
    let mut harness = UvfsSys(main);
    let env = Env {
        workdir: &workdir,
        tasks: cfg.tasks,
        params: &cfg.params,
    };
    let prepared =
        workloads::prepare(cfg.test, &mut harness, &env).map_err(|e| ctx("prepare", e))?;
    let mut procs = Vec::with_capacity(cfg.tasks);
    for _ in 0..cfg.tasks {
        procs.push(UvfsSys(match cfg.mode {
            Mode::Threads => harness.0.new_thread(),
            Mode::Processes => Process::new(&vfs).map_err(|e| ctx("new process", e))?,
        }));
    }
    let ctl = Control::new(cfg.tasks)?;
    ctl.header()
        .shared
        .store(prepared.shared, Ordering::Relaxed);
    let r = std::thread::scope(|s| {
        let handles = procs
            .into_iter()
            .enumerate()
            .map(|(i, mut sys)| {
                let (ctl, env) = (&ctl, &env);
                s.spawn(move || task(&mut sys, ctl, i, cfg.test, env))
            })
            .collect();
        measure(cfg, &ctl, Tasks::Threads(handles))
    });
    let cleaned = workloads::cleanup(&mut harness, prepared);
    let leftovers = uvfs_remove_workdir(&mut harness.0, &workdir)
        .map_err(|e| ctx("removing the work directory", e))?;
    let (samples, task_ops_per_sec, task_total_ops, task_extra) = r?;
    cleaned.map_err(|e| ctx("cleanup", e))?;
    Ok(Measurement {
        samples,
        task_ops_per_sec,
        task_total_ops,
        task_extra,
        workdir,
        leftovers,
    })
}

/// [`RunConfig::min_ops`]: waits until the tasks together made `min_ops`
/// operations since the previous sample's total `prev` and, for the last
/// sample (`start`: the counters when measuring began), until every task
/// made `min_ops` and each of the test's own counters moved, or a task
/// ended (an error: reported by the caller).
fn wait_for_ops(
    cfg: &RunConfig,
    ctl: &Control,
    prev: u64,
    start: Option<(&Vec<u64>, &Vec<[u64; EXTRA]>)>,
) {
    let n = ctl.tasks;
    loop {
        let counts = ctl.counts();
        let mut enough = counts.iter().sum::<u64>() - prev >= cfg.min_ops;
        if let Some((c0, e0)) = start {
            enough &= counts.iter().zip(c0).all(|(c, c0)| c - c0 >= cfg.min_ops);
            let extras = ctl.extras();
            enough &= cfg.test.extra_counters().iter().all(|&k| {
                extras
                    .iter()
                    .zip(e0)
                    .map(|(e, e0)| e[k] - e0[k])
                    .sum::<u64>()
                    > 0
            });
        }
        let ended = (0..n).any(|i| {
            let s = ctl.slot(i);
            s.stage.load(Ordering::Relaxed) != 0 || s.done.load(Ordering::Acquire)
        });
        if enough || ended {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits for the tasks to be ready, starts them, samples, stops them and
/// collects their errors.
fn measure(cfg: &RunConfig, ctl: &Control, tasks: Tasks<'_>) -> Result<Sampled, String> {
    let h = ctl.header();
    let n = ctl.tasks;
    // Wait for every setup (or the first failure).
    while h.ready.load(Ordering::Acquire) < n {
        if (0..n).any(|i| ctl.slot(i).stage.load(Ordering::Relaxed) != 0) {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let setup_failed = (0..n).any(|i| ctl.slot(i).stage.load(Ordering::Relaxed) != 0);
    let mut samples = Vec::new();
    let mut per_task = vec![0.0; n];
    let mut extra = vec![[0; EXTRA]; n];
    if !setup_failed {
        h.go.store(true, Ordering::Release);
        std::thread::sleep(Duration::from_secs_f64(cfg.warmup));
        let nsamples = ((cfg.seconds / cfg.interval).round() as usize).max(1);
        let step = Duration::from_secs_f64(cfg.seconds / nsamples as f64);
        let t0 = Instant::now();
        let c0 = ctl.counts();
        let e0 = ctl.extras();
        let (mut prev_t, mut prev) = (t0, c0.iter().sum::<u64>());
        let mut last = c0.clone();
        for k in 1..=nsamples {
            let deadline = t0 + step * k as u32;
            let now = Instant::now();
            if deadline > now {
                std::thread::sleep(deadline - now);
            }
            if cfg.min_ops > 0 {
                wait_for_ops(cfg, ctl, prev, (k == nsamples).then_some((&c0, &e0)));
            }
            let t = Instant::now();
            last = ctl.counts();
            let total: u64 = last.iter().sum();
            samples.push((total - prev) as f64 / (t - prev_t).as_secs_f64());
            (prev_t, prev) = (t, total);
        }
        let secs = (prev_t - t0).as_secs_f64();
        for (i, p) in per_task.iter_mut().enumerate() {
            *p = (last[i] - c0[i]) as f64 / secs;
        }
        for ((e, now), then) in extra.iter_mut().zip(ctl.extras()).zip(e0) {
            *e = std::array::from_fn(|k| now[k] - then[k]);
        }
    }
    h.stop.store(true, Ordering::Relaxed);
    h.go.store(true, Ordering::Release);
    let crashed = match tasks {
        Tasks::Threads(handles) => handles
            .into_iter()
            .map(|h| h.join())
            .filter(Result::is_err)
            .count(),
        Tasks::Children(pids) => reap(&pids),
    };
    let mut errors = Vec::new();
    for i in 0..n {
        let slot = ctl.slot(i);
        let stage = slot.stage.load(Ordering::Relaxed);
        if stage != 0 {
            let what = ["", "setup", "loop", "teardown"][stage as usize];
            let e = Errno::from_raw(slot.err.load(Ordering::Relaxed));
            errors.push(format!(
                "task {i}: {what}: {} ({e})",
                e.name().unwrap_or("?")
            ));
        } else if !slot.done.load(Ordering::Acquire) {
            errors.push(format!("task {i}: did not finish"));
        }
    }
    if crashed > 0 {
        errors.push(format!("{crashed} task(s) crashed"));
    }
    if errors.is_empty() {
        Ok((samples, per_task, ctl.counts(), extra))
    } else {
        Err(format!("{}: {}", cfg.test.name(), errors.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mask of the calling thread, as CPU numbers.
    fn my_cpus() -> Vec<usize> {
        // SAFETY: as in `bind_to_cpu`.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: as in `bind_to_cpu`.
        assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut set) }, 0);
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `c` is below CPU_SETSIZE.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    /// Task i lands on the (i mod n)-th allowed CPU, alone, and only the
    /// task's own thread is bound.
    #[test]
    fn tasks_are_bound_round_robin_to_the_allowed_cpus() {
        let allowed = my_cpus();
        for i in 0..allowed.len() * 2 + 1 {
            let got = std::thread::spawn(move || {
                bind_to_cpu(i).unwrap();
                my_cpus()
            })
            .join()
            .unwrap();
            assert_eq!(got, vec![allowed[i % allowed.len()]], "task {i}");
        }
        assert_eq!(my_cpus(), allowed, "the harness's thread stays unbound");
    }
}
