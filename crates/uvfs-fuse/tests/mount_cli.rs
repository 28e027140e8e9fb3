//! `uvfs mount`'s command line: refusals before mounting (exit 2, nothing
//! mounted), the ways a server ends (SIGTERM, SIGINT, `umount`, kill -9
//! then `umount -l`), `--daemon`, and `--seed-from` / `--dump-to`.
//! Skips (passes with a message) without /dev/fuse or root.

mod support;

use std::process::Command;
use support::*;

/// Runs `uvfs mount ARGS` expecting a refusal: exit 2, a message naming
/// the problem, and `dir` not a mount point afterwards.
fn refused(args: &[&str], dir: &std::path::Path, expect: &str) {
    let before = if dir.exists() { mounts_on(dir) } else { 0 };
    let mut c = Command::new(uvfs_bin());
    c.arg("mount").args(args);
    let out = run_bounded(c);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: status; stderr: {err}"
    );
    assert!(
        err.to_lowercase().contains(&expect.to_lowercase()),
        "{args:?}: message {err:?} does not say {expect:?}"
    );
    if dir.exists() {
        assert_eq!(
            mounts_on(dir),
            before,
            "{args:?}: mounted on {}",
            dir.display()
        );
    }
}

#[test]
fn refusals_exit_2_and_mount_nothing() {
    skip_unless_fuse!();
    let d = TempDir::new("refuse");
    let ds = d.path().to_str().unwrap();
    let missing = d.path().join("missing");
    let ms = missing.to_str().unwrap();
    let file = d.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let fs_ = file.to_str().unwrap();
    refused(&[ms], &missing, "No such file");
    refused(&[fs_], &file, "not a directory");
    refused(
        &["/proc"],
        std::path::Path::new("/proc"),
        "already a mount point",
    );
    refused(&["--size", "0", ds], d.path(), "size");
    refused(&["--size", "12Q", ds], d.path(), "size");
    refused(&["--threads", "0", ds], d.path(), "1 to 64");
    refused(&["--threads", "65", ds], d.path(), "1 to 64");
    refused(&["--fastpaths", "fastest", ds], d.path(), "fastest");
    refused(&["--passthrough", "sometimes", ds], d.path(), "sometimes");
    // Passthrough answers OPEN with the backing file; no-open has no OPEN.
    refused(
        &["--no-open", "--passthrough", "on", ds],
        d.path(),
        "--no-open with --passthrough=on",
    );
    refused(
        &["--passthrough=on", "--no-open", ds],
        d.path(),
        "--no-open with --passthrough=on",
    );
    // Passthrough's I/O bypasses the page cache the writeback cache keeps.
    refused(
        &["--writeback", "--passthrough", "on", ds],
        d.path(),
        "--writeback with --passthrough=on",
    );
    // --passthrough=on needs CAP_SYS_ADMIN (registering a backing file):
    // refused before mounting when the server would not have it (root
    // without it in its bounding set, through setpriv).
    if std::path::Path::new("/usr/bin/setpriv").exists() {
        let mut c = Command::new("/usr/bin/setpriv");
        c.args([
            "--bounding-set=-sys_admin",
            uvfs_bin(),
            "mount",
            "--passthrough",
            "on",
            ds,
        ]);
        let out = run_bounded(c);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "passthrough on without CAP_SYS_ADMIN: {err}"
        );
        assert!(err.contains("CAP_SYS_ADMIN"), "{err}");
        assert_eq!(mounts_on(d.path()), 0);
    } else {
        eprintln!("no /usr/bin/setpriv: --passthrough=on without CAP_SYS_ADMIN not tried");
    }
    refused(&["--seed-from", ms, ds], d.path(), "seed-from");
    refused(&["--seed-from", fs_, ds], d.path(), "not a directory");
    refused(&["--dump-to", fs_, ds], d.path(), "not a directory");
    // A mount point made here: a bind mount of the directory on itself
    // (same device as its parent: only mountinfo tells).
    let b = d.path().join("bind");
    std::fs::create_dir(&b).unwrap();
    /// Unmounts the bind mount even when an assertion fails first.
    struct Unbind<'a>(&'a std::path::Path);
    impl Drop for Unbind<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let st = Command::new("mount")
        .arg("--bind")
        .arg(&b)
        .arg(&b)
        .status()
        .unwrap();
    assert!(st.success());
    let unbind = Unbind(&b);
    refused(&[b.to_str().unwrap()], &b, "already a mount point");
    drop(unbind);
    assert!(!is_mounted(&b));
    // /dev/fuse that cannot be opened: a private mount namespace with an
    // empty /dev.
    let out = run_bounded({
        let mut c = Command::new("unshare");
        c.args(["-m", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                "mount -t tmpfs none /dev && exec {} mount {ds}",
                uvfs_bin()
            ));
        c
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "no /dev/fuse: {err}");
    assert!(err.contains("/dev/fuse"), "no /dev/fuse: {err}");
    assert!(!is_mounted(d.path()));
}

#[test]
fn sigterm_and_sigint_end_the_server_cleanly() {
    skip_unless_fuse!();
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut m = Mount::new("sig", &["--threads", "3"]);
        std::fs::write(m.path().join("f"), b"data").unwrap();
        assert_eq!(std::fs::read(m.path().join("f")).unwrap(), b"data");
        m.signal(sig);
        assert_eq!(m.wait_exit(), Some(0), "signal {sig}: exit status");
        assert!(!is_mounted(m.path()), "signal {sig}: still mounted");
    }
}

#[test]
fn sigterm_ends_the_server_while_the_mount_is_busy() {
    skip_unless_fuse!();
    let mut m = Mount::new("busy", &[]);
    // A process whose cwd is on the mount keeps it busy.
    let mut busy = Command::new("sleep")
        .arg("600")
        .current_dir(m.path())
        .spawn()
        .unwrap();
    m.signal(libc::SIGTERM);
    let r = m.wait_exit();
    let _ = busy.kill();
    let _ = busy.wait();
    assert_eq!(r, Some(0), "server exit status");
    assert!(!is_mounted(m.path()));
}

#[test]
fn umount_ends_the_server_cleanly() {
    skip_unless_fuse!();
    let mut m = Mount::new("umount", &["--fastpaths", "stock", "--threads", "1"]);
    std::fs::create_dir(m.path().join("d")).unwrap();
    let st = Command::new("umount").arg(m.path()).status().unwrap();
    assert!(st.success());
    assert_eq!(m.wait_exit(), Some(0));
    assert!(!is_mounted(m.path()));
}

#[test]
fn kill_9_gives_enotconn_and_lazy_umount_recovers() {
    skip_unless_fuse!();
    let mut m = Mount::new("kill9", &[]);
    std::fs::write(m.path().join("f"), b"data").unwrap();
    m.signal(libc::SIGKILL);
    assert_eq!(m.wait_exit(), Some(-1), "killed by a signal");
    // A program on the dead mount fails at once (bounded: a hang fails).
    let (code, _, err) = sh(
        m.path().parent().unwrap(),
        &format!("cat {}/f; ls {}", m.path().display(), m.path().display()),
    );
    assert_ne!(code, 0);
    assert!(err.contains("Transport endpoint is not connected"), "{err}");
    let st = Command::new("umount")
        .arg("-l")
        .arg(m.path())
        .status()
        .unwrap();
    assert!(st.success());
    assert!(!is_mounted(m.path()));
    assert!(m.path().is_dir());
    assert_eq!(std::fs::read_dir(m.path()).unwrap().count(), 0);
}

/// The server grows its fd table before its session's threads start, to
/// hold the high numbers its memfds take (from three quarters of the soft
/// `RLIMIT_NOFILE`, at most 4096): grown later, with the workers sharing
/// it, the kernel waits for an RCU grace period first (milliseconds, at
/// the mount's first new file). `FDSize` in `/proc/PID/status`, before
/// any file is made.
#[test]
fn the_fd_table_holds_the_memfds_before_the_first_file() {
    skip_unless_fuse!();
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid, writable `struct rlimit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur < 16 {
        return;
    }
    let floor = (lim.rlim_cur / 4 * 3).min(4096);
    let mut m = Mount::new("fdtable", &[]);
    let pid = m.child.as_ref().unwrap().id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let size: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("FDSize:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("FDSize in:\n{status}"));
    m.signal(libc::SIGTERM);
    assert_eq!(m.wait_exit(), Some(0));
    assert!(
        size > floor,
        "the server's fd table holds {size} fds before its first file; its memfds go from {floor} on"
    );
}

#[test]
fn daemon_returns_once_live() {
    skip_unless_fuse!();
    let d = TempDir::new("daemon");
    let mut c = Command::new(uvfs_bin());
    c.arg("mount").arg("--daemon").arg(d.path());
    let out = run_bounded(c);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Live as soon as the parent returned.
    assert!(is_mounted(d.path()));
    std::fs::write(d.path().join("f"), b"x").unwrap();
    let st = Command::new("umount").arg(d.path()).status().unwrap();
    assert!(st.success());
    // A daemon that fails after the checks (here: its seed does not fit
    // in --size) reports why and exits non-zero, nothing mounted.
    let seed = TempDir::new_in("/dev/shm", "daemon-seed");
    std::fs::write(seed.path().join("big"), vec![1u8; 64 << 10]).unwrap();
    let mut c = Command::new(uvfs_bin());
    c.arg("mount")
        .arg("--daemon")
        .args(["--size", "8K", "--seed-from"])
        .arg(seed.path())
        .arg(d.path());
    let out = run_bounded(c);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left"), "{err}");
    assert!(!is_mounted(d.path()));
}

#[test]
fn seed_from_and_dump_to_copy_the_tree() {
    skip_unless_fuse!();
    let src = TempDir::new_in("/dev/shm", "seed");
    let (code, _, err) = sh(
        src.path(),
        "mkdir -p a/b && echo one > a/f && ln a/f a/g && ln -s f a/s && chmod 751 a/b \
         && head -c 300000 /dev/urandom > a/b/big && mkfifo -m 640 a/p && mknod -m 600 a/c c 42 7 \
         && touch -d @1234567 a/f a/b",
    );
    assert_eq!(code, 0, "{err}");
    let dst = TempDir::new_in("/dev/shm", "dump");
    let out_dir = dst.path().join("out");
    let mut m = Mount::new(
        "seeddump",
        &[
            "--seed-from",
            src.path().to_str().unwrap(),
            "--dump-to",
            out_dir.to_str().unwrap(),
        ],
    );
    let listing = "find . -printf '%P %y %m %s %n %T@ %l\\n' | sort; md5sum a/b/big; \
                   stat -c '%n %F %t:%T' a/p a/c";
    let (_, seen, _) = sh(m.path(), listing);
    let (_, want, _) = sh(src.path(), listing);
    assert_eq!(seen, want, "the seeded tree");
    // A change made on the mount reaches the dump.
    std::fs::write(m.path().join("a/new"), b"new").unwrap();
    m.signal(libc::SIGTERM);
    assert_eq!(m.wait_exit(), Some(0));
    std::fs::write(src.path().join("a/new"), b"new").unwrap();
    let (_, after_src, _) = sh(src.path(), "find . -printf '%P %y %m %s %n %l\\n' | sort");
    let (_, after_dump, _) = sh(&out_dir, "find . -printf '%P %y %m %s %n %l\\n' | sort");
    assert_eq!(after_dump, after_src, "the dumped tree");
    let (_, nodes, _) = sh(&out_dir, "stat -c '%n %F %t:%T' a/p a/c");
    assert_eq!(nodes, "a/p fifo 0:0\na/c character special file 2a:7\n");
    // diff may report FIFOs and device nodes as not comparable: they are
    // checked above, leave them out.
    let (code, out, _) = sh(
        dst.path(),
        &format!("diff -r -x p -x c {} out", src.path().display()),
    );
    assert_eq!(code, 0, "diff -r: {out}");
}
