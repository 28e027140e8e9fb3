//! The process's cheap-pin domain and each thread's place in it: a record
//! registered on the thread's first pin, a nesting count (only the
//! outermost pin touches the record), and a bag of retired objects handed
//! to the domain [`BATCH`] at a time.

use super::domain::{Deferred, Domain, Fences, Record};
use super::membarrier;
use std::cell::{Cell, OnceCell, RefCell};
use std::sync::{Arc, OnceLock};

/// Retired objects a thread gathers before sealing them as one batch (one
/// `membarrier` for the seal, one for an advance).
const BATCH: usize = 64;

static DOMAIN: OnceLock<Domain> = OnceLock::new();

/// The domain, made on first use; whether `membarrier` is used is decided
/// then, once, before any reader can pin.
fn domain() -> &'static Domain {
    DOMAIN.get_or_init(|| {
        Domain::new(if membarrier::register() {
            Fences::Asymmetric
        } else {
            Fences::Symmetric
        })
    })
}

/// Which fences the domain uses (for the lab's and the tests' reports).
pub(crate) fn fences() -> Fences {
    domain().fences()
}

struct Local {
    rec: OnceCell<Arc<Record>>,
    nest: Cell<usize>,
    bag: RefCell<Vec<Deferred>>,
}

impl Drop for Local {
    /// At the thread's exit (outside any uvfs call, so possibly during
    /// another thread's fork): seals the last batch and gives the record
    /// back, neither taking a lock; a later reclaim frees the batch.
    fn drop(&mut self) {
        let d = domain();
        d.retire(std::mem::take(self.bag.get_mut()));
        if let Some(r) = self.rec.get() {
            d.unregister(r);
        }
    }
}

crate::primitive::thread_local! {
    static LOCAL: Local = const {
        Local {
            rec: OnceCell::new(),
            nest: Cell::new(0),
            bag: RefCell::new(Vec::new()),
        }
    };
}

/// A cheap pin; unpins (the outermost one) when dropped. Not `Send`: it
/// points at its thread's [`Local`].
pub(crate) struct CheapGuard(*const Local);

/// Pins this thread, or `None` if its thread-locals are already destroyed
/// (the caller then pins crossbeam's epoch, which every retired object
/// also waits for).
#[inline]
pub(crate) fn pin() -> Option<CheapGuard> {
    LOCAL
        .try_with(|l| {
            let n = l.nest.get();
            if n == 0 {
                let d = domain();
                d.enter(l.rec.get_or_init(|| d.register()));
            }
            l.nest.set(n + 1);
            CheapGuard(l)
        })
        .ok()
}

impl Drop for CheapGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the guard was made on this thread (it is not `Send`) from
        // this thread's `Local`, within a call that began while that `Local`
        // was alive; thread-locals are destroyed one after another at the
        // thread's exit, never while a call on the thread's stack holds a
        // guard to one.
        let l = unsafe { &*self.0 };
        let n = l.nest.get() - 1;
        l.nest.set(n);
        if n == 0
            && let Some(r) = l.rec.get()
        {
            domain().exit(r);
        }
    }
}

/// Retires one object: into this thread's bag, sealed when full.
pub(crate) fn retire(d: Deferred) {
    let mut d = Some(d);
    let full = LOCAL.try_with(|l| {
        let mut bag = l.bag.borrow_mut();
        bag.extend(d.take());
        // The next batch gets its room at once: a bag left empty grew by
        // doubling (four reallocations and copies a batch).
        (bag.len() >= BATCH).then(|| std::mem::replace(&mut *bag, Vec::with_capacity(BATCH)))
    });
    match full {
        Ok(None) => {}
        Ok(Some(batch)) => reclaim(batch),
        // This thread's state is gone (it is exiting): a batch of one,
        // sealed without a lock as in `Local::drop`.
        Err(_) => domain().retire(d.into_iter().collect()),
    }
}

/// Seals `batch`, tries to move the epoch on, and hands every batch whose
/// grace period is over to crossbeam's epoch (so an object is freed only
/// after both grace periods: a reader pinned under either scheme keeps it).
fn reclaim(batch: Vec<Deferred>) {
    let d = domain();
    d.retire(batch);
    d.try_advance();
    to_crossbeam(d.collect());
}

fn to_crossbeam(done: Vec<Deferred>) {
    if done.is_empty() {
        return;
    }
    let g = crossbeam_epoch::pin();
    for d in done {
        // SAFETY: `d` is unreachable for new readers and past the cheap
        // domain's grace period, so no cheap pin can still see it;
        // crossbeam runs the closure once every crossbeam pin that might
        // still see it has ended.
        unsafe { g.defer_unchecked(move || d.run()) };
    }
    // crossbeam collects its garbage only in every 128th pin of a thread
    // and in `flush`; a thread whose hot pins are all cheap pins crossbeam
    // only here, once a batch, so without this its queue would outgrow its
    // collection (measured: unlink1's heap grew without bound).
    g.flush();
}

/// Seals this thread's bag and moves retired objects on as far as the
/// readers allow (tests: no object is left waiting for a batch to fill).
#[cfg(test)]
pub(crate) fn flush() {
    let batch = LOCAL
        .try_with(|l| std::mem::take(&mut *l.bag.borrow_mut()))
        .unwrap_or_default();
    let d = domain();
    d.retire(batch);
    for _ in 0..3 {
        d.try_advance();
    }
    to_crossbeam(d.collect());
    crossbeam_epoch::pin().flush();
}

/// Objects sealed in the domain and not yet handed to crossbeam (tests).
#[cfg(test)]
pub(crate) fn pending() -> usize {
    domain().pending()
}
