//! uvfs: the Linux VFS file lifecycle — fd tables, open-file objects,
//! deferred release — in user space, with the kernel's fast paths and their
//! pre-seed alternatives selectable at run time ([`FastPaths`]).
//!
//! Module map, by kernel concept:
//! - [`fdtable`]: `files_struct`/`fdtable`: allocation, install, lookup,
//!   close, dup, close_range, fork copy, exec sweep;
//! - [`file_table`]: `struct file`, its allocation, reference count and
//!   release (Linux's fs/file_table.c);
//! - [`pool`] (in [`file_table`], as Linux's `filp` cache is in
//!   fs/file_table.c): the type-stable file pool (`SLAB_TYPESAFE_BY_RCU`);
//! - [`task_work`]: the deferred-work queue (`callback_head` items; a
//!   file's deferred release is one);
//! - [`fs`]: the file-system interface (in inode numbers) and tmpfs;
//! - [`cred`]: `struct cred` and the permission rules (`generic_permission`,
//!   `may_delete`, set-ID bit handling for create, chmod, chown, write);
//! - [`icache`]: the inode cache (seed 002's lockless search);
//! - [`dcache`]: the dentry cache (positive and negative entries, LRU);
//! - [`locks`]: advisory locks (POSIX record locks, OFD locks, flock),
//!   Linux's fs/locks.c;
//! - [`namei`]: path walk, lockless with a locked fallback;
//! - [`vfs`]: superblocks, mounts, the namespace;
//! - [`stat`]: `struct stat`, `statx`, `linux_dirent64`;
//! - [`process`]: the syscall-level API;
//! - [`fastpaths`]: the A/B switches;
//! - [`errno`], [`uapi`]: Linux's numbers;
//! - on [`Process`]: `read_file`, `write_file`, `read_dir` (typed
//!   entries) and `open_file` ([`OpenFile`], a `std::io` stream), for Rust
//!   callers.
//!
//! # Getting started
//!
//! A [`Vfs`] is one machine's namespace (its root is a fresh tmpfs); a
//! [`Process`] is one thread of a process in it, and each Linux call is a
//! method of the same name, arguments and result: an fd or a count, or
//! the [`Errno`] Linux would set. [`FastPaths`] picks which of the
//! kernel's fast paths run (`seeds()`: all of them, `stock()`: none).
//!
//! ```
//! use uvfs::uapi::{O_CREAT, O_RDWR};
//! use uvfs::{Errno, FastPaths, Process, Vfs};
//!
//! let vfs = Vfs::new(FastPaths::seeds());
//! let mut p = Process::new(&vfs)?; // root, cwd "/", umask 022
//! p.mkdir("/srv", 0o755)?;
//! let fd = p.open("/srv/log", O_CREAT | O_RDWR, 0o644)?;
//! p.write(fd, b"started\n")?;
//! p.close(fd)?;
//! assert_eq!(p.read_file("/srv/log")?, b"started\n");
//! assert_eq!(p.rmdir("/srv"), Err(Errno::ENOTEMPTY));
//! # Ok::<(), Errno>(())
//! ```
//!
//! Each group of calls has a runnable example on one of its methods:
//! opening ([`Process::open`]), reading and writing ([`Process::pread`]),
//! attributes ([`Process::stat`]), names ([`Process::rename`]), FIFOs
//! ([`Process::mkfifo`]), the fd table and `fcntl` ([`Process::fcntl`]),
//! advisory locks ([`Process::fcntl_lock`]), `poll`
//! ([`Process::poll`]), copies ([`Process::copy_file_range`]), extended
//! attributes ([`Process::setxattr`]), `mmap` ([`Process::mmap_file`]),
//! mounts ([`Process::mount`]), identities ([`Process::set_cred`]),
//! interruptible sleeps ([`Process::set_sleep`]), fork and threads
//! ([`Process`]), the namespace's limits ([`Vfs`]), the switches
//! ([`FastPaths`]), errors ([`Errno`]) and the `std::io` layer
//! ([`OpenFile`]).
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod acl;
pub mod cred;
pub mod dcache;
pub mod errno;
pub mod fastpaths;
pub mod fdtable;
pub mod file_table;
mod fown;
pub mod fs;
pub mod icache;
pub mod locks;
mod mount;
pub mod namei;
pub mod nospec;
mod path_cache;
mod pipe;
mod primitive;
pub mod process;
mod reclaim;
pub mod select;
pub mod signal;
pub mod stat;
mod super_block;
pub mod task_work;
pub mod uapi;
pub mod vfs;
mod vfs_ops;

pub use errno::Errno;
pub use fastpaths::FastPaths;
pub use fdtable::{FdRef, FdTable, ReservedFd};
pub use file_table::pool;
pub use file_table::{File, FileOps, FileRef};
pub use locks::{Flock, LockStats};
pub use process::{FileType, OpenFile, Opening, Process};
pub use reclaim::cheap_pin_asymmetric;
pub use select::{PollFd, Waiter};
pub use signal::{Interrupted, LeaseBreak, LeaseBreaks, LeaseNotify, Signals, Sleep};
pub use stat::{Stat, Statx};
pub use vfs::{FsSysctls, Vfs, VfsBuilder};

/// The in-memory size of each object the VFS keeps per file, for the lab's
/// memory report: (name, bytes). Dentries also allocate their name
/// (`name.len()` bytes plus a box), tmpfs inodes their pages.
pub fn object_sizes() -> Vec<(&'static str, usize)> {
    vec![
        ("file object (struct file)", std::mem::size_of::<File>()),
        (
            "dentry (struct dentry, name apart)",
            std::mem::size_of::<dcache::Dentry>(),
        ),
        (
            "cached inode (inode cache node)",
            std::mem::size_of::<icache::Inode>(),
        ),
        (
            "tmpfs inode (its own tree, pages apart)",
            fs::tmpfs::inode_size(),
        ),
    ]
}

/// The README's Rust example, compiled and run as a doc-test so that it
/// keeps working when pasted into a `main`.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
