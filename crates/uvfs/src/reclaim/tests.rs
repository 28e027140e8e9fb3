//! Stress of the real (thread-local, `membarrier`) cheap pin against
//! crossbeam's: threads pin, read a shared object and replace it, retiring
//! the old one; each object counts its drop. Counts only: no reader ever
//! finds a dropped object, and every retired object is dropped once.

use super::{defer_drop_box, local, pin_with};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

const LIVE: u64 = 0x5eed_cafe_f00d_0001;

struct Obj {
    magic: std::sync::atomic::AtomicU64,
    drops: &'static AtomicUsize,
}

impl Drop for Obj {
    fn drop(&mut self) {
        self.magic.store(0, Ordering::Relaxed);
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

fn new_obj(drops: &'static AtomicUsize) -> *mut Obj {
    Box::into_raw(Box::new(Obj {
        magic: std::sync::atomic::AtomicU64::new(LIVE),
        drops,
    }))
}

/// `mode`: 0 every pin cheap, 1 every pin crossbeam's, 2 mixed per call
/// (sound because every object waits for both grace periods).
fn stress(mode: usize, drops: &'static AtomicUsize) {
    const THREADS: usize = 4;
    const ITERS: usize = 50_000;
    let shared = AtomicPtr::new(new_obj(drops));
    let retired = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (shared, retired) = (&shared, &retired);
            s.spawn(move || {
                for i in 0..ITERS {
                    let cheap = match mode {
                        0 => true,
                        1 => false,
                        _ => (i + t) % 2 == 0,
                    };
                    let g = pin_with(cheap);
                    let p = shared.load(Ordering::Acquire);
                    // SAFETY: pinned before the load; `p` is retired only
                    // after it is replaced, and freed after the grace period.
                    let o = unsafe { &*p };
                    // Stay inside a while, so that a free that does not
                    // wait for this reader has a window to land in.
                    for _ in 0..32 {
                        assert_eq!(o.magic.load(Ordering::Relaxed), LIVE, "use after free");
                        std::hint::spin_loop();
                    }
                    // A nested pin, as the walk's callees take.
                    drop(pin_with(!cheap));
                    drop(g);
                    if i % 7 == t {
                        let old = shared.swap(new_obj(drops), Ordering::AcqRel);
                        retired.fetch_add(1, Ordering::Relaxed);
                        // SAFETY: `old` came from `Box::into_raw` and was
                        // just made unreachable by the swap.
                        unsafe { defer_drop_box(NonNull::new(old).unwrap()) };
                    }
                }
            });
        }
    });
    let last = shared.load(Ordering::Acquire);
    // SAFETY: the last object, unreachable once the threads are joined.
    unsafe { defer_drop_box(NonNull::new(last).unwrap()) };
    let want = retired.load(Ordering::Relaxed) + 1;
    assert!(want > THREADS * ITERS / 8, "{want}");
    for _ in 0..100_000 {
        if drops.load(Ordering::Relaxed) >= want {
            break;
        }
        local::flush();
        std::thread::yield_now();
    }
    assert_eq!(
        drops.load(Ordering::Relaxed),
        want,
        "pending {}",
        local::pending()
    );
}

#[test]
fn stress_cheap() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    stress(0, &DROPS);
}

#[test]
fn stress_crossbeam() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    stress(1, &DROPS);
}

#[test]
fn stress_mixed() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    stress(2, &DROPS);
}

/// An inner guard's drop leaves the outer pin in place: an object retired
/// inside the outer one is not freed until it ends.
#[test]
fn nested_pins_unpin_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let outer = pin_with(true);
    drop(pin_with(true));
    let o = new_obj(&DROPS);
    // SAFETY: a fresh box nobody else can reach.
    unsafe { defer_drop_box(NonNull::new(o).unwrap()) };
    for _ in 0..100 {
        local::flush();
    }
    assert_eq!(DROPS.load(Ordering::Relaxed), 0, "freed under a pin");
    drop(outer);
    for _ in 0..100_000 {
        if DROPS.load(Ordering::Relaxed) == 1 {
            break;
        }
        local::flush();
        std::thread::yield_now();
    }
    assert_eq!(DROPS.load(Ordering::Relaxed), 1);
}
