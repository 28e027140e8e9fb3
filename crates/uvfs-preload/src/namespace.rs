//! One namespace for the whole process tree (after Linux's
//! `fs/namespace.c`: `unshare(CLONE_NEWNS)` and a mount).
//!
//! A process that never makes a child keeps its uvfs in its own memory
//! (the fast path). At its first `fork`, `vfork`, `posix_spawn`,
//! `system`, `popen` or `exec`, before the call, the process
//!
//! 1. opens `/dev/fuse`, leaves the host's mount namespace for a private
//!    copy of it (`unshare(CLONE_NEWNS)`, every mount made private: ours
//!    never leak out, and no mount made later on the host, a FUSE mount
//!    at the same prefix say, comes in), and mounts a FUSE file system
//!    (source `uvfs-tree:<pid of the tree's first process>`) on the prefix itself (the directory is made on
//!    the host if it is missing: a mount point must exist; it is left
//!    there, empty);
//! 2. forks a **server** (twice, so the program never sees it as a child):
//!    the copy of the process at that moment, which owns the uvfs as it
//!    was, goes back to the host's namespace (so the tree's namespace dies
//!    with the tree's last process), detaches from the terminal, closes
//!    every fd of the program, and serves the VFS with `uvfs_fuse` on the
//!    `/dev/fuse` fd; the process goes on only once the server has
//!    answered the kernel's `FUSE_INIT` (the mount is live);
//! 3. becomes a **client**: every path goes to the kernel unchanged (the
//!    prefix is a real mount point now: `getcwd`, `realpath`,
//!    `/proc/self/fd`, `..`, symlinks and exec of uvfs programs are the
//!    kernel's own); each open uvfs fd is reopened through the mount at
//!    its number (access mode, `O_APPEND`, `O_NONBLOCK`, close-on-exec and
//!    offset kept); a cwd inside uvfs becomes the same directory under the
//!    mount.
//!
//! Children inherit the namespace, and with it the mount: a program loaded
//! with the shim finds the prefix to be a FUSE mount (`statfs`) whose
//! source is `uvfs-tree:<pid>` (`/proc/self/mountinfo`) and starts as a client;
//! no environment variable is needed, so `env -i` cannot
//! lose it. When the tree's last process exits, the namespace goes, the
//! kernel drops the mount and the connection, and the server exits. A
//! killed server leaves the mount answering `ENOTCONN`.
//!
//! `UVFS_TREE=0` turns this off: every process keeps its own uvfs (a
//! child a copy, an exec'd program an empty one), as before trees.
//!
//! A process with several threads cannot change its mount namespace (only
//! the calling thread would move), so a process that may become a tree's
//! first moves at its first `pthread_create`, while it has one thread
//! ([`before_thread`]); its first child then mounts there, and the switch
//! holds the other threads out of uvfs (the fork gate) until the process
//! is a client, a call that raced it starting again (`dispatch`).
//!
//! When the tree cannot get a server (not root, no `/dev/fuse`, a process
//! with several threads that did not move at its first `pthread_create`),
//! the process says so once on stderr and keeps today's behaviour: a
//! child gets a private copy, an exec'd program an empty uvfs.

use crate::guard::Busy;
use crate::interpose::real;
use crate::path::{is_client, prefix_raw, set_client};
use crate::state::{built, with_state};
use rustix::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::ffi::CString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::atomic::{AtomicBool, Ordering};

/// `FUSE_SUPER_MAGIC`, `statfs`'s `f_type` of a FUSE mount.
const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;

/// The tree could not get a server: this process keeps its private uvfs
/// (said once).
static GAVE_UP: AtomicBool = AtomicBool::new(false);

/// Whether the tree could not get a server (or `UVFS_TREE=0`).
pub(crate) fn gave_up() -> bool {
    GAVE_UP.load(Ordering::Acquire)
}

/// Writes one line to stderr with a raw write (no stdio, no shim).
fn say(msg: &str) {
    let line = format!("uvfs-preload: {msg}\n");
    let _ = rustix::io::write(rustix::stdio::stderr(), line.as_bytes());
}

/// The mount's source, which tells a tree's mount from any other FUSE
/// mount at the prefix (`uvfs mount`'s is `uvfs`).
const SOURCE: &str = "uvfs-tree";

/// At load: a process whose prefix is its tree's mount (its parent's tree
/// mounted it in this namespace) is a client from the start. `statfs`
/// first (one call; a FUSE mount, or `ENOTCONN` for one whose server is
/// gone), then `/proc/self/mountinfo` says whether the mount at the prefix
/// is a tree's (another FUSE mount there, say `uvfs mount`'s in the
/// host's namespace, is not). A tree whose server is gone makes the
/// process a client all the same: every call fails with `ENOTCONN`, said
/// once here, instead of silently using a private, empty uvfs.
pub(crate) fn at_load() {
    if std::env::var_os("UVFS_TREE").is_some_and(|v| v == "0") {
        // Asked for: each process keeps its own uvfs, silently.
        GAVE_UP.store(true, Ordering::Release);
    }
    let Some(pre) = prefix_raw() else { return };
    let Ok(c) = CString::new(pre) else { return };
    // SAFETY: an all-zero `statfs` is a valid value to be overwritten.
    let mut st: libc::statfs64 = unsafe { std::mem::zeroed() };
    let r = {
        // Inside the guard: the shim's own `syscall` passes it on.
        let _busy = Busy::enter();
        // SAFETY: a NUL-terminated path and a writable struct; a raw
        // syscall, so the shim's own `statfs` is not involved.
        unsafe { libc::syscall(libc::SYS_statfs, c.as_ptr(), &mut st) }
    };
    let gone = r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOTCONN);
    let fuse = r == 0 && st.f_type as i64 == FUSE_SUPER_MAGIC;
    if !(fuse || gone) {
        return;
    }
    let Some(first) = tree_mount_at(pre) else {
        return;
    };
    set_client();
    // SAFETY: getpid has no preconditions.
    if first == unsafe { libc::getpid() } {
        // The tree's first process, after an exec of its own (`sh -c cmd`
        // execs cmd): it still owns the tree's `UVFS_DUMP`.
        TREE_FIRST.store(true, Ordering::Release);
    }
    if gone {
        say(&format!(
            "{}: the process tree's uvfs server is gone (ENOTCONN): every call under the prefix fails",
            String::from_utf8_lossy(pre)
        ));
    }
}

/// Whether this process is its tree's first one, running another program
/// since (it made the mount, then exec'd): see [`is_tree_first`].
static TREE_FIRST: AtomicBool = AtomicBool::new(false);

/// Whether this client is the tree's first process after an exec: the
/// one that owns the tree's `UVFS_DUMP`.
pub(crate) fn is_tree_first() -> bool {
    TREE_FIRST.load(Ordering::Acquire)
}

/// Whether the topmost mount at `dir` in this namespace is a tree's: the
/// pid of the tree's first process (its source is `uvfs-tree:<pid>`).
fn tree_mount_at(dir: &[u8]) -> Option<i32> {
    let _busy = Busy::enter();
    let Ok(info) = std::fs::read("/proc/self/mountinfo") else {
        return None;
    };
    // The kernel lists the mount point resolved (symlinks followed) and
    // with space, tab, newline and backslash escaped in octal.
    let real = std::fs::canonicalize(std::ffi::OsStr::from_bytes(dir))
        .map(|p| p.into_os_string().into_vec())
        .unwrap_or_else(|_| dir.to_vec());
    let mut want = Vec::with_capacity(real.len());
    for &b in &real {
        match b {
            b' ' | b'\t' | b'\n' | b'\\' => want.extend_from_slice(format!("\\{b:03o}").as_bytes()),
            _ => want.push(b),
        }
    }
    let mut ours = None;
    for line in info.split(|&b| b == b'\n') {
        // `id parent major:minor root mountpoint options… - fstype source …`
        let f: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        if f.get(4).copied() != Some(want.as_slice()) {
            continue;
        }
        let Some(dash) = f.iter().position(|&x| x == b"-") else {
            continue;
        };
        ours = f
            .get(dash + 2)
            .and_then(|src| src.strip_prefix(SOURCE.as_bytes()))
            .and_then(|rest| rest.strip_prefix(b":"))
            .and_then(|pid| std::str::from_utf8(pid).ok()?.parse().ok());
    }
    ours
}

/// The process moved to a mount namespace of its own at its first
/// `pthread_create` (see [`before_thread`]): its first child mounts there,
/// whatever threads it has by then.
static EARLY: AtomicBool = AtomicBool::new(false);

/// [`before_thread`] has run its course (done, or found it cannot be).
static EARLY_TRIED: AtomicBool = AtomicBool::new(false);

/// Called by `pthread_create` before it makes a thread. `unshare(CLONE_NEWNS)`
/// needs a process with one thread, and a tree's first process needs it
/// only at its first child, by which time a threaded program (node, java,
/// a Rust program that spawns threads and then a `Command`) has several.
/// So a process that could become a tree's first (not a client, a
/// prefix, trees not turned off), about to make its first thread while it
/// has one, moves to a mount namespace of its own now. Its mounts stay
/// peers of the host's (no propagation changed), so it sees the host's
/// mounts as before, later ones included, until its first child makes
/// them private and mounts the tree there (`mount(2)` needs no single
/// thread). A process that makes no thread pays nothing; one that does
/// pays one `unshare` (a copy of the mount table, torn down at exit).
/// Not permitted (not root, a seccomp filter): nothing is said here; the
/// first child says why the tree cannot share uvfs, as before.
pub(crate) fn before_thread() {
    if EARLY_TRIED.load(Ordering::Acquire) {
        return;
    }
    if is_client() || GAVE_UP.load(Ordering::Acquire) || prefix_raw().is_none() {
        EARLY_TRIED.store(true, Ordering::Release);
        return;
    }
    if crate::guard::busy() {
        return;
    }
    if EARLY_TRIED.swap(true, Ordering::AcqRel) {
        return;
    }
    // One thread: `/proc/self/stat` (a thread made by a library without
    // `pthread_create`, or a racing first call, leaves the process as it
    // was).
    if threads() != 1 {
        return;
    }
    // SAFETY: no pointers; the process has one thread.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } == 0 {
        EARLY.store(true, Ordering::Release);
    }
}

/// Called by every hook that makes a child or execs (`what` names it),
/// before the call: makes this process a client of a server for its tree,
/// unless it is one or cannot be.
pub(crate) fn before_child(what: &str) {
    if is_client() || GAVE_UP.load(Ordering::Acquire) || prefix_raw().is_none() {
        return;
    }
    if crate::guard::busy() {
        return;
    }
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _l = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if is_client() || GAVE_UP.load(Ordering::Acquire) {
        return;
    }
    if let Err(why) = start_server() {
        GAVE_UP.store(true, Ordering::Release);
        say(&format!(
            "{what}: the process tree cannot share uvfs ({why}): each child gets a private copy, each exec'd program an empty one (`uvfs run -- COMMAND` gives a command and its children one shared mount)"
        ));
    }
}

/// The fds and the namespace the setup holds until it is done.
struct Setup {
    fuse: OwnedFd,
    /// The namespace the process left, for the server to go back to;
    /// `None` when the process left it at its first thread ([`EARLY`]):
    /// the server then leaves the tree's namespace for a copy of it
    /// without the tree's mount.
    host_ns: Option<OwnedFd>,
}

/// Steps 1 to 3 of the module's description; `Err` says why not.
fn start_server() -> Result<(), String> {
    let pre = prefix_raw().ok_or("no prefix")?.to_vec();
    let cpre = CString::new(pre.clone()).map_err(|_| "a NUL in the prefix")?;
    let setup = open_setup()?;
    // The VFS is built now if it was not (the server must serve the one
    // this process would have used: seeded, owned by its user).
    let built_ok = std::panic::catch_unwind(|| {
        with_state(|s| {
            s.p();
        })
    });
    if built_ok.is_err() {
        return Err("building uvfs failed".into());
    }
    let (vfs, fs) = built().ok_or("uvfs was not built")?;

    let early = EARLY.load(Ordering::Acquire);
    if !early {
        // `unshare(CLONE_NEWNS)` in a process with threads moves the
        // calling thread alone (with a copy of its cwd and root): the
        // others would go on in the host's namespace, where the prefix is
        // a plain directory.
        if threads() != 1 {
            return Err(
                "the process has several threads, and only a whole process can change its mount namespace"
                    .into(),
            );
        }
        // SAFETY: no pointers.
        if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
            return Err(format!(
                "unshare(CLONE_NEWNS): {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    let back = |e: String| -> String {
        if let Some(ns) = &setup.host_ns {
            // SAFETY: an fd of the host's namespace, opened above.
            unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNS) };
        }
        e
    };
    // Raw syscalls: the shim's own `mount` and `umount2` refuse uvfs paths.
    // SAFETY: NUL-terminated strings; a propagation change of every mount.
    if unsafe {
        libc::syscall(
            libc::SYS_mount,
            std::ptr::null::<libc::c_char>(),
            c"/".as_ptr(),
            std::ptr::null::<libc::c_char>(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null::<libc::c_void>(),
        )
    } != 0
    {
        return Err(back(format!(
            "making the mounts private: {}",
            std::io::Error::last_os_error()
        )));
    }
    // The mount point must exist: made on the host if missing (the
    // namespace is private, the file system under it is the host's).
    match rustix::fs::mkdir(cpre.as_c_str(), rustix::fs::Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(back(format!("mkdir of the mount point: {e}"))),
    }
    // SAFETY: plain id getters.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let data = CString::new(format!(
        "fd={},rootmode=40000,user_id={uid},group_id={gid},allow_other,default_permissions",
        setup.fuse.as_raw_fd()
    ))
    .map_err(|_| "mount options")?;
    // The source names the tree's first process: after an exec of its own
    // it finds itself there and keeps the dump (see `at_load`).
    // SAFETY: getpid has no preconditions.
    let source = CString::new(format!("{SOURCE}:{}", unsafe { libc::getpid() }))
        .map_err(|_| "mount source")?;
    // Inside the guard: the shim's `syscall` would take `SYS_mount` on a
    // uvfs path for the program's and refuse it.
    let mounted = {
        let _busy = Busy::enter();
        // SAFETY: NUL-terminated strings; the fd in the options is open.
        unsafe {
            libc::syscall(
                libc::SYS_mount,
                source.as_ptr(),
                cpre.as_ptr(),
                c"fuse.uvfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                data.as_ptr(),
            )
        }
    };
    if mounted != 0 {
        return Err(back(format!(
            "mount on {}: {}",
            String::from_utf8_lossy(&pre),
            std::io::Error::last_os_error()
        )));
    }
    // Every other thread is held out of uvfs from the server's fork until
    // its fds are reopened through the mount and the process is a client:
    // the server gets the uvfs no call is halfway through, and a call that
    // looked its fd or path up before the switch and enters after it
    // starts again (`dispatch`), on the kernel's side.
    crate::state::hold_gate();
    if let Err(e) = fork_server(setup, vfs, fs) {
        crate::state::release_gate();
        let _busy = Busy::enter();
        // SAFETY: a NUL-terminated path: our own mount, in our namespace
        // (inside the guard, as the mount above).
        unsafe { libc::syscall(libc::SYS_umount2, cpre.as_ptr(), libc::MNT_DETACH) };
        return Err(e);
    }
    // A client only once every fd is reopened: a call whose ticket
    // (`restart::Ticket`) reads "client" looks the fd map up after it
    // changed, and one whose ticket does not and that enters the gate
    // after this starts again.
    reopen_all(&pre);
    set_client();
    // A lock wait asleep on the private uvfs (outside the gate) would
    // wait there for an unlock that now goes to the mount: woken, it
    // answers `EINTR` and is made again on the mount (`dispatch`).
    crate::signal::cancel_lock_waits();
    crate::state::release_gate();
    Ok(())
}

/// How many threads the process has (`/proc/self/stat`'s 20th field; 0
/// if it cannot be read).
fn threads() -> usize {
    let _busy = Busy::enter();
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    stat.rsplit_once(") ")
        .and_then(|(_, rest)| rest.split(' ').nth(17))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Opens `/dev/fuse` and this process's mount namespace.
fn open_setup() -> Result<Setup, String> {
    use rustix::fs::{CWD, Mode, OFlags, openat};
    let fuse = openat(
        CWD,
        c"/dev/fuse",
        OFlags::RDWR | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("/dev/fuse: {e}"))?;
    let host_ns = if EARLY.load(Ordering::Acquire) {
        None
    } else {
        Some(
            openat(
                CWD,
                c"/proc/self/ns/mnt",
                OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| format!("/proc/self/ns/mnt: {e}"))?,
        )
    };
    Ok(Setup { fuse, host_ns })
}

/// Forks the server (through an intermediate child, reaped here, so the
/// server is not the program's child) and waits until it says the mount
/// is live, or that it failed.
fn fork_server(
    setup: Setup,
    vfs: std::sync::Arc<uvfs::Vfs>,
    fs: std::sync::Arc<dyn uvfs::fs::FileSystem>,
) -> Result<(), String> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| format!("pipe: {e}"))?;
    // SIGCHLD of the intermediate child is held back while it is reaped:
    // the program's handler then finds nothing of ours to wait for.
    // SAFETY: signal sets initialized before use; this thread's mask.
    let old = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        old
    };
    // SAFETY: the next `fork` (the shim's own `fork` would come back
    // here); the other threads, if any, are outside uvfs (the gate is
    // held), and the child runs this thread alone.
    let pid = unsafe { real!(fork: fn() -> libc::pid_t)() };
    if pid == 0 {
        // The child's copy of the gate is free again: it has no other
        // thread.
        crate::state::release_gate();
        drop(r);
        // SAFETY: as above, in the intermediate child.
        let pid2 = unsafe { real!(fork: fn() -> libc::pid_t)() };
        if pid2 != 0 {
            // SAFETY: leaves without running the program's exit handlers.
            unsafe { libc::_exit(i32::from(pid2 < 0)) };
        }
        serve(setup, w, vfs, fs);
    }
    drop(w);
    if pid > 0 {
        let mut status = 0;
        // SAFETY: our child; `status` is writable.
        while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    if pid < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    drop(setup);
    let mut msg = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match rustix::io::read(&r, &mut buf) {
            Ok(0) => break,
            Ok(n) => msg.extend_from_slice(&buf[..n]),
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    if msg.starts_with(b"ok") {
        Ok(())
    } else if msg.is_empty() {
        Err("the server exited before the mount was live".into())
    } else {
        Err(format!(
            "server: {}",
            String::from_utf8_lossy(&msg).trim_end()
        ))
    }
}

/// The server: back to the host's namespace, detached, every fd of the
/// program closed, the VFS served until the kernel drops the connection.
/// Never returns.
fn serve(
    setup: Setup,
    w: OwnedFd,
    vfs: std::sync::Arc<uvfs::Vfs>,
    fs: std::sync::Arc<dyn uvfs::fs::FileSystem>,
) -> ! {
    // Its own libc calls (std's) pass through the shim untouched.
    set_client();
    let _busy = Busy::enter();
    // SAFETY: signal dispositions and mask of this (single-threaded)
    // process: the program's handlers must not run in the server.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        for sig in 1..libc::SIGRTMIN() {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::setsid();
    }
    let _ = rustix::process::chdir(c"/");
    // Out of the tree's namespace, so that it dies with the tree's last
    // process: back to the host's, or (the process left the host's at its
    // first thread, and holds no handle on it) to a copy of the tree's
    // without the tree's mount (the mounts were made private before it, so
    // the detach stays in the copy).
    let ns_ok = match &setup.host_ns {
        // SAFETY: an fd of the host's namespace; one thread.
        Some(ns) => (unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNS) }) == 0,
        None => {
            let pre = prefix_raw().and_then(|p| CString::new(p).ok());
            // SAFETY: no pointers; one thread.
            (unsafe { libc::unshare(libc::CLONE_NEWNS) } == 0)
                && pre.is_some_and(|p| {
                    // SAFETY: a NUL-terminated path; our own copy of the
                    // mount, in our own namespace.
                    let r =
                        unsafe { libc::syscall(libc::SYS_umount2, p.as_ptr(), libc::MNT_DETACH) };
                    r == 0
                })
        }
    };
    // Every fd but the kept ones: the program's pipes must see EOF when the
    // program is done with them, not when the server is. Kept: the FUSE
    // device, the pipe to the parent, and the kernel memfds holding the
    // data of files mapped before the fork (the served tmpfs reads and
    // writes them; closing them would leave it using numbers the session
    // then reuses for its own fds).
    let fuse = setup.fuse.into_raw_fd();
    let wfd = w.into_raw_fd();
    drop(setup.host_ns);
    let mut keep = uvfs::fs::tmpfs::kernel_fds_in(0, i32::MAX);
    keep.extend([fuse, wfd]);
    keep.sort_unstable();
    keep.dedup();
    let mut from = 0u32;
    for &k in &keep {
        let k = k as u32;
        if k > from {
            // SAFETY: closing an fd range of this process, which owns
            // every fd in it; no kept fd lies inside it.
            unsafe { libc::syscall(libc::SYS_close_range, from, k - 1, 0u32) };
        }
        from = k + 1;
    }
    // SAFETY: as above, past the last kept fd.
    unsafe { libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32) };
    crate::state::forget_all_fds();
    // SAFETY: the two fds were just released from their owners above.
    let (fuse, mut w) = unsafe {
        (
            OwnedFd::from_raw_fd(fuse),
            std::fs::File::from(OwnedFd::from_raw_fd(wfd)),
        )
    };
    // stdin, stdout and stderr on /dev/null (if free: the kept fds may sit
    // there); stderr on `UVFS_TREE_LOG` if set (the server's own errors).
    let log = std::env::var_os("UVFS_TREE_LOG");
    for fd in 0..3 {
        if fd != fuse.as_raw_fd() && fd != w.as_raw_fd() {
            let path = match (&log, fd) {
                (Some(l), 2) => CString::new(std::os::unix::ffi::OsStrExt::as_bytes(l.as_os_str()))
                    .unwrap_or_else(|_| c"/dev/null".to_owned()),
                _ => c"/dev/null".to_owned(),
            };
            // SAFETY: a NUL-terminated path; the number is free.
            let n = unsafe {
                libc::open(
                    path.as_ptr(),
                    libc::O_RDWR | libc::O_CREAT | libc::O_APPEND,
                    0o600,
                )
            };
            if n >= 0 && n != fd {
                // SAFETY: our own fds.
                unsafe {
                    libc::dup2(n, fd);
                    libc::close(n);
                }
            }
        }
    }
    use std::io::Write;
    if !ns_ok {
        let _ = w.write_all(b"leaving the tree's mount namespace failed\n");
        // SAFETY: leaves without the program's exit handlers.
        unsafe { libc::_exit(1) };
    }
    // Passthrough (when the kernel offers it and the server may register
    // backing files: root): the mount serves a regular file's reads,
    // writes and mmap on the file's memfd, the one this process's own
    // mappings made before the fork are on, so they and the children's
    // I/O share one page cache.
    let server = match uvfs_fuse::UvfsFuse::new(vfs, fs) {
        Ok(s) => s.with_passthrough(uvfs_fuse::passthrough::Passthrough::Auto),
        Err(e) => {
            let _ = w.write_all(format!("{e}\n").as_bytes());
            // SAFETY: as above.
            unsafe { libc::_exit(1) };
        }
    };
    // The fd table grown now, while the server has one thread, to hold
    // the memfds' high numbers: grown later, under the workers, it waits
    // for an RCU grace period (5 to 10 ms at the tree's first new file).
    uvfs::fs::tmpfs::reserve_high_fds();
    let mut config = fuser::Config::default();
    config.n_threads = Some(2);
    config.clone_fd = true;
    let session = match fuser::Session::from_fd(server, fuse, fuser::SessionACL::All, config) {
        Ok(s) => s,
        Err(e) => {
            let _ = w.write_all(format!("FUSE handshake: {e}\n").as_bytes());
            // SAFETY: as above.
            unsafe { libc::_exit(1) };
        }
    };
    let _ = w.write_all(b"ok\n");
    drop(w);
    let r = session.run();
    if let Err(e) = &r {
        eprintln!("uvfs-preload: tree server: {e}");
    }
    // SAFETY: as above.
    unsafe { libc::_exit(i32::from(r.is_err())) }
}

/// Reopens every uvfs fd through the mount at its number, and moves a cwd
/// inside uvfs to the mount. An fd whose file has no name (unlinked while
/// open) or that cannot be reopened stays on this process's private copy
/// of uvfs, said once. FIFOs move with their data (`fifo_move`), once
/// every FIFO read and write asleep on the private uvfs was cancelled and
/// has left it.
fn reopen_all(pre: &[u8]) {
    let _busy = Busy::enter();
    let fifo_ok = crate::signal::begin_switch(std::time::Duration::from_secs(2));
    let (kept, fifos) = crate::state::with_state_held(|s| {
        s.flush();
        let mut kept = 0;
        let fds = s.mapped();
        // Which fds share one open file (a `dup`): they get one kernel
        // open file too. Pairs are probed only among a few fds.
        let mut leader: Vec<usize> = (0..fds.len()).collect();
        if fds.len() <= MAX_SHARING_PROBES {
            for i in 0..fds.len() {
                for j in 0..i {
                    if leader[j] == j && shared(s.p(), fds[j].1, fds[i].1) {
                        leader[i] = j;
                        break;
                    }
                }
            }
        }
        let mut done = vec![false; fds.len()];
        let mut fifo_fds = Vec::new();
        for (i, &(k, u)) in fds.iter().enumerate() {
            let l = leader[i];
            // A FIFO moves with its data, below.
            if s.p().may_block(u) {
                fifo_fds.push((k, u));
                continue;
            }
            let r = if l == i {
                reopen(s.p(), pre, u, k)
            } else if done[l] {
                dup_onto(s.p(), fds[l].0, u, k)
            } else {
                Err(())
            };
            if r.is_ok() {
                done[i] = true;
            } else {
                kept += 1;
            }
        }
        let mut moved = Vec::new();
        let mut fifos = fifo_fds.len();
        if fifo_ok && !fifo_fds.is_empty() {
            let m = crate::fifo_move::move_fifos(s, pre, &fifo_fds);
            fifos = m.kept;
            moved = m.moved;
        }
        for (i, &(k, u)) in fds.iter().enumerate() {
            if done[i] {
                s.unmap(k);
                let _ = s.p().close(u);
            }
        }
        // The moved FIFOs' private fds last: their release wakes any
        // poller of the private pipe, which then finds its fd the mount's.
        for (k, u) in moved {
            s.unmap(k);
            let _ = s.p().close(u);
        }
        if s.cwd_in_uvfs() {
            let mut dir = pre.to_vec();
            if let Ok(c) = s.p().getcwd()
                && c != b"/"
            {
                dir.extend_from_slice(&c);
            }
            if rustix::process::chdir(dir.as_slice()).is_ok() {
                s.set_cwd_in_uvfs(false);
                s.refresh_kcwd();
            }
        }
        (kept, fifos)
    });
    if fifos > 0 {
        say(&format!(
            "{fifos} open uvfs FIFO fd(s) stay private to this process (no name, or a call on it could not be cancelled): the tree's other processes open the FIFO's name through the mount, a different pipe"
        ));
    }
    if kept > 0 {
        say(&format!(
            "{kept} open uvfs file(s) without a name (unlinked) stay private to this process: the tree's other processes cannot reach them"
        ));
    }
}

/// Moves uvfs fd `u` (the program's number `k`), which a call that slept
/// across the switch opened on the private uvfs after it (a FIFO open whose
/// other end came before the switch, an open that waited for a lease
/// break), to the mount as the switch moved the others: a FIFO with its
/// data (`fifo_move`), any other file reopened at its number. False if it
/// stays private (no name, or it cannot be reopened).
pub(crate) fn move_late(s: &mut crate::state::State, k: i32, u: i32) -> bool {
    let Some(pre) = prefix_raw() else {
        return false;
    };
    let _busy = Busy::enter();
    let moved = if s.p().may_block(u) {
        crate::fifo_move::move_fifos(s, pre, &[(k, u)]).kept == 0
    } else {
        reopen(s.p(), pre, u, k).is_ok()
    };
    if moved {
        s.unmap(k);
        let _ = s.p().close(u);
    }
    moved
}

/// Above this many open uvfs fds, sharing is not probed (each fd gets an
/// open file of its own).
const MAX_SHARING_PROBES: usize = 64;

/// Whether uvfs fds `a` and `b` share one open file: moving `a`'s offset
/// moves `b`'s. `a`'s offset is put back.
fn shared(p: &mut uvfs::Process, a: i32, b: i32) -> bool {
    let (Ok(oa), Ok(ob)) = (p.lseek(a, 0, libc::SEEK_CUR), p.lseek(b, 0, libc::SEEK_CUR)) else {
        return false;
    };
    if oa != ob {
        return false;
    }
    let probe = oa + 4099;
    if p.lseek(a, probe, libc::SEEK_SET).is_err() {
        return false;
    }
    let moved = p.lseek(b, 0, libc::SEEK_CUR).ok() == Some(probe);
    let _ = p.lseek(a, oa, libc::SEEK_SET);
    moved
}

/// Makes number `k` (uvfs fd `u`) a duplicate of the already reopened
/// number `of`, with `u`'s close-on-exec flag.
fn dup_onto(p: &mut uvfs::Process, of: i32, u: i32, k: i32) -> Result<(), ()> {
    let fdfl = p.fcntl(u, libc::F_GETFD, 0).map_err(|_| ())?;
    let cloexec = if fdfl & libc::FD_CLOEXEC != 0 {
        libc::O_CLOEXEC
    } else {
        0
    };
    // SAFETY: `of` is the reopened file, `k` the placeholder the program
    // knows as its duplicate, replaced in one step.
    let r = unsafe { libc::syscall(libc::SYS_dup3, of, k, cloexec) };
    if r < 0 { Err(()) } else { Ok(()) }
}

/// Opens uvfs fd `u`'s file through the mount onto number `k`.
fn reopen(p: &mut uvfs::Process, pre: &[u8], u: i32, k: i32) -> Result<(), ()> {
    let path = p.fd_path(u).map_err(|_| ())?;
    let fl = p.fcntl(u, libc::F_GETFL, 0).map_err(|_| ())?;
    let fdfl = p.fcntl(u, libc::F_GETFD, 0).map_err(|_| ())?;
    let off = p.lseek(u, 0, libc::SEEK_CUR).ok();
    let mut full = pre.to_vec();
    if path != b"/" {
        full.extend_from_slice(&path);
    }
    let keep = libc::O_ACCMODE | libc::O_APPEND | libc::O_NONBLOCK | libc::O_PATH | libc::O_DIRECT;
    let mut flags = (fl & keep) | libc::O_CLOEXEC | libc::O_NOCTTY;
    if fl & libc::O_PATH != 0 {
        flags |= libc::O_NOFOLLOW;
    }
    let c = CString::new(full).map_err(|_| ())?;
    // SAFETY: a NUL-terminated path; a raw syscall (not the shim's open).
    let n = unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, c.as_ptr(), flags, 0) };
    if n < 0 {
        return Err(());
    }
    let n = n as i32;
    let cloexec = if fdfl & libc::FD_CLOEXEC != 0 {
        libc::O_CLOEXEC
    } else {
        0
    };
    // SAFETY: `n` is ours; `k` is the placeholder the program knows as this
    // file, replaced in one step.
    let r = unsafe { libc::syscall(libc::SYS_dup3, n, k, cloexec) };
    // SAFETY: our own fd.
    unsafe { libc::syscall(libc::SYS_close, n) };
    if r < 0 {
        return Err(());
    }
    if let Some(off) = off
        && off > 0
    {
        // SAFETY: `k` is now the reopened file.
        unsafe { libc::syscall(libc::SYS_lseek, k, off, libc::SEEK_SET) };
    }
    Ok(())
}
