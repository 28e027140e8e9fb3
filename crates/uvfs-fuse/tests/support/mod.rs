//! Fixtures of the mount tests: a fresh directory, a `uvfs mount` server
//! on it (a child process), and commands run with a hang bound.
//!
//! Every child process runs under `timeout -s KILL` with a generous bound:
//! a hang kills it and fails the test loudly; no timing decides a pass.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// How long any one child may run before it counts as hung.
pub const HANG_SECS: u32 = 120;

/// Why the mount tests cannot run here, if they cannot.
pub fn skip_reason() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (the server mounts with mount(2))".into());
    }
    None
}

/// Returns early from a test, with a message, when mounts cannot run.
#[macro_export]
macro_rules! skip_unless_fuse {
    () => {
        if let Some(why) = support::skip_reason() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

/// The `uvfs` binary under test.
pub fn uvfs_bin() -> &'static str {
    env!("CARGO_BIN_EXE_uvfs")
}

/// A fresh directory, removed (with what is in it) on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `<base>/uvfs-fuse-<tag>-<pid>`, emptied if a previous run left it.
    pub fn new_in(base: &str, tag: &str) -> TempDir {
        let d = Path::new(base).join(format!("uvfs-fuse-{tag}-{}", std::process::id()));
        if d.exists() {
            let _ = Command::new("umount").arg("-l").arg(&d).status();
            let _ = std::fs::remove_dir_all(&d);
        }
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    /// Under /tmp (for mount points).
    pub fn new(tag: &str) -> TempDir {
        TempDir::new_in("/tmp", tag)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How many mounts sit on `dir` now (/proc/self/mountinfo).
pub fn mounts_on(dir: &Path) -> usize {
    let want = dir.to_str().unwrap();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.split(' ').nth(4) == Some(want))
        .count()
}

/// Whether `dir` is a mount point now.
pub fn is_mounted(dir: &Path) -> bool {
    mounts_on(dir) > 0
}

/// Runs `cmd` with a hang bound; returns its output.
pub fn run_bounded(cmd: Command) -> Output {
    let prog = format!("{cmd:?}");
    let mut t = Command::new("timeout");
    t.arg("-s").arg("KILL").arg(HANG_SECS.to_string());
    t.arg(cmd.get_program());
    t.args(cmd.get_args());
    if let Some(d) = cmd.get_current_dir() {
        t.current_dir(d);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => t.env(k, v),
            None => t.env_remove(k),
        };
    }
    let out = t.output().expect("spawn timeout");
    assert!(
        out.status.code() != Some(137) && out.status.code() != Some(124),
        "hung (killed after {HANG_SECS} s): {prog}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs a bash script in `dir` with a hang bound; returns (exit status,
/// stdout, stderr).
pub fn sh(dir: &Path, script: &str) -> (i32, String, String) {
    let mut c = Command::new("bash");
    c.arg("-c").arg(script).current_dir(dir);
    let out = run_bounded(c);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A `uvfs mount` server in the foreground (a child process) on a fresh
/// directory under /tmp. Dropping it sends SIGTERM and waits (bounded);
/// a server that does not end is killed, the mount lazily unmounted, and
/// the drop panics unless already panicking.
pub struct Mount {
    pub dir: TempDir,
    pub child: Option<Child>,
}

impl Mount {
    /// Mounts with `args` (before the directory) and waits until live.
    pub fn new(tag: &str, args: &[&str]) -> Mount {
        let dir = TempDir::new(tag);
        let child = Command::new(uvfs_bin())
            .arg("mount")
            .args(args)
            .arg(dir.path())
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn uvfs mount");
        let mut m = Mount {
            dir,
            child: Some(child),
        };
        m.wait_live();
        m
    }

    /// Waits until the mount is listed, polling with a bound on the
    /// number of polls (a hang fails loudly).
    fn wait_live(&mut self) {
        for _ in 0..(HANG_SECS * 100) {
            if is_mounted(self.dir.path()) {
                return;
            }
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("uvfs mount exited before the mount was live: {st}");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("uvfs mount: not live after {HANG_SECS} s");
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Sends `sig` to the server.
    pub fn signal(&self, sig: i32) {
        let pid = self.child.as_ref().unwrap().id() as i32;
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, sig) };
    }

    /// Waits (bounded) for the server to exit; returns its exit code, or
    /// `None` if it hung (then it is killed).
    pub fn wait_exit(&mut self) -> Option<i32> {
        let child = self.child.as_mut().unwrap();
        for _ in 0..(HANG_SECS * 100) {
            if let Some(st) = child.try_wait().unwrap() {
                self.child = None;
                return Some(st.code().unwrap_or(-1));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        self.child = None;
        None
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.signal(libc::SIGTERM);
            let r = self.wait_exit();
            if r.is_none() {
                let _ = Command::new("umount")
                    .arg("-l")
                    .arg(self.dir.path())
                    .status();
                if !std::thread::panicking() {
                    panic!("uvfs mount did not end on SIGTERM");
                }
            }
        }
        if is_mounted(self.dir.path()) {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

/// Runs `script` in a fresh directory on the host's tmpfs and in a fresh
/// directory on a new mount; returns both outputs (stdout, then stderr
/// after a marker, with each run's directory replaced by `$DIR`).
pub fn host_and_mount(tag: &str, script: &str) -> (String, String) {
    host_and_mount_with(tag, &[], script)
}

/// As [`host_and_mount`], with `args` for `uvfs mount`.
pub fn host_and_mount_with(tag: &str, args: &[&str], script: &str) -> (String, String) {
    let host = TempDir::new_in("/dev/shm", tag);
    let m = Mount::new(tag, args);
    let work = m.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let hwork = host.path().join("w");
    std::fs::create_dir(&hwork).unwrap();
    let run = |d: &Path| {
        let (code, out, err) = sh(d, script);
        let s = format!("{out}\n--- stderr\n{err}\n--- exit {code}\n");
        s.replace(d.to_str().unwrap(), "$DIR")
    };
    let a = run(&hwork);
    let b = run(&work);
    (a, b)
}

/// Asserts the two runs match, showing both when they do not.
pub fn assert_same(tag: &str, host: &str, mount: &str) {
    if host != mount {
        panic!(
            "{tag}: the mount differs from the host's tmpfs\n=== host\n{host}\n=== mount\n{mount}"
        );
    }
}
