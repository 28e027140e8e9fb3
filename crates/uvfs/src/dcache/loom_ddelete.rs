//! Loom models of `d_delete` (`FastPaths::d_delete`): unlink turning the
//! dentry it alone holds negative in place, against a lockless step of
//! the walk (the chain search, the snapshot, `legitimize`) and the locked
//! search, with and without the next create of the name instantiating the
//! same dentry again; and a twin that flips without the sole-holder check,
//! which must fail.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p uvfs --lib ddelete
//! ```
//!
//! What each lookup may see is stated in sequence counts, as in
//! `loom_tests`: N (inode 20) is positive at its first count `n0`; a flip
//! makes it negative at `n0 + 2`; a create in its place makes it positive
//! again (inode 21) at `n0 + 4`. A reference taken at `n0` must keep N
//! positive with inode 20 for as long as it is held: the flip happens only
//! when the unlinker's reference is the only one.
use super::loom_api::{Step, World, addr};
use super::loom_tests::{reader_yields, settle, state};
use crate::fs::S_IFREG;
use crate::primitive::model::{Seen, builder, check};
use loom::thread;
use std::sync::Arc;

/// How the unlinker ends the name.
#[derive(Clone, Copy)]
enum Flip {
    /// `d_delete`.
    Checked,
    /// `d_delete` without the sole-holder check (never correct).
    Unchecked,
}

/// N is `n` in the root R, inode 20: born negative and instantiated
/// (`listed`: on R's child list, as a created file) or made positive by a
/// lookup (`d_alloc_positive`: on no list). B holds the only reference and
/// ends the name with `flip`; if N went negative and `recreate`, B
/// instantiates N again with inode 21, as the next `creat` of the name
/// does. A takes one lockless step for `n`.
///
/// A may fall back; see N negative at `n0 + 2` (after the flip, before the
/// create); or get N positive, legitimized, at `n0` with inode 20 — and
/// then B's flip must have failed (N is unhashed, still positive with
/// inode 20 while A holds it) — or at `n0 + 4` with inode 21. Afterwards
/// the structure is sound (a hashed negative N is on R's list), nothing
/// leaks, and inode 20's reference from N was dropped exactly once.
fn flip_vs_step(flip: Flip, listed: bool, recreate: bool, yields: bool, seen: &'static Seen<4>) {
    check(&builder(3), move || {
        let w = Arc::new(World::new(8));
        let n = if listed {
            w.create(w.root(), b"n", 20, false)
        } else {
            w.add(w.root(), b"n", 20, false)
        };
        let (na, n0) = (addr(&n), state(&w, addr(&n)).seq);
        assert_eq!(state(&w, na).listed, listed);
        let again = w.inode(21, S_IFREG | 0o644);
        let w2 = w.clone();
        let b = thread::spawn(move || {
            let flipped = match flip {
                Flip::Checked => w2.d_delete(&n),
                Flip::Unchecked => w2.d_delete_unchecked(&n),
            };
            if flipped && recreate {
                w2.instantiate(&n, again);
            } else {
                w2.put_inode(again);
            }
            drop(n);
            flipped
        });
        reader_yields(yields);
        let step = w.step(w.root(), b"n");
        let flipped = b.join().unwrap();
        match &step {
            Step::Fallback => seen.hit(0),
            Step::Negative { dentry, seq } => {
                assert!(flipped, "negative without a flip");
                assert_eq!(
                    (*dentry, *seq),
                    (na, n0 + 2),
                    "a negative entry at the wrong count"
                );
                seen.hit(1);
            }
            Step::Positive { dentry, seq, ino } => {
                let got = (addr(dentry), *seq, *ino);
                let s = state(&w, na);
                if got == (na, n0, 20) {
                    assert!(s.has_inode, "N went negative under a holder: {s:?}");
                    assert_eq!(w.inode_ino(dentry), Some(20), "the holder's inode changed");
                    assert!(!flipped && !s.hashed, "flipped under a holder: {s:?}");
                    seen.hit(2);
                } else {
                    assert!(flipped && recreate, "got {got:?} with no create");
                    assert_eq!(got, (na, n0 + 4, 21), "a positive entry at the wrong count");
                    assert_eq!(w.inode_ino(dentry), Some(21));
                    seen.hit(3);
                }
            }
        }
        drop(step);
        let s = state(&w, na);
        if flipped {
            assert!(s.hashed && s.listed && !s.dead, "flipped N: {s:?}");
            assert_eq!(s.has_inode, recreate, "{s:?}");
        } else {
            assert!(s.dead, "a dropped N outlived its last reference: {s:?}");
        }
        assert_eq!(w.inode_refs(20), 0, "inode 20's reference from N");
        settle(&w, &[addr(w.root()), na], 1);
        assert_eq!(w.inode_refs(20), 0, "inode 20 after the shrink");
        assert_eq!(w.inode_refs(21), 0, "inode 21 after the shrink");
    });
}

#[test]
fn ddelete_vs_step() {
    static SEEN: Seen<4> = Seen::new();
    for listed in [true, false] {
        for yields in [false, true] {
            flip_vs_step(Flip::Checked, listed, false, yields, &SEEN);
        }
    }
    SEEN.report(
        ["fallback", "negative", "positive before", "positive again"],
        &[0, 1, 2],
    );
}

#[test]
fn ddelete_and_recreate_vs_step() {
    static SEEN: Seen<4> = Seen::new();
    for yields in [false, true] {
        flip_vs_step(Flip::Checked, true, true, yields, &SEEN);
    }
    SEEN.report(
        ["fallback", "negative", "positive before", "positive again"],
        &[0, 1, 2, 3],
    );
}

/// The twin without the sole-holder check: A legitimizes N at `n0` before
/// the flip's write section opens, B flips it anyway, and A's reference
/// sees N negative.
#[test]
#[should_panic(expected = "went negative under a holder")]
fn ddelete_unchecked_vs_step_must_fail() {
    static SEEN: Seen<4> = Seen::new();
    for yields in [false, true] {
        flip_vs_step(Flip::Unchecked, true, false, yields, &SEEN);
    }
}

/// N (inode 20, created) in R; B ends it with `d_delete` and drops its
/// reference; A searches `n` under the bucket lock (`lookup_fast` of the
/// walk with references), which takes a reference with no count check.
/// A's hit is either positive with inode 20, and stays so while held (the
/// flip failed: B saw A's reference), or negative (after the flip); a miss
/// is impossible (N is hashed until B's unhash, and B unhashes only when
/// A holds N). Afterwards the structure is sound and nothing leaks.
#[test]
fn ddelete_vs_locked_lookup() {
    static SEEN: Seen<2> = Seen::new();
    for yields in [false, true] {
        check(&builder(3), move || {
            let w = Arc::new(World::new(8));
            let n = w.create(w.root(), b"n", 20, false);
            let na = addr(&n);
            let w2 = w.clone();
            let b = thread::spawn(move || {
                let flipped = w2.d_delete(&n);
                drop(n);
                flipped
            });
            reader_yields(yields);
            let hit = w.lookup_locked(w.root(), b"n");
            let flipped = b.join().unwrap();
            let hit = hit.expect("N missed while hashed");
            assert_eq!(addr(&hit), na);
            if flipped {
                assert!(hit.is_negative(), "a positive hit survived the flip");
                SEEN.hit(1);
            } else {
                assert!(!hit.is_negative(), "negative without a flip");
                assert_eq!(w.inode_ino(&hit), Some(20));
                SEEN.hit(0);
            }
            drop(hit);
            assert_eq!(state(&w, na).dead, !flipped);
            assert_eq!(w.inode_refs(20), 0);
            settle(&w, &[addr(w.root()), na], 1);
        });
    }
    SEEN.report(["positive, flip refused", "negative"], &[0, 1]);
}
