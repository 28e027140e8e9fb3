//! Rename: its errors and its semantics, against the host.

use super::*;

// ---- rename ----

#[test]
fn rename_errors_host() {
    let fs = fs();
    let p = dir(&fs, R, "P");
    let q = dir(&fs, p, "Q");
    let r = dir(&fs, q, "R");
    file(&fs, r, "file");
    let e = dir(&fs, R, "E");
    file(&fs, R, "F");
    let ne = dir(&fs, R, "NE");
    file(&fs, ne, "z");
    let snapshot = |fs: &Tmpfs| {
        let mut v = Vec::new();
        for d in [R, p, q, r, e, ne] {
            let mut a = fs.getattr(d).unwrap();
            (a.mtime, a.ctime, a.atime) = (old(), old(), old());
            v.push((ls(fs, d), a));
        }
        v
    };
    let before = snapshot(&fs);
    let cases: Vec<(Ino, &str, Ino, &str, u32, Errno)> = vec![
        (R, "F", R, "E", 3, Errno::EINVAL),                  // both flags
        (R, "F", R, "E", 4, Errno::EINVAL),                  // whiteout: rename_whiteout's
        (R, "nope", R, "x", 0, Errno::ENOENT),               // missing source
        (R, "F", R, "nope", RENAME_EXCHANGE, Errno::ENOENT), // exchange, no target
        (R, "F", R, "E", RENAME_NOREPLACE, Errno::EEXIST),
        (R, "E", R, "F", 0, Errno::ENOTDIR), // dir over non-dir
        (R, "F", R, "E", 0, Errno::EISDIR),  // non-dir over dir
        (R, "E", R, "NE", 0, Errno::ENOTEMPTY), // dir over non-empty dir
        (R, "P", r, "new", 0, Errno::EINVAL), // into own subtree
        (R, "P", r, "new", RENAME_EXCHANGE, Errno::ENOENT), // target checked first
        (p, "Q", r, "new", RENAME_NOREPLACE, Errno::EINVAL),
        (r, "file", R, "P", 0, Errno::ENOTEMPTY), // target is an ancestor
        (r, "file", p, "Q", 0, Errno::ENOTEMPTY),
        (r, "file", R, "P", RENAME_EXCHANGE, Errno::EINVAL),
        (r, "file", R, "P", RENAME_NOREPLACE, Errno::EEXIST),
        (q, "R", R, "P", 0, Errno::ENOTEMPTY),
        (R, "F", R, "a/b", 0, Errno::EINVAL),
        (e, "x", R, "y", 0, Errno::ENOENT),
    ];
    for (od, on, nd, nn, fl, want) in cases {
        assert_eq!(
            fs.rename(od, on.as_bytes(), nd, nn.as_bytes(), fl),
            Err(want),
            "{on} -> {nn} flags {fl}"
        );
    }
    let f = fs.lookup(R, b"F").unwrap().ino;
    assert_eq!(fs.rename(f, b"a", R, b"b", 0), Err(Errno::ENOTDIR));
    assert_eq!(fs.rename(R, b"F", f, b"b", 0), Err(Errno::ENOTDIR));
    // Host: a P into its own subtree by exchange with an existing entry.
    assert_eq!(
        fs.rename(R, b"P", r, b"file", RENAME_EXCHANGE),
        Err(Errno::EINVAL)
    );
    assert_eq!(snapshot(&fs), before, "a failed rename changed something");
    ok(&fs);
}

#[test]
fn rename_semantics_host() {
    let fs = fs();
    let a = dir(&fs, R, "A");
    let b = dir(&fs, R, "B");
    let f = file(&fs, a, "f");
    let t = file(&fs, b, "t");
    // Host: moving a file stamps both dirs' mtime/ctime and its ctime.
    let (ac, bc) = (age(&fs, a), age(&fs, b));
    let fc = fs.getattr(f).unwrap().ctime;
    fs.rename(a, b"f", b, b"g", 0).unwrap();
    let (aa, ba, fa) = (
        fs.getattr(a).unwrap(),
        fs.getattr(b).unwrap(),
        fs.getattr(f).unwrap(),
    );
    assert!(
        aa.mtime > old() && aa.ctime > ac && ba.mtime > old() && ba.ctime > bc && fa.ctime > fc
    );
    assert!(fa.mtime == fa.btime);
    assert_eq!((aa.size, ba.size), (40, 80));
    assert_eq!(fs.lookup(b, b"g").unwrap().ino, f);
    // Rename over: the target loses a link and gets its ctime stamped.
    fs.link(t, R, b"t2").unwrap();
    let tc = fs.getattr(t).unwrap().ctime;
    tick();
    fs.rename(b, b"g", b, b"t", 0).unwrap();
    let ta = fs.getattr(t).unwrap();
    assert!(ta.nlink == 1 && ta.ctime > tc);
    assert_eq!(fs.lookup(b, b"t").unwrap().ino, f);
    assert_eq!(fs.getattr(b).unwrap().size, 60);
    // Host: renaming one hard link onto another: no-op, nothing stamped.
    fs.link(f, b, b"h").unwrap();
    let before = (ls(&fs, b), fs.getattr(b).unwrap(), fs.getattr(f).unwrap());
    tick();
    fs.rename(b, b"t", b, b"h", 0).unwrap();
    fs.rename(b, b"t", b, b"t", 0).unwrap();
    fs.rename(b, b"t", b, b"h", RENAME_EXCHANGE).unwrap();
    assert_eq!(
        fs.rename(b, b"t", b, b"h", RENAME_NOREPLACE),
        Err(Errno::EEXIST)
    ); // Host.
    assert_eq!(
        fs.rename(b, b"t", b, b"t", RENAME_NOREPLACE),
        Err(Errno::EEXIST)
    ); // Host.
    assert_eq!(
        (ls(&fs, b), fs.getattr(b).unwrap(), fs.getattr(f).unwrap()),
        before
    );
    // Directories across parents: nlink moves; `..` follows.
    let sd = dir(&fs, a, "sd");
    assert_eq!(fs.getattr(a).unwrap().nlink, 3);
    let sc = fs.getattr(sd).unwrap().ctime;
    tick();
    fs.rename(a, b"sd", b, b"sd", 0).unwrap();
    assert_eq!(
        (fs.getattr(a).unwrap().nlink, fs.getattr(b).unwrap().nlink),
        (2, 3)
    );
    assert!(fs.getattr(sd).unwrap().ctime > sc);
    assert_eq!(ls(&fs, sd)[1].0, "..");
    let mut parent = 0;
    fs.readdir(sd, 1, &mut |e| {
        parent = e.ino;
        false
    })
    .unwrap();
    assert_eq!(parent, b);
    // Dir over an empty dir (across): target gone (nlink 0), counts right.
    let empty = dir(&fs, a, "empty");
    fs.rename(b, b"sd", a, b"empty", 0).unwrap();
    assert_eq!(fs.getattr(empty).unwrap().nlink, 0);
    assert_eq!(
        (fs.getattr(a).unwrap().nlink, fs.getattr(b).unwrap().nlink),
        (3, 2)
    );
    fs.evict(empty);
    // Host: exchange of a file and a non-empty dir is allowed; nlinks swap.
    let nd = dir(&fs, b, "nd");
    file(&fs, nd, "z");
    let x = file(&fs, a, "x");
    fs.rename(a, b"x", b, b"nd", RENAME_EXCHANGE).unwrap();
    assert_eq!(fs.lookup(a, b"x").unwrap().ino, nd);
    assert_eq!(fs.lookup(b, b"nd").unwrap().ino, x);
    assert_eq!(
        (fs.getattr(a).unwrap().nlink, fs.getattr(b).unwrap().nlink),
        (4, 2)
    );
    let mut parent = 0;
    fs.readdir(nd, 1, &mut |e| {
        parent = e.ino;
        false
    })
    .unwrap();
    assert_eq!(parent, a);
    // Same-directory directory rename over an empty directory.
    dir(&fs, R, "m1");
    let m2 = dir(&fs, R, "m2");
    let n0 = fs.getattr(R).unwrap().nlink;
    fs.rename(R, b"m1", R, b"m2", 0).unwrap();
    assert_eq!(fs.getattr(R).unwrap().nlink, n0 - 1);
    fs.evict(m2);
    // Moving into a removed directory: ENOENT.
    let gone = dir(&fs, R, "gone");
    fs.rmdir(R, b"gone").unwrap();
    assert_eq!(fs.rename(a, b"x", gone, b"x", 0), Err(Errno::ENOENT));
    fs.evict(gone);
    fs.fsck(true).unwrap();
}

/// A directory's parent is a weak reference: a tree is freed when the
/// file system goes (no cycle through the parents), and a moved
/// directory's `..` and the ancestry check follow its new parent.
#[test]
fn parents_are_weak_and_followed_after_moves() {
    let fs = fs();
    let a = dir(&fs, R, "A");
    let b = dir(&fs, R, "B");
    let c = dir(&fs, R, "C");
    let d = dir(&fs, a, "d");
    let e = dir(&fs, d, "e");
    let dotdot = |fs: &Tmpfs, x: Ino| {
        let mut p = 0;
        fs.readdir(x, 1, &mut |en| {
            assert_eq!(en.name, b"..");
            p = en.ino;
            false
        })
        .unwrap();
        p
    };
    assert_eq!(dotdot(&fs, d), a);
    assert_eq!(dotdot(&fs, R), R);
    // Moved twice: `..` and the parent the inode holds are the new one.
    fs.rename(a, b"d", b, b"d", 0).unwrap();
    assert_eq!(dotdot(&fs, d), b);
    fs.rename(b, b"d", c, b"d", 0).unwrap();
    assert_eq!(dotdot(&fs, d), c);
    assert_eq!(fs.get(d).unwrap().parent().map(|p| p.ino), Some(c));
    assert_eq!(dotdot(&fs, e), d);
    // Ancestry through the new parents: C (now above d and e) cannot move
    // under them; A and B (no longer above) can.
    assert_eq!(fs.rename(R, b"C", e, b"x", 0), Err(Errno::EINVAL));
    assert_eq!(fs.rename(R, b"C", d, b"x", 0), Err(Errno::EINVAL));
    fs.rename(R, b"A", e, b"A", 0).unwrap();
    assert_eq!(dotdot(&fs, a), e);
    fs.rename(R, b"B", d, b"B", 0).unwrap();
    assert_eq!(fs.rename(e, b"A", a, b"x", 0), Err(Errno::EINVAL));
    // An exchange of two directories across parents moves both parents.
    let f = dir(&fs, R, "F");
    fs.rename(R, b"F", d, b"e", RENAME_EXCHANGE).unwrap();
    assert_eq!((dotdot(&fs, f), dotdot(&fs, e)), (d, R));
    assert_eq!(dotdot(&fs, a), e);
    // A removed directory's walk goes through its old parent while that
    // is there (Linux: its dentry keeps `d_parent`): C is above it.
    let g = dir(&fs, d, "g");
    let held = fs.get(g).unwrap();
    fs.rmdir(d, b"g").unwrap();
    assert_eq!(fs.rename(R, b"C", g, b"x", 0), Err(Errno::EINVAL));
    assert_eq!(fs.rename(R, b"F", g, b"x", 0), Err(Errno::ENOENT));
    drop(held);
    fs.evict(g);
    ok(&fs);
    // Weak parents: with the file system gone, every inode is freed.
    let weak: Vec<_> = [R, a, c, d, e, f]
        .iter()
        .map(|&i| Arc::downgrade(&fs.get(i).unwrap()))
        .collect();
    drop(fs);
    assert!(weak.iter().all(|w| w.upgrade().is_none()));
}
