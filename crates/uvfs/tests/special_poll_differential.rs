//! Differential test of poll(2) and ioctl(FIONREAD) against the host
//! kernel: a FIFO's read and write ends through their life (data,
//! a full ring, the last writer or reader gone, `POLLHUP` held back for a
//! non-blocking reader that has seen no writer, read-write opens),
//! regular files and directories (always ready, whatever the access
//! mode), `O_PATH`, closed and negative fds, events masks (`POLLERR` and
//! `POLLHUP` reported unasked), and `FIONREAD` on each (a regular file's
//! size less its position, negative past the end; `ENOTTY` on a
//! directory). One script runs on both sides and every result is
//! compared. Then blocking polls woken by another thread (data, room, the
//! last writer's close) and a poll whose time runs out, each side with
//! the same two-thread program.
#![cfg(target_os = "linux")]

mod support;

use std::ffi::CString;
use std::sync::Arc;
use support::host::TempDir;
use support::vfs::fasts;
use uvfs::uapi::*;
use uvfs::{Errno, PollFd, Process, Vfs};

/// An fd of the script: a slot (the fds opened so far, in order, a failed
/// open taking one too), a number no fd has, or a negative one.
#[derive(Clone, Copy, Debug)]
enum F {
    S(usize),
    Closed,
    Neg,
}

#[derive(Clone, Debug)]
enum Op {
    Mkfifo(&'static str),
    Touch(&'static str),
    Mkdir(&'static str),
    Open(&'static str, i32),
    Close(usize),
    Write(usize, usize),
    Read(usize, usize),
    Lseek(usize, i64),
    /// A poll with timeout 0 of these fds and events.
    Poll(Vec<(F, i16)>),
    Fionread(F),
}

/// A step's result: numbers (a count, then each `revents`), or an errno.
type Out = Result<Vec<i64>, i32>;

const ALL: i16 = POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND | POLLWRNORM | POLLWRBAND;

fn script() -> Vec<Op> {
    use F::*;
    use Op::*;
    let nb = O_NONBLOCK;
    vec![
        Mkfifo("f"),
        Open("f", O_RDONLY | nb), // 0: a reader that has seen no writer
        Poll(vec![(S(0), ALL)]),
        Open("f", O_WRONLY | nb), // 1
        Poll(vec![(S(0), POLLIN), (S(1), POLLOUT)]),
        Write(1, 5),
        Poll(vec![(S(0), ALL), (S(1), ALL)]),
        Poll(vec![(S(0), POLLOUT), (S(1), POLLIN)]),
        Fionread(S(0)),
        Fionread(S(1)),
        Close(1),
        Poll(vec![(S(0), POLLIN)]),
        Read(0, 10),
        Poll(vec![(S(0), POLLIN)]),
        Poll(vec![(S(0), 0)]),
        Fionread(S(0)),
        Open("f", O_WRONLY | nb), // 2
        Poll(vec![(S(0), ALL), (S(2), ALL)]),
        Close(0),
        Poll(vec![(S(2), POLLOUT)]),
        Poll(vec![(S(2), 0)]),
        Open("f", O_RDONLY | nb), // 3
        Poll(vec![(S(2), ALL), (S(3), ALL)]),
        // A full ring: not writable until a whole buffer is free.
        Write(2, 70_000),
        Poll(vec![(S(2), ALL), (S(3), ALL)]),
        Fionread(S(3)),
        Read(3, 100),
        Poll(vec![(S(2), POLLOUT)]),
        Write(2, 1),
        Read(3, 4000),
        Poll(vec![(S(2), POLLOUT)]),
        Fionread(S(2)),
        Open("f", O_RDWR), // 4
        Poll(vec![(S(4), ALL)]),
        Close(2),
        Close(3),
        Poll(vec![(S(4), ALL)]),
        Read(4, 100_000),
        Poll(vec![(S(4), ALL)]),
        // HUP held back per open: 5 came while a writer was there, 6 when
        // none was.
        Open("f", O_RDONLY | nb), // 5
        Close(4),
        Open("f", O_RDONLY | nb), // 6
        Poll(vec![(S(5), POLLIN), (S(6), POLLIN)]),
        Open("f", O_WRONLY | nb), // 7
        Close(7),
        Poll(vec![(S(5), POLLIN), (S(6), POLLIN)]),
        Close(5),
        Close(6),
        // Regular files and directories.
        Touch("reg"),
        Open("reg", O_RDWR), // 8
        Write(8, 100),
        Lseek(8, 10),
        Fionread(S(8)),
        Lseek(8, 200),
        Fionread(S(8)),
        Lseek(8, 1 << 33),
        Fionread(S(8)),
        Poll(vec![(S(8), ALL)]),
        Poll(vec![(S(8), 0)]),
        Open("reg", O_RDONLY), // 9
        Poll(vec![(S(9), POLLOUT | POLLIN)]),
        Open("reg", O_WRONLY), // 10
        Poll(vec![(S(10), POLLOUT | POLLIN)]),
        Fionread(S(10)),
        Mkdir("d"),
        Open("d", O_RDONLY | O_DIRECTORY), // 11
        Poll(vec![(S(11), ALL)]),
        Fionread(S(11)),
        // O_PATH, closed and negative fds.
        Open("reg", O_PATH), // 12
        Poll(vec![(S(12), ALL)]),
        Fionread(S(12)),
        Open("f", O_PATH), // 13
        Poll(vec![(S(13), ALL)]),
        Poll(vec![(Closed, POLLIN)]),
        Poll(vec![(Neg, POLLIN)]),
        Fionread(Closed),
        Poll(vec![
            (S(8), POLLIN),
            (Neg, POLLIN),
            (Closed, 0),
            (S(11), POLLOUT),
            (S(12), 0),
        ]),
        Poll(vec![]),
    ]
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap()
}

/// A number no fd of either side has.
const CLOSED_FD: i32 = 900;

fn poll_out(n: usize, fds: &[PollFd]) -> Vec<i64> {
    std::iter::once(n as i64)
        .chain(fds.iter().map(|e| i64::from(e.revents)))
        .collect()
}

fn run_host(dir: &str, ops: &[Op]) -> Vec<Out> {
    let p = |n: &str| c(&format!("{dir}/{n}"));
    let mut slots: Vec<i32> = Vec::new();
    let num = |slots: &Vec<i32>, f: F| match f {
        F::S(i) => slots[i],
        F::Closed => CLOSED_FD,
        F::Neg => -1,
    };
    let ok = |r: i64| if r < 0 { Err(errno()) } else { Ok(vec![r]) };
    let mut out = Vec::new();
    for op in ops {
        // SAFETY: every call in this match gets valid C strings, buffers
        // of the length it is given, and fds of this test.
        let r = unsafe {
            match op {
                Op::Mkfifo(n) => ok(libc::mkfifo(p(n).as_ptr(), 0o644).into()),
                Op::Touch(n) => {
                    let fd = libc::open(p(n).as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o644);
                    if fd >= 0 {
                        libc::close(fd);
                    }
                    ok(fd.min(0).into())
                }
                Op::Mkdir(n) => ok(libc::mkdir(p(n).as_ptr(), 0o755).into()),
                Op::Open(n, fl) => {
                    let fd = libc::open(p(n).as_ptr(), *fl | libc::O_CLOEXEC);
                    slots.push(fd);
                    ok(fd.min(0).into())
                }
                Op::Close(i) => {
                    // The number is forgotten: the other test of this binary,
                    // running beside this one, may be given it next, and the
                    // closing of what is left at the end must not close
                    // that (it did: a write of the blocking test failed with
                    // EBADF).
                    let fd = std::mem::replace(&mut slots[*i], -1);
                    ok(libc::close(fd).into())
                }
                Op::Write(i, n) => {
                    let b = vec![b'w'; *n];
                    ok(libc::write(slots[*i], b.as_ptr().cast(), *n) as i64)
                }
                Op::Read(i, n) => {
                    let mut b = vec![0u8; *n];
                    ok(libc::read(slots[*i], b.as_mut_ptr().cast(), *n) as i64)
                }
                Op::Lseek(i, off) => ok(libc::lseek(slots[*i], *off, libc::SEEK_SET)),
                Op::Poll(v) => {
                    let mut fds: Vec<libc::pollfd> = v
                        .iter()
                        .map(|&(f, events)| libc::pollfd {
                            fd: num(&slots, f),
                            events,
                            revents: 0,
                        })
                        .collect();
                    let n = libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0);
                    if n < 0 {
                        Err(errno())
                    } else {
                        let e: Vec<PollFd> = fds
                            .iter()
                            .map(|x| PollFd {
                                fd: x.fd,
                                events: x.events,
                                revents: x.revents,
                            })
                            .collect();
                        Ok(poll_out(n as usize, &e))
                    }
                }
                Op::Fionread(f) => {
                    let mut n: libc::c_int = 0;
                    let r = libc::ioctl(num(&slots, *f), libc::FIONREAD, &mut n);
                    if r < 0 {
                        Err(errno())
                    } else {
                        Ok(vec![n.into()])
                    }
                }
            }
        };
        out.push(r);
    }
    for fd in slots.into_iter().filter(|&f| f >= 0) {
        // SAFETY: closing our own fds, each once (a closed slot holds -1).
        unsafe { libc::close(fd) };
    }
    out
}

fn run_uvfs(p: &mut Process, ops: &[Op]) -> Vec<Out> {
    let path = |n: &str| format!("/{n}");
    let mut slots: Vec<i32> = Vec::new();
    let num = |slots: &Vec<i32>, f: F| match f {
        F::S(i) => slots[i],
        F::Closed => CLOSED_FD,
        F::Neg => -1,
    };
    let ok = |r: Result<i64, Errno>| r.map(|v| vec![v]).map_err(Errno::raw);
    let mut out = Vec::new();
    for op in ops {
        let r = match op {
            Op::Mkfifo(n) => ok(p.mkfifo(path(n), 0o644).map(|()| 0)),
            Op::Touch(n) => ok(p
                .open(path(n), O_CREAT | O_WRONLY, 0o644)
                .and_then(|fd| p.close(fd))
                .map(|()| 0)),
            Op::Mkdir(n) => ok(p.mkdir(path(n), 0o755).map(|()| 0)),
            Op::Open(n, fl) => {
                let r = p.open(path(n), *fl | O_CLOEXEC, 0);
                slots.push(*r.as_ref().unwrap_or(&-1));
                ok(r.map(|_| 0))
            }
            Op::Close(i) => ok(p.close(slots[*i]).map(|()| 0)),
            Op::Write(i, n) => ok(p.write(slots[*i], &vec![b'w'; *n]).map(|n| n as i64)),
            Op::Read(i, n) => ok(p.read(slots[*i], &mut vec![0u8; *n]).map(|n| n as i64)),
            Op::Lseek(i, off) => ok(p.lseek(slots[*i], *off, SEEK_SET)),
            Op::Poll(v) => {
                let mut fds: Vec<PollFd> = v
                    .iter()
                    .map(|&(f, events)| PollFd {
                        fd: num(&slots, f),
                        events,
                        revents: 0,
                    })
                    .collect();
                p.poll(&mut fds, 0)
                    .map(|n| poll_out(n, &fds))
                    .map_err(Errno::raw)
            }
            Op::Fionread(f) => ok(p.ioctl_fionread(num(&slots, *f)).map(i64::from)),
        };
        out.push(r);
    }
    out
}

#[test]
fn poll_and_fionread_match_the_host() {
    let t = TempDir::new("poll");
    let ops = script();
    let want = run_host(t.as_str(), &ops);
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        let got = run_uvfs(&mut p, &ops);
        let diffs: Vec<String> = ops
            .iter()
            .zip(&want)
            .zip(&got)
            .filter(|((_, w), g)| w != g)
            .map(|((op, w), g)| format!("{op:?}: host {w:?}, uvfs {g:?}"))
            .collect();
        assert!(diffs.is_empty(), "{fast:?}:\n{}", diffs.join("\n"));
        drop(p);
        vfs.check_consistency().unwrap();
    }
}

/// What the other thread of a blocking case does once the poller is
/// (probably) asleep; the result must be the same whether it is or not.
#[derive(Clone, Copy, Debug)]
enum Wake {
    /// Writes a byte to the write end: the read end becomes readable.
    Data,
    /// Reads 8 KiB from a full pipe: the write end becomes writable.
    Room,
    /// Closes the last write end: the read end hangs up.
    LastWriter,
}

/// The blocking cases: (wake, which end polls, events).
const BLOCKING: [(Wake, bool, i16); 3] = [
    (Wake::Data, true, POLLIN),
    (Wake::Room, false, POLLOUT),
    (Wake::LastWriter, true, POLLIN),
];

/// A side of the blocking test: open both ends of a FIFO, fill it (for
/// `Room`), poll in this thread with no time limit while another thread
/// acts; returns (poll's count, revents).
trait Side: Send + Sync + 'static {
    fn open_pair(&self) -> (i32, i32);
    fn fill(&self, w: i32);
    fn act(&self, how: Wake, r: i32, w: i32);
    fn poll(&self, fd: i32, events: i16, timeout: i32) -> (i32, i16);
    fn close(&self, fd: i32);
}

struct Host(CString);

impl Side for Host {
    fn open_pair(&self) -> (i32, i32) {
        // SAFETY: a valid C string; non-blocking opens of a FIFO.
        unsafe {
            let r = libc::open(self.0.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK);
            let w = libc::open(self.0.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK);
            assert!(r >= 0 && w >= 0);
            (r, w)
        }
    }
    fn fill(&self, w: i32) {
        let b = [0u8; 4096];
        // SAFETY: a readable buffer; non-blocking writes until EAGAIN.
        while unsafe { libc::write(w, b.as_ptr().cast(), b.len()) } > 0 {}
    }
    fn act(&self, how: Wake, r: i32, w: i32) {
        let mut b = [0u8; 8192];
        // SAFETY: our fds and buffers.
        unsafe {
            match how {
                Wake::Data => assert_eq!(libc::write(w, b.as_ptr().cast(), 1), 1),
                Wake::Room => assert_eq!(libc::read(r, b.as_mut_ptr().cast(), 8192), 8192),
                Wake::LastWriter => assert_eq!(libc::close(w), 0),
            }
        }
    }
    fn poll(&self, fd: i32, events: i16, timeout: i32) -> (i32, i16) {
        let mut e = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut e, 1, timeout) };
        (n, e.revents)
    }
    fn close(&self, fd: i32) {
        // SAFETY: our fd.
        unsafe { libc::close(fd) };
    }
}

struct Uvfs(std::sync::Mutex<Process>);

impl Uvfs {
    fn thread(&self) -> Process {
        self.0.lock().unwrap().new_thread()
    }
}

impl Side for Uvfs {
    fn open_pair(&self) -> (i32, i32) {
        let mut p = self.thread();
        let r = p.open("/f", O_RDONLY | O_NONBLOCK, 0).unwrap();
        let w = p.open("/f", O_WRONLY | O_NONBLOCK, 0).unwrap();
        (r, w)
    }
    fn fill(&self, w: i32) {
        let mut p = self.thread();
        while p.write(w, &[0u8; 4096]).is_ok() {}
    }
    fn act(&self, how: Wake, r: i32, w: i32) {
        let mut p = self.thread();
        match how {
            Wake::Data => assert_eq!(p.write(w, b"x"), Ok(1)),
            Wake::Room => assert_eq!(p.read(r, &mut [0u8; 8192]), Ok(8192)),
            Wake::LastWriter => p.close(w).unwrap(),
        }
    }
    fn poll(&self, fd: i32, events: i16, timeout: i32) -> (i32, i16) {
        let mut e = [PollFd {
            fd,
            events,
            revents: 0,
        }];
        let n = self.thread().poll(&mut e, timeout).unwrap();
        (n as i32, e[0].revents)
    }
    fn close(&self, fd: i32) {
        let _ = self.thread().close(fd);
    }
}

/// Runs every blocking case on `side`: each result, and a poll with a
/// short limit that runs out.
fn blocking(side: Arc<dyn Side>) -> Vec<(i32, i16)> {
    let mut out = Vec::new();
    for (how, read_end, events) in BLOCKING {
        let (r, w) = side.open_pair();
        if matches!(how, Wake::Room) {
            side.fill(w);
        }
        let s2 = side.clone();
        let t = std::thread::spawn(move || {
            // Give the poller a moment to sleep (if it has not, the poll
            // finds the change at once: the same result).
            std::thread::sleep(std::time::Duration::from_millis(20));
            s2.act(how, r, w);
        });
        out.push(side.poll(if read_end { r } else { w }, events, -1));
        t.join().unwrap();
        side.close(r);
        side.close(w);
    }
    // Nothing comes: the time runs out, the count is 0.
    let (r, w) = side.open_pair();
    out.push(side.poll(r, POLLIN, 30));
    side.close(r);
    side.close(w);
    out
}

#[test]
fn blocking_polls_wake_as_on_the_host() {
    let t = TempDir::new("poll-block");
    let f = format!("{}/f", t.as_str());
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c(&f).as_ptr(), 0o644) }, 0);
    let want = blocking(Arc::new(Host(c(&f))));
    assert_eq!(want.len(), BLOCKING.len() + 1);
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.mkfifo("/f", 0o644).unwrap();
        let side = Arc::new(Uvfs(std::sync::Mutex::new(p)));
        let got = blocking(side.clone());
        assert_eq!(want, got, "{fast:?}");
        drop(side);
        vfs.check_consistency().unwrap();
    }
}
