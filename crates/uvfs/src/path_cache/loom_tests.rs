//! Loom models of the path cache's validation protocol: a fill (the
//! generation read, a walk of `q/f` step by step, the entry stored) racing
//! a change the entry's answer depends on — a rename of the directory `q`
//! (which leaves the final dentry's own count alone: only the generation
//! says the answer is stale), a chmod of `q`, a removal of `q`, an unlink
//! of `f` (unhashed, or made negative in place), and a create in place of
//! a negative entry. The world runs with `FastPaths::path_cache_dir_gen`
//! on, so the unlinks of `f` move only `f`'s count; the broken twin
//! removes `q` the same way, without moving the generation, and must fail. In each, the thread that made the
//! change then asks the cache, while the fill may still be running, and
//! once more after it: after the change returned, the cache must never
//! give the old answer.
//!
//! And the recorded way to the inode (`FastPaths::path_cache_inode`): a
//! fill that records the final dentry's inode (read after its count)
//! racing `d_delete` of the file in place and a create of a new inode in
//! the same dentry, which moves no generation, only the dentry's count;
//! after the change, a hit must never lead to the old inode. Its twin
//! reads the inode before the generation and the count, and must fail.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p uvfs --lib path_cache::
//! ```
use super::{Key, Outcome, PathCache, Pinned};
use crate::cred::Cred;
use crate::dcache::loom_api::{DentryRef, Step, World, addr};
use crate::errno::Errno;
use crate::fs::Ino;
use crate::fs::{S_IFDIR, S_IFREG};
use crate::primitive::model::{Seen, builder, check};
use loom::thread;
use std::sync::Arc;

/// What the filler's walk of `q/f` found, stored as `Nd::lookup_cached`
/// stores it: the outcome stored (if any), and the mode of `q` the walk
/// went through (read from its snapshot and validated by its count, as
/// `lookup_rcu` validates the permission snapshot it checked).
fn fill(w: &World, pc: &PathCache) -> (Option<Outcome>, u32) {
    let key = key(w);
    let generation = w.dcache().ns_gen();
    let Step::Positive {
        dentry: q,
        seq: q_seq,
        ..
    } = w.step(w.root(), b"q")
    else {
        return (None, 0);
    };
    let mode = q.snap().map_or(0, |s| s.mode);
    let step = w.step(&q, b"f");
    if !q.seq_valid(q_seq) {
        return (None, mode);
    }
    let stored = match step {
        Step::Positive { dentry, seq, .. } => {
            pc.put(&key, generation, dentry.as_ptr(), seq, Outcome::Found, None);
            Outcome::Found
        }
        Step::Negative { dentry, seq } => {
            let p = std::ptr::NonNull::new(std::ptr::with_exposed_provenance_mut(dentry))
                .expect("a dentry's address");
            pc.put(&key, generation, p, seq, Outcome::NoEnt, None);
            Outcome::NoEnt
        }
        Step::Fallback => return (None, mode),
    };
    (Some(stored), mode)
}

/// The key of root's lookup of `q/f` (the filler's and the checker's).
fn key(w: &World) -> Key {
    Key::new(w.root().as_ptr(), b"q/f", 0, &Cred::root()).expect("a short path")
}

/// What the cache answers for `q/f` now.
fn ask(w: &World, pc: &PathCache) -> Option<Result<DentryRef, Errno>> {
    pc.find(w.dcache(), &key(w))
}

/// The change the models race with the fill.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// `q` renamed to `r` (f stays in it, its own count unchanged).
    RenameDir,
    /// `q` chmod 0: f is no longer reachable by a non-root searcher, and
    /// the generation must say so even for root's entry.
    ChmodDir,
    /// `f` unlinked (`d_drop`) and its last reference dropped.
    Unlink,
    /// `f` unlinked by `d_delete`: made negative in place, still hashed
    /// (or unhashed, when the filler holds a reference to it).
    UnlinkInPlace,
    /// `f` negative at first; created (instantiated) by the change.
    Create,
    /// `q` removed (`d_drop` of a directory; f stays in it, its own count
    /// unchanged: only the generation says the answer is stale).
    Rmdir,
    /// As `Rmdir`, but the unhash moves no generation, as a file's does
    /// under `path_cache_dir_gen` (the broken twin: must fail).
    RmdirWithoutGeneration,
}

fn fill_vs_change(change: Change, seen: &'static Seen<3>) {
    check(&builder(3), move || {
        // `path_cache_dir_gen` on (as in `seeds`): a file's unhash or
        // `d_delete` moves only its own count, not the generation.
        let w = Arc::new(World::with_options(8, true, true));
        let pc = Arc::new(PathCache::new());
        let r = w.root();
        let q = w.create(r, b"q", 2, true);
        let f = match change {
            Change::Create => w.alloc(&q, b"f"),
            _ => w.create(&q, b"f", 10, false),
        };
        let f_addr = addr(&f);
        let (w2, pc2) = (w.clone(), pc.clone());
        let filler = thread::spawn(move || fill(&w2, &pc2));
        match change {
            Change::RenameDir => w.d_move(&q, w.root(), b"r"),
            Change::ChmodDir => q.set_perm(S_IFDIR, 0, 0),
            Change::Unlink => w.d_drop(&f),
            // Made negative in place when this thread's reference is the
            // only one; unhashed (as `Unlink`) while the filler holds one.
            Change::UnlinkInPlace => {
                let _ = w.d_delete(&f);
            }
            Change::Create => w.instantiate(&f, w.inode(10, S_IFREG | 0o644)),
            Change::Rmdir => w.d_drop(&q),
            Change::RmdirWithoutGeneration => w.d_drop_without_generation(&q),
        }
        drop(f);
        // The change returned: ask while the fill may still run, and after.
        let during = ask(&w, &pc);
        let (filled, mode) = filler.join().unwrap();
        let after = ask(&w, &pc);
        for (when, a) in [("during", &during), ("after", &after)] {
            let stale = match (change, a) {
                (_, None) => false,
                // Created: ENOENT is the old answer; f itself is right.
                (Change::Create, Some(Err(Errno::ENOENT))) => true,
                (Change::Create, Some(Ok(d))) => addr(d) != f_addr,
                // chmod: root may still find f, but only through a walk
                // that saw the new mode.
                (Change::ChmodDir, Some(Ok(d))) => addr(d) != f_addr || mode != S_IFDIR,
                // Renamed away, removed or unlinked: no `q/f` any more.
                (_, Some(Ok(_))) => true,
                // Unlinked in place: f itself is the negative entry now,
                // which a walk after the change may have cached.
                (Change::UnlinkInPlace, Some(Err(Errno::ENOENT))) => false,
                (_, Some(Err(_))) => true,
            };
            assert!(!stale, "{change:?}: stale answer {when} the fill: {a:?}");
        }
        seen.hit(match filled {
            None => 0,
            Some(Outcome::Found) => 1,
            Some(_) => 2,
        });
        drop((during, after, q));
    });
}

#[test]
fn fill_vs_rename_dir() {
    static SEEN: Seen<3> = Seen::new();
    fill_vs_change(Change::RenameDir, &SEEN);
    SEEN.report(["no fill", "filled f", "filled ENOENT"], &[1]);
}

#[test]
fn fill_vs_chmod_dir() {
    static SEEN: Seen<3> = Seen::new();
    fill_vs_change(Change::ChmodDir, &SEEN);
    SEEN.report(["no fill", "filled f", "filled ENOENT"], &[1]);
}

#[test]
fn fill_vs_unlink() {
    static SEEN: Seen<3> = Seen::new();
    fill_vs_change(Change::Unlink, &SEEN);
    SEEN.report(["no fill", "filled f", "filled ENOENT"], &[0, 1]);
}

#[test]
fn fill_vs_create() {
    static SEEN: Seen<3> = Seen::new();
    fill_vs_change(Change::Create, &SEEN);
    SEEN.report(["no fill", "filled f", "filled ENOENT"], &[1, 2]);
}

#[test]
fn fill_vs_unlink_in_place() {
    static SEEN: Seen<3> = Seen::new();
    fill_vs_change(Change::UnlinkInPlace, &SEEN);
    SEEN.report(["no fill", "filled f", "filled ENOENT"], &[1, 2]);
}

#[test]
fn fill_vs_rmdir() {
    static SEEN: Seen<3> = Seen::new();
    fill_vs_change(Change::Rmdir, &SEEN);
    SEEN.report(["no fill", "filled f", "filled ENOENT"], &[1]);
}

/// The twin: a directory's unhash that moves no generation leaves the
/// entries that went through it answering (f's own count never moved).
#[test]
#[should_panic(expected = "stale answer")]
fn fill_vs_rmdir_without_generation_fails() {
    static SEEN: Seen<3> = Seen::new();
    fill_vs_change(Change::RmdirWithoutGeneration, &SEEN);
}

/// The fill of `q/f` as `Nd::fill_cached_ino` makes it with
/// `path_cache_inode`: the last step without a reference, the inode read
/// after the dentry's count (or before it: the broken twin), the count
/// checked again, the entry stored with the inode as its recorded object.
fn fill_inode(w: &World, pc: &PathCache, inode_first: bool) -> bool {
    let key = key(w);
    // The twin reads the inode first, outside every check: before the
    // generation (which `d_delete` moves) and the count (which the create
    // in the same dentry moves).
    let early = inode_first
        .then(|| w.find_pinned(w.root(), b"q"))
        .flatten()
        .and_then(|(q, _)| w.step_from(q, b"f"))
        .and_then(|f| w.inode_of(f));
    let generation = w.dcache().ns_gen();
    let Step::Positive { dentry: q, .. } = w.step(w.root(), b"q") else {
        return false;
    };
    let Some((f, seq)) = w.find_pinned(&q, b"f") else {
        return false;
    };
    let object = if inode_first { early } else { w.inode_of(f) };
    let Some((data, ino)) = object else {
        return false;
    };
    // SAFETY: dentries are never freed under loom.
    if !unsafe { f.as_ref() }.seq_valid(seq) {
        return false;
    }
    let pinned = Pinned { data, ino, dev: 0 };
    pc.put(&key, generation, f, seq, Outcome::Found, Some(pinned));
    true
}

/// The inode number of the recorded inode a hit on `q/f` leads to, if
/// the cache answers.
fn ask_inode(w: &World, pc: &PathCache) -> Option<Ino> {
    match pc.find_ino(w.dcache(), &key(w), |_, _, p| p.map(|p| p.ino))? {
        Ok(data) => Some(data),
        Err(e) => panic!("f is positive throughout: {e:?}"),
    }
}

fn fill_vs_reinstantiate(inode_first: bool, seen: &'static Seen<2>) {
    check(&builder(3), move || {
        let w = Arc::new(World::new(8));
        let pc = Arc::new(PathCache::new());
        let r = w.root();
        let q = w.create(r, b"q", 2, true);
        let f = w.create(&q, b"f", 10, false);
        let (w2, pc2) = (w.clone(), pc.clone());
        let filler = thread::spawn(move || fill_inode(&w2, &pc2, inode_first));
        // f's dentry made negative in place (its only holder is this
        // thread) and given a new inode: its count moves, the generation
        // does not.
        assert!(w.d_delete(&f), "the sole holder's dentry stays");
        w.instantiate(&f, w.inode(11, S_IFREG | 0o644));
        let during = ask_inode(&w, &pc);
        let filled = filler.join().unwrap();
        let after = ask_inode(&w, &pc);
        for (when, a) in [("during", during), ("after", after)] {
            assert!(
                a.is_none() || a == Some(11),
                "a hit {when} the fill led to the replaced inode"
            );
        }
        seen.hit(usize::from(filled));
        drop((f, q));
    });
}

#[test]
fn fill_inode_vs_reinstantiate() {
    static SEEN: Seen<2> = Seen::new();
    fill_vs_reinstantiate(false, &SEEN);
    SEEN.report(["no fill", "filled f"], &[1]);
}

/// The twin: the inode read before the count the entry records can be
/// the replaced one, and a hit then leads to it.
#[test]
#[should_panic(expected = "led to the replaced inode")]
fn fill_inode_first_vs_reinstantiate_fails() {
    static SEEN: Seen<2> = Seen::new();
    fill_vs_reinstantiate(true, &SEEN);
}
