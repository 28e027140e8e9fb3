//! Stress tests of the advisory locks: many threads of several processes
//! block on, wake from, and race each other's lock calls against close,
//! dup2, fork and exit. What is checked, by counting, never by timing:
//! mutual exclusion while a lock is held, every blocked call returns (a
//! lost wake-up hangs the test), random two-lock orders never deadlock for
//! good (one of each cycle gets `EDEADLK`), and the file's lock table is
//! empty at the end: no lock, waiter or waits-for record outlives the
//! processes, threads and files that made it.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::rng::Rng;
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Flock, LockStats, Process, Vfs};

const ITERS: usize = 300;

fn fl(ty: i32, start: i64, len: i64) -> Flock {
    Flock {
        l_type: ty as i16,
        l_whence: SEEK_SET as i16,
        l_start: start,
        l_len: len,
        l_pid: 0,
    }
}

fn setup(fast: FastPaths) -> (Arc<Vfs>, Process, i32) {
    let vfs = Vfs::new(fast);
    let mut observer = Process::new(&vfs).unwrap();
    let fd = observer.open("/f", O_RDONLY | O_CREAT, 0o644).unwrap();
    (vfs, observer, fd)
}

fn assert_empty(observer: &mut Process, fd: i32) {
    assert_eq!(
        observer.lock_stats(fd).unwrap(),
        LockStats::default(),
        "the lock table is not empty"
    );
}

/// Byte locks held by one owner at a time: each of 4 processes (2 threads
/// each, sharing the owner) takes F_SETLKW on one of 3 bytes, checks it is
/// alone there among processes, and unlocks. EDEADLK from an owner-level
/// cycle (two threads of one owner, one holding and one waiting) is retried;
/// how many there were is printed, never asserted.
#[test]
fn setlkw_mutual_exclusion_and_wakeups() {
    for fast in [FastPaths::seeds(), FastPaths::stock()] {
        let (vfs, mut observer, ofd) = setup(fast);
        let holders: Arc<[AtomicUsize; 3]> = Arc::new(Default::default());
        let grants = Arc::new(AtomicUsize::new(0));
        let edeadlk = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for proc_no in 0..4u64 {
            let mut p = Process::new(&vfs).unwrap();
            let fd = p.open("/f", O_RDWR, 0).unwrap();
            let t2 = p.new_thread();
            for (i, mut p) in [p, t2].into_iter().enumerate() {
                let holders = holders.clone();
                let grants = grants.clone();
                let edeadlk = edeadlk.clone();
                // Threads of one process share the owner: they do not
                // exclude each other, so only thread 0 checks and only it
                // touches byte 0..3; thread 1 locks bytes 10..13.
                threads.push(std::thread::spawn(move || {
                    let mut r = Rng::new(proc_no * 2 + i as u64 + 1);
                    for _ in 0..ITERS {
                        let b = r.below(3);
                        let base = if i == 0 { 0 } else { 10 };
                        // Owners, not threads, are what the deadlock
                        // detector follows (as Linux's does): thread 0 of P
                        // holding byte 1 while thread 1 of P waits on Q, and
                        // Q's thread 0 waiting on byte 1, is a cycle P -> Q
                        // -> P, so EDEADLK is a correct answer here. Retry
                        // on it; the holder releases and the cycle goes.
                        loop {
                            let mut l = fl(F_WRLCK, base + b as i64, 1);
                            match p.fcntl_lock(fd, F_SETLKW, &mut l) {
                                Ok(_) => break,
                                Err(Errno::EDEADLK) => {
                                    edeadlk.fetch_add(1, Ordering::Relaxed);
                                    std::thread::yield_now();
                                }
                                Err(e) => panic!("F_SETLKW: {e:?}"),
                            }
                        }
                        if i == 0 {
                            assert_eq!(holders[b].fetch_add(1, Ordering::SeqCst), 0);
                            std::thread::yield_now();
                            holders[b].fetch_sub(1, Ordering::SeqCst);
                        }
                        grants.fetch_add(1, Ordering::Relaxed);
                        let mut u = fl(F_UNLCK, base + b as i64, 1);
                        p.fcntl_lock(fd, F_SETLK, &mut u).unwrap();
                    }
                }));
            }
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(grants.load(Ordering::Relaxed), 4 * 2 * ITERS);
        eprintln!(
            "setlkw stress: {} EDEADLK answers retried",
            edeadlk.load(Ordering::Relaxed)
        );
        assert_empty(&mut observer, ofd);
    }
}

/// flock(LOCK_EX) from 6 open files (in 3 processes): one holder at a
/// time, every sleeper woken; plus conversions LOCK_SH -> LOCK_EX.
#[test]
fn flock_mutual_exclusion_and_wakeups() {
    for fast in [FastPaths::seeds(), FastPaths::stock()] {
        let (vfs, mut observer, ofd) = setup(fast);
        let exclusive = Arc::new(AtomicUsize::new(0));
        let shared = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for n in 0..6u64 {
            let mut p = Process::new(&vfs).unwrap();
            let exclusive = exclusive.clone();
            let shared = shared.clone();
            threads.push(std::thread::spawn(move || {
                let fd = p.open("/f", O_RDONLY, 0).unwrap();
                let mut r = Rng::new(n + 100);
                for _ in 0..ITERS {
                    if r.chance(30) {
                        p.flock(fd, LOCK_SH).unwrap();
                        shared.fetch_add(1, Ordering::SeqCst);
                        assert_eq!(exclusive.load(Ordering::SeqCst), 0);
                        shared.fetch_sub(1, Ordering::SeqCst);
                    }
                    // From shared (a conversion) or from nothing.
                    p.flock(fd, LOCK_EX).unwrap();
                    assert_eq!(exclusive.fetch_add(1, Ordering::SeqCst), 0);
                    assert_eq!(shared.load(Ordering::SeqCst), 0);
                    std::thread::yield_now();
                    exclusive.fetch_sub(1, Ordering::SeqCst);
                    p.flock(fd, LOCK_UN).unwrap();
                }
                // Exit without unlocking half the time: the last close does.
                if n % 2 == 0 {
                    p.flock(fd, LOCK_EX).unwrap();
                }
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_empty(&mut observer, ofd);
    }
}

/// Four owners take two of four bytes in random order with F_SETLKW; on
/// EDEADLK an owner drops what it holds and tries again. Every owner
/// finishes (a cycle the detector missed would hang), and at least one
/// EDEADLK is seen over the run.
#[test]
fn random_two_lock_orders_resolve() {
    let deadlocks = Arc::new(AtomicUsize::new(0));
    for fast in [FastPaths::seeds(), FastPaths::stock()] {
        let (vfs, mut observer, ofd) = setup(fast);
        let mut threads = Vec::new();
        for n in 0..4u64 {
            let mut p = Process::new(&vfs).unwrap();
            let deadlocks = deadlocks.clone();
            threads.push(std::thread::spawn(move || {
                let fd = p.open("/f", O_RDWR, 0).unwrap();
                let mut r = Rng::new(n + 7);
                let mut done = 0;
                while done < ITERS {
                    let a = r.below(4) as i64;
                    let b = (a + 1 + r.below(3) as i64) % 4;
                    let mut l = fl(F_WRLCK, a, 1);
                    p.fcntl_lock(fd, F_SETLKW, &mut l).unwrap();
                    std::thread::yield_now();
                    let mut l = fl(F_WRLCK, b, 1);
                    match p.fcntl_lock(fd, F_SETLKW, &mut l) {
                        Ok(_) => done += 1,
                        Err(Errno::EDEADLK) => {
                            deadlocks.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                    let mut u = fl(F_UNLCK, 0, 0);
                    p.fcntl_lock(fd, F_SETLK, &mut u).unwrap();
                }
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_empty(&mut observer, ofd);
    }
    eprintln!(
        "EDEADLK returned {} times",
        deadlocks.load(Ordering::Relaxed)
    );
}

/// Lock calls race close, dup2 over the fd, fork (whose child locks and
/// exits) and thread exit. Outcomes vary; whatever happens, no entry is
/// left once everyone is gone.
#[test]
fn close_fork_exit_race_lock_calls() {
    for fast in [FastPaths::seeds(), FastPaths::stock()] {
        let (vfs, mut observer, ofd) = setup(fast);
        let ebadf = Arc::new(AtomicUsize::new(0));
        for round in 0..20u64 {
            let mut p = Process::new(&vfs).unwrap();
            let fd = p.open("/f", O_RDWR, 0).unwrap();
            let mut threads = Vec::new();
            for t in 0..3u64 {
                let mut q = p.new_thread();
                let ebadf = ebadf.clone();
                threads.push(std::thread::spawn(move || {
                    let mut r = Rng::new(round * 10 + t + 1);
                    for _ in 0..60 {
                        match r.below(10) {
                            // Reopen onto the fd, or close it.
                            0 => {
                                if let Ok(nfd) = q.open("/f", O_RDWR, 0) {
                                    let _ = q.dup2(nfd, fd);
                                    let _ = q.close(nfd);
                                }
                            }
                            1 => {
                                let _ = q.close(fd);
                            }
                            // A fork whose child locks, then exits.
                            2 => {
                                let mut c = q.fork().unwrap();
                                let mut l = fl(F_RDLCK, 100 + t as i64, 1);
                                let _ = c.fcntl_lock(fd, F_SETLK, &mut l);
                                let _ = c.flock(fd, LOCK_SH | LOCK_NB);
                                let mut l = fl(F_WRLCK, 200, 5);
                                let _ = c.fcntl_lock(fd, F_OFD_SETLK, &mut l);
                                drop(c);
                            }
                            3 => {
                                let _ = q.flock(fd, LOCK_EX | LOCK_NB);
                            }
                            4 => {
                                let mut l = fl(F_WRLCK, 200, 5);
                                let _ = q.fcntl_lock(fd, F_OFD_SETLK, &mut l);
                            }
                            _ => {
                                let ty = r.pick(&[F_RDLCK, F_WRLCK, F_UNLCK]);
                                let mut l = fl(ty, r.below(8) as i64, r.below(4) as i64);
                                if q.fcntl_lock(fd, F_SETLK, &mut l) == Err(Errno::EBADF) {
                                    ebadf.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                    }
                    // The thread exits (its handle goes).
                }));
            }
            for t in threads {
                t.join().unwrap();
            }
            drop(p);
            assert_empty(&mut observer, ofd);
        }
        assert!(ebadf.load(Ordering::Relaxed) > 0, "no call met a closed fd");
    }
}
