//! Calls that hand the kernel one of its own objects by fd or path, where
//! a uvfs operand hides inside the arguments: `bpf`'s pinning
//! (`BPF_OBJ_PIN`, `BPF_OBJ_GET`: a path, maybe relative to an fd) and
//! `prctl(PR_SET_MM, PR_SET_MM_EXE_FILE, fd)`.
//!
//! Neither can be served from uvfs, and Linux's own answers for a tmpfs
//! file are errors the shim can give exactly, so these are answered
//! without a line on stderr:
//!
//! - `BPF_OBJ_PIN` on a uvfs path: the kernel's checks first (privilege,
//!   the object's fd), made by passing the kernel the call with an empty
//!   path (which fails with `ENOENT` only after them); then the path's
//!   answer from uvfs: `EEXIST` if the name exists, the lookup's error if
//!   its directory does not, else `EPERM` (Linux pins only into a `bpf`
//!   file system). `BPF_OBJ_GET`: the same checks, then the lookup's
//!   error, else `EACCES` (not a `bpf` object).
//! - `PR_SET_MM_EXE_FILE` with a uvfs fd goes to the kernel, where the fd
//!   is the placeholder `/dev/null`, not a regular file: `EACCES` (after
//!   `EPERM` without `CAP_SYS_RESOURCE`), Linux's answer for a file on a
//!   mount without exec, which is what a private uvfs is to the kernel
//!   (exec of a uvfs file is refused the same way). A closed uvfs fd still
//!   cached as a placeholder is passed as -1, so the kernel answers
//!   `EBADF` after the same privilege check, as Linux does for a closed
//!   fd.

use crate::conv::{cbytes, errno, set_errno};
use crate::dispatch::route;
use crate::guard::busy;
use crate::interpose::real;
use crate::path::Route;
use crate::state::{FDMAP, Fd};
use libc::{c_char, c_int, c_long, c_ulong};
use uvfs::uapi::AT_FDCWD;

const BPF_OBJ_PIN: c_long = 6;
const BPF_OBJ_GET: c_long = 7;
/// `file_flags`' bit: `path_fd` holds the directory fd of `pathname`.
const BPF_F_PATH_FD: u32 = 1 << 14;

/// `SYS_bpf(cmd, attr, size)`: see the module's description. `next` makes
/// the program's call as it is.
pub(crate) fn bpf(a: [c_long; 6], next: impl FnOnce() -> c_long) -> c_long {
    let (cmd, attr, size) = (a[0], a[1] as *const u8, a[2] as usize);
    if !(cmd == BPF_OBJ_PIN || cmd == BPF_OBJ_GET) || attr.is_null() || size < 16 {
        return next();
    }
    // SAFETY: the program's `union bpf_attr` of `size` (at least 16)
    // bytes: `pathname` (u64) at 0, `bpf_fd` at 8, `file_flags` at 12 and,
    // from 20 bytes on, `path_fd` at 16.
    let (pathname, flags, path_fd) = unsafe {
        (
            attr.cast::<u64>().read_unaligned() as *const c_char,
            attr.add(12).cast::<u32>().read_unaligned(),
            if size >= 20 {
                attr.add(16).cast::<i32>().read_unaligned()
            } else {
                0
            },
        )
    };
    if pathname.is_null() {
        return next();
    }
    let dirfd = if flags & BPF_F_PATH_FD != 0 {
        path_fd
    } else {
        AT_FDCWD
    };
    // SAFETY: a non-NULL path the program passed, NUL-terminated per the
    // system call's contract.
    let path = unsafe { cbytes(pathname) };
    if matches!(route(dirfd, path), Some(Route::Kernel)) {
        return next();
    }
    // The kernel's own checks, on a copy whose path is empty.
    // SAFETY: `size` readable bytes, per the contract.
    let mut copy = unsafe { std::slice::from_raw_parts(attr, size) }.to_vec();
    let empty = c"".as_ptr() as u64;
    copy[..8].copy_from_slice(&empty.to_ne_bytes());
    // SAFETY: the program's command, a copy of its attributes (alive for
    // the call) and their size.
    let r = unsafe {
        real!(syscall: fn(c_long, c_long, c_long, c_long) -> c_long)(
            libc::SYS_bpf,
            cmd,
            copy.as_ptr() as c_long,
            size as c_long,
        )
    };
    if r >= 0 {
        // Not expected (an empty path names nothing): the new fd is not
        // the program's answer.
        if cmd == BPF_OBJ_GET {
            // SAFETY: the fd just made, ours.
            unsafe { libc::syscall(libc::SYS_close, r) };
        }
    } else if errno() != libc::ENOENT {
        return -1;
    }
    set_errno(path_answer(cmd == BPF_OBJ_PIN, dirfd, path));
    -1
}

/// What Linux answers for pinning at (`pin`), or getting from, the uvfs
/// path `path` relative to `dirfd`: see the module's description.
fn path_answer(pin: bool, dirfd: c_int, path: &[u8]) -> c_int {
    if !pin {
        return stat_mode(dirfd, path, 0).err().unwrap_or(libc::EACCES);
    }
    match stat_mode(dirfd, path, libc::AT_SYMLINK_NOFOLLOW) {
        Ok(_) => return libc::EEXIST,
        Err(libc::ENOENT) => {}
        Err(e) => return e,
    }
    let mut trimmed = path;
    while trimmed.len() > 1 && trimmed.ends_with(b"/") {
        trimmed = &trimmed[..trimmed.len() - 1];
    }
    let parent: &[u8] = match trimmed.iter().rposition(|&c| c == b'/') {
        Some(0) => b"/",
        Some(i) => &trimmed[..i],
        None => b".",
    };
    match stat_mode(dirfd, parent, 0) {
        Ok(m) if m & libc::S_IFMT == libc::S_IFDIR => libc::EPERM,
        Ok(_) => libc::ENOTDIR,
        Err(e) => e,
    }
}

/// The file type and mode the shim's `fstatat(dirfd, path, flags)` finds
/// (found by name, so uvfs answers), or its errno.
fn stat_mode(dirfd: c_int, path: &[u8], flags: c_int) -> Result<libc::mode_t, c_int> {
    let c = std::ffi::CString::new(path).map_err(|_| libc::ENOENT)?;
    // SAFETY: a NUL-terminated name; the global scope finds the shim's own
    // definition first (it is preloaded).
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"fstatat".as_ptr()) };
    if f.is_null() {
        return Err(libc::ENOSYS);
    }
    type Fstatat = unsafe extern "C" fn(c_int, *const c_char, *mut libc::stat, c_int) -> c_int;
    // SAFETY: `fstatat`'s address, of that type.
    let f = unsafe { std::mem::transmute::<*mut libc::c_void, Fstatat>(f) };
    // SAFETY: zeroed plain data.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a C string and a stat buffer alive for the call.
    if unsafe { f(dirfd, c.as_ptr(), &mut st, flags) } != 0 {
        return Err(errno());
    }
    Ok(st.st_mode)
}

/// `prctl`'s arguments, with a closed uvfs fd given to
/// `PR_SET_MM_EXE_FILE` made -1, through `call`.
pub(crate) fn prctl_args(a: [c_long; 6], call: impl FnOnce([c_long; 6]) -> c_long) -> c_long {
    let mut b = a;
    if a[0] == c_long::from(libc::PR_SET_MM)
        && a[1] == libc::PR_SET_MM_EXE_FILE as c_long
        && !busy()
        && FDMAP.get(a[2] as c_int) == Fd::Stale
    {
        b[2] = -1;
    }
    call(b)
}

/// `prctl`: see the module's description (every other option unchanged).
///
/// # Safety
/// The C contract of `prctl`: the arguments `option` takes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn prctl(
    option: c_int,
    a2: c_ulong,
    a3: c_ulong,
    a4: c_ulong,
    a5: c_ulong,
) -> c_int {
    let a = [
        c_long::from(option),
        a2 as c_long,
        a3 as c_long,
        a4 as c_long,
        a5 as c_long,
        0,
    ];
    prctl_args(a, |b| {
        // SAFETY: the program's arguments (the fd perhaps made -1), as
        // glibc's `prctl` passes them to the system call.
        unsafe {
            real!(syscall: fn(c_long, c_long, c_long, c_long, c_long, c_long) -> c_long)(
                libc::SYS_prctl,
                b[0],
                b[1],
                b[2],
                b[3],
                b[4],
            )
        }
    }) as c_int
}
