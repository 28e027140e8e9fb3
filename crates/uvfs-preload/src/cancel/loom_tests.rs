//! Loom models of the tree's switch against the calls asleep on the
//! private uvfs, run on [`Waits`]'s own code with loom's atomics: a wait
//! armed before the switch registers its event and sleeps unless it sees
//! the switch; the switch cancels every registered wait, then waits for
//! the FIFO calls to leave before it moves their data. What must hold:
//!
//! - no wait sleeps through the switch (loom fails a model whose thread
//!   sleeps for ever: the switch then spins on the FIFO count without end);
//! - a FIFO call touches the private pipe only before the switch moves it;
//! - every event reference the table held is dropped once (loom's `Arc`
//!   reports a leak or a double drop).
//!
//! Two must-fail twins: the switch with its two steps swapped (the table
//! looked at before the flag is set), where a wait that registers after
//! the scan and reads the flag before it is set sleeps for ever; and a
//! switch that moves the FIFOs without waiting for the count, which meets
//! a call still working on the private pipe. Loom finds both.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --profile test-release -p uvfs-preload --lib cancel
//! ```

use super::Waits;
use loom::model::Builder;
use loom::sync::atomic::AtomicBool;
use loom::sync::{Arc, Notify};
use loom::thread;
use std::cell::Cell;
use std::sync::atomic::Ordering::SeqCst;

std::thread_local! {
    /// Executions in which a wait slept (and was woken by the switch), and
    /// in which it saw the switch's flag before sleeping: both sides of the
    /// race must be reached. Per test thread (loom runs a model's threads
    /// as coroutines on the thread that calls `check`), so tests running in
    /// parallel do not count for each other.
    static SLEPT: Cell<usize> = const { Cell::new(0) };
    static SAW_FLAG: Cell<usize> = const { Cell::new(0) };
}

/// A model's event: loom's `Notify` (a signal before the wait is kept, as
/// an eventfd's count is; it may also wake the waiter for nothing).
struct Ev(Notify);

/// A small table: `CHUNK` slots a chunk, two chunks.
type Table<const CHUNK: usize> = Waits<Ev, CHUNK, 2>;

/// A caught panic's message (a must-fail twin checks it failed for its
/// reason).
fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn builder(preemptions: usize) -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = Some(preemptions);
    b
}

/// A FIFO call armed before the switch (`pre`), as `signal::cancellable`
/// runs it: registers its event, sleeps unless cancelled, checks again
/// after waking, takes its event back if the switch did not, touches the
/// private pipe only if not cancelled, and leaves (counted out). Returns
/// whether it was cancelled.
fn fifo_call<const CHUNK: usize>(t: &Table<CHUNK>, moved: &AtomicBool) -> bool {
    let ev = Arc::new(Ev(Notify::new()));
    let raw = Arc::into_raw(ev.clone()).cast_mut();
    let cancelled = match t.register(raw) {
        Some(i) => {
            let mut c = t.cancelled_at(i, raw, true);
            let n = if c { &SAW_FLAG } else { &SLEPT };
            n.with(|n| n.set(n.get() + 1));
            // Only the switch signals in these models; loom's `Notify`
            // also wakes spuriously, and a wake that finds the call not
            // cancelled sleeps again, as uvfs's wait re-checks what it
            // waits for.
            while !c {
                ev.0.wait();
                c = t.cancelled_at(i, raw, true);
            }
            if t.unregister(i, raw) {
                // SAFETY: the table's reference, taken back out of its slot.
                drop(unsafe { Arc::from_raw(raw) });
            }
            c
        }
        None => {
            // SAFETY: made by `Arc::into_raw` above, placed nowhere.
            drop(unsafe { Arc::from_raw(raw) });
            panic!("the model's table has a slot for every wait");
        }
    };
    if !cancelled {
        // The call's work on the private pipe.
        assert!(
            !moved.load(SeqCst),
            "a FIFO call on the pipe after it moved"
        );
    }
    t.fifo_end();
    cancelled
}

/// Wakes the wait whose event the switch took out of its slot, and drops
/// the table's reference to it.
///
/// # Safety
/// `p` is a reference the table held (made by `Arc::into_raw` in
/// `fifo_call`), swapped out of its slot by the caller, so owned by it.
unsafe fn wake(p: *mut Ev) {
    // SAFETY: the caller owns this reference (above).
    let ev = unsafe { Arc::from_raw(p) };
    ev.0.notify();
}

/// The switch's last steps: waits until no FIFO call is left on the
/// private uvfs, then moves the FIFOs.
fn move_when_no_call_is_left<const CHUNK: usize>(t: &Table<CHUNK>, moved: &AtomicBool) {
    while t.fifo_busy() {
        thread::yield_now();
    }
    moved.store(true, SeqCst);
}

/// The switch, holding the gate: cancels the waits, then waits until no
/// FIFO call is left on the private uvfs, then moves the FIFOs.
fn switch<const CHUNK: usize>(t: &Table<CHUNK>, moved: &AtomicBool) {
    // SAFETY: `cancel_all` hands over each event it swapped out.
    t.cancel_all(|p| unsafe { wake(p) });
    move_when_no_call_is_left(t, moved);
}

/// Every interleaving, to `preemptions`, of one FIFO call (counted in
/// while its caller held the gate, before the switch took it) against the
/// switch `sw`; `done` checks what the call returned.
fn one_call<R: 'static>(
    preemptions: usize,
    call: fn(&Table<1>, &AtomicBool) -> R,
    sw: fn(&Table<1>, &AtomicBool),
    done: fn(R),
) {
    builder(preemptions).check(move || {
        let t = Arc::new(Table::<1>::new());
        let moved = Arc::new(AtomicBool::new(false));
        t.fifo_begin();
        let (t2, m2) = (t.clone(), moved.clone());
        let w = thread::spawn(move || call(&t2, &m2));
        sw(&t, &moved);
        done(w.join().unwrap());
    });
}

/// Runs a must-fail twin and returns why it failed.
fn must_fail(twin: impl FnOnce() + std::panic::UnwindSafe) -> String {
    match std::panic::catch_unwind(twin) {
        Ok(()) => panic!("loom found no failing run of a must-fail twin"),
        Err(why) => panic_text(why.as_ref()),
    }
}

/// One FIFO call asleep (or about to sleep) against the switch.
#[test]
fn a_wait_never_sleeps_through_the_switch() {
    let (slept, saw) = (SLEPT.with(Cell::get), SAW_FLAG.with(Cell::get));
    one_call(3, fifo_call, switch, |cancelled| {
        assert!(cancelled, "a call armed before the switch is cancelled");
    });
    assert!(
        SLEPT.with(Cell::get) > slept,
        "no execution had the wait asleep"
    );
    assert!(
        SAW_FLAG.with(Cell::get) > saw,
        "no execution had the wait see the flag"
    );
}

/// Two FIFO calls, one slot a chunk: the second call publishes the second
/// chunk while the switch may be looking at the first (it must look at
/// every chunk), and both must be cancelled.
#[test]
fn two_waits_in_two_chunks_against_the_switch() {
    builder(2).check(|| {
        let t = Arc::new(Table::<1>::new());
        let moved = Arc::new(AtomicBool::new(false));
        t.fifo_begin();
        t.fifo_begin();
        let ws: Vec<_> = (0..2)
            .map(|_| {
                let (t2, m2) = (t.clone(), moved.clone());
                thread::spawn(move || fifo_call(&t2, &m2))
            })
            .collect();
        switch(&t, &moved);
        for w in ws {
            assert!(w.join().unwrap());
        }
    });
}

/// The switch with its two steps swapped: the table looked at before the
/// flag is set (wrong).
fn switch_scan_first(t: &Table<1>, moved: &AtomicBool) {
    for s in (0..2).filter_map(|c| t.chunk(c, false)).flatten() {
        let p = s.swap(std::ptr::null_mut(), SeqCst);
        if !p.is_null() {
            // SAFETY: swapped out of its slot here.
            unsafe { wake(p) };
        }
    }
    t.switching.store(true, SeqCst);
    move_when_no_call_is_left(t, moved);
}

/// The must-fail twin: a wait that registers after the scan and reads the
/// flag before it is set sleeps with no one to wake it; loom must find
/// that run.
#[test]
fn a_switch_that_scans_before_its_flag_loses_a_wait() {
    let why = must_fail(|| one_call(3, fifo_call, switch_scan_first, drop));
    // The lost wait shows as the switch spinning on the FIFO count for
    // ever (loom's bound on a run's length), not as a broken assertion.
    assert!(
        why.contains("maximum number of branches") || why.contains("deadlock"),
        "the twin failed for another reason: {why}"
    );
}

/// A FIFO call under way that does not sleep (a read that finds data, a
/// write with room), counted in before the switch: it works on the private
/// pipe, unless it already sees the switch, and leaves. The switch's wait
/// for the count is what keeps the move after that work.
fn busy_call<const CHUNK: usize>(t: &Table<CHUNK>, moved: &AtomicBool) {
    if !t.switching() {
        assert!(
            !moved.load(SeqCst),
            "a FIFO call on the pipe after it moved"
        );
    }
    t.fifo_end();
}

#[test]
fn the_move_waits_for_the_fifo_calls_under_way() {
    one_call(3, busy_call, switch, drop);
}

/// A switch that moves the FIFOs without waiting for the count (wrong).
fn switch_no_wait(t: &Table<1>, moved: &AtomicBool) {
    t.cancel_all(|_| unreachable!("no wait registered"));
    moved.store(true, SeqCst);
}

/// Its must-fail twin: the move meets a call still on the pipe (what the
/// 2-s wait of `signal::begin_switch` is for; no test through real
/// processes showed it).
#[test]
fn a_move_that_does_not_wait_meets_a_call_on_the_pipe() {
    let why = must_fail(|| one_call(3, busy_call, switch_no_wait, drop));
    assert!(
        why.contains("after it moved"),
        "failed for another reason: {why}"
    );
}
