//! `std::thread`'s mirror, for what the concurrent core needs of it:
//! thread-local storage ([`thread_local!`](crate::primitive::thread_local)).
//!
//! A thread-local is per *modelled* thread only if the model's runtime
//! provides it: loom's and shuttle's threads are all run on one OS thread
//! (loom's as coroutines of one model thread, shuttle's likewise), so a std
//! thread-local would be one value shared by every thread of a model. Under
//! loom the facade's thread-locals are loom's (created on a thread's first
//! use, destroyed when that thread finishes, so a model sees a thread's exit
//! run its destructors); under shuttle, shuttle's.

/// Declares thread-locals, with `std::thread_local!`'s syntax (including
/// `const { … }` initializers): std's normally, loom's under loom, shuttle's
/// under shuttle. Every thread-local of the concurrent core is declared
/// through it, so the models see each thread's own value and its destructor.
///
/// Under loom a `const { … }` initializer becomes a plain one (loom's macro
/// has no const form; the initializer runs on first use either way).
macro_rules! facade_thread_local {
    () => {};

    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr } $(; $($rest:tt)*)?) => {
        #[cfg(not(any(loom, shuttle)))]
        ::std::thread_local!($(#[$attr])* $vis static $name: $t = const { $init });
        #[cfg(loom)]
        ::loom::thread_local!($(#[$attr])* $vis static $name: $t = $init);
        #[cfg(all(shuttle, not(loom)))]
        ::shuttle::thread_local!($(#[$attr])* $vis static $name: $t = const { $init });
        $($crate::primitive::thread_local!($($rest)*);)?
    };

    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr $(; $($rest:tt)*)?) => {
        #[cfg(not(any(loom, shuttle)))]
        ::std::thread_local!($(#[$attr])* $vis static $name: $t = $init);
        #[cfg(loom)]
        ::loom::thread_local!($(#[$attr])* $vis static $name: $t = $init);
        #[cfg(all(shuttle, not(loom)))]
        ::shuttle::thread_local!($(#[$attr])* $vis static $name: $t = $init);
        $($crate::primitive::thread_local!($($rest)*);)?
    };
}

// Defined under another name: `thread_local` alone is also a built-in
// attribute, which a `use` of a macro of that name would be ambiguous with.
pub(crate) use facade_thread_local as thread_local;
