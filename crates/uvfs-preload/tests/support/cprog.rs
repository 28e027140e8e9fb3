//! Running programs under the shim and on the host: scratch directories on
//! the host's tmpfs, C programs compiled at test time, and a run with the
//! shim loaded (its environment given by the test).
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Whether `prog` is on the `PATH` (a message when it is not: the caller
/// skips its check).
pub fn have(prog: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("SKIP: {prog} is not installed");
    }
    found
}

/// A scratch directory on the host's tmpfs, emptied if a previous run left
/// it, and removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        let d = PathBuf::from(format!(
            "/dev/shm/uvfs-preload-test.{}.{tag}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }

    pub fn as_str(&self) -> &str {
        self.0.to_str().expect("a UTF-8 path")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `uvfs_test.h`, written beside every program `compile_c` builds: the
/// directory a program works in (`P`, which its `main` copies from
/// `argv[1]`) and `at(rel)`, a path under it (eight buffers in turn, so
/// one call may name several paths).
const TEST_H: &str = r#"
#include <stdio.h>
static char P[4096];
static char *at(const char *rel) {
    static char b[8][4096];
    static int i;
    char *r = b[i++ % 8];
    snprintf(r, 4096, "%s/%s", P, rel);
    return r;
}
"#;

/// Compiles the C program `src` (with `cc -O2`) into `dir`: the binary's
/// path, or `None` (skipped, with a message) without `cc`. `src` may
/// `#include "uvfs_test.h"` (`TEST_H`).
pub fn compile_c(dir: &Scratch, src: &str) -> Option<String> {
    if !have("cc") {
        return None;
    }
    std::fs::write(dir.join("uvfs_test.h"), TEST_H).unwrap();
    std::fs::write(dir.join("prog.c"), src).unwrap();
    let bin = dir.join("prog");
    let o = Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&bin)
        .arg(dir.join("prog.c"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(bin.to_string_lossy().into_owned())
}

/// Runs `cmd` (with `LC_ALL=C`, `TZ=UTC`), with the shim loaded and `env`
/// added when `shim` is set.
pub fn run(cmd: &[&str], shim: bool, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(cmd[0]);
    c.args(&cmd[1..]).env("LC_ALL", "C").env("TZ", "UTC");
    if shim {
        c.env("LD_PRELOAD", super::shim()).envs(env.iter().copied());
    }
    c.output().unwrap()
}

/// stdout as text.
pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr as text.
pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The host half of a differential test: `args` run without the shim
/// must exit 0 and print each of `wants` (what the test pins down, so a
/// host that behaves otherwise fails here, named as the host, rather than
/// in the comparison). Its stdout, the reference for the shim's runs.
pub fn host_reference(args: &[&str], wants: &[&str]) -> String {
    let host = run(args, false, &[]);
    assert!(
        host.status.success(),
        "host run {args:?}: {:?}\n{}{}",
        host.status,
        out(&host),
        err(&host)
    );
    let host_out = out(&host);
    for want in wants {
        assert!(
            host_out.contains(want),
            "the host run lacks {want:?}:\n{host_out}"
        );
    }
    host_out
}

/// The shim half: `args` under the shim with `env` must exit 0 and print
/// exactly `want` (the host's stdout); `what` names the run in a failure.
/// The run's output, for the caller's further checks.
pub fn shim_matches(args: &[&str], env: &[(&str, &str)], want: &str, what: &str) -> Output {
    let shim = run(args, true, env);
    assert!(
        shim.status.success(),
        "{what} under the shim: {:?}\n{}{}",
        shim.status,
        out(&shim),
        err(&shim)
    );
    assert_eq!(
        out(&shim),
        want,
        "{what}: the shim's stderr:\n{}",
        err(&shim)
    );
    shim
}
