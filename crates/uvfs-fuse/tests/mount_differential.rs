//! The path API's differential generator through a real FUSE mount: the
//! third way of running it. `crates/uvfs/tests/path_differential.rs` runs
//! each seeded sequence on the host's tmpfs and on the uvfs library; here
//! the same sequence also runs as real system calls on a `uvfs mount`, and
//! the mount's results must equal the host tmpfs's, call by call, and in
//! the final dump of the tree (the comparison rules are that harness's:
//! `support::pathdiff::compare`).
//!
//! # The sandbox
//!
//! The mount side runs in a thread of its own that unshares its mount
//! namespace and fs_struct (as the host side does), makes every mount
//! private, starts `uvfs mount --size 256m` on a fresh directory of
//! `/dev/shm` (the server process is forked from that thread, so it mounts
//! in the thread's private namespace and nothing appears in the host's),
//! waits until the mount is live, chroots into it and creates the same
//! `/dev/shm/uvfs-diff-<pid>-<n>` path as the host side. After the run the
//! server gets SIGTERM (it unmounts, or detaches a busy mount and aborts
//! the connection) and is waited for; the thread's namespace dies with it.
//!
//! # What the mount may do differently, and why
//!
//! Only what FUSE itself decides, each recognised narrowly by the op and
//! both results (`fuse_artefact`, `patch_stats`; docs/fuse.md lists them):
//! lseek on directories, tmpfs's overflowed SEEK_HOLE offset, O_TMPFILE,
//! statx without btime/attribute mask, mtime/ctime not asked for, statx
//! answered from the attribute cache, atime of reads served from the page
//! cache, ELOOP down a long symlink chain on either side (an abandoned
//! RCU walk's links counted again). An artefact op is taken out of the sequence and both sides run
//! again, so everything after it is still compared; the counts are
//! printed. Everything else must match: a mismatch panics with the seed,
//! every op with both results, and the two results that differ.
//!
//! Root only (mounting needs CAP_SYS_ADMIN) and `/dev/fuse`: otherwise the
//! test prints why and counts as skipped.
#![cfg(target_os = "linux")]

#[path = "../../uvfs/tests/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use support::host::Sandbox;
use support::pathdiff::*;

const SEEDS: u64 = 24;

/// How the mount serves regular files: every read and write a request
/// (`Off`), through FUSE passthrough (`On`), or in no-open mode
/// (`NoOpen`: no OPEN or OPENDIR requests, fh 0 and per-inode handles),
/// or with the kernel's writeback cache (`Writeback`: writes buffered in
/// the page cache, size and mtime kept by the kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pt {
    Off,
    On,
    NoOpen,
    Writeback,
}

impl Pt {
    /// `UVFS_DIFF_PASSTHROUGH=1`: the seed replayed or minimized is the
    /// passthrough passes'; `UVFS_DIFF_NO_OPEN=1`: the no-open passes';
    /// `UVFS_DIFF_WRITEBACK=1`: the writeback passes'.
    fn from_env() -> Pt {
        if std::env::var_os("UVFS_DIFF_WRITEBACK").is_some() {
            Pt::Writeback
        } else if std::env::var_os("UVFS_DIFF_NO_OPEN").is_some() {
            Pt::NoOpen
        } else if std::env::var_os("UVFS_DIFF_PASSTHROUGH").is_some() {
            Pt::On
        } else {
            Pt::Off
        }
    }
}
const USER_SEEDS: u64 = 16;

fn can_mount() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("no /dev/fuse".into());
    }
    Ok(())
}

fn must(what: &str, r: libc::c_int) {
    assert!(r == 0, "{what}: {}", std::io::Error::last_os_error());
}

fn cstr(p: &Path) -> std::ffi::CString {
    std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// Whether `dir` is a FUSE mount in this thread's namespace.
fn mounted_here(dir: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/thread-self/mountinfo").unwrap_or_default();
    let want = dir.to_string_lossy();
    info.lines().any(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        f.len() > 4 && f[4] == want && l.contains(" - fuse")
    })
}

/// The mount side's sandbox: a private namespace with a fresh `uvfs mount`
/// as its root.
struct MountSandbox {
    server: Child,
}

impl MountSandbox {
    /// Must run in a thread that does nothing else afterwards.
    fn enter(dir: PathBuf, pt: Pt) -> MountSandbox {
        assert!(
            support::host::enter_private_namespace(),
            "unshare(CLONE_NEWNS): {}",
            std::io::Error::last_os_error()
        );
        let mut server = Command::new(env!("CARGO_BIN_EXE_uvfs"))
            .args(["mount", "--nr-inodes", "0"])
            // The host sandbox's size limit. With passthrough the files
            // live in a private kernel tmpfs of that size (see
            // `uvfs_fuse::backing`); the sequences' writes stay far below
            // it (mount_size tests the limit itself).
            .args(["--size", "256m"])
            .args(match pt {
                Pt::Off => &["--passthrough", "off"][..],
                Pt::On => &["--passthrough", "on"],
                Pt::NoOpen => &["--no-open"],
                Pt::Writeback => &["--writeback"],
            })
            .arg(&dir)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start uvfs mount");
        // Counted, not timed: each look is a few microseconds of reading
        // mountinfo; the server's own failure (exit) ends the wait too.
        let mut looks = 0u64;
        while !mounted_here(&dir) {
            if let Ok(Some(st)) = server.try_wait() {
                panic!("uvfs mount exited before the mount was live: {st}");
            }
            looks += 1;
            assert!(looks < 2_000_000, "the mount never appeared");
            std::thread::yield_now();
        }
        let d = cstr(&dir);
        // SAFETY: `d` is a live NUL-terminated path; chmod gives the
        // mount's root the host sandbox's `mode=755` (a fresh tmpfs root
        // is 1777); chroot and chdir change this thread's private
        // fs_struct only.
        unsafe {
            must("chmod 755 the mount's root", libc::chmod(d.as_ptr(), 0o755));
            must("chroot", libc::chroot(d.as_ptr()));
            must("chdir /", libc::chdir(c"/".as_ptr()));
        }
        MountSandbox { server }
    }

    /// Stops the server and waits for it: SIGTERM makes it unmount (or
    /// detach the mount this thread is still inside) and exit 0.
    fn finish(mut self) {
        // SAFETY: kill of our own child's pid.
        unsafe { libc::kill(self.server.id() as i32, libc::SIGTERM) };
        // A hang bound, never a pass/fail on speed: a server that has not
        // exited after 120 s is killed and the test fails.
        for _ in 0..12_000 {
            if let Some(st) = self.server.try_wait().expect("wait for uvfs mount") {
                assert!(st.success(), "uvfs mount ended with {st}");
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
        panic!("uvfs mount did not exit on SIGTERM");
    }
}

/// Replays `ops` as system calls on a fresh `uvfs mount`.
/// Mount points made by this test process (the tests run in parallel).
static MOUNTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn mount_run(ops: Vec<Op>, top: Vec<u8>, who: Who, pt: Pt) -> Log {
    let n = MOUNTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = PathBuf::from(format!(
        "/dev/shm/uvfs-mountdiff-{}-{n}",
        std::process::id()
    ));
    std::fs::create_dir(&dir).expect("mkdir mount point");
    let d2 = dir.clone();
    // The sandbox thread may have become the user; the server is stopped
    // from this thread, which is still root (a user may not signal it).
    let (log, sb) = std::thread::spawn(move || {
        let sb = MountSandbox::enter(d2, pt);
        let mut b = Host {
            fds: FdList::default(),
            refill_dirents: true,
        };
        prepare_as(&mut b, &top, who);
        let log = run(&mut b, &ops, b"/");
        drop(b);
        (log, sb)
    })
    .join()
    .expect("mount thread panicked");
    sb.finish();
    std::fs::remove_dir(&dir).expect("rmdir mount point");
    log
}

/// A difference the kernel's FUSE layer makes (it answers without asking
/// the server, or asks with other arguments), so no server can match the
/// host tmpfs there: why, if `op` with these two results is one.
fn fuse_artefact(op: &Op, host: &Res, mount: &Res) -> Option<&'static str> {
    match (op, host, mount) {
        // tmpfs directories only seek with SEEK_SET/SEEK_CUR (EINVAL for
        // the rest); FUSE directories use the generic file llseek, which
        // answers SEEK_END/SEEK_DATA/SEEK_HOLE from the directory's size.
        // (a negative offset is ENXIO there). On a regular file the
        // server's lseek answers, which the library's own differential
        // test holds to tmpfs's; so a host EINVAL the mount does not give
        // marks a directory fd.
        (Op::Lseek(_, _, 2..=4), Err(libc::EINVAL), _) => {
            Some("lseek SEEK_END/DATA/HOLE on a directory (FUSE's generic llseek)")
        }
        // tmpfs's overflowed hole offset past i64::MAX (negative), which
        // FUSE's lseek refuses from a server (EINVAL).
        (Op::Lseek(_, _, 3 | 4), Ok(Val::Num(n)), Err(libc::EINVAL)) if *n < 0 => Some(HOLE_WHY),
        // O_TMPFILE reaches a FUSE server as FUSE_TMPFILE, which fuser
        // 0.18 does not implement: the kernel answers EOPNOTSUPP.
        (Op::Open(_, fl, _) | Op::Openat(_, _, fl, _), _, Err(libc::EOPNOTSUPP))
            if fl & libc::O_TMPFILE == libc::O_TMPFILE =>
        {
            Some("O_TMPFILE (no FUSE_TMPFILE in fuser)")
        }
        // (AT_STATX_DONT_SYNC is cleared before the run: see
        // `first_real_difference`.)
        // FUSE refreshes cached attributes before a statx only if the mask
        // asks for one it invalidated (or the attribute timeout passed): a
        // statx not asking for every basic field (mask 0, STATX_TYPE, ...)
        // can be answered with the fields a change elsewhere made stale
        // (a directory's nlink and size after a mkdir in it).
        (Op::Statx(_, _, _, asked), Ok(_), Ok(_)) if asked & 0x7ff != 0x7ff => {
            Some("statx with a partial mask answered from FUSE's attribute cache")
        }
        // Linux keeps the count of links followed in the walk's nameidata
        // across the ref-walk retry of an abandoned RCU walk (see
        // `Backend::eloop_retries`): on FUSE the RCU walk gives up partway
        // down a long chain (a symlink or entry it must ask the server
        // about), so links are counted twice and a 39-link walk exceeds 40;
        // the host side's retries do not help while the same links stay
        // uncached. Recognised only for a path into the generator's chain
        // (`z<N>`) where the host's walk did not fail with ELOOP.
        (op, host, Err(libc::ELOOP)) if *host != Err(libc::ELOOP) && enters_chain(op) => {
            Some("ELOOP on a long symlink chain (links of an abandoned RCU walk counted again)")
        }
        // The same artefact on the host's side: a walk of exactly 40 links
        // (`z1` of a 41-link chain) fails when the host's RCU walk gives
        // up partway and the ref-walk retry counts its links again. The
        // host retries (`HOST_ELOOP_RETRIES`), but on a loaded machine
        // (CI, seed 6 at step 550: `stat("z1")`) every retry's RCU walk
        // can be knocked off too, so nine ELOOPs in a row happen.
        (op, Err(libc::ELOOP), mount) if *mount != Err(libc::ELOOP) && enters_chain(op) => Some(
            "ELOOP on the host down a long symlink chain (an abandoned RCU walk's links counted again)",
        ),
        _ => None,
    }
}

/// Whether `op` names a path into the generator's symlink chain (`z0`,
/// `z1`, ...: see the generator's `chain`): a component `z<N>`, at the
/// start of a relative path or after a `/` (an absolute path into the
/// run's directory, such as `/dev/shm/uvfs-diff-…/z0`: CI, seed 13 of the
/// user no-open pass at step 693, 2026-11-29, where the report that named
/// the step's result was cut off).
fn enters_chain(op: &Op) -> bool {
    let s = op.to_string();
    let b = s.as_bytes();
    s.match_indices('z').any(|(i, _)| {
        i > 0 && matches!(b[i - 1], b'"' | b'/') && b.get(i + 1).is_some_and(u8::is_ascii_digit)
    })
}

/// With the writeback cache the server answers LSEEK ENOSYS (dirty data
/// is not in uvfs yet) and the kernel's generic llseek sees the whole
/// file as data: SEEK_DATA at `off` is `off` (tmpfs: the next data, or
/// ENXIO in a final hole), SEEK_HOLE is the size (tmpfs: an earlier hole).
/// Recognised only in those shapes.
fn writeback_seek(op: &Op, host: &Res, mount: &Res) -> Option<&'static str> {
    const WHY: &str = "SEEK_DATA/SEEK_HOLE by the kernel's generic llseek (writeback cache)";
    match (op, host, mount) {
        (Op::Lseek(_, off, 3), Ok(Val::Num(_)) | Err(libc::ENXIO), Ok(Val::Num(m)))
            if *m == *off =>
        {
            Some(WHY)
        }
        (Op::Lseek(_, _, 4), Ok(Val::Num(h)), Ok(Val::Num(m))) if h <= m => Some(WHY),
        _ => None,
    }
}

const WB_DUMP_WHY: &str = "a file's data map from the kernel's generic llseek (writeback cache): one segment, holes read as zeros";

/// A dump's data segments (`[s, e) bytes`) as (offset, bytes read, end).
fn dump_segments(run: &[Obs]) -> Option<Vec<(usize, Vec<u8>, usize)>> {
    let mut v = Vec::new();
    for o in run {
        let Ok(Val::Bytes(b)) = &o.res else { continue };
        let close = b.iter().position(|&c| c == b')')?;
        let head = std::str::from_utf8(&b[1..close]).ok()?;
        let (s, e) = head.split_once(", ")?;
        let (s, e): (i64, i64) = (s.parse().ok()?, e.parse().ok()?);
        if e <= s || b.len() < close + 2 {
            continue;
        }
        v.push((s as usize, b[close + 2..].to_vec(), e as usize));
    }
    Some(v)
}

/// With the writeback cache the mount's SEEK_DATA/SEEK_HOLE see the whole
/// file as data, so a file's dump is one segment from 0 where tmpfs's
/// has one per data extent. Where every byte the mount read is the
/// host's (zero in the host's holes; unknown only past what the host's
/// 4 MiB budget read) and both dumps end alike, the mount's dump entries
/// become the host's. Past the mount's own budget the host's data is not
/// checked.
fn writeback_dumps(
    host: &Log,
    m: &mut Log,
    seen: &mut std::collections::BTreeMap<&'static str, usize>,
) {
    let (mut hi, mut ui) = (0, 0);
    while hi < host.obs.len() && ui < m.obs.len() {
        let what = host.obs[hi].what.clone();
        if !what.starts_with("dump data ") || m.obs[ui].what != what {
            hi += 1;
            ui += 1;
            continue;
        }
        let hn = host.obs[hi..].iter().take_while(|o| o.what == what).count();
        let un = m.obs[ui..].iter().take_while(|o| o.what == what).count();
        let (hr, ur) = (&host.obs[hi..hi + hn], &m.obs[ui..ui + un]);
        let same_end = match (hr.last().map(|o| &o.res), ur.last().map(|o| &o.res)) {
            (Some(Err(a)), Some(Err(b))) => a == b,
            (Some(Ok(_)), Some(Ok(_))) => true,
            // The mount's one segment used up the 4 MiB budget.
            (Some(Err(_)), Some(Ok(_))) => dump_segments(ur)
                .is_some_and(|us| us.iter().map(|(_, d, _)| d.len()).sum::<usize>() == 4 << 20),
            _ => false,
        };
        let agree = same_end
            && match (dump_segments(hr), dump_segments(ur)) {
                (Some(hs), Some(us)) => us.iter().all(|(s, data, _)| {
                    data.iter().enumerate().all(|(k, &c)| {
                        let at = s + k;
                        match hs.iter().find(|(hs, _, he)| (*hs..*he).contains(&at)) {
                            Some((hs, hd, _)) => hd.get(at - hs).is_none_or(|&h| h == c),
                            None => c == 0,
                        }
                    })
                }),
                _ => false,
            };
        let differ = hn != un || hr.iter().zip(ur).any(|(a, b)| a.res != b.res);
        if agree && differ {
            let fresh: Vec<Obs> = hr
                .iter()
                .map(|o| Obs {
                    what: o.what.clone(),
                    res: o.res.clone(),
                })
                .collect();
            m.obs.splice(ui..ui + un, fresh);
            *seen.entry(WB_DUMP_WHY).or_default() += 1;
        }
        hi += hn;
        ui += hn;
    }
}

const WB_ATIME_WHY: &str =
    "atime stamped by the kernel's read to fill a partly written page (writeback cache)";
const WB_TIMES_WHY: &str = "mtime/ctime not moved within the clock's tick: the kernel keeps a file's times with the writeback cache, coarse-grained (tmpfs's are multigrain)";

/// With the writeback cache the kernel stamps a regular file's mtime and
/// ctime itself, at the coarse clock: a change in the same tick as the
/// stat before leaves them as they were, where tmpfs's multigrain clock
/// moves them. Where the host's time moved since its last stat of the
/// inode and the mount's did not, the mount's is moved by a nanosecond
/// (and stays moved, so a later unchanged time still reads as
/// unchanged; not an old time set explicitly); a mount time that moved where the host's did not is left
/// for the comparison to report.
fn coarse_times(
    hs: &St,
    us: &mut St,
    last_h: &mut HashMap<(u64, u64), (Ts, Ts)>,
    last_u: &mut HashMap<(u64, u64), (Ts, Ts, i64, i64)>,
    seen: &mut std::collections::BTreeMap<&'static str, usize>,
) {
    // A statx not asked for the times (tmpfs leaves them zero) is no
    // observation of them.
    if hs
        .statx
        .is_some_and(|(m, _, _)| m & STATX_CMTIME != STATX_CMTIME)
    {
        return;
    }
    let (orig_m, orig_c) = (us.mtime, us.ctime);
    let before_h = last_h.insert((hs.dev, hs.ino), (hs.mtime, hs.ctime));
    let before_u = last_u.get(&(us.dev, us.ino)).copied();
    let (mut bm, mut bc) = before_u.map_or((0, 0), |(_, _, bm, bc)| (bm, bc));
    if let (Some((hm, hc)), Some((um, uc, _, _))) = (before_h, before_u) {
        if hm != hs.mtime && um == orig_m {
            bm += 1;
            *seen.entry(WB_TIMES_WHY).or_default() += 1;
        }
        if hc != hs.ctime && uc == orig_c {
            bc += 1;
            *seen.entry(WB_TIMES_WHY).or_default() += 1;
        }
    }
    // A time set explicitly (to the generator's old times) is compared
    // exactly: no nanosecond added, and none carried past it.
    if orig_m.sec < OLD_TIME {
        bm = 0;
    }
    if orig_c.sec < OLD_TIME {
        bc = 0;
    }
    last_u.insert((us.dev, us.ino), (orig_m, orig_c, bm, bc));
    let add = |t: Ts, n: i64| {
        let ns = t.nsec + n;
        Ts {
            sec: t.sec + ns / 1_000_000_000,
            nsec: ns % 1_000_000_000,
        }
    };
    us.mtime = add(orig_m, bm);
    us.ctime = add(orig_c, bc);
}

const STATX_WHY: &str = "statx without btime and tmpfs's attribute mask (no FUSE_STATX in fuser)";
const MGTIME_WHY: &str =
    "statx not asked for mtime/ctime: tmpfs (multigrain times) leaves them out, FUSE fills them";

const ZERO_RANGE_WHY: &str =
    "fallocate ZERO_RANGE: FUSE drops set-ID bits before the server refuses the mode";
const DONT_SYNC_WHY: &str = "statx AT_STATX_DONT_SYNC run as AT_STATX_SYNC_AS_STAT on both sides (FUSE answers it from its attribute cache)";
const HOLE_WHY: &str =
    "SEEK_HOLE past i64::MAX (tmpfs's overflowed offset) refused by FUSE's lseek";
const WB_BLOCKS_WHY: &str =
    "st_blocks below tmpfs's: data still dirty in the kernel's writeback cache";
const ATIME_WHY: &str =
    "atime not stamped by a read served from the page cache (FUSE inodes are S_NOATIME)";

/// `stx_mask`'s `STATX_BTIME` and `stx_attributes_mask`'s immutable,
/// append and nodump bits: tmpfs reports them; a FUSE file's statx is
/// built by the kernel from a getattr reply, which has no birth time and
/// no attribute mask (FUSE_STATX, which has both, is not in fuser 0.18).
const STATX_FS_BITS: (u32, u64) = (0x800, 0x70);
/// `STATX_MTIME | STATX_CTIME`.
const STATX_CMTIME: u32 = 0xc0;

/// Makes the mount's statx results comparable where FUSE reports what
/// tmpfs does not or the other way round (never a field both report):
/// copies [`STATX_FS_BITS`] from the host where the mount lacks exactly
/// those, and where statx was not asked for mtime/ctime and the host left
/// them out (tmpfs keeps multigrain timestamps and fills them only when
/// asked), leaves them out of the mount's result too. Counts each kind.
///
/// And for every stat result: where the host's atime is recent (a read
/// stamped it, relatime) and the mount's is still the old time utimensat
/// set, the read was served from the kernel's page cache and never reached
/// the server (FUSE inodes are `S_NOATIME`: only the server stamps atime,
/// on the reads it sees; `keep_cache` keeps later reads in the cache).
///
/// With the writeback cache (`pt` [`Pt::Writeback`]): a regular file's
/// st_blocks on the mount counts only the data the kernel has written
/// back, so where it is below the host's (same size) it is the host's.
fn patch_stats(
    ops: &[Op],
    host: &Log,
    m: &mut Log,
    pt: Pt,
    seen: &mut std::collections::BTreeMap<&'static str, usize>,
) {
    if pt == Pt::Writeback {
        writeback_dumps(host, m, seen);
    }
    // Writeback: per inode, the last times seen on each side (the mount's
    // as the kernel reported them) and the nanoseconds added to the
    // mount's so far.
    let mut last_h: HashMap<(u64, u64), (Ts, Ts)> = HashMap::new();
    let mut last_u: HashMap<(u64, u64), (Ts, Ts, i64, i64)> = HashMap::new();
    for (i, (h, u)) in host.obs.iter().zip(m.obs.iter_mut()).enumerate() {
        // Linux's tmpfs reports the hole after data in a file's last page
        // below i64::MAX at an offset that overflowed (negative); FUSE's
        // lseek checks the server's answer against the maximum file size
        // and fails EINVAL instead. Only in the final dump's data map.
        if let (Ok(Val::Bytes(hb)), Err(libc::EINVAL)) = (&h.res, &u.res)
            && u.what.starts_with("dump data")
            && hb.starts_with(b"[")
            && hb.windows(3).any(|w| w == b", -")
        {
            u.res = h.res.clone();
            *seen.entry(HOLE_WHY).or_default() += 1;
            continue;
        }
        let (Ok(Val::Stat(hs)), Ok(Val::Stat(us))) = (&h.res, &mut u.res) else {
            continue;
        };
        if pt == Pt::Writeback
            && us.mode & libc::S_IFMT == libc::S_IFREG
            && us.size == hs.size
            && us.blocks < hs.blocks
        {
            us.blocks = hs.blocks;
            *seen.entry(WB_BLOCKS_WHY).or_default() += 1;
        }
        if pt == Pt::Writeback && us.mode & libc::S_IFMT == libc::S_IFREG {
            coarse_times(hs, us, &mut last_h, &mut last_u, seen);
            // The kernel fills a partly written page by reading it from
            // the server, which stamps atime where the program read
            // nothing: only on a file written since (mtime recent on both
            // sides), a mount atime newer than the host's.
            if us.atime.sec >= OLD_TIME
                && hs.mtime.sec >= OLD_TIME
                && us.mtime.sec >= OLD_TIME
                && (hs.atime.sec, hs.atime.nsec) < (us.atime.sec, us.atime.nsec)
            {
                us.atime = hs.atime;
                *seen.entry(WB_ATIME_WHY).or_default() += 1;
            }
        }
        if hs.atime.sec >= OLD_TIME && us.atime.sec < OLD_TIME && hs.ino != 0 {
            us.atime = hs.atime;
            *seen.entry(ATIME_WHY).or_default() += 1;
        }
        let Some(Op::Statx(_, _, _, asked)) = ops.get(i) else {
            continue;
        };
        let (Some((hm, ha, ham)), Some((um, ua, uam))) = (hs.statx, us.statx) else {
            continue;
        };
        let (mut um, mut uam) = (um, uam);
        let (bm, bam) = STATX_FS_BITS;
        if ua == ha && uam != ham && uam == ham & !bam {
            uam = ham;
            *seen.entry(STATX_WHY).or_default() += 1;
        }
        if um & bm == 0 && hm & bm != 0 {
            um |= bm;
        }
        if asked & STATX_CMTIME == 0 && hm & STATX_CMTIME == 0 && um & STATX_CMTIME != 0 {
            um &= !STATX_CMTIME;
            us.mtime = hs.mtime;
            us.ctime = hs.ctime;
            *seen.entry(MGTIME_WHY).or_default() += 1;
        }
        us.statx = Some((um, ua, uam));
    }
}

/// The first difference between the host's tmpfs and the mount on `ops`
/// that is not a FUSE artefact; each artefact met is counted in `seen` and
/// its op taken out of the sequence (an open becomes a failing placeholder
/// so later fd indexes keep their meaning), and both sides run again.
fn first_real_difference(
    seed: u64,
    who: Who,
    pt: Pt,
    mut ops: Vec<Op>,
    mut host: Log,
    top: &[u8],
    seen: &mut std::collections::BTreeMap<&'static str, usize>,
) -> Option<(String, Vec<Op>)> {
    // fallocate with FALLOC_FL_ZERO_RANGE: FUSE accepts the mode, removes
    // set-ID bits (`file_modified`, reaching the server as a setattr that
    // sets nothing, which is also what chown(-1, -1) sends) and only then
    // asks the server, which refuses the mode as tmpfs does (EOPNOTSUPP);
    // tmpfs refuses it before touching anything. The results agree; the
    // mode does not. Taken out before the run.
    let zero_range = ops
        .iter()
        .filter(|op| matches!(op, Op::Fallocate(_, m, _, _) if m & 0x10 != 0))
        .count();
    if zero_range > 0 {
        ops.retain(|op| !matches!(op, Op::Fallocate(_, m, _, _) if m & 0x10 != 0));
        *seen.entry(ZERO_RANGE_WHY).or_default() += zero_range;
    }
    // AT_STATX_DONT_SYNC: FUSE answers from its attribute cache without
    // asking the server, even from attributes it marked stale (times,
    // size and blocks after a truncating open: seed 121 of the root
    // passthrough pass, 2026-11-29); tmpfs always answers with its own
    // current values. Such an answer cannot be compared, and worse, it
    // would become the baseline of the next stat's "changed since last
    // stat" check, which then blames the step after for the kernel's
    // stale cache. The flag goes, on both sides and before the run (on
    // tmpfs it changes nothing): the call is still made, its path and
    // error checked, its answer fresh.
    let mut dont_sync = 0;
    for op in ops.iter_mut() {
        if let Op::Statx(_, _, fl, _) = op
            && *fl & libc::AT_STATX_DONT_SYNC != 0
        {
            *fl &= !libc::AT_STATX_DONT_SYNC;
            dont_sync += 1;
        }
    }
    if dont_sync > 0 {
        *seen.entry(DONT_SYNC_WHY).or_default() += dont_sync;
    }
    if zero_range + dont_sync > 0 {
        host = host_run_in_thread_as(HostJob::Replay(ops.clone()), top.to_vec(), who).1;
    }
    let mut taken_out = zero_range;
    loop {
        let mut m = mount_run(ops.clone(), top.to_vec(), who, pt);
        patch_stats(&ops, &host, &mut m, pt, seen);
        let (i, report) = compare_at(seed, "mount", &ops, &host, &m)?;
        let report = mount_replay(report, seed, who, pt, taken_out);
        let why = match (ops.get(i), host.obs.get(i), m.obs.get(i)) {
            (Some(op), Some(h), Some(u)) if pt == Pt::Writeback => {
                fuse_artefact(op, &h.res, &u.res).or_else(|| writeback_seek(op, &h.res, &u.res))
            }
            (Some(op), Some(h), Some(u)) => fuse_artefact(op, &h.res, &u.res),
            _ => None,
        };
        let Some(why) = why else {
            return Some((report, ops));
        };
        *seen.entry(why).or_default() += 1;
        if opens(&ops[i]) {
            ops[i] = Op::Open(Vec::new(), 0, 0);
        } else {
            ops.remove(i);
            taken_out += 1;
        }
        let (_, h, _) = host_run_in_thread_as(HostJob::Replay(ops.clone()), top.to_vec(), who);
        host = h;
    }
}

/// The report's replay line for this test (the library's line names
/// `path_differential`), and how the steps are numbered: `taken_out` FUSE
/// artefacts left the generated sequence before the difference, so a step
/// here is that many places after the generator's.
fn mount_replay(report: String, seed: u64, who: Who, pt: Pt, taken_out: usize) -> String {
    if seed == 0 {
        return report;
    }
    let mut env = format!("UVFS_DIFF_SEED={seed}");
    if who == Who::User {
        env.push_str(" UVFS_DIFF_USER=1");
    }
    env.push_str(match pt {
        Pt::Off => "",
        Pt::On => " UVFS_DIFF_PASSTHROUGH=1",
        Pt::NoOpen => " UVFS_DIFF_NO_OPEN=1",
        Pt::Writeback => " UVFS_DIFF_WRITEBACK=1",
    });
    let replay = format!(
        "replay: {env} cargo test --profile test-release -p uvfs-fuse --test mount_differential \
         (steps numbered after {taken_out} FUSE artefact op(s) were taken out)"
    );
    report
        .lines()
        .map(|l| {
            if l.starts_with("replay: ") {
                replay.as_str()
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn check_seed_on_mount(
    seed: u64,
    who: Who,
    pt: Pt,
    seen: &mut std::collections::BTreeMap<&'static str, usize>,
) -> Option<String> {
    let top = top_for_run();
    let (ops, host, sandbox) =
        host_run_in_thread_as(HostJob::Generate(seed, OPS_PER_SEED), top.clone(), who);
    assert_eq!(sandbox, Sandbox::Chroot, "root runs the host in a chroot");
    first_real_difference(seed, who, pt, ops, host, &top, seen).map(|(r, _)| r)
}

fn run_seeds(who: Who, pt: Pt, default: u64) {
    if let Err(why) = can_mount() {
        eprintln!("skipped: {why}");
        return;
    }
    let user = std::env::var_os("UVFS_DIFF_USER").is_some();
    let seeds: Vec<u64> = match env_u64("UVFS_DIFF_SEED") {
        Some(s) if user == (who == Who::User) && pt == Pt::from_env() => vec![s],
        Some(_) => return,
        // UVFS_DIFF_SEEDS=<n>: more seeds (a soak), from 1.
        None => (1..=env_u64("UVFS_DIFF_SEEDS").unwrap_or(default))
            .chain(found_by_soaks(who, pt).iter().copied())
            .collect(),
    };
    let mut seen = std::collections::BTreeMap::new();
    for &seed in &seeds {
        if let Some(report) = check_seed_on_mount(seed, who, pt, &mut seen) {
            panic!("{report}");
        }
    }
    eprintln!(
        "mount_differential ({who:?}, passthrough {pt:?}): {} seeds x {OPS_PER_SEED} ops agree, host tmpfs and uvfs mount; FUSE artefacts taken out: {seen:?}",
        seeds.len()
    );
}

/// Seeds past the default count whose sequences found a difference in a
/// soak (`UVFS_DIFF_SEEDS=300`), run every time: no-open mode as a user,
/// seed 71 (a listing through an `O_NOATIME` directory fd stamped atime)
/// and seed 101 (a directory moved to another parent listed its old
/// parent as ".." from the kernel's listing cache); as root, seed 158 (a
/// listing continued after a seek missed an entry added since); docs/fuse.md,
/// "No-open mode".
fn found_by_soaks(who: Who, pt: Pt) -> &'static [u64] {
    match (who, pt) {
        (Who::User, Pt::NoOpen) => &[71, 101],
        // A listing continued after a seek read the kernel's cache from
        // before an entry was added (no-open, root).
        (Who::Root, Pt::NoOpen) => &[158],
        // A statx with AT_STATX_DONT_SYNC answered from attributes the
        // kernel had marked stale became the next stat's baseline (the
        // test's own fault, not the server's: see `DONT_SYNC_WHY`).
        (Who::Root, Pt::On) => &[121],
        _ => &[],
    }
}

#[test]
fn path_ops_on_a_mount_match_the_host_kernel() {
    run_seeds(Who::Root, Pt::Off, SEEDS);
}

/// The root pass on a mount with FUSE passthrough (`--passthrough on`):
/// regular files' reads and writes go to their memfds without the server.
/// `UVFS_DIFF_PASSTHROUGH=1` with `UVFS_DIFF_SEED=N` replays one seed of
/// the passthrough passes.
#[test]
fn path_ops_on_a_passthrough_mount_match_the_host_kernel() {
    run_seeds(Who::Root, Pt::On, SEEDS);
}

/// The user pass with passthrough.
#[test]
fn path_ops_as_a_user_on_a_passthrough_mount_match_the_host_kernel() {
    run_seeds(Who::User, Pt::On, USER_SEEDS);
}

/// The root pass in no-open mode (`--no-open`). `UVFS_DIFF_NO_OPEN=1`
/// with `UVFS_DIFF_SEED=N` replays one seed of the no-open passes.
#[test]
fn path_ops_on_a_no_open_mount_match_the_host_kernel() {
    run_seeds(Who::Root, Pt::NoOpen, SEEDS);
}

/// The user pass in no-open mode: every open's permission is the
/// kernel's alone (`default_permissions`), and must still match tmpfs.
#[test]
fn path_ops_as_a_user_on_a_no_open_mount_match_the_host_kernel() {
    run_seeds(Who::User, Pt::NoOpen, USER_SEEDS);
}

/// The root pass with the writeback cache (`--writeback`).
/// `UVFS_DIFF_WRITEBACK=1` with `UVFS_DIFF_SEED=N` replays one seed.
#[test]
fn path_ops_on_a_writeback_mount_match_the_host_kernel() {
    run_seeds(Who::Root, Pt::Writeback, SEEDS);
}

/// The user pass with the writeback cache: a write-only open is served
/// by a read-write handle, and the kernel's kept times are set as root.
#[test]
fn path_ops_as_a_user_on_a_writeback_mount_match_the_host_kernel() {
    run_seeds(Who::User, Pt::Writeback, USER_SEEDS);
}

/// The same as an unprivileged user on both sides (the mount's server
/// checks every request as its caller). `UVFS_DIFF_USER=1` with
/// `UVFS_DIFF_SEED=N` replays one seed of this pass.
#[test]
fn path_ops_as_a_user_on_a_mount_match_the_host_kernel() {
    run_seeds(Who::User, Pt::Off, USER_SEEDS);
}

/// `UVFS_DIFF_MINIMIZE=1` with `UVFS_DIFF_SEED=N` (and `UVFS_DIFF_USER=1`
/// for the user pass): shrinks the seed's sequence to a short one whose
/// last op still differs between the host and the mount, and prints it.
#[test]
fn minimize_a_mount_mismatch() {
    let (Some(seed), Some(_)) = (
        env_u64("UVFS_DIFF_SEED"),
        std::env::var_os("UVFS_DIFF_MINIMIZE"),
    ) else {
        return;
    };
    if can_mount().is_err() {
        return;
    }
    let who = if std::env::var_os("UVFS_DIFF_USER").is_some() {
        Who::User
    } else {
        Who::Root
    };
    let top = top_for_run();
    let (ops, host, _) =
        host_run_in_thread_as(HostJob::Generate(seed, OPS_PER_SEED), top.clone(), who);
    // The sequence with its FUSE artefacts taken out, as the test runs it;
    // trials that meet an artefact first do not count as reproducing.
    let pt = Pt::from_env();
    let Some((_, ops)) =
        first_real_difference(seed, who, pt, ops, host, &top, &mut Default::default())
    else {
        eprintln!("no mismatch to minimize");
        return;
    };
    let first = |o: &[Op]| {
        let (o, h, _) = host_run_in_thread_as(HostJob::Replay(o.to_vec()), top.clone(), who);
        let mut m = mount_run(o.clone(), top.clone(), who, pt);
        patch_stats(&o, &h, &mut m, pt, &mut Default::default());
        let (i, r) = compare_at(0, "mount", &o, &h, &m)?;
        let res = |l: &Log| l.obs.get(i).map_or(String::new(), |x| show_res(&x.res));
        let what = h.obs.get(i).map_or("", |x| x.what.as_str());
        Some((i, format!("{what} {} / {}", res(&h), res(&m)), r))
    };
    let small = minimize_with(&ops, first);
    match first(&small) {
        Some((_, _, r)) => eprintln!("minimized ({} ops):\n{r}", small.len()),
        None => eprintln!("no mismatch to minimize"),
    }
}
