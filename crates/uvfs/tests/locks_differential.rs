//! Differential tests of the advisory locks against the host kernel.
//!
//! A script of steps runs on both sides with the same cast of *actors*
//! (processes): on the host, forked processes that run commands sent down a
//! pipe with raw system calls on a file in `/dev/shm`; on uvfs, one thread
//! per [`Process`] on a file in a fresh VFS, once per fast-path preset.
//! Actors open, close and dup fds, set and test locks (fcntl's POSIX and
//! OFD commands, flock), truncate, seek, and fork new actors (the host
//! actor forks itself; the uvfs one calls [`Process::fork`]). Every reply
//! (return value, errno, and the `struct flock` a `GETLK` wrote back, its
//! `l_pid` translated to the actor it names) must agree.
//!
//! Blocking requests are started without waiting for their reply; a later
//! step waits until the expected number of requests are blocked on the file
//! (the host's `/proc/locks` lists them with `->`; uvfs's
//! [`Process::lock_stats`] counts them), so the next steps run while they
//! sleep, and another collects the reply. Polls count iterations: no
//! elapsed time decides a result.
//!
//! The scripts: hand-written scenarios (conflicts, release on close of
//! another fd, dup, fork, OFD against POSIX, flock conversion, EDEADLK,
//! wake-ups, the argument errors) and seeded random sequences of
//! non-blocking operations over three actors.
#![cfg(target_os = "linux")]

mod support;

use std::ffi::CString;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use support::host::TempDir;
use support::rng::Rng;
use uvfs::uapi::*;
use uvfs::{FastPaths, Flock, Process, Vfs};

const SLOTS: usize = 8;
const ACTORS: usize = 6;
/// Poll iterations before a wait for blocked requests is declared stuck.
const POLLS: usize = 200_000;

/// The tests fork; forked children inherit every fd of the test process,
/// so one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, Debug)]
enum Op {
    Open {
        slot: usize,
        flags: i32,
    },
    Close {
        slot: usize,
    },
    Dup {
        slot: usize,
        to: usize,
    },
    Fcntl {
        slot: usize,
        cmd: i32,
        fl: Flock,
    },
    Flock {
        slot: usize,
        op: i32,
    },
    Truncate {
        slot: usize,
        len: i64,
    },
    Seek {
        slot: usize,
        off: i64,
    },
    /// Fork this actor; the child becomes actor `new`.
    Fork {
        new: usize,
    },
}

#[derive(Clone, Copy, Debug)]
enum Step {
    /// A fresh actor (a process with no fds).
    Spawn(usize),
    /// Run an op and wait for its reply.
    Do(usize, Op),
    /// Send an op that blocks; its reply is collected later.
    Start(usize, Op),
    /// Wait until this many lock requests sleep on the file.
    AwaitWaiters(usize),
    /// Wait for the reply of the op `Start`ed on this actor.
    Collect(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Reply {
    ret: i64,
    errno: i32,
    fl: Flock,
}

fn fl(ty: i32, whence: i32, start: i64, len: i64) -> Flock {
    Flock {
        l_type: ty as i16,
        l_whence: whence as i16,
        l_start: start,
        l_len: len,
        l_pid: 0,
    }
}

// ---------------------------------------------------------------- host side

const C_OPEN: i32 = 1;
const C_CLOSE: i32 = 2;
const C_DUP: i32 = 3;
const C_FCNTL: i32 = 4;
const C_FLOCK: i32 = 5;
const C_TRUNC: i32 = 6;
const C_SEEK: i32 = 7;
const C_FORK: i32 = 8;

#[repr(C)]
#[derive(Clone, Copy)]
struct CmdWire {
    code: i32,
    slot: i32,
    a: i64,
    fl: libc::flock,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct ReplyWire {
    ret: i64,
    errno: i32,
    fl: libc::flock,
}

fn to_c(f: &Flock) -> libc::flock {
    // SAFETY: an all-zero `struct flock` is valid.
    let mut c: libc::flock = unsafe { std::mem::zeroed() };
    c.l_type = f.l_type;
    c.l_whence = f.l_whence;
    c.l_start = f.l_start;
    c.l_len = f.l_len;
    c.l_pid = f.l_pid;
    c
}

fn from_c(c: &libc::flock) -> Flock {
    Flock {
        l_type: c.l_type,
        l_whence: c.l_whence,
        l_start: c.l_start,
        l_len: c.l_len,
        l_pid: c.l_pid,
    }
}

/// Reads exactly `size_of::<T>()` bytes; false at end of file or error.
///
/// # Safety
/// `T` is plain old data.
unsafe fn read_exact<T>(fd: i32, out: &mut T) -> bool {
    let p = (out as *mut T).cast::<u8>();
    let n = std::mem::size_of::<T>();
    let mut done = 0;
    while done < n {
        // SAFETY: `p + done .. p + n` is within `out`.
        let r = unsafe { libc::read(fd, p.add(done).cast(), n - done) };
        if r <= 0 {
            return false;
        }
        done += r as usize;
    }
    true
}

/// Writes all of `v`.
///
/// # Safety
/// `T` is plain old data.
unsafe fn write_all<T>(fd: i32, v: &T) {
    let p = (v as *const T).cast::<u8>();
    let n = std::mem::size_of::<T>();
    let mut done = 0;
    while done < n {
        // SAFETY: `p + done .. p + n` is within `v`.
        let r = unsafe { libc::write(fd, p.add(done).cast(), n - done) };
        if r <= 0 {
            return;
        }
        done += r as usize;
    }
}

/// One actor's pipes: (command read end, command write end, reply read
/// end, reply write end).
type Pipes = [(i32, i32, i32, i32); ACTORS];

/// The body of a host actor: commands in, replies out, system calls only
/// (it runs in a child forked from a multi-threaded process).
///
/// # Safety
/// Only in a freshly forked child; `path` is a NUL-terminated string.
unsafe fn actor_loop(mut me: usize, pipes: &Pipes, path: *const libc::c_char) -> ! {
    // SAFETY: a system call: die with the parent, so a killed test leaves
    // no actor behind.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let mut fds = [-1i32; SLOTS];
    loop {
        // SAFETY: a zeroed command is valid plain data.
        let mut c: CmdWire = unsafe { std::mem::zeroed() };
        // SAFETY: plain data.
        if !unsafe { read_exact(pipes[me].0, &mut c) } {
            // SAFETY: ending the child.
            unsafe { libc::_exit(0) };
        }
        let slot = c.slot as usize % SLOTS;
        let mut r = ReplyWire {
            ret: 0,
            errno: 0,
            fl: c.fl,
        };
        // SAFETY: system calls on our own fds and buffers.
        let ret: i64 = unsafe {
            match c.code {
                C_OPEN => {
                    let fd = libc::open(path, c.a as i32, 0o644);
                    if fd >= 0 {
                        fds[slot] = fd;
                    }
                    fd as i64
                }
                C_CLOSE => {
                    let r = libc::close(fds[slot]);
                    fds[slot] = -1;
                    r as i64
                }
                C_DUP => {
                    let fd = libc::dup(fds[slot]);
                    if fd >= 0 {
                        fds[c.a as usize % SLOTS] = fd;
                    }
                    fd as i64
                }
                C_FCNTL => libc::fcntl(fds[slot], c.a as i32, &mut r.fl as *mut libc::flock) as i64,
                C_FLOCK => libc::flock(fds[slot], c.a as i32) as i64,
                C_TRUNC => libc::ftruncate(fds[slot], c.a) as i64,
                C_SEEK => libc::lseek(fds[slot], c.a, libc::SEEK_SET),
                C_FORK => {
                    let pid = libc::fork();
                    if pid == 0 {
                        // The child is the new actor, with this one's fds.
                        me = c.a as usize;
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                        continue;
                    }
                    pid as i64
                }
                _ => libc::_exit(0),
            }
        };
        r.ret = ret;
        if ret < 0 {
            // SAFETY: reading this thread's errno.
            r.errno = unsafe { *libc::__errno_location() };
        }
        // SAFETY: plain data.
        unsafe { write_all(pipes[me].3, &r) };
    }
}

struct Host {
    pipes: Box<Pipes>,
    path: CString,
    ino: u64,
    pids: [i32; ACTORS],
    _dir: TempDir,
}

impl Host {
    fn new() -> Host {
        let dir = TempDir::new("locks");
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&file).unwrap());
        let mut pipes: Box<Pipes> = Box::new([(-1, -1, -1, -1); ACTORS]);
        for p in pipes.iter_mut() {
            let (mut a, mut b) = ([0i32; 2], [0i32; 2]);
            // SAFETY: writable arrays of two ints.
            unsafe {
                assert_eq!(libc::pipe2(a.as_mut_ptr(), libc::O_CLOEXEC), 0);
                assert_eq!(libc::pipe2(b.as_mut_ptr(), libc::O_CLOEXEC), 0);
            }
            *p = (a[0], a[1], b[0], b[1]);
        }
        Host {
            pipes,
            path: CString::new(file.to_str().unwrap()).unwrap(),
            ino,
            pids: [0; ACTORS],
            _dir: dir,
        }
    }

    fn spawn(&mut self, a: usize) {
        let path = self.path.as_ptr();
        let pipes: &Pipes = &self.pipes;
        // SAFETY: the child runs `actor_loop` only, which makes system calls
        // on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: in the fresh child.
            unsafe { actor_loop(a, pipes, path) };
        }
        self.pids[a] = pid;
    }

    fn send(&self, a: usize, op: &Op) {
        let (code, slot, arg, f) = match *op {
            Op::Open { slot, flags } => (C_OPEN, slot, flags as i64, Flock::default()),
            Op::Close { slot } => (C_CLOSE, slot, 0, Flock::default()),
            Op::Dup { slot, to } => (C_DUP, slot, to as i64, Flock::default()),
            Op::Fcntl { slot, cmd, fl } => (C_FCNTL, slot, cmd as i64, fl),
            Op::Flock { slot, op } => (C_FLOCK, slot, op as i64, Flock::default()),
            Op::Truncate { slot, len } => (C_TRUNC, slot, len, Flock::default()),
            Op::Seek { slot, off } => (C_SEEK, slot, off, Flock::default()),
            Op::Fork { new } => (C_FORK, 0, new as i64, Flock::default()),
        };
        let c = CmdWire {
            code,
            slot: slot as i32,
            a: arg,
            fl: to_c(&f),
        };
        // SAFETY: plain data.
        unsafe { write_all(self.pipes[a].1, &c) };
    }

    fn recv(&mut self, a: usize, op: &Op) -> Reply {
        let mut pfd = libc::pollfd {
            fd: self.pipes[a].2,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = (0..POLLS / 100).any(|_| unsafe { libc::poll(&mut pfd, 1, 100) } == 1);
        assert!(ready, "host actor {a}: no reply to {op:?}");
        // SAFETY: zeroed plain data.
        let mut r: ReplyWire = unsafe { std::mem::zeroed() };
        // SAFETY: plain data.
        let got = unsafe { read_exact(self.pipes[a].2, &mut r) };
        assert!(got, "host actor {a} died");
        if let Op::Fork { new } = *op {
            self.pids[new] = r.ret as i32;
        }
        Reply {
            ret: r.ret,
            errno: r.errno,
            fl: from_c(&r.fl),
        }
    }

    /// Requests sleeping on the file, from `/proc/locks`.
    fn waiters(&self) -> usize {
        let s = std::fs::read_to_string("/proc/locks").unwrap_or_default();
        let key = format!(":{} ", self.ino);
        s.lines()
            .filter(|l| l.contains("->") && l.contains(&key))
            .count()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        for &pid in self.pids.iter().filter(|&&p| p > 0) {
            // SAFETY: our own actors (children or grandchildren).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        for &pid in self.pids.iter().filter(|&&p| p > 0) {
            // SAFETY: reaps the direct children; others are not ours to
            // wait for (the call fails for them).
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
        for &(a, b, c, d) in self.pipes.iter() {
            // SAFETY: our pipe ends.
            unsafe {
                libc::close(a);
                libc::close(b);
                libc::close(c);
                libc::close(d);
            }
        }
    }
}

// ---------------------------------------------------------------- uvfs side

enum Msg {
    Run(Op),
    Exit,
}

type Forked = Option<(Process, [i32; SLOTS])>;

struct UvActor {
    tx: Sender<Msg>,
    rx: Receiver<(Reply, Forked)>,
    pid: i32,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn run_uv(p: &mut Process, fds: &mut [i32; SLOTS], op: &Op) -> (Reply, Forked) {
    let mut out = Flock::default();
    let r: Result<i64, uvfs::Errno> = match *op {
        Op::Open { slot, flags } => p.open("/f", flags, 0o644).map(|fd| {
            fds[slot] = fd;
            fd as i64
        }),
        Op::Close { slot } => {
            let r = p.close(fds[slot]).map(|_| 0);
            fds[slot] = -1;
            r
        }
        Op::Dup { slot, to } => p.dup(fds[slot]).map(|fd| {
            fds[to] = fd;
            fd as i64
        }),
        Op::Fcntl { slot, cmd, fl } => {
            out = fl;
            p.fcntl_lock(fds[slot], cmd, &mut out).map(i64::from)
        }
        Op::Flock { slot, op } => p.flock(fds[slot], op).map(|_| 0),
        Op::Truncate { slot, len } => p.ftruncate(fds[slot], len).map(|_| 0),
        Op::Seek { slot, off } => p.lseek(fds[slot], off, SEEK_SET),
        Op::Fork { .. } => {
            let child = p.fork().unwrap();
            let reply = Reply {
                ret: child.getpid() as i64,
                errno: 0,
                fl: out,
            };
            // The child's fds have the same numbers.
            return (reply, Some((child, *fds)));
        }
    };
    let reply = match r {
        Ok(v) => Reply {
            ret: v,
            errno: 0,
            fl: out,
        },
        Err(e) => Reply {
            ret: -1,
            errno: e.raw(),
            fl: out,
        },
    };
    (reply, None)
}

fn uv_actor(mut p: Process, mut fds: [i32; SLOTS]) -> UvActor {
    let (tx, crx) = channel::<Msg>();
    let (ctx, rx) = channel();
    let pid = p.getpid();
    let thread = std::thread::spawn(move || {
        while let Ok(Msg::Run(op)) = crx.recv() {
            let _ = ctx.send(run_uv(&mut p, &mut fds, &op));
        }
    });
    UvActor {
        tx,
        rx,
        pid,
        thread: Some(thread),
    }
}

struct Uv {
    actors: Vec<Option<UvActor>>,
    observer: Process,
    obs_fd: i32,
    vfs: Arc<Vfs>,
}

impl Uv {
    fn new(fast: FastPaths) -> Uv {
        let vfs = Vfs::new(fast);
        let mut observer = Process::new(&vfs).unwrap();
        let obs_fd = observer.open("/f", O_RDONLY | O_CREAT, 0o644).unwrap();
        Uv {
            actors: (0..ACTORS).map(|_| None).collect(),
            observer,
            obs_fd,
            vfs,
        }
    }

    fn spawn(&mut self, a: usize) {
        let p = Process::new(&self.vfs).unwrap();
        self.actors[a] = Some(uv_actor(p, [-1; SLOTS]));
    }

    fn send(&self, a: usize, op: &Op) {
        self.actors[a]
            .as_ref()
            .unwrap()
            .tx
            .send(Msg::Run(*op))
            .unwrap();
    }

    fn recv(&mut self, a: usize, op: &Op) -> Reply {
        let rx = &self.actors[a].as_ref().unwrap().rx;
        let got = (0..POLLS / 100)
            .find_map(|_| rx.recv_timeout(std::time::Duration::from_millis(100)).ok());
        let (r, child) = got.unwrap_or_else(|| panic!("uvfs actor {a}: no reply to {op:?}"));
        if let (Op::Fork { new }, Some((c, fds))) = (*op, child) {
            self.actors[new] = Some(uv_actor(c, fds));
        }
        r
    }

    fn waiters(&mut self) -> usize {
        self.observer.lock_stats(self.obs_fd).unwrap().waiters
    }

    fn pid(&self, a: usize) -> i32 {
        self.actors[a].as_ref().map_or(0, |x| x.pid)
    }
}

impl Uv {
    /// Ends every actor (its process exits, closing its fds).
    fn exit_all(&mut self) {
        for a in self.actors.iter_mut().flatten() {
            let _ = a.tx.send(Msg::Exit);
            if let Some(t) = a.thread.take() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Uv {
    fn drop(&mut self) {
        // After a failure an actor may sleep for ever: leave it.
        if !std::thread::panicking() {
            self.exit_all();
        }
    }
}

// ---------------------------------------------------------------- driver

/// Translates `l_pid` in a GETLK reply into the actor it names.
fn norm(op: &Op, mut r: Reply, pids: &[i32]) -> Reply {
    match op {
        Op::Open { .. } | Op::Dup { .. } | Op::Fork { .. } => r.ret = (r.ret >= 0) as i64,
        Op::Fcntl { cmd, .. }
            if matches!(*cmd, F_GETLK | F_OFD_GETLK) && r.ret == 0 && r.fl.l_pid > 0 =>
        {
            r.fl.l_pid = match pids.iter().position(|&p| p == r.fl.l_pid) {
                Some(i) => 1000 + i as i32,
                None => -2,
            };
        }
        _ => {}
    }
    r
}

fn poll(mut waiters: impl FnMut() -> usize, n: usize, side: &str) {
    for _ in 0..POLLS {
        if waiters() == n {
            return;
        }
        std::thread::yield_now();
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    panic!("{side}: never saw {n} blocked requests");
}

fn run_host(script: &[Step]) -> Vec<Option<Reply>> {
    let mut h = Host::new();
    let mut out = Vec::new();
    let mut pending: [Option<Op>; ACTORS] = [None; ACTORS];
    for s in script {
        out.push(match *s {
            Step::Spawn(a) => {
                h.spawn(a);
                None
            }
            Step::Do(a, op) => {
                h.send(a, &op);
                let r = h.recv(a, &op);
                Some(norm(&op, r, &h.pids))
            }
            Step::Start(a, op) => {
                h.send(a, &op);
                pending[a] = Some(op);
                None
            }
            Step::AwaitWaiters(n) => {
                poll(|| h.waiters(), n, "host");
                None
            }
            Step::Collect(a) => {
                let op = pending[a].take().unwrap();
                let r = h.recv(a, &op);
                Some(norm(&op, r, &h.pids))
            }
        });
    }
    out
}

fn run_uvfs(script: &[Step], fast: FastPaths) -> Vec<Option<Reply>> {
    let mut u = Uv::new(fast);
    let mut out = Vec::new();
    let mut pending: [Option<Op>; ACTORS] = [None; ACTORS];
    for s in script {
        let pids: Vec<i32> = (0..ACTORS).map(|a| u.pid(a)).collect();
        out.push(match *s {
            Step::Spawn(a) => {
                u.spawn(a);
                None
            }
            Step::Do(a, op) => {
                u.send(a, &op);
                let r = u.recv(a, &op);
                let pids: Vec<i32> = (0..ACTORS).map(|a| u.pid(a)).collect();
                Some(norm(&op, r, &pids))
            }
            Step::Start(a, op) => {
                u.send(a, &op);
                pending[a] = Some(op);
                None
            }
            Step::AwaitWaiters(n) => {
                poll(|| u.waiters(), n, "uvfs");
                None
            }
            Step::Collect(a) => {
                let op = pending[a].take().unwrap();
                let r = u.recv(a, &op);
                Some(norm(&op, r, &pids))
            }
        });
    }
    // Every lock and waiter is gone once every actor has exited.
    u.exit_all();
    assert_eq!(
        u.observer.lock_stats(u.obs_fd).unwrap(),
        uvfs::LockStats::default(),
        "locks left after every actor exited"
    );
    out
}

fn check(name: &str, script: &[Step]) {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let host = run_host(script);
    for fast in [FastPaths::seeds(), FastPaths::stock()] {
        let uv = run_uvfs(script, fast);
        let mut bad = Vec::new();
        for (i, (h, u)) in host.iter().zip(&uv).enumerate() {
            if h != u {
                bad.push(format!(
                    "  step {i} {:?}:\n    host {h:?}\n    uvfs {u:?}",
                    script[i]
                ));
            }
        }
        assert!(
            bad.is_empty(),
            "{name} ({fast}): {} differences\n{}",
            bad.len(),
            bad.join("\n")
        );
    }
}

fn setlk(slot: usize, ty: i32, start: i64, len: i64) -> Op {
    Op::Fcntl {
        slot,
        cmd: F_SETLK,
        fl: fl(ty, SEEK_SET, start, len),
    }
}

fn cmd(slot: usize, cmd: i32, ty: i32, start: i64, len: i64) -> Op {
    Op::Fcntl {
        slot,
        cmd,
        fl: fl(ty, SEEK_SET, start, len),
    }
}

fn getlk(slot: usize, ty: i32, start: i64, len: i64) -> Op {
    cmd(slot, F_GETLK, ty, start, len)
}

use Step::{AwaitWaiters, Collect, Do, Spawn, Start};

fn open(slot: usize, flags: i32) -> Op {
    Op::Open { slot, flags }
}

#[test]
fn posix_conflicts_split_merge_and_getlk() {
    check(
        "posix",
        &[
            Spawn(0),
            Spawn(1),
            Do(0, open(0, O_RDWR)),
            Do(1, open(0, O_RDWR)),
            Do(0, setlk(0, F_WRLCK, 0, 10)),
            Do(1, setlk(0, F_WRLCK, 5, 1)),
            Do(1, setlk(0, F_RDLCK, 9, 2)),
            Do(1, getlk(0, F_RDLCK, 0, 0)),
            Do(1, setlk(0, F_RDLCK, 10, 5)),
            Do(0, getlk(0, F_RDLCK, 0, 0)),
            Do(0, getlk(0, F_WRLCK, 0, 0)),
            Do(0, setlk(0, F_RDLCK, 3, 3)),
            Do(1, getlk(0, F_WRLCK, 0, 0)),
            Do(1, getlk(0, F_RDLCK, 0, 0)),
            Do(1, getlk(0, F_WRLCK, 4, 1)),
            Do(0, setlk(0, F_UNLCK, 0, 4)),
            Do(1, getlk(0, F_WRLCK, 0, 0)),
            Do(0, setlk(0, F_WRLCK, 100, 0)),
            Do(1, getlk(0, F_RDLCK, 200, -50)),
            Do(1, setlk(0, F_RDLCK, 99, 1)),
            Do(1, setlk(0, F_RDLCK, 99, 2)),
            Do(0, setlk(0, F_UNLCK, 0, 0)),
            Do(1, getlk(0, F_WRLCK, 0, 0)),
            Do(0, getlk(0, F_WRLCK, 0, 0)),
            // Negative lengths, SEEK_CUR, SEEK_END.
            Do(0, Op::Truncate { slot: 0, len: 50 }),
            Do(0, Op::Seek { slot: 0, off: 30 }),
            Do(
                0,
                Op::Fcntl {
                    slot: 0,
                    cmd: F_SETLK,
                    fl: fl(F_WRLCK, SEEK_CUR, -5, -5),
                },
            ),
            Do(
                0,
                Op::Fcntl {
                    slot: 0,
                    cmd: F_SETLK,
                    fl: fl(F_WRLCK, SEEK_END, -1, 3),
                },
            ),
            Do(1, getlk(0, F_RDLCK, 0, 0)),
            Do(1, getlk(0, F_RDLCK, 40, 0)),
        ],
    );
}

#[test]
fn release_on_any_close_dup_and_fork() {
    check(
        "close",
        &[
            Spawn(0),
            Spawn(1),
            Do(0, open(0, O_RDWR)),
            Do(0, open(1, O_RDONLY)),
            Do(1, open(0, O_RDWR)),
            Do(0, setlk(0, F_WRLCK, 0, 10)),
            Do(0, setlk(1, F_RDLCK, 20, 10)),
            Do(1, getlk(0, F_WRLCK, 0, 0)),
            // Closing the other fd of the file drops both locks.
            Do(0, Op::Close { slot: 1 }),
            Do(1, getlk(0, F_WRLCK, 0, 0)),
            // Through a dup.
            Do(0, Op::Dup { slot: 0, to: 2 }),
            Do(0, setlk(2, F_WRLCK, 5, 5)),
            Do(1, getlk(0, F_WRLCK, 0, 0)),
            Do(0, Op::Close { slot: 0 }),
            Do(1, getlk(0, F_WRLCK, 0, 0)),
            // Fork: the child owns nothing, sees the parent's lock, and its
            // close does not drop it.
            Do(0, setlk(2, F_WRLCK, 7, 3)),
            Do(0, Op::Fork { new: 2 }),
            Do(2, getlk(2, F_WRLCK, 0, 0)),
            Do(2, setlk(2, F_WRLCK, 8, 1)),
            Do(2, setlk(2, F_WRLCK, 11, 1)),
            Do(0, getlk(2, F_WRLCK, 0, 0)),
            Do(2, Op::Close { slot: 2 }),
            Do(0, getlk(2, F_WRLCK, 0, 0)),
            Do(1, getlk(0, F_WRLCK, 0, 0)),
        ],
    );
}

#[test]
fn ofd_locks_against_posix_locks() {
    check(
        "ofd",
        &[
            Spawn(0),
            Spawn(1),
            Do(0, open(0, O_RDWR)),
            Do(0, open(1, O_RDWR)),
            Do(0, cmd(0, F_OFD_SETLK, F_WRLCK, 0, 10)),
            // The same process's POSIX lock conflicts with its OFD lock.
            Do(0, setlk(1, F_WRLCK, 5, 1)),
            Do(0, getlk(1, F_RDLCK, 0, 0)),
            // Two open files of one process conflict with OFD locks.
            Do(0, cmd(1, F_OFD_SETLK, F_RDLCK, 5, 1)),
            Do(0, cmd(1, F_OFD_GETLK, F_RDLCK, 0, 0)),
            Do(0, cmd(0, F_OFD_GETLK, F_UNLCK, 0, 0)),
            Do(0, cmd(1, F_OFD_GETLK, F_UNLCK, 0, 0)),
            Do(0, cmd(0, F_OFD_GETLK, F_WRLCK, 0, 0)),
            Do(0, setlk(1, F_RDLCK, 20, 5)),
            Do(0, cmd(0, F_OFD_GETLK, F_WRLCK, 0, 0)),
            // Closing a POSIX fd leaves the OFD lock; the OFD file's close
            // of its last reference drops it.
            Do(1, open(0, O_RDWR)),
            Do(0, Op::Dup { slot: 0, to: 2 }),
            Do(0, Op::Close { slot: 1 }),
            Do(1, getlk(0, F_RDLCK, 0, 0)),
            Do(0, Op::Close { slot: 0 }),
            Do(1, getlk(0, F_RDLCK, 0, 0)),
            Do(0, Op::Close { slot: 2 }),
            Do(1, getlk(0, F_RDLCK, 0, 0)),
            // l_pid must be 0 for the OFD commands.
            Do(
                1,
                Op::Fcntl {
                    slot: 0,
                    cmd: F_OFD_SETLK,
                    fl: Flock {
                        l_pid: 1,
                        ..fl(F_RDLCK, SEEK_SET, 0, 1)
                    },
                },
            ),
            Do(
                1,
                Op::Fcntl {
                    slot: 0,
                    cmd: F_OFD_GETLK,
                    fl: Flock {
                        l_pid: 1,
                        ..fl(F_RDLCK, SEEK_SET, 0, 1)
                    },
                },
            ),
            Do(
                1,
                Op::Fcntl {
                    slot: 0,
                    cmd: F_SETLK,
                    fl: Flock {
                        l_pid: 77,
                        ..fl(F_RDLCK, SEEK_SET, 0, 1)
                    },
                },
            ),
        ],
    );
}

#[test]
fn flock_conversion_and_independence() {
    let fl_ = |slot, op| Op::Flock { slot, op };
    check(
        "flock",
        &[
            Spawn(0),
            Spawn(1),
            Do(0, open(0, O_RDONLY)),
            Do(1, open(0, O_WRONLY)),
            Do(0, fl_(0, LOCK_SH)),
            Do(1, fl_(0, LOCK_SH | LOCK_NB)),
            // A failed conversion loses the shared lock.
            Do(0, fl_(0, LOCK_EX | LOCK_NB)),
            Do(1, fl_(0, LOCK_EX | LOCK_NB)),
            Do(0, fl_(0, LOCK_SH | LOCK_NB)),
            // flock and POSIX locks do not see each other.
            Do(1, setlk(0, F_WRLCK, 0, 0)),
            Do(0, Op::Dup { slot: 0, to: 1 }),
            Do(0, fl_(1, LOCK_SH | LOCK_NB)),
            Do(1, fl_(0, LOCK_UN)),
            Do(0, fl_(1, LOCK_EX | LOCK_NB)),
            Do(0, fl_(0, LOCK_EX | LOCK_NB)),
            // Shared with a fork's child (same open file).
            Do(0, Op::Fork { new: 2 }),
            Do(2, fl_(0, LOCK_EX | LOCK_NB)),
            Do(0, Op::Close { slot: 0 }),
            Do(1, fl_(0, LOCK_SH | LOCK_NB)),
            Do(2, Op::Close { slot: 0 }),
            Do(2, Op::Close { slot: 1 }),
            Do(1, fl_(0, LOCK_SH | LOCK_NB)),
            Do(0, Op::Close { slot: 1 }),
            Do(1, fl_(0, LOCK_SH | LOCK_NB)),
            Do(1, fl_(0, LOCK_EX | LOCK_NB)),
        ],
    );
}

#[test]
fn blocking_wakeups_and_deadlock() {
    let setlkw = |slot, ty, start, len| cmd(slot, F_SETLKW, ty, start, len);
    check(
        "blocking",
        &[
            Spawn(0),
            Spawn(1),
            Spawn(2),
            Do(0, open(0, O_RDWR)),
            Do(1, open(0, O_RDWR)),
            Do(2, open(0, O_RDWR)),
            // A waits for B, B would wait for A: EDEADLK for B.
            Do(0, setlk(0, F_WRLCK, 0, 1)),
            Do(1, setlk(0, F_WRLCK, 1, 1)),
            Start(0, setlkw(0, F_WRLCK, 1, 1)),
            AwaitWaiters(1),
            Do(1, setlkw(0, F_WRLCK, 0, 1)),
            Do(2, getlk(0, F_WRLCK, 0, 0)),
            Do(1, setlk(0, F_UNLCK, 1, 1)),
            Collect(0),
            Do(2, getlk(0, F_WRLCK, 1, 1)),
            // A three-owner cycle.
            Do(1, setlk(0, F_WRLCK, 10, 1)),
            Do(2, setlk(0, F_WRLCK, 20, 1)),
            Start(0, setlkw(0, F_WRLCK, 10, 1)),
            AwaitWaiters(1),
            Start(1, setlkw(0, F_WRLCK, 20, 1)),
            AwaitWaiters(2),
            Do(2, setlkw(0, F_RDLCK, 0, 1)),
            // Closing an fd releases the owner's locks and wakes the chain.
            Do(2, Op::Close { slot: 0 }),
            Collect(1),
            Do(1, Op::Close { slot: 0 }),
            Collect(0),
            Do(2, open(0, O_RDWR)),
            Do(2, getlk(0, F_WRLCK, 0, 0)),
            // flock: a blocked LOCK_EX wakes at LOCK_UN.
            Do(
                0,
                Op::Flock {
                    slot: 0,
                    op: LOCK_EX,
                },
            ),
            Start(
                2,
                Op::Flock {
                    slot: 0,
                    op: LOCK_SH,
                },
            ),
            AwaitWaiters(1),
            Do(
                0,
                Op::Flock {
                    slot: 0,
                    op: LOCK_UN,
                },
            ),
            Collect(2),
            // OFD: a blocked request wakes at the holder's last close.
            Do(1, open(0, O_RDWR)),
            Do(1, cmd(0, F_OFD_SETLK, F_WRLCK, 100, 10)),
            Start(2, cmd(0, F_OFD_SETLKW, F_RDLCK, 105, 1)),
            AwaitWaiters(1),
            Do(1, Op::Close { slot: 0 }),
            Collect(2),
            Do(0, cmd(0, F_OFD_GETLK, F_WRLCK, 0, 0)),
        ],
    );
}

#[test]
fn argument_errors() {
    let mut s = vec![
        Spawn(0),
        Spawn(1),
        Do(0, open(0, O_RDONLY)),
        Do(0, open(1, O_WRONLY)),
        Do(0, open(2, O_PATH)),
        Do(0, open(3, O_RDWR | O_WRONLY)),
        Do(0, open(4, O_RDWR)),
        Do(0, Op::Truncate { slot: 4, len: 100 }),
        Do(0, Op::Seek { slot: 4, off: 10 }),
    ];
    let flocks = [
        fl(F_RDLCK, SEEK_SET, 0, 0),
        fl(F_WRLCK, SEEK_SET, 0, 0),
        fl(F_UNLCK, SEEK_SET, 0, 0),
        fl(3, SEEK_SET, 0, 0),
        fl(-1, SEEK_SET, 0, 0),
        fl(F_RDLCK, 3, 0, 0),
        fl(F_RDLCK, -1, 0, 0),
        fl(F_RDLCK, SEEK_SET, -1, 0),
        fl(F_RDLCK, SEEK_SET, 5, -5),
        fl(F_RDLCK, SEEK_SET, 5, -6),
        fl(F_RDLCK, SEEK_SET, i64::MAX, 1),
        fl(F_RDLCK, SEEK_SET, i64::MAX, 2),
        fl(F_RDLCK, SEEK_SET, i64::MAX, 0),
        fl(F_RDLCK, SEEK_SET, 1, i64::MAX),
        fl(F_RDLCK, SEEK_SET, 0, i64::MAX),
        fl(F_RDLCK, SEEK_SET, i64::MAX, i64::MIN),
        fl(F_RDLCK, SEEK_SET, 0, i64::MIN),
        fl(F_RDLCK, SEEK_CUR, -10, 0),
        fl(F_RDLCK, SEEK_CUR, -11, 0),
        fl(F_RDLCK, SEEK_CUR, i64::MAX, 0),
        fl(F_RDLCK, SEEK_CUR, i64::MAX - 10, 0),
        fl(F_RDLCK, SEEK_END, i64::MAX - 100, 0),
        fl(F_RDLCK, SEEK_END, i64::MAX - 99, 0),
        fl(F_RDLCK, SEEK_END, -100, -1),
        fl(F_RDLCK, SEEK_END, 0, -100),
        fl(F_WRLCK, 7, i64::MAX, 5),
        fl(9, SEEK_SET, i64::MAX, 5),
        fl(9, SEEK_SET, -1, 0),
    ];
    let cmds = [
        F_GETLK,
        F_SETLK,
        F_SETLKW,
        F_OFD_GETLK,
        F_OFD_SETLK,
        F_OFD_SETLKW,
    ];
    for slot in [0, 1, 2, 3, 4, 7] {
        for c in cmds {
            for f in flocks {
                s.push(Do(
                    0,
                    Op::Fcntl {
                        slot,
                        cmd: c,
                        fl: f,
                    },
                ));
                // Undo whatever was set (an OFD lock left behind would
                // make a later F_SETLKW of this process wait for ever).
                s.push(Do(
                    0,
                    Op::Fcntl {
                        slot,
                        cmd: F_OFD_SETLK,
                        fl: fl(F_UNLCK, SEEK_SET, 0, 0),
                    },
                ));
                s.push(Do(
                    0,
                    Op::Fcntl {
                        slot: 4,
                        cmd: F_SETLK,
                        fl: fl(F_UNLCK, SEEK_SET, 0, 0),
                    },
                ));
            }
        }
        for op in [
            0,
            LOCK_SH,
            LOCK_EX,
            LOCK_UN,
            LOCK_NB,
            3,
            16,
            LOCK_MAND,
            LOCK_MAND | 1,
            -1,
            LOCK_SH | LOCK_NB,
            LOCK_UN | LOCK_NB,
            64,
        ] {
            s.push(Do(0, Op::Flock { slot, op }));
            s.push(Do(0, Op::Flock { slot, op: LOCK_UN }));
        }
    }
    for slot in [0, 1, 2, 3, 4] {
        s.push(Do(0, Op::Close { slot }));
    }
    check("errors", &s);
}

/// Seeded random sequences of non-blocking calls by three actors (and their
/// forks) on one file.
#[test]
fn random_sequences() {
    for seed in [1u64, 2, 3, 0x5eed, 0xdead_beef] {
        let mut r = Rng::new(seed);
        let mut s = vec![Spawn(0), Spawn(1), Spawn(2)];
        let mut live = vec![0usize, 1, 2];
        let mut next = 3;
        for _ in 0..250 {
            let a = r.pick(&live);
            let slot = r.below(4);
            let small = |r: &mut Rng| r.below(24) as i64;
            let op = match r.below(100) {
                0..=9 => open(slot, r.pick(&[O_RDONLY, O_WRONLY, O_RDWR, O_RDWR])),
                10..=14 => Op::Close { slot },
                15..=17 => Op::Dup {
                    slot,
                    to: r.below(4),
                },
                18..=19 => Op::Truncate {
                    slot,
                    len: small(&mut r),
                },
                20..=21 => Op::Seek {
                    slot,
                    off: small(&mut r),
                },
                22 if next < ACTORS - 1 => {
                    live.push(next);
                    next += 1;
                    Op::Fork { new: next - 1 }
                }
                23..=32 => Op::Flock {
                    slot,
                    op: r.pick(&[LOCK_SH, LOCK_EX, LOCK_UN]) | LOCK_NB,
                },
                _ => {
                    let c = r.pick(&[F_GETLK, F_SETLK, F_SETLK, F_SETLK, F_OFD_GETLK, F_OFD_SETLK]);
                    let ty = r.pick(&[F_RDLCK, F_WRLCK, F_UNLCK, F_RDLCK, F_WRLCK]);
                    let whence = r.pick(&[SEEK_SET, SEEK_SET, SEEK_CUR, SEEK_END]);
                    let start = small(&mut r) - if whence == SEEK_SET { 0 } else { 8 };
                    let len = match r.below(6) {
                        0 => 0,
                        1 => -small(&mut r),
                        _ => small(&mut r),
                    };
                    Op::Fcntl {
                        slot,
                        cmd: c,
                        fl: fl(ty, whence, start, len),
                    }
                }
            };
            s.push(Do(a, op));
        }
        // Probe the whole file from a fresh process at the end.
        s.push(Spawn(ACTORS - 1));
        s.push(Do(ACTORS - 1, open(0, O_RDWR)));
        for start in 0..30 {
            s.push(Do(ACTORS - 1, getlk(0, F_WRLCK, start, 1)));
        }
        check(&format!("random seed {seed:#x}"), &s);
    }
}
