//! Loom models of the last reference of a tmpfs without its inode table
//! ([`Tmpfs::put`](super::Tmpfs::put)): an inode whose last name goes is
//! given back (its inode count, its pages, the orphan count) by whichever
//! holder lets the last reference go, exactly once, however the holders
//! race, provided every holder lets go through `put`. The twin lets one
//! holder drop its reference plainly after its locks, as rename did before
//! the fix (`racing_holders_give_each_inode_back_once`, 10 runs of 30
//! failing): the schedule where the unlink's `put` comes first leaves the
//! inode freed and never given back.
//!
//! What is modelled is the rule, not tmpfs's code: the inode's `Arc`
//! count is std's (loom does not see it; `Arc::into_inner` is the
//! decrement that reaches zero followed by an acquire, as here), and its
//! lock is `parking_lot`'s. The directory's and the inode's locks are
//! loom's here, in the order tmpfs takes them.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p uvfs --lib tmpfs::table::
//! ```
use crate::primitive::model::{Seen, builder, check};
use crate::primitive::sync::Mutex;
use crate::primitive::sync::atomic::{AtomicUsize, Ordering, fence};
use loom::thread;
use std::sync::Arc;

/// One name in a directory and the inode it holds, as far as the
/// give-back goes.
struct Fs {
    /// Under the directory's lock: whether the name still holds the inode
    /// (the entry's reference).
    entry: Mutex<bool>,
    /// The inode's `Arc` count: the entry's reference and every holder's.
    refs: AtomicUsize,
    /// Under the inode's lock: its link count and whether it was given
    /// back.
    st: Mutex<(u32, bool)>,
    /// Unlinked inodes not given back (`Tmpfs::orphans`).
    orphans: AtomicUsize,
    /// Times the count reached zero (the inode freed).
    freed: AtomicUsize,
}

impl Fs {
    fn new() -> Fs {
        Fs {
            entry: Mutex::new(true),
            refs: AtomicUsize::new(1),
            st: Mutex::new((1, false)),
            orphans: AtomicUsize::new(0),
            freed: AtomicUsize::new(0),
        }
    }

    /// A reference taken from the entry under the directory's lock (a
    /// lookup's or a rename's `peek`); `false` if the name is gone.
    fn take(&self) -> bool {
        let e = self.entry.lock().unwrap();
        if *e {
            self.refs.fetch_add(1, Ordering::Relaxed);
        }
        *e
    }

    /// The count's decrement; whether it was the last reference.
    fn release(&self) -> bool {
        if self.refs.fetch_sub(1, Ordering::Release) != 1 {
            return false;
        }
        fence(Ordering::Acquire);
        self.freed.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// `Tmpfs::put`: the holder that lets the last reference go gives the
    /// inode back if it has no link and was not given back.
    fn put(&self) -> bool {
        if !self.release() {
            return false;
        }
        let mut st = self.st.lock().unwrap();
        if st.0 == 0 && !st.1 {
            st.1 = true;
            self.orphans.fetch_sub(1, Ordering::Relaxed);
        }
        true
    }

    /// A rename of the name (the inode keeps it) by a holder of a
    /// reference: both locks, the name checked, then let go (through `put`,
    /// or plainly in the twin) after the locks.
    fn rename(&self, plain: bool) -> bool {
        if !self.take() {
            return false;
        }
        {
            let e = self.entry.lock().unwrap();
            let _st = self.st.lock().unwrap();
            let _still = *e;
        }
        if plain { self.release() } else { self.put() }
    }

    /// unlink: the entry taken out and the link count dropped under both
    /// locks (the inode an orphan), the entry's reference let go after.
    fn unlink(&self) -> bool {
        let removed = {
            let mut e = self.entry.lock().unwrap();
            let was = std::mem::replace(&mut *e, false);
            if was {
                let mut st = self.st.lock().unwrap();
                st.0 -= 1;
                if st.0 == 0 {
                    self.orphans.fetch_add(1, Ordering::Relaxed);
                }
            }
            was
        };
        removed && self.put()
    }

    /// Once every holder is done: freed once, given back once, no orphan.
    fn check(&self) {
        assert_eq!(self.refs.load(Ordering::Relaxed), 0, "a reference left");
        assert_eq!(self.freed.load(Ordering::Relaxed), 1, "freed once");
        let st = self.st.lock().unwrap();
        assert!(st.1, "the inode was freed and not given back");
        assert_eq!(self.orphans.load(Ordering::Relaxed), 0, "an orphan left");
    }
}

/// A renamer (or any holder of a reference from the entry) against the
/// unlink of the name: whichever lets go last gives the inode back.
fn holder_vs_unlink(plain: bool, seen: &'static Seen<2>) {
    check(&builder(2), move || {
        let fs = Arc::new(Fs::new());
        let r = {
            let fs = fs.clone();
            thread::spawn(move || fs.rename(plain))
        };
        let u = fs.unlink();
        let r = r.join().unwrap();
        assert!(u != r, "exactly one holder let the last reference go");
        seen.hit(usize::from(r));
        fs.check();
    });
    seen.report(["the unlink's was last", "the renamer's was last"], &[0, 1]);
}

#[test]
fn the_last_holder_gives_back_once() {
    static SEEN: Seen<2> = Seen::new();
    holder_vs_unlink(false, &SEEN);
}

/// The twin: the renamer drops its reference plainly after its locks.
/// When the unlink's `put` comes first, the plain drop frees the inode
/// without giving it back. Must fail.
#[test]
#[should_panic(expected = "not given back")]
fn a_plain_drop_after_the_locks_leaks_the_inode() {
    static SEEN: Seen<2> = Seen::new();
    holder_vs_unlink(true, &SEEN);
}

/// Two holders (a renamer and a lookup, each through `put`) and the
/// unlink: of the three, exactly one lets the last reference go and gives
/// the inode back.
#[test]
fn of_three_holders_one_gives_back() {
    static SEEN: Seen<3> = Seen::new();
    check(&builder(2), || {
        let fs = Arc::new(Fs::new());
        let r = {
            let fs = fs.clone();
            thread::spawn(move || fs.rename(false))
        };
        let l = {
            let fs = fs.clone();
            thread::spawn(move || fs.take() && fs.put())
        };
        let u = fs.unlink();
        let (r, l) = (r.join().unwrap(), l.join().unwrap());
        assert_eq!(
            usize::from(u) + usize::from(r) + usize::from(l),
            1,
            "one last holder"
        );
        SEEN.hit(if u {
            0
        } else if r {
            1
        } else {
            2
        });
        fs.check();
    });
    SEEN.report(
        ["the unlink's was last", "the renamer's", "the lookup's"],
        &[0, 1, 2],
    );
}
