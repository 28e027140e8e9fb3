//! `uvfs mount --size` with FUSE passthrough: the limit is held by the
//! kernel's own tmpfs (a private, detached one the server makes; see
//! `uvfs_fuse::backing`), so a program sees what it sees on a host
//! `mount -t tmpfs -o size=8M`: the bytes a filling write gets in, the
//! errno, `statfs`, a long symlink and `fallocate` refused when full,
//! space back after a delete, and `SIGBUS` on a mapped page past the
//! limit (`scripts/size_limit.py`, run on both). Also the refusal paths
//! when `fsopen` is unavailable (a seccomp filter makes it `ENOSYS`):
//! `on` exits 2 before mounting, `auto` falls back to passthrough off and
//! the server's own limit. Skips (passes with a message) without
//! /dev/fuse or root.

mod support;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use support::*;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/size_limit.py");

/// The script's output on a host tmpfs with `size=8M`, mounted in a
/// private mount namespace (`unshare -m`) on a fresh directory.
fn on_host(tag: &str) -> String {
    let d = TempDir::new(&format!("{tag}-host"));
    let mut c = Command::new("unshare");
    c.args(["-m", "--propagation", "private", "bash", "-c"])
        .arg(r#"mount -t tmpfs -o size=8M tmpfs "$1" && cd "$1" && exec python3 "$2""#)
        .args(["_", d.path().to_str().unwrap(), SCRIPT]);
    let out = run_bounded(c);
    let s = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "host run: {s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s
}

/// The script's output in the root of `dir`.
fn on_mount(dir: &Path) -> String {
    let mut c = Command::new("python3");
    c.arg(SCRIPT).current_dir(dir);
    let out = run_bounded(c);
    let s = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "mount run: {s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s
}

/// Installs a seccomp filter that fails `fsopen` with `ENOSYS` (as on a
/// kernel without the new mount API) and allows everything else.
#[cfg(target_arch = "x86_64")]
fn deny_fsopen() -> std::io::Result<()> {
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    // BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K.
    const LD: u16 = 0x20;
    const JEQ: u16 = 0x15;
    const RET: u16 = 0x06;
    let f = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let prog = [
        f(LD, 0, 0, 4), // seccomp_data.arch
        f(JEQ, 1, 0, AUDIT_ARCH_X86_64),
        f(RET, 0, 0, RET_ALLOW),
        f(LD, 0, 0, 0), // seccomp_data.nr
        f(JEQ, 0, 1, libc::SYS_fsopen as u32),
        f(RET, 0, 0, RET_ERRNO | libc::ENOSYS as u32),
        f(RET, 0, 0, RET_ALLOW),
    ];
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: prctl with integer arguments; then a pointer to a valid
    // `sock_fprog` whose filter array outlives the call.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &fprog as *const libc::sock_fprog,
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `uvfs mount ARGS DIR` with its stderr in a file, `fsopen` denied if
/// asked; waits until live. The mount and the stderr file.
fn mount_logged(tag: &str, args: &[&str], no_fsopen: bool) -> (Mount, std::path::PathBuf) {
    let dir = TempDir::new(tag);
    let log = std::path::PathBuf::from(format!("{}.stderr", dir.path().display()));
    let mut c = Command::new(uvfs_bin());
    c.arg("mount")
        .args(args)
        .arg(dir.path())
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    #[cfg(target_arch = "x86_64")]
    if no_fsopen {
        // SAFETY: the closure runs in the child between fork and exec and
        // makes only prctl calls.
        unsafe { c.pre_exec(deny_fsopen) };
    }
    let child = c.spawn().expect("spawn uvfs mount");
    let mut m = Mount {
        dir,
        child: Some(child),
    };
    for _ in 0..(HANG_SECS * 100) {
        if is_mounted(m.path()) {
            return (m, log);
        }
        if let Some(st) = m.child.as_mut().unwrap().try_wait().unwrap() {
            m.child = None;
            panic!(
                "uvfs mount {args:?} exited before the mount was live: {st}; stderr: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("uvfs mount {args:?}: not live after {HANG_SECS} s");
}

/// What the server said about passthrough at `FUSE_INIT`. The mount is
/// in mountinfo as soon as mount(2) returns, before the kernel's INIT
/// reaches the server, so the line is waited for (CI at load 9 read an
/// empty log, 2026-11-29).
fn said_at_init(log: &std::path::Path) -> String {
    for _ in 0..(HANG_SECS * 100) {
        let said = std::fs::read_to_string(log).unwrap_or_default();
        if said.contains("uvfs: FUSE passthrough") {
            return said;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!(
        "the server said nothing about passthrough in {HANG_SECS} s: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// Whether this kernel offers FUSE passthrough (the server says so on
/// stderr under `auto`).
fn passthrough_offered(log: &str) -> bool {
    !log.contains("does not offer FUSE_PASSTHROUGH")
}

#[test]
fn passthrough_on_with_size_is_the_hosts_tmpfs_limit() {
    skip_unless_fuse!();
    let host = on_host("size-on");
    // The host's own figures, so that the comparison is about something.
    assert!(host.contains("fill a: wrote 8388608 "), "{host}");
    assert!(host.contains("mmap writer: signal 7"), "{host}");
    let (m, log) = mount_logged("size-auto", &["--size", "8M"], false);
    let said = said_at_init(&log);
    if !passthrough_offered(&said) {
        eprintln!("skipped: the kernel does not offer FUSE passthrough: {said}");
        return;
    }
    assert!(
        said.contains("FUSE passthrough on") && said.contains("size=8388608"),
        "auto with --size keeps passthrough on: {said}"
    );
    assert_same("auto --size 8M", &host, &on_mount(m.path()));
    drop(m);
    let m = Mount::new("size-on", &["--size", "8M", "--passthrough", "on"]);
    assert_same("on --size 8M", &host, &on_mount(m.path()));
}

/// Everything before the mapping part of the script.
fn before_mmap(s: &str) -> &str {
    &s[..s.find("mmap writer:").unwrap_or(s.len())]
}

#[test]
fn passthrough_off_with_size_keeps_the_servers_limit() {
    skip_unless_fuse!();
    let host = on_host("size-off");
    let m = Mount::new("size-off", &["--size", "8M", "--passthrough", "off"]);
    let got = on_mount(m.path());
    assert_same("off --size 8M", before_mmap(&host), before_mmap(&got));
    // The server counts a mapping's pages only at the file's next
    // operation: the writer is not stopped (docs/fuse.md).
    assert!(got.contains("mmap writer: exit 0"), "{got}");
}

#[cfg(target_arch = "x86_64")]
#[test]
fn without_fsopen_on_is_refused_and_auto_falls_back() {
    skip_unless_fuse!();
    let d = TempDir::new("size-nofsopen");
    let mut c = Command::new("timeout");
    c.args(["-s", "KILL", &HANG_SECS.to_string(), uvfs_bin(), "mount"])
        .args(["--size", "8M", "--passthrough", "on"])
        .arg(d.path());
    // SAFETY: as in `mount_logged`.
    unsafe { c.pre_exec(deny_fsopen) };
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "on without fsopen: {err}");
    assert!(
        err.contains("--passthrough=on with --size") && err.contains("fsopen"),
        "on without fsopen: {err}"
    );
    assert!(!is_mounted(d.path()), "on without fsopen mounted");
    drop(d);

    let host = on_host("size-nofsopen");
    let (m, log) = mount_logged("size-auto-nofsopen", &["--size", "8M"], true);
    let said = said_at_init(&log);
    assert!(
        said.contains("FUSE passthrough off") && said.contains("fsopen"),
        "auto without fsopen: {said}"
    );
    let got = on_mount(m.path());
    assert_same("auto without fsopen", before_mmap(&host), before_mmap(&got));
}
