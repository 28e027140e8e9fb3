//! Loom models of the fork gate, run on the gate's own code (through the
//! crate's `sync` facade): a thread entering uvfs against a fork's prepare
//! handler, an attach against the owner's entries, the `SHARED` hand-over
//! of the placeholder cache, two threads' first calls racing to build
//! the root, and a slot's take and give-back against a fork (the slot
//! list's lock kept across it). Each runs twice: with `membarrier`'s asymmetric fence taken
//! as registered (light side and `membarrier` both `fence(SeqCst)` under
//! loom, as the module doc of `fork_gate` argues) and without it (the
//! symmetric fallback, `SeqCst` fences in every build).
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --profile test-release -p uvfs-preload --lib
//! ```
//!
//! What the shim guards with the gate (uvfs's state, the owner's fd table
//! in single-user mode, the placeholder cache) is a loom cell here: loom
//! reports any access of it that the gate leaves unordered with another
//! thread's, even where the interleaving itself looks harmless. Counts of
//! what the executions reached (std atomics: loom runs one thread at a
//! time) make sure the waits and both outcomes of each race were explored.

use super::{FORK, Gate, Mine, SHARED, Slot, mask, solo};
use crate::sync::SpinLock;
use loom::cell::UnsafeCell;
use loom::model::Builder;
use loom::sync::atomic::AtomicPtr;
use loom::thread;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

/// A model's builder: every interleaving with at most `preemptions`
/// preemptions per execution.
fn builder(preemptions: usize) -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = Some(preemptions);
    b
}

/// Runs `model` under `b` and says how many executions it took.
fn check(name: &str, b: &Builder, model: impl Fn() + Send + Sync + 'static) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let start = std::time::Instant::now();
    b.check(move || {
        counter.fetch_add(1, SeqCst);
        model();
    });
    eprintln!(
        "{name}: {} executions in {:.2?}",
        runs.load(SeqCst),
        start.elapsed()
    );
}

/// A gate for one execution (leaked, as the shim's is static; so are its
/// slots).
fn gate(asymmetric: bool) -> &'static Gate {
    Box::leak(Box::new(Gate::new(asymmetric)))
}

fn leak<T>(v: T) -> &'static T {
    Box::leak(Box::new(v))
}

/// A cell's value (a plain read, which loom checks against every other
/// thread's access).
fn get<T: Copy>(c: &UnsafeCell<T>) -> T {
    // SAFETY: loom's cell reports an access that could overlap another
    // thread's write (the point of the models); no reference escapes.
    c.with(|v| unsafe { *v })
}

/// Changes a cell's value in place (a plain write, checked by loom).
fn update<T, R>(c: &UnsafeCell<T>, f: impl FnOnce(&mut T) -> R) -> R {
    // SAFETY: as in `get`.
    c.with_mut(|v| f(unsafe { &mut *v }))
}

/// Counts of outcomes across the executions of one model.
struct Seen<const N: usize>([AtomicUsize; N]);

impl<const N: usize> Seen<N> {
    fn new() -> Arc<Self> {
        Arc::new(Seen([const { AtomicUsize::new(0) }; N]))
    }

    fn hit(&self, i: usize) {
        self.0[i].fetch_add(1, SeqCst);
    }

    /// Every outcome was reached by some execution.
    fn must_all(&self, names: [&str; N]) {
        let counts: Vec<usize> = self.0.iter().map(|c| c.load(SeqCst)).collect();
        eprintln!("  {names:?}: {counts:?}");
        for (n, c) in names.iter().zip(&counts) {
            assert!(*c > 0, "no execution reached \"{n}\"");
        }
    }
}

// ---------------------------------------------------------------------------
// A thread entering uvfs against a fork's prepare: never both inside.

/// A thread enters uvfs twice, each time writing uvfs's state (a cell),
/// while another thread forks (its prepare handler, the child's copy of
/// that state, its release handler). The copy never meets the thread
/// inside: loom would report the cell's unordered accesses, and the count
/// of threads inside, read between prepare and release, is 0.
fn fork_against_entries(asymmetric: bool) {
    let seen = Seen::<2>::new();
    let counts = seen.clone();
    check(
        &format!("fork_against_entries(asymmetric: {asymmetric})"),
        &builder(5),
        move || {
            let g = gate(asymmetric);
            let uvfs = leak(UnsafeCell::new(0u32));
            let inside = leak(AtomicUsize::new(0));
            let t = thread::spawn(move || {
                let mine = g.take(|| None);
                for _ in 0..2 {
                    let (_in, _) = g.enter(Some(&mine), FORK);
                    inside.fetch_add(1, SeqCst);
                    update(uvfs, |v| *v += 1);
                    inside.fetch_sub(1, SeqCst);
                }
            });
            g.before_fork();
            assert_eq!(inside.load(SeqCst), 0, "a thread inside uvfs at a fork");
            // The child's copy.
            let copied = get(uvfs);
            counts.hit(if copied == 1 { 1 } else { 0 });
            g.after_fork();
            t.join().unwrap();
            assert_eq!(get(uvfs), 2);
        },
    );
    // Forks before, between and after the entries were all explored (1:
    // a fork between the two entries).
    seen.must_all(["fork before or after both entries", "fork between"]);
}

#[test]
fn fork_against_entries_asymmetric() {
    fork_against_entries(true);
}

#[test]
fn fork_against_entries_symmetric() {
    fork_against_entries(false);
}

// ---------------------------------------------------------------------------
// An attach against the owner's entries.

/// The owner's fd table: its users, and the entries the calls change
/// (cells: loom checks that single-user accesses are never concurrent with
/// another thread's).
struct Table {
    users: UnsafeCell<u32>,
    entries: UnsafeCell<u32>,
    /// The table's lock, taken while it has more than one user.
    lock: loom::sync::Mutex<()>,
}

impl Table {
    fn new() -> &'static Table {
        leak(Table {
            users: UnsafeCell::new(1),
            entries: UnsafeCell::new(0),
            lock: loom::sync::Mutex::new(()),
        })
    }

    /// One call on the table from inside the gate: the single-user path
    /// (no lock) while the caller reads one user; whether it took it.
    fn call(&self) -> bool {
        if get(&self.users) == 1 {
            update(&self.entries, |e| *e += 1);
            true
        } else {
            let _l = self.lock.lock().unwrap();
            update(&self.entries, |e| *e += 1);
            false
        }
    }

    /// `Process::new_thread` of the owner's handle: a second user.
    fn attach(&self) {
        update(&self.users, |u| *u += 1);
    }
}

/// The owner (its slot the first, its handle the table's one user) makes
/// two calls while a second thread's first call attaches to its handle,
/// then makes a call of its own. The owner never takes the single-user
/// path after the attach: loom reports the table's unordered accesses
/// otherwise; and the attacher's write (a second user) is what the owner
/// sees on its next entry.
fn attach_against_owner(asymmetric: bool) {
    let seen = Seen::<2>::new();
    let counts = seen.clone();
    check(
        &format!("attach_against_owner(asymmetric: {asymmetric})"),
        &builder(5),
        move || {
            let g = gate(asymmetric);
            let table = Table::new();
            let owner_mine = g.take(|| None);
            let owner: &'static Slot = owner_mine.slot();
            let t = thread::spawn(move || {
                let mine = g.take(|| Some(owner));
                {
                    let (_in, _) = g.enter(Some(&mine), mask(false));
                    g.attach(|| Some(owner), || table.attach());
                }
                let (_in, _) = g.enter(Some(&mine), mask(false));
                assert!(!table.call(), "the attacher on the single-user path");
            });
            let mut single = 0;
            for _ in 0..2 {
                let (_in, _) = g.enter(Some(&owner_mine), mask(true));
                single += usize::from(table.call());
            }
            t.join().unwrap();
            counts.hit(usize::from(single > 0));
            assert_eq!(get(&table.entries), 3);
            owner_mine.keep();
        },
    );
    seen.must_all(["attach before both calls", "a single-user call first"]);
}

#[test]
fn attach_against_owner_asymmetric() {
    attach_against_owner(true);
}

#[test]
fn attach_against_owner_symmetric() {
    attach_against_owner(false);
}

// ---------------------------------------------------------------------------
// The SHARED hand-over of the placeholder cache.

/// The owner takes the placeholder cache without its lock while its entry
/// read `SHARED` clear; a second thread's first call (its `take`) marks
/// `SHARED` and then uses the cache under the lock. Loom checks the cache's
/// accesses (the spin lock's cell) never overlap or go unordered.
fn shared_handover(asymmetric: bool) {
    let seen = Seen::<2>::new();
    let counts = seen.clone();
    check(
        &format!("shared_handover(asymmetric: {asymmetric})"),
        &builder(5),
        move || {
            let g = gate(asymmetric);
            let pool = leak(SpinLock::new(Vec::<i32>::new()));
            let owner_mine = g.take(|| None);
            let owner: &'static Slot = owner_mine.slot();
            let t = thread::spawn(move || {
                let mine = g.take(|| Some(owner));
                let (_in, word) = g.enter(Some(&mine), mask(false));
                assert!(!solo(false, word));
                pool.lock().push(2);
            });
            let mut unlocked = 0;
            for k in [10, 11] {
                let (_in, word) = g.enter(Some(&owner_mine), mask(true));
                let s = solo(true, word);
                unlocked += usize::from(s);
                pool.lock_unless(s).push(k);
            }
            t.join().unwrap();
            counts.hit(usize::from(unlocked > 0));
            let mut all = pool.lock().clone();
            all.sort_unstable();
            assert_eq!(all, [2, 10, 11]);
            owner_mine.keep();
        },
    );
    seen.must_all(["SHARED before the owner's calls", "an unlocked call first"]);
}

#[test]
fn shared_handover_asymmetric() {
    shared_handover(true);
}

#[test]
fn shared_handover_symmetric() {
    shared_handover(false);
}

// ---------------------------------------------------------------------------
// Two threads' first calls: the build race.

/// What `state.rs` does around the gate, as a model (its `with_state` and
/// `State::acquire`, with the root handle a [`Table`] and `OWNER` a loom
/// pointer): each of two threads takes its slot, enters, and builds the
/// root (becoming its owner) or attaches to it; then makes a call with the
/// placeholder cache (unlocked when `solo`) and the table (single-user
/// path when it has one user). Whichever thread builds, the accesses stay
/// ordered.
fn first_calls(asymmetric: bool) {
    let seen = Seen::<2>::new();
    let counts = seen.clone();
    check(
        &format!("first_calls(asymmetric: {asymmetric})"),
        &builder(4),
        move || {
            let g = gate(asymmetric);
            let pool = leak(SpinLock::new(0u32));
            let root = leak(UnsafeCell::new(false));
            let table = Table::new();
            let owner_ptr: &'static AtomicPtr<Slot> = leak(AtomicPtr::new(std::ptr::null_mut()));
            let owner_slot = move || {
                // SAFETY: a slot pointer comes from a `&'static Slot`.
                unsafe { owner_ptr.load(SeqCst).as_ref() }
            };
            let body = move || -> bool {
                let mine: Mine = g.take(owner_slot);
                let me = mine.slot();
                let owner = {
                    let (_in, _) = g.enter(Some(&mine), mask(false));
                    g.attach(owner_slot, || {
                        update(root, |r| {
                            if *r {
                                table.attach();
                                false
                            } else {
                                *r = true;
                                owner_ptr.store(std::ptr::from_ref(me).cast_mut(), SeqCst);
                                true
                            }
                        })
                    })
                };
                let (_in, word) = g.enter(Some(&mine), mask(owner));
                *pool.lock_unless(solo(owner, word)) += 1;
                if owner {
                    table.call();
                } else {
                    assert!(!table.call());
                }
                drop(_in);
                if owner {
                    mine.keep();
                }
                owner
            };
            let t = thread::spawn(body);
            let here = body();
            let there = t.join().unwrap();
            assert!(here != there, "exactly one owner");
            counts.hit(usize::from(here));
            assert_eq!(*pool.lock(), 2);
            assert_eq!(get(&table.entries), 2);
            assert_eq!(
                g.word.load(loom::sync::atomic::Ordering::SeqCst) & SHARED,
                SHARED
            );
        },
    );
    seen.must_all(["the spawned thread owns", "the main thread owns"]);
}

#[test]
fn first_calls_asymmetric() {
    first_calls(true);
}

#[test]
fn first_calls_symmetric() {
    first_calls(false);
}

// ---------------------------------------------------------------------------
// The hand-back: the owner alone again.

/// The owner makes three calls with the placeholder cache (unlocked when
/// its entry reads `SHARED` clear) while a second thread's calls use it
/// under the lock and the thread then exits, giving its slot back (which
/// clears `SHARED`). The owner's unlocked uses never
/// overlap or go unordered with the others' (loom checks the cache's
/// cell), and some execution has the owner take the cache unlocked again
/// after it was shared.
///
/// A third thread coming and going meanwhile (its `take` racing the
/// clearing, which the slot list's lock serializes) is left out: loom
/// explores the two visitors yielding to each other in `take`'s wait for
/// the owner forever, and reports a livelock.
fn hand_back(asymmetric: bool) {
    let seen = Seen::<2>::new();
    let counts = seen.clone();
    check(
        &format!("hand_back(asymmetric: {asymmetric})"),
        &builder(4),
        move || {
            let g = gate(asymmetric);
            let pool = leak(SpinLock::new(Vec::<i32>::new()));
            let owner_mine = g.take(|| None);
            let owner: &'static Slot = owner_mine.slot();
            let t = thread::spawn(move || {
                let mine = g.take(|| Some(owner));
                {
                    let (_in, word) = g.enter(Some(&mine), mask(false));
                    assert!(!solo(false, word));
                    pool.lock().push(1);
                }
                g.give_back(mine, Some(owner));
            });
            let mut was_shared = false;
            let mut back = false;
            for k in [10, 11, 12] {
                let (_in, word) = g.enter(Some(&owner_mine), mask(true));
                let s = solo(true, word);
                back |= was_shared && s;
                was_shared |= !s;
                pool.lock_unless(s).push(k);
            }
            t.join().unwrap();
            counts.hit(usize::from(back));
            assert_eq!(pool.lock().len(), 4);
            // Everyone else gone: the mark is clear.
            assert_eq!(
                g.word.load(loom::sync::atomic::Ordering::SeqCst) & SHARED,
                0
            );
            owner_mine.keep();
        },
    );
    seen.must_all(["never unlocked after shared", "unlocked again after shared"]);
}

#[test]
fn hand_back_asymmetric() {
    hand_back(true);
}

#[test]
fn hand_back_symmetric() {
    hand_back(false);
}

// ---------------------------------------------------------------------------
// A slot taken and given back against a fork: the child's slot list is
// never one another thread holds.

/// A thread takes its slot and gives it back (its first call and its exit,
/// both outside uvfs, under the slot list's lock) while another thread
/// forks. The child's copy of the list, read between the prepare and
/// release handlers, is never in the middle of the other thread's change:
/// loom would report the list's unordered accesses (in a real fork, the
/// copy's lock would stay held for ever). `early` gives the list's lock
/// back at the end of the prepare handler, as the gate did before: the
/// must-fail twin.
fn slots_against_fork(asymmetric: bool, early: bool) {
    let seen = Seen::<2>::new();
    let counts = seen.clone();
    check(
        &format!("slots_against_fork(asymmetric: {asymmetric}, early: {early})"),
        &builder(3),
        move || {
            let g = gate(asymmetric);
            let forker = g.take(|| None);
            let t = thread::spawn(move || {
                let mine = g.take(|| None);
                g.give_back(mine, None);
            });
            g.before_fork();
            if early {
                g.slots_kept
                    .store(false, loom::sync::atomic::Ordering::Relaxed);
                g.slots.unlock_kept();
            }
            // The child's copy.
            // SAFETY: this thread kept the lock (its `before_fork`); the
            // twin (`early`) gave it back first, which is its bug: loom
            // reports the copy racing the other thread's change.
            let copied = unsafe { g.slots.read_kept(Vec::len) };
            counts.hit(copied - 1);
            g.after_fork();
            t.join().unwrap();
            assert_eq!(g.slot_count(), 2);
            forker.keep();
        },
    );
    // Forks before and after the thread's slot was made were explored.
    seen.must_all(["fork before the thread's slot", "fork after it"]);
}

#[test]
fn slots_against_fork_asymmetric() {
    slots_against_fork(true, false);
}

#[test]
fn slots_against_fork_symmetric() {
    slots_against_fork(false, false);
}

/// The twin: with the list given back before the fork, the child's copy
/// races the other thread's slot (loom reports it).
#[test]
#[should_panic(expected = "Causality violation")]
fn slots_given_back_before_the_fork_race_the_copy() {
    slots_against_fork(false, true);
}
