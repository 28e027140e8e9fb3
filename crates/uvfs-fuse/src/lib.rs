//! `uvfs mount`: a FUSE front end that serves one uvfs [`Vfs`](uvfs::Vfs)
//! to every process on the machine, through the kernel (page cache, mmap
//! and exec included). `docs/fuse.md` has the user's side: how to mount,
//! the options, the caching choices and what FUSE changes.
//!
//! # Why `fuser`
//!
//! [`fuser`] (0.18) and `fuse-backend-rs` are the two maintained Rust FUSE
//! crates. fuser is chosen because it is pure Rust down to the mount: as
//! root it mounts with mount(2) itself (no libfuse, no fusermount); since
//! 0.17/0.18 its session runs several worker threads, each with its own
//! `/dev/fuse` fd (`Config::n_threads`, `clone_fd`), which is what lets
//! uvfs's lockless paths run concurrently; and it exposes FUSE passthrough
//! for later. fuse-backend-rs aims at virtio-fs (serving a guest VM's
//! requests from a vhost-user daemon); its `/dev/fuse` side is secondary.
//!
//! # The mapping (libfuse's passthrough_ll, onto uvfs)
//!
//! - The server is one uvfs [`Process`](uvfs::Process); each request runs
//!   on a handle of it made by `Process::new_thread` (a small pool), so the
//!   fd table is shared and requests run concurrently.
//! - Every inode the kernel looked up is an `O_PATH | O_NOFOLLOW` fd in
//!   that table with the kernel's lookup count, keyed by uvfs's inode
//!   number (one file system, so (st_dev, st_ino) is the inode number); the
//!   FUSE node id is the inode number, the root's is 1. `forget` (and
//!   `batch_forget`, split by fuser) drops counts; the last closes the fd.
//!   An unlinked file stays reachable through its handle, so a file
//!   unlinked while open stays readable with no hidden rename.
//! - File handles are uvfs fds opened for the request's flags with
//!   [`Process::reopen`](uvfs::Process::reopen) on the node's `O_PATH` fd
//!   (open of `/proc/self/fd/N` in passthrough_ll), with the open's
//!   permission checks; `create` is `openat(O_CREAT)` in the parent's fd.
//! - readdir offsets are the `d_off` cookies uvfs's getdents64 gives; the
//!   handle is `lseek`ed to the offset the kernel asks for.
//! - Every request runs with its caller's fsuid and fsgid (sent by the
//!   kernel) and supplementary groups (read from `/proc/<pid>/status`, see
//!   [`creds`]) as the worker's credentials (`Process::set_cred`), so uvfs's
//!   permission rules decide what reaches it. The mount has `allow_other`
//!   and `default_permissions`: the kernel also checks permissions itself
//!   from the attributes it caches, as it does for tmpfs, so walks through
//!   cached names check search permission too.
//! - Attributes and names change only through `*at` calls on the handles:
//!   `fchmodat`, `fchownat`, `utimensat` with `AT_EMPTY_PATH`; truncate
//!   without a file handle reopens the node for writing (the write
//!   permission check) and uses `ftruncate`.
//!
//! # Where the kernel's checks decide instead of uvfs's
//!
//! - **Opens by handle.** An open reaches the server as "open this inode":
//!   the file's own permission is checked as the caller, the path's search
//!   permission is not (as in passthrough_ll).
//! - **exec** (`__FMODE_EXEC` in the open flags): checked for execute
//!   permission as the caller, then opened for reading as root (Linux needs
//!   no read permission to execute). The kernel itself refuses to execute
//!   a regular file with no execute bit at all.
//! - **link(2) by a non-root caller**: uvfs's `linkat(AT_EMPTY_PATH)` needs
//!   `CAP_DAC_READ_SEARCH`, so the server checks the caller's write and
//!   search permission on the new directory, then links as root
//!   (`fs.protected_hardlinks` is not applied).
//! - **File locks** (POSIX and flock) are the kernel's, local to the mount
//!   (no lock requests are negotiated).
//! - **Writes**: the kernel computes every write's offset (`O_APPEND`
//!   included) from the size it caches; the server writes at that offset.
//!   Set-ID bits are the server's (`FUSE_HANDLE_KILLPRIV_V2`): uvfs's
//!   write, truncate and chown, run as the caller, clear them.
//! - **xattrs** reach the library's `*xattrat(fd, "", AT_EMPTY_PATH)` on
//!   the node's handle, as the caller. POSIX ACLs too; with
//!   `FUSE_POSIX_ACL` (and `FUSE_DONT_MASK`: the server applies the
//!   caller's umask, uvfs skips it under a default ACL) the kernel decides
//!   access with them (docs/fuse.md).
//! - **FIFOs**: the server makes the node (mknod); their reads and
//!   writes are the kernel's own pipe, never sent to the server.
#![warn(missing_docs)]

pub mod backing;
pub mod creds;
pub mod mount;
pub mod passthrough;
pub mod run;
pub mod server;
pub mod tree;

pub use server::UvfsFuse;
