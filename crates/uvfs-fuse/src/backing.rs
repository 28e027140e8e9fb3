//! `uvfs mount --size` with FUSE passthrough: a private kernel tmpfs that
//! holds regular files' data and so the space limit.
//!
//! Passthrough reads, writes and maps a file on its backing file with no
//! request to the server, so the server cannot count those writes against
//! `--size`. The kernel can: the server makes a tmpfs of its own with the
//! new mount API (`fsopen("tmpfs")`, `fsconfig` `size=` and `nr_inodes=0`,
//! `fsmount`). The mount is *detached*: attached to no directory in any
//! namespace, reachable only through the fd `fsmount` returns (and the
//! files opened in it), gone when the last of those is closed. uvfs's
//! tmpfs is given that fd as its file store
//! ([`FileStore::Dir`](uvfs::fs::tmpfs::FileStore)): every regular file's
//! data lives in an unnamed (`O_TMPFILE`) file there from its first write,
//! and those files are the backing files passthrough registers. A write
//! past the limit, through passthrough or the server, then meets the
//! kernel's own tmpfs: the same short write, `ENOSPC` and `SIGBUS` as on a
//! `mount -t tmpfs -o size=`.
//!
//! `nr_inodes=0` (no inode limit) on the private tmpfs: uvfs keeps
//! `--nr-inodes` itself, and the private mount's one inode per file with
//! data must never run out first.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `FSOPEN_CLOEXEC`.
const FSOPEN_CLOEXEC: libc::c_long = 1;
/// `FSCONFIG_SET_STRING`.
const FSCONFIG_SET_STRING: libc::c_long = 1;
/// `FSCONFIG_CMD_CREATE`.
const FSCONFIG_CMD_CREATE: libc::c_long = 6;
/// `FSMOUNT_CLOEXEC`.
const FSMOUNT_CLOEXEC: libc::c_long = 1;
/// `MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV` (no exec restriction: a binary
/// on the mount is mapped from its backing file).
const MOUNT_ATTRS: libc::c_long = 0x2 | 0x4;

/// A new fd from a syscall's result, or the error it set.
fn fd_of(r: libc::c_long, what: &str) -> io::Result<OwnedFd> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    // SAFETY: the syscall returned a new fd, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(r as i32) })
}

/// `fsconfig(fd, FSCONFIG_SET_STRING, key, value)`.
fn set(fsfd: &OwnedFd, key: &std::ffi::CStr, value: &str) -> io::Result<()> {
    let v = std::ffi::CString::new(value).map_err(io::Error::other)?;
    // SAFETY: `key` and `v` are NUL-terminated and alive across the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fsfd.as_raw_fd(),
            FSCONFIG_SET_STRING,
            key.as_ptr(),
            v.as_ptr(),
            0,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("fsconfig({}={value}): {e}", key.to_string_lossy()),
        ));
    }
    Ok(())
}

/// A detached tmpfs mount of `size` bytes (rounded up to pages by the
/// kernel, as `mount -o size=`) and no inode limit: its root directory as
/// an fd. Needs `CAP_SYS_ADMIN` and Linux 5.2's mount API; the error names
/// the call that failed.
pub fn private_tmpfs(size: u64) -> io::Result<OwnedFd> {
    // SAFETY: a static C string; no other pointers.
    let fsfd = fd_of(
        unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) },
        "fsopen(\"tmpfs\")",
    )?;
    set(&fsfd, c"size", &size.to_string())?;
    set(&fsfd, c"nr_inodes", "0")?;
    // SAFETY: no pointers are read (key and value are null for a command).
    let r = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fsfd.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_char>(),
            0,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("fsconfig(create): {e}")));
    }
    // SAFETY: no pointers.
    fd_of(
        unsafe {
            libc::syscall(
                libc::SYS_fsmount,
                fsfd.as_raw_fd(),
                FSMOUNT_CLOEXEC,
                MOUNT_ATTRS,
            )
        },
        "fsmount",
    )
}
