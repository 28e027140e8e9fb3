//! Randomized schedules of whole-VFS concurrent scenarios under shuttle:
//! open/dup2/close/rename/unlink/stat/rmdir/mkdir racing across threads of one process
//! (one shared fd table, `Process::new_thread`) and across processes
//! (`Process::new`, `fork`). Built with `--cfg shuttle`, the crate's
//! `primitive` facade hands out shuttle's atomics, mutexes, condvars,
//! rwlocks and thread-locals, so shuttle may switch threads at every atomic
//! and lock operation of the real code. Shuttle treats atomics as SeqCst:
//! this finds logic races (a lost reference, a wrong file behind an fd, a
//! non-atomic rename), not memory-ordering bugs (the loom models' job).
//!
//! Each scenario ends with invariant checks: every result is one that some
//! serial order of the racing calls produces (the scenario's small model is
//! run over every interleaving that respects each thread's program order);
//! every fd 0..64 of every process maps to a live file or is `EBADF`; then,
//! with every process dropped, `check_consistency` (the dentry cache agrees
//! with tmpfs and every reference is accounted for), without dropping the
//! caches first: rmdir prunes the removed directory's cached children, so
//! no removed directory may be left cached.
//!
//! Run (scripts/test does):
//!   RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle \
//!       cargo test --release -p uvfs --test vfs_shuttle
//! `UVFS_SHUTTLE_ITERS=N` changes the schedules per scenario and preset.
//!
//! Replay: shuttle prints a failing schedule after the panic, as
//! `failing schedule: "…"` (a hex string wrapped over several lines; line
//! breaks are ignored). Rerun just that scenario and preset with it:
//!   UVFS_SHUTTLE_REPLAY='<schedule>' RUSTFLAGS="--cfg shuttle" \
//!       CARGO_TARGET_DIR=target/shuttle cargo test --release -p uvfs \
//!       --test vfs_shuttle <preset>::<scenario> -- --exact
//! which calls `shuttle::replay(scenario, schedule)` (same build, same
//! binary: schedules are only meaningful for the code they came from).
//! Shuttle also prints the failing seed; `SHUTTLE_RANDOM_SEED=<seed>` reruns
//! the random scheduler from it.
#![cfg(shuttle)]

use shuttle::thread;
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Vfs};

/// Schedules per scenario and preset: all eight tests take about 10 s.
const ITERS: usize = 2000;

fn iters() -> usize {
    std::env::var("UVFS_SHUTTLE_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(ITERS)
}

/// Runs `scenario` under `fast`: random schedules, or the one schedule in
/// `UVFS_SHUTTLE_REPLAY`.
fn check(scenario: fn(FastPaths), fast: FastPaths) {
    let f = move || scenario(fast);
    match std::env::var("UVFS_SHUTTLE_REPLAY") {
        Ok(schedule) => {
            // Shuttle wraps the string over several lines: paste it whole.
            let schedule: String = schedule.split_whitespace().collect();
            shuttle::replay(f, &schedule)
        }
        Err(_) => shuttle::check_random(f, iters()),
    }
}

/// A VFS with small caches: shuttle counts every lock and atomic of a hash
/// table walk (`drop_caches`, `check_consistency`) as a step, and small
/// caches make eviction race with the scenario too.
fn vfs(fast: FastPaths) -> std::sync::Arc<Vfs> {
    Vfs::builder()
        .fastpaths(fast)
        .dcache_limit(16)
        .icache_limit(16)
        .build()
}

/// The inode behind `fd`, or the errno.
fn ino(p: &mut Process, fd: i32) -> Result<u64, Errno> {
    p.fstat(fd).map(|s| s.st_ino)
}

/// Every fd below 64 maps to a live file (fstat works) or is EBADF.
fn fds_sound(p: &mut Process) {
    for fd in 0..64 {
        match p.fstat(fd) {
            Ok(st) => assert!(st.st_ino != 0, "fd {fd}: a file without an inode"),
            Err(Errno::EBADF) => {}
            Err(e) => panic!("fd {fd}: fstat gave {e:?}"),
        }
    }
}

/// With every process gone: the caches agree with tmpfs (no removed
/// directory kept by cached children: no `drop_caches` first).
fn quiescent(vfs: &Vfs) {
    if let Err(e) = vfs.check_consistency() {
        panic!("inconsistent after the run: {e}");
    }
}

/// Every interleaving of `threads` (each a program of op indices) that keeps
/// each thread's order, as a list of op sequences.
fn interleavings(threads: &[Vec<usize>]) -> Vec<Vec<usize>> {
    fn go(
        threads: &[Vec<usize>],
        at: &mut Vec<usize>,
        cur: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        let mut any = false;
        for t in 0..threads.len() {
            if at[t] < threads[t].len() {
                any = true;
                cur.push(threads[t][at[t]]);
                at[t] += 1;
                go(threads, at, cur, out);
                at[t] -= 1;
                cur.pop();
            }
        }
        if !any {
            out.push(cur.clone());
        }
    }
    let mut out = Vec::new();
    go(
        threads,
        &mut vec![0; threads.len()],
        &mut Vec::new(),
        &mut out,
    );
    out
}

// ---------------------------------------------------------------------
// Threads of one process: dup2 / close / fstat on one fd number.
// ---------------------------------------------------------------------

/// Thread 1 `dup2(a, 50)`, thread 2 `dup2(b, 50)`, thread 3 `close(50)`,
/// thread 4 `fstat(50)` twice, all sharing one fd table. Serial orders:
/// the close succeeds iff some dup2 ran before it; fd 50 ends as the file of
/// the last dup2 after the close, or closed; each fstat sees closed, a or b
/// as of some point consistent with the rest.
fn threads_dup2_close(fast: FastPaths) {
    let vfs = vfs(fast);
    let mut p = Process::new(&vfs).unwrap();
    let a = p.open("/a", O_CREAT | O_RDWR, 0o644).unwrap();
    let b = p.open("/b", O_CREAT | O_RDWR, 0o644).unwrap();
    let ia = ino(&mut p, a).unwrap();
    let ib = ino(&mut p, b).unwrap();

    let mut t1 = p.new_thread();
    let mut t2 = p.new_thread();
    let mut t3 = p.new_thread();
    let mut t4 = p.new_thread();
    let h1 = thread::spawn(move || t1.dup2(a, 50).map(|_| ()));
    let h2 = thread::spawn(move || t2.dup2(b, 50).map(|_| ()));
    let h3 = thread::spawn(move || t3.close(50));
    let h4 = thread::spawn(move || {
        let x = ino(&mut t4, 50);
        let y = ino(&mut t4, 50);
        (x, y)
    });
    let r1 = h1.join().unwrap();
    let r2 = h2.join().unwrap();
    let r3 = h3.join().unwrap();
    let (s1, s2) = h4.join().unwrap();
    let fin = ino(&mut p, 50);
    assert_eq!(
        (r1, r2),
        (Ok(()), Ok(())),
        "dup2 of open fds fails only on bad fds"
    );

    // The model: fd 50 holds None, Some(ia) or Some(ib).
    // ops: 0 dup2 a, 1 dup2 b, 2 close, 3 fstat, 4 fstat.
    let mut allowed = Vec::new();
    for order in interleavings(&[vec![0], vec![1], vec![2], vec![3, 4]]) {
        let mut fd50: Result<u64, Errno> = Err(Errno::EBADF);
        let (mut close, mut st) = (Ok(()), [Err(Errno::EBADF); 2]);
        for op in order {
            match op {
                0 => fd50 = Ok(ia),
                1 => fd50 = Ok(ib),
                2 => {
                    close = fd50.map(|_| ());
                    fd50 = Err(Errno::EBADF);
                }
                3 | 4 => st[op - 3] = fd50,
                _ => unreachable!(),
            }
        }
        allowed.push((close, st[0], st[1], fd50));
    }
    let seen = (r3, s1, s2, fin);
    assert!(
        allowed.contains(&seen),
        "no serial order gives close {r3:?}, fstats {s1:?} {s2:?}, final {fin:?} (a={ia}, b={ib})"
    );
    fds_sound(&mut p);
    drop(p);
    quiescent(&vfs);
}

// ---------------------------------------------------------------------
// Threads of one process: opens take distinct lowest fds, closes free them.
// ---------------------------------------------------------------------

/// Two threads each open their own file twice (closing the first), a third
/// dup2s and closes fd 4, sharing one fd table. Every fd an open returns is
/// distinct from the other thread's live fds and maps to the opener's file
/// until the opener closes it (nobody else closes fds 5 and up, and the
/// third thread touches only fd 4).
fn threads_open_close(fast: FastPaths) {
    let vfs = vfs(fast);
    let mut p = Process::new(&vfs).unwrap();
    for n in 0..3 {
        let fd = p.open(format!("/f{n}"), O_CREAT | O_RDWR, 0o644).unwrap();
        p.close(fd).unwrap();
    }
    // fds 0..=3 taken, so opens start at 4 (racing with the dup2 to 4).
    for _ in 0..4 {
        p.open("/f0", O_RDONLY, 0).unwrap();
    }
    let handles: Vec<_> = (1..3)
        .map(|n| {
            let mut t = p.new_thread();
            thread::spawn(move || {
                let path = format!("/f{n}");
                let want = t.stat(&path).unwrap().st_ino;
                let mut fds = Vec::new();
                for _ in 0..2 {
                    let fd = t.open(&path, O_RDONLY, 0).unwrap();
                    assert!(fd >= 4, "open returned an fd already in use: {fd}");
                    fds.push(fd);
                }
                for &fd in &fds {
                    if fd != 4 {
                        // fd 4 may be replaced by the dup2 thread.
                        assert_eq!(ino(&mut t, fd), Ok(want), "fd {fd} is not {path}");
                    }
                }
                for fd in fds {
                    if fd != 4 {
                        assert_eq!(t.close(fd), Ok(()));
                    }
                }
            })
        })
        .collect();
    let mut t = p.new_thread();
    let d = thread::spawn(move || {
        // EBUSY when an open has reserved fd 4 and not yet installed its
        // file (Linux answers the same in that window); the open then
        // keeps fd 4.
        let r = t.dup2(0, 4);
        assert!(matches!(r, Ok(4) | Err(Errno::EBUSY)), "dup2(0, 4): {r:?}");
        if r.is_ok() {
            let _ = t.close(4);
        }
    });
    for h in handles {
        h.join().unwrap();
    }
    d.join().unwrap();
    fds_sound(&mut p);
    let _ = p.close(4);
    for fd in 5..64 {
        assert_eq!(ino(&mut p, fd), Err(Errno::EBADF), "fd {fd} leaked");
    }
    drop(p);
    quiescent(&vfs);
}

// ---------------------------------------------------------------------
// Processes: rename / unlink / stat / open on two names.
// ---------------------------------------------------------------------

/// `/d/a` exists (inode X), `/d/b` exists (inode Y). Process 1 renames a
/// to b; process 2 unlinks b; process 3 stats a then b; process 4 opens b
/// and fstats what it got. Checked against every serial order (rename and
/// unlink are atomic in Linux: a lookup never misses a name that exists
/// throughout, nor finds one that is gone).
fn procs_rename_unlink_stat(fast: FastPaths) {
    let vfs = vfs(fast);
    let mut p0 = Process::new(&vfs).unwrap();
    p0.mkdir("/d", 0o755).unwrap();
    for n in ["/d/a", "/d/b"] {
        let fd = p0.open(n, O_CREAT | O_WRONLY, 0o644).unwrap();
        p0.close(fd).unwrap();
    }
    let x = p0.stat("/d/a").unwrap().st_ino;
    let y = p0.stat("/d/b").unwrap().st_ino;

    let mut p1 = Process::new(&vfs).unwrap();
    let mut p2 = Process::new(&vfs).unwrap();
    let mut p3 = Process::new(&vfs).unwrap();
    let mut p4 = Process::new(&vfs).unwrap();
    let h1 = thread::spawn(move || (p1.rename("/d/a", "/d/b"), p1));
    let h2 = thread::spawn(move || (p2.unlink("/d/b"), p2));
    let h3 = thread::spawn(move || {
        let sa = p3.stat("/d/a").map(|s| s.st_ino);
        let sb = p3.stat("/d/b").map(|s| s.st_ino);
        ((sa, sb), p3)
    });
    let h4 = thread::spawn(move || {
        let r = p4.open("/d/b", O_RDONLY, 0).map(|fd| {
            let i = ino(&mut p4, fd).expect("fstat of a fresh fd");
            p4.close(fd).unwrap();
            i
        });
        (r, p4)
    });
    let (rename, mut p1) = h1.join().unwrap();
    let (unlink, mut p2) = h2.join().unwrap();
    let ((sa, sb), mut p3) = h3.join().unwrap();
    let (opened, mut p4) = h4.join().unwrap();
    let fa = p0.stat("/d/a").map(|s| s.st_ino);
    let fb = p0.stat("/d/b").map(|s| s.st_ino);

    // Model: names a and b, each Some(inode) or None.
    // ops: 0 rename, 1 unlink, 2 stat a, 3 stat b, 4 open b.
    let mut allowed = Vec::new();
    for order in interleavings(&[vec![0], vec![1], vec![2, 3], vec![4]]) {
        let (mut a, mut b) = (Some(x), Some(y));
        let look = |n: Option<u64>| n.ok_or(Errno::ENOENT);
        let mut r = [Ok(0u64); 5];
        for op in order {
            match op {
                0 => {
                    r[0] = look(a).map(|_| 0);
                    if a.is_some() {
                        b = a.take();
                    }
                }
                1 => {
                    r[1] = look(b).map(|_| 0);
                    b = None;
                }
                2 => r[2] = look(a),
                3 | 4 => r[op] = look(b),
                _ => unreachable!(),
            }
        }
        allowed.push((r, look(a), look(b)));
    }
    let seen = (
        [rename.map(|_| 0), unlink.map(|_| 0), sa, sb, opened],
        fa,
        fb,
    );
    assert!(
        allowed.contains(&seen),
        "no serial order gives {seen:?} (a={x}, b={y})"
    );
    for p in [&mut p0, &mut p1, &mut p2, &mut p3, &mut p4] {
        fds_sound(p);
    }
    // Clean up so the quiescent tree is small; results depend on the race.
    let _ = p0.unlink("/d/a");
    let _ = p0.unlink("/d/b");
    assert_eq!(p0.rmdir("/d"), Ok(()));
    drop((p0, p1, p2, p3, p4));
    quiescent(&vfs);
}

// ---------------------------------------------------------------------
// Fork racing with close and dup2 in the parent's other thread.
// ---------------------------------------------------------------------

/// The parent holds `/f` at fd 3 and `/g` at fd 4. Its thread A forks while
/// thread B closes fd 3 and dup2s fd 4 onto fd 3. The child's table is a
/// copy taken at one instant: fd 3 is f (fork first), closed (between the
/// close and the dup2), or g (after both); fd 4 is always g. Then the child
/// renames `/g` to `/h` while the parent (thread B) unlinks `/f`: each
/// fd still reaches its file (fstat), and a closed fd stays EBADF.
fn fork_vs_close(fast: FastPaths) {
    let vfs = vfs(fast);
    let mut p = Process::new(&vfs).unwrap();
    let _ = p.open("/x", O_CREAT | O_RDWR, 0o644).unwrap(); // fd 0
    let _ = p.open("/x", O_RDONLY, 0).unwrap(); // fd 1
    let _ = p.open("/x", O_RDONLY, 0).unwrap(); // fd 2
    assert_eq!(p.open("/f", O_CREAT | O_RDWR, 0o644), Ok(3));
    assert_eq!(p.open("/g", O_CREAT | O_RDWR, 0o644), Ok(4));
    let f = ino(&mut p, 3).unwrap();
    let g = ino(&mut p, 4).unwrap();

    let mut a = p.new_thread();
    let mut b = p.new_thread();
    let ha = thread::spawn(move || {
        let mut child = a.fork().unwrap();
        let c3 = ino(&mut child, 3);
        assert_eq!(ino(&mut child, 4), Ok(g), "the child's fd 4 is not /g");
        let r = child.rename("/g", "/h");
        assert_eq!(r, Ok(()));
        // Its files survive the renames and unlinks racing in the parent.
        assert_eq!(ino(&mut child, 4), Ok(g));
        assert_eq!(ino(&mut child, 3), c3);
        fds_sound(&mut child);
        (c3, child)
    });
    let hb = thread::spawn(move || {
        assert_eq!(b.close(3), Ok(()));
        assert_eq!(b.dup2(4, 3), Ok(3));
        assert_eq!(b.unlink("/f"), Ok(()));
        assert_eq!(ino(&mut b, 3), Ok(g));
    });
    let (c3, child) = ha.join().unwrap();
    hb.join().unwrap();
    assert!(
        [Ok(f), Err(Errno::EBADF), Ok(g)].contains(&c3),
        "the child's fd 3 is {c3:?} (f={f}, g={g})"
    );
    assert_eq!(p.stat("/h").map(|s| s.st_ino), Ok(g));
    assert_eq!(p.stat("/g").map(|s| s.st_ino), Err(Errno::ENOENT));
    assert_eq!(p.stat("/f").map(|s| s.st_ino), Err(Errno::ENOENT));
    fds_sound(&mut p);
    drop(child);
    drop(p);
    quiescent(&vfs);
}

// ---------------------------------------------------------------------
// rmdir and rename over a directory, racing lookups and creations inside.
// ---------------------------------------------------------------------

/// `/d` is empty, with `x` cached as negative; P1 removes it; P2 (its cwd is
/// `/d`) creates `z` there, then unlinks it; P3 looks up `x` by path and
/// `y` from an fd on `/d`. Serial orders: the rmdir fails with ENOTEMPTY
/// iff it falls between the create and the unlink; the create fails with
/// ENOENT iff it follows the rmdir (and then so does the unlink); every
/// lookup is ENOENT. At the end, with every process and fd gone, the
/// caches hold nothing of a removed `/d` (no `drop_caches`).
fn procs_rmdir_vs_create_and_lookups(fast: FastPaths) {
    let vfs = vfs(fast);
    let mut p0 = Process::new(&vfs).unwrap();
    p0.mkdir("/d", 0o755).unwrap();
    assert_eq!(p0.stat("/d/x").map(|_| ()), Err(Errno::ENOENT));
    let mut p1 = Process::new(&vfs).unwrap();
    let mut p2 = Process::new(&vfs).unwrap();
    p2.chdir("/d").unwrap();
    let mut p3 = Process::new(&vfs).unwrap();
    let dfd = p3.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let h1 = thread::spawn(move || (p1.rmdir("/d"), p1));
    let h2 = thread::spawn(move || {
        let c = p2.open("z", O_CREAT | O_RDWR, 0o644).map(|fd| {
            p2.close(fd).unwrap();
        });
        let u = p2.unlink("z");
        ((c, u), p2)
    });
    let h3 = thread::spawn(move || {
        let a = p3.stat("/d/x").map(|_| ());
        let b = p3.fstatat(dfd, "y", 0).map(|_| ());
        assert!(p3.fstat(dfd).is_ok(), "fstat of the directory fd");
        p3.close(dfd).unwrap();
        ((a, b), p3)
    });
    let (rmdir, p1) = h1.join().unwrap();
    let ((create, unlink), p2) = h2.join().unwrap();
    let ((sx, sy), p3) = h3.join().unwrap();
    assert_eq!((sx, sy), (Err(Errno::ENOENT), Err(Errno::ENOENT)));
    // Model: ops 0 rmdir, 1 create z, 2 unlink z.
    let mut allowed = Vec::new();
    for order in interleavings(&[vec![0], vec![1, 2]]) {
        let (mut alive, mut z) = (true, false);
        let mut r = [Ok(()); 3];
        for op in order {
            r[op] = match op {
                0 if z => Err(Errno::ENOTEMPTY),
                0 => {
                    alive = false;
                    Ok(())
                }
                1 if alive => {
                    z = true;
                    Ok(())
                }
                2 if z => {
                    z = false;
                    Ok(())
                }
                1 | 2 => Err(Errno::ENOENT),
                _ => unreachable!(),
            };
        }
        allowed.push(r);
    }
    let seen = [rmdir, create, unlink];
    assert!(allowed.contains(&seen), "no serial order gives {seen:?}");
    drop((p1, p2, p3));
    if rmdir.is_err() {
        assert_eq!(p0.rmdir("/d"), Ok(()));
    }
    drop(p0);
    quiescent(&vfs);
    // "/", and a negative "d" if P3's lookup came after the rmdir.
    assert!(vfs.dcache_len() <= 2, "{} dentries left", vfs.dcache_len());
}

/// `/a` and `/b` are empty directories with negative entries cached in
/// each (`a/n`, `b/x`); P1 renames `/a` over `/b`; P2 (its cwd is `/b`)
/// looks `x` up, makes `sub` there and removes it; P3 looks up `/b/x` and `/b/n`. The
/// rename fails with ENOTEMPTY iff it falls between P2's mkdir and rmdir;
/// P2's calls fail with ENOENT iff they follow it (the old `/b` is dead);
/// every lookup is ENOENT. At the end the caches hold `/`, the directory
/// now named `b` (or both, if the rename failed) and negative entries in
/// live directories only.
fn procs_rename_over_dir_vs_mkdir(fast: FastPaths) {
    let vfs = vfs(fast);
    let mut p0 = Process::new(&vfs).unwrap();
    p0.mkdir("/a", 0o755).unwrap();
    p0.mkdir("/b", 0o755).unwrap();
    assert_eq!(p0.stat("/a/n").map(|_| ()), Err(Errno::ENOENT));
    assert_eq!(p0.stat("/b/x").map(|_| ()), Err(Errno::ENOENT));
    let ia = p0.stat("/a").unwrap().st_ino;
    let mut p1 = Process::new(&vfs).unwrap();
    let mut p2 = Process::new(&vfs).unwrap();
    p2.chdir("/b").unwrap();
    let mut p3 = Process::new(&vfs).unwrap();
    let h1 = thread::spawn(move || (p1.rename("/a", "/b"), p1));
    let h2 = thread::spawn(move || {
        // Lookups first (ENOENT whenever they run), so the rename is as
        // likely to come before the mkdir as after it.
        for _ in 0..2 {
            assert_eq!(p2.stat("x").map(|_| ()), Err(Errno::ENOENT));
        }
        let m = p2.mkdir("sub", 0o755);
        let r = p2.rmdir("sub");
        ((m, r), p2)
    });
    let h3 = thread::spawn(move || {
        let x = p3.stat("/b/x").map(|_| ());
        let n = p3.stat("/b/n").map(|_| ());
        ((x, n), p3)
    });
    let (rename, p1) = h1.join().unwrap();
    let ((mk, rm), p2) = h2.join().unwrap();
    let ((sx, sn), p3) = h3.join().unwrap();
    assert_eq!((sx, sn), (Err(Errno::ENOENT), Err(Errno::ENOENT)));
    // Model: ops 0 rename, 1 mkdir sub, 2 rmdir sub (in the old b).
    let mut allowed = Vec::new();
    for order in interleavings(&[vec![0], vec![1, 2]]) {
        let (mut alive, mut sub) = (true, false);
        let mut r = [Ok(()); 3];
        for op in order {
            r[op] = match op {
                0 if sub => Err(Errno::ENOTEMPTY),
                0 => {
                    alive = false;
                    Ok(())
                }
                1 if alive => {
                    sub = true;
                    Ok(())
                }
                2 if sub => {
                    sub = false;
                    Ok(())
                }
                1 | 2 => Err(Errno::ENOENT),
                _ => unreachable!(),
            };
        }
        allowed.push(r);
    }
    let seen = [rename, mk, rm];
    assert!(allowed.contains(&seen), "no serial order gives {seen:?}");
    if rename.is_ok() {
        assert_eq!(p0.stat("/b").map(|s| s.st_ino), Ok(ia));
    }
    drop((p0, p1, p2, p3));
    quiescent(&vfs);
}

fn flock_of(ty: i32, start: i64, len: i64) -> uvfs::Flock {
    uvfs::Flock {
        l_type: ty as i16,
        l_whence: SEEK_SET as i16,
        l_start: start,
        l_len: len,
        l_pid: 0,
    }
}

/// Advisory locks: process B sleeps in F_SETLKW on a byte process A holds;
/// a thread of A closes a dup of A's fd (dropping A's locks: any close),
/// racing a fork of A whose child exits and a third process's F_SETLK on
/// the byte (granted or EAGAIN; released at once). B must always be
/// granted (a lost wake-up leaves every thread blocked, which shuttle
/// reports), and with every process gone the file's lock table is empty.
fn locks_setlkw_vs_close(fast: FastPaths) {
    let vfs = vfs(fast);
    let mut observer = Process::new(&vfs).unwrap();
    let ofd = observer.open("/f", O_RDWR | O_CREAT, 0o644).unwrap();
    let mut a = Process::new(&vfs).unwrap();
    let afd = a.open("/f", O_RDWR, 0).unwrap();
    let adup = a.dup(afd).unwrap();
    a.fcntl_lock(afd, F_SETLK, &mut flock_of(F_WRLCK, 0, 10))
        .unwrap();
    let mut a2 = a.new_thread();
    let mut b = Process::new(&vfs).unwrap();
    let bfd = b.open("/f", O_RDWR, 0).unwrap();
    let mut c = Process::new(&vfs).unwrap();
    let cfd = c.open("/f", O_RDONLY, 0).unwrap();
    let tb = thread::spawn(move || {
        let r = b.fcntl_lock(bfd, F_SETLKW, &mut flock_of(F_WRLCK, 5, 1));
        (r, b)
    });
    let ta = thread::spawn(move || {
        let child = a2.fork().unwrap();
        drop(child);
        a2.close(adup).unwrap();
        a2
    });
    let tc = thread::spawn(move || {
        let r = c.fcntl_lock(cfd, F_SETLK, &mut flock_of(F_RDLCK, 5, 1));
        assert!(matches!(r, Ok(0) | Err(Errno::EAGAIN)), "{r:?}");
        c.close(cfd).unwrap();
        c
    });
    let (r, mut b) = tb.join().unwrap();
    assert_eq!(r, Ok(0));
    let mut probe = flock_of(F_WRLCK, 0, 0);
    observer.fcntl_lock(ofd, F_GETLK, &mut probe).unwrap();
    assert_eq!(
        (probe.l_start, probe.l_len, probe.l_pid),
        (5, 1, b.getpid())
    );
    b.close(bfd).unwrap();
    drop((ta.join().unwrap(), tc.join().unwrap(), a, b));
    assert_eq!(
        observer.lock_stats(ofd).unwrap(),
        uvfs::LockStats::default()
    );
    drop(observer);
    quiescent(&vfs);
}

/// A FIFO between two processes and a thread: a reader opens blocking
/// (waiting for a writer) and reads to end of file; a writer process
/// opens blocking (waiting for a reader) and writes 5,000 bytes in two
/// writes into a pipe shrunk to one page, so it also waits for room; a
/// third thread forks the reader's process and drops the child, racing
/// both (the child's copies of the fds are released). The reader gets
/// every byte in order, then 0; the pipe is gone afterwards. (A third
/// opener would race legitimately: a writer that leaves at once ends the
/// reader's stream, a reader that leaves at once gives the writer
/// `EPIPE`; the loom models cover those.)
fn fifo_rendezvous(fast: FastPaths) {
    let vfs = vfs(fast);
    let mut r = Process::new(&vfs).unwrap();
    r.mkfifo("/f", 0o666).unwrap();
    let mut w = Process::new(&vfs).unwrap();
    let mut x = r.new_thread();
    let tr = thread::spawn(move || {
        let fd = r.open("/f", O_RDONLY, 0).unwrap();
        let mut got = Vec::new();
        let mut b = [0u8; 1500];
        loop {
            match r.read(fd, &mut b).unwrap() {
                0 => break,
                n => got.extend_from_slice(&b[..n]),
            }
        }
        r.close(fd).unwrap();
        (got, r)
    });
    let tw = thread::spawn(move || {
        let fd = w.open("/f", O_WRONLY, 0).unwrap();
        assert_eq!(w.fcntl(fd, F_SETPIPE_SZ, 4096), Ok(4096));
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 253) as u8).collect();
        assert_eq!(w.write(fd, &data[..3000]), Ok(3000));
        assert_eq!(w.write(fd, &data[3000..]), Ok(2000));
        w.close(fd).unwrap();
        w
    });
    let tx = thread::spawn(move || {
        drop(x.fork().unwrap());
        x
    });
    let (got, mut r) = tr.join().unwrap();
    let want: Vec<u8> = (0..5000u32).map(|i| (i % 253) as u8).collect();
    let w = tw.join().unwrap();
    assert_eq!(got, want);
    let x = tx.join().unwrap();
    drop((w, x));
    let fd = r.open("/f", O_RDWR | O_NONBLOCK, 0).unwrap();
    assert_eq!(r.read(fd, &mut [0u8; 1]), Err(Errno::EAGAIN));
    r.close(fd).unwrap();
    drop(r);
    quiescent(&vfs);
}

/// One test per scenario and preset (the seeds' fast paths and the stock
/// ones are different code).
macro_rules! tests {
    ($($name:ident: $scenario:ident;)*) => {
        mod seeds {
            use super::*;
            $(#[test]
            fn $name() {
                check(super::$scenario, FastPaths::seeds());
            })*
        }
        mod stock {
            use super::*;
            $(#[test]
            fn $name() {
                check(super::$scenario, FastPaths::stock());
            })*
        }
    };
}

tests! {
    threads_dup2_close: threads_dup2_close;
    threads_open_close: threads_open_close;
    procs_rename_unlink_stat: procs_rename_unlink_stat;
    fork_vs_close: fork_vs_close;
    procs_rmdir_vs_create_and_lookups: procs_rmdir_vs_create_and_lookups;
    procs_rename_over_dir_vs_mkdir: procs_rename_over_dir_vs_mkdir;
    locks_setlkw_vs_close: locks_setlkw_vs_close;
    fifo_rendezvous: fifo_rendezvous;
}
