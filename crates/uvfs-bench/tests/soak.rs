//! The short soak CI runs: a mixed workload on one VFS, measured in calls
//! (not seconds, so a loaded machine runs the same work, only slower): 4 M
//! calls of warm-up, then 4 M measured with a sample every 100 k. It fails
//! on a leak by counts: at every sample the caches, the tmpfs's inodes and
//! pages and the file pool's objects must stay within what the bounded
//! namespace can hold, and at the end the emptied tmpfs must hold its root
//! alone and every dentry reference be accounted for. Resident memory is
//! judged by its trend, not by two points: the least-squares slope over
//! the 41 measured samples, less three standard errors, must stay under
//! 200 bytes per 1000 calls (one 200-byte object leaked per 1000 calls
//! would be over it; the allocator's steps around a flat line are not: on
//! the 2-core VM, loaded or not, the slopes seen were -100 to +100 with
//! standard errors of 3 to 55).

use std::process::Command;

fn soak(extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_uvfs-bench"))
        .arg("soak")
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn soak_memory_flattens_and_nothing_leaks() {
    let out = soak(&[
        "--calls",
        "4000000",
        "--warmup-calls",
        "4000000",
        "--interval-calls",
        "100000",
        "--max-slope",
        "200",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("VFS consistent"), "{stdout}");
    assert!(stdout.contains("41 samples"), "{stdout}");
}

#[test]
fn soak_rejects_bad_settings() {
    for args in [
        &["soak", "--tasks", "0"][..],
        &["soak", "--seconds", "0"],
        &["soak", "--mask", "0"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_uvfs-bench"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("uvfs-bench soak:") || err.contains("invalid value"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
