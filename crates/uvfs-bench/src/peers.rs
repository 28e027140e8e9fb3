//! `peers`: issue 16's lab section. The same metadata and I/O operations on
//! uvfs, on the host kernel's tmpfs (through `std::fs`, under `/dev/shm`)
//! and on the in-process in-memory file systems Rust users pick today: the
//! `vfs` crate's `MemoryFS` and wasmer's `virtual-fs` `mem_fs` (optional
//! dependencies of the lab, behind its `peers` cargo feature; without it
//! only the kernel and uvfs run).
//!
//! Every row runs on every system in each round, rounds interleaved (the
//! systems' order rotates from round to round so none always runs first),
//! each cell for about `--seconds`; the table shows the median over the
//! rounds, the spread ((max − min) / median) and, per peer, the median and
//! range of the per-round ratio uvfs / peer. The directory rows make
//! `--files` empty files in one directory, list it, stat each file and
//! unlink each, one pass per round (list: repeated for the cell's time).
//!
//! Memory per empty file is measured in a fresh process per system
//! (`uvfs-bench peers-memory`, hidden): the allocator's bytes in use
//! (glibc `mallinfo2`) and the resident set before and after creating
//! `--memory-files` empty files in one directory, divided by the count; on
//! the kernel the growth of the `shmem_inode_cache` and `dentry` slabs
//! (`/proc/slabinfo`; other processes' activity is noise in it).
//!
//! The peers do less than Linux: [`CANNOT`] is the table of what each
//! cannot do, printed with the figures.

use crate::loadavg::LoadAvg;
use crate::memstat::{heap_bytes, rss_bytes};
use crate::report::Machine;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// One system the rows run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum System {
    /// The host kernel's tmpfs through `std::fs`.
    Kernel,
    /// uvfs (a `Process` on a fresh `Vfs`, default fast paths).
    Uvfs,
    /// The `vfs` crate's `MemoryFS`.
    VfsMemory,
    /// wasmer's `virtual-fs` `mem_fs`.
    VirtualFs,
}

impl System {
    /// Every system this build can run (the peers only with the `peers`
    /// feature).
    pub fn available() -> Vec<System> {
        let mut v = vec![System::Kernel, System::Uvfs];
        if cfg!(feature = "peers") {
            v.push(System::VfsMemory);
            v.push(System::VirtualFs);
        }
        v
    }

    /// The command line's and JSON's name.
    pub fn key(self) -> &'static str {
        match self {
            System::Kernel => "kernel",
            System::Uvfs => "uvfs",
            System::VfsMemory => "vfs-memoryfs",
            System::VirtualFs => "virtual-fs",
        }
    }

    /// What the tables print.
    pub fn label(self) -> &'static str {
        match self {
            System::Kernel => "kernel tmpfs",
            System::Uvfs => "uvfs",
            System::VfsMemory => "vfs MemoryFS",
            System::VirtualFs => "virtual-fs mem_fs",
        }
    }

    /// The system named `s`, if this build has it.
    pub fn from_key(s: &str) -> Result<System, String> {
        let all = [
            System::Kernel,
            System::Uvfs,
            System::VfsMemory,
            System::VirtualFs,
        ];
        match all.into_iter().find(|x| x.key() == s) {
            Some(x) if System::available().contains(&x) => Ok(x),
            Some(x) => Err(format!(
                "{} needs the lab built with its `peers` feature (cargo build --release -p uvfs-bench --features peers)",
                x.key()
            )),
            None => Err(format!(
                "unknown system {s:?}: kernel, uvfs, vfs-memoryfs or virtual-fs"
            )),
        }
    }
}

/// The rows, in the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// Open an existing file read-only and close it.
    OpenClose,
    /// Open a missing file (an error is the expected result).
    OpenMissing,
    /// stat of an existing file.
    Stat,
    /// Create a file, write 0 bytes, close, unlink.
    CreateUnlink,
    /// Read 4 KiB at offset 0 of an open file.
    Pread,
    /// Write 4 KiB at offset 0 of an open file.
    Pwrite,
    /// `--files` empty files made in one directory.
    DirCreate,
    /// The directory listed (entries per second).
    DirList,
    /// stat of each of its files.
    DirStat,
    /// unlink of each.
    DirUnlink,
}

/// Every row.
pub const ROWS: [Row; 10] = [
    Row::OpenClose,
    Row::OpenMissing,
    Row::Stat,
    Row::CreateUnlink,
    Row::Pread,
    Row::Pwrite,
    Row::DirCreate,
    Row::DirList,
    Row::DirStat,
    Row::DirUnlink,
];

impl Row {
    /// JSON's name.
    pub fn key(self) -> &'static str {
        match self {
            Row::OpenClose => "open-close",
            Row::OpenMissing => "open-missing",
            Row::Stat => "stat",
            Row::CreateUnlink => "create-write0-close-unlink",
            Row::Pread => "pread-4k",
            Row::Pwrite => "pwrite-4k",
            Row::DirCreate => "dir-create",
            Row::DirList => "dir-list",
            Row::DirStat => "dir-stat-each",
            Row::DirUnlink => "dir-unlink-each",
        }
    }

    /// What the table prints.
    pub fn label(self, files: usize) -> String {
        match self {
            Row::OpenClose => "open + close".into(),
            Row::OpenMissing => "open of a missing file".into(),
            Row::Stat => "stat".into(),
            Row::CreateUnlink => "create + write 0 + close + unlink".into(),
            Row::Pread => "pread 4 KiB".into(),
            Row::Pwrite => "pwrite 4 KiB".into(),
            Row::DirCreate => format!("{files} files in one directory: create"),
            Row::DirList => "  list (entries/s)".into(),
            Row::DirStat => "  stat each".into(),
            Row::DirUnlink => "  unlink each".into(),
        }
    }
}

/// What each peer cannot do that Linux (and uvfs) does: (what, kernel,
/// uvfs, vfs MemoryFS, virtual-fs). Read from the crates' sources
/// (vfs 0.13, virtual-fs 0.704).
pub const CANNOT: &[(&str, &str, &str, &str, &str)] = &[
    (
        "file descriptors, open-file objects shared by dup and fork",
        "yes",
        "yes",
        "no: a handle is a reader or a writer of its own",
        "no: a handle per open, no fd table",
    ),
    (
        "owners, modes, permission checks",
        "yes",
        "yes",
        "no",
        "no (no owners; no checks)",
    ),
    ("rename", "yes", "yes", "no (move_file unsupported)", "yes"),
    ("hard links", "yes", "yes", "no", "no"),
    ("symlinks", "yes", "yes", "no", "yes"),
    (
        "a write seen by other handles before close or flush",
        "yes",
        "yes",
        "no: the writer's buffer replaces the file on flush or drop; \
         readers keep a snapshot",
        "yes",
    ),
    (
        "errors as errno (ENOENT, EEXIST, ENOTDIR, …)",
        "yes",
        "yes",
        "its own error kinds",
        "its own error kinds",
    ),
    (
        "directory lookup",
        "hashed dentry cache",
        "hashed dentry cache",
        "one ordered map of full paths",
        "a linear search of the parent's children",
    ),
    (
        "readdir with seekable offsets (telldir/seekdir)",
        "yes",
        "yes",
        "no: an iterator of names",
        "no: a snapshot vector",
    ),
    (
        "how the list row reads entries",
        "std::fs::read_dir (a name allocated per entry)",
        "ReadDir::next_ref: names borrowed from the getdents64 buffer, \
         no allocation per entry (the owning iterator allocates each name)",
        "read_dir: an owned path per entry",
        "read_dir: a vector of owned entries",
    ),
    (
        "atime/mtime/ctime with Linux's rules, statx",
        "yes",
        "yes",
        "creation, modification, access times; no ctime",
        "times in ns; no ctime rules",
    ),
];

/// What to run.
#[derive(Clone, Debug)]
pub struct PeersConfig {
    /// The systems, in the first round's order.
    pub systems: Vec<System>,
    /// Rounds; each runs every row on every system.
    pub rounds: usize,
    /// Seconds per cell (one row on one system in one round).
    pub seconds: f64,
    /// Files of the directory rows.
    pub files: usize,
    /// Files of the memory measurement; 0 skips it.
    pub memory_files: usize,
    /// Where the kernel's work directory is made (a tmpfs).
    pub host_parent: PathBuf,
    /// This binary, for the memory measurement's fresh processes.
    pub exe: Option<PathBuf>,
    /// A line per round on stderr.
    pub progress: bool,
}

/// The longest directory the directory rows make.
pub const MAX_FILES: usize = 1_000_000;

impl PeersConfig {
    /// Bad input, before any work.
    pub fn check(&self) -> Result<(), String> {
        if self.systems.is_empty() {
            return Err("no system to run".into());
        }
        if !self.systems.contains(&System::Uvfs) {
            return Err("--systems must include uvfs (every ratio is uvfs / peer)".into());
        }
        for (i, s) in self.systems.iter().enumerate() {
            if self.systems[..i].contains(s) {
                return Err(format!("--systems names {} twice", s.key()));
            }
        }
        if self.rounds == 0 {
            return Err("--rounds must be at least 1".into());
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0) {
            return Err(format!(
                "--seconds must be a finite number > 0, not {}",
                self.seconds
            ));
        }
        if self.files == 0 || self.files > MAX_FILES {
            return Err(format!(
                "--files must be 1..={MAX_FILES}, not {}",
                self.files
            ));
        }
        if self.memory_files > MAX_FILES {
            return Err(format!(
                "--memory-files must be 0..={MAX_FILES}, not {}",
                self.memory_files
            ));
        }
        if self.systems.contains(&System::Kernel) {
            crate::backend::HostDir::create(&self.host_parent)
                .map(|d| {
                    d.remove();
                })
                .map_err(|e| format!("--dir {}: {e}", self.host_parent.display()))?;
        }
        Ok(())
    }
}

/// A figure over the rounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// Every round's value, in round order.
    pub rounds: Vec<f64>,
}

impl Spread {
    /// Of `v` (not empty).
    pub fn of(v: Vec<f64>) -> Spread {
        let mut s = v.clone();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n == 0 {
            0.0
        } else if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Spread {
            median,
            min: s.first().copied().unwrap_or(0.0),
            max: s.last().copied().unwrap_or(0.0),
            rounds: v,
        }
    }

    /// (max − min) / median, in percent.
    pub fn spread_pct(&self) -> f64 {
        if self.median > 0.0 {
            (self.max - self.min) / self.median * 100.0
        } else {
            0.0
        }
    }
}

/// One row on one system.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cell {
    /// [`System::key`].
    pub system: String,
    /// Operations (entries for the list row) per second over the rounds.
    pub ops_per_sec: Spread,
    /// uvfs / this system, per round (absent on uvfs's own cell).
    pub uvfs_ratio: Option<Spread>,
}

/// One row.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RowResult {
    /// [`Row::key`].
    pub row: String,
    /// What the table prints.
    pub label: String,
    /// One cell per system, in the report's system order.
    pub cells: Vec<Cell>,
}

/// Memory per empty file of one system.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Memory {
    /// [`System::key`].
    pub system: String,
    /// Files made.
    pub files: usize,
    /// Allocator bytes in use per file (user-space systems).
    pub heap_bytes_per_file: Option<f64>,
    /// Resident-set growth per file.
    pub rss_bytes_per_file: Option<f64>,
    /// Kernel slab growth per file (`shmem_inode_cache` + `dentry`).
    pub slab_bytes_per_file: Option<f64>,
    /// Why it is missing, if it is.
    pub note: Option<String>,
}

/// Everything one `peers` run measured (`peers.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PeersReport {
    /// The machine.
    pub machine: Machine,
    /// The systems, in the table's order.
    pub systems: Vec<String>,
    /// Rounds.
    pub rounds: usize,
    /// Seconds per cell.
    pub seconds: f64,
    /// Files of the directory rows.
    pub files: usize,
    /// The path every single-file row uses, below each system's root.
    pub path: String,
    /// The rows.
    pub rows: Vec<RowResult>,
    /// Memory per empty file.
    pub memory: Vec<Memory>,
    /// The load average before and after.
    pub load_before: [f64; 3],
    /// After.
    pub load_after: [f64; 3],
    /// Crate versions of the peers, or why they are absent.
    pub peers_note: String,
}

/// The single-file rows' directories, below each system's root: with the
/// file, a 4-component path.
const DIRS: [&str; 3] = ["/peers", "/peers/a", "/peers/a/b"];
/// The single-file rows' file.
const FILE: &str = "/peers/a/b/file";
/// The missing one.
const MISSING: &str = "/peers/a/b/missing";
/// The create + unlink row's file.
const SCRATCH: &str = "/peers/a/b/scratch";
/// The directory rows' directory.
const BIG: &str = "/peers/big";
/// The I/O rows' buffer.
const IO: usize = 4096;

/// The operations, on one system. Paths are absolute below the system's
/// root (the kernel prefixes its work directory).
trait Peer {
    fn mkdir(&mut self, path: &str) -> Result<(), String>;
    fn rmdir(&mut self, path: &str) -> Result<(), String>;
    /// Create (or truncate) a file, write `data`, close.
    fn put(&mut self, path: &str, data: &[u8]) -> Result<(), String>;
    fn open_close(&mut self, path: &str) -> Result<(), String>;
    /// Opening `path` must fail.
    fn open_missing(&mut self, path: &str) -> Result<(), String>;
    fn stat(&mut self, path: &str) -> Result<u64, String>;
    fn unlink(&mut self, path: &str) -> Result<(), String>;
    /// Create a new file, write 0 bytes, close it.
    fn create(&mut self, path: &str) -> Result<(), String>;
    /// Open `path` for the I/O rows (kept until [`Peer::io_close`]).
    fn io_open(&mut self, path: &str) -> Result<(), String>;
    fn pread(&mut self, buf: &mut [u8]) -> Result<usize, String>;
    fn pwrite(&mut self, buf: &[u8]) -> Result<usize, String>;
    fn io_close(&mut self);
    /// The number of entries of directory `path` (without `.`, `..`).
    fn list(&mut self, path: &str) -> Result<usize, String>;
    /// The fast paths the system runs with, as its VFS reports them (uvfs
    /// only).
    fn fast_paths(&self) -> Option<uvfs::FastPaths> {
        None
    }
}

/// The kernel, through `std::fs`.
struct Kernel {
    dir: Option<crate::backend::HostDir>,
    root: String,
    io: Option<std::fs::File>,
}

impl Kernel {
    fn new(parent: &Path) -> Result<Kernel, String> {
        let dir = crate::backend::HostDir::create(parent)?;
        let root = dir.path().display().to_string();
        Ok(Kernel {
            dir: Some(dir),
            root,
            io: None,
        })
    }
    fn p(&self, path: &str) -> String {
        format!("{}{path}", self.root)
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        self.io = None;
        if let Some(d) = self.dir.take() {
            d.remove();
        }
    }
}

/// An error's message: `what path: error` (formatted only on an error, so
/// that no cell pays for it).
fn e<'a, E: std::fmt::Display>(what: &'a str, path: &'a str) -> impl FnOnce(E) -> String + 'a {
    move |e| format!("{what} {path}: {e}")
}

impl Peer for Kernel {
    fn mkdir(&mut self, path: &str) -> Result<(), String> {
        std::fs::create_dir(self.p(path)).map_err(e("mkdir", path))
    }
    fn rmdir(&mut self, path: &str) -> Result<(), String> {
        std::fs::remove_dir(self.p(path)).map_err(e("rmdir", path))
    }
    fn put(&mut self, path: &str, data: &[u8]) -> Result<(), String> {
        std::fs::write(self.p(path), data).map_err(e("write", path))
    }
    fn open_close(&mut self, path: &str) -> Result<(), String> {
        std::fs::File::open(self.p(path))
            .map(drop)
            .map_err(e("open", path))
    }
    fn open_missing(&mut self, path: &str) -> Result<(), String> {
        match std::fs::File::open(self.p(path)) {
            Err(_) => Ok(()),
            Ok(_) => Err(format!("{path} exists")),
        }
    }
    fn stat(&mut self, path: &str) -> Result<u64, String> {
        std::fs::metadata(self.p(path))
            .map(|m| m.len())
            .map_err(e("stat", path))
    }
    fn unlink(&mut self, path: &str) -> Result<(), String> {
        std::fs::remove_file(self.p(path)).map_err(e("unlink", path))
    }
    fn create(&mut self, path: &str) -> Result<(), String> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.p(path))
            .map_err(e("create", path))?;
        f.write_all(&[]).map_err(e("write", path))
    }
    fn io_open(&mut self, path: &str) -> Result<(), String> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.p(path))
            .map_err(e("open", path))?;
        self.io = Some(f);
        Ok(())
    }
    fn pread(&mut self, buf: &mut [u8]) -> Result<usize, String> {
        use std::os::unix::fs::FileExt;
        let f = self.io.as_ref().ok_or("no open file")?;
        f.read_at(buf, 0).map_err(|e| format!("pread: {e}"))
    }
    fn pwrite(&mut self, buf: &[u8]) -> Result<usize, String> {
        use std::os::unix::fs::FileExt;
        let f = self.io.as_ref().ok_or("no open file")?;
        f.write_at(buf, 0).map_err(|e| format!("pwrite: {e}"))
    }
    fn io_close(&mut self) {
        self.io = None;
    }
    fn list(&mut self, path: &str) -> Result<usize, String> {
        let mut n = 0;
        for ent in std::fs::read_dir(self.p(path)).map_err(e("readdir", path))? {
            ent.map_err(e("readdir", path))?;
            n += 1;
        }
        Ok(n)
    }
}

/// uvfs: one `Process` on a fresh `Vfs`.
struct Uvfs {
    p: uvfs::Process,
    io: Option<i32>,
    /// What the VFS says it runs with.
    fast: uvfs::FastPaths,
}

impl Uvfs {
    fn new(fast: uvfs::FastPaths) -> Result<Uvfs, String> {
        let vfs = crate::backend::uvfs_vfs(fast);
        let p = uvfs::Process::new(&vfs).map_err(|e| format!("uvfs: a process: {e}"))?;
        Ok(Uvfs {
            p,
            io: None,
            fast: *vfs.fastpaths(),
        })
    }
}

impl Peer for Uvfs {
    fn fast_paths(&self) -> Option<uvfs::FastPaths> {
        Some(self.fast)
    }

    fn mkdir(&mut self, path: &str) -> Result<(), String> {
        self.p.mkdir(path, 0o755).map_err(e("mkdir", path))
    }
    fn rmdir(&mut self, path: &str) -> Result<(), String> {
        self.p.rmdir(path).map_err(e("rmdir", path))
    }
    fn put(&mut self, path: &str, data: &[u8]) -> Result<(), String> {
        use uvfs::uapi::{O_CREAT, O_TRUNC, O_WRONLY};
        let fd = self
            .p
            .open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            .map_err(e("open", path))?;
        let r = self.p.write(fd, data).map_err(e("write", path));
        self.p.close(fd).map_err(e("close", path))?;
        r.map(drop)
    }
    fn open_close(&mut self, path: &str) -> Result<(), String> {
        let fd = self
            .p
            .open(path, uvfs::uapi::O_RDONLY, 0)
            .map_err(e("open", path))?;
        self.p.close(fd).map_err(e("close", path))
    }
    fn open_missing(&mut self, path: &str) -> Result<(), String> {
        match self.p.open(path, uvfs::uapi::O_RDONLY, 0) {
            Err(_) => Ok(()),
            Ok(fd) => {
                let _ = self.p.close(fd);
                Err(format!("{path} exists"))
            }
        }
    }
    fn stat(&mut self, path: &str) -> Result<u64, String> {
        self.p
            .stat(path)
            .map(|s| s.st_size as u64)
            .map_err(e("stat", path))
    }
    fn unlink(&mut self, path: &str) -> Result<(), String> {
        self.p.unlink(path).map_err(e("unlink", path))
    }
    fn create(&mut self, path: &str) -> Result<(), String> {
        use uvfs::uapi::{O_CREAT, O_EXCL, O_WRONLY};
        let fd = self
            .p
            .open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
            .map_err(e("create", path))?;
        let r = self.p.write(fd, &[]).map_err(e("write", path));
        self.p.close(fd).map_err(e("close", path))?;
        r.map(drop)
    }
    fn io_open(&mut self, path: &str) -> Result<(), String> {
        let fd = self
            .p
            .open(path, uvfs::uapi::O_RDWR, 0)
            .map_err(e("open", path))?;
        self.io = Some(fd);
        Ok(())
    }
    fn pread(&mut self, buf: &mut [u8]) -> Result<usize, String> {
        let fd = self.io.ok_or("no open file")?;
        self.p.pread(fd, buf, 0).map_err(|e| format!("pread: {e}"))
    }
    fn pwrite(&mut self, buf: &[u8]) -> Result<usize, String> {
        let fd = self.io.ok_or("no open file")?;
        self.p
            .pwrite(fd, buf, 0)
            .map_err(|e| format!("pwrite: {e}"))
    }
    fn io_close(&mut self) {
        if let Some(fd) = self.io.take() {
            let _ = self.p.close(fd);
        }
    }
    fn list(&mut self, path: &str) -> Result<usize, String> {
        let fd = self
            .p
            .open(path, uvfs::uapi::O_RDONLY | uvfs::uapi::O_DIRECTORY, 0)
            .map_err(e("open", path))?;
        let mut n = 0;
        let mut err = None;
        // The borrowed-name form: no allocation per entry (the iterator's
        // owning `Dirent64` allocates each name).
        let mut rd = self.p.readdir(fd);
        while let Some(ent) = rd.next_ref() {
            match ent {
                Ok(d) if d.name == b"." || d.name == b".." => {}
                Ok(_) => n += 1,
                Err(x) => {
                    err = Some(format!("readdir {path}: {x}"));
                    break;
                }
            }
        }
        drop(rd);
        self.p.close(fd).map_err(e("close", path))?;
        match err {
            Some(x) => Err(x),
            None => Ok(n),
        }
    }
}

#[cfg(feature = "peers")]
mod crates;
mod iobuf;
pub mod one;
use iobuf::IoBuf;

/// A system, made (uvfs with its default fast paths, the seeds preset).
fn make(system: System, host_parent: &Path) -> Result<Box<dyn Peer>, String> {
    make_with(system, host_parent, uvfs::FastPaths::default())
}

/// A system, made; uvfs with the fast paths `fast` (the other systems
/// have none).
fn make_with(
    system: System,
    host_parent: &Path,
    fast: uvfs::FastPaths,
) -> Result<Box<dyn Peer>, String> {
    Ok(match system {
        System::Kernel => Box::new(Kernel::new(host_parent)?),
        System::Uvfs => Box::new(Uvfs::new(fast)?),
        #[cfg(feature = "peers")]
        System::VfsMemory => Box::new(crates::VfsMemory::new()),
        #[cfg(feature = "peers")]
        System::VirtualFs => Box::new(crates::VirtualFs::new()),
        #[cfg(not(feature = "peers"))]
        System::VfsMemory | System::VirtualFs => {
            return Err(format!("{} needs the `peers` feature", system.key()));
        }
    })
}

/// The single-file rows' tree: the directories and a 4 KiB file.
fn setup(p: &mut dyn Peer) -> Result<(), String> {
    for d in DIRS {
        p.mkdir(d)?;
    }
    p.put(FILE, &[7u8; IO])?;
    if p.stat(FILE)? != IO as u64 {
        return Err(format!("{FILE}: not {IO} bytes after the setup"));
    }
    p.mkdir(BIG)
}

/// Removes what [`setup`] made (every system must be empty again).
fn teardown(p: &mut dyn Peer) -> Result<(), String> {
    p.unlink(FILE)?;
    p.rmdir(BIG)?;
    for d in DIRS.iter().rev() {
        p.rmdir(d)?;
    }
    Ok(())
}

/// Runs `op` in batches of `batch` until `seconds` passed; operations per
/// second. `op` returns how many operations it made.
fn timed(
    seconds: f64,
    batch: usize,
    mut op: impl FnMut() -> Result<u64, String>,
) -> Result<f64, String> {
    let t0 = Instant::now();
    let mut n = 0u64;
    loop {
        for _ in 0..batch {
            n += op()?;
        }
        let el = t0.elapsed().as_secs_f64();
        if el >= seconds {
            return Ok(n as f64 / el);
        }
    }
}

/// One pass of `op` over `0..files`; operations per second.
fn pass(files: usize, mut op: impl FnMut(usize) -> Result<(), String>) -> Result<f64, String> {
    let t0 = Instant::now();
    for i in 0..files {
        op(i)?;
    }
    Ok(files as f64 / t0.elapsed().as_secs_f64().max(1e-9))
}

fn big_name(i: usize) -> String {
    format!("{BIG}/f{i:07}")
}

/// One round of every row on one system: ops/s per row, in [`ROWS`]'s order.
fn round(p: &mut dyn Peer, cfg: &PeersConfig) -> Result<Vec<f64>, String> {
    let s = cfg.seconds;
    let mut out = Vec::with_capacity(ROWS.len());
    out.push(timed(s, 32, || p.open_close(FILE).map(|()| 1))?);
    out.push(timed(s, 32, || p.open_missing(MISSING).map(|()| 1))?);
    out.push(timed(s, 32, || p.stat(FILE).map(|_| 1))?);
    out.push(timed(s, 32, || {
        p.create(SCRATCH)?;
        p.unlink(SCRATCH).map(|()| 1)
    })?);
    p.io_open(FILE)?;
    let mut buf = IoBuf::new(0);
    let mut data = IoBuf::new(9);
    let r = timed(s, 32, || {
        if p.pread(buf.next_mut())? != IO {
            return Err("pread: short read".into());
        }
        Ok(1)
    });
    let w = r.and_then(|r| {
        timed(s, 32, || {
            if p.pwrite(data.next())? != IO {
                return Err("pwrite: short write".into());
            }
            Ok(1)
        })
        .map(|w| (r, w))
    });
    p.io_close();
    let (r, w) = w?;
    out.push(r);
    out.push(w);
    let names: Vec<String> = (0..cfg.files).map(big_name).collect();
    out.push(pass(cfg.files, |i| p.create(&names[i]))?);
    // One listing per clock check: a listing is already --files entries.
    out.push(timed(s, 1, || {
        let n = p.list(BIG)?;
        if n != cfg.files {
            return Err(format!("{BIG}: {n} entries listed, {} made", cfg.files));
        }
        Ok(n as u64)
    })?);
    out.push(pass(cfg.files, |i| p.stat(&names[i]).map(drop))?);
    out.push(pass(cfg.files, |i| p.unlink(&names[i]))?);
    if p.list(BIG)? != 0 {
        return Err(format!("{BIG}: not empty after the unlinks"));
    }
    Ok(out)
}

/// Runs the rows (and the memory measurement unless `memory_files` is 0).
pub fn measure(cfg: &PeersConfig) -> Result<PeersReport, String> {
    cfg.check()?;
    let load_before = LoadAvg::now().0;
    let mut peers: Vec<Box<dyn Peer>> = Vec::new();
    for &s in &cfg.systems {
        let mut p = make(s, &cfg.host_parent)?;
        setup(&mut *p).map_err(|e| format!("{}: setup: {e}", s.key()))?;
        peers.push(p);
    }
    let n = cfg.systems.len();
    // per system, per row, per round
    let mut figs = vec![vec![Vec::with_capacity(cfg.rounds); ROWS.len()]; n];
    for r in 0..cfg.rounds {
        for k in 0..n {
            let i = (r + k) % n;
            let row = round(&mut *peers[i], cfg)
                .map_err(|e| format!("{}: round {}: {e}", cfg.systems[i].key(), r + 1))?;
            for (j, v) in row.into_iter().enumerate() {
                figs[i][j].push(v);
            }
        }
        if cfg.progress {
            eprintln!("peers: round {}/{} done", r + 1, cfg.rounds);
        }
    }
    for (p, s) in peers.iter_mut().zip(&cfg.systems) {
        teardown(&mut **p).map_err(|e| format!("{}: teardown: {e}", s.key()))?;
    }
    drop(peers);
    let u = cfg
        .systems
        .iter()
        .position(|&s| s == System::Uvfs)
        .ok_or("uvfs is not among the systems")?;
    let rows = ROWS
        .iter()
        .enumerate()
        .map(|(j, row)| RowResult {
            row: row.key().into(),
            label: row.label(cfg.files),
            cells: (0..n)
                .map(|i| Cell {
                    system: cfg.systems[i].key().into(),
                    ops_per_sec: Spread::of(figs[i][j].clone()),
                    uvfs_ratio: (i != u).then(|| {
                        Spread::of(
                            figs[u][j]
                                .iter()
                                .zip(&figs[i][j])
                                .map(|(a, b)| a / b)
                                .collect(),
                        )
                    }),
                })
                .collect(),
        })
        .collect();
    let memory = if cfg.memory_files == 0 {
        Vec::new()
    } else {
        cfg.systems
            .iter()
            .map(|&s| memory_in_child(s, cfg))
            .collect()
    };
    Ok(PeersReport {
        machine: Machine::current(),
        systems: cfg.systems.iter().map(|s| s.key().to_string()).collect(),
        rounds: cfg.rounds,
        seconds: cfg.seconds,
        files: cfg.files,
        path: FILE.into(),
        rows,
        memory,
        load_before,
        load_after: LoadAvg::now().0,
        peers_note: peers_note(),
    })
}

/// The peer crates' versions, or why they are absent.
pub fn peers_note() -> String {
    if cfg!(feature = "peers") {
        "vfs 0.13 (MemoryFS), virtual-fs 0.704 (mem_fs)".into()
    } else {
        "built without the `peers` feature: the peer crates did not run".into()
    }
}

/// Runs `uvfs-bench peers-memory` for `system` in a fresh process.
fn memory_in_child(system: System, cfg: &PeersConfig) -> Memory {
    let missing = |note: String| Memory {
        system: system.key().into(),
        files: cfg.memory_files,
        heap_bytes_per_file: None,
        rss_bytes_per_file: None,
        slab_bytes_per_file: None,
        note: Some(note),
    };
    let exe = match cfg.exe.clone().map_or_else(std::env::current_exe, Ok) {
        Ok(x) => x,
        Err(e) => return missing(format!("this binary: {e}")),
    };
    let out = Command::new(exe)
        .arg("peers-memory")
        .arg(system.key())
        .arg(cfg.memory_files.to_string())
        .arg("--dir")
        .arg(&cfg.host_parent)
        .output();
    match out {
        Err(e) => missing(format!("running peers-memory: {e}")),
        Ok(o) if !o.status.success() => missing(format!(
            "peers-memory failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(o) => match serde_json::from_slice::<Memory>(&o.stdout) {
            Ok(m) => m,
            Err(e) => missing(format!("peers-memory's output: {e}")),
        },
    }
}

/// Bytes in the kernel's `shmem_inode_cache` and `dentry` slabs (active
/// objects times object size).
fn slab_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/slabinfo").ok()?;
    let mut total = 0;
    let mut seen = 0;
    for line in s.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() > 3 && (w[0] == "shmem_inode_cache" || w[0] == "dentry") {
            let active: u64 = w[1].parse().ok()?;
            let size: u64 = w[3].parse().ok()?;
            total += active * size;
            seen += 1;
        }
    }
    (seen == 2).then_some(total)
}

/// `peers-memory SYSTEM FILES`: in this (fresh) process, the bytes per
/// empty file of `system`, as one JSON line on stdout.
pub fn memory_here(system: System, files: usize, host_parent: &Path) -> Result<Memory, String> {
    if files == 0 || files > MAX_FILES {
        return Err(format!("FILES must be 1..={MAX_FILES}, not {files}"));
    }
    let mut p = make(system, host_parent)?;
    setup(&mut *p)?;
    let names: Vec<String> = (0..files).map(big_name).collect();
    // One file made and removed first, so that one-time growth (a
    // directory's first index node, the dcache's first table) is not
    // charged to the count.
    p.create(&names[0])?;
    p.unlink(&names[0])?;
    let (h0, r0, s0) = (heap_bytes(), rss_bytes().ok(), slab_bytes());
    for n in &names {
        p.create(n)?;
    }
    let (h1, r1, s1) = (heap_bytes(), rss_bytes().ok(), slab_bytes());
    let per = |a: u64, b: u64| (b as f64 - a as f64) / files as f64;
    let kernel = system == System::Kernel;
    let m = Memory {
        system: system.key().into(),
        files,
        heap_bytes_per_file: (!kernel).then(|| per(h0, h1)),
        rss_bytes_per_file: (!kernel)
            .then(|| r0.zip(r1).map(|(a, b)| per(a, b)))
            .flatten(),
        slab_bytes_per_file: if kernel {
            s0.zip(s1).map(|(a, b)| per(a, b))
        } else {
            None
        },
        note: (kernel && s0.is_none())
            .then(|| "/proc/slabinfo unreadable (needs root)".to_string()),
    };
    for n in &names {
        p.unlink(n)?;
    }
    Ok(m)
}

fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}K", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// The text report.
pub fn print_text(out: &mut impl Write, r: &PeersReport) -> std::io::Result<()> {
    writeln!(
        out,
        "peers: {} rounds of {} s per cell, systems interleaved and rotated; path {} below each root \
         (kernel: its work directory under /dev/shm); {}",
        r.rounds, r.seconds, r.path, r.peers_note
    )?;
    writeln!(
        out,
        "load average {:.2} {:.2} {:.2} before, {:.2} {:.2} {:.2} after",
        r.load_before[0],
        r.load_before[1],
        r.load_before[2],
        r.load_after[0],
        r.load_after[1],
        r.load_after[2]
    )?;
    writeln!(
        out,
        "ops/s: median over the rounds (spread = (max - min) / median); uvfs/x = per-round ratio, median [min..max]\n"
    )?;
    let labels: Vec<&str> = r
        .systems
        .iter()
        .map(|k| System::from_key(k).map_or(k.as_str(), |s| s.label()))
        .collect();
    write!(out, "{:<38}", "op")?;
    for l in &labels {
        write!(out, " {l:>20}")?;
    }
    for (k, l) in r.systems.iter().zip(&labels) {
        if k != "uvfs" {
            write!(out, " {:>22}", format!("uvfs/{l}"))?;
        }
    }
    writeln!(out)?;
    for row in &r.rows {
        write!(out, "{:<38}", row.label)?;
        for c in &row.cells {
            write!(
                out,
                " {:>20}",
                format!(
                    "{} ±{:.0}%",
                    si(c.ops_per_sec.median),
                    c.ops_per_sec.spread_pct()
                )
            )?;
        }
        for c in &row.cells {
            if let Some(x) = &c.uvfs_ratio {
                write!(
                    out,
                    " {:>22}",
                    format!("{:.2} [{:.2}..{:.2}]", x.median, x.min, x.max)
                )?;
            }
        }
        writeln!(out)?;
    }
    if !r.memory.is_empty() {
        writeln!(out, "\nmemory per empty file (a fresh process per system):")?;
        for m in &r.memory {
            let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0} B"));
            writeln!(
                out,
                "  {:<20} {} files: heap {}, resident {}, kernel slabs {}{}",
                System::from_key(&m.system).map_or(m.system.as_str(), |s| s.label()),
                m.files,
                f(m.heap_bytes_per_file),
                f(m.rss_bytes_per_file),
                f(m.slab_bytes_per_file),
                m.note.as_ref().map_or(String::new(), |n| format!(" ({n})"))
            )?;
        }
    }
    writeln!(out, "\nwhat each peer cannot do:")?;
    let head = ("", "kernel", "uvfs", "vfs MemoryFS", "virtual-fs");
    for (what, k, u, v, w) in std::iter::once(&head).chain(CANNOT) {
        writeln!(out, "  {what:<56} | {k:<20} | {u:<20} | {v:<40} | {w}")?;
    }
    Ok(())
}

/// Writes `peers.json` into `dir`.
pub fn write_json(dir: &Path, r: &PeersReport) -> Result<PathBuf, String> {
    crate::report::write_json_in(dir, "peers.json", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_median_min_max_in_round_order() {
        let s = Spread::of(vec![3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(s.rounds, vec![3.0, 1.0, 2.0]);
        assert!((s.spread_pct() - 100.0).abs() < 1e-9);
        let s = Spread::of(vec![4.0, 1.0, 2.0, 3.0]);
        assert_eq!(s.median, 2.5);
        assert_eq!(Spread::of(vec![0.0]).spread_pct(), 0.0);
    }

    #[test]
    fn systems_parse_by_key_and_refuse_unknown_names() {
        assert_eq!(System::from_key("uvfs"), Ok(System::Uvfs));
        assert_eq!(System::from_key("kernel"), Ok(System::Kernel));
        assert!(System::from_key("ext4").is_err());
        assert_eq!(
            System::from_key("virtual-fs").is_ok(),
            cfg!(feature = "peers")
        );
    }

    #[test]
    fn every_row_runs_on_every_system_and_leaves_it_empty() {
        // The peer crates too in a build with the `peers` feature.
        for system in System::available() {
            let cfg = PeersConfig {
                systems: vec![System::Uvfs],
                rounds: 1,
                seconds: 1e-4,
                files: 30,
                memory_files: 0,
                host_parent: "/dev/shm".into(),
                exe: None,
                progress: false,
            };
            let mut p = make(system, &cfg.host_parent).unwrap();
            setup(&mut *p).unwrap();
            let row = round(&mut *p, &cfg).unwrap();
            assert_eq!(row.len(), ROWS.len(), "{system:?}");
            assert!(row.iter().all(|&v| v > 0.0), "{system:?}: {row:?}");
            teardown(&mut *p).unwrap();
            assert!(p.stat(DIRS[0]).is_err(), "{system:?}: /peers is left");
        }
    }
}
