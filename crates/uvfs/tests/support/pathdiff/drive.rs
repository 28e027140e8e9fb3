//! Driving: one seed or one op list on the host and on uvfs, coverage,
//! the minimizer, the fixed findings.

use super::*;

pub static RUN: AtomicU64 = AtomicU64::new(0);

pub fn top_for_run() -> Vec<u8> {
    let n = RUN.fetch_add(1, Ordering::Relaxed);
    format!("{SHM}/uvfs-diff-{}-{n}", std::process::id()).into_bytes()
}

/// Runs one seed on the host and on uvfs (both presets); the report of the
/// first mismatch, if any.
pub fn check_seed(seed: u64, nops: usize, verbose: bool) -> Option<String> {
    check_seed_counting(seed, nops, verbose, &mut Coverage::new())
}

/// How often each (call, host result) pair occurred: `"open Err(ELOOP)"`.
pub type Coverage = HashMap<String, usize>;

pub fn count(cov: &mut Coverage, ops: &[Op], host: &Log) {
    for (op, o) in ops.iter().zip(&host.obs) {
        let name = op.to_string();
        let name = name.split('(').next().unwrap_or("");
        let res = match &o.res {
            Ok(_) => "Ok".to_string(),
            Err(e) => format!("Err({})", errno_name(*e)),
        };
        *cov.entry(format!("{name} {res}")).or_default() += 1;
    }
}

pub fn check_seed_counting(
    seed: u64,
    nops: usize,
    verbose: bool,
    cov: &mut Coverage,
) -> Option<String> {
    check_job(HostJob::Generate(seed, nops), seed, verbose, cov)
}

/// Runs the ops a fuzzer's bytes generate (at most `nops`) on the host and
/// on uvfs (both presets); the report of the first mismatch, if any. The
/// coverage-guided target `fuzz/fuzz_targets/path_differential.rs` calls
/// it for every input.
pub fn check_bytes(data: &[u8], nops: usize) -> Option<String> {
    check_job(
        HostJob::Bytes(data.to_vec(), nops),
        0,
        false,
        &mut Coverage::new(),
    )
}

/// [`check_seed_counting`] with the sequence run as `who` on both sides.
pub fn check_seed_as(
    seed: u64,
    nops: usize,
    who: Who,
    verbose: bool,
    cov: &mut Coverage,
) -> Option<String> {
    check_job_as(HostJob::Generate(seed, nops), seed, who, verbose, cov)
}

fn check_job(job: HostJob, seed: u64, verbose: bool, cov: &mut Coverage) -> Option<String> {
    check_job_as(job, seed, Who::Root, verbose, cov)
}

fn check_job_as(
    job: HostJob,
    seed: u64,
    who: Who,
    verbose: bool,
    cov: &mut Coverage,
) -> Option<String> {
    let top = top_for_run();
    let (ops, host, sandbox) = host_run_in_thread_as(job, top.clone(), who);
    count(cov, &ops, &host);
    if verbose {
        eprintln!("seed {seed}: host sandbox {sandbox:?}");
        for (i, o) in host.obs.iter().enumerate() {
            match ops.get(i) {
                Some(op) => eprintln!("{i:5}: {op} => {}", show_res(&o.res)),
                None => eprintln!("       {}: {}", o.what, show_res(&o.res)),
            }
        }
    }
    for fast in [uvfs::FastPaths::seeds(), uvfs::FastPaths::stock()] {
        let u = uvfs_side::run_uvfs_as(fast, &ops, &top, &host.dump_root, who);
        let side = match who {
            Who::Root => fast.to_string(),
            Who::User => format!("{fast}, as user {USER_UID}"),
        };
        if let Some(report) = compare(seed, &side, &ops, &host, &u) {
            return Some(report);
        }
    }
    None
}

/// The first mismatch of `ops` (host replay in sandbox `top` against uvfs
/// with the seeds preset): its step, both results, and the report.
pub fn first_mismatch(ops: &[Op], top: &[u8]) -> Option<(usize, String, String)> {
    let (ops, host, _) = host_run_in_thread(HostJob::Replay(ops.to_vec()), top.to_vec());
    let u = uvfs_side::run_uvfs(uvfs::FastPaths::seeds(), &ops, top, &host.dump_root);
    let (i, report) = compare_at(0, "seeds", &ops, &host, &u)?;
    let res = |l: &Log| l.obs.get(i).map_or(String::new(), |o| show_res(&o.res));
    // A dump step is named by what it looked at, an op step by its op.
    let what = host.obs.get(i).map_or("", |o| o.what.as_str());
    Some((i, format!("{what} {} / {}", res(&host), res(&u)), report))
}

/// Shrinks a failing op list (cut after its first mismatching op) to a
/// short one whose last op still mismatches: removes chunks of ops, halving
/// the chunk size down to single ops. Opens are replaced by an open that
/// fails (`open("", 0)`) so later fd indexes keep their meaning.
pub fn minimize(ops: &[Op], top: &[u8]) -> Vec<Op> {
    minimize_with(ops, |o| first_mismatch(o, top))
}

/// [`minimize`] with another judge of the first mismatch (another pair of
/// sides: the mount's test, a user's pass).
pub fn minimize_with(
    ops: &[Op],
    first_mismatch: impl Fn(&[Op]) -> Option<(usize, String, String)>,
) -> Vec<Op> {
    let Some((i, want, _)) = first_mismatch(ops) else {
        return ops.to_vec();
    };
    // Results with times differ on every run: match on the op and errno
    // shape only for those.
    let shape = |r: &str| {
        if r.contains("Ok({ino") {
            r.split(" Ok(").next().unwrap_or("").to_string() + "stat"
        } else {
            r.to_string()
        }
    };
    let want = shape(&want);
    // A dump mismatch keeps every op; otherwise the ops up to the mismatch.
    let dump = i >= ops.len();
    let mut cur: Vec<Option<Op>> = ops[..=i.min(ops.len() - 1)]
        .iter()
        .cloned()
        .map(Some)
        .collect();
    let flat = |v: &[Option<Op>]| -> Vec<Op> { v.iter().flatten().cloned().collect() };
    let still = |v: &[Option<Op>]| {
        let f = flat(v);
        matches!(first_mismatch(&f),
            Some((j, r, _)) if (if dump { j >= f.len() } else { j + 1 == f.len() }) && shape(&r) == want)
    };
    let mut chunk = cur.len().div_ceil(2);
    // The last op (the mismatching one) stays, unless the mismatch is in
    // the dump.
    let keep_last = usize::from(!dump);
    while chunk >= 1 {
        let mut start = 0;
        while start + keep_last < cur.len() {
            let end = (start + chunk).min(cur.len() - keep_last);
            let mut trial = cur.clone();
            let mut changed = false;
            for slot in &mut trial[start..end] {
                let placeholder = |op: &Op| matches!(op, Op::Open(p, 0, 0) if p.is_empty());
                match slot.as_ref() {
                    Some(op) if placeholder(op) => {}
                    Some(op) if opens(op) => {
                        *slot = Some(Op::Open(Vec::new(), 0, 0));
                        changed = true;
                    }
                    Some(_) => {
                        *slot = None;
                        changed = true;
                    }
                    None => {}
                }
            }
            if changed && still(&trial) {
                cur = trial;
            }
            start = end;
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    compact(&flat(&cur))
}

/// Drops the failing placeholder opens of [`minimize`] and renumbers the fd
/// indexes after them (a reference to a placeholder becomes a closed index).
pub fn compact(ops: &[Op]) -> Vec<Op> {
    let placeholder = |op: &Op| matches!(op, Op::Open(p, 0, 0) if p.is_empty());
    let mut map = Vec::new(); // old index -> new index
    let mut next = 0;
    for op in ops.iter().filter(|op| opens(op)) {
        map.push(if placeholder(op) { None } else { Some(next) });
        if !placeholder(op) {
            next += 1;
        }
    }
    let fix = |fd: Fd| match fd {
        Fd::Idx(i) => match map.get(i).copied().flatten() {
            Some(j) => Fd::Idx(j),
            None => Fd::Bad(CLOSED_FD),
        },
        other => other,
    };
    ops.iter()
        .filter(|op| !placeholder(op))
        .map(|op| {
            let mut op = op.clone();
            match &mut op {
                Op::Openat(d, ..)
                | Op::Close(d)
                | Op::Read(d, _)
                | Op::Write(d, _)
                | Op::Pread(d, ..)
                | Op::Pwrite(d, ..)
                | Op::Readv(d, _)
                | Op::Writev(d, _)
                | Op::Lseek(d, ..)
                | Op::Fstat(d)
                | Op::Fstatat(d, ..)
                | Op::Statx(d, ..)
                | Op::Ftruncate(d, _)
                | Op::Fallocate(d, ..)
                | Op::Mkdirat(d, ..)
                | Op::Unlinkat(d, ..)
                | Op::Symlinkat(_, d, _)
                | Op::Readlinkat(d, ..)
                | Op::Getdents(d, _)
                | Op::Fchdir(d)
                | Op::Fchmod(d, _)
                | Op::Fchmodat(d, ..)
                | Op::Fchown(d, ..)
                | Op::Fchownat(d, ..)
                | Op::Faccessat(d, ..)
                | Op::Utimensat(d, ..)
                | Op::Futimens(d, _)
                | Op::Fsync(d)
                | Op::Fdatasync(d) => *d = fix(*d),
                Op::Renameat(d, _, e, _)
                | Op::Renameat2(d, _, e, _, _)
                | Op::Linkat(d, _, e, _, _) => {
                    *d = fix(*d);
                    *e = fix(*e);
                }
                _ => {}
            }
            op
        })
        .collect()
}

/// `UVFS_DIFF_KNOWN=1`: generate the cases of known mismatches too.
pub fn known_enabled() -> bool {
    std::env::var_os("UVFS_DIFF_KNOWN").is_some()
}

/// Replays `ops` on the host and on uvfs (both presets); the report of the
/// first mismatch, if any.
pub fn check_ops(name: &str, ops: Vec<Op>) -> Option<String> {
    let top = top_for_run();
    let (ops, host, _) = host_run_in_thread(HostJob::Replay(ops), top.clone());
    for fast in [uvfs::FastPaths::seeds(), uvfs::FastPaths::stock()] {
        let u = uvfs_side::run_uvfs(fast, &ops, &top, &host.dump_root);
        if let Some(report) = compare(0, &fast.to_string(), &ops, &host, &u) {
            return Some(format!("{name}:\n{report}"));
        }
    }
    None
}

/// The findings of `known_cases` (`path_findings_differential.rs`) fixed on
/// main since (they stay as regression tests, and the generator produces
/// their cases again).
pub const FIXED: &[&str] = &[
    "finding 1:",
    "finding 2:",
    "finding 4:",
    "finding 5:",
    "finding 6:",
    "finding 7:",
    "finding 8:",
    "finding 9:",
    "finding 10:",
    "finding 11:",
    "finding 12:",
    "finding 13:",
    "finding 14:",
    "finding 15:",
    "finding 16:",
    "finding 18:",
    "finding 19:",
    "finding 20:",
    "finding 21:",
    "finding 22:",
    "finding 23:",
    "finding 24a:",
    "finding 24b:",
    "finding 24c:",
    "finding 25:",
    "finding 26:",
    "finding 27:",
    "finding 29:",
    "finding 30:",
    "finding 31:",
    "finding 32:",
    "finding 28:",
    // Fixed by the lead after the harness's last merge.
    "finding 3:",
    "finding 5b:",
    "finding 17:",
    "finding 24:",
    "finding 24d:",
];

pub fn is_fixed(name: &str) -> bool {
    FIXED.iter().any(|f| name.starts_with(f))
}

pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}: not a number: {v}"))
    })
}
