//! The FUSE section end to end: the floor mounts, serves lab tests through
//! the mount backend and unmounts; `--dir` is checked before any work
//! (exit status 2); `fuse` without a uvfs binary prints its skip line and
//! still measures the host against the floor; SIGINT unmounts everything.
//! Counts and structure only, never timing. The tests that mount skip,
//! with a printed reason, without /dev/fuse or root.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use uvfs_bench::fuse;

/// The mounting tests run one at a time (each checks that no floor mount
/// is left).
static MOUNTING: Mutex<()> = Mutex::new(());

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_uvfs-bench"))
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("uvfs-bench-fuse-{name}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Why the mounting tests cannot run here, printed.
fn skip() -> bool {
    match fuse::unavailable() {
        Some(why) => {
            println!("skipped: {why}");
            true
        }
        None => false,
    }
}

/// Floor mounts anywhere on this machine.
fn floor_mounts() -> usize {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(" - fuse uvfs-floor "))
        .count()
}

/// The super block options of the mount at `dir` (after the source in
/// its /proc/self/mountinfo line), or "" when nothing is mounted there.
fn super_options(dir: &std::path::Path) -> String {
    let d = format!(" {} ", dir.display());
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&d))
        .filter_map(|l| l.split(" - ").nth(1))
        .map(str::to_owned)
        .next_back()
        .unwrap_or_default()
}

/// Waits (at most a minute, checking a condition, not measuring time)
/// Writes an executable stand-in for the `uvfs` binary at `script`: shell
/// lines `prelude` check or record its arguments and set `$threads` and
/// `$d`; then it serves the floor with `$threads` threads at `$d` in the
/// background and exits 0 once that is mounted (1 after a minute).
fn stand_in(script: &std::path::Path, prelude: &str) {
    std::fs::write(
        script,
        format!(
            "#!/bin/sh\n\
             {prelude}\n\
             '{}' fuse-floor --threads \"$threads\" \"$d\" </dev/null >/dev/null 2>&1 &\n\
             i=0\n\
             while [ $i -lt 6000 ]; do\n\
               grep -q \" $d \" /proc/self/mountinfo && exit 0\n\
               sleep 0.01; i=$((i+1))\n\
             done\n\
             exit 1\n",
            env!("CARGO_BIN_EXE_uvfs-bench")
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// until `f` holds.
fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = bench().args(args).stdin(Stdio::null()).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn floor_serves_tests_through_the_mount_backend_and_unmounts() {
    if skip() {
        return;
    }
    let _one = MOUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("floor");
    let mut child = bench()
        .arg("fuse-floor")
        .arg(&dir)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the floor is mounted", || {
        fuse::mounted(&dir).is_some_and(|(t, src)| t == "fuse" && src == "uvfs-floor")
    });
    // Mounted as uvfs's mounts are: the kernel checks permissions.
    let opts = super_options(&dir);
    assert!(opts.contains("default_permissions"), "{opts}");
    let d = dir.to_str().unwrap();
    let json = tmpdir("floor-json").join("r.json");
    let mut failures = Vec::new();
    for test in [
        "open1", "stat1", "openneg", "unlink1", "unlink2", "read1", "write1", "seqread", "seqwrite",
    ] {
        let (code, out, err) = run(&[
            "run",
            test,
            "--backend",
            "mount",
            "--dir",
            d,
            "--seconds",
            "0.05",
            "--warmup",
            "0",
            "--interval",
            "0.05",
            "--json",
            json.to_str().unwrap(),
        ]);
        if code != Some(0) {
            failures.push(format!("{test}: exit {code:?}: {err}"));
            continue;
        }
        let recs: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(recs.len(), 1, "{out}");
        assert_eq!(recs[0]["backend"], "mount");
        assert_eq!(recs[0]["test"], test);
        if recs[0]["ops_per_sec"].as_f64().unwrap() <= 0.0 {
            failures.push(format!("{test}: no operations counted: {out}"));
        }
        if err.contains("warning") {
            failures.push(format!("{test}: {err}"));
        }
    }
    // The work directories are gone: the floor's root is empty again.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    let umount = Command::new("umount").arg(&dir).status().unwrap();
    let status = child.wait().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(left.is_empty(), "left on the floor: {left:?}");
    assert!(umount.success());
    assert!(status.success(), "the floor exited with {status}");
    assert!(fuse::mounted(&dir).is_none_or(|(t, _)| t != "fuse"));
    std::fs::remove_dir(&dir).unwrap();
    std::fs::remove_dir_all(json.parent().unwrap()).unwrap();
}

#[test]
fn dir_is_checked_before_any_work() {
    let file = tmpdir("dircheck").join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let f = file.to_str().unwrap();
    for (args, says) in [
        (vec!["run", "open1", "--backend", "mount"], "needs --dir"),
        (
            vec![
                "run",
                "open1",
                "--backend",
                "mount",
                "--dir",
                "/nonexistent-uvfs-bench",
            ],
            "No such file",
        ),
        (
            vec!["run", "open1", "--backend", "mount", "--dir", f],
            "not a directory",
        ),
        (
            vec!["run", "open1", "--backend", "host", "--dir", f],
            "not a directory",
        ),
        (
            vec![
                "run",
                "open1",
                "--backend",
                "host",
                "--dir",
                "/nonexistent-uvfs-bench",
            ],
            "No such file",
        ),
        (
            vec!["fuse-floor", "/nonexistent-uvfs-bench"],
            "No such file",
        ),
        (vec!["fuse-floor", f], "not a directory"),
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {out} {err}");
        assert!(out.is_empty(), "{args:?} did work first: {out}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
}

#[test]
fn fuse_without_uvfs_measures_host_and_floor() {
    if skip() {
        return;
    }
    let _one = MOUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let out_dir = tmpdir("nouvfs");
    let (code, out, err) = run(&[
        "fuse",
        "--rounds",
        "2",
        "--seconds",
        "0.05",
        "--warmup",
        "0",
        "--tests",
        "open1,unlink1,seqwrite",
        "--uvfs",
        "/nonexistent-uvfs-bench/uvfs",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("uvfs mount: skipped: --uvfs /nonexistent-uvfs-bench/uvfs: no such file"),
        "{out}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("fuse.json")).unwrap()).unwrap();
    let tests = r["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 3);
    for t in tests {
        assert!(t["failures"].as_array().unwrap().is_empty(), "{t}");
        let sides = t["sides"].as_array().unwrap();
        let names: Vec<&str> = sides
            .iter()
            .map(|s| s["backend"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["host", "floor"], "{t}");
        for s in sides {
            let samples = s["ops_per_sec"]["samples"].as_array().unwrap();
            assert_eq!(samples.len(), 2, "{t}");
            assert!(samples.iter().all(|v| v.as_f64().unwrap() > 0.0), "{t}");
        }
        assert!(t["uvfs_vs_floor"].is_null());
    }
    assert_eq!(tests[2]["kind"], "bandwidth");
    assert!(tests[2]["sides"][0]["mb_per_sec"].as_f64().unwrap() > 0.0);
    let goals = r["goals"].as_array().unwrap();
    assert_eq!(
        goals.len(),
        3,
        "open1, unlink1 metadata; seqwrite bandwidth"
    );
    assert!(goals.iter().all(|g| g["met"].is_null()));
    assert_eq!(r["records"].as_array().unwrap().len(), 6);
    assert_eq!(r["load_before"].as_array().unwrap().len(), 3);
    assert!(r["uvfs_skipped"].as_str().unwrap().contains("no such file"));
    assert_eq!(floor_mounts(), 0, "a floor is still mounted");
    std::fs::remove_dir_all(&out_dir).unwrap();
}

#[test]
fn sigint_unmounts_everything() {
    if skip() {
        return;
    }
    let _one = MOUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let mut child = bench()
        .args([
            "fuse",
            "--no-uvfs",
            "--rounds",
            "50",
            "--seconds",
            "0.2",
            "--tests",
            "open1",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the floor is mounted", || floor_mounts() > 0);
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status}");
    assert_eq!(floor_mounts(), 0, "a floor is still mounted");
}

/// A stand-in for `uvfs mount --daemon`: a script that mounts the floor
/// at DIR in the background and returns once it is live, so the uvfs side
/// of the section (its mount, the ratio uvfs / floor, the goals, the
/// unmount) is exercised before the real server exists.
#[test]
fn a_uvfs_stand_in_gets_its_ratio_and_goals() {
    if skip() {
        return;
    }
    let _one = MOUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("standin");
    let script = dir.join("uvfs");
    stand_in(
        &script,
        "# mount --daemon --threads N --fastpaths F --passthrough P DIR\n\
         [ \"$1 $2 $3 $5 $7\" = \"mount --daemon --threads --fastpaths --passthrough\" ] || exit 2\n\
         case \"$8\" in on|off) ;; *) exit 2;; esac\n\
         threads=$4 d=$9",
    );
    let out_dir = dir.join("out");
    let (code, out, err) = run(&[
        "fuse",
        "--rounds",
        "3",
        "--seconds",
        "0.05",
        "--warmup",
        "0",
        "--tests",
        "stat1,read1,seqread",
        "--uvfs",
        script.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(!out.contains("skipped"), "{out}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("fuse.json")).unwrap()).unwrap();
    assert!(r["uvfs_skipped"].is_null());
    assert!(r["uvfs_pt_skipped"].is_null());
    assert!(
        r["uvfs_command"]
            .as_str()
            .unwrap()
            .contains("mount --daemon")
    );
    assert!(
        r["uvfs_pt_command"]
            .as_str()
            .unwrap()
            .contains("--passthrough on")
    );
    for t in r["tests"].as_array().unwrap() {
        assert!(t["failures"].as_array().unwrap().is_empty(), "{t}");
        let names: Vec<&str> = t["sides"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["backend"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["host", "floor", "uvfs", "uvfs-pt"], "{t}");
        for ratio in ["uvfs_vs_floor", "pt_vs_uvfs"] {
            assert_eq!(
                t[ratio]["samples"].as_array().unwrap().len(),
                3,
                "{ratio}: {t}"
            );
        }
    }
    let goals = r["goals"].as_array().unwrap();
    assert_eq!(
        goals.len(),
        3,
        "stat1 metadata, seqread bandwidth of uvfs and uvfs-pt"
    );
    assert!(goals.iter().all(|g| g["met"].is_boolean()), "{goals:?}");
    assert_eq!(r["records"].as_array().unwrap().len(), 12);
    wait_for("the stand-in's floor has gone", || floor_mounts() == 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `fuse --no-open` mounts the `uvfs` side with `uvfs mount --no-open`,
/// `fuse --uvfs-passthrough` with `--passthrough on` (and no second,
/// `uvfs-pt`, mount); each says so in its command line. Without either:
/// `--passthrough off` and no `--no-open`.
#[test]
fn no_open_and_passthrough_reach_the_uvfs_mount() {
    if skip() {
        return;
    }
    let _one = MOUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("standin-noopen");
    let script = dir.join("uvfs");
    let argv = dir.join("argv");
    // Records its arguments, then serves the floor at the last one.
    stand_in(
        &script,
        &format!(
            "echo \"$*\" >> '{}'\n\
             threads=1; for d; do :; done",
            argv.display()
        ),
    );
    for (k, flag) in ["--no-open", "--uvfs-passthrough", ""]
        .into_iter()
        .enumerate()
    {
        let _ = std::fs::remove_file(&argv);
        let out_dir = dir.join(format!("out-{k}"));
        let mut args = vec![
            "fuse",
            "--rounds",
            "1",
            "--seconds",
            "0.05",
            "--warmup",
            "0",
            "--tests",
            "stat1",
            "--uvfs",
            script.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ];
        // uvfs-pt left out: by --no-passthrough, or by --uvfs-passthrough.
        args.push(if flag == "--uvfs-passthrough" {
            flag
        } else {
            "--no-passthrough"
        });
        if flag == "--no-open" {
            args.push(flag);
        }
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(0), "{flag}: {out}\n{err}");
        let lines = std::fs::read_to_string(&argv).unwrap();
        // One uvfs mount.
        assert_eq!(lines.lines().count(), 1, "{lines}");
        assert_eq!(
            lines.contains(" --no-open "),
            flag == "--no-open",
            "{lines}"
        );
        let pt = if flag == "--uvfs-passthrough" {
            "--passthrough on "
        } else {
            "--passthrough off "
        };
        assert!(lines.contains(pt), "{flag}: {lines}");
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join("fuse.json")).unwrap())
                .unwrap();
        let cmd = r["uvfs_command"].as_str().unwrap();
        assert_eq!(cmd.contains("--no-open"), flag == "--no-open", "{cmd}");
        assert!(cmd.contains(pt), "{flag}: {cmd}");
        wait_for("the stand-in's floor has gone", || floor_mounts() == 0);
    }
    // The two uvfs sides cannot be asked for together.
    let (code, _, err) = run(&["fuse", "--uvfs-passthrough", "--no-open", "--no-uvfs"]);
    assert_eq!(code, Some(2), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// FUSE passthrough on the floor: created files' reads and writes go to
/// backing files on /dev/shm (unlinked at once, so none is left), where
/// the kernel offers passthrough.
#[test]
fn floor_passthrough_serves_reads_and_writes() {
    if skip() {
        return;
    }
    let _one = MOUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("passthrough");
    let backing = tmpdir("passthrough-backing");
    let child = bench()
        .arg("fuse-floor")
        .arg("--passthrough")
        .arg(&backing)
        .arg("--no-default-permissions")
        .arg(&dir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the floor is mounted", || {
        fuse::mounted(&dir).is_some_and(|(t, src)| t == "fuse" && src == "uvfs-floor")
    });
    let opts = super_options(&dir);
    assert!(
        !opts.is_empty() && !opts.contains("default_permissions"),
        "{opts}"
    );
    let d = dir.to_str().unwrap();
    let mut results = Vec::new();
    for test in ["read1", "write1", "seqread", "seqwrite"] {
        results.push((
            test,
            run(&[
                "run",
                test,
                "--backend",
                "mount",
                "--dir",
                d,
                "--seconds",
                "0.05",
                "--warmup",
                "0",
                "--interval",
                "0.05",
            ]),
        ));
    }
    let umount = Command::new("umount").arg(&dir).status().unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("offers no FUSE passthrough") {
        println!("skipped: {err}");
        return;
    }
    for (test, (code, out, err)) in &results {
        assert_eq!(*code, Some(0), "{test}: {out}\n{err}");
    }
    assert!(umount.success());
    assert!(out.status.success(), "{err}");
    let left: Vec<_> = std::fs::read_dir(&backing).unwrap().collect();
    assert!(left.is_empty(), "backing files left: {left:?}");
    std::fs::remove_dir(&backing).unwrap();
    std::fs::remove_dir(&dir).unwrap();
}
