//! The shim's state: the one in-process [`Vfs`] and [`Process`], of which
//! each thread of the program holds a handle of its own (no process-wide
//! lock on the way into uvfs), the map from kernel fd numbers to uvfs fds, the
//! placeholder fds that keep those numbers taken in the kernel, and the
//! routing of relative paths (which needs the cwd) between the kernel and
//! uvfs.
//!
//! The state calls up into the layers above it only through the
//! [`Callbacks`] the library constructor gives it (seeding a freshly built
//! uvfs, adopting a standard stream), so it imports none of them.
//!
//! ## Threads
//! The first call that reaches uvfs builds the VFS and the root handle,
//! and its thread (the *owner*) uses that handle itself: while it is the
//! only thread in uvfs, the fd table has one user and the library takes
//! its single-user paths (no reference counted per lookup, no table lock
//! for dup and close), as Linux does for a single-threaded process. Any
//! other thread's first uvfs call makes its own handle
//! (`Process::new_thread` of the root, through [`fork_gate::Gate::attach`]: it
//! waits until the owner is outside uvfs, and the owner's next entry is
//! ordered after it, so the owner sees the second user from then on):
//! threads share the fd table, cwd, umask and credentials, as a Linux
//! process's threads do. A thread's calls then take no lock of the
//! shim's: the fd map is lock-free, whether the cwd is in uvfs is an
//! atomic, and `fork` waits for threads to leave uvfs through the
//! [`fork_gate`] (a flag per thread). The placeholder cache is claimed
//! and refilled with one compare-and-swap each (`numbering`); short locks
//! remain around a fresh placeholder's open and a flush of the cache, the
//! kernel cwd (a relative path while the cwd is outside uvfs) and the
//! root handle (a thread's first call). While no other thread holds a
//! slot in the gate, the owner changes the cache with plain stores
//! ([`State::solo`]). When the other threads exit, their handles go
//! and the owner is the table's one user again, and their slots go back
//! (`fork_gate::Gate::give_back`): the owner's plain stores come back.
//!
//! ## The fd scheme
//! Every uvfs fd the program sees is a real kernel fd number held by a
//! *placeholder*: `/dev/null` opened `O_RDONLY | O_CLOEXEC` by the shim
//! through raw syscalls (rustix). The kernel therefore never hands that
//! number out for anything else, and [`FdMap`] maps the number to the uvfs
//! fd behind it. A call the shim does not interpose that reaches the kernel
//! with such a number meets `/dev/null`, never another file (`mmap` is
//! interposed and maps the file's data), `exec` drops the fd (close-on-exec), `sendfile` and
//! `copy_file_range` are interposed and copy through uvfs, `poll` reports
//! `/dev/null` as readable.
//!
//! ## Numbering
//! Linux hands out the lowest free number, and programs rely on it (`close(0)`
//! then `open` to replace stdin, fd-passing conventions, tests that print fd
//! numbers). The shim keeps that rule over uvfs and kernel fds together:
//!
//! - A new placeholder is `/dev/null` opened afresh: the kernel picks the
//!   lowest free number.
//! - A closed uvfs fd's placeholder is kept in a small *cache* (up to
//!   `UVFS_FD_CACHE` entries, 16 by default and at most
//!   `numbering::CACHE_MAX`, 24, all within one window of 24 numbers;
//!   `0` turns the cache off) so an
//!   open/close loop on uvfs costs no syscall. A cached number is free as
//!   far as the program knows ([`Fd::Stale`]: `EBADF`), but taken in the
//!   kernel, so the cache must never make a number come out that Linux
//!   would not give:
//!   - a uvfs open takes the *lowest* cached number, and only while it lies
//!     below [`HOLE`], the lowest number that may be free in the kernel
//!     outside the cache (every free number below `HOLE` is cached, so the
//!     lowest cached one is the lowest free one);
//!   - `HOLE` is raised only by the shim's own placeholder opens (which
//!     learn from the kernel that every number below the one it gave is
//!     taken) and lowered by every kernel fd the program closes through an
//!     interposed call (`close`, `close_range`, `fclose`, `closedir`,
//!     `pclose`, the cache's own flush);
//!   - before any interposed call that makes a kernel fd (a kernel-path
//!     `open`, `fopen`, `opendir`, `mkstemp`, `tmpfile`, `dup`,
//!     `F_DUPFD`, `pipe`, `socket`, `accept`, `eventfd`, `epoll_create`,
//!     `memfd_create`, `popen`, …) the cache is flushed (its placeholders
//!     closed), so the kernel sees the same free numbers it would without
//!     the shim.
//!
//!   Numbers can still differ from Linux's where the program makes or
//!   closes fds behind the shim's back: raw `syscall(2)`, and fds glibc
//!   opens for itself and hands to the program (`openlog`'s socket) or
//!   closes for it (`posix_spawn` file actions). Such an fd may get a number
//!   above a cached one; no fd ever refers to the wrong file.
//!   `UVFS_FD_CACHE=0` makes every placeholder a fresh open and every close
//!   a real close: the numbering is then exact whatever the program does.

use crate::conv::errno_of;
pub(crate) use crate::fdmap::{Fd, FdMap};
use crate::fork_gate;
use crate::guard::{Busy, Local, busy, local};
use crate::path::{Route, prefix, prefix_raw};
pub(crate) use crate::placeholders::hole_lower;
use crate::placeholders::{NUMBERING, Sys};
use crate::route::{Dir, route};
use rustix::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use uvfs::fs::FileSystem;
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::uapi::AT_FDCWD;
use uvfs::{Errno, FastPaths, Process, Vfs};

/// The process's fd map (see [`FdMap`]).
pub(crate) static FDMAP: FdMap = FdMap::new();

// The routing module carries Linux's AT_FDCWD without depending on uvfs.
const _: () = assert!(crate::route::AT_FDCWD == AT_FDCWD);

// ---------------------------------------------------------------------------
// The placeholder cache's bookkeeping (see "Numbering" above).

/// `UVFS_FD_CACHE` when unset.
const DEFAULT_FD_CACHE: usize = 16;

/// Called before every interposed kernel call that makes an fd: flushes the
/// cache so the kernel picks the number Linux would. One load when the cache
/// is empty.
#[inline]
pub(crate) fn before_kernel_fd() {
    if NUMBERING.cached() != 0 && !busy() {
        // Under the guard, as every other use of the cache: a signal
        // handler's call meanwhile goes to the kernel instead of reaching
        // the cache mid-change (which the owner may be changing without
        // its lock).
        let _busy = Busy::enter();
        with_state(State::flush);
    }
}

// ---------------------------------------------------------------------------
// The state: per thread, and what the threads share.

/// One thread's side of the shim: its own handle on the uvfs process
/// (`Process::new_thread`: the shared fd table, cwd, umask and
/// credentials), so threads call into uvfs without a process-wide lock.
/// What the threads share lives beside it: the root process handle
/// ([`ROOT`]), whether the cwd is in uvfs, the kernel cwd, and the
/// placeholder cache, each behind its own short lock or an atomic.
pub(crate) struct State {
    /// This thread's handle (made on its first call that reaches uvfs),
    /// unless it is the owner.
    proc_: Option<Process>,
    /// This thread built the uvfs process: its handle is [`ROOT`] itself,
    /// so while no other thread has attached, the fd table has one user
    /// and the library takes its single-user paths.
    owner: bool,
    /// This thread's flag in the fork gate (taken on its first call).
    gate: Option<fork_gate::Mine>,
    /// Every other thread is held out of uvfs for this call (a state made
    /// for one call of a thread whose thread-locals are gone).
    alone: bool,
    /// This call is the owner's and no other thread holds a slot in the
    /// gate ([`fork_gate::SHARED`] clear on the way in): the placeholder
    /// cache is this thread's alone, and is used without its lock.
    solo: bool,
}

impl State {
    /// A state made for one call with every other thread held out of uvfs
    /// (no handle of this thread's: it is made, and dropped, per call).
    fn alone() -> State {
        State {
            proc_: None,
            owner: false,
            gate: None,
            alone: true,
            solo: false,
        }
    }
}

impl Drop for State {
    fn drop(&mut self) {
        let Some(m) = self.gate.take() else {
            return;
        };
        if self.owner {
            // The owner's slot stays taken: an attach reads its flag (see
            // `fork_gate::Mine::keep`).
            m.keep();
        } else {
            // The placeholder cache goes back to the owner's lock-free use
            // if this was the last other thread.
            fork_gate::gate().give_back(m, owner_slot());
        }
    }
}

/// The root handle: the owner's (the thread that built the uvfs process,
/// on its first call that reached uvfs), which every other thread's is made
/// from (`new_thread`). Reached only by the owner (inside the fork gate),
/// by [`fork_gate::Gate::attach`] (under the attach lock, with the owner held
/// outside the gate), or by a call that holds every other thread out
/// ([`fork_gate::Inside::Alone`]); never dropped (the fd table must outlive
/// every thread: the fd map still names its fds).
struct Root(UnsafeCell<Option<Process>>);

// SAFETY: access is serialized as the type's documentation says; a
// `Process` may move between threads.
unsafe impl Sync for Root {}

static ROOT: Root = Root(UnsafeCell::new(None));

/// The owner's slot in the fork gate (null before the uvfs process is
/// built, or when a call without thread-locals built it: then there is no
/// owner). Written once, under the attach lock.
static OWNER: AtomicPtr<fork_gate::Slot> = AtomicPtr::new(std::ptr::null_mut());

/// The owner's slot, if there is an owner.
fn owner_slot() -> Option<&'static fork_gate::Slot> {
    // SAFETY: a slot pointer comes from a `&'static Slot`.
    unsafe { OWNER.load(Ordering::SeqCst).as_ref() }
}

/// Whether the program's cwd is inside the prefix (then the uvfs
/// process's cwd is it, and the kernel's is stale).
static CWD_IN_UVFS: AtomicBool = AtomicBool::new(false);

/// The kernel cwd (absolute), for routing relative paths; read on first use.
static KCWD: Mutex<Option<Vec<u8>>> = Mutex::new(None);

/// A lock of the shared state, even if a panic (caught as `EIO`) left it
/// poisoned: the data behind each is valid between any two statements.
fn locked<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `UVFS_FD_CACHE`: how many placeholders the cache keeps (0: no cache,
/// and no lock taken for placeholders; more than `numbering::CACHE_MAX`
/// counts as that many).
fn pool_max() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| {
        std::env::var("UVFS_FD_CACHE")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(DEFAULT_FD_CACHE)
    })
}

/// The tree's switch (`namespace`) holds the fork gate across its own
/// forks: `fork`'s handlers then leave the gate alone (the switch holds it;
/// no other thread can fork meanwhile, its `fork` waits for the switch to
/// end first).
static GATE_HELD: AtomicBool = AtomicBool::new(false);

extern "C" fn atfork_prepare() {
    if !GATE_HELD.load(Ordering::Acquire) {
        fork_gate::gate().before_fork();
    }
    uvfs::pool::before_fork();
}

extern "C" fn atfork_release() {
    uvfs::pool::after_fork();
    if !GATE_HELD.load(Ordering::Acquire) {
        fork_gate::gate().after_fork();
    }
}

extern "C" fn atfork_child() {
    // The owner exists here only if it is the thread that forked.
    crate::guard::forget_owner(true);
    atfork_release();
}

/// Holds every other thread out of uvfs (as a `fork` does) until
/// [`release_gate`]: the tree's switch, whose own forks then leave the gate
/// to it. Meanwhile this thread reaches its state through
/// [`with_state_held`] only.
pub(crate) fn hold_gate() {
    register_atfork();
    fork_gate::gate().before_fork();
    GATE_HELD.store(true, Ordering::Release);
}

/// Ends [`hold_gate`] (in the process that held it, or in a child forked
/// meanwhile, whose copy of the gate is held too).
pub(crate) fn release_gate() {
    GATE_HELD.store(false, Ordering::Release);
    fork_gate::gate().after_fork();
}

/// [`with_state`] for the thread that holds the gate ([`hold_gate`]):
/// every other thread is outside uvfs, so the state is reached without
/// entering the gate (which would wait for this thread itself). The
/// thread's handle must exist already (a `with_state` call made it).
pub(crate) fn with_state_held<R>(f: impl FnOnce(&mut State) -> R) -> R {
    debug_assert!(GATE_HELD.load(Ordering::Acquire));
    let Some(p) = state_of(local()) else {
        let mut st = State::alone();
        return f(&mut st);
    };
    // SAFETY: as in `with_state_in`: the re-entry guard keeps `f` from
    // reaching the state again, and only this thread's exit frees it.
    let st = unsafe { &mut *p };
    st.solo = false;
    f(st)
}

/// What the layers above the state plug into it, once, from the library
/// constructor: the state calls up through these instead of importing
/// the modules that define them.
#[derive(Clone, Copy)]
pub(crate) struct Callbacks {
    /// Called on the uvfs process right after it is built, before any call
    /// uses it (`UVFS_SEED`).
    pub(crate) built: fn(&mut Process),
    /// Called with every kernel fd number just mapped to a uvfs fd (a uvfs
    /// fd placed at 0, 1 or 2 takes over the standard stream).
    pub(crate) mapped: fn(i32),
}

static CALLBACKS: OnceLock<Callbacks> = OnceLock::new();

/// The callbacks (none before the constructor ran).
fn callbacks() -> Option<&'static Callbacks> {
    CALLBACKS.get()
}

/// What the library constructor initializes: the prefix, the fork handlers
/// and the callbacks (all `Once`s, which must not be mid-flight in a
/// `fork`).
pub(crate) fn at_load(cb: Callbacks) {
    let _ = prefix_raw();
    read_fastpaths();
    register_atfork();
    let _ = CALLBACKS.set(cb);
}

/// Registers the fork handlers once: `prepare` waits until no thread is
/// inside uvfs ([`fork_gate`]: then none holds a lock of uvfs's or of the
/// shared state) and takes the file pool's depot lock, which a thread
/// exiting takes outside the shim (returning its cached file objects); the
/// child's copy of the state is consistent and unlocked.
fn register_atfork() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handlers are plain functions of this library, which is
        // never unloaded (LD_PRELOAD).
        unsafe {
            libc::pthread_atfork(
                Some(atfork_prepare),
                Some(atfork_release),
                Some(atfork_child),
            )
        };
    });
}

/// Owns this thread's state ([`Local::state`] points to it): frees it at
/// thread exit.
struct Owned(Cell<*mut State>);

impl Drop for Owned {
    fn drop(&mut self) {
        let p = self.0.replace(std::ptr::null_mut());
        if !p.is_null() {
            // SAFETY: a state pointer is only ever made by `new_state`.
            if unsafe { &*p }.owner {
                // A later thread may get this one's thread block.
                crate::guard::forget_owner(false);
            }
            // A call from a later destructor makes a state for itself.
            local().state.set(std::ptr::null_mut());
            // SAFETY: made by `Box::into_raw` in `new_state` and owned by
            // this thread-local alone; no call of this thread is running
            // (its thread-local destructors run between calls), and the
            // block no longer points to it.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

std::thread_local! {
    static OWNED: Owned = const { Owned(Cell::new(std::ptr::null_mut())) };
}

/// This thread's state, made on its first call; `None` once its
/// thread-locals are being destroyed.
#[inline]
fn state_of(l: &Local) -> Option<*mut State> {
    let p = l.state.get().cast::<State>();
    if p.is_null() { new_state(l) } else { Some(p) }
}

#[cold]
fn new_state(l: &Local) -> Option<*mut State> {
    register_atfork();
    let p = Box::into_raw(Box::new(State {
        proc_: None,
        owner: false,
        gate: None,
        alone: false,
        solo: false,
    }));
    if OWNED.try_with(|o| o.0.set(p)).is_ok() {
        l.state.set(p.cast());
        Some(p)
    } else {
        // SAFETY: just made, never shared.
        drop(unsafe { Box::from_raw(p) });
        None
    }
}

/// Runs `f` on this thread's state, inside the fork gate (a `fork` waits
/// for it to return). A thread whose thread-locals are being destroyed (a
/// call from another library's thread-exit destructor, or from `exit`'s
/// handlers after the main thread's) gets a state for this call only, and
/// holds every other thread out of uvfs while it runs.
#[inline]
pub(crate) fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    with_state_in(local(), f)
}

/// [`with_state`] with this thread's block `l` already looked up.
#[inline]
pub(crate) fn with_state_in<R>(l: &Local, f: impl FnOnce(&mut State) -> R) -> R {
    // (The fork handlers are registered by the library constructor, or by
    // the thread's first call, `new_state`, if it came before.)
    let Some(p) = state_of(l) else {
        return with_temporary_state(f);
    };
    // SAFETY: `f` cannot reach `with_state` again on this thread (the
    // shim's re-entry guard sends nested calls to libc), and the state is
    // freed only by this thread's exit: this is the only reference.
    let st = unsafe { &mut *p };
    let gate = fork_gate::gate();
    if st.gate.is_none() {
        st.gate = Some(gate.take(owner_slot));
    }
    let (_inside, word) = gate.enter(st.gate.as_ref(), fork_gate::mask(st.owner));
    // Alone in the gate (see `fork_gate::Gate::take`): the cache needs no
    // lock for this call.
    st.solo = fork_gate::solo(st.owner, word);
    f(st)
}

#[cold]
fn with_temporary_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    register_atfork();
    let _inside = fork_gate::gate().enter(None, fork_gate::FORK);
    let mut st = State::alone();
    f(&mut st)
}

impl State {
    /// This thread's handle on the uvfs process, made on first use (the
    /// process, with its VFS, built on the first use by any thread, whose
    /// handle it then is).
    #[inline]
    pub(crate) fn p(&mut self) -> &mut Process {
        if !self.owner && self.proc_.is_none() {
            self.acquire();
        }
        if self.owner {
            // SAFETY: this thread is the owner and inside the fork gate
            // (only `with_state` hands out the state); an attach reaches
            // the root only while the owner is outside the gate, and an
            // `Inside::Alone` call only while every other thread is, so
            // this is the only reference for as long as `self` is
            // borrowed.
            return unsafe { &mut *ROOT.0.get() }
                .as_mut()
                .expect("the owner's root handle");
        }
        self.proc_.as_mut().expect("a thread handle")
    }

    /// Makes this thread's handle: attaches to the root handle, or builds
    /// the uvfs process and becomes its owner.
    #[cold]
    fn acquire(&mut self) {
        if self.alone {
            // SAFETY: every other thread is held out of uvfs for this call
            // (`Inside::Alone`), and only threads inside it reach the root.
            let root = unsafe { &mut *ROOT.0.get() };
            self.proc_ = Some(root.get_or_insert_with(new_process).new_thread());
            return;
        }
        // A state that is not `alone` has its slot (`with_state`).
        let me = self.gate.as_ref().map(fork_gate::Mine::slot);
        let p = fork_gate::gate().attach(owner_slot, || {
            // SAFETY: under the attach lock, with the owner (if any) held
            // outside the gate until this returns: no other reference to
            // the root (see `Root`).
            let root = unsafe { &mut *ROOT.0.get() };
            match root {
                Some(r) => Some(r.new_thread()),
                None => {
                    *root = Some(new_process());
                    let me = me.expect("a thread's own gate slot");
                    // SeqCst: paired with `fork_gate::Gate::take`'s load
                    // (a thread that reads no owner there must leave the
                    // owner reading its SHARED mark).
                    OWNER.store(std::ptr::from_ref(me).cast_mut(), Ordering::SeqCst);
                    // Outside any library call (the process is built):
                    // this thread reaches its block and queue by its
                    // thread pointer from now on.
                    crate::guard::set_owner();
                    None
                }
            }
        });
        match p {
            Some(p) => self.proc_ = Some(p),
            None => self.owner = true,
        }
    }

    /// This thread's handle if the uvfs process was built.
    pub(crate) fn p_if_built(&mut self) -> Option<&mut Process> {
        if !self.owner && self.proc_.is_none() && BUILT.get().is_none() {
            return None;
        }
        Some(self.p())
    }

    /// Whether the program's cwd is in uvfs.
    pub(crate) fn cwd_in_uvfs(&self) -> bool {
        CWD_IN_UVFS.load(Ordering::Acquire)
    }

    /// Records whether the program's cwd is in uvfs.
    pub(crate) fn set_cwd_in_uvfs(&mut self, v: bool) {
        CWD_IN_UVFS.store(v, Ordering::Release);
    }

    /// The kernel's cwd (absolute), read once and then kept by
    /// [`refresh_kcwd`](Self::refresh_kcwd).
    fn kcwd(&self) -> Vec<u8> {
        locked(&KCWD)
            .get_or_insert_with(|| {
                rustix::process::getcwd(Vec::new())
                    .map(|c| c.into_bytes())
                    .unwrap_or_else(|_| b"/".to_vec())
            })
            .clone()
    }

    /// Routes `path` relative to the cwd ([`route`]: the uvfs cwd's path
    /// from uvfs, the kernel's from [`kcwd`](Self::kcwd)).
    pub(crate) fn route_cwd<'a>(&mut self, path: &'a [u8]) -> Route<'a> {
        if self.cwd_in_uvfs() {
            let p = self.p();
            route(prefix(), Dir::Uvfs(AT_FDCWD, || p.getcwd().ok()), path)
        } else {
            route(prefix(), Dir::KernelCwd(|| Some(self.kcwd())), path)
        }
    }

    /// Routes `path` relative to uvfs directory fd `u`.
    pub(crate) fn route_uvfs_fd<'a>(&mut self, u: i32, path: &'a [u8]) -> Route<'a> {
        let p = self.p();
        route(prefix(), Dir::Uvfs(u, || p.fd_path(u).ok()), path)
    }

    /// The uvfs fd behind kernel fd `k`.
    pub(crate) fn ufd(&self, k: i32) -> Result<i32, Errno> {
        match FDMAP.get(k) {
            Fd::Uvfs(u) => Ok(u),
            _ => Err(Errno::EBADF),
        }
    }

    /// A new placeholder for an fd the program will see: the lowest cached
    /// number when it is the lowest free one, else (the cache flushed)
    /// `/dev/null` opened afresh at the kernel's lowest free number.
    /// `EMFILE`/`ENFILE` as the kernel says.
    pub(crate) fn placeholder(&mut self) -> Result<i32, Errno> {
        NUMBERING.placeholder(&mut Sys, &FDMAP, pool_max(), self.solo)
    }

    /// Turns kernel fd `k` into a placeholder in one step (`dup3` of a
    /// fresh `/dev/null` onto it, which closes whatever `k` was).
    pub(crate) fn placeholder_at(&mut self, k: i32) -> Result<(), Errno> {
        if self.uncache(k) {
            return Ok(());
        }
        let tmp = rustix::fs::openat(
            rustix::fs::CWD,
            c"/dev/null",
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(errno_of)?;
        if tmp.as_raw_fd() == k {
            // `k` was free and the lowest: the fresh placeholder is already
            // there (dup3 of an fd onto itself would fail with EINVAL, and
            // the number would be lost). dash's `echo hi > /uvfs/x` after
            // closing fd 1 found it.
            let _ = tmp.into_raw_fd();
            return Ok(());
        }
        // SAFETY: `k` is a number the caller wants replaced; the OwnedFd is
        // never dropped (ManuallyDrop), so the shim does not close it.
        let mut target = std::mem::ManuallyDrop::new(unsafe { OwnedFd::from_raw_fd(k) });
        rustix::io::dup3(&tmp, &mut target, rustix::io::DupFlags::CLOEXEC).map_err(errno_of)?;
        Ok(())
    }

    /// Maps placeholder `k` to uvfs fd `u`.
    pub(crate) fn map(&mut self, k: i32, u: i32) {
        FDMAP.set(k, u + 1);
        // Only 0, 1 and 2 have a standard stream to take over.
        if (0..=2).contains(&k)
            && let Some(cb) = callbacks()
        {
            (cb.mapped)(k);
        }
    }

    /// Forgets `k` and releases its placeholder: to the cache when there is
    /// room and `k` lies below [`HOLE`] (else it could never be handed out
    /// before a flush), otherwise closed.
    pub(crate) fn release(&mut self, k: i32) {
        NUMBERING.release(&mut Sys, &FDMAP, k, pool_max(), self.solo);
    }

    /// Removes `k` from the cache; whether it was there.
    fn uncache(&mut self, k: i32) -> bool {
        NUMBERING.uncache(k, self.solo)
    }

    /// Every number mapped to a uvfs fd, with its uvfs fd.
    pub(crate) fn mapped(&self) -> Vec<(i32, i32)> {
        (0..FDMAP.hi.load(Ordering::Relaxed))
            .filter_map(|k| match FDMAP.get(k) {
                Fd::Uvfs(u) => Some((k, u)),
                _ => None,
            })
            .collect()
    }

    /// Forgets `k` without touching the kernel fd (the caller replaces or
    /// closes it).
    pub(crate) fn unmap(&mut self, k: i32) {
        self.uncache(k);
        FDMAP.set(k, 0);
    }

    /// Closes every cached placeholder: the kernel then sees exactly the
    /// free numbers the program does.
    pub(crate) fn flush(&mut self) {
        NUMBERING.flush(&mut Sys, &FDMAP, self.solo);
    }

    /// Refreshes the kernel cwd after a kernel chdir.
    pub(crate) fn refresh_kcwd(&mut self) {
        if let Ok(c) = rustix::process::getcwd(Vec::new()) {
            *locked(&KCWD) = Some(c.into_bytes());
        }
    }
}

/// Forgets every fd number (mapped or cached) without closing anything:
/// for a tree's server, a copy of the program whose fds it closed, so that
/// no number it opens later is taken for one of the program's uvfs fds.
pub(crate) fn forget_all_fds() {
    for k in 0..FDMAP.hi.load(Ordering::Relaxed) {
        FDMAP.set(k, 0);
    }
    NUMBERING.forget_cache();
}

/// The VFS the uvfs process runs on and its root file system, once built
/// (what a tree's server serves: see `namespace`).
static BUILT: OnceLock<(Arc<Vfs>, Arc<dyn FileSystem>)> = OnceLock::new();

/// The fast paths the shim's uvfs is built with: `UVFS_FASTPATHS`, a spec
/// as `uvfs-bench run --fastpaths` takes it (`seeds`, `stock`,
/// `seeds,path_cache_dir_gen=off`, ...), so a real program can A/B one
/// switch; `seeds` without it.
static FASTPATHS: OnceLock<FastPaths> = OnceLock::new();

/// Reads `UVFS_FASTPATHS` (from the library constructor, before `main`). A
/// spec that does not parse ends the process there, exit status 2, with
/// one line on stderr: a run meant to measure a switch must not measure
/// the default instead, silently.
fn read_fastpaths() {
    let Some(v) = std::env::var_os("UVFS_FASTPATHS") else {
        return;
    };
    match v.to_str().map(FastPaths::parse) {
        Some(Ok(f)) => {
            let _ = FASTPATHS.set(f);
        }
        _ => {
            let msg = format!(
                "uvfs-preload: UVFS_FASTPATHS={v:?} is not a fast-path spec (seeds, stock, \
                 and NAME=on|off items, comma-separated; `uvfs-bench run --help` lists the \
                 names)\n"
            );
            let _ = rustix::io::write(rustix::stdio::stderr(), msg.as_bytes());
            // SAFETY: ends the process at load, before `main` and before
            // any thread or uvfs state exists; nothing is left half-done.
            unsafe { libc::_exit(2) };
        }
    }
}

/// The VFS and its root file system, if built.
pub(crate) fn built() -> Option<(Arc<Vfs>, Arc<dyn FileSystem>)> {
    BUILT.get().cloned()
}

/// A fresh VFS (tmpfs root, every seed fast path) and one process on it,
/// with the program's credentials and umask; the root (the prefix
/// directory) owned by the program's user, mode 0777 less the umask.
fn new_process() -> Process {
    // Seeding reads the host with std::fs, whose libc calls must pass
    // straight through the shim.
    let _busy = Busy::enter();
    // SAFETY: plain id getters, no memory involved.
    let (uid, gid, euid, egid) = unsafe {
        (
            libc::getuid(),
            libc::getgid(),
            libc::geteuid(),
            libc::getegid(),
        )
    };
    let mut groups = vec![0 as libc::gid_t; 256];
    // SAFETY: the buffer holds 256 gids.
    let n = unsafe { libc::getgroups(256, groups.as_mut_ptr()) };
    groups.truncate(usize::try_from(n).unwrap_or(0));
    let mask = rustix::process::umask(rustix::fs::Mode::empty());
    rustix::process::umask(mask);
    // The root is made with its mode and owner (tmpfs's `mode=`, `uid=`
    // and `gid=`), not changed by a `chmod` and a `chown` through the VFS
    // afterwards: a tenth of the first uvfs call (docs/preload-firstcall.md).
    let fs: Arc<dyn FileSystem> = Tmpfs::new(TmpfsOptions {
        mode: 0o777 & !mask.bits(),
        uid: euid,
        gid: egid,
        ..TmpfsOptions::default()
    });
    let vfs: Arc<Vfs> = Vfs::builder()
        .fastpaths(FASTPATHS.get().copied().unwrap_or_else(FastPaths::seeds))
        .lease_notify(Arc::new(crate::signal::KillNotify))
        .build_with_root(fs.clone());
    let _ = BUILT.set((vfs.clone(), fs));
    let mut p = Process::new(&vfs).expect("a fresh fd table");
    // Blocking uvfs calls sleep where the kernel delivers signals into
    // them (`crate::signal`); threads and forks inherit the hook.
    p.set_sleep(Some(Arc::new(crate::signal::KernelSleep)));
    // An open or truncate that must wait for a lease break fails under the
    // state (`EWOULDBLOCK`, the break started) and is retried outside it
    // on a thread handle that waits (hooks/open.rs, hooks/io.rs), so the
    // holder's own calls get through meanwhile.
    p.set_lease_break_wait(false);
    // The kernel's RLIMIT_NOFILE bounds the placeholders; uvfs's own table
    // must never be the tighter limit.
    let _ = p.setrlimit_nofile(uvfs::uapi::NR_OPEN, uvfs::uapi::NR_OPEN);
    p.umask(mask.bits());
    let mut cred = uvfs::cred::Cred::user(uid, gid, groups);
    cred.euid = euid;
    cred.egid = egid;
    cred.fsuid = euid;
    cred.fsgid = egid;
    p.set_cred(cred);
    // The prefix is where this namespace sees uvfs: a symlink's absolute
    // target outside it leaves uvfs (the walk's escape, which `dispatch`
    // hands to the kernel).
    p.set_host_mount(prefix_raw());
    if let Some(cb) = callbacks() {
        (cb.built)(&mut p);
    }
    p
}

/// `fd`'s raw number, for rustix calls on a borrowed kernel fd.
pub(crate) fn borrow(fd: i32) -> BorrowedFd<'static> {
    // SAFETY: only used for the duration of one syscall on a number the
    // caller passed; a closed number gives EBADF from the kernel.
    unsafe { BorrowedFd::borrow_raw(fd) }
}
