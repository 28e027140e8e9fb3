//! `libuvfs_preload.so`: an `LD_PRELOAD` library that serves one path prefix
//! (`UVFS_PREFIX`, default `/uvfs`) from an in-process uvfs (a tmpfs root,
//! the prefix standing for its `/`), and passes every other call to the next
//! definition (`dlsym(RTLD_NEXT, …)`, resolved once) unchanged. The
//! exported (interposed) symbols are listed in `symbols.txt`, which a test
//! keeps equal to the library's dynamic symbol table.
//!
//! Modules, from the top (what the program and libc call) down; each
//! imports only from below it:
//!
//! - this file: the library constructor, which initializes everything the
//!   shim initializes once and plugs `seed` and `hooks::stdio` into
//!   the state;
//! - `hooks`: the interposed functions, one module per group of calls
//!   (open/close/dup, fcntl, I/O, stat, attributes, names, cwd, `DIR`
//!   streams, stdio, temporary files, xattrs and `statfs`, copies, fd
//!   makers);
//! - `seed`: files in and out: `UVFS_SEED` (a host directory copied in
//!   when uvfs is built) and `UVFS_DUMP` (the uvfs tree copied out when the
//!   process exits);
//! - `fdops`: the fd operations several entry points share (open/close of
//!   a uvfs fd, read/write/lseek/close of any fd), and `tempname`: glibc's
//!   temporary-name generator for uvfs templates;
//! - `dispatch`: where a call goes (path and fd calls to the kernel or
//!   uvfs);
//! - `state`: each thread's handle on the uvfs process, the fd map and
//!   placeholders, routing of relative paths; `fork_gate`: what keeps a
//!   `fork` from copying the process while a thread is inside uvfs;
//! - `namespace`: one uvfs for the whole process tree: at the first
//!   child or exec, a server forked to serve the VFS through a FUSE mount
//!   on the prefix in a private mount namespace, the process a client;
//! - `restart`: the rule for a call that raced the tree's switch (a
//!   ticket taken before the look-up, checked inside the gate) and its
//!   test hook;
//! - `path`: the prefix; `route`: where a path goes, a pure function of
//!   the prefix, the directory and the path (fuzzed on its own);
//!   `fdmap`: the lock-free map from kernel fd numbers to uvfs fds;
//!   `numbering`: the placeholders' cache and numbering (the kernel
//!   behind a trait; fuzzed with `route` and `fdmap`);
//! - `sync`: the concurrency facade of the fork gate and the placeholder
//!   numbering (std's atomics and locks, loom's under `--cfg loom`);
//! - `guard` (the re-entry guard and the frame of a uvfs call),
//!   `conv` (errno, C strings, buffers, C structs), `interpose`
//!   (`real!`, `forward!`, `at_call!`) and `refuse` (the loud failure of
//!   a call the shim cannot serve), at the bottom with uvfs itself.
//!
//! Safety rules: the shim's own kernel calls go through rustix (raw
//! syscalls, never libc's interposable wrappers); a thread-local guard sends
//! any call made while the shim is already working on this thread straight
//! to libc; every uvfs call runs under `catch_unwind` (a panic becomes
//! `EIO`); errno is set through `__errno_location`. Every interposed
//! function is an `unsafe extern "C" fn` under the C contract of the
//! function it replaces (see `interpose`).
#![deny(unsafe_op_in_unsafe_fn)]

// Under `--cfg loom` only the fork gate, the switch's table of waits, the
// placeholder numbering (with the fd map) and their facade are built, for
// their loom models (`fork_gate/loom_tests.rs`, `cancel/loom_tests.rs`,
// `numbering/loom_tests.rs`): the rest of the shim keeps process-wide
// statics, which loom's atomics cannot be.
#[cfg(any(not(loom), test))]
mod cancel;
#[cfg(not(loom))]
mod conv;
#[cfg(not(loom))]
mod dispatch;
#[cfg(any(not(loom), test))]
mod fdmap;
#[cfg(not(loom))]
mod fdops;
#[cfg(not(loom))]
mod fifo_move;
#[cfg(any(not(loom), test))]
mod fork_gate;
#[cfg(not(loom))]
mod guard;
#[cfg(not(loom))]
mod hooks;
#[cfg(not(loom))]
mod interpose;
#[cfg(not(loom))]
mod namespace;
#[cfg(any(not(loom), test))]
mod numbering;
#[cfg(not(loom))]
mod path;
#[cfg(not(loom))]
mod placeholders;
#[cfg(not(loom))]
mod refuse;
#[cfg(not(loom))]
mod restart;
#[cfg(not(loom))]
mod route;
#[cfg(not(loom))]
mod seed;
#[cfg(not(loom))]
mod signal;
#[cfg(not(loom))]
mod state;
#[cfg(any(not(loom), test))]
mod sync;
#[cfg(not(loom))]
mod tempname;

/// The library constructor, run by the dynamic loader before `main` and
/// before the program can start a thread: everything the shim initializes
/// once is initialized here. A one-time initialization a thread was in the
/// middle of when another thread called `fork` would stay "running" forever
/// in the child (found by the fork test: a child hung in the prefix's
/// `OnceLock`, which a thread of the parent was filling).
///
/// It also plugs the layers above the state into it: seeding a freshly
/// built uvfs (`UVFS_SEED`) and adopting a standard stream when a uvfs fd
/// lands on 0, 1 or 2, so the state calls them without importing them.
#[cfg(not(loom))]
extern "C" fn init() {
    state::at_load(state::Callbacks {
        built: seed::seed,
        mapped: hooks::stdio::adopt_std,
    });
    fork_gate::at_load();
    namespace::at_load();
    restart::at_load();
    guard::at_load();
    seed::register_dump();
    path::set_loaded();
}

#[cfg(not(loom))]
#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;
