//! Stress of the shared table's fd allocation with `fd_bits_lockfree` on
//! and off, and of its close with `fd_close_lockless` on and off (issue
//! 19): four threads sharing one table open, dup, dup2 between their own
//! fds, copy the table (fork), look up and close, each holding up to
//! `HOLD` fds at once, so the table crosses
//! its first 64 fds (lockless claims below, the locked path and growth
//! above) many times. Counts and invariants only, no timing:
//!
//! - an fd is never handed to two threads at once (an owner word per fd,
//!   claimed by a swap that must find it zero);
//! - lowest-fd: when a thread is handed an fd, at most `THREADS * HOLD - 1`
//!   fds are taken (every thread holds fewer than `HOLD` others plus its one
//!   allocation in flight), so the lowest free fd, which it must get, is
//!   below `THREADS * HOLD`; a stale `next_fd` or a lost free pushes fds
//!   past it;
//! - a lookup of an owned fd returns the file the owner put there, and so
//!   does the same fd in a copy of the table the owner made (fork's copy
//!   while other threads close and open);
//! - at the end the table is empty, `check_invariants` holds, every file was
//!   released exactly once.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use support::rng::Rng;
use uvfs::uapi::{O_RDONLY, O_RDWR};
use uvfs::{Errno, FastPaths, File, FileOps, Process, Vfs};

const THREADS: usize = 4;
const HOLD: usize = 24;
const STEPS: usize = 20_000;

struct Probe {
    id: usize,
    releases: Arc<AtomicUsize>,
}

impl FileOps for Probe {
    fn release(&self, _file: &File) {
        self.releases.fetch_add(1, SeqCst);
    }
}

fn probe_id(f: &File) -> usize {
    let ops: &dyn FileOps = &**f.ops().unwrap();
    let any: &dyn std::any::Any = ops;
    any.downcast_ref::<Probe>().unwrap().id
}

fn run(fast: FastPaths, seed: u64) {
    let vfs = Vfs::new(fast);
    let mut main = Process::new(&vfs).unwrap();
    let owner: Arc<Vec<AtomicUsize>> = Arc::new((0..1024).map(|_| AtomicUsize::new(0)).collect());
    let releases = Arc::new(AtomicUsize::new(0));
    let opened = AtomicUsize::new(0);
    // Grown before the threads start, so claims above fd 63 (under the
    // lock) happen in every run: whether the threads' own fds ever pass 63
    // depends on how the scheduler overlaps them, which a test must not
    // depend on. Allocation racing growth itself is the loom models' case
    // (`fdtable/loom_tests.rs`).
    let pre: Vec<i32> = (0..65)
        .map(|_| main.open("/", O_RDONLY, 0).unwrap())
        .collect();
    assert!(
        main.fd_table().max_fds() > 64,
        "`{fast}`: the table did not grow"
    );
    for fd in pre {
        main.close(fd).unwrap();
    }
    let handles: Vec<Process> = (0..THREADS).map(|_| main.new_thread()).collect();
    std::thread::scope(|s| {
        for (me, mut p) in handles.into_iter().enumerate() {
            let (owner, releases, opened) = (&owner, &releases, &opened);
            s.spawn(move || {
                let mut rng = Rng::new(seed ^ ((me as u64 + 1) * 0x9e37_79b9));
                // (fd, probe id) of the files this thread holds.
                let mut held: Vec<(i32, usize)> = Vec::new();
                let claim = |fd: i32| {
                    assert!(
                        (fd as usize) < THREADS * HOLD,
                        "fd {fd} handed out with at most {} fds taken",
                        THREADS * HOLD - 1
                    );
                    let prev = owner[fd as usize].swap(me + 1, SeqCst);
                    assert_eq!(prev, 0, "fd {fd} handed to threads {prev} and {}", me + 1);
                };
                for _ in 0..STEPS {
                    let r = rng.below(100);
                    if held.len() < HOLD - 1 && (r < 45 || held.is_empty()) {
                        let id = opened.fetch_add(1, SeqCst);
                        let ops = Arc::new(Probe {
                            id,
                            releases: releases.clone(),
                        });
                        let fd = p
                            .open_with(O_RDWR, |o| {
                                o.set_ops(ops);
                                Ok(())
                            })
                            .unwrap();
                        claim(fd);
                        held.push((fd, id));
                    } else if held.len() < HOLD - 1 && r < 60 {
                        let (src, id) = held[rng.below(held.len())];
                        let fd = p.dup(src).unwrap();
                        claim(fd);
                        held.push((fd, id));
                    } else if r < 70 && !held.is_empty() {
                        let (fd, id) = held[rng.below(held.len())];
                        let f = p.fget_raw(fd).expect("an owned fd is open");
                        assert_eq!(probe_id(&f), id, "fd {fd} holds another file");
                    } else if r < 74 && held.len() > 1 {
                        // dup2 between two of this thread's fds: the
                        // target's file is replaced (and put) while other
                        // threads close their own fds without the lock.
                        let a = rng.below(held.len());
                        let b = (a + 1 + rng.below(held.len() - 1)) % held.len();
                        let (src, id) = held[a];
                        let dst = held[b].0;
                        assert_eq!(p.dup2(src, dst), Ok(dst));
                        held[b].1 = id;
                    } else if r < 75 {
                        let copy = p.fd_table().copy(None).unwrap();
                        for &(fd, id) in &held {
                            let f = copy.get(fd).expect("an owned fd is in the copy");
                            assert_eq!(probe_id(&f), id, "fd {fd} copied with another file");
                        }
                        if let Err(e) = copy.check_invariants() {
                            panic!("the copy: {e}");
                        }
                    } else if !held.is_empty() {
                        let (fd, _) = held.swap_remove(rng.below(held.len()));
                        owner[fd as usize].store(0, SeqCst);
                        p.close(fd).unwrap();
                    }
                }
                for (fd, _) in held {
                    owner[fd as usize].store(0, SeqCst);
                    p.close(fd).unwrap();
                }
            });
        }
    });
    let table = main.fd_table();
    assert_eq!(table.open_fds(), Vec::<u32>::new(), "`{fast}`");
    if let Err(e) = table.check_invariants() {
        panic!("`{fast}`: {e}");
    }
    assert_eq!(main.close(0), Err(Errno::EBADF));
    drop(main);
    assert_eq!(releases.load(SeqCst), opened.load(SeqCst), "`{fast}`");
}

fn seed() -> u64 {
    let seed = std::env::var("UVFS_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0019_b175);
    eprintln!("UVFS_STRESS_SEED={seed}");
    seed
}

#[test]
fn shared_allocation_with_and_without_the_lockfree_bits() {
    let seed = seed();
    for on in [true, false] {
        for base in [FastPaths::seeds(), FastPaths::stock()] {
            run(base.with("fd_bits_lockfree", on), seed);
        }
    }
}

/// `fd_close_lockless` on and off, over the lockless bits (which it
/// needs), under both presets.
#[test]
fn shared_close_with_and_without_the_lock() {
    let seed = seed();
    for on in [true, false] {
        for base in [FastPaths::seeds(), FastPaths::stock()] {
            run(
                base.with("fd_bits_lockfree", true)
                    .with("fd_close_lockless", on),
                seed ^ 0xc105e,
            );
        }
    }
}
