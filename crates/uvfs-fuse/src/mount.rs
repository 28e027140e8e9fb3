//! `uvfs mount`: option checks, the optional daemon, seeding, the FUSE
//! session, signals, unmount and dump.

use crate::passthrough::{Passthrough, has_cap_sys_admin};
use crate::server::UvfsFuse;
use crate::tree;
use clap::{Args, ValueEnum};
use fuser::{Config, MountOption, Session, SessionACL};
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use uvfs::fs::tmpfs::{FileStore, Tmpfs, TmpfsOptions};
use uvfs::{FastPaths, Process, Vfs};

/// The fast-path presets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Preset {
    /// Every fast path on (the kernel after the seed patches).
    Seeds,
    /// Every fast path off.
    Stock,
}

/// The options of a served VFS, shared by `uvfs mount` and `uvfs run`.
#[derive(Args, Debug, Clone)]
pub struct ServeOptions {
    /// tmpfs space limit in bytes (K, M, G suffixes: powers of 1024).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub size: Option<u64>,
    /// tmpfs inode limit (0: unlimited, as tmpfs's nr_inodes=0).
    #[arg(long, value_name = "N")]
    pub nr_inodes: Option<u64>,
    /// FastPaths preset of the served VFS.
    #[arg(long, value_enum, default_value = "seeds")]
    pub fastpaths: Preset,
    /// Worker threads, each with its own /dev/fuse fd (1 to 64).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = parse_threads)]
    pub threads: usize,
    /// Copy this host directory's tree in before serving.
    #[arg(long, value_name = "HOSTDIR")]
    pub seed_from: Option<PathBuf>,
    /// FUSE passthrough of regular files' reads, writes and mmap to their
    /// kernel files: auto (on when the kernel offers it and the server has
    /// CAP_SYS_ADMIN), on, or off. With --size the files live in a private
    /// tmpfs of that size, which holds passthrough writes to the limit.
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto")]
    pub passthrough: Passthrough,
    /// No OPEN or OPENDIR requests (FUSE_NO_OPEN_SUPPORT): an open and
    /// close costs no round trip; the kernel alone decides who may open
    /// (default_permissions, POSIX ACLs). Not with --passthrough=on, which
    /// needs OPEN to hand over the backing file (auto turns passthrough
    /// off).
    #[arg(long)]
    pub no_open: bool,
    /// The kernel's writeback cache (FUSE_WRITEBACK_CACHE): writes gather
    /// in the mount's page cache and reach the server in batches; the
    /// kernel keeps size and mtime. Not with --passthrough=on (auto turns
    /// passthrough off).
    #[arg(long)]
    pub writeback: bool,
    /// Write the tree out to this host directory after unmount.
    #[arg(long, value_name = "HOSTDIR")]
    pub dump_to: Option<PathBuf>,
}

impl ServeOptions {
    /// `--no-open` leaves no OPEN to answer through passthrough, and
    /// `--writeback` wants the page cache passthrough bypasses: `auto`
    /// turns it off (`on` with either is refused by [`check_options`]).
    pub fn settle_passthrough(&mut self) {
        if (self.no_open || self.writeback) && self.passthrough == Passthrough::Auto {
            self.passthrough = Passthrough::Off;
        }
    }
}

/// `uvfs mount [OPTIONS] DIR`.
#[derive(Args, Debug, Clone)]
pub struct MountArgs {
    /// Detach; exit 0 once the mount is live (non-zero with the reason if
    /// mounting failed).
    #[arg(long)]
    pub daemon: bool,
    /// What is served, and how.
    #[command(flatten)]
    pub serve: ServeOptions,
    /// The directory to mount on.
    pub dir: PathBuf,
}

/// Parses a byte count with an optional K, M or G suffix (1024-based);
/// 0 is refused.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("not a size: {s:?} (bytes, or a number with K, M or G)"))?;
    let b = n
        .checked_mul(mul)
        .ok_or_else(|| format!("size too large: {s}"))?;
    if b == 0 {
        return Err("size 0: give a positive size (omit --size for no limit)".into());
    }
    Ok(b)
}

fn parse_threads(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|_| format!("not a number: {s:?}"))?;
    if !(1..=64).contains(&n) {
        return Err(format!("{n} worker threads: give 1 to 64"));
    }
    Ok(n)
}

/// Undoes the octal escapes of /proc/self/mountinfo (`\040` for a space).
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && let Ok(v) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("x"), 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Whether `dir` (canonical) is a mount point: listed as one in
/// /proc/self/mountinfo, or on another device than its parent, or its own
/// parent (`/`).
pub fn is_mount_point(dir: &Path) -> Result<bool, String> {
    let md = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let parent =
        std::fs::metadata(dir.join("..")).map_err(|e| format!("{}/..: {e}", dir.display()))?;
    if md.dev() != parent.dev() || md.ino() == parent.ino() {
        return Ok(true);
    }
    if let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") {
        let want = dir.as_os_str().as_bytes();
        for line in info.lines() {
            if line
                .split(' ')
                .nth(4)
                .is_some_and(|mp| unescape(mp) == want)
            {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The checks made before anything is mounted; `Err` is the message.
pub fn check(args: &MountArgs) -> Result<PathBuf, String> {
    let d = &args.dir;
    let md = std::fs::metadata(d).map_err(|e| format!("{}: {e}", d.display()))?;
    if !md.is_dir() {
        return Err(format!("{}: not a directory", d.display()));
    }
    let dir = d
        .canonicalize()
        .map_err(|e| format!("{}: {e}", d.display()))?;
    if is_mount_point(&dir)? {
        return Err(format!(
            "{}: already a mount point (unmount it first, or mount on an empty directory)",
            dir.display()
        ));
    }
    check_options(&args.serve)?;
    Ok(dir)
}

/// The checks of the options, `/dev/fuse` among them, made before
/// anything is mounted; `Err` is the message.
pub fn check_options(opts: &ServeOptions) -> Result<(), String> {
    if opts.no_open && opts.passthrough == Passthrough::On {
        return Err(
            "--no-open with --passthrough=on: passthrough hands the kernel its backing file in the reply to OPEN, which --no-open does away with (use one or the other)".into(),
        );
    }
    if opts.writeback && opts.passthrough == Passthrough::On {
        return Err(
            "--writeback with --passthrough=on: passthrough's reads and writes bypass the page cache the writeback cache keeps (use one or the other)".into(),
        );
    }
    if opts.passthrough == Passthrough::On && !has_cap_sys_admin() {
        return Err(
            "--passthrough=on: registering a backing file needs CAP_SYS_ADMIN (run as root)".into(),
        );
    }
    if let Some(s) = &opts.seed_from {
        let m = std::fs::metadata(s).map_err(|e| format!("--seed-from {}: {e}", s.display()))?;
        if !m.is_dir() {
            return Err(format!("--seed-from {}: not a directory", s.display()));
        }
    }
    if let Some(t) = &opts.dump_to {
        match std::fs::metadata(t) {
            Ok(m) if !m.is_dir() => {
                return Err(format!("--dump-to {}: not a directory", t.display()));
            }
            Ok(_) => {}
            Err(_) => {
                let parent = t
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                if !parent.is_dir() {
                    return Err(format!(
                        "--dump-to {}: neither it nor its parent directory exists",
                        t.display()
                    ));
                }
            }
        }
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .map_err(|e| format!("/dev/fuse: {e} (is the fuse module loaded, and are you root?)"))?;
    Ok(())
}

/// The tmpfs to serve and the passthrough mode to serve it with.
pub struct Served {
    /// The file system.
    pub tmpfs: Arc<Tmpfs>,
    /// `--passthrough`, or `off` where `auto` cannot hold `--size`.
    pub passthrough: Passthrough,
    /// The private tmpfs's size when regular files' data lives there (see
    /// [`backing`](crate::backing)).
    pub kernel_limit: Option<u64>,
}

/// Builds the tmpfs. With `--size` and passthrough wanted (`auto` or
/// `on`) by a server that may register backing files (`CAP_SYS_ADMIN`),
/// regular files' data goes to a private kernel tmpfs of that size, which
/// is then the one space limit ([`backing`](crate::backing)); where that
/// tmpfs cannot be made, `auto` serves with passthrough off and uvfs's own
/// limit (said on stderr), `on` is refused (`Err`, the message). Without
/// `CAP_SYS_ADMIN`, `auto` keeps uvfs's limit (passthrough goes off at
/// `FUSE_INIT`, which says why).
pub fn build_fs(args: &ServeOptions) -> Result<Served, String> {
    // The root belongs to the server's effective ids, as a tmpfs root
    // belongs to its mounter's (`uvfs run` in a user namespace: the
    // caller's, without which the kernel grants no write to it there).
    // SAFETY: geteuid and getegid have no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let opts = TmpfsOptions {
        size_bytes: args.size,
        nr_inodes: args.nr_inodes,
        uid,
        gid,
        ..TmpfsOptions::default()
    };
    let plain = |passthrough| Served {
        tmpfs: Tmpfs::new(opts),
        passthrough,
        kernel_limit: None,
    };
    let Some(size) = args.size else {
        return Ok(plain(args.passthrough));
    };
    if args.passthrough == Passthrough::Off
        || (args.passthrough == Passthrough::Auto && !has_cap_sys_admin())
    {
        return Ok(plain(args.passthrough));
    }
    let made = crate::backing::private_tmpfs(size)
        .map_err(|e| e.to_string())
        .and_then(|dir| {
            Tmpfs::with_store(opts, FileStore::Dir(dir))
                .map_err(|e| format!("O_TMPFILE in it: {e}"))
        });
    match (made, args.passthrough) {
        (Ok(tmpfs), mode) => Ok(Served {
            tmpfs,
            passthrough: mode,
            kernel_limit: Some(size),
        }),
        (Err(e), Passthrough::Auto) => {
            eprintln!(
                "uvfs: FUSE passthrough off: --size needs a private tmpfs to hold passthrough writes to the limit, and it could not be made ({e}); the server holds its writes to --size"
            );
            Ok(plain(Passthrough::Off))
        }
        (Err(e), _) => Err(format!(
            "--passthrough=on with --size: the private tmpfs that holds passthrough writes to the limit could not be made: {e} (use --passthrough=auto or off for a limit the server keeps)"
        )),
    }
}

/// `uvfs mount`: returns the exit status.
pub fn run(mut args: MountArgs) -> i32 {
    args.serve.settle_passthrough();
    let built = check(&args).and_then(|dir| build_fs(&args.serve).map(|s| (dir, s)));
    let (dir, served) = match built {
        Ok(d) => d,
        Err(m) => {
            eprintln!("uvfs mount: {m}");
            return 2;
        }
    };
    if !args.daemon {
        return serve(&args.serve, &dir, None, served);
    }
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a writable array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        eprintln!("uvfs mount: pipe: {}", std::io::Error::last_os_error());
        return 1;
    }
    // SAFETY: the pipe's two fds are ours alone from here on.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: no thread has been started yet (clap and the checks run on
    // this one), so the child may do anything.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        eprintln!("uvfs mount: fork: {}", std::io::Error::last_os_error());
        return 1;
    }
    if pid == 0 {
        drop(r);
        // SAFETY: setsid has no preconditions; it detaches from the terminal.
        unsafe { libc::setsid() };
        return serve(&args.serve, &dir, Some(std::fs::File::from(w)), served);
    }
    drop(w);
    let mut msg = String::new();
    let _ = std::fs::File::from(r).read_to_string(&mut msg);
    if msg.starts_with("ok") {
        0
    } else {
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` is writable.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        if msg.is_empty() {
            msg = "the server exited before the mount was live".into();
        }
        eprintln!("uvfs mount: {}", msg.trim_end());
        1
    }
}

/// Reports a failure before the mount is live: on the daemon's pipe, or on
/// stderr.
fn fail(notify: Option<std::fs::File>, msg: String) -> i32 {
    match notify {
        Some(mut f) => {
            let _ = f.write_all(msg.as_bytes());
        }
        None => eprintln!("uvfs mount: {msg}"),
    }
    1
}

fn block_signals() -> libc::sigset_t {
    // SAFETY: `set` is initialized by sigemptyset before use; the mask
    // change applies to this thread and is inherited by threads it starts.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        // SIGCHLD only wakes the wait early (`uvfs run`'s command ended).
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Unmounts `dir`; if it is busy, detaches it instead (it leaves the
/// namespace at once and lives on while programs still use it). Whether it
/// had to detach. A detached mount's connection ends when this process
/// exits and the kernel sees the last `/dev/fuse` fd closed: it aborts the
/// connection itself, and programs still inside get ENOTCONN. (Writing to
/// the fuse control file system's `abort` would name the connection by a
/// device number, global to the machine; an exit names only our own.)
pub fn unmount(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
        return false;
    }
    // SAFETY: as above.
    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    true
}

/// A VFS served at a directory: the session's thread and what ends it.
pub struct Serving {
    vfs: Arc<Vfs>,
    worker: std::thread::JoinHandle<std::io::Result<()>>,
    /// Held while serving: it shares the session's mount, which it would
    /// unmount on the spot if it were the mount's last holder.
    _unmounter: fuser::SessionUnmounter,
    /// SIGINT, SIGTERM, SIGHUP and SIGCHLD, blocked in every thread of
    /// the server and taken with `sigtimedwait`.
    signals: libc::sigset_t,
}

/// Builds the VFS, seeds it, blocks the stop signals and mounts it at
/// `dir` with a session thread serving it; `Err` is the message.
/// `say_passthrough_on`: whether `auto` says that it turned passthrough on.
pub fn start(
    opts: &ServeOptions,
    dir: &Path,
    served: Served,
    say_passthrough_on: bool,
) -> Result<Serving, String> {
    let fast = match opts.fastpaths {
        Preset::Seeds => FastPaths::seeds(),
        Preset::Stock => FastPaths::stock(),
    };
    let tmpfs = served.tmpfs;
    let vfs = Vfs::builder()
        .fastpaths(fast)
        .build_with_root(tmpfs.clone());
    if let Some(src) = &opts.seed_from {
        Process::new(&vfs)
            .map_err(|e| e.to_string())
            .and_then(|mut p| {
                p.umask(0);
                tree::seed(&mut p, src)
            })
            .map_err(|e| format!("--seed-from: {e}"))?;
    }
    let signals = block_signals();
    let server = UvfsFuse::new(vfs.clone(), tmpfs)
        .map_err(|e| format!("server: {e}"))?
        .with_passthrough(served.passthrough)
        .with_kernel_limit(served.kernel_limit)
        .with_passthrough_on_said(say_passthrough_on)
        .with_no_open(opts.no_open)
        .with_writeback(opts.writeback);
    // The fd table grown before the session's threads share it, to hold
    // the memfds' high numbers (see `reserve_high_fds`).
    uvfs::fs::tmpfs::reserve_high_fds();
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("uvfs".into()),
        MountOption::Subtype("uvfs".into()),
        // The kernel checks permissions itself from the attributes it
        // caches, as it does for tmpfs (search permission on cached paths
        // included); the server checks each request as its caller again.
        MountOption::DefaultPermissions,
    ];
    config.acl = SessionACL::All;
    config.n_threads = Some(opts.threads);
    config.clone_fd = true;
    let notifier = server.notifier_slot();
    let mut session = Session::new(server, dir, &config)
        .map_err(|e| format!("mount on {}: {e}", dir.display()))?;
    let _ = notifier.set(session.notifier());
    let mut unmounter = session.unmount_callable();
    match std::thread::Builder::new()
        .name("uvfs-session".into())
        .spawn(move || session.run())
    {
        Ok(worker) => Ok(Serving {
            vfs,
            worker,
            _unmounter: unmounter,
            signals,
        }),
        Err(e) => {
            let _ = unmounter.unmount();
            Err(format!("session thread: {e}"))
        }
    }
}

impl Serving {
    /// Waits up to 100 ms for a stop signal (or less: a child's exit ends
    /// the wait); the signal, if one came.
    pub fn stop_signal(&self) -> Option<i32> {
        self.stop_signal_from().map(|(sig, _)| sig)
    }

    /// As [`stop_signal`](Self::stop_signal), with whether a process sent
    /// it (`kill`, `sigqueue`, `tgkill`), not the kernel (a terminal's
    /// Ctrl-C or hang-up, which reach the whole foreground process group).
    pub fn stop_signal_from(&self) -> Option<(i32, bool)> {
        let timeout = libc::timespec {
            tv_sec: 0,
            tv_nsec: 100_000_000,
        };
        // SAFETY: all-zero bytes are a valid siginfo_t (plain data).
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `signals` is a valid signal set, `info` writable,
        // `timeout` a valid timespec; the signals in the set are blocked in
        // every thread.
        let sig = unsafe { libc::sigtimedwait(&self.signals, &mut info, &timeout) };
        // SI_USER, SI_QUEUE, SI_TKILL and the other process-sent codes are
        // not positive; the kernel's own (SI_KERNEL) is.
        (sig > 0 && sig != libc::SIGCHLD).then_some((sig, info.si_code <= 0))
    }

    /// Whether the session ended (the mount went away).
    pub fn ended(&self) -> bool {
        self.worker.is_finished()
    }

    /// After the session ended, or after `unmount(dir)` (`stopping`) which
    /// `detached` the mount or not: joins the session (unless detached),
    /// then dumps. The exit status.
    pub fn finish(self, opts: &ServeOptions, stopping: bool, detached: bool, who: &str) -> i32 {
        // A detached mount's workers stay blocked until the process exits
        // (see `unmount`): they are not waited for. The stop was asked for.
        let status = if detached {
            0
        } else {
            match self.worker.join() {
                Ok(Ok(())) => 0,
                // Our own unmount ended the connection: the kernel may
                // report that to the workers' reads as an abort (seen on
                // 6.18 when the mount lived in a private mount namespace),
                // not only as ENODEV.
                Ok(Err(e)) if stopping && e.raw_os_error() == Some(libc::ECONNABORTED) => 0,
                Ok(Err(e)) => {
                    eprintln!("{who}: session: {e}");
                    1
                }
                Err(_) => {
                    eprintln!("{who}: session thread panicked");
                    1
                }
            }
        };
        if let Some(dst) = &opts.dump_to {
            let r = Process::new(&self.vfs)
                .map_err(|e| e.to_string())
                .and_then(|mut p| tree::dump(&mut p, dst));
            if let Err(e) = r {
                eprintln!("{who}: --dump-to: {e}");
                return 1;
            }
        }
        status
    }
}

/// Builds the VFS, seeds it, mounts and serves until unmounted or
/// signalled, then dumps. `notify` is the daemon's pipe to its parent.
fn serve(opts: &ServeOptions, dir: &Path, notify: Option<std::fs::File>, served: Served) -> i32 {
    let serving = match start(opts, dir, served, true) {
        Ok(s) => s,
        Err(m) => return fail(notify, m),
    };
    if let Some(mut f) = notify {
        let _ = f.write_all(b"ok\n");
        drop(f);
        // Detached: nothing more to say on the terminal.
        if let Ok(null) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
        {
            use std::os::fd::AsRawFd;
            for fd in 0..3 {
                // SAFETY: dup2 onto the standard fds, which we own.
                unsafe { libc::dup2(null.as_raw_fd(), fd) };
            }
        }
    }
    let mut detached = false;
    let mut stopping = false;
    loop {
        if serving.stop_signal().is_some() {
            stopping = true;
            detached = unmount(dir);
            break;
        }
        if serving.ended() {
            break;
        }
    }
    serving.finish(opts, stopping, detached, "uvfs mount")
}
