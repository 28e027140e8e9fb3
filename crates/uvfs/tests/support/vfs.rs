//! Tiny VFSs and processes: run a body under both fast-path settings (or
//! under every combination), read and write whole files, list directories.

use std::sync::Arc;
use uvfs::cred::Cred;
use uvfs::stat::parse_dirents64;
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Vfs};

/// The two fast-path settings every test runs under.
pub fn fasts() -> [FastPaths; 2] {
    [FastPaths::seeds(), FastPaths::stock()]
}

/// Runs `body` under every fast-path combination (the combination is
/// printed, so a failure names it).
pub fn each_combination(mut body: impl FnMut(FastPaths)) {
    for fast in FastPaths::all_combinations() {
        eprintln!("-- fast paths: {fast}");
        body(fast);
    }
}

/// Runs `f` on a fresh VFS and root process, once per fast-path setting.
pub fn each(mut f: impl FnMut(&Arc<Vfs>, &mut Process)) {
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        f(&vfs, &mut p);
    }
}

/// The error of `r`, panicking on success.
#[track_caller]
pub fn err<T: std::fmt::Debug>(r: Result<T, Errno>) -> Errno {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e,
    }
}

/// Creates (or truncates) `path` with `data`, mode 0644.
#[track_caller]
pub fn put(p: &mut Process, path: &str, data: &[u8]) {
    let fd = p.open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644).unwrap();
    assert_eq!(p.write(fd, data).unwrap(), data.len());
    p.close(fd).unwrap();
}

/// Everything from `fd`'s position to its end.
#[track_caller]
pub fn read_to_end(p: &mut Process, fd: i32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = p.read(fd, &mut buf).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// The contents of `path`.
#[track_caller]
pub fn get(p: &mut Process, path: &str) -> Vec<u8> {
    let fd = p.open(path, O_RDONLY, 0).unwrap();
    let v = read_to_end(p, fd);
    p.close(fd).unwrap();
    v
}

/// The names in directory `path`, `.` and `..` left out, sorted.
#[track_caller]
pub fn names(p: &mut Process, path: &str) -> Vec<String> {
    let fd = p.open(path, O_RDONLY | O_DIRECTORY, 0).unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        let n = p.getdents64(fd, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        for d in parse_dirents64(&buf[..n]) {
            if d.name != b"." && d.name != b".." {
                out.push(String::from_utf8(d.name).unwrap());
            }
        }
    }
    p.close(fd).unwrap();
    out.sort();
    out
}

/// An unprivileged user: every id `uid`/`gid`, no supplementary groups.
pub fn user(uid: u32, gid: u32) -> Cred {
    Cred::user(uid, gid, Vec::new())
}

/// A (sec, nsec) pair of a timestamp field pair, for comparisons.
pub type Ts = (i64, i64);

/// The (atime, mtime, ctime) of a stat.
pub fn amc(st: &uvfs::Stat) -> [Ts; 3] {
    [
        (st.st_atime, st.st_atime_nsec),
        (st.st_mtime, st.st_mtime_nsec),
        (st.st_ctime, st.st_ctime_nsec),
    ]
}

/// Which of atime/mtime/ctime differ between two stats, as "amc" letters
/// ("-" for none): the notation of the host checks in the comments.
pub fn changed(before: &uvfs::Stat, after: &uvfs::Stat) -> String {
    let s: String = amc(before)
        .iter()
        .zip(amc(after).iter())
        .zip("amc".chars())
        .filter(|((a, b), _)| a != b)
        .map(|(_, c)| c)
        .collect();
    if s.is_empty() { "-".into() } else { s }
}

/// Waits until the coarse clock (what tmpfs stamps with, as Linux's
/// multigrain timestamps do) has moved past every stamp made so far, so
/// that a change is visible; a wait on the clock, never a timing
/// assertion.
pub fn tick() {
    use uvfs::fs::timekeeping::{coarse_mg, fine_mg};
    let t = fine_mg();
    while coarse_mg() <= t {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
