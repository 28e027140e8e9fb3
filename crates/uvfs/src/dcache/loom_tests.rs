//! Loom models of the dentry cache's lockless protocols: one step of the
//! lockless path walk (`Nd::lookup_rcu`: chain search, parent validation,
//! legitimize) racing a rename (`d_move`, with or without a victim), an
//! unlink (`d_drop`) and an instantiation; and the lock-free final `dput`
//! racing `d_drop` by another holder, the shrinker, and a lockless revival;
//! and the prune of a removed directory (`prune_dead_dir`, rmdir's
//! `shrink_dcache_parent`) racing a child's creation, the shrinker, a
//! lockless step, a child's final put and a rename out of the directory.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p uvfs --lib dcache::
//! ```
//!
//! The models drive the cache through [`loom_api`](super::loom_api) (built
//! only for these models). Under loom, retired dentries and names are leaked
//! rather than freed after an epoch (crossbeam-epoch is not loom-aware), so
//! a model can inspect any dentry it ever made, dead or alive, through
//! `World::state`; names hash without their parent's address so chains are
//! the same in every execution; and an out-of-line name's length sits in a
//! loom cell, so a walker reading such a name it has no happens-before edge
//! to is reported (an inline name is an atomic word of the dentry).
//!
//! What each lookup may return is stated in sequence counts: a dentry's
//! count is even and unchanged exactly while its name, parent, inode and
//! hashing stay as they are, so "the dentry that had that name at some
//! instant" is "this dentry with the count it had while it had that name".
//!
//! Found with them (fixed in dcache.rs):
//! - `kill` nulled the name of the dying dentry, and a lockless walker
//!   standing on it (reached through the chain before the unhash) read the
//!   name after checking hash, parent and sequence count: a null
//!   dereference (`rename_over_victim_vs_step_new_name`: SIGSEGV);
//! - a dentry could be put on the LRU after it was killed: `lru_add` checked
//!   the count and then set `C_LRU` while a lockless revival unhashed the
//!   dentry and dropped it, killing it, and `kill` decided from the `LRU`
//!   flag that it was not listed: a freed dentry on the list
//!   (`first_put_vs_revival_and_unlink`). The shrinker's second chance
//!   re-listed the same way; it now refuses `DEAD` too.
//!
//! Loom's DPOR keeps only the last access to each atomic, so a writer that
//! loads a word before storing it hides a finished reader's load of it;
//! the step models therefore run twice, reader first and writer first (see
//! [`reader_yields`]).
use super::loom_api::{DentryRef, State, Step, World, addr};
use crate::primitive::model::{Seen, builder, check};
use loom::thread;
use std::sync::Arc;

/// The state words of a dentry the model made.
pub(super) fn state(w: &World, a: usize) -> State {
    // SAFETY: every address the models pass is one of `w`'s dentries, and
    // under loom no dentry is ever freed.
    unsafe { w.state(a) }
}

/// Checks the cache's structure, then kills every unused dentry (repeating
/// as parents become unused) and checks that only `left` dentries stay
/// alive: the ones the model still references (and their ancestors). A
/// dentry left unused but hashed off the LRU would survive and fail this.
pub(super) fn settle(w: &World, known: &[usize], left: usize) {
    if let Err(e) = w.check(known) {
        panic!("after the threads: {e}");
    }
    while w.shrink(usize::MAX) > 0 {}
    if let Err(e) = w.check(known) {
        panic!("after shrinking: {e}");
    }
    assert_eq!(w.len(), left, "dentries alive after shrinking everything");
}

/// Lets the spawned writer run first (if `yields`). Loom's DPOR remembers only the last
/// access to each atomic, so a writer that loads a word before storing it
/// (`unhash` reads the chain it stores to, `hash_in` the head it replaces)
/// hides an earlier load of that word by a reader that already finished:
/// with the reader first, loom never sees the race and explores one
/// execution. With the writer first, each reader load that sees a writer's
/// store makes loom backtrack to run the reader before that store, which
/// covers the reader before, inside and after the writer's operations.
pub(super) fn reader_yields(yields: bool) {
    if yields {
        thread::yield_now();
    }
}

// ---------------------------------------------------------------------------
// 1. A lockless step racing a rename.
// ---------------------------------------------------------------------------

/// S is `a` in the root R (inode 10); Q is the directory `q`. B renames S
/// to `q/b` (with `victim`, over T, inode 11, already `q/b`: `d_drop` of T,
/// then `d_move`, as `rename` does). A takes one lockless step for
/// `lookup` (`(false, name)`: in R, `(true, name)`: in Q).
///
/// A may fall back, or get a dentry with the sequence count it had while it
/// held that name: S at its first count for `a`; S at its count after the
/// move for `q/b`; T at its first count for `q/b`. Never S for `q/b` at its
/// old count or for `a` at its new one, never T after its drop, never a
/// negative entry (there is none), and the inode number A read is that
/// dentry's. Afterwards the structure is sound and nothing leaks.
fn rename_vs_step(
    victim: bool,
    lookup: (bool, &'static [u8]),
    yields: bool,
    seen: &'static Seen<3>,
) {
    // With the victim: three dentries changed in one execution, and each
    // unhash reads the dentry's type (`path_cache_dir_gen`): more
    // operations than loom's default bound of branches allows.
    let mut b = builder(4);
    b.max_branches = 10_000;
    check(&b, move || {
        let w = Arc::new(World::new(8));
        let r = w.root();
        let q = w.create(r, b"q", 2, true);
        let s = w.create(r, b"a", 10, false);
        let t = victim.then(|| w.create(&q, b"b", 11, false));
        let (sa, s0) = (addr(&s), state(&w, addr(&s)).seq);
        let (ta, t0) = t
            .as_ref()
            .map_or((0, 0), |t| (addr(t), state(&w, addr(t)).seq));
        let mut known = vec![addr(r), addr(&q), sa];
        known.extend(t.as_ref().map(addr));

        let (w2, q2) = (w.clone(), q.clone());
        let b = thread::spawn(move || {
            if let Some(t) = &t {
                w2.d_drop(t);
            }
            w2.d_move(&s, &q2, b"b");
        });
        let dir = if lookup.0 { &q } else { w.root() };
        reader_yields(yields);
        let step = w.step(dir, lookup.1);
        b.join().unwrap();

        let s_moved = state(&w, sa).seq;
        assert_eq!(s_moved, s0 + 4, "d_move: two write sections");
        match &step {
            Step::Fallback => seen.hit(0),
            Step::Negative { .. } => panic!("a negative entry out of nowhere: {step:?}"),
            Step::Positive { dentry, seq, ino } => {
                let got = (addr(dentry), *seq);
                let ok = match (lookup.0, victim) {
                    (false, _) => got == (sa, s0),
                    (true, false) => got == (sa, s_moved),
                    (true, true) => got == (sa, s_moved) || got == (ta, t0),
                };
                assert!(
                    ok,
                    "step {lookup:?} got {got:?}: S {sa:#x} at {s0}/{s_moved}, T {ta:#x} at {t0}"
                );
                assert_eq!(Some(*ino), w.inode_ino(dentry), "the inode A read");
                assert!(!state(&w, got.0).dead, "legitimized a dead dentry");
                seen.hit(if got.0 == sa { 1 } else { 2 });
            }
        }
        drop(step);
        // S is `q/b` now; the old name is gone (T is dead or dying).
        let again = w.lookup_locked(&q, b"b").expect("S is q/b");
        assert_eq!(addr(&again), sa);
        assert!(w.lookup_locked(w.root(), b"a").is_none());
        drop((again, q));
        if victim {
            assert!(state(&w, ta).dead, "the victim outlived its last reference");
        }
        settle(&w, &known, 1);
    });
}

#[test]
fn rename_vs_step_old_name() {
    static SEEN: Seen<3> = Seen::new();
    rename_vs_step(false, (false, b"a"), false, &SEEN);
    rename_vs_step(false, (false, b"a"), true, &SEEN);
    SEEN.report(["fallback", "S", "T"], &[0, 1]);
}

#[test]
fn rename_vs_step_new_name() {
    static SEEN: Seen<3> = Seen::new();
    rename_vs_step(false, (true, b"b"), false, &SEEN);
    rename_vs_step(false, (true, b"b"), true, &SEEN);
    SEEN.report(["fallback", "S", "T"], &[0, 1]);
}

#[test]
fn rename_over_victim_vs_step_new_name() {
    static SEEN: Seen<3> = Seen::new();
    rename_vs_step(true, (true, b"b"), false, &SEEN);
    rename_vs_step(true, (true, b"b"), true, &SEEN);
    SEEN.report(["fallback", "S", "T"], &[0, 1, 2]);
}

/// The parent walk of `FastPaths::rcu_parent` racing a rename. P is the
/// directory `p` in R (inode 10), C the directory `p/c` (inode 11), Q the
/// directory `q`. B renames C to `q/c2` (with `move_p`, P to `q/p2`
/// instead). A walks to the directory of `p/c/new`: steps `p` and `c`
/// without references, then legitimizes C.
///
/// A may fall back, or get C at the count it had while it was `c` in P:
/// C's first count (moving P leaves C's name and parent alone, so C keeps
/// that count, and the walk that read `p` before the move is one that ran
/// before it). Never C at its count after its own move (it is no longer
/// `p/c`), never a dead dentry.
fn rename_vs_parent_walk(move_p: bool, yields: bool, seen: &'static Seen<2>) {
    // Four dentries and two steps: more operations in one execution than
    // loom's default bound of branches allows.
    let mut b = builder(4);
    b.max_branches = 10_000;
    check(&b, move || {
        let w = Arc::new(World::new(8));
        let r = w.root();
        let q = w.create(r, b"q", 2, true);
        let pd = w.create(r, b"p", 10, true);
        let c = w.create(&pd, b"c", 11, true);
        let (ca, c0) = (addr(&c), state(&w, addr(&c)).seq);
        let known = vec![addr(r), addr(&q), addr(&pd), ca];

        let (w2, q2, pd2, c2) = (w.clone(), q.clone(), pd.clone(), c.clone());
        let b = thread::spawn(move || {
            if move_p {
                w2.d_move(&pd2, &q2, b"p2");
            } else {
                w2.d_move(&c2, &q2, b"c2");
            }
        });
        reader_yields(yields);
        let got = w.parent_walk(w.root(), &[b"p", b"c"]);
        b.join().unwrap();

        match &got {
            None => seen.hit(0),
            Some((d, seq)) => {
                assert_eq!((addr(d), *seq), (ca, c0), "C {ca:#x} at {c0}");
                assert!(!state(&w, ca).dead, "legitimized a dead dentry");
                seen.hit(1);
            }
        }
        drop(got);
        if !move_p {
            assert_eq!(state(&w, ca).seq, c0 + 4, "d_move: two write sections");
        }
        drop((pd, c, q));
        settle(&w, &known, 1);
    });
}

#[test]
fn rename_vs_parent_walk_last() {
    static SEEN: Seen<2> = Seen::new();
    rename_vs_parent_walk(false, false, &SEEN);
    rename_vs_parent_walk(false, true, &SEEN);
    SEEN.report(["fallback", "C"], &[0, 1]);
}

#[test]
fn rename_vs_parent_walk_middle() {
    static SEEN: Seen<2> = Seen::new();
    rename_vs_parent_walk(true, false, &SEEN);
    rename_vs_parent_walk(true, true, &SEEN);
    SEEN.report(["fallback", "C"], &[0, 1]);
}

/// Names that share a hash chain with `a` (the models' first name).
fn chain_mates(w: &World, n: usize) -> Vec<&'static [u8]> {
    const NAMES: &[u8] = b"cdefghijklmnopqrstuvwxyz";
    let v: Vec<&'static [u8]> = NAMES
        .chunks(1)
        .filter(|m| w.same_chain(b"a", m))
        .take(n)
        .collect();
    assert_eq!(v.len(), n, "not enough names on `a`'s chain");
    v
}

/// One chain: S is `a` in R, alone on its chain. B creates H as `y`
/// (pushed in front of S, negative until instantiated), then renames S to
/// `z` (same chain: S is unhashed and pushed back in front of H, so its
/// `next` now leads to H). A steps for `y`: a walker that loaded S from the chain head before B ran
/// and S's `next` after it reaches H through that `next` alone. It must get
/// H (at its only count), or fall back; and it may only read H's name if
/// that `next` was published with a release (else loom reports the read of
/// H's name cell as concurrent with its creation: run with names out of
/// line, where the name has a cell, and inline). H negative is ENOENT
/// from before the create.
/// from before the create.
#[test]
fn rename_in_chain_vs_step() {
    static SEEN: Seen<3> = Seen::new();
    for inline in [false, true] {
        rename_in_chain(false, inline, &SEEN);
        rename_in_chain(true, inline, &SEEN);
    }
    SEEN.report(["fallback", "H", "H negative"], &[0, 1, 2]);
}

fn rename_in_chain(yields: bool, inline: bool, seen: &'static Seen<3>) {
    check(&builder(4), move || {
        let w = Arc::new(World::with_inline_names(4, inline));
        let names = chain_mates(&w, 2);
        let (y, z) = (names[0], names[1]);
        let s = w.create(w.root(), b"a", 10, false);
        let sa = addr(&s);
        let w2 = w.clone();
        let b = thread::spawn(move || {
            let h = w2.create(w2.root(), y, 12, false);
            w2.d_move(&s, w2.root(), z);
            (addr(&h), h)
        });
        reader_yields(yields);
        let step = w.step(w.root(), y);
        let (ha, h) = b.join().unwrap();
        match &step {
            Step::Fallback => seen.hit(0),
            Step::Positive { dentry, seq, ino } => {
                assert_eq!((addr(dentry), *seq, *ino), (ha, state(&w, ha).seq, 12));
                seen.hit(1);
            }
            Step::Negative { dentry, seq } => {
                // H between its `d_alloc` and its instantiation.
                assert_eq!((*dentry, *seq), (ha, 0));
                seen.hit(2);
            }
        }
        drop((step, h));
        settle(&w, &[addr(w.root()), sa, ha], 1);
    });
}

/// A name changed in place (`FastPaths::dentry_inline_name`): S is `from`
/// in R (inode 10); B renames it to `to` in R (`d_move`: unhashed, then
/// its parent, `hash_len` and `name` word changed in one write section,
/// then hashed on `to`'s chain). An inline name's word is overwritten where
/// lockless readers read it; a name going out of line (or coming back)
/// changes what the word is, bytes or a pointer. A steps for `from` or
/// `to` (`lookup_new`), then copies S's name (`Dentry::name`, as getcwd
/// does). `to` is `to_base` with its last byte changed so that it shares
/// `from`'s chain: a walker that took S from that chain before the move
/// may still be standing on it when the new name is in place.
///
/// The step may fall back, or get S at the count it had while it had the
/// name looked up: its first for `from`, its count after the move for
/// `to`; never the other pairing, never a negative entry. The copy is
/// `from` or `to` whole. A reader that followed the word as a pointer
/// while it held bytes would fault; one that read a `Name` without a
/// happens-before edge to its making would be reported by loom (its
/// length is a loom cell).
fn rename_in_place_vs_step(
    from: &'static [u8],
    to_base: &'static [u8],
    lookup_new: bool,
    yields: bool,
    seen: &'static Seen<4>,
) {
    check(&builder(3), move || {
        let w = Arc::new(World::new(8));
        let to = chain_mate(&w, from, to_base);
        let s = w.create(w.root(), from, 10, false);
        let (sa, s0) = (addr(&s), state(&w, addr(&s)).seq);
        let mine = s.clone();
        let w2 = w.clone();
        let b = thread::spawn(move || {
            w2.d_move(&s, w2.root(), to);
        });
        reader_yields(yields);
        let step = w.step(w.root(), if lookup_new { to } else { from });
        let name = mine.name();
        b.join().unwrap();
        let s_moved = state(&w, sa).seq;
        assert_eq!(s_moved, s0 + 4, "d_move: two write sections");
        match &step {
            Step::Fallback => seen.hit(0),
            Step::Negative { .. } => panic!("a negative entry out of nowhere: {step:?}"),
            Step::Positive { dentry, seq, ino } => {
                let want = if lookup_new { s_moved } else { s0 };
                assert_eq!((addr(dentry), *seq, *ino), (sa, want, 10), "step");
                seen.hit(1);
            }
        }
        assert!(
            name == from || name == to,
            "a torn name: {:?}",
            String::from_utf8_lossy(&name)
        );
        seen.hit(if name == from { 2 } else { 3 });
        assert_eq!(mine.name(), to, "the name after the move");
        drop((step, mine));
        assert!(w.lookup_locked(w.root(), from).is_none());
        let again = w.lookup_locked(w.root(), to).expect("S is `to`");
        assert_eq!(addr(&again), sa);
        drop(again);
        settle(&w, &[addr(w.root()), sa], 1);
    });
}

/// `base` with its last byte changed to put it on `from`'s chain (leaked:
/// the models need `'static` names, and a few bytes per execution are
/// nothing).
fn chain_mate(w: &World, from: &[u8], base: &[u8]) -> &'static [u8] {
    (b'a'..=b'z')
        .chain(b'0'..=b'9')
        .map(|c| {
            let mut n = base.to_vec();
            *n.last_mut().unwrap() = c;
            n
        })
        .find(|n| n != from && w.same_chain(from, n))
        .map(|n| &*Box::leak(n.into_boxed_slice()))
        .expect("a name on `from`'s chain")
}

/// An 8-byte name, the longest held inline, and a 20-byte one, out of line.
const INLINE8: &[u8] = b"abcdefgh";
const LONG20: &[u8] = b"a_name_of_20_bytes_x";

#[test]
fn rename_inline_to_inline_vs_step() {
    static SEEN: Seen<4> = Seen::new();
    for lookup_new in [false, true] {
        rename_in_place_vs_step(b"a", INLINE8, lookup_new, false, &SEEN);
        rename_in_place_vs_step(b"a", INLINE8, lookup_new, true, &SEEN);
    }
    SEEN.report(["fallback", "S", "old name", "new name"], &[0, 1, 2, 3]);
}

#[test]
fn rename_inline_to_out_of_line_vs_step() {
    static SEEN: Seen<4> = Seen::new();
    for lookup_new in [false, true] {
        rename_in_place_vs_step(INLINE8, LONG20, lookup_new, false, &SEEN);
        rename_in_place_vs_step(INLINE8, LONG20, lookup_new, true, &SEEN);
    }
    SEEN.report(["fallback", "S", "old name", "new name"], &[0, 1, 2, 3]);
}

#[test]
fn rename_out_of_line_to_inline_vs_step() {
    static SEEN: Seen<4> = Seen::new();
    for lookup_new in [false, true] {
        rename_in_place_vs_step(LONG20, b"a", lookup_new, false, &SEEN);
        rename_in_place_vs_step(LONG20, b"a", lookup_new, true, &SEEN);
    }
    SEEN.report(["fallback", "S", "old name", "new name"], &[0, 1, 2, 3]);
}

// ---------------------------------------------------------------------------
// 2. A lockless step racing instantiate and unlink.
// ---------------------------------------------------------------------------

/// N is a negative `n` in R. B instantiates it (inode 20). With `recreate`,
/// N is positive (inode 20) instead, and B unlinks it (`d_drop`), then
/// creates `n` again: a new negative dentry M, then instantiated (inode 21),
/// as `unlink` + `creat` do. A steps for `n`.
///
/// A may fall back, see a negative entry at the count it had while negative
/// (ENOENT), or get a positive one at the count it had while positive and
/// hashed, with the inode number of that instantiation, which is also the
/// inode the reference leads to: never positive without an inode, never
/// N's name with M's inode or the reverse, never N after its unlink.
fn instantiate_or_recreate_vs_step(recreate: bool, yields: bool, seen: &'static Seen<3>) {
    check(&builder(4), move || {
        let w = Arc::new(World::new(8));
        let n = if recreate {
            w.create(w.root(), b"n", 20, false)
        } else {
            w.alloc(w.root(), b"n")
        };
        let (na, n0) = (addr(&n), state(&w, addr(&n)).seq);
        let ino = w.inode(if recreate { 21 } else { 20 }, 0o100644);
        let w2 = w.clone();
        let b = thread::spawn(move || {
            if recreate {
                w2.d_drop(&n);
                drop(n);
                let m = w2.alloc(w2.root(), b"n");
                let m0 = (addr(&m), state(&w2, addr(&m)).seq);
                w2.instantiate(&m, ino);
                Some((m, m0))
            } else {
                w2.instantiate(&n, ino);
                None
            }
        });
        reader_yields(yields);
        let step = w.step(w.root(), b"n");
        let m = b.join().unwrap();
        let (ma, m0) = m.as_ref().map_or((0, 0), |(_, m0)| *m0);
        match &step {
            Step::Fallback => seen.hit(0),
            Step::Negative { dentry, seq } => {
                let want = if recreate { (ma, m0) } else { (na, n0) };
                assert_eq!((*dentry, *seq), want, "a negative entry at the wrong count");
                seen.hit(1);
            }
            Step::Positive { dentry, seq, ino } => {
                let got = (addr(dentry), *seq, *ino);
                let want = if recreate {
                    [(na, n0, 20), (ma, m0 + 2, 21)]
                } else {
                    [(na, n0 + 2, 20); 2]
                };
                assert!(want.contains(&got), "got {got:?}, want one of {want:?}");
                assert!(state(&w, got.0).has_inode, "positive with a null inode");
                assert_eq!(w.inode_ino(dentry), Some(got.2), "the snapshot's inode");
                seen.hit(2);
            }
        }
        drop(step);
        let mut known = vec![addr(w.root()), na];
        if let Some((m, _)) = m {
            known.push(addr(&m));
            drop(m);
        }
        if recreate {
            assert!(
                state(&w, na).dead,
                "the unlinked dentry outlived its last reference"
            );
        }
        settle(&w, &known, 1);
    });
}

#[test]
fn instantiate_vs_step() {
    static SEEN: Seen<3> = Seen::new();
    instantiate_or_recreate_vs_step(false, false, &SEEN);
    instantiate_or_recreate_vs_step(false, true, &SEEN);
    SEEN.report(["fallback", "negative", "positive"], &[1, 2]);
}

#[test]
fn unlink_and_recreate_vs_step() {
    static SEEN: Seen<3> = Seen::new();
    instantiate_or_recreate_vs_step(true, false, &SEEN);
    instantiate_or_recreate_vs_step(true, true, &SEEN);
    SEEN.report(["fallback", "negative", "positive"], &[0, 1, 2]);
}

// ---------------------------------------------------------------------------
// 3. The lock-free final dput.
// ---------------------------------------------------------------------------

/// A cached, unused dentry `d` (inode 30) in R: on the LRU, count
/// `0 | C_HASHED | C_LRU`. Returns it unreferenced (its address).
fn cached(w: &World, name: &[u8], ino: u64) -> usize {
    let d = w.create(w.root(), name, ino, false);
    let a = addr(&d);
    drop(d);
    let s = state(w, a);
    assert!(s.refs == 0 && s.c_hashed && s.c_lru, "{s:?}");
    a
}

/// 3a. D is cached; A and B each hold a reference (from the locked search:
/// the lockless put's count word is `2 | C_HASHED | C_LRU`). A drops its
/// reference; B unlinks D (`d_drop`) and drops its own. Whichever put is
/// last must kill D (the fast path must not drop the last reference of an
/// unhashed dentry): exactly one kill, D off the LRU, nothing leaked.
#[test]
fn final_dput_vs_d_drop() {
    check(&builder(4), || {
        let w = Arc::new(World::new(8));
        let da = cached(&w, b"d", 30);
        let ra = w.lookup_locked(w.root(), b"d").unwrap();
        let rb = w.lookup_locked(w.root(), b"d").unwrap();
        let w2 = w.clone();
        let b = thread::spawn(move || {
            w2.d_drop(&rb);
            drop(rb);
        });
        drop(ra);
        b.join().unwrap();
        let s = state(&w, da);
        assert!(s.dead && !s.c_lru && !s.c_hashed, "{s:?}");
        assert_eq!(w.len(), 1, "D killed twice or not at all");
        settle(&w, &[addr(w.root()), da], 1);
    });
}

/// 3b. D and E are cached (D older). A holds a reference to D and drops it
/// (the lock-free final put when D is still listed); B runs the shrinker
/// for `n` dentries. The shrinker kills only unused dentries and only once;
/// D ends dead or cached (unused, hashed, listed: never hashed and off the
/// LRU with no reference, which nothing would ever reclaim).
fn final_dput_vs_shrink(n: usize, seen: &'static Seen<2>) {
    check(&builder(4), move || {
        let w = Arc::new(World::new(8));
        let da = cached(&w, b"d", 30);
        let ea = cached(&w, b"e", 31);
        let r = w.lookup_locked(w.root(), b"d").unwrap();
        let w2 = w.clone();
        let b = thread::spawn(move || w2.shrink(n));
        assert!(!state(&w, da).dead, "killed while referenced");
        drop(r);
        let killed = b.join().unwrap();
        let (d, e) = (state(&w, da), state(&w, ea));
        assert_eq!(w.len(), 3 - usize::from(d.dead) - usize::from(e.dead));
        assert_eq!(killed, usize::from(d.dead) + usize::from(e.dead));
        seen.hit(usize::from(d.dead));
        settle(&w, &[addr(w.root()), da, ea], 1);
    });
}

#[test]
fn final_dput_vs_shrink_all() {
    static SEEN: Seen<2> = Seen::new();
    final_dput_vs_shrink(usize::MAX, &SEEN);
    SEEN.report(["D cached", "D killed"], &[0, 1]);
}

#[test]
fn final_dput_vs_shrink_one() {
    static SEEN: Seen<2> = Seen::new();
    final_dput_vs_shrink(1, &SEEN);
    SEEN.report(["D cached", "D killed"], &[0]);
}

/// 3c. D was just created: A holds the only reference and D is not listed
/// yet, so A's final put takes the slow path (count to zero, then
/// `lru_add`). B revives D with a lockless step and, with `unlink`, drops
/// it from the hash before dropping its reference (which then kills D).
/// D ends either dead and off the LRU, or cached and listed.
fn first_put_vs_revival_model(unlink: bool, seen: &'static Seen<2>) {
    check(&builder(4), move || {
        let w = Arc::new(World::new(8));
        let d = w.create(w.root(), b"d", 30, false);
        let da = addr(&d);
        let w2 = w.clone();
        let b = thread::spawn(move || match w2.step(w2.root(), b"d") {
            Step::Positive { dentry, .. } => {
                assert!(!state(&w2, da).dead, "revived a dead dentry");
                if unlink {
                    w2.d_drop(&dentry);
                }
                true
            }
            Step::Fallback => false,
            s @ Step::Negative { .. } => panic!("{s:?}"),
        });
        drop(d);
        let revived = b.join().unwrap();
        let s = state(&w, da);
        if revived && unlink {
            assert!(s.dead && !s.c_lru && !s.lru, "unlinked and unused: {s:?}");
        } else {
            assert!(
                !s.dead && s.c_hashed && s.c_lru && s.refs == 0,
                "leaked: {s:?}"
            );
        }
        seen.hit(usize::from(revived));
        settle(&w, &[addr(w.root()), da], 1);
    });
}

#[test]
fn first_put_vs_revival() {
    static SEEN: Seen<2> = Seen::new();
    first_put_vs_revival_model(false, &SEEN);
    SEEN.report(["fallback", "revived"], &[1]);
}

#[test]
fn first_put_vs_revival_and_unlink() {
    static SEEN: Seen<2> = Seen::new();
    first_put_vs_revival_model(true, &SEEN);
    SEEN.report(["fallback", "revived"], &[1]);
}

/// 3d. D and E are cached (D older), and B holds a reference to D. B
/// unlinks D and drops it (so kills it: the final put of an unhashed
/// dentry); A runs the shrinker for one dentry. D is killed once, by B,
/// and ends off the LRU; the shrinker kills E (D is in use or dying when
/// it looks). (The shrinker's second chance is not reached: `lru_unlink`
/// clears `REFERENCED` before the shrinker tests it.)
fn second_chance_vs_unlink(yields: bool, seen: &'static Seen<2>) {
    check(&builder(4), move || {
        let w = Arc::new(World::new(8));
        let da = cached(&w, b"d", 30);
        let ea = cached(&w, b"e", 31);
        let r = w.lookup_locked(w.root(), b"d").unwrap();
        let w2 = w.clone();
        let b = thread::spawn(move || {
            w2.d_drop(&r);
            drop(r);
        });
        if yields {
            thread::yield_now();
        }
        let killed = w.shrink(1);
        b.join().unwrap();
        let s = state(&w, da);
        assert!(s.dead && !s.lru && !s.c_lru, "D: {s:?}");
        assert_eq!(killed, usize::from(state(&w, ea).dead));
        seen.hit(killed);
        settle(&w, &[addr(w.root()), da, ea], 1);
    });
}

#[test]
fn second_chance_vs_unlink_shrinker_first() {
    static SEEN: Seen<2> = Seen::new();
    second_chance_vs_unlink(false, &SEEN);
    SEEN.report(["E kept", "E killed"], &[1]);
}

#[test]
fn second_chance_vs_unlink_unlink_first() {
    static SEEN: Seen<2> = Seen::new();
    second_chance_vs_unlink(true, &SEEN);
    SEEN.report(["E kept", "E killed"], &[1]);
}

/// 3e. D is cached. A holds a reference and drops it (the lock-free final
/// put); B revives D with a lockless step and drops that reference too; or,
/// with `shrink`, A runs the shrinker instead (no reference of its own).
/// D is never killed while B holds it; it ends cached and listed, or (with
/// the shrinker) dead.
fn cached_put_vs_revival(shrink: bool, seen: &'static Seen<3>) {
    check(&builder(4), move || {
        let w = Arc::new(World::new(8));
        let da = cached(&w, b"d", 30);
        let r = (!shrink).then(|| w.lookup_locked(w.root(), b"d").unwrap());
        let w2 = w.clone();
        let b = thread::spawn(move || match w2.step(w2.root(), b"d") {
            Step::Positive { dentry, .. } => {
                assert!(!state(&w2, da).dead, "revived a dead dentry");
                drop(dentry);
                true
            }
            Step::Fallback => false,
            s @ Step::Negative { .. } => panic!("{s:?}"),
        });
        match r {
            Some(r) => drop(r),
            None => {
                w.shrink(usize::MAX);
            }
        }
        let revived = b.join().unwrap();
        let s = state(&w, da);
        if !s.dead {
            assert!(s.c_hashed && s.c_lru && s.refs == 0, "leaked: {s:?}");
        } else {
            assert!(shrink && !s.c_lru && !s.lru, "{s:?}");
        }
        seen.hit(usize::from(revived));
        if s.dead {
            seen.hit(2);
        }
        settle(&w, &[addr(w.root()), da], 1);
    });
}

#[test]
fn cached_final_dput_vs_revival() {
    static SEEN: Seen<3> = Seen::new();
    cached_put_vs_revival(false, &SEEN);
    SEEN.report(["fallback", "revived", "killed"], &[1]);
}

#[test]
fn shrink_vs_revival() {
    static SEEN: Seen<3> = Seen::new();
    cached_put_vs_revival(true, &SEEN);
    SEEN.report(["fallback", "revived", "killed"], &[1, 2]);
}

// ---------------------------------------------------------------------------
// 4. Pruning a removed directory (`prune_dead_dir`, rmdir's
//    `shrink_dcache_parent`): the child lists and their lock.
// ---------------------------------------------------------------------------

/// D is a directory `d` in R (inode 2) with `n` cached, unused negative
/// children (`x`, then `y`): hashed, on the LRU, on D's child list. The
/// caller holds D. Returns D and the children's addresses.
fn dir_with_negatives(w: &World, n: usize) -> (DentryRef, Vec<usize>) {
    let d = w.create(w.root(), b"d", 2, true);
    let kids = [b"x", b"y"][..n]
        .iter()
        .map(|name| {
            let c = w.alloc(&d, *name);
            let a = addr(&c);
            drop(c);
            let s = state(w, a);
            assert!(s.refs == 0 && s.c_hashed && s.c_lru && s.listed, "{s:?}");
            a
        })
        .collect();
    (d, kids)
}

/// 4a. The prune racing a lookup that creates a child in the dying
/// directory (the locked walk's `d_alloc` of a negative entry, which the
/// VFS does under D's `dir_lock`, a lock rmdir does not take). B removes D
/// (`d_drop`, then the prune); A searches D for `y` and, on a miss, makes
/// it (then drops it). Whatever the order, nothing of D stays hashed: A's
/// child is listed and then pruned, or never hashed (the list was dead),
/// and with every reference gone everything but R is dead at once, with no
/// shrinker's help.
#[test]
fn prune_vs_alloc_in_dying_dir() {
    static SEEN: Seen<2> = Seen::new();
    for yields in [false, true] {
        check(&builder(3), move || {
            let w = Arc::new(World::new(8));
            let (d, kids) = dir_with_negatives(&w, 1);
            let da = addr(&d);
            let (w2, d2) = (w.clone(), d.clone());
            let b = thread::spawn(move || {
                w2.d_drop(&d2);
                w2.prune(&d2);
            });
            reader_yields(yields);
            let y = match w.lookup_locked(&d, b"y") {
                Some(y) => y,
                None => w.alloc(&d, b"y"),
            };
            let ya = addr(&y);
            let hashed_at_birth = state(&w, ya).c_hashed;
            drop(y);
            b.join().unwrap();
            let known = [addr(w.root()), da, kids[0], ya];
            assert!(
                state(&w, kids[0]).dead,
                "the cached child survived the prune"
            );
            assert!(
                state(&w, ya).dead,
                "the new child survived: {:?}",
                state(&w, ya)
            );
            drop(d);
            assert!(
                state(&w, da).dead,
                "the removed directory outlived its references"
            );
            assert_eq!(w.len(), 1, "left alive without the shrinker");
            SEEN.hit(usize::from(hashed_at_birth));
            settle(&w, &known, 1);
        });
    }
    SEEN.report(
        ["born unhashed (list dead)", "hashed, then pruned"],
        &[0, 1],
    );
}

/// 4b. The prune racing the shrinker over the same children: X and Y are
/// cached in D; B prunes D (removed); A shrinks `n`. Each child is killed
/// exactly once, by either, and unlisted; D dies at its last put.
fn prune_vs_shrink(n: usize, yields: bool, seen: &'static Seen<2>) {
    check(&builder(3), move || {
        let w = Arc::new(World::new(8));
        let (d, kids) = dir_with_negatives(&w, 2);
        let da = addr(&d);
        w.d_drop(&d);
        let (w2, d2) = (w.clone(), d.clone());
        let b = thread::spawn(move || w2.prune(&d2));
        reader_yields(yields);
        let killed = w.shrink(n);
        b.join().unwrap();
        let known = [addr(w.root()), da, kids[0], kids[1]];
        for &k in &kids {
            let s = state(&w, k);
            assert!(s.dead && !s.c_lru && !s.listed, "{s:?}");
        }
        assert!(killed <= n.min(2), "the shrinker killed {killed}");
        assert_eq!(w.len(), 2, "R and D: each child killed once");
        seen.hit(usize::from(killed > 0));
        drop(d);
        assert_eq!(w.len(), 1);
        settle(&w, &known, 1);
    });
}

#[test]
fn prune_vs_shrink_one() {
    static SEEN: Seen<2> = Seen::new();
    prune_vs_shrink(1, false, &SEEN);
    prune_vs_shrink(1, true, &SEEN);
    SEEN.report(["prune killed both", "shrinker killed some"], &[0, 1]);
}

#[test]
fn prune_vs_shrink_all() {
    static SEEN: Seen<2> = Seen::new();
    prune_vs_shrink(usize::MAX, false, &SEEN);
    prune_vs_shrink(usize::MAX, true, &SEEN);
    SEEN.report(["prune killed both", "shrinker killed some"], &[0, 1]);
}

/// 4c. A lockless walker standing on the removed directory (its cwd) steps
/// for `x`, cached negative, while B prunes D. A may fall back (and the
/// locked walk then says ENOENT: D is dead), or find X negative at the
/// count it had while hashed: ENOENT either way, never a positive entry,
/// and reading X (its name included) after the prune killed it is safe.
#[test]
fn prune_vs_step_in_dead_dir() {
    static SEEN: Seen<2> = Seen::new();
    for yields in [false, true] {
        check(&builder(4), move || {
            let w = Arc::new(World::new(8));
            let (d, kids) = dir_with_negatives(&w, 1);
            let (da, xa) = (addr(&d), kids[0]);
            let x0 = state(&w, xa).seq;
            w.d_drop(&d);
            let (w2, d2) = (w.clone(), d.clone());
            let b = thread::spawn(move || w2.prune(&d2));
            reader_yields(yields);
            match w.step(&d, b"x") {
                Step::Fallback => SEEN.hit(0),
                Step::Negative { dentry, seq } => {
                    assert_eq!((dentry, seq), (xa, x0), "X at its hashed count");
                    SEEN.hit(1);
                }
                s @ Step::Positive { .. } => panic!("{s:?}"),
            }
            b.join().unwrap();
            assert!(w.lookup_locked(&d, b"x").is_none(), "X still hashed");
            assert!(state(&w, xa).dead);
            drop(d);
            assert_eq!(w.len(), 1);
            settle(&w, &[addr(w.root()), da, xa], 1);
        });
    }
    SEEN.report(["fallback", "X negative (ENOENT)"], &[0, 1]);
}

/// 4d. A holds X (a lookup in flight when the directory went) and drops it
/// while B prunes D: X is unhashed by the prune and killed by whichever
/// put is last, once; nothing is left for the LRU.
#[test]
fn prune_vs_final_put_of_child() {
    static SEEN: Seen<2> = Seen::new();
    for yields in [false, true] {
        check(&builder(4), move || {
            let w = Arc::new(World::new(8));
            let (d, kids) = dir_with_negatives(&w, 1);
            let (da, xa) = (addr(&d), kids[0]);
            let x = w.lookup_locked(&d, b"x").expect("X is cached");
            w.d_drop(&d);
            let (w2, d2) = (w.clone(), d.clone());
            let b = thread::spawn(move || w2.prune(&d2));
            reader_yields(yields);
            drop(x);
            let dead_after_put = state(&w, xa).dead;
            b.join().unwrap();
            let s = state(&w, xa);
            assert!(s.dead && !s.c_lru && !s.lru && !s.listed, "{s:?}");
            assert_eq!(w.len(), 2, "R and D");
            SEEN.hit(usize::from(dead_after_put));
            drop(d);
            assert_eq!(w.len(), 1);
            settle(&w, &[addr(w.root()), da, xa], 1);
        });
    }
    SEEN.report(["the prune killed X", "A's put killed X"], &[0, 1]);
}

/// 4e. The prune racing a rename out of the directory (the rename's file
/// system change came first, so the directory was empty for the rmdir, but
/// its `d_move` of S, a file in D created there (born negative, so on D's
/// list), may still be running): S must end hashed under its new name in
/// R, never unhashed by the prune after the move, and off D's list (a
/// positive dentry joins no list); D dies at its last put.
#[test]
fn prune_vs_move_out() {
    for yields in [false, true] {
        check(&builder(3), move || {
            let w = Arc::new(World::new(8));
            let d = w.create(w.root(), b"d", 2, true);
            let s = w.create(&d, b"s", 10, false);
            let (da, sa) = (addr(&d), addr(&s));
            let (w2, d2) = (w.clone(), d.clone());
            let b = thread::spawn(move || {
                w2.d_drop(&d2);
                w2.prune(&d2);
            });
            reader_yields(yields);
            w.d_move(&s, w.root(), b"t");
            b.join().unwrap();
            drop(s);
            let again = w.lookup_locked(w.root(), b"t").expect("S is /t");
            assert_eq!(addr(&again), sa);
            drop(again);
            let st = state(&w, sa);
            // Positive: moved off D's list, onto none.
            assert!(st.c_hashed && !st.listed && !st.dead, "{st:?}");
            drop(d);
            assert!(state(&w, da).dead, "D outlived its references");
            assert_eq!(w.len(), 2, "R and S (cached)");
            settle(&w, &[addr(w.root()), da, sa], 1);
        });
    }
}

/// 4f. A lookup that found its name makes the dentry positive before
/// hashing it, and lists it nowhere (`d_alloc_positive`): a walker racing
/// it falls back (not there yet) or gets it positive at its only count,
/// with its inode, never negative; it is on no list, and dies (unlisted,
/// taking no list lock) when the shrinker evicts it.
#[test]
fn positive_alloc_vs_step() {
    static SEEN: Seen<2> = Seen::new();
    for yields in [false, true] {
        check(&builder(4), move || {
            let w = Arc::new(World::new(8));
            let w2 = w.clone();
            let b = thread::spawn(move || {
                let p = w2.add(w2.root(), b"p", 40, false);
                let pa = addr(&p);
                drop(p);
                pa
            });
            reader_yields(yields);
            let step = w.step(w.root(), b"p");
            let pa = b.join().unwrap();
            match &step {
                Step::Fallback => SEEN.hit(0),
                Step::Positive { dentry, seq, ino } => {
                    assert_eq!((addr(dentry), *seq, *ino), (pa, state(&w, pa).seq, 40));
                    SEEN.hit(1);
                }
                s @ Step::Negative { .. } => panic!("seen negative: {s:?}"),
            }
            drop(step);
            let s = state(&w, pa);
            assert!(s.c_hashed && !s.listed && s.has_inode, "{s:?}");
            settle(&w, &[addr(w.root()), pa], 1);
            assert!(!state(&w, pa).listed);
        });
    }
    SEEN.report(["fallback", "positive"], &[0, 1]);
}
