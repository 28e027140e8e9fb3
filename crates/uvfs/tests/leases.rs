//! File leases (`F_SETLEASE`, `F_GETLEASE`) and their breaking, through the
//! `Process` API: the grant rules compared with the host kernel (scripts of
//! non-blocking steps run on a file in `/dev/shm` and on uvfs, under both
//! fast-path presets), then uvfs's breaks: non-blocking, waiting until the
//! holder answers from another thread, the forced end at a short
//! `lease_break_time`, `EINTR` through the `Sleep` hook, truncate, the
//! release at the last close. Blocked states are waited for by counts
//! (`lock_stats`, the break notices), never by time.

mod support;

use std::ffi::CString;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::host::TempDir;
use support::rng::Rng;
use support::vfs::fasts;
use uvfs::uapi::*;
use uvfs::{
    Errno, FastPaths, Interrupted, LeaseBreak, LeaseNotify, LockStats, Process, Signals, Vfs,
};

type Res = Result<i64, i32>;

/// One step of a script, on the file `f`. Opens are non-blocking, so a
/// conflicting open starts a break and fails at once on both sides.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// open(f, access mode | O_NONBLOCK | extra): becomes the next file.
    Open(i32),
    /// close(file #i).
    Close(usize),
    /// fcntl(file #i, F_SETLEASE, type).
    Set(usize, i32),
    /// fcntl(file #i, F_GETLEASE).
    Get(usize),
    /// fcntl(file #i, F_GETOWN) and F_GETSIG, as one number.
    Own(usize),
    /// fcntl(file #i, F_SETSIG, 10).
    Sig(usize),
    /// dup(file #i): becomes the next file (the same open file).
    Dup(usize),
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn ours<T: Into<i64>>(r: Result<T, Errno>) -> Res {
    r.map(Into::into).map_err(Errno::raw)
}

/// The owner as compared: this process's pid reads as 1, none as 0.
fn owner_code(pid: i64, sig: i64, me: i64) -> i64 {
    let who = match pid {
        0 => 0,
        p if p == me => 1,
        _ => 2,
    };
    who * 100 + sig
}

/// Runs `steps` on the host, in this (non-main) test thread, as the uvfs
/// side runs: a lease names the calling thread as the file's owner, typed
/// as a process, which from a thread other than the main one is no
/// process (F_GETOWN reads 0, a break signals nobody) on both sides.
fn run_host(path: &str, steps: &[Step]) -> Vec<Res> {
    // F_SETSIG's signal and SIGIO, should one come, must not kill the test.
    // SAFETY: installing SIG_IGN; no handler runs.
    unsafe {
        libc::signal(libc::SIGIO, libc::SIG_IGN);
        libc::signal(10, libc::SIG_IGN);
    }
    let p = c(path);
    let mut fds: Vec<i32> = Vec::new();
    let me = i64::from(std::process::id());
    let res = |r: i64| -> Res {
        if r < 0 {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap())
        } else {
            Ok(r)
        }
    };
    // SAFETY: system calls on our own fds (or -1: EBADF) with integer
    // arguments and a valid C string.
    unsafe {
        libc::close(libc::open(
            p.as_ptr(),
            libc::O_CREAT | libc::O_TRUNC | libc::O_RDONLY,
            0o644,
        ));
        let out = steps
            .iter()
            .map(|s| match *s {
                Step::Open(fl) => {
                    let fd = libc::open(p.as_ptr(), fl | libc::O_NONBLOCK);
                    let r = res(fd.into()).map(|_| 0);
                    fds.push(fd);
                    r
                }
                Step::Dup(i) => {
                    let fd = libc::dup(fds[i]);
                    let r = res(fd.into()).map(|_| 0);
                    fds.push(fd);
                    r
                }
                Step::Close(i) => {
                    let r = res(libc::close(fds[i]).into());
                    fds[i] = -1;
                    r
                }
                Step::Set(i, t) => res(libc::fcntl(fds[i], F_SETLEASE, t).into()),
                Step::Get(i) => res(libc::fcntl(fds[i], F_GETLEASE).into()),
                Step::Own(i) => {
                    let pid = libc::fcntl(fds[i], F_GETOWN);
                    if pid < 0 {
                        res(pid.into())
                    } else {
                        let sig = libc::fcntl(fds[i], F_GETSIG);
                        Ok(owner_code(pid.into(), sig.into(), me))
                    }
                }
                Step::Sig(i) => res(libc::fcntl(fds[i], F_SETSIG, 10).into()),
            })
            .collect();
        for &fd in fds.iter().filter(|&&fd| fd >= 0) {
            libc::close(fd);
        }
        out
    }
}

fn run_uvfs(fast: FastPaths, steps: &[Step]) -> Vec<Res> {
    let vfs = Vfs::new(fast);
    let mut p = Process::new(&vfs).unwrap();
    let fd = p.open("/f", O_CREAT | O_RDONLY, 0o644).unwrap();
    p.close(fd).unwrap();
    let me = i64::from(std::process::id());
    let mut fds: Vec<i32> = Vec::new();
    let mut out = Vec::new();
    for s in steps {
        let r = match *s {
            Step::Open(fl) => {
                let r = p.open("/f", fl | O_NONBLOCK, 0);
                fds.push(*r.as_ref().unwrap_or(&-1));
                ours(r).map(|_| 0)
            }
            Step::Close(i) => {
                let r = p.close(fds[i]);
                fds[i] = -1;
                ours(r.map(|()| 0))
            }
            Step::Set(i, t) => ours(p.fcntl(fds[i], F_SETLEASE, t as u64)),
            Step::Get(i) => ours(p.fcntl(fds[i], F_GETLEASE, 0)),
            Step::Own(i) => match (p.fcntl(fds[i], F_GETOWN, 0), p.fcntl(fds[i], F_GETSIG, 0)) {
                (Ok(pid), Ok(sig)) => Ok(owner_code(pid.into(), sig.into(), me)),
                (Err(e), _) | (_, Err(e)) => Err(e.raw()),
            },
            Step::Sig(i) => ours(p.fcntl(fds[i], F_SETSIG, 10)),
            Step::Dup(i) => {
                let r = p.dup(fds[i]);
                fds.push(*r.as_ref().unwrap_or(&-1));
                ours(r).map(|_| 0)
            }
        };
        out.push(r);
    }
    for fd in fds.into_iter().filter(|&fd| fd >= 0) {
        p.close(fd).unwrap();
    }
    // Nothing left once every file is closed.
    let fd = p.open("/f", O_RDONLY, 0).unwrap();
    let s = stats(&mut p, fd);
    assert_eq!(
        (s.leases, s.waiters, s.writers, s.readers),
        (0, 0, 0, 1),
        "{fast}"
    );
    out
}

fn compare(name: &str, steps: &[Step]) {
    let t = TempDir::new(&format!("lease-{name}"));
    let path = format!("{}/f", t.as_str());
    let want = run_host(&path, steps);
    // Both presets, seeds with the opens counted in the inode, and stock
    // with `open_count_lazy` on (heap files: counted in the inode too).
    let more = [
        FastPaths::seeds().with("open_count_lazy", false),
        FastPaths::stock().with("open_count_lazy", true),
    ];
    for fast in fasts().into_iter().chain(more) {
        let got = run_uvfs(fast, steps);
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!(
                w, g,
                "{name}: step {i} {:?} ({fast}); steps {steps:?}",
                steps[i]
            );
        }
    }
}

const RD: i32 = F_RDLCK;
const WR: i32 = F_WRLCK;
const UN: i32 = F_UNLCK;

#[test]
fn grant_rules_match_the_host() {
    use Step::*;
    // Read lease: no writer at all, the caller's own file included.
    compare(
        "read",
        &[
            Open(O_RDONLY),
            Own(0),
            Set(0, RD),
            Get(0),
            Own(0),
            Open(O_RDONLY),
            Set(1, RD),
            Set(1, WR),
            Open(O_RDWR),
            Close(1),
            Set(0, WR),
            Get(0),
            Set(0, UN),
            Own(0),
            Set(0, UN),
            Open(O_RDWR),
            Set(3, RD),
            Set(3, WR),
        ],
    );
    // Write lease: the caller's file is the only open, whatever its mode;
    // an open for neither (access mode 3) counts for nothing.
    compare(
        "write",
        &[
            Open(O_RDWR),
            Set(0, WR),
            Get(0),
            Set(0, RD),
            Open(3),
            Get(0),
            Set(1, RD),
            Set(1, WR),
            Set(0, UN),
            Set(1, WR),
            Set(1, RD),
            Close(0),
            Set(1, WR),
            Get(1),
            Dup(1),
            Get(2),
            Close(1),
            Get(2),
            Set(2, UN),
            Get(2),
        ],
    );
    // Breaks: a non-blocking conflicting open fails with EWOULDBLOCK and
    // starts the break (F_GETLEASE reports the target type), the holder's
    // own open included; new leases wait for the break's end.
    compare(
        "break",
        &[
            Open(O_RDONLY),
            Set(0, WR),
            Sig(0),
            Open(O_RDONLY),
            Get(0),
            Open(O_RDONLY),
            Set(0, RD),
            Get(0),
            Open(O_WRONLY),
            Get(0),
            Set(0, RD),
            Set(0, WR),
            Open(O_RDONLY),
            Set(4, RD),
            Open(O_RDWR | O_TRUNC),
            Set(0, UN),
            Own(0),
            Get(0),
            Set(4, RD),
            Open(O_RDWR),
        ],
    );
    // A read break against a downgrade-pending write lease, then a write
    // break on top of it; a writer's break blocks new read leases.
    compare(
        "both",
        &[
            Open(O_RDONLY),
            Open(O_RDONLY),
            Set(0, RD),
            Set(1, RD),
            Open(O_WRONLY),
            Get(0),
            Get(1),
            Set(0, UN),
            Get(1),
            Open(O_RDONLY),
            Set(3, RD),
            Close(1),
            Set(3, RD),
            Set(3, WR),
            Close(2),
            Close(0),
            Set(3, WR),
            Open(O_RDONLY),
            Get(3),
            Open(O_WRONLY),
            Get(3),
        ],
    );
}

/// Seeded random scripts: opens of every access mode, dups, closes, lease
/// requests of every type and queries, on one file.
#[test]
fn random_scripts_match_the_host() {
    for seed in 0..40 {
        let mut r = Rng::new(seed);
        let mut steps = Vec::new();
        let mut files = 0usize;
        for _ in 0..30 {
            let k = r.below(10);
            let s = if files == 0 || k < 3 {
                files += 1;
                Step::Open(r.pick(&[O_RDONLY, O_WRONLY, O_RDWR, 3, O_RDONLY | O_TRUNC]))
            } else {
                let i = r.below(files);
                match k {
                    3 => Step::Close(i),
                    4 => {
                        files += 1;
                        Step::Dup(i)
                    }
                    5 => Step::Get(i),
                    6 => Step::Own(i),
                    _ => Step::Set(i, r.pick(&[RD, WR, UN])),
                }
            };
            steps.push(s);
        }
        // Closed files stay closed: later steps on them are EBADF on both
        // sides.
        compare(&format!("seed{seed}"), &steps);
    }
}

/// A notify hook that hands each notice to the test.
struct Chan(Mutex<mpsc::Sender<LeaseBreak>>);

impl LeaseNotify for Chan {
    fn lease_break(&self, n: LeaseBreak) {
        let _ = self.0.lock().unwrap().send(n);
    }
}

fn vfs_with(fast: FastPaths, t: Duration) -> (Arc<Vfs>, mpsc::Receiver<LeaseBreak>) {
    let (tx, rx) = mpsc::channel();
    let vfs = Vfs::builder()
        .fastpaths(fast)
        .lease_break_time(t)
        .lease_notify(Arc::new(Chan(Mutex::new(tx))))
        .build();
    (vfs, rx)
}

/// A process holding `ty`'s lease on `/f` (made, opened read-only, the
/// test's process its owner), and the lease's fd.
fn holder(vfs: &Arc<Vfs>, ty: i32) -> (Process, i32) {
    let mut p = Process::new(vfs).unwrap();
    let fd = p.open("/f", O_CREAT | O_RDONLY, 0o644).unwrap();
    p.fcntl(fd, F_SETOWN, u64::from(std::process::id()))
        .unwrap();
    p.fcntl(fd, F_SETLEASE, ty as u64).unwrap();
    (p, fd)
}

/// `q` opening `/f` with `flags` on a thread of its own (an open that may
/// wait for a break); joined, it gives `q` back with the open's result.
fn opening(mut q: Process, flags: i32) -> std::thread::JoinHandle<(Process, Result<i32, Errno>)> {
    std::thread::spawn(move || {
        let r = q.open("/f", flags, 0);
        (q, r)
    })
}

/// Waits until `n` opens are asleep on the lease of `fd`'s file.
fn wait_for_waiters(p: &mut Process, fd: i32, n: usize) {
    while stats(p, fd).waiters != n {
        std::thread::yield_now();
    }
}

/// The lock table's counts and the inode's open counts.
struct Stats {
    leases: usize,
    waiters: usize,
    writers: u32,
    readers: u32,
}

fn stats(p: &mut Process, fd: i32) -> Stats {
    let LockStats {
        leases, waiters, ..
    } = p.lock_stats(fd).unwrap();
    let (writers, readers) = p.open_counts(fd).unwrap();
    Stats {
        leases,
        waiters,
        writers,
        readers,
    }
}

#[test]
fn nonblocking_break_notifies_the_owner() {
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        let fd = p.open("/f", O_CREAT | O_RDONLY, 0o644).unwrap();
        let me = std::process::id() as i32;
        p.fcntl(fd, F_SETOWN, me as u64).unwrap();
        assert_eq!(p.fcntl(fd, F_SETLEASE, WR as u64), Ok(0));
        assert_eq!(p.fcntl(fd, F_GETOWN, 0), Ok(me));
        let mut q = Process::new(&vfs).unwrap();
        assert_eq!(
            q.open("/f", O_RDONLY | O_NONBLOCK, 0),
            Err(Errno::EWOULDBLOCK)
        );
        let n = vfs.take_lease_breaks();
        assert_eq!(
            n,
            vec![LeaseBreak {
                kind: F_OWNER_PID,
                pid: me,
                sig: SIGIO,
                fd
            }]
        );
        assert_eq!(p.fcntl(fd, F_GETLEASE, 0), Ok(RD));
        // Already being broken for a reader: a second reader sends nothing.
        assert_eq!(
            q.open("/f", O_RDONLY | O_NONBLOCK, 0),
            Err(Errno::EWOULDBLOCK)
        );
        assert!(vfs.take_lease_breaks().is_empty());
        // A writer breaks it further, with the F_SETSIG signal; an owner of
        // 0 gets none.
        p.fcntl(fd, F_SETSIG, 40).unwrap();
        assert_eq!(
            q.open("/f", O_WRONLY | O_NONBLOCK, 0),
            Err(Errno::EWOULDBLOCK)
        );
        assert_eq!(vfs.take_lease_breaks()[0].sig, 40);
        assert_eq!(p.fcntl(fd, F_GETLEASE, 0), Ok(UN));
        // The failed opens are uncounted; the holder's unlock ends it.
        let s = stats(&mut p, fd);
        assert_eq!((s.leases, s.writers, s.readers), (1, 0, 1));
        assert_eq!(p.fcntl(fd, F_SETLEASE, UN as u64), Ok(0));
        assert_eq!(
            (p.fcntl(fd, F_GETOWN, 0), p.fcntl(fd, F_GETSIG, 0)),
            (Ok(0), Ok(0))
        );
        let w = q.open("/f", O_WRONLY | O_NONBLOCK, 0).unwrap();
        assert_eq!(stats(&mut q, w).writers, 1);
        q.close(w).unwrap();
        // A lease set with no owner names this thread, typed as a process:
        // not the main thread, so no process (as on Linux): F_GETOWN reads
        // 0 and the break signals nobody.
        p.fcntl(fd, F_SETLEASE, RD as u64).unwrap();
        assert_eq!(p.fcntl(fd, F_GETOWN, 0), Ok(0));
        let ex = p.fcntl_getown_ex(fd).unwrap();
        // SAFETY: no arguments.
        assert_eq!((ex.kind, ex.pid), (F_OWNER_PID, unsafe { libc::gettid() }));
        assert_eq!(
            q.open("/f", O_WRONLY | O_NONBLOCK, 0),
            Err(Errno::EWOULDBLOCK)
        );
        assert!(vfs.take_lease_breaks().is_empty());
    }
}

/// The lease goes with the open file's last reference: a dup keeps it.
#[test]
fn lease_released_at_the_last_close() {
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        let fd = p.open("/f", O_CREAT | O_RDONLY, 0o644).unwrap();
        p.fcntl(fd, F_SETLEASE, RD as u64).unwrap();
        let d = p.dup(fd).unwrap();
        let mut child = p.fork().unwrap();
        p.close(fd).unwrap();
        assert_eq!(p.fcntl(d, F_GETLEASE, 0), Ok(RD));
        p.close(d).unwrap();
        // The fork's copy still holds the open file.
        assert_eq!(child.fcntl(d, F_GETLEASE, 0), Ok(RD));
        assert_eq!(
            child.open("/f", O_WRONLY | O_NONBLOCK, 0),
            Err(Errno::EAGAIN)
        );
        drop(child);
        let w = p.open("/f", O_WRONLY | O_NONBLOCK, 0).unwrap();
        let s = stats(&mut p, w);
        assert_eq!((s.leases, s.waiters, s.writers, s.readers), (0, 0, 1, 0));
    }
}

/// A blocking open waits for the holder, who answers from another thread
/// once it has the notice: a downgrade lets a reader in, an unlock a
/// writer; truncate(2) breaks as a writer.
#[test]
fn blocked_break_ends_when_the_holder_answers() {
    for fast in fasts() {
        let (vfs, rx) = vfs_with(fast, Duration::ZERO);
        let (mut p, fd) = holder(&vfs, WR);
        let q = Process::new(&vfs).unwrap();
        let reader = opening(q, O_RDONLY);
        let n = rx.recv().unwrap();
        assert_eq!(n.fd, fd);
        assert_eq!(p.fcntl(fd, F_GETLEASE, 0), Ok(RD));
        p.fcntl(fd, F_SETLEASE, RD as u64).unwrap();
        let (mut q, r) = reader.join().unwrap();
        let rfd = r.unwrap();
        assert_eq!(p.fcntl(fd, F_GETLEASE, 0), Ok(RD));
        // Now a writer, by truncate: it waits for the unlock.
        let writer = std::thread::spawn(move || {
            let r = q.truncate("/f", 0);
            (q, r)
        });
        rx.recv().unwrap();
        assert_eq!(p.fcntl(fd, F_GETLEASE, 0), Ok(UN));
        p.fcntl(fd, F_SETLEASE, UN as u64).unwrap();
        let (mut q, r) = writer.join().unwrap();
        assert_eq!(r, Ok(()));
        let s = stats(&mut q, rfd);
        assert_eq!((s.leases, s.waiters, s.writers), (0, 0, 0));
    }
}

/// With a short break time and a holder that never answers, the break
/// ends by force: a writer's removes the lease, a reader's downgrades it.
#[test]
fn break_time_ends_the_break_by_force() {
    for fast in fasts() {
        let (vfs, rx) = vfs_with(fast, Duration::from_millis(20));
        let (mut p, fd) = holder(&vfs, WR);
        let mut q = Process::new(&vfs).unwrap();
        let r = q.open("/f", O_RDONLY, 0).unwrap();
        assert_eq!(rx.try_recv().map(|n| n.fd), Ok(fd));
        assert_eq!(p.fcntl(fd, F_GETLEASE, 0), Ok(RD));
        q.close(r).unwrap();
        let w = q.open("/f", O_WRONLY, 0).unwrap();
        assert_eq!(p.fcntl(fd, F_GETLEASE, 0), Ok(UN));
        // Removed by force, as an unlock: the owner is cleared too.
        assert_eq!(p.fcntl(fd, F_GETOWN, 0), Ok(0));
        let s = stats(&mut q, w);
        assert_eq!((s.leases, s.waiters), (0, 0));
    }
}

/// An open waiting for a break is interrupted through the `Sleep` hook:
/// `EINTR`, its count given back, the break still under way; with
/// `Restart` it waits on until the holder unlocks.
#[test]
fn waiting_open_interrupted() {
    for fast in fasts() {
        let (vfs, rx) = vfs_with(fast, Duration::ZERO);
        let (mut p, fd) = holder(&vfs, RD);
        let mut q = Process::new(&vfs).unwrap();
        let sig = Signals::new();
        q.set_sleep(Some(sig.clone() as Arc<dyn uvfs::Sleep>));
        // Pending before the sleep.
        sig.interrupt(Interrupted::Eintr);
        assert_eq!(q.open("/f", O_WRONLY, 0), Err(Errno::EINTR));
        rx.recv().unwrap();
        let s = stats(&mut p, fd);
        assert_eq!((s.leases, s.waiters, s.writers, s.readers), (1, 0, 0, 1));
        assert_eq!(p.fcntl(fd, F_GETLEASE, 0), Ok(UN));
        // During the sleep.
        let s2 = sig.clone();
        let t = opening(q, O_WRONLY);
        wait_for_waiters(&mut p, fd, 1);
        s2.interrupt(Interrupted::Eintr);
        let (q, r) = t.join().unwrap();
        assert_eq!(r, Err(Errno::EINTR));
        assert_eq!(stats(&mut p, fd).writers, 0);
        // Restart: waits on; the unlock lets it in.
        let t = opening(q, O_WRONLY);
        wait_for_waiters(&mut p, fd, 1);
        sig.interrupt(Interrupted::Restart);
        while sig.pending() {
            std::thread::yield_now();
        }
        assert_eq!(stats(&mut p, fd).waiters, 1);
        p.fcntl(fd, F_SETLEASE, UN as u64).unwrap();
        let (_q, r) = t.join().unwrap();
        assert!(r.is_ok());
        assert_eq!(stats(&mut p, fd).writers, 1);
    }
}

/// Threads open the file for writing while another sets a read lease and
/// drops it (by unlock or by close) once a break started, round after
/// round: each round the lease is granted (the openers wait for it at a
/// gate), then every opener opens, breaking it or finding it gone, racing
/// the holder's answer. No opener is left asleep (a lost wake-up hangs the
/// test: the break time is unlimited) and at the end no lease, waiter or
/// count is left. Bounded by counts: a fixed number of rounds.
#[test]
fn stress_openers_against_a_leasing_thread() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    const OPENERS: usize = 3;
    const ROUNDS: usize = 300;
    // Both presets, and seeds with the opens counted in the inode.
    let lazy_off = FastPaths::seeds().with("open_count_lazy", false);
    for fast in fasts().into_iter().chain([lazy_off]) {
        let (vfs, _rx) = vfs_with(fast, Duration::ZERO);
        let mut p = Process::new(&vfs).unwrap();
        let keep = p.open("/f", O_CREAT | O_RDONLY, 0o644).unwrap();
        p.close(keep).unwrap();
        let gate = Arc::new(AtomicUsize::new(0));
        let opened = Arc::new(AtomicUsize::new(0));
        let openers: Vec<_> = (0..OPENERS)
            .map(|_| {
                let mut q = Process::new(&vfs).unwrap();
                let (gate, opened) = (gate.clone(), opened.clone());
                std::thread::spawn(move || {
                    for round in 1..=ROUNDS {
                        while gate.load(SeqCst) < round {
                            std::thread::yield_now();
                        }
                        let fd = q.open("/f", O_WRONLY, 0).unwrap();
                        q.close(fd).unwrap();
                        opened.fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        for round in 1..=ROUNDS {
            let fd = p.open("/f", O_RDONLY, 0).unwrap();
            assert_eq!(p.fcntl(fd, F_SETLEASE, RD as u64), Ok(0), "round {round}");
            gate.store(round, SeqCst);
            while p.fcntl(fd, F_GETLEASE, 0) != Ok(UN) {
                std::thread::yield_now();
            }
            if round % 2 == 0 {
                p.fcntl(fd, F_SETLEASE, UN as u64).unwrap();
            }
            p.close(fd).unwrap();
            while opened.load(SeqCst) < round * OPENERS {
                std::thread::yield_now();
            }
        }
        for t in openers {
            t.join().unwrap();
        }
        let fd = p.open("/f", O_RDONLY, 0).unwrap();
        let s = stats(&mut p, fd);
        assert_eq!(
            (s.leases, s.waiters, s.writers, s.readers),
            (0, 0, 0, 1),
            "{fast}"
        );
    }
}

/// The opens leases are judged by, counted in the inode or in the files
/// (`open_count_lazy`, which needs the file pool): readers, writers,
/// `O_PATH` and access mode 3 (neither), a dup (one file), an open that
/// failed on a lease (uncounted), and every count gone with the last close.
#[test]
fn open_counts_in_the_inode_or_in_the_files() {
    let combos = [
        FastPaths::seeds(),
        FastPaths::stock(),
        FastPaths::seeds().with("open_count_lazy", false),
        FastPaths::stock().with("open_count_lazy", true),
    ];
    for fast in combos {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        let r1 = p.open("/f", O_CREAT | O_RDONLY, 0o644).unwrap();
        assert_eq!(p.open_counts(r1), Ok((0, 1)), "{fast}");
        let r2 = p.open("/f", O_RDONLY, 0).unwrap();
        let w = p.open("/f", O_WRONLY, 0).unwrap();
        let path = p.open("/f", O_PATH, 0).unwrap();
        let neither = p.open("/f", 3, 0).unwrap();
        let d = p.dup(w).unwrap();
        assert_eq!(p.open_counts(r1), Ok((1, 2)), "{fast}");
        // A write lease needs the caller's file to be the only open.
        assert_eq!(p.fcntl(r1, F_SETLEASE, WR as u64), Err(Errno::EAGAIN));
        for fd in [r2, w, path, neither, d] {
            p.close(fd).unwrap();
        }
        assert_eq!(p.open_counts(r1), Ok((0, 1)), "{fast}");
        assert_eq!(p.fcntl(r1, F_SETLEASE, WR as u64), Ok(0), "{fast}");
        assert_eq!(p.fcntl(r1, F_GETLEASE, 0), Ok(WR), "{fast}");
        // An open that was counted, then failed on the lease, is uncounted.
        assert_eq!(
            p.open("/f", O_RDONLY | O_NONBLOCK, 0),
            Err(Errno::EWOULDBLOCK),
            "{fast}"
        );
        assert_eq!(p.open_counts(r1), Ok((0, 1)), "{fast}");
        p.close(r1).unwrap();
        let r = p.open("/f", O_RDONLY, 0).unwrap();
        assert_eq!(p.open_counts(r), Ok((0, 1)), "{fast}");
        p.close(r).unwrap();
    }
}
