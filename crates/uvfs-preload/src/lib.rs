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
//! - `path`: the prefix; `route`: where a path goes, a pure function of
//!   the prefix, the directory and the path (fuzzed on its own);
//!   `fdmap`: the lock-free map from kernel fd numbers to uvfs fds;
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

mod conv;
mod dispatch;
mod fdmap;
mod fdops;
mod fork_gate;
mod guard;
mod hooks;
mod interpose;
mod namespace;
mod path;
mod refuse;
mod route;
mod seed;
mod state;
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
extern "C" fn init() {
    state::at_load(state::Callbacks {
        built: seed::seed,
        mapped: hooks::stdio::adopt_std,
    });
    fork_gate::at_load();
    namespace::at_load();
    seed::register_dump();
    path::set_loaded();
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;
