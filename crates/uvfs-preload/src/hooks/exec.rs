//! The calls that run a program: the `exec` family and `posix_spawn`.
//! Each first makes the process a client of its tree's server
//! ([`before_child`](crate::namespace::before_child)), so that the new
//! program (or child) sees the files this process made. Then a uvfs
//! program is refused with `EACCES`, as for a file on a `noexec` mount
//! (the kernel loads a program from its own files only; a client's prefix
//! is the tree's mount, so there the kernel loads it from the mount).
//!
//! `execl`, `execle` and `execlp` take their arguments as a C variadic
//! list, which stable Rust cannot declare, and glibc's own versions call
//! its internal `execve`, which the shim never sees. They are defined here
//! as naked functions (below): a few instructions that spill the argument
//! registers next to the caller's stack arguments and hand both to Rust,
//! which builds the `argv` array and calls the `execv` form above.

use crate::conv::{cbytes, set_errno};
use crate::dispatch::{fd_call, is_uvfs_path, path_call, with_kernel_path};
use crate::interpose::real;
use crate::refuse::refuse;
use libc::{c_char, c_int, c_void, pid_t};

type P = *const c_char;
type Argv = *const *const c_char;

/// Fails a call returning -1 with `e` in errno.
fn fail(e: uvfs::Errno) -> c_int {
    set_errno(e.raw());
    -1
}

/// Whether the program name `file` of an `execvp`-style call names a uvfs
/// file (only a name with a `/` is a path; others are searched in `PATH`,
/// by glibc, on the host).
///
/// # Safety
/// `file` is NULL or a valid C string.
unsafe fn uvfs_program(file: P) -> bool {
    // SAFETY: per the contract.
    !file.is_null() && unsafe { cbytes(file) }.contains(&b'/') && unsafe { is_uvfs_path(file) }
}

/// `execve`.
///
/// # Safety
/// The C contract of `execve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execve(path: P, argv: Argv, envp: Argv) -> c_int {
    crate::namespace::before_child("execve");
    // SAFETY: the caller's path, valid per the contract.
    if unsafe { is_uvfs_path(path) } {
        return fail(refuse!("execve", "of a uvfs file", EACCES));
    }
    // SAFETY: the caller's arguments, the path perhaps the host path it
    // stands for (alive for the call).
    unsafe {
        with_kernel_path(path, |p| {
            real!(execve: fn(P, Argv, Argv) -> c_int)(p, argv, envp)
        })
    }
}

/// `execv`.
///
/// # Safety
/// The C contract of `execv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execv(path: P, argv: Argv) -> c_int {
    crate::namespace::before_child("execv");
    // SAFETY: the caller's path, valid per the contract.
    if unsafe { is_uvfs_path(path) } {
        return fail(refuse!("execv", "of a uvfs file", EACCES));
    }
    // SAFETY: as in `execve`.
    unsafe { with_kernel_path(path, |p| real!(execv: fn(P, Argv) -> c_int)(p, argv)) }
}

/// `execvp`.
///
/// # Safety
/// The C contract of `execvp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvp(file: P, argv: Argv) -> c_int {
    crate::namespace::before_child("execvp");
    // SAFETY: the caller's name, valid per the contract.
    if unsafe { uvfs_program(file) } {
        return fail(refuse!("execvp", "of a uvfs file", EACCES));
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(execvp: fn(P, Argv) -> c_int)(file, argv) }
}

/// `execvpe`.
///
/// # Safety
/// The C contract of `execvpe`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvpe(file: P, argv: Argv, envp: Argv) -> c_int {
    crate::namespace::before_child("execvpe");
    // SAFETY: the caller's name, valid per the contract.
    if unsafe { uvfs_program(file) } {
        return fail(refuse!("execvpe", "of a uvfs file", EACCES));
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!(execvpe: fn(P, Argv, Argv) -> c_int)(file, argv, envp) }
}

/// `execveat`: a uvfs path (or, with `AT_EMPTY_PATH`, fd) refused.
///
/// # Safety
/// The C contract of `execveat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execveat(
    dirfd: c_int,
    path: P,
    argv: Argv,
    envp: Argv,
    flags: c_int,
) -> c_int {
    crate::namespace::before_child("execveat");
    let kernel = |d: c_int, p: P| {
        // SAFETY: the caller's arguments, the path perhaps the host path it
        // stands for (alive for the call).
        unsafe {
            real!(execveat: fn(c_int, P, Argv, Argv, c_int) -> c_int)(d, p, argv, envp, flags)
        }
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        path_call(dirfd, path, -1, kernel, |_, _, _| {
            Err(refuse!("execveat", "of a uvfs file", EACCES))
        })
    }
}

/// `fexecve`.
///
/// # Safety
/// The C contract of `fexecve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    crate::namespace::before_child("fexecve");
    fd_call(
        fd,
        -1,
        // SAFETY: the caller's arguments, unchanged.
        || unsafe { real!(fexecve: fn(c_int, Argv, Argv) -> c_int)(fd, argv, envp) },
        |_, _| Err(refuse!("fexecve", "of a uvfs file", EACCES)),
    )
}

/// `posix_spawn`: a uvfs program refused with `EACCES` (returned, as
/// `posix_spawn` returns its error).
///
/// # Safety
/// The C contract of `posix_spawn`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_spawn(
    pid: *mut pid_t,
    path: P,
    actions: *const c_void,
    attr: *const c_void,
    argv: Argv,
    envp: Argv,
) -> c_int {
    crate::namespace::before_child("posix_spawn");
    // SAFETY: the caller's path, valid per the contract.
    if unsafe { is_uvfs_path(path) } {
        return refuse!("posix_spawn", "of a uvfs file", EACCES).raw();
    }
    // SAFETY: the caller's arguments, the path perhaps the host path it
    // stands for (alive for the call).
    unsafe {
        with_kernel_path(path, |p| {
            real!(posix_spawn: fn(*mut pid_t, P, *const c_void, *const c_void, Argv, Argv) -> c_int)(
                pid, p, actions, attr, argv, envp,
            )
        })
    }
}

/// `posix_spawnp`.
///
/// # Safety
/// The C contract of `posix_spawnp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_spawnp(
    pid: *mut pid_t,
    file: P,
    actions: *const c_void,
    attr: *const c_void,
    argv: Argv,
    envp: Argv,
) -> c_int {
    crate::namespace::before_child("posix_spawnp");
    // SAFETY: the caller's name, valid per the contract.
    if unsafe { uvfs_program(file) } {
        return refuse!("posix_spawnp", "of a uvfs file", EACCES).raw();
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe {
        real!(posix_spawnp: fn(*mut pid_t, P, *const c_void, *const c_void, Argv, Argv) -> c_int)(
            pid, file, actions, attr, argv, envp,
        )
    }
}

// ---------------------------------------------------------------------------
// `execl`, `execle`, `execlp`: the list forms.

/// How many of a list form's variadic pointers (after `path`) arrive in
/// registers: `rsi`, `rdx`, `rcx`, `r8`, `r9` on x86-64; `x1` to `x7` on
/// aarch64. The rest are on the caller's stack, one 8-byte slot each, in
/// order, from the stack pointer at the call.
#[cfg(target_arch = "x86_64")]
const IN_REGS: usize = 5;
#[cfg(target_arch = "aarch64")]
const IN_REGS: usize = 7;

/// The list form's arguments after `path`: `IN_REGS` spilled registers at
/// `regs`, then the caller's stack arguments at `stack`.
struct ArgList {
    regs: *const P,
    stack: *const P,
}

impl ArgList {
    /// Argument `i` (0 is `arg0`).
    ///
    /// # Safety
    /// The caller passed at least `i + 1` pointer arguments after `path`.
    unsafe fn get(&self, i: usize) -> P {
        if i < IN_REGS {
            // SAFETY: `regs` holds `IN_REGS` spilled registers.
            unsafe { *self.regs.add(i) }
        } else {
            // SAFETY: per the contract, the caller pushed argument `i`.
            unsafe { *self.stack.add(i - IN_REGS) }
        }
    }

    /// `arg0` up to and including the NULL that ends the list, and the
    /// index after that NULL (where `execle`'s `envp` is).
    ///
    /// # Safety
    /// The C contract of `execl`: the list ends with a NULL pointer.
    unsafe fn argv(&self) -> (Vec<P>, usize) {
        let mut v = Vec::new();
        loop {
            // SAFETY: the list goes on up to its NULL, per the contract.
            let a = unsafe { self.get(v.len()) };
            v.push(a);
            if a.is_null() {
                let next = v.len();
                return (v, next);
            }
        }
    }
}

/// Which list form called.
#[derive(Clone, Copy)]
#[repr(C)]
enum ListForm {
    /// `execl(path, arg0, …, NULL)`: `execv`.
    Execl,
    /// `execle(path, arg0, …, NULL, envp)`: `execve`.
    Execle,
    /// `execlp(file, arg0, …, NULL)`: `execvp`.
    Execlp,
}

/// The Rust half of the three list forms.
///
/// # Safety
/// Called only by the naked stubs below, with the caller's `path`, the
/// spilled registers and the caller's stack arguments.
unsafe extern "C" fn exec_list(form: ListForm, path: P, regs: *const P, stack: *const P) -> c_int {
    let (name, is_program) = match form {
        ListForm::Execl => ("execl", is_uvfs_path as unsafe fn(P) -> bool),
        ListForm::Execle => ("execle", is_uvfs_path as unsafe fn(P) -> bool),
        ListForm::Execlp => ("execlp", uvfs_program as unsafe fn(P) -> bool),
    };
    crate::namespace::before_child(name);
    // SAFETY: the caller's path, valid per the contract.
    if unsafe { is_program(path) } {
        // Each form its own line (the `execv` form below would say
        // `execv`).
        return fail(match form {
            ListForm::Execl => refuse!("execl", "of a uvfs file", EACCES),
            ListForm::Execle => refuse!("execle", "of a uvfs file", EACCES),
            ListForm::Execlp => refuse!("execlp", "of a uvfs file", EACCES),
        });
    }
    let list = ArgList { regs, stack };
    // SAFETY: the C contract of the list forms: a NULL-ended list.
    let (argv, next) = unsafe { list.argv() };
    // SAFETY: the caller's path and the argv array built above (alive for
    // the call); `envp` is the argument after the NULL, per `execle`'s
    // contract.
    unsafe {
        match form {
            ListForm::Execl => execv(path, argv.as_ptr()),
            ListForm::Execle => execve(path, argv.as_ptr(), list.get(next) as Argv),
            ListForm::Execlp => execvp(path, argv.as_ptr()),
        }
    }
}

/// Defines a list form as a naked function: spill the argument registers
/// after `path`, pass their address and the caller's stack arguments'
/// address to [`exec_list`] with the form in the first argument.
macro_rules! list_form {
    ($(#[$doc:meta])* $name:ident, $form:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The C contract of the function of the same name.
        #[cfg(target_arch = "x86_64")]
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() -> c_int {
            // At entry rsp points at the return address (rsp ≡ 8 mod 16)
            // and the stack arguments start at rsp + 8. Five pushes put
            // rsi..r9 in order at rsp and leave rsp 16-byte aligned, so
            // the stack arguments are at rsp + 48.
            core::arch::naked_asm!(
                "push r9",
                "push r8",
                "push rcx",
                "push rdx",
                "push rsi",
                "mov rsi, rdi",
                "mov edi, {form}",
                "mov rdx, rsp",
                "lea rcx, [rsp + 48]",
                "call {inner}",
                "add rsp, 40",
                "ret",
                form = const $form as u32,
                inner = sym exec_list,
            )
        }

        $(#[$doc])*
        ///
        /// # Safety
        /// The C contract of the function of the same name.
        #[cfg(target_arch = "aarch64")]
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() -> c_int {
            // x1..x7 go to a 64-byte frame (with the frame record), and
            // the stack arguments are at the entry sp (the frame's top).
            core::arch::naked_asm!(
                "stp x29, x30, [sp, #-80]!",
                "mov x29, sp",
                "stp x1, x2, [sp, #16]",
                "stp x3, x4, [sp, #32]",
                "stp x5, x6, [sp, #48]",
                "str x7, [sp, #64]",
                "mov x1, x0",
                "mov w0, #{form}",
                "add x2, sp, #16",
                "add x3, sp, #80",
                "bl {inner}",
                "ldp x29, x30, [sp], #80",
                "ret",
                form = const $form as u32,
                inner = sym exec_list,
            )
        }
    };
}

list_form!(
    /// `execl(path, arg0, …, NULL)`.
    execl,
    ListForm::Execl
);
list_form!(
    /// `execle(path, arg0, …, NULL, envp)`.
    execle,
    ListForm::Execle
);
list_form!(
    /// `execlp(file, arg0, …, NULL)`.
    execlp,
    ListForm::Execlp
);
