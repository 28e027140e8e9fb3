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
