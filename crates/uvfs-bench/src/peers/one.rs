//! `peers-loop ROW SECS`: one row of the peers lab on one system, repeated
//! for about SECS seconds, for `perf record` and `perf stat` (a profile of
//! the whole lab mixes ten rows). The directory rows fill and empty the
//! directory as the lab does; the row's own passes are timed, the others'
//! are not (a profile still shows them: filter by caller).

use super::{
    BIG, FILE, IoBuf, MISSING, ROWS, Row, SCRATCH, System, big_name, make_with, setup, teardown,
};
use std::path::Path;
use std::time::Instant;

/// The row named `key` (as in peers.json).
pub fn row_from_key(key: &str) -> Result<Row, String> {
    ROWS.into_iter().find(|r| r.key() == key).ok_or_else(|| {
        let all: Vec<&str> = ROWS.iter().map(|r| r.key()).collect();
        format!("unknown row {key:?}: one of {}", all.join(", "))
    })
}

/// What [`run`] measured.
#[derive(Clone, Copy, Debug)]
pub struct Looped {
    /// The row's operations per second by the wall clock.
    pub wall: f64,
    /// The same per second of this thread's CPU time (which a busy
    /// machine's time slicing does not stretch).
    pub cpu: f64,
    /// The fast paths the system ran with, as its VFS reported them
    /// (uvfs only).
    pub fast: Option<uvfs::FastPaths>,
}

/// Runs `row` on `system` for about `secs` seconds (the directory rows
/// with `files` files; uvfs with the fast paths `fast`, which only uvfs
/// may be given); the row's operations per second over its timed passes.
pub fn run(
    system: System,
    row: Row,
    secs: f64,
    files: usize,
    host_parent: &Path,
    fast: Option<uvfs::FastPaths>,
) -> Result<Looped, String> {
    if files == 0 || files > super::MAX_FILES {
        return Err(format!(
            "--files must be 1..={}, not {files}",
            super::MAX_FILES
        ));
    }
    if fast.is_some() && system != System::Uvfs {
        return Err(format!(
            "--fastpaths applies to uvfs only, not {}",
            system.key()
        ));
    }
    let mut p = make_with(system, host_parent, fast.unwrap_or_default())?;
    let fast = p.fast_paths();
    setup(&mut *p)?;
    let names: Vec<String> = (0..files).map(big_name).collect();
    let mut buf = IoBuf::new(0);
    let mut data = IoBuf::new(9);
    if matches!(row, Row::Pread | Row::Pwrite) {
        p.io_open(FILE)?;
    }
    let t0 = Instant::now();
    let (mut ops, mut timed, mut cpu) = (0u64, 0f64, 0f64);
    while t0.elapsed().as_secs_f64() < secs {
        let dir = matches!(
            row,
            Row::DirCreate | Row::DirList | Row::DirStat | Row::DirUnlink
        );
        if dir {
            let (t, c) = (Instant::now(), thread_cpu());
            for n in &names {
                p.create(n)?;
            }
            if row == Row::DirCreate {
                timed += t.elapsed().as_secs_f64();
                cpu += thread_cpu() - c;
                ops += files as u64;
            }
        }
        let (t, c) = (Instant::now(), thread_cpu());
        let n: u64 = match row {
            Row::OpenClose => batch(|| p.open_close(FILE))?,
            Row::OpenMissing => batch(|| p.open_missing(MISSING))?,
            Row::Stat => batch(|| p.stat(FILE).map(drop))?,
            Row::CreateUnlink => batch(|| {
                p.create(SCRATCH)?;
                p.unlink(SCRATCH)
            })?,
            Row::Pread => batch(|| p.pread(buf.next_mut()).map(drop))?,
            Row::Pwrite => batch(|| p.pwrite(data.next()).map(drop))?,
            Row::DirList => (0..8).try_fold(0, |a, _| p.list(BIG).map(|n| a + n as u64))?,
            Row::DirStat => {
                for _ in 0..1 {
                    for n in &names {
                        p.stat(n)?;
                    }
                }
                files as u64
            }
            Row::DirCreate | Row::DirUnlink => 0,
        };
        if !matches!(row, Row::DirCreate | Row::DirUnlink) {
            timed += t.elapsed().as_secs_f64();
            cpu += thread_cpu() - c;
            ops += n;
        }
        if dir {
            let (t, c) = (Instant::now(), thread_cpu());
            for n in &names {
                p.unlink(n)?;
            }
            if row == Row::DirUnlink {
                timed += t.elapsed().as_secs_f64();
                cpu += thread_cpu() - c;
                ops += files as u64;
            }
        }
    }
    p.io_close();
    teardown(&mut *p)?;
    Ok(Looped {
        wall: ops as f64 / timed.max(1e-9),
        cpu: ops as f64 / cpu.max(1e-9),
        fast,
    })
}

/// This thread's CPU time in seconds.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec this call fills.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// 1,024 calls of `op`.
fn batch(mut op: impl FnMut() -> Result<(), String>) -> Result<u64, String> {
    for _ in 0..1024 {
        op()?;
    }
    Ok(1024)
}
