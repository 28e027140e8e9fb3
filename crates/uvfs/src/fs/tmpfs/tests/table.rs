//! The ways into the tmpfs by inode number (its inode table) that the
//! VFS's calls no longer take with `FastPaths::tmpfs_borrow` on.

use super::*;
#[cfg(not(loom))]
use crate::cred::Cred;
#[cfg(not(loom))]
use crate::uapi::{O_CREAT, O_DIRECTORY, O_RDONLY, O_RDWR, R_OK, W_OK};
#[cfg(not(loom))]
use crate::{FastPaths, Process, Vfs};

/// An access ACL granting user 1001 read, nobody else anything beyond
/// the owner (`system.posix_acl_access`'s value).
#[cfg(not(loom))]
fn acl_user_1001_read() -> Vec<u8> {
    let mut v = 2u32.to_le_bytes().to_vec();
    let none = u32::MAX;
    for (tag, perm, id) in [
        (0x01u16, 6u16, none),
        (0x02, 4, 1001),
        (0x04, 0, none),
        (0x10, 4, none),
        (0x20, 0, none),
    ] {
        v.extend_from_slice(&tag.to_le_bytes());
        v.extend_from_slice(&perm.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
    }
    v
}

/// Through the VFS (mounts, creates, I/O, `stat` of every type, ACL
/// checks, cross-directory renames, `..`, removal and eviction, the VFS's
/// consistency check), nothing searches the table: every call reaches
/// the inode from the object the VFS holds, the root from the file
/// system's own reference, a directory's parent through its weak one.
/// (Not under loom: a whole VFS outside a model touches loom's atomics.)
#[cfg(not(loom))]
#[test]
fn the_vfs_reaches_no_inode_by_number() {
    let fs = fs();
    let mnt = super::fs();
    let fast = FastPaths::seeds();
    assert!(fast.tmpfs_borrow);
    let vfs = Vfs::builder().fastpaths(fast).build_with_root(fs.clone());
    let mut p = Process::new(&vfs).unwrap();
    p.mkdir("/m", 0o755).unwrap();
    p.mount("/m", mnt.clone()).unwrap();
    for top in ["", "/m"] {
        let at = |s: &str| format!("{top}{s}");
        p.mkdir(at("/a"), 0o755).unwrap();
        p.mkdir(at("/b"), 0o755).unwrap();
        p.mkdir(at("/a/d"), 0o755).unwrap();
        let fd = p.open(at("/a/f"), O_CREAT | O_RDWR, 0o640).unwrap();
        assert_eq!(p.write(fd, b"hello").unwrap(), 5);
        assert_eq!(p.pwrite(fd, b"J", 0).unwrap(), 1);
        let mut buf = [0u8; 8];
        assert_eq!(p.pread(fd, &mut buf, 0).unwrap(), 5);
        assert_eq!(&buf[..5], b"Jello");
        p.close(fd).unwrap();
        p.mknod(at("/a/c"), crate::fs::S_IFCHR | 0o644, 0x0103)
            .unwrap();
        for s in ["/a", "/a/f", "/a/c", "/a/d", "/b"] {
            p.stat(at(s)).unwrap();
            p.stat(at(s)).unwrap();
        }
        // The ACL decides (the mode alone denies user 1001), read through
        // the inode's object.
        p.setxattr(
            at("/a/f"),
            b"system.posix_acl_access",
            &acl_user_1001_read(),
            0,
        )
        .unwrap();
        let root = p.cred().clone();
        p.set_cred(Cred::user(1001, 1001, vec![]));
        p.access(at("/a/f"), R_OK).unwrap();
        assert_eq!(p.access(at("/a/f"), W_OK), Err(Errno::EACCES));
        p.set_cred(Cred::user(1002, 1002, vec![]));
        assert_eq!(p.access(at("/a/f"), R_OK), Err(Errno::EACCES));
        p.set_cred(root);
        // A directory moved across parents: its `..` follows.
        p.rename(at("/a/d"), at("/b/d")).unwrap();
        let fd = p.open(at("/b/d"), O_RDONLY | O_DIRECTORY, 0).unwrap();
        let ents: Vec<_> = p.readdir(fd).map(|e| e.unwrap()).collect();
        p.close(fd).unwrap();
        let b = p.stat(at("/b")).unwrap().st_ino;
        assert!(ents.iter().any(|e| e.name == b".." && e.d_ino == b));
        assert_eq!(p.rename(at("/b"), at("/b/d/x")), Err(Errno::EINVAL));
        p.unlink(at("/a/f")).unwrap();
        p.unlink(at("/a/c")).unwrap();
        p.rmdir(at("/b/d")).unwrap();
    }
    drop(p);
    vfs.check_consistency().unwrap();
    assert_eq!(fs.searches.load(Ordering::Relaxed), 0, "root tmpfs");
    assert_eq!(mnt.searches.load(Ordering::Relaxed), 0, "mounted tmpfs");
    drop(vfs);
    assert_eq!(
        fs.searches.load(Ordering::Relaxed),
        0,
        "root tmpfs, shut down"
    );
    fs.fsck(true).unwrap();
    mnt.fsck(true).unwrap();
}

/// A call by number does search the table, and the counter sees it (so
/// the test above can fail).
#[test]
fn the_counter_sees_a_search() {
    let fs = fs();
    let a = dir(&fs, R, "a");
    fs.getattr(a).unwrap();
    assert!(fs.searches.load(Ordering::Relaxed) > 0);
}

/// A deep tree is freed without recursing once per level: dropping the
/// file system (the table, the root and every entry's reference to its
/// inode) must not overflow a thread's stack.
#[test]
fn a_deep_tree_drops_without_deep_recursion() {
    let fs = fs();
    let mut d = R;
    for _ in 0..100_000 {
        d = dir(&fs, d, "d");
    }
    file(&fs, d, "f");
    let leaf = Arc::downgrade(&fs.get(d).unwrap());
    // A small stack: a recursive drop takes well over 100 bytes a level.
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || drop(fs))
        .unwrap()
        .join()
        .unwrap();
    assert!(leaf.upgrade().is_none());
}

/// The evict that gives an unlinked inode's pages and inode count back is
/// the one that sets its flag: a second evict of the same inode (a node
/// evicted and made again, holding its own reference) gives nothing back
/// twice, and neither does an evict while a link is left.
#[test]
fn an_inode_is_given_back_once() {
    let fs = limited(1 << 20, 10);
    let f = file(&fs, R, "f");
    fs.write(f, 0, &[7; 8192]).unwrap();
    let (a, b) = (fs.get(f).unwrap(), fs.get(f).unwrap());
    let free = |fs: &Tmpfs| (fs.statfs().bfree, fs.statfs().ffree);
    let before = free(&fs);
    fs.evict_inode(f, Some(fs.get(f).unwrap()));
    assert_eq!(free(&fs), before, "a linked inode gives nothing back");
    fs.unlink(R, b"f").unwrap();
    fs.evict_inode(f, Some(a));
    assert_eq!(free(&fs), (before.0 + 2, before.1 + 1));
    assert!(fs.get(f).is_err(), "out of the table");
    fs.evict_inode(f, Some(b.clone()));
    assert_eq!(free(&fs), (before.0 + 2, before.1 + 1), "given back once");
    assert!(rd(&b).given_back());
    fs.fsck(true).unwrap();
}

/// An unlinked inode's eviction lets the table's and the cached inode's
/// references go with one deferred free: with pinned reads on, the inode
/// outlives the evict while a reader is pinned (it may be reading the
/// inode without a reference) and is freed after the grace period; with
/// them off, at once. Fails if both references are dropped at once on the
/// pinned side, or if either is kept.
#[cfg(not(any(loom, shuttle)))]
#[test]
fn an_evicted_inode_is_freed_once_after_the_grace_period() {
    for pinned in [true, false] {
        let fs = Tmpfs::with_switches(TmpfsOptions::default(), pinned, pinned, false, false, true);
        let f = file(&fs, R, "f");
        let (held, weak) = {
            let i = fs.get(f).unwrap();
            let w = Arc::downgrade(&i);
            (i, w)
        };
        fs.unlink(R, b"f").unwrap();
        // The references left: the table's and ours (the entry's may
        // still wait for its own grace period: let it go first).
        for _ in 0..100_000 {
            if Arc::strong_count(&held) == 2 {
                break;
            }
            crate::reclaim::flush();
            std::thread::yield_now();
        }
        assert_eq!(Arc::strong_count(&held), 2, "the table's and ours");
        let pin = crate::reclaim::pin_with(true);
        fs.evict_inode(f, Some(held));
        assert!(fs.get(f).is_err(), "out of the table");
        if !pinned {
            assert!(
                weak.upgrade().is_none(),
                "freed at once without pinned reads"
            );
            continue;
        }
        assert!(weak.upgrade().is_some(), "freed under a pin");
        drop(pin);
        for _ in 0..100_000 {
            if weak.upgrade().is_none() {
                break;
            }
            crate::reclaim::flush();
            std::thread::yield_now();
        }
        assert!(weak.upgrade().is_none(), "never freed");
        fs.fsck(true).unwrap();
    }
}
