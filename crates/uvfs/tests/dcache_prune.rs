//! rmdir prunes the removed directory's cached children (Linux's
//! `shrink_dcache_parent`), and so does a rename over an empty directory
//! for the directory it kills: the negative entries left by lookups of
//! missing names inside it do not stay hashed, keeping the dead directory
//! and its ancestors alive until the LRU reaches them. Checked with caches
//! far larger than the tests (nothing is evicted for want of room) and
//! without `drop_caches`: after each removal the dentry cache holds exactly
//! what is still named or referenced, and `check_consistency` passes.
//!
//! A removed directory that is still referenced (a cwd, an open fd) keeps
//! working as on Linux: lookups in it fail with `ENOENT`, so do creations,
//! `getcwd` fails with `ENOENT`, `fstat` works and shows no links; once the
//! last reference goes, nothing of it is left.
//!
//! Every test runs under both `FastPaths::seeds()` and `FastPaths::stock()`.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use support::rng::Rng;
use support::vfs::*;
use uvfs::fs::{RENAME_EXCHANGE, S_IFDIR, S_IFMT};
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Vfs};

/// The dentries alive with no process around: the root, and whatever is
/// still named. Checked with no process holding a reference (a cwd on `/`
/// counts as one in `check_consistency`).
#[track_caller]
fn settled(vfs: &Vfs, want: usize, what: &str) {
    if let Err(e) = vfs.check_consistency() {
        panic!("{what}: {e}");
    }
    assert_eq!(vfs.dcache_len(), want, "{what}: dentries alive");
}

/// Fresh VFS, one per fast-path setting.
fn each_vfs(mut f: impl FnMut(&Arc<Vfs>)) {
    for fast in fasts() {
        f(&Vfs::new(fast));
    }
}

#[test]
fn rmdir_prunes_negative_children() {
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        p.mkdir("/d", 0o755).unwrap();
        assert_eq!(err(p.stat("/d/x")), Errno::ENOENT);
        assert_eq!(err(p.stat("/d/y")), Errno::ENOENT);
        // Twice: the second answer comes from the cached negative entry.
        assert_eq!(err(p.stat("/d/x")), Errno::ENOENT);
        assert_eq!(err(p.open("/d/z", O_RDONLY, 0)), Errno::ENOENT);
        // A file created and unlinked: its name is looked up again after.
        put(&mut p, "/d/f", b"data");
        p.unlink("/d/f").unwrap();
        assert_eq!(err(p.stat("/d/f")), Errno::ENOENT);
        // "/", "d" and its four negative children.
        assert_eq!(vfs.dcache_len(), 6);
        p.rmdir("/d").unwrap();
        drop(p);
        settled(vfs, 1, "after rmdir");
        // Looked up again: a negative "d" in "/", nothing below it.
        let mut p = Process::new(vfs).unwrap();
        assert_eq!(err(p.stat("/d")), Errno::ENOENT);
        assert_eq!(err(p.stat("/d/x")), Errno::ENOENT);
        drop(p);
        settled(vfs, 2, "after looking d up again");
    });
}

#[test]
fn rmdir_in_a_deep_tree_frees_the_ancestors_it_pinned() {
    // The negative children of a removed directory kept it alive, and it
    // kept its parent alive: removing the whole tree bottom-up must leave
    // nothing behind.
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        let mut path = String::new();
        for i in 0..6 {
            path.push_str(&format!("/l{i}"));
            p.mkdir(&path, 0o755).unwrap();
            for n in 0..3 {
                assert_eq!(err(p.stat(format!("{path}/miss{n}"))), Errno::ENOENT);
            }
        }
        assert_eq!(vfs.dcache_len(), 1 + 6 * 4);
        while !path.is_empty() {
            p.rmdir(&path).unwrap();
            path.truncate(path.rfind('/').unwrap());
        }
        drop(p);
        settled(vfs, 1, "after removing the tree");
    });
}

#[test]
fn rename_over_an_empty_directory_prunes_the_victim() {
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        p.mkdir("/a", 0o755).unwrap();
        p.mkdir("/b", 0o755).unwrap();
        assert_eq!(err(p.stat("/b/x")), Errno::ENOENT);
        assert_eq!(err(p.stat("/b/y")), Errno::ENOENT);
        // The source's own negative child moves with it and stays valid.
        assert_eq!(err(p.stat("/a/q")), Errno::ENOENT);
        assert_eq!(vfs.dcache_len(), 6);
        p.rename("/a", "/b").unwrap();
        drop(p);
        // "/", "b" (the moved a) and its negative "q": the old b and its
        // negative "x" and "y" are gone.
        settled(vfs, 3, "after rename over b");
        let mut p = Process::new(vfs).unwrap();
        assert_eq!(err(p.stat("/b/q")), Errno::ENOENT);
        assert_eq!(err(p.stat("/b/x")), Errno::ENOENT);
        assert_eq!(err(p.stat("/a")), Errno::ENOENT);
        drop(p);
        // A new negative "x" in b, a negative "a" in "/".
        settled(vfs, 5, "after lookups");
        let mut p = Process::new(vfs).unwrap();
        p.rmdir("/b").unwrap();
        drop(p);
        settled(vfs, 2, "after rmdir b: /, the negative a");
    });
}

#[test]
fn rename_over_an_empty_directory_exact_count() {
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        p.mkdir("/a", 0o755).unwrap();
        p.mkdir("/s", 0o755).unwrap();
        p.mkdir("/s/b", 0o755).unwrap();
        for n in ["x", "y", "z"] {
            assert_eq!(err(p.stat(format!("/s/b/{n}"))), Errno::ENOENT);
        }
        assert_eq!(vfs.dcache_len(), 7);
        // Across directories: a leaves "/", kills s/b.
        p.rename("/a", "/s/b").unwrap();
        drop(p);
        // "/", "s", "s/b" (the moved a): the killed b and its three
        // negative children are gone.
        settled(vfs, 3, "after rename over s/b");
    });
}

#[test]
fn rename_of_live_directories_keeps_their_children() {
    // Only the killed target is pruned: a renamed directory (here both,
    // exchanged) keeps its cached children, which stay correct.
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        p.mkdir("/a", 0o755).unwrap();
        p.mkdir("/b", 0o755).unwrap();
        put(&mut p, "/a/f", b"a");
        assert_eq!(err(p.stat("/a/n")), Errno::ENOENT);
        assert_eq!(err(p.stat("/b/m")), Errno::ENOENT);
        assert_eq!(vfs.dcache_len(), 6);
        p.renameat2(AT_FDCWD, "/a", AT_FDCWD, "/b", RENAME_EXCHANGE)
            .unwrap();
        assert_eq!(vfs.dcache_len(), 6);
        assert_eq!(get(&mut p, "/b/f"), b"a");
        assert_eq!(err(p.stat("/b/n")), Errno::ENOENT);
        assert_eq!(err(p.stat("/a/m")), Errno::ENOENT);
        // A non-empty directory renamed to a new name.
        p.rename("/b", "/c").unwrap();
        assert_eq!(get(&mut p, "/c/f"), b"a");
        drop(p);
        vfs.check_consistency().unwrap();
        // "/", a, c, c/f, c/n, a/m (and no negative b: d_move takes the
        // name over, it leaves no negative entry behind).
        assert_eq!(vfs.dcache_len(), 6);
    });
}

#[test]
fn files_renamed_out_then_rmdir() {
    // Entries made every way (created: born negative; looked up after
    // eviction: positive from the start) renamed out of d, a negative
    // entry left in their place, then d removed: only what is named stays.
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        p.mkdir("/d", 0o755).unwrap();
        put(&mut p, "/d/a", b"a");
        put(&mut p, "/d/b", b"b");
        drop(p);
        vfs.drop_caches();
        let mut p = Process::new(vfs).unwrap();
        // a is looked up afresh (the file system has it); b too, later.
        assert_eq!(p.stat("/d/a").unwrap().st_size, 1);
        p.rename("/d/a", "/a").unwrap();
        put(&mut p, "/d/c", b"c");
        p.rename("/d/c", "/c").unwrap();
        p.rename("/d/b", "/b").unwrap();
        for n in ["a", "b", "c"] {
            assert_eq!(err(p.stat(format!("/d/{n}"))), Errno::ENOENT);
        }
        p.rmdir("/d").unwrap();
        assert_eq!(get(&mut p, "/a"), b"a");
        assert_eq!(get(&mut p, "/b"), b"b");
        assert_eq!(get(&mut p, "/c"), b"c");
        drop(p);
        settled(vfs, 4, "/, a, b, c");
    });
}

#[test]
fn negative_entries_have_no_children() {
    // Nested negative entries cannot exist: a lookup below a missing name
    // fails at the missing one and caches nothing beneath it.
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        p.mkdir("/d", 0o755).unwrap();
        assert_eq!(err(p.stat("/d/x/y/z")), Errno::ENOENT);
        assert_eq!(err(p.mkdir("/d/x/y", 0o755)), Errno::ENOENT);
        assert_eq!(
            err(p.open("/d/x/y", O_CREAT | O_RDWR, 0o644)),
            Errno::ENOENT
        );
        // "/", d, d/x.
        assert_eq!(vfs.dcache_len(), 3);
        p.rmdir("/d").unwrap();
        drop(p);
        settled(vfs, 1, "after rmdir");
    });
}

#[test]
fn removed_directory_held_as_cwd_and_fd_keeps_working() {
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        p.mkdir("/d", 0o755).unwrap();
        assert_eq!(err(p.stat("/d/x")), Errno::ENOENT);
        let mut q = Process::new(vfs).unwrap();
        q.chdir("/d").unwrap();
        assert_eq!(err(q.stat("y")), Errno::ENOENT);
        let fd = p.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let before = p.fstat(fd).unwrap();
        assert_eq!(before.st_nlink, 2);
        p.rmdir("/d").unwrap();
        // Held: only d itself stays (its negative x and y are gone).
        assert_eq!(vfs.dcache_len(), 2);
        // Lookups in it fail, cached or not, lockless or not.
        for name in ["x", "y", "new", "x/deeper"] {
            assert_eq!(err(q.stat(name)), Errno::ENOENT, "stat {name}");
            assert_eq!(err(p.fstatat(fd, name, 0)), Errno::ENOENT, "fstatat {name}");
        }
        assert_eq!(err(q.open("x", O_RDONLY, 0)), Errno::ENOENT);
        // Nothing can be created in it.
        assert_eq!(err(q.open("f", O_CREAT | O_RDWR, 0o644)), Errno::ENOENT);
        assert_eq!(
            err(p.openat(fd, "f", O_CREAT | O_EXCL | O_RDWR, 0o644)),
            Errno::ENOENT
        );
        assert_eq!(err(q.mkdir("sub", 0o755)), Errno::ENOENT);
        assert_eq!(err(q.symlink("/", "l")), Errno::ENOENT);
        // The failed lookups and creations cached nothing.
        assert_eq!(vfs.dcache_len(), 2);
        // getcwd: ENOENT for an unlinked cwd; "." still works, with no
        // links, and ".." is the old parent.
        assert_eq!(err(q.getcwd()), Errno::ENOENT);
        let dot = q.stat(".").unwrap();
        assert_eq!(dot.st_ino, before.st_ino);
        assert_eq!(dot.st_nlink, 0);
        assert_eq!(q.stat("..").unwrap().st_ino, p.stat("/").unwrap().st_ino);
        let st = p.fstat(fd).unwrap();
        assert_eq!((st.st_ino, st.st_nlink), (before.st_ino, 0));
        assert_eq!(st.st_mode & S_IFMT, S_IFDIR);
        // Listing a removed directory fails (IS_DEADDIR).
        let mut buf = vec![0u8; 4096];
        assert_eq!(err(p.getdents64(fd, &mut buf)), Errno::ENOENT);
        // A new directory of the same name is a different one.
        p.mkdir("/d", 0o755).unwrap();
        assert_ne!(p.stat("/d").unwrap().st_ino, before.st_ino);
        assert_eq!(err(q.stat("x")), Errno::ENOENT);
        p.rmdir("/d").unwrap();
        // The last references go: nothing of the old d is left.
        p.close(fd).unwrap();
        assert_eq!(vfs.dcache_len(), 2, "still q's cwd");
        drop(q);
        drop(p);
        settled(vfs, 1, "after the last reference");
    });
}

#[test]
fn removed_directory_inside_removed_directory() {
    // e is removed while q's cwd, then its parent d: each prune takes its
    // own negative children; d's list still has e (unhashed, in use),
    // which keeps d alive until q leaves.
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        p.mkdir("/d", 0o755).unwrap();
        p.mkdir("/d/e", 0o755).unwrap();
        assert_eq!(err(p.stat("/d/e/n")), Errno::ENOENT);
        assert_eq!(err(p.stat("/d/m")), Errno::ENOENT);
        let mut q = Process::new(vfs).unwrap();
        q.chdir("/d/e").unwrap();
        p.rmdir("/d/e").unwrap();
        assert_eq!(vfs.dcache_len(), 4, "/, d, d/m, e");
        p.rmdir("/d").unwrap();
        assert_eq!(vfs.dcache_len(), 3, "/, d (e's parent), e (q's cwd)");
        assert_eq!(err(q.stat("n")), Errno::ENOENT);
        assert_eq!(err(q.stat("../m")), Errno::ENOENT);
        assert_eq!(err(q.mkdir("../new", 0o755)), Errno::ENOENT);
        assert_eq!(q.stat("..").unwrap().st_nlink, 0);
        assert_eq!(vfs.dcache_len(), 3);
        drop(q);
        drop(p);
        settled(vfs, 1, "after q leaves");
    });
}

#[test]
fn open_unlinked_file_in_removed_directory() {
    // An unhashed child still in use (an open unlinked file) keeps the
    // removed directory alive; its close frees both.
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        p.mkdir("/d", 0o755).unwrap();
        let fd = p.open("/d/f", O_CREAT | O_RDWR, 0o644).unwrap();
        p.unlink("/d/f").unwrap();
        assert_eq!(err(p.stat("/d/f")), Errno::ENOENT);
        p.rmdir("/d").unwrap();
        assert_eq!(vfs.dcache_len(), 3, "/, d, the open f");
        assert_eq!(p.write(fd, b"still"), Ok(5));
        assert_eq!(p.fstat(fd).unwrap().st_nlink, 0);
        p.close(fd).unwrap();
        drop(p);
        settled(vfs, 1, "after close");
    });
}

#[test]
fn o_tmpfile_in_removed_directory() {
    // Linux lets O_TMPFILE make a file in a removed directory (it gets no
    // name there); linkat cannot name it in that directory.
    each_vfs(|vfs| {
        let mut p = Process::new(vfs).unwrap();
        p.mkdir("/d", 0o755).unwrap();
        let dfd = p.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
        p.rmdir("/d").unwrap();
        let fd = p.openat(dfd, ".", O_TMPFILE | O_RDWR, 0o600).unwrap();
        assert_eq!(p.write(fd, b"t"), Ok(1));
        assert_eq!(
            err(p.linkat(fd, "", dfd, "named", AT_EMPTY_PATH)),
            Errno::ENOENT
        );
        p.close(fd).unwrap();
        p.close(dfd).unwrap();
        drop(p);
        settled(vfs, 1, "after close");
    });
}

// ---------------------------------------------------------------------------
// Stress: mkdir / negative lookups / rmdir racing lookups inside.
// ---------------------------------------------------------------------------

const DIRS: usize = 4;
const NAMES: usize = 6;

fn dir(rng: &mut Rng) -> String {
    format!("/p/d{}", rng.below(DIRS))
}

fn name(rng: &mut Rng) -> String {
    format!("n{}", rng.below(NAMES))
}

/// `r` is `Ok` or one of `ok`.
#[track_caller]
fn allowed<T: std::fmt::Debug>(what: &str, r: Result<T, Errno>, ok: &[Errno]) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) if ok.contains(&e) => None,
        Err(e) => panic!("{what}: unexpected {e:?}"),
    }
}

/// Calls each task makes at least (so that the run's count check holds
/// on a loaded machine: the seconds only lengthen it).
const MIN_OPS: u64 = 100;

/// Makes and removes directories, fills them with negative entries (and
/// now and then a file, so that rmdir sometimes finds one not empty).
fn maker(p: &mut Process, seed: u64, stop: &AtomicBool) -> u64 {
    let mut rng = Rng::new(seed);
    let mut ops = 0;
    // At least MIN_OPS whatever the machine's load: the clock only
    // lengthens the run.
    while ops < MIN_OPS || !stop.load(Ordering::Relaxed) {
        ops += 1;
        let d = dir(&mut rng);
        allowed("mkdir", p.mkdir(&d, 0o755), &[Errno::EEXIST]);
        for _ in 0..rng.below(4) {
            let path = format!("{d}/{}", name(&mut rng));
            allowed("stat", p.stat(&path), &[Errno::ENOENT]);
        }
        if rng.chance(20) {
            let f = format!("{d}/f");
            if let Some(fd) = allowed(
                "creat",
                p.open(&f, O_CREAT | O_RDWR, 0o644),
                &[Errno::ENOENT],
            ) {
                p.close(fd).unwrap();
                allowed("unlink", p.unlink(&f), &[Errno::ENOENT]);
            }
        }
        if rng.chance(30) {
            // The victim of a rename over an empty directory.
            let other = dir(&mut rng);
            allowed(
                "rename",
                p.rename(&d, &other),
                &[Errno::ENOENT, Errno::ENOTEMPTY, Errno::EEXIST],
            );
        }
        allowed("rmdir", p.rmdir(&d), &[Errno::ENOENT, Errno::ENOTEMPTY]);
    }
    ops
}

/// Looks up names inside the directories: by path, from a directory fd
/// (which may be removed under it), and from a cwd inside them.
fn looker(p: &mut Process, seed: u64, stop: &AtomicBool) -> u64 {
    let mut rng = Rng::new(seed);
    let mut ops = 0;
    let lookups = [Errno::ENOENT, Errno::ENOTDIR];
    // At least MIN_OPS whatever the machine's load: the clock only
    // lengthens the run.
    while ops < MIN_OPS || !stop.load(Ordering::Relaxed) {
        ops += 1;
        let d = dir(&mut rng);
        match rng.below(3) {
            0 => {
                let path = format!("{d}/{}", name(&mut rng));
                allowed("stat", p.stat(&path), &lookups);
            }
            1 => {
                let Some(fd) = allowed("open dir", p.open(&d, O_RDONLY | O_DIRECTORY, 0), &lookups)
                else {
                    continue;
                };
                for _ in 0..3 {
                    let n = name(&mut rng);
                    allowed("fstatat", p.fstatat(fd, &n, 0), &lookups);
                }
                p.fstat(fd).unwrap();
                p.close(fd).unwrap();
            }
            _ => {
                if allowed("chdir", p.chdir(&d), &lookups).is_some() {
                    for _ in 0..3 {
                        let n = name(&mut rng);
                        allowed("stat rel", p.stat(&n), &lookups);
                    }
                    allowed("getcwd", p.getcwd(), &[Errno::ENOENT]);
                    p.chdir("/").unwrap();
                }
            }
        }
    }
    ops
}

fn stress(fast: FastPaths, dcache_limit: usize, seed: u64) {
    let vfs = Vfs::builder()
        .fastpaths(fast)
        .dcache_limit(dcache_limit)
        .build();
    let mut setup = Process::new(&vfs).unwrap();
    setup.mkdir("/p", 0o755).unwrap();
    drop(setup);
    let stop = AtomicBool::new(false);
    let secs: f64 = std::env::var("UVFS_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let procs: Vec<Process> = (0..4).map(|_| Process::new(&vfs).unwrap()).collect();
    let total: u64 = std::thread::scope(|s| {
        let stop = &stop;
        let hs: Vec<_> = procs
            .into_iter()
            .enumerate()
            .map(|(i, mut p)| {
                let seed = seed ^ (i as u64 * 0x9e37_79b9);
                s.spawn(move || {
                    if i % 2 == 0 {
                        maker(&mut p, seed, stop)
                    } else {
                        looker(&mut p, seed, stop)
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
        hs.into_iter()
            .map(|h| h.join().expect("task panicked"))
            .sum()
    });
    assert!(total > 100, "the tasks ran ({total} ops)");
    // Every process gone: what is cached is what is named, or negative in
    // a live directory; no removed directory survives.
    vfs.check_consistency()
        .unwrap_or_else(|e| panic!("{fast}, limit {dcache_limit}: after the run: {e}"));
    let mut p = Process::new(&vfs).unwrap();
    for i in 0..DIRS {
        // A maker's file survives when another maker renamed its directory
        // between the creat and the unlink (the unlink then finds no
        // `d/f`: ENOENT, allowed): remove it here.
        allowed(
            "final unlink",
            p.unlink(format!("/p/d{i}/f")),
            &[Errno::ENOENT],
        );
        allowed("final rmdir", p.rmdir(format!("/p/d{i}")), &[Errno::ENOENT]);
    }
    p.rmdir("/p").unwrap();
    drop(p);
    // Only the root is left: every directory the run made, and every
    // negative entry in them, is gone without dropping the caches.
    settled(&vfs, 1, "after removing /p");
    eprintln!("{fast}, limit {dcache_limit}: {total} ops");
}

#[test]
fn stress_mkdir_rmdir_vs_lookups_large_cache() {
    // Nothing is evicted for want of room: only the prune frees the dead
    // directories.
    for (i, fast) in fasts().into_iter().enumerate() {
        stress(fast, 1 << 20, 0x7072_0001 + i as u64);
    }
}

#[test]
fn stress_mkdir_rmdir_vs_lookups_small_cache() {
    // The shrinker runs all along, killing children the prune is after.
    for (i, fast) in fasts().into_iter().enumerate() {
        stress(fast, 8, 0x7072_0101 + i as u64);
    }
}
