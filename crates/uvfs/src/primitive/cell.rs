//! `std::cell`'s mirror: [`UnsafeCell`], with loom's closure API in every
//! build so that loom can check that no two accesses to a cell race.
//!
//! Shuttle has no checked cell (it checks schedules, not data races), so
//! the cell is std's there, as in normal builds.

/// An `UnsafeCell` accessed through closures ([`with`](Self::with) for a
/// read, [`with_mut`](Self::with_mut) for a write): a plain
/// `std::cell::UnsafeCell` in normal and shuttle builds, loom's tracked cell
/// under loom, where two unordered accesses, one of them a write, fail the
/// model.
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(
    #[cfg(not(loom))] std::cell::UnsafeCell<T>,
    #[cfg(loom)] loom::cell::UnsafeCell<T>,
);

impl<T> UnsafeCell<T> {
    pub(crate) fn new(v: T) -> Self {
        #[cfg(not(loom))]
        return UnsafeCell(std::cell::UnsafeCell::new(v));
        #[cfg(loom)]
        return UnsafeCell(loom::cell::UnsafeCell::new(v));
    }

    /// Runs `f` with a pointer for reading the value.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        #[cfg(not(loom))]
        return f(self.0.get());
        #[cfg(loom)]
        return self.0.with(f);
    }

    /// Runs `f` with a pointer for writing the value.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        #[cfg(not(loom))]
        return f(self.0.get());
        #[cfg(loom)]
        return self.0.with_mut(f);
    }

    /// The raw pointer, for a lock's guard that hands out references for
    /// its whole life (the facade's own [`SpinMutex`](super::spin::SpinMutex)).
    #[cfg(not(loom))]
    #[inline(always)]
    pub(super) fn get(&self) -> *mut T {
        self.0.get()
    }

    /// Under loom, a write access tracked until the returned pointer drops:
    /// a lock's guard holds it for its whole life, so loom fails the model
    /// if two guards' accesses are not ordered.
    #[cfg(loom)]
    pub(super) fn tracked_mut(&self) -> loom::cell::MutPtr<T> {
        self.0.get_mut()
    }
}
