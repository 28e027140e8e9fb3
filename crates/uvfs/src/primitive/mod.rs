//! The concurrency facade: the one place the concurrent core takes its
//! atomics, locks, cells, thread-locals and spin hints from. Its modules
//! mirror std's paths (as tokio's `loom` module and crossbeam-epoch's
//! `primitive` module do), so code reads as it would against std:
//!
//! | facade                                   | std                     |
//! |------------------------------------------|-------------------------|
//! | [`sync::Mutex`], [`sync::MutexGuard`], [`sync::Condvar`] | `std::sync::…` |
//! | [`sync::atomic`]`::{AtomicU64, …, Ordering, fence}` | `std::sync::atomic::…` |
//! | [`cell::UnsafeCell`]                     | `std::cell::UnsafeCell` (closure API) |
//! | [`thread_local!`]                        | `std::thread_local!`    |
//! | [`hint::spin_loop`]                      | `std::hint::spin_loop`  |
//! | [`hint::prefetch`]                       | (none: `_mm_prefetch`)  |
//!
//! plus what std has no counterpart for: [`sync::UnmodelledMutex`] and
//! [`sync::UnmodelledRwLock`] (locks loom never sees, for state no loom model
//! covers), [`hint::retry_wait`] (the back-edge of a lockless retry loop)
//! and [`spin::SpinMutex`] (a spin-then-park lock built from the facade).
//!
//! Three back ends, chosen by `--cfg`:
//! - **std** (normal builds): everything is std's; the facade costs nothing.
//! - **loom** (`--cfg loom`): loom's atomics, locks, cells and thread-locals,
//!   so loom's exhaustive models (in-crate `loom_tests` modules and
//!   `tests/*_loom.rs`) exercise the very code that ships, every access a
//!   point where the model may switch threads, every cell access checked
//!   for races.
//! - **shuttle** (`--cfg shuttle`): shuttle's, so its randomized schedules
//!   of whole-VFS scenarios (`tests/vfs_shuttle.rs`) switch threads at every
//!   atomic and lock operation of the same code. Under shuttle every
//!   blocking primitive must be shuttle's (its threads share one OS thread,
//!   so a thread blocked on a std lock would block them all), hence the
//!   unmodelled locks are shuttle's there. Shuttle has no checked cell, so
//!   [`cell::UnsafeCell`] is std's there.
//!
//! What does not go through the facade: `Arc` (reference counting no model
//! is about), `Cell`/`RefCell` inside a thread-local (one thread's own
//! data), and test-only hooks that are per OS thread on purpose.

pub(crate) mod cell;
pub(crate) mod hint;
#[cfg(all(test, loom))]
pub(crate) mod model;
pub(crate) mod spin;
pub(crate) mod sync;
pub(crate) mod thread;

pub(crate) use thread::thread_local;
