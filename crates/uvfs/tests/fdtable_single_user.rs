//! Stress test of the single-user fd table (`fd_single_user`): a process
//! whose one thread writes its table without the lock, over and over made
//! shared by a new thread and handed back when that thread exits, with the
//! exiting thread's last calls and drop racing the owner's calls.
//!
//! Each round: the owner, alone, opens, dups and closes with exact
//! expectations (the lowest free fd, every time); then it makes a thread
//! and both run calls at once: opens, dups and closes of their own fds, and
//! lookups of fd 0 (the owner's anchor, never closed), which must return
//! the anchor's file. The helper exits after a number of calls drawn from
//! the round's seed while the owner keeps going for a drawn number more, so
//! the owner's calls fall before, across and after the exit, taking the
//! locked path or the unlocked one by the count they read.
//!
//! Checks: no fd is ever handed out twice (each holder claims the number in
//! a shared table of flags and a second claim fails), lookups of the anchor
//! find it, the bitmaps stay consistent and the open fds are exactly the
//! owner's after each round; at the end every file was released once and
//! flushed once per close. Runs under both presets and each with the switch
//! flipped, counting calls, never time.

mod support;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;
use support::rng::Rng;
use uvfs::uapi::O_RDWR;
use uvfs::{Errno, FastPaths, File, FileOps, Process, Vfs};

const ROUNDS: usize = 150;
/// Fds a side holds at most; the claim table covers both sides.
const HOLD: usize = 24;
const CLAIMS: usize = 4 * HOLD + 8;

/// A file's counters: flushes (one per close of an fd) and releases.
struct Probe {
    anchor: bool,
    flushed: Arc<AtomicUsize>,
    released: Arc<AtomicUsize>,
}

impl FileOps for Probe {
    fn flush(&self, _: &File) -> Result<(), Errno> {
        self.flushed.fetch_add(1, SeqCst);
        Ok(())
    }

    fn release(&self, _: &File) {
        self.released.fetch_add(1, SeqCst);
    }
}

struct World {
    claimed: Vec<AtomicBool>,
    opened: AtomicUsize,
    closes: AtomicUsize,
    flushed: Arc<AtomicUsize>,
    released: Arc<AtomicUsize>,
}

impl World {
    fn claim(&self, fd: i32) {
        let fd = fd as usize;
        assert!(fd < CLAIMS, "fd {fd} beyond every holder's share");
        assert!(
            !self.claimed[fd].swap(true, SeqCst),
            "fd {fd} handed out twice"
        );
    }

    fn unclaim(&self, fd: i32) {
        assert!(
            self.claimed[fd as usize].swap(false, SeqCst),
            "fd {fd} not claimed"
        );
    }

    fn open(&self, p: &mut Process, anchor: bool) -> i32 {
        let ops = Arc::new(Probe {
            anchor,
            flushed: self.flushed.clone(),
            released: self.released.clone(),
        });
        let fd = p
            .open_with(O_RDWR, |o| {
                o.set_ops(ops);
                Ok(())
            })
            .expect("open");
        self.opened.fetch_add(1, SeqCst);
        self.claim(fd);
        fd
    }

    fn close(&self, p: &mut Process, fd: i32) {
        self.unclaim(fd);
        p.close(fd).expect("close of an owned fd");
        self.closes.fetch_add(1, SeqCst);
    }

    fn dup(&self, p: &mut Process, fd: i32) -> i32 {
        let new = p.dup(fd).expect("dup of an owned fd");
        self.claim(new);
        new
    }

    /// One call of a side holding `own`: open, dup, close or a lookup of
    /// the anchor at fd 0.
    fn step(&self, p: &mut Process, rng: &mut Rng, own: &mut Vec<i32>) {
        match rng.below(4) {
            0 if own.len() < HOLD => own.push(self.open(p, false)),
            1 if !own.is_empty() && own.len() < HOLD => {
                let fd = own[rng.below(own.len())];
                own.push(self.dup(p, fd));
            }
            2 if !own.is_empty() => {
                let fd = own.swap_remove(rng.below(own.len()));
                self.close(p, fd);
            }
            _ => {
                let f = p.fd_table().get(0).expect("the anchor at fd 0");
                let ops = f.ops().expect("opened with ops");
                let probe = (&**ops as &dyn std::any::Any)
                    .downcast_ref::<Probe>()
                    .expect("every file's ops is a Probe");
                assert!(probe.anchor, "fd 0 holds another file than the anchor");
            }
        }
    }
}

fn run(fast: FastPaths, seed: u64) {
    eprintln!("-- fast paths: {fast}, seed {seed:#x}");
    let w = World {
        claimed: (0..CLAIMS).map(|_| AtomicBool::new(false)).collect(),
        opened: AtomicUsize::new(0),
        closes: AtomicUsize::new(0),
        flushed: Arc::new(AtomicUsize::new(0)),
        released: Arc::new(AtomicUsize::new(0)),
    };
    let vfs = Vfs::new(fast);
    let mut p = Process::new(&vfs).unwrap();
    let mut rng = Rng::new(seed);
    assert_eq!(w.open(&mut p, true), 0);
    let mut own: Vec<i32> = Vec::new();
    for round in 0..ROUNDS {
        // Alone: exact lowest-fd results.
        assert_eq!(p.fd_table().users(), 1, "round {round}");
        for _ in 0..4 {
            let lowest = (1..).find(|fd| !own.contains(fd)).unwrap();
            let fd = if own.is_empty() || rng.below(2) == 0 {
                w.open(&mut p, false)
            } else {
                w.dup(&mut p, own[0])
            };
            assert_eq!(fd, lowest, "round {round}: not the lowest free fd");
            own.push(fd);
        }
        while own.len() > HOLD / 2 {
            let fd = own.swap_remove(rng.below(own.len()));
            w.close(&mut p, fd);
        }
        // Shared, then handed back while the owner runs.
        let helper_calls = 1 + rng.below(200);
        let after = rng.below(100);
        let helper_seed = rng.next();
        let mut t = p.new_thread();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (w, done) = (&w, &done);
            s.spawn(move || {
                let mut rng = Rng::new(helper_seed);
                let mut mine = Vec::new();
                for _ in 0..helper_calls {
                    w.step(&mut t, &mut rng, &mut mine);
                }
                for fd in mine {
                    w.close(&mut t, fd);
                }
                drop(t);
                done.store(true, SeqCst);
            });
            // Until the helper is gone (counted in calls, whatever it takes),
            // then `after` calls more.
            while !done.load(SeqCst) {
                w.step(&mut p, &mut rng, &mut own);
                std::thread::yield_now();
            }
            for _ in 0..after {
                w.step(&mut p, &mut rng, &mut own);
            }
        });
        assert_eq!(p.fd_table().users(), 1, "round {round}");
        p.fd_table().check_invariants().unwrap();
        let mut expect: Vec<u32> = own.iter().map(|&fd| fd as u32).collect();
        expect.push(0);
        expect.sort_unstable();
        assert_eq!(p.fd_table().open_fds(), expect, "round {round}");
    }
    for fd in std::mem::take(&mut own) {
        w.close(&mut p, fd);
    }
    w.close(&mut p, 0);
    drop(p);
    assert_eq!(
        w.flushed.load(SeqCst),
        w.closes.load(SeqCst),
        "a flush per close"
    );
    assert_eq!(
        w.released.load(SeqCst),
        w.opened.load(SeqCst),
        "a release per file"
    );
}

#[test]
fn single_user_table_handed_over_and_back() {
    let presets = [
        FastPaths::seeds(),
        FastPaths::seeds().with("fd_single_user", false),
        FastPaths::stock(),
        FastPaths::stock().with("fd_single_user", true),
    ];
    for (i, fast) in presets.into_iter().enumerate() {
        run(fast, 0x5151_0000 + i as u64);
    }
}
