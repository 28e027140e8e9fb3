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

/// semantics.py with the kernel's writeback cache (`--writeback`): writes
/// gather in the page cache, the kernel keeps size and mtime, and a
/// write-only open is served by a read-write handle.
#[test]
fn syscalls_match_the_host_tmpfs_with_writeback() {
    skip_unless_fuse!();
    compare_semantics_known("semantics-wb", &["--writeback"], &WRITEBACK_KNOWN);
}

/// semantics.py with the writeback cache in no-open mode (the two
/// combine: no-open's per-inode handle is read-write already).
#[test]
fn syscalls_match_the_host_tmpfs_with_writeback_without_open() {
    skip_unless_fuse!();
    compare_semantics_known(
        "semantics-wb-noopen",
        &["--writeback", "--no-open"],
        &WRITEBACK_KNOWN,
    );
}

/// The modes the data and ACL scripts run in: passthrough, plain,
/// no-open (which turns passthrough off), and writeback (likewise).
const MODES: [(&str, &[&str]); 5] = [
    ("pt", &["--passthrough", "on"]),
    ("plain", &["--passthrough", "off"]),
    ("noopen", &["--no-open"]),
    ("wb", &["--writeback"]),
    ("wb-noopen", &["--writeback", "--no-open"]),
];

/// file_data.py, with passthrough, without, and in no-open mode.
#[test]
fn file_data_matches_the_host_tmpfs() {
    skip_unless_fuse!();
    for (mode, args) in MODES {
        let tag = &format!("file-data-{mode}");
        let (host, mount) = run_script(tag, args, FILE_DATA);
        assert!(host.contains("user data own"), "{host}");
        let known: &[(&str, &[&str])] = if mode.starts_with("wb") {
            &WRITEBACK_FILE_DATA
        } else {
            &[]
        };
        assert_same_known(tag, &host, &mount, known);
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
    compare_semantics_known(tag, args, &[]);
}

/// What the writeback cache changes (docs/fuse.md, "Writeback cache"):
/// each host line, and the mount lines allowed in its place. The kernel
/// keeps a FUSE file's ctime itself, at the clock's coarse granularity
/// (tmpfs's is fine-grained once read), so an O_TRUNC open or ftruncate
/// of an empty file in the same tick as the utime before it leaves
/// ctime as it was; SEEK_DATA and SEEK_HOLE are the kernel's own, which
/// see the whole file as data.
const WRITEBACK_KNOWN: [(&str, &[&str]); 4] = [
    (
        "O_TRUNC empty: (0, True, True)",
        &["O_TRUNC empty: (0, True, False)"],
    ),
    (
        "creat empty: (0, True, True)",
        &["creat empty: (0, True, False)"],
    ),
    (
        "ftruncate empty: (0, True, True)",
        &["ftruncate empty: (0, True, False)"],
    ),
    (
        "SEEK_DATA 0: 1048576\nSEEK_HOLE 0: 0\n",
        &["SEEK_DATA 0: 0\nSEEK_HOLE 0: 1048577\n"],
    ),
];

/// What the writeback cache changes in file_data.py (docs/fuse.md,
/// "Writeback cache"), as [`WRITEBACK_KNOWN`]: the kernel stamps a
/// file's mtime and ctime itself at the clock's coarse granularity (a
/// change in the same tick as the stat before it moves neither), st_blocks
/// counts only data written back, SEEK_HOLE and SEEK_DATA are the
/// kernel's own (the whole file data), and a read the page cache answers
/// never reaches uvfs to move atime. Each may also match the host.
const WRITEBACK_FILE_DATA: [(&str, &[&str]); 15] = [
    (
        "times after write: (True, True, True)",
        &["times after write: (False, False, True)"],
    ),
    ("size after write: (5, 8)", &["size after write: (5, 0)"]),
    (
        "times after pwrite: (True, True, True)",
        &["times after pwrite: (False, False, True)"],
    ),
    (
        "size after pwrite: (1048579, 16)",
        &["size after pwrite: (1048579, 0)"],
    ),
    ("SEEK_HOLE 0: 4096", &["SEEK_HOLE 0: 1048579"]),
    (
        "times after ftruncate: (True, True, True)",
        &["times after ftruncate: (False, False, True)"],
    ),
    (
        "times after same-size truncate: (True, True, True)",
        &["times after same-size truncate: (False, False, True)"],
    ),
    (
        "times after fallocate: (True, True, True)",
        &["times after fallocate: (False, False, True)"],
    ),
    (
        "times after punch: (True, True, True)",
        &["times after punch: (False, False, True)"],
    ),
    (
        "SEEK_HOLE after punch: 4096",
        &["SEEK_HOLE after punch: 20000"],
    ),
    (
        "SEEK_DATA in the hole: 8192",
        &["SEEK_DATA in the hole: 4096"],
    ),
    (
        "times after msync: (True,)",
        &["times after msync: (False,)"],
    ),
    (
        "atime after read: (True, True, True)",
        &["atime after read: (False, True, False)"],
    ),
    (
        "atime after write: (True, True)",
        &["atime after write: (False, True)"],
    ),
    (
        "atime after write then read: (True, True, True)",
        &["atime after write then read: (False, True, False)"],
    ),
];

fn compare_semantics_known(tag: &str, args: &[&str], known: &[(&str, &[&str])]) {
    let (host, mount) = run_script(tag, args, SCRIPT);
    // The script ran to its end on both sides, with output.
    assert!(host.contains("user rmdir d"), "{host}");
    let known: Vec<(&str, &[&str])> = KNOWN
        .iter()
        .map(|(h, m)| (*h, std::slice::from_ref(m)))
        .chain(known.iter().copied())
        .collect();
    assert_same_known(tag, &host, &mount, &known);
}

/// What FUSE itself changes (docs/fuse.md), pinned: each host line must
/// be there, and the mount has it or exactly one of the lines allowed in
/// its place; then the rest must match.
fn assert_same_known(tag: &str, host: &str, mount: &str, known: &[(&str, &[&str])]) {
    let mut mount = mount.to_string();
    for (h, m) in known {
        assert!(
            host.contains(h),
            "host side of a known difference: {h}\n{host}"
        );
        if let Some(m) = m.iter().find(|m| mount.contains(**m)) {
            mount = mount.replace(m, h);
        }
    }
    assert_same(tag, host, &mount);
}
