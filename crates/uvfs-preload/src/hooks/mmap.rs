//! `mmap` of uvfs files (the file side of Linux's `mm/mmap.c`): a uvfs
//! regular file is mapped through the kernel memfd that holds its data
//! once it is first mapped (`Process::mmap_file`), with the program's own
//! arguments, so sharing, copy-on-write, `msync`, `mprotect`, `munmap`,
//! `fork` and `SIGBUS` past the end are the kernel's, and reads and writes
//! through uvfs see the mapping's bytes. See `docs/preload.md`, "mmap".

use crate::conv::set_errno;
use crate::dispatch::{Ticket, gated};
use crate::interpose::{forward, real};
use crate::state::{FDMAP, Fd};
use libc::{c_int, c_void, off_t, size_t};
use std::os::fd::AsRawFd;

/// The next `mmap`.
///
/// # Safety
/// The C contract of `mmap`.
unsafe fn real_mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    // SAFETY: the caller's arguments, under its contract.
    unsafe {
        real!(mmap: fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void)(
            addr, len, prot, flags, fd, off,
        )
    }
}

/// `mmap`: a uvfs regular file is mapped through the kernel file that
/// holds its data (`Process::mmap_file`: a memfd opened with the uvfs
/// fd's access mode), with the caller's own arguments, so the kernel makes
/// every check (`EINVAL`, `ENOMEM`, `EOVERFLOW`, `EACCES` …) in its own
/// order and the mapping is coherent with uvfs's reads and writes. A uvfs
/// directory gets the answer the kernel gives for a directory of its own
/// (`ENODEV` after the same checks); a closed fd `EBADF` (after the
/// offset's alignment, as Linux checks that first). Anything else is the
/// kernel's.
///
/// # Safety
/// The C contract of `mmap`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    let t = Ticket::take();
    if flags & libc::MAP_ANONYMOUS == 0 && !crate::guard::busy() {
        match FDMAP.get(fd) {
            Fd::Kernel => {}
            Fd::Stale => {
                // `sys_mmap` refuses an unaligned offset before it looks
                // at the fd.
                // SAFETY: sysconf takes no pointers.
                let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as off_t;
                set_errno(if off % page != 0 {
                    libc::EINVAL
                } else {
                    libc::EBADF
                });
                return libc::MAP_FAILED;
            }
            Fd::Uvfs(_) => {
                let r = gated("mmap", t, Err(uvfs::Errno::EIO), |s| {
                    // (An error of the call itself is the inner one.)
                    Ok(s.ufd(fd).and_then(|u| {
                        s.p().mmap_file(u, |k| {
                            // SAFETY: the caller's arguments under its
                            // contract, on a kernel fd alive for the call.
                            let p =
                                unsafe { real_mmap(addr, len, prot, flags, k.as_raw_fd(), off) };
                            if p == libc::MAP_FAILED {
                                Err(uvfs::Errno::last_os_error())
                            } else {
                                Ok(p)
                            }
                        })
                    }))
                });
                // `None`: the switch came between; `fd` is the mount's
                // now, for the kernel's call below.
                if let Some(r) = r {
                    return match r {
                        Ok(p) => p,
                        // SAFETY: the caller's arguments under its contract.
                        Err(uvfs::Errno::ENODEV) => unsafe {
                            mmap_dir(addr, len, prot, flags, off)
                        },
                        Err(e) => {
                            set_errno(e.raw());
                            libc::MAP_FAILED
                        }
                    };
                }
            }
        }
    }
    // SAFETY: the caller's arguments, unchanged, under its contract.
    unsafe { real_mmap(addr, len, prot, flags, fd, off) }
}

/// `mmap` of a uvfs directory: the same call on a kernel directory (`/`,
/// opened read-only as a directory fd always is), so the errno is the one
/// Linux gives in its order (`EINVAL` for a zero length or a bad map type
/// before `ENODEV`); `ENODEV` if `/` cannot be opened or, against all
/// expectation, the kernel maps it.
///
/// # Safety
/// The C contract of `mmap`.
unsafe fn mmap_dir(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    off: off_t,
) -> *mut c_void {
    use rustix::fs::{Mode, OFlags};
    let Ok(dir) = rustix::fs::open(
        "/",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        set_errno(libc::ENODEV);
        return libc::MAP_FAILED;
    };
    // SAFETY: the caller's arguments under its contract, on a kernel fd
    // alive for the call (even with MAP_FIXED nothing is replaced: the
    // kernel checks the file before it touches the address space).
    let p = unsafe { real_mmap(addr, len, prot, flags, dir.as_raw_fd(), off) };
    let e = std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::ENODEV);
    drop(dir);
    if p != libc::MAP_FAILED {
        // SAFETY: the mapping just made, of `len` bytes.
        unsafe { libc::munmap(p, len) };
        set_errno(libc::ENODEV);
    } else {
        set_errno(e);
    }
    libc::MAP_FAILED
}

forward! {
    mmap64(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, off: off_t)
        -> *mut c_void = mmap(addr, len, prot, flags, fd, off);
}
