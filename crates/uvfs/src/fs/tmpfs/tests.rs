//! Tests of the tmpfs. "Host:" marks a fact checked on a Linux 6.18 host's
//! tmpfs (`/dev/shm` or a fresh `mount -t tmpfs` in a private namespace).

use super::*;
use crate::fs::{
    FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FileSystem, Ino, NewInode, RENAME_EXCHANGE,
    RENAME_NOREPLACE, S_IFLNK, S_IFREG, S_ISGID, SetAttr, SetTime,
};
use std::time::Duration;

const R: Ino = ROOT_INO;
const EOD: u64 = DIR_OFFSET_EOD;

fn fs() -> Arc<Tmpfs> {
    Tmpfs::new(TmpfsOptions::default())
}

fn limited(size: u64, inodes: u64) -> Arc<Tmpfs> {
    Tmpfs::new(TmpfsOptions {
        size_bytes: Some(size),
        nr_inodes: Some(inodes),
        ..TmpfsOptions::default()
    })
}

fn nf(mode: u32) -> NewInode {
    NewInode {
        mode,
        uid: 1000,
        gid: 1000,
    }
}

fn file(fs: &Tmpfs, dir: Ino, name: &str) -> Ino {
    fs.create(dir, name.as_bytes(), nf(0o644)).unwrap().ino
}

fn dir(fs: &Tmpfs, parent: Ino, name: &str) -> Ino {
    fs.mkdir(parent, name.as_bytes(), nf(0o755)).unwrap().ino
}

/// (name, d_off) from `cookie`, as one getdents would see them.
fn ls_from(fs: &Tmpfs, d: Ino, cookie: u64) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    fs.readdir(d, cookie, &mut |e| {
        out.push((String::from_utf8(e.name.clone()).unwrap(), e.next));
        true
    })
    .unwrap();
    out
}

fn ls(fs: &Tmpfs, d: Ino) -> Vec<(String, u64)> {
    ls_from(fs, d, 0)
}

fn names(fs: &Tmpfs, d: Ino) -> Vec<String> {
    ls(fs, d)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n != "." && n != "..")
        .collect()
}

fn pairs(v: &[(&str, u64)]) -> Vec<(String, u64)> {
    v.iter().map(|(n, o)| (n.to_string(), *o)).collect()
}

fn tick() {
    std::thread::sleep(Duration::from_millis(2));
}

fn old() -> Timespec {
    Timespec { sec: 1, nsec: 0 }
}

/// Sets mtime and atime far in the past and returns the ctime now.
fn age(fs: &Tmpfs, ino: Ino) -> Timespec {
    let set = SetAttr {
        atime: Some(SetTime::At(old())),
        mtime: Some(SetTime::At(old())),
        ..SetAttr::default()
    };
    let c = fs.setattr(ino, &set).unwrap().ctime;
    tick();
    c
}

fn ok(fs: &Tmpfs) {
    fs.fsck(false).unwrap();
}

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
        (R, "F", R, "E", 4, Errno::EINVAL),                  // whiteout: unsupported
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

// ---- data ----

#[test]
fn write_read_holes_truncate_host() {
    let fs = fs();
    let f = file(&fs, R, "f");
    // Host: one byte at 1 MiB -> size 1048577, blocks 8; truncate 10 -> 0.
    let mc = age(&fs, f);
    assert_eq!(fs.write(f, 1 << 20, b"x"), Ok(1));
    let a = fs.getattr(f).unwrap();
    assert_eq!((a.size, a.blocks), (1_048_577, 8));
    assert!(a.mtime > old() && a.ctime > mc && a.atime == old());
    let mut buf = [7u8; 8];
    assert_eq!(fs.read(f, (1 << 20) - 4, &mut buf), Ok(5));
    assert_eq!(buf[..5], [0, 0, 0, 0, b'x']);
    assert_eq!(fs.read(f, 1 << 20 | 1, &mut buf), Ok(0));
    assert_eq!(fs.read(f, u64::MAX, &mut buf), Ok(0));
    let a = fs
        .setattr(
            f,
            &SetAttr {
                size: Some(10),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((a.size, a.blocks), (10, 0));
    // Writes across pages, then truncation in mid-page zeroes the tail.
    let data: Vec<u8> = (0..10000u32).map(|i| i as u8).collect();
    assert_eq!(fs.write(f, 100, &data), Ok(10000));
    assert_eq!(fs.getattr(f).unwrap().blocks, 24);
    let mut back = vec![0u8; 10000];
    assert_eq!(fs.read(f, 100, &mut back), Ok(10000));
    assert_eq!(back, data);
    fs.setattr(
        f,
        &SetAttr {
            size: Some(5000),
            ..SetAttr::default()
        },
    )
    .unwrap();
    fs.setattr(
        f,
        &SetAttr {
            size: Some(9000),
            ..SetAttr::default()
        },
    )
    .unwrap();
    let mut back = vec![1u8; 4000];
    assert_eq!(fs.read(f, 5000, &mut back), Ok(4000));
    assert!(back.iter().all(|&b| b == 0));
    assert_eq!(fs.getattr(f).unwrap().blocks, 16);
    // Host: a zero-length write returns 0 and stamps nothing.
    let before = fs.getattr(f).unwrap();
    tick();
    assert_eq!(fs.write(f, u64::MAX, b""), Ok(0));
    assert_eq!(fs.getattr(f).unwrap(), before);
    let d = dir(&fs, R, "d");
    assert_eq!(fs.read(d, 0, &mut buf), Err(Errno::EISDIR));
    assert_eq!(fs.write(d, 0, b"x"), Err(Errno::EISDIR));
    ok(&fs);
}

#[test]
fn file_size_limits_host() {
    let fs = fs();
    let f = file(&fs, R, "f");
    // Host: pwrite at 2^63-4096 works; at/after MAX_LFS_FILESIZE the kernel
    // gives EFBIG (the VFS turns pos+len overflow into EINVAL first).
    assert_eq!(fs.write(f, MAX_FILE_SIZE - 4096, b"ab"), Ok(2));
    assert_eq!(fs.write(f, MAX_FILE_SIZE, b"a"), Err(Errno::EFBIG));
    assert_eq!(fs.write(f, u64::MAX, b"a"), Err(Errno::EFBIG));
    assert_eq!(fs.write(f, MAX_FILE_SIZE - 1, b"abcde"), Ok(1)); // clipped
    assert_eq!(fs.getattr(f).unwrap().size, MAX_FILE_SIZE);
    // Host: ftruncate to 2^63-1 works with 0 new blocks; beyond: EFBIG.
    let g = file(&fs, R, "g");
    let a = fs
        .setattr(
            g,
            &SetAttr {
                size: Some(MAX_FILE_SIZE),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((a.size, a.blocks), (MAX_FILE_SIZE, 0));
    assert_eq!(
        fs.setattr(
            g,
            &SetAttr {
                size: Some(MAX_FILE_SIZE + 1),
                ..SetAttr::default()
            }
        ),
        Err(Errno::EFBIG)
    );
    let d = dir(&fs, R, "d");
    assert_eq!(
        fs.setattr(
            d,
            &SetAttr {
                size: Some(0),
                ..SetAttr::default()
            }
        ),
        Err(Errno::EISDIR)
    );
    // Host: fallocate(2^63-4096, 4096) EFBIG; (2^63-4096, 4095) and
    // (2^63-2, 1) fine, one page.
    let h = file(&fs, R, "h");
    assert_eq!(
        fs.fallocate(h, 0, MAX_FILE_SIZE - 4095, 4096),
        Err(Errno::EFBIG)
    );
    assert_eq!(fs.fallocate(h, 0, u64::MAX, u64::MAX), Err(Errno::EFBIG));
    assert_eq!(fs.fallocate(h, 0, MAX_FILE_SIZE - 4095, 4095), Ok(()));
    let a = fs.getattr(h).unwrap();
    assert_eq!((a.size, a.blocks), (MAX_FILE_SIZE, 8));
    // Huge allocations on an unlimited mount: refused, not attempted.
    assert_eq!(fs.fallocate(h, 0, 0, 1 << 62), Err(Errno::ENOMEM));
    assert_eq!(fs.getattr(h).unwrap().blocks, 8);
    ok(&fs);
}

#[test]
fn enospc_partial_write_and_evict_host() {
    // Host (size=64k): write of 100000 bytes -> 65536; another page ->
    // ENOSPC; rewriting an allocated page works; space comes back when the
    // last open reference of an unlinked file goes.
    let fs = limited(64 * 1024, 0);
    let f = file(&fs, R, "f");
    assert_eq!(fs.write(f, 0, &vec![b'x'; 100_000]), Ok(65536));
    assert_eq!(
        (fs.getattr(f).unwrap().size, fs.getattr(f).unwrap().blocks),
        (65536, 128)
    );
    assert_eq!(fs.statfs().bfree, 0);
    let mc = age(&fs, f);
    assert_eq!(fs.write(f, 200_000, b"y"), Err(Errno::ENOSPC));
    let a = fs.getattr(f).unwrap();
    assert!(a.size == 65536 && a.mtime > old() && a.ctime > mc); // Host: ENOSPC still stamps.
    assert_eq!(fs.write(f, 5, &[b'z'; 10]), Ok(10));
    // A write straddling allocated and new pages stops at the first new one.
    fs.setattr(
        f,
        &SetAttr {
            size: Some(8192),
            ..SetAttr::default()
        },
    )
    .unwrap();
    assert_eq!(fs.statfs().bfree, 14);
    let g = file(&fs, R, "g");
    assert_eq!(fs.write(g, 0, &vec![1; 14 * 4096 + 100]), Ok(14 * 4096));
    assert_eq!(fs.write(f, 4000, &[2; 8000]), Ok(4192));
    fs.unlink(R, b"g").unwrap();
    assert_eq!(fs.statfs().bfree, 0); // still held: not evicted
    assert_eq!(fs.read(g, 0, &mut [0; 3]), Ok(3)); // unlinked, still readable
    assert_eq!(fs.write(g, 0, b"abc"), Ok(3)); // and writable
    fs.evict(g);
    assert_eq!(fs.statfs().bfree, 14);
    fs.fsck(true).unwrap();
}

#[test]
fn inode_limit_host() {
    // Host (nr_inodes=5): root 1; a file 1; each extra hard link 1 more;
    // mkdir/symlink ENOSPC when out; unlink of an extra link gives one back.
    let fs = limited(64 * 1024, 5);
    let a = file(&fs, R, "a");
    assert_eq!(fs.statfs().ffree, 3);
    fs.link(a, R, b"a2").unwrap();
    fs.link(a, R, b"a3").unwrap();
    assert_eq!(fs.statfs().ffree, 1);
    fs.link(a, R, b"a4").unwrap();
    assert_eq!(fs.statfs().ffree, 0);
    assert_eq!(fs.link(a, R, b"a5"), Err(Errno::ENOSPC));
    assert_eq!(fs.mkdir(R, b"d", nf(0o755)), Err(Errno::ENOSPC));
    assert_eq!(fs.create(R, b"c", nf(0o644)), Err(Errno::ENOSPC));
    assert_eq!(fs.symlink(R, b"s", b"x", nf(0o777)), Err(Errno::ENOSPC));
    assert_eq!(fs.tmpfile(R, nf(0o600)), Err(Errno::ENOSPC));
    assert_eq!(fs.getattr(R).unwrap().size, 40 + 4 * 20); // nothing added
    fs.unlink(R, b"a3").unwrap();
    assert_eq!(fs.statfs().ffree, 1);
    dir(&fs, R, "d");
    assert_eq!(fs.statfs().ffree, 0);
    for n in ["a", "a2", "a4"] {
        fs.unlink(R, n.as_bytes()).unwrap();
    }
    assert_eq!(fs.statfs().ffree, 2); // one still held by the unlinked inode
    fs.evict(a);
    assert_eq!(fs.statfs().ffree, 3);
    // Rename over a multiply-linked target gives its extra count back.
    let x = file(&fs, R, "x");
    fs.link(x, R, b"x2").unwrap();
    file(&fs, R, "y");
    assert_eq!(fs.statfs().ffree, 0);
    fs.rename(R, b"y", R, b"x", 0).unwrap();
    assert_eq!(fs.statfs().ffree, 1);
    fs.fsck(false).unwrap();
}

#[test]
fn fallocate_modes_host() {
    let fs = limited(64 * 1024, 0);
    let f = file(&fs, R, "f");
    let mc = age(&fs, f);
    fs.fallocate(f, 0, 0, 8192).unwrap();
    let a = fs.getattr(f).unwrap();
    assert_eq!((a.size, a.blocks), (8192, 16));
    assert!(a.mtime > old() && a.ctime > mc); // Host: fallocate stamps.
    // Host: KEEP_SIZE to 20000 on an 8192-byte file -> 40 blocks.
    fs.fallocate(f, FALLOC_FL_KEEP_SIZE, 0, 20000).unwrap();
    let a = fs.getattr(f).unwrap();
    assert_eq!((a.size, a.blocks), (8192, 40));
    // Host: punching the first page -> 32 blocks.
    fs.fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096)
        .unwrap();
    assert_eq!(fs.getattr(f).unwrap().blocks, 32);
    // Host: EOPNOTSUPP for punch without keep, zero range; EINVAL len 0.
    assert_eq!(
        fs.fallocate(f, FALLOC_FL_PUNCH_HOLE, 0, 4096),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(fs.fallocate(f, 0x10, 0, 4096), Err(Errno::EOPNOTSUPP));
    assert_eq!(fs.fallocate(f, 0x1000, 0, 4096), Err(Errno::EOPNOTSUPP));
    assert_eq!(fs.fallocate(f, 0, 0, 0), Err(Errno::EINVAL));
    let d = dir(&fs, R, "d");
    assert_eq!(fs.fallocate(d, 0, 0, 1), Err(Errno::EISDIR));
    // Shrinking (even to the same size) drops the KEEP_SIZE pages beyond.
    fs.setattr(
        f,
        &SetAttr {
            size: Some(8192),
            ..SetAttr::default()
        },
    )
    .unwrap();
    assert_eq!(fs.getattr(f).unwrap().blocks, 8);
    // Host: an fallocate that does not fit changes nothing (ENOSPC).
    let before = (fs.getattr(f).unwrap(), fs.statfs());
    assert_eq!(fs.fallocate(f, 0, 0, 4096 * 20), Err(Errno::ENOSPC));
    assert_eq!(fs.fallocate(f, 0, 4096 * 30, 4096 * 16), Err(Errno::ENOSPC));
    assert_eq!((fs.getattr(f).unwrap(), fs.statfs()), before);
    fs.fallocate(f, 0, 4096 * 30, 4096 * 15).unwrap();
    assert_eq!(fs.statfs().bfree, 0);
    // Punching partial pages zeroes them and keeps them.
    let g = fs.tmpfile(R, nf(0o600)).unwrap().ino;
    fs.fallocate(
        f,
        FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
        4096 * 30,
        4096 * 15,
    )
    .unwrap();
    fs.write(g, 0, &[9; 8192]).unwrap();
    fs.fallocate(g, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 200)
        .unwrap();
    fs.fallocate(g, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4000, 200)
        .unwrap();
    let mut b = vec![0u8; 8192];
    fs.read(g, 0, &mut b).unwrap();
    for (i, &x) in b.iter().enumerate() {
        let zero = (100..300).contains(&i) || (4000..4200).contains(&i);
        assert_eq!(x, if zero { 0 } else { 9 }, "byte {i}");
    }
    assert_eq!(fs.getattr(g).unwrap().blocks, 16);
    fs.evict(g);
    fs.fsck(true).unwrap();
}

#[test]
fn seek_data_hole_host() {
    let fs = fs();
    let f = file(&fs, R, "f");
    // Host: fallocated, unwritten pages are holes for SEEK_DATA.
    fs.fallocate(f, 0, 0, 16384).unwrap();
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Data), Err(Errno::ENXIO));
    assert_eq!(fs.seek_data_hole(f, 5000, Seek::Data), Err(Errno::ENXIO));
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Hole), Ok(0));
    assert_eq!(fs.seek_data_hole(f, 5000, Seek::Hole), Ok(5000));
    fs.write(f, 5000, b"x").unwrap();
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Data), Ok(4096));
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Hole), Ok(0));
    assert_eq!(fs.seek_data_hole(f, 5000, Seek::Hole), Ok(8192));
    // Host: write 1 byte at 10000, extend to 20000.
    fs.setattr(
        f,
        &SetAttr {
            size: Some(0),
            ..SetAttr::default()
        },
    )
    .unwrap();
    fs.write(f, 10000, b"x").unwrap();
    fs.setattr(
        f,
        &SetAttr {
            size: Some(20000),
            ..SetAttr::default()
        },
    )
    .unwrap();
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Data), Ok(8192));
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Hole), Ok(0));
    assert_eq!(fs.seek_data_hole(f, 9000, Seek::Hole), Ok(12288));
    assert_eq!(fs.seek_data_hole(f, 12288, Seek::Hole), Ok(12288));
    assert_eq!(fs.seek_data_hole(f, 9000, Seek::Data), Ok(9000));
    assert_eq!(fs.seek_data_hole(f, 13000, Seek::Data), Err(Errno::ENXIO));
    for off in [20000, 30000, u64::MAX] {
        assert_eq!(fs.seek_data_hole(f, off, Seek::Data), Err(Errno::ENXIO));
        assert_eq!(fs.seek_data_hole(f, off, Seek::Hole), Err(Errno::ENXIO));
    }
    // Host: 10-byte file: SEEK_HOLE from 0 is the size; SEEK_DATA 5 is 5.
    fs.setattr(
        f,
        &SetAttr {
            size: Some(0),
            ..SetAttr::default()
        },
    )
    .unwrap();
    fs.write(f, 0, &[1; 10]).unwrap();
    assert_eq!(fs.seek_data_hole(f, 0, Seek::Hole), Ok(10));
    assert_eq!(fs.seek_data_hole(f, 5, Seek::Data), Ok(5));
    assert_eq!(fs.seek_data_hole(R, 0, Seek::Data), Err(Errno::EINVAL));
}

#[test]
fn setattr_fields_and_times() {
    let fs = fs();
    let f = file(&fs, R, "f");
    let c0 = fs.getattr(f).unwrap().ctime;
    tick();
    // Host: chmod stamps ctime only; utimes sets a and m, stamps c.
    let a = fs
        .setattr(
            f,
            &SetAttr {
                mode: Some(0o4755),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!(a.mode, S_IFREG | 0o4755);
    assert!(a.ctime > c0 && a.mtime < a.ctime);
    let t5 = Timespec { sec: 5, nsec: 0 };
    let t7 = Timespec { sec: 7, nsec: 0 };
    let a = fs
        .setattr(
            f,
            &SetAttr {
                atime: Some(SetTime::At(t5)),
                mtime: Some(SetTime::At(t7)),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((a.atime, a.mtime), (t5, t7));
    let a = fs
        .setattr(
            f,
            &SetAttr {
                uid: Some(1),
                gid: Some(2),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((a.uid, a.gid, a.mtime), (1, 2, t7));
    let a = fs
        .setattr(
            f,
            &SetAttr {
                atime: Some(SetTime::Now),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!(a.atime, a.ctime);
    // Host: truncate(2) of an empty file to the same size stamps nothing
    // (no ATTR_MTIME is passed; shmem_setattr stamps a size change, and
    // shmem_truncate_range only runs for a file holding pages) ...
    tick();
    let before = fs.getattr(f).unwrap();
    let a = fs
        .setattr(
            f,
            &SetAttr {
                size: Some(0),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert_eq!((a.mtime, a.ctime), (before.mtime, before.ctime));
    // ... while ftruncate to the same size passes ATTR_MTIME | ATTR_CTIME
    // (the VFS asks for mtime): both stamped.
    tick();
    let a = fs
        .setattr(
            f,
            &SetAttr {
                size: Some(0),
                mtime: Some(SetTime::Now),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert!(a.mtime > t7 && a.mtime == a.ctime);
    // A size change stamps both without being asked.
    tick();
    let a = fs
        .setattr(
            f,
            &SetAttr {
                size: Some(10),
                ..SetAttr::default()
            },
        )
        .unwrap();
    assert!(a.mtime > before.mtime && a.mtime == a.ctime);
    // Nothing to change: nothing stamped.
    let before = fs.getattr(f).unwrap();
    tick();
    assert_eq!(fs.setattr(f, &SetAttr::default()).unwrap(), before);
}

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
