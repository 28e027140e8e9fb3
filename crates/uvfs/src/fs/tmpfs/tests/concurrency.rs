//! Concurrent operations on one tmpfs.

use super::*;

// ---- concurrency ----

#[test]
fn concurrent_create_rename_unlink() {
    let fs = fs();
    let shared: Vec<Ino> = (0..3).map(|i| dir(&fs, R, &format!("s{i}"))).collect();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let fs = fs.clone();
            let shared = shared.clone();
            std::thread::spawn(move || {
                let mut seed = t * 7919 + 1;
                let mut rnd = move |n: u64| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (seed >> 33) % n
                };
                for i in 0..3000u64 {
                    let d = shared[rnd(3) as usize];
                    let d2 = shared[rnd(3) as usize];
                    let name = format!("n{}", rnd(40));
                    let name2 = format!("n{}", rnd(40));
                    match rnd(9) {
                        0 | 1 => {
                            let _ = fs.create(d, name.as_bytes(), nf(0o644));
                        }
                        2 => {
                            let _ = fs.mkdir(d, name.as_bytes(), nf(0o755));
                        }
                        3 => {
                            if let Ok(a) = fs.lookup(d, name.as_bytes()) {
                                let _ = fs.link(a.ino, d2, name2.as_bytes());
                            }
                        }
                        4 | 5 => {
                            let fl = [0, RENAME_NOREPLACE, RENAME_EXCHANGE][rnd(3) as usize];
                            // Renames may also move subdirectories between
                            // the shared dirs and into each other.
                            let tgt = if rnd(4) == 0 {
                                fs.lookup(d2, name2.as_bytes())
                                    .ok()
                                    .filter(|a| a.is_dir())
                                    .map(|a| a.ino)
                            } else {
                                None
                            };
                            let _ = fs.rename(
                                d,
                                name.as_bytes(),
                                tgt.unwrap_or(d2),
                                name2.as_bytes(),
                                fl,
                            );
                        }
                        6 => {
                            if let Ok(a) = fs.lookup(d, name.as_bytes())
                                && fs.unlink(d, name.as_bytes()).is_ok()
                            {
                                fs.evict(a.ino);
                            }
                        }
                        7 => {
                            if let Ok(a) = fs.lookup(d, name.as_bytes())
                                && fs.rmdir(d, name.as_bytes()).is_ok()
                            {
                                fs.evict(a.ino);
                            }
                        }
                        _ => {
                            if let Ok(a) = fs.lookup(d, name.as_bytes())
                                && !a.is_dir()
                            {
                                let _ = fs.write(a.ino, i * 100, b"data");
                            }
                            let _ = fs.readdir(d, 0, &mut |_| true);
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Renames over targets drop links without a matching evict here: evict
    // every inode now (no "VFS" holds any), then check.
    let inos: Vec<Ino> = fs
        .shards
        .iter()
        .flat_map(|s| s.read().unwrap().keys().copied().collect::<Vec<_>>())
        .collect();
    for i in inos {
        fs.evict(i);
    }
    fs.fsck(true).unwrap();
    // Every directory is reachable from the root.
    let mut reach = vec![R];
    let mut k = 0;
    while k < reach.len() {
        let d = reach[k];
        fs.readdir(d, 2, &mut |e| {
            if e.file_type == S_IFDIR {
                reach.push(e.ino);
            }
            true
        })
        .unwrap();
        k += 1;
    }
    let dirs = fs
        .shards
        .iter()
        .map(|s| {
            s.read()
                .unwrap()
                .values()
                .filter(|i| rd(i).is_dir())
                .count()
        })
        .sum::<usize>();
    assert_eq!(reach.len(), dirs);
}

#[test]
fn lookups_in_parallel_do_not_serialize_on_writes() {
    // Readers of one file proceed while another file is being written.
    let fs = fs();
    let a = file(&fs, R, "a");
    let b = file(&fs, R, "b");
    fs.write(a, 0, b"hello").unwrap();
    let w = {
        let fs = fs.clone();
        std::thread::spawn(move || {
            for i in 0..2000u64 {
                fs.write(b, i * 4096, &[1; 4096]).unwrap();
            }
        })
    };
    for _ in 0..2000 {
        let mut buf = [0; 5];
        assert_eq!(fs.read(a, 0, &mut buf), Ok(5));
        assert_eq!(fs.lookup(R, b"a").unwrap().ino, a);
    }
    w.join().unwrap();
    ok(&fs);
}

/// Directories moving into each other from several threads while others
/// read their `..`: each `..` read names a directory; no move makes a
/// loop (the ancestry walk through the weak parents sees a stable tree
/// under the rename mutex); at the end every directory's parent is the
/// directory naming it (`fsck`) and every directory is reachable.
#[test]
fn moving_directories_keep_their_parents() {
    let fs = fs();
    let mut dirs: Vec<Ino> = ["a", "b", "c"].iter().map(|n| dir(&fs, R, n)).collect();
    for k in 0..6 {
        dirs.push(dir(&fs, dirs[k % 3], &format!("m{k}")));
    }
    let movers = 3..dirs.len();
    let dotdot = |fs: &Tmpfs, d: Ino| {
        let mut p = None;
        fs.readdir(d, 1, &mut |e| {
            p = Some(e.ino);
            false
        })
        .unwrap();
        p.unwrap()
    };
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (fs, dirs, movers) = (fs.clone(), dirs.clone(), movers.clone());
            std::thread::spawn(move || {
                let mut seed = t * 104_729 + 3;
                let mut rnd = move |n: usize| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (seed >> 33) as usize % n
                };
                let (mut moved, mut loops) = (0, 0);
                for _ in 0..20_000 {
                    let k = movers.start + rnd(movers.len());
                    let m = dirs[k];
                    let p = dotdot(&fs, m);
                    assert!(p == R || dirs.contains(&p), "`..` of {m} is {p}");
                    if t < 2 {
                        continue;
                    }
                    let to = dirs[rnd(dirs.len())];
                    let name = format!("m{}", k - movers.start);
                    match fs.rename(p, name.as_bytes(), to, name.as_bytes(), 0) {
                        Ok(()) => moved += 1,
                        Err(Errno::EINVAL) => loops += 1,
                        // Moved meanwhile, or already there.
                        Err(Errno::ENOENT | Errno::EEXIST) => {}
                        Err(e) => panic!("rename of {name} into {to}: {e:?}"),
                    }
                }
                (moved, loops)
            })
        })
        .collect();
    let mut total = (0, 0);
    for t in threads {
        let (m, l) = t.join().unwrap();
        total = (total.0 + m, total.1 + l);
    }
    assert!(
        total.0 > 0 && total.1 > 0,
        "moves and refused loops: {total:?}"
    );
    fs.fsck(true).unwrap();
    let mut reach = vec![R];
    let mut i = 0;
    while i < reach.len() {
        let d = reach[i];
        fs.readdir(d, 2, &mut |e| {
            reach.push(e.ino);
            true
        })
        .unwrap();
        i += 1;
    }
    assert_eq!(reach.len(), 1 + dirs.len());
    // Each `..` is the directory that lists it.
    for &d in &dirs {
        let p = dotdot(&fs, d);
        let mut listed = false;
        fs.readdir(p, 2, &mut |e| {
            listed |= e.ino == d;
            true
        })
        .unwrap();
        assert!(listed, "`..` of {d} is {p}, which does not list it");
    }
}
