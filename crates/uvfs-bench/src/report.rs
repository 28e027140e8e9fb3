//! Results: the JSON record of one (test, tasks) run (and how a runner
//! measurement becomes one), the machine it ran on, and the text table
//! `run` prints.
//!
//! The record's field names are a contract other tools read: `test`,
//! `backend`, `mode`, `tasks`, `fastpaths`, `ops_per_sec` (total, the mean
//! of the samples), `per_task_ops_per_sec`, `stddev` (of the samples),
//! `samples` (per-interval totals, in ops/s). Everything else is optional
//! when read back, including the tests' own figures: fstree's
//! `walk_seconds`, blogbench's `blogs_written`, `blogs_read`,
//! `articles_written`, `articles_read` (absent for the other tests).

use crate::runner::{self, Backend, RunConfig};
use crate::workloads::{self, Test};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One (test, backend, mode, tasks, fastpaths) result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The test's name (`open1`, …).
    pub test: String,
    /// `host` or `uvfs`.
    pub backend: String,
    /// `processes` or `threads`.
    pub mode: String,
    /// How many tasks ran.
    pub tasks: usize,
    /// The uvfs fast paths (`seeds`, `stock`, `stock,close_sync=on`, …, in
    /// the canonical form `FastPaths` prints), or `-` on the host.
    pub fastpaths: String,
    /// Total operations per second: the mean of `samples`.
    pub ops_per_sec: f64,
    /// `ops_per_sec / tasks` (will-it-scale's per_process_ops /
    /// per_thread_ops).
    pub per_task_ops_per_sec: f64,
    /// The sample standard deviation of `samples` (0 with one sample).
    pub stddev: f64,
    /// Total operations per second in each sampling interval.
    pub samples: Vec<f64>,
    /// Each task's operations per second over the measured time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_ops_per_sec: Vec<f64>,
    /// Measured seconds (after the warm-up).
    #[serde(default)]
    pub seconds: f64,
    /// Warm-up seconds.
    #[serde(default)]
    pub warmup: f64,
    /// The machine the run was made on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
    /// fstree: seconds one full walk of a task's tree took (the mean over
    /// the walks completed in the measured time, all tasks walking at once;
    /// absent if none completed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk_seconds: Option<f64>,
    /// blogbench: blogs written in the measured time (blogbench's "final
    /// score for writes", over this run's measured seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blogs_written: Option<u64>,
    /// blogbench: blogs read in the measured time ("final score for reads").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blogs_read: Option<u64>,
    /// blogbench: articles written (created or rewritten) in the measured
    /// time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub articles_written: Option<u64>,
    /// blogbench: articles read in the measured time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub articles_read: Option<u64>,
}

/// Mean and sample standard deviation (n - 1; 0 for fewer than 2 values).
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (m, 0.0);
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, var.sqrt())
}

/// What the run ran on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// `model name` from /proc/cpuinfo.
    pub cpu: String,
    /// CPUs this process may run on.
    pub nproc: usize,
    /// `uname -r`.
    pub kernel: String,
}

impl Machine {
    /// This machine.
    pub fn current() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let nproc = std::thread::available_parallelism().map_or(1, |n| n.get());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        Machine { cpu, nproc, kernel }
    }
}

/// Writes `value` as pretty JSON to `dir/name` (making `dir`); returns the
/// file's path. The lab's sections (`preload.json`, `fuse.json`) use it.
pub fn write_json_in<T: Serialize + ?Sized>(
    dir: &Path,
    name: &str,
    value: &T,
) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let p = dir.join(name);
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    std::fs::write(&p, text + "\n").map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(p)
}

/// Writes `records` as a pretty-printed JSON array.
pub fn write_json(path: &Path, records: &[Record]) -> Result<(), String> {
    let text = serde_json::to_string_pretty(records).map_err(|e| e.to_string())?;
    let mut f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    writeln!(f, "{text}").map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads a JSON array of records (a single record object is accepted too,
/// and so is an object with a `records` array, as `preload.json`).
pub fn read_json(path: &Path) -> Result<Vec<Record>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_json(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses what [`write_json`] writes.
pub fn parse_json(text: &str) -> Result<Vec<Record>, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let v = match v {
        serde_json::Value::Array(_) => v,
        // A report holding records (`reproduce.json`, `preload.json`): its
        // records.
        serde_json::Value::Object(mut o) if o.get("records").is_some_and(|r| r.is_array()) => {
            o.remove("records").unwrap_or_default()
        }
        serde_json::Value::Object(o) if o.get("seeds").is_some() => {
            return Err(
                "a reproduce.json without its records (written by an older uvfs-bench): \
                 compare the records.json beside it"
                    .into(),
            );
        }
        o @ serde_json::Value::Object(_) => serde_json::Value::Array(vec![o]),
        _ => return Err("expected a JSON array of records".into()),
    };
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// The header of `run`'s table.
pub fn table_header(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>5} {:>14} {:>14} {:>8} {:>7}  samples (ops/s)",
        "tasks", "ops/s", "per task", "stddev", "n"
    )
}

/// One row of `run`'s table, and under it a line with the test's own
/// figures if it has any.
pub fn table_row(out: &mut impl Write, r: &Record) -> std::io::Result<()> {
    let rel = if r.ops_per_sec > 0.0 {
        r.stddev / r.ops_per_sec * 100.0
    } else {
        0.0
    };
    let samples: Vec<String> = r.samples.iter().map(|s| format!("{s:.0}")).collect();
    writeln!(
        out,
        "{:>5} {:>14.0} {:>14.0} {:>7.1}% {:>7}  {}",
        r.tasks,
        r.ops_per_sec,
        r.per_task_ops_per_sec,
        rel,
        r.samples.len(),
        samples.join(" ")
    )?;
    if let Some(w) = r.walk_seconds {
        writeln!(
            out,
            "{:>5} full tree walk: {:.3} ms per task",
            "",
            w * 1000.0
        )?;
    }
    if let (Some(bw), Some(br)) = (r.blogs_written, r.blogs_read) {
        writeln!(
            out,
            "{:>5} blogbench score for writes: {bw} blogs, for reads: {br} blogs \
             (articles written {}, read {}, in {} s)",
            "",
            r.articles_written.unwrap_or(0),
            r.articles_read.unwrap_or(0),
            r.seconds
        )?;
    }
    Ok(())
}

/// Builds a record from one run's measurement.
pub fn record(cfg: &RunConfig, m: &runner::Measurement, machine: Option<Machine>) -> Record {
    let (mean, sd) = mean_sd(&m.samples);
    let mut r = Record {
        test: cfg.test.name().into(),
        backend: cfg.backend.name().into(),
        mode: cfg.mode.name().into(),
        tasks: cfg.tasks,
        fastpaths: match cfg.backend {
            Backend::Host | Backend::Mount => "-".into(),
            Backend::Uvfs => cfg.fastpaths.to_string(),
        },
        ops_per_sec: mean,
        per_task_ops_per_sec: mean / cfg.tasks as f64,
        stddev: sd,
        samples: m.samples.clone(),
        task_ops_per_sec: m.task_ops_per_sec.clone(),
        seconds: cfg.seconds,
        warmup: cfg.warmup,
        machine,
        walk_seconds: None,
        blogs_written: None,
        blogs_read: None,
        articles_written: None,
        articles_read: None,
    };
    let sum = |k: usize| m.task_extra.iter().map(|e| e[k]).sum::<u64>();
    match cfg.test {
        Test::Fstree => {
            let walks = sum(workloads::FSTREE_WALKS);
            r.walk_seconds =
                (walks > 0).then(|| sum(workloads::FSTREE_WALK_NS) as f64 / walks as f64 / 1e9);
        }
        Test::Blogbench => {
            r.blogs_written = Some(sum(workloads::BLOGS_WRITTEN));
            r.blogs_read = Some(sum(workloads::BLOGS_READ));
            r.articles_written = Some(sum(workloads::ARTICLES_WRITTEN));
            r.articles_read = Some(sum(workloads::ARTICLES_READ));
        }
        _ => {}
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            test: "open1".into(),
            backend: "uvfs".into(),
            mode: "processes".into(),
            tasks: 2,
            fastpaths: "seeds".into(),
            ops_per_sec: 2000.0,
            per_task_ops_per_sec: 1000.0,
            stddev: 10.0,
            samples: vec![1990.0, 2010.0],
            task_ops_per_sec: vec![1000.0, 1000.0],
            seconds: 2.0,
            warmup: 1.0,
            machine: Some(Machine::current()),
            walk_seconds: None,
            blogs_written: Some(3),
            blogs_read: Some(40),
            articles_written: Some(30),
            articles_read: Some(400),
        }
    }

    #[test]
    fn json_round_trip_keeps_the_contract_names() {
        let recs = vec![record()];
        let text = serde_json::to_string(&recs).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let obj = v[0].as_object().unwrap();
        for key in [
            "test",
            "backend",
            "mode",
            "tasks",
            "fastpaths",
            "ops_per_sec",
            "per_task_ops_per_sec",
            "stddev",
            "samples",
        ] {
            assert!(obj.contains_key(key), "missing {key} in {text}");
        }
        assert_eq!(obj["samples"].as_array().unwrap().len(), 2);
        assert_eq!(obj["blogs_read"], 40);
        assert!(!obj.contains_key("walk_seconds"), "{text}");
        assert_eq!(parse_json(&text).unwrap(), recs);

        let dir = std::env::temp_dir().join(format!("uvfs-bench-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        write_json(&path, &recs).unwrap();
        assert_eq!(read_json(&path).unwrap(), recs);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn contract_fields_alone_are_enough() {
        let text = r#"[{"test":"dup1","backend":"host","mode":"threads","tasks":1,
            "fastpaths":"-","ops_per_sec":5.0,"per_task_ops_per_sec":5.0,
            "stddev":0.0,"samples":[5.0]}]"#;
        let r = parse_json(text).unwrap();
        assert_eq!(r[0].test, "dup1");
        assert_eq!(r[0].machine, None);
        assert!(parse_json("42").is_err());
        let wrapped = format!(r#"{{"rounds":3,"records":{text}}}"#);
        assert_eq!(parse_json(&wrapped).unwrap(), r);
        assert!(parse_json(r#"[{"test":"x"}]"#).is_err());
    }

    #[test]
    fn mean_and_sd() {
        assert_eq!(mean_sd(&[]), (0.0, 0.0));
        assert_eq!(mean_sd(&[3.0]), (3.0, 0.0));
        let (m, s) = mean_sd(&[1.0, 2.0, 3.0]);
        assert!((m - 2.0).abs() < 1e-12 && (s - 1.0).abs() < 1e-12);
    }
}
