//! How a symbol is interposed: [`real!`] finds the next definition of a
//! libc function (the one the shim hides), and [`forward!`] defines
//! interposed functions that only hand their arguments to another of the
//! shim's implementations. (`at_call!`, for the `*at` calls whose uvfs side
//! is the `Process` method of the same name, lives with `path_call` in
//! `dispatch`.)
//!
//! Every interposed function is an `unsafe extern "C" fn` whose contract is
//! the C contract of the libc function it replaces: the caller's pointers
//! are valid for what that function reads and writes. The shim passes the
//! caller's arguments on under that same contract, or values it made valid
//! itself; each `unsafe` block that calls the next definition says which.

/// Writes a message to stderr with a raw syscall and aborts: a libc symbol
/// the program uses is missing from the next object, which cannot happen
/// with a working libc.
pub(crate) fn missing(name: &str) -> ! {
    let msg = format!("uvfs-preload: no next definition of {name}\n");
    let _ = rustix::io::write(rustix::stdio::stderr(), msg.as_bytes());
    std::process::abort()
}

/// `real!(name: fn(T, …) -> R)`: the next definition of `name`
/// (`dlsym(RTLD_NEXT)`), resolved on first use and cached, as an
/// `unsafe extern "C" fn(T, …) -> R`. Calling it is unsafe: the call site
/// says, in its own `unsafe` block, why the arguments meet the C
/// function's contract.
macro_rules! real {
    ($name:ident : fn($($t:ty),* $(,)?) -> $r:ty) => {{
        static P: ::std::sync::atomic::AtomicUsize = ::std::sync::atomic::AtomicUsize::new(0);
        let mut p = P.load(::std::sync::atomic::Ordering::Relaxed);
        if p == 0 {
            // SAFETY: a NUL-terminated symbol name; RTLD_NEXT is valid from
            // a shared object. (The call site's own `unsafe` block may
            // enclose this one.)
            #[allow(unused_unsafe)]
            let q = unsafe {
                ::libc::dlsym(
                    ::libc::RTLD_NEXT,
                    concat!(stringify!($name), "\0").as_ptr().cast(),
                )
            };
            p = q as usize;
            if p == 0 {
                $crate::interpose::missing(stringify!($name));
            }
            P.store(p, ::std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: `p` is the non-NULL address dlsym gave for the C function
        // `$name`, whose prototype is the one written here; the pointer
        // stays an `unsafe` fn, so calling it needs the caller's own
        // `unsafe` block and reason.
        #[allow(unused_unsafe)]
        let f = unsafe { ::std::mem::transmute::<usize, unsafe extern "C" fn($($t),*) -> $r>(p) };
        f
    }};
}
pub(crate) use real;

/// `forward! { name(arg: T, …) -> R = expr; }`: an interposed C function
/// that only hands its arguments to another of the shim's implementations
/// (`stat64` to `do_fstatat`, `creat64` to `creat`, `__fxstat` to `fstat`).
macro_rules! forward {
    ($($name:ident($($a:ident: $t:ty),* $(,)?) -> $r:ty = $e:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: `", stringify!($e), "`.")]
        ///
        /// # Safety
        /// The C contract of the libc function of this name: the pointers
        /// are valid for what it reads and writes.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $r {
            #[allow(unused_unsafe)]
            // SAFETY: the caller's arguments, forwarded to an
            // implementation of the same call, whose contract the caller
            // already meets (some implementations are safe functions).
            unsafe { $e }
        }
    )*};
}
pub(crate) use forward;
