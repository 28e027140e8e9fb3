//! Mount, statfs and getattr; create, lookup and names; readdir and its
//! cookies; unlink, rmdir, link, tmpfile and evict; symlinks.

use super::*;

// ---- mount, statfs, getattr ----

#[test]
fn root_and_statfs() {
    let fs = fs();
    assert_eq!(fs.root(), 1); // Host: fresh tmpfs root is ino 1.
    let a = fs.getattr(R).unwrap();
    assert_eq!(
        (a.mode, a.nlink, a.size, a.blocks, a.blksize),
        (S_IFDIR | 0o1777, 2, 40, 0, 4096)
    );
    assert_eq!((a.atime, a.mtime), (a.ctime, a.btime));
    // Unlimited: Linux's shmem_statfs leaves the figures 0.
    assert_eq!(
        fs.statfs(),
        StatFs {
            bsize: 4096,
            blocks: 0,
            bfree: 0,
            files: 0,
            ffree: 0,
            namemax: 255
        }
    );
    // Host: size=64k,nr_inodes=5 -> blocks 16 bfree 16 files 5 ffree 4.
    let l = limited(64 * 1024, 5);
    assert_eq!(
        l.statfs(),
        StatFs {
            bsize: 4096,
            blocks: 16,
            bfree: 16,
            files: 5,
            ffree: 4,
            namemax: 255
        }
    );
    // Size rounds up to pages.
    assert_eq!(limited(4097, 0).statfs().blocks, 2);
    let o = Tmpfs::new(TmpfsOptions {
        mode: 0o755,
        uid: 7,
        gid: 8,
        ..TmpfsOptions::default()
    });
    let a = o.getattr(R).unwrap();
    assert_eq!((a.mode, a.uid, a.gid), (S_IFDIR | 0o755, 7, 8));
    assert_eq!(fs.getattr(999), Err(Errno::ESTALE));
    assert_eq!(fs.setattr(999, &SetAttr::default()), Err(Errno::ESTALE));
    assert_eq!(fs.read(999, 0, &mut [0; 4]), Err(Errno::ESTALE));
    assert_eq!(fs.lookup(999, b"x"), Err(Errno::ESTALE));
    assert_eq!(fs.readdir(999, 0, &mut |_| true), Err(Errno::ESTALE));
    ok(&fs);
}

// ---- create, lookup, names ----

#[test]
fn create_lookup_and_names() {
    let fs = fs();
    let c0 = age(&fs, R);
    let a = fs.create(R, b"f", nf(0o100640)).unwrap();
    assert_eq!(
        (a.ino, a.mode, a.nlink, a.size, a.blocks, a.uid, a.gid),
        (2, S_IFREG | 0o640, 1, 0, 0, 1000, 1000)
    );
    assert!(a.atime == a.mtime && a.mtime == a.ctime && a.ctime == a.btime);
    let p = fs.getattr(R).unwrap();
    assert!(p.mtime > old() && p.ctime > c0 && p.atime == old());
    assert_eq!(fs.lookup(R, b"f").unwrap(), a);
    assert_eq!(fs.create(R, b"f", nf(0o644)), Err(Errno::EEXIST));
    assert_eq!(fs.mkdir(R, b"f", nf(0o755)), Err(Errno::EEXIST));
    assert_eq!(fs.lookup(R, b"g"), Err(Errno::ENOENT));
    assert_eq!(fs.lookup(a.ino, b"g"), Err(Errno::ENOTDIR));
    assert_eq!(fs.create(a.ino, b"g", nf(0o644)), Err(Errno::ENOTDIR));
    // Host: 256-byte names -> ENAMETOOLONG (create and lookup); 255 fine.
    let long = vec![b'n'; 256];
    assert_eq!(fs.create(R, &long, nf(0o644)), Err(Errno::ENAMETOOLONG));
    assert_eq!(fs.lookup(R, &long), Err(Errno::ENAMETOOLONG));
    assert!(fs.create(R, &long[..255], nf(0o644)).is_ok());
    for bad in [&b"."[..], b"..", b"a/b", b"a\0b"] {
        assert_eq!(fs.create(R, bad, nf(0o644)), Err(Errno::EINVAL));
        assert_eq!(fs.unlink(R, bad), Err(Errno::EINVAL));
        assert_eq!(fs.lookup(R, bad), Err(Errno::EINVAL));
    }
    assert_eq!(fs.create(R, b"", nf(0o644)), Err(Errno::ENOENT));
    // Host: directory size 40 + 20 per entry.
    assert_eq!(fs.getattr(R).unwrap().size, 80);
    ok(&fs);
}

#[test]
fn mkdir_nlink_and_sgid() {
    let fs = fs();
    let d = dir(&fs, R, "d");
    let a = fs.getattr(d).unwrap();
    assert_eq!((a.nlink, a.size, a.mode), (2, 40, S_IFDIR | 0o755));
    assert_eq!(fs.getattr(R).unwrap().nlink, 3);
    dir(&fs, d, "e");
    assert_eq!(fs.getattr(d).unwrap().nlink, 3);
    // Host: a set-group-ID parent hands on its gid, and S_ISGID to dirs.
    let sg = dir(&fs, R, "sg");
    fs.setattr(
        sg,
        &SetAttr {
            gid: Some(1234),
            mode: Some(0o2775),
            ..SetAttr::default()
        },
    )
    .unwrap();
    let sub = fs.mkdir(sg, b"sub", nf(0o755)).unwrap();
    assert_eq!((sub.mode, sub.gid), (S_IFDIR | S_ISGID | 0o755, 1234));
    let f = fs.create(sg, b"f", nf(0o644)).unwrap();
    assert_eq!((f.mode, f.gid), (S_IFREG | 0o644, 1234));
    let s = fs.symlink(sg, b"s", b"t", nf(0o777)).unwrap();
    assert_eq!(s.gid, 1234);
    let t = fs.tmpfile(sg, nf(0o600)).unwrap();
    assert_eq!(t.gid, 1234);
    ok(&fs);
}

// ---- readdir ----

#[test]
fn readdir_order_newest_first_host_sequence() {
    // Host: create b,a,c,zz,m; rename a->y; unlink c; create c: getdents
    // gives . .. c y m zz b with exactly these d_off values.
    let fs = fs();
    let d = dir(&fs, R, "d");
    for n in ["b", "a", "c", "zz", "m"] {
        file(&fs, d, n);
    }
    assert_eq!(
        ls(&fs, d),
        pairs(&[
            (".", 1),
            ("..", 7),
            ("m", 6),
            ("zz", 5),
            ("c", 4),
            ("a", 3),
            ("b", EOD)
        ])
    );
    fs.rename(d, b"a", d, b"y", 0).unwrap();
    assert_eq!(
        ls(&fs, d),
        pairs(&[
            (".", 1),
            ("..", 8),
            ("y", 7),
            ("m", 6),
            ("zz", 5),
            ("c", 3),
            ("b", EOD)
        ])
    );
    fs.unlink(d, b"c").unwrap();
    file(&fs, d, "c");
    assert_eq!(
        ls(&fs, d),
        pairs(&[
            (".", 1),
            ("..", 9),
            ("c", 8),
            ("y", 7),
            ("m", 6),
            ("zz", 3),
            ("b", EOD)
        ])
    );
    assert_eq!(fs.getattr(d).unwrap().size, 140);
    // Host: an empty directory: `..` has d_off EOD.
    let e = dir(&fs, R, "e");
    assert_eq!(ls(&fs, e), pairs(&[(".", 1), ("..", EOD)]));
    let mut got = Vec::new();
    fs.readdir(d, 0, &mut |e| {
        got.push((e.ino, e.file_type));
        true
    })
    .unwrap();
    assert_eq!(got[0], (d, S_IFDIR));
    assert_eq!(got[1], (R, S_IFDIR));
    assert_eq!(got[2].1, S_IFREG);
    assert_eq!(ls(&fs, R)[1].0, ".."); // The root's `..` is itself.
}

#[test]
fn readdir_resume_cookies_host() {
    // Host: a..e (offsets 3..7), unlink d (6): resume at 6 -> c b a; at 2 or
    // 100 -> the head; at EOD -> nothing; at 1 -> `..` first.
    let fs = fs();
    for n in ["a", "b", "c", "d", "e"] {
        file(&fs, R, n);
    }
    fs.unlink(R, b"d").unwrap();
    assert_eq!(ls_from(&fs, R, 6), pairs(&[("c", 4), ("b", 3), ("a", EOD)]));
    let all = pairs(&[("e", 5), ("c", 4), ("b", 3), ("a", EOD)]);
    assert_eq!(ls_from(&fs, R, 2), all);
    assert_eq!(ls_from(&fs, R, 100), all);
    assert_eq!(ls_from(&fs, R, 2_147_483_646), all);
    assert_eq!(ls_from(&fs, R, EOD), vec![]);
    // Host (lseek to 1 << 40, then getdents64): past EOD resumes at the
    // largest cookie <= pos, here the head.
    assert_eq!(ls_from(&fs, R, 1 << 40), all);
    // Unreachable on Linux (a negative loff_t); nothing.
    assert_eq!(ls_from(&fs, R, u64::MAX), vec![]);
    assert_eq!(ls_from(&fs, R, 1)[0], ("..".to_string(), 7));
    // Host: resume at 4 -> b only (largest offset <= 4 is b).
    assert_eq!(ls_from(&fs, R, 4), pairs(&[("b", 3), ("a", EOD)]));
    // Divergence (documented): a cookie naming the removed oldest entry.
    // Linux 6.18 restarts at the head (repeats e c b); here: the end.
    fs.unlink(R, b"a").unwrap();
    assert_eq!(ls_from(&fs, R, 3), vec![]);
    // emit returning false stops at once.
    let mut n = 0;
    fs.readdir(R, 0, &mut |_| {
        n += 1;
        n < 3
    })
    .unwrap();
    assert_eq!(n, 3);
}

#[test]
fn readdir_after_exchange_and_replace_host() {
    // Host: X = a b c d; exchange b<->d: names keep offsets, both entries go
    // to the head, the source inode (now "d") first.
    let fs = fs();
    let x = dir(&fs, R, "X");
    let y = dir(&fs, R, "Y");
    let ino: Vec<Ino> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| file(&fs, x, n))
        .collect();
    file(&fs, y, "p");
    file(&fs, y, "q");
    fs.rename(x, b"b", x, b"d", RENAME_EXCHANGE).unwrap();
    assert_eq!(
        ls(&fs, x),
        pairs(&[
            (".", 1),
            ("..", 6),
            ("d", 4),
            ("b", 5),
            ("c", 3),
            ("a", EOD)
        ])
    );
    assert_eq!(fs.lookup(x, b"d").unwrap().ino, ino[1]);
    fs.rename(x, b"a", y, b"p", RENAME_EXCHANGE).unwrap();
    assert_eq!(
        ls(&fs, x),
        pairs(&[
            (".", 1),
            ("..", 3),
            ("a", 6),
            ("d", 4),
            ("b", 5),
            ("c", EOD)
        ])
    );
    assert_eq!(
        ls(&fs, y),
        pairs(&[(".", 1), ("..", 3), ("p", 4), ("q", EOD)])
    );
    // Host: rename over an existing name takes its offset, goes to the head.
    fs.rename(x, b"c", x, b"a", 0).unwrap();
    assert_eq!(
        ls(&fs, x),
        pairs(&[(".", 1), ("..", 3), ("a", 6), ("d", 4), ("b", EOD)])
    );
    ok(&fs);
}

#[test]
fn readdir_large_and_batched() {
    let fs = fs();
    for i in 0..1000 {
        file(&fs, R, &format!("f{i}"));
    }
    let n = names(&fs, R);
    assert_eq!(n.len(), 1000);
    assert_eq!(n[0], "f999");
    assert_eq!(n[999], "f0");
    assert_eq!(fs.getattr(R).unwrap().size, 40 + 20 * 1000);
}

/// Cookies under interleaved create/unlink: reading a few entries per call,
/// every entry present throughout is seen exactly once, nothing twice.
#[test]
fn readdir_cookie_stability_interleaved() {
    let fs = fs();
    let d = dir(&fs, R, "d");
    let mut seed = 12345u64;
    let mut rnd = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    let mut live: Vec<String> = (0..300).map(|i| format!("e{i}")).collect();
    for n in &live {
        file(&fs, d, n);
    }
    let mut touched = std::collections::HashSet::new();
    let mut seen: Vec<String> = Vec::new();
    let mut cookie = 0;
    let mut fresh = 0;
    loop {
        let mut got = 0;
        let mut last = None;
        fs.readdir(d, cookie, &mut |e| {
            if got == 7 {
                return false;
            }
            got += 1;
            seen.push(String::from_utf8(e.name.clone()).unwrap());
            last = Some(e.next);
            true
        })
        .unwrap();
        let Some(next) = last else { break };
        cookie = next;
        // Between calls: unlink two random entries, create three.
        for _ in 0..2 {
            if !live.is_empty() {
                let v = live.swap_remove(rnd() % live.len());
                fs.unlink(d, v.as_bytes()).unwrap();
                touched.insert(v);
            }
        }
        for _ in 0..3 {
            let n = format!("new{fresh}");
            fresh += 1;
            file(&fs, d, &n);
            touched.insert(n.clone());
            live.push(n);
        }
    }
    let mut counts = std::collections::HashMap::new();
    for s in &seen {
        *counts.entry(s.clone()).or_insert(0) += 1;
    }
    assert!(counts.values().all(|&c| c == 1), "an entry was repeated");
    for i in 0..300 {
        let n = format!("e{i}");
        if !touched.contains(&n) {
            assert_eq!(counts.get(&n), Some(&1), "{n} skipped");
        }
    }
    ok(&fs);
}

#[test]
fn offsets_cycle_then_enospc() {
    let mut t = Tmpfs::build(TmpfsOptions::default());
    t.dir_offset_max = 6; // offsets 3..=6
    for n in ["a", "b", "c", "d"] {
        file(&t, R, n);
    }
    assert_eq!(t.create(R, b"e", nf(0o644)), Err(Errno::ENOSPC));
    assert_eq!(t.getattr(R).unwrap().size, 120); // nothing changed
    t.fsck(false).unwrap();
    t.unlink(R, b"b").unwrap(); // frees offset 4
    file(&t, R, "e"); // cyclic: reuses 4, at the head
    assert_eq!(ls(&t, R)[1], ("..".to_string(), 4));
    assert_eq!(names(&t, R), ["e", "d", "c", "a"]);
    t.fsck(false).unwrap();
}

// ---- unlink, rmdir, link, tmpfile, evict ----

#[test]
fn unlink_rmdir_errors_and_times() {
    let fs = fs();
    let d = dir(&fs, R, "d");
    let f = file(&fs, d, "f");
    let c0 = age(&fs, d);
    let fc = fs.getattr(f).unwrap().ctime;
    tick();
    assert_eq!(fs.unlink(d, b"nope"), Err(Errno::ENOENT));
    assert_eq!(fs.unlink(R, b"d"), Err(Errno::EISDIR)); // Host.
    assert_eq!(fs.rmdir(d, b"f"), Err(Errno::ENOTDIR)); // Host.
    assert_eq!(fs.rmdir(R, b"d"), Err(Errno::ENOTEMPTY)); // Host.
    assert_eq!(fs.unlink(f, b"x"), Err(Errno::ENOTDIR));
    fs.unlink(d, b"f").unwrap();
    let da = fs.getattr(d).unwrap();
    assert!(da.mtime > old() && da.ctime > c0 && da.size == 40);
    let fa = fs.getattr(f).unwrap(); // still there until evict
    assert!(fa.nlink == 0 && fa.ctime > fc);
    fs.evict(f);
    assert_eq!(fs.getattr(f), Err(Errno::ESTALE));
    let rc = age(&fs, R);
    fs.rmdir(R, b"d").unwrap();
    let ra = fs.getattr(R).unwrap();
    assert!(ra.nlink == 2 && ra.mtime > old() && ra.ctime > rc);
    // Host: a removed directory kept open: nlink 0, size 40, getdents
    // ENOENT, creating a name in it ENOENT; an unnamed O_TMPFILE in it works
    // (vfs_tmpfile has no IS_DEADDIR check).
    let a = fs.getattr(d).unwrap();
    assert_eq!((a.nlink, a.size), (0, 40));
    assert_eq!(fs.readdir(d, 0, &mut |_| true), Err(Errno::ENOENT));
    assert_eq!(fs.create(d, b"x", nf(0o644)), Err(Errno::ENOENT));
    assert_eq!(fs.mkdir(d, b"x", nf(0o755)), Err(Errno::ENOENT));
    assert_eq!(fs.symlink(d, b"x", b"t", nf(0o777)), Err(Errno::ENOENT));
    let t = fs.tmpfile(d, nf(0o600)).unwrap();
    assert_eq!(t.nlink, 0);
    fs.evict(t.ino);
    fs.evict(d);
    assert_eq!(fs.getattr(d), Err(Errno::ESTALE));
    fs.fsck(true).unwrap();
}

#[test]
fn link_and_tmpfile() {
    let fs = fs();
    let f = file(&fs, R, "f");
    let d = dir(&fs, R, "d");
    let c0 = age(&fs, d);
    let fc = fs.getattr(f).unwrap().ctime;
    tick();
    let a = fs.link(f, d, b"g").unwrap();
    assert_eq!(a.nlink, 2);
    assert!(a.ctime > fc);
    let da = fs.getattr(d).unwrap();
    assert!(da.mtime > old() && da.ctime > c0 && da.size == 60);
    assert_eq!(fs.link(f, d, b"g"), Err(Errno::EEXIST));
    assert_eq!(fs.link(d, R, b"d2"), Err(Errno::EPERM)); // Host.
    assert_eq!(fs.link(f, f, b"x"), Err(Errno::ENOTDIR));
    assert_eq!(fs.link(f, 999, b"x"), Err(Errno::ESTALE));
    fs.unlink(R, b"f").unwrap();
    fs.unlink(d, b"g").unwrap();
    // Host: linking an unlinked (non-O_TMPFILE) file -> ENOENT.
    assert_eq!(fs.link(f, R, b"back"), Err(Errno::ENOENT));
    fs.evict(f);
    // Host: O_TMPFILE: nlink 0, no change to the directory; link gives it
    // nlink 1; after unlinking again it cannot be linked.
    let rc = age(&fs, R);
    let t = fs.tmpfile(R, nf(0o600)).unwrap();
    assert_eq!((t.nlink, t.mode, t.size), (0, S_IFREG | 0o600, 0));
    let ra = fs.getattr(R).unwrap();
    assert!(ra.mtime == old() && ra.ctime == rc);
    assert_eq!(fs.write(t.ino, 0, b"hi"), Ok(2));
    assert_eq!(fs.link(t.ino, R, b"named").unwrap().nlink, 1);
    fs.unlink(R, b"named").unwrap();
    assert_eq!(fs.link(t.ino, R, b"again"), Err(Errno::ENOENT));
    fs.evict(t.ino);
    assert_eq!(fs.tmpfile(f, nf(0o600)), Err(Errno::ESTALE));
    let g = file(&fs, R, "g");
    assert_eq!(fs.tmpfile(g, nf(0o600)), Err(Errno::ENOTDIR));
    fs.fsck(true).unwrap();
}

#[test]
fn evict_rules() {
    let fs = fs();
    let f = file(&fs, R, "f");
    fs.evict(f); // linked: stays
    assert!(fs.getattr(f).is_ok());
    fs.evict(R);
    assert!(fs.getattr(R).is_ok());
    fs.unlink(R, b"f").unwrap();
    fs.evict(f);
    fs.evict(f); // twice: harmless
    fs.evict(12345);
    assert_eq!(fs.lookup(R, b"f"), Err(Errno::ENOENT));
    fs.fsck(true).unwrap();
}

// ---- symlinks ----

#[test]
fn symlinks() {
    let fs = limited(4096, 0);
    // Host: targets < 128 bytes are inline (0 blocks), >= 128 take a page.
    for (len, blocks) in [(1, 0), (127, 0), (128, 8)] {
        let t = vec![b'x'; len];
        let a = fs
            .symlink(R, format!("s{len}").as_bytes(), &t, nf(0o777))
            .unwrap();
        assert_eq!(
            (a.mode, a.size, a.blocks, a.nlink),
            (S_IFLNK | 0o777, len as u64, blocks, 1)
        );
        assert_eq!(fs.readlink(a.ino).unwrap(), t);
    }
    // Host: with no space left a long symlink is ENOSPC, a short one fits.
    assert_eq!(
        fs.symlink(R, b"l2", &[b'y'; 200], nf(0o777)),
        Err(Errno::ENOSPC)
    );
    assert!(fs.symlink(R, b"s2", b"short", nf(0o777)).is_ok());
    let f = Tmpfs::new(TmpfsOptions::default());
    assert!(f.symlink(R, b"max", &[b'z'; 4095], nf(0o777)).is_ok());
    // Host: 4096-byte target -> ENAMETOOLONG.
    assert_eq!(
        f.symlink(R, b"big", &[b'z'; 4096], nf(0o777)),
        Err(Errno::ENAMETOOLONG)
    );
    assert_eq!(f.symlink(R, b"max", b"t", nf(0o777)), Err(Errno::EEXIST));
    assert_eq!(f.symlink(R, b"e", b"", nf(0o777)), Err(Errno::ENOENT));
    let r = file(&f, R, "r");
    assert_eq!(f.readlink(r), Err(Errno::EINVAL));
    let s = f.lookup(R, b"max").unwrap().ino;
    assert_eq!(f.read(s, 0, &mut [0; 4]), Err(Errno::EINVAL));
    assert_eq!(f.write(s, 0, b"x"), Err(Errno::EINVAL));
    assert_eq!(
        f.setattr(
            s,
            &SetAttr {
                size: Some(0),
                ..SetAttr::default()
            }
        ),
        Err(Errno::EINVAL)
    );
    assert_eq!(f.fallocate(s, 0, 0, 1), Err(Errno::ENODEV));
    ok(&fs);
    ok(&f);
}

/// The victim the VFS passes to `unlink_node` and `rmdir_node` is only a
/// hint, checked under both locks: when the name leads elsewhere, the
/// name's own inode goes and the victim is untouched; when it leads to
/// the victim, that one goes. Fails if the hint is trusted unchecked.
#[test]
fn unlink_and_rmdir_with_a_victim_check_it() {
    let fs = fs();
    let d = dir(&fs, R, "d");
    let f = file(&fs, d, "f");
    let g = file(&fs, d, "g");
    let e = dir(&fs, d, "e");
    let nlink = |i| fs.getattr(i).unwrap().nlink;
    // A victim that is not the named inode, on either side of the
    // directory in inode order (the lock order).
    fs.unlink_node(d.into(), g.into(), b"f").unwrap();
    assert_eq!((nlink(f), nlink(g)), (0, 1));
    assert_eq!(fs.lookup(d, b"f").map(|a| a.ino), Err(Errno::ENOENT));
    assert_eq!(fs.lookup(d, b"g").map(|a| a.ino), Ok(g));
    fs.unlink_node(d.into(), R.into(), b"g").unwrap();
    assert_eq!(nlink(g), 0);
    assert_eq!(nlink(R), 3);
    // The victim the name leads to.
    let h = file(&fs, d, "h");
    fs.unlink_node(d.into(), h.into(), b"h").unwrap();
    assert_eq!(nlink(h), 0);
    // A stale victim for a name that is gone, and the directory itself.
    assert_eq!(fs.unlink_node(d.into(), h.into(), b"h"), Err(Errno::ENOENT));
    assert_eq!(fs.unlink_node(d.into(), d.into(), b"e"), Err(Errno::EISDIR));
    assert_eq!(fs.rmdir_node(d.into(), d.into(), b"e"), Ok(()));
    assert_eq!(nlink(e), 0);
    assert_eq!(nlink(d), 2);
    fs.fsck(false).unwrap();
}
