//! Deferred work, the `task_work` analogue: a put that is not close(2)'s
//! own (a replaced dup2 target, close_range, a lookup's reference, a failed
//! open on the stock path) queues the file's final release on the calling
//! thread, and the queue is drained when the thread's outermost API call
//! returns.
//!
//! Like the kernel's list, the queue is intrusive and knows nothing of what
//! it runs: each queued item is a `Callback` (`struct callback_head`)
//! embedded in the object the work is about (a file), holding the link and
//! the function to run, so queueing allocates nothing. Work added outside
//! any API call (a [`FileRef`](crate::FileRef) dropped by the embedder's own
//! code) has no call to wait for and runs at once, as a kernel thread's
//! fput has no return to user space.

use crate::primitive::cell::UnsafeCell;
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

/// One piece of deferred work (`struct callback_head`), embedded in the
/// object it concerns: the queue's link and the function to run.
pub(crate) struct Callback {
    /// The next queued item; touched only by the thread whose queue holds
    /// this one.
    next: UnsafeCell<*const Callback>,
    func: unsafe fn(NonNull<Callback>),
}

impl Callback {
    /// An unqueued item that will run `func` on itself.
    pub(crate) fn new(func: unsafe fn(NonNull<Callback>)) -> Callback {
        Callback {
            next: UnsafeCell::new(ptr::null()),
            func,
        }
    }

    /// Runs the item's function.
    ///
    /// # Safety
    /// The caller owns the item (it is on no queue, or was just taken off
    /// one), and the item's function may run on it now.
    unsafe fn call(cb: NonNull<Callback>) {
        // SAFETY: per the contract, the item is live and ours.
        let func = unsafe { cb.as_ref() }.func;
        // SAFETY: per the contract.
        unsafe { func(cb) };
    }
}

/// A thread's call depth and queue, in one thread-local (each lookup is
/// a `__tls_get_addr` call when the library is linked into a shared
/// object, such as the preload shim).
struct Queue {
    /// How many API calls this thread is inside.
    depth: Cell<u32>,
    /// The last queued item (the queue runs from here along the links).
    head: Cell<*const Callback>,
}

// Through the facade: under loom and shuttle each modelled thread has a
// queue of its own (their threads share one OS thread).
crate::primitive::thread_local! {
    static QUEUE: Queue = const {
        Queue {
            depth: Cell::new(0),
            head: Cell::new(ptr::null()),
        }
    };
}

/// Marks the thread as inside an API call until dropped; the outermost one
/// drains the queue on drop.
pub(crate) struct Call {
    _not_send: PhantomData<*const ()>,
}

/// Enters an API call.
#[inline]
pub(crate) fn enter() -> Call {
    QUEUE.with(|q| q.depth.set(q.depth.get() + 1));
    Call {
        _not_send: PhantomData,
    }
}

impl Drop for Call {
    #[inline]
    fn drop(&mut self) {
        let work = QUEUE.with(|q| {
            let n = q.depth.get() - 1;
            q.depth.set(n);
            n == 0 && !q.head.get().is_null()
        });
        if work {
            run();
        }
    }
}

/// `task_work_add`: queues `cb` on this thread, to run when the outermost
/// API call returns, or runs it at once when no API call is in progress.
///
/// # Safety
/// `cb` is live, on no queue, and stays live until its function runs; the
/// caller hands it over (nothing else touches its link meanwhile; the
/// function may be called with it from this thread).
pub(crate) unsafe fn add(cb: NonNull<Callback>) {
    let queued = QUEUE.with(|q| {
        if q.depth.get() == 0 {
            return false;
        }
        // SAFETY: handed over by the caller: the item is live, and we
        // alone touch its link.
        let item = unsafe { cb.as_ref() };
        // SAFETY: as above.
        item.next.with_mut(|n| unsafe { *n = q.head.get() });
        q.head.set(cb.as_ptr());
        true
    });
    if !queued {
        // SAFETY: handed over by the caller, on no queue.
        unsafe { Callback::call(cb) };
    }
}

/// Runs every queued item, including any queued while they run.
pub fn run() {
    // Items run inside a call of their own, so that work they add is
    // queued here instead of recursing.
    let _call = enter();
    loop {
        let mut cur = QUEUE.with(|q| q.head.replace(ptr::null()));
        if cur.is_null() {
            break;
        }
        while let Some(cb) = NonNull::new(cur.cast_mut()) {
            // SAFETY: queued items are live and belong to the queue; the
            // link is read before the function may free the item.
            let item = unsafe { cb.as_ref() };
            // SAFETY: as above.
            cur = item.next.with(|n| unsafe { *n });
            // SAFETY: taken off the queue just now; each item is queued
            // once.
            unsafe { Callback::call(cb) };
        }
    }
    // `_call` is the outermost call only if we were entered from `Call::drop`
    // with depth zero; the queue is empty now, so its drop does nothing.
}

/// Whether the calling thread has releases waiting (for tests).
pub fn pending() -> bool {
    !QUEUE.with(|q| q.head.get().is_null())
}
