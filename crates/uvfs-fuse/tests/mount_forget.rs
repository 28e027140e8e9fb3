//! The lookup counts: a server mounted in this process, driven through the
//! kernel, must end with only the root in its inode table once the
//! kernel has forgotten everything (`drop_caches`), after lookups,
//! readdirplus listings, creates, links, renames and unlinks (an unlinked
//! file held open included). A count taken and never given back, or one
//! given back twice, shows here. Skips (passes with a message) without
//! /dev/fuse or root.

mod support;

use fuser::{Config, MountOption, Session, SessionACL};
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::Ordering;
use support::*;
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::{FastPaths, Vfs};
use uvfs_fuse::UvfsFuse;

#[test]
fn every_lookup_is_forgotten() {
    skip_unless_fuse!();
    every_lookup_is_forgotten_in(false);
}

/// The same in no-open mode, where an inode's I/O handle lives from its
/// first read or write to its last FORGET (not to a RELEASE): none is
/// left once the kernel forgot everything, the unlinked file held open
/// stays readable through its handle until then, and after the first
/// OPEN and OPENDIR (answered ENOSYS) the kernel sends no more.
#[test]
fn every_lookup_is_forgotten_without_open() {
    skip_unless_fuse!();
    every_lookup_is_forgotten_in(true);
}

/// drop_caches is machine-wide: one test's would make the kernel forget
/// the other's nodes between its work and its count. One at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn every_lookup_is_forgotten_in(no_open: bool) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new(if no_open { "forget-noopen" } else { "forget" });
    let tmpfs = Tmpfs::new(TmpfsOptions::default());
    let vfs = Vfs::builder()
        .fastpaths(FastPaths::seeds())
        .build_with_root(tmpfs.clone());
    let server = UvfsFuse::new(vfs, tmpfs).unwrap().with_no_open(no_open);
    let counters = server.counters();
    let mut config = Config::default();
    config.mount_options = vec![MountOption::FSName("uvfs-test".into())];
    config.acl = SessionACL::All;
    config.n_threads = Some(2);
    config.clone_fd = true;
    let session = Session::new(server, dir.path(), &config).unwrap();
    let bg = session.spawn().unwrap();
    let m = dir.path();
    // Work through the kernel: the script runs in another process.
    let (code, _, err) = sh(
        m,
        "mkdir -p a/b/c && for i in $(seq 1 200); do echo $i > a/b/f$i; done \
         && ln a/b/f1 a/h && mv a/b/f2 a/c2 && ln -s f3 a/b/s && ls -lR > /dev/null \
         && find . -type f | wc -l && rm a/b/f5 a/b/f6 && stat a/b/f7 a/nothing 2>/dev/null; \
         exec 3< a/b/f8 && rm a/b/f8 && cat <&3 && ls -la a/b | wc -l",
    );
    assert_eq!(code, 0, "{err}");
    assert!(counters.nodes.load(Ordering::Relaxed) > 200);
    // The listings went through readdirplus (its references are counted).
    assert!(counters.readdirplus.load(Ordering::Relaxed) > 0);
    let mut file = std::fs::File::open(m.join("a/b/f9")).unwrap();
    std::fs::remove_file(m.join("a/b/f9")).unwrap();
    // Drop the kernel's unused dentries and inodes: it forgets them. The
    // forgets are asynchronous; poll (bounded) for the count to settle.
    let mut nodes = 0;
    for _ in 0..(HANG_SECS * 10) {
        std::fs::write("/proc/sys/vm/drop_caches", b"2").unwrap();
        nodes = counters.nodes.load(Ordering::Relaxed);
        // The root, the open unlinked file, and a and a/b, which its
        // dentry pins (a dentry holds its parent).
        if nodes == 4 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        nodes, 4,
        "nodes left after drop_caches (root, a, a/b, open file)"
    );
    assert_eq!(file.metadata().unwrap().nlink(), 0);
    // Read after the unlink and the drop_caches: the page cache was
    // dropped with the clean pages, so this reaches the server.
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text).unwrap();
    assert_eq!(text, "9\n");
    let handles = counters.io_handles.load(Ordering::Relaxed);
    if no_open {
        // The open unlinked file's handle (f8's went with its inode).
        assert_eq!(handles, 1, "I/O handles while f9 is open");
        // One OPEN and one OPENDIR, each answered ENOSYS; then none.
        assert_eq!(counters.opens.load(Ordering::Relaxed), 2);
    } else {
        assert_eq!(handles, 0);
        // f8, f9, and the directories `ls -lR`, `find` and `ls -la` list.
        assert!(counters.opens.load(Ordering::Relaxed) > 4);
    }
    drop(file);
    for _ in 0..(HANG_SECS * 10) {
        std::fs::write("/proc/sys/vm/drop_caches", b"2").unwrap();
        nodes = counters.nodes.load(Ordering::Relaxed);
        // A forget counts its node out before it closes the node's I/O
        // handle (on another worker): wait for both.
        if nodes == 1 && counters.io_handles.load(Ordering::Relaxed) == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(nodes, 1, "nodes left after the last close (root only)");
    assert_eq!(counters.io_handles.load(Ordering::Relaxed), 0);
    // Every RELEASE has come: a file's comes before its inode can be
    // evicted, though another worker may still be counting it (bounded
    // poll). In no-open mode only the 200 creates get one (their fh 0);
    // otherwise each OPEN and OPENDIR gets one too.
    let opens = counters.opens.load(Ordering::Relaxed);
    let want = if no_open { 200 } else { 200 + opens };
    let mut releases = 0;
    for _ in 0..(HANG_SECS * 10) {
        releases = counters.releases.load(Ordering::Relaxed);
        if releases >= want {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(releases, want, "RELEASEs ({opens} OPEN/OPENDIR)");
    // The namespace is intact after the kernel forgot it all.
    let (code, out, err) = sh(m, "find . | sort | head -4; cat a/b/f10 a/h");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, ".\n./a\n./a/b\n./a/b/c\n10\n1\n");
    assert!(counters.requests.load(Ordering::Relaxed) > 0);
    bg.umount_and_join().unwrap();
}
