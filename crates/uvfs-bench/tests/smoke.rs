//! Smoke test of the runner: every test, on both backends, in both modes,
//! with 1 and 2 tasks, for about 0.2 s each: every task counts operations,
//! the tests leave nothing in their work directory, and the host work
//! directories are gone afterwards. The runs set `min_ops`: a sample lasts
//! until it holds an operation and a run until every task and the test's
//! own counters moved, so the counts checked here do not depend on the
//! machine's load (a loaded machine only makes the runs longer).

use std::path::PathBuf;
use uvfs::FastPaths;
use uvfs_bench::cli;
use uvfs_bench::runner::{self, Backend, Mode, RunConfig};
use uvfs_bench::workloads::{Params, Test};

/// A fresh parent directory for the host work directories (tmpfs when
/// /dev/shm exists).
fn parent() -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("uvfs-bench-smoke.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn every_test_runs_and_cleans_up() {
    let dir = parent();
    let mut failures = Vec::new();
    for test in Test::all() {
        for backend in [Backend::Host, Backend::Uvfs] {
            for mode in [Mode::Processes, Mode::Threads] {
                for tasks in [1, 2] {
                    let cfg = RunConfig {
                        test,
                        backend,
                        mode,
                        tasks,
                        seconds: 0.2,
                        warmup: 0.05,
                        interval: 0.1,
                        fastpaths: FastPaths::seeds(),
                        dir: dir.clone(),
                        params: Params::default(),
                        min_ops: 1,
                    };
                    let what = format!("{} {backend:?} {mode:?} {tasks}", test.name());
                    let m = match runner::run(&cfg) {
                        Ok(m) => m,
                        Err(e) => {
                            failures.push(format!("{what}: {e}"));
                            continue;
                        }
                    };
                    if m.samples.len() != 2 || m.samples.iter().any(|&s| s <= 0.0) {
                        failures.push(format!("{what}: samples {:?}", m.samples));
                    }
                    // Every task ran its loop (min_ops: 1 waits for it).
                    if m.task_total_ops.len() != tasks
                        || m.task_total_ops.contains(&0)
                        || m.task_ops_per_sec.iter().any(|&r| r <= 0.0)
                    {
                        failures.push(format!("{what}: per task {:?}", m.task_total_ops));
                    }
                    if !m.leftovers.is_empty() {
                        failures.push(format!("{what}: left {:?}", m.leftovers));
                    }
                    if backend == Backend::Host && std::path::Path::new(&m.workdir).exists() {
                        failures.push(format!("{what}: {} not removed", m.workdir));
                    }
                }
            }
        }
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(left.is_empty(), "host work directories left: {left:?}");
}

#[test]
fn stock_fast_paths_run_too() {
    let dir = parent().join("stock");
    std::fs::create_dir_all(&dir).unwrap();
    for test in [Test::Open1, Test::Openneg, Test::Dup1] {
        let cfg = RunConfig {
            test,
            backend: Backend::Uvfs,
            mode: Mode::Threads,
            tasks: 2,
            seconds: 0.1,
            warmup: 0.0,
            interval: 1.0,
            fastpaths: FastPaths::stock(),
            dir: dir.clone(),
            params: Params::default(),
            min_ops: 1,
        };
        let m = runner::run(&cfg).unwrap();
        assert_eq!(m.samples.len(), 1);
        assert!(m.samples[0] > 0.0 && m.leftovers.is_empty(), "{m:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_configs_are_refused() {
    let cfg = RunConfig {
        test: Test::Open1,
        backend: Backend::Uvfs,
        mode: Mode::Processes,
        tasks: 0,
        seconds: 0.1,
        warmup: 0.0,
        interval: 1.0,
        fastpaths: FastPaths::seeds(),
        dir: PathBuf::from("/dev/shm"),
        params: Params::default(),
        min_ops: 1,
    };
    assert!(runner::run(&cfg).is_err());
    for params in [
        Params {
            fstree_dirs: 0,
            ..Params::default()
        },
        Params {
            fstree_dirs: 2000,
            fstree_files: 1000,
            ..Params::default()
        },
        Params {
            blogs: 0,
            ..Params::default()
        },
    ] {
        let bad = RunConfig {
            test: Test::Fstree,
            tasks: 1,
            params,
            ..cfg.clone()
        };
        let e = runner::run(&bad).unwrap_err();
        assert!(e.starts_with("--"), "{e}");
    }
    let host = RunConfig {
        backend: Backend::Host,
        tasks: 1,
        dir: PathBuf::from("/nonexistent/uvfs-bench"),
        ..cfg
    };
    // host and mount check the directory before any work.
    for backend in [Backend::Host, Backend::Mount] {
        let e = runner::run(&RunConfig {
            backend,
            ..host.clone()
        })
        .unwrap_err();
        assert!(
            e.starts_with("--dir /nonexistent/uvfs-bench: ") && e.contains("No such file"),
            "{e}"
        );
    }
    let file = std::env::temp_dir().join(format!("uvfs-bench-smoke-file.{}", std::process::id()));
    std::fs::write(&file, b"x").unwrap();
    let e = runner::run(&RunConfig {
        dir: file.clone(),
        ..host
    })
    .unwrap_err();
    std::fs::remove_file(&file).unwrap();
    assert!(e.ends_with("not a directory"), "{e}");
}

/// fstree and blogbench on both backends and in both modes: counts on every
/// task, their own figures in the record (a full walk's time; the blogbench
/// scores), an empty work directory.
#[test]
fn fstree_and_blogbench_report_their_figures() {
    let dir = parent().join("figures");
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    for test in [Test::Fstree, Test::Blogbench] {
        for backend in [Backend::Host, Backend::Uvfs] {
            for mode in [Mode::Processes, Mode::Threads] {
                // 5 tasks: every blogbench role at least once.
                for tasks in [1, 5] {
                    let cfg = RunConfig {
                        test,
                        backend,
                        mode,
                        tasks,
                        seconds: 0.2,
                        warmup: 0.05,
                        interval: 0.1,
                        fastpaths: FastPaths::seeds(),
                        dir: dir.clone(),
                        params: Params {
                            fstree_dirs: 8,
                            fstree_files: 25,
                            cache_limit: None,
                            blogs: 16,
                            pin: true,
                        },
                        min_ops: 1,
                    };
                    let what = format!("{} {backend:?} {mode:?} {tasks}", test.name());
                    let m = match runner::run(&cfg) {
                        Ok(m) => m,
                        Err(e) => {
                            failures.push(format!("{what}: {e}"));
                            continue;
                        }
                    };
                    if m.task_total_ops.len() != tasks
                        || m.task_total_ops.contains(&0)
                        || m.task_ops_per_sec.iter().any(|&r| r <= 0.0)
                    {
                        failures.push(format!("{what}: per task {:?}", m.task_total_ops));
                    }
                    if !m.leftovers.is_empty() {
                        failures.push(format!("{what}: left {:?}", m.leftovers));
                    }
                    let r = cli::record(&cfg, &m, None);
                    let v = serde_json::to_value(&r).unwrap();
                    let fields: &[&str] = match test {
                        Test::Fstree => &["walk_seconds"],
                        _ => &[
                            "blogs_written",
                            "blogs_read",
                            "articles_written",
                            "articles_read",
                        ],
                    };
                    for f in fields {
                        if !v[f].as_f64().is_some_and(|x| x > 0.0) {
                            failures.push(format!("{what}: {f} = {}", v[f]));
                        }
                    }
                    if r.ops_per_sec <= 0.0 {
                        failures.push(format!("{what}: ops/s {}", r.ops_per_sec));
                    }
                }
            }
        }
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(left.is_empty(), "host work directories left: {left:?}");
}
