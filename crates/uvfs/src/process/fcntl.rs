//! The `fcntl` commands beyond the fd table's (Linux's `fs/fcntl.c`, with
//! the lease half of `fs/locks.c` and the seal half of `mm/memfd.c`): the
//! checks `F_SETFL` makes before changing the status flags, the signal
//! owner (`F_SETOWN`, `F_SETOWN_EX`, `F_SETSIG`), leases and seals.
//!
//! # What Linux checks, in order
//!
//! - `F_SETFL`: adding `O_NOATIME` needs the caller to own the inode or
//!   hold `CAP_FOWNER` (`EPERM`); then `O_DIRECT` needs a file that can do
//!   direct I/O (`EINVAL`; tmpfs: regular files only).
//! - `F_SETOWN`: `INT_MIN` cannot be negated (`EINVAL`); a negative id is
//!   a process group; a non-zero id must name a live process or group
//!   (`ESRCH`); 0 clears the owner. `F_SETOWN_EX`: the type first
//!   (`EINVAL`), then the id (`ESRCH`).
//! - `F_SETSIG`: 0 to 64 (`EINVAL` otherwise).
//! - `F_SETLEASE`: a lease type other than read, write or unlock is
//!   `EINVAL` before anything else; then the caller must own the file or
//!   hold `CAP_LEASE` (`EACCES`), the file must be regular (`EINVAL`);
//!   removing a lease that is not there is `EAGAIN`; then the grant rules
//!   (`EAGAIN` on a conflicting open or lease: see `locks/lease.rs`).
//! - `F_ADD_SEALS`: the fd must be open for writing (`EPERM`), before the
//!   seal bits are checked (`EINVAL`), before the file is asked whether it
//!   takes seals at all (`EINVAL`) and whether it is sealed against more
//!   seals (`EPERM`). A tmpfs file not made by `memfd_create` carries
//!   `F_SEAL_SEAL` from its creation, so `F_GET_SEALS` reports 1 on it and
//!   `F_ADD_SEALS` is `EPERM`; a directory has no seals (`EINVAL`).

use crate::cred::{self, Cap, Cred};
use crate::errno::Errno;
use crate::file_table::{FMODE_CAN_ODIRECT, FMODE_COUNTED, FMODE_WRITE, FOwner, File};
use crate::fs::{S_IFDIR, S_IFMT, S_IFREG};
use crate::locks::{Holder, OwnerPtr};
use crate::uapi::*;

/// `S_IFIFO`: pipes use `O_DIRECT` for packet mode, whatever the file
/// system says about direct I/O.
const S_IFIFO: u32 = 0o010000;

/// The checks `setfl` makes before it changes the status flags.
pub(super) fn setfl(cred: &Cred, file: &File, arg: i32) -> Result<(), Errno> {
    let attr = file.dentry().and_then(|d| d.inode_perm()).map(|p| p.attr());
    if arg & O_NOATIME != 0
        && file.flags() & O_NOATIME == 0
        && attr.is_some_and(|a| !cred::inode_owner_or_capable(cred, &a))
    {
        return Err(Errno::EPERM);
    }
    // A file made by `open_with` has no inode here: its owner decides what
    // it supports, and nothing is refused.
    if arg & O_DIRECT != 0
        && file.mode() & FMODE_CAN_ODIRECT == 0
        && attr.is_some_and(|a| a.mode & S_IFMT != S_IFIFO)
    {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Whether a host process (`F_OWNER_TID`, `F_OWNER_PID`) or process group
/// (`F_OWNER_PGRP`) with id `pid` exists (`find_vpid` in the caller's
/// namespace).
fn pid_exists(kind: i32, pid: i32) -> bool {
    if kind == F_OWNER_PGRP {
        // SAFETY: signal 0 only checks that the group exists; nothing is
        // sent.
        let r = unsafe { libc::kill(-pid, 0) };
        return r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
    }
    // Threads are reachable by id under /proc even though it lists only
    // processes.
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether a task of the owner's kind has the id now (`pid_task`): a
/// thread for `F_OWNER_TID`, a process (a thread-group leader) for
/// `F_OWNER_PID`, a member for `F_OWNER_PGRP`. A lease names the calling
/// thread as a process, as Linux does: from a thread other than the main
/// one that is no process, so `F_GETOWN` reads 0 and a break signals
/// nobody.
pub(crate) fn owner_alive(kind: i32, pid: i32) -> bool {
    if pid <= 0 || kind != F_OWNER_PID {
        return pid > 0 && pid_exists(kind, pid);
    }
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Tgid:"))
            .is_some_and(|t| t.trim() == pid.to_string())
    })
}

/// `F_GETOWN`: the owner, a process group as a negative number; 0 when
/// no task of its kind has the id any more (Linux's `pid_task` check).
pub(super) fn getown(file: &File) -> i32 {
    let o = file.owner();
    if !owner_alive(o.kind, o.pid) {
        return 0;
    }
    if o.kind == F_OWNER_PGRP {
        -o.pid
    } else {
        o.pid
    }
}

fn set_owner(file: &File, kind: i32, pid: i32) -> Result<i32, Errno> {
    if pid != 0 && (pid < 0 || !pid_exists(kind, pid)) {
        return Err(Errno::ESRCH);
    }
    file.update_owner(|o| FOwner { kind, pid, ..o });
    Ok(0)
}

/// `F_SETOWN`.
pub(super) fn setown(file: &File, who: i32) -> Result<i32, Errno> {
    if who == i32::MIN {
        return Err(Errno::EINVAL);
    }
    if who < 0 {
        set_owner(file, F_OWNER_PGRP, -who)
    } else {
        set_owner(file, F_OWNER_PID, who)
    }
}

/// `F_SETOWN_EX`.
pub(super) fn setown_ex(file: &File, owner: FOwnerEx) -> Result<(), Errno> {
    if !matches!(owner.kind, F_OWNER_TID | F_OWNER_PID | F_OWNER_PGRP) {
        return Err(Errno::EINVAL);
    }
    set_owner(file, owner.kind, owner.pid).map(|_| ())
}

/// `F_GETOWN_EX`.
pub(super) fn getown_ex(file: &File) -> FOwnerEx {
    let o = file.owner();
    FOwnerEx {
        kind: o.kind,
        pid: o.pid,
    }
}

/// `F_SETSIG`.
pub(super) fn setsig(file: &File, sig: i32) -> Result<i32, Errno> {
    if !(0..=NSIG).contains(&sig) {
        return Err(Errno::EINVAL);
    }
    file.update_owner(|o| FOwner { sig, ..o });
    Ok(0)
}

/// `F_SETLEASE` (`fcntl_setlease`, `generic_setlease`): the checks above,
/// then the lease rules of [`crate::locks`]'s lease module. A new or
/// changed lease makes the caller's process the file's owner if it had
/// none (`lease_setup`: the calling thread's id, typed as a process, see
/// [`owner_alive`]); removing one clears the owner and the signal.
pub(super) fn setlease(
    cred: &Cred,
    pool: &crate::file_table::pool::FilePool,
    file: &File,
    fd: i32,
    arg: i32,
) -> Result<i32, Errno> {
    if !matches!(arg, F_RDLCK | F_WRLCK | F_UNLCK) {
        return Err(Errno::EINVAL);
    }
    let d = file.dentry().ok_or(Errno::EINVAL)?;
    let attr = d.inode_perm().map(|p| p.attr()).ok_or(Errno::EINVAL)?;
    if attr.uid != cred.fsuid && !cred.capable(Cap::Lease) {
        return Err(Errno::EACCES);
    }
    if attr.mode & S_IFMT != S_IFREG {
        return Err(Errno::EINVAL);
    }
    let inode = d.inode().ok_or(Errno::EINVAL)?;
    let ctx = match (arg, inode.lock_context()) {
        (F_UNLCK, None) => return Err(Errno::EAGAIN),
        (F_UNLCK, Some(c)) => c,
        _ => inode.lock_context_or_create()?,
    };
    let m = file.mode();
    let holder = Holder {
        key: file.lock_key(),
        file: Some(OwnerPtr::new(file.owner_cell())),
        fd,
        counted: (m & FMODE_COUNTED != 0).then_some(m & FMODE_WRITE != 0),
    };
    // The opens `FastPaths::open_count_lazy` counted in their own files.
    let addr = std::ptr::from_ref(inode) as usize;
    ctx.setlease(&inode.opens, &|| pool.lazy_opens(addr), holder, arg)?;
    if arg != F_UNLCK {
        // `task_pid(current)`, typed as a process: the calling thread.
        // SAFETY: no arguments, no effect.
        let me = unsafe { libc::gettid() };
        file.update_owner(|o| {
            if o.pid == 0 {
                FOwner {
                    kind: F_OWNER_PID,
                    pid: me,
                    sig: o.sig,
                }
            } else {
                o
            }
        });
    }
    Ok(0)
}

/// `F_GETLEASE`: the file's lease type (during a break, the type it is
/// being broken to), `F_UNLCK` for none, on any file.
pub(super) fn getlease(file: &File) -> i32 {
    file.lock_context()
        .map_or(F_UNLCK, |c| c.getlease(file.lock_key()))
}

/// `F_NOTIFY` (`fcntl_dirnotify`): an argument without events removes the
/// fd's notification (always absent here) and succeeds on any fd, before
/// the directory check (host: 0 on a regular file); a request for events
/// on a non-directory is `ENOTDIR`. Notifications themselves (signals to
/// the fd's owner on a change in the directory) are not built: a request
/// for events on a directory is `EINVAL`, Linux's answer when dnotify is
/// off (`fs.dir-notify-enable` 0, or a kernel without `CONFIG_DNOTIFY`).
pub(super) fn notify(file: &File, arg: u64) -> Result<i32, Errno> {
    if arg & !DN_MULTISHOT == 0 {
        return Ok(0);
    }
    let mode = file
        .dentry()
        .and_then(|d| d.inode_perm())
        .map(|p| p.attr().mode)
        .ok_or(Errno::ENOTDIR)?;
    if mode & S_IFMT != S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    Err(Errno::EINVAL)
}

/// `F_GET_SEALS`.
pub(super) fn get_seals(file: &File) -> Result<i32, Errno> {
    let d = file.dentry().ok_or(Errno::EINVAL)?;
    d.sb().fs.get_seals_node(d.node()).map(|s| s as i32)
}

/// `F_ADD_SEALS`.
pub(super) fn add_seals(file: &File, seals: u32) -> Result<i32, Errno> {
    if file.mode() & FMODE_WRITE == 0 {
        return Err(Errno::EPERM);
    }
    if seals & !F_ALL_SEALS != 0 {
        return Err(Errno::EINVAL);
    }
    let d = file.dentry().ok_or(Errno::EINVAL)?;
    let _g = d.lock_inode();
    if d.sb().fs.get_seals_node(d.node())? & F_SEAL_SEAL != 0 {
        return Err(Errno::EPERM);
    }
    d.sb().fs.add_seals(d.ino(), seals).map(|_| 0)
}
