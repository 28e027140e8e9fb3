//! `reproduce`: the project's main job. For each seed (the README's table
//! of fast paths) it runs the seed's experiment on uvfs (real path walk,
//! dentry and inode caches, tmpfs) with the fast path off (A) and on (B),
//! interleaved A B A B in one process, with the host kernel's figure for
//! the same test beside it; then uvfs against the host test by test, the
//! lab's targets, and scaling over tasks where the machine has more than one
//! CPU. Every figure comes from the lab's [`runner`], the same code
//! `uvfs-bench run` uses, so a row here and a `run` of the same test agree.
//! Last (default and `--full` profiles; `--quick` only with `--preload`;
//! never with `--no-preload`) comes [`preload`]'s comparison of the
//! LD_PRELOAD shim with the host's tmpfs; when it cannot run (no cargo, no
//! `cc`, the shim does not build) it is reported as skipped, with the
//! reason, and reproduce goes on. Then (same profiles; `--quick` only
//! with `--fuse`; never with `--no-fuse`) [`fuse`]'s section: the tests
//! through FUSE on the host's tmpfs, the floor and the uvfs mount; skipped
//! with its reason without /dev/fuse or root, and uvfs skipped alone when
//! it does not build.
//!
//! Output: tables on stdout, and in `--out` (default
//! `target/uvfs-report/`) `reproduce.json` (everything), `records.json`
//! (the runs as `run --json` records, for `uvfs-bench compare`),
//! `index.html` with SVG charts (also written as separate `.svg` files),
//! `preload.json` when the preload section ran and `fuse.json` when the
//! FUSE section did.

use crate::floor::FloorOptions;
use crate::fuse::{self, FuseConfig, FuseReport, UvfsSource};
use crate::html;
use crate::peers::{self, PeersConfig};
use crate::preload::{self, PreloadConfig, PreloadReport};
use crate::report::{self, Machine, Record, mean_sd};
use crate::reproduction::{
    Budget, LoadAvg, Profile, Reproduction, ScalePoint, SectionLoad, SeedResult, Target, Versus,
};
use crate::runner::{self, Backend, Mode, RunConfig};
use crate::workloads::{Params, Test};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::Instant;
use uvfs::FastPaths;

mod rows;
mod text;
use rows::ROWS;
use text::print_text;

/// One seed's experiment (a row of the README's table of fast paths).
struct Row {
    seed: &'static str,
    test: Test,
    metric: Metric,
    switch: &'static str,
    what: &'static str,
    /// The seed's own figure.
    evidence: &'static str,
    /// That figure as a change of this row's metric, B against A, in %
    /// (a low and a high end; equal for one figure), when the seed
    /// published one for this row's test.
    published: Option<(f64, f64)>,
    /// Mode and task count when not the test's usual [`shape`]: a fast
    /// path for threads sharing a table is measured with two of them.
    shape: Option<(Mode, usize)>,
}

impl Row {
    /// How this row's test runs.
    fn shape(&self) -> (Mode, usize) {
        self.shape.unwrap_or_else(|| shape(self.test))
    }
}

/// What a seed row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Metric {
    /// The test's operations per second.
    Ops,
    /// blogbench's read score (blogs read) per second.
    BlogsRead,
}

impl Metric {
    /// The figure of a record.
    fn of(self, r: &Record) -> f64 {
        match self {
            Metric::Ops => r.ops_per_sec,
            Metric::BlogsRead => {
                r.blogs_read.map_or(0.0, |b| b as f64) / r.seconds.max(f64::MIN_POSITIVE)
            }
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Metric::Ops => "ops/s",
            Metric::BlogsRead => "blogs read/s",
        }
    }
}

/// How a test runs in reproduce: mode and task count. fstree and
/// blogbench are multi-threaded programs (seed 002: one tree per thread;
/// seed 004: blogbench's roles are threads of one process sharing its fd
/// table); getfl runs one task in threads mode, where the table has two
/// users (the harness and the task) so fcntl takes the counted lookup,
/// seed 003's `__fget_files_rcu` (with one user it borrows the slot
/// without a count, as Linux's `fdget` does, and the seed's code is not on
/// the path); the will-it-scale tests run one task (the fast paths' effect
/// on one CPU, and the host's figure clean of contention).
fn shape(test: Test) -> (Mode, usize) {
    match test {
        Test::Fstree => (Mode::Threads, FSTREE_TASKS),
        Test::Blogbench => (Mode::Threads, BLOGBENCH_TASKS),
        Test::Getfl => (Mode::Threads, 1),
        _ => (Mode::Processes, 1),
    }
}

/// The multi-threaded tests' shapes, for the report.
fn shapes() -> String {
    let p = Params::default();
    format!(
        "fstree: {FSTREE_TASKS} threads, each stat-walking its own tree of {} dirs x {} files; uvfs dentry and inode caches limited to {} entries (the host's tmpfs keeps its tree cached); blogbench: {BLOGBENCH_TASKS} threads (1 writer, 1 rewriter, 1 commenter, 5 readers) on at most {} blogs",
        p.fstree_dirs,
        p.fstree_files,
        p.uvfs_cache_limit(Test::Fstree).unwrap_or(0),
        p.blogs
    )
}

/// fstree: threads, each walking its own tree of the lab's default shape
/// (40 dirs x 100 files) with the uvfs caches at a quarter of one tree.
const FSTREE_TASKS: usize = 2;
/// blogbench: 8 threads = writer, reader, commenter, reader, rewriter and
/// three more readers (the lab's role order).
const BLOGBENCH_TASKS: usize = 8;

/// The tests compared with the host, one task, processes mode.
const VERSUS: &[Test] = &[
    Test::Open1,
    Test::Open2,
    Test::Open3,
    Test::Dup1,
    Test::Lseek1,
    Test::Lseek2,
    Test::Read1,
    Test::Read2,
    Test::Pread1,
    Test::Write1,
    Test::Unlink1,
    Test::Unlink2,
    Test::Openneg,
    Test::Stat1,
    Test::Stat12,
    Test::Open12,
    Test::Getfl,
    Test::Dup100,
    Test::Fstree,
    Test::Blogbench,
];

/// The lab issue's uvfs-against-host targets (processes mode, one task).
const HOST_TARGETS: &[(Test, f64)] = &[
    (Test::Open1, 20.0),
    (Test::Openneg, 20.0),
    (Test::Dup1, 10.0),
    (Test::Lseek1, 10.0),
    (Test::Read1, 10.0),
];

/// The tests whose scaling is charted, and the threads-mode target
/// for 2 tasks against 1.
const SCALING: &[Test] = &[Test::Open1, Test::Dup1];
const THREADS_TARGET: f64 = 1.8;

/// Whether and why (not) `reproduce` runs its preload section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreloadSection {
    /// Run it.
    Run,
    /// `--no-preload`.
    Off,
    /// `--quick` without `--preload`.
    QuickOff,
}

/// Whether and why (not) `reproduce` runs its FUSE section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuseSection {
    /// Run it (skipped with a reason when /dev/fuse or root is missing).
    Run,
    /// `--no-fuse`.
    Off,
    /// `--quick` without `--fuse`.
    QuickOff,
}

/// Whether and why (not) `reproduce` runs its peers section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeersSection {
    /// Run it.
    Run,
    /// `--no-peers`.
    Off,
    /// `--quick` without `--peers`.
    QuickOff,
}

/// Runs the reproduction and writes the report; `Err` when something
/// failed (the report is still written, with the failures in it). The
/// preload and FUSE sections never make it fail: their failures are
/// reported as skipped.
pub fn reproduce(
    profile: Profile,
    out: &Path,
    section: PreloadSection,
    fuse_section: FuseSection,
    peers_section: PeersSection,
) -> Result<(), String> {
    let budget = profile.budget();
    let machine = Machine::current();
    let host_dir = host_dir();
    let t0 = Instant::now();
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let tasks = scaling_tasks(machine.nproc);

    let runs = VERSUS.len() * 2
        + ROWS.len() * budget.rounds * 2
        + SCALING.len() * 4 * tasks.len()
        + usize::from(tasks.is_empty());
    let bar = ProgressBar::new(runs as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );

    println!(
        "uvfs seed reproduction ({} profile: {} A/B rounds of {} s per side, {} s per comparison run)",
        profile.name(),
        budget.rounds,
        budget.sample,
        budget.run
    );
    println!(
        "machine: {}, {} CPUs, kernel {}",
        machine.cpu, machine.nproc, machine.kernel
    );
    println!(
        "uvfs: path walk + dentry/inode caches + tmpfs; host: real syscalls under {} (tmpfs)",
        host_dir.display()
    );
    println!("{}\n", shapes());

    let mut lab = Lab {
        budget,
        host_dir: host_dir.clone(),
        records: Vec::new(),
        bar: &bar,
        failures: Vec::new(),
    };

    // uvfs against the host, one task each: the host figures also serve
    // the seed rows.
    let mut load = Vec::new();
    let before = LoadAvg::now();
    let versus: Vec<Versus> = VERSUS.iter().map(|&k| lab.versus(k)).collect();
    load.push(SectionLoad::new("versus", before));
    let before = LoadAvg::now();
    let seeds: Vec<SeedResult> = ROWS
        .iter()
        .map(|row| {
            let (mode, tasks) = row.shape();
            let host = lab
                .records
                .iter()
                .find(|r| {
                    r.test == row.test.name()
                        && r.backend == "host"
                        && r.mode == mode.name()
                        && r.tasks == tasks
                })
                .map(|r| row.metric.of(r));
            lab.seed(row, host)
        })
        .collect();
    load.push(SectionLoad::new("seeds", before));
    let before = LoadAvg::now();
    let (scaling, scaling_note) = if tasks.is_empty() {
        bar.inc(1);
        (
            Vec::new(),
            Some(format!(
                "{} CPU: scaling over tasks needs more than one",
                machine.nproc
            )),
        )
    } else {
        (lab.scaling(&tasks), None)
    };
    load.push(SectionLoad::new("scaling", before));
    bar.finish_and_clear();
    let before = LoadAvg::now();

    let (preload, preload_note) = match section {
        PreloadSection::Off => (None, Some("not run (--no-preload)".to_string())),
        PreloadSection::QuickOff => (
            None,
            Some("not run in the quick profile (--preload runs it)".to_string()),
        ),
        PreloadSection::Run => {
            println!(
                "preload: the C open/close loop under the LD_PRELOAD shim against the host's tmpfs \
                 ({} rounds of ~{} s per measurement)",
                budget.preload_rounds, budget.preload_seconds
            );
            let cfg = PreloadConfig {
                so: None,
                repeats: budget.preload_rounds,
                seconds: budget.preload_seconds,
                iterations: None,
                host_parent: host_dir.clone(),
                progress: true,
            };
            match preload::measure(&cfg) {
                Ok(p) => (Some(p), None),
                Err(e) => {
                    println!("preload: skipped: {e}");
                    (None, Some(format!("skipped: {e}")))
                }
            }
        }
    };
    if preload.is_some() {
        load.push(SectionLoad::new("preload", before));
    }
    let before = LoadAvg::now();
    let (fuse, fuse_note) = match fuse_section {
        FuseSection::Off => (None, Some("not run (--no-fuse)".to_string())),
        FuseSection::QuickOff => (
            None,
            Some("not run in the quick profile (--fuse runs it)".to_string()),
        ),
        FuseSection::Run => run_fuse(&budget, &host_dir),
    };
    if fuse.is_some() {
        load.push(SectionLoad::new("fuse", before));
    }
    let before = LoadAvg::now();
    let (peers, peers_note) = match peers_section {
        PeersSection::Off => (None, Some("not run (--no-peers)".to_string())),
        PeersSection::QuickOff => (
            None,
            Some("not run in the quick profile (--peers runs it)".to_string()),
        ),
        PeersSection::Run => {
            println!(
                "peers: uvfs, the kernel and the in-memory crates ({} rounds of {} s per cell)",
                budget.peers_rounds, budget.peers_seconds
            );
            let cfg = PeersConfig {
                systems: peers::System::available(),
                rounds: budget.peers_rounds,
                seconds: budget.peers_seconds,
                files: budget.peers_files,
                memory_files: budget.peers_memory_files,
                host_parent: host_dir.clone(),
                exe: None,
                progress: true,
            };
            match peers::measure(&cfg) {
                Ok(p) => (Some(p), None),
                Err(e) => {
                    println!("peers: failed: {e}");
                    lab.failures.push(format!("peers: {e}"));
                    (None, Some(format!("failed: {e}")))
                }
            }
        }
    };
    if peers.is_some() {
        load.push(SectionLoad::new("peers", before));
    }
    let mut targets = targets(&versus, &scaling, preload.as_ref());
    if let Some(f) = &fuse {
        targets.extend(f.goals.iter().map(|g| Target {
            what: format!("FUSE {}", g.what),
            goal: g.goal.clone(),
            measured: g.measured,
            met: g.met,
        }));
    }
    let failures = std::mem::take(&mut lab.failures);
    let mut records = std::mem::take(&mut lab.records);
    if let Some(p) = &preload {
        records.extend(p.records.iter().cloned());
    }
    if let Some(f) = &fuse {
        records.extend(f.records.iter().cloned());
    }
    let rep = Reproduction {
        profile,
        budget,
        machine,
        started_unix,
        wall_seconds: t0.elapsed().as_secs_f64(),
        host_dir: host_dir.display().to_string(),
        fstree: shapes(),
        seeds,
        versus,
        scaling,
        scaling_note,
        targets,
        object_sizes: uvfs::object_sizes()
            .into_iter()
            .map(|(w, b)| (w.to_string(), b))
            .collect(),
        preload,
        preload_note,
        fuse,
        fuse_note,
        peers,
        peers_note,
        load,
        records,
    };
    print_text(&rep);
    write_out(out, &rep)?;
    println!(
        "\nwrote {}/index.html, reproduce.json, records.json ({} records){} in {:.0} s",
        out.display(),
        rep.records.len(),
        if rep.preload.is_some() {
            ", preload.json"
        } else {
            ""
        },
        rep.wall_seconds
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} run(s) failed: {}",
            failures.len(),
            failures.join("; ")
        ))
    }
}

/// The FUSE section (`uvfs-bench fuse` with the profile's rounds and
/// seconds): the report, or why it did not run (printed as
/// `fuse: skipped: REASON`).
fn run_fuse(budget: &Budget, host_dir: &Path) -> (Option<FuseReport>, Option<String>) {
    if let Some(why) = fuse::unavailable() {
        println!("fuse: skipped: {why}");
        return (None, Some(format!("skipped: {why}")));
    }
    println!(
        "fuse: the tests through FUSE: host tmpfs, the floor, the uvfs mount ({} rounds of {} s)",
        budget.fuse_rounds, budget.fuse_seconds
    );
    // Like for like: the `uvfs` side and the floor in the same settings
    // (no-open, default_permissions, write-through), so uvfs / floor is
    // the server's own work; `uvfs-pt` is the mount as root gets it by
    // default (passthrough: OPEN answered), for the bandwidth goals.
    let cfg = FuseConfig {
        tests: fuse::TESTS.to_vec(),
        rounds: budget.fuse_rounds,
        seconds: budget.fuse_seconds,
        warmup: (budget.fuse_seconds / 5.0).min(0.2),
        threads: 2,
        fastpaths: "seeds".into(),
        uvfs: UvfsSource::Build,
        host_parent: host_dir.to_path_buf(),
        mount_parent: std::env::temp_dir(),
        floor: FloorOptions {
            writeback: false,
            ..FloorOptions::default()
        },
        progress: false,
        passthrough: true,
        size: None,
        no_open: true,
        writeback: false,
        uvfs_passthrough: false,
    };
    match fuse::measure(&cfg) {
        Ok(r) => (Some(r), None),
        Err(e) => {
            println!("fuse: skipped: {e}");
            (None, Some(format!("skipped: {e}")))
        }
    }
}

/// Where host work directories go: `/dev/shm` (tmpfs) when there is one.
pub fn host_dir() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

/// Task counts for the scaling charts: 1, 2, 4, … up to the CPU count
/// (at most 8), and the CPU count itself; empty on one CPU.
fn scaling_tasks(nproc: usize) -> Vec<usize> {
    if nproc < 2 {
        return Vec::new();
    }
    let top = nproc.min(8);
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
        .take_while(|&n| n <= top)
        .collect();
    if v.last() != Some(&top) {
        v.push(top);
    }
    v
}

/// What one run runs.
#[derive(Clone, Copy)]
struct Spec {
    test: Test,
    backend: Backend,
    mode: Mode,
    tasks: usize,
    fast: FastPaths,
}

/// The measuring state: budget, where records go, the progress bar.
struct Lab<'b> {
    budget: Budget,
    host_dir: PathBuf,
    records: Vec<Record>,
    bar: &'b ProgressBar,
    failures: Vec<String>,
}

impl Lab<'_> {
    /// One runner run of `secs` seconds in `samples` samples; keeps the
    /// record and returns it.
    fn run(&mut self, spec: Spec, secs: f64, samples: usize) -> Result<Record, String> {
        let Spec {
            test,
            backend,
            mode,
            tasks,
            fast,
        } = spec;
        let label = format!(
            "{} {} {} x{} {}",
            test.name(),
            backend.name(),
            mode.name(),
            tasks,
            if backend == Backend::Uvfs {
                fast.to_string()
            } else {
                String::new()
            }
        );
        self.bar.set_message(label.clone());
        let cfg = RunConfig {
            test,
            backend,
            mode,
            tasks,
            seconds: secs,
            warmup: self.budget.warmup,
            interval: secs / samples.max(1) as f64,
            fastpaths: fast,
            dir: self.host_dir.clone(),
            params: Params::default(),
            // A sample with no operation in it (a machine too loaded to
            // run the tasks for a whole interval) measures nothing: it
            // lasts until one is made.
            min_ops: 1,
        };
        let r = runner::run(&cfg).and_then(|m| {
            if m.leftovers.is_empty() {
                Ok(report::record(&cfg, &m, None))
            } else {
                Err(format!("left {:?} in {}", m.leftovers, m.workdir))
            }
        });
        self.bar.inc(1);
        match r {
            Ok(rec) => {
                self.keep(rec.clone());
                Ok(rec)
            }
            Err(e) => {
                let e = format!("{label}: {e}");
                self.bar.suspend(|| eprintln!("reproduce: {e}"));
                self.failures.push(e.clone());
                Err(e)
            }
        }
    }

    /// Keeps a record; a second run of the same configuration adds its
    /// samples to the first's (records.json has one record per key, as
    /// `compare` expects).
    fn keep(&mut self, rec: Record) {
        let same = |r: &Record| {
            (&r.test, &r.backend, &r.mode, r.tasks, &r.fastpaths)
                == (
                    &rec.test,
                    &rec.backend,
                    &rec.mode,
                    rec.tasks,
                    &rec.fastpaths,
                )
        };
        if let Some(r) = self.records.iter_mut().find(|r| same(r)) {
            r.samples.extend_from_slice(&rec.samples);
            let (m, sd) = mean_sd(&r.samples);
            r.ops_per_sec = m;
            r.per_task_ops_per_sec = m / r.tasks as f64;
            r.stddev = sd;
            r.seconds += rec.seconds;
            r.task_ops_per_sec.clear();
            let add = |a: &mut Option<u64>, b: Option<u64>| {
                if let (Some(x), Some(y)) = (a.as_mut(), b) {
                    *x += y;
                }
            };
            add(&mut r.blogs_written, rec.blogs_written);
            add(&mut r.blogs_read, rec.blogs_read);
            add(&mut r.articles_written, rec.articles_written);
            add(&mut r.articles_read, rec.articles_read);
        } else {
            self.records.push(rec);
        }
    }

    fn versus(&mut self, test: Test) -> Versus {
        let secs = self.budget.run;
        let samples = 5;
        let (mode, tasks) = shape(test);
        let u = self.run(
            Spec {
                test,
                backend: Backend::Uvfs,
                mode,
                tasks,
                fast: FastPaths::seeds(),
            },
            secs,
            samples,
        );
        let h = self.run(
            Spec {
                test,
                backend: Backend::Host,
                mode,
                tasks,
                fast: FastPaths::seeds(),
            },
            secs,
            samples,
        );
        let target = HOST_TARGETS.iter().find(|(x, _)| *x == test).map(|x| x.1);
        let error = match (&u, &h) {
            (Err(a), Err(b)) => Some(format!("{a}; {b}")),
            (Err(e), _) | (_, Err(e)) => Some(e.clone()),
            _ => None,
        };
        let (u, h) = (u.ok(), h.ok());
        let ratio = u
            .as_ref()
            .zip(h.as_ref())
            .filter(|(_, h)| h.ops_per_sec > 0.0)
            .map(|(u, h)| u.ops_per_sec / h.ops_per_sec);
        // The ratio's spread: one standard deviation of each side's
        // samples, relative, combined; as a factor (ratio ÷ and × 1 + e),
        // which a log axis draws evenly and never takes below 0.
        let rel = u.as_ref().zip(h.as_ref()).map(|(u, h)| {
            let r = |x: &Record| x.stddev / x.ops_per_sec.max(f64::MIN_POSITIVE);
            (r(u).powi(2) + r(h).powi(2)).sqrt()
        });
        Versus {
            test: test.name().into(),
            uvfs_ops_per_sec: u.as_ref().map(|r| r.ops_per_sec),
            host_ops_per_sec: h.as_ref().map(|r| r.ops_per_sec),
            uvfs_stddev: u.as_ref().map(|r| r.stddev),
            host_stddev: h.as_ref().map(|r| r.stddev),
            ratio,
            ratio_low: ratio.zip(rel).map(|(x, e)| x / (1.0 + e)),
            ratio_high: ratio.zip(rel).map(|(x, e)| x * (1.0 + e)),
            target,
            error,
        }
    }

    fn seed(&mut self, row: &Row, host: Option<f64>) -> SeedResult {
        let on = FastPaths::seeds();
        let off = on.with(row.switch, false);
        let (mode, tasks) = row.shape();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut error = None;
        let secs = self.budget.sample;
        for _ in 0..self.budget.rounds {
            let spec = |fast| Spec {
                test: row.test,
                backend: Backend::Uvfs,
                mode,
                tasks,
                fast,
            };
            let ra = self.run(spec(off), secs, 1);
            let rb = self.run(spec(on), secs, 1);
            match (ra, rb) {
                (Ok(x), Ok(y)) => {
                    a.push(row.metric.of(&x));
                    b.push(row.metric.of(&y));
                }
                (Err(e), _) | (_, Err(e)) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let ((ma, sa), (mb, sb)) = (mean_sd(&a), mean_sd(&b));
        let (change, half) = if a.is_empty() || ma <= 0.0 {
            (0.0, 0.0)
        } else {
            let se = (sa * sa / a.len() as f64 + sb * sb / b.len() as f64).sqrt();
            ((mb / ma - 1.0) * 100.0, 1.96 * se / ma * 100.0)
        };
        let verdict = if error.is_some() || a.len() < 2 {
            "not measured"
        } else if change - half > 0.0 {
            "reproduces"
        } else if change + half < 0.0 {
            "opposite"
        } else {
            "within noise"
        };
        SeedResult {
            seed: row.seed.into(),
            test: row.test.name().into(),
            mode: mode.name().into(),
            unit: row.metric.unit().into(),
            tasks,
            switch: row.switch.into(),
            what: row.what.into(),
            evidence: row.evidence.into(),
            published_low_pct: row.published.map(|p| p.0),
            published_high_pct: row.published.map(|p| p.1),
            a_samples: a,
            b_samples: b,
            a_ops_per_sec: ma,
            b_ops_per_sec: mb,
            change_pct: change,
            ci_low_pct: change - half,
            ci_high_pct: change + half,
            verdict: verdict.into(),
            host_ops_per_sec: host,
            error,
        }
    }

    fn scaling(&mut self, tasks: &[usize]) -> Vec<ScalePoint> {
        let mut pts = Vec::new();
        for &test in SCALING {
            for backend in [Backend::Uvfs, Backend::Host] {
                for mode in [Mode::Threads, Mode::Processes] {
                    for &n in tasks {
                        let secs = self.budget.run;
                        if let Ok(ops) = self.run(
                            Spec {
                                test,
                                backend,
                                mode,
                                tasks: n,
                                fast: FastPaths::seeds(),
                            },
                            secs,
                            5,
                        ) {
                            pts.push(ScalePoint {
                                test: test.name().into(),
                                backend: backend.name().into(),
                                mode: mode.name().into(),
                                tasks: n,
                                ops_per_sec: ops.ops_per_sec,
                                stddev: ops.stddev,
                            });
                        }
                    }
                }
            }
        }
        pts
    }
}

/// The targets, checked against this run.
fn targets(
    versus: &[Versus],
    scaling: &[ScalePoint],
    preload: Option<&PreloadReport>,
) -> Vec<Target> {
    let mut t = Vec::new();
    for &(test, goal) in HOST_TARGETS {
        let measured = versus
            .iter()
            .find(|v| v.test == test.name())
            .and_then(|v| v.ratio);
        t.push(Target {
            what: format!("{}: uvfs / host, processes, 1 task", test.name()),
            goal: format!(">= {goal}x"),
            measured,
            met: measured.map(|m| m >= goal),
        });
    }
    for &test in SCALING {
        let at = |n: usize| {
            scaling
                .iter()
                .find(|p| {
                    p.test == test.name()
                        && p.backend == "uvfs"
                        && p.mode == "threads"
                        && p.tasks == n
                })
                .map(|p| p.ops_per_sec)
        };
        let measured = at(2).zip(at(1)).map(|(two, one)| two / one);
        t.push(Target {
            what: format!("{}: uvfs threads, 2 tasks / 1 task", test.name()),
            goal: format!(">= {THREADS_TARGET}x"),
            measured,
            met: measured.map(|m| m >= THREADS_TARGET),
        });
    }
    // Issue 5: the C loop under the shim against the host's tmpfs.
    for def in preload::MODES.iter().filter(|m| m.uvfs) {
        let measured = preload
            .and_then(|p| p.modes.iter().find(|m| m.key == def.key))
            .map(|m| m.ratio_vs_host);
        t.push(Target {
            what: format!("shim open+close: {} / host", def.key),
            goal: format!(">= {}x", preload::TARGET),
            measured,
            met: measured.map(|m| m >= preload::TARGET),
        });
    }
    t.extend(shim_call_targets(preload.and_then(|p| p.calls.as_ref())));
    t
}

/// Issue 14's targets from the shim's per-call loops: dup1 and lseek1
/// against the host, the first call, and the 4-thread open1's gain against
/// the library's (none when the section did not run them).
fn shim_call_targets(calls: Option<&crate::preload_calls::CallsReport>) -> Vec<Target> {
    let mut t = Vec::new();
    for row in calls.map_or(&[][..], |c| &c.rows[..]) {
        if let Some(goal) = row.target {
            t.push(Target {
                what: format!("shim {}: shim / host", row.call),
                goal: format!(">= {goal}x"),
                measured: Some(row.shim_vs_host),
                met: row.met,
            });
        }
    }
    if let Some(f) = calls.map(|c| &c.first) {
        t.push(Target {
            what: "shim first call (µs; VmHWM within the KiB goal too)".into(),
            goal: format!(
                "<= {} us, <= {} KiB",
                crate::preload_calls::FIRST_US_TARGET,
                crate::preload_calls::FIRST_KB_TARGET
            ),
            measured: Some(f.shim_us.median),
            met: Some(f.met),
        });
    }
    if let Some(g) = calls.and_then(|c| c.open_scaling.as_ref()) {
        t.push(Target {
            what: "shim open1, 4 threads / 1: shim's gain / library's".into(),
            goal: format!(">= {}", crate::preload_calls::SCALING_TARGET),
            measured: Some(g.shim_vs_library),
            met: Some(g.met),
        });
    }
    t
}

/// Writes reproduce.json, records.json, index.html and the charts.
fn write_out(out: &Path, r: &Reproduction) -> Result<(), String> {
    let ctx = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(out).map_err(|e| ctx(out, e))?;
    let json = serde_json::to_string_pretty(r).map_err(|e| e.to_string())?;
    let p = out.join("reproduce.json");
    std::fs::write(&p, json + "\n").map_err(|e| ctx(&p, e))?;
    report::write_json(&out.join("records.json"), &r.records)?;
    let charts = html::charts(r)?;
    for (name, svg) in &charts {
        let p = out.join(name);
        std::fs::write(&p, svg).map_err(|e| ctx(&p, e))?;
    }
    if let Some(p) = &r.preload {
        preload::write_json(out, p)?;
    }
    if let Some(f) = &r.fuse {
        fuse::write_json(out, f)?;
    }
    if let Some(p) = &r.peers {
        peers::write_json(out, p)?;
    }
    let p = out.join("index.html");
    std::fs::write(&p, html::page(r, &charts)).map_err(|e| ctx(&p, e))
}

/// Runs one lab test on uvfs (seeds preset, processes mode, one task) for
/// `secs` seconds and prints its rate: a clean target for `perf record` /
/// `valgrind --tool=callgrind`.
pub fn profile_loop(test: &str, secs: f64) -> Result<(), String> {
    let test = Test::from_name(test)?;
    let cfg = RunConfig {
        test,
        backend: Backend::Uvfs,
        mode: Mode::Processes,
        tasks: 1,
        seconds: secs,
        warmup: 0.0,
        interval: secs,
        fastpaths: FastPaths::seeds(),
        dir: host_dir(),
        params: Params::default(),
        min_ops: 0,
    };
    let m = runner::run(&cfg)?;
    println!("{}: {:.0} ops/s", test.name(), m.samples[0]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_task_counts() {
        assert!(scaling_tasks(1).is_empty());
        assert_eq!(scaling_tasks(2), vec![1, 2]);
        assert_eq!(scaling_tasks(6), vec![1, 2, 4, 6]);
        assert_eq!(scaling_tasks(64), vec![1, 2, 4, 8]);
    }

    #[test]
    fn rows_are_in_seed_order() {
        let seeds: Vec<&str> = ROWS.iter().map(|r| r.seed).collect();
        let mut sorted = seeds.clone();
        sorted.sort();
        assert_eq!(seeds, sorted);
        for r in ROWS {
            if let Some((lo, hi)) = r.published {
                assert!(lo <= hi, "{}", r.seed);
            }
        }
    }

    #[test]
    fn every_row_names_a_real_switch() {
        let names: Vec<&str> = FastPaths::switches().map(|(n, _)| n).collect();
        for r in ROWS {
            assert!(names.contains(&r.switch), "{}", r.switch);
        }
        // Every switch has a row.
        for n in names {
            assert!(ROWS.iter().any(|r| r.switch == n), "{n} has no row");
        }
    }

    #[test]
    fn targets_are_judged() {
        let v = vec![Versus {
            test: "open1".into(),
            uvfs_ops_per_sec: Some(30.0),
            host_ops_per_sec: Some(1.0),
            uvfs_stddev: None,
            host_stddev: None,
            ratio: Some(30.0),
            ratio_low: None,
            ratio_high: None,
            target: Some(20.0),
            error: None,
        }];
        let s = vec![
            ScalePoint {
                test: "dup1".into(),
                backend: "uvfs".into(),
                mode: "threads".into(),
                tasks: 1,
                ops_per_sec: 10.0,
                stddev: 0.0,
            },
            ScalePoint {
                test: "dup1".into(),
                backend: "uvfs".into(),
                mode: "threads".into(),
                tasks: 2,
                ops_per_sec: 12.0,
                stddev: 0.0,
            },
        ];
        let t = targets(&v, &s, None);
        let find = |w: &str| t.iter().find(|t| t.what.starts_with(w)).unwrap();
        assert_eq!(find("open1: uvfs / host").met, Some(true));
        assert_eq!(find("openneg").met, None);
        assert_eq!(find("dup1: uvfs threads").met, Some(false));
        assert!((find("dup1: uvfs threads").measured.unwrap() - 1.2).abs() < 1e-9);
        assert_eq!(find("shim open+close: uvfs-default").met, None);
        assert_eq!(find("shim open+close: uvfs-fd-cache-0").measured, None);
        assert!(!t.iter().any(|t| t.what.starts_with("shim dup1")));
    }

    #[test]
    fn shim_call_targets_are_judged() {
        use crate::preload_calls::CallsReport;
        let r = crate::preload_calls::sample_report();
        let t = shim_call_targets(Some(&r));
        let find = |w: &str| t.iter().find(|t| t.what.starts_with(w)).unwrap();
        assert_eq!(find("shim dup1").met, Some(true));
        assert_eq!(find("shim lseek1").met, Some(false));
        assert_eq!(find("shim lseek1").measured, Some(8.0));
        assert!(!t.iter().any(|t| t.what.starts_with("shim stat")));
        assert_eq!(find("shim first call").met, Some(true));
        assert_eq!(find("shim open1, 4 threads").met, Some(false));
        assert_eq!(find("shim open1, 4 threads").measured, Some(0.9));
        // A report from before the scaling was measured has no such target.
        let old = CallsReport {
            open_scaling: None,
            ..r
        };
        assert_eq!(shim_call_targets(Some(&old)).len(), 3);
        assert!(shim_call_targets(None).is_empty());
    }
}
