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

#[test]
fn syscalls_match_the_host_tmpfs() {
    skip_unless_fuse!();
    let py = std::env::temp_dir().join(format!("uvfs-fuse-semantics-{}.py", std::process::id()));
    std::fs::write(&py, SCRIPT).unwrap();
    let (host, mount) = host_and_mount("semantics", &format!("python3 {}", py.display()));
    let _ = std::fs::remove_file(&py);
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
    assert_same("semantics", &host, &mount);
}
