//! The dentry and inode caches: walks over many more names than
//! `dcache_limit`/`icache_limit` give correct results while both caches stay
//! bounded (`dcache_len`, `icache_len` within the limit plus what is in
//! use); negative entries (a name looked up while missing is found once
//! created by any call, and is missing again after unlink, rmdir or a
//! rename away); renames move names, subtrees included; `drop_caches`
//! leaves everything resolvable, open files, cwds and mounts included; and
//! a randomized run against a model with tiny caches. Every test runs under
//! both `FastPaths::seeds()` and `FastPaths::stock()`.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use support::rng::Rng;
use support::vfs::*;
use uvfs::fs::tmpfs::Tmpfs;
use uvfs::uapi::*;
use uvfs::{Errno, Process, Vfs};

/// A VFS with small caches, and a root process on it, per fast-path setting.
fn each_small(dlimit: usize, ilimit: usize, mut f: impl FnMut(&Arc<Vfs>, &mut Process)) {
    for fast in fasts() {
        let vfs = Vfs::builder()
            .fastpaths(fast)
            .dcache_limit(dlimit)
            .icache_limit(ilimit)
            .build();
        let mut p = Process::new(&vfs).unwrap();
        f(&vfs, &mut p);
    }
}

/// A named way of creating a name.
type Creator = (&'static str, fn(&mut Process, &str));

/// Unused dentries the shrinker may not have reached yet: it runs when the
/// cache is over its limit and kills at least 16 at a time.
const SLACK: usize = 16;

#[test]
fn walk_over_more_than_the_limits() {
    each_small(64, 64, |vfs, p| {
        const DIRS: usize = 8;
        const PER: usize = 250;
        for d in 0..DIRS {
            p.mkdir(format!("/d{d}"), 0o755).unwrap();
            for i in 0..PER {
                // Each file's size encodes its name.
                put(p, &format!("/d{d}/f{i}"), &vec![b'x'; d * PER + i]);
            }
        }
        // In use at rest: "/", the directories (held by their cached
        // children), nothing else.
        let bound = 64 + SLACK + DIRS + 2;
        assert!(
            vfs.dcache_len() <= bound,
            "dcache {} > {bound}",
            vfs.dcache_len()
        );
        assert!(
            vfs.icache_len() <= bound,
            "icache {} > {bound}",
            vfs.icache_len()
        );
        for round in 0..3 {
            for d in 0..DIRS {
                for i in (0..PER).rev() {
                    let st = p.stat(format!("/d{d}/f{i}")).unwrap();
                    assert_eq!(st.st_size as usize, d * PER + i, "round {round}");
                }
            }
            for d in 0..DIRS {
                assert_eq!(p.stat(format!("/d{d}/f{PER}")).unwrap_err(), Errno::ENOENT);
            }
            assert!(
                vfs.dcache_len() <= bound,
                "dcache {} > {bound}",
                vfs.dcache_len()
            );
            assert!(
                vfs.icache_len() <= bound,
                "icache {} > {bound}",
                vfs.icache_len()
            );
        }
        // Listing agrees with the walk.
        assert_eq!(names(p, "/d3").len(), PER);
    });
}

#[test]
fn in_use_entries_survive_the_shrinker() {
    each_small(32, 32, |vfs, p| {
        p.mkdir("/d", 0o755).unwrap();
        let mut fds = Vec::new();
        for i in 0..200 {
            put(p, &format!("/d/f{i}"), format!("content {i}").as_bytes());
            if i % 2 == 0 {
                fds.push((i, p.open(format!("/d/f{i}"), O_RDONLY, 0).unwrap()));
            }
        }
        // Churn the cache with other names.
        for i in 0..500 {
            assert_eq!(p.stat(format!("/d/missing{i}")).unwrap_err(), Errno::ENOENT);
            let _ = p.stat(format!("/d/f{}", i % 200)).unwrap();
        }
        let bound = 32 + SLACK + fds.len() + 3;
        assert!(
            vfs.dcache_len() <= bound,
            "dcache {} > {bound}",
            vfs.dcache_len()
        );
        assert!(
            vfs.icache_len() <= bound,
            "icache {} > {bound}",
            vfs.icache_len()
        );
        for &(i, fd) in &fds {
            p.lseek(fd, 0, SEEK_SET).unwrap();
            assert_eq!(read_to_end(p, fd), format!("content {i}").as_bytes());
            assert_eq!(
                p.fstat(fd).unwrap().st_ino,
                p.stat(format!("/d/f{i}")).unwrap().st_ino
            );
        }
        for (_, fd) in fds {
            p.close(fd).unwrap();
        }
        vfs.drop_caches();
        assert!(
            vfs.dcache_len() <= 3,
            "dcache {} after drop_caches",
            vfs.dcache_len()
        );
    });
}

#[test]
fn negative_entries_become_positive() {
    each(|_, p| {
        p.mkdir("/d", 0o755).unwrap();
        put(p, "/src", b"src");
        let creators: [Creator; 6] = [
            ("open", |p, path| put(p, path, b"")),
            ("mkdir", |p, path| p.mkdir(path, 0o755).unwrap()),
            ("symlink", |p, path| p.symlink("/src", path).unwrap()),
            ("link", |p, path| p.link("/src", path).unwrap()),
            ("rename", |p, path| {
                put(p, "/tmpname", b"");
                p.rename("/tmpname", path).unwrap()
            }),
            ("tmpfile", |p, path| {
                let fd = p.open("/d", O_TMPFILE | O_RDWR, 0o600).unwrap();
                p.linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH).unwrap();
                p.close(fd).unwrap();
            }),
        ];
        for (i, (what, create)) in creators.iter().enumerate() {
            let path = format!("/d/n{i}");
            // Cache the negative entry, through the locked and lockless walks.
            for _ in 0..3 {
                assert_eq!(p.lstat(&path).unwrap_err(), Errno::ENOENT, "{what}");
                assert_eq!(p.open(&path, O_RDONLY, 0), Err(Errno::ENOENT));
            }
            assert_eq!(p.stat(format!("{path}/x")).unwrap_err(), Errno::ENOENT);
            create(p, &path);
            for _ in 0..3 {
                assert!(p.lstat(&path).is_ok(), "{what}: created name not found");
            }
            assert!(names(p, "/d").contains(&format!("n{i}")));
        }
        // Another process (same VFS) sees names this one created over its
        // negative entries, and the other way round.
        let mut q = Process::new(p.vfs()).unwrap();
        assert_eq!(q.stat("/d/late").unwrap_err(), Errno::ENOENT);
        assert_eq!(p.stat("/d/late").unwrap_err(), Errno::ENOENT);
        put(p, "/d/late", b"L");
        assert_eq!(get(&mut q, "/d/late"), b"L");
    });
}

#[test]
fn unlink_rmdir_rename_update_names() {
    each(|_, p| {
        p.mkdir("/a", 0o755).unwrap();
        p.mkdir("/a/b", 0o755).unwrap();
        p.mkdir("/a/b/c", 0o755).unwrap();
        put(p, "/a/b/c/f", b"F");
        put(p, "/a/g", b"G");
        for _ in 0..2 {
            assert_eq!(get(p, "/a/b/c/f"), b"F");
        }
        // unlink: the name is gone, through both walks.
        p.unlink("/a/g").unwrap();
        for _ in 0..3 {
            assert_eq!(p.stat("/a/g").unwrap_err(), Errno::ENOENT);
        }
        put(p, "/a/g", b"G2");
        assert_eq!(get(p, "/a/g"), b"G2");
        // rename of an ancestor: every cached path below moves.
        let ino_f = p.stat("/a/b/c/f").unwrap().st_ino;
        p.rename("/a", "/z").unwrap();
        for _ in 0..3 {
            assert_eq!(p.stat("/a").unwrap_err(), Errno::ENOENT);
            assert_eq!(p.stat("/a/b/c/f").unwrap_err(), Errno::ENOENT);
            assert_eq!(p.stat("/z/b/c/f").unwrap().st_ino, ino_f);
            assert_eq!(get(p, "/z/g"), b"G2");
        }
        // rename over an existing name: the name now means the moved inode.
        put(p, "/z/h", b"H");
        let ino_g = p.stat("/z/g").unwrap().st_ino;
        assert!(p.stat("/z/h").is_ok());
        p.rename("/z/g", "/z/h").unwrap();
        for _ in 0..3 {
            assert_eq!(p.stat("/z/h").unwrap().st_ino, ino_g);
            assert_eq!(p.stat("/z/g").unwrap_err(), Errno::ENOENT);
        }
        // Exchange: both names swap inodes.
        put(p, "/z/k", b"K");
        let (ik, ih) = (p.stat("/z/k").unwrap().st_ino, ino_g);
        p.renameat2(
            AT_FDCWD,
            "/z/k",
            AT_FDCWD,
            "/z/h",
            uvfs::fs::RENAME_EXCHANGE,
        )
        .unwrap();
        for _ in 0..3 {
            assert_eq!(
                (
                    p.stat("/z/k").unwrap().st_ino,
                    p.stat("/z/h").unwrap().st_ino
                ),
                (ih, ik)
            );
        }
        // A directory moved across directories, then its old parent removed.
        p.mkdir("/y", 0o755).unwrap();
        p.rename("/z/b/c", "/y/c").unwrap();
        p.rmdir("/z/b").unwrap();
        for _ in 0..3 {
            assert_eq!(p.stat("/z/b").unwrap_err(), Errno::ENOENT);
            assert_eq!(p.stat("/z/b/c/f").unwrap_err(), Errno::ENOENT);
            assert_eq!(get(p, "/y/c/f"), b"F");
            assert_eq!(
                p.stat("/y/c/..").unwrap().st_ino,
                p.stat("/y").unwrap().st_ino
            );
        }
        // rmdir: the directory and everything under its name are gone; a
        // new directory of the same name starts empty.
        p.unlink("/y/c/f").unwrap();
        p.rmdir("/y/c").unwrap();
        p.mkdir("/y/c", 0o755).unwrap();
        assert_eq!(p.stat("/y/c/f").unwrap_err(), Errno::ENOENT);
        assert!(names(p, "/y/c").is_empty());
    });
}

#[test]
fn drop_caches_then_everything_resolves() {
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.mkdir("/mnt", 0o755).unwrap();
        p.mount(b"/mnt", Tmpfs::new(Default::default())).unwrap();
        let mut want = BTreeMap::new();
        for top in ["/t", "/mnt/t"] {
            p.mkdir(top, 0o755).unwrap();
            for d in 0..5 {
                let dir = format!("{top}/d{d}");
                p.mkdir(&dir, 0o755).unwrap();
                for i in 0..20 {
                    let path = format!("{dir}/f{i}");
                    put(&mut p, &path, path.as_bytes());
                    want.insert(path.clone(), p.stat(&path).unwrap().st_ino);
                }
            }
        }
        p.symlink("/mnt/t/d1", "/link").unwrap();
        p.mkdir("/cwd", 0o755).unwrap();
        put(&mut p, "/cwd/here", b"here");
        p.chdir("/cwd").unwrap();
        put(&mut p, "/unlinked", b"still here");
        let fd = p.open("/unlinked", O_RDONLY, 0).unwrap();
        p.unlink("/unlinked").unwrap();
        let before = (vfs.dcache_len(), vfs.icache_len());
        vfs.drop_caches();
        let after = (vfs.dcache_len(), vfs.icache_len());
        // Left: "/", the cwd, the mountpoint and mounted root, the open
        // file's dentry, and the parents they hold.
        assert!(after.0 <= 8, "dcache {before:?} -> {after:?}");
        // (The inode cache keeps its unused inodes up to its limit: see
        // `drop_caches_empties_the_inode_cache`.)
        for _ in 0..2 {
            for (path, ino) in &want {
                assert_eq!(p.stat(path).unwrap().st_ino, *ino, "{path}");
                assert_eq!(get(&mut p, path), path.as_bytes());
            }
            vfs.drop_caches();
        }
        assert_eq!(get(&mut p, "/link/f3"), b"/mnt/t/d1/f3");
        assert_eq!(get(&mut p, "here"), b"here");
        assert_eq!(p.getcwd().unwrap(), b"/cwd");
        assert_eq!(read_to_end(&mut p, fd), b"still here");
        assert_eq!(p.stat("/unlinked").unwrap_err(), Errno::ENOENT);
        assert_eq!(names(&mut p, "/mnt/t/d4").len(), 20);
        assert_eq!(p.stat("/mnt").unwrap().st_ino, 1, "the mount survives");
        p.close(fd).unwrap();
    }
}

#[test]
fn hard_links_and_inode_cache() {
    each_small(16, 16, |vfs, p| {
        put(p, "/orig", b"shared");
        for i in 0..100 {
            p.link("/orig", format!("/l{i}")).unwrap();
        }
        let ino = p.stat("/orig").unwrap().st_ino;
        for i in (0..100).step_by(7) {
            assert_eq!(p.stat(format!("/l{i}")).unwrap().st_ino, ino);
        }
        // A write through one name is seen through every other, whatever
        // was evicted in between.
        let fd = p.open("/l50", O_WRONLY | O_APPEND, 0).unwrap();
        p.write(fd, b"!").unwrap();
        p.close(fd).unwrap();
        for i in [0, 33, 99] {
            assert_eq!(get(p, &format!("/l{i}")), b"shared!");
        }
        for i in 0..100 {
            p.unlink(format!("/l{i}")).unwrap();
        }
        assert_eq!(p.stat("/orig").unwrap().st_nlink, 1);
        assert!(
            vfs.icache_len() <= 16 + SLACK + 2,
            "icache {}",
            vfs.icache_len()
        );
    });
}

#[derive(Clone, Debug, PartialEq)]
enum Node {
    File(Vec<u8>),
    Dir,
}

/// Random creates, unlinks, renames, mkdirs and rmdirs over a few
/// directories with caches of 8 entries, checked after every step against
/// a model of the tree, through lookups that alternate cold and warm.
#[test]
fn randomized_against_model() {
    for fast in fasts() {
        for seed in 1..=4u64 {
            let vfs = Vfs::builder()
                .fastpaths(fast)
                .dcache_limit(8)
                .icache_limit(8)
                .build();
            let mut p = Process::new(&vfs).unwrap();
            let mut rng = Rng::new(seed);
            let mut model: BTreeMap<String, Node> = BTreeMap::new();
            let dirs = ["/a", "/b", "/a/c"];
            for d in dirs {
                p.mkdir(d, 0o755).unwrap();
                model.insert(d.into(), Node::Dir);
            }
            let pick = |rng: &mut Rng| format!("{}/n{}", rng.pick(&dirs), rng.below(12));
            for step in 0..1500 {
                let path = pick(&mut rng);
                let ctx = format!("seed {seed} step {step} {path}");
                match rng.below(6) {
                    0 => {
                        let data = format!("{step}").into_bytes();
                        let r = p.open(&path, O_CREAT | O_WRONLY | O_TRUNC, 0o644);
                        match model.get(&path) {
                            Some(Node::Dir) => assert_eq!(r, Err(Errno::EISDIR), "{ctx}"),
                            _ => {
                                let fd = r.unwrap();
                                p.write(fd, &data).unwrap();
                                p.close(fd).unwrap();
                                model.insert(path.clone(), Node::File(data));
                            }
                        }
                    }
                    1 => {
                        let r = p.unlink(&path);
                        match model.get(&path) {
                            Some(Node::File(_)) => {
                                r.unwrap();
                                model.remove(&path);
                            }
                            Some(Node::Dir) => assert_eq!(r, Err(Errno::EISDIR), "{ctx}"),
                            None => assert_eq!(r, Err(Errno::ENOENT), "{ctx}"),
                        }
                    }
                    2 => {
                        let r = p.mkdir(&path, 0o755);
                        if model.contains_key(&path) {
                            assert_eq!(r, Err(Errno::EEXIST), "{ctx}");
                        } else {
                            r.unwrap();
                            model.insert(path.clone(), Node::Dir);
                        }
                    }
                    3 => {
                        let r = p.rmdir(&path);
                        let children = model.keys().any(|k| k.starts_with(&format!("{path}/")));
                        match model.get(&path) {
                            Some(Node::Dir) if children => {
                                assert_eq!(r, Err(Errno::ENOTEMPTY), "{ctx}")
                            }
                            Some(Node::Dir) => {
                                r.unwrap();
                                model.remove(&path);
                            }
                            Some(Node::File(_)) => assert_eq!(r, Err(Errno::ENOTDIR), "{ctx}"),
                            None => assert_eq!(r, Err(Errno::ENOENT), "{ctx}"),
                        }
                    }
                    4 => {
                        // Renames of files only (directories' subtrees would
                        // need the model to move prefixes).
                        let to = pick(&mut rng);
                        if model.get(&path) == Some(&Node::Dir) {
                            continue;
                        }
                        let r = p.rename(&path, &to);
                        match (model.get(&path).cloned(), model.get(&to).cloned()) {
                            (None, _) => assert_eq!(r, Err(Errno::ENOENT), "{ctx} -> {to}"),
                            (Some(Node::File(_)), Some(Node::Dir)) => {
                                assert_eq!(r, Err(Errno::EISDIR), "{ctx} -> {to}")
                            }
                            (Some(Node::File(data)), _) => {
                                r.unwrap();
                                if path != to {
                                    model.remove(&path);
                                    model.insert(to.clone(), Node::File(data));
                                }
                            }
                            (Some(Node::Dir), _) => unreachable!(),
                        }
                    }
                    _ => {
                        // Check a random name, and now and then everything.
                        let r = p.lstat(&path);
                        match model.get(&path) {
                            None => assert_eq!(r.unwrap_err(), Errno::ENOENT, "{ctx}"),
                            Some(Node::Dir) => {
                                assert_eq!(r.unwrap().st_mode & 0o170000, 0o040000, "{ctx}")
                            }
                            Some(Node::File(data)) => {
                                assert_eq!(r.unwrap().st_size as usize, data.len(), "{ctx}");
                                assert_eq!(&get(&mut p, &path), data, "{ctx}");
                            }
                        }
                        if step % 100 == 0 {
                            if step % 300 == 0 {
                                vfs.drop_caches();
                            }
                            for d in dirs {
                                for i in 0..12 {
                                    let q = format!("{d}/n{i}");
                                    assert_eq!(
                                        p.lstat(&q).is_ok(),
                                        model.contains_key(&q),
                                        "{ctx}: {q}"
                                    );
                                }
                            }
                        }
                    }
                }
                assert!(
                    vfs.dcache_len() <= 8 + SLACK + 8,
                    "dcache {}",
                    vfs.dcache_len()
                );
                assert!(
                    vfs.icache_len() <= 8 + SLACK + 8,
                    "icache {}",
                    vfs.icache_len()
                );
            }
        }
    }
}

/// `Vfs::drop_caches` is documented as dropping every unused dentry "and
/// so the inodes only they held" (`echo 2 > drop_caches` also prunes unused
/// inodes): once the dentries are gone, the inode cache should hold only
/// what is in use. It keeps every unused inode up to `icache_limit`.
#[test]
fn drop_caches_empties_the_inode_cache() {
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        for i in 0..200 {
            put(&mut p, &format!("/f{i}"), b"");
        }
        vfs.drop_caches();
        assert!(vfs.dcache_len() <= 2, "dcache {}", vfs.dcache_len());
        assert!(vfs.icache_len() <= 2, "icache {}", vfs.icache_len());
        assert_eq!(names(&mut p, "/").len(), 200);
    }
}
