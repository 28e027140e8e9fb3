//! The same system calls (tests/scripts/semantics.py: creates, appends,
//! truncates, holes, SEEK_DATA/SEEK_HOLE, fallocate, copy_file_range,
//! links, renames with NOREPLACE and EXCHANGE, chmod/chown/utimes, a file
//! unlinked while open, shared and private mmap, listings under removal,
//! and a second user's permission checks) run in a directory on the
//! host's tmpfs and in one on a uvfs mount: every result and errno must
//! match. Skips (passes with a message) without /dev/fuse or root.

mod support;

use support::*;

const SCRIPT: &str = include_str!("scripts/semantics.py");

/// The known differences (host line, mount line):
/// - none left: the kernel's cached walk once let a user stat a file root
///   looked up in a 0700 directory (the mount now has
///   `default_permissions`), and uvfs once could not hold FIFOs.
const KNOWN: [(&str, &str); 0] = [];

/// The file data script (tests/scripts/file_data.py): writes, holes,
/// O_APPEND, O_DIRECT, fallocate, hole punch, truncate, shared mmap,
/// copy_file_range, set-ID removal on write, and how times move.
const FILE_DATA: &str = include_str!("scripts/file_data.py");

/// The POSIX ACL script (tests/scripts/acl.py): set/get/list/remove of
/// `system.posix_acl_*`, the mode an ACL sets, chmod, inheritance under a
/// umask, and a second user's access through named entries.
const ACL: &str = include_str!("scripts/acl.py");

/// Runs `script` on the host's tmpfs and on a mount made with `args`.
fn run_script(tag: &str, args: &[&str], script: &str) -> (String, String) {
    let py = std::env::temp_dir().join(format!("uvfs-fuse-{tag}-{}.py", std::process::id()));
    std::fs::write(&py, script).unwrap();
    let r = host_and_mount_with(tag, args, &format!("python3 {}", py.display()));
    let _ = std::fs::remove_file(&py);
    r
}

/// semantics.py with FUSE passthrough on (regular files' reads, writes
/// and mmap go to their memfds without the server).
#[test]
fn syscalls_match_the_host_tmpfs() {
    skip_unless_fuse!();
    compare_semantics("semantics", &["--passthrough", "on"]);
}

/// semantics.py with every read and write a request to the server.
#[test]
fn syscalls_match_the_host_tmpfs_without_passthrough() {
    skip_unless_fuse!();
    compare_semantics("semantics-nopt", &["--passthrough", "off"]);
}

/// semantics.py in no-open mode (`--no-open`): no OPEN or OPENDIR
/// requests, so the kernel alone decides who may open (the second user's
/// opens of another's 0600 file, O_TRUNC, O_NOATIME), and every read and
/// write goes through the inode's own handle (a file unlinked while open,
/// one chmodded to 000 while open, two O_APPEND writers, two readers of
/// one directory).
#[test]
fn syscalls_match_the_host_tmpfs_without_open() {
    skip_unless_fuse!();
    compare_semantics("semantics-noopen", &["--no-open"]);
}

/// The modes the data and ACL scripts run in: passthrough, plain, and
/// no-open (which turns passthrough off).
const MODES: [(&str, &[&str]); 3] = [
    ("pt", &["--passthrough", "on"]),
    ("plain", &["--passthrough", "off"]),
    ("noopen", &["--no-open"]),
];

/// file_data.py, with passthrough, without, and in no-open mode.
#[test]
fn file_data_matches_the_host_tmpfs() {
    skip_unless_fuse!();
    for (mode, args) in MODES {
        let tag = &format!("file-data-{mode}");
        let (host, mount) = run_script(tag, args, FILE_DATA);
        assert!(host.contains("user data own"), "{host}");
        assert_same(tag, &host, &mount);
    }
}

/// acl.py, with passthrough, without, and in no-open mode: the ACLs
/// reach uvfs, and the kernel (which checks permissions itself with
/// `default_permissions`) decides access with them as tmpfs does
/// (`FUSE_POSIX_ACL`); in no-open mode it is the only check of an open.
#[test]
fn posix_acls_match_the_host_tmpfs() {
    skip_unless_fuse!();
    for (mode, args) in MODES {
        let tag = &format!("acl-{mode}");
        let (host, mount) = run_script(tag, args, ACL);
        assert!(host.contains("user read named rw: b''"), "{host}");
        assert!(host.contains("done"), "{host}");
        assert_same(tag, &host, &mount);
    }
}

fn compare_semantics(tag: &str, args: &[&str]) {
    let (host, mount) = run_script(tag, args, SCRIPT);
    // The script ran to its end on both sides, with output.
    assert!(host.contains("user rmdir d"), "{host}");
    // What FUSE itself changes (docs/fuse.md), pinned: each line must
    // differ exactly so, then the rest must match.
    let mut mount = mount;
    for (h, m) in KNOWN {
        assert!(
            host.contains(h),
            "host side of a known difference: {h}\n{host}"
        );
        assert!(
            mount.contains(m),
            "mount side of a known difference: {m}\n{mount}"
        );
        mount = mount.replace(m, h);
    }
    assert_same(tag, &host, &mount);
}
