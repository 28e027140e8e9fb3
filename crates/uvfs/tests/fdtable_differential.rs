//! Differential test of the fd-table calls against the host kernel.
//!
//! One seeded operation sequence (open, failing open, close, dup, dup2, dup3,
//! fcntl F_DUPFD/F_DUPFD_CLOEXEC/F_GETFD/F_SETFD/F_GETFL/F_SETFL,
//! close_range, setrlimit(RLIMIT_NOFILE) soft changes) runs on real Linux fds
//! and on uvfs (both presets); every return value and errno must agree, and
//! so must the final F_GETFD/F_GETFL of every open fd.
//!
//! The host side runs in a fresh child process: the parent test re-executes
//! this test binary with `--exact host_child`, and `UVFS_DIFF_CHILD=<seed>`
//! tells that test to run the sequence. The child first moves its result file
//! to fd 1000 (and its stderr to fd 1001, for panics), points 0/1/2 at
//! `/dev/null` (O_RDONLY, O_WRONLY, O_WRONLY; the uvfs side pre-opens three
//! files with the same flags), closes every other fd, and sets RLIMIT_NOFILE
//! to (1024, H) like the uvfs side. Every fd argument and close_range bound
//! of the sequence stays below 1000, and F_DUPFD starts stay where the
//! lowest free fd cannot reach 1000, so fds 1000/1001 are never observable.
//!
//! Deliberate exclusions (documented differences, not bugs):
//! - F_SETFL never sets O_DIRECT or O_NOATIME: the host refuses O_DIRECT on
//!   /dev/null (EINVAL, the device has no direct I/O) and O_NOATIME depends
//!   on who owns /dev/null (EPERM unless owner or CAP_FOWNER); uvfs files
//!   have no inode to ask.
//! - open never uses O_DIRECT, O_NOATIME, O_DIRECTORY, O_EXCL or O_TMPFILE
//!   for the same reason: their result depends on the host inode, and the
//!   uvfs open closure stands for a file system that accepts the file.
//! - Unknown fcntl commands are 9999 and -1; commands newer kernels know but
//!   uvfs does not implement (F_DUPFD_QUERY, leases, …) are not sent.
#![cfg(target_os = "linux")]

mod support;
use std::ffi::CString;
use std::fmt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use support::host::TempDir;
use support::rng::Rng;
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Vfs};

const CHILD_ENV: &str = "UVFS_DIFF_CHILD";
const DIR_ENV: &str = "UVFS_DIFF_DIR";
const HARD_ENV: &str = "UVFS_DIFF_HARD";
const CHILD_TEST: &str = "host_child";
const RESULT_FD: i32 = 1000;
const DIAG_FD: i32 = 1001;
/// The soft RLIMIT_NOFILE both sides start with (uvfs's default).
const START_SOFT: u64 = 1024;
const SEEDS: [u64; 8] = [
    1,
    2,
    3,
    0x5eed,
    0xdead_beef,
    0x0123_4567_89ab_cdef,
    42,
    7777,
];
const OPS_PER_SEED: usize = 700;
const INVALID_FDS: [i32; 4] = [-1, -100, 1_000_000, i32::MAX];

#[derive(Clone, Copy, Debug)]
enum Op {
    /// `open("/dev/null", flags)`; on uvfs an open that succeeds.
    Open(i32),
    /// An open of a missing path (ENOENT); on uvfs an open that fails.
    OpenMissing(i32),
    Close(i32),
    Dup(i32),
    Dup2(i32, i32),
    Dup3(i32, i32, i32),
    Fcntl(i32, i32, u64),
    CloseRange(u32, u32, u32),
    /// setrlimit(RLIMIT_NOFILE, {soft, H}).
    SetSoft(u64),
}

fn cmd_name(cmd: i32) -> String {
    match cmd {
        F_DUPFD => "F_DUPFD".into(),
        F_DUPFD_CLOEXEC => "F_DUPFD_CLOEXEC".into(),
        F_GETFD => "F_GETFD".into(),
        F_SETFD => "F_SETFD".into(),
        F_GETFL => "F_GETFL".into(),
        F_SETFL => "F_SETFL".into(),
        c => c.to_string(),
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Op::Open(fl) => write!(f, "open(\"/dev/null\", {fl:#o})"),
            Op::OpenMissing(fl) => write!(f, "open(missing, {fl:#o})"),
            Op::Close(fd) => write!(f, "close({fd})"),
            Op::Dup(fd) => write!(f, "dup({fd})"),
            Op::Dup2(a, b) => write!(f, "dup2({a}, {b})"),
            Op::Dup3(a, b, fl) => write!(f, "dup3({a}, {b}, {fl:#o})"),
            Op::Fcntl(fd, cmd, arg) => write!(f, "fcntl({fd}, {}, {arg:#x})", cmd_name(cmd)),
            Op::CloseRange(a, b, fl) => write!(f, "close_range({a}, {b}, {fl:#x})"),
            Op::SetSoft(s) => write!(f, "setrlimit(NOFILE, soft {s})"),
        }
    }
}

fn fmt_result(r: Result<i64, i32>) -> String {
    match r {
        Ok(n) => format!("Ok({n})"),
        Err(e) => format!("Err({:?})", Errno::from_raw(e)),
    }
}

// ---------------------------------------------------------------------------
// The uvfs side.
// ---------------------------------------------------------------------------

fn uvfs_exec(p: &mut Process, op: Op, hard: u64) -> Result<i64, i32> {
    let r = match op {
        Op::Open(flags) => p.open_with(flags, |_| Ok(())).map(i64::from),
        Op::OpenMissing(flags) => p.open_with(flags, |_| Err(Errno::ENOENT)).map(i64::from),
        Op::Close(fd) => p.close(fd).map(|()| 0),
        Op::Dup(fd) => p.dup(fd).map(i64::from),
        Op::Dup2(a, b) => p.dup2(a, b).map(i64::from),
        Op::Dup3(a, b, fl) => p.dup3(a, b, fl).map(i64::from),
        Op::Fcntl(fd, cmd, arg) => p.fcntl(fd, cmd, arg).map(i64::from),
        Op::CloseRange(a, b, fl) => p.close_range(a, b, fl).map(|()| 0),
        Op::SetSoft(s) => p.setrlimit_nofile(s, hard).map(|()| 0),
    };
    r.map_err(Errno::raw)
}

/// A uvfs process set up like the child: fds 0, 1, 2 open O_RDONLY,
/// O_WRONLY, O_WRONLY, RLIMIT_NOFILE (1024, hard).
fn uvfs_process(fast: FastPaths, hard: u64) -> Process {
    let vfs = Vfs::new(fast);
    let mut p = Process::new(&vfs).expect("Process::new");
    p.setrlimit_nofile(START_SOFT, hard)
        .expect("setrlimit on uvfs");
    for (want, flags) in [(0, O_RDONLY), (1, O_WRONLY), (2, O_WRONLY)] {
        assert_eq!(p.open_with(flags, |_| Ok(())), Ok(want));
    }
    p
}

/// The final state: F_GETFD and F_GETFL of every open fd below `limit`
/// (1000 and 1001 belong to the host child's plumbing and are skipped).
fn dump(limit: i32, mut fcntl: impl FnMut(i32, i32) -> Result<i64, i32>) -> Vec<String> {
    let mut out = Vec::new();
    for fd in (0..limit).filter(|&fd| fd != RESULT_FD && fd != DIAG_FD) {
        if let Ok(getfd) = fcntl(fd, F_GETFD) {
            let getfl = fcntl(fd, F_GETFL);
            out.push(format!(
                "fd {fd}: F_GETFD {getfd} F_GETFL {}",
                fmt_flags(getfl)
            ));
        }
    }
    out.push("END".into());
    out
}

fn fmt_flags(r: Result<i64, i32>) -> String {
    match r {
        Ok(n) => format!("Ok({:#o})", n as u32),
        Err(e) => fmt_result(Err(e)),
    }
}

fn dump_limit(hard: u64) -> i32 {
    hard.min(4096) as i32
}

fn uvfs_run(fast: FastPaths, ops: &[Op], hard: u64) -> Vec<String> {
    let mut p = uvfs_process(fast, hard);
    let mut log = Vec::with_capacity(ops.len() + 64);
    for (i, &op) in ops.iter().enumerate() {
        log.push(fmt_result(uvfs_exec(&mut p, op, hard)));
        if let Err(e) = p.fd_table().check_invariants() {
            panic!("{fast}: fd table invariant broken after op {i} `{op}`: {e}");
        }
        assert!(
            !uvfs::task_work::pending(),
            "{fast}: deferred releases left queued after op {i} `{op}`"
        );
    }
    log.extend(dump(dump_limit(hard), |fd, cmd| {
        p.fcntl(fd, cmd, 0).map(i64::from).map_err(Errno::raw)
    }));
    log
}

// ---------------------------------------------------------------------------
// The sequence generator. It steers its choices (which fds look open) by
// running the sequence on a private uvfs process as it goes; the sequence is
// a pure function of (seed, hard), so the child regenerates the same one.
// ---------------------------------------------------------------------------

struct Gen {
    rng: Rng,
    shadow: Process,
    hard: u64,
    soft: u64,
}

impl Gen {
    fn open_fds(&self) -> Vec<u32> {
        self.shadow.fd_table().open_fds()
    }

    /// An fd argument: mostly an open one, else anything in [0, 80), a few
    /// far ones (growth of the table), or an invalid one.
    fn fd(&mut self) -> i32 {
        let open = self.open_fds();
        let roll = self.rng.below_u64(100);
        if roll < 60 && !open.is_empty() {
            self.rng.pick(&open) as i32
        } else if roll < 88 {
            self.rng.below_u64(80) as i32
        } else if roll < 92 {
            self.rng
                .pick(&[100, 127, 128, 200, 255, 256, 511, 512, 999])
        } else {
            self.rng.pick(&INVALID_FDS)
        }
    }

    fn open_flags(&mut self, may_create: bool) -> i32 {
        let mut fl = self
            .rng
            .pick(&[O_RDONLY, O_RDONLY, O_WRONLY, O_RDWR, O_RDWR, O_ACCMODE]);
        for (bit, pct) in [
            (O_CLOEXEC, 35),
            (O_NONBLOCK, 20),
            (O_APPEND, 15),
            (O_NOCTTY, 10),
            (O_TRUNC, 5),
            (O_SYNC, 5),
            (O_DSYNC, 5),
            (O_ASYNC, 5),
            (O_NOFOLLOW, 5),
            (O_LARGEFILE, 5),
        ] {
            if self.rng.chance(pct) {
                fl |= bit;
            }
        }
        if may_create && self.rng.chance(5) {
            fl |= O_CREAT;
        }
        if self.rng.chance(6) {
            fl |= O_PATH;
        }
        if self.rng.chance(5) {
            // Bits open(2) does not know: silently ignored.
            fl |= self
                .rng
                .pick(&[0o40, 1 << 25, 1 << 26, 1 << 27, 1 << 30, i32::MIN]);
        }
        fl
    }

    fn fcntl(&mut self) -> Op {
        let fd = self.fd();
        let soft = self.soft;
        match self.rng.below_u64(12) {
            0..=2 => {
                let cmd = if self.rng.chance(50) {
                    F_DUPFD
                } else {
                    F_DUPFD_CLOEXEC
                };
                let arg = match self.rng.below_u64(10) {
                    0..=5 => self.rng.below_u64(80),
                    // Below 1000 by construction; 1023 can only reach 1024.
                    6 => soft.saturating_sub(1).min(1023),
                    7 => soft,
                    8 => self
                        .rng
                        .pick(&[soft + 1, 1_000_000, i32::MAX as u64, u64::MAX]),
                    // The kernel takes the start as an unsigned int.
                    _ => (1 << 32) | self.rng.below_u64(8),
                };
                Op::Fcntl(fd, cmd, arg)
            }
            3 | 4 => Op::Fcntl(fd, F_GETFD, 0),
            5 | 6 => {
                let arg = self.rng.pick(&[0, 1, 2, 3, 0xffff_fffe, u64::MAX, 1 << 32]);
                Op::Fcntl(fd, F_SETFD, arg)
            }
            7 | 8 => Op::Fcntl(fd, F_GETFL, 0),
            9 | 10 => {
                let mut arg = 0u64;
                for bit in [
                    O_APPEND, O_NONBLOCK, O_ASYNC, O_RDWR, O_WRONLY, O_SYNC, O_CLOEXEC, O_CREAT,
                    O_PATH,
                ] {
                    if self.rng.chance(30) {
                        arg |= bit as u64;
                    }
                }
                if self.rng.chance(10) {
                    arg |= 1 << 32 | 1 << 40;
                }
                Op::Fcntl(fd, F_SETFL, arg)
            }
            _ => Op::Fcntl(fd, self.rng.pick(&[9999, -1]), self.rng.below_u64(4)),
        }
    }

    fn close_range(&mut self) -> Op {
        let first = if self.rng.chance(50) {
            self.fd().clamp(0, 999) as u32
        } else {
            self.rng.below_u64(80) as u32
        };
        let last = match self.rng.below_u64(20) {
            0 => 999,
            1 if first > 0 => first - 1,
            2 => first,
            _ => (first + self.rng.below_u64(6) as u32).min(999),
        };
        let flags = match self.rng.below_u64(20) {
            0..=9 => 0,
            10..=15 => CLOSE_RANGE_CLOEXEC,
            16 => CLOSE_RANGE_UNSHARE,
            17 => CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC,
            _ => self.rng.pick(&[1, 8, 1 << 31, CLOSE_RANGE_CLOEXEC | 1]),
        };
        Op::CloseRange(first, last, flags)
    }

    fn op(&mut self) -> Op {
        let op = match self.rng.below_u64(100) {
            0..=19 => Op::Open(self.open_flags(true)),
            20..=23 => Op::OpenMissing(self.open_flags(false)),
            24..=35 => Op::Close(self.fd()),
            36..=43 => Op::Dup(self.fd()),
            44..=51 => {
                let old = self.fd();
                // dup2(fd, fd) skips the rlimit check: give it a fair share.
                let new = if self.rng.chance(15) { old } else { self.fd() };
                Op::Dup2(old, new)
            }
            52..=56 => {
                let flags = self
                    .rng
                    .pick(&[0, 0, O_CLOEXEC, O_CLOEXEC, O_NONBLOCK, 1, -1]);
                let old = self.fd();
                let new = if self.rng.chance(10) { old } else { self.fd() };
                Op::Dup3(old, new, flags)
            }
            57..=85 => self.fcntl(),
            86..=91 => self.close_range(),
            _ => {
                let hard = self.hard;
                let soft = self.rng.pick(&[
                    0,
                    1,
                    3,
                    5,
                    10,
                    40,
                    64,
                    65,
                    70,
                    80,
                    100,
                    200,
                    1024,
                    1024,
                    1024,
                    hard,
                    hard + 1,
                ]);
                Op::SetSoft(soft)
            }
        };
        if uvfs_exec(&mut self.shadow, op, self.hard).is_ok()
            && let Op::SetSoft(s) = op
        {
            self.soft = s;
        }
        op
    }
}

fn generate(seed: u64, hard: u64) -> Vec<Op> {
    let mut g = Gen {
        rng: Rng::new(seed),
        shadow: uvfs_process(FastPaths::seeds(), hard),
        hard,
        soft: START_SOFT,
    };
    (0..OPS_PER_SEED).map(|_| g.op()).collect()
}

// ---------------------------------------------------------------------------
// The host side (child process only).
// ---------------------------------------------------------------------------

fn host_ret(r: libc::c_long) -> Result<i64, i32> {
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(r)
    }
}

/// One raw syscall with up to four integer arguments.
fn sys(
    nr: libc::c_long,
    a: libc::c_long,
    b: libc::c_long,
    c: libc::c_long,
    d: libc::c_long,
) -> Result<i64, i32> {
    // SAFETY: every call made through here passes integers only, or a
    // pointer to a live NUL-terminated string (openat), as the syscalls
    // expect; none of them touches memory we own otherwise.
    host_ret(unsafe { libc::syscall(nr, a, b, c, d) })
}

fn host_exec(op: Op, missing: &CString, hard: u64) -> Result<i64, i32> {
    const DEV_NULL: &std::ffi::CStr = c"/dev/null";
    let l = |x: i32| libc::c_long::from(x);
    match op {
        Op::Open(fl) => sys(
            libc::SYS_openat,
            l(libc::AT_FDCWD),
            DEV_NULL.as_ptr() as libc::c_long,
            l(fl),
            0o644,
        ),
        Op::OpenMissing(fl) => sys(
            libc::SYS_openat,
            l(libc::AT_FDCWD),
            missing.as_ptr() as libc::c_long,
            l(fl),
            0o644,
        ),
        Op::Close(fd) => sys(libc::SYS_close, l(fd), 0, 0, 0),
        Op::Dup(fd) => sys(libc::SYS_dup, l(fd), 0, 0, 0),
        Op::Dup2(a, b) => sys(libc::SYS_dup2, l(a), l(b), 0, 0),
        Op::Dup3(a, b, fl) => sys(libc::SYS_dup3, l(a), l(b), l(fl), 0),
        Op::Fcntl(fd, cmd, arg) => sys(libc::SYS_fcntl, l(fd), l(cmd), arg as libc::c_long, 0),
        Op::CloseRange(a, b, fl) => sys(
            libc::SYS_close_range,
            libc::c_long::from(a),
            libc::c_long::from(b),
            libc::c_long::from(fl),
            0,
        ),
        Op::SetSoft(s) => host_setrlimit(s, hard),
    }
}

fn host_setrlimit(soft: u64, hard: u64) -> Result<i64, i32> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: `lim` is a valid rlimit for the duration of the call.
    let r = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    host_ret(r.into())
}

fn host_hard_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    assert_eq!(r, 0, "getrlimit: {}", std::io::Error::last_os_error());
    lim.rlim_max
}

fn write_all_fd(fd: i32, mut buf: &[u8]) {
    while !buf.is_empty() {
        // SAFETY: `buf` is a live byte slice of the given length.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n <= 0 {
            return;
        }
        buf = &buf[n as usize..];
    }
}

fn must(what: &str, r: Result<i64, i32>) -> i64 {
    match r {
        Ok(n) => n,
        Err(e) => panic!("child setup: {what}: {:?}", Errno::from_raw(e)),
    }
}

/// The child side: runs only when re-executed by the parent test.
#[test]
fn host_child() {
    let Ok(seed) = std::env::var(CHILD_ENV) else {
        return; // Not a child: nothing to do.
    };
    let seed: u64 = seed.parse().expect("seed");
    let dir = PathBuf::from(std::env::var(DIR_ENV).expect("dir"));
    let hard: u64 = std::env::var(HARD_ENV)
        .expect("hard")
        .parse()
        .expect("hard");
    // Everything that allocates fds of its own happens before the fd
    // table is cleaned.
    let ops = generate(seed, hard);
    let missing = CString::new(dir.join("missing").into_os_string().into_encoded_bytes()).unwrap();
    let out = std::fs::File::create(dir.join("host.log")).expect("create host.log");
    let out = std::os::fd::IntoRawFd::into_raw_fd(out);

    must("setrlimit", host_setrlimit(hard, hard));
    must(
        "dup2 result",
        sys(libc::SYS_dup2, out.into(), RESULT_FD.into(), 0, 0),
    );
    must("dup2 stderr", sys(libc::SYS_dup2, 2, DIAG_FD.into(), 0, 0));
    std::panic::set_hook(Box::new(|info| {
        write_all_fd(DIAG_FD, format!("host child panicked: {info}\n").as_bytes());
    }));
    let null = |flags: i32| must("open /dev/null", host_exec(Op::Open(flags), &missing, hard));
    // Three separate open files, as the uvfs side has (F_SETFL on one
    // must not show on another).
    for (fd, flags) in [(0, O_RDONLY), (1, O_WRONLY), (2, O_WRONLY)] {
        must("dup2 stdio", sys(libc::SYS_dup2, null(flags), fd, 0, 0));
    }
    must(
        "close_range",
        host_exec(Op::CloseRange(3, 999, 0), &missing, hard),
    );
    must(
        "close_range high",
        host_exec(
            Op::CloseRange(DIAG_FD as u32 + 1, u32::MAX, 0),
            &missing,
            hard,
        ),
    );
    must("setrlimit", host_setrlimit(START_SOFT, hard));

    let mut log = String::new();
    for &op in &ops {
        log.push_str(&fmt_result(host_exec(op, &missing, hard)));
        log.push('\n');
    }
    for line in dump(dump_limit(hard), |fd, cmd| {
        sys(libc::SYS_fcntl, fd.into(), cmd.into(), 0, 0)
    }) {
        log.push_str(&line);
        log.push('\n');
    }
    write_all_fd(RESULT_FD, log.as_bytes());
}

// ---------------------------------------------------------------------------
// The parent.
// ---------------------------------------------------------------------------

fn host_log(seed: u64, hard: u64) -> Vec<String> {
    let tmp = TempDir::new(&format!("diff-{seed:x}"));
    let dir = tmp.path();
    let exe = std::env::current_exe().expect("current_exe");
    let out = Command::new(exe)
        .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, seed.to_string())
        .env(DIR_ENV, dir)
        .env(HARD_ENV, hard.to_string())
        // Under AddressSanitizer (.ci/run), no leak check in the child: it
        // closes every fd and points stderr at /dev/null, and LeakSanitizer's
        // exit-time scan then fails with status 1 and no report. The parent
        // runs the same uvfs code with leak checking on.
        .env("ASAN_OPTIONS", "detect_leaks=0")
        .stdin(Stdio::null())
        .output()
        .expect("spawn the host child");
    let log = std::fs::read_to_string(dir.join("host.log")).unwrap_or_default();
    drop(tmp);
    let lines: Vec<String> = log.lines().map(str::to_owned).collect();
    assert!(
        out.status.success() && lines.last().map(String::as_str) == Some("END"),
        "host child for seed {seed} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    lines
}

fn compare(seed: u64, fast: FastPaths, ops: &[Op], host: &[String], uvfs: &[String]) {
    let Some(i) = (0..host.len().max(uvfs.len())).find(|&i| host.get(i) != uvfs.get(i)) else {
        return;
    };
    let mut msg = format!("seed {seed}, uvfs preset {fast}: first difference at line {i}\n");
    let shown = i.min(ops.len().saturating_sub(1));
    for (j, op) in ops.iter().enumerate().take(shown + 1) {
        let h = host.get(j).map_or("-", String::as_str);
        let u = uvfs.get(j).map_or("-", String::as_str);
        let mark = if h == u { "  " } else { "!!" };
        msg.push_str(&format!("{mark} {j:4}: {op:<44} host {h:<14} uvfs {u}\n"));
    }
    if i >= ops.len() {
        msg.push_str("final state (F_GETFD / F_GETFL of every open fd):\n");
        for j in ops.len()..host.len().max(uvfs.len()) {
            let h = host.get(j).map_or("-", String::as_str);
            let u = uvfs.get(j).map_or("-", String::as_str);
            let mark = if h == u { "  " } else { "!!" };
            msg.push_str(&format!("{mark} host {h:<44} uvfs {u}\n"));
        }
    }
    panic!("{msg}");
}

/// The fixed seeds, or `UVFS_DIFF_SEEDS`: a comma-separated list of seeds
/// or `A..B` ranges, for longer hunts.
fn seeds() -> Vec<u64> {
    let Ok(spec) = std::env::var("UVFS_DIFF_SEEDS") else {
        return SEEDS.to_vec();
    };
    let mut v = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let num = |s: &str| {
            s.trim()
                .parse::<u64>()
                .expect("UVFS_DIFF_SEEDS: bad number")
        };
        match item.split_once("..") {
            Some((a, b)) => v.extend(num(a)..num(b)),
            None => v.push(num(item)),
        }
    }
    v
}

#[test]
fn fd_calls_match_the_host_kernel() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return; // Inside a child the other test does the work.
    }
    let hard = host_hard_limit().min(4096);
    if hard < START_SOFT {
        panic!("host RLIMIT_NOFILE hard limit {hard} is below {START_SOFT}; cannot mirror uvfs");
    }
    let seeds = seeds();
    let mut coverage = [0usize; 4]; // EMFILE, fd >= 64, EBADF, EINVAL
    for &seed in &seeds {
        let ops = generate(seed, hard);
        let host = host_log(seed, hard);
        for line in &host[..ops.len().min(host.len())] {
            coverage[0] += usize::from(line == "Err(EMFILE)");
            coverage[1] += usize::from(
                line.strip_prefix("Ok(")
                    .and_then(|s| s.trim_end_matches(')').parse::<i64>().ok())
                    .is_some_and(|n| n >= 64),
            );
            coverage[2] += usize::from(line == "Err(EBADF)");
            coverage[3] += usize::from(line == "Err(EINVAL)");
        }
        for fast in [FastPaths::seeds(), FastPaths::stock()] {
            let uvfs = uvfs_run(fast, &ops, hard);
            compare(seed, fast, &ops, &host, &uvfs);
        }
    }
    // The sequences must actually reach the interesting cases.
    let [emfile, high, ebadf, einval] = coverage;
    eprintln!(
        "fdtable_differential: {} seeds x {OPS_PER_SEED} ops agree; EMFILE {emfile}, fd>=64 {high}, EBADF {ebadf}, EINVAL {einval}",
        seeds.len()
    );
    assert!(
        emfile > 0 && high > 0 && ebadf > 0 && einval > 0,
        "weak sequences: {coverage:?}"
    );
}
