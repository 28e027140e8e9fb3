//! Copies between fds: `sendfile`, `copy_file_range` and `splice`. With
//! uvfs fds on both sides, `sendfile` and `copy_file_range` are the
//! library's own calls (`Process::sendfile`, `Process::copy_file_range`:
//! Linux's checks and one copy inside uvfs). With a uvfs fd on one side
//! only, the copy runs through the shim's own read and write ([`fdops`]),
//! so each side goes to uvfs or the kernel as it should; `copy_file_range`
//! between uvfs and a kernel file is `EXDEV`, as Linux says between file
//! systems of different types.

use crate::conv::set_errno;
use crate::dispatch::{Ticket, fd_call, gated, is_uvfs};
use crate::fdops;
use crate::guard::busy;
use crate::interpose::{forward, real};
use libc::{c_int, c_uint, loff_t, off_t, size_t, ssize_t};
use uvfs::Errno;

/// Copies up to `len` bytes from `fin` (at `*off_in` if given, else its
/// position) to `fout` (at `*off_out` if given) through the shim's own
/// read/write, so each side goes to uvfs or the kernel as it should.
///
/// # Safety
/// `off_in` and `off_out` are each NULL or a readable and writable `i64`.
unsafe fn copy_through(
    fin: c_int,
    off_in: *mut i64,
    fout: c_int,
    off_out: *mut i64,
    len: usize,
) -> ssize_t {
    let mut buf = vec![0u8; len.clamp(1, 1 << 16)];
    let mut total: usize = 0;
    while total < len {
        let want = (len - total).min(buf.len());
        // SAFETY: our buffer; the caller's offset pointers.
        let n = unsafe {
            if off_in.is_null() {
                fdops::read(fin, buf.as_mut_ptr().cast(), want)
            } else {
                fdops::pread64(fin, buf.as_mut_ptr().cast(), want, *off_in)
            }
        };
        if n < 0 {
            return if total == 0 { -1 } else { total as ssize_t };
        }
        if n == 0 {
            break;
        }
        let n = n as usize;
        let mut done = 0;
        while done < n {
            // SAFETY: as above.
            let w = unsafe {
                let p = buf.as_ptr().add(done).cast();
                if off_out.is_null() {
                    fdops::write(fout, p, n - done)
                } else {
                    fdops::pwrite64(fout, p, n - done, *off_out + done as i64)
                }
            };
            if w <= 0 {
                // Give back what was read but not written.
                let unread = (n - done) as i64;
                // SAFETY: the caller's offset pointer.
                unsafe {
                    if off_in.is_null() {
                        fdops::lseek64(fin, -unread, libc::SEEK_CUR);
                    } else {
                        *off_in += done as i64;
                    }
                    if !off_out.is_null() {
                        *off_out += done as i64;
                    }
                }
                total += done;
                return if total == 0 { -1 } else { total as ssize_t };
            }
            done += w as usize;
        }
        // SAFETY: the caller's offset pointers.
        unsafe {
            if !off_in.is_null() {
                *off_in += n as i64;
            }
            if !off_out.is_null() {
                *off_out += n as i64;
            }
        }
        total += n;
    }
    total as ssize_t
}

/// `sendfile64`.
///
/// # Safety
/// `off` is NULL or a readable and writable `off_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sendfile64(
    out: c_int,
    fin: c_int,
    off: *mut off_t,
    count: size_t,
) -> ssize_t {
    if busy() || !is_uvfs(out) && !is_uvfs(fin) {
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        return unsafe {
            real!(sendfile64: fn(c_int, c_int, *mut off_t, size_t) -> ssize_t)(out, fin, off, count)
        };
    }
    if is_uvfs(out) && is_uvfs(fin) {
        return fd_call(
            out,
            -1,
            // SAFETY: the caller's arguments, unchanged (a uvfs fd that
            // turned stale on the way reaches the kernel, which says EBADF).
            || unsafe {
                real!(sendfile64: fn(c_int, c_int, *mut off_t, size_t) -> ssize_t)(
                    out, fin, off, count,
                )
            },
            |s, uo| {
                let ui = s.ufd(fin)?;
                // SAFETY: NULL or a readable and writable `off_t` (the
                // caller's contract).
                let off = unsafe { off.as_mut() };
                Ok(s.p().sendfile(uo, ui, off, count)? as ssize_t)
            },
        );
    }
    // SAFETY: the caller's offset pointer, valid per the contract.
    unsafe { copy_through(fin, off, out, std::ptr::null_mut(), count.min(0x7fff_f000)) }
}

forward! {
    sendfile(out: c_int, fin: c_int, off: *mut off_t, count: size_t) -> ssize_t =
        sendfile64(out, fin, off, count);
}

/// `copy_file_range`.
///
/// # Safety
/// `off_in` and `off_out` are each NULL or a readable and writable
/// `loff_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn copy_file_range(
    fin: c_int,
    off_in: *mut loff_t,
    fout: c_int,
    off_out: *mut loff_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    let t = Ticket::take();
    let ui = is_uvfs(fin);
    // The test hook: a switch between the two look-ups.
    t.park("copy_file_range");
    let uo = is_uvfs(fout);
    if busy() || !ui && !uo {
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        return unsafe {
            real!(copy_file_range: fn(c_int, *mut loff_t, c_int, *mut loff_t, size_t, c_uint) -> ssize_t)(
                fin, off_in, fout, off_out, len, flags,
            )
        };
    }
    if ui && uo {
        return fd_call(
            fin,
            -1,
            // SAFETY: the caller's arguments, unchanged.
            || unsafe {
                real!(copy_file_range: fn(c_int, *mut loff_t, c_int, *mut loff_t, size_t, c_uint) -> ssize_t)(
                    fin, off_in, fout, off_out, len, flags,
                )
            },
            |s, ui| {
                let uo = s.ufd(fout)?;
                // SAFETY: each NULL or a readable and writable `loff_t`
                // (the caller's contract).
                let (oi, oo) = unsafe { (off_in.as_mut(), off_out.as_mut()) };
                Ok(s.p().copy_file_range(ui, oi, uo, oo, len, flags)? as ssize_t)
            },
        );
    }
    // One uvfs fd, one kernel fd: Linux refuses a copy between file
    // systems of different types (`EINVAL` for flags first). Decided
    // inside the gate: a switch between the look-ups made both the
    // mount's, and the call starts again.
    let e = if flags != 0 {
        Errno::EINVAL
    } else {
        Errno::EXDEV
    };
    gated("copy_file_range", t, -1, |_| Err(e)).unwrap_or_else(|| {
        // SAFETY: the caller's arguments, valid per the contract.
        unsafe { copy_file_range(fin, off_in, fout, off_out, len, flags) }
    })
}

/// Whether kernel fd `fd` is ready for `events` now (a zero-timeout
/// `poll`), for `SPLICE_F_NONBLOCK` on the pipe side.
fn ready(fd: c_int, events: i16) -> bool {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one pollfd of our own.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}

/// `splice` with a uvfs file on one side: Linux needs a pipe on the other
/// (`EINVAL` otherwise, and for two uvfs fds, since a uvfs fd is never a
/// pipe; `ESPIPE` for an offset on the pipe's side). One transfer, as the
/// kernel's: file to pipe, at most `PIPE_BUF` bytes (written whole, never
/// blocking on a pipe with less room than that once it has some); pipe to
/// file, what one read of the pipe gives, up to 64 KiB. The file's side
/// goes through the shim's own read and write.
///
/// # Safety
/// `off_in` and `off_out` are each NULL or a readable and writable
/// `loff_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn splice(
    fin: c_int,
    off_in: *mut loff_t,
    fout: c_int,
    off_out: *mut loff_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    let (ui, uo) = (is_uvfs(fin), is_uvfs(fout));
    if busy() || !ui && !uo {
        // SAFETY: the caller's arguments, unchanged, valid per the contract.
        return unsafe {
            real!(splice: fn(c_int, *mut loff_t, c_int, *mut loff_t, size_t, c_uint) -> ssize_t)(
                fin, off_in, fout, off_out, len, flags,
            )
        };
    }
    let fail = |e: i32| {
        set_errno(e);
        -1
    };
    let pipe = if ui { fout } else { fin };
    let pipe_ok = !(ui && uo)
        && rustix::fs::fstat(crate::state::borrow(pipe))
            .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO);
    if !pipe_ok {
        return fail(libc::EINVAL);
    }
    if (ui && !off_out.is_null()) || (uo && !off_in.is_null()) {
        return fail(libc::ESPIPE);
    }
    if len == 0 {
        return 0;
    }
    let nonblock = flags & libc::SPLICE_F_NONBLOCK != 0;
    if ui {
        if nonblock && !ready(fout, libc::POLLOUT) {
            return fail(libc::EAGAIN);
        }
        let mut buf = [0u8; libc::PIPE_BUF];
        let want = len.min(buf.len());
        // SAFETY: our buffer; the caller's offset pointer.
        let n = unsafe {
            if off_in.is_null() {
                fdops::read(fin, buf.as_mut_ptr().cast(), want)
            } else {
                fdops::pread64(fin, buf.as_mut_ptr().cast(), want, *off_in)
            }
        };
        if n <= 0 {
            return n;
        }
        // SAFETY: our buffer of `n` bytes.
        let w = unsafe { fdops::write(fout, buf.as_ptr().cast(), n as usize) };
        let moved = w.max(0);
        if off_in.is_null() {
            if moved < n {
                fdops::lseek64(fin, (moved - n) as i64, libc::SEEK_CUR);
            }
        } else {
            // SAFETY: the caller's offset pointer.
            unsafe { *off_in += moved as i64 };
        }
        return w;
    }
    if nonblock && !ready(fin, libc::POLLIN) {
        return fail(libc::EAGAIN);
    }
    let mut buf = vec![0u8; len.min(1 << 16)];
    // SAFETY: our buffer.
    let n = unsafe { fdops::read(fin, buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        return n;
    }
    let n = n as usize;
    let mut done = 0;
    while done < n {
        // SAFETY: our buffer; the caller's offset pointer.
        let w = unsafe {
            let p = buf.as_ptr().add(done).cast();
            if off_out.is_null() {
                fdops::write(fout, p, n - done)
            } else {
                fdops::pwrite64(fout, p, n - done, *off_out + done as i64)
            }
        };
        if w <= 0 {
            break;
        }
        done += w as usize;
    }
    if !off_out.is_null() {
        // SAFETY: the caller's offset pointer.
        unsafe { *off_out += done as i64 };
    }
    if done == 0 { -1 } else { done as ssize_t }
}
