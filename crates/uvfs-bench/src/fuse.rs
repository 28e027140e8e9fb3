//! `fuse`: issue 13's lab section. The same lab tests, with real system
//! calls, on three directories, interleaved round by round: the host's
//! tmpfs (a fresh directory under /dev/shm), the floor (a trivial FUSE
//! server answering from constants, [`crate::floor`], run as
//! `uvfs-bench fuse-floor DIR` in a child) and the uvfs mount
//! (`uvfs mount --daemon DIR`, the binary of `crates/uvfs-fuse`, built with
//! `$CARGO build --release -p uvfs-fuse` into this binary's target
//! directory unless `--uvfs PATH` names one). When uvfs cannot be built or
//! mounted the section prints `uvfs mount: skipped: REASON` and still
//! measures the host against the floor.
//!
//! uvfs runs twice, on two mounts measured in the same rounds: `uvfs`
//! with `--passthrough off` (every read and write a request to the server)
//! and `uvfs-pt` with `--passthrough on` (FUSE passthrough: the kernel
//! reads, writes and maps regular files on their memfds); `uvfs-pt` is
//! skipped, with the reason, when the kernel refuses passthrough, or with
//! `--no-passthrough`.
//!
//! Per test: ops/s of each (median over the rounds, min, max), the ratio
//! uvfs / floor (per round, its median and spread), the floor's and uvfs's
//! share of the host's figure, bandwidth (MB/s) for the 1 MiB tests, and
//! the goals: uvfs within 10 % of the floor on every metadata
//! test; sequential 1 MiB read and write at ≥ 50 % of the host tmpfs.
//! The load average is read before and after.
//!
//! Every mount is held by a [`MountGuard`] that unmounts it lazily
//! (`umount2(MNT_DETACH)`) when dropped, on errors too; SIGINT and SIGTERM
//! unmount every registered mount at once and stop the section after the
//! run in progress.

use crate::floor::{FSNAME, FloorOptions};
use crate::preload::{Figure, Workspace, median};
use crate::report::{self, Machine, Record};
use crate::runner::{self, Backend, Mode, RunConfig};
use crate::workloads::{Params, SEQ_REQUEST, Test};
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::time::{Duration, Instant};
use uvfs::FastPaths;

/// The goal on metadata tests: uvfs / floor at least this.
pub const METADATA_GOAL: f64 = 0.9;
/// The goal on the 1 MiB sequential tests: uvfs / host tmpfs at least this.
pub const BANDWIDTH_GOAL: f64 = 0.5;

/// The default tests, in order.
pub const TESTS: &[Test] = &[
    Test::Open1,
    Test::Stat1,
    Test::Openneg,
    Test::Unlink1,
    Test::Unlink2,
    Test::Read1,
    Test::Write1,
    Test::Seqread,
    Test::Seqwrite,
];

/// What a test measures, for the goals.
pub fn kind(test: Test) -> &'static str {
    match test {
        Test::Seqread | Test::Seqwrite => "bandwidth",
        Test::Read1
        | Test::Read2
        | Test::Pread1
        | Test::Write1
        | Test::Lseek1
        | Test::Lseek2
        | Test::Dup1
        | Test::Dup100
        | Test::Getfl => "data",
        _ => "metadata",
    }
}

/// Where the uvfs binary comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum UvfsSource {
    /// `$CARGO build --release -p uvfs-fuse`.
    Build,
    /// This binary.
    Path(PathBuf),
    /// Not measured (the reason is printed).
    Off(String),
}

/// What to run.
#[derive(Clone, Debug)]
pub struct FuseConfig {
    /// The tests.
    pub tests: Vec<Test>,
    /// Rounds; each runs host, floor and uvfs once per test.
    pub rounds: usize,
    /// Measured seconds per run.
    pub seconds: f64,
    /// Warm-up seconds per run.
    pub warmup: f64,
    /// Server worker threads (the floor's and uvfs's `--threads`).
    pub threads: usize,
    /// uvfs's `--fastpaths`.
    pub fastpaths: String,
    /// The uvfs binary.
    pub uvfs: UvfsSource,
    /// Where the host tmpfs's work directories go (/dev/shm).
    pub host_parent: PathBuf,
    /// Where the mount points are made.
    pub mount_parent: PathBuf,
    /// The floor's settings (its `threads` is overridden by `threads`).
    pub floor: FloorOptions,
    /// Print a line per run on stderr.
    pub progress: bool,
    /// Also measure a uvfs mount with `--passthrough on` (`uvfs-pt`).
    pub passthrough: bool,
    /// Both uvfs mounts' `--size` (as given: bytes, or K, M, G), if any.
    pub size: Option<String>,
    /// The `uvfs` side (passthrough off) mounted with `--no-open` (no OPEN
    /// or OPENDIR requests; docs/fuse.md). Its command line says so.
    pub no_open: bool,
    /// The `uvfs` side (passthrough off) mounted with `--writeback` (the
    /// kernel's writeback cache). Its command line says so.
    pub writeback: bool,
    /// The `uvfs` side mounted with `--passthrough on` instead of off (the
    /// `uvfs-pt` mount is then left out: it would be the same).
    pub uvfs_passthrough: bool,
}

/// One backend's figure on one test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// `host`, `floor` or `uvfs`.
    pub backend: String,
    /// ops/s over the rounds that ran.
    pub ops_per_sec: Figure,
    /// MB/s (10^6 bytes) for the 1 MiB tests: median ops/s x 1 MiB.
    pub mb_per_sec: Option<f64>,
    /// Median ops/s / the host's median.
    pub vs_host: f64,
}

/// One test's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FuseTest {
    /// The test.
    pub test: String,
    /// `metadata`, `data` or `bandwidth`.
    pub kind: String,
    /// The host tmpfs, the floor, and uvfs if it ran.
    pub sides: Vec<Side>,
    /// uvfs / floor, one per round where both ran.
    pub uvfs_vs_floor: Option<Figure>,
    /// uvfs-pt / uvfs (passthrough on / off), one per round where both
    /// ran.
    #[serde(default)]
    pub pt_vs_uvfs: Option<Figure>,
    /// Runs that failed, with their errors.
    pub failures: Vec<String>,
}

/// A goal of the issue, judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    /// What is checked.
    pub what: String,
    /// The goal, e.g. `>= 0.90`.
    pub goal: String,
    /// The measured figure.
    pub measured: Option<f64>,
    /// Met or not (None: not measured).
    pub met: Option<bool>,
}

/// Everything one `fuse` run measured (`fuse.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FuseReport {
    /// The machine.
    pub machine: Machine,
    /// Seconds since the epoch at the start.
    pub started_unix: u64,
    /// Wall seconds.
    pub wall_seconds: f64,
    /// /proc/loadavg's three figures before the first run.
    pub load_before: Vec<f64>,
    /// And after the last.
    pub load_after: Vec<f64>,
    /// Rounds.
    pub rounds: usize,
    /// Measured seconds per run.
    pub seconds: f64,
    /// Warm-up seconds per run.
    pub warmup: f64,
    /// Mode and tasks of every run.
    pub shape: String,
    /// The floor's settings.
    pub floor_settings: String,
    /// The uvfs command line, when it ran.
    pub uvfs_command: Option<String>,
    /// Why uvfs is missing, when it is.
    pub uvfs_skipped: Option<String>,
    /// The uvfs-pt command line (`--passthrough on`), when it ran.
    #[serde(default)]
    pub uvfs_pt_command: Option<String>,
    /// Why uvfs-pt is missing, when it is.
    #[serde(default)]
    pub uvfs_pt_skipped: Option<String>,
    /// FUSE features of this kernel and of fuser.
    pub kernel_features: String,
    /// Per test.
    pub tests: Vec<FuseTest>,
    /// The goals.
    pub goals: Vec<Goal>,
    /// Every run as a lab record (`backend` = `host`, `fuse-floor` or
    /// `fuse-uvfs`; `samples` = ops/s per round), for `compare`.
    pub records: Vec<Record>,
}

/// Why the section cannot run at all, if it cannot: no /dev/fuse, not
/// root.
pub fn unavailable() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (the mounts use mount(2), which needs root)".into());
    }
    let c = crate::backend::cpath("/dev/fuse");
    // SAFETY: `c` is NUL-terminated; the fd is closed at once.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Some(format!(
            "/dev/fuse cannot be opened: {}",
            uvfs::Errno::last_os_error()
        ));
    }
    // SAFETY: closes the fd just opened.
    unsafe { libc::close(fd) };
    None
}

/// What this kernel's FUSE module offers beyond the basics.
pub fn kernel_features() -> String {
    let p = Path::new("/sys/module/fuse/parameters");
    let uring = std::fs::read_to_string(p.join("enable_uring"))
        .map(|s| format!("enable_uring={}", s.trim()))
        .unwrap_or_else(|_| "no enable_uring parameter (FUSE over io_uring not built)".into());
    format!(
        "{uring}; fuser 0.18 speaks /dev/fuse read/write only (no io_uring); it exposes \
         passthrough (FUSE_PASSTHROUGH, backing ids)"
    )
}

// ---- mounts, guards, signals ----

/// Mount points the signal handler unmounts (NUL-terminated, leaked for
/// the handler's sake: a few bytes per mount).
static MOUNTS: [AtomicPtr<libc::c_char>; 4] = [
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
];
/// Set by SIGINT/SIGTERM while the section runs.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    for m in &MOUNTS {
        let p = m.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: `p` is a leaked NUL-terminated path; umount2 is
            // async-signal-safe.
            unsafe { libc::umount2(p, libc::MNT_DETACH) };
        }
    }
    INTERRUPTED.store(true, Ordering::Release);
}

/// SIGINT and SIGTERM handled (unmount, flag) while it lives; the old
/// handlers come back when it is dropped.
struct Signals {
    old: [libc::sigaction; 2],
}

impl Signals {
    fn install() -> Signals {
        INTERRUPTED.store(false, Ordering::Release);
        // SAFETY: all-zero sigaction values are valid to fill in.
        let mut old: [libc::sigaction; 2] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        for (i, sig) in [libc::SIGINT, libc::SIGTERM].into_iter().enumerate() {
            // SAFETY: `sa` is initialised; `old[i]` is writable.
            unsafe { libc::sigaction(sig, &sa, &mut old[i]) };
        }
        Signals { old }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for (i, sig) in [libc::SIGINT, libc::SIGTERM].into_iter().enumerate() {
            // SAFETY: restores the handler saved by `install`.
            unsafe { libc::sigaction(sig, &self.old[i], std::ptr::null_mut()) };
        }
    }
}

/// Whether SIGINT or SIGTERM arrived during the section.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Acquire)
}

/// The file-system type and source mounted on `dir` (the topmost mount
/// there), from /proc/self/mountinfo: `("fuse", "uvfs-floor")` for the
/// floor.
pub fn mounted(dir: &Path) -> Option<(String, String)> {
    let want = std::fs::canonicalize(dir).ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut found = None;
    for line in info.lines() {
        let mut halves = line.splitn(2, " - ");
        let (Some(left), Some(right)) = (halves.next(), halves.next()) else {
            continue;
        };
        let Some(point) = left.split(' ').nth(4) else {
            continue;
        };
        if Path::new(&unescape(point)) == want {
            let mut f = right.split(' ');
            let fstype = f.next().unwrap_or("").to_string();
            let source = unescape(f.next().unwrap_or(""));
            found = Some((fstype, source));
        }
    }
    found
}

/// mountinfo's octal escapes (`\040` for a space, …) undone.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && let Ok(v) = u8::from_str_radix(s.get(i + 1..i + 4).unwrap_or(""), 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A mounted directory: unmounted lazily, its server child (if any)
/// reaped and the mount point removed when dropped.
#[derive(Debug)]
pub struct MountGuard {
    dir: PathBuf,
    slot: Option<usize>,
    child: Option<Child>,
}

impl MountGuard {
    /// Takes charge of `dir` (a fresh, empty mount point) before it is
    /// mounted, so the signal handler knows it.
    fn new(dir: PathBuf) -> MountGuard {
        let c = crate::backend::cpath(dir.as_os_str().as_encoded_bytes());
        let p = c.into_raw();
        let slot = MOUNTS.iter().position(|m| {
            m.compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        });
        if slot.is_none() {
            // SAFETY: `p` came from `into_raw` just above and was not
            // published.
            drop(unsafe { CString::from_raw(p) });
        }
        MountGuard {
            dir,
            slot,
            child: None,
        }
    }

    /// The mount point.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        let c = crate::backend::cpath(self.dir.as_os_str().as_encoded_bytes());
        if mounted(&self.dir).is_some_and(|(t, _)| t.starts_with("fuse")) {
            // SAFETY: `c` is NUL-terminated; a lazy unmount touches no
            // memory of ours.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        if let Some(mut child) = self.child.take() {
            let t0 = Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if t0.elapsed() > Duration::from_secs(5) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
        if let Some(i) = self.slot {
            let p = MOUNTS[i].swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() {
                // SAFETY: the slot held the pointer `new` leaked; it is
                // no longer published, so nothing else reads it.
                drop(unsafe { CString::from_raw(p) });
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A fresh empty directory under `parent` for a mount point.
fn mount_point(parent: &Path) -> Result<PathBuf, String> {
    let d = crate::backend::HostDir::create(parent)?;
    Ok(d.path().to_path_buf())
}

/// Waits until `dir` has a FUSE mount (from `source`, or any when `None`),
/// while the child (if any) lives, at most `limit`.
fn wait_mounted(
    dir: &Path,
    source: Option<&str>,
    child: Option<&mut Child>,
    limit: Duration,
) -> Result<(), String> {
    let t0 = Instant::now();
    let mut child = child;
    loop {
        if let Some((t, src)) = mounted(dir)
            && t.starts_with("fuse")
            && source.is_none_or(|want| src == want)
        {
            return Ok(());
        }
        if let Some(c) = child.as_deref_mut()
            && let Ok(Some(status)) = c.try_wait()
        {
            return Err(format!(
                "the server exited ({status}) before the mount was live"
            ));
        }
        if t0.elapsed() > limit {
            return Err(format!("no mount at {} after {limit:?}", dir.display()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Mounts the floor at a fresh directory under `parent`: this binary's
/// `fuse-floor` in a child.
pub fn mount_floor(parent: &Path, opts: &FloorOptions) -> Result<MountGuard, String> {
    let exe = std::env::current_exe().map_err(|e| format!("where this binary is: {e}"))?;
    let mut g = MountGuard::new(mount_point(parent)?);
    let mut cmd = Command::new(&exe);
    cmd.arg("fuse-floor")
        .arg("--die-with-parent")
        .arg("--threads")
        .arg(opts.threads.to_string())
        .arg("--ttl")
        .arg(opts.ttl.as_secs_f64().to_string());
    if !opts.no_open {
        cmd.arg("--kernel-open");
    }
    if !opts.writeback {
        cmd.arg("--no-writeback");
    }
    if let Some(d) = &opts.passthrough {
        cmd.arg("--passthrough").arg(d);
    }
    if !opts.default_permissions {
        cmd.arg("--no-default-permissions");
    }
    let child = cmd
        .arg(&g.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting {} fuse-floor: {e}", exe.display()))?;
    g.child = Some(child);
    wait_mounted(
        &g.dir,
        Some(FSNAME),
        g.child.as_mut(),
        Duration::from_secs(20),
    )
    .map_err(|e| format!("floor: {e}"))?;
    Ok(g)
}

/// Mounts uvfs at a fresh directory under `parent`:
/// `BIN mount --daemon --threads N --fastpaths F --passthrough P
/// [--size S] [EXTRA...] DIR` (`extra`: `--no-open`, `--writeback`),
/// which returns once the mount is live.
/// Returns the guard and the command line.
pub fn mount_uvfs(
    bin: &Path,
    parent: &Path,
    threads: usize,
    fastpaths: &str,
    passthrough: &str,
    size: Option<&str>,
    extra: &[&str],
) -> Result<(MountGuard, String), String> {
    let g = MountGuard::new(mount_point(parent)?);
    let size = size
        .map(|s| vec!["--size".to_string(), s.to_string()])
        .unwrap_or_default()
        .into_iter()
        .chain(extra.iter().map(|a| a.to_string()));
    let args = [
        "mount".to_string(),
        "--daemon".into(),
        "--threads".into(),
        threads.to_string(),
        "--fastpaths".into(),
        fastpaths.into(),
        "--passthrough".into(),
        passthrough.into(),
    ]
    .into_iter()
    .chain(size)
    .chain([g.dir.display().to_string()])
    .collect::<Vec<_>>();
    let line = format!("{} {}", bin.display(), args.join(" "));
    let out = Command::new(bin)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {line}: {e}"))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{line} exited with {}: {}",
            out.status,
            msg.trim().lines().last().unwrap_or("")
        ));
    }
    wait_mounted(&g.dir, None, None, Duration::from_secs(5))
        .map_err(|e| format!("{line} returned 0 but {e}"))?;
    Ok((g, line))
}

/// The uvfs binary: built with `$CARGO build --release -p uvfs-fuse` into
/// this binary's target directory (as `preload` builds the shim).
pub fn build_uvfs() -> Result<PathBuf, String> {
    let Workspace {
        target,
        manifest,
        cargo,
        ..
    } = Workspace::of_this_binary("--uvfs PATH")?;
    println!(
        "building uvfs: {} build --release -p uvfs-fuse (CARGO_TARGET_DIR={})",
        Path::new(&cargo).display(),
        target.display()
    );
    let _ = std::io::stdout().flush();
    let out = Command::new(&cargo)
        .args(["build", "--release", "-p", "uvfs-fuse", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("running {}: {e}", Path::new(&cargo).display()))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        let why = msg
            .lines()
            .find(|l| l.starts_with("error"))
            .unwrap_or_else(|| msg.trim().lines().last().unwrap_or(""));
        return Err(format!(
            "cargo build --release -p uvfs-fuse failed ({}): {why}",
            out.status
        ));
    }
    let bin = target.join("release").join("uvfs");
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "cargo built uvfs-fuse but {} is missing",
            bin.display()
        ))
    }
}

/// /proc/loadavg's first three figures.
pub fn loadavg() -> Vec<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| {
            s.split_whitespace()
                .take(3)
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

// ---- the measurement ----

/// The places, in each round's order.
const SIDES: [&str; 4] = ["host", "floor", "uvfs", "uvfs-pt"];

/// Runs the section. `Err` only when nothing could be measured (no
/// /dev/fuse, not root, the floor does not mount) or on an interruption;
/// failed runs are reported in the tests' `failures`.
pub fn measure(cfg: &FuseConfig) -> Result<FuseReport, String> {
    if let Some(why) = unavailable() {
        return Err(why);
    }
    if cfg.rounds == 0 || cfg.tests.is_empty() {
        return Err("at least one round and one test".into());
    }
    if !(cfg.seconds > 0.0 && cfg.warmup >= 0.0) {
        return Err("--seconds must be > 0 and --warmup >= 0".into());
    }
    let _signals = Signals::install();
    let t0 = Instant::now();
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let machine = Machine::current();
    let mut floor_opts = cfg.floor.clone();
    floor_opts.threads = cfg.threads;
    FastPaths::parse(&cfg.fastpaths).map_err(|_| format!("bad --fastpaths {}", cfg.fastpaths))?;

    // uvfs first (its build is the slow part), then the floor.
    let bin = match &cfg.uvfs {
        UvfsSource::Off(why) => Err(why.clone()),
        UvfsSource::Path(p) if p.is_file() => Ok(p.clone()),
        UvfsSource::Path(p) => Err(format!("--uvfs {}: no such file", p.display())),
        UvfsSource::Build => build_uvfs(),
    };
    let mount = |pt: &str, extra: &[&str]| match &bin {
        Ok(b) => match mount_uvfs(
            b,
            &cfg.mount_parent,
            cfg.threads,
            &cfg.fastpaths,
            pt,
            cfg.size.as_deref(),
            extra,
        ) {
            Ok((g, line)) => (Some(g), Some(line), None),
            Err(e) => (None, None, Some(e)),
        },
        Err(e) => (None, None, Some(e.clone())),
    };
    let (uvfs, uvfs_command, uvfs_skipped) = mount(
        if cfg.uvfs_passthrough { "on" } else { "off" },
        &[
            cfg.no_open.then_some("--no-open"),
            cfg.writeback.then_some("--writeback"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>(),
    );
    if let Some(why) = &uvfs_skipped {
        println!("uvfs mount: skipped: {why}");
    }
    let (uvfs_pt, uvfs_pt_command, uvfs_pt_skipped) = if cfg.uvfs_passthrough {
        (
            None,
            None,
            Some("--uvfs-passthrough: the uvfs side has passthrough".to_string()),
        )
    } else if cfg.passthrough {
        mount("on", &[])
    } else {
        (None, None, Some("--no-passthrough".to_string()))
    };
    if let Some(why) = &uvfs_pt_skipped {
        println!("uvfs mount --passthrough on: skipped: {why}");
    }
    let floor = mount_floor(&cfg.mount_parent, &floor_opts)?;
    let load_before = loadavg();
    let dirs: [Option<PathBuf>; 4] = [
        Some(cfg.host_parent.clone()),
        Some(floor.dir().to_path_buf()),
        uvfs.as_ref().map(|g| g.dir().to_path_buf()),
        uvfs_pt.as_ref().map(|g| g.dir().to_path_buf()),
    ];

    let mut tests = Vec::new();
    let mut records = Vec::new();
    for &test in &cfg.tests {
        let mut ops: [Vec<Option<f64>>; 4] = Default::default();
        let mut failures = Vec::new();
        for round in 0..cfg.rounds {
            for (k, dir) in dirs.iter().enumerate() {
                let Some(dir) = dir else {
                    ops[k].push(None);
                    continue;
                };
                if interrupted() {
                    return Err("interrupted (every mount was unmounted)".into());
                }
                let rc = RunConfig {
                    test,
                    backend: if k == 0 {
                        Backend::Host
                    } else {
                        Backend::Mount
                    },
                    mode: Mode::Processes,
                    tasks: 1,
                    seconds: cfg.seconds,
                    warmup: cfg.warmup,
                    interval: cfg.seconds,
                    fastpaths: FastPaths::seeds(),
                    dir: dir.clone(),
                    params: Params::default(),
                    // Every sample holds an operation, however slow the
                    // crossing (a count, not a clock, decides).
                    min_ops: 1,
                };
                let r = runner::run(&rc);
                if cfg.progress {
                    eprintln!(
                        "fuse: {} round {}/{} {}: {}",
                        test.name(),
                        round + 1,
                        cfg.rounds,
                        SIDES[k],
                        match &r {
                            Ok(m) => format!("{:.0} ops/s", m.samples.first().unwrap_or(&0.0)),
                            Err(e) => format!("failed: {e}"),
                        }
                    );
                }
                match r {
                    Ok(m) => {
                        if !m.leftovers.is_empty() {
                            failures.push(format!(
                                "{} round {}: left {:?}",
                                SIDES[k],
                                round + 1,
                                m.leftovers
                            ));
                        }
                        ops[k].push(m.samples.first().copied());
                    }
                    Err(e) => {
                        failures.push(format!("{} round {}: {e}", SIDES[k], round + 1));
                        ops[k].push(None);
                    }
                }
            }
        }
        if interrupted() {
            return Err("interrupted (every mount was unmounted)".into());
        }
        let t = summarize(test, &ops, failures);
        for (k, v) in ops.iter().enumerate() {
            let samples: Vec<f64> = v.iter().flatten().copied().collect();
            if samples.is_empty() {
                continue;
            }
            records.push(side_record(test, k, samples, cfg, &machine));
        }
        tests.push(t);
    }
    let load_after = loadavg();
    drop(floor);
    drop(uvfs);
    drop(uvfs_pt);
    let goals = goals(&tests, uvfs_skipped.is_none(), uvfs_pt_skipped.is_none());
    Ok(FuseReport {
        machine,
        started_unix,
        wall_seconds: t0.elapsed().as_secs_f64(),
        load_before,
        load_after,
        rounds: cfg.rounds,
        seconds: cfg.seconds,
        warmup: cfg.warmup,
        shape: "processes mode, 1 task; runs interleaved host, floor, uvfs, uvfs-pt in each round"
            .into(),
        floor_settings: floor_opts.describe(),
        uvfs_command,
        uvfs_skipped,
        uvfs_pt_command,
        uvfs_pt_skipped,
        kernel_features: kernel_features(),
        tests,
        goals,
        records,
    })
}

/// One test's figures from its rounds (`ops[k][round]`, `None` where the
/// run failed or did not happen).
pub fn summarize(test: Test, ops: &[Vec<Option<f64>>], failures: Vec<String>) -> FuseTest {
    let host_median = median(&ops[0].iter().flatten().copied().collect::<Vec<_>>());
    let mut sides = Vec::new();
    for (k, v) in ops.iter().enumerate() {
        let samples: Vec<f64> = v.iter().flatten().copied().collect();
        if samples.is_empty() {
            continue;
        }
        let f = Figure::of(samples);
        sides.push(Side {
            backend: SIDES[k].into(),
            mb_per_sec: (kind(test) == "bandwidth").then(|| f.median * SEQ_REQUEST as f64 / 1e6),
            vs_host: if host_median > 0.0 {
                f.median / host_median
            } else {
                0.0
            },
            ops_per_sec: f,
        });
    }
    // Per round: side `a` / side `b` where both ran.
    let per_round = |a: usize, b: usize| -> Option<Figure> {
        let (Some(va), Some(vb)) = (ops.get(a), ops.get(b)) else {
            return None;
        };
        let r: Vec<f64> = va
            .iter()
            .zip(vb)
            .filter_map(|(x, y)| match (x, y) {
                (Some(x), Some(y)) if *y > 0.0 => Some(x / y),
                _ => None,
            })
            .collect();
        (!r.is_empty()).then(|| Figure::of(r))
    };
    FuseTest {
        test: test.name().into(),
        kind: kind(test).into(),
        sides,
        uvfs_vs_floor: per_round(2, 1),
        pt_vs_uvfs: per_round(3, 2),
        failures,
    }
}

/// The goals from the tests' figures.
pub fn goals(tests: &[FuseTest], uvfs_ran: bool, pt_ran: bool) -> Vec<Goal> {
    let mut g = Vec::new();
    for t in tests {
        match t.kind.as_str() {
            "metadata" => {
                let measured = t.uvfs_vs_floor.as_ref().map(|f| f.median);
                g.push(Goal {
                    what: format!("{}: uvfs / floor (within 10 % of the floor)", t.test),
                    goal: format!(">= {METADATA_GOAL:.2}"),
                    measured,
                    met: measured.map(|m| m >= METADATA_GOAL),
                });
            }
            "bandwidth" => {
                for (side, ran) in [("uvfs", uvfs_ran), ("uvfs-pt", pt_ran)] {
                    if side == "uvfs-pt" && !pt_ran {
                        continue;
                    }
                    let measured = t
                        .sides
                        .iter()
                        .find(|s| s.backend == side)
                        .map(|s| s.vs_host)
                        .filter(|_| ran);
                    g.push(Goal {
                        what: format!("{}: {side} bandwidth / host tmpfs", t.test),
                        goal: format!(">= {:.0} %", BANDWIDTH_GOAL * 100.0),
                        measured,
                        met: measured.map(|m| m >= BANDWIDTH_GOAL),
                    });
                }
            }
            _ => {}
        }
    }
    g
}

fn side_record(
    test: Test,
    k: usize,
    samples: Vec<f64>,
    cfg: &FuseConfig,
    machine: &Machine,
) -> Record {
    let (mean, sd) = report::mean_sd(&samples);
    Record {
        test: test.name().into(),
        backend: ["host", "fuse-floor", "fuse-uvfs", "fuse-uvfs-pt"][k].into(),
        mode: "processes".into(),
        tasks: 1,
        fastpaths: if k >= 2 {
            cfg.fastpaths.clone()
        } else {
            "-".into()
        },
        ops_per_sec: mean,
        per_task_ops_per_sec: mean,
        stddev: sd,
        samples,
        task_ops_per_sec: Vec::new(),
        seconds: cfg.seconds,
        warmup: cfg.warmup,
        machine: Some(machine.clone()),
        walk_seconds: None,
        blogs_written: None,
        blogs_read: None,
        articles_written: None,
        articles_read: None,
    }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".into(), f)
}

/// The text report.
pub fn print_text(out: &mut impl Write, r: &FuseReport) -> std::io::Result<()> {
    writeln!(
        out,
        "FUSE: host tmpfs vs the floor vs uvfs over FUSE ({}; {} rounds of {} s after {} s warm-up)",
        r.shape, r.rounds, r.seconds, r.warmup
    )?;
    writeln!(
        out,
        "machine: {}, {} CPUs, kernel {}; load average before {:?}, after {:?}",
        r.machine.cpu, r.machine.nproc, r.machine.kernel, r.load_before, r.load_after
    )?;
    writeln!(out, "floor: {}", r.floor_settings)?;
    match (&r.uvfs_command, &r.uvfs_skipped) {
        (Some(c), _) => writeln!(out, "uvfs: {c}")?,
        (None, Some(why)) => writeln!(out, "uvfs mount: skipped: {why}")?,
        (None, None) => {}
    }
    match (&r.uvfs_pt_command, &r.uvfs_pt_skipped) {
        (Some(c), _) => writeln!(out, "uvfs-pt: {c}")?,
        (None, Some(why)) => writeln!(out, "uvfs-pt: skipped: {why}")?,
        (None, None) => {}
    }
    writeln!(out, "kernel: {}", r.kernel_features)?;
    writeln!(
        out,
        "\n{:<9} {:<9} {:>12} {:>12} {:>12} {:>9} {:>9} {:>17} {:>22}",
        "test",
        "kind",
        "host ops/s",
        "floor ops/s",
        "uvfs ops/s",
        "floor/host",
        "uvfs/host",
        "uvfs/floor",
        "MB/s host/floor/uvfs"
    )?;
    for t in &r.tests {
        let side = |b: &str| t.sides.iter().find(|s| s.backend == b);
        let ratio = t.uvfs_vs_floor.as_ref().map_or_else(
            || "-".to_string(),
            |f| format!("{:.3} ({:.3}..{:.3})", f.median, f.min, f.max),
        );
        let mb = if t.kind == "bandwidth" {
            format!(
                "{}/{}/{}",
                opt(side("host").and_then(|s| s.mb_per_sec), |v| format!(
                    "{v:.0}"
                )),
                opt(side("floor").and_then(|s| s.mb_per_sec), |v| format!(
                    "{v:.0}"
                )),
                opt(side("uvfs").and_then(|s| s.mb_per_sec), |v| format!(
                    "{v:.0}"
                ))
            )
        } else {
            "-".into()
        };
        writeln!(
            out,
            "{:<9} {:<9} {:>12} {:>12} {:>12} {:>9} {:>9} {:>17} {:>22}",
            t.test,
            t.kind,
            opt(side("host").map(|s| s.ops_per_sec.median), |v| format!(
                "{v:.0}"
            )),
            opt(side("floor").map(|s| s.ops_per_sec.median), |v| format!(
                "{v:.0}"
            )),
            opt(side("uvfs").map(|s| s.ops_per_sec.median), |v| format!(
                "{v:.0}"
            )),
            opt(side("floor").map(|s| s.vs_host), |v| format!(
                "{:.1}%",
                v * 100.0
            )),
            opt(side("uvfs").map(|s| s.vs_host), |v| format!(
                "{:.1}%",
                v * 100.0
            )),
            ratio,
            mb
        )?;
        if let Some(pt) = side("uvfs-pt") {
            writeln!(
                out,
                "  uvfs-pt (passthrough on): {:.0} ops/s ({:.1}% of host{}), passthrough on / off {}",
                pt.ops_per_sec.median,
                pt.vs_host * 100.0,
                pt.mb_per_sec
                    .map_or_else(String::new, |v| format!(", {v:.0} MB/s")),
                t.pt_vs_uvfs.as_ref().map_or_else(
                    || "-".to_string(),
                    |f| format!("{:.3} ({:.3}..{:.3})", f.median, f.min, f.max)
                )
            )?;
        }
        for f in &t.failures {
            writeln!(out, "  failed: {f}")?;
        }
    }
    writeln!(out, "\ngoals:")?;
    for g in &r.goals {
        writeln!(
            out,
            "  {:<55} {:>8} measured {:>8}  {}",
            g.what,
            g.goal,
            opt(g.measured, |v| format!("{v:.3}")),
            match g.met {
                Some(true) => "met",
                Some(false) => "missed",
                None => "not measured",
            }
        )?;
    }
    Ok(())
}

/// Writes `DIR/fuse.json`.
pub fn write_json(dir: &Path, r: &FuseReport) -> Result<PathBuf, String> {
    crate::report::write_json_in(dir, "fuse.json", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/end\\"), "/end\\");
    }

    #[test]
    fn summary_and_goals() {
        let ops = [
            vec![Some(100.0), Some(120.0), Some(110.0)],
            vec![Some(50.0), Some(40.0), None],
            vec![Some(45.0), Some(40.0), Some(1.0)],
        ];
        let t = summarize(Test::Open1, &ops, vec![]);
        assert_eq!(t.sides.len(), 3);
        let r = t.uvfs_vs_floor.as_ref().unwrap();
        assert_eq!(r.samples, vec![0.9, 1.0]);
        assert!((t.sides[1].vs_host - 45.0 / 110.0).abs() < 1e-9);
        let g = goals(&[t], true, false);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].met, Some(true));
        let bw = summarize(
            Test::Seqread,
            &[vec![Some(1000.0)], vec![Some(900.0)], vec![None]],
            vec![],
        );
        assert_eq!(bw.sides.len(), 2);
        assert!(bw.uvfs_vs_floor.is_none());
        assert!((bw.sides[0].mb_per_sec.unwrap() - 1048.576).abs() < 1e-6);
        let g = goals(&[bw], false, false);
        assert_eq!(g[0].met, None);
        // The passthrough side: its ratio to uvfs per round, its own goal.
        let pt = summarize(
            Test::Seqwrite,
            &[
                vec![Some(1000.0), Some(1000.0)],
                vec![Some(900.0), Some(900.0)],
                vec![Some(200.0), Some(250.0)],
                vec![Some(800.0), None],
            ],
            vec![],
        );
        assert_eq!(pt.sides.len(), 4);
        assert_eq!(pt.pt_vs_uvfs.as_ref().unwrap().samples, vec![4.0]);
        let g = goals(&[pt], true, true);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].met, Some(false));
        assert_eq!(g[1].what, "seqwrite: uvfs-pt bandwidth / host tmpfs");
        assert_eq!(g[1].met, Some(true));
    }
}
