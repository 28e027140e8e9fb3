//! The interposed functions: the program's (and libc's) entry points into
//! the shim, one module per group of calls. Each looks at its fd (a
//! lock-free map lookup) or routes its path ([`dispatch`](crate::dispatch));
//! a kernel fd or a path outside the prefix goes to the next definition
//! unchanged.
//!
//! Every function here is an `unsafe extern "C" fn` whose contract is the C
//! contract of the libc function of the same name (its `# Safety` section
//! names the pointers involved); the modules import from the layers below
//! (`fdops`, `dispatch`, `state`, …), never from each other.
//!
//! Variadic C functions (`open`, `openat`, `fcntl`, `ioctl`) are defined
//! with their optional argument as a fixed one: on x86-64 and aarch64 Linux
//! a variadic integer or pointer argument travels in the same register as a
//! fixed one, and it is only read when the flags or command say it exists.

mod attrs;
mod copy;
mod cwd;
mod dirs;
mod exec;
mod fcntl;
mod fork;
mod io;
pub(crate) mod kernel_objs;
mod kfds;
mod mmap;
mod names;
mod open;
pub(crate) mod select;
mod stat;
mod statfs;
pub(crate) mod stdio;
mod syscall;
mod temp;
mod tty;
mod unsupported;
mod xattr;
