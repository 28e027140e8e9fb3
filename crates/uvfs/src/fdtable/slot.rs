//! One fd's slot, and the one rule every user of a slot follows: a slot
//! may hold [`CLOSING`], a marker meaning "a writer owns this slot for a
//! few instructions"; no one but that writer ever acts on it.
//!
//! The marker lets a close of fds 0..63 run without the table's lock
//! (`FastPaths::fd_close_lockless`) while the lock's other users (dup2,
//! fork's copy, close_range) and the lockless ones (lookups, installs)
//! stay exact. A writer *holds* a slot by a compare-and-swap of the file
//! it loaded to the marker ([`Slot::hold`]) and ends the hold by storing a
//! file or null ([`Held`]). Only a slot with a file can be held: an empty
//! slot is never written by anyone but its fd's owner (the allocator that
//! reserved it, or dup2 after claiming its bit), so an install into an
//! empty slot stays a plain store.
//!
//! Readers never see the marker: [`Slot::load`] waits until the holder is
//! done. That wait is what makes a close one instant for everyone (see
//! docs/fd-threads.md, "A close without the lock"): a close holds the
//! slot, frees the number, then empties the slot, so whoever finds the
//! slot held also finds, after waiting, the number free.

use crate::file_table::File;
use crate::primitive::hint;
use crate::primitive::sync::atomic::{AtomicPtr, Ordering};
use std::ptr::{self, NonNull};

/// The marker of a held slot. Address 1 is never a file (files are
/// cache-line aligned) and masks to 0 in the masked lookup's out-of-range
/// case like any pointer.
pub(super) const CLOSING: *mut File = ptr::without_provenance_mut(1);

/// Spins this many times before yielding while a slot is held (a holder
/// preempted on a loaded machine would otherwise be spun against for its
/// whole time slice).
const SPINS: u32 = 64;

/// One fd's slot: the file installed at the fd, null, or [`CLOSING`].
#[derive(Debug)]
#[repr(transparent)]
pub(super) struct Slot(AtomicPtr<File>);

impl Slot {
    /// An empty slot.
    pub(super) fn new() -> Slot {
        Slot(AtomicPtr::new(ptr::null_mut()))
    }

    /// The slot's file or null, never the marker: a held slot is waited
    /// out (Acquire: a file loaded here is the installer's, whole).
    #[inline(always)]
    pub(super) fn load(&self) -> *mut File {
        let f = self.0.load(Ordering::Acquire);
        if f != CLOSING {
            return f;
        }
        self.wait_out()
    }

    #[cold]
    #[inline(never)]
    fn wait_out(&self) -> *mut File {
        let mut spins = 0;
        loop {
            let f = self.0.load(Ordering::Acquire);
            if f != CLOSING {
                return f;
            }
            wait(&mut spins);
        }
    }

    /// The slot's value for a thread that excludes every other user of the
    /// table (the single user, a table being dropped): no one can hold the
    /// slot, so there is nothing to wait for.
    #[inline(always)]
    pub(super) fn load_excl(&self) -> *mut File {
        let f = self.0.load(Ordering::Relaxed);
        debug_assert_ne!(f, CLOSING, "a held slot seen by an exclusive user");
        f
    }

    /// A store by a thread that excludes every other user of the table.
    #[inline(always)]
    pub(super) fn store_excl(&self, f: *mut File) {
        self.0.store(f, Ordering::Relaxed);
    }

    /// Installs `f` into the empty slot of an fd the caller has claimed
    /// (`fd_install`). A close that freed the number may still be ending
    /// its hold (it empties the slot just after freeing the number): wait
    /// for the slot to be empty, then store. No one else writes an empty
    /// slot whose fd is claimed, so the store cannot overwrite anything.
    #[inline(always)]
    pub(super) fn install(&self, f: NonNull<File>) {
        let cur = self.load();
        debug_assert!(cur.is_null(), "fd_install over an installed file");
        self.0.store(f.as_ptr(), Ordering::Release);
    }

    /// Holds the slot if it has a file: `None` when it is empty (a free or
    /// reserved fd); otherwise the file, with the slot marked until the
    /// [`Held`] ends. Waits out another holder, then tries again (its hold
    /// may end with another file, or none).
    #[inline(always)]
    pub(super) fn hold(&self) -> Option<Held<'_>> {
        loop {
            let f = NonNull::new(self.load())?;
            // Acquire: the file's installer's writes are ours as we take
            // the slot's reference.
            if self
                .0
                .compare_exchange(f.as_ptr(), CLOSING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Some(Held {
                    slot: self,
                    file: f,
                });
            }
        }
    }

    /// The locked close's one read-modify-write, for a slot no one holds
    /// (fds from 64 on, or any fd with `fd_bits_lockfree` off: every
    /// writer of it takes the lock): takes the file out.
    #[inline(always)]
    pub(super) fn take_locked(&self) -> *mut File {
        self.0.swap(ptr::null_mut(), Ordering::AcqRel)
    }

    /// Publishes `f` over whatever a lock holder found in a slot no one
    /// holds (as for [`take_locked`](Self::take_locked)).
    #[inline(always)]
    pub(super) fn store_locked(&self, f: *mut File) {
        self.0.store(f, Ordering::Release);
    }
}

/// A slot held by this thread (its value is [`CLOSING`]); dropping it
/// puts the file back.
pub(super) struct Held<'a> {
    slot: &'a Slot,
    file: NonNull<File>,
}

impl Held<'_> {
    /// The file the slot held.
    #[inline(always)]
    pub(super) fn file(&self) -> NonNull<File> {
        self.file
    }

    /// Ends the hold with `f` in the slot (null: the fd's file is gone;
    /// another file: dup2's replacement), returning the file the slot held.
    /// Release: everything the holder did (a freed number) is seen by
    /// whoever waited the hold out.
    #[inline(always)]
    pub(super) fn end(self, f: *mut File) -> NonNull<File> {
        let file = self.file;
        self.slot.0.store(f, Ordering::Release);
        std::mem::forget(self);
        file
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.slot.0.store(self.file.as_ptr(), Ordering::Release);
    }
}

/// One round of waiting for a holder: a pause, and after [`SPINS`] of
/// them a yield of the CPU.
///
/// Under loom a pause is a yield, and two threads waiting on one holder
/// could yield to each other forever (loom counts a yield to another
/// waiter as a free switch, not a preemption). Waiting rounds change no
/// state, so after a few of them loom stops exploring this execution's
/// alternatives (`skip_branch`) and runs it to its end, its scheduler
/// then preferring the thread that yielded least: the holder.
#[inline(always)]
pub(super) fn wait(spins: &mut u32) {
    #[cfg(loom)]
    if *spins >= 2 {
        loom::skip_branch();
    }
    if *spins < SPINS {
        *spins += 1;
        hint::spin_loop();
    } else {
        yield_now();
    }
}

#[inline(always)]
fn yield_now() {
    #[cfg(not(any(loom, shuttle)))]
    std::thread::yield_now();
    #[cfg(any(loom, shuttle))]
    hint::spin_loop();
}
