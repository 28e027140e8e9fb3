//! The fork gate across a real `fork`: a child never gets the slot list
//! locked by a thread it does not have.
//!
//! The tree's switch hung this way (docs/preload-tree.md): a thread making
//! its first call held the list's lock (taking its slot, outside uvfs,
//! where the gate's flags do not look) when the switch forked; the
//! intermediate child's own fork then waited in its prepare handler for a
//! lock no thread of the child would ever give back. Here a thread holds
//! the list's lock, as a slot's take or give-back does, while another
//! thread forks; the child then takes a slot and forks in its turn, as the
//! intermediate child and a program's new thread do.

use super::Gate;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::SeqCst};

/// Whether thread `tid` of this process sleeps in `futex` (waiting for a
/// lock), from `/proc/self/task/TID/syscall`.
fn in_futex(tid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
        .ok()
        .and_then(|s| s.split(' ').next().map(str::to_owned))
        .is_some_and(|n| n == libc::SYS_futex.to_string())
}

/// The child's part: lets threads in again (the release handler), takes a
/// slot (a thread's first call) and forks again (its prepare and release
/// handlers). Exits 0 if all that returned; its alarm ends it if one waits
/// for the list's lock for ever.
fn child(g: &'static Gate) -> ! {
    // SAFETY: sets this process's alarm; nothing else to uphold.
    unsafe { libc::alarm(20) };
    g.after_fork();
    let mine = g.take(|| None);
    g.before_fork();
    g.after_fork();
    mine.keep();
    // SAFETY: leaves the child at once, without running the test
    // harness's exit handlers.
    unsafe { libc::_exit(0) }
}

#[test]
fn a_fork_never_copies_the_slot_list_locked() {
    let g: &'static Gate = Box::leak(Box::new(Gate::new()));
    let owner = g.take(|| None);
    let tid = AtomicI32::new(0);
    let holding = AtomicBool::new(false);
    let go = AtomicBool::new(false);
    std::thread::scope(|sc| {
        g.before_fork();
        // A thread taking or giving back its slot: it holds the list's
        // lock until told to let go, if it gets it before the fork.
        let t = sc.spawn(|| {
            // SAFETY: a plain id getter.
            tid.store(unsafe { libc::gettid() }, SeqCst);
            let list = g.slots();
            holding.store(true, SeqCst);
            while !go.load(SeqCst) {
                std::thread::yield_now();
            }
            drop(list);
        });
        // The fork comes once that thread holds the lock or waits for it.
        while !holding.load(SeqCst) {
            let t = tid.load(SeqCst);
            if t != 0 && in_futex(t) {
                break;
            }
            std::thread::yield_now();
        }
        // SAFETY: the child runs `child` alone, which only calls the gate
        // (its locks are ours; malloc is fork-safe in glibc) and `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            child(g);
        }
        go.store(true, SeqCst);
        g.after_fork();
        t.join().unwrap();
        let mut status = 0;
        // SAFETY: our child; `status` is writable.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child hung on the slot list's lock copied held (ended by its alarm): status {status:#x}"
        );
    });
    owner.keep();
}
