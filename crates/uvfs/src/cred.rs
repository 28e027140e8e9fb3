//! Process credentials (`struct cred`) and the kernel's file-permission
//! rules, as pure functions of a [`Cred`] and inode [`Attr`]ibutes.
//!
//! Everything here is decided from the caller's credentials and the
//! attributes the VFS has read; nothing is stored. The path walk and the
//! path syscalls call these functions at the points where Linux calls the
//! functions of the same name:
//!
//! | here | Linux |
//! | --- | --- |
//! | [`permission`], [`permission_decided`] | `generic_permission` (with `acl_permission_check`) |
//! | [`may_create`], [`may_delete`], [`check_sticky`] | `may_create`, `may_delete` (permission half), `check_sticky` |
//! | [`prepare_mode`], [`mode_strip_sgid`], [`inode_init_owner`] | `vfs_prepare_mode`, `mode_strip_sgid`, `inode_init_owner` |
//! | [`chmod_mode`] | `chmod_common` → `notify_change` → `setattr_prepare`/`setattr_copy` |
//! | [`chown_check`] | `chown_common` → `notify_change` → `setattr_prepare` (`chown_ok`, `chgrp_ok`) |
//! | [`remove_privs_on_write`] | `file_remove_privs` / `dentry_needs_remove_privs` (write, truncate) |
//! | [`utimes_check`], [`utimens_explicit`] | `vfs_utimes` → `notify_change` (`may_setattr`, `setattr_prepare`) |
//! | [`Cred::for_access`] | `access_override_creds` (access, faccessat without `AT_EACCESS`) |
//!
//! # Capabilities
//!
//! A [`Cred`] carries no capability sets. It models a process without file
//! capabilities, where the rule of `cap_task_fix_setuid` applies: the
//! file-system capabilities (`CAP_CHOWN`, `CAP_DAC_OVERRIDE`,
//! `CAP_DAC_READ_SEARCH`, `CAP_FOWNER`, `CAP_FSETID`, …) are in the
//! effective set exactly when the fsuid is 0 — raised from the permitted set
//! when the fsuid becomes 0 and dropped when it leaves 0. So
//! [`Cred::capable`] is `fsuid == 0` for every [`Cap`]. The kernel's
//! `capable_wrt_inode_uidgid` additionally requires the inode's owner and
//! group to be mapped in the caller's user namespace; there is one namespace
//! here, so that always holds.
//!
//! # Not modelled
//!
//! Read-only mounts (`EROFS`), immutable and append-only inodes (`EPERM`),
//! `noexec` mounts, LSMs, file capabilities
//! (`security.capability`, `ATTR_KILL_PRIV`) and idmapped mounts.

use crate::errno::Errno;
use crate::fs::{Attr, S_IFDIR, S_IFMT, S_IFREG, S_ISGID, S_ISUID, S_ISVTX};

/// Permission mask bit: execute a file, or search a directory.
pub const MAY_EXEC: u32 = 1;
/// Permission mask bit: write.
pub const MAY_WRITE: u32 = 2;
/// Permission mask bit: read.
pub const MAY_READ: u32 = 4;

/// `utimensat`'s `tv_nsec` value for "set to the current time".
pub const UTIME_NOW: i64 = (1 << 30) - 1;
/// `utimensat`'s `tv_nsec` value for "leave unchanged".
pub const UTIME_OMIT: i64 = (1 << 30) - 2;

/// Group execute.
const S_IXGRP: u32 = 0o010;
/// Any execute bit.
const S_IXUGO: u32 = 0o111;
/// Every permission and set-ID/sticky bit.
const S_IALLUGO: u32 = 0o7777;

/// The capabilities the file-permission rules consult.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cap {
    /// `CAP_DAC_OVERRIDE`: bypass read, write and execute checks.
    DacOverride,
    /// `CAP_DAC_READ_SEARCH`: bypass read checks, and search on directories.
    DacReadSearch,
    /// `CAP_FOWNER`: act as the owner (chmod, utimes, sticky directories).
    Fowner,
    /// `CAP_FSETID`: keep set-ID bits where others would lose them.
    Fsetid,
    /// `CAP_CHOWN`: change owner and group arbitrarily.
    Chown,
    /// `CAP_SYS_ADMIN`: mount file systems; `trusted.*` extended
    /// attributes.
    SysAdmin,
    /// `CAP_LEASE`: take leases on files the caller does not own.
    Lease,
    /// `CAP_MKNOD`: make device nodes (one of the file-system
    /// capabilities, `CAP_FS_MASK`: it follows the fsuid).
    Mknod,
    /// `CAP_SYS_CHROOT`: `chroot`.
    SysChroot,
}

/// A task's credentials: real, effective and file-system ids, and the
/// supplementary groups. Permission checks use the fs ids
/// (`current_fsuid()`, `current_fsgid()`); [`Cred::for_access`] derives the
/// credentials access(2) checks with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cred {
    /// Real user id.
    pub uid: u32,
    /// Real group id.
    pub gid: u32,
    /// Effective user id.
    pub euid: u32,
    /// Effective group id.
    pub egid: u32,
    /// File-system user id: the owner of new files and the id permission
    /// checks compare with.
    pub fsuid: u32,
    /// File-system group id: the group of new files (outside set-group-ID
    /// directories) and the primary group of permission checks.
    pub fsgid: u32,
    /// Supplementary groups (`getgroups`).
    pub groups: Vec<u32>,
}

impl Cred {
    /// The superuser: every id 0, no supplementary groups, every capability.
    pub fn root() -> Cred {
        Cred::user(0, 0, Vec::new())
    }

    /// A user whose real, effective and fs ids are all `uid`/`gid`, with the
    /// given supplementary groups.
    pub fn user(uid: u32, gid: u32, groups: Vec<u32>) -> Cred {
        Cred {
            uid,
            gid,
            euid: uid,
            egid: gid,
            fsuid: uid,
            fsgid: gid,
            groups,
        }
    }

    /// Whether the task holds `cap` for file-system checks: iff its fsuid is
    /// 0 (see the module docs).
    pub fn capable(&self, cap: Cap) -> bool {
        match cap {
            Cap::DacOverride
            | Cap::DacReadSearch
            | Cap::Fowner
            | Cap::Fsetid
            | Cap::Chown
            | Cap::SysAdmin
            | Cap::Mknod => self.fsuid == 0,
            // Not file-system capabilities: they follow the effective uid
            // (dropped when the euid leaves 0).
            Cap::Lease | Cap::SysChroot => self.euid == 0,
        }
    }

    /// Linux's `in_group_p`: `gid` is the fsgid or a supplementary group.
    pub fn in_group_p(&self, gid: u32) -> bool {
        self.fsgid == gid || self.groups.contains(&gid)
    }

    /// The credentials access(2) and faccessat(2) check with. With
    /// `AT_EACCESS` (`eaccess`), the task's own. Otherwise Linux's
    /// `access_override_creds`: the fsuid/fsgid become the real uid/gid, and
    /// the capabilities are cleared if the real uid is not 0 and set to the
    /// permitted set if it is. Since capabilities here follow the fsuid, and
    /// a task with real uid 0 keeps its permitted set (the kernel only clears
    /// it once no uid is 0), that is the same as recomputing them from the
    /// new fsuid.
    pub fn for_access(&self, eaccess: bool) -> Cred {
        let mut c = self.clone();
        if !eaccess {
            c.fsuid = self.uid;
            c.fsgid = self.gid;
        }
        c
    }
}

/// The permission-bit check alone (`acl_permission_check` without ACLs):
/// the owner class if the fsuid owns the inode, else the group class if the
/// inode's group is one of the caller's, else the other class. (Linux only
/// consults group membership when the group and other bits differ in the
/// requested bits; the outcome is the same.)
fn mode_bits_allow(cred: &Cred, attr: &Attr, mask: u32) -> bool {
    let mode = attr.mode;
    let class = if attr.uid == cred.fsuid {
        mode >> 6
    } else if cred.in_group_p(attr.gid) {
        mode >> 3
    } else {
        mode
    };
    mask & !class & 7 == 0
}

/// Linux's `generic_permission` (`mask`: [`MAY_READ`] | [`MAY_WRITE`] |
/// [`MAY_EXEC`]; other bits are ignored; 0 always succeeds). `EACCES` when
/// denied.
///
/// The permission bits decide first (owner class, else group class, else
/// other). When they deny, capabilities may override:
/// - on a directory, `CAP_DAC_READ_SEARCH` grants anything that does not
///   include write (read and search), and `CAP_DAC_OVERRIDE` grants
///   everything;
/// - on anything else, `CAP_DAC_READ_SEARCH` grants a request for read
///   alone, and `CAP_DAC_OVERRIDE` grants any request without execute, and
///   one with execute only if at least one of the three execute bits is
///   set.
pub fn permission(cred: &Cred, attr: &Attr, mask: u32) -> Result<(), Errno> {
    permission_decided(cred, attr, None, mask)
}

/// [`permission`] for an inode with an access ACL that has already decided
/// the permission-bit step (`decided`: the ACL's verdict where Linux's
/// `acl_permission_check` lets the ACL decide, `None` where the mode bits
/// do); the capability overrides are the same. With `None`, exactly
/// [`permission`]. The VFS reads the ACL and asks it (the `acl` module),
/// so that this module, below the file systems, knows nothing of ACLs.
pub fn permission_decided(
    cred: &Cred,
    attr: &Attr,
    decided: Option<bool>,
    mask: u32,
) -> Result<(), Errno> {
    let mask = mask & (MAY_READ | MAY_WRITE | MAY_EXEC);
    let allowed = decided.unwrap_or_else(|| mode_bits_allow(cred, attr, mask));
    if allowed {
        return Ok(());
    }
    if attr.is_dir() {
        if mask & MAY_WRITE == 0 && cred.capable(Cap::DacReadSearch) {
            return Ok(());
        }
        if cred.capable(Cap::DacOverride) {
            return Ok(());
        }
        return Err(Errno::EACCES);
    }
    if mask == MAY_READ && cred.capable(Cap::DacReadSearch) {
        return Ok(());
    }
    if (mask & MAY_EXEC == 0 || attr.mode & S_IXUGO != 0) && cred.capable(Cap::DacOverride) {
        return Ok(());
    }
    Err(Errno::EACCES)
}

/// Linux's `inode_owner_or_capable`: the fsuid owns the inode, or the
/// caller has `CAP_FOWNER`.
pub fn inode_owner_or_capable(cred: &Cred, attr: &Attr) -> bool {
    attr.uid == cred.fsuid || cred.capable(Cap::Fowner)
}

/// Linux's `in_group_or_capable`: `gid` is one of the caller's groups, or
/// the caller has `CAP_FSETID`. Decides whether a set-group-ID bit survives.
pub fn in_group_or_capable(cred: &Cred, gid: u32) -> bool {
    cred.in_group_p(gid) || cred.capable(Cap::Fsetid)
}

/// Linux's `check_sticky`: whether the sticky bit of `dir` forbids this
/// caller to remove or rename `inode` out of it. True when `dir` has
/// `S_ISVTX`, the fsuid owns neither `inode` nor `dir`, and the caller lacks
/// `CAP_FOWNER`.
pub fn check_sticky(cred: &Cred, dir: &Attr, inode: &Attr) -> bool {
    dir.mode & S_ISVTX != 0
        && inode.uid != cred.fsuid
        && dir.uid != cred.fsuid
        && !cred.capable(Cap::Fowner)
}

/// The permission half of Linux's `may_delete` (unlink, rmdir, and both
/// ends of rename): write and search on `dir` ([`permission`]'s `EACCES`),
/// then the sticky-bit rule ([`check_sticky`], `EPERM`). The caller checks
/// the rest in Linux's order: a negative victim is `ENOENT` before this;
/// `ENOTDIR`/`EISDIR`/`EBUSY` for the victim's type come after.
pub fn may_delete(cred: &Cred, dir: &Attr, victim: &Attr) -> Result<(), Errno> {
    permission(cred, dir, MAY_WRITE | MAY_EXEC)?;
    if check_sticky(cred, dir, victim) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// The permission half of Linux's `may_create` (create, mkdir, mknod,
/// symlink, link, rename target): write and search on `dir`. The caller
/// checks `EEXIST` (existing name) and `ENOENT` (dead directory) first.
pub fn may_create(cred: &Cred, dir: &Attr) -> Result<(), Errno> {
    permission(cred, dir, MAY_WRITE | MAY_EXEC)
}

/// Linux's `mode_strip_sgid`: a new non-directory in a set-group-ID
/// directory whose requested mode has both `S_ISGID` and `S_IXGRP` loses
/// `S_ISGID` unless the caller is in the directory's group (the group the
/// file will get) or has `CAP_FSETID`. Every other mode is returned as is.
/// `mode` must carry its type bits (a directory is never stripped).
pub fn mode_strip_sgid(cred: &Cred, dir: &Attr, mode: u32) -> u32 {
    if mode & (S_ISGID | S_IXGRP) != S_ISGID | S_IXGRP {
        return mode;
    }
    if mode & S_IFMT == S_IFDIR || dir.mode & S_ISGID == 0 {
        return mode;
    }
    if in_group_or_capable(cred, dir.gid) {
        return mode;
    }
    mode & !S_ISGID
}

/// Linux's `vfs_prepare_mode` for a new inode of `mode` (type bits and the
/// mode argument of open/creat/mknod/mkdir) in `dir` under `umask`: first
/// [`mode_strip_sgid`] on the requested mode, *then* the umask, then the
/// bits the call may set: for a directory (mkdir) `0o1777` — mkdir never
/// sets `S_ISUID`/`S_ISGID` itself — for anything else `0o7777`. Returns
/// type | permission bits. (Symlinks do not go through this: they are
/// always `0o777`.)
///
/// The order matters: with umask `0o010`, open(`O_CREAT`, `0o2770`) by a
/// non-member in a set-group-ID directory is stripped (the requested mode
/// had `S_IXGRP`) and yields `0o760`, where stripping after the umask would
/// keep `0o2760`.
///
/// Linux skips the umask here on file systems with POSIX ACLs and applies
/// it in the file system instead (`posix_acl_create`, when there is no
/// default ACL), still after the strip. The VFS's `new_inode` does the
/// same: under a directory with a default ACL it passes a umask of 0 and
/// masks the mode with the ACL (the `acl` module's `create_masq`).
pub fn prepare_mode(cred: &Cred, dir: &Attr, mode: u32, umask: u32) -> u32 {
    let ty = mode & S_IFMT;
    let allowed = if ty == S_IFDIR { 0o1777 } else { S_IALLUGO };
    let m = mode_strip_sgid(cred, dir, mode) & !(umask & 0o777);
    ty | (m & allowed)
}

/// Linux's `inode_init_owner`, with [`mode_strip_sgid`]: the mode, owner
/// and group of a new inode created by `cred` in `dir`, from `mode` (type
/// bits included).
///
/// - The owner is the fsuid.
/// - In a set-group-ID directory the group is the directory's, and a new
///   directory gets `S_ISGID` too; elsewhere the group is the fsgid.
/// - `S_ISGID` is stripped as [`mode_strip_sgid`] says.
///
/// The caller passes the mode with the umask already applied, best the
/// result of [`prepare_mode`] (which strips before the umask, as Linux
/// does; stripping again here is then a no-op). A caller that applies the
/// umask itself and calls this directly strips after the umask, which
/// differs from Linux only when the umask removes `S_IXGRP` from a
/// set-group-ID request.
///
/// Division of labour with tmpfs: `make_node` and `tmpfile` in
/// [`crate::fs::tmpfs`] apply the set-group-ID directory themselves (gid
/// from the directory, `S_ISGID` on new directories), so passing them this
/// function's gid and mode gives the same inode as passing the fsgid; they
/// never strip `S_ISGID`, which is this side's job.
pub fn inode_init_owner(cred: &Cred, dir: &Attr, mode: u32) -> (u32, u32, u32) {
    let mut mode = mode_strip_sgid(cred, dir, mode);
    let gid = if dir.mode & S_ISGID != 0 {
        if mode & S_IFMT == S_IFDIR {
            mode |= S_ISGID;
        }
        dir.gid
    } else {
        cred.fsgid
    };
    (mode, cred.fsuid, gid)
}

/// chmod/fchmod/fchmodat: the mode to store for `new_mode` (whose bits
/// outside `0o7777` are ignored), or `EPERM` unless the fsuid owns the
/// inode or the caller has `CAP_FOWNER` (`inode_owner_or_capable`). The
/// type bits are kept, and `S_ISGID` is dropped when the caller is neither
/// in the inode's group nor has `CAP_FSETID` (`setattr_prepare` and
/// `setattr_copy`), on directories too. chmod never fails with `EACCES`:
/// only ownership matters.
pub fn chmod_mode(cred: &Cred, attr: &Attr, new_mode: u32) -> Result<u32, Errno> {
    if !inode_owner_or_capable(cred, attr) {
        return Err(Errno::EPERM);
    }
    let mut mode = (attr.mode & !S_IALLUGO) | (new_mode & S_IALLUGO);
    if !in_group_or_capable(cred, attr.gid) {
        mode &= !S_ISGID;
    }
    Ok(mode)
}

/// What a permitted chown does, from [`chown_check`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChownEffect {
    /// The new owner, if it is set (even to the current owner).
    pub uid: Option<u32>,
    /// The new group, if it is set (even to the current group).
    pub gid: Option<u32>,
    /// The set-ID bits (`S_ISUID`/`S_ISGID`) to clear: only bits the inode
    /// has, so 0 means the mode is unchanged.
    pub clear: u32,
}

impl ChownEffect {
    /// The inode's new mode, if the chown changes it.
    pub fn new_mode(&self, attr: &Attr) -> Option<u32> {
        (self.clear != 0).then_some(attr.mode & !self.clear)
    }
}

/// chown/fchown/lchown/fchownat: whether `cred` may set the owner to `uid`
/// and the group to `gid` (`None`, or `Some(u32::MAX)` — the syscall's -1 —
/// leaves it), and what else changes. `EPERM` when denied; Linux never
/// answers `EACCES` here.
///
/// Rules (`chown_ok`, `chgrp_ok`, `setattr_prepare`):
/// - a new owner needs `CAP_CHOWN`, unless it equals the current owner and
///   the fsuid is that owner;
/// - a new group needs `CAP_CHOWN`, unless the fsuid owns the inode and the
///   group is the current one or one of the caller's groups.
///
/// On anything but a directory, every chown — also chown(-1, -1) — asks to
/// kill `S_ISUID` and, when `S_ISGID` is set, to kill it too if `S_IXGRP` is
/// set or the caller is neither in the inode's group nor has `CAP_FSETID`
/// (`setattr_should_drop_sgid`). This applies to root as well: chown as
/// root of a set-user-ID file clears `S_ISUID`. Killing a bit the inode has
/// turns the chown into a mode change, which must pass chmod's ownership
/// test: so chown(-1, -1) by a non-owner without `CAP_FOWNER` succeeds on a
/// file without set-ID bits (it only updates ctime) but fails with `EPERM`
/// on one whose set-ID bits it would clear. A mode change also drops
/// `S_ISGID` if the caller is neither in the (new) group nor has
/// `CAP_FSETID`. Directories keep their set-ID bits.
///
/// Whatever the outcome, Linux sets ctime on success even when nothing else
/// changes (the caller's business).
pub fn chown_check(
    cred: &Cred,
    attr: &Attr,
    uid: Option<u32>,
    gid: Option<u32>,
) -> Result<ChownEffect, Errno> {
    let uid = uid.filter(|&u| u != u32::MAX);
    let gid = gid.filter(|&g| g != u32::MAX);
    let owner = attr.uid == cred.fsuid;
    if let Some(u) = uid {
        let ok = (owner && u == attr.uid) || cred.capable(Cap::Chown);
        if !ok {
            return Err(Errno::EPERM);
        }
    }
    if let Some(g) = gid {
        let ok = (owner && (g == attr.gid || cred.in_group_p(g))) || cred.capable(Cap::Chown);
        if !ok {
            return Err(Errno::EPERM);
        }
    }
    let mut clear = 0;
    if !attr.is_dir() {
        // ATTR_KILL_SUID is unconditional; notify_change only acts on it if
        // the bit is set.
        clear |= attr.mode & S_ISUID;
        if should_drop_sgid(cred, attr) {
            clear |= S_ISGID;
        }
    }
    if clear != 0 {
        // The kill became ATTR_MODE: setattr_prepare's chmod rules apply.
        if !inode_owner_or_capable(cred, attr) {
            return Err(Errno::EPERM);
        }
        let group = gid.unwrap_or(attr.gid);
        if !in_group_or_capable(cred, group) {
            clear |= attr.mode & S_ISGID;
        }
    }
    Ok(ChownEffect { uid, gid, clear })
}

/// Linux's `setattr_should_drop_sgid`: `S_ISGID` is set and either
/// `S_IXGRP` is set (a real set-group-ID executable) or the caller is
/// neither in the inode's group nor has `CAP_FSETID`.
fn should_drop_sgid(cred: &Cred, attr: &Attr) -> bool {
    attr.mode & S_ISGID != 0 && (attr.mode & S_IXGRP != 0 || !in_group_or_capable(cred, attr.gid))
}

/// Writing to a file (write, pwrite, writev, …; also truncate and
/// ftruncate, which apply the same rule even when the size does not
/// change): the new mode if the set-ID bits must go first, else `None`
/// (`file_remove_privs`, `setattr_should_drop_suidgid`).
///
/// Only regular files, and never for a caller with `CAP_FSETID`. Otherwise
/// `S_ISUID` is cleared if set, and `S_ISGID` if set together with
/// `S_IXGRP`, or set while the caller is not in the file's group. (Older
/// kernels, before 6.2, cleared `S_ISGID` only together with `S_IXGRP`.)
/// The change needs no ownership: the kernel forces it.
pub fn remove_privs_on_write(cred: &Cred, attr: &Attr) -> Option<u32> {
    if attr.mode & S_IFMT != S_IFREG || cred.capable(Cap::Fsetid) {
        return None;
    }
    let mut clear = attr.mode & S_ISUID;
    if should_drop_sgid(cred, attr) {
        clear |= S_ISGID;
    }
    (clear != 0).then_some(attr.mode & !clear)
}

/// How utimensat's `times` argument is checked ([`utimes_check`]'s
/// `explicit_times`), from the two `tv_nsec` values, or `None` (`times` is
/// NULL). Returns `None` when both are [`UTIME_OMIT`]: Linux then returns
/// 0 at once, without even resolving the path. `Some(false)` (a "touch":
/// NULL, or both [`UTIME_NOW`]) and `Some(true)` (anything else, including
/// one `UTIME_NOW` with one `UTIME_OMIT`) otherwise. The `EINVAL` check of
/// the nanoseconds comes after the path lookup in Linux and is not done
/// here.
pub fn utimens_explicit(nsecs: Option<[i64; 2]>) -> Option<bool> {
    match nsecs {
        None => Some(false),
        Some([UTIME_OMIT, UTIME_OMIT]) => None,
        Some([UTIME_NOW, UTIME_NOW]) => Some(false),
        Some(_) => Some(true),
    }
}

/// utimes/utimensat/futimens permission (`vfs_utimes`, `may_setattr`,
/// `setattr_prepare`). Setting both times to now ("touch":
/// `explicit_times == false`, see [`utimens_explicit`]) is allowed to the
/// owner, to `CAP_FOWNER`, and to anyone with write permission, else
/// [`permission`]'s `EACCES`. Any other request — explicit times, or one
/// time now and the other omitted — is for the owner or `CAP_FOWNER` only,
/// else `EPERM`, even with write permission.
pub fn utimes_check(cred: &Cred, attr: &Attr, explicit_times: bool) -> Result<(), Errno> {
    if inode_owner_or_capable(cred, attr) {
        return Ok(());
    }
    if explicit_times {
        return Err(Errno::EPERM);
    }
    permission(cred, attr, MAY_WRITE)
}
