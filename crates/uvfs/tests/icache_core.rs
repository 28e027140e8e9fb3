//! The inode cache: hits, misses, fill failures, the size limit and LRU
//! eviction, unlinked inodes, and a multi-thread stress run, under both the
//! seed-002 lockless search and the stock locked search.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use uvfs::Errno;
use uvfs::fs::{Attr, Ino, S_IFREG, Timespec};
use uvfs::icache::InodeCache;

mod support;
use support::rng::Rng;

fn attr(ino: Ino, nlink: u32) -> Attr {
    Attr {
        ino,
        mode: S_IFREG | 0o644,
        nlink,
        uid: 0,
        // The number again, where the cache keeps it (the permission
        // attributes), so a reference shows which fill it came from.
        gid: ino as u32,
        size: 0,
        blocks: 0,
        blksize: 4096,
        atime: Timespec::default(),
        mtime: Timespec::default(),
        ctime: Timespec::default(),
        btime: Timespec::default(),
        rdev: 0,
        acl: 0,
    }
}

type Evicted = Arc<Mutex<Vec<(u64, Ino)>>>;

fn cache(limit: usize, lockless: bool) -> (InodeCache, Evicted) {
    let ev: Evicted = Arc::default();
    let e = ev.clone();
    (
        InodeCache::new(limit, 16, lockless, move |sb, ino, _| {
            e.lock().unwrap().push((sb, ino))
        }),
        ev,
    )
}

fn both(mut f: impl FnMut(bool)) {
    f(true);
    f(false);
}

#[test]
fn miss_fills_once_then_hits() {
    both(|lockless| {
        let (c, ev) = cache(100, lockless);
        let fills = AtomicUsize::new(0);
        let fill = |ino| {
            fills.fetch_add(1, SeqCst);
            Ok(attr(ino, 1))
        };
        let a = c.iget(1, 7, || fill(7)).unwrap();
        assert_eq!((a.sb(), a.ino(), a.perm().2), (1, 7, 7));
        let b = c.iget(1, 7, || fill(7)).unwrap();
        assert!(uvfs::icache::InodeRef::ptr_eq(&a, &b));
        assert_eq!(a.count(), 2);
        // Same number, other superblock: another inode.
        let other = c.iget(2, 7, || fill(7)).unwrap();
        assert!(!uvfs::icache::InodeRef::ptr_eq(&a, &other));
        assert_eq!(fills.load(SeqCst), 2);
        drop((a, b, other));
        // Unused but cached: a hit, no fill.
        let again = c.iget(1, 7, || fill(7)).unwrap();
        assert_eq!(fills.load(SeqCst), 2);
        assert_eq!(c.len(), 2);
        drop(again);
        assert!(ev.lock().unwrap().is_empty());
        assert!(c.ilookup(1, 7).is_some());
        assert!(c.ilookup(1, 8).is_none());
    });
}

#[test]
fn a_failed_fill_caches_nothing() {
    both(|lockless| {
        let (c, ev) = cache(100, lockless);
        assert_eq!(
            c.iget(1, 3, || Err(Errno::ESTALE)).err(),
            Some(Errno::ESTALE)
        );
        assert_eq!(c.len(), 0);
        assert!(c.ilookup(1, 3).is_none());
        let r = c.iget(1, 3, || Ok(attr(3, 1))).unwrap();
        assert_eq!(r.perm().2, 3);
        drop(r);
        // A failed fill is not an eviction: the file system never had it
        // in the cache.
        assert!(ev.lock().unwrap().is_empty());
    });
}

#[test]
fn unused_inodes_are_evicted_oldest_first_past_the_limit() {
    both(|lockless| {
        let (c, ev) = cache(4, lockless);
        for ino in 0..10 {
            drop(c.iget(1, ino, || Ok(attr(ino, 1))).unwrap());
        }
        assert_eq!(c.len(), 4);
        assert_eq!(
            *ev.lock().unwrap(),
            (0..6).map(|i| (1, i)).collect::<Vec<_>>()
        );
        // A hit refreshes nothing in Linux's LRU either until the next
        // reclaim pass; but an inode in use is never evicted.
        let held: Vec<_> = (100..110)
            .map(|ino| c.iget(1, ino, || Ok(attr(ino, 1))).unwrap())
            .collect();
        assert_eq!(c.len(), 10, "in-use inodes stay even past the limit");
        for r in &held {
            assert_eq!(r.count(), 1);
        }
        drop(held);
        assert_eq!(c.len(), 4);
        for ino in 106..110 {
            assert!(c.ilookup(1, ino).is_some(), "the newest unused inodes stay");
        }
    });
}

#[test]
fn an_unlinked_inode_goes_at_its_last_put() {
    both(|lockless| {
        let (c, ev) = cache(100, lockless);
        let a = c.iget(1, 5, || Ok(attr(5, 1))).unwrap();
        let b = a.clone();
        a.set_attr(&attr(5, 0));
        drop(a);
        assert!(ev.lock().unwrap().is_empty(), "still referenced");
        drop(b);
        assert_eq!(*ev.lock().unwrap(), [(1, 5)]);
        assert_eq!(c.len(), 0);
        // The number can be cached again (a new inode).
        let n = c.iget(1, 5, || Ok(attr(5, 1))).unwrap();
        assert_eq!(n.nlink(), 1);
    });
}

/// A count of zero is not raised by an answer read before the unlink
/// (a truncate's or chmod's, stored after it): the last put still frees
/// the inode. Only a link's answer raises it (an `O_TMPFILE` file named).
#[test]
fn a_stale_count_does_not_revive_an_unlinked_inode() {
    both(|lockless| {
        let (c, ev) = cache(100, lockless);
        let a = c.iget(1, 5, || Ok(attr(5, 1))).unwrap();
        a.set_attr(&attr(5, 0));
        a.set_attr(&attr(5, 1));
        assert_eq!(a.nlink(), 0, "a stale answer raised the count");
        drop(a);
        assert_eq!(*ev.lock().unwrap(), [(1, 5)], "not freed at its last put");
        // A link names a nameless inode: the count is taken from zero, and
        // the last put caches the inode instead of freeing it.
        let t = c.iget(1, 6, || Ok(attr(6, 0))).unwrap();
        t.set_linked(&attr(6, 1));
        assert_eq!(t.nlink(), 1);
        drop(t);
        assert_eq!(ev.lock().unwrap().len(), 1, "a linked inode was freed");
        assert_eq!(c.len(), 1);
    });
}

#[test]
fn dropping_the_cache_evicts_everything() {
    let (c, ev) = cache(100, true);
    for ino in 0..5 {
        drop(c.iget(9, ino, || Ok(attr(ino, 1))).unwrap());
    }
    drop(c);
    let mut got = ev.lock().unwrap().clone();
    got.sort();
    assert_eq!(got, (0..5).map(|i| (9, i)).collect::<Vec<_>>());
}

/// Threads take and drop references to random inodes in a cache smaller
/// than the working set. Checked: two concurrent holders of one inode
/// always share the in-memory inode; every fill is balanced by one eviction
/// (or is still cached at the end); fills never run twice concurrently for
/// one inode.
#[test]
fn stress_concurrent_iget_and_eviction() {
    both(|lockless| {
        let (c, ev) = cache(16, lockless);
        let fills = AtomicUsize::new(0);
        let filling: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (c, fills, filling) = (&c, &fills, &filling);
                s.spawn(move || {
                    let mut rng = Rng::new(0x1cac4e ^ t);
                    let mut held = Vec::new();
                    for _ in 0..20_000 {
                        let ino = rng.below(64) as u64;
                        let r = c
                            .iget(1, ino, || {
                                assert_eq!(
                                    filling[ino as usize].fetch_add(1, SeqCst),
                                    0,
                                    "two fills of {ino}"
                                );
                                fills.fetch_add(1, SeqCst);
                                std::thread::yield_now();
                                filling[ino as usize].fetch_sub(1, SeqCst);
                                Ok(attr(ino, 1))
                            })
                            .unwrap();
                        assert_eq!((r.ino(), u64::from(r.perm().2)), (ino, ino));
                        if let Some(l) = c.ilookup(1, ino) {
                            assert!(
                                uvfs::icache::InodeRef::ptr_eq(&r, &l),
                                "two inodes for {ino}"
                            );
                        } else {
                            panic!("inode {ino} not found while held");
                        }
                        if rng.chance(30) {
                            held.push(r);
                        }
                        if held.len() > 4 || rng.chance(20) {
                            held.clear();
                        }
                    }
                });
            }
        });
        let evicted = ev.lock().unwrap().len();
        assert_eq!(fills.load(SeqCst), evicted + c.len(), "lockless={lockless}");
        assert!(c.len() <= 16);
        let mut per: HashMap<Ino, usize> = HashMap::new();
        for (_, ino) in ev.lock().unwrap().iter() {
            *per.entry(*ino).or_default() += 1;
        }
        assert!(per.keys().all(|&i| i < 64));
    });
}

/// The file system's object a fill gives stays with the node while it is
/// referenced and cached, is read back through any reference, and is
/// handed to the eviction callback (once) when the node is evicted, by the
/// LRU or at an unlinked inode's last put; a hit keeps the first object.
#[test]
fn fill_data_lives_until_eviction() {
    use uvfs::fs::InodeData;
    both(|lockless| {
        type Back = Arc<Mutex<Vec<(Ino, Arc<u64>)>>>;
        let back: Back = Arc::default();
        let b2 = back.clone();
        let c = InodeCache::new(1, 16, lockless, move |_, ino, d: Option<InodeData>| {
            // SAFETY: every object this test gives is an `Arc<u64>`.
            let a = unsafe { d.expect("every node got one").into_arc::<u64>() };
            b2.lock().unwrap().push((ino, a));
        });
        let obj = |v: u64| {
            let a = Arc::new(v);
            (a.clone(), InodeData::from_arc(a))
        };
        let (o7, d7) = obj(70);
        let r = c
            .iget_with(1, 7, move || Ok((attr(7, 1), Some(d7))))
            .unwrap();
        // SAFETY: an `Arc<u64>`, as above.
        assert_eq!(unsafe { *r.data().unwrap().get::<u64>() }, 70);
        assert_eq!(Arc::strong_count(&o7), 2);
        // A hit: the fill (and its object) is not used.
        let r2 = c.iget_with(1, 7, || unreachable!()).unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { *r2.data().unwrap().get::<u64>() }, 70);
        drop((r, r2));
        assert!(back.lock().unwrap().is_empty(), "cached, not evicted");
        // A second inode pushes the first out (limit 1): its object comes back.
        let (o8, d8) = obj(80);
        let r8 = c
            .iget_with(1, 8, move || Ok((attr(8, 0), Some(d8))))
            .unwrap();
        {
            let got = back.lock().unwrap();
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].0, 7);
            assert!(Arc::ptr_eq(&got[0].1, &o7));
        }
        // An unlinked inode's last put evicts it at once.
        drop(r8);
        let got = back.lock().unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].0, 8);
        assert!(Arc::ptr_eq(&got[1].1, &o8));
        drop(got);
        back.lock().unwrap().clear();
        assert_eq!((Arc::strong_count(&o7), Arc::strong_count(&o8)), (1, 1));
    });
}
