//! The tree's switch moves the process's open uvfs FIFOs to the mount:
//! every fd on a FIFO that has a name is reopened through the mount at its
//! own number, and the data the private pipe holds is written into the
//! mount's pipe (a kernel pipe: a FIFO on a FUSE mount is the kernel's),
//! so a reader on either side reads it there, once.
//!
//! Before this runs, the switch has cancelled every FIFO read and write
//! asleep on the private uvfs and waited for them to leave it
//! (`signal::begin_switch`): no byte is read from or written to the private
//! pipe after its data was moved, and the cancelled calls are made again
//! on the mount (`dispatch::fd_call_io`). A FIFO open that got its other
//! end before the switch but returned after it moves its new fd here too
//! (`hooks::open`).
//!
//! How, per FIFO (the fds are grouped by inode): a holder is opened on the
//! mount's FIFO read-write and non-blocking, which never waits and keeps
//! the pipe (and its data) alive while the fds are reopened, each with its
//! access mode, non-blocking (a write-only open would otherwise wait for,
//! or fail without, a reader), and then given back its own `O_NONBLOCK`;
//! the mount's pipe is given the private pipe's size if larger than the
//! kernel's default; the private pipe is emptied through a read-write,
//! non-blocking handle of its own and what it held is written to the
//! holder; then the holder is closed. A FIFO without a name (removed while
//! open) stays private, as a regular file does. Not kept: packet mode's
//! boundaries (`O_DIRECT`) in the data moved, and the sharing of one open
//! file by `dup`'d fds (each fd gets an open file of its own; a FIFO has
//! no offset, so only a later `F_SETFL` of `O_NONBLOCK` tells).

use crate::state::State;
use std::ffi::CString;
use uvfs::Process;

/// What [`move_fifos`] did: fds moved, and fds kept private.
#[derive(Default)]
pub(crate) struct Moved {
    pub(crate) moved: Vec<(i32, i32)>,
    pub(crate) kept: usize,
}

/// Moves the FIFO fds `fds` (program number, uvfs fd) to the mount under
/// prefix `pre`. The caller then unmaps and closes the moved ones on the
/// private uvfs (`Moved::moved`). Runs with every other thread out of the
/// private uvfs.
pub(crate) fn move_fifos(s: &mut State, pre: &[u8], fds: &[(i32, i32)]) -> Moved {
    let mut out = Moved::default();
    // Grouped by inode: one holder and one drain per pipe.
    let mut groups: Vec<(u64, Vec<(i32, i32)>)> = Vec::new();
    for &(k, u) in fds {
        let Ok(st) = s.p().fstat(u) else {
            out.kept += 1;
            continue;
        };
        let ino = st.st_ino;
        match groups.iter_mut().find(|g| g.0 == ino) {
            Some(g) => g.1.push((k, u)),
            None => groups.push((ino, vec![(k, u)])),
        }
    }
    for (_, g) in groups {
        let n = g.len();
        match move_one(s.p(), pre, &g) {
            Ok(()) => out.moved.extend(g),
            Err(()) => out.kept += n,
        }
    }
    out
}

/// Moves the fds `g`, all on one FIFO, to the mount.
fn move_one(p: &mut Process, pre: &[u8], g: &[(i32, i32)]) -> Result<(), ()> {
    let path = p.fd_path(g[0].1).map_err(|_| ())?;
    let mut full = pre.to_vec();
    full.extend_from_slice(&path);
    let c = CString::new(full).map_err(|_| ())?;
    let holder = raw_open(&c, libc::O_RDWR | libc::O_NONBLOCK)?;
    let r = move_with(p, &path, &c, holder, g);
    // SAFETY: our own fd, closed once.
    unsafe { libc::syscall(libc::SYS_close, holder) };
    r
}

/// [`move_one`] with the mount's FIFO held open (`holder`).
fn move_with(
    p: &mut Process,
    path: &[u8],
    c: &CString,
    holder: i32,
    g: &[(i32, i32)],
) -> Result<(), ()> {
    // The private pipe's size, if larger than the kernel's default: the
    // data moved must fit.
    if let Ok(sz) = p.fcntl(g[0].1, libc::F_GETPIPE_SZ, 0)
        && sz > 65536
    {
        // SAFETY: our own fd; an integer argument.
        unsafe { libc::syscall(libc::SYS_fcntl, holder, libc::F_SETPIPE_SZ, sz) };
    }
    // Every fd first, then the data: a reopening that fails leaves the
    // private pipe as it was, and the group private.
    let mut made: Vec<(i32, i32)> = Vec::with_capacity(g.len());
    let mut ok = true;
    for &(k, u) in g {
        match reopen_end(p, c, u) {
            Ok(n) => made.push((k, n)),
            Err(()) => {
                ok = false;
                break;
            }
        }
    }
    if ok {
        ok = drain(p, path, holder).is_ok();
    }
    if !ok {
        for (_, n) in made {
            // SAFETY: our own fds, closed once.
            unsafe { libc::syscall(libc::SYS_close, n) };
        }
        return Err(());
    }
    for (k, n) in made {
        let cloexec = fd_cloexec(n);
        // SAFETY: `n` is ours; `k` is the placeholder the program knows as
        // this FIFO, replaced in one step (close-on-exec, set by
        // `reopen_end` on `n`, is carried by `dup3`'s flag).
        unsafe {
            libc::syscall(libc::SYS_dup3, n, k, cloexec);
            libc::syscall(libc::SYS_close, n);
        }
    }
    Ok(())
}

/// `O_CLOEXEC` if kernel fd `n` has `FD_CLOEXEC`.
fn fd_cloexec(n: i32) -> i32 {
    // SAFETY: an fd of ours; no memory involved.
    let f = unsafe { libc::syscall(libc::SYS_fcntl, n, libc::F_GETFD) };
    if f >= 0 && f as i32 & libc::FD_CLOEXEC != 0 {
        libc::O_CLOEXEC
    } else {
        0
    }
}

/// Opens the mount's FIFO `c` as uvfs fd `u` is open (access mode,
/// `O_NONBLOCK`, close-on-exec): a new kernel fd, not yet in place.
fn reopen_end(p: &mut Process, c: &CString, u: i32) -> Result<i32, ()> {
    let fl = p.fcntl(u, libc::F_GETFL, 0).map_err(|_| ())?;
    let fdfl = p.fcntl(u, libc::F_GETFD, 0).map_err(|_| ())?;
    let n = raw_open(c, (fl & libc::O_ACCMODE) | libc::O_NONBLOCK)?;
    if fl & libc::O_NONBLOCK == 0 {
        // SAFETY: our own fd; integer arguments.
        let cur = unsafe { libc::syscall(libc::SYS_fcntl, n, libc::F_GETFL) };
        let set = if cur < 0 {
            -1
        } else {
            let to = cur as i32 & !libc::O_NONBLOCK;
            // SAFETY: as above.
            unsafe { libc::syscall(libc::SYS_fcntl, n, libc::F_SETFL, to) }
        };
        if set < 0 {
            // SAFETY: our own fd.
            unsafe { libc::syscall(libc::SYS_close, n) };
            return Err(());
        }
    }
    if fdfl & libc::FD_CLOEXEC == 0 {
        // SAFETY: our own fd; integer arguments.
        unsafe { libc::syscall(libc::SYS_fcntl, n, libc::F_SETFD, 0) };
    }
    Ok(n)
}

/// Opens `c` with `flags` (plus close-on-exec), as a raw system call (not
/// the shim's `open`).
fn raw_open(c: &CString, flags: i32) -> Result<i32, ()> {
    // SAFETY: a NUL-terminated path; integer arguments.
    let n = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            c.as_ptr(),
            flags | libc::O_CLOEXEC | libc::O_NOCTTY,
            0,
        )
    };
    if n < 0 { Err(()) } else { Ok(n as i32) }
}

/// Empties the private FIFO at `path` into kernel fd `holder`, through a
/// read-write, non-blocking handle of its own (it never waits, and counts
/// as a writer, so an empty pipe reads `EAGAIN`, not end of file).
fn drain(p: &mut Process, path: &[u8], holder: i32) -> Result<(), ()> {
    let h = p
        .openat(libc::AT_FDCWD, path, libc::O_RDWR | libc::O_NONBLOCK, 0)
        .map_err(|_| ())?;
    let mut buf = vec![0u8; 65536];
    let r = loop {
        match p.read(h, &mut buf) {
            Ok(0) | Err(uvfs::Errno::EAGAIN) => break Ok(()),
            Ok(n) => {
                if write_all(holder, &buf[..n]).is_err() {
                    break Err(());
                }
            }
            Err(_) => break Err(()),
        }
    };
    let _ = p.close(h);
    r
}

/// Writes all of `b` to kernel fd `fd` (non-blocking; the mount's pipe was
/// made large enough).
fn write_all(fd: i32, mut b: &[u8]) -> Result<(), ()> {
    while !b.is_empty() {
        // SAFETY: `b.len()` readable bytes; our own fd.
        let n = unsafe { libc::syscall(libc::SYS_write, fd, b.as_ptr(), b.len()) };
        if n <= 0 {
            return Err(());
        }
        b = &b[n as usize..];
    }
    Ok(())
}
