//! `preload`: issue 5's benchmark in the lab. A C program running
//! will-it-scale's open1 loop (`open(O_RDWR)` + `close` of one file) runs,
//! in one invocation and interleaved over rounds, on the host's tmpfs
//! without the shim, on the host's tmpfs with `libuvfs_preload.so` loaded
//! (what interposition costs), and on uvfs under the shim with
//! `UVFS_FD_CACHE=0` and with the shim's default environment. The same
//! program also times three calls the shim passes to the kernel:
//! `close(-1)` (a kernel-fd call: the bare cost of interposition),
//! `fstat` on a kernel fd and `stat` of a host path (a path call outside
//! the prefix).
//!
//! The shim is `--so PATH`, or built with cargo (`$CARGO`, else `cargo`)
//! as `build --profile P -p uvfs-preload` into the target directory this
//! binary lives in, with the profile it was built with (`release` for
//! `cargo run --release`); the C program ([`C_SOURCE`], `c/openclose.c`) is
//! compiled at run time with `cc -O2` in a temporary directory. Each
//! measurement lasts about `--seconds` (counts calibrated per mode from a
//! short first run) unless `--iterations` fixes the counts.
//!
//! Output: a table (pairs/s, ns per pair, spread, ratio against the host's
//! tmpfs in the same run, the "≥ 10x the host" target per uvfs
//! mode), the interposition cost per call, and with `--out DIR`
//! `DIR/preload.json` ([`PreloadReport`], whose `records` are lab
//! [`Record`]s that `compare` can read).

use crate::backend::HostDir;
pub use crate::figure::{Figure, median};
use crate::preload_calls::{CallsReport, measure_calls, print_calls};
use crate::report::{Machine, Record, mean_sd};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The C program: the loops, timed; one `key=value` line out.
pub const C_SOURCE: &str = include_str!("../c/openclose.c");

/// The target: uvfs under the shim at least this many times the
/// host's open/close pairs per second.
pub const TARGET: f64 = 10.0;

/// The shim's prefix in every run.
pub const PREFIX: &str = "/uvfs";

/// The `test` of the [`Record`]s this benchmark writes.
pub const RECORD_TEST: &str = "preload-openclose";

/// One way of running the loop.
#[derive(Clone, Copy, Debug)]
pub struct ModeDef {
    /// Short name (JSON).
    pub key: &'static str,
    /// What the table prints.
    pub label: &'static str,
    /// Whether `LD_PRELOAD` holds the shim.
    pub shim: bool,
    /// Whether the loop's file is under the prefix (served by uvfs).
    pub uvfs: bool,
    /// `UVFS_FD_CACHE`'s value, if set (it is removed otherwise).
    pub fd_cache: Option<&'static str>,
}

/// The four modes, in the order each round runs them. The first is the
/// baseline every ratio is taken against.
pub const MODES: [ModeDef; 4] = [
    ModeDef {
        key: "host",
        label: "host tmpfs",
        shim: false,
        uvfs: false,
        fd_cache: None,
    },
    ModeDef {
        key: "host-shim",
        label: "host tmpfs, shim loaded",
        shim: true,
        uvfs: false,
        fd_cache: None,
    },
    ModeDef {
        key: "uvfs-fd-cache-0",
        label: "uvfs, UVFS_FD_CACHE=0 (a placeholder syscall per open and close)",
        shim: true,
        uvfs: true,
        fd_cache: Some("0"),
    },
    ModeDef {
        key: "uvfs-default",
        label: "uvfs, default (placeholder cache)",
        shim: true,
        uvfs: true,
        fd_cache: None,
    },
];

/// What to run.
#[derive(Clone, Debug)]
pub struct PreloadConfig {
    /// The shim; built with cargo when `None`.
    pub so: Option<PathBuf>,
    /// Rounds: each runs every mode once.
    pub repeats: usize,
    /// Seconds each measurement (one loop of one mode) should last.
    pub seconds: f64,
    /// Fixed counts for every loop instead of calibrated ones.
    pub iterations: Option<u64>,
    /// Where the host's work directory is made (a tmpfs: `/dev/shm`).
    pub host_parent: PathBuf,
    /// Print a line per round on stderr.
    pub progress: bool,
}

/// The loops' counts in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// open+close pairs.
    pub pairs: u64,
    /// `close(-1)` calls.
    pub closes: u64,
    /// `fstat` calls on a kernel fd.
    pub fstats: u64,
    /// `stat` calls on a host path.
    pub stats: u64,
}

/// One mode's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModeResult {
    /// [`ModeDef::key`].
    pub key: String,
    /// [`ModeDef::label`].
    pub label: String,
    /// Whether the shim was loaded.
    pub shim: bool,
    /// The environment set for the run (beyond the inherited one, from
    /// which `LD_PRELOAD`, `UVFS_FD_CACHE`, `UVFS_PREFIX`, `UVFS_SEED` and
    /// `UVFS_DUMP` are removed).
    pub env: Vec<String>,
    /// The loop's directory.
    pub dir: String,
    /// The loops' counts per run.
    pub counts: Counts,
    /// open+close pairs per second: the median over the rounds.
    pub pairs_per_sec: f64,
    /// Pairs per second, one per round.
    pub pairs_per_sec_samples: Vec<f64>,
    /// ns per open+close pair.
    pub ns_per_pair: Figure,
    /// `pairs_per_sec` / the host tmpfs's `pairs_per_sec`.
    pub ratio_vs_host: f64,
    /// uvfs modes: whether `ratio_vs_host` >= [`TARGET`].
    pub target_met: Option<bool>,
    /// ns per `close(-1)`.
    pub close_bad_ns: Figure,
    /// ns per `fstat` on a kernel fd.
    pub fstat_ns: Figure,
    /// ns per `stat` of a host path.
    pub stat_ns: Figure,
}

/// What the shim's interposition costs one call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// The call.
    pub call: String,
    /// Median ns on the host without the shim.
    pub without_ns: f64,
    /// Median ns on the host with the shim loaded.
    pub with_ns: f64,
    /// The median over the rounds of (with − without), each round's two
    /// runs being neighbours.
    pub cost_ns: f64,
    /// The smallest round's difference.
    pub min_ns: f64,
    /// The largest round's difference.
    pub max_ns: f64,
}

/// Everything one `preload` run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PreloadReport {
    /// The machine.
    pub machine: Machine,
    /// Seconds since the epoch at the start.
    pub started_unix: u64,
    /// Wall seconds, from the shim's build to the end.
    pub wall_seconds: f64,
    /// The shim.
    pub so: String,
    /// How the C program was compiled.
    pub cc: String,
    /// `UVFS_PREFIX` in the shim's runs.
    pub prefix: String,
    /// The host's work directory (removed at the end).
    pub host_dir: String,
    /// Rounds (each runs every mode once, in [`MODES`] order).
    pub rounds: usize,
    /// Seconds each measurement was aimed at (`None`: `--iterations`).
    pub seconds_per_measurement: Option<f64>,
    /// The target (uvfs / host tmpfs).
    pub target: f64,
    /// The modes, [`MODES`] order.
    pub modes: Vec<ModeResult>,
    /// What interposition costs per call (shim loaded minus not, host
    /// tmpfs).
    pub interposition: Vec<Cost>,
    /// The modes as lab records (`test` = `preload-openclose`, `samples` =
    /// pairs/s per round), for `uvfs-bench compare`.
    pub records: Vec<Record>,
    /// A shell script that forks and execs (`tar -x`, then `find` and
    /// `du`), on the host's tmpfs and under the shim, where the first fork
    /// starts the tree's FUSE server; `None` where the tree cannot get a
    /// server (not root, no `/dev/fuse`).
    #[serde(default)]
    pub tree: Option<TreeCost>,
    /// dup1, lseek1, read1, stat and a 4-thread open1 on the host, under
    /// the shim and through the library, and the first uvfs call's time
    /// and memory (see [`crate::preload_calls`]); `None` where they could
    /// not run (the reason is printed).
    #[serde(default)]
    pub calls: Option<CallsReport>,
}

/// What a process tree under the shim costs against the host: one run of
/// [`TREE_SCRIPT`] each way per round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TreeCost {
    /// The script, `$T` the archive, `$D` the directory.
    pub script: String,
    /// Files and directories in the archive.
    pub entries: usize,
    /// Milliseconds per run on the host's tmpfs.
    pub host_ms: Figure,
    /// Milliseconds per run under the shim (server start included).
    pub shim_ms: Figure,
    /// Median of the rounds' shim / host ratios.
    pub ratio: f64,
}

/// The tree measurement's script: extract, list, sum sizes, all in one
/// shell (each command a child: a fork and an exec).
pub const TREE_SCRIPT: &str = "mkdir -p $D && tar -xf $T -C $D && find $D | wc -l && du -s $D";

/// Runs [`TREE_SCRIPT`] `rounds` times on a host directory under `parent`
/// and under the shim `so`; `None` (with a reason) where the shim cannot
/// give the tree a server.
pub fn measure_tree(so: &Path, parent: &Path, rounds: usize) -> Result<TreeCost, String> {
    // SAFETY: a plain id getter.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/fuse").exists() {
        return Err("the tree needs root and /dev/fuse".into());
    }
    let work = TempDir::create(parent)?;
    let src = work.path().join("src");
    let mut entries = 1;
    for d in 0..5 {
        let dir = src.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        entries += 1;
        for f in 0..40 {
            std::fs::write(dir.join(format!("f{f}")), vec![b'x'; 512 * f + d])
                .map_err(|e| e.to_string())?;
            entries += 1;
        }
    }
    let tarball = work.path().join("t.tar");
    let st = Command::new("tar")
        .arg("-cf")
        .arg(&tarball)
        .arg("-C")
        .arg(&src)
        .arg(".")
        .status()
        .map_err(|e| format!("tar: {e}"))?;
    if !st.success() {
        return Err("tar -c failed".into());
    }
    let prefix = format!("/uvfs-bench-tree.{}", std::process::id());
    let run = |dir: &str, shim: bool| -> Result<f64, String> {
        let mut c = Command::new("bash");
        c.arg("-c")
            .arg(TREE_SCRIPT)
            .env("T", &tarball)
            .env("D", dir)
            .stdout(Stdio::null());
        if shim {
            c.env("LD_PRELOAD", so).env("UVFS_PREFIX", &prefix);
        }
        let t = Instant::now();
        let st = c.status().map_err(|e| format!("bash: {e}"))?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if !st.success() {
            return Err(format!("the tree script failed ({st}) on {dir}"));
        }
        Ok(ms)
    };
    let (mut host, mut shim, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..rounds {
        let hd = work.path().join(format!("h{i}"));
        let h = run(hd.to_str().ok_or("a non-UTF-8 path")?, false)?;
        let u = run(&format!("{prefix}/x"), true)?;
        host.push(h);
        shim.push(u);
        ratios.push(u / h);
    }
    // The mount point the shim made on the host (empty: the mount was in
    // the tree's namespace, gone with it).
    let _ = std::fs::remove_dir(&prefix);
    Ok(TreeCost {
        script: TREE_SCRIPT.into(),
        entries,
        host_ms: Figure::of(host),
        shim_ms: Figure::of(shim),
        ratio: median(&ratios),
    })
}

/// The shim: `so` if given, else built with cargo into the target
/// directory of the running binary.
pub fn find_or_build_shim(so: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = so {
        return std::fs::canonicalize(p)
            .ok()
            .filter(|p| p.is_file())
            .ok_or_else(|| format!("--so {}: no such file", p.display()));
    }
    let Workspace {
        exe,
        target,
        manifest,
        cargo,
    } = Workspace::of_this_binary("--so PATH")?;
    // The profile this binary was built with (its directory's name; `debug`
    // is cargo's `dev`), so that the shim is built as the lab was.
    let dir = exe
        .ancestors()
        .skip(1)
        .find(|d| d.parent() == Some(target.as_path()))
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("release")
        .to_string();
    let profile = if dir == "debug" { "dev" } else { dir.as_str() };
    println!(
        "building the shim: {} build --profile {profile} -p uvfs-preload (CARGO_TARGET_DIR={})",
        Path::new(&cargo).display(),
        target.display()
    );
    let _ = std::io::stdout().flush();
    let status = Command::new(&cargo)
        .args([
            "build",
            "--profile",
            profile,
            "-p",
            "uvfs-preload",
            "--manifest-path",
        ])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "cargo not found ({}): put it on PATH, set $CARGO, or pass --so PATH",
                    Path::new(&cargo).display()
                )
            } else {
                format!("running {}: {e}", Path::new(&cargo).display())
            }
        })?;
    if !status.success() {
        return Err(format!(
            "cargo build --profile {profile} -p uvfs-preload failed ({status}); its messages are above"
        ));
    }
    let so = target.join(&dir).join("libuvfs_preload.so");
    if so.is_file() {
        Ok(so)
    } else {
        Err(format!(
            "cargo built the shim but {} is missing",
            so.display()
        ))
    }
}

/// Where this binary was built from, for building a sibling (the shim,
/// the FUSE front end) into the same target directory.
pub struct Workspace {
    /// This binary.
    pub exe: PathBuf,
    /// Its cargo target directory.
    pub target: PathBuf,
    /// The workspace's `Cargo.toml`.
    pub manifest: PathBuf,
    /// `$CARGO`, else `cargo`.
    pub cargo: std::ffi::OsString,
}

impl Workspace {
    /// This binary's workspace; when it cannot be found, the error says to
    /// pass `instead` (the flag naming a ready-built file).
    pub fn of_this_binary(instead: &str) -> Result<Workspace, String> {
        let exe = std::env::current_exe().map_err(|e| format!("where this binary is: {e}"))?;
        let target = target_dir_of(&exe).ok_or_else(|| {
            format!(
                "{} is not in a cargo target directory (TARGET/PROFILE): pass {instead}",
                exe.display()
            )
        })?;
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
        if !manifest.is_file() {
            return Err(format!(
                "the workspace this binary was built from ({}) is gone: pass {instead}",
                manifest.display()
            ));
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        Ok(Workspace {
            exe,
            target,
            manifest,
            cargo,
        })
    }
}

/// `TARGET` of a binary at `TARGET/PROFILE/NAME` (or a test's
/// `TARGET/PROFILE/deps/NAME`), if that looks like a cargo target
/// directory: PROFILE is `release` or `debug`, or TARGET holds cargo's
/// `CACHEDIR.TAG`.
pub fn target_dir_of(exe: &Path) -> Option<PathBuf> {
    let mut profile = exe.parent()?;
    if profile.file_name().is_some_and(|n| n == "deps") {
        profile = profile.parent()?;
    }
    let target = profile.parent()?;
    let named = profile
        .file_name()
        .is_some_and(|n| n == "release" || n == "debug");
    (named || target.join("CACHEDIR.TAG").is_file()).then(|| target.to_path_buf())
}

/// A temporary directory removed (with what is left in it) when dropped.
struct TempDir(Option<HostDir>);

impl TempDir {
    fn create(parent: &Path) -> Result<TempDir, String> {
        HostDir::create(parent).map(|d| TempDir(Some(d)))
    }

    fn path(&self) -> &Path {
        self.0
            .as_ref()
            .map_or(Path::new("/nonexistent"), HostDir::path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(d) = self.0.take() {
            let _ = d.remove();
        }
    }
}

/// Writes [`C_SOURCE`] into `dir` and compiles it with `cc -O2`; returns
/// the program and the command.
fn compile(dir: &Path) -> Result<(PathBuf, String), String> {
    let bin = crate::cprog::compile_c(dir, "openclose", C_SOURCE, &[])?;
    Ok((bin, "c/openclose.c compiled at run time with cc -O2".into()))
}

/// One run's figures: ns per pair, per close(-1), per fstat, per stat.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// ns per open+close pair.
    pub pair_ns: f64,
    /// ns per `close(-1)`.
    pub close_ns: f64,
    /// ns per `fstat` on a kernel fd.
    pub fstat_ns: f64,
    /// ns per `stat` of a host path.
    pub stat_ns: f64,
}

/// Parses the program's `key=value` line.
pub fn parse_line(line: &str) -> Result<Sample, String> {
    let get = |key: &str| -> Result<f64, String> {
        let v = line
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .ok_or_else(|| format!("no {key}= in {line:?}"))?;
        let x: f64 = v.parse().map_err(|e| format!("{key}={v}: {e}"))?;
        if x.is_finite() && x > 0.0 {
            Ok(x)
        } else {
            Err(format!("{key}={v}: not a positive time"))
        }
    };
    Ok(Sample {
        pair_ns: get("pair_ns")?,
        close_ns: get("close_ns")?,
        fstat_ns: get("fstat_ns")?,
        stat_ns: get("stat_ns")?,
    })
}

/// Everything a mode's runs share.
struct Runner<'a> {
    bin: &'a Path,
    so: &'a Path,
    so_name: String,
    host_dir: &'a Path,
    host_file: PathBuf,
}

impl Runner<'_> {
    /// The loop's directory for a mode: `loop` in the host work directory,
    /// or the same path under the prefix (uvfs then walks the host's path
    /// shape, `/dev/shm/uvfs-bench.XXXXXX/loop/willitscale.file`).
    fn dir(&self, m: &ModeDef) -> String {
        let dir = self.host_dir.join("loop");
        if m.uvfs {
            format!("{PREFIX}{}", dir.display())
        } else {
            dir.display().to_string()
        }
    }

    fn env(&self, m: &ModeDef) -> Vec<(String, String)> {
        let mut env = Vec::new();
        if m.shim {
            env.push(("LD_PRELOAD".into(), self.so.display().to_string()));
            env.push(("UVFS_PREFIX".into(), PREFIX.into()));
        }
        if let Some(v) = m.fd_cache {
            env.push(("UVFS_FD_CACHE".into(), v.into()));
        }
        env
    }

    fn run(&self, m: &ModeDef, c: Counts) -> Result<Sample, String> {
        let mut cmd = crate::cprog::shimless_command(self.bin);
        cmd.envs(self.env(m));
        cmd.arg(if m.shim { self.so_name.as_str() } else { "-" })
            .arg(self.dir(m))
            .arg(&self.host_file);
        for n in [c.pairs, c.closes, c.fstats, c.stats] {
            cmd.arg(n.to_string());
        }
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: running {}: {e}", m.label, self.bin.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!(
                "{}: the loop failed ({}): {}{}",
                m.label,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim(),
                stdout.trim()
            ));
        }
        let line = stdout.lines().last().unwrap_or("");
        let shim_seen = line.split_whitespace().any(|kv| kv == "shim=1");
        if shim_seen != m.shim {
            return Err(format!("{}: shim loaded = {shim_seen}: {line}", m.label));
        }
        parse_line(line).map_err(|e| format!("{}: {e}", m.label))
    }
}

/// Counts making each loop last about `secs`, from a calibration sample.
fn calibrated(s: &Sample, secs: f64) -> Counts {
    let n = |ns: f64| ((secs * 1e9 / ns) as u64).clamp(1000, 2_000_000_000);
    Counts {
        pairs: n(s.pair_ns),
        closes: n(s.close_ns),
        fstats: n(s.fstat_ns),
        stats: n(s.stat_ns),
    }
}

/// Runs the benchmark.
pub fn measure(cfg: &PreloadConfig) -> Result<PreloadReport, String> {
    if cfg.repeats == 0 {
        return Err("--repeats must be at least 1".into());
    }
    if cfg.iterations == Some(0) {
        return Err("--iterations must be at least 1".into());
    }
    if cfg.iterations.is_none() && !(cfg.seconds > 0.0 && cfg.seconds.is_finite()) {
        return Err("--seconds must be > 0".into());
    }
    let t0 = Instant::now();
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // The C program first: without `cc`, no need to build the shim.
    let build = TempDir::create(&std::env::temp_dir())?;
    let (bin, cc) = compile(build.path())?;
    let so = find_or_build_shim(cfg.so.as_deref())?;
    let so_name = so
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| format!("{}: no file name", so.display()))?;
    let host = TempDir::create(&cfg.host_parent)?;
    let r = Runner {
        bin: &bin,
        so: &so,
        so_name,
        host_dir: host.path(),
        host_file: host.path().join("stat.file"),
    };

    // Counts per mode: fixed, or from a short first run of each mode.
    let mut counts = Vec::with_capacity(MODES.len());
    for m in &MODES {
        counts.push(match cfg.iterations {
            Some(n) => Counts {
                pairs: n,
                closes: n,
                fstats: n,
                stats: n,
            },
            None => {
                let probe = Counts {
                    pairs: 4000,
                    closes: 20000,
                    fstats: 10000,
                    stats: 5000,
                };
                calibrated(&r.run(m, probe)?, cfg.seconds)
            }
        });
    }
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); MODES.len()];
    for round in 0..cfg.repeats {
        for (i, m) in MODES.iter().enumerate() {
            samples[i].push(r.run(m, counts[i])?);
        }
        if cfg.progress {
            eprintln!(
                "preload: round {}/{}: ns per pair {}",
                round + 1,
                cfg.repeats,
                samples
                    .iter()
                    .map(|s| s
                        .last()
                        .map_or(String::from("-"), |x| format!("{:.0}", x.pair_ns)))
                    .collect::<Vec<_>>()
                    .join(" / ")
            );
        }
    }

    let machine = Machine::current();
    let mut modes: Vec<ModeResult> = MODES
        .iter()
        .zip(&samples)
        .zip(&counts)
        .map(|((m, s), &c)| {
            let col = |f: Pick| s.iter().map(f).collect::<Vec<f64>>();
            let pps: Vec<f64> = s.iter().map(|x| 1e9 / x.pair_ns).collect();
            ModeResult {
                key: m.key.into(),
                label: m.label.into(),
                shim: m.shim,
                env: r
                    .env(m)
                    .into_iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect(),
                dir: r.dir(m),
                counts: c,
                pairs_per_sec: median(&pps),
                pairs_per_sec_samples: pps,
                ns_per_pair: Figure::of(col(|x| x.pair_ns)),
                ratio_vs_host: 0.0,
                target_met: None,
                close_bad_ns: Figure::of(col(|x| x.close_ns)),
                fstat_ns: Figure::of(col(|x| x.fstat_ns)),
                stat_ns: Figure::of(col(|x| x.stat_ns)),
            }
        })
        .collect();
    let host_pps = modes[0].pairs_per_sec;
    for (m, def) in modes.iter_mut().zip(&MODES) {
        m.ratio_vs_host = m.pairs_per_sec / host_pps;
        m.target_met = def.uvfs.then_some(m.ratio_vs_host >= TARGET);
    }
    let interposition = interposition(&samples[0], &samples[1]);
    let records = modes
        .iter()
        .zip(&MODES)
        .map(|(m, def)| record(m, def, &machine))
        .collect();
    let tree = match measure_tree(&so, &cfg.host_parent, cfg.repeats) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("preload: the process-tree measurement is skipped: {e}");
            None
        }
    };
    let calls = match measure_calls(
        &so,
        PREFIX,
        host.path(),
        build.path(),
        cfg.repeats,
        cfg.seconds,
        cfg.iterations,
    ) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("preload: the per-call measurement is skipped: {e}");
            None
        }
    };
    let host_dir = host.path().display().to_string();
    drop(host);
    drop(build);
    Ok(PreloadReport {
        machine,
        started_unix,
        wall_seconds: t0.elapsed().as_secs_f64(),
        so: so.display().to_string(),
        cc,
        prefix: PREFIX.into(),
        host_dir,
        rounds: cfg.repeats,
        seconds_per_measurement: cfg.iterations.is_none().then_some(cfg.seconds),
        target: TARGET,
        modes,
        interposition,
        records,
        tree,
        calls,
    })
}

/// Picks one figure of a [`Sample`].
type Pick = fn(&Sample) -> f64;

/// The interposition's cost per call: with the shim minus without, round
/// by round (the two runs are neighbours in each round).
fn interposition(without: &[Sample], with: &[Sample]) -> Vec<Cost> {
    let calls: [(&str, Pick); 4] = [
        ("close(-1) (kernel fd call)", |s| s.close_ns),
        ("fstat (kernel fd)", |s| s.fstat_ns),
        ("stat (host path, outside the prefix)", |s| s.stat_ns),
        ("open+close pair (host path)", |s| s.pair_ns),
    ];
    calls
        .iter()
        .map(|&(call, f)| {
            let a: Vec<f64> = without.iter().map(f).collect();
            let b: Vec<f64> = with.iter().map(f).collect();
            let d: Vec<f64> = a.iter().zip(&b).map(|(a, b)| b - a).collect();
            Cost {
                call: call.into(),
                without_ns: median(&a),
                with_ns: median(&b),
                cost_ns: median(&d),
                min_ns: d.iter().copied().fold(f64::INFINITY, f64::min),
                max_ns: d.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            }
        })
        .collect()
}

/// A mode as a lab record (mean and sd of the rounds' pairs/s, as the
/// record contract says).
fn record(m: &ModeResult, def: &ModeDef, machine: &Machine) -> Record {
    let (mean, sd) = mean_sd(&m.pairs_per_sec_samples);
    let seconds = m
        .ns_per_pair
        .samples
        .iter()
        .map(|ns| ns * m.counts.pairs as f64 / 1e9)
        .sum();
    Record {
        test: RECORD_TEST.into(),
        backend: if def.uvfs { "uvfs-preload" } else { "host" }.into(),
        mode: "processes".into(),
        tasks: 1,
        fastpaths: match (def.shim, def.fd_cache) {
            (false, _) => "-".into(),
            (true, Some(v)) => format!("LD_PRELOAD,UVFS_FD_CACHE={v}"),
            (true, None) => "LD_PRELOAD".into(),
        },
        ops_per_sec: mean,
        per_task_ops_per_sec: mean,
        stddev: sd,
        samples: m.pairs_per_sec_samples.clone(),
        task_ops_per_sec: Vec::new(),
        seconds,
        warmup: 0.0,
        machine: Some(machine.clone()),
        walk_seconds: None,
        blogs_written: None,
        blogs_read: None,
        articles_written: None,
        articles_read: None,
    }
}

/// The report as text: the table, the interposition costs, the machine.
pub fn print_text(out: &mut impl Write, r: &PreloadReport) -> std::io::Result<()> {
    writeln!(
        out,
        "will-it-scale's open1 loop (open(O_RDWR) + close of one file) in C, {}",
        r.cc
    )?;
    writeln!(out, "shim: {} (UVFS_PREFIX={})", r.so, r.prefix)?;
    writeln!(
        out,
        "machine: {}, {} CPUs, kernel {}",
        r.machine.cpu, r.machine.nproc, r.machine.kernel
    )?;
    writeln!(
        out,
        "{} round(s), the modes interleaved in each; {}; median over the rounds, spread = (max - min) / median",
        r.rounds,
        match r.seconds_per_measurement {
            Some(s) => format!("each measurement ~{s} s (counts calibrated per mode)"),
            None => "fixed counts (--iterations)".into(),
        }
    )?;
    let w = r.modes.iter().map(|m| m.label.len()).max().unwrap_or(10);
    writeln!(
        out,
        "\n{:<w$} {:>12} {:>10} {:>7} {:>8}  target >= {}x host",
        "mode", "pairs/s", "ns/pair", "spread", "vs host", r.target
    )?;
    for m in &r.modes {
        let row = format!(
            "{:<w$} {:>12.0} {:>10.1} {:>6.1}% {:>7.2}x  {}",
            m.label,
            m.pairs_per_sec,
            m.ns_per_pair.median,
            m.ns_per_pair.spread_pct(),
            m.ratio_vs_host,
            match m.target_met {
                Some(true) => "met",
                Some(false) => "MISSED",
                None => "",
            }
        );
        writeln!(out, "{}", row.trim_end())?;
    }
    writeln!(
        out,
        "\ninterposition cost per call (host tmpfs: shim loaded minus not; median of the rounds' differences)"
    )?;
    writeln!(
        out,
        "{:<38} {:>12} {:>10} {:>9}  {:>19}",
        "call", "without, ns", "with, ns", "cost, ns", "rounds' min..max"
    )?;
    for c in &r.interposition {
        let row = format!(
            "{:<38} {:>12.1} {:>10.1} {:>+9.1}  {:>+8.1}..{:<+9.1}",
            c.call, c.without_ns, c.with_ns, c.cost_ns, c.min_ns, c.max_ns
        );
        writeln!(out, "{}", row.trim_end())?;
    }
    writeln!(
        out,
        "\nthe same calls in every mode (median ns): close(-1) / fstat / stat"
    )?;
    for m in &r.modes {
        writeln!(
            out,
            "{:<w$} {:>8.1} {:>8.1} {:>8.1}",
            m.label, m.close_bad_ns.median, m.fstat_ns.median, m.stat_ns.median
        )?;
    }
    if let Some(c) = &r.calls {
        print_calls(out, c)?;
    }
    if let Some(t) = &r.tree {
        writeln!(
            out,
            "\na process tree ({} archive entries): bash -c '{}', ms per run (median, min..max)",
            t.entries, t.script
        )?;
        writeln!(
            out,
            "host tmpfs                    {:>8.1}  {:.1}..{:.1}",
            t.host_ms.median, t.host_ms.min, t.host_ms.max
        )?;
        writeln!(
            out,
            "shim (tree served over FUSE)  {:>8.1}  {:.1}..{:.1}  {:.2}x the host",
            t.shim_ms.median, t.shim_ms.min, t.shim_ms.max, t.ratio
        )?;
    }
    Ok(())
}

/// Writes `dir/preload.json` (making `dir`); returns its path.
pub fn write_json(dir: &Path, r: &PreloadReport) -> Result<PathBuf, String> {
    crate::report::write_json_in(dir, "preload.json", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_programs_line() {
        let s = parse_line(
            "shim=1 pairs=10 pair_ns=2807.5 closes=10 close_ns=166.4 fstats=10 fstat_ns=450 stats=10 stat_ns=1400.25",
        )
        .unwrap();
        assert_eq!(
            s,
            Sample {
                pair_ns: 2807.5,
                close_ns: 166.4,
                fstat_ns: 450.0,
                stat_ns: 1400.25
            }
        );
        assert!(parse_line("pair_ns=1 close_ns=1 fstat_ns=1").is_err());
        assert!(parse_line("pair_ns=0 close_ns=1 fstat_ns=1 stat_ns=1").is_err());
        assert!(parse_line("pair_ns=x close_ns=1 fstat_ns=1 stat_ns=1").is_err());
        // A key is matched whole: `stat_ns` is not `fstat_ns`'s tail.
        let s = parse_line("fstat_ns=5 stat_ns=7 pair_ns=1 close_ns=2").unwrap();
        assert_eq!((s.fstat_ns, s.stat_ns), (5.0, 7.0));
    }

    #[test]
    fn medians_and_spread() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        let f = Figure::of(vec![110.0, 100.0, 90.0]);
        assert_eq!((f.median, f.min, f.max), (100.0, 90.0, 110.0));
        assert!((f.spread_pct() - 20.0).abs() < 1e-9);
    }

    #[test]
    fn cost_is_the_median_of_round_differences() {
        let s = |ns: f64| Sample {
            pair_ns: ns * 10.0,
            close_ns: ns,
            fstat_ns: ns,
            stat_ns: ns,
        };
        let c = interposition(
            &[s(100.0), s(110.0), s(90.0)],
            &[s(101.0), s(113.0), s(92.0)],
        );
        assert_eq!(c[0].cost_ns, 2.0);
        assert_eq!((c[0].min_ns, c[0].max_ns), (1.0, 3.0));
        assert_eq!(c[0].without_ns, 100.0);
        assert_eq!(c[3].cost_ns, 20.0);
    }

    #[test]
    fn target_dir_from_the_binary() {
        assert_eq!(
            target_dir_of(Path::new("/w/target/release/uvfs-bench")),
            Some(PathBuf::from("/w/target"))
        );
        assert_eq!(
            target_dir_of(Path::new("/w/t/debug/deps/cli-0123")),
            Some(PathBuf::from("/w/t"))
        );
        assert_eq!(
            target_dir_of(Path::new("/nonexistent/bin/uvfs-bench")),
            None
        );
    }

    #[test]
    fn counts_aim_at_the_time() {
        let c = calibrated(
            &Sample {
                pair_ns: 1000.0,
                close_ns: 100.0,
                fstat_ns: 1e12,
                stat_ns: 1e-3,
            },
            0.5,
        );
        assert_eq!(c.pairs, 500_000);
        assert_eq!(c.closes, 5_000_000);
        assert_eq!(c.fstats, 1000);
        assert_eq!(c.stats, 2_000_000_000);
    }
}
