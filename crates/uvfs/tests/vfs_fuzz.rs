//! Fuzzing the syscall API on stable, with a plain driver.
//!
//! The target (`support/fuzz.rs`) decodes arbitrary bytes into calls across two
//! or three processes of one small VFS and checks invariants after each call
//! and at the end (see there). This driver:
//! 1. replays every file of `tests/fuzz-corpus/` (under both presets);
//! 2. generates `UVFS_FUZZ_RUNS` inputs (default 30000: a count, so that
//!    a loaded machine runs the same inputs, only slower) with a seeded
//!    xorshift — fresh random strings, and mutations (byte flips,
//!    splices, truncations, appends) of corpus entries and of inputs that
//!    reached a new (call, errno) pair — and runs them, alternating presets.
//!
//! A failure (panic or broken invariant) prints the input as hex and writes
//! it to `target/fuzz-failures/` (or `$CARGO_TARGET_DIR/fuzz-failures/`).
//!
//! - `UVFS_FUZZ_RUNS=n`: more (or fewer) inputs; `UVFS_FUZZ_SECS=600`: a
//!   run of that many seconds instead.
//! - `UVFS_FUZZ_SEED=n`: the generator's seed (printed at the start), to
//!   replay a run; with the same seed and as many runs, the same inputs
//!   come in the same order.
//! - `UVFS_FUZZ_INPUT=path`: replay one input file only.
//! - `UVFS_FUZZ_SAVE=dir`: write every input that reached a new (call,
//!   errno) pair to `dir` (how the committed corpus was made).

mod support;

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::fuzz::{Fuzz, Trace};
use support::rng::Rng;
use uvfs::FastPaths;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus")
}

fn failure_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d).join("fuzz-failures"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-failures"),
    }
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Runs one input; on failure reports it and panics.
fn run_one(data: &[u8], fast: bool, origin: &str) -> Trace {
    let preset = if fast {
        FastPaths::seeds()
    } else {
        FastPaths::stock()
    };
    let r = catch_unwind(AssertUnwindSafe(|| Fuzz::new(preset).run(data)));
    let msg = match r {
        Ok(Ok(t)) => return t,
        Ok(Err(e)) => e,
        Err(p) => {
            let s = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic".into());
            format!("panic: {s}")
        }
    };
    let dir = failure_dir();
    let file = dir.join(format!("{:016x}.bin", fnv(data)));
    let saved = std::fs::create_dir_all(&dir)
        .and_then(|_| std::fs::write(&file, data))
        .map(|_| file.display().to_string())
        .unwrap_or_else(|e| format!("(not saved: {e})"));
    panic!(
        "fuzz failure ({origin}, {}): {msg}\n  input saved to {saved}\n  replay: UVFS_FUZZ_INPUT={saved} cargo test --release -p uvfs --test vfs_fuzz\n  input hex: {}",
        if fast { "seeds" } else { "stock" },
        hex(data)
    );
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(corpus_dir())
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read(e.path()).unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn mutate(rng: &mut Rng, base: &[u8], pool: &[Vec<u8>]) -> Vec<u8> {
    let mut d = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(6) {
            0 if !d.is_empty() => {
                let k = rng.below(d.len());
                d[k] ^= 1 << rng.below(8);
            }
            1 if !d.is_empty() => {
                let k = rng.below(d.len());
                d[k] = rng.next() as u8;
            }
            2 if !d.is_empty() => {
                let k = rng.below(d.len());
                d.truncate(k);
            }
            3 if !pool.is_empty() => {
                // Splice: our prefix, another input's suffix.
                let o = &pool[rng.below(pool.len())];
                let k = if d.is_empty() { 0 } else { rng.below(d.len()) };
                let j = if o.is_empty() { 0 } else { rng.below(o.len()) };
                d.truncate(k);
                d.extend_from_slice(&o[j..]);
            }
            _ => {
                for _ in 0..1 + rng.below(32) {
                    d.push(rng.next() as u8);
                }
            }
        }
    }
    d.truncate(4096);
    d
}

/// The checks catch what they are there for: a leaked reference fails the
/// run (and a panic inside a call is caught by `run_one`'s `catch_unwind`).
#[test]
fn the_end_checks_catch_a_leak() {
    let input = corpus()
        .into_iter()
        .next()
        .map(|(_, d)| d)
        .unwrap_or_default();
    let mut f = Fuzz::new(FastPaths::seeds());
    let hidden = f.leak_a_process();
    let e = f
        .run(&input)
        .err()
        .expect("a leaked cwd reference is reported");
    assert!(e.contains("check_consistency"), "{e}");
    drop(hidden);
}

type Outcomes = BTreeSet<(u8, i32)>;

/// `UVFS_FUZZ_CMIN=dir`: picks from `dir` a small set of inputs reaching
/// every (call, outcome) pair any of them reaches (greedy set cover) and
/// writes it to the corpus directory.
fn cmin(dir: &Path) {
    let mut all: Vec<(Vec<u8>, Outcomes)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| {
            let d = std::fs::read(e.path()).unwrap();
            let mut s = run_one(&d, true, "cmin").seen;
            s.extend(run_one(&d, false, "cmin").seen);
            (d, s)
        })
        .collect();
    let mut covered: BTreeSet<(u8, i32)> = BTreeSet::new();
    let out = corpus_dir();
    std::fs::create_dir_all(&out).unwrap();
    let mut n = 0;
    loop {
        all.sort_by_key(|(d, s)| (std::cmp::Reverse(s.difference(&covered).count()), d.len()));
        match all.first() {
            Some((d, s)) if s.difference(&covered).count() > 0 => {
                covered.extend(s.iter().copied());
                std::fs::write(out.join(format!("{:016x}", fnv(d))), d).unwrap();
                n += 1;
            }
            _ => break,
        }
    }
    eprintln!("cmin: {n} inputs cover {} outcomes", covered.len());
}

#[test]
fn fuzz_api() {
    if let Some(d) = std::env::var_os("UVFS_FUZZ_CMIN") {
        cmin(Path::new(&d));
        return;
    }
    if let Some(f) = std::env::var_os("UVFS_FUZZ_INPUT") {
        let data = std::fs::read(&f).expect("UVFS_FUZZ_INPUT readable");
        for fast in [true, false] {
            let t = run_one(&data, fast, "UVFS_FUZZ_INPUT");
            eprintln!("replayed: {} calls, {} outcomes", t.calls, t.seen.len());
        }
        return;
    }
    let mut seen: BTreeSet<(u8, i32)> = BTreeSet::new();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let corpus = corpus();
    let t0 = Instant::now();
    for (name, data) in &corpus {
        for fast in [true, false] {
            seen.extend(run_one(data, fast, &format!("corpus {name}")).seen);
        }
        pool.push(data.clone());
    }
    eprintln!(
        "corpus: {} inputs replayed in {:.1?}, {} outcomes",
        corpus.len(),
        t0.elapsed(),
        seen.len()
    );

    let secs: Option<f64> = std::env::var("UVFS_FUZZ_SECS")
        .ok()
        .map(|s| s.parse().expect("UVFS_FUZZ_SECS: seconds"));
    let max_runs: u64 = std::env::var("UVFS_FUZZ_RUNS")
        .ok()
        .map_or(30_000, |s| s.parse().expect("UVFS_FUZZ_RUNS: a count"));
    let seed: u64 = std::env::var("UVFS_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    let save = std::env::var_os("UVFS_FUZZ_SAVE").map(PathBuf::from);
    let budget = secs.map_or(format!("{max_runs} inputs"), |s| format!("{s} s"));
    eprintln!("fuzz: seed {seed} (UVFS_FUZZ_SEED={seed} replays), {budget}");
    let mut rng = Rng::new(seed);
    let until = secs.map(|s| Instant::now() + Duration::from_secs_f64(s));
    let mut runs = 0u64;
    let t1 = Instant::now();
    while until.map_or(runs < max_runs, |u| Instant::now() < u) {
        runs += 1;
        let data = if pool.is_empty() || rng.chance(30) {
            let max = if rng.chance(20) { 2048 } else { 256 };
            let n = 1 + rng.below(max);
            (0..n).map(|_| rng.next() as u8).collect()
        } else {
            let base = pool[rng.below(pool.len())].clone();
            mutate(&mut rng, &base, &pool)
        };
        let t = run_one(
            &data,
            runs.is_multiple_of(2),
            &format!("seed {seed}, run {runs}"),
        );
        let new = t.seen.difference(&seen).count();
        if new > 0 {
            seen.extend(t.seen);
            if let Some(dir) = &save {
                std::fs::create_dir_all(dir).unwrap();
                std::fs::write(dir.join(format!("{:016x}", fnv(&data))), &data).unwrap();
            }
            pool.push(data);
        }
    }
    eprintln!(
        "fuzz: {runs} inputs in {:.1?}, {} (call, outcome) pairs, {} inputs in the pool",
        t1.elapsed(),
        seen.len(),
        pool.len()
    );
    if std::env::var_os("UVFS_FUZZ_VERBOSE").is_some() {
        for op in 0..=u8::MAX {
            let outs: Vec<String> = seen
                .iter()
                .filter(|(o, _)| *o == op)
                .map(|&(_, e)| uvfs::Errno::from_raw(e).name().unwrap_or("ok").to_string())
                .collect();
            if !outs.is_empty() {
                eprintln!("call {op}: {}", outs.join(" "));
            }
        }
    }
}
