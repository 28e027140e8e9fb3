//! Loom models of a FIFO's open rendezvous and its reader/writer
//! wake-ups: a blocked opener is woken by the other side's open (even one
//! that closes again at once), a reader blocked on an empty pipe by data
//! or by the last writer's release, a writer blocked on a full pipe by a
//! read or by the last reader's release. No lost wake-up (loom reports a
//! deadlock if every thread sleeps), and every model ends with the slot
//! empty: the pipe goes with its last file. Pollers too: a poller that
//! registers, finds nothing and sleeps is woken by data, by room, or by
//! the last writer's release, whichever way the threads interleave.

use super::*;
use crate::primitive::model::{builder, check};
use loom::sync::Arc;
use loom::thread;

/// A blocking read-only open and a blocking write-only open meet,
/// whichever comes first.
#[test]
fn blocking_opens_meet() {
    check(&builder(3), || {
        let slot = Arc::new(InodePipe::default());
        let s2 = slot.clone();
        let t = thread::spawn(move || {
            let r = fifo_open(&s2, true, false, false, None).unwrap();
            r.release(&s2);
        });
        let w = fifo_open(&slot, false, true, false, None).unwrap();
        w.release(&slot);
        t.join().unwrap();
        assert!(slot.is_empty());
    });
}

/// A writer that opens and closes at once still wakes a blocked reader
/// (the open counter moved), which then reads end of file.
#[test]
fn writer_that_comes_and_goes_wakes_the_reader() {
    check(&builder(3), || {
        let slot = Arc::new(InodePipe::default());
        let s2 = slot.clone();
        let t = thread::spawn(move || {
            let r = fifo_open(&s2, true, false, false, None).unwrap();
            let mut b = [0u8; 4];
            let n = r.read(&mut [&mut b[..]], false, None).unwrap();
            r.release(&s2);
            n
        });
        // Whichever opens first waits for the other; the reader then
        // reads end of file once the writer is gone.
        let w = fifo_open(&slot, false, true, false, None).unwrap();
        w.release(&slot);
        let n = t.join().unwrap();
        assert!(n == 0);
        assert!(slot.is_empty());
    });
}

/// A reader blocked on an empty pipe is woken by data.
#[test]
fn reader_woken_by_data() {
    check(&builder(3), || {
        let slot = Arc::new(InodePipe::default());
        let rw = fifo_open(&slot, true, true, false, None).unwrap();
        let rw = Arc::new(rw);
        let rw2 = rw.clone();
        let t = thread::spawn(move || {
            let mut b = [0u8; 4];
            rw2.read(&mut [&mut b[..]], false, None).unwrap()
        });
        assert_eq!(rw.write(&[b"ab"], false, false, None), Ok(2));
        assert_eq!(t.join().unwrap(), 2);
        rw.release(&slot);
        assert!(slot.is_empty());
    });
}

/// A writer blocked on a full pipe is woken by a read, then finishes.
#[test]
fn writer_woken_by_room() {
    check(&builder(2), || {
        let slot = Arc::new(InodePipe::default());
        let rw = Arc::new(fifo_open(&slot, true, true, false, None).unwrap());
        rw.set_size(4096, false).unwrap();
        assert_eq!(rw.write(&[&[1u8; 4096][..]], false, false, None), Ok(4096));
        let rw2 = rw.clone();
        let t = thread::spawn(move || rw2.write(&[b"x"], false, false, None));
        let mut b = vec![0u8; 4096];
        assert_eq!(rw.read(&mut [&mut b[..]], false, None), Ok(4096));
        assert_eq!(t.join().unwrap(), Ok(1));
        rw.release(&slot);
        assert!(slot.is_empty());
    });
}

/// A writer blocked on a full pipe gets EPIPE when the last reader goes.
#[test]
fn writer_woken_by_last_reader_leaving() {
    check(&builder(2), || {
        let slot = Arc::new(InodePipe::default());
        let r = fifo_open(&slot, true, false, true, None).unwrap();
        let w = Arc::new(fifo_open(&slot, false, true, true, None).unwrap());
        w.set_size(4096, false).unwrap();
        assert_eq!(w.write(&[&[1u8; 4096][..]], false, false, None), Ok(4096));
        let (w2, s2) = (w.clone(), slot.clone());
        let t = thread::spawn(move || w2.write(&[b"x"], false, false, None));
        r.release(&slot);
        assert_eq!(t.join().unwrap(), Err(Errno::EPIPE));
        w.release(&s2);
        assert!(slot.is_empty());
    });
}

/// A reader blocked on an empty pipe reads end of file when the last
/// writer goes.
#[test]
fn reader_woken_by_last_writer_leaving() {
    check(&builder(3), || {
        let slot = Arc::new(InodePipe::default());
        let w = fifo_open(&slot, true, true, false, None).unwrap();
        let r = Arc::new(fifo_open(&slot, true, false, true, None).unwrap());
        let r2 = r.clone();
        // The read-write open counts as a reader and a writer: its
        // release leaves no writer.
        let t = thread::spawn(move || {
            let mut b = [0u8; 4];
            r2.read(&mut [&mut b[..]], false, None)
        });
        w.release(&slot);
        assert_eq!(t.join().unwrap(), Ok(0));
        r.release(&slot);
        assert!(slot.is_empty());
    });
}

/// Polls `f` for `want` as `Process::poll` does with no time limit:
/// register and scan, sleep until woken, scan again.
fn poll_until(f: &FifoFile, want: i16) -> i16 {
    let w = crate::select::Waiter::new();
    loop {
        let m = f.poll(Some(&w)) & want;
        if m != 0 {
            return m;
        }
        w.wait_until(None);
    }
}

/// A poller on an empty read end is woken by a write.
#[test]
fn poller_woken_by_data() {
    use crate::uapi::POLLIN;
    check(&builder(3), || {
        let slot = Arc::new(InodePipe::default());
        let rw = Arc::new(fifo_open(&slot, true, true, false, None).unwrap());
        let rw2 = rw.clone();
        let t = thread::spawn(move || poll_until(&rw2, POLLIN));
        assert_eq!(rw.write(&[b"a"], false, false, None), Ok(1));
        assert_eq!(t.join().unwrap(), POLLIN);
        rw.release(&slot);
        assert!(slot.is_empty());
    });
}

/// A poller on a full write end is woken when a read frees a buffer.
#[test]
fn poller_woken_by_room() {
    use crate::uapi::POLLOUT;
    check(&builder(2), || {
        let slot = Arc::new(InodePipe::default());
        let rw = Arc::new(fifo_open(&slot, true, true, false, None).unwrap());
        rw.set_size(4096, false).unwrap();
        assert_eq!(rw.write(&[&[1u8; 4096][..]], false, false, None), Ok(4096));
        let rw2 = rw.clone();
        let t = thread::spawn(move || poll_until(&rw2, POLLOUT));
        let mut b = vec![0u8; 4096];
        assert_eq!(rw.read(&mut [&mut b[..]], false, None), Ok(4096));
        assert_eq!(t.join().unwrap(), POLLOUT);
        rw.release(&slot);
        assert!(slot.is_empty());
    });
}

/// A poller on a read end hangs up when the last writer goes.
#[test]
fn poller_woken_by_last_writer_leaving() {
    use crate::uapi::{POLLHUP, POLLIN};
    check(&builder(3), || {
        let slot = Arc::new(InodePipe::default());
        let w = fifo_open(&slot, true, true, false, None).unwrap();
        let r = Arc::new(fifo_open(&slot, true, false, true, None).unwrap());
        let r2 = r.clone();
        let t = thread::spawn(move || poll_until(&r2, POLLIN | POLLHUP));
        w.release(&slot);
        assert_eq!(t.join().unwrap(), POLLHUP);
        r.release(&slot);
        assert!(slot.is_empty());
    });
}

static OPEN_INTR: crate::primitive::model::Seen<2> = crate::primitive::model::Seen::new();

/// A blocked read-only open interrupted while a non-blocking writer
/// opens: either the writer found the reader and the open succeeds (its
/// partner came, whatever the interrupt), or the open fails with `EINTR`
/// and gives its reader count back, so the writer finds no reader
/// (`ENXIO`) or came first and succeeded; never a failed open that a
/// writer saw. The pipe goes with the last file either way.
#[test]
fn interrupted_open_races_with_partner() {
    use crate::signal::{Interrupted, Signals};
    check(&builder(3), || {
        let slot = Arc::new(InodePipe::default());
        let sig = Signals::new();
        let (s2, g2) = (slot.clone(), sig.clone());
        let t = thread::spawn(move || fifo_open(&s2, true, false, false, Some(&*g2)));
        let g3 = sig.clone();
        let i = thread::spawn(move || g3.interrupt(Interrupted::Eintr));
        let w = fifo_open(&slot, false, true, true, None);
        let r = t.join().unwrap();
        i.join().unwrap();
        let outcome = match (&r, &w) {
            (Ok(_), Ok(_)) => 0,
            (Err(Errno::EINTR), Err(Errno::ENXIO)) => 1,
            (Err(Errno::EINTR), Ok(_)) => panic!("the writer saw a reader whose open failed"),
            (Ok(_), Err(_)) => panic!("a reader opened without a writer"),
            _ => panic!("unexpected: {:?} {:?}", r.as_ref().err(), w.as_ref().err()),
        };
        OPEN_INTR.hit(outcome);
        if let Ok(f) = r {
            f.release(&slot);
        }
        if let Ok(f) = w {
            f.release(&slot);
        }
        assert!(slot.is_empty());
    });
    OPEN_INTR.report(["both opened", "interrupted, no reader"], &[0, 1]);
}
