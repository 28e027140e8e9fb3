//! `uvfs run [OPTIONS] [--at DIR] -- COMMAND [ARGS…]`: one command, and
//! every process it starts, in a mount namespace of its own where one uvfs
//! VFS is mounted at DIR (default `/uvfs`, the shim's prefix).
//!
//! It is `uvfs mount` without the rest of the machine: the mount exists
//! only in the new namespace, and ends when the command does. Because it is
//! a real mount, every program sees it the same way, including the ones
//! the LD_PRELOAD shim cannot reach: static binaries, Go programs (raw
//! system calls), io_uring users, programs that start threads before
//! their first child.
//!
//! # The steps
//!
//! 1. The options are checked as `uvfs mount` checks them (exit 2, nothing
//!    made); DIR must be a directory or missing (and then makeable: exit 2
//!    otherwise).
//! 2. `unshare(CLONE_NEWNS)` while the process has one thread (a mount
//!    namespace cannot be unshared by one thread of several), then every
//!    mount is made private, so the mount below never propagates to the
//!    host's namespace. A caller without `CAP_SYS_ADMIN` gets a user
//!    namespace too, mapping its uid and gid to themselves: the server
//!    holds the capabilities to mount there, the command (exec'd as the
//!    caller's uid) none, and passthrough is off (registering a backing
//!    file needs `CAP_SYS_ADMIN` in the initial namespace; `on` is
//!    refused).
//! 3. DIR is made if missing (and its missing parents); the VFS is seeded
//!    and mounted there.
//! 4. The command runs in the current directory, resolved again in the new
//!    namespace (so a directory under DIR is the mount's). A stop signal
//!    sent to `uvfs run` by another process (`kill`, `timeout`) is passed
//!    on to the command; one from the terminal (Ctrl-C) already reached
//!    the command through its process group and is not sent twice.
//! 5. When the command exits: unmount (detached if a process it left
//!    behind still uses the mount: that process gets `ENOTCONN` once this
//!    one exits), `--dump-to`, then the directories step 3 made are
//!    removed if empty. The exit status is the command's (128 + the signal
//!    if a signal ended it, as a shell reports it); 127 if it could not be
//!    started; 1 if the dump failed after the command succeeded.

use crate::mount::{ServeOptions, build_fs, check_options, start, unmount};
use crate::passthrough::Passthrough;
use clap::Args;
use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `uvfs run [OPTIONS] [--at DIR] -- COMMAND [ARGS…]`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// What is served, and how.
    #[command(flatten)]
    pub serve: ServeOptions,
    /// Where the VFS appears in the command's namespace (made if missing,
    /// and removed afterwards if it was made and is empty).
    #[arg(long, value_name = "DIR", default_value = "/uvfs")]
    pub at: PathBuf,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// The first missing ancestor of `dir` (itself included), which
/// `create_dir_all` would make: the top of what to remove afterwards.
fn first_missing(dir: &Path) -> Option<PathBuf> {
    let mut top = None;
    let mut p = Some(dir);
    while let Some(d) = p.filter(|d| !d.as_os_str().is_empty()) {
        if std::fs::symlink_metadata(d).is_ok() {
            break;
        }
        top = Some(d.to_path_buf());
        p = d.parent();
    }
    top
}

/// Removes the directories from `dir` up to `top` that are empty (what
/// step 3 made); stops at the first that is not.
fn remove_made(dir: &Path, top: &Path) {
    let mut p = Some(dir);
    while let Some(d) = p {
        if std::fs::remove_dir(d).is_err() || d == top {
            return;
        }
        p = d.parent();
    }
}

/// Step 1: the checks; `Err` is the message (exit 2).
fn check(args: &RunArgs) -> Result<(), String> {
    if args.command.first().is_none_or(|c| c.is_empty()) {
        return Err("no command: give it after `--`".into());
    }
    match std::fs::metadata(&args.at) {
        Ok(m) if !m.is_dir() => {
            return Err(format!("--at {}: not a directory", args.at.display()));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("--at {}: {e}", args.at.display())),
    }
    check_options(&args.serve)
}

/// Writes `text` to the /proc file `path` (a user namespace's maps).
fn write_proc(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))
}

/// Step 2 for a caller without `CAP_SYS_ADMIN`: a user namespace that
/// maps the caller's uid and gid to themselves, with a mount namespace it
/// owns. This process then holds the capabilities the mount needs in that
/// namespace; the command, exec'd as its non-root uid, holds none.
fn user_namespace() -> Result<(), String> {
    // SAFETY: getuid and getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: as in `private_namespace`: one thread, no memory arguments.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        return Err(format!(
            "a user and mount namespace of its own: {} (run as root, or allow unprivileged user namespaces; without them, the LD_PRELOAD shim serves dynamically linked programs)",
            std::io::Error::last_os_error()
        ));
    }
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
    write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1"))
}

/// Step 2: a private mount namespace (in a user namespace of its own for
/// a caller without `CAP_SYS_ADMIN`); whether a user namespace was made.
/// `Err` is the message.
fn private_namespace() -> Result<bool, String> {
    // SAFETY: unshare has no memory preconditions; this process has one
    // thread here (clap and the checks run on it), which CLONE_NEWNS needs.
    let userns = if unsafe { libc::unshare(libc::CLONE_NEWNS) } == 0 {
        false
    } else {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EPERM) {
            return Err(format!("a mount namespace of its own: {e}"));
        }
        user_namespace()?;
        true
    };
    // SAFETY: the arguments are NUL-terminated strings or null, as
    // mount(2) takes them for a propagation change.
    let r = unsafe {
        libc::mount(
            c"none".as_ptr(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(format!(
            "making the namespace's mounts private: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(userns)
}

/// The shell's view of how a command ended.
fn status_code(st: std::process::ExitStatus) -> i32 {
    st.code()
        .or_else(|| st.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// `uvfs run`: returns the exit status.
pub fn run(mut args: RunArgs) -> i32 {
    args.serve.settle_passthrough();
    let userns = match check(&args).and_then(|()| private_namespace()) {
        Ok(u) => u,
        Err(m) => {
            eprintln!("uvfs run: {m}");
            return 2;
        }
    };
    if userns {
        // Registering a backing file needs CAP_SYS_ADMIN in the initial
        // user namespace, which this process does not hold there.
        match args.serve.passthrough {
            Passthrough::On => {
                eprintln!(
                    "uvfs run: --passthrough=on: registering a backing file needs CAP_SYS_ADMIN (run as root)"
                );
                return 2;
            }
            Passthrough::Auto => args.serve.passthrough = Passthrough::Off,
            Passthrough::Off => {}
        }
    }
    let served = match build_fs(&args.serve) {
        Ok(s) => s,
        Err(m) => {
            eprintln!("uvfs run: {m}");
            return 2;
        }
    };
    // Made and removed by one absolute path, walked lexically, so the
    // removal stops exactly at the top of what was made.
    let cwd = std::env::current_dir().ok();
    let at = match &cwd {
        Some(c) => c.join(&args.at),
        None => args.at.clone(),
    };
    let made = first_missing(&at);
    if let Err(e) = std::fs::create_dir_all(&at) {
        eprintln!(
            "uvfs run: --at {}: {e} (give --at a directory that exists or that you may make)",
            args.at.display()
        );
        return 2;
    }
    let cleanup = || {
        if let Some(top) = &made {
            remove_made(&at, top);
        }
    };
    let dir = match at.canonicalize() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("uvfs run: --at {}: {e}", args.at.display());
            cleanup();
            return 1;
        }
    };
    let serving = match start(&args.serve, &dir, served, false) {
        Ok(s) => s,
        Err(m) => {
            eprintln!("uvfs run: {m}");
            cleanup();
            return 1;
        }
    };
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    if let Some(c) = &cwd {
        cmd.current_dir(c);
    }
    // SAFETY: the closure runs in the forked child before exec and calls
    // only async-signal-safe functions (sigemptyset, pthread_sigmask) on
    // its own stack: the command must not inherit the stop signals the
    // server blocks.
    unsafe {
        cmd.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    let child = cmd.spawn();
    let mut status = match child {
        Ok(mut child) => loop {
            if let Some((sig, true)) = serving.stop_signal_from() {
                // SAFETY: kill has no memory preconditions; the child is
                // not reaped yet, so its pid is still its own.
                unsafe { libc::kill(child.id() as i32, sig) };
            }
            match child.try_wait() {
                Ok(Some(st)) => break status_code(st),
                Ok(None) => {}
                Err(e) => {
                    eprintln!("uvfs run: waiting for the command: {e}");
                    break 1;
                }
            }
        },
        Err(e) => {
            eprintln!("uvfs run: {}: {e}", Path::new(&args.command[0]).display());
            127
        }
    };
    let detached = unmount(&dir);
    let served_status = serving.finish(&args.serve, true, detached, "uvfs run");
    if served_status != 0 && status == 0 {
        status = served_status;
    }
    cleanup();
    status
}
