//! The syscall-level API: a [`Process`] is one thread's handle on its
//! process (Linux's `current`): its fd table, shared with the other threads
//! of the process, and its RLIMIT_NOFILE. Methods are the Linux calls,
//! taking and returning what the syscalls do, with `Err(Errno)` for `-1` and
//! `errno`.
//!
//! Every call runs inside a task_work scope: puts it makes that are not
//! close(2)'s own are released when the call returns.
//!
//! The calls on paths and open files live in submodules by area: `open`
//! (open, openat, creat, `O_TMPFILE`), `io` (read, write, their
//! positional and vector forms, lseek, getdents64, truncate, fallocate,
//! fsync), `names` (mkdir, rmdir, unlink, rename, link, symlink,
//! readlink, chdir, getcwd), `attrs` (the stat family, chmod, chown,
//! utimensat, access, umask), `xattr` (extended attributes), `fcntl` (the
//! fcntl commands beyond the fd table's), `locks` (advisory locks: fcntl's
//! record and OFD locks, flock), `splice` (copy_file_range, sendfile) and
//! `select` (poll, ioctl `FIONREAD`);
//! `std_io` adds what a Rust user expects on top: [`Process::read_file`],
//! [`Process::write_file`], [`Process::read_dir`] with typed entries, and
//! [`OpenFile`], an open file that is `std::io::{Read, Write, Seek}`.
//!
//! # Errors common to the calls
//!
//! Each call's `# Errors` section lists what that call itself checks.
//! Calls that take a path can also fail in the walk, as on Linux:
//!
//! - `ENAMETOOLONG`: the path is `PATH_MAX` (4,096) bytes or longer, or
//!   one of its names is longer than the file system allows (255 bytes
//!   on tmpfs);
//! - `EINVAL`: the path contains a NUL byte. A C caller cannot pass one
//!   (the kernel's copy stops at it); uvfs refuses such a path rather than
//!   cutting it short (listed in `docs/status.md`, "Path walk");
//! - `ENOENT`: a name on the way does not exist, the path is empty (an
//!   `*at` call with `AT_EMPTY_PATH` excepted), a symlink on the way has an
//!   empty target, or the directory was removed;
//! - `ENOTDIR`: a name on the way, or `dirfd`, is not a directory, or the
//!   path ends in `/` on something that is not one;
//! - `EACCES`: no search (execute) permission on a directory on the way;
//!   following a symlink that `fs.protected_symlinks` protects
//!   ([`FsSysctls`](crate::FsSysctls));
//! - `ELOOP`: more than 40 symlinks followed in one walk;
//! - `EBADF`: a relative path with a `dirfd` that is neither open nor
//!   `AT_FDCWD` (an absolute path never looks at `dirfd`);
//! - `EXDEV`: with a host mount set ([`Process::set_host_mount`]), an
//!   absolute symlink led out of the VFS ([`Process::take_escape`] says
//!   where).
//!
//! Calls on an fd fail with `EBADF` when the fd is not open. An `O_PATH`
//! fd counts as not open for every call that reads, writes or changes
//! the file through it; the calls that accept one say so.

mod attrs;
mod fcntl;
mod io;
pub use io::ReadDir;
mod locks;
mod mmap;
mod names;
mod open;
mod select;
mod splice;
mod std_io;
pub use std_io::{FileType, OpenFile};
mod xattr;

use crate::cred::Cred;
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::fdtable::{FdTable, Files};
use crate::file_table::{
    FMODE_ATOMIC_POS, FMODE_CREATED, FMODE_OPENED, FMODE_PATH, File, FileOps, FileRef,
    UnpublishedFile, alloc_empty_file,
};
use crate::fs::FileSystem;
use crate::namei::{self, Nd};
use crate::primitive::sync::{UnmodelledMutex, lock_unmodelled};
use crate::signal::Sleep;
use crate::task_work;
use crate::uapi::*;
use crate::vfs::Vfs;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Linux's default RLIMIT_NOFILE soft limit.
pub const DEFAULT_NOFILE_SOFT: u64 = 1024;
/// The default hard limit used by uvfs (Linux's `fs.nr_open` default).
pub const DEFAULT_NOFILE_HARD: u64 = NR_OPEN;

/// Per-process state shared by its threads.
#[derive(Debug)]
struct Shared {
    /// The process id (its tgid): what `F_GETLK` reports as the holder of
    /// a POSIX lock. Given by the library (see [`Process::getpid`]).
    pid: i32,
    nofile_cur: AtomicU64,
    nofile_max: AtomicU64,
    cap_sys_resource: AtomicBool,
}

impl Shared {
    fn new(cur: u64, max: u64, cap: bool) -> Arc<Shared> {
        // Only uniqueness matters: a plain counter, not a model point.
        static NEXT_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);
        Arc::new(Shared {
            pid: NEXT_PID.fetch_add(1, Ordering::Relaxed),
            nofile_cur: AtomicU64::new(cur),
            nofile_max: AtomicU64::new(max),
            cap_sys_resource: AtomicBool::new(cap),
        })
    }
}

/// The process's file-system context (`fs_struct`): root directory,
/// current directory and umask, shared by threads, copied by fork.
#[derive(Debug)]
struct FsStruct {
    /// The root a `chroot` set; `None`: the VFS's root. Written under its
    /// lock, `chrooted` after it.
    root: UnmodelledMutex<Option<DentryRef>>,
    /// Whether `root` is set: read first by every walk, so a process that
    /// never chroots takes no lock and no reference for its root.
    chrooted: AtomicBool,
    cwd: UnmodelledMutex<DentryRef>,
    umask: AtomicU32,
}

impl FsStruct {
    fn new(root: Option<DentryRef>, cwd: DentryRef, umask: u32) -> Arc<FsStruct> {
        Arc::new(FsStruct {
            chrooted: AtomicBool::new(root.is_some()),
            root: UnmodelledMutex::new(root),
            cwd: UnmodelledMutex::new(cwd),
            umask: AtomicU32::new(umask),
        })
    }

    /// A copy for `fork` and `unshare(CLONE_FS)`.
    fn copy(&self) -> Arc<FsStruct> {
        FsStruct::new(
            lock_unmodelled(&self.root).clone(),
            lock_unmodelled(&self.cwd).clone(),
            self.umask.load(Ordering::Relaxed),
        )
    }
}

/// Where a walk starts: borrowed (the VFS's root, which the VFS holds) or
/// owned (a chroot's root, the cwd or a directory fd's dentry, which may
/// change under us).
type Start<'a> = namei::DentryCow<'a>;

/// One thread's handle on a process. Not `Sync`: each thread of a process
/// has its own handle ([`Process::new_thread`]); methods take `&mut self`,
/// which is what lets lookups borrow the table's reference when the table is
/// not shared, as the kernel's `fdget` does.
///
/// Two halves: `files`, this thread's registration as a user of the fd
/// table, whose `fdget` borrows it mutably for as long as the file found
/// lives; and `task`, the rest of the thread's context, which cannot reach
/// the table. A call can thus look a file up and work on it with the task
/// (`on_file`, `with_file`) without any way to close the fd meanwhile.
///
/// Each Linux call is a method with the same arguments and results: an fd
/// or a count, or the [`Errno`] Linux would set.
///
/// ```
/// use uvfs::uapi::{O_CREAT, O_RDWR};
/// use uvfs::{Errno, Process, Vfs};
///
/// let vfs = Vfs::new(uvfs::FastPaths::seeds());
/// let mut p = Process::new(&vfs)?;
/// let fd = p.open("/hello", O_RDWR | O_CREAT, 0o644)?;
/// assert_eq!(fd, 0); // the lowest free fd, as on Linux
/// p.write(fd, b"hello, world")?;
/// let mut buf = [0u8; 5];
/// assert_eq!(p.pread(fd, &mut buf, 7)?, 5);
/// assert_eq!(&buf, b"world");
/// assert_eq!(p.fstat(fd)?.st_size, 12);
///
/// // A fork copies the fd table; a thread shares it.
/// let mut child = p.fork()?;
/// p.close(fd)?;
/// assert_eq!(child.fstat(fd)?.st_size, 12);
/// assert_eq!(p.close(fd), Err(Errno::EBADF));
/// # Ok::<(), Errno>(())
/// ```
#[derive(Debug)]
pub struct Process {
    files: Files,
    task: Task,
}

/// A thread's context but its fd table (`current` minus `files`): the
/// VFS, the process's limits, its `fs_struct` and the credentials. Every
/// helper that needs no fd lives here, so code holding a borrowed lookup
/// can call it.
#[derive(Debug, Clone)]
struct Task {
    vfs: Arc<Vfs>,
    shared: Arc<Shared>,
    fs: Arc<FsStruct>,
    cred: Arc<Cred>,
    /// `cred`'s identity, never reused (see [`cred_id`]): what a file
    /// records as its opener's credentials (`f_cred`), compared where Linux
    /// compares `f_cred` with `current_cred()`. Copied with `cred`, new
    /// with every new `cred`.
    cred_id: u64,
    /// Where the caller's namespace mounts this VFS, if a front end said
    /// ([`Process::set_host_mount`]): symlinks' absolute targets are read
    /// as paths of that namespace. Shared by the threads of a process and
    /// copied by `fork`, as a root directory is.
    host: Option<Arc<[u8]>>,
    /// The host path the last walk escaped to (see [`namei::HostMount`]),
    /// cleared when a walk starts.
    escaped: namei::EscapeSlot,
    /// How this thread's blocking waits sleep ([`Process::set_sleep`]):
    /// shared by threads and forks, as signal handlers are.
    sleep: SleepHook,
    /// Whether an open may wait for a lease break or a FIFO's other end
    /// ([`Process::set_lease_break_wait`]); copied by threads and forks.
    lease_wait: bool,
}

/// The embedder's [`Sleep`] hook, if any (a newtype for `Debug`).
#[derive(Clone, Default)]
struct SleepHook(Option<Arc<dyn Sleep>>);

impl std::fmt::Debug for SleepHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "SleepHook(set)"
        } else {
            "SleepHook(none)"
        })
    }
}

/// A fresh credential identity: unique for the life of the library, so a
/// file's `f_cred` can never match credentials made after its opener's were
/// dropped (an `Arc`'s address could be reused). Zero is never returned (a
/// file with no opener's credentials records zero).
fn cred_id() -> u64 {
    // Only uniqueness matters: a plain std counter, not a model point.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A file being opened, handed to the opener of [`Process::open_with`].
pub struct Opening<'a> {
    file: &'a mut UnpublishedFile,
}

impl Opening<'_> {
    /// The file object (flags, mode).
    pub fn file(&self) -> &File {
        self.file
    }

    /// Sets the owner's operations (flush and release hooks).
    pub fn set_ops(&mut self, ops: Arc<dyn FileOps>) {
        self.file.set_ops(ops);
    }

    /// Sets the dentry the file is opened through.
    pub(crate) fn set_path(&mut self, d: DentryRef) {
        self.file.set_path(d);
    }

    /// Adds `FMODE_*` bits (`FMODE_CREATED`, `FMODE_CAN_ODIRECT`).
    pub(crate) fn add_mode(&mut self, bits: u32) {
        let mode = self.file.mode() | bits;
        self.file.set_mode(mode);
    }

    /// Clears `FMODE_ATOMIC_POS` (for files that are not regular files or
    /// directories).
    pub fn clear_atomic_pos(&mut self) {
        let mode = self.file.mode() & !FMODE_ATOMIC_POS;
        self.file.set_mode(mode);
    }
}

/// Linux's `VALID_OPEN_FLAGS`: open(2) silently drops every other bit.
const VALID_OPEN_FLAGS: i32 = O_ACCMODE
    | O_CREAT
    | O_EXCL
    | O_NOCTTY
    | O_TRUNC
    | O_APPEND
    | O_NONBLOCK
    | O_DSYNC
    | O_ASYNC
    | O_DIRECT
    | O_LARGEFILE
    | O_DIRECTORY
    | O_NOFOLLOW
    | O_NOATIME
    | O_CLOEXEC
    | O_PATH
    | O_TMPFILE
    | O_SYNC;

/// The flag checks of Linux's `build_open_flags` that open(2) can fail
/// (`EINVAL`, before an fd is allocated): `O_DIRECTORY | O_CREAT`, and
/// `O_TMPFILE` without `O_DIRECTORY` or without write access. `O_PATH`
/// drops the other flags first.
fn check_open_flags(flags: i32) -> Result<(), Errno> {
    let mut flags = flags & VALID_OPEN_FLAGS;
    if flags & O_PATH != 0 {
        flags &= O_DIRECTORY | O_NOFOLLOW | O_PATH | O_CLOEXEC;
    }
    if flags & (O_DIRECTORY | O_CREAT) == O_DIRECTORY | O_CREAT {
        return Err(Errno::EINVAL);
    }
    if flags & (O_TMPFILE & !O_DIRECTORY) != 0
        && (flags & O_DIRECTORY == 0 || flags & O_ACCMODE == O_RDONLY)
    {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// The `f_flags` and `FMODE_*` bits Linux derives from open flags.
pub fn open_flags_to_file(flags: i32) -> (i32, u32) {
    let flags = flags & VALID_OPEN_FLAGS;
    if flags & O_PATH != 0 {
        return (flags & (O_DIRECTORY | O_NOFOLLOW | O_PATH), FMODE_PATH);
    }
    let f_flags = (flags & !(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_CLOEXEC)) | O_LARGEFILE;
    // OPEN_FMODE: 0 -> read, 1 -> write, 2 -> both, 3 -> neither.
    let mode = ((flags + 1) & O_ACCMODE) as u32;
    (f_flags, mode | FMODE_ATOMIC_POS)
}

impl Process {
    /// A new process (one thread) with an empty fd table and the default
    /// limits (`RLIMIT_NOFILE` 1,024 soft, `NR_OPEN` hard), running as
    /// root (may raise its hard limit), in `/` with umask 022.
    ///
    /// # Errors
    ///
    /// `ENOMEM`: the fd table could not be allocated.
    pub fn new(vfs: &Arc<Vfs>) -> Result<Process, Errno> {
        Ok(Process {
            files: Files::new(vfs.fastpaths())?,
            task: Task {
                vfs: vfs.clone(),
                shared: Shared::new(DEFAULT_NOFILE_SOFT, DEFAULT_NOFILE_HARD, true),
                fs: FsStruct::new(None, vfs.root().clone(), 0o022),
                cred: Arc::new(Cred::root()),
                cred_id: cred_id(),
                host: None,
                escaped: Default::default(),
                sleep: SleepHook::default(),
                lease_wait: true,
            },
        })
    }

    /// The credentials this thread acts with.
    pub fn cred(&self) -> &Cred {
        &self.task.cred
    }

    /// Replaces this thread's credentials (threads created from it later
    /// and forks inherit them).
    ///
    /// ```
    /// use uvfs::cred::Cred;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    ///
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut root = Process::new(&vfs)?;
    /// root.mkdir("/home", 0o755)?;
    /// root.mkdir("/home/alice", 0o700)?;
    /// root.chown("/home/alice", 1000, 1000)?;
    ///
    /// let mut alice = root.fork()?;
    /// alice.set_cred(Cred::user(1000, 1000, vec![]));
    /// alice.write_file("/home/alice/notes", b"mine")?;
    /// assert_eq!(alice.write_file("/home/x", b"no"), Err(Errno::EACCES));
    ///
    /// let mut bob = root.fork()?;
    /// bob.set_cred(Cred::user(1001, 1001, vec![]));
    /// assert_eq!(bob.read_file("/home/alice/notes"), Err(Errno::EACCES));
    /// assert_eq!(root.stat("/home/alice/notes")?.st_uid, 1000);
    /// # Ok::<(), Errno>(())
    /// ```
    pub fn set_cred(&mut self, cred: Cred) {
        self.task.cred = Arc::new(cred);
        self.task.cred_id = cred_id();
    }

    /// `mount(2)` of `fs` on the directory `path` (resolved from this
    /// process's cwd, following symlinks): `EPERM` without
    /// `CAP_SYS_ADMIN`, `ENOTDIR` if `path` is not a directory. A path that
    /// is already a mountpoint resolves to the root of what is mounted
    /// there, so the new mount stacks on top and hides it, as a second
    /// `mount -t tmpfs` on one directory does on Linux.
    ///
    /// ```
    /// use uvfs::cred::Cred;
    /// use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    ///
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// p.mkdir("/mnt", 0o755)?;
    /// p.write_file("/mnt/under", b"x")?;
    /// p.mount("/mnt", Tmpfs::new(TmpfsOptions::default()))?;
    /// // The new tmpfs hides what was under it; a rename may not cross it.
    /// assert_eq!(p.stat("/mnt/under").map(|_| ()), Err(Errno::ENOENT));
    /// p.mkdir("/mnt/d", 0o755)?;
    /// assert_eq!(p.rename("/mnt/d", "/d"), Err(Errno::EXDEV));
    ///
    /// let mut user = p.fork()?;
    /// user.set_cred(Cred::user(1000, 1000, vec![]));
    /// let fs = Tmpfs::new(TmpfsOptions::default());
    /// assert_eq!(user.mount("/mnt", fs), Err(Errno::EPERM));
    /// # Ok::<(), Errno>(())
    /// ```
    ///
    /// # Errors
    ///
    /// - `EPERM`: the caller lacks `CAP_SYS_ADMIN` (checked first);
    /// - the walk's [common errors](crate::process#errors-common-to-the-calls);
    /// - `ENOTDIR`: `path` is not a directory;
    /// - `ENOMEM`: no room for another superblock.
    pub fn mount<P: AsRef<[u8]>>(&mut self, path: P, fs: Arc<dyn FileSystem>) -> Result<(), Errno> {
        let _call = task_work::enter();
        if !self.task.cred.capable(crate::cred::Cap::SysAdmin) {
            return Err(Errno::EPERM);
        }
        let path = namei::getname(path.as_ref())?;
        let start = self.start(AT_FDCWD, path)?;
        let mp = self
            .task
            .nd()
            .lookup(&start, path, namei::FOLLOW | namei::DIRECTORY)?;
        self.task.vfs.mount(mp, fs)
    }

    /// Where a walk of `path` relative to `dirfd` starts (`path_init`):
    /// the root for an absolute path (the fd is not looked at), the current
    /// directory for `AT_FDCWD`, else the directory the fd was opened on
    /// (`EBADF` if none; `ENOTDIR` if it is not a directory and the path is
    /// not empty). Inlined: out of line, its register saves were 5 % of a
    /// stat answered by the path cache.
    #[inline]
    fn start(&self, dirfd: i32, path: &[u8]) -> Result<Start<'_>, Errno> {
        if path.first() == Some(&b'/') {
            return Ok(self.task.root());
        }
        if dirfd == AT_FDCWD {
            return Ok(Start::Own(self.task.cwd()));
        }
        let file = self.files.get(dirfd).ok_or(Errno::EBADF)?;
        let d = file.dentry().ok_or(Errno::ENOTDIR)?.clone();
        if !path.is_empty() && !namei::is_dir(&d) {
            return Err(Errno::ENOTDIR);
        }
        Ok(Start::Own(d))
    }

    /// Resolves `path` relative to `dirfd` with lookup `flags`.
    fn resolve(&self, dirfd: i32, path: &[u8], flags: u32) -> Result<DentryRef, Errno> {
        let path = namei::getname(path)?;
        if path.is_empty() && flags & namei::EMPTY == 0 {
            return Err(Errno::ENOENT);
        }
        let start = self.start(dirfd, path)?;
        self.task.nd().lookup(&start, path, flags)
    }

    /// As [`resolve`](Self::resolve) for a caller that needs only the
    /// inode (stat, `FastPaths::stat_noref`): a path-cache hit (and, with
    /// `FastPaths::stat_noref_walk`, the end of a lockless walk) runs `f`
    /// on the answer's dentry and inode number (on a hit, with what the
    /// entry recorded of the way to its attributes) without taking a reference
    /// (see `Nd::lookup_ino`, which says why `walk_f` is a second copy of
    /// `f`); otherwise the dentry.
    fn resolve_ino<R>(
        &self,
        dirfd: i32,
        path: &[u8],
        flags: u32,
        f: impl FnOnce(
            &crate::dcache::Dentry,
            crate::fs::Ino,
            Option<crate::path_cache::Pinned>,
        ) -> Option<R>,
        walk_f: impl FnOnce(&crate::dcache::Dentry, crate::fs::Ino) -> Option<R>,
    ) -> Result<namei::Found<R>, Errno> {
        let path = namei::getname(path)?;
        if path.is_empty() && flags & namei::EMPTY == 0 {
            return Err(Errno::ENOENT);
        }
        let start = self.start(dirfd, path)?;
        self.task.nd().lookup_ino(&start, path, flags, f, walk_f)
    }

    /// The VFS this process runs on.
    pub fn vfs(&self) -> &Arc<Vfs> {
        &self.task.vfs
    }

    /// The fd table (shared with the process's other threads). A plain
    /// borrow, not the `Arc`: lookups borrow the table's references when
    /// this handle is its only user, which holds only while no one else can
    /// reach the table behind the handle's back.
    pub fn fd_table(&self) -> &FdTable {
        &self.files
    }

    /// Tells the walk that the caller's own namespace has this VFS mounted
    /// at `prefix` (an absolute, normalized path; `None`: not mounted
    /// anywhere, the default), as the LD_PRELOAD shim serves it at
    /// `UVFS_PREFIX`. Then a symlink's absolute target means what it would
    /// in that namespace: one under `prefix` goes on inside this VFS with
    /// the prefix taken off, and any other leaves the VFS: the call fails
    /// with `EXDEV` and [`Process::take_escape`] gives the host path the
    /// walk reached (the target followed by the rest of the path), which
    /// the front end resolves in its namespace. Without a host mount, an
    /// absolute target starts at this VFS's root, as in a chroot. Threads
    /// made after the call, and forks, inherit it.
    pub fn set_host_mount(&mut self, prefix: Option<&[u8]>) {
        self.task.host = prefix.map(Arc::from);
    }

    /// The host path the last call's walk escaped to (see
    /// [`Process::set_host_mount`]), taken: `Some` only after a call that
    /// failed with `EXDEV` for that reason.
    pub fn take_escape(&mut self) -> Option<Vec<u8>> {
        self.task.escaped.take()
    }

    /// Sets how this handle's blocking calls sleep (see [`crate::signal`]):
    /// `F_SETLKW` and its OFD form, a blocking flock, a FIFO open waiting
    /// for its partner, a FIFO read or write that must wait. With a hook,
    /// an interrupted sleep ends the call with `EINTR` (or, answered
    /// [`Restart`](crate::Interrupted::Restart), waits on); `None` (the
    /// default) sleeps until woken. Threads made by
    /// [`new_thread`](Self::new_thread) and forks start with this
    /// handle's hook, as they share or copy signal handlers.
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Interrupted, Process, Signals, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// p.mkfifo("/fifo", 0o644)?;
    /// let sig = Signals::new();
    /// p.set_sleep(Some(sig.clone()));
    /// sig.interrupt(Interrupted::Eintr); // pending: the next sleep ends
    /// assert_eq!(p.open("/fifo", O_RDONLY, 0), Err(Errno::EINTR));
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_sleep(&mut self, hook: Option<Arc<dyn Sleep>>) {
        self.task.sleep = SleepHook(hook);
    }

    /// Whether an open (or truncate) that meets a lease being broken may
    /// wait for the holder (default `true`). With `false` it fails with
    /// `EWOULDBLOCK` as an `O_NONBLOCK` open does, the break started: for
    /// an embedder that must not sleep in that call (the LD_PRELOAD shim,
    /// under its lock) and then retries it on a handle that waits. A
    /// blocking open of a FIFO that would wait for its other end likewise
    /// fails with `EWOULDBLOCK`, with nothing counted or woken.
    pub fn set_lease_break_wait(&mut self, wait: bool) {
        self.task.lease_wait = wait;
    }

    /// Another thread of this process: same fd table and limits
    /// (`clone(CLONE_FILES | CLONE_THREAD …)`).
    pub fn new_thread(&self) -> Process {
        Process {
            files: self.files.attach(),
            // The same VFS, limits, fs_struct and credentials.
            task: self.task.clone(),
        }
    }

    /// `fork()`: a new process with a copy of the fd table (same files, one
    /// more reference each; fds reserved by an open in progress are free in
    /// the copy), of the limits, of the root, current directory and
    /// umask, and new credentials equal to this thread's (Linux's
    /// `copy_creds`: only threads share the object). Both processes share
    /// the open files (their positions and status flags) and the VFS.
    ///
    /// # Errors
    ///
    /// `ENOMEM`: the copy of the fd table could not be allocated.
    pub fn fork(&mut self) -> Result<Process, Errno> {
        let _call = task_work::enter();
        let files = self.files.copy(None)?;
        let t = &self.task;
        let s = &t.shared;
        Ok(Process {
            files,
            task: Task {
                vfs: t.vfs.clone(),
                fs: t.fs.copy(),
                // Linux's copy_creds: a new process gets credentials of
                // its own (equal, but not the same object), unlike a
                // thread; a file the parent opened is not "opened with
                // the child's credentials" (linkat's AT_EMPTY_PATH rule).
                cred: t.cred.clone(),
                cred_id: cred_id(),
                host: t.host.clone(),
                escaped: Default::default(),
                sleep: t.sleep.clone(),
                lease_wait: t.lease_wait,
                shared: Shared::new(
                    s.nofile_cur.load(Ordering::Relaxed),
                    s.nofile_max.load(Ordering::Relaxed),
                    s.cap_sys_resource.load(Ordering::Relaxed),
                ),
            },
        })
    }

    /// `unshare(CLONE_FS)`: this thread gets its own copy of the
    /// fs_struct (root, cwd and umask), so a later chdir or umask here no longer
    /// changes the other threads', nor theirs this one's.
    pub fn unshare_fs(&mut self) {
        let fs = self.task.fs.copy();
        self.task.fs = fs;
    }

    /// `unshare(CLONE_FILES)`: gives this thread a private copy of the fd
    /// table if it is shared.
    ///
    /// # Errors
    ///
    /// `ENOMEM`: the copy could not be allocated.
    pub fn unshare_files(&mut self) -> Result<(), Errno> {
        let _call = task_work::enter();
        self.unshare_below(None)
    }

    fn unshare_below(&mut self, below: Option<u32>) -> Result<(), Errno> {
        if self.files.users() > 1 {
            // The old handle's drop gives its user of the shared table back.
            self.files = self.files.copy(below)?;
        }
        Ok(())
    }

    /// The fd-table part of `execve`: unshare the table, then close every
    /// close-on-exec fd (their flush errors are not reported).
    ///
    /// # Errors
    ///
    /// `ENOMEM`: the private copy could not be allocated (nothing was
    /// closed).
    pub fn exec(&mut self) -> Result<(), Errno> {
        let _call = task_work::enter();
        self.unshare_below(None)?;
        self.files.close_on_exec();
        Ok(())
    }

    /// `getrlimit(RLIMIT_NOFILE)`: (soft, hard).
    pub fn getrlimit_nofile(&self) -> (u64, u64) {
        let s = &self.task.shared;
        (
            s.nofile_cur.load(Ordering::Relaxed),
            s.nofile_max.load(Ordering::Relaxed),
        )
    }

    /// `setrlimit(RLIMIT_NOFILE)`: sets the soft and hard limits on fd
    /// numbers for the whole process. Open fds at or above a lowered limit
    /// stay open, as on Linux; new ones are allocated below it.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: `soft > hard`;
    /// - `EPERM`: `hard` exceeds `NR_OPEN`, or raises the current hard
    ///   limit without `CAP_SYS_RESOURCE`
    ///   ([`set_cap_sys_resource`](Self::set_cap_sys_resource)).
    pub fn setrlimit_nofile(&mut self, soft: u64, hard: u64) -> Result<(), Errno> {
        if soft > hard {
            return Err(Errno::EINVAL);
        }
        if hard > NR_OPEN {
            return Err(Errno::EPERM);
        }
        let s = &self.task.shared;
        if hard > s.nofile_max.load(Ordering::Relaxed)
            && !s.cap_sys_resource.load(Ordering::Relaxed)
        {
            return Err(Errno::EPERM);
        }
        s.nofile_max.store(hard, Ordering::Relaxed);
        s.nofile_cur.store(soft, Ordering::Relaxed);
        Ok(())
    }

    /// Drops (or grants) `CAP_SYS_RESOURCE` for the whole process; without
    /// it the hard RLIMIT_NOFILE can only be lowered.
    pub fn set_cap_sys_resource(&mut self, on: bool) {
        let s = &self.task.shared;
        s.cap_sys_resource.store(on, Ordering::Relaxed);
    }

    /// Opens a file the way `openat` does, with `open` standing for the path
    /// walk and the file system's open: check the flags (`EINVAL`), reserve
    /// the lowest free fd, allocate the file object, run `open`, then install
    /// the file; if `open` fails, the never-opened file is cleaned up
    /// (`fput_badopen`) and the fd is released. Not a Linux call: it lets
    /// an embedder install files of its own (with [`FileOps`] hooks); such
    /// a file has no dentry, so calls that need one refuse it (each says
    /// with what).
    ///
    /// # Errors
    ///
    /// - `EINVAL`: a bad flag combination, as for
    ///   [`openat`](Self::openat);
    /// - `EMFILE`: no fd free below `RLIMIT_NOFILE`;
    /// - `ENOMEM`: the file object could not be allocated;
    /// - whatever `open` returns.
    pub fn open_with(
        &mut self,
        flags: i32,
        open: impl FnOnce(&mut Opening<'_>) -> Result<(), Errno>,
    ) -> Result<i32, Errno> {
        self.open_inner(flags, |_, op| open(op))
    }

    /// `do_sys_openat2`'s skeleton, shared by [`open_with`](Self::open_with)
    /// and the path opens: `open` gets the process (for the walk) and the
    /// file being opened.
    fn open_inner(
        &mut self,
        flags: i32,
        open: impl FnOnce(&Process, &mut Opening<'_>) -> Result<(), Errno>,
    ) -> Result<i32, Errno> {
        let _call = task_work::enter();
        check_open_flags(flags)?;
        let nofile = self.task.nofile();
        let reserved = self.files.reserve_fd(flags & O_CLOEXEC != 0, nofile)?;
        let reserved = self.files.bind(reserved);
        let (f_flags, fmode) = open_flags_to_file(flags);
        let vfs = &self.task.vfs;
        let pool = vfs.fastpaths().typesafe_files;
        let mut file = alloc_empty_file(pool.then(|| vfs.file_pool()), f_flags, fmode)?;
        file.set_cred_id(self.task.cred_id);
        match open(self, &mut Opening { file: &mut file }) {
            Ok(()) => {
                let mode = file.mode() | FMODE_OPENED;
                file.set_mode(mode);
                Ok(reserved.install(file.publish())? as i32)
            }
            Err(e) => {
                file.put_badopen(self.task.vfs.fastpaths().badopen_immediate);
                drop(reserved);
                Err(e)
            }
        }
    }

    /// `close(fd)`: frees the fd; the open file goes when its last fd
    /// (and last other reference) is gone. The file's flush runs, then the
    /// final release, at once (seed 000) or from the deferred queue as the
    /// call returns (stock). Any close of an fd releases the POSIX record
    /// locks this process holds on that file, as on Linux. The fd is closed
    /// even when flush reports an error.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open (or is still being opened by another
    ///   thread);
    /// - whatever the flush of a file made by
    ///   [`open_with`](Self::open_with) reports, with the kernel's restart
    ///   codes turned into `EINTR` (the fd is gone either way). tmpfs
    ///   files and FIFOs have nothing to flush and never fail here.
    pub fn close(&mut self, fd: i32) -> Result<(), Errno> {
        let _call = task_work::enter();
        let file = self.files.close(fd)?;
        let r = match file.ops() {
            Some(ops) => ops.flush(&file),
            None => Ok(()),
        };
        // Any close of an fd of the file releases this table's record
        // locks on it.
        file.remove_posix_locks(self.files.lock_owner());
        if self.task.vfs.fastpaths().close_sync {
            file.put_sync();
        } else {
            drop(file);
        }
        // The fd is gone, so the call cannot be restarted: Linux reports the
        // restart codes (ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND,
        // ERESTART_RESTARTBLOCK) as EINTR.
        r.map_err(|e| match e.raw() {
            512..=514 | 516 => Errno::EINTR,
            _ => e,
        })
    }

    /// `dup(fd)`: a new fd, the lowest free one, for the same open file
    /// (sharing its position and status flags); close-on-exec is clear on
    /// it. `O_PATH` fds may be duplicated.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open;
    /// - `EMFILE`: no fd free below `RLIMIT_NOFILE`.
    pub fn dup(&mut self, fd: i32) -> Result<i32, Errno> {
        let _call = task_work::enter();
        Ok(self.files.dup(fd, self.task.nofile())? as i32)
    }

    /// `dup2(old, new)`: makes fd `new` refer to `old`'s open file,
    /// closing what `new` referred to first (its flush errors are not
    /// reported, as on Linux); close-on-exec is clear on `new`. With
    /// `old == new` it only checks that `old` is open. Returns `new`.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `new` is negative or not below `RLIMIT_NOFILE` (checked
    ///   first), or `old` is not open;
    /// - `EBUSY`: `new` is reserved by an open in progress in another
    ///   thread (Linux's race answer).
    pub fn dup2(&mut self, old: i32, new: i32) -> Result<i32, Errno> {
        let _call = task_work::enter();
        Ok(self.files.dup2(old, new, self.task.nofile())? as i32)
    }

    /// `dup3(old, new, flags)`: [`dup2`](Self::dup2), with `flags` 0 or
    /// `O_CLOEXEC` (sets close-on-exec on `new`).
    ///
    /// # Errors
    ///
    /// Those of `dup2`, and `EINVAL` for another flag or for `old == new`
    /// (checked before anything else).
    pub fn dup3(&mut self, old: i32, new: i32, flags: i32) -> Result<i32, Errno> {
        let _call = task_work::enter();
        Ok(self.files.dup3(old, new, flags, self.task.nofile())? as i32)
    }

    /// `fcntl(fd, cmd, arg)` for `F_DUPFD`, `F_DUPFD_CLOEXEC`, `F_GETFD`,
    /// `F_SETFD`, `F_GETFL`, `F_SETFL`, `F_DUPFD_QUERY`, `F_CREATED_QUERY`,
    /// `F_GETOWN`/`F_SETOWN`, `F_GETSIG`/`F_SETSIG`, `F_GETLEASE`/
    /// `F_SETLEASE`, `F_GET_SEALS`/`F_ADD_SEALS`, `F_GETPIPE_SZ`/
    /// `F_SETPIPE_SZ` and `F_NOTIFY` (removal only: a request for
    /// directory notifications is `EINVAL`, as with dnotify off); `EINVAL`
    /// for other commands. The commands that take
    /// a `struct f_owner_ex` are [`fcntl_getown_ex`](Self::fcntl_getown_ex)
    /// and [`fcntl_setown_ex`](Self::fcntl_setown_ex) (here they are
    /// `EFAULT`: `arg` is no pointer the library may read). On an `O_PATH`
    /// fd only the dup, fd-flag, `F_GETFL` and query commands work
    /// (`EBADF`), as in Linux.
    ///
    /// Process ids given to `F_SETOWN` are the host's (a uvfs process is a
    /// host process or part of one): an id no host process or group has is
    /// `ESRCH`, as Linux finds it. `F_GETOWN` reports 0 once no task of
    /// the owner's kind has the id, as Linux's re-check finds it.
    /// `F_SETLEASE`/`F_GETLEASE` follow Linux's lease rules
    /// (`docs/locks.md`, "Leases"): a conflicting open or truncate breaks
    /// the lease, notifies its owner through the [`LeaseNotify`
    /// hook](crate::LeaseNotify) and waits for it.
    ///
    /// `F_SETFL` changes only `O_APPEND`, `O_NONBLOCK`, `O_NOATIME` and
    /// `O_DIRECT`; the other bits of `arg` are ignored. Difference from
    /// Linux: `O_ASYNC` is ignored on every file, where Linux records it on
    /// a FIFO (its `F_GETFL` then shows it; host 6.18) and would send
    /// `SIGIO`; uvfs has no `fasync` and sends no signals.
    ///
    /// The advisory-lock commands are [`fcntl_lock`](Self::fcntl_lock)
    /// (here they are `EFAULT`, as for a bad pointer).
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open; an `O_PATH` fd with a command other
    ///   than those above; `F_GETPIPE_SZ`/`F_SETPIPE_SZ` on anything but a
    ///   FIFO; `F_DUPFD_QUERY` with `arg` not an open fd;
    /// - `EINVAL`: an unknown command; `F_DUPFD*` with `arg` at or above
    ///   `RLIMIT_NOFILE`; `F_SETFL` adding `O_DIRECT` to a directory or
    ///   another file that cannot do direct I/O; `F_SETOWN` of `i32::MIN`;
    ///   `F_SETSIG` past 64; `F_SETLEASE` with a bad type or on a
    ///   non-regular file; `F_NOTIFY` asking for events (no dnotify);
    ///   `F_GET_SEALS`/`F_ADD_SEALS` on a file that has no seals (a
    ///   directory) or unknown seal bits; `F_SETPIPE_SZ` past 2^31;
    /// - `EMFILE`: `F_DUPFD*` with no fd free at or above `arg`;
    /// - `EPERM`: `F_SETFL` adding `O_NOATIME` to a file the caller neither
    ///   owns nor has `CAP_FOWNER` for; `F_ADD_SEALS` on a sealed file
    ///   (every tmpfs file is) or an fd not open for writing;
    ///   `F_SETPIPE_SZ` past 1 MiB without `CAP_SYS_RESOURCE`;
    /// - `ESRCH`: `F_SETOWN` of an id no host process or group has;
    /// - `EACCES`: `F_SETLEASE` by a caller that does not own the file
    ///   and lacks `CAP_LEASE`;
    /// - `EAGAIN`: `F_SETLEASE` of a read lease on a file someone has open
    ///   for writing, of a write lease on a file open elsewhere, a lease
    ///   another file's lease forbids, or `F_UNLCK` with no lease held;
    /// - `EBUSY`: `F_SETPIPE_SZ` smaller than the data the pipe holds;
    /// - `ENOTDIR`: `F_NOTIFY` on a file that is not a directory;
    /// - `EFAULT`: the commands that take a pointer (`F_GETOWN_EX`,
    ///   `F_SETOWN_EX`, the lock commands): use their own methods.
    ///
    /// The fd table and fcntl (`dup`, `dup2`, `dup3`, `close`,
    /// `close_range`, `fcntl`):
    ///
    /// ```
    /// use uvfs::uapi::*;
    /// use uvfs::{Errno, FastPaths, Process, Vfs};
    /// # fn main() -> Result<(), Errno> {
    /// let vfs = Vfs::new(FastPaths::seeds());
    /// let mut p = Process::new(&vfs)?;
    /// let fd = p.open("/f", O_RDWR | O_CREAT, 0o644)?;
    /// let high = p.fcntl(fd, F_DUPFD_CLOEXEC, 10)?;
    /// assert_eq!(high, 10);
    /// assert_eq!(p.fcntl(high, F_GETFD, 0)?, FD_CLOEXEC);
    /// assert_eq!(p.dup2(fd, 3)?, 3);
    /// p.close(fd)?;
    /// assert_eq!(p.dup(3)?, 0); // the lowest free fd again
    /// assert_eq!(p.fcntl(fd + 100, F_GETFD, 0), Err(Errno::EBADF));
    /// # Ok(())
    /// # }
    /// ```
    pub fn fcntl(&mut self, fd: i32, cmd: i32, arg: u64) -> Result<i32, Errno> {
        let _call = task_work::enter();
        // The table view that comes with the file cannot close or replace
        // an fd, and `self.files` stays borrowed until both are gone.
        let (file, table) = self.files.fdget_pinned(fd, 0).ok_or(Errno::EBADF)?;
        if file.mode() & FMODE_PATH != 0
            && !matches!(
                cmd,
                F_DUPFD
                    | F_DUPFD_CLOEXEC
                    | F_GETFD
                    | F_SETFD
                    | F_GETFL
                    | F_DUPFD_QUERY
                    | F_CREATED_QUERY
            )
        {
            return Err(Errno::EBADF);
        }
        match cmd {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                // Linux reads the argument as an int: only the low 32 bits count.
                let from = u64::from(arg as u32);
                Ok(table.dup_from(&file, from, cmd == F_DUPFD_CLOEXEC, self.task.nofile())? as i32)
            }
            F_GETFD => Ok(if table.get_cloexec(fd) { FD_CLOEXEC } else { 0 }),
            F_SETFD => {
                table.set_cloexec(fd, arg & FD_CLOEXEC as u64 != 0);
                Ok(0)
            }
            F_GETFL => Ok(file.flags()),
            F_SETFL => {
                fcntl::setfl(&self.task.cred, &file, arg as i32)?;
                file.set_status_flags(arg as i32);
                Ok(0)
            }
            F_CREATED_QUERY => Ok(i32::from(file.mode() & FMODE_CREATED != 0)),
            F_GETOWN => Ok(fcntl::getown(&file)),
            F_SETOWN => fcntl::setown(&file, arg as i32),
            F_GETSIG => Ok(file.owner().sig),
            F_SETSIG => fcntl::setsig(&file, arg as i32),
            F_GETOWN_EX | F_SETOWN_EX => Err(Errno::EFAULT),
            F_GETLEASE => Ok(fcntl::getlease(&file)),
            F_NOTIFY => fcntl::notify(&file, arg),
            F_SETLEASE => fcntl::setlease(
                &self.task.cred,
                self.task.vfs.file_pool(),
                &file,
                fd,
                arg as i32,
            ),
            F_GET_SEALS => fcntl::get_seals(&file),
            F_ADD_SEALS => fcntl::add_seals(&file, arg as u32),
            // Only pipes have a size (`get_pipe_info`).
            F_GETPIPE_SZ | F_SETPIPE_SZ => {
                let fifo = crate::pipe::FifoFile::of(&file).ok_or(Errno::EBADF)?;
                if cmd == F_GETPIPE_SZ {
                    Ok(fifo.size() as i32)
                } else {
                    let cap = self.task.shared.cap_sys_resource.load(Ordering::Relaxed);
                    Ok(fifo.set_size(arg as u32, cap)? as i32)
                }
            }
            F_DUPFD_QUERY => {
                // Whether the fd in `arg` (read as an int) refers to the same
                // open file; EBADF if it is not open.
                let other = table.get(arg as i32).ok_or(Errno::EBADF)?;
                Ok(std::ptr::eq(other.as_ptr(), &*file) as i32)
            }
            // The record-lock commands take a `struct flock` pointer, which
            // an integer cannot carry: use [`Process::fcntl_lock`]. Through
            // this form they fail as a bad pointer does.
            F_GETLK | F_SETLK | F_SETLKW | F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW => {
                Err(Errno::EFAULT)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// `fcntl(fd, F_GETOWN_EX, &owner)`: the signal owner as a
    /// `struct f_owner_ex` (a file never given one: `F_OWNER_TID`, 0).
    ///
    /// # Errors
    ///
    /// `EBADF`: `fd` is not open, or is `O_PATH`.
    pub fn fcntl_getown_ex(&mut self, fd: i32) -> Result<FOwnerEx, Errno> {
        let _call = task_work::enter();
        let file = self.files.fdget(fd, FMODE_PATH).ok_or(Errno::EBADF)?;
        Ok(fcntl::getown_ex(&file))
    }

    /// `fcntl(fd, F_SETOWN_EX, &owner)`: sets who receives the file's
    /// signals: a host thread (`F_OWNER_TID`), process (`F_OWNER_PID`) or
    /// process group (`F_OWNER_PGRP`); id 0 clears the owner. uvfs sends
    /// no signals itself: the owner is kept for a front end.
    ///
    /// # Errors
    ///
    /// - `EBADF`: `fd` is not open, or is `O_PATH`;
    /// - `EINVAL`: an unknown type;
    /// - `ESRCH`: an id no host thread, process or group has.
    pub fn fcntl_setown_ex(&mut self, fd: i32, owner: FOwnerEx) -> Result<(), Errno> {
        let _call = task_work::enter();
        let file = self.files.fdget(fd, FMODE_PATH).ok_or(Errno::EBADF)?;
        fcntl::setown_ex(&file, owner)
    }

    /// `close_range(first, last, flags)`: closes every open fd from
    /// `first` to `last` inclusive (fds past the table's end are simply
    /// not open; `u32::MAX` means "to the end"). `flags`:
    /// `CLOSE_RANGE_UNSHARE` first gives this thread a private copy of a
    /// shared fd table; `CLOSE_RANGE_CLOEXEC` marks the fds close-on-exec
    /// instead of closing them. Flush errors are not reported.
    ///
    /// # Errors
    ///
    /// - `EINVAL`: another flag, or `first > last`;
    /// - `ENOMEM`: the private copy could not be allocated.
    pub fn close_range(&mut self, first: u32, last: u32, flags: u32) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
            return Err(Errno::EINVAL);
        }
        if flags & CLOSE_RANGE_UNSHARE != 0 {
            // Copy everything, then close the range in the private copy. Linux
            // skips copying fds past the word holding the last fd kept when
            // the range reaches the end; the fd state is the same either way,
            // only `flush` hooks of those skipped files differ (tmpfs has
            // none).
            self.unshare_below(None)?;
        }
        if flags & CLOSE_RANGE_CLOEXEC != 0 {
            self.files.set_cloexec_range(first, last);
        } else {
            self.files.close_range(first, last);
        }
        Ok(())
    }

    /// `fget`: a counted reference to the file at `fd`, for a caller that
    /// works on the file object itself.
    ///
    /// # Errors
    ///
    /// `EBADF`: `fd` is not open, or is `O_PATH`.
    pub fn fget(&mut self, fd: i32) -> Result<FileRef, Errno> {
        self.files.get_mask(fd, FMODE_PATH).ok_or(Errno::EBADF)
    }

    /// `fget_raw`: as [`fget`](Self::fget), `O_PATH` files included.
    ///
    /// # Errors
    ///
    /// `EBADF`: `fd` is not open.
    pub fn fget_raw(&mut self, fd: i32) -> Result<FileRef, Errno> {
        self.files.get(fd).ok_or(Errno::EBADF)
    }

    /// Runs `f` on the file at `fd` (not `O_PATH`), borrowing the table's
    /// reference when the table is not shared (`fdget` light), taking one
    /// otherwise.
    ///
    /// # Errors
    ///
    /// `EBADF`: `fd` is not open, or is `O_PATH`.
    pub fn with_file<R>(&mut self, fd: i32, f: impl FnOnce(&File) -> R) -> Result<R, Errno> {
        let _call = task_work::enter();
        let file = self.files.fdget(fd, FMODE_PATH).ok_or(Errno::EBADF)?;
        Ok(f(&file))
    }
}

impl Task {
    /// The caller's sleep hook, for a blocking wait.
    fn sleep_hook(&self) -> Option<&dyn Sleep> {
        self.sleep.0.as_deref()
    }

    /// A path walk in this thread's context.
    fn nd(&self) -> Nd<'_> {
        Nd::with_root(&self.vfs, &self.cred, self.root()).with_host(self.host_mount())
    }

    /// The root directory walks start `/` at and stop `..` at: the VFS's,
    /// or the one `chroot` set.
    #[inline]
    fn root(&self) -> namei::DentryCow<'_> {
        if self.fs.chrooted.load(Ordering::Acquire) {
            return self.chroot_root();
        }
        namei::DentryCow::Ref(self.vfs.root())
    }

    /// [`root`](Self::root) after a `chroot`: the root `chroot` set (a
    /// reference taken under its lock), out of the inlined common case.
    #[cold]
    #[inline(never)]
    fn chroot_root(&self) -> namei::DentryCow<'_> {
        match lock_unmodelled(&self.fs.root).clone() {
            Some(r) => namei::DentryCow::Own(r),
            None => namei::DentryCow::Ref(self.vfs.root()),
        }
    }

    /// The host mount a walk reads symlinks' absolute targets against, its
    /// escape slot cleared.
    fn host_mount(&self) -> Option<namei::HostMount<'_>> {
        let prefix = self.host.as_deref()?;
        self.escaped.clear();
        Some(namei::HostMount {
            prefix,
            escaped: &self.escaped,
        })
    }

    /// The current directory, with a reference.
    fn cwd(&self) -> DentryRef {
        lock_unmodelled(&self.fs.cwd).clone()
    }

    /// RLIMIT_NOFILE's soft limit.
    fn nofile(&self) -> u64 {
        self.shared.nofile_cur.load(Ordering::Relaxed)
    }
}
