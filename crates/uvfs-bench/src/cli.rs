//! The command line (clap): `list`, `run`, `compare`, `reproduce`, `soak`,
//! `preload`, and the commands' drivers.

use crate::compare::{self, Rule};
use crate::report::{self, Machine};
use crate::reproduce::{FuseSection, PeersSection, PreloadSection};
use crate::reproduction::Profile;
use crate::runner::{self, Backend, Mode, RunConfig};
use crate::workloads::{self, Params, TESTS, Test};

/// Builds a record from one run's measurement (kept here under its old
/// name for the lab's tests).
pub use crate::report::record;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use uvfs::FastPaths;

mod values;
use values::*;
pub use values::{check_output_dir, check_output_file};

/// The uvfs lab: will-it-scale's file tests on the host kernel and on uvfs.
#[derive(Debug, Parser)]
#[command(name = "uvfs-bench", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every test with a one-line description.
    List,
    /// Run one test and print (and optionally save) its ops/s.
    ///
    /// Tasks start together after their setup, run the test's loop for the
    /// warm-up, then for --seconds while the summed counters are sampled
    /// every --interval; the table shows the mean total ops/s, per task,
    /// the samples' relative standard deviation and the samples.
    Run(RunArgs),
    /// Compare two `run --json` files, record by record.
    ///
    /// Takes `run --json` files and a report's reproduce.json, records.json
    /// or preload.json. Records are matched by test, backend, mode, tasks
    /// and fastpaths (a key that comes several times in a file, as the
    /// host's figures of a report's sections do, pairs in order); when
    /// none matches, says which of these differ and exits 2. A change is
    /// beyond noise when it exceeds --sigmas times the combined
    /// standard error of both runs' samples (sqrt(sd1²/n1 + sd2²/n2)) and
    /// is at least --min-change % of the base; records with fewer than 2
    /// samples on a side are reported as "noise unknown". Exit status: 1
    /// if some record regressed beyond noise, 0 otherwise, 2 on bad input
    /// or when no record matched.
    Compare(CompareArgs),
    /// Reproduce each seed's A/B experiment on uvfs, beside the host.
    ///
    /// Runs each seed's experiment (the README's table of fast paths) on uvfs with the fast
    /// path off (A) and on (B), interleaved A B A B in one process, and the
    /// host kernel's figure for the same test; prints before, after, change
    /// and its 95 % interval, a verdict per seed, uvfs against the host for
    /// every test, the lab's targets and (on more than one CPU)
    /// scaling over tasks; last, as `uvfs-bench preload`, the C
    /// open/close loop under the LD_PRELOAD shim against the host's tmpfs
    /// (default and --full; see --no-preload and --preload), the FUSE
    /// section and, as `uvfs-bench peers`, uvfs against the kernel and the
    /// in-memory crates (see --no-peers and --peers). Writes
    /// index.html with SVG charts, reproduce.json and records.json (for
    /// `compare`), and preload.json, fuse.json, peers.json, into --out.
    /// Exit status 1 if a run failed (the preload section never fails
    /// reproduce: it is reported as skipped).
    Reproduce(ReproduceArgs),
    /// Run a mixed workload on one uvfs VFS for a long time, printing
    /// resident memory every interval (memory must flatten: no leak).
    ///
    /// Tasks are threads: pairs share a process (fd table), and each pair
    /// is a fork of the first process. Each draws random calls (open,
    /// pwrite, pread, truncate, rename, unlink, mkdir, rmdir, symlink,
    /// readlink, link, stat, readdir, dup, dup2, close) over a small
    /// namespace with the caches limited to 256 entries. Errnos the races
    /// make normal (ENOENT, EEXIST, …) are counted; any other ends the soak.
    /// At the end the namespace is removed and the VFS checked for leaked
    /// references. Exit status 1 on an error or when resident memory grew
    /// more than --max-growth % after the warm-up.
    Soak(SoakArgs),
    /// The shim's benchmark: a C open/close loop under the LD_PRELOAD shim
    /// against the same loop on the host's tmpfs, same run.
    ///
    /// Builds the shim (`cargo build --release -p uvfs-preload` into this
    /// binary's target directory) unless --so names one, compiles the loop
    /// (c/openclose.c, embedded) with `cc -O2` in a temporary directory,
    /// then runs it in four modes, interleaved over --repeats rounds: the
    /// host's tmpfs (a fresh directory under /dev/shm); the same with the
    /// shim loaded; uvfs under the shim with UVFS_FD_CACHE=0; uvfs under
    /// the shim with its default environment (UVFS_PREFIX=/uvfs in every
    /// shim run). Prints pairs/s, ns per pair, the ratio to the host's
    /// tmpfs and the target (>= 10x) per uvfs mode, and what the
    /// interposition costs per call: close(-1), fstat on a kernel fd, stat
    /// of a host path, and the host open+close pair, shim loaded minus
    /// not. Exit status 1 if something failed.
    Preload(PreloadArgs),
    /// The lab's FUSE section: the tests on the host's tmpfs, a do-nothing
    /// FUSE server and the uvfs mount.
    ///
    /// Per test, rounds interleaving the host's tmpfs, the floor (a
    /// trivial FUSE server answering from constants, `fuse-floor`) and the
    /// uvfs mount (`uvfs mount --daemon`, built with `$CARGO build --release -p uvfs-fuse`
    /// unless --uvfs names the binary; when it cannot be built or mounted
    /// the run prints `uvfs mount: skipped: REASON` and still measures the
    /// host against the floor). Prints ops/s, uvfs / floor with its
    /// spread, MB/s for the 1 MiB tests, the load average, and the
    /// lab's goals. Needs root and /dev/fuse. Everything is unmounted
    /// at the end, on errors and on SIGINT/SIGTERM (exit status 130).
    Fuse(FuseArgs),
    /// The lab's peers section: uvfs against the kernel's tmpfs and the
    /// in-memory file-system crates.
    ///
    /// The kernel is std::fs under --dir; the crates are the `vfs` crate's
    /// MemoryFS and wasmer's virtual-fs mem_fs, only in a build with the
    /// `peers` feature.
    ///
    /// Rows: open + close, open of a missing file, stat, create + write
    /// 0 bytes + close + unlink, pread and pwrite of 4 KiB (a 4-component
    /// path),
    /// then --files empty files in one directory: create, list (entries/s),
    /// stat each, unlink each. Every row runs on every system in each of
    /// --rounds rounds (the systems' order rotating), each cell for
    /// --seconds; prints the median ops/s, the spread and the per-round
    /// ratio uvfs / peer (median and range). Then memory per empty file,
    /// each system in a fresh process (allocator bytes and resident set;
    /// kernel: slab growth), and a table of what each peer cannot do.
    /// --out DIR writes DIR/peers.json. Exit status 2 on bad input (before
    /// any work), 1 if a system failed.
    Peers(PeersArgs),
    /// One system's memory per empty file, in this process (peers runs
    /// it in a fresh process per system); one JSON line.
    #[command(hide = true)]
    PeersMemory {
        /// kernel, uvfs, vfs-memoryfs or virtual-fs.
        system: String,
        /// Empty files to make.
        files: usize,
        /// The kernel's work directory's parent.
        #[arg(long, default_value = "/dev/shm")]
        dir: PathBuf,
    },
    /// One row of `peers` on one system, repeated for SECS seconds: a
    /// target for perf; prints the row's operations per second.
    #[command(hide = true)]
    PeersLoop {
        /// The row's key, as in peers.json (dir-create, dir-stat-each, …).
        row: String,
        /// How long.
        #[arg(default_value_t = 5.0, value_parser = finite_positive,
              allow_negative_numbers = true)]
        secs: f64,
        /// kernel, uvfs, vfs-memoryfs or virtual-fs.
        #[arg(long, default_value = "uvfs")]
        system: String,
        /// Empty files of the one-directory rows.
        #[arg(long, default_value_t = 10_000)]
        files: usize,
        /// The kernel's work directory's parent.
        #[arg(long, default_value = "/dev/shm")]
        dir: PathBuf,
        /// uvfs's fast paths, as for `run` (e.g. `seeds,path_cache=off`),
        /// for a switch's A/B on one row; uvfs only. Default: seeds.
        #[arg(long, value_name = "SPEC", value_parser = parse_fastpaths)]
        fastpaths: Option<FastPaths>,
    },
    /// Mount the floor (a trivial FUSE server that stores no data) at DIR
    /// and serve it in the foreground until `umount DIR` or SIGINT/SIGTERM.
    FuseFloor(FuseFloorArgs),
    /// Run one lab test on uvfs (seeds, processes mode, one task) for SECS
    /// seconds, or fstree: a target for perf or callgrind.
    #[command(hide = true)]
    Loop {
        /// A test name from `list`, or fstree.
        test: String,
        /// How long.
        #[arg(default_value_t = 5.0, value_parser = finite_positive,
              allow_negative_numbers = true)]
        secs: f64,
    },
}

/// `run`'s options.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The test (`uvfs-bench list` shows them): open1, open2, open3, dup1,
    /// lseek1, lseek2, read1, read2, pread1, write1, unlink1, unlink2,
    /// openneg, stat1, stat12, statchurn, open12, seqread, seqwrite,
    /// bulkwrite, rmdir1, getfl, dup100, fstree, blogbench.
    #[arg(value_parser = Test::from_name)]
    pub test: Test,
    /// Where to run: `host` = real system calls through libc on a temp
    /// directory under --dir; `uvfs` = the same calls on a uvfs VFS built
    /// with --fastpaths, under the same path inside it; `mount` = real
    /// system calls as `host`, in a directory --dir must name (a FUSE
    /// mount such as `uvfs mount DIR` or `uvfs-bench fuse-floor DIR`).
    #[arg(long, value_enum, default_value_t = Backend::Uvfs)]
    pub backend: Backend,
    /// `processes` = each task its own process and fd table (host: forked
    /// processes; uvfs: its own `Process`, on its own OS thread);
    /// `threads` = the tasks are threads sharing one fd table.
    #[arg(long, value_enum, default_value_t = Mode::Processes)]
    pub mode: Mode,
    /// Task counts to run, comma-separated (one run and one record each),
    /// e.g. `1,2,4`. blogbench's tasks take roles: 1 task takes every role
    /// in turn; with N >= 2, task i is [writer, reader, commenter, reader,
    /// rewriter, reader, reader, reader][i mod 8] (2 = writer + reader, 5
    /// = every role).
    /// At most 1024 each: every task is a forked process or an OS thread,
    /// and far past the CPU count a run measures only the scheduler.
    #[arg(long, value_delimiter = ',', num_args = 1.., default_value = "1",
          value_parser = run_tasks, allow_negative_numbers = true)]
    pub tasks: Vec<usize>,
    /// Seconds measured per run, after the warm-up.
    #[arg(long, default_value_t = 5.0, value_parser = finite_positive,
          allow_negative_numbers = true)]
    pub seconds: f64,
    /// Seconds the tasks run before measuring starts.
    #[arg(long, default_value_t = 1.0, value_parser = finite_non_negative,
          allow_negative_numbers = true)]
    pub warmup: f64,
    /// Sample length in seconds: --seconds is split into
    /// round(seconds / interval) samples (at least one).
    #[arg(long, default_value_t = 1.0, value_parser = finite_positive,
          allow_negative_numbers = true)]
    pub interval: f64,
    /// Each sample also lasts until the tasks together made at least N
    /// operations in it, and the last one until every task made N over the
    /// measured time and the test's own counters (fstree's walks,
    /// blogbench's scores) moved. 0 (the default): the clock alone decides,
    /// as in will-it-scale. For checks that must hold on a loaded machine.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub min_ops: u64,
    /// uvfs fast paths: `seeds` (all on), `stock` (all off), or a
    /// comma-separated list of presets and SWITCH=on|off applied left to
    /// right, e.g. `stock,close_sync=on`. `--fastpaths list` names every
    /// switch (any value that is not one answers with the list). Ignored
    /// on the host.
    #[arg(long, default_value = "seeds", value_parser = parse_fastpaths)]
    pub fastpaths: FastPaths,
    /// The directory the work directory `uvfs-bench.XXXXXX` is made in
    /// (host: should be a tmpfs; uvfs: the same path is made inside the
    /// VFS; mount: required, the mounted directory). Default /dev/shm.
    /// host and mount check it before any work: it must exist, be a
    /// directory and be writable (else exit status 2).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also write the results to FILE as a JSON array of records (test,
    /// backend, mode, tasks, fastpaths, ops_per_sec, per_task_ops_per_sec,
    /// stddev, samples, …; fstree adds walk_seconds, blogbench
    /// blogs_written, blogs_read, articles_written, articles_read).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// fstree: directories in each task's own tree (seed 002 used 1000).
    /// Each task's tree, made before the start and not timed, is
    /// --fstree-dirs x --fstree-files empty files, at most 1000000.
    #[arg(long, value_name = "N", default_value_t = workloads::FSTREE_DIRS,
          value_parser = at_least_one,
        allow_negative_numbers = true)]
    pub fstree_dirs: usize,
    /// fstree: files in each of those directories (seed 002 used 1000).
    #[arg(long, value_name = "N", default_value_t = workloads::FSTREE_FILES,
          value_parser = at_least_one,
        allow_negative_numbers = true)]
    pub fstree_files: usize,
    /// uvfs only: the dentry cache and the inode cache each keep at most N
    /// unused entries (0 = only those in use). Default: for fstree a
    /// quarter of one task's tree (dirs x files / 4), so every walk misses
    /// both caches as in seed 002; for the other tests the VFS's default
    /// (1 Mi). The host's tmpfs cannot evict: its whole tree stays cached.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub cache_limit: Option<usize>,
    /// blogbench: most blog directories; blog id I is written to
    /// blog-(I mod N), so past N writers rewrite old blogs in place and a
    /// long run's tree stays bounded (about N x 16 articles of 1-4 KiB).
    #[arg(long, value_name = "N", default_value_t = workloads::BLOGS,
          value_parser = at_least_one,
        allow_negative_numbers = true)]
    pub blogs: usize,
    /// Tasks run wherever the scheduler puts them. By default task I is
    /// bound to the (I mod N)-th of the N CPUs this process may use, as
    /// will-it-scale binds its tasks to cores.
    #[arg(long)]
    pub no_pin: bool,
}

impl RunArgs {
    /// The tests' knobs from the options.
    pub fn params(&self) -> Params {
        Params {
            fstree_dirs: self.fstree_dirs,
            fstree_files: self.fstree_files,
            cache_limit: self.cache_limit,
            blogs: self.blogs,
            pin: !self.no_pin,
        }
    }
}

/// `reproduce`'s options.
#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// Smoke test, well under 30 s: 4 A/B rounds of 0.1 s per side, 0.15 s
    /// per comparison run.
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// Longer and steadier (about 13 minutes on 2 CPUs): 30 rounds of 1 s
    /// per side, 4 s per comparison run. The default (under 3 minutes) is
    /// 10 rounds of 0.3 s and 1 s per comparison run.
    #[arg(long)]
    pub full: bool,
    /// Where index.html, the .svg charts, reproduce.json and records.json
    /// (and preload.json) go (made if missing).
    #[arg(long, value_name = "DIR", default_value = "target/uvfs-report")]
    pub out: PathBuf,
    /// Skip the last section, the LD_PRELOAD shim's C open/close loop
    /// against the host's tmpfs (`uvfs-bench preload`), which otherwise
    /// runs in the default and --full profiles (building the shim with
    /// cargo if needed; when it cannot, it is reported as skipped).
    #[arg(long, conflicts_with = "preload")]
    pub no_preload: bool,
    /// Run the preload section in the --quick profile too.
    #[arg(long)]
    pub preload: bool,
    /// Skip the FUSE section (`uvfs-bench fuse`: the tests on the host's
    /// tmpfs, the floor and the uvfs mount), which otherwise runs in the
    /// default and --full profiles (skipped with its reason without
    /// /dev/fuse or root; uvfs alone skipped when it does not build).
    #[arg(long, conflicts_with = "fuse")]
    pub no_fuse: bool,
    /// Run the FUSE section in the --quick profile too.
    #[arg(long)]
    pub fuse: bool,
    /// Skip the peers section (`uvfs-bench peers`: uvfs against the
    /// kernel and, in a build with the `peers` feature, the in-memory
    /// file-system crates), which otherwise runs in the default and --full
    /// profiles.
    #[arg(long, conflicts_with = "peers")]
    pub no_peers: bool,
    /// Run the peers section in the --quick profile too.
    #[arg(long)]
    pub peers: bool,
}

/// `peers`' options.
#[derive(Debug, Args)]
pub struct PeersArgs {
    /// The systems, comma-separated, uvfs among them: kernel, uvfs,
    /// vfs-memoryfs, virtual-fs (default: every one this build has).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub systems: Option<Vec<String>>,
    /// Rounds (each runs every row on every system).
    #[arg(long, default_value_t = 5, allow_negative_numbers = true)]
    pub rounds: usize,
    /// Seconds per cell (one row on one system in one round).
    #[arg(long, default_value_t = 0.25, value_parser = finite_positive,
          allow_negative_numbers = true)]
    pub seconds: f64,
    /// Empty files of the one-directory rows.
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true)]
    pub files: usize,
    /// Empty files of the memory measurement (0: skip it).
    #[arg(long, default_value_t = 100_000, allow_negative_numbers = true)]
    pub memory_files: usize,
    /// The directory the kernel's work directory is made in (a tmpfs).
    #[arg(long, default_value = "/dev/shm")]
    pub dir: PathBuf,
    /// Also write DIR/peers.json (DIR made if missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl PeersArgs {
    /// The run's configuration, checked (bad input: exit 2 before any
    /// work).
    pub fn config(&self) -> Result<crate::peers::PeersConfig, String> {
        use crate::peers::{PeersConfig, System};
        let systems = match &self.systems {
            None => System::available(),
            Some(v) => v
                .iter()
                .map(|s| System::from_key(s))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let cfg = PeersConfig {
            systems,
            rounds: self.rounds,
            seconds: self.seconds,
            files: self.files,
            memory_files: self.memory_files,
            host_parent: self.dir.clone(),
            exe: None,
            progress: true,
        };
        cfg.check()?;
        if let Some(dir) = &self.out {
            check_output_dir("--out", dir)?;
        }
        Ok(cfg)
    }
}

/// `soak`'s options.
#[derive(Debug, Args)]
pub struct SoakArgs {
    /// Seconds measured after the warm-up.
    #[arg(long, default_value_t = 60.0, value_parser = finite_positive,
          allow_negative_numbers = true, conflicts_with = "calls")]
    pub seconds: f64,
    /// Seconds before the baseline of resident memory is taken.
    #[arg(long, default_value_t = 5.0, value_parser = finite_non_negative,
          allow_negative_numbers = true, conflicts_with = "calls")]
    pub warmup: f64,
    /// Seconds between samples (the lines printed).
    #[arg(long, default_value_t = 5.0, value_parser = finite_positive,
          allow_negative_numbers = true, conflicts_with = "calls")]
    pub interval: f64,
    /// Measure in calls instead of seconds: N calls (all tasks together)
    /// after the warm-up. The phases then hold the same work however fast
    /// or loaded the machine is.
    #[arg(long, value_name = "N", value_parser = at_least_one_u64)]
    pub calls: Option<u64>,
    /// With --calls: calls before the baseline sample (default: --calls).
    #[arg(long, value_name = "N", requires = "calls",
          value_parser = clap::value_parser!(u64))]
    pub warmup_calls: Option<u64>,
    /// With --calls: calls between samples (default: --calls / 40).
    #[arg(long, value_name = "N", requires = "calls", value_parser = at_least_one_u64)]
    pub interval_calls: Option<u64>,
    /// Worker threads.
    #[arg(long, default_value_t = 4, value_parser = soak_tasks,
          allow_negative_numbers = true)]
    pub tasks: usize,
    /// Fail (exit 1) if resident memory at the end exceeds its size after
    /// the warm-up by more than this many % (two points: noisy).
    #[arg(long, value_name = "PCT", value_parser = finite_non_negative,
          allow_negative_numbers = true)]
    pub max_growth: Option<f64>,
    /// Fail (exit 1) if resident memory trends up by more than BYTES per
    /// 1000 calls: the least-squares slope over the measured samples, less
    /// three standard errors.
    #[arg(long, value_name = "BYTES", value_parser = finite_non_negative,
          allow_negative_numbers = true)]
    pub max_slope: Option<f64>,
    /// Fail (exit 1) if the allocator's bytes in use (glibc `mallinfo2`)
    /// trend up by more than BYTES per 1000 calls: the lower edge of the
    /// three-sigma band of their Theil-Sen slope over the measured samples
    /// (the steadier line, the one that finds a small leak).
    #[arg(long, value_name = "BYTES", value_parser = finite_non_negative,
          allow_negative_numbers = true)]
    pub max_heap_slope: Option<f64>,
    /// uvfs fast paths, as for `run`.
    #[arg(long, default_value = "seeds", value_parser = parse_fastpaths)]
    pub fastpaths: FastPaths,
    /// Seed of the random call sequence.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Which call kinds run, a 16-bit mask (bit i = kind i in the soak's
    /// `step`); for narrowing a failure down.
    #[arg(long, default_value_t = u16::MAX, hide = true)]
    pub mask: u16,
    /// Leak BYTES on purpose per 1000 calls: shows the heap check finds a
    /// leak of that size (the soak's own test).
    #[arg(long, value_name = "BYTES", default_value_t = 0, hide = true)]
    pub leak: usize,
}

impl SoakArgs {
    /// The soak's settings from the options.
    pub fn config(&self) -> crate::soak::SoakConfig {
        use crate::soak::Span;
        let span = match self.calls {
            Some(measured) => Span::Calls {
                warmup: self.warmup_calls.unwrap_or(measured),
                measured,
                interval: self.interval_calls.unwrap_or((measured / 40).max(1)),
            },
            None => Span::Seconds {
                warmup: self.warmup,
                measured: self.seconds,
                interval: self.interval,
            },
        };
        crate::soak::SoakConfig {
            span,
            tasks: self.tasks,
            max_growth_pct: self.max_growth,
            max_slope: self.max_slope,
            max_heap_slope: self.max_heap_slope,
            fastpaths: self.fastpaths,
            seed: self.seed,
            mask: self.mask,
            leak: self.leak,
        }
    }
}

/// Most tasks of a `run`.
pub const RUN_MAX_TASKS: usize = 1024;

/// Most iterations of one `preload` loop.
pub const PRELOAD_MAX_ITERATIONS: u64 = 1_000_000_000;

/// Most rounds of `preload`.
pub const PRELOAD_MAX_REPEATS: usize = 1000;

/// Longest `run` in seconds (warm-up and measured time, per task count).
pub const RUN_MAX_SECONDS: f64 = 86400.0;
/// Most samples of one `run` (--seconds / --interval).
pub const RUN_MAX_SAMPLES: f64 = 100_000.0;

/// `run`'s checks beyond each option's own: made before any work.
fn check_run(args: &RunArgs) -> Result<(), String> {
    args.params().check()?;
    if args.seconds + args.warmup > RUN_MAX_SECONDS {
        return Err(format!(
            "--seconds plus --warmup must be at most {RUN_MAX_SECONDS} (a day) per run"
        ));
    }
    if (args.seconds / args.interval).round() > RUN_MAX_SAMPLES {
        return Err(format!(
            "--seconds / --interval is {:.0} samples; at most {RUN_MAX_SAMPLES}",
            (args.seconds / args.interval).round()
        ));
    }
    if let Some(p) = &args.json {
        check_output_file("--json", p)?;
    }
    Ok(())
}

/// `preload`'s options.
#[derive(Debug, Args)]
pub struct PreloadArgs {
    /// The shim to load; built with cargo when absent.
    #[arg(long, value_name = "PATH")]
    pub so: Option<PathBuf>,
    /// Rounds; each runs every mode once. Default 5 (--quick: 3).
    #[arg(long, value_name = "R", value_parser = preload_repeats,
          allow_negative_numbers = true)]
    pub repeats: Option<usize>,
    /// Seconds each measurement (one loop of one mode in one round) is
    /// aimed at; the counts are calibrated per mode from a short first
    /// run. Default 0.3 (--quick: 0.04).
    #[arg(long, value_name = "SECS", conflicts_with = "iterations",
          value_parser = finite_positive, allow_negative_numbers = true)]
    pub seconds: Option<f64>,
    /// Fixed count for every loop of every mode, instead of calibrated
    /// counts.
    #[arg(long, value_name = "N", value_parser = preload_iterations)]
    pub iterations: Option<u64>,
    /// Smoke run, about 3 s once the shim is built: 3 rounds of ~0.04 s
    /// per measurement.
    #[arg(long)]
    pub quick: bool,
    /// Write DIR/preload.json (made if missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `fuse`'s options.
#[derive(Debug, Args)]
pub struct FuseArgs {
    /// Rounds; each runs host, floor and uvfs once per test. Default 3
    /// (--quick: 2).
    #[arg(long, value_name = "R", value_parser = at_least_one)]
    pub rounds: Option<usize>,
    /// Measured seconds per run. Default 1 (--quick: 0.1).
    #[arg(long, value_name = "SECS")]
    pub seconds: Option<f64>,
    /// Warm-up seconds per run. Default 0.2 (--quick: 0.02).
    #[arg(long, value_name = "SECS")]
    pub warmup: Option<f64>,
    /// The tests, comma-separated. Default: open1, stat1, openneg,
    /// unlink1, unlink2, read1, write1, seqread, seqwrite.
    #[arg(long, value_delimiter = ',', value_parser = Test::from_name)]
    pub tests: Vec<Test>,
    /// Worker threads of both servers (their --threads).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = at_least_one)]
    pub threads: usize,
    /// uvfs's --fastpaths (stock or seeds, or switches as for `run`).
    #[arg(long, default_value = "seeds")]
    pub fastpaths: String,
    /// The uvfs binary (else built with cargo).
    #[arg(long, value_name = "PATH", conflicts_with = "no_uvfs")]
    pub uvfs: Option<PathBuf>,
    /// Measure only the host against the floor.
    #[arg(long)]
    pub no_uvfs: bool,
    /// Leave out the second uvfs mount, the one with `--passthrough on`
    /// (`uvfs-pt`).
    #[arg(long)]
    pub no_passthrough: bool,
    /// Mount the `uvfs` side (passthrough off) with `--no-open`: no OPEN
    /// or OPENDIR requests (run the section with and without it, in turn,
    /// for an A/B).
    #[arg(long)]
    pub no_open: bool,
    /// Mount the `uvfs` side with `--passthrough on` (OPEN answered, each
    /// regular file's reads and writes passed to its backing memfd), and
    /// leave out the `uvfs-pt` mount. Compare it with a floor in the same
    /// settings: `--floor-kernel-open --floor-passthrough`.
    #[arg(long, conflicts_with_all = ["no_open", "writeback", "no_passthrough"])]
    pub uvfs_passthrough: bool,
    /// Mount the `uvfs` side (passthrough off) with `--writeback`: the
    /// kernel's writeback cache (run the section with and without it, in
    /// turn, for an A/B).
    #[arg(long)]
    pub writeback: bool,
    /// Both uvfs mounts' space limit (their --size: bytes, or K, M, G);
    /// with passthrough the limit is a private kernel tmpfs's.
    #[arg(long, value_name = "BYTES")]
    pub size: Option<String>,
    /// Smoke run: 2 rounds of 0.1 s.
    #[arg(long)]
    pub quick: bool,
    /// Write DIR/fuse.json (made if missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The floor's entry, attribute and negative-entry timeout in seconds
    /// (0: the kernel caches no names or attributes).
    #[arg(long, value_name = "SECS", default_value_t = 3600.0)]
    pub floor_ttl: f64,
    /// The floor answers OPEN and OPENDIR instead of ENOSYS (FLUSH stays
    /// ENOSYS, as uvfs's server answers it).
    #[arg(long)]
    pub floor_kernel_open: bool,
    /// The floor without the writeback cache.
    #[arg(long)]
    pub floor_no_writeback: bool,
    /// The floor with FUSE passthrough for the files it creates (backing
    /// files in /dev/shm): what reads and writes cost when the kernel
    /// sends them straight to a host file.
    #[arg(long)]
    pub floor_passthrough: bool,
    /// The floor mounted without `default_permissions` (uvfs's mounts
    /// always have it: with it the kernel checks permissions itself and
    /// fetches a directory's attributes again after every create or
    /// unlink in it, two `GETATTR`s per create + unlink).
    #[arg(long)]
    pub floor_no_default_permissions: bool,
}

/// `fuse-floor`'s options.
#[derive(Debug, Args)]
pub struct FuseFloorArgs {
    /// The directory to mount on (an existing directory).
    pub dir: PathBuf,
    /// Worker threads, each with its own /dev/fuse fd.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = at_least_one)]
    pub threads: usize,
    /// Entry, attribute and negative-entry timeout in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 3600.0)]
    pub ttl: f64,
    /// Answer OPEN and OPENDIR (with FOPEN_KEEP_CACHE) instead of ENOSYS
    /// (FLUSH is ENOSYS either way, as uvfs's server answers it).
    #[arg(long)]
    pub kernel_open: bool,
    /// Do not ask for the writeback cache.
    #[arg(long)]
    pub no_writeback: bool,
    /// FUSE passthrough: created files get a backing file in DIR (a host
    /// tmpfs directory; unlinked at once) and their reads and writes go
    /// there without reaching the server.
    #[arg(long, value_name = "DIR")]
    pub passthrough: Option<PathBuf>,
    /// Mount without `default_permissions` (the kernel then checks no
    /// permissions on this mount, and the floor checks none either).
    #[arg(long)]
    pub no_default_permissions: bool,
    /// Unmount and exit when the parent process dies (the lab's children).
    #[arg(long, hide = true)]
    pub die_with_parent: bool,
}

/// `compare`'s options.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline results: `run --json`'s file, or a report's
    /// reproduce.json, records.json or preload.json.
    pub base: PathBuf,
    /// The new results.
    pub new: PathBuf,
    /// How many combined standard errors a change must exceed.
    #[arg(long, default_value_t = 2.0, value_parser = finite_non_negative,
          allow_negative_numbers = true)]
    pub sigmas: f64,
    /// The smallest change, in % of the base, reported as beyond noise.
    #[arg(long, default_value_t = 1.0, value_parser = finite_non_negative,
          allow_negative_numbers = true)]
    pub min_change: f64,
}

/// Runs the parsed command line.
pub fn main(cli: Cli) -> ExitCode {
    match cli.command {
        Command::List => {
            for e in TESTS {
                println!("{:<10} {}", e.name, e.description);
            }
            ExitCode::SUCCESS
        }
        Command::Run(args) => match check_run(&args).and_then(|()| run_dir(&args)) {
            Err(e) => {
                eprintln!("uvfs-bench run: {e}");
                ExitCode::from(2)
            }
            Ok(dir) => match run(&args, dir) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("uvfs-bench run: {e}");
                    ExitCode::FAILURE
                }
            },
        },
        Command::Compare(args) => compare_files(&args),
        Command::Reproduce(args) => {
            if let Err(e) = check_output_dir("--out", &args.out) {
                eprintln!("uvfs-bench reproduce: {e}");
                return ExitCode::from(2);
            }
            let profile = match (args.quick, args.full) {
                (true, _) => Profile::Quick,
                (_, true) => Profile::Full,
                _ => Profile::Default,
            };
            let section = match (args.no_preload, args.preload, profile) {
                (true, _, _) => PreloadSection::Off,
                (_, false, Profile::Quick) => PreloadSection::QuickOff,
                _ => PreloadSection::Run,
            };
            let fuse_section = match (args.no_fuse, args.fuse, profile) {
                (true, _, _) => FuseSection::Off,
                (_, false, Profile::Quick) => FuseSection::QuickOff,
                _ => FuseSection::Run,
            };
            let peers_section = match (args.no_peers, args.peers, profile) {
                (true, _, _) => PeersSection::Off,
                (_, false, Profile::Quick) => PeersSection::QuickOff,
                _ => PeersSection::Run,
            };
            match crate::reproduce::reproduce(
                profile,
                &args.out,
                section,
                fuse_section,
                peers_section,
            ) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("uvfs-bench reproduce: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Soak(a) => {
            let cfg = a.config();
            if let Err(e) = crate::soak::check(&cfg) {
                eprintln!("uvfs-bench soak: {e}");
                return ExitCode::from(2);
            }
            match crate::soak::soak(&cfg) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("uvfs-bench soak: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Preload(a) => match check_preload(&a).map(|()| preload(&a)) {
            Err(e) => {
                eprintln!("uvfs-bench preload: {e}");
                ExitCode::from(2)
            }
            Ok(Ok(())) => ExitCode::SUCCESS,
            Ok(Err(e)) => {
                eprintln!("uvfs-bench preload: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Fuse(a) => fuse(&a),
        Command::Peers(a) => peers(&a),
        Command::PeersMemory { system, files, dir } => {
            match crate::peers::System::from_key(&system)
                .and_then(|s| crate::peers::memory_here(s, files, &dir))
            {
                Ok(m) => match serde_json::to_string(&m) {
                    Ok(line) => {
                        println!("{line}");
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        eprintln!("uvfs-bench peers-memory: {e}");
                        ExitCode::FAILURE
                    }
                },
                Err(e) => {
                    eprintln!("uvfs-bench peers-memory: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::PeersLoop {
            row,
            secs,
            system,
            files,
            dir,
            fastpaths,
        } => {
            let r = crate::peers::System::from_key(&system).and_then(|s| {
                let row = crate::peers::one::row_from_key(&row)?;
                crate::peers::one::run(s, row, secs, files, &dir, fastpaths).map(|v| (row, v))
            });
            match r {
                Ok((row, v)) => {
                    let fast = v.fast.map(|f| format!(" (fast paths {f})"));
                    println!(
                        "{} on {system}{}: {:.0} ops/s, {:.0} per CPU-second",
                        row.key(),
                        fast.unwrap_or_default(),
                        v.wall,
                        v.cpu
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("uvfs-bench peers-loop: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::FuseFloor(a) => fuse_floor(&a),
        Command::Loop { test, secs } => match crate::reproduce::profile_loop(&test, secs) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("uvfs-bench loop: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// `run`'s directory, checked before any work: `--dir`, or /dev/shm for
/// host and uvfs; mount needs `--dir`; host and mount need a writable
/// directory.
fn run_dir(args: &RunArgs) -> Result<PathBuf, String> {
    let dir = match (&args.dir, args.backend) {
        (Some(d), _) => d.clone(),
        (None, Backend::Mount) => {
            return Err("--backend mount needs --dir DIR (the mounted directory)".into());
        }
        (None, _) => PathBuf::from("/dev/shm"),
    };
    if args.backend == Backend::Uvfs {
        if !dir.is_absolute() {
            return Err(format!(
                "--dir {}: must be an absolute path (it is made inside the VFS)",
                dir.display()
            ));
        }
    } else {
        runner::check_dir(&dir)?;
    }
    Ok(dir)
}

fn run(args: &RunArgs, dir: PathBuf) -> Result<(), String> {
    let params = args.params();
    let machine = Machine::current();
    let fast = match args.backend {
        Backend::Host => "host kernel".to_string(),
        Backend::Mount => "real system calls on the mount".to_string(),
        Backend::Uvfs => format!("fast paths {}", args.fastpaths),
    };
    let description = TESTS
        .iter()
        .find(|e| e.test == Some(args.test))
        .map_or("", |e| e.description);
    println!("{} ({description})", args.test.name());
    println!(
        "backend {} ({fast}), {} mode, {} s measured after {} s warm-up, samples of ~{} s, under {}",
        args.backend.name(),
        args.mode.name(),
        args.seconds,
        args.warmup,
        args.interval,
        dir.display()
    );
    println!(
        "machine: {}, {} CPUs, kernel {}",
        machine.cpu, machine.nproc, machine.kernel
    );
    if args.backend == Backend::Uvfs {
        // Whether `cheap_pin`'s read side runs without a fence here.
        let pin = match uvfs::cheap_pin_asymmetric() {
            Some(true) => "membarrier (no fence on the read side)",
            Some(false) => "no membarrier: SeqCst fence on the read side",
            None => "n/a",
        };
        println!("cheap pin: {pin}");
    }
    match args.test {
        Test::Fstree => println!(
            "fstree: per task {} dirs x {} files = {} stats per walk; {}",
            params.fstree_dirs,
            params.fstree_files,
            params.fstree_size(),
            match (args.backend, params.uvfs_cache_limit(args.test)) {
                (Backend::Host, _) => "host tmpfs: the whole tree stays cached".to_string(),
                (Backend::Mount, _) => "whatever serves the mount caches".to_string(),
                (Backend::Uvfs, Some(n)) => format!("uvfs dentry/inode caches limited to {n}"),
                (Backend::Uvfs, None) => "uvfs caches at their default".to_string(),
            }
        ),
        Test::Blogbench => println!(
            "blogbench: at most {} blogs; roles: 1 task takes every role in turn, else task i is \
             [writer, reader, commenter, reader, rewriter, reader, reader, reader][i mod 8]; \
             ops = files written + read",
            params.blogs
        ),
        _ => {}
    }
    let mut out = std::io::stdout();
    report::table_header(&mut out).map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    for &tasks in &args.tasks {
        let cfg = RunConfig {
            test: args.test,
            backend: args.backend,
            mode: args.mode,
            tasks,
            seconds: args.seconds,
            warmup: args.warmup,
            interval: args.interval,
            fastpaths: args.fastpaths,
            dir: dir.clone(),
            params,
            min_ops: args.min_ops,
        };
        let m = runner::run(&cfg)?;
        if !m.leftovers.is_empty() {
            eprintln!(
                "warning: {} left {:?} in {}",
                args.test.name(),
                m.leftovers,
                m.workdir
            );
        }
        let r = record(&cfg, &m, Some(machine.clone()));
        report::table_row(&mut out, &r).map_err(|e| e.to_string())?;
        records.push(r);
    }
    if let Some(path) = &args.json {
        report::write_json(path, &records)?;
        println!("wrote {} record(s) to {}", records.len(), path.display());
    }
    Ok(())
}

/// `preload`'s checks beyond each option's own: made before any work.
fn check_preload(a: &PreloadArgs) -> Result<(), String> {
    if let Some(so) = &a.so
        && !so.is_file()
    {
        return Err(format!("--so {}: no such file", so.display()));
    }
    if let Some(s) = a.seconds
        && s > 60.0
    {
        return Err("--seconds must be at most 60 per measurement".into());
    }
    if let Some(dir) = &a.out {
        check_output_dir("--out", dir)?;
    }
    Ok(())
}

fn preload(a: &PreloadArgs) -> Result<(), String> {
    let cfg = crate::preload::PreloadConfig {
        so: a.so.clone(),
        repeats: a.repeats.unwrap_or(if a.quick { 3 } else { 5 }),
        seconds: a.seconds.unwrap_or(if a.quick { 0.04 } else { 0.3 }),
        iterations: a.iterations,
        host_parent: crate::reproduce::host_dir(),
        progress: true,
    };
    let r = crate::preload::measure(&cfg)?;
    println!();
    crate::preload::print_text(&mut std::io::stdout(), &r).map_err(|e| e.to_string())?;
    if let Some(dir) = &a.out {
        let p = crate::preload::write_json(dir, &r)?;
        println!("\nwrote {}", p.display());
    }
    Ok(())
}

fn peers(a: &PeersArgs) -> ExitCode {
    let cfg = match a.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("uvfs-bench peers: {e}");
            return ExitCode::from(2);
        }
    };
    let r = match crate::peers::measure(&cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("uvfs-bench peers: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!();
    if let Err(e) = crate::peers::print_text(&mut std::io::stdout(), &r) {
        eprintln!("uvfs-bench peers: {e}");
        return ExitCode::FAILURE;
    }
    if let Some(dir) = &a.out {
        match crate::peers::write_json(dir, &r) {
            Ok(p) => println!("\nwrote {}", p.display()),
            Err(e) => {
                eprintln!("uvfs-bench peers: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn fuse(a: &FuseArgs) -> ExitCode {
    let floor = match ttl(a.floor_ttl) {
        Ok(t) => crate::floor::FloorOptions {
            threads: a.threads,
            ttl: t,
            no_open: !a.floor_kernel_open,
            writeback: !a.floor_no_writeback,
            passthrough: a.floor_passthrough.then(crate::reproduce::host_dir),
            default_permissions: !a.floor_no_default_permissions,
        },
        Err(e) => {
            eprintln!("uvfs-bench fuse: --floor-ttl: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = FastPaths::parse(&a.fastpaths) {
        eprintln!("uvfs-bench fuse: --fastpaths {}: {e:?}", a.fastpaths);
        return ExitCode::from(2);
    }
    let seconds = a.seconds.unwrap_or(if a.quick { 0.1 } else { 1.0 });
    let warmup = a.warmup.unwrap_or(if a.quick { 0.02 } else { 0.2 });
    if !(seconds > 0.0 && warmup >= 0.0) {
        eprintln!("uvfs-bench fuse: --seconds must be > 0 and --warmup >= 0");
        return ExitCode::from(2);
    }
    let cfg = crate::fuse::FuseConfig {
        tests: if a.tests.is_empty() {
            crate::fuse::TESTS.to_vec()
        } else {
            a.tests.clone()
        },
        rounds: a.rounds.unwrap_or(if a.quick { 2 } else { 3 }),
        seconds,
        warmup,
        threads: a.threads,
        fastpaths: a.fastpaths.clone(),
        uvfs: match (&a.uvfs, a.no_uvfs) {
            (_, true) => crate::fuse::UvfsSource::Off("--no-uvfs".into()),
            (Some(p), _) => crate::fuse::UvfsSource::Path(p.clone()),
            (None, false) => crate::fuse::UvfsSource::Build,
        },
        host_parent: crate::reproduce::host_dir(),
        mount_parent: std::env::temp_dir(),
        floor,
        progress: true,
        passthrough: !a.no_passthrough,
        size: a.size.clone(),
        no_open: a.no_open,
        writeback: a.writeback,
        uvfs_passthrough: a.uvfs_passthrough,
    };
    match crate::fuse::measure(&cfg) {
        Ok(r) => {
            println!();
            if let Err(e) = crate::fuse::print_text(&mut std::io::stdout(), &r) {
                eprintln!("uvfs-bench fuse: {e}");
                return ExitCode::FAILURE;
            }
            if let Some(dir) = &a.out {
                match crate::fuse::write_json(dir, &r) {
                    Ok(p) => println!("\nwrote {}", p.display()),
                    Err(e) => {
                        eprintln!("uvfs-bench fuse: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("uvfs-bench fuse: {e}");
            if crate::fuse::interrupted() {
                ExitCode::from(130)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn fuse_floor(a: &FuseFloorArgs) -> ExitCode {
    let opts = match ttl(a.ttl) {
        Ok(t) => crate::floor::FloorOptions {
            threads: a.threads,
            ttl: t,
            no_open: !a.kernel_open,
            writeback: !a.no_writeback,
            passthrough: a.passthrough.clone(),
            default_permissions: !a.no_default_permissions,
        },
        Err(e) => {
            eprintln!("uvfs-bench fuse-floor: --ttl: {e}");
            return ExitCode::from(2);
        }
    };
    match std::fs::metadata(&a.dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            eprintln!(
                "uvfs-bench fuse-floor: {}: not a directory",
                a.dir.display()
            );
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("uvfs-bench fuse-floor: {}: {e}", a.dir.display());
            return ExitCode::from(2);
        }
    }
    if a.die_with_parent {
        // SAFETY: asks for SIGTERM (handled by the floor: a lazy unmount)
        // when the parent dies; no memory is passed.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
        // SAFETY: getppid cannot fail.
        if unsafe { libc::getppid() } == 1 {
            eprintln!("uvfs-bench fuse-floor: the parent is gone");
            return ExitCode::FAILURE;
        }
    }
    match crate::floor::serve(&a.dir, opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("uvfs-bench fuse-floor: {e}");
            ExitCode::FAILURE
        }
    }
}

fn compare_files(args: &CompareArgs) -> ExitCode {
    let read = |p: &PathBuf| report::read_json(p);
    let (base, new) = match (read(&args.base), read(&args.new)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("uvfs-bench compare: {e}");
            return ExitCode::from(2);
        }
    };
    if !(args.sigmas >= 0.0 && args.min_change >= 0.0) {
        eprintln!("uvfs-bench compare: --sigmas and --min-change must be >= 0");
        return ExitCode::from(2);
    }
    let rule = Rule {
        sigmas: args.sigmas,
        min_change_pct: args.min_change,
    };
    if let Some(why) = compare::nothing_matches(&base, &new) {
        eprintln!(
            "uvfs-bench compare: no record of {} matches one of {}: {why}",
            args.base.display(),
            args.new.display()
        );
        return ExitCode::from(2);
    }
    let lines = compare::compare(&base, &new, rule);
    if let Err(e) = compare::print(&mut std::io::stdout(), &lines, rule) {
        eprintln!("uvfs-bench compare: {e}");
        return ExitCode::from(2);
    }
    ExitCode::from(compare::exit_status(&lines))
}
