//! The `Sleep` hook through the `Process` API: a thread blocked in
//! `F_SETLKW`, a blocking flock, a FIFO open and a FIFO read is
//! interrupted by [`Signals::interrupt`] from another thread and fails
//! with `EINTR`, leaving no waiter behind; with `Restart` it waits on and
//! is granted. Decided by order: the interrupt is pending before or while
//! the call sleeps, and either way the sleep ends with it; the main thread
//! waits for the blocked state by counts (`lock_stats`), never by time.

use std::sync::Arc;
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Flock, Interrupted, Process, Signals, Vfs};

fn wrlck() -> Flock {
    Flock {
        l_type: F_WRLCK as i16,
        l_whence: SEEK_SET as i16,
        l_start: 0,
        l_len: 1,
        l_pid: 0,
    }
}

/// Waits (by yielding) until the file at `fd` has `n` lock waiters.
fn wait_for_waiters(p: &mut Process, fd: i32, n: usize) {
    while p.lock_stats(fd).unwrap().waiters != n {
        std::thread::yield_now();
    }
}

#[test]
fn setlkw_and_flock_interrupted() {
    let vfs = Vfs::new(FastPaths::seeds());
    let mut a = Process::new(&vfs).unwrap();
    let fa = a.open("/f", O_RDWR | O_CREAT, 0o644).unwrap();
    a.fcntl_lock(fa, F_SETLK, &mut wrlck()).unwrap();
    a.flock(fa, LOCK_EX).unwrap();
    let mut b = a.fork().unwrap();
    let fb = b.open("/f", O_RDWR, 0).unwrap();
    let sig = Signals::new();
    b.set_sleep(Some(sig.clone() as Arc<dyn uvfs::Sleep>));
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        tx.send(b.fcntl_lock(fb, F_SETLKW, &mut wrlck())).unwrap();
        let r2 = b.flock(fb, LOCK_SH);
        (b, r2)
    });
    wait_for_waiters(&mut a, fa, 1);
    sig.interrupt(Interrupted::Eintr);
    assert_eq!(rx.recv().unwrap(), Err(Errno::EINTR));
    // Now the flock: blocked, or about to be.
    wait_for_waiters(&mut a, fa, 1);
    sig.interrupt(Interrupted::Eintr);
    let (mut b, r2) = t.join().unwrap();
    assert_eq!(r2, Err(Errno::EINTR));
    let s = a.lock_stats(fa).unwrap();
    assert_eq!((s.posix, s.flock, s.waiters, s.edges), (1, 1, 0, 0));
    // Restart: the request sleeps on; a's unlock grants it.
    sig.interrupt(Interrupted::Restart);
    let t = std::thread::spawn(move || {
        let r = b.fcntl_lock(fb, F_SETLKW, &mut wrlck());
        (b, r)
    });
    while sig.pending() {
        std::thread::yield_now();
    }
    wait_for_waiters(&mut a, fa, 1);
    let mut un = wrlck();
    un.l_type = F_UNLCK as i16;
    a.fcntl_lock(fa, F_SETLK, &mut un).unwrap();
    let (_b, r) = t.join().unwrap();
    assert_eq!(r, Ok(0));
    let mut probe = wrlck();
    a.fcntl_lock(fa, F_GETLK, &mut probe).unwrap();
    assert_eq!(probe.l_type, F_WRLCK as i16);
}

#[test]
fn fifo_open_and_read_interrupted() {
    let vfs = Vfs::new(FastPaths::seeds());
    let mut p = Process::new(&vfs).unwrap();
    p.mkfifo("/fifo", 0o644).unwrap();
    let mut q = p.new_thread();
    let sig = Signals::new();
    q.set_sleep(Some(sig.clone() as Arc<dyn uvfs::Sleep>));
    let t = std::thread::spawn(move || {
        let r = q.open("/fifo", O_RDONLY, 0);
        (q, r)
    });
    // Pending before the open sleeps, or waking it: either way it ends it.
    sig.interrupt(Interrupted::Eintr);
    let (mut q, r) = t.join().unwrap();
    assert_eq!(r, Err(Errno::EINTR));
    // The interrupted reader left no count: a non-blocking writer finds
    // no reader.
    assert_eq!(p.open("/fifo", O_WRONLY | O_NONBLOCK, 0), Err(Errno::ENXIO));
    // A read of an empty FIFO with a writer.
    let r = q.open("/fifo", O_RDONLY | O_NONBLOCK, 0).unwrap();
    let w = p.open("/fifo", O_WRONLY, 0).unwrap();
    q.fcntl(r, F_SETFL, 0).unwrap();
    sig.interrupt(Interrupted::Eintr);
    assert_eq!(q.read(r, &mut [0u8; 4]), Err(Errno::EINTR));
    p.write(w, b"ok").unwrap();
    assert_eq!(q.read(r, &mut [0u8; 4]), Ok(2));
}

/// A blocking poll of a FIFO with nothing to read is interrupted: `EINTR`
/// without a limit and with one, `Restart` included (Linux's poll never
/// restarts after a handler); data then makes it ready as before.
#[test]
fn poll_interrupted() {
    let vfs = Vfs::new(FastPaths::seeds());
    let mut p = Process::new(&vfs).unwrap();
    p.mkfifo("/fifo", 0o644).unwrap();
    let r = p.open("/fifo", O_RDONLY | O_NONBLOCK, 0).unwrap();
    let w = p.open("/fifo", O_WRONLY, 0).unwrap();
    let sig = Signals::new();
    p.set_sleep(Some(sig.clone() as Arc<dyn uvfs::Sleep>));
    let mut fds = [uvfs::PollFd {
        fd: r,
        events: POLLIN,
        revents: 0,
    }];
    for (how, limit) in [
        (Interrupted::Eintr, -1),
        (Interrupted::Restart, -1),
        (Interrupted::Eintr, 3_600_000),
    ] {
        sig.interrupt(how);
        assert_eq!(p.poll(&mut fds, limit), Err(Errno::EINTR));
    }
    p.write(w, b"x").unwrap();
    assert_eq!(p.poll(&mut fds, -1), Ok(1));
}
