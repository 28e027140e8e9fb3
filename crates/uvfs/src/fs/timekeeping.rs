//! The clocks a file system stamps inodes with: Linux's coarse and fine
//! wall clocks and the multigrain floor between them (the timekeeping half
//! of multigrain timestamps, Linux 6.13 and later; the per-inode half, the
//! "ctime was queried" flag, is in the file system: `fs/tmpfs/inode.rs`).
//!
//! Linux stamps a file's times with the *coarse* wall clock (the time of the
//! last timer tick, a few milliseconds behind), which costs a memory read,
//! and reads the *fine* clock only when a coarse stamp could not show a
//! change: the inode's ctime was reported to someone (`stat`) since it was
//! last set, and the coarse time is not after it. So `stat`, change,
//! `stat` always shows a new ctime, while a stream of changes nobody looks
//! at costs no clock read beyond the tick's.
//!
//! The floor keeps the two clocks ordered across files: every fine stamp
//! handed out raises it, and a coarse stamp is never below it. Without it,
//! file A stamped with a fine time and then file B stamped with a coarse
//! one (still the previous tick) would show B changed before A. Linux keeps
//! the floor in monotonic time; here it is wall-clock nanoseconds, so a wall
//! clock stepped backwards holds coarse stamps at the floor until it catches
//! up (stamps never go backwards, which is what the floor is for).
//!
//! The floor is a plain std atomic: it is a single word updated by
//! compare-and-swap with no protocol around it, outside the loom models.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Timespec;

/// The latest fine-grained stamp handed out, in nanoseconds since the
/// epoch (`mg_floor`).
static MG_FLOOR: AtomicU64 = AtomicU64::new(0);

const NSEC_PER_SEC: u64 = 1_000_000_000;

fn read_clock(id: libc::clockid_t) -> Timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` into the valid, owned
    // buffer we pass; it has no other effect.
    let r = unsafe { libc::clock_gettime(id, &mut ts) };
    if r != 0 {
        // Both clocks exist on every Linux since 2.6.32; keep a stamp
        // rather than fail a write if one ever does not.
        return Timespec::now();
    }
    Timespec {
        sec: ts.tv_sec,
        nsec: ts.tv_nsec as u32,
    }
}

fn to_ns(t: Timespec) -> u64 {
    (t.sec.max(0) as u64)
        .saturating_mul(NSEC_PER_SEC)
        .saturating_add(u64::from(t.nsec))
}

fn from_ns(ns: u64) -> Timespec {
    Timespec {
        sec: (ns / NSEC_PER_SEC) as i64,
        nsec: (ns % NSEC_PER_SEC) as u32,
    }
}

/// The coarse wall clock (`CLOCK_REALTIME_COARSE`, the kernel's
/// `ktime_get_coarse_real_ts64`).
pub fn coarse_real() -> Timespec {
    read_clock(libc::CLOCK_REALTIME_COARSE)
}

/// The coarse wall clock, but never below the floor
/// (`ktime_get_coarse_real_ts64_mg`): what an inode nobody queried is
/// stamped with.
pub fn coarse_mg() -> Timespec {
    let coarse = coarse_real();
    let floor = MG_FLOOR.load(Ordering::Acquire);
    if floor > to_ns(coarse) {
        from_ns(floor)
    } else {
        coarse
    }
}

/// The fine wall clock, raising the floor to it (`ktime_get_real_ts64_mg`):
/// what a queried inode is stamped with when the coarse clock would not
/// show the change. If another thread raised the floor past this reading
/// meanwhile, its stamp is returned instead (never an older one).
pub fn fine_mg() -> Timespec {
    let fine = read_clock(libc::CLOCK_REALTIME);
    let ns = to_ns(fine);
    let mut old = MG_FLOOR.load(Ordering::Acquire);
    loop {
        if old >= ns {
            return from_ns(old);
        }
        match MG_FLOOR.compare_exchange_weak(old, ns, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return fine,
            Err(cur) => old = cur,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_never_below_a_fine_stamp_handed_out() {
        for _ in 0..1000 {
            let f = fine_mg();
            let c = coarse_mg();
            assert!(c >= f, "coarse {c:?} below fine {f:?}");
        }
    }

    #[test]
    fn fine_stamps_never_go_backwards() {
        let mut last = fine_mg();
        for _ in 0..1000 {
            let f = fine_mg();
            assert!(f >= last);
            last = f;
        }
    }

    #[test]
    fn ns_round_trip() {
        let t = Timespec {
            sec: 1_700_000_000,
            nsec: 999_999_999,
        };
        assert_eq!(from_ns(to_ns(t)), t);
    }
}
