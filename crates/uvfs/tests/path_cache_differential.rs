//! The full-path cache (`path_cache`) against the per-component walk: a
//! seeded sequence of namespace changes — renames of files and directories
//! across levels, chmod and chown of ancestors, mounts, symlinks replaced,
//! unlink and re-create, mkdir and rmdir — interleaved with lookups (stat,
//! lstat, fstatat from a dirfd, open of a directory, access, chdir) by
//! four credentials from their own cwds, each lookup made three times in a
//! row so the last can be answered from the cache (with `path_cache_admit`
//! a path fills the cache on its second miss). The same sequence runs with
//! the cache on and off, under both presets (seeds and stock for the other
//! switches), and with a dentry cache small enough that evictions keep
//! ending directories' completeness (the switch's other half: a miss in a
//! directory made by mkdir skips the file system); every result must be the
//! same. The walk with the cache off
//! is the one the host differential tests (`path_differential` and the
//! others) hold to the kernel, so it is the oracle here.
//!
//! Two more race lookups of a file 12 components deep against a renamer (a
//! plain rename, and `RENAME_EXCHANGE`) on several threads and check, by
//! counting renames, that no lookup begun after a rename returned sees the
//! old target.

mod support;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use support::rng::Rng;
use support::vfs::user;
use uvfs::cred::Cred;
use uvfs::fs::RENAME_EXCHANGE;
use uvfs::fs::tmpfs::Tmpfs;
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Vfs};

const STEPS: usize = 1500;

/// A path of 1 to 6 components over a small alphabet (so lookups meet the
/// names the changes make), absolute or relative, now and then with `.`,
/// `..` or a trailing slash.
fn path(rng: &mut Rng) -> String {
    let names = ["a", "b", "c", "f", "l", "m"];
    let depth = 1 + rng.below(6);
    let mut parts: Vec<&str> = (0..depth).map(|_| rng.pick(&names)).collect();
    if rng.chance(10) {
        let at = rng.below(parts.len());
        parts.insert(at, if rng.chance(50) { "." } else { ".." });
    }
    let mut s = parts.join("/");
    if rng.chance(60) {
        s.insert(0, '/');
    }
    if rng.chance(8) {
        s.push('/');
    }
    s
}

/// A directory-ish path (for chmod, mount, chdir targets).
fn dir_path(rng: &mut Rng) -> String {
    let names = ["a", "b", "c"];
    let depth = 1 + rng.below(4);
    let parts: Vec<&str> = (0..depth).map(|_| rng.pick(&names)).collect();
    format!("/{}", parts.join("/"))
}

fn show<T>(r: Result<T, Errno>, f: impl FnOnce(T) -> String) -> String {
    match r {
        Ok(v) => f(v),
        Err(e) => format!("{e:?}"),
    }
}

fn st(s: uvfs::Stat) -> String {
    format!(
        "ino {} mode {:o} uid {} nlink {}",
        s.st_ino, s.st_mode, s.st_uid, s.st_nlink
    )
}

struct World {
    vfs: Arc<Vfs>,
    /// Root, two users (one in the other's group) and one with more
    /// supplementary groups than the cache keys (it always walks).
    procs: Vec<Process>,
    /// Each process's directory fd (opened with `O_PATH`), or -1.
    dirfds: Vec<i32>,
    mounts: usize,
    /// Changes made by any of the processes, not root alone (so that a
    /// create or a removal meets search permission denied on the way to
    /// its directory: `rcu_parent`'s fallback).
    any_changer: bool,
}

impl World {
    /// `dcache_limit`: unused dentries kept (small: evictions, which end a
    /// directory's completeness, happen all along).
    fn new(fast: FastPaths, dcache_limit: usize) -> World {
        let vfs = Vfs::builder()
            .fastpaths(fast)
            .dcache_limit(dcache_limit)
            .build();
        let mut root = Process::new(&vfs).unwrap();
        for d in ["/a", "/a/b", "/a/b/c", "/b", "/b/c", "/c"] {
            root.mkdir(d, 0o755).unwrap();
        }
        for f in ["/a/f", "/a/b/f", "/a/b/c/f", "/b/f"] {
            let fd = root.open(f, O_CREAT | O_WRONLY, 0o644).unwrap();
            root.close(fd).unwrap();
        }
        root.symlink("b", "/a/l").unwrap();
        root.chown("/a/b", 1000, 1000).unwrap();
        let creds: [Cred; 3] = [
            user(1000, 1000),
            Cred::user(1001, 1001, vec![1000]),
            Cred::user(1002, 1002, vec![1, 2, 3, 4, 5, 1000]),
        ];
        let mut procs = vec![root];
        for c in creds {
            let mut p = Process::new(&vfs).unwrap();
            p.set_cred(c);
            procs.push(p);
        }
        let dirfds = vec![-1; procs.len()];
        World {
            vfs,
            procs,
            dirfds,
            mounts: 0,
            any_changer: false,
        }
    }

    /// One change, made by root (or, with `any_changer`, by any process,
    /// from its cwd for a relative path).
    fn change(&mut self, rng: &mut Rng) -> String {
        let who = if self.any_changer {
            rng.below(self.procs.len())
        } else {
            0
        };
        let p = &mut self.procs[who];
        let (a, b) = (path(rng), path(rng));
        match rng.below(12) {
            0 | 1 => format!("rename {a} {b} -> {:?}", p.rename(&a, &b)),
            2 => {
                let (x, y) = (dir_path(rng), dir_path(rng));
                format!("rename {x} {y} -> {:?}", p.rename(&x, &y))
            }
            3 | 4 => {
                let d = dir_path(rng);
                let mode = rng.pick(&[0o755, 0o700, 0o711, 0o750, 0o705, 0o000, 0o770]);
                format!("chmod {d} {mode:o} -> {:?}", p.chmod(&d, mode))
            }
            5 => {
                let d = dir_path(rng);
                let (u, g) = (rng.pick(&[0, 1000, 1001]), rng.pick(&[0, 1000, 1001]));
                format!("chown {d} {u} {g} -> {:?}", p.chown(&d, u, g))
            }
            6 if self.mounts < 4 => {
                let d = dir_path(rng);
                let r = p.mount(&d, Tmpfs::new(Default::default()));
                if r.is_ok() {
                    self.mounts += 1;
                    // Something to find inside.
                    let _ = p.mkdir(format!("{d}/a"), 0o755);
                    let _ = p.mkdir(format!("{d}/b"), 0o711);
                }
                format!("mount {d} -> {r:?}")
            }
            7 => {
                // A symlink, made beside and renamed over `a` (replacing
                // whatever was there, when the types allow).
                let target = rng.pick(&["b", "c", "..", "/a", "/a/b/c", "f", "nowhere"]);
                let tmp = format!("/tmp-link{}", rng.below(1000));
                let r1 = p.symlink(target, &tmp);
                let r2 = p.rename(&tmp, &a);
                let _ = p.unlink(&tmp);
                format!("symlink {target} over {a} -> {r1:?} {r2:?}")
            }
            8 => {
                let r1 = p.unlink(&a);
                let fd = p.open(&a, O_CREAT | O_WRONLY, 0o640);
                let r2 = fd.map(|fd| p.close(fd));
                format!("unlink+create {a} -> {r1:?} {r2:?}")
            }
            9 => format!("mkdir {a} -> {:?}", p.mkdir(&a, 0o755)),
            10 => format!("rmdir {a} -> {:?}", p.rmdir(&a)),
            _ => {
                let r = p.open(&a, O_CREAT | O_WRONLY, 0o644);
                let r = r.map(|fd| p.close(fd));
                format!("create {a} -> {r:?}")
            }
        }
    }

    /// One lookup by process `i`, made three times (with
    /// `path_cache_admit` the second fills the cache and the third may come
    /// from it; without, the second may); all results are logged.
    fn lookup(&mut self, i: usize, rng: &mut Rng) -> String {
        let a = path(rng);
        let dirfd = self.dirfds[i];
        let kind = rng.below(7);
        let p = &mut self.procs[i];
        let once = |p: &mut Process| match kind {
            0 => show(p.stat(&a), st),
            1 => show(p.lstat(&a), st),
            2 => show(p.fstatat(dirfd, &a, 0), st),
            3 => show(p.fstatat(dirfd, &a, AT_SYMLINK_NOFOLLOW), st),
            4 => show(p.open(&a, O_PATH | O_DIRECTORY, 0), |fd| {
                let s = show(p.fstat(fd), st);
                p.close(fd).unwrap();
                s
            }),
            5 => show(p.access(&a, X_OK), |()| "ok".into()),
            _ => show(p.open(&a, O_RDONLY, 0), |fd| {
                let s = show(p.fstat(fd), st);
                p.close(fd).unwrap();
                s
            }),
        };
        let first = once(p);
        let second = once(p);
        let third = once(p);
        format!("p{i} {kind} {a} -> {first} / {second} / {third}")
    }

    /// Moves process `i`'s cwd or directory fd.
    fn move_start(&mut self, i: usize, rng: &mut Rng) -> String {
        let d = dir_path(rng);
        let p = &mut self.procs[i];
        if rng.chance(50) {
            return format!("p{i} chdir {d} -> {:?}", p.chdir(&d));
        }
        if self.dirfds[i] >= 0 {
            p.close(self.dirfds[i]).unwrap();
            self.dirfds[i] = -1;
        }
        let r = p.open(&d, O_PATH | O_DIRECTORY, 0);
        if let Ok(fd) = r {
            self.dirfds[i] = fd;
        }
        format!("p{i} dirfd {d} -> {}", r.is_ok())
    }

    fn run(mut self, seed: u64) -> Vec<String> {
        let mut rng = Rng::new(seed);
        let mut log = Vec::new();
        for step in 0..STEPS {
            let i = rng.below(self.procs.len());
            let e = match rng.below(10) {
                0..=2 => self.change(&mut rng),
                3 => self.move_start(i, &mut rng),
                _ => self.lookup(i, &mut rng),
            };
            log.push(format!("{step}: {e}"));
        }
        for (p, fd) in self.procs.iter_mut().zip(&self.dirfds) {
            if *fd >= 0 {
                p.close(*fd).unwrap();
            }
        }
        self.procs.clear();
        self.vfs.check_consistency().unwrap();
        log
    }
}

#[test]
fn cache_on_and_off_agree_under_both_presets() {
    let runs = [
        (FastPaths::seeds(), 1 << 20, [1u64, 0x16, 0xcafe]),
        (FastPaths::stock(), 1 << 20, [1, 0x16, 4242]),
        (FastPaths::seeds(), 12, [7, 0xbeef, 99]),
    ];
    for (preset, limit, seeds) in runs {
        for seed in seeds {
            let off = World::new(preset.with("path_cache", false), limit).run(seed);
            let on = World::new(preset.with("path_cache", true), limit).run(seed);
            // The sequence must exercise what it claims to.
            for what in ["Ok(())", "EACCES", "ENOENT", "ENOTDIR", "ino "] {
                assert!(
                    off.iter().any(|l| l.contains(what)),
                    "seed {seed}: no {what} in the run"
                );
            }
            for (x, y) in off.iter().zip(&on) {
                assert_eq!(
                    x, y,
                    "{preset} dcache limit {limit} seed {seed}: cache off (left) vs on (right)"
                );
            }
            assert_eq!(off.len(), on.len());
        }
    }
}

/// `stat_noref_walk` (a stat the path cache misses reads the attributes at
/// the end of the lockless walk, without a reference) against the walk
/// that takes one: the seeded sequence of changes and lookups, by every
/// credential, under both presets and with a dentry cache of 12, every
/// result the same (the stats among them: "ino ..." lines, and the errors
/// of the walk, `EACCES` included).
#[test]
fn stat_noref_walk_on_and_off_agree() {
    let runs = [
        (FastPaths::seeds(), 1 << 20, [2u64, 0x18, 0xd00d]),
        (
            FastPaths::stock()
                .with("path_cache", true)
                .with("stat_noref", true),
            1 << 20,
            [2, 9, 31],
        ),
        (FastPaths::seeds(), 12, [13, 0xace, 97]),
    ];
    for (preset, limit, seeds) in runs {
        for seed in seeds {
            let world = |on: bool| {
                let mut w = World::new(preset.with("stat_noref_walk", on), limit);
                w.any_changer = true;
                w.run(seed)
            };
            let (off, on) = (world(false), world(true));
            for what in ["Ok(())", "EACCES", "ENOENT", "ENOTDIR", "ino "] {
                assert!(
                    off.iter().any(|l| l.contains(what)),
                    "seed {seed}: no {what} in the run"
                );
            }
            for (x, y) in off.iter().zip(&on) {
                assert_eq!(
                    x, y,
                    "{preset} dcache limit {limit} seed {seed}: stat_noref_walk off (left) vs on (right)"
                );
            }
            assert_eq!(off.len(), on.len());
        }
    }
}

/// `rcu_parent` (the directory of a name to create or remove found by the
/// lockless walk) against the walk with references, changes made by every
/// credential (so search permission is denied on the way now and then),
/// under both presets, with and without the path cache and with a small
/// dentry cache: every result the same.
#[test]
fn rcu_parent_on_and_off_agree() {
    changes_agree(
        "rcu_parent",
        &[
            (FastPaths::seeds(), 1 << 20, [3u64, 0x17, 0xface]),
            (FastPaths::stock(), 1 << 20, [3, 0x17, 777]),
            (
                FastPaths::seeds().with("path_cache", false),
                1 << 20,
                [5, 6, 8],
            ),
            (FastPaths::seeds(), 12, [11, 0xbee, 98]),
        ],
    );
}

/// `path_cache_parent` (the directory of a name to create or remove found
/// through the path cache's entry of the path's directory part) against
/// the lockless parent walk, as above: changes by every credential, so
/// entries are filled and asked by users who may not search everywhere.
#[test]
fn path_cache_parent_on_and_off_agree() {
    changes_agree(
        "path_cache_parent",
        &[
            (FastPaths::seeds(), 1 << 20, [21u64, 0x21, 0xfade]),
            (
                FastPaths::stock()
                    .with("path_cache", true)
                    .with("rcu_parent", true),
                1 << 20,
                [22, 23, 24],
            ),
            (FastPaths::seeds(), 12, [25, 0xbad, 26]),
        ],
    );
}

/// `path_cache_dir_gen` (a file's unlink, chmod or chown leaves the other
/// entries valid) against every change moving the generation, as above.
#[test]
fn path_cache_dir_gen_on_and_off_agree() {
    changes_agree(
        "path_cache_dir_gen",
        &[
            (FastPaths::seeds(), 1 << 20, [31u64, 0x31, 0xdead]),
            (
                FastPaths::stock().with("path_cache", true),
                1 << 20,
                [32, 33, 34],
            ),
            (FastPaths::seeds(), 12, [35, 0xc0de, 36]),
        ],
    );
}

/// The seeded sequence with `switch` off and on, changes made by every
/// credential, for each (preset, dentry cache limit, seeds): every result
/// the same, and the run made changes that succeeded and failed with each
/// of the errors a walk gives.
fn changes_agree(switch: &str, runs: &[(FastPaths, usize, [u64; 3])]) {
    for &(preset, limit, seeds) in runs {
        for seed in seeds {
            let world = |on: bool| {
                let mut w = World::new(preset.with(switch, on), limit);
                w.any_changer = true;
                w.run(seed)
            };
            let (off, on) = (world(false), world(true));
            // Changes, not lookups: each line is "STEP: WHAT ...".
            let made = [
                "rename",
                "chmod",
                "chown",
                "mount",
                "symlink",
                "unlink+create",
                "mkdir",
                "rmdir",
                "create",
            ];
            let changes = |what: &str| {
                off.iter().any(|l| {
                    let e = l.split_once(": ").map_or("", |(_, e)| e);
                    made.iter().any(|m| e.starts_with(&format!("{m} "))) && e.contains(what)
                })
            };
            for what in ["Ok(())", "EACCES", "ENOENT", "ENOTDIR", "EEXIST"] {
                assert!(changes(what), "seed {seed}: no {what} in the run");
            }
            for (x, y) in off.iter().zip(&on) {
                assert_eq!(
                    x, y,
                    "{preset} dcache limit {limit} seed {seed}: {switch} off (left) vs on (right)"
                );
            }
            assert_eq!(off.len(), on.len());
        }
    }
}

/// The counters a renamer and its readers share in [`race`] and
/// [`race_create`].
struct Flags<'a> {
    /// Bumped before and after each rename (odd: one is under way).
    done: &'a AtomicU64,
    /// Checks the readers counted.
    checks: &'a AtomicU64,
    /// Set by a reader that saw a wrong answer.
    failed: &'a AtomicBool,
    /// Tells the readers to finish.
    stop: &'a AtomicBool,
}

/// The renamer's side of both races: `renames` renames of /x/a to /x/b
/// and back (or exchanges of the two). After each it waits until the
/// readers have counted three more checks, so that one is of this state
/// (each reader may still count one of the state before), or until one
/// failed (then it stops at once). Returns the readers' checks, summed.
fn renamer<'s>(
    p: &mut Process,
    renames: u64,
    exchange: bool,
    f: Flags<'_>,
    readers: Vec<std::thread::ScopedJoinHandle<'s, Result<u64, String>>>,
) -> u64 {
    for i in 0..renames {
        f.done.fetch_add(1, Ordering::Release);
        if exchange {
            p.renameat2(AT_FDCWD, "/x/a", AT_FDCWD, "/x/b", RENAME_EXCHANGE)
                .unwrap();
        } else if i % 2 == 0 {
            p.rename("/x/a", "/x/b").unwrap();
        } else {
            p.rename("/x/b", "/x/a").unwrap();
        }
        f.done.fetch_add(1, Ordering::Release);
        let target = f.checks.load(Ordering::Acquire) + 3;
        while f.checks.load(Ordering::Acquire) < target && !f.failed.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        if f.failed.load(Ordering::Acquire) {
            break;
        }
    }
    f.stop.store(true, Ordering::Release);
    readers
        .into_iter()
        .map(|r| r.join().unwrap().unwrap_or_else(|e| panic!("{e}")))
        .sum()
}

/// Lookups racing a renamer. The renamer moves `/x/a` to `/x/b` and back
/// (or, with `exchange`, swaps `/x/a` and `/x/b`, two trees of the same
/// shape), counting each rename's start and its return (odd: one in
/// progress); a reader that read the count before and after its lookup of
/// a file 12 components deep and found it unchanged and even knows which
/// file the path named for the whole lookup, and checks it got that one.
/// Counted in renames, never in time. The exchange makes no negative entry
/// and kills no dentry, so only the rename's own invalidation keeps the
/// cache honest there.
fn race(fast: FastPaths, exchange: bool) {
    const RENAMES: u64 = 600;
    let vfs = Vfs::new(fast);
    let mut p = Process::new(&vfs).unwrap();
    p.mkdir("/x", 0o755).unwrap();
    let tree = |p: &mut Process, top: &str| -> (String, u64) {
        let mut dir = top.to_owned();
        p.mkdir(&dir, 0o755).unwrap();
        for i in 1..=10 {
            dir = format!("{dir}/d{i}");
            p.mkdir(&dir, 0o755).unwrap();
        }
        let file = format!("{dir}/f");
        let fd = p.open(&file, O_CREAT | O_WRONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        let ino = p.stat(&file).unwrap().st_ino;
        (file, ino)
    };
    let (deep_a, ino_a) = tree(&mut p, "/x/a");
    let (deep_b, ino_b) = if exchange {
        tree(&mut p, "/x/b")
    } else {
        (deep_a.replacen("/x/a/", "/x/b/", 1), 0)
    };
    // What each path names while `done / 2` is even (`at_a`) or odd.
    let expect = move |path_a: bool, at_a: bool| -> Option<u64> {
        match (exchange, path_a == at_a) {
            // Renamed: the path names the tree where it is, or nothing.
            (false, true) => Some(ino_a),
            (false, false) => None,
            // Exchanged: each path names one tree or the other.
            (true, true) => Some(ino_a),
            (true, false) => Some(ino_b),
        }
    };
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicU64::new(0));
    // Set by a reader that saw a wrong answer (then the renamer stops
    // instead of waiting for checks that will not come).
    let failed = Arc::new(AtomicBool::new(false));
    let checked = std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (vfs, done, stop) = (vfs.clone(), done.clone(), stop.clone());
                let (checks, failed) = (checks.clone(), failed.clone());
                let (deep_a, deep_b) = (deep_a.clone(), deep_b.clone());
                s.spawn(move || -> Result<u64, String> {
                    let mut q = Process::new(&vfs).unwrap();
                    let mut checked = 0u64;
                    while !stop.load(Ordering::Acquire) {
                        for (path, path_a) in [(&deep_a, true), (&deep_b, false)] {
                            let before = done.load(Ordering::Acquire);
                            let r = q.stat(path);
                            let after = done.load(Ordering::Acquire);
                            // Odd: a rename in progress, either answer is
                            // right.
                            if before != after || before % 2 == 1 {
                                continue;
                            }
                            let want = expect(path_a, before / 2 % 2 == 0);
                            if r.as_ref().ok().map(|s| s.st_ino) != want {
                                failed.store(true, Ordering::Release);
                                return Err(format!(
                                    "{fast}: stat {path} after {before} counts: {r:?}, want {want:?}"
                                ));
                            }
                            checked += 1;
                            checks.fetch_add(1, Ordering::Release);
                        }
                    }
                    Ok(checked)
                })
            })
            .collect();
        let flags = Flags {
            done: &done,
            checks: &checks,
            failed: &failed,
            stop: &stop,
        };
        renamer(&mut p, RENAMES, exchange, flags, readers)
    });
    assert!(checked >= RENAMES, "{fast}: {checked} lookups checked");
}

#[test]
fn lookup_never_returns_the_old_target_after_rename_returned() {
    for fast in [
        FastPaths::seeds(),
        FastPaths::stock().with("path_cache", true),
    ] {
        race(fast, false);
    }
}

#[test]
fn lookup_never_returns_the_old_target_after_exchange_returned() {
    for fast in [
        FastPaths::seeds(),
        FastPaths::stock().with("path_cache", true),
    ] {
        race(fast, true);
    }
}

/// Creates racing a renamer (`rcu_parent`'s lockless walk to the
/// directory): as [`race`], but each reader creates a name 11 components
/// deep through `/x/a/…` or `/x/b/…` and then finds where it landed,
/// through directory fds opened on the trees' deepest directories before
/// the renames began (an fd follows its directory, not a name). With
/// the counts stable around the create, a create through a path that no
/// longer exists must fail with `ENOENT`, and one through a path that
/// exists must land in the tree the path names then.
fn race_create(fast: FastPaths, exchange: bool) {
    const RENAMES: u64 = 400;
    let vfs = Vfs::new(fast);
    let mut p = Process::new(&vfs).unwrap();
    p.mkdir("/x", 0o755).unwrap();
    let tree = |p: &mut Process, top: &str| -> String {
        let mut dir = top.to_owned();
        p.mkdir(&dir, 0o755).unwrap();
        for i in 1..=10 {
            dir = format!("{dir}/d{i}");
            p.mkdir(&dir, 0o755).unwrap();
        }
        dir
    };
    let deep_a = tree(&mut p, "/x/a");
    let deep_b = if exchange {
        tree(&mut p, "/x/b")
    } else {
        deep_a.replacen("/x/a/", "/x/b/", 1)
    };
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    // The readers open their fds before the first rename.
    let ready = Arc::new(std::sync::Barrier::new(3));
    let checked = std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|k| {
                let (vfs, done, stop) = (vfs.clone(), done.clone(), stop.clone());
                let (checks, failed) = (checks.clone(), failed.clone());
                let (deep_a, deep_b) = (deep_a.clone(), deep_b.clone());
                let ready = ready.clone();
                s.spawn(move || -> Result<u64, String> {
                    let mut q = Process::new(&vfs).unwrap();
                    // Opened before any rename: tree A's deepest directory
                    // and (exchange) tree B's.
                    let fda = q.open(&deep_a, O_PATH | O_DIRECTORY, 0).unwrap();
                    let fdb = if exchange {
                        q.open(&deep_b, O_PATH | O_DIRECTORY, 0).unwrap()
                    } else {
                        -1
                    };
                    ready.wait();
                    let name = format!("n{k}");
                    let mut checked = 0u64;
                    while !stop.load(Ordering::Acquire) {
                        for (dir, path_a) in [(&deep_a, true), (&deep_b, false)] {
                            let path = format!("{dir}/{name}");
                            let before = done.load(Ordering::Acquire);
                            let r = q.open(&path, O_CREAT | O_EXCL | O_WRONLY, 0o644);
                            let after = done.load(Ordering::Acquire);
                            if let Ok(fd) = r {
                                q.close(fd).unwrap();
                            }
                            let in_a = q.unlinkat(fda, &name, 0).is_ok();
                            let in_b = fdb >= 0 && q.unlinkat(fdb, &name, 0).is_ok();
                            if before != after || before % 2 == 1 {
                                continue;
                            }
                            // Which tree the path names now (None: none).
                            let at_a = before / 2 % 2 == 0;
                            let names_a = match (exchange, path_a == at_a) {
                                (false, true) | (true, true) => Some(true),
                                (false, false) => None,
                                (true, false) => Some(false),
                            };
                            let got = match (r.is_ok(), in_a, in_b) {
                                (true, true, false) => Some(true),
                                (true, false, true) => Some(false),
                                (false, false, false) if r == Err(Errno::ENOENT) => None,
                                _ => {
                                    failed.store(true, Ordering::Release);
                                    return Err(format!(
                                        "{fast}: create {path}: {r:?}, in A {in_a}, in B {in_b}"
                                    ));
                                }
                            };
                            if got != names_a {
                                failed.store(true, Ordering::Release);
                                return Err(format!(
                                    "{fast}: create {path} after {before} counts: landed in \
                                     {got:?} (Some(true): A), want {names_a:?}"
                                ));
                            }
                            checked += 1;
                            checks.fetch_add(1, Ordering::Release);
                        }
                    }
                    Ok(checked)
                })
            })
            .collect();
        ready.wait();
        let flags = Flags {
            done: &done,
            checks: &checks,
            failed: &failed,
            stop: &stop,
        };
        renamer(&mut p, RENAMES, exchange, flags, readers)
    });
    assert!(checked >= RENAMES, "{fast}: {checked} creates checked");
}

#[test]
fn create_never_lands_by_the_old_path_after_rename_returned() {
    for fast in [
        FastPaths::seeds(),
        FastPaths::stock().with("rcu_parent", true),
    ] {
        race_create(fast, false);
    }
}

#[test]
fn create_never_lands_by_the_old_path_after_exchange_returned() {
    for fast in [
        FastPaths::seeds(),
        FastPaths::stock().with("rcu_parent", true),
    ] {
        race_create(fast, true);
    }
}
