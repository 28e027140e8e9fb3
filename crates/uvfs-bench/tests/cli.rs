//! The binary end to end: `list`, `run --json` (the contract's field
//! names), and `compare`'s exit status (1 on a regression beyond noise, 0
//! on noise, 2 on bad input).

use std::path::{Path, PathBuf};
use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_uvfs-bench"))
}

/// A scratch directory, removed when the test ends, passed or failed (the
/// tests that stop early used to leave theirs in /tmp).
struct TmpDir(PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TmpDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TmpDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmpdir(name: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("uvfs-bench-cli-{name}.{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

fn record(test: &str, samples: &[f64]) -> String {
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    let sd = (samples.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>()
        / (samples.len() as f64 - 1.0))
        .sqrt();
    format!(
        r#"{{"test":"{test}","backend":"uvfs","mode":"processes","tasks":1,"fastpaths":"seeds",
        "ops_per_sec":{mean},"per_task_ops_per_sec":{mean},"stddev":{sd},"samples":{samples:?}}}"#
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn list_names_every_test() {
    let out = bench().arg("list").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "open1",
        "open2",
        "open3",
        "dup1",
        "lseek1",
        "lseek2",
        "read1",
        "read2",
        "pread1",
        "write1",
        "unlink1",
        "unlink2",
        "openneg",
        "getfl",
        "dup100",
        "fstree",
        "blogbench",
    ] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing from\n{text}"
        );
    }
}

#[test]
fn run_writes_the_json_contract() {
    let dir = tmpdir("run");
    let json = dir.join("r.json");
    let out = bench()
        .args([
            "run",
            "dup1",
            "--tasks",
            "1,2",
            "--seconds",
            "0.2",
            "--warmup",
            "0",
            "--min-ops",
            "1",
        ])
        .args([
            "--interval",
            "0.1",
            "--mode",
            "threads",
            "--fastpaths",
            "stock",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 2);
    for (r, tasks) in recs.iter().zip([1, 2]) {
        assert_eq!(r["test"], "dup1");
        assert_eq!(r["backend"], "uvfs");
        assert_eq!(r["mode"], "threads");
        assert_eq!(r["tasks"], tasks);
        assert_eq!(r["fastpaths"], "stock");
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0);
        assert!(r["per_task_ops_per_sec"].as_f64().unwrap() > 0.0);
        assert!(r["stddev"].as_f64().unwrap() >= 0.0);
        assert_eq!(r["samples"].as_array().unwrap().len(), 2);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_exit_status() {
    let dir = tmpdir("compare");
    let base = write(
        &dir,
        "base.json",
        &format!(
            "[{},{}]",
            record("open1", &[1000.0, 1010.0, 990.0, 1005.0, 995.0]),
            record("dup1", &[500.0, 520.0, 480.0])
        ),
    );
    let regressed = write(
        &dir,
        "regressed.json",
        &format!(
            "[{},{}]",
            record("open1", &[877.0, 880.0, 875.0, 879.0, 874.0]),
            record("dup1", &[505.0, 515.0, 485.0])
        ),
    );
    // open1 within noise, dup1 missing.
    let noisy = write(
        &dir,
        "noisy.json",
        &format!(
            "[{}]",
            record("open1", &[1003.0, 1012.0, 985.0, 1001.0, 990.0])
        ),
    );
    let out = bench()
        .arg("compare")
        .arg(&base)
        .arg(&regressed)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "will-it-scale.per_process_ops -12.3% regression on open1 (uvfs seeds, processes, 1 task)"
        ),
        "{text}"
    );
    let out = bench()
        .arg("compare")
        .arg(&base)
        .arg(&noisy)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("missing in NEW"), "{text}");

    let bad = write(&dir, "bad.json", "{not json");
    let out = bench()
        .arg("compare")
        .arg(&base)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bench()
        .arg("compare")
        .arg(&base)
        .arg(dir.join("absent.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every bad value of every subcommand is refused before any work (nothing
/// on stdout, no run started), with a message naming the option, exit 2,
/// never a panic.
#[test]
fn bad_values_are_refused_before_any_work() {
    let dir = tmpdir("bad-values");
    let file = write(&dir, "file", "");
    let file = file.to_str().unwrap();
    let under_file = format!("{file}/x");
    let rec = write(
        &dir,
        "r.json",
        &format!("[{}]", record("open1", &[1.0, 2.0])),
    );
    let rec = rec.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["run", "open1", "--seconds", "inf"], "--seconds"),
        (&["run", "open1", "--seconds", "nan"], "--seconds"),
        (&["run", "open1", "--seconds", "-1"], "finite number > 0"),
        (&["run", "open1", "--seconds", "0"], "--seconds"),
        (&["run", "open1", "--seconds", "1e300"], "at most"),
        (&["run", "open1", "--warmup", "-1"], "--warmup"),
        (&["run", "open1", "--warmup", "inf"], "--warmup"),
        (&["run", "open1", "--interval", "0"], "--interval"),
        (
            &["run", "open1", "--seconds", "10", "--interval", "1e-6"],
            "samples",
        ),
        (&["run", "open1", "--tasks", "100000"], "from 1 to 1024"),
        (&["run", "open1", "--tasks", "0"], "--tasks"),
        (&["run", "open1", "--tasks", "1,-2"], "--tasks"),
        (&["run", "nosuchtest"], "nosuchtest"),
        (&["run", "open1", "--backend", "nfs"], "--backend"),
        (&["run", "open1", "--mode", "fibers"], "--mode"),
        (&["run", "open1", "--fastpaths", "turbo=on"], "--fastpaths"),
        (
            &["run", "open1", "--json", "/nonexistent/dir/r.json"],
            "no directory /nonexistent/dir",
        ),
        (&["run", "open1", "--json", "/tmp"], "is a directory"),
        (
            &["run", "open1", "--backend", "host", "--dir", "/nonexistent"],
            "--dir /nonexistent",
        ),
        (&["run", "open1", "--dir", "relative"], "absolute"),
        (&["run", "open1", "--min-ops", "-1"], "--min-ops"),
        (&["soak", "--seconds", "inf"], "--seconds"),
        (&["soak", "--seconds", "-1"], "--seconds"),
        (&["soak", "--warmup", "nan"], "--warmup"),
        (&["soak", "--interval", "0"], "--interval"),
        (&["soak", "--tasks", "100000"], "from 1 to 1024"),
        (&["soak", "--calls", "0"], "--calls"),
        (&["soak", "--warmup-calls", "5"], "--calls"),
        (
            &["soak", "--calls", "10", "--interval-calls", "0"],
            "--interval-calls",
        ),
        (
            &["soak", "--calls", "10", "--seconds", "5"],
            "cannot be used with",
        ),
        (&["soak", "--max-growth", "-5"], "--max-growth"),
        (&["soak", "--max-slope", "nan"], "--max-slope"),
        (&["soak", "--seconds", "1e300"], "at most"),
        (&["preload", "--seconds", "inf"], "--seconds"),
        (&["preload", "--seconds", "3600"], "at most 60"),
        (&["preload", "--repeats", "0"], "--repeats"),
        (&["preload", "--repeats", "100000"], "--repeats"),
        (&["preload", "--iterations", "0"], "--iterations"),
        (&["preload", "--iterations", "99999999999"], "--iterations"),
        (
            &["preload", "--so", "/nonexistent/libuvfs_preload.so"],
            "no such file",
        ),
        (&["preload", "--out", &under_file], "is not a directory"),
        (&["reproduce", "--out", &under_file], "is not a directory"),
        (&["compare", rec, rec, "--sigmas", "-1"], "--sigmas"),
        (
            &["compare", rec, rec, "--min-change", "inf"],
            "--min-change",
        ),
        (&["compare", rec], "NEW"),
        (&["loop", "open1", "inf"], "SECS"),
    ];
    for &(args, says) in cases {
        let (code, out, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: exit {code:?}\n{out}\n{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} started: {out}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// When no record matches, `compare` says which key fields differ and exits
/// 2; a reproduce.json (which carries its records) is taken like
/// `run --json`'s file, and one written without them is named as such.
#[test]
fn compare_says_why_nothing_matched() {
    let dir = tmpdir("nomatch");
    let seeds = write(
        &dir,
        "seeds.json",
        &format!("[{}]", record("open1", &[1.0, 2.0])),
    );
    let stock = write(
        &dir,
        "stock.json",
        &format!("[{}]", record("open1", &[1.0, 2.0])).replace("\"seeds\"", "\"stock\""),
    );
    let (code, out, err) = run(&["compare", seeds.to_str().unwrap(), stock.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("records match on test, backend, mode, tasks and fastpaths")
            && err.contains("fastpaths (BASE: seeds; NEW: stock)")
            && !err.contains("test (")
            && !err.contains("tasks ("),
        "{err}"
    );
    let empty = write(&dir, "empty.json", "[]");
    let (code, _, err) = run(&["compare", seeds.to_str().unwrap(), empty.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("NEW holds no record"), "{err}");

    let reproduce = write(
        &dir,
        "reproduce.json",
        &format!(
            r#"{{"profile":"quick","seeds":[],"records":[{}]}}"#,
            record("open1", &[1.0, 2.0])
        ),
    );
    let (code, out, err) = run(&[
        "compare",
        reproduce.to_str().unwrap(),
        seeds.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("1 record(s) compared"), "{out}");
    let old = write(&dir, "old.json", r#"{"profile":"quick","seeds":[]}"#);
    let (code, _, err) = run(&["compare", old.to_str().unwrap(), seeds.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("records.json beside it"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `reproduce --quick` end to end: every seed row measured (or its failure
/// named), uvfs against the host for each test, the report's files, and
/// records.json readable by `compare` (itself against itself: no
/// regression).
#[test]
fn reproduce_quick_writes_its_report() {
    let dir = tmpdir("reproduce");
    let out = bench()
        .args(["reproduce", "--quick", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "index.html",
        "reproduce.json",
        "records.json",
        "seeds.svg",
        "versus-host.svg",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing; {stdout}");
    }
    let rep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reproduce.json")).unwrap())
            .unwrap();
    let seeds = rep["seeds"].as_array().unwrap();
    // Seven seed rows, issue 19's two fd_single_user rows and two
    // fd_slot_spread rows and two fd_bits_lockfree rows (two threads), its
    // three cheap_pin rows (open1, stat1, open1 at two threads), its
    // open_count_lazy row, two lockless_attrs rows (stat1, read1) and its
    // lockless_read row (read1), its two fd_close_lockless rows (two
    // threads), and issue 16's path-cache, tmpfs-borrow, stat-noref,
    // rcu-parent, stat-noref-walk, write-one-lock (write1), d-delete
    // (unlink1), light-overwrite (write1), dentry-inline-name (fstree),
    // path-cache-inode (stat12), path-cache-admit (fstree),
    // path-cache-dir-gen (statchurn) and path-cache-parent (unlink2) rows.
    assert_eq!(seeds.len(), 35);
    for s in seeds {
        assert!(s["error"].is_null(), "{s}");
        assert!(s["a_ops_per_sec"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["b_ops_per_sec"].as_f64().unwrap() > 0.0, "{s}");
        assert_eq!(s["a_samples"].as_array().unwrap().len(), 4);
        let v = s["verdict"].as_str().unwrap();
        assert!(
            ["reproduces", "within noise", "opposite"].contains(&v),
            "{v}"
        );
    }
    for v in rep["versus"].as_array().unwrap() {
        assert!(v["ratio"].as_f64().unwrap() > 0.0, "{v}");
    }
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("close_sync") && html.ends_with("</html>\n"));
    let recs = dir.join("records.json");
    let cmp = bench()
        .arg("compare")
        .arg(&recs)
        .arg(&recs)
        .output()
        .unwrap();
    assert_eq!(
        cmp.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&cmp.stdout)
    );
    // reproduce.json carries the same records: compare takes it too.
    let n = rep["records"].as_array().unwrap().len();
    assert!(n > 0, "{rep}");
    let cmp = bench()
        .arg("compare")
        .arg(dir.join("reproduce.json"))
        .arg(&recs)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert_eq!(cmp.status.code(), Some(0), "{text}");
    assert!(text.contains(&format!("{n} record(s) compared")), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reproduce_rejects_quick_with_full() {
    let out = bench()
        .args(["reproduce", "--quick", "--full"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}

/// Runs `uvfs-bench ARGS`; returns (exit code, stdout, stderr).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = bench().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn fstree_and_blogbench_options_are_checked() {
    let short = ["--seconds", "0.1", "--warmup", "0", "--interval", "0.1"];
    for (args, says) in [
        (
            &["run", "fstree", "--fstree-dirs", "0"][..],
            "--fstree-dirs",
        ),
        (
            &["run", "fstree", "--fstree-files", "0"][..],
            "--fstree-files",
        ),
        (
            &["run", "fstree", "--fstree-files", "ten"][..],
            "--fstree-files",
        ),
        (
            &["run", "fstree", "--fstree-dirs", "-3"][..],
            "--fstree-dirs",
        ),
        (
            &[
                "run",
                "fstree",
                "--fstree-dirs",
                "2000",
                "--fstree-files",
                "1000",
            ][..],
            "at most 1000000",
        ),
        (
            &["run", "fstree", "--fstree-dirs", "99999999999999999999"][..],
            "--fstree-dirs",
        ),
        (
            &["run", "fstree", "--cache-limit", "-1"][..],
            "--cache-limit",
        ),
        (&["run", "blogbench", "--blogs", "0"][..], "--blogs"),
        (&["run", "blogbench", "--blogs", "100001"][..], "--blogs"),
        (&["run", "blogbench", "--tasks", "0"][..], "--tasks"),
    ] {
        let mut all = args.to_vec();
        all.extend_from_slice(&short);
        let (code, _, err) = run(&all);
        assert!(
            code.is_some_and(|c| c != 0),
            "{args:?}: exit {code:?}\n{err}"
        );
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // The options are explained in --help.
    let (code, help, _) = run(&["run", "--help"]);
    assert_eq!(code, Some(0));
    for opt in [
        "--fstree-dirs",
        "--fstree-files",
        "--cache-limit",
        "--blogs",
    ] {
        assert!(help.contains(opt), "{opt} missing from\n{help}");
    }
}

#[test]
fn fstree_and_blogbench_write_their_fields() {
    let dir = tmpdir("figures");
    for (test, extra, fields) in [
        (
            "fstree",
            &[
                "--fstree-dirs",
                "4",
                "--fstree-files",
                "50",
                "--cache-limit",
                "20",
            ][..],
            &["walk_seconds"][..],
        ),
        (
            "blogbench",
            &["--blogs", "8"][..],
            &[
                "blogs_written",
                "blogs_read",
                "articles_written",
                "articles_read",
            ][..],
        ),
    ] {
        for backend in ["host", "uvfs"] {
            let json = dir.join(format!("{test}-{backend}.json"));
            let mut args = vec![
                "run",
                test,
                "--backend",
                backend,
                "--mode",
                "threads",
                "--tasks",
                "1,5",
                "--seconds",
                "0.2",
                "--warmup",
                "0",
                "--interval",
                "0.1",
                // Samples, tasks and the figures non-empty on a loaded
                // machine too.
                "--min-ops",
                "1",
                "--dir",
            ];
            let d = dir.to_str().unwrap();
            args.push(d);
            args.extend_from_slice(extra);
            args.push("--json");
            args.push(json.to_str().unwrap());
            let (code, out, err) = run(&args);
            assert_eq!(code, Some(0), "{args:?}\n{out}\n{err}");
            assert!(!err.contains("warning"), "{err}");
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            let recs = v.as_array().unwrap();
            assert_eq!(recs.len(), 2);
            for r in recs {
                assert_eq!(r["test"], test);
                assert_eq!(r["backend"], backend);
                for key in [
                    "mode",
                    "tasks",
                    "fastpaths",
                    "ops_per_sec",
                    "per_task_ops_per_sec",
                    "stddev",
                    "samples",
                ] {
                    assert!(r.get(key).is_some(), "{key} missing: {r}");
                }
                assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
                for f in fields {
                    assert!(r[f].as_f64().is_some_and(|x| x > 0.0), "{f}: {r}");
                }
            }
            std::fs::remove_file(&json).unwrap();
        }
    }
    // Only the host work directories' parent is left.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether a C compiler (`cc`) runs here.
fn have_cc() -> bool {
    Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The four modes of `preload`, as its table labels them.
const PRELOAD_MODES: [(&str, &str); 4] = [
    ("host", "host tmpfs"),
    ("host-shim", "host tmpfs, shim loaded"),
    (
        "uvfs-fd-cache-0",
        "uvfs, UVFS_FD_CACHE=0 (a placeholder syscall per open and close)",
    ),
    ("uvfs-default", "uvfs, default (placeholder cache)"),
];

/// `preload --quick` end to end: the shim built (release, into this
/// binary's target directory), the C loop compiled and run in the four
/// modes; the table's figures are numbers and agree with preload.json,
/// whose ratios are the modes' pairs/s over the host's.
#[test]
fn preload_quick_measures_every_mode() {
    if !have_cc() {
        eprintln!("SKIPPED preload_quick_measures_every_mode: no cc to compile the C loop");
        return;
    }
    let dir = tmpdir("preload");
    let out = bench()
        .env("CARGO", env!("CARGO"))
        .args(["preload", "--quick", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let rep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("preload.json")).unwrap()).unwrap();
    let modes = rep["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 4, "{rep}");
    let host = modes[0]["pairs_per_sec"].as_f64().unwrap();
    assert!(host > 0.0, "{rep}");
    for (m, (key, label)) in modes.iter().zip(PRELOAD_MODES) {
        assert_eq!(m["key"], key);
        assert_eq!(m["label"], label);
        let pps = m["pairs_per_sec"].as_f64().unwrap();
        let ns = m["ns_per_pair"]["median"].as_f64().unwrap();
        assert!(pps > 0.0 && ns > 0.0, "{m}");
        // 3 rounds: the median pairs/s is the reciprocal of the median ns.
        assert!((pps * ns / 1e9 - 1.0).abs() < 1e-6, "{m}");
        assert_eq!(m["ns_per_pair"]["samples"].as_array().unwrap().len(), 3);
        let ratio = m["ratio_vs_host"].as_f64().unwrap();
        assert!((ratio - pps / host).abs() <= 1e-9 * ratio, "{m}");
        match key {
            "host" | "host-shim" => assert!(m["target_met"].is_null(), "{m}"),
            _ => assert_eq!(m["target_met"].as_bool(), Some(ratio >= 10.0), "{m}"),
        }
        for f in ["close_bad_ns", "fstat_ns", "stat_ns"] {
            assert!(m[f]["median"].as_f64().unwrap() > 0.0, "{f}: {m}");
        }
        let env: Vec<&str> = m["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert_eq!(env.contains(&"UVFS_PREFIX=/uvfs"), key != "host", "{m}");
        assert_eq!(env.contains(&"UVFS_FD_CACHE=0"), key == "uvfs-fd-cache-0");
        assert!(!env.iter().any(|e| e.starts_with("UVFS_FD_CACHE=")) || key == "uvfs-fd-cache-0");

        // The table's row: label, pairs/s, ns/pair, spread %, ratio x.
        let row = stdout
            .lines()
            .find(|l| {
                l.strip_prefix(label)
                    .is_some_and(|r| r.trim_start().starts_with(|c: char| c.is_ascii_digit()))
                    && l.contains('x')
            })
            .unwrap_or_else(|| panic!("no row for {label} in\n{stdout}"));
        let nums: Vec<&str> = row[label.len()..].split_whitespace().collect();
        // The table prints the JSON's own numbers: the same f64s, formatted
        // (comparing the strings is exact where a tolerance of half a unit
        // fails now and then on a value printed on a rounding boundary).
        assert_eq!(nums[0], format!("{pps:.0}"), "{row}");
        assert_eq!(nums[1], format!("{ns:.1}"), "{row}");
        assert_eq!(nums[3], format!("{ratio:.2}x"), "{row}");
        if key.starts_with("uvfs") {
            let word = if ratio >= 10.0 { "met" } else { "MISSED" };
            assert!(row.ends_with(word), "{row}");
        }
    }
    let costs = rep["interposition"].as_array().unwrap();
    assert_eq!(costs.len(), 4);
    for c in costs {
        let (without, with, cost) = (
            c["without_ns"].as_f64().unwrap(),
            c["with_ns"].as_f64().unwrap(),
            c["cost_ns"].as_f64().unwrap(),
        );
        assert!(without > 0.0 && with > 0.0 && cost.is_finite(), "{c}");
        let (lo, hi) = (c["min_ns"].as_f64().unwrap(), c["max_ns"].as_f64().unwrap());
        assert!(lo <= cost && cost <= hi, "{c}");
    }
    assert!(
        stdout.contains("close(-1)") && stdout.contains("machine: "),
        "{stdout}"
    );
    // The records are `compare`'s: the report against itself, no regression.
    let json = dir.join("preload.json");
    let cmp = bench()
        .arg("compare")
        .arg(&json)
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert_eq!(cmp.status.code(), Some(0), "{text}");
    assert!(text.contains("4 record(s) compared"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn preload_reports_a_missing_shim() {
    let (code, out, err) = run(&[
        "preload",
        "--quick",
        "--so",
        "/nonexistent/libuvfs_preload.so",
    ]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("--so /nonexistent/libuvfs_preload.so: no such file"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let (code, _, err) = run(&["reproduce", "--quick", "--preload", "--no-preload"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = run(&["preload", "--iterations", "0"]);
    assert_eq!(code, Some(2), "{err}");
}

/// `peers` with `args`: (exit code, stdout, stderr).
fn peers(args: &[&str]) -> (Option<i32>, String, String) {
    let out = bench().arg("peers").args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn peers_refuses_bad_input_before_any_work() {
    let missing = tmpdir("peers-bad").join("missing/deeper");
    let cases: &[(&[&str], &str)] = &[
        (&["--rounds", "0"], "--rounds"),
        (&["--seconds", "0"], "seconds"),
        (&["--seconds", "nan"], "seconds"),
        (&["--seconds", "-1"], "seconds"),
        (&["--files", "0"], "--files"),
        (&["--files", "1000001"], "--files"),
        (&["--memory-files", "1000001"], "--memory-files"),
        (&["--systems", "ext4"], "unknown system"),
        (&["--systems", "kernel"], "uvfs"),
        (&["--systems", "uvfs,uvfs"], "twice"),
        (&["--dir", missing.to_str().unwrap()], "--dir"),
        (&["--rounds", "-3"], "rounds"),
    ];
    for (args, want) in cases {
        let (code, stdout, stderr) = peers(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("round 1"), "{args:?} did work: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
    }
    if !cfg!(feature = "peers") {
        let (code, _, stderr) = peers(&["--systems", "uvfs,virtual-fs"]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("`peers` feature"), "{stderr}");
    }
    // --out under a regular file cannot be made.
    let d = tmpdir("peers-out");
    let file = write(&d, "plain", "x");
    let (code, _, stderr) = peers(&["--out", file.join("sub").to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    for (args, want) in [
        (&["peers-memory", "ext4", "10"][..], "unknown system"),
        (&["peers-memory", "uvfs", "0"][..], "FILES"),
    ] {
        let out = bench().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn peers_measures_every_row_and_memory_and_writes_json() {
    let d = tmpdir("peers-run");
    let (code, stdout, stderr) = peers(&[
        "--systems",
        "uvfs,kernel",
        "--rounds",
        "2",
        "--seconds",
        "0.001",
        "--files",
        "40",
        "--memory-files",
        "200",
        "--out",
        d.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("what each peer cannot do"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("peers.json")).unwrap()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    for row in rows {
        let cells = row["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 2, "{row}");
        for c in cells {
            let ops = &c["ops_per_sec"];
            assert_eq!(ops["rounds"].as_array().unwrap().len(), 2, "{row}");
            assert!(ops["median"].as_f64().unwrap() > 0.0, "{row}");
            // The ratio is uvfs / this system, absent on uvfs itself.
            assert_eq!(c["system"] == "uvfs", c["uvfs_ratio"].is_null(), "{row}");
        }
    }
    let mem = json["memory"].as_array().unwrap();
    let uvfs = mem.iter().find(|m| m["system"] == "uvfs").unwrap();
    assert_eq!(uvfs["files"], 200);
    assert!(
        uvfs["heap_bytes_per_file"].as_f64().unwrap() > 0.0,
        "{uvfs}"
    );
    // The kernel's work directory is gone.
    let left: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("peers/a/b/file").exists())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `peers-loop --fastpaths SPEC`: a bad spec (or one given to a system
/// other than uvfs) is refused before any work, exit 2; a good one reaches
/// uvfs's VFS, which reports what it runs with (the line names it, read
/// back from the VFS, not echoed from the argument).
#[test]
fn peers_loop_applies_its_fastpaths() {
    let loop_ = |args: &[&str]| {
        let out = bench().arg("peers-loop").args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (args, want) in [
        (
            &["stat", "0.01", "--fastpaths", "path_cache=maybe"][..],
            "switches",
        ),
        (
            &["stat", "0.01", "--fastpaths", "no_such_switch=on"][..],
            "switches",
        ),
        (
            &["stat", "0.01", "--system", "kernel", "--fastpaths", "seeds"][..],
            "uvfs only",
        ),
    ] {
        let (code, stdout, stderr) = loop_(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?} did work: {stdout}");
    }
    for spec in [None, Some("seeds,path_cache=off"), Some("stock")] {
        let mut args = vec!["dir-stat-each", "0.01", "--files", "20"];
        args.extend(spec.iter().flat_map(|s| ["--fastpaths", s]));
        let (code, stdout, stderr) = loop_(&args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(
            stdout.starts_with("dir-stat-each on uvfs (fast paths "),
            "{stdout}"
        );
        let named = stdout.split("(fast paths ").nth(1).unwrap();
        let named = &named[..named.find(')').unwrap()];
        let ran = uvfs::FastPaths::parse(named).unwrap();
        let asked = uvfs::FastPaths::parse(spec.unwrap_or("seeds")).unwrap();
        assert_eq!(ran, asked, "{spec:?}: {stdout}");
        assert_eq!(
            ran.path_cache,
            spec != Some("seeds,path_cache=off") && spec != Some("stock"),
            "{stdout}"
        );
        assert!(stdout.contains("per CPU-second"), "{stdout}");
    }
}
