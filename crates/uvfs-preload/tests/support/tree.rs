//! Process trees under the shim (`src/namespace.rs`): whether this host
//! can mount one, and runs of C programs in a tree, each checked for
//! leftovers (a mount at the prefix, a live process of the run).
#![allow(dead_code)] // each test binary uses its own subset

use super::cprog::{Scratch, compile_c, have};
use super::shim;
use std::process::{Command, Output};

/// Whether the tree can get a server here.
pub fn can_mount() -> bool {
    // SAFETY: a plain id getter.
    let root = unsafe { libc::geteuid() } == 0;
    let fuse = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_ok();
    if !(root && fuse) {
        eprintln!("SKIP: needs root and /dev/fuse (a FUSE mount in a private mount namespace)");
    }
    root && fuse
}

/// A unique tag for one run's processes.
pub fn tag(name: &str) -> String {
    format!("{}-{name}", std::process::id())
}

/// `bash -c script` with `D` set to `dir`, under the shim (prefix `dir`,
/// processes tagged `tag`) or not.
pub fn bash(sc: &Scratch, script: &str, dir: &str, shim_tag: Option<&str>) -> Output {
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(script)
        .current_dir(sc.path())
        .env("D", dir)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", sc.path());
    if let Some(t) = shim_tag {
        c.env("LD_PRELOAD", shim())
            .env("UVFS_PREFIX", dir)
            .env("UVFS_TREE_TEST_TAG", t);
    }
    c.output().unwrap()
}

/// Live (not zombie) processes whose environment holds `UVFS_TREE_TEST_TAG=tag`.
pub fn tagged(tag: &str) -> Vec<(i32, String)> {
    let want = format!("UVFS_TREE_TEST_TAG={tag}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if !env.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, r)| r.chars().next())
            .unwrap_or('?');
        if state != 'Z' && state != 'X' {
            found.push((pid, stat));
        }
    }
    found
}

/// The tree's server among the processes tagged `tag`: the one that
/// leads its own session (its pid is its session id). Fails unless there
/// is exactly one.
pub fn tree_server(tag: &str) -> i32 {
    let server: Vec<i32> = tagged(tag)
        .into_iter()
        .filter(|(pid, stat)| {
            let f: Vec<&str> = stat
                .rsplit_once(") ")
                .map(|(_, r)| r.split(' ').collect())
                .unwrap_or_default();
            f.get(3) == Some(&pid.to_string().as_str())
        })
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(server.len(), 1, "one server: {:?}", tagged(tag));
    server[0]
}

/// No mount at `dir` here, and (after the server has seen the tree end:
/// polled, up to a generous bound) no live process of the run.
pub fn no_leftovers(tag: &str, dir: &str) {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !info.lines().any(|l| l.split(' ').nth(4) == Some(dir)),
        "a mount at {dir} is left in the test's namespace:\n{info}"
    );
    let mut left = tagged(tag);
    for _ in 0..600 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = tagged(tag);
    }
    assert!(left.is_empty(), "processes of the run left alive: {left:?}");
}

/// Runs the C program `src` (compiled) under the shim with the prefix
/// `uv` absent on the host, its arguments `args` (`$U` replaced by the
/// prefix); returns stdout and stderr, after checking for leftovers.
pub fn run_c_in_tree(name: &str, src: &str, args: &[&str]) -> Option<(String, String)> {
    run_c_in_tree_env(name, src, args, &[])
}

/// [`run_c_in_tree`] with more environment variables (`env`).
pub fn run_c_in_tree_env(
    name: &str,
    src: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Option<(String, String)> {
    if !have("cc") || !can_mount() {
        return None;
    }
    let sc = Scratch::new(&format!("tree-{name}"));
    let bin = std::path::PathBuf::from(compile_c(&sc, src).expect("cc is there"));
    let uv = sc.join("uvfs");
    let uv = uv.to_str().unwrap();
    let t = tag(name);
    let o = Command::new(&bin)
        .args(args.iter().map(|a| a.replace("$U", uv)))
        .env("LD_PRELOAD", shim())
        .env("UVFS_PREFIX", uv)
        .env("UVFS_TREE_TEST_TAG", &t)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    no_leftovers(&t, uv);
    let out = String::from_utf8_lossy(&o.stdout).replace(uv, "$U");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{name}: {:?}\n{out}\n{err}", o.status);
    Some((out, err))
}
