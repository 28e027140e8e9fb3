//! `compare BASE NEW`: matches the records of two JSON files by (test,
//! backend, mode, tasks, fastpaths) and says, for each, how much it changed
//! and whether the change is beyond the noise of the two runs.
//!
//! The rule. For one record, with means `b` and `n`, sample standard
//! deviations `s_b` and `s_n` over `k_b` and `k_n` samples, the standard
//! error of the difference is `SE = sqrt(s_b²/k_b + s_n²/k_n)` (Welch's).
//! The change is *beyond noise* when `|n - b| > 2·SE` (about 95 %
//! confidence for normal-ish samples) **and** `|n - b| / b ≥ 1 %` (a floor,
//! so very steady runs do not flag sub-percent shifts no one could act on;
//! both numbers are options). With fewer than 2 samples on either side the
//! spread is unknown and the record is reported as such, never as a
//! regression. A regression is a drop beyond noise (every metric here is
//! operations per second: higher is better). Records only in one file are
//! listed as missing or new and do not change the exit status.
//!
//! Exit status: 1 if any regression beyond noise, else 0 (2, for bad input,
//! is the caller's).

use crate::report::{Record, mean_sd};
use std::io::Write;

/// The rule's knobs.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// How many standard errors a change must exceed.
    pub sigmas: f64,
    /// The smallest change, in percent of the base, that counts.
    pub min_change_pct: f64,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            sigmas: 2.0,
            min_change_pct: 1.0,
        }
    }
}

/// What one record's comparison found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// Lower beyond noise.
    Regression,
    /// Higher beyond noise.
    Improvement,
    /// Within noise.
    Noise,
    /// Fewer than 2 samples on a side (or a zero base): cannot tell.
    Unknown,
    /// In BASE only.
    Missing,
    /// In NEW only.
    New,
}

/// One line of the comparison.
#[derive(Clone, Debug)]
pub struct Line {
    /// test, backend, mode, tasks, fastpaths.
    pub key: (String, String, String, usize, String),
    /// Base mean ops/s.
    pub base: Option<f64>,
    /// New mean ops/s.
    pub new: Option<f64>,
    /// Change in % of the base.
    pub change_pct: f64,
    /// `sigmas · SE` in % of the base (the noise band).
    pub noise_pct: f64,
    /// The verdict.
    pub verdict: Verdict,
}

fn key(r: &Record) -> (String, String, String, usize, String) {
    (
        r.test.clone(),
        r.backend.clone(),
        r.mode.clone(),
        r.tasks,
        r.fastpaths.clone(),
    )
}

/// Mean, SD and sample count of a record: from its samples when it has
/// them, else its own `ops_per_sec` and `stddev` with an unknown count.
fn stats(r: &Record) -> (f64, f64, usize) {
    if r.samples.is_empty() {
        (r.ops_per_sec, r.stddev, 0)
    } else {
        let (m, s) = mean_sd(&r.samples);
        (m, s, r.samples.len())
    }
}

/// Compares one pair of records.
pub fn judge(base: &Record, new: &Record, rule: Rule) -> Line {
    let (mb, sb, kb) = stats(base);
    let (mn, sn, kn) = stats(new);
    let diff = mn - mb;
    let change_pct = if mb > 0.0 { diff / mb * 100.0 } else { 0.0 };
    let se = (sb * sb / kb.max(1) as f64 + sn * sn / kn.max(1) as f64).sqrt();
    let noise_pct = if mb > 0.0 {
        rule.sigmas * se / mb * 100.0
    } else {
        0.0
    };
    let verdict = if kb < 2 || kn < 2 || mb <= 0.0 {
        Verdict::Unknown
    } else if diff.abs() > rule.sigmas * se && change_pct.abs() >= rule.min_change_pct {
        if diff < 0.0 {
            Verdict::Regression
        } else {
            Verdict::Improvement
        }
    } else {
        Verdict::Noise
    };
    Line {
        key: key(base),
        base: Some(mb),
        new: Some(mn),
        change_pct,
        noise_pct,
        verdict,
    }
}

/// Compares every record of BASE with its match in NEW, then lists NEW's
/// records that BASE lacks. A key may come more than once in a file (a
/// report measures the host's open1 in its versus section and again in
/// its FUSE section): the i-th record of a key in BASE pairs with the i-th
/// of that key in NEW, so that a report compared with itself, or with
/// another of the same profile, pairs each section's figure with its own.
pub fn compare(base: &[Record], new: &[Record], rule: Rule) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut paired = vec![false; new.len()];
    for b in base {
        let k = key(b);
        let found = new
            .iter()
            .enumerate()
            .find(|&(i, n)| !paired[i] && key(n) == k);
        match found {
            Some((i, n)) => {
                paired[i] = true;
                lines.push(judge(b, n, rule));
            }
            None => lines.push(Line {
                key: key(b),
                base: Some(b.ops_per_sec),
                new: None,
                change_pct: 0.0,
                noise_pct: 0.0,
                verdict: Verdict::Missing,
            }),
        }
    }
    for (n, _) in new.iter().zip(&paired).filter(|(_, p)| !**p) {
        lines.push(Line {
            key: key(n),
            base: None,
            new: Some(n.ops_per_sec),
            change_pct: 0.0,
            noise_pct: 0.0,
            verdict: Verdict::New,
        });
    }
    lines
}

/// Why no record of `base` matches one of `new` (`None` when one does):
/// an empty side, or the key fields whose values differ between the two
/// files, with the values each has.
pub fn nothing_matches(base: &[Record], new: &[Record]) -> Option<String> {
    if base.is_empty() || new.is_empty() {
        let which = if base.is_empty() { "BASE" } else { "NEW" };
        return Some(format!("{which} holds no record"));
    }
    if base.iter().any(|b| new.iter().any(|n| key(n) == key(b))) {
        return None;
    }
    type Field = fn(&Record) -> String;
    let fields: [(&str, Field); 5] = [
        ("test", |r| r.test.clone()),
        ("backend", |r| r.backend.clone()),
        ("mode", |r| r.mode.clone()),
        ("tasks", |r| r.tasks.to_string()),
        ("fastpaths", |r| r.fastpaths.clone()),
    ];
    let values = |rs: &[Record], f: Field| {
        let mut v: Vec<String> = rs.iter().map(f).collect();
        v.sort();
        v.dedup();
        v
    };
    let mut differ = Vec::new();
    for (name, f) in fields {
        let (b, n) = (values(base, f), values(new, f));
        if b != n {
            differ.push(format!(
                "{name} (BASE: {}; NEW: {})",
                b.join(", "),
                n.join(", ")
            ));
        }
    }
    let why = if differ.is_empty() {
        "each field's values appear on both sides, but in no common combination".to_string()
    } else {
        format!("they differ in {}", differ.join("; "))
    };
    Some(format!(
        "records match on test, backend, mode, tasks and fastpaths; {why}"
    ))
}

/// 1 if any line is a regression beyond noise, else 0.
pub fn exit_status(lines: &[Line]) -> u8 {
    u8::from(lines.iter().any(|l| l.verdict == Verdict::Regression))
}

/// The kernel test robot's way of naming the change: e.g.
/// `will-it-scale.per_process_ops -12.3% regression on open1 (uvfs seeds,
/// processes, 1 task)`.
pub fn robot_line(l: &Line) -> String {
    let (test, backend, mode, tasks, fast) = &l.key;
    let metric = if mode == "threads" {
        "per_thread_ops"
    } else {
        "per_process_ops"
    };
    let what = if l.verdict == Verdict::Regression {
        "regression"
    } else {
        "improvement"
    };
    let backend = if backend == "uvfs" {
        format!("uvfs {fast}")
    } else {
        backend.clone()
    };
    let s = if *tasks == 1 { "" } else { "s" };
    format!(
        "will-it-scale.{metric} {:+.1}% {what} on {test} ({backend}, {mode}, {tasks} task{s})",
        l.change_pct
    )
}

/// Prints the comparison table, then one robot line per change beyond
/// noise (regressions first).
pub fn print(out: &mut impl Write, lines: &[Line], rule: Rule) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<9} {:<5} {:<10} {:>5} {:<14} {:>14} {:>14} {:>9} {:>9}  verdict",
        "test", "back", "mode", "tasks", "fastpaths", "base ops/s", "new ops/s", "change", "noise"
    )?;
    let num = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.0}"));
    for l in lines {
        let (test, backend, mode, tasks, fast) = &l.key;
        let (change, noise) = match l.verdict {
            Verdict::Missing | Verdict::New => ("-".to_string(), "-".to_string()),
            _ => (
                format!("{:+.1}%", l.change_pct),
                format!("±{:.1}%", l.noise_pct),
            ),
        };
        let verdict = match l.verdict {
            Verdict::Regression => "REGRESSION",
            Verdict::Improvement => "improvement",
            Verdict::Noise => "within noise",
            Verdict::Unknown => "noise unknown (<2 samples)",
            Verdict::Missing => "missing in NEW",
            Verdict::New => "only in NEW",
        };
        writeln!(
            out,
            "{test:<9} {backend:<5} {mode:<10} {tasks:>5} {fast:<14} {:>14} {:>14} {change:>9} {noise:>9}  {verdict}",
            num(l.base),
            num(l.new),
        )?;
    }
    writeln!(
        out,
        "\nrule: beyond noise = |change| > {}x the combined standard error of both runs' samples and >= {}% of base",
        rule.sigmas, rule.min_change_pct
    )?;
    let mut flagged: Vec<&Line> = lines
        .iter()
        .filter(|l| matches!(l.verdict, Verdict::Regression | Verdict::Improvement))
        .collect();
    flagged.sort_by_key(|l| l.verdict != Verdict::Regression);
    for l in &flagged {
        writeln!(out, "{}", robot_line(l))?;
    }
    let regressions = lines
        .iter()
        .filter(|l| l.verdict == Verdict::Regression)
        .count();
    writeln!(
        out,
        "{} record(s) compared, {regressions} regression(s) beyond noise",
        lines
            .iter()
            .filter(|l| !matches!(l.verdict, Verdict::Missing | Verdict::New))
            .count()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(test: &str, tasks: usize, samples: &[f64]) -> Record {
        let (m, s) = mean_sd(samples);
        Record {
            test: test.into(),
            backend: "uvfs".into(),
            mode: "processes".into(),
            tasks,
            fastpaths: "seeds".into(),
            ops_per_sec: m,
            per_task_ops_per_sec: m / tasks as f64,
            stddev: s,
            samples: samples.to_vec(),
            task_ops_per_sec: Vec::new(),
            seconds: samples.len() as f64,
            warmup: 1.0,
            machine: None,
            walk_seconds: None,
            blogs_written: None,
            blogs_read: None,
            articles_written: None,
            articles_read: None,
        }
    }

    #[test]
    fn clear_regression_exits_1() {
        let base = [rec("open1", 1, &[1000.0, 1010.0, 990.0, 1005.0, 995.0])];
        let new = [rec("open1", 1, &[877.0, 880.0, 875.0, 879.0, 874.0])];
        let lines = compare(&base, &new, Rule::default());
        assert_eq!(lines[0].verdict, Verdict::Regression);
        assert_eq!(exit_status(&lines), 1);
        assert_eq!(
            robot_line(&lines[0]),
            "will-it-scale.per_process_ops -12.3% regression on open1 (uvfs seeds, processes, 1 task)"
        );
    }

    #[test]
    fn noise_exits_0() {
        // A 1.5 % drop inside a spread of about ±5 %.
        let base = [rec("dup1", 2, &[1000.0, 1050.0, 950.0, 1020.0, 980.0])];
        let new = [rec("dup1", 2, &[985.0, 1035.0, 935.0, 1005.0, 965.0])];
        let lines = compare(&base, &new, Rule::default());
        assert_eq!(lines[0].verdict, Verdict::Noise);
        assert_eq!(exit_status(&lines), 0);
    }

    #[test]
    fn floor_and_improvement() {
        // Perfectly steady runs: a 0.5 % drop is beyond 2 SE but under the
        // 1 % floor.
        let base = [rec("lseek1", 1, &[1000.0, 1000.0, 1000.0])];
        let new = [rec("lseek1", 1, &[995.0, 995.0, 995.0])];
        assert_eq!(
            compare(&base, &new, Rule::default())[0].verdict,
            Verdict::Noise
        );
        let new = [rec("lseek1", 1, &[1100.0, 1101.0, 1099.0])];
        let lines = compare(&base, &new, Rule::default());
        assert_eq!(lines[0].verdict, Verdict::Improvement);
        assert_eq!(exit_status(&lines), 0);
        assert!(
            robot_line(&lines[0]).starts_with("will-it-scale.per_process_ops +10.0% improvement")
        );
    }

    #[test]
    fn single_samples_are_unknown_not_regressions() {
        let base = [rec("open1", 1, &[1000.0])];
        let new = [rec("open1", 1, &[500.0])];
        let lines = compare(&base, &new, Rule::default());
        assert_eq!(lines[0].verdict, Verdict::Unknown);
        assert_eq!(exit_status(&lines), 0);
    }

    /// A key twice in one file (the host's open1 of two sections of a
    /// report): each pairs with its own, in order, so a file compared with
    /// itself shows no change.
    #[test]
    fn repeated_keys_pair_in_order() {
        let base = [
            rec("open1", 1, &[1000.0, 1001.0, 999.0]),
            rec("open1", 1, &[500.0, 501.0, 499.0]),
        ];
        let lines = compare(&base, &base, Rule::default());
        let verdicts: Vec<Verdict> = lines.iter().map(|l| l.verdict).collect();
        assert_eq!(verdicts, [Verdict::Noise, Verdict::Noise]);
        assert!(lines.iter().all(|l| l.change_pct == 0.0));
        // One more in NEW than in BASE: the extra one is new.
        let new = [base[0].clone(), base[1].clone(), base[1].clone()];
        let lines = compare(&base, &new, Rule::default());
        let verdicts: Vec<Verdict> = lines.iter().map(|l| l.verdict).collect();
        assert_eq!(verdicts, [Verdict::Noise, Verdict::Noise, Verdict::New]);
    }

    #[test]
    fn missing_and_new_records() {
        let base = [
            rec("open1", 1, &[1000.0, 1001.0]),
            rec("open1", 2, &[2000.0, 2001.0]),
        ];
        let mut threads = rec("open1", 1, &[1000.0, 1001.0]);
        threads.mode = "threads".into();
        let new = [rec("open1", 1, &[1000.5, 1000.0]), threads];
        let lines = compare(&base, &new, Rule::default());
        let verdicts: Vec<Verdict> = lines.iter().map(|l| l.verdict).collect();
        assert_eq!(verdicts, [Verdict::Noise, Verdict::Missing, Verdict::New]);
        assert_eq!(exit_status(&lines), 0);
        let mut out = Vec::new();
        print(&mut out, &lines, Rule::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("missing in NEW") && text.contains("only in NEW"),
            "{text}"
        );
    }

    #[test]
    fn threads_use_per_thread_ops_and_fastpaths_must_match() {
        let mut b = rec("dup1", 2, &[1000.0, 1002.0, 998.0]);
        b.mode = "threads".into();
        b.backend = "host".into();
        b.fastpaths = "-".into();
        let mut n = b.clone();
        n.samples = vec![800.0, 802.0, 798.0];
        let lines = compare(
            std::slice::from_ref(&b),
            std::slice::from_ref(&n),
            Rule::default(),
        );
        assert_eq!(
            robot_line(&lines[0]),
            "will-it-scale.per_thread_ops -20.0% regression on dup1 (host, threads, 2 tasks)"
        );
        n.fastpaths = "stock".into();
        let lines = compare(&[b], &[n], Rule::default());
        assert_eq!(lines.len(), 2);
        assert_eq!(exit_status(&lines), 0);
    }
}
