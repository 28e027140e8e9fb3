//! `uvfs run -- COMMAND`: the command and its children share one uvfs
//! mounted in a mount namespace of their own, statically linked programs
//! included; nothing reaches the host's directory; the exit status is the
//! command's; refusals exit 2 before anything is made; a caller without
//! root runs it in a user namespace. Skips (passes with a message) without
//! /dev/fuse or root.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use support::*;

/// `uvfs run ARGS`, bounded: (exit status, stdout, stderr).
fn uvfs_run(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(uvfs_bin());
    c.arg("run").args(args).current_dir(cwd);
    let out = run_bounded(c);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A statically linked C program that writes its second argument to the
/// file named by its first with raw system calls (no libc file calls an
/// interposer could see), or `None` when no static libc is installed.
fn static_writer(dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("w.c");
    std::fs::write(
        &src,
        r#"#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    long fd = syscall(SYS_openat, AT_FDCWD, argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 3;
    if (syscall(SYS_write, fd, argv[2], strlen(argv[2])) < 0) return 4;
    return syscall(SYS_close, fd) < 0 ? 5 : 0;
}
"#,
    )
    .unwrap();
    let bin = dir.join("w");
    let st = Command::new("cc")
        .arg("-static")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .stderr(Stdio::null())
        .status()
        .ok()?;
    st.success().then_some(bin)
}

#[test]
fn every_program_shares_the_mount_and_the_host_sees_nothing() {
    skip_unless_fuse!();
    let t = TempDir::new("run-share");
    let at = t.path().join("at");
    std::fs::create_dir(&at).unwrap();
    let at_s = at.to_str().unwrap();
    let writer = static_writer(t.path());
    let static_part = match &writer {
        Some(w) => format!(
            "{} {at_s}/static 'from a static binary'; cat {at_s}/static; echo;",
            w.display()
        ),
        None => {
            eprintln!("no static libc (cc -static failed): the static binary part is not run");
            String::new()
        }
    };
    let script = format!(
        "set -e; echo one > {at_s}/a; sh -c 'cat {at_s}/a; echo two >> {at_s}/a'; cat {at_s}/a; \
         {static_part} grep -c ' {at_s} .* fuse' /proc/self/mountinfo"
    );
    let (code, out, err) = uvfs_run(t.path(), &["--at", at_s, "--", "bash", "-c", &script]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    let mut want = String::from("one\none\ntwo\n");
    if writer.is_some() {
        want.push_str("from a static binary\n");
    }
    want.push_str("1\n");
    assert_eq!(out, want, "stderr: {err}");
    assert!(
        err.is_empty(),
        "uvfs run added to the command's stderr: {err}"
    );
    // The host's directory never saw the files, and no mount is left.
    assert_eq!(std::fs::read_dir(&at).unwrap().count(), 0);
    assert!(!is_mounted(&at));
    // A second run starts from an empty tree.
    let (code, out, err) = uvfs_run(t.path(), &["--at", at_s, "--", "ls", "-A", at_s]);
    assert_eq!((code, out.as_str()), (0, ""), "stderr: {err}");
}

#[test]
fn the_exit_status_is_the_commands() {
    skip_unless_fuse!();
    let t = TempDir::new("run-status");
    let at = t.path().join("at");
    let at_s = at.to_str().unwrap();
    let d = t.path();
    assert_eq!(
        uvfs_run(d, &["--at", at_s, "--", "sh", "-c", "exit 3"]).0,
        3
    );
    assert_eq!(uvfs_run(d, &["--at", at_s, "--", "true"]).0, 0);
    // Ended by a signal: 128 + the signal, as a shell reports it (the
    // command does not inherit the server's blocked stop signals).
    assert_eq!(
        uvfs_run(
            d,
            &[
                "--at",
                at_s,
                "--",
                "sh",
                "-c",
                "kill -TERM $$; echo not reached"
            ]
        )
        .0,
        143
    );
    let (code, _, err) = uvfs_run(d, &["--at", at_s, "--", "/no/such/program"]);
    assert_eq!(code, 127, "{err}");
    assert!(err.contains("/no/such/program"), "{err}");
    // `--at` was missing: made for the run, removed after each.
    assert!(!at.exists());
}

#[test]
fn a_stop_signal_from_another_process_reaches_the_command() {
    skip_unless_fuse!();
    let t = TempDir::new("run-signal");
    let at = t.path().join("at");
    let marker = t.path().join("started");
    let script = format!(
        "echo x > {0}/inside && echo started > {1} && exec sleep 1000",
        at.display(),
        marker.display()
    );
    let mut child = Command::new(uvfs_bin())
        .arg("run")
        .arg("--at")
        .arg(&at)
        .args(["--", "sh", "-c", &script])
        .spawn()
        .unwrap();
    // Wait (bounded by the hang limit, not by a time that decides) until
    // the command is running with the mount live.
    let mut waited = 0;
    while !marker.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "uvfs run ended before the command started"
        );
        waited += 1;
        assert!(waited < HANG_SECS * 10, "the command never started");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // SAFETY: kill has no memory preconditions; the child is not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut waited = 0;
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        waited += 1;
        if waited > HANG_SECS * 10 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("uvfs run did not end after SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(st.code(), Some(128 + libc::SIGTERM), "{st:?}");
    assert!(!at.exists(), "the made --at directory was left behind");
}

#[test]
fn refusals_exit_2_before_anything_is_made() {
    skip_unless_fuse!();
    let t = TempDir::new("run-refuse");
    let d = t.path();
    let file = d.join("file");
    std::fs::write(&file, b"x").unwrap();
    let f = file.to_str().unwrap();
    let at = d.join("at");
    let a = at.to_str().unwrap();
    let under_file = format!("{f}/sub");
    for (args, says) in [
        (vec!["--at", a], "COMMAND"),
        (vec!["--at", f, "--", "true"], "not a directory"),
        (vec!["--at", a, "--size", "0", "--", "true"], "size"),
        (vec!["--at", a, "--threads", "0", "--", "true"], "1 to 64"),
        (
            vec!["--at", a, "--seed-from", "/no/such/dir", "--", "true"],
            "seed-from",
        ),
        (
            vec!["--at", a, "--dump-to", f, "--", "true"],
            "not a directory",
        ),
        (vec!["--at", &under_file, "--", "true"], "--at"),
    ] {
        let (code, out, err) = uvfs_run(d, &args);
        assert_eq!(code, 2, "{args:?}: stdout {out} stderr {err}");
        assert!(
            err.contains(says),
            "{args:?}: {err:?} does not say {says:?}"
        );
        assert!(!at.exists(), "{args:?}: made {a}");
    }
}

#[test]
fn seed_and_dump_and_a_working_directory_inside() {
    skip_unless_fuse!();
    let t = TempDir::new("run-seed");
    let seed = t.path().join("seed");
    std::fs::create_dir_all(seed.join("sub")).unwrap();
    std::fs::write(seed.join("sub/f"), b"seeded\n").unwrap();
    let dump = t.path().join("dump");
    let at = t.path().join("at");
    std::fs::create_dir(&at).unwrap();
    // Started from inside --at: the command's working directory is the
    // mount's root, not the host directory under it.
    let (code, out, err) = uvfs_run(
        &at,
        &[
            "--at",
            at.to_str().unwrap(),
            "--seed-from",
            seed.to_str().unwrap(),
            "--dump-to",
            dump.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "cat sub/f && echo made > new",
        ],
    );
    assert_eq!((code, out.as_str()), (0, "seeded\n"), "stderr: {err}");
    assert_eq!(std::fs::read(dump.join("new")).unwrap(), b"made\n");
    assert_eq!(std::fs::read(dump.join("sub/f")).unwrap(), b"seeded\n");
    assert_eq!(std::fs::read_dir(&at).unwrap().count(), 0);
}

/// A dump that fails after the command succeeded must not look like
/// success: exit 1 and the reason (sysfs refuses new files, even to root).
#[test]
fn a_failed_dump_after_a_good_command_exits_1() {
    skip_unless_fuse!();
    let t = TempDir::new("run-dumpfail");
    let at = t.path().join("at");
    let (code, _, err) = uvfs_run(
        t.path(),
        &[
            "--at",
            at.to_str().unwrap(),
            "--dump-to",
            "/sys/kernel",
            "--",
            "sh",
            "-c",
            &format!("echo x > {}/f", at.display()),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--dump-to"), "{err}");
    assert!(!at.exists());
}

#[test]
fn without_root_it_runs_in_a_user_namespace() {
    skip_unless_fuse!();
    if !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("skipped: no /usr/bin/setpriv to drop root");
        return;
    }
    // Unprivileged user namespaces may be off (a sysctl): then the refusal
    // must say so.
    let probe = Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["unshare", "-U", "true"])
        .status()
        .unwrap();
    let t = TempDir::new("run-user");
    // `nobody` makes and removes --at in it.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let at = t.path().join("at");
    let a = at.to_str().unwrap();
    let as_nobody = |args: &[&str]| {
        let mut c = Command::new("/usr/bin/setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(uvfs_bin())
            .arg("run")
            .args(args)
            .current_dir(t.path());
        let out = run_bounded(c);
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let script = format!("id -u; echo x > {a}/f && stat -c '%u %a' {a}/f {a}");
    let (code, out, err) = as_nobody(&["--at", a, "--", "sh", "-c", &script]);
    if std::fs::metadata("/dev/fuse").is_ok_and(|m| m.permissions().mode() & 0o006 != 0o006) {
        // Some machines leave /dev/fuse root's alone (mode 0600, where
        // distributions make it 0666): the refusal must name it.
        assert_eq!(code, 2, "{out}{err}");
        assert!(err.contains("/dev/fuse: Permission denied"), "{err}");
        eprintln!("/dev/fuse is closed to users other than root here: the refusal was checked");
        return;
    }
    if !probe.success() {
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("user and mount namespace"), "{err}");
        eprintln!("unprivileged user namespaces are off here: the refusal was checked");
        return;
    }
    assert_eq!(
        (code, out.as_str()),
        (0, "65534\n65534 644\n65534 1777\n"),
        "{err}"
    );
    assert!(!at.exists());
    // Passthrough needs CAP_SYS_ADMIN in the initial namespace.
    let (code, _, err) = as_nobody(&["--at", a, "--passthrough", "on", "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CAP_SYS_ADMIN"), "{err}");
}
