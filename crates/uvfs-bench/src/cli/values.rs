//! The command line's value checks: clap's value parsers for counts,
//! seconds and fast paths, and the checks of an output file or directory
//! made before any work is done.

use super::*;

/// A count of at least 1.
pub(super) fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("expected a whole number: {e}")),
    }
}

/// A `run` task count: 1 to [`RUN_MAX_TASKS`].
pub(super) fn run_tasks(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=RUN_MAX_TASKS).contains(&n) => Ok(n),
        Ok(_) => Err(format!(
            "must be from 1 to {RUN_MAX_TASKS}: each task is a forked process or an OS thread, \
             all set up before the first sample; far past the CPU count a run measures only \
             the scheduler, and process and open-file limits refuse such counts"
        )),
        Err(e) => Err(format!("expected a whole number: {e}")),
    }
}

/// `preload --iterations`: 1 to [`PRELOAD_MAX_ITERATIONS`].
pub(super) fn preload_iterations(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if (1..=PRELOAD_MAX_ITERATIONS).contains(&n) => Ok(n),
        Ok(_) => Err(format!(
            "must be from 1 to {PRELOAD_MAX_ITERATIONS} (a billion open/close pairs already \
             take minutes per measurement on the host)"
        )),
        Err(e) => Err(format!("expected a whole number: {e}")),
    }
}

/// `preload --repeats`: 1 to [`PRELOAD_MAX_REPEATS`].
pub(super) fn preload_repeats(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=PRELOAD_MAX_REPEATS).contains(&n) => Ok(n),
        Ok(_) => Err(format!("must be from 1 to {PRELOAD_MAX_REPEATS}")),
        Err(e) => Err(format!("expected a whole number: {e}")),
    }
}

/// Checks that `path` can be written later: its directory exists and it is
/// not itself a directory. Made before any work, so that a run is not lost
/// to a typo.
pub fn check_output_file(opt: &str, path: &std::path::Path) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("{opt} {}: is a directory", path.display()));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if !parent.is_dir() {
        return Err(format!(
            "{opt} {}: no directory {} to write it in",
            path.display(),
            parent.display()
        ));
    }
    Ok(())
}

/// Checks that `dir` is a directory or can be made: its nearest existing
/// ancestor is a directory. Made before any work.
pub fn check_output_dir(opt: &str, dir: &std::path::Path) -> Result<(), String> {
    let mut d = dir;
    loop {
        if d.exists() {
            return if d.is_dir() {
                Ok(())
            } else {
                Err(format!(
                    "{opt} {}: {} is not a directory",
                    dir.display(),
                    d.display()
                ))
            };
        }
        match d.parent() {
            Some(p) if !p.as_os_str().is_empty() => d = p,
            _ => return Ok(()),
        }
    }
}

/// A soak's task count: 1 to [`crate::soak::MAX_TASKS`].
pub(super) fn soak_tasks(s: &str) -> Result<usize, String> {
    let max = crate::soak::MAX_TASKS;
    match s.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        Ok(_) => Err(format!(
            "must be from 1 to {max} (each task is an OS thread)"
        )),
        Err(e) => Err(format!("expected a whole number: {e}")),
    }
}

/// A finite number of seconds (or %) > 0.
pub(super) fn finite_positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(v) => Err(format!("must be a finite number > 0, not {v}")),
        Err(e) => Err(format!("expected a number: {e}")),
    }
}

/// A finite number >= 0.
pub(super) fn finite_non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) => Err(format!("must be a finite number >= 0, not {v}")),
        Err(e) => Err(format!("expected a number: {e}")),
    }
}

/// A count of at least 1 (u64).
pub(super) fn at_least_one_u64(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("expected a whole number: {e}")),
    }
}

/// A timeout in seconds.
pub(super) fn ttl(secs: f64) -> Result<std::time::Duration, String> {
    std::time::Duration::try_from_secs_f64(secs).map_err(|e| format!("bad timeout {secs}: {e}"))
}

pub(super) fn parse_fastpaths(s: &str) -> Result<FastPaths, String> {
    FastPaths::parse(s).map_err(|_| {
        let names: Vec<&str> = FastPaths::switches().map(|(n, _)| n).collect();
        format!(
            "expected seeds, stock or SWITCH=on|off items; switches: {}",
            names.join(", ")
        )
    })
}
