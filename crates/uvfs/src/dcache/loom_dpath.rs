//! Loom models of `d_path` (getcwd's and an fd's path: the walk from a
//! dentry up to the root, reading each dentry's name and parent) against
//! one rename of a directory on the path, under the cache's rename count
//! (`dcache::path`): the path comes back whole, old or new, never a mix of
//! the two and never `ENOENT` (the moving dentry is out of the hash for the
//! instant of its move).
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p uvfs --lib dpath
//! ```
//!
//! The tree: the root R; A, the directory `a` (inode 2); B, the directory
//! `a/b` (inode 3); X, the directory `x` (inode 4). The reader asks for
//! B's path. Each model runs the reader with no lockless pass (straight to
//! the writer lock) and with one (the lockless pass, then the lock if the
//! count moved), reader first and writer first (see
//! [`reader_yields`](super::loom_tests::reader_yields)). A twin walks with
//! no rename count at all, as `d_path` did before: loom must find it
//! failing.
use super::loom_api::{World, addr};
use super::loom_tests::{reader_yields, settle};
use crate::errno::Errno;
use crate::primitive::model::{Seen, builder, check};
use loom::thread;
use std::sync::Arc;

/// The one rename the writer makes.
#[derive(Clone, Copy, Debug)]
enum Move {
    /// A renamed to `c` in R (a name change above B): `/a/b` → `/c/b`.
    SameDir,
    /// B moved to `x/y` (a new parent and a new name at once): `/a/b` →
    /// `/x/y`; `/a/y` and `/x/b` never existed.
    CrossDir,
    /// A and X exchanged (`RENAME_EXCHANGE`: two moves in one section):
    /// `/a/b` → `/x/b`.
    Exchange,
}

impl Move {
    /// B's path before and after the rename.
    fn paths(self) -> [&'static [u8]; 2] {
        match self {
            Move::SameDir => [b"/a/b", b"/c/b"],
            Move::CrossDir => [b"/a/b", b"/x/y"],
            Move::Exchange => [b"/a/b", b"/x/b"],
        }
    }
}

/// How the reader walks.
#[derive(Clone, Copy, Debug)]
enum Reader {
    /// `d_path` with this many lockless passes before the locked one.
    Passes(u32),
    /// The walk alone, no rename count (never correct).
    Unsynced,
}

/// One model: the writer makes `mv`, the reader reads B's path as `how`
/// says. The path must be B's old or new one, whole; afterwards it is the
/// new one, the structure is sound and nothing leaks.
fn dpath_vs_rename(mv: Move, how: Reader, yields: bool, seen: &'static Seen<2>) {
    // The walks up and the structure check load many words: each load is
    // a branch, past loom's default budget of 1,000. Two preemptions: with
    // three, each model ran for minutes and, as retired objects leak under
    // loom (reclaim/mod.rs), grew past 8 GB; two such models side by side
    // took CI's loom step out of memory (24 GB).
    let mut b = builder(2);
    b.max_branches = 20_000;
    check(&b, move || {
        let w = Arc::new(World::new(8));
        let r = w.root();
        let a = w.create(r, b"a", 2, true);
        let b = w.create(&a, b"b", 3, true);
        let x = w.create(r, b"x", 4, true);
        let known = vec![addr(r), addr(&a), addr(&b), addr(&x)];

        let (w2, a2, b2, x2) = (w.clone(), a.clone(), b.clone(), x.clone());
        let writer = thread::spawn(move || {
            let r = w2.root();
            match mv {
                Move::SameDir => w2.d_move(&a2, r, b"c"),
                Move::CrossDir => w2.d_move(&b2, &x2, b"y"),
                Move::Exchange => w2.d_exchange((&a2, r, b"a"), (&x2, r, b"x")),
            }
        });
        reader_yields(yields);
        let got = match how {
            Reader::Passes(n) => w.d_path(&b, n),
            Reader::Unsynced => w.d_path_unsynced(&b),
        };
        writer.join().unwrap();

        let paths = mv.paths();
        let got: Result<Vec<u8>, Errno> = got;
        let i = match &got {
            Ok(p) => paths.iter().position(|q| q == p),
            Err(_) => None,
        };
        let Some(i) = i else {
            panic!(
                "{mv:?}, {how:?}: d_path gave {:?}, not one of {:?}",
                got.map(|p| String::from_utf8_lossy(&p).into_owned()),
                paths.map(String::from_utf8_lossy)
            );
        };
        seen.hit(i);
        assert_eq!(w.d_path(&b, 1).as_deref(), Ok(paths[1]), "after the move");
        drop((a, b, x));
        settle(&w, &known, 1);
    });
}

/// Runs `mv` against the reader with 0 and 1 lockless passes, each with
/// the reader first and the writer first; both paths must be seen.
fn both_readers(mv: Move) {
    static SEEN: [Seen<2>; 3] = [Seen::new(), Seen::new(), Seen::new()];
    let seen = &SEEN[mv as usize];
    for passes in [0, 1] {
        for yields in [false, true] {
            dpath_vs_rename(mv, Reader::Passes(passes), yields, seen);
        }
    }
    seen.report(["old path", "new path"], &[0, 1]);
}

#[test]
fn dpath_vs_rename_same_dir() {
    both_readers(Move::SameDir);
}

#[test]
fn dpath_vs_rename_cross_dir() {
    both_readers(Move::CrossDir);
}

#[test]
fn dpath_vs_exchange() {
    both_readers(Move::Exchange);
}

/// The walk without the rename count, against a move of B to `x/y`: loom
/// finds an execution where it fails (B out of the hash for the instant of
/// its move: `ENOENT`; or its old parent with its new name: `/a/y`).
#[test]
#[should_panic(expected = "d_path gave")]
fn dpath_unsynced_vs_rename_fails() {
    static SEEN: Seen<2> = Seen::new();
    dpath_vs_rename(Move::CrossDir, Reader::Unsynced, true, &SEEN);
}
