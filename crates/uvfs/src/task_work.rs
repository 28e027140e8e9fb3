//! Deferred work, the `task_work` analogue: a put that is not close(2)'s
//! own (a replaced dup2 target, close_range, a lookup's reference, a failed
//! open on the stock path) queues the file's final release on the calling
//! thread, and the queue is drained when the thread's outermost API call
//! returns.
//!
//! Like the kernel's list, the queue is intrusive: it links through the file
//! objects themselves, so queueing allocates nothing. A put made outside any
//! API call (a [`FileRef`](crate::FileRef) dropped by the embedder's own
//! code) has no call to wait for and releases at once, as a kernel thread's
//! fput has no return to user space.

use crate::file_table::{self, File};
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

// Through the facade: under loom and shuttle each modelled thread has a
// queue of its own (their threads share one OS thread).
crate::primitive::thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static HEAD: Cell<*const File> = const { Cell::new(ptr::null()) };
}

/// Marks the thread as inside an API call until dropped; the outermost one
/// drains the queue on drop.
pub(crate) struct Call {
    _not_send: PhantomData<*const ()>,
}

/// Enters an API call.
#[inline]
pub(crate) fn enter() -> Call {
    DEPTH.with(|d| d.set(d.get() + 1));
    Call {
        _not_send: PhantomData,
    }
}

impl Drop for Call {
    #[inline]
    fn drop(&mut self) {
        let outermost = DEPTH.with(|d| {
            let n = d.get() - 1;
            d.set(n);
            n == 0
        });
        if outermost && !HEAD.with(Cell::get).is_null() {
            run();
        }
    }
}

/// Queues the final release of `f` (whose count just reached zero) on this
/// thread, or releases it at once when no API call is in progress.
pub(crate) fn queue_release(f: NonNull<File>) {
    if DEPTH.with(Cell::get) == 0 {
        // SAFETY: the count reached zero, so the caller owned the last
        // reference and passes it on to us.
        unsafe { file_table::release(f) };
        return;
    }
    // SAFETY: the count is zero, so no one else uses the file's link field;
    // stale lockless readers only touch the count.
    unsafe { File::set_link(f, HEAD.with(Cell::get)) };
    HEAD.with(|h| h.set(f.as_ptr()));
}

/// Runs every queued release, including any queued by those releases.
pub fn run() {
    // Releases run inside a call of their own, so that puts they make are
    // queued here instead of recursing.
    let _call = enter();
    loop {
        let mut cur = HEAD.with(|h| h.replace(ptr::null()));
        if cur.is_null() {
            break;
        }
        while let Some(f) = NonNull::new(cur.cast_mut()) {
            // SAFETY: queued files have count zero and belong to the queue.
            cur = unsafe { File::link(f) };
            // SAFETY: as above; each file is on the queue exactly once.
            unsafe { file_table::release(f) };
        }
    }
    // `_call` is the outermost call only if we were entered from `Call::drop`
    // with depth zero; the queue is empty now, so its drop does nothing.
}

/// Whether the calling thread has releases waiting (for tests).
pub fn pending() -> bool {
    !HEAD.with(Cell::get).is_null()
}
