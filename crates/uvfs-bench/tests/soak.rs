//! The short soak CI runs: a mixed workload on one VFS, measured in calls
//! (not seconds, so a loaded machine runs the same work, only slower): 4 M
//! calls of warm-up, then 8 M measured with a sample every 200 k, one soak
//! at a time. It fails
//! on a leak by counts: at every sample the caches, the tmpfs's inodes and
//! pages and the file pool's objects must stay within what the bounded
//! namespace can hold, and at the end the emptied tmpfs must hold its root
//! alone and every dentry reference be accounted for.
//!
//! Memory is judged by the allocator's bytes in use (glibc `mallinfo2`;
//! all of uvfs's memory, its tmpfs pages and pools included, comes from
//! the global allocator), by their trend over the 41 measured samples, not
//! by two points. The heap's transients only go up (a preempted task holds
//! an epoch open and retired objects wait for it; in CI a third of the
//! samples sat a few MiB up), so the trend is taken on its floor: the
//! lowest of every 4 consecutive samples. The lower edge of the
//! three-sigma band of the floor's Theil-Sen slope must stay under 20
//! bytes per 1000 calls. Figures (2026-11-27): with nothing leaked the
//! edge ran from -138 to -42 (load 1.5 to 2); a leak of 300 bytes per 1000
//! calls injected in CI (load about 10, where the raw samples' band reached
//! down to -45) read +308 with the edge at +248.
//!
//! The resident set is printed but not judged: it keeps the high-water
//! mark of those transients and of glibc's arenas fragmenting, which
//! depend on the machine's load (with the heap flat at 2.2 MiB, its
//! least-squares trend over 4 M calls was +41 quiet and +450 to +870 at
//! load 7; +448 failed CI once under a 200 cap).

use std::process::Command;
use std::sync::Mutex;

/// One soak at a time: each runs 4 tasks, and two at once on a 2-CPU
/// machine (the test harness runs this file's tests in parallel) preempt
/// each other's tasks mid-epoch, which holds retired objects back and
/// lifts the heap's floor late in the run: a false "leak" (CI,
/// 2026-11-29, band +47.6..+171.8 with nothing leaked; 16 M calls of the
/// same binary alone read +6.7, band -18.4..+24.9).
static ONE_SOAK: Mutex<()> = Mutex::new(());

fn soak(extra: &[&str]) -> std::process::Output {
    let _one = ONE_SOAK.lock().unwrap_or_else(|e| e.into_inner());
    Command::new(env!("CARGO_BIN_EXE_uvfs-bench"))
        .arg("soak")
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn soak_memory_flattens_and_nothing_leaks() {
    // 8 M measured calls, a sample every 200 k (41 samples): a transient
    // late in the run moves the slope half as much as over 4 M.
    let out = soak(&[
        "--calls",
        "8000000",
        "--warmup-calls",
        "4000000",
        "--interval-calls",
        "200000",
        "--max-heap-slope",
        "20",
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

/// The heap check is not a test that cannot fail: a leak of 1500 bytes
/// per 1000 calls, injected, fails the soak. (300 bytes was found on a
/// quiet machine, but at load 9, with helpers building beside CI, the
/// transients of 4 tasks in 2 processes widened the floor's band to
/// -86..+471 around a +275 slope, 2026-11-29: the detector's limit is the
/// machine's noise, so the injected leak stands well above it.)
#[test]
fn soak_finds_an_injected_leak() {
    let out = soak(&[
        "--calls",
        "4000000",
        "--warmup-calls",
        "1000000",
        "--interval-calls",
        "100000",
        "--max-heap-slope",
        "20",
        "--leak",
        "1500",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.contains("the heap in use trends up"), "{stderr}");
}

#[test]
fn soak_rejects_bad_settings() {
    for args in [
        &["soak", "--tasks", "0"][..],
        &["soak", "--seconds", "0"],
        &["soak", "--mask", "0"],
        &["soak", "--leak", "1048577"],
        &["soak", "--max-heap-slope", "-1"],
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
