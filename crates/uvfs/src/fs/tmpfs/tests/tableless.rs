//! A tmpfs without its inode table (the pinned root of a `VfsBuilder`):
//! calls by number answer `ESTALE` (the root's excepted), the node forms
//! reach every inode, and `fsck` walks the tree and counts the inodes no
//! entry reaches (orphans).

use super::*;
use crate::fs::InodeData;
use std::sync::atomic::Ordering::Relaxed;

/// A tmpfs with every switch on, with or without its table.
fn with_table(table: bool) -> Arc<Tmpfs> {
    Tmpfs::with_switches(TmpfsOptions::default(), true, true, true, true, table)
}

/// The node the VFS would pass for an inode whose object it holds.
fn node<'a>(a: &Attr, d: &'a InodeData) -> Node<'a> {
    Node {
        ino: a.ino,
        data: Some(d.borrow()),
    }
}

/// Without the table a number is `ESTALE` (the table is not searched),
/// the root's excepted; the object, the entry and the root reach every
/// inode. With the table the same calls by number work.
#[test]
fn numbers_are_stale_without_a_table() {
    for table in [true, false] {
        let fs = with_table(table);
        let (a, d) = fs.create_node(R.into(), b"f", nf(0o644)).unwrap();
        let d = d.unwrap();
        let (da, dd) = fs.mkdir_node(R.into(), b"d", nf(0o755)).unwrap();
        let dd = dd.unwrap();
        assert_eq!(fs.write_node(node(&a, &d), 0, b"abc").unwrap(), 3);
        let by_number = [
            fs.getattr(a.ino).map(|_| ()),
            fs.read(a.ino, 0, &mut [0; 4]).map(|_| ()),
            fs.write(a.ino, 0, b"x").map(|_| ()),
            fs.create(da.ino, b"g", nf(0o644)).map(|_| ()),
            fs.readlink(a.ino).map(|_| ()).or_else(|e| {
                // A regular file is no symlink: EINVAL once it is found.
                if e == Errno::EINVAL { Ok(()) } else { Err(e) }
            }),
        ];
        for r in by_number {
            if table {
                r.unwrap();
            } else {
                assert_eq!(r, Err(Errno::ESTALE));
            }
        }
        assert_eq!(fs.inode_data(a.ino).is_some(), table);
        // The root by number, the object, the entry: always.
        assert_eq!(fs.getattr(R).unwrap().ino, R);
        assert_eq!(fs.getattr_node(node(&a, &d)).unwrap().size, 3);
        let (la, ld) = fs.lookup_node(R.into(), b"f").unwrap();
        assert_eq!(la.ino, a.ino);
        let mut buf = [0u8; 4];
        let ld = ld.unwrap();
        assert_eq!(fs.read_node(node(&la, &ld), 0, &mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], if table { b"xbc" } else { b"abc" });
        fs.create_node(node(&da, &dd), b"g", nf(0o644))
            .map(|(ga, gd)| fs.release_data(ga.ino, gd.unwrap()))
            .unwrap_or_else(|e| assert!(table && e == Errno::EEXIST));
        for (x, o) in [(la, ld), (a, d), (da, dd)] {
            fs.release_data(x.ino, o);
        }
        fs.fsck(true).unwrap();
    }
}

/// `fsck` finds every inode by walking the tree, and the unlinked open
/// ones by their counter: an orphan is not a leak until the evict is
/// due, a planted inode count or orphan count is caught either way, and
/// the orphan goes from the counter when it is given back.
#[test]
fn fsck_counts_orphans_and_catches_a_planted_leak() {
    for table in [true, false] {
        let fs = with_table(table);
        let (a, d) = fs.create_node(R.into(), b"f", nf(0o644)).unwrap();
        let d = d.unwrap();
        assert_eq!(fs.write_node(node(&a, &d), 0, &[1; 5000]).unwrap(), 5000);
        let (ta, td) = fs.tmpfile_node(R.into(), nf(0o600)).unwrap();
        let td = td.unwrap();
        assert_eq!(fs.orphans.load(Relaxed), 1, "an O_TMPFILE inode");
        fs.link_node(node(&ta, &td), R.into(), b"t").unwrap();
        assert_eq!(fs.orphans.load(Relaxed), 0, "linked");
        fs.unlink_node(R.into(), node(&a, &d), b"f").unwrap();
        // The unlinked open file: reached by no entry, counted.
        assert_eq!(fs.orphans.load(Relaxed), 1);
        fs.fsck(false).unwrap();
        assert!(fs.fsck(true).is_err(), "an orphan left");
        // A planted leak: an inode count nothing holds.
        fs.used_inodes.fetch_add(1, Relaxed);
        assert!(fs.fsck(false).is_err(), "a leaked inode count");
        fs.used_inodes.fetch_sub(1, Relaxed);
        // Pages nothing holds.
        fs.used_pages.fetch_add(1, Relaxed);
        assert_eq!(fs.fsck(false).is_err(), table, "exact with the table");
        fs.used_pages.fetch_sub(1, Relaxed);
        // An orphan count with no orphan behind it.
        fs.orphans.fetch_add(1, Relaxed);
        assert!(fs.fsck(false).is_err(), "a planted orphan");
        fs.orphans.fetch_sub(1, Relaxed);
        fs.fsck(false).unwrap();
        fs.evict_node(a.ino, Some(d));
        assert_eq!(fs.orphans.load(Relaxed), 0, "given back");
        fs.fsck(true).unwrap();
        fs.unlink_node(R.into(), node(&ta, &td), b"t").unwrap();
        fs.evict_node(ta.ino, Some(td));
        fs.fsck(true).unwrap();
        assert_eq!(fs.used_pages.load(Relaxed), 0);
        assert_eq!(fs.used_inodes.load(Relaxed), 1, "the root");
    }
}
